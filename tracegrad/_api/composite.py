"""torch functions written with other tracegrad functions: their gradients follow from the ops
they are made of (no op-table entry of their own). The data-dependent ones (``unique``,
``bincount``) read values on the host: inside a compiled function that is a graph break.
"""
from __future__ import annotations

import builtins
import functools
import math
import numbers

import jax
import jax.numpy as jnp
import numpy as np

from .._ops.warn import warn_once as _warn_once
from ..autograd._dispatch import apply_op, show_saved
from ..autograd.function import _no_derivative as no_derivative
from .._ops import dtypes as _dt, limited
from .._ops.errors import not_a_tensor
from .._ops.dtype_info import finfo as _finfo
from .._ops.dtypes import bool_, int32, int64
from .._ops.registry import OPS
from .._tensor.factories import check_pin_memory, check_result_size, tensor as _tensor, zeros as _zeros
from .._tensor.layout import strided
from .._tensor.meta import abstract
from .._tensor import memory_format as _mf
from .._tensor.tensor import Tensor, _concrete, _wrap_dim, see_reads
from .._x64 import with_x64
from ._registry import function, method
from .argcheck import check_kinds
from .elementwise import maximum, where
from .promotion import (_SCALAR_NAME, _check_operand, _float_dtype, check_tensor_seq, check_tensors, refuse_complex, require_floating,
                        result_dtype)
from .reduction import any as _any
from .shape import _index_all, _stack_list, by_keyword, cat, hstack, stack
from .._tensor.out import accepts_out


def _t(x, like=None):
    if isinstance(x, Tensor):
        return x
    return _tensor(x, dtype=like.dtype) if like is not None and not isinstance(x, bool) else _tensor(x)


@function("tile")
def tile(input, dims):
    """Mirrors ``torch.tile``: ``input`` repeated ``dims`` times per dim (fewer dims than the
    input: leading 1s are assumed; more: the input gains leading dims of size 1). TypeError,
    as torch, when ``dims`` is not a sequence of ints (the method also takes them unpacked)."""
    if not isinstance(dims, (tuple, list)) and not (isinstance(dims, Tensor) and dims.dim() == 1):
        raise TypeError(f"tile(): argument 'dims' (position 2) must be tuple of ints, not {type(dims).__name__}")
    if isinstance(dims, (tuple, list)) and dims and type(dims[0]) is bool:   # the parser reads the first one
        raise TypeError("tile(): argument 'dims' (position 2) must be tuple of ints, but found element of type "
                        "bool at pos 0; pass ints")
    dims = tuple(dims)
    if len(dims) < input.dim():
        dims = (1,) * (input.dim() - len(dims)) + dims
    elif len(dims) > input.dim():
        input = input.reshape((1,) * (len(dims) - input.dim()) + tuple(input.shape))
    return input.repeat(dims)


@method("tile")
def _tile_method(self, *dims, **kwargs):
    """Mirrors ``torch.Tensor.tile(*dims)``: the dims unpacked, as one sequence, or ``dims=``.
    TypeError, as torch, when no dims are given."""
    if not dims and not kwargs:
        raise TypeError('tile() missing 1 required positional arguments: "dims"; pass the repeats per dim')
    if kwargs:
        dims = by_keyword(dims, kwargs, "dims", "tile")
    return tile(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims)


def _atleast(tensors, n):
    def one(t):
        try:
            shape = tuple(t.shape)
        except AttributeError:
            raise not_a_tensor(f"atleast_{n}d", t) from None
        if len(shape) >= n:
            return t
        # torch's nodes: a 0-d input is reshaped (ViewBackward0), the others unsqueezed
        # (UnsqueezeBackward0; a 1-d input to 3-d twice)
        if len(shape) == 0:
            return t.reshape((1,) * n)
        if n == 2:
            return t.unsqueeze(0)
        return t.unsqueeze(0).unsqueeze(-1) if len(shape) == 1 else t.unsqueeze(-1)
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(one(t) for t in tensors[0])
    return one(tensors[0]) if len(tensors) == 1 else tuple(one(t) for t in tensors)


@function()
def atleast_1d(*tensors):
    """Mirrors ``torch.atleast_1d``: a 0-d tensor as shape (1,); others unchanged."""
    return _atleast(tensors, 1)


@function()
def atleast_2d(*tensors):
    """Mirrors ``torch.atleast_2d``: 0-d -> (1, 1), 1-d (n,) -> (1, n)."""
    return _atleast(tensors, 2)


@function()
def atleast_3d(*tensors):
    """Mirrors ``torch.atleast_3d``: 0-d -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    return _atleast(tensors, 3)


@function()
def column_stack(tensors):
    """Mirrors ``torch.column_stack``: 0-d and 1-d tensors become columns, then ``hstack``.
    TypeError for a Tensor or a non-sequence; RuntimeError when empty."""
    return hstack([t.reshape(-1, 1) if t.dim() <= 1 else t for t in _stack_list(tensors, "column_stack")])


@function()
def dstack(tensors):
    """Mirrors ``torch.dstack``: ``atleast_3d`` of each, concatenated along dim 2."""
    return cat([_atleast((t,), 3) for t in _stack_list(tensors, "dstack")], 2)


# NOTE [own nodes of composites]
# deg2rad, rad2deg, sinc, hypot, logaddexp and logaddexp2 are composed of other ops below, but
# torch records one node of its own for each (Deg2RadBackward0, HypotBackward0...). For real
# float32/float64 tensors of one dtype (the ones that can require grad, bar 16-bit and
# complex, which keep their compositions' roundings) they run as one op of that name
# (_ops/elementwise.py), whose function is the composition itself.
def _own_node(name, *xs):
    """The result of op ``name`` on ``xs``, or None where the composition must run instead."""
    dt = xs[0].dtype if isinstance(xs[0], Tensor) else None
    if dt not in (_dt.float32, _dt.float64) or builtins.any(
            not isinstance(x, Tensor) or x.dtype is not dt for x in xs):
        return None
    return apply_op(OPS[name], xs)


@method("deg2rad", function=True)
def deg2rad(input):
    """Mirrors ``torch.deg2rad``: ``input * pi / 180`` (integers give the default float dtype).
    RuntimeError for a complex tensor, as torch."""
    if isinstance(input, Tensor) and input.is_complex():
        raise RuntimeError("deg2rad is not supported for complex tensors; convert .real or .angle() instead")
    out = _own_node("deg2rad", input)
    return input * (math.pi / 180) if out is None else out


@method("rad2deg", function=True)
def rad2deg(input):
    """Mirrors ``torch.rad2deg``: ``input * 180 / pi``; RuntimeError for a complex tensor, as torch."""
    if isinstance(input, Tensor) and input.is_complex():
        raise RuntimeError("rad2deg is not supported for complex tensors; convert .real or .angle() instead")
    out = _own_node("rad2deg", input)
    return input * (180 / math.pi) if out is None else out


@method("logaddexp", function=True)
def logaddexp(input, other):
    """Mirrors ``torch.logaddexp``: ``log(exp(input) + exp(other))`` without overflow; equal
    infinities give that infinity. TypeError for a number operand (torch has no such overload),
    NotImplementedError for integer or bool tensors."""
    check_tensors("logaddexp", input, other)
    require_floating("logaddexp", input, other)
    common = result_dtype(input, other)      # a bool or integer operand beside a float one
    if common.name in ("float16", "bfloat16"):
        # torch's CPU kernel computes in float32 and rounds once; the composite below in 16
        # bits rounds after each step (bf16 logaddexp2(0.5, 0.25): 1.375 against torch's 1.3828125)
        return logaddexp(input.float(), other.float()).to(common)
    input, other = input.to(common), other.to(common)
    out = _own_node("logaddexp", input, other)
    if out is not None:
        return out
    if input.is_complex() or other.is_complex():
        # complex: the operand with the larger real part factored out (log1p of a modulus <= 1);
        # equal infinities give that infinity, as torch (their difference would be nan)
        first = input.real >= other.real
        m, n = where(first, input, other), where(first, other, input)
        return where((input == other) & input.isinf(), input, m + (n - m).exp().log1p())
    m = maximum(input, other)
    d = (input - other).abs()
    safe = where(d.isnan(), 0.0, d)     # equal infinities: inf - inf
    return where((input == other) & input.isinf(), input, m + (-safe).exp().log1p())


def xlog_op(name, input, other):
    """``torch.xlogy`` / ``torch.special.xlog1py`` (``name``: ``"xlogy"`` / ``"xlog1py"``) on two
    tensors or a tensor and a number, promoted to floating; torch's overload decides the node
    (``...Backward0/1/2``) and the derivative at ``input == 0`` (NOTE [xlogy at x = 0])."""
    api = "xlogy" if name == "xlogy" else "special_xlog1py"
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{api}() received an invalid combination of arguments - got ({type(input).__name__}, "
                        f"{type(other).__name__}); pass at least one Tensor")
    check_tensors(api, *(v for v in (input, other) if not isinstance(v, (int, float, bool))))
    dt = _float_dtype(result_dtype(input, other)).np
    key = name if isinstance(other, Tensor) and isinstance(input, Tensor) else \
        name + ("_scalar_other" if isinstance(input, Tensor) else "_scalar_self")
    return apply_op(OPS[key], (input, other), (("dtype", dt),))


@method("xlogy", function=True)
def xlogy(input, other):
    """Mirrors ``torch.xlogy``: ``input * log(other)``, 0 where ``input`` is 0 (unless ``other``
    is NaN); either may be a Python number; integers give the default float dtype. Autograd:
    torch's formulas (``XlogyBackward0/1/2``): d/dinput is ``log(other)``, 0 where ``input`` is 0
    and ``other <= 0``; d/dother is ``input / other``. TypeError for two numbers."""
    return xlog_op("xlogy", input, other)


@method("nan_to_num", function=True)
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """Mirrors ``torch.nan_to_num``: NaN -> ``nan``, +inf -> ``posinf`` (default: the dtype's
    largest finite value), -inf -> ``neginf`` (default: its lowest); ``nan=None`` means 0, as
    torch. Integers are returned as a copy; a complex tensor has its real and imaginary parts
    replaced separately, as torch. TypeError for a complex replacement (torch's parser takes
    floats)."""
    for name, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if isinstance(v, (complex, np.complexfloating)):
            raise TypeError(f"nan_to_num(): argument '{name}' must be float, not complex; pass a real number")
    nan = 0.0 if nan is None else nan
    if input.is_complex():
        return nan_to_num(input.real, nan, posinf, neginf) + nan_to_num(input.imag, nan, posinf, neginf) * 1j
    if not input.is_floating_point():
        return input.clone()
    info = _finfo(input.dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    if input.dtype in (_dt.float32, _dt.float64):    # one NanToNumBackward0 node, as torch
        return apply_op(OPS["nan_to_num"], (input, float(nan), float(posinf), float(neginf)))
    out = where(input.isnan(), nan, input)
    out = where(out == float("inf"), posinf, out)
    return where(out == float("-inf"), neginf, out)


@method("diff", function=True)
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """Mirrors ``torch.diff``: the ``n``-th forward difference along ``dim`` (after
    concatenating ``prepend``/``append``); bool inputs use ``!=``; an ``n`` past the dim's length
    leaves it empty. RuntimeError for ``n < 0`` or a 0-d input."""
    if isinstance(n, Tensor):
        # n is a plain int to torch's parser: a 0-d integer tensor is one, a bool or 1-d one is
        # its TypeError (they have __index__, so range(n) below would take them)
        if n.ndim or n.dtype._cat != 1:
            raise TypeError("diff(): argument 'n' (position 2) must be int, not Tensor; pass an int order")
        n = int(n)
    elif isinstance(n, bool):   # no int to torch's parser (range(True) would take it as 1)
        raise TypeError("diff(): argument 'n' must be int, not bool; pass an int order")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n == 0:    # torch: a copy of the input, prepend and append ignored (grad_fn CopyBackwards)
        return input.new_empty(input.shape).copy_(input)
    parts = [p for p in (prepend, input, append) if p is not None]
    x = cat(parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[dim]
        if size == 0:
            break
        a, b = x.narrow(dim, 1, size - 1), x.narrow(dim, 0, size - 1)
        x = a != b if x.dtype is bool_ else a - b
    return x


@function()
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Mirrors ``torch.isin``: whether each element of ``elements`` is in ``test_elements``
    (either may be a Python number); a bool tensor of ``elements``' shape. TypeError when both
    are numbers; RuntimeError for a bool or complex operand (torch has no kernel for them)."""
    scalar = not isinstance(elements, Tensor)
    for v in (elements, test_elements):   # torch's overloads take a Tensor or a number, not a sequence
        if isinstance(v, (list, tuple, str, bytes, dict, set)) or v is None:
            raise TypeError(f"isin() received an invalid combination of arguments - got "
                            f"({type(elements).__name__}, {type(test_elements).__name__}); pass Tensors (or one "
                            f"number), e.g. isin(x, tracegrad.tensor([...]))")
    if scalar and not isinstance(test_elements, Tensor):
        raise TypeError(f"isin(): expected at least one of elements and test_elements to be a Tensor, got "
                        f"{type(elements).__name__} and {type(test_elements).__name__}")
    elements = _t(elements, test_elements if isinstance(test_elements, Tensor) else None)
    test = _t(test_elements, elements).flatten()
    for t in (elements, test):
        if t.dtype is bool_ or t.dtype.is_complex:
            raise RuntimeError(f"Unsupported input type encountered for isin(): {_SCALAR_NAME[t.dtype.name]}; "
                               "pass real numeric tensors")
    if test.numel():
        hit = _any(elements.unsqueeze(-1) == test, -1)
    else:
        hit = _zeros(tuple(elements.shape), dtype=bool_)          # nothing to be in
    out = hit.logical_not() if invert else hit
    return out.reshape(()) if scalar else out


@method("kron", function=True)
def kron(input, other):
    """Mirrors ``torch.kron``: the Kronecker product (dims aligned from the right)."""
    check_tensors("kron", input, other, names=("input", "other"))
    n = max(input.dim(), other.dim())
    sa = (1,) * (n - input.dim()) + tuple(input.shape)
    sb = (1,) * (n - other.dim()) + tuple(other.shape)
    a_shape = sum(((s, 1) for s in sa), ())
    b_shape = sum(((1, s) for s in sb), ())

    def unsafe_view(t, shape):   # torch reshapes each operand and the product with _unsafe_view (UnsafeViewBackward0)
        return apply_op(OPS["reshape_copy"], (t,), (("shape", shape),))
    out = unsafe_view(input, a_shape) * unsafe_view(other, b_shape)
    return unsafe_view(out, tuple(x * y for x, y in zip(sa, sb)))


@function()
@accepts_out(exact_dtype=True)
def tensordot(a, b, dims=2, out=None):
    """Mirrors ``torch.tensordot``: contract the last ``dims`` dims of ``a`` with the first
    ``dims`` of ``b`` (or the dim lists ``dims=([...], [...])``)."""
    if dims is None:   # torch's Python refuses it before its parser sees it (RuntimeError)
        raise RuntimeError("tensordot expects dims to be int or a pair of dim lists (([...], [...])), got None")
    # torch's Python reads a one-element tensor as the int and a larger one as the dim lists; any
    # other type but an int, list or tuple (a numpy int too: it was iterated here) is its RuntimeError
    if isinstance(dims, Tensor):
        dims = int(dims.item()) if dims.numel() == 1 else dims.tolist()
    if not isinstance(dims, (int, list, tuple)):
        raise RuntimeError(f"tensordot expects dims to be int or a pair of dim lists (([...], [...])), got "
                           f"dims={dims} of type {type(dims).__name__}")
    if isinstance(dims, (list, tuple)):
        if len(dims) != 2:   # torch unpacks the pair in Python: ValueError
            raise ValueError(f"tensordot: dims must be a pair of dim lists (([...], [...])), got {len(dims)} "
                             "entries")
        # each list goes to torch's parser as an int list: a bare int or a float there is its TypeError
        dims = [_index_all(d, "tensordot", name) if isinstance(d, (list, tuple)) else _not_int_list(d, name)
                for d, name in zip(dims, ("dims_self", "dims_other"))]
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):   # torch's check (a 0-d input was a ZeroDivisionError here)
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = [list(d) if isinstance(d, (list, tuple)) else [d] for d in dims]
    # torch wraps each dim with its range check: ``d % ndim`` took an out-of-range dim as another
    # one and divided by zero for a 0-d input
    da = [_wrap_dim(d, a.dim()) for d in da]
    db = [_wrap_dim(d, b.dim()) for d in db]
    for i, j in zip(da, db):
        # torch broadcasts a contracted dim of size 1 against the other's: that one is summed
        # first (keepdim, dtype kept); other sizes must match
        m, n = a.shape[i], b.shape[j]
        if m != n:
            if 1 not in (m, n):
                raise RuntimeError(f"contracted dimensions need to match, but first has size {m} in dim {i} and "
                                   f"second has size {n} in dim {j}; pass dims whose sizes agree")
            if n == 1:
                a = a.sum(i, keepdim=True, dtype=a.dtype)
            else:
                b = b.sum(j, keepdim=True, dtype=b.dtype)
    fa = [d for d in range(a.dim()) if d not in da]
    fb = [d for d in range(b.dim()) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    # the free sizes spelled out: a -1 is ambiguous when k is 0 (inner of two empty vectors)
    am = a.permute(fa + da).reshape(math.prod(a.shape[d] for d in fa), k)
    bm = b.permute(db + fb).reshape(k, math.prod(b.shape[d] for d in fb))
    return (am @ bm).reshape(tuple(a.shape[d] for d in fa) + tuple(b.shape[d] for d in fb))


def _not_int_list(d, name):
    raise TypeError(f"tensordot(): argument '{name}' (position 3) must be tuple of ints, not {type(d).__name__}; "
                    "pass dims=([dims of a], [dims of b])")


@method("inner", function=True)
def inner(input, other):
    """Mirrors ``torch.inner``: the sum over the last dims (a product when either is 0-d)."""
    check_tensors("inner", input, other, names=("input", "other"))
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:   # torch checks this itself (tensordot would broadcast a size 1)
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


@method("rot90", function=True)
def rot90(input, k=1, dims=(0, 1)):
    """Mirrors ``torch.rot90``: rotate by 90 degrees ``k`` times in the plane ``dims``.
    RuntimeError unless ``dims`` names two different dims of an at least 2-D input; IndexError for a
    dim out of range."""
    if isinstance(k, Tensor) and (k.ndim or k.dtype._cat != 1):
        # k %= 4 below would take any tensor; torch's parser takes only a 0-d integer one as an int
        raise TypeError(f"rot90(): argument 'k' (position 1) must be int, not Tensor; pass an int number of turns")
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (_wrap_dim(d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    raw_k = int(k)    # a 0-d integer tensor k is its int
    k = raw_k % 4
    out = apply_op(OPS["rot90"], (input,), (("k", k), ("dims", (d0, d1))))
    # the node shows k and dims as the caller wrote them (negatives as unsigned 64-bit values)
    show_saved(out, (("k", raw_k), ("dims", tuple(int(d) % 2 ** 64 for d in dims))))
    if k == 0:   # torch: a contiguous clone
        return out
    # torch's layout: a flip (empty_like: the input's dense order), transposed in place for an
    # odd k (the order with d0 and d1 trading places)
    order = _mf.preserve_order(input)
    if k % 2:
        order = tuple(d1 if d == d0 else d0 if d == d1 else d for d in order)
    return _mf.lay_out(out, order)


@function()
def cartesian_prod(*tensors):
    """Mirrors ``torch.cartesian_prod``: rows of every combination (one input: itself).
    RuntimeError for an input that is not 1-D, or (torch builds it with meshgrid) inputs of
    different dtypes."""
    check_tensor_seq("cartesian_prod", tensors)
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"cartesian_prod(): Expect a 1D vector, but got shape {list(t.shape)}")
    for t in tensors[1:]:
        if t.dtype != tensors[0].dtype:
            raise RuntimeError(f"meshgrid expects all tensors to have the same dtype (cartesian_prod got "
                               f"{tensors[0].dtype} and {t.dtype}); convert them to one dtype first")
    if len(tensors) == 1:
        return tensors[0]
    sizes = tuple(t.numel() for t in tensors)
    cols = []
    for i, t in enumerate(tensors):
        shape = tuple(n if j == i else 1 for j, n in enumerate(sizes))
        cols.append(t.reshape(shape).expand(sizes).reshape(-1))
    return stack(cols, 1)


def _indices(fn, row, col, offset, dtype, device, layout, requires_grad=False):
    api = fn.__name__   # numpy's own name ("tril_indices"/"triu_indices") is torch's op name
    if layout is not None and layout is not strided:   # the kernels are dense-only
        if not isinstance(layout, type(strided)):
            raise TypeError(f"{api}(): argument 'layout' must be torch.layout, not {type(layout).__name__}; pass "
                            "tracegrad.strided (or leave it out)")
        raise NotImplementedError(f"Could not run 'aten::{api}' with layout={layout}: it makes dense tensors; "
                                  f"leave layout out and call .to_sparse() on the result")
    for name, v in (("row", row), ("col", col)):
        if v < 0:
            raise RuntimeError(f"{api}(): {name} must be non-negative, got {name}={v}")
    if dtype is not None and _dt.to_dtype(dtype)._cat != 1:   # torch's kernels are integer-only
        raise NotImplementedError(f"\"{api}\" not implemented for {_dt.to_dtype(dtype)}; pass an "
                                  "integer dtype (int64 by default)")
    r, c = fn(row, offset, col)
    # torch takes requires_grad (a TensorOptions flag): True is its RuntimeError for an integer tensor
    return _tensor(np.stack([r, c]).astype(np.int64), dtype=dtype or int64, device=device,
                   requires_grad=bool(requires_grad))


@function()
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, pin_memory=False, requires_grad=False):
    """Mirrors ``torch.tril_indices``: the (2, N) row/column indices of the lower triangle.
    RuntimeError for a negative size or a bad device, NotImplementedError for a non-integer
    dtype or a sparse layout."""
    check_pin_memory(pin_memory, device)
    return _indices(np.tril_indices, row, col, offset, dtype, device, layout, requires_grad)


@function()
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, pin_memory=False, requires_grad=False):
    """Mirrors ``torch.triu_indices``: the (2, N) row/column indices of the upper triangle.
    RuntimeError for a negative size or a bad device, NotImplementedError for a non-integer
    dtype or a sparse layout."""
    check_pin_memory(pin_memory, device)
    return _indices(np.triu_indices, row, col, offset, dtype, device, layout, requires_grad)


def _host(t, what=None):
    # the value read first under the op's own name (``what``), so that a graph break in
    # tracegrad.compile or a func transform's error names ``bincount()``/``unique()`` (whose
    # output shapes depend on the values), not the ``numpy()`` used here
    if what is not None:
        _concrete(t, what)
    return np.asarray(t.detach().numpy()) if t.numel() else np.zeros(tuple(t.shape), np.dtype(t._value.dtype))


def _no_dim_of_0d(input, dim):
    """unique/unique_consecutive with a dim: a 0-d input has no dim to take slices along (torch's
    IndexError; other ops read a 0-d tensor's dim 0 / -1 as itself)."""
    if input.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions; unique along a dim "
                         "needs an input of at least 1 dim (or pass dim=None)")


@method("unique", function=True)
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Mirrors ``torch.unique``: the sorted distinct values (or rows/slices along ``dim``), with
    the inverse indices and counts (int64) when asked. Each NaN is a value of its own (as
    torch). The output size depends on the values: inside a compiled function this is a graph
    break. IndexError for a ``dim`` out of range; RuntimeError when another dim has size 0;
    NotImplementedError for a complex input; TypeError for a flag that is not a bool or a dim
    that is not an int (torch's parser, one call down)."""
    check_tensors("unique", input, names=("input",))   # torch's parser, one call down, sees the input first
    check_kinds("unique", ("return_inverse", "return_counts"), sorted=sorted, return_inverse=return_inverse,
                return_counts=return_counts, **({} if dim is None else {"dim": dim}))
    if input.dtype.is_complex:
        raise NotImplementedError(f'"unique" not implemented for \'{_SCALAR_NAME[input.dtype.name]}\'')
    limited.check_dtype("unique()", input.dtype, unsigned_ok=True)
    flat = dim is None and input.dim() > 64   # numpy holds 64 dims at most: the flat values
    a = _host(input.reshape(-1) if flat else input, "unique()")
    if dim is not None:
        _no_dim_of_0d(input, dim)
        dim = _wrap_dim(dim, input.dim())
        if any(n == 0 for i, n in enumerate(a.shape) if i != dim):
            raise RuntimeError(f"unique(dim={dim}): There are 0 sized dimensions, and they aren't selected, so "
                               "unique cannot be applied")
        vals, inv, counts = np.unique(a, return_inverse=True, return_counts=True, axis=dim)
    else:
        vals, inv, counts = np.unique(a, return_inverse=True, return_counts=True, equal_nan=False)
    # the values require grad (torch's node has no formula: backward raises NotImplementedError)
    out = [no_derivative(_tensor(vals, dtype=input.dtype), input, *(("_unique2", "Unique2Backward0")
                         if dim is None else ("unique_dim", "UniqueDimBackward0")))]
    if return_inverse:
        inverse = _tensor(inv.reshape(a.shape if dim is None else (a.shape[dim],)).astype(np.int64), dtype=int64)
        out.append(inverse.reshape(tuple(input.shape)) if flat else inverse)
    if return_counts:
        out.append(_tensor(counts.astype(np.int64), dtype=int64))
    return out[0] if len(out) == 1 else tuple(out)


@method("bincount", function=True)
def bincount(input, weights=None, minlength=0):
    """Mirrors ``torch.bincount``: counts (int64) of each value of a 1-d non-negative integer
    tensor, or sums of ``weights`` (float32 weights give float32, any other dtype float64, as
    torch). NotImplementedError for a floating or bool input; RuntimeError for negative values,
    another shape, ``weights`` of another length or a negative ``minlength``."""
    if input.dtype.is_floating_point or input.dtype.is_complex or input.dtype is _dt.bool_:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_SCALAR_NAME[input.dtype.name]}'; pass an integer tensor")
    if input.dim() != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError(f"bincount: minlength should be >= 0, got {minlength}")
    check_result_size((minlength,), 8, "bincount")   # before NumPy sizes it (NOTE [result size past int64])
    a = _host(input, "bincount()")
    if a.size and a.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _tensor(np.bincount(a, minlength=minlength).astype(np.int64), dtype=int64)
    if weights.dim() != 1 or weights.shape[0] != a.size:
        raise RuntimeError(f"bincount: weights should be 1-d and have the same length as input (got {list(weights.shape)} "
                           f"for an input of {a.size})")
    dt = weights.dtype if weights.dtype is _dt.float32 else _dt.float64
    return _tensor(np.bincount(a, weights=_host(weights, "bincount()").astype(np.float64), minlength=minlength), dtype=dt)


@functools.partial(jax.jit, static_argnames="side")
def _searchsorted_jax(seq, vals, side):
    # torch's own binary search, step for step: it moves right while NOT (b >= v) (left) or NOT
    # (b > v) (right), so a NaN value lands past the end and NaN boundaries count as smaller.
    # jnp.searchsorted orders NaN as numpy does and gives other indices there.
    n = seq.shape[-1]
    start = jnp.zeros(vals.shape, jnp.int64)
    if n == 0:
        return start
    end = jnp.full(vals.shape, n, jnp.int64)
    for _ in range(n.bit_length()):
        active = start < end
        mid = start + ((end - start) >> 1)
        at = jnp.minimum(mid, n - 1)
        b = seq[at] if seq.ndim == 1 else jnp.take_along_axis(seq, at, axis=-1)
        right = ~(b > vals) if side == "right" else ~(b >= vals)
        start = jnp.where(active & right, mid + 1, start)
        end = jnp.where(active & ~right, mid, end)
    return start


_searchsorted = with_x64(_searchsorted_jax)    # an index has no gradient: no op, no node


def _check_searchsorted(seq, values, scalar, right, side, sorter):
    api = "torch.searchsorted()"
    if seq.ndim == 0:
        raise RuntimeError(f"{api}: boundaries tensor should have positive dimension, but got 0 dimension")
    if scalar and seq.ndim != 1:
        raise RuntimeError(f"{api}: input value can be a scalar only when boundaries tensor dimension is 1, but we "
                           f"got boundaries tensor dim({seq.ndim}) and input value's dim(0) numel(1)")
    if seq.ndim != 1 and (seq.ndim != values.ndim or tuple(seq.shape[:-1]) != tuple(values.shape[:-1])):
        raise RuntimeError(f"{api}: boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
                           f"tensor and input value tensor must match, but we got boundaries tensor "
                           f"{list(seq.shape)} and input value tensor {list(values.shape)}")
    if side is not None and side not in ("left", "right"):
        raise RuntimeError(f"{api}: side can only be 'left' or 'right' but got {side}")
    if side == "left" and right:
        raise RuntimeError(f"{api}: side and right can't be set to opposites, got side of left while right was True")
    common = result_dtype(seq, values)   # torch searches in the promoted dtype: only a bool or complex one fails
    if common is bool_ or common.is_complex:
        raise NotImplementedError(f"\"searchsorted_out_cpu\" not implemented for '{_SCALAR_NAME[common.name]}'; "
                                  "pass real numeric tensors")
    if sorter is not None:
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError(f"{api}: boundary and sorter must have the same size, but got boundary tensor "
                               f"{list(seq.shape)} and got sorter tensor {list(sorter.shape)}")
        if sorter.dtype is not int64:
            raise RuntimeError(f"{api}: sorter must be a tensor of long dtype but got dtype "
                               f"{_SCALAR_NAME[sorter.dtype.name]}")
        # (a meta sorter has no indices to check: torch skips the check, NOTE [meta tensors])
        if sorter.numel() and not sorter.is_meta and (int(sorter.min()) < 0 or int(sorter.max()) >= seq.shape[-1]):
            raise RuntimeError(f"{api}: sorter index out of range")


@function()
@accepts_out(exact_dtype=True)
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """Mirrors ``torch.searchsorted``: for each value of ``input``, the index where it would be
    inserted in (each row of) ``sorted_sequence`` to keep it sorted (``right``/``side="right"``:
    after equal values). int64 (int32 with ``out_int32``). ``sorter``: int64 indices that sort
    each row of ``sorted_sequence``. RuntimeError, as torch, for a 0-d ``sorted_sequence``, leading
    dims that differ from ``input``'s (unless ``sorted_sequence`` is 1-D), a number ``input`` with
    an N-D ``sorted_sequence``, a bad ``side`` or one opposite to ``right``, a ``sorter`` of
    another shape, dtype or out of range; NotImplementedError for bool or complex tensors.
    NaN values and boundaries give torch's indices (its binary search, step for step)."""
    scalar = not isinstance(input, Tensor)
    # a number joins the promotion as a wrapped scalar (0.5 against int64 boundaries is searched as
    # float32, not truncated to 0), as torch's
    if scalar and not isinstance(input, numbers.Number):
        raise TypeError(f"searchsorted(): argument 'input' must be a Tensor or a Number, not {type(input).__name__}")
    values = _tensor(input, dtype=result_dtype(sorted_sequence, input)) if scalar else input
    _check_searchsorted(sorted_sequence, values, scalar, right, side, sorter)
    if side is not None:
        right = side == "right"
    # torch warns once per process when it has to copy a non-contiguous operand (test_bucketization
    # checks it); nothing is copied here, but a program that watches warnings sees torch's
    for what, t in (("input value", values), ("boundary", sorted_sequence)):
        if not scalar or what == "boundary":
            if not t.is_contiguous():
                _warn_once(f"torch.searchsorted(): {what} tensor is non-contiguous, this will lower the "
                           "performance due to extra data copy when converting non-contiguous tensor to "
                           f"contiguous, please use contiguous {what} tensor if possible. This message will "
                           "only appear once per program.")
    if sorted_sequence.is_meta and (scalar or values.is_meta):
        # meta operands (NOTE [meta tensors]): no values to search, the result's shape and dtype only
        out = Tensor._make(abstract(tuple(values.shape), np.int32 if out_int32 else np.int64))
        return out.reshape(()) if scalar else out
    if sorted_sequence.is_meta or (not scalar and values.is_meta) or (sorter is not None and sorter.is_meta):
        # Differs from torch: its CPU kernel searches a meta operand's (absent) data beside CPU
        # tensors and returns a CPU tensor of whatever it read
        raise RuntimeError("torch.searchsorted(): a meta tensor has no values to search beside tensors on another "
                           "device; put sorted_sequence, input and sorter all on 'meta' (or none)")
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    see_reads(sorted_sequence, values)    # computed on the values, not through an op
    out = Tensor._make(_searchsorted(sorted_sequence._value, values._value, "right" if right else "left"))
    out = out.to(int32 if out_int32 else int64)
    return out.reshape(()) if scalar else out


