"""Vision functions on the ops of ``_ops/vision.py``: argument checks and normalisation as
torch's ``torch.nn.functional`` does them, then one op call. ``tracegrad.nn.functional``
re-exports these under torch's names."""
from __future__ import annotations

import math

import numpy as np

from .. import _autocast, _state
from ..autograd._dispatch import apply_op, save_indices
from .._ops import dtypes as _dt
from .._ops.registry import OPS
from .._ops.vision import UPSAMPLE_OPS, fold_out_hw
from .._ops.warn import warn as _warn
from .._tensor.factories import arange, check_result_size, zeros
from .._tensor.memory_format import suggest_view_layout
from .._tensor.tensor import Tensor
from .argcheck import _is_strict_bool, require_float, strict_error
from .promotion import _SCALAR_NAME, check_tensors
from .sparse_embedding import sparse_embedding_bag
from .nn_functions import check_adaptive_kernel_dtype, check_adaptive_nonempty, empty_adaptive_pool, check_max_pool_dtype, _check_divisor, _check_traced_range, _host_values, _out_size, _pool_args, _tup, adaptive_avg_pool1d, adaptive_avg_pool2d

_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2}
_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Mirrors ``torch.nn.functional.interpolate`` for input ``(N, C, *spatial)`` with 1-3 spatial dims.
    Modes: nearest, nearest-exact, linear (3-D input), bilinear/bicubic (4-D), trilinear (5-D), area.
    Output spatial size is ``size``, or ``floor(in * scale_factor)``; a given ``scale_factor`` is
    used for the source index (as torch) unless ``recompute_scale_factor=True``.
    grad_fn ``UpsampleNearest2DBackward0``, ``UpsampleBilinear2DBackward0``... as torch.
    ``antialias=True`` (bilinear/bicubic) widens the filter when shrinking, as torch.
    Raises ValueError for size/scale_factor misuse, align_corners with nearest/area, or antialias
    with another mode; NotImplementedError for a mode/rank mismatch; RuntimeError for an empty
    channel/spatial dim (not area) or a nan/inf scale; TypeError for a size past int64 or a Tensor
    size of several elements.
    Differs from torch: the bicubic/linear weights are computed in float64 then cast."""
    nd = input.ndim - 2
    # torch's Python checks size / scale_factor before the rank and mode (its kernel's checks)
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    spatial = tuple(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size; pass "
                             "scale_factor instead, or leave recompute_scale_factor unset")
        out = tuple(size) if isinstance(size, (list, tuple)) else (size,) * nd
        if isinstance(size, (list, tuple)) and len(out) != nd:   # torch checks a size sequence's length before its element types
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {list(spatial)} and output size of {size}. Please provide "
                             f"input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                             f"format.")
        # (a floating Tensor is no integer to torch's size check; a Tensor of several elements is no int to torch's parser either: TypeError, not int()'s ValueError;
        # nor a bool as the first size: its parser tells an int list by that element, argcheck._is_ints)
        if (out and isinstance(out[0], bool)) or not all(isinstance(o, int) or (hasattr(o, "__index__") and not isinstance(o, bool)
                                          and not (isinstance(o, Tensor) and (o.numel() != 1 or o.is_floating_point()))) for o in out):
            # torch's message (tests match "expected size to be one of int or")
            raise TypeError(f"interpolate: expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                            f"Tuple[int, int, int], but got size with types {[type(o) for o in out]}")
        out, scales = tuple(int(o) for o in out), (None,) * nd
    elif scale_factor is not None:
        scales = tuple(scale_factor) if isinstance(scale_factor, (list, tuple)) else (scale_factor,) * nd
        if isinstance(scale_factor, (list, tuple)) and len(scales) != nd:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(spatial)} and scale_factor of shape {scale_factor}.")
        if not all(isinstance(s, (int, float)) or type(s).__module__ == "numpy" for s in scales):   # not a Tensor
            raise TypeError(f"interpolate: expected scale_factor to be a number or a tuple of numbers, but got "
                            f"{scale_factor!r}")
        scales = tuple(float(s) for s in scales)
        fits = all(abs(float(n) * s) < 2 ** 63 for n, s in zip(spatial, scales))   # False for nan too
        if not recompute_scale_factor and mode != "area" and not fits:
            # torch's kernel turns a nan/inf (or huge) scale into an int64 size: RuntimeError there
            # (recompute_scale_factor=True, and area mode, floor in Python: ValueError/OverflowError, as below)
            raise RuntimeError(f"interpolate: scale_factor {scale_factor!r} gives an output size that cannot be "
                               f"converted to type int64_t without overflow; pass a finite scale_factor")
        out = tuple(int(math.floor(float(n) * s)) for n, s in zip(spatial, scales))
        if recompute_scale_factor:
            scales = (None,) * nd
    else:
        raise ValueError("either size or scale_factor should be defined")
    # torch's Python parses size/scale_factor (their length against the input's spatial dims, their
    # types) before its rank/mode dispatch: those are ValueError/TypeError even for a wrong rank
    if antialias and mode not in ("bilinear", "bicubic"):
        raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor "
                         "as input")
    if mode not in _MODES or nd not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: {' | '.join(_MODES)} (got {mode})")
    if mode in _LINEAR_MODES and _LINEAR_MODES[mode] != nd:
        need = _LINEAR_MODES[mode] + 2
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {need}D input")
    if mode in _LINEAR_MODES and align_corners is not None and type(align_corners) is not bool:
        # torch's kernel parses a bool
        raise TypeError(f"upsample_{mode}{nd}d(): argument 'align_corners' must be bool, not "
                        f"{type(align_corners).__name__}; pass True, False or None")
    _check_interpolate_dtype(input.dtype, mode)
    if any(not -2 ** 63 <= o < 2 ** 63 for o in out):   # torch's parser unpacks the sizes as int64
        raise TypeError(f"interpolate: the output size {list(out)} does not fit in int64 (overflow when unpacking "
                        f"long long); pass a smaller size or scale_factor")
    if min(out) < (0 if mode == "area" else 1):   # area is torch's adaptive_avg_pool: an output size of 0 is fine
        raise RuntimeError(f"interpolate: input and output sizes should be greater than 0, but got input "
                           f"{list(spatial)} and output {list(out)}")
    if mode != "area" and 0 in input.shape[1:]:   # torch's upsample kernels: a non-batch dim of 0
        raise RuntimeError(f"interpolate: Non-empty {input.ndim}D data tensor expected but got a tensor with sizes "
                           f"{list(input.shape)}; only the batch dim may be empty")
    # NOTE [result size past int64]: a result too large for int64 bytes aborts XLA; torch's RuntimeError
    check_result_size(tuple(input.shape[:2]) + tuple(out), input.dtype.itemsize, "interpolate")
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nd - 1](input, out)
    kind = {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    if antialias:
        kind += "-aa"
    return apply_op(UPSAMPLE_OPS[kind, nd], (input,), (("mode", kind), ("output_size", out), ("scales", scales),
                                                       ("align_corners", bool(align_corners))))


def _check_interpolate_dtype(dtype, mode):
    """torch's CPU kernels resample floating tensors, and uint8 only in the nearest, bilinear and
    bicubic modes; any other dtype is NotImplementedError there."""
    if dtype.is_floating_point or (dtype.name == "uint8" and mode in _UINT8_MODES):
        return
    raise NotImplementedError(f"interpolate: mode '{mode}' is not implemented for {dtype} input; convert it with "
                              f".float() first" + (" (uint8 works with nearest, nearest-exact, bilinear and bicubic)"
                                                   if dtype.name == "uint8" else ""))


_UINT8_MODES = ("nearest", "nearest-exact", "bilinear", "bicubic")


def _warn_align_corners():
    """torch's warning for ``affine_grid``/``grid_sample`` without ``align_corners``, at the
    caller's line (as torch's, also through ``nn.functional``), on every call."""
    _warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since "
          "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
          "documentation of grid_sample for details.")


def pixel_shuffle(input, upscale_factor):
    """Mirrors ``torch.nn.functional.pixel_shuffle``: ``(*, C*r*r, H, W) -> (*, C, H*r, W*r)``.
    grad_fn ``PixelShuffleBackward0``. RuntimeError if C is not divisible by r*r; TypeError for an
    input that is not a Tensor (a NumPy array was shuffled)."""
    if not isinstance(input, Tensor):
        check_tensors("pixel_shuffle", input)
    r = int(upscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if input.shape[-3] % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={input.shape[-3]} is not divisible by {r * r}")
    return suggest_view_layout(apply_op(OPS["pixel_shuffle"], (input,), (("r", r),)), input)


def pixel_unshuffle(input, downscale_factor):
    """Mirrors ``torch.nn.functional.pixel_unshuffle``: ``(*, C, H*r, W*r) -> (*, C*r*r, H, W)``.
    grad_fn ``PixelUnshuffleBackward0``. RuntimeError if H or W is not divisible by r; TypeError for
    an input that is not a Tensor."""
    if not isinstance(input, Tensor):
        check_tensors("pixel_unshuffle", input)
    r = int(downscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    for name, d in (("height", -2), ("width", -1)):
        if input.shape[d] % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                               f"input.size({d})={input.shape[d]} is not divisible by {r}")
    return suggest_view_layout(apply_op(OPS["pixel_unshuffle"], (input,), (("r", r),)), input)


def _fold_tup(v, name):
    """A fold/unfold size argument as a pair: an int, or a sequence of exactly 2 (torch's im2col/col2im
    take no 1-element sequence, unlike the pools: RuntimeError)."""
    if isinstance(v, (list, tuple)) and len(v) == 1:
        raise RuntimeError(f"fold/unfold: it is expected {name} equals to 2, but got size 1; pass an int or 2 ints")
    return _tup(v, 2, name)


def _fold_args(kernel_size, dilation, padding, stride):
    """The static arguments of fold/unfold; RuntimeError, as torch, for a kernel, dilation or
    stride below 1 or a negative padding."""
    static = (("kernel", _fold_tup(kernel_size, "kernel_size")), ("dilation", _fold_tup(dilation, "dilation")),
              ("padding", _fold_tup(padding, "padding")), ("stride", _fold_tup(stride, "stride")))
    for (key, (h, w)), name, least in zip(static, ("kernel size", "dilation", "padding", "stride"), (1, 1, 0, 1)):
        if min(h, w) < least:
            rule = "be non-negative" if least == 0 else "be greater than zero"
            raise RuntimeError(f"fold/unfold: {name} should {rule}, but got {key}_height: {h} {key}_width: {w}")
    return static


def _check_fold_dtype(input, kernel):
    """torch's im2col/col2im CPU kernels take floating, complex and bool tensors but no integer
    ones: NotImplementedError naming the kernel, after the shape checks (as torch)."""
    if input.dtype._cat == 1:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dt.SCALAR_NAMES[input.dtype.name]}'; "
                                  f"convert the input with .float()")


def _empty_past_batch(input, batched_ndim):
    """im2col/col2im take a batch of 0 (dim 0 of a ``batched_ndim``-dim input), but no other dim
    of size 0: torch refuses it before looking at the kernel's blocks."""
    return 0 in tuple(input.shape)[1 if input.ndim == batched_ndim else 0:]


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Mirrors ``torch.nn.functional.unfold`` (im2col): ``(N, C, H, W)`` or ``(C, H, W)`` ->
    ``(N, C*kh*kw, L)``, L the number of sliding-window positions. grad_fn ``Im2ColBackward0``.
    IndexError for fewer than 3 dims (torch reads dim -3 first), RuntimeError for more than 4 or
    a kernel larger than the padded input."""
    static = _fold_args(kernel_size, dilation, padding, stride)
    if input.ndim < 3:
        raise IndexError(f"unfold: Dimension out of range: input of {input.ndim} dims has no channel dim; "
                         f"expected (C, H, W) or (N, C, H, W), got {list(input.shape)}")
    if input.ndim not in (3, 4) or _empty_past_batch(input, 4):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {list(input.shape)}")
    batched = input.ndim == 4
    x = input if batched else input.unsqueeze(0)
    k, d, p, s = (v for _, v in static)
    blocks = fold_out_hw(x.shape[2:], k, d, p, s)
    if any(o < 1 for o in blocks):
        # torch's im2col shape check message (tests match "its components must be at least one")
        raise RuntimeError(f"Given input with spatial size {tuple(x.shape[2:])}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, calculated shape of the array of sliding blocks as {blocks}, but its "
                           f"components must be at least one.")
    _check_fold_dtype(input, "im2col_out_cpu")
    return apply_op(OPS["im2col"], (input,), static)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Mirrors ``torch.nn.functional.fold`` (col2im): ``(N, C*kh*kw, L)`` or ``(C*kh*kw, L)`` ->
    ``(N, C, *output_size)``, overlapping values summed. grad_fn ``Col2ImBackward0``.
    RuntimeError if dim 1 is not divisible by kh*kw or L does not match the block count; TypeError
    for an input that is not a Tensor (torch's col2im parser)."""
    if not isinstance(input, Tensor):
        check_tensors("fold", input)
    static = _fold_args(kernel_size, dilation, padding, stride)
    osz = _fold_tup(output_size, "output_size")
    if input.ndim not in (2, 3) or _empty_past_batch(input, 3):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
                           f"non-zero dimensions for input, but got: {list(input.shape)}")
    batched = input.ndim == 3
    x = input if batched else input.unsqueeze(0)
    k, d, p, s = (v for _, v in static)
    if x.shape[1] % (k[0] * k[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={x.shape[1]} and kernel_size={k}.")
    oh, ow = fold_out_hw(osz, k, d, p, s)
    if x.shape[2] != oh * ow:
        raise RuntimeError(f"Given output_size={osz}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, "
                           f"expected size of input's dimension 2 to match the calculated number of sliding blocks "
                           f"{oh} * {ow} = {oh * ow}, but got input.size(2)={x.shape[2]}.")
    if oh < 1 or ow < 1:
        # as torch, after the block count (two negative counts can multiply to input.size(2)); the op
        # itself would fail with no mention of the sliding blocks
        raise RuntimeError(f"Given output_size={osz}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, "
                           f"calculated shape of the array of sliding blocks as {(oh, ow)}, which is too small "
                           f"(non-positive)")
    _check_fold_dtype(input, "col2im_out_cpu")
    return apply_op(OPS["col2im"], (input,), (("output_size", osz),) + static)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """Mirrors ``torch.nn.functional.pairwise_distance``: ``||x1 - x2 + eps||_p`` over the last dim
    (inputs broadcast; 0-d inputs give ``|x1 - x2 + eps|``). grad_fn ``NormBackward1``.
    TypeError for a ``p``/``eps`` that is not a number."""
    p = require_float("pairwise_distance", "p", p)
    eps = require_float("pairwise_distance", "eps", eps)
    if not (isinstance(x1, Tensor) and isinstance(x2, Tensor)):   # a number was broadcast: torch's parser refuses it
        check_tensors("pairwise_distance", x1, x2, names=("x1", "x2"))
    diff = x1 - x2 + eps
    if diff.ndim == 0:
        return diff.abs()
    return apply_op(OPS["pairwise_norm"], (diff,), (("ord", float(p)), ("dim", (diff.ndim - 1,)),
                                                    ("keepdim", bool(keepdim))))


def _check_pool3d(input, name):
    if input.ndim not in (4, 5):
        raise RuntimeError(f"{name}: non-empty 4D or 5D (batch mode) tensor expected for input, got "
                           f"{list(input.shape)}")


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Mirrors ``torch.max_pool3d``: ``(N, C, D, H, W)`` or ``(C, D, H, W)``; padding is -inf.
    ``return_indices`` also gives int64 flat indices into ``D*H*W``.
    grad_fn ``MaxPool3DWithIndicesBackward0``. NotImplementedError for bool input."""
    _check_pool3d(input, "max_pool3d")
    k, s, p, d = _pool_args(3, kernel_size, stride, padding, dilation, "max_pool3d", input, ceil_mode)
    check_max_pool_dtype(input, "max_pool3d")
    name = "max_pool3d_with_indices" if return_indices else "max_pool3d"
    res = apply_op(OPS[name], (input,), (("kernel", k), ("stride", s), ("padding", p), ("dilation", d),
                                         ("ceil_mode", bool(ceil_mode))))
    return save_indices(*res) if return_indices else res


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mirrors ``torch._C._nn.avg_pool3d``. grad_fn ``AvgPool3DBackward0``. Under CPU autocast
    it runs in float32 (torch's fp32 list)."""
    _check_pool3d(input, "avg_pool3d")
    input = _autocast.cast("fp32", "avg_pool3d", input)
    k, s, p, _ = _pool_args(3, kernel_size, stride, padding, 1, "avg_pool3d", input, ceil_mode)
    _check_divisor(divisor_override, "avg_pool3d")
    return apply_op(OPS["avg_pool3d"], (input,), (("kernel", k), ("stride", s), ("padding", p),
                                                  ("ceil_mode", bool(ceil_mode)),
                                                  ("count_include_pad", bool(count_include_pad)),
                                                  ("divisor_override", divisor_override)))


def adaptive_avg_pool3d(input, output_size):
    """Mirrors ``torch._C._nn.adaptive_avg_pool3d``; ``None`` keeps a size; (1, 1, 1) is a mean
    (``MeanBackward1``), as torch. grad_fn ``AdaptiveAvgPool3DBackward0``."""
    out = _out_size(input, output_size, 3, "adaptive_avg_pool3d")
    if out == (1, 1, 1):   # before the rank check, as torch (as adaptive_avg_pool2d's (1, 1))
        return input.mean((-1, -2, -3), keepdim=True)
    _check_pool3d(input, "adaptive_avg_pool3d")
    check_adaptive_nonempty(input, 1, "adaptive_avg_pool3d")   # torch's kernel's check (as the 2-D pools)
    check_adaptive_kernel_dtype(input, "adaptive_avg_pool3d_cpu")   # (an empty output too, unlike 2-D)
    if 0 in out:
        return empty_adaptive_pool(input, out, "avg")
    return apply_op(OPS["adaptive_avg_pool3d"], (input,), (("output_size", out),))


def affine_grid(theta, size, align_corners=None):
    """Mirrors ``torch.nn.functional.affine_grid``: theta ``(N, 2, 3)`` with size ``(N, C, H, W)`` ->
    grid ``(N, H, W, 2)``; theta ``(N, 3, 4)`` with a 5-D size -> ``(N, D, H, W, 3)``.
    grad_fn ``AffineGridGeneratorBackward0``. ValueError for a theta of the wrong shape,
    RuntimeError when theta's batch differs from ``size[0]``, NotImplementedError for sizes that
    are not 4-D or 5-D. Warns (UserWarning) for a unit-size spatial dim with ``align_corners=True``."""
    given, size = size, tuple(int(v) for v in size)
    if align_corners is None:
        _warn_align_corners()
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    nd = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (nd, nd + 1):
        raise ValueError(f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for size {size}. "
                         f"Got {theta.shape}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: theta holds {theta.shape[0]} matrices but size asks for a batch of "
                           f"{size[0]}; they must match")
    if align_corners and min(size[2:]) == 1:
        # (torch's closing sentence kept: programs match on it)
        _warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
              "align_corners=True. With align_corners=True a spatial size of 1 gives the grid point -1; "
              "unit-size grids are not an intended use of affine_grid. See the documentation of "
              "affine_grid for details.")
    # torch's parser of affine_grid_generator reads size last: a tuple of ints (a tensor, a float,
    # or a bool in front is its TypeError)
    bad = [v for i, v in enumerate(given) if (isinstance(v, bool) and i == 0) or isinstance(v, float)
           or not hasattr(v, "__index__")] if not hasattr(given, "dim") else [given]
    if bad:
        raise TypeError(f"affine_grid_generator(): argument 'size' (position 2) must be tuple of ints, not "
                        f"{type(given).__name__ if hasattr(given, 'dim') else type(bad[0]).__name__}")
    if align_corners is not None and not _is_strict_bool(align_corners):   # then align_corners: a bool only
        raise strict_error("affine_grid_generator", "align_corners", "bool", align_corners, 3)
    return apply_op(OPS["affine_grid_generator"], (theta,), (("size", size), ("align_corners", bool(align_corners))))


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Mirrors ``torch.nn.functional.grid_sample``: input ``(N, C, H, W)`` with grid ``(N, Ho, Wo, 2)``
    of (x, y) in [-1, 1] -> ``(N, C, Ho, Wo)``; or 5-D input ``(N, C, D, H, W)`` with grid
    ``(N, Do, Ho, Wo, 3)`` (trilinear for 'bilinear'). Modes bilinear/nearest/bicubic (4-D only);
    padding zeros/border/reflection. grad_fn ``GridSampler2DBackward0``; gradients reach input
    and grid (``GridSampler3DBackward0`` for 5-D). Raises ValueError for an unknown mode,
    RuntimeError for bad shapes or an input and grid of different dtypes."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        _warn_align_corners()
    elif not _is_strict_bool(align_corners):   # torch's grid_sampler parser takes a bool only (not 1, "x")
        raise strict_error("grid_sampler", "align_corners", "bool", align_corners, 5)
    if not (isinstance(input, Tensor) and isinstance(grid, Tensor)):   # torch's grid_sampler parser
        check_tensors("grid_sampler", input, grid, names=("input", "grid"))
    # torch's checks in its order: batch size, grid's last dim, empty spatial dims, then the rank
    # (4-D, else 5-D) and bicubic's 4-D-only rule; the dtypes last (the kernel's)
    nd = input.ndim - 2
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    for d in range(2, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {d} being empty")
    rank = 4 if input.ndim == 4 else 5
    if input.ndim != rank or grid.ndim != rank:
        raise RuntimeError(f"grid_sampler(): expected {rank}D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if nd == 3 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if grid.dtype != input.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have the same dtype, but got input "
                           f"{input.dtype} and grid {grid.dtype}; convert one with .to(dtype)")
    return apply_op(OPS[f"grid_sampler_{nd}d"], (input, grid),
                    (("mode", mode), ("padding_mode", padding_mode), ("align_corners", bool(align_corners))))


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Mirrors ``torch.nn.functional.embedding_bag``: sums/means/maxes the rows of ``weight`` per bag.
    ``input`` 2-D ``(B, L)`` (fixed-length bags, ``offsets`` must be None) or 1-D with ``offsets``
    (bag starts; ``include_last_offset`` drops the trailing end offset). ``per_sample_weights`` only
    with mode 'sum'. Empty bags give zeros. ``scale_grad_by_freq`` (modes 'sum'/'mean') divides
    each row's gradient by how often its id occurs in ``input``. grad_fn ``EmbeddingBagBackward0``.
    ``sparse=True`` (sum/mean): ``weight``'s gradient is sparse COO, one entry per non-padding
    input (eager only). Raises ValueError for bad shapes/arguments as torch; RuntimeError for float
    ids or offsets, per_sample_weights of another dtype than ``weight``, a ``padding_idx`` outside
    ``[-num_embeddings, num_embeddings)``, an id outside ``[0, num_embeddings)``, ``offsets[0] != 0`` or
    ``offsets[-1] > len(input)`` (values checked in eager only: NOTE [eager value checks]).
    ``max_norm`` is left to the caller
    (``nn.functional`` renormalises first)."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    n = weight.shape[0] if weight.ndim else 0
    if padding_idx is not None and not -n <= padding_idx < n:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, {-n} through {n - 1}, but got "
                           f"{padding_idx}")
    if scale_grad_by_freq and mode == "max":
        raise ValueError("embedding_bag: max mode does not support scaling the gradient by the frequency; "
                         "use mode='sum' or 'mean', or scale_grad_by_freq=False")
    if per_sample_weights is not None:
        # torch compares the shapes first: a wrong shape is ValueError in every mode
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not None, "
                             f"then it must have the same shape as the input ({list(input.shape)})")
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                      f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                      f"on GitHub.")
    ids_dtype = input.dtype   # the ids' and offsets' common dtype, which torch's kernel checks
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             "fixed length sequences.")
        if input.dtype is _dt.bool_ or input.dtype.is_complex:   # torch builds the offsets with arange in input's dtype
            raise NotImplementedError(f"\"arange_cpu\" not implemented for '{_SCALAR_NAME[input.dtype.name]}' "
                                      "(embedding_bag of a 2-D input builds its offsets in the input's dtype); pass "
                                      "integer ids (.long())")
        b, length = input.shape
        offsets = arange(0, b * length, max(length, 1)) if b else zeros(0, dtype=_dt.int64)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        ids_dtype = _dt.promote_types(input.dtype, offsets.dtype)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    # the ids' dtype, after the ranks (torch's Python checks those before its C++ op looks at the
    # dtype): torch promotes input and offsets to one dtype (a 2-D input's offsets are in its
    # dtype), which must be int64/int32: int16 ids with int64 offsets are taken, bool ids with
    # bool offsets are not (each was checked on its own, which refused the one and took the other)
    if ids_dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError(f"embedding_bag: input and offsets must hold integer ids (Long or Int) after type "
                           f"promotion, got {ids_dtype} (call .long())")
    if per_sample_weights is not None and per_sample_weights.dtype != weight.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as tensor for argument "
                           f"#1 'per_sample_weights'; but type {weight.dtype} does not equal "
                           f"{per_sample_weights.dtype} (while checking arguments for embedding_bag)")
    _check_bag_values(input, offsets, weight.shape[0], padding_idx is not None, mode)
    if include_last_offset:
        offsets = offsets[:-1]
    pidx = None
    if padding_idx is not None:
        pidx = int(padding_idx) + (weight.shape[0] if padding_idx < 0 else 0)
    if sparse:
        if mode == "max":
            raise ValueError("max mode does not support sparse weights")
        if scale_grad_by_freq:
            raise NotImplementedError("embedding_bag: scale_grad_by_freq with sparse=True is not supported by "
                                      "tracegrad; pass sparse=False")
        return sparse_embedding_bag(weight, input, offsets.long(), per_sample_weights, mode, pidx)
    static = (("mode", mode), ("n_bags", int(offsets.shape[0])), ("padding_idx", pidx))
    if scale_grad_by_freq:
        static += (("scale_grad_by_freq", True),)
    return apply_op(OPS["embedding_bag"], (weight, input, offsets.long(), per_sample_weights), static)


def _check_bag_values(input, offsets, num_embeddings, has_padding_idx=False, mode="max"):
    """torch's value checks of ``embedding_bag`` on a 1-D ``input`` and its ``offsets`` (one host
    read each; skipped while tracing: NOTE [eager value checks]). An id out of range reads as
    torch's two kernels word it (the one with a padding index names the id only). Modes 'sum'
    and 'mean' also want non-decreasing offsets (torch's kernels; its 'max' kernel takes them)."""
    ids, offs = _host_values(input), _host_values(offsets)
    if ids is None:
        _check_traced_range(input, num_embeddings)
    if offs is None and offsets.numel():   # NOTE [value checks at run time]
        _state.check_values(offsets._value, lambda o: (o[0] != 0) | (o[-1] > input.shape[0]))
    if ids is not None:
        bad = np.flatnonzero((ids < 0) | (ids >= num_embeddings))
        if bad.size and has_padding_idx:
            raise RuntimeError(f"embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be "
                               f"{ids[bad[0]]}")
        if bad.size:
            raise RuntimeError(f"embedding_bag: index {bad[0]} of input takes value {ids[bad[0]]}, which is not in "
                               f"the valid range [0, {num_embeddings})")
    if offs is not None:
        if offs[0] != 0:
            raise RuntimeError(f"embedding_bag: offsets[0] has to be 0 (the first bag starts at position 0 of "
                               f"input), but got {offs[0]}")
        if offs[-1] > input.shape[0]:
            raise RuntimeError(f"embedding_bag: offsets[-1] can not be greater than input's length "
                               f"{input.shape[0]}, but got offsets[-1] of {offs[-1]}")
        if offs.min() < 0:
            # torch's 'mean' and 'max' kernels index with it (IndexError); its 'sum' kernel reads the
            # id before the input (RuntimeError, an id out of range)
            words = (f"embedding_bag: offsets must be non-negative positions in input, but got "
                     f"{int(offs.min())}; start each bag at an index of input")
            raise (RuntimeError if mode == "sum" else IndexError)(words)
        down = np.flatnonzero(np.diff(offs) < 0) if mode != "max" else ()
        if len(down):   # unchecked, a bag that ends before it starts was summed as empty
            i = int(down[0]) + 1
            raise RuntimeError(f"embedding_bag: offsets must be non-decreasing (each bag starts where the one before "
                               f"it does or later), but offsets[{i}] = {offs[i]} < offsets[{i - 1}] = {offs[i - 1]}")
