"""Neural-network functions at the ``tracegrad.*`` level (``tracegrad.conv2d``,
``tracegrad.max_pool2d``, ``tracegrad.batch_norm``...), mirroring torch's free functions of the
same names; functions torch keeps in ``torch._C._nn`` (``gelu``, ``nll_loss``, ``mse_loss``...)
are in this module's ``_nn`` namespace. Each one normalises its arguments and calls one op of
``_ops/nn_ops.py``; ``tracegrad.nn.functional`` is written on top of these.
"""
from __future__ import annotations

import math
import operator
import types

import numpy as np

from .. import _autocast, _state
from .argcheck import _is_index, _is_int, floating_input, require_bool, require_float
from .._tensor.factories import check_result_size, check_storage_size
from .sparse_embedding import sparse_embedding   # (embedding(sparse=True))
from ..autograd._dispatch import apply_op, save_indices, show_saved
from ..autograd._forward_ad_impl import plain, tangent_of
from ..autograd._graph_impl import StopAfterOp
from ..autograd.function import _no_derivative as no_derivative
from ..autograd.grad_mode import no_grad
from .._ops.registry import OPS
from .._ops.nn_ops import _pool_out
from .._ops import dtypes as _dt
from .._ops.random import scalar_name as _scalar_name
from .._ops.warn import warn_once
from .._ops.errors import not_a_tensor
from .._tensor.factories import arange, empty_like
from .._tensor.tensor import Tensor, NO_HOST_VALUES
from .._tensor.memory_format import (_conv_order, batch_norm_format, channels_last, has_layout, lay_out,
                                      suggest_memory_format, suggest_view_layout)
from .._tensor.out import accepts_out
from .inplace import _restride_
from .strided import as_strided
from .promotion import check_number_fits
from .._tensor.convert import check_float_fits

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "convolution",
           "max_pool1d", "max_pool2d", "max_pool2d_with_indices", "avg_pool1d", "avg_pool2d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "batch_norm", "native_batch_norm", "layer_norm", "group_norm", "embedding", "dropout",
           "constant_pad_nd", "celu", "selu", "hardtanh", "one_hot", "_weight_norm", "_weight_norm_interface"]


# NOTE [eager value checks]
# torch's kernels raise on out-of-range values (embedding ids, one_hot classes). Here such a
# check costs one host read of the index tensor (numpy min/max: no XLA program per shape) and
# runs only when the values are concrete. Inside tracegrad.compile the check is made when the
# program runs (NOTE [value checks at run time] in _lowering/capture.py); inside a
# tracegrad.func transform alone there is nothing to read, and the transform does what XLA
# does (a gather clamps an out-of-range id; one_hot gives a zero row).
def _host_values(t):
    """An integer tensor's values as a numpy array read on the host, or None while tracing or
    when the tensor is empty."""
    v = t._value
    if isinstance(v, NO_HOST_VALUES) or v.size == 0:
        return None
    return np.asarray(v)


def _host_minmax(t):
    """``(min, max)`` of an integer tensor's values read on the host, or None while tracing or
    when the tensor is empty."""
    h = _host_values(t)
    return None if h is None else (int(h.min()), int(h.max()))


def _check_traced_range(t, n):
    """Inside a compiled function: report whether ``t``'s traced values leave ``[0, n)``
    (NOTE [value checks at run time] in ``_lowering/capture.py``)."""
    if t.numel():
        _state.check_values(t._value, lambda v: (v < 0) | (v >= n))


def _tup(v, n, name="argument"):
    """``v`` (an int or a sequence of 1 or ``n`` ints) as an ``n``-tuple of ints. TypeError, as
    torch's parser, for a float, a string or None where the ints go (int() would truncate 1.5)."""
    if isinstance(v, (list, tuple)):
        for x in v:
            if type(x) is not int and not _is_int(x):
                raise _ints_error(name, v)
        if len(v) == 1:
            return tuple(int(x) for x in v) * n
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values, got {list(v)}")
        return tuple(int(x) for x in v)
    if type(v) is not int and not _is_int(v):
        raise _ints_error(name, v)
    return (int(v),) * n


def _ints_error(name, v):
    return TypeError(f"argument '{name}' must be tuple of ints, not {type(v).__name__}: {v!r}; pass an int or a "
                     "sequence of ints")


def _check_norm_dtype(input, weight, kernel, api, *params):
    """torch's dtype rules for normalisation: weight and the other ``params`` (bias, running
    stats) share the input's dtype, except float32 parameters beside float16/bfloat16 input
    (RuntimeError, no promotion). For integer input, a float weight beside it is a mixed-dtype
    RuntimeError, otherwise the kernel is NotImplementedError for that dtype (complex input too:
    torch has no complex normalisation kernel)."""
    try:
        # (torch's layer_norm and group_norm compare their first parameter given -- the weight, else
        # the bias -- with the input before they dispatch on the input's dtype: a complex or integer
        # input beside a float one is their mixed-dtype RuntimeError)
        first = next((p for p in (weight,) + params if p is not None), None)
        mixed = api in ("layer_norm", "group_norm") and first is not None and first.dtype is not input.dtype
        if input.dtype.is_complex and not mixed:
            raise NotImplementedError(f"{api}: \"{kernel}\" not implemented for '{_scalar_name(input.dtype.np)}'; "
                                      "normalise .real and .imag apart (view_as_real)")
        if input.dtype.is_floating_point:
            half = input.dtype.name in ("float16", "bfloat16")
            for p in (weight,) + params:
                if p is not None and p.dtype is not input.dtype and not (half and p.dtype.name == "float32"):
                    raise RuntimeError(f"{api}: mixed dtype (CPU): expect parameter to have scalar type of "
                                       f"{_scalar_name(input.dtype.np)} (input {input.dtype}, parameter {p.dtype}); "
                                       "convert the parameters or the input to one dtype")
            return
        _refuse_non_tensor(api, input, weight, params)   # (error path: the parser's class first)
        if mixed or (weight is not None and weight.dtype is not input.dtype and api != "batch_norm"):
            # (torch's batch_norm dispatches on the input's dtype before it compares the weight's)
            raise RuntimeError(f"{api}: mixed dtype (CPU): all inputs must share same datatype (input "
                               f"{input.dtype}, parameter {(first if mixed else weight).dtype}); convert the input "
                               "with .float()")
        raise NotImplementedError(f"{api}: \"{kernel}\" not implemented for '{_scalar_name(input.dtype.np)}'; "
                                  f"convert the input with .float()")
    except AttributeError:   # a number or list for a tensor: torch's parser (free on the success path)
        _refuse_non_tensor(api, input, weight, params)
        raise


# the tensor arguments of the normalisations as torch's parser names them: (name, position), in the
# order _check_norm_dtype receives them (input, weight, then its params; batch_norm_update_stats
# passes no weight)
_NORM_TENSORS = {"batch_norm": (("input", 1), ("weight", 2), ("bias", 3), ("running_mean", 4), ("running_var", 5)),
                 "layer_norm": (("input", 1), ("weight", 3), ("bias", 4)),
                 "group_norm": (("input", 1), ("weight", 3), ("bias", 4)),
                 "batch_norm_update_stats": (("input", 1), ("weight", 0), ("running_mean", 2), ("running_var", 3))}


def _refuse_non_tensor(api, input, weight, params):
    """torch's parser TypeError for the first of a normalisation's tensor arguments that is neither
    a Tensor nor None (a number, a list)."""
    names = _NORM_TENSORS.get(api, ())
    for (name, pos), v in zip(names, (input, weight) + params):
        if v is not None and not isinstance(v, Tensor):
            raise not_a_tensor(api, v, name, pos)


def _check_float_match(input, weight, name):
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"{name}: Input type ({input.dtype}) and weight type ({weight.dtype}) should be the same; "
                           f"convert one with .to(dtype)")


# ---- convolution ----------------------------------------------------------------------------
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """Mirrors ``torch.convolution``. ``padding`` may be ints, or 'same'/'valid' (not transposed).
    Input ``(N, C_in, *spatial)`` or unbatched ``(C_in, *spatial)``; weight ``(C_out, C_in/groups, *k)``
    (``(C_in, C_out/groups, *k)`` when transposed). grad_fn ``ConvolutionBackward0``.
    Raises RuntimeError on channel/shape mismatches, and (transposed) for an ``output_padding`` not
    smaller than the stride or the dilation of its dim; TypeError when input or weight is not a
    Tensor. An input with zero channels gives an output with zero channels, as torch's empty path."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"convolution(): input and weight must be Tensors, got {type(input).__name__} and "
                        f"{type(weight).__name__}")
    input, weight, bias = _autocast.cast("lower", "convolution", input, weight, bias)
    if weight.ndim < 3:   # torch's first shape check; unchecked, a 2-D weight read as a "conv0d"
        raise RuntimeError(f"weight should have at least three dimensions, got a weight of size {list(weight.shape)} "
                           f"(convolution: (out_channels, in_channels / groups, *kernel_size))")
    nd = weight.ndim - 2
    unbatched = input.ndim == nd + 1
    if unbatched:
        input = input.unsqueeze(0)
    if input.ndim != nd + 2:
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to conv{nd}d, but got "
                           f"input of size: {list(input.shape)}")
    _check_float_match(input, weight, f"conv{nd}d")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"conv{nd}d: Input type ({input.dtype}) and bias type ({bias.dtype}) should be the same; "
                           "convert the bias with .to(input.dtype)")
    cout = weight.shape[1] * groups if transposed else weight.shape[0]
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != cout):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with {cout} "
                           f"elements, but got bias of size {list(bias.shape)} instead")
    if transposed and isinstance(padding, str):
        raise TypeError(f"conv_transpose{nd}d(): argument 'padding' must be tuple of ints, not str; 'same' and "
                        f"'valid' are for conv{nd}d only")
    stride, dilation = _tup(stride, nd, "stride"), _tup(dilation, nd, "dilation")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"conv{nd}d: non-positive stride is not supported; got stride={list(stride)}")
    # torch refuses dilation < 1 (its shape check); unchecked it reached the op with no torch message
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"conv{'_transpose' if transposed else ''}{nd}d: dilation should be greater than zero, "
                           f"but got dilation={list(dilation)}")
    ks = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions; give the padding as "
                                   "ints (the module constructor raises ValueError, as torch)")
            tot = [d * (k - 1) for d, k in zip(dilation, ks)]
            pads = tuple((t // 2, t - t // 2) for t in tot)
            if any(t % 2 for t in tot):   # torch's TORCH_WARN_ONCE when a dim's padding is asymmetric
                warn_once("Using padding='same' with even kernel lengths and odd dilation may require a "
                          "zero-padded copy of the input be created")
        else:
            raise RuntimeError(f"Invalid padding string: {padding!r}, should be one of 'valid', 'same'")
    else:
        pads = tuple((p, p) for p in _tup(padding, nd, "padding"))
        if any(p < 0 for p, _ in pads):
            raise RuntimeError(f"conv{nd}d: negative padding is not supported; got padding={padding}")
    # torch's shape checks on groups and weight dim 0 come before the channel checks (for the
    # transposed form too); without them a bad groups reached the op with no torch message
    if groups <= 0:
        raise RuntimeError(f"conv{nd}d: non-positive groups is not supported; got groups={groups}")
    if weight.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {list(weight.shape)} instead")
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size {list(weight.shape)} instead")
    cin = input.shape[1]
    if not transposed and cin != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {weight.shape[1] * groups} channels, but got {cin} "
                           f"channels instead")
    if transposed and cin != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {weight.shape[0]} channels, but got {cin} channels instead")
    if transposed:
        output_padding = _tup(output_padding, nd, "output_padding")
        if any(op < 0 for op in output_padding):
            raise RuntimeError(f"conv_transpose{nd}d: negative output_padding is not supported; got "
                               f"output_padding={list(output_padding)}")
        if weight.shape[1] == 0:   # torch's transposed kernels want a non-empty weight
            raise RuntimeError(f"conv_transpose{nd}d: non-empty {nd + 2}D weight tensor expected, but got: "
                               f"{list(weight.shape)}")
        if any(op >= max(st, d) for op, st, d in zip(output_padding, stride, dilation)):
            raise RuntimeError(f"conv_transpose{nd}d: output padding must be smaller than either stride or dilation, "
                               f"but got output_padding={list(output_padding)}, stride={list(stride)} and "
                               f"dilation={list(dilation)}")
        sizes = [(i - 1) * st - 2 * p + d * (k - 1) + op + 1
                 for i, st, (p, _), d, k, op in zip(input.shape[2:], stride, pads, dilation, ks, output_padding)]
        if any(o < 1 for o in sizes):   # torch's shape check (a 1-d one shown as 2-d, as its kernel runs it)
            lead = [1] if nd == 1 else []
            raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, lead + list(input.shape[2:])))}). "
                               f"Calculated output size per channel: ({' x '.join(map(str, lead + sizes))}). Output "
                               f"size is too small (padding={[p for p, _ in pads]} takes more than the transposed "
                               f"convolution's output)")
    else:
        padded = [size + lo + hi for size, (lo, hi) in zip(input.shape[2:], pads)]
        spans = [d * (k - 1) + 1 for d, k in zip(dilation, ks)]
        if any(p < k for p, k in zip(padded, spans)):   # torch names every dim, 'x'-joined
            raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                               f"Kernel size: ({' x '.join(map(str, spans))}). Kernel size can't be greater than "
                               f"actual input size")
    if 0 in ks:   # torch's kernels refuse an empty kernel; unchecked, it reached the op with no torch
        # message (torch's empty-input paths differ: an input of 0 channels gives an empty result)
        raise RuntimeError(f"conv{'_transpose' if transposed else ''}{nd}d: kernel size should be greater than zero, "
                           f"but got kernel size {list(ks)} (the weight's trailing dims)")
    out = apply_op(OPS["convolution"], (input, weight, bias),
                   (("stride", stride), ("padding", pads), ("dilation", dilation), ("transposed", bool(transposed)),
                    ("output_padding", _tup(output_padding, nd)), ("groups", int(groups))))
    if out.ndim == 4 and not out._chain and (input._chain or weight._chain) and not (has_layout(input) or has_layout(weight)):
        # a plain view (an NHWC image's .permute(0, 3, 1, 2)) whose strides suggest channels_last
        # gives torch's CPU kernels a channels_last output too; apply_op only orders outputs after
        # laid-out inputs (NOTE [storage layouts]), so the view's case is looked at here. 2-d
        # only: torch's 3-d CPU kernels pick the layout by oneDNN's size heuristics
        order = _conv_order(out, (input, weight), False)
        if order is not None:
            lay_out(out, order)
    if cin == 0 and not transposed:   # torch's empty-input path keeps the input's zero channels
        out = out.narrow(1, 0, 0)
    return out.squeeze(0) if unbatched else out


def _check_conv_rank(nd, name, input, weight, stride, padding, dilation, output_padding=0):
    """torch's ``conv{nd}d``/``conv_transpose{nd}d`` with a weight of another rank than ``nd + 2``:
    they batch an unbatched input by ``nd`` and take stride/padding/dilation/output_padding as
    ``nd``-lists (an int repeated; conv{nd}d's own output_padding is ``nd`` zeros) before
    ``convolution`` compares each list's length and then the input's rank with the weight's -- a
    RuntimeError in every case. ``convolution`` reads the rank from the weight, so without this
    ``conv2d`` of a 5-d weight ran as a silent 3-d convolution."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor) or weight.ndim < 3 or weight.ndim == nd + 2:
        return
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
                           f"of size: {list(input.shape)}")
    k = weight.ndim - 2
    if not isinstance(padding, str):   # (a padding string goes to the rank check alone, as torch)
        for pname, v in (("stride", stride), ("padding", padding), ("dilation", dilation),
                         ("output_padding", output_padding)):
            vals = list(v) if isinstance(v, (list, tuple)) else [v] * nd
            if len(vals) not in (1, k):
                raise RuntimeError(f"expected {pname} to be a single integer value or a list of {k} values to match "
                                   f"the convolution dimensions, but got {pname}={vals}")
    shape = ([1] if input.ndim == nd + 1 else []) + list(input.shape)
    raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-dimensional weight "
                       f"{list(weight.shape)}, but got {len(shape)}-dimensional input of size {shape} instead; {name} "
                       f"takes a {nd + 2}-d weight")


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Mirrors ``torch.conv1d``: input ``(N, C_in, L)``, weight ``(C_out, C_in/groups, k)``."""
    _check_conv_rank(1, "conv1d", input, weight, stride, padding, dilation)
    return convolution(input, weight, bias, stride, padding, dilation, False, 0, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Mirrors ``torch.conv2d``: input ``(N, C_in, H, W)``, weight ``(C_out, C_in/groups, kH, kW)``;
    padding ints or 'same'/'valid'. grad_fn ``ConvolutionBackward0``."""
    _check_conv_rank(2, "conv2d", input, weight, stride, padding, dilation)
    return convolution(input, weight, bias, stride, padding, dilation, False, 0, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Mirrors ``torch.conv3d``."""
    _check_conv_rank(3, "conv3d", input, weight, stride, padding, dilation)
    return convolution(input, weight, bias, stride, padding, dilation, False, 0, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Mirrors ``torch.conv_transpose1d``: weight ``(C_in, C_out/groups, k)``."""
    _check_conv_rank(1, "conv_transpose1d", input, weight, stride, padding, dilation, output_padding)
    return convolution(input, weight, bias, stride, padding, dilation, True, output_padding, groups)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Mirrors ``torch.conv_transpose2d``: weight ``(C_in, C_out/groups, kH, kW)``."""
    _check_conv_rank(2, "conv_transpose2d", input, weight, stride, padding, dilation, output_padding)
    return convolution(input, weight, bias, stride, padding, dilation, True, output_padding, groups)


# ---- pooling --------------------------------------------------------------------------------
def _pool_args(nd, kernel_size, stride, padding, dilation, name, input=None, ceil_mode=False):
    """Normalised ``(kernel, stride, padding, dilation)`` tuples, with torch's checks (all on
    shapes and arguments, none on values): stride/kernel/dilation positive, padding in
    ``[0, kernel/2]``, input ``(C, *spatial)`` or ``(N, C, *spatial)`` with non-empty
    non-batch dims, and an output of at least one element per spatial dim. RuntimeError; TypeError
    for a missing (None) kernel_size, as torch's parser."""
    if kernel_size is None:
        raise TypeError(f"{name}(): argument 'kernel_size' (position 2) must be tuple of ints, not NoneType")
    if type(ceil_mode) is not bool and type(ceil_mode).__name__ != "bool_":   # torch's parser: a bool only
        raise TypeError(f"{name}(): argument 'ceil_mode' must be bool, not {type(ceil_mode).__name__}; pass "
                        f"ceil_mode=True or False")
    k = _tup(kernel_size, nd, "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else _tup(stride, nd, "stride")
    p, d = _tup(padding, nd, "padding"), _tup(dilation, nd, "dilation")
    if any(v == 0 for v in s):
        raise RuntimeError(f"{name}: stride should not be zero, got stride={list(s)}")
    if any(v < 0 for v in s):
        raise RuntimeError(f"{name}: stride must be greater than zero, got stride={list(s)}")
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{name}: kernel size should be greater than zero, got kernel_size={list(k)}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{name}: dilation should be greater than zero, got dilation={list(d)}")
    if any(v < 0 for v in p):
        raise RuntimeError(f"{name}: pad must be non-negative, but got pad: {list(p)}")
    for kk, pp in zip(k, p):
        if pp * 2 > kk:
            raise RuntimeError(f"{name}: pad should be at most half of effective kernel size, but got pad={pp}, "
                               f"kernel_size={kk}")
    if input is not None:
        shp = tuple(input.shape)
        if len(shp) not in (nd + 1, nd + 2) or any(v == 0 for v in shp[-nd - 1:]):
            raise RuntimeError(f"{name}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim "
                               f"batch size for input, but got: {list(shp)}")
        out = [_pool_out(size, kk, ss, pp, dd, ceil_mode) for size, kk, ss, pp, dd in zip(shp[-nd:], k, s, p, d)]
        if any(o < 1 for o in out):
            fmt = "x".join
            raise RuntimeError(f"{name}: Given input size: ({fmt(map(str, shp[-nd - 1:]))}). Calculated output size: "
                               f"({fmt(map(str, (shp[-nd - 1], *out)))}). Output size is too small (the kernel "
                               f"{list(k)} with padding {list(p)} does not fit the input)")
    return k, s, p, d


def check_max_pool_dtype(input, kernel):
    """torch has no bool max-pooling kernel: NotImplementedError naming ``kernel`` (its CPU
    kernel's name, as torch's message), after the shape checks (as torch)."""
    if isinstance(input, Tensor) and input.dtype is _dt.bool_:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'; max-pool a bool mask as "
                                  f"uint8 (.byte()) or float (.float()) and compare the result")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Mirrors ``torch.max_pool2d``: input ``(N, C, H, W)`` or ``(C, H, W)``; padding is -inf.
    grad_fn ``MaxPool2DWithIndicesBackward0``. NotImplementedError for bool input."""
    k, s, p, d = _pool_args(2, kernel_size, stride, padding, dilation, "max_pool2d", input, ceil_mode)
    check_max_pool_dtype(input, "max_pool2d")
    return apply_op(OPS["max_pool2d"], (input,), (("kernel", k), ("stride", s), ("padding", p), ("dilation", d),
                                                  ("ceil_mode", bool(ceil_mode))))


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Mirrors ``torch._C._nn.max_pool2d_with_indices``: (values, int64 flat indices into H*W)."""
    k, s, p, d = _pool_args(2, kernel_size, stride, padding, dilation, "max_pool2d", input, ceil_mode)
    check_max_pool_dtype(input, "max_pool2d")
    return save_indices(*apply_op(OPS["max_pool2d_with_indices"], (input,), (
        ("kernel", k), ("stride", s), ("padding", p), ("dilation", d), ("ceil_mode", bool(ceil_mode)))))


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Mirrors ``torch.max_pool1d``: input ``(N, C, L)`` or ``(C, L)``; as torch, a 2-D pool over
    ``input.unsqueeze(-2)`` then ``squeeze(-2)`` (grad_fn ``SqueezeBackward1``).
    NotImplementedError for integer or bool input (torch's 1-D kernel is floating only)."""
    k, s, p, d = _pool_args(1, kernel_size, stride, padding, dilation, "max_pool1d", input, ceil_mode)
    if isinstance(input, Tensor) and input.dtype._cat <= 1:   # torch's 1-D kernel: floating types only
        raise NotImplementedError(f"\"max_pool1d_impl\" not implemented for '{_scalar_name(input.dtype.np)}'; "
                                  f"convert the input with .float() (max_pool2d also takes integers)")
    return max_pool2d(input.unsqueeze(-2), (1,) + k, (1,) + s, (0,) + p, (1,) + d, ceil_mode).squeeze(-2)


def _check_divisor(divisor_override, name):
    """torch's checks of avg_pool's ``divisor_override``: None or an int (TypeError), not 0
    (RuntimeError)."""
    if divisor_override is None:
        return
    if isinstance(divisor_override, bool) or not hasattr(divisor_override, "__index__"):
        raise TypeError(f"{name}(): argument 'divisor_override' must be int, not {type(divisor_override).__name__}")
    if divisor_override == 0:
        raise RuntimeError(f"{name}: divisor must be not zero (divisor_override=0); pass None to divide by the "
                           f"window size")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mirrors ``torch._C._nn.avg_pool2d``. grad_fn ``AvgPool2DBackward0``. IndexError for an
    input of fewer than 3 dims (torch reads dim -3 before any other check)."""
    if isinstance(input, Tensor) and input.ndim < 3:
        if input.ndim == 0:
            raise IndexError("avg_pool2d: Dimension specified as -3 but tensor has no dimensions; "
                             "the input must be (C, H, W) or (N, C, H, W)")
        raise IndexError(f"avg_pool2d: Dimension out of range (expected to be in range of [{-input.ndim}, "
                         f"{input.ndim - 1}], but got -3); the input must be (C, H, W) or (N, C, H, W), "
                         f"got {list(input.shape)}")
    k, s, p, _ = _pool_args(2, kernel_size, stride, padding, 1, "avg_pool2d", input, ceil_mode)
    _check_divisor(divisor_override, "avg_pool2d")
    return apply_op(OPS["avg_pool2d"], (input,), (("kernel", k), ("stride", s), ("padding", p),
                                                  ("ceil_mode", bool(ceil_mode)),
                                                  ("count_include_pad", bool(count_include_pad)),
                                                  ("divisor_override", divisor_override)))


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mirrors ``torch.avg_pool1d`` (2-D pool over ``input.unsqueeze(-2)``, as torch)."""
    k, s, p, _ = _pool_args(1, kernel_size, stride, padding, 1, "avg_pool1d", input, ceil_mode)
    return avg_pool2d(input.unsqueeze(-2), (1,) + k, (1,) + s, (0,) + p, ceil_mode, count_include_pad).squeeze(-2)


def _out_size(input, output_size, nd, api="adaptive pool"):
    """Output size of an ``nd``-d adaptive pool, with torch's checks in torch's order: a sequence
    needs more input dims than entries (ValueError, from torch's Python wrapper), then exactly
    ``nd`` entries and none negative (RuntimeError). (An integer or bool input is the caller's
    ``check_adaptive_kernel_dtype``, after its rank checks, as torch's.) An output size that is
    neither an int nor a sequence (None, a float) is TypeError before anything else, as torch's
    wrapper (``len(output_size)``) and parser."""
    if not isinstance(output_size, (list, tuple, int, str)) and not hasattr(output_size, "__index__"):
        raise TypeError(f"{api}(): argument 'output_size' must be an int or a tuple of ints, not "
                        f"{type(output_size).__name__}")
    # (an input of fewer than ``nd`` dims with an int size: all of it, so that a size of 1 is the
    # mean torch takes, whose dim error is torch's IndexError)
    sp = (1,) * max(0, nd - input.ndim) + tuple(input.shape[-nd:] if input.ndim else ())
    seq = isinstance(output_size, (list, tuple))
    if nd > 1:
        if (seq or isinstance(output_size, str)) and input.ndim <= len(output_size):
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
        check_output_size_items(output_size, api)
    if seq and len(output_size) != nd:
        if nd == 1:
            raise RuntimeError(f"{api}() argument 'output_size' should contain one int (got {len(output_size)})")
        raise RuntimeError(f"{api}: output_size must be {nd}")
    o = output_size if seq else (output_size,) * nd
    out = tuple(int(s if v is None else v) for s, v in zip(sp, o))
    if any(v < 0 for v in out):
        raise RuntimeError(f"adaptive pool: elements of output_size must be greater than or equal to 0 but "
                           f"received {list(out)}")
    # torch's allocator refuses an output whose byte size overflows int64 (RuntimeError); unchecked,
    # such a size (AdaptiveMaxPool1d(2**62)) reached the window-bounds loop and never returned
    check_storage_size(tuple(input.shape[:-nd]) + out, input.dtype.itemsize, sizes_given=False)
    return out


def check_output_size_items(output_size, api):
    """torch's parser's TypeError for a 2-D/3-D adaptive pool's ``output_size`` (after its Python
    wrapper has put each ``None`` to the input's size): a bool, or a str or a sequence holding
    anything but ints and ``None`` (a float, a str; a bool first, as the parser tells an int list
    by its first element). Unchecked, ``int()`` took ``True``, ``'3'`` and ``2.0`` as sizes and
    the pool ran where torch refuses the call."""
    if type(output_size) is bool:
        raise TypeError(f"{api}(): argument 'output_size' (position 2) must be tuple of ints, not bool")
    if isinstance(output_size, (list, tuple, str)):
        for i, v in enumerate(output_size):
            if v is not None and (type(v) is bool and i == 0 or not _is_index(v)):
                raise TypeError(f"{api}(): argument 'output_size' (position 2) must be tuple of ints, but found "
                                f"element of type {type(v).__name__} at pos {i}")


def check_adaptive_kernel_dtype(input, kernel):
    """NotImplementedError for an integer or bool input to an adaptive average pool (torch has no
    such kernels), made after the rank and size checks, as torch's kernel: an integer input of the
    wrong rank is the rank's RuntimeError (it was this error). An empty input is taken (torch's
    kernel returns before its dtype dispatch), as is an empty output (the caller's)."""
    if input.numel() and not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_scalar_name(input.dtype.np)}'; convert the "
                                  f"input with .float()")


def check_adaptive_nonempty(input, first, api):
    """torch's adaptive pooling kernels' check (RuntimeError): the input's dims from ``first`` on
    are non-empty (torch's kernels differ: the average 2-D pool checks its two pooled dims, the
    max 2-D and the 3-D pools every dim after dim 0, even an unbatched input's channel dim)."""
    shp = list(input.shape)
    for i in range(first, len(shp)):
        if shp[i] == 0:
            raise RuntimeError(f"{api}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {shp} with dimension {i} being empty")


def empty_adaptive_pool(input, out, kind):
    """An adaptive pool whose output size has a 0 (``kind`` "avg" or "max", ``len(out)`` pooled
    dims): the empty result, whose backward raises torch's RuntimeError (torch's backward kernels
    refuse an empty grad_output) under torch's node name."""
    nd = len(out)
    value = input.detach()[(Ellipsis,) + tuple(slice(0, o) for o in out)].clone()
    sizes = list(value.shape)
    dim = next(i for i in range(1, len(sizes)) if sizes[i] == 0)
    api = f"adaptive_{kind}_pool{nd}d_backward"
    message = (f"{api}(): Expected grad_output to have non-zero size for non-batch dimensions, but grad_output has "
               f"sizes {sizes} with dimension {dim} being empty")
    return no_derivative(value, input, api, f"Adaptive{kind.capitalize()}Pool{nd}DBackward0", (RuntimeError, message))


def adaptive_avg_pool2d(input, output_size):
    """Mirrors ``torch._C._nn.adaptive_avg_pool2d``; ``None`` in output_size keeps that size.
    Output size (1, 1) is a mean over H, W (``MeanBackward1``), as torch. RuntimeError for an
    input that is not 3-D or 4-D or has an empty non-batch dim."""
    out = _out_size(input, output_size, 2, "adaptive_avg_pool2d")
    if out == (1, 1):   # before the rank check, as torch (a 2-D input's (1, 1) pool is its mean)
        res = input.mean((-1, -2), keepdim=True)
        if isinstance(input, Tensor) and suggest_memory_format(input) is channels_last:
            # torch restrides the mean in place to channels-last strides (c, 1, c, c)
            # (grad_fn AsStridedBackward1), so the output keeps its input's format
            n, c = res.shape[:2]
            _restride_(res, as_strided, ((n, c, 1, 1), (c, 1, c, c)), "AsStridedBackward1")
        return res
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}; pass "
                           "(C, H, W) or (N, C, H, W)")
    # torch's kernel refuses an empty channel or spatial dim; unchecked, it reached the op with
    # no torch message (the generic "cannot run on inputs of shapes" text)
    check_adaptive_nonempty(input, input.ndim - 2, "adaptive_avg_pool2d")
    if 0 in out:
        return empty_adaptive_pool(input, out, "avg")
    check_adaptive_kernel_dtype(input, "adaptive_avg_pool2d")
    return apply_op(OPS["adaptive_avg_pool2d"], (input,), (("output_size", out),))


def adaptive_avg_pool1d(input, output_size):
    """Mirrors ``torch.adaptive_avg_pool1d`` (2-D pool over ``input.unsqueeze(-2)``, as torch).
    RuntimeError for an input that is not 2-D or 3-D."""
    if isinstance(input, Tensor) and input.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_avg_pool1d(): Expected 2 to 3 dimensions, but got {input.ndim}-dimensional "
                           f"tensor for argument #1 'self'; pass (C, L) or (N, C, L)")
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1,) + _out_size(input, output_size, 1, "adaptive_avg_pool1d")).squeeze(-2)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Mirrors ``torch._C._nn.adaptive_max_pool2d``, with torch's checks: input ``(C, H, W)`` or
    ``(N, C, H, W)`` with non-empty non-batch dims (RuntimeError), a floating dtype
    (NotImplementedError). An output size of 0 gives an empty tensor, as torch. With
    ``return_indices``, ``(values, indices)``: int64 flat positions ``h * W + w`` of each
    window's first maximum."""
    shp = tuple(input.shape)
    out = _out_size(input, output_size, 2, "adaptive_max_pool2d")
    if len(shp) not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {list(shp)}")
    check_adaptive_nonempty(input, 1, "adaptive_max_pool2d")   # (an unbatched input's empty C is taken)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"adaptive_max_pool2d\" not implemented for '{_scalar_name(input.dtype.np)}'; "
                                  f"convert the input with .float()")
    return adaptive_max_pool(input, out, return_indices)


def adaptive_max_pool(input, out, return_indices):
    """An adaptive max pool of the trailing ``len(out)`` (2 or 3) dims to sizes ``out``, already
    checked; with ``return_indices``, ``(values, indices)``: int64 flat positions of each
    window's first maximum in the pooled dims, which the gradient reaches (as torch's)."""
    if 0 in out:   # no window to reduce
        values = empty_adaptive_pool(input, out, "max")
        return (values, values.detach().long()) if return_indices else values
    static = (("output_size", tuple(out)),)
    values = apply_op(OPS[f"adaptive_max_pool{len(out)}d"], (input,), static)
    if not return_indices:
        return values
    return save_indices(values, apply_op(OPS[f"adaptive_max_pool{len(out)}d_indices"], (input,), static))


def max_unpool(input, indices, output_size):
    """Mirrors ``torch._C._nn.max_unpool2d``/``max_unpool3d``: ``input`` and int64 ``indices`` of
    one shape (those of ``max_pool(..., return_indices=True)``), each value written at its flat
    index into the trailing ``output_size`` dims (2 or 3 of them), zeros elsewhere. grad_fn
    ``MaxUnpool2DBackward0``/``MaxUnpool3DBackward0``. RuntimeError, as torch, for an index outside
    the output plane (eager only: NOTE [eager value checks])."""
    plane = math.prod(output_size)
    mm = _host_minmax(indices)
    if mm is None:
        _check_traced_range(indices, plane)
    elif mm[0] < 0 or mm[1] >= plane:
        raise RuntimeError(f"Found an invalid max index: {mm[0] if mm[0] < 0 else mm[1]} (output volumes are of size "
                           f"{'x'.join(str(o) for o in output_size)})")
    return apply_op(OPS[f"max_unpool{len(output_size)}d"], (input, indices), (("output_size", tuple(output_size)),))


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Mirrors ``torch.adaptive_max_pool1d`` (a 2-D pool over ``input.unsqueeze(-2)``, as torch);
    with ``return_indices``, ``(values, indices)``. RuntimeError for an input that is not 2-D or 3-D."""
    if isinstance(input, Tensor) and input.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d(): Expected 2 to 3 dimensions, but got {input.ndim}-dimensional "
                           f"tensor for argument #1 'self'; pass (C, L) or (N, C, L)")
    res = adaptive_max_pool2d(input.unsqueeze(-2), (1,) + _out_size(input, output_size, 1, "adaptive_max_pool1d"),
                              return_indices)
    return tuple(r.squeeze(-2) for r in res) if return_indices else res.squeeze(-2)


# ---- normalisation --------------------------------------------------------------------------
def _batch_norm_op(input, weight, bias, running_mean, running_var, training, eps):
    """``(output, batch mean, biased batch var)``: batch statistics in training, the running
    ones otherwise (which it does not update). grad_fn ``NativeBatchNormBackward0``. The output
    takes a channels-last-strided input view's format, as torch's kernel."""
    args = (input, weight, bias, running_mean, running_var)
    static = (("training", bool(training)), ("eps", float(eps)))
    if _state.FORWARD_AD[0] is not None and _has_tangent(running_mean, running_var):
        # torch's batch_norm_jvp: the running statistics take no forward grad; a tangent on the
        # input, weight or bias as well is an error, else the output gets no tangent
        if _has_tangent(input, weight, bias):
            raise RuntimeError("batch_norm is not differentiable wrt running_mean and running_var, they cannot "
                               "have forward grad defined; pass the statistics' primals (unpack_dual(t).primal)")
        outs = plain(apply_op, OPS["native_batch_norm"], args, static)
    else:
        outs = apply_op(OPS["native_batch_norm"], args, static)
    suggest_view_layout(outs[0], input, batch_norm_format(input))
    return outs


def _has_tangent(*tensors):
    """Whether one of ``tensors`` (Tensors or None) has a tangent at the open forward-AD level."""
    return any(isinstance(t, Tensor) and tangent_of(t) is not None for t in tensors)


@accepts_out(exact_dtype=True)
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """Mirrors ``torch.native_batch_norm``: ``(output, save_mean, save_invstd)``. In training,
    the batch mean and ``1 / sqrt(biased var + eps)`` per channel (shape ``(C,)``), and the
    running statistics, when given, updated in place as ``batch_norm`` does; otherwise two
    empty tensors. Only ``output`` is differentiable (grad_fn ``NativeBatchNormBackward0``).
    ``out=`` takes a tuple of three tensors of the results' dtypes (RuntimeError otherwise)."""
    if not training:
        out = _batch_norm_op(input, weight, bias, running_mean, running_var, False, eps)[0]
        return out, input.new_empty((0,)), input.new_empty((0,))
    if input.numel() == 0:   # torch's training kernel (batch_norm itself takes an empty batch)
        raise RuntimeError(f"input tensor must have at least one element, but got input_sizes = {list(input.shape)}")
    try:
        out, mean, var = _batch_norm_op(input, weight, bias, None, None, True, eps)
    except StopAfterOp:
        _update_after_stop(input, running_mean, running_var, momentum)
        raise
    if running_mean is not None or running_var is not None:
        _update_running_stats(running_mean, running_var, mean, var, momentum, verify_batch_size(input))
    with no_grad():
        return out, mean.detach(), (var.detach() + eps).rsqrt()


def _weight_norm_interface(v, g, dim=0):
    """Mirrors ``torch._weight_norm_interface``, the fused weight norm: ``(w, norms)`` with
    ``w = v * g / ||v||`` (grad_fn ``WeightNormInterfaceBackward0``) and ``norms`` the 2-norms of
    ``v`` over every dim but ``dim``, in g's shape, without history (float32 for float16 and
    bfloat16 input). ``dim`` must be 0 or ``v.dim() - 1`` (RuntimeError otherwise, as torch's kernel);
    ``v`` and ``g`` floating tensors of one dtype (RuntimeError otherwise)."""
    if not isinstance(v, Tensor) or not isinstance(g, Tensor):
        raise TypeError("_weight_norm_interface(): arguments 'v' and 'g' must be Tensors")
    dim = operator.index(dim)
    if dim not in (0, v.dim() - 1):
        raise RuntimeError(f"_weight_norm_interface: the fused weight norm takes dim 0 or the last dim "
                           f"({v.dim() - 1}), got {dim}; use torch._weight_norm for other dims")
    if not v.dtype.is_floating_point or v.dtype != g.dtype:
        raise RuntimeError(f"_weight_norm_interface: expected v and g floating and of one dtype, got {v.dtype} "
                           f"and {g.dtype}")
    w, norms = apply_op(OPS["_weight_norm_interface"], (v.contiguous(), g.contiguous()), (("dim", dim),))
    return w, norms.detach()


def _weight_norm(v, g, dim=0):
    """Mirrors ``torch._weight_norm`` (what ``nn.utils.weight_norm`` and the weight_norm
    parametrization compute): ``v * g / ||v||`` with the 2-norm over every dim but ``dim``
    (``dim=-1``: the whole of ``v``). As torch 2.13, for ``dim`` 0 or the last dim (float16
    included) it is the fused op (grad_fn ``WeightNormInterfaceBackward0``: NOTE [fused weight
    norm]), otherwise ``v * (g / norm_except_dim(v, 2, dim))`` (grad_fn ``MulBackward0``).
    RuntimeError when ``v`` and ``g`` are on different devices."""
    if v.device != g.device:
        raise RuntimeError(f"weight_norm: expected v_in and g_in to be on the same device, but v_in is on "
                           f"{v.device} and g_in is on {g.device}")
    dim = operator.index(dim)
    if dim in (0, v.dim() - 1) and v.dtype == g.dtype:
        return _weight_norm_interface(v, g, dim)[0]
    import tracegrad    # norm_except_dim lives in nn/_toplevel.py, a layer above this one
    return v * (g / tracegrad.norm_except_dim(v, 2, dim))


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """Mirrors ``torch.batch_norm_update_stats``: ``(mean, var)``, the per-channel batch mean and
    biased variance of ``input (N, C, *)`` in its dtype, with ``running_mean``/``running_var``
    (when given) updated in place as training batch norm does (momentum, unbiased var). As
    torch's, the results require grad when ``input`` does, with a ``NotImplemented`` grad_fn
    whose backward raises (the op has no derivative). RuntimeError for an empty
    input, NotImplementedError for a non-floating one, IndexError without a channel dim."""
    _check_norm_dtype(input, None, "batch_norm_update_stats_cpu", "batch_norm_update_stats", running_mean,
                      running_var)
    if input.ndim < 2:
        raise IndexError(f"batch_norm_update_stats: Dimension out of range (expected to be in range of "
                         f"[{-max(input.ndim, 1)}, {max(input.ndim, 1) - 1}], but got 1); pass an input (N, C, *)")
    if input.numel() == 0:
        raise RuntimeError(f"input tensor must have at least one element, but got input_sizes = {list(input.shape)}")
    dims = [0] + list(range(2, input.ndim))
    with no_grad():
        x = input.detach()
        mean, var = x.mean(dims), x.var(dims, unbiased=False)
    _update_running_stats(running_mean, running_var, mean, var, momentum, input.numel() // input.shape[1])
    error = (RuntimeError, "derivative for aten::batch_norm_update_stats is not implemented")
    return tuple(no_derivative(r, input, "batch_norm_update_stats", "NotImplemented", error) for r in (mean, var))


def _update_running_stats(running_mean, running_var, mean, var, momentum, n):
    """torch's running-statistics update: ``momentum`` of the batch's mean and unbiased var
    (none for an empty batch, ``n == 0``, as torch's)."""
    if not n:
        return
    stats = [t for t in (running_mean, running_var) if t is not None]
    versions = [t._vc[0] for t in stats]
    with no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.detach().to(running_mean.dtype) * momentum)
        if running_var is not None:
            unbiased = var.detach() * (n / (n - 1))
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
    # torch's kernel writes the statistics without bumping their version counters (a BatchNorm
    # forward leaves ``running_mean._version`` as it was; a compiled step records the same)
    for t, v in zip(stats, versions):
        t._vc[0] = v


def _update_after_stop(input, running_mean, running_var, momentum):
    """The running-statistics update of a training batch_norm whose op a saved-tensor hook
    stopped (StopAfterOp: checkpoint's early stop ends a recomputation at the op that saves the
    last tensor). torch's kernel updates the statistics before anything is saved, so the update
    still happens, from batch statistics computed again (the op's outputs never arrived)."""
    if running_mean is None and running_var is None:
        return
    dims = [0] + list(range(2, input.ndim))
    with no_grad():
        x = input.detach()
        mean, var = x.mean(dims), x.var(dims, unbiased=False)
    _update_running_stats(running_mean, running_var, mean, var, momentum, verify_batch_size(input))


def verify_batch_size(input) -> int:
    """Values per channel of ``input (N, C, *)``; ValueError, as torch, when there is only one
    (a batch statistic in training would be a constant)."""
    n = math.prod(input.shape[:1] + input.shape[2:])   # not numel // C: C may be 0
    if n == 1:   # (an empty batch passes, as torch's)
        # the size as torch prints it (``torch.Size([1, 3])``), a Size even inside a trace
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{input.shape}")
    return n


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=True):
    """Mirrors ``torch.batch_norm``: normalises over all dims but 1; in training mode updates
    ``running_mean``/``running_var`` in place (unbiased variance, ``momentum``; a cumulative
    average is the caller's job). RuntimeError (torch: ValueError) on a batch of one value per
    channel in training, and for running stats, weight or bias without one element per channel.
    An empty input is torch's early return (before any check): ``input.clone() * weight[0] + bias[0]``
    (the dtypes promote; running stats untouched). TypeError, the parser's, for a ``momentum`` or
    ``eps`` that is not a real number (or a 0-dim tensor), or flags that are not bools."""
    require_bool("batch_norm", "training", training, 6)
    momentum = require_float("batch_norm", "momentum", momentum, 7)
    require_bool("batch_norm", "cudnn_enabled", cudnn_enabled, 9)
    eps = require_float("batch_norm", "eps", eps, 8)
    if input.numel() == 0:   # torch's _batch_norm_impl_index returns before its dtype/size checks
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    _check_norm_dtype(input, weight, "batch_norm", "batch_norm", bias, running_mean, running_var)
    # torch checks each per-channel tensor against C (dim 1; 0 for an input without one) first
    c = input.shape[1] if input.ndim >= 2 else 0
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()} (one per channel, dim 1 of "
                               f"the input of shape {list(input.shape)})")
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        # torch's kernel reads the running stats as vectors (in both modes): a (C, 1) or 0-d one
        # is refused there, where broadcasting would take it (weight and bias may have any shape)
        if t is not None and t.ndim != 1:
            raise RuntimeError(f"batch_norm: {name} expected 1 dims but tensor has {t.ndim} (shape "
                               f"{list(t.shape)}); pass one value per channel as a 1-D tensor")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError(f"{'running_mean' if running_mean is None else 'running_var'} must be defined in "
                           "evaluation mode; pass the running statistics or training=True")
    if input.ndim < 2:
        raise IndexError(f"batch_norm: Dimension out of range (expected to be in range of [{-max(input.ndim, 1)}, "
                         f"{max(input.ndim, 1) - 1}], but got 1); pass an input (N, C, *) with a channel dim")
    if training:
        n = verify_batch_size(input)
    # training reads batch statistics only: running stats stay out of the op (and its saved set),
    # so updating them in place below does not trip the saved-tensor version check
    try:
        out, mean, var = _batch_norm_op(input, weight, bias, None if training else running_mean,
                                        None if training else running_var, training, eps)
    except StopAfterOp:
        if training:
            _update_after_stop(input, running_mean, running_var, momentum)
        raise
    if training and running_mean is not None:
        _update_running_stats(running_mean, running_var, mean, var, momentum, n)
    return out


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """Mirrors ``torch.layer_norm``: normalises over the trailing ``normalized_shape`` dims.
    grad_fn ``NativeLayerNormBackward0``. RuntimeError if the trailing shape differs; TypeError
    for an ``eps`` that is not a real number or a ``cudnn_enable`` that is not a bool."""
    eps = require_float("layer_norm", "eps", eps, 5)
    require_bool("layer_norm", "cudnn_enable", cudnn_enable, 6)
    ns = tuple(normalized_shape) if isinstance(normalized_shape, (list, tuple)) else (int(normalized_shape),)
    if not ns:   # torch checks the shape before the kernel's dtypes
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = [] (layer_norm: pass the trailing dims to "
                           "normalise over)")
    _check_norm_dtype(input, weight, "LayerNormKernelImpl", "layer_norm", bias)
    if tuple(input.shape[input.ndim - len(ns):]) != ns or input.ndim < len(ns):
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    return apply_op(OPS["native_layer_norm"], (input, weight, bias), (("n", len(ns)), ("eps", float(eps))))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """Mirrors ``torch.group_norm``: input ``(N, C, *)``, C divisible by ``num_groups``, weight and
    bias ``(C,)`` (RuntimeError otherwise). grad_fn ``NativeGroupNormBackward0``. TypeError for an
    ``eps`` that is not a real number or a ``cudnn_enabled`` that is not a bool."""
    eps = require_float("group_norm", "eps", eps, 5)
    require_bool("group_norm", "cudnn_enabled", cudnn_enabled, 6)
    _check_norm_dtype(input, weight, "GroupNormKernelImpl", "group_norm", bias)
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    if input.shape[1] % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input "
                           f"of shape {list(input.shape)} and num_groups={num_groups}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and (p.ndim != 1 or p.shape[0] != input.shape[1]):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, but "
                               f"got {name} of shape {list(p.shape)} and input of shape {list(input.shape)}")
    return apply_op(OPS["native_group_norm"], (input, weight, bias), (("groups", int(num_groups)), ("eps", float(eps))))