@function()
@accepts_out(exact_dtype=True)
def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """Mirrors ``torch.bucketize``: the bucket index of each value of ``input`` in the 1-d
    ``boundaries`` (``searchsorted(boundaries, input, right=right)``). RuntimeError unless
    ``boundaries`` is 1-D; TypeError unless it is a Tensor and ``input`` a Tensor or a number."""
    _check_operand(input, "bucketize", "input", 1)
    if input is None:    # (None passes _check_operand, an absent bound elsewhere)
        raise TypeError("bucketize(): argument 'input' (position 1) must be Tensor, not NoneType")
    if not isinstance(boundaries, Tensor):
        raise not_a_tensor("bucketize", boundaries, "boundaries", 2)
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


@method("hypot", function=True)
def hypot(input, other):
    """Mirrors ``torch.hypot``: ``sqrt(input**2 + other**2)`` elementwise (floating tensors);
    an infinite operand gives inf even when the other is NaN, as C's hypot. NotImplementedError
    for integer or bool tensors."""
    check_tensors("hypot", input, other)
    refuse_complex("hypot", "hypot_cpu", input, other)
    require_floating("hypot", input, other)
    out = _own_node("hypot", input, other)
    if out is not None:
        return out
    r = (input * input + other * other).sqrt()
    return where(input.isinf() | other.isinf(), math.inf, r)


