"""More of ``torch.nn.functional``, composed of tracegrad ops: channel-wise and alpha dropout,
``prelu``, ``glu``, ``hardswish``/``hardsigmoid``, ``rms_norm``, ``gumbel_softmax`` and
``triplet_margin_loss``. Re-exported by ``functional.py`` (kept apart to hold that file
under ~800 lines, STYLE 1). Random masks come from tracegrad's generator, so they differ
from torch's draws but are reproducible under ``tracegrad.manual_seed``."""
from __future__ import annotations

import operator

import tracegrad
from tracegrad import _autocast

from tracegrad._api import nn_functions as _F
from tracegrad._api.argcheck import _is_strict_bool, require_bool, require_float, strict_error
from tracegrad._api.promotion import _SCALAR_NAME, check_tensors
from tracegrad._ops.registry import OPS
from tracegrad._ops.warn import warn as _warn
from tracegrad.autograd._dispatch import apply_op

from . import _reduction
from ._vision_functional import pairwise_distance

__all__ = ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "prelu", "glu",
           "hardswish", "hardsigmoid", "rms_norm", "gumbel_softmax", "triplet_margin_loss", "conv_tbc"]

_SELU_ALPHA = 1.7580993408473766   # -scale * alpha of SELU: the value a dropped unit takes before the affine fix


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p != p:   # NaN passes torch's Python range check and meets its kernel's (RuntimeError), in eval too
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}; pass a p in [0, 1]")


_SCALAR_NAMES = {tracegrad.int64: "Long", tracegrad.int32: "Int", tracegrad.int16: "Short", tracegrad.int8: "Char",
                 tracegrad.uint8: "Byte", tracegrad.bool: "Bool"}