# ---- misc -----------------------------------------------------------------------------------
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Mirrors ``torch.embedding``: rows of ``weight`` ``(num_embeddings, dim)`` picked by integer
    ``indices``; the ``padding_idx`` row (``-1``/None: none) gets no gradient;
    ``scale_grad_by_freq`` divides each row's gradient by how often its id occurs in ``indices``.
    grad_fn ``EmbeddingBackward0``. Raises RuntimeError for float indices or a non-2-D weight, IndexError
    for an id outside ``[0, num_embeddings)`` (eager only: NOTE [eager value checks]); TypeError for
    flags that are not bools."""
    require_bool("embedding", "scale_grad_by_freq", scale_grad_by_freq, 4)
    require_bool("embedding", "sparse", sparse, 5)
    if indices.dtype is not _dt.int64 and indices.dtype is not _dt.int32:   # torch's kernel: Long or Int only
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {indices.dtype} instead (call .long())")
    if weight.ndim != 2:
        raise RuntimeError(f"embedding: 'weight' must be 2-D, got a weight of shape {list(weight.shape)}")
    n = weight.shape[0]
    if n == 0 and indices.numel() > 0:
        # torch's index_select refuses picking from an empty table (RuntimeError, not IndexError)
        raise RuntimeError("embedding: the weight has num_embeddings=0 rows, so no index can be looked up "
                           "(index_select(): self indexing axis dim should be positive)")
    mm = _host_minmax(indices)   # NOTE [eager value checks]
    if mm is None:
        _check_traced_range(indices, n)
    if mm is not None and (mm[0] < 0 or mm[1] >= n):
        bad = mm[0] if mm[0] < 0 else mm[1]
        raise IndexError(f"embedding: index out of range in self (index {bad} with num_embeddings={n}; "
                         f"ids must lie in [0, {n}))")
    pidx = None if padding_idx is None or padding_idx < 0 else int(padding_idx)
    if sparse:
        return sparse_embedding(weight, indices, pidx, scale_grad_by_freq)
    static = (("padding_idx", pidx),) + ((("scale_grad_by_freq", True),) if scale_grad_by_freq else ())
    return apply_op(OPS["nn_embedding"], (weight, indices), static)


def one_hot(tensor, num_classes=-1):
    """Mirrors ``torch._C._nn.one_hot``: int64 ``(*, num_classes)``; ``num_classes=-1`` infers
    ``max + 1`` (a host read, a graph break inside ``tracegrad.compile``). RuntimeError, as torch,
    for non-int64 input, negative classes, classes >= num_classes, or inferring from an empty
    tensor (values checked in eager only: NOTE [eager value checks])."""
    if tensor.dtype.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    mm = _host_minmax(tensor)
    if tensor.numel() == 0 and num_classes <= 0:
        # torch refuses any num_classes <= 0 for an empty tensor (0 and -2 too, not only -1)
        raise RuntimeError("one_hot: Can not infer total number of classes from empty tensor; pass a "
                           f"positive num_classes (got {num_classes})")
    if num_classes == -1:
        if mm is None:   # traced values: reading max is the data-dependent shape torch has too
            mm = (int(tensor.min().item()), int(tensor.max().item()))
        if mm[0] < 0:
            raise RuntimeError("one_hot: Class values must be non-negative.")
        num_classes = mm[1] + 1
    elif mm is None:
        _check_traced_range(tensor, num_classes)
    else:
        if mm[0] < 0:
            raise RuntimeError(f"one_hot: Class values must be non-negative (got {mm[0]}).")
        if mm[1] >= num_classes:
            raise RuntimeError(f"one_hot: Class values must be smaller than num_classes (got {mm[1]} with "
                               f"num_classes={num_classes}).")
    if num_classes < 0:
        raise RuntimeError(f"one_hot: Class values must be smaller than num_classes (num_classes={num_classes}).")
    return (tensor.unsqueeze(-1) == arange(num_classes)).long()


def _dropout_noise(name, input, p, train):
    """The factor torch's dropout multiplies ``input`` by: None where it hands ``input`` back
    itself (not training, ``p == 0``, an empty input), zeros for ``p == 1``, else a Bernoulli
    ``1 - p`` mask over ``1 - p`` (tracegrad's RNG). TypeError for a ``p`` that is not a real
    number (a tensor with dims, one that requires grad), or a ``train`` that is not a bool."""
    p = require_float(name, "p", p, 2)
    require_bool(name, "train", train, 3)
    if not isinstance(input, Tensor):   # the identity would hand it back: torch's parser refuses it
        raise not_a_tensor(name, input)
    if not train or p == 0 or input.numel() == 0:
        return None
    if p == 1:
        return empty_like(input, requires_grad=False).fill_(0)
    return empty_like(input, requires_grad=False).bernoulli_(1 - p).div_(1 - p)


def dropout(input, p, train):
    """Mirrors ``torch.dropout``: zeroes elements with probability ``p`` (tracegrad's RNG) and scales
    the rest by ``1/(1-p)``; grad_fn ``MulBackward0`` (as torch on CPU); ``input`` itself when not
    training, for ``p == 0`` and for an empty input. TypeError for a ``p`` that is not a real number
    (a tensor with dims, one that requires grad), or a ``train`` that is not a bool."""
    noise = _dropout_noise("dropout", input, p, train)
    return input if noise is None else input * noise


def dropout_(input, p, train):
    """Mirrors ``torch.dropout_``: ``dropout`` as ``input.mul_(noise)`` (grad_fn ``MulBackward0``,
    one version bump); where torch's kernel hands ``input`` back (not training, ``p == 0``, an
    empty input) nothing is written, so ``input``'s version and grad_fn stay as they were (an
    ``nn.Dropout(0.0, inplace=True)`` after an in-place ReLU leaves the ReLU's saved output
    valid). TypeError as ``dropout``."""
    noise = _dropout_noise("dropout_", input, p, train)
    return input if noise is None else input.mul_(noise)


def constant_pad_nd(input, pad, value=0):
    """Mirrors ``torch.constant_pad_nd``: ``pad`` pairs start from the last dim (negative crops).
    grad_fn ``ConstantPadNdBackward0``. TypeError for a pad that is not a sequence of ints."""
    for i, x in enumerate(pad):   # (int() would truncate a float pad silently)
        # torch's int-list parser refuses a bool only as the first element; a later one is its value
        if (isinstance(x, bool) and i == 0) or isinstance(x, float) or not hasattr(x, "__index__"):
            raise TypeError(f"constant_pad_nd(): argument 'pad' (position 2) must be tuple of ints, but found "
                            f"element of type {type(x).__name__} at pos {i}")
    pad = tuple(int(x) for x in pad)
    # the fill value is converted to input's dtype with c10's overflow check (NaN/inf/300 into an
    # integer tensor, 1e39 into float32: RuntimeError; an int past 64 bits: OverflowError), as torch
    check_number_fits(value, input.dtype, "constant_pad_nd")
    check_float_fits(value, input.dtype, "constant_pad_nd")
    if type(value) is int and value >= 2 ** 63 and input.dtype._cat != 1:   # past int64: a float, as torch reads it
        value = float(value)
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length must be divisible by 2 and at most twice the number of dims "
                           f"({input.ndim}), got {len(pad)}")
    widths = [(0, 0)] * input.ndim
    for i in range(len(pad) // 2):
        widths[input.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    for d, (lo, hi) in enumerate(widths):
        if input.shape[d] + lo + hi < 0:
            raise RuntimeError(f"constant_pad_nd: the padding ({lo}, {hi}) of dim {d} leaves a negative size "
                               f"from {input.shape[d]}")
    # NOTE [result size past int64]: a padded size past int64 bytes aborts XLA; torch's RuntimeError
    check_result_size([n + lo + hi for n, (lo, hi) in zip(input.shape, widths)], input.dtype.itemsize, "constant_pad_nd")
    return show_saved(apply_op(OPS["pad"], (input,), (("pad_width", tuple(widths)), ("value", value))), (("pad", pad),))


def _mode_pad(input, pad, mode):
    """reflect / replicate padding of the last ``len(pad)//2`` dims (torch's ReflectionPadNd /
    ReplicationPadNd nodes)."""
    nd = len(pad) // 2
    widths = [(0, 0)] * input.ndim
    for i in range(nd):
        widths[input.ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    name = {"reflect": "reflection", "replicate": "replication"}[mode]
    check_result_size([n + lo + hi for n, (lo, hi) in zip(input.shape, widths)], input.dtype.itemsize,
                      f"{name}_pad{nd}d")   # NOTE [result size past int64]
    return apply_op(OPS[f"{name}_pad{nd}d"], (input,), (("pad_width", tuple(widths)),))


def relu(input):
    """Mirrors ``torch.relu``: grad_fn ``ReluBackward0``."""
    return input.relu()


def sigmoid(input):
    """Mirrors ``torch.sigmoid``."""
    return input.sigmoid()


def tanh(input):
    """Mirrors ``torch.tanh``."""
    return input.tanh()


def hardtanh(input, min_val=-1.0, max_val=1.0):
    """Mirrors ``torch._C._nn.hardtanh``: grad_fn ``HardtanhBackward0``."""
    return apply_op(OPS["hardtanh"], (input,), (("min_val", min_val), ("max_val", max_val)))


def selu(input):
    """Mirrors ``torch.selu``."""
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return apply_op(OPS["selu"], (input,), (("alpha", alpha), ("scale", scale), ("input_scale", 1)))


def celu(input, alpha=1.0):
    """Mirrors ``torch.celu``: ``alpha * expm1(input / alpha)`` at or below 0 (grad_fn
    ``CeluBackward0``). RuntimeError for ``alpha == 0``."""
    if alpha == 0:
        raise RuntimeError("celu: ZeroDivisionError: alpha cannot be 0 for CELU; pass a nonzero alpha")
    return apply_op(OPS["celu"], (input,), (("alpha", float(alpha)),))


# torch's elu kernel takes floating dtypes only (NotImplementedError for an integer or bool input)
selu, celu = floating_input(selu, "elu_cpu"), floating_input(celu, "elu_cpu")


def _elu(input, alpha=1.0):
    return apply_op(OPS["elu"], (input,), (("alpha", float(alpha)),))


def class_indices_out_of_range(target, n_classes, ignore_index):
    """A bool tensor: whether an element of ``target`` (class indices) is outside
    ``[0, n_classes)`` and not ``ignore_index``."""
    return apply_op(OPS["class_indices_out_of_range"], (target,),
                    (("n_classes", n_classes), ("ignore_index", ignore_index)))


def _loss(name, input, target, *rest, **static):
    if not isinstance(target, Tensor):
        raise TypeError(f"{name}(): argument 'target' must be Tensor, not {type(target).__name__}")
    return apply_op(OPS[name], (input, target, *rest), tuple(static.items()))


_REDUCTIONS = ("none", "mean", "sum")


def _red(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


_nn = types.SimpleNamespace(
    gelu=lambda input, approximate="none": apply_op(OPS["gelu"], (input,), (("approximate", approximate),)),
    leaky_relu=lambda input, negative_slope=0.01: apply_op(OPS["leaky_relu"], (input,),
                                                           (("negative_slope", float(negative_slope)),)),
    elu=_elu,
    softplus=lambda input, beta=1.0, threshold=20.0: apply_op(OPS["softplus"], (input,),
                                                              (("beta", float(beta)), ("threshold", float(threshold)))),
    hardtanh=hardtanh,
    silu=lambda input: apply_op(OPS["silu"], (input,)),
    log_sigmoid=lambda input: apply_op(OPS["log_sigmoid"], (input,)),
    glu=lambda input, dim: apply_op(OPS["glu"], (input,), (("dim", int(dim)),)),
    rrelu_with_noise=lambda input, noise, lower, upper, training: apply_op(
        OPS["rrelu_with_noise"], (input, noise),
        (("lower", float(lower)), ("upper", float(upper)), ("training", bool(training)))),
    mish=lambda input: apply_op(OPS["mish"], (input,)),
    ctc_loss=lambda log_probs, targets, input_lengths, target_lengths, blank=0, zero_infinity=False: apply_op(
        OPS["ctc_loss"], (log_probs, targets, input_lengths, target_lengths),
        (("blank", int(blank)), ("zero_infinity", bool(zero_infinity)))),
    nll_loss=lambda input, target, weight=None, reduction="mean", ignore_index=-100: _loss(
        "nll_loss" if input.ndim <= 2 else "nll_loss2d", input, target, weight, reduction=_red(reduction),
        ignore_index=int(ignore_index)),
    mse_loss=lambda input, target, reduction="mean": _loss("mse_loss", input, target, reduction=_red(reduction)),
    smooth_l1_loss=lambda input, target, reduction="mean", beta=1.0: _loss(
        "smooth_l1_loss", input, target, reduction=_red(reduction), beta=float(beta)),
    huber_loss=lambda input, target, reduction="mean", delta=1.0: _loss(
        "huber_loss", input, target, reduction=_red(reduction), delta=float(delta)),
    soft_margin_loss=lambda input, target, reduction="mean": _loss(
        "soft_margin_loss", input, target, reduction=_red(reduction)),
    multi_margin_loss=lambda input, target, p, margin, weight, reduction: _loss(
        "multi_margin_loss", input, target, weight, p=int(p), margin=float(margin), reduction=_red(reduction)),
    multilabel_margin_loss=lambda input, target, reduction: _loss(
        "multilabel_margin_loss", input, target, reduction=_red(reduction)),
    binary_cross_entropy=lambda input, target, weight=None, reduction="mean": _loss(
        "binary_cross_entropy", input, target, weight, reduction=_red(reduction)),
    binary_cross_entropy_with_logits=lambda input, target, weight=None, pos_weight=None, reduction="mean": _loss(
        "binary_cross_entropy_with_logits", input, target, weight, pos_weight, reduction=_red(reduction)),
    max_pool2d_with_indices=max_pool2d_with_indices,
    mul_scalar=lambda input, other: apply_op(OPS["mul_scalar"], (input, float(other))),
    div_scalar=lambda input, other: apply_op(OPS["div_scalar"], (input, float(other))),
    adaptive_avg_pool2d=adaptive_avg_pool2d,
    adaptive_max_pool2d=adaptive_max_pool2d,
    avg_pool2d=avg_pool2d,
)


def _backward_hook_function(*tensors):
    """The identity node torch's module backward hooks hang on (``BackwardHookFunctionBackward``):
    returns new tensors, one per input, all sharing one node. As in torch, where they are inputs
    returned as-is from a custom Function, writing one in place with grad enabled raises
    (``ReLU(inplace=True)`` under a full backward hook): clone it first."""
    out = apply_op(OPS["backward_hook_function"], tensors)
    for i, t in enumerate(out):
        t._cfn = (i, "BackwardHookFunction")
    return out