@method("copysign", function=True)
def copysign(input, other):
    """Mirrors ``torch.copysign``: ``|input|`` with the sign of ``other`` (including -0.0);
    integers give the default float dtype. Autograd: ``CopysignBackward0`` (tensor other, whose
    gradient is zero) / ``CopysignBackward1`` (number)."""
    check_tensors("copysign", input, names=("input",))
    _check_operand(other, "copysign")
    dt = _float_dtype(result_dtype(input, other)).np
    op = OPS["copysign" if isinstance(other, Tensor) else "copysign_scalar"]
    return apply_op(op, (input, other), (("dtype", dt),))


@method("heaviside", function=True)
def heaviside(input, values):
    """Mirrors ``torch.heaviside``: 0 where ``input`` < 0, ``values`` where it is 0, 1 where
    > 0. RuntimeError when the dtypes differ, TypeError for a number, as torch."""
    check_tensors("heaviside", input, values, names=("input", "values"))
    if isinstance(values, Tensor) and values.dtype is not input.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    if input.is_complex():
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    values = _t(values, input)
    return where(input == 0, values, (input > 0).to(input.dtype))


@method("sinc", function=True)
def sinc(input):
    """Mirrors ``torch.sinc``: ``sin(pi x) / (pi x)``, 1 at 0 (gradient 0 there)."""
    out = _own_node("sinc", input)
    if out is not None:
        return out
    x = input * math.pi
    zero = x == 0
    safe = where(zero, 1.0, x)
    return where(zero, 1.0, safe.sin() / safe)


@method("float_power", function=True)
def float_power(input, exponent):
    """Mirrors ``torch.float_power``: ``input ** exponent`` computed in float64, or complex128
    when either operand is complex."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError(f"float_power() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(exponent).__name__}): input or exponent must be a Tensor")
    cplx = builtins.any(x.is_complex() if isinstance(x, Tensor) else isinstance(x, complex) for x in (input, exponent))
    dt = _dt.complex128 if cplx else _dt.float64
    exp_t = exponent.to(dt) if isinstance(exponent, Tensor) else exponent
    if not isinstance(input, Tensor):            # float_power(2, tensor)
        return _tensor(input, dtype=dt) ** exp_t
    return input.to(dt) ** exp_t


__all__ = ["tile", "atleast_1d", "atleast_2d", "atleast_3d", "column_stack", "dstack", "deg2rad", "rad2deg",
           "logaddexp", "xlogy", "nan_to_num", "diff", "isin", "kron", "tensordot", "inner", "rot90",
           "cartesian_prod", "tril_indices", "triu_indices", "unique", "bincount", "searchsorted", "bucketize",
           "hypot", "copysign", "heaviside", "sinc", "float_power"]