def _check_input(input, api):
    if not isinstance(input, tracegrad.Tensor):
        raise TypeError(f"{api}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def _dropout_core(input, p, training, inplace, *, feature, alpha):
    """torch's ``_dropout_impl``: a Bernoulli(1-p) keep mask per element, or per (sample,
    channel) with ``feature``; kept values scale by ``1/(1-p)``, or for alpha dropout the
    affine ``a*x + b`` that keeps SELU's zero mean and unit variance."""
    if p == 0 or not training or input.numel() == 0:
        return input
    if feature and input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2) if feature else tuple(input.shape)
    if p == 1:
        noise = tracegrad.zeros(shape, dtype=input.dtype, device=input.device)
        return input.mul_(noise) if inplace else input * noise
    if not (input.is_floating_point() or input.is_complex()):   # torch's mask scales in place by 1/(1-p)
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_SCALAR_NAMES.get(input.dtype, str(input.dtype))}; dropout takes a floating input")
    if input.is_complex():   # torch's mask is drawn with bernoulli_ in the input's dtype (no complex kernel)
        raise NotImplementedError(f"\"bernoulli_scalar_cpu_\" not implemented for "
                                  f"'{_SCALAR_NAME[input.dtype.name]}'; feature and alpha dropout "
                                  "take a real input (drop .real and .imag with one mask yourself)")
    keep = (tracegrad.rand(shape, device=input.device) >= p).to(input.dtype)
    if alpha:
        a = 1.0 / ((_SELU_ALPHA ** 2 * p + 1) * (1 - p)) ** 0.5
        b = (keep - 1) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p
        noise = keep * a
        return input.mul_(noise).add_(b) if inplace else input * noise + b
    noise = keep / (1 - p)
    return input.mul_(noise) if inplace else input * noise


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Mirrors ``torch.nn.functional.dropout1d``: zeroes whole channels ``input[n, c]`` of a
    ``(N, C, L)`` or ``(C, L)`` input with probability ``p`` and scales the rest by
    ``1/(1-p)``; the input itself when not training or ``p == 0``.
    Raises: ValueError for p outside [0, 1]; RuntimeError for an input that is not 2-D or 3-D;
    TypeError for a ``training`` that is not a bool (torch's parser).
    Autograd: ``MulBackward0`` (input times the scaled mask)."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    require_bool("feature_dropout_" if inplace else "feature_dropout", "train", training, 3)
    return _unbatched(input, input.dim() == 2, p, training, inplace)


def _unbatched(input, unbatched, p, training, inplace):
    if not unbatched:
        return _dropout_core(input, p, training, inplace, feature=True, alpha=False)
    x = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    out = _dropout_core(x, p, training, inplace, feature=True, alpha=False)
    return out.squeeze_(0) if inplace else out.squeeze(0)


def _warn_dims(name, n, dims):
    # _warn names the user's line however many frames lie between (torch_function's dispatch adds
    # some while a __torch_function__ subclass is alive): no fixed stacklevel
    _warn(f"{name}: Received a {n}-D input to {name}, which is deprecated and will result in an error in a "
                  f"future release. To retain the behavior and silence this warning, please use dropout instead. "
                  f"Note that {name} exists to provide channel-wise dropout on inputs with {dims[1] - 2} spatial "
                  f"dimensions, a channel dimension, and an optional batch dimension (i.e. {dims[0]}D or "
                  f"{dims[1]}D inputs).", UserWarning)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Mirrors ``torch.nn.functional.dropout2d``: zeroes whole channels ``input[n, c]`` (2-D
    feature maps of ``(N, C, H, W)``) with probability ``p``, scaling the rest by ``1/(1-p)``.
    As torch, a 3-D input is read as ``(N, C, L)`` (1-D channel-wise dropout) with a
    UserWarning, and other ranks warn (deprecated) and still drop ``input[n, c]``.
    Raises: ValueError for p outside [0, 1]; TypeError for a ``training`` that is not a bool."""
    _check_p(p)
    n = input.dim()
    if n not in (3, 4):
        _warn_dims("dropout2d", n, (3, 4))
    if n == 3:
        _warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", UserWarning)
    require_bool("feature_dropout_" if inplace else "feature_dropout", "train", training, 3)
    return _dropout_core(input, p, training, inplace, feature=True, alpha=False)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Mirrors ``torch.nn.functional.dropout3d``: zeroes whole channels of ``(N, C, D, H, W)``
    or unbatched ``(C, D, H, W)`` input with probability ``p``; other ranks warn (deprecated).
    Raises: ValueError for p outside [0, 1]; TypeError for a ``training`` that is not a bool."""
    _check_p(p)
    n = input.dim()
    if n not in (4, 5):
        _warn_dims("dropout3d", n, (4, 5))
    require_bool("feature_dropout_" if inplace else "feature_dropout", "train", training, 3)
    return _unbatched(input, n != 5, p, training, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Mirrors ``torch.nn.functional.alpha_dropout`` (note: ``training=False`` by default, as
    torch): for SELU networks; a dropped element becomes ``-1.7581 * a * (1 - p)`` and a kept
    one ``a * x + 1.7581 * a * p`` with ``a = ((1.7581**2 * p + 1) * (1 - p))**-0.5``, which keeps
    zero mean and unit variance. Raises: ValueError for p outside [0, 1]; TypeError for a
    non-Tensor input (also when not training, as torch's parser)."""
    _check_p(p)
    _check_input(input, "alpha_dropout")
    p = require_float("alpha_dropout", "p", p, 2)
    require_bool("alpha_dropout_" if inplace else "alpha_dropout", "train", training, 3)
    return _dropout_core(input, p, training, inplace, feature=False, alpha=True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Mirrors ``torch.nn.functional.feature_alpha_dropout``: ``alpha_dropout`` with one mask
    entry per ``input[n, c]``. Raises: ValueError for p outside [0, 1]; RuntimeError for 0-D/1-D;
    TypeError for a non-Tensor input."""
    _check_p(p)
    _check_input(input, "feature_alpha_dropout")
    require_bool("feature_alpha_dropout_" if inplace else "feature_alpha_dropout", "train", training, 3)
    return _dropout_core(input, p, training, inplace, feature=True, alpha=True)


def conv_tbc(input, weight, bias, pad=0):
    """Mirrors ``torch.conv_tbc`` / ``F.conv_tbc``: a 1-D convolution in (time, batch, channel)
    layout. input ``(T, B, C_in)``, weight ``(K, C_in, C_out)``, bias ``(C_out,)``, ``pad`` zeros
    on both ends of time; output ``(T + 2 * pad - K + 1, B, C_out)``. RuntimeError for inputs of
    the wrong rank or mismatched channel counts."""
    for t, nd, what in ((input, 3, "input"), (weight, 3, "weight"), (bias, 1, "bias")):
        if t.dim() != nd:
            raise RuntimeError(f"conv_tbc: {what} must have {nd} dims, got {list(t.shape)}")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError(f"conv_tbc: Input dim 2 (input channels) is not == dim 1 in the weight tensor "
                           f"({input.shape[2]} vs {weight.shape[1]})")
    if bias.shape[0] != weight.shape[2]:
        raise RuntimeError(f"conv_tbc: Bias size must equal dim 2 in the weight tensor ({bias.shape[0]} vs "
                           f"{weight.shape[2]})")
    # the same cross-correlation as conv1d over (B, C_in, T) with a (C_out, C_in, K) weight
    out = tracegrad.nn.functional.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def prelu(input, weight):
    """Mirrors ``torch.nn.functional.prelu``: ``x`` where ``x > 0``, else ``weight * x``; weight
    ``(1,)`` or ``(C,)`` with C = ``input.shape[1]`` (a 0-D/1-D input has one channel, as torch).
    Gradients flow to input and weight (``PreluKernelBackward0``). Raises: RuntimeError when
    weight has another count."""
    input, weight = _autocast.cast("lower", "prelu", input, weight)   # torch's autocast op list
    check_tensors("prelu", input, weight, names=("input", "weight"))
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {input.dtype} and {weight.dtype}; "
                           "convert the weight or the input")
    n = weight.numel()
    if n != 1:
        channels = input.shape[1] if input.dim() >= 2 else 1
        if n != channels:
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter "
                               f"numbers = {n} and channel size = {channels}.")
    if weight.dim() != input.dim():
        # torch views the weight as (1, C, 1, ...) of the input's rank before its kernel, so the
        # graph has a ViewBackward0 between PreluKernelBackward0 and the weight: seen in
        # ``grad_fn.next_functions``, the saved weight and a non-full module backward hook's
        # ``grad_input`` (the weight's gradient there has that shape, e.g. (1, 1) for PReLU())
        shape = [1] * input.dim()
        if input.dim() > 1:
            shape[1] = n
        weight = weight.reshape(shape)
    return apply_op(OPS["prelu"], (input, weight))


def glu(input, dim=-1):
    """Mirrors ``torch.nn.functional.glu``: splits ``input`` in halves ``a, b`` along ``dim`` and
    returns ``a * sigmoid(b)`` (that dimension halves). Raises: RuntimeError for a 0-D input or
    an odd size, IndexError for a dim out of range, TypeError for a dim that is not an int.
    grad_fn ``GluBackward0``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.is_complex():   # torch has no complex kernel (JAX would compute one)
        name = "ComplexDouble" if input.dtype == tracegrad.complex128 else "ComplexFloat"
        raise NotImplementedError(f"glu: \"glu_cpu\" not implemented for '{name}'; take .real or .abs() first")
    # torch's parser takes an int (not a bool) for dim; its dim wrap is IndexError (indexing the
    # shape tuple raised Python's own TypeError/IndexError text)
    if isinstance(dim, bool) or not hasattr(dim, "__index__") or (
            isinstance(dim, tracegrad.Tensor) and (dim.dtype is tracegrad.bool or dim.ndim)):
        # nor a bool tensor or a 1-d one, which have __index__ (a dim is a plain int to torch)
        raise TypeError(f"glu(): argument 'dim' (position 2) must be int, not {type(dim).__name__}")
    dim = operator.index(dim)
    size = input.size(dim)
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.dim()} is size {size}")
    # one op with torch's GluBackward0 (the composite ended in MulBackward0); as torch's kernel,
    # 16-bit input computes (and differentiates) in float32, rounding once
    return _F._nn.glu(input, dim % input.dim())


def _half(t):
    """float16/bfloat16: torch's activation kernels compute those in float32, rounding once."""
    return t.dtype in (tracegrad.bfloat16, tracegrad.float16)


def _no_complex(name, input):
    """torch has no complex kernel for ``name``: its NotImplementedError naming the kernel (the
    composite failed on an ordering comparison, naming ``le_cpu``/``gt_cpu``)."""
    if isinstance(input, tracegrad.Tensor) and input.is_complex():
        kind = "ComplexDouble" if input.dtype == tracegrad.complex128 else "ComplexFloat"
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{kind}'; take .real or .abs() first")


def hardsigmoid(input, inplace=False):
    """Mirrors ``torch.nn.functional.hardsigmoid``: 0 for ``x <= -3``, 1 for ``x >= 3``, else
    ``x / 6 + 1/2``; gradient 1/6 strictly inside (-3, 3), as torch."""
    if _half(input) and not inplace:   # float32 math, one rounding (torch's opmath kernel)
        return hardsigmoid(input.float()).to(input.dtype)
    _no_complex("hardsigmoid", input)
    # NaN takes the inside branch so it comes out NaN, as torch's kernel (the outside one gave 0)
    inside = ((input > -3) & (input < 3)) | input.isnan()
    out = tracegrad.where(inside, input / 6 + 0.5, (input >= 3).to(input.dtype))
    return input.copy_(out) if inplace else out


def hardswish(input, inplace=False):
    """Mirrors ``torch.nn.functional.hardswish``: ``x * relu6(x + 3) / 6``; gradient 0 for
    ``x <= -3``, ``x / 3 + 1/2`` inside, 1 for ``x >= 3`` (torch's values at the kinks)."""
    if _half(input) and not inplace:   # float32 math, one rounding (torch's opmath kernel)
        return hardswish(input.float()).to(input.dtype)
    _no_complex("hardswish", input)
    out = tracegrad.where(input <= -3, input * 0, tracegrad.where(input < 3, input * (input + 3) / 6, input))
    return input.copy_(out) if inplace else out


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Mirrors ``torch.nn.functional.rms_norm``: ``x / sqrt(mean(x**2) + eps) * weight`` over
    the last ``len(normalized_shape)`` dimensions; ``eps=None`` takes ``finfo(dtype).eps`` of
    the computation dtype (float32 for float16/bfloat16 inputs, which are upcast, as torch).
    Returns input's shape and dtype. Raises: TypeError for an int ``normalized_shape`` (torch
    takes a sequence here); RuntimeError when the trailing dimensions or
    weight's shape differ from ``normalized_shape``."""
    if isinstance(normalized_shape, int):   # torch's F.rms_norm takes a sequence only (nn.RMSNorm takes an int)
        raise TypeError(f"rms_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int")
    if eps is not None:
        eps = require_float("rms_norm", "eps", eps, 4)
    shape = tuple(normalized_shape)
    k = len(shape)
    if input.dim() < k:   # torch's rms_norm checks the rank first, in Python: ValueError
        raise ValueError(f"rms_norm: Input tensor must have at least {k} dimensions, but got {input.dim()}")
    if k == 0 or tuple(input.shape[input.dim() - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*, "
                           f"{', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {list(shape)}")
    low = input.dtype in (tracegrad.float16, tracegrad.bfloat16)
    x = input.float() if low else input
    eps = tracegrad.finfo(x.dtype).eps if eps is None else eps
    dims = tuple(range(input.dim() - k, input.dim()))
    out = x * (x.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight
    # as torch: the weight is applied in the computation dtype, the result has input's dtype
    return out.to(input.dtype) if out.dtype is not input.dtype else out


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Mirrors ``torch.nn.functional.gumbel_softmax``: ``softmax((logits + g) / tau, dim)`` with
    Gumbel(0, 1) noise ``g``; ``hard=True`` returns the one-hot of the argmax in the forward
    pass with the soft sample's gradient (straight-through). ``eps`` is unused, as in torch.
    Returns logits' shape and dtype. RuntimeError for integer or bool logits (torch's
    exponential draw needs a floating dtype)."""
    if isinstance(logits, tracegrad.Tensor) and not (logits.is_floating_point() or logits.is_complex()):
        raise RuntimeError(f"gumbel_softmax: Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {_SCALAR_NAME[logits.dtype.name]}; "
                           f"convert the logits with .float()")
    gumbels = -tracegrad.empty_like(logits).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = tracegrad.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """Mirrors ``torch.nn.functional.triplet_margin_loss``: ``max(d(a, p) - d(a, n) + margin, 0)``
    with ``d`` the p-norm pairwise distance (``eps`` added to the difference); ``swap`` uses
    ``min(d(a, n), d(p, n))``. Inputs ``(N, D)`` or ``(D,)``, all the same rank.
    Returns a scalar for 'mean'/'sum', ``(N,)`` for 'none'.
    Raises: ValueError for ``margin <= 0`` or an unknown reduction; RuntimeError for ranks that differ."""
    anchor, positive, negative = _autocast.cast("fp32", "triplet_margin_loss", anchor, positive, negative)   # torch's autocast op list
    reduction = _reduction.resolve(size_average, reduce, reduction)   # legacy arguments win
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    for pos, (name, v) in enumerate((("margin", margin), ("p", p), ("eps", eps)), 4):
        require_float("triplet_margin_loss", name, v, pos)   # torch.triplet_margin_loss's parser
    if not _is_strict_bool(swap):   # (the parser's: a str or None was read for its truth)
        raise strict_error("triplet_margin_loss", "swap", "bool", swap, 7)
    # torch's parser: three Tensors (a number failed at .dim() with Python's words)
    check_tensors("triplet_margin_loss", anchor, positive, negative, names=("anchor", "positive", "negative"))
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = tracegrad.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    loss = (margin + d_pos - d_neg).clamp_min(0)
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss
