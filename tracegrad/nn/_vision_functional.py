"""Vision parts of ``tracegrad.nn.functional`` (re-exported there under torch's names):
resampling, pixel shuffle, unfold/fold, 3-D pooling, instance norm, distances, grids,
embedding bags. Written on tracegrad's public API and the ``tracegrad._api.vision_functions`` layer."""
from __future__ import annotations

import tracegrad
from tracegrad._api import nn_functions as _F
from tracegrad._api import vision_functions as _V
from tracegrad._api.argcheck import _is_strict_bool, require_float, strict_error
from tracegrad._ops.errors import not_a_tensor
from .._ops.warn import warn as _warn

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle", "pixel_unshuffle",
           "unfold", "fold", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "conv_transpose3d",
           "instance_norm", "pairwise_distance", "affine_grid", "grid_sample", "embedding_bag"]

interpolate = _V.interpolate
pixel_shuffle, pixel_unshuffle = _V.pixel_shuffle, _V.pixel_unshuffle
unfold, fold = _V.unfold, _V.fold
avg_pool3d, adaptive_avg_pool3d = _V.avg_pool3d, _V.adaptive_avg_pool3d
affine_grid, grid_sample = _V.affine_grid, _V.grid_sample
pairwise_distance = _V.pairwise_distance


def _warn_upsample(name):
    spelled = f"`nn.functional.{name}`" if name != "upsample" else "`nn.functional.upsample`"
    _warn(f"{spelled} is deprecated. Use `nn.functional.interpolate` instead.", UserWarning)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Mirrors the deprecated ``torch.nn.functional.upsample`` (same as :func:`interpolate`, with
    torch's deprecation warning)."""
    _warn_upsample("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Mirrors ``torch.nn.functional.upsample_nearest`` (deprecated, with torch's warning)."""
    _warn_upsample("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Mirrors ``torch.nn.functional.upsample_bilinear`` (``align_corners=True``, as torch;
    deprecated, with torch's warning)."""
    _warn_upsample("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Mirrors ``torch.nn.functional.max_pool3d``: ``(N, C, D, H, W)`` or ``(C, D, H, W)``;
    ``return_indices=True`` also gives int64 flat indices into ``D*H*W``.
    grad_fn ``MaxPool3DWithIndicesBackward0``."""
    return _V.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """(values, int64 indices into L) as torch: a 2-D pool over ``input.unsqueeze(-2)``, both
    outputs squeezed (grad_fn ``SqueezeBackward1``)."""
    k, s, p, d = _F._pool_args(1, kernel_size, stride, padding, dilation, "max_pool1d")
    vals, idx = _F.max_pool2d_with_indices(input.unsqueeze(-2), (1,) + k, (1,) + s, (0,) + p, (1,) + d, ceil_mode)
    return vals.squeeze(-2), idx.squeeze(-2)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Mirrors ``torch.nn.functional.conv_transpose3d``: weight ``(C_in, C_out/groups, kD, kH, kW)``.
    grad_fn ``ConvolutionBackward0``."""
    _F._check_conv_rank(3, "conv_transpose3d", input, weight, stride, padding, dilation, output_padding)
    return _F.convolution(input, weight, bias, stride, padding, dilation, True, output_padding, groups)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Mirrors ``torch.nn.functional.instance_norm``: normalises each (sample, channel) over its spatial
    dims, as torch does it: a batch norm of the input viewed as ``(1, N*C, *spatial)`` (grad_fn
    ``ViewBackward0``). With running statistics and ``use_input_stats`` they are updated in place
    with the batch-mean of the per-instance statistics. ValueError when training sees a single
    spatial element; TypeError for a ``use_input_stats`` that is not a bool (torch's parser)."""
    if not _is_strict_bool(use_input_stats):
        raise strict_error("instance_norm", "use_input_stats", "bool", use_input_stats, 6)
    if use_input_stats:
        n = 1
        for s in input.shape[2:]:
            n *= s
        if n == 1:   # (torch's check is for exactly one: no spatial element at all gives an empty result)
            raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                             f"{tracegrad.Size(input.shape)}")
    for name, pos, v in (("weight", 2, weight), ("bias", 3, bias), ("running_mean", 4, running_mean),
                         ("running_var", 5, running_var)):   # torch.instance_norm's parser: Tensors or None
        if v is not None and not isinstance(v, tracegrad.Tensor):
            raise not_a_tensor("instance_norm", v, name, pos)
    momentum = require_float("instance_norm", "momentum", momentum, 7)   # the parser's, as torch.instance_norm
    eps = require_float("instance_norm", "eps", eps, 8)
    # aten's instance_norm checks the running statistics before its batch norm: both are needed
    # without input statistics, and (the batch norm's check) one alone is refused
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("instance_norm: Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    if (running_mean is None) != (running_var is None):
        raise ValueError("instance_norm: running_mean and running_var must either both be None or neither be None")
    b, c = input.shape[:2]
    x = input.reshape(1, b * c, *input.shape[2:])
    rm = None if running_mean is None else running_mean.repeat(b)
    rv = None if running_var is None else running_var.repeat(b)
    w = None if weight is None else weight.repeat(b)
    bb = None if bias is None else bias.repeat(b)
    out = _F.batch_norm(x, w, bb, rm, rv, use_input_stats, momentum, eps)
    if use_input_stats and running_mean is not None:
        # torch folds the per-instance running statistics back by averaging over the batch
        with tracegrad.no_grad():
            running_mean.copy_(rm.view(b, c).mean(0))
            running_var.copy_(rv.view(b, c).mean(0))
    return out.view(input.shape)


def embedding_renorm_(weight, input, max_norm, norm_type=2.0):
    """Mirrors ``torch.embedding_renorm_``: rescales the rows of ``weight`` that ``input`` picks to
    norm at most ``max_norm``, in place and outside autograd. TypeError for a ``max_norm`` or
    ``norm_type`` that is not a real number."""
    max_norm = require_float("embedding_renorm_", "max_norm", max_norm, 3)
    norm_type = require_float("embedding_renorm_", "norm_type", norm_type, 4)
    with tracegrad.no_grad():
        # through a detached alias: the rescale is invisible to forward-mode AD too (a dual
        # weight's tangent passes unscaled, as torch's renorm has no derivative)
        target = weight.detach()
        idx = input.flatten()
        rows = target.index_select(0, idx)
        scale = (max_norm / (rows.norm(norm_type, 1, keepdim=True) + 1e-7)).clamp_max(1.0)
        target[idx] = rows * scale
    return weight


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Mirrors ``torch.nn.functional.embedding_bag`` (see ``tracegrad._api.vision_functions.embedding_bag``);
    ``max_norm`` renormalises the used rows of ``weight`` in place first, as torch. The old argument
    order ``embedding_bag(weight, input, ...)`` (Long ids passed as ``weight``, a float ``input``)
    still works with torch's deprecation warning: torch swaps the two back."""
    if weight.dtype == tracegrad.int64 and input.dtype.is_floating_point:
        _warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
              "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.")
        input, weight = weight, input
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    # torch's parser (the native embedding_bag this calls) takes a bool only for these: 1, None and
    # a str were read for their truth; checked in its argument order
    for pos, name, flag in ((4, "scale_grad_by_freq", scale_grad_by_freq), (6, "sparse", sparse),
                            (8, "include_last_offset", include_last_offset)):
        if flag is not True and flag is not False and not _is_strict_bool(flag):
            raise strict_error("embedding_bag", name, "bool", flag, pos)
    return _V.embedding_bag(input, weight, offsets, None, norm_type, scale_grad_by_freq, mode, sparse,
                            per_sample_weights, include_last_offset, padding_idx)


def check_mode_pad(input, pad, mode):
    """torch's checks for non-constant ``pad`` modes: a pad of 2k values needs a (k+1)-D or (k+2)-D
    input (NotImplementedError otherwise); circular padding may wrap at most once (RuntimeError).
    An odd pad length, or more pairs than the input has dims, is a RuntimeError first, for every
    mode (torch's ``at::pad`` checks before it dispatches on the mode)."""
    k = len(pad) // 2
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}; use 'constant', 'reflect', 'replicate' or "
                                  f"'circular'")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if k > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")
    if len(pad) % 2 or not 1 <= k <= 3 or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
                                  f"Supported combinations for non-constant padding:\n"
                                  f"  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                                  f"  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                                  f"  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode != "circular" and any(n == 0 for n in input.shape[input.ndim == k + 2:]):
        # the reflection/replication kernels take an empty batch only (torch's shape check)
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {list(input.shape)}")
    if mode == "circular":
        for i in range(k):
            if max(pad[2 * i], pad[2 * i + 1]) > input.shape[input.ndim - 1 - i]:
                raise RuntimeError("Padding value causes wrapping around more than once.")
    outs = [input.shape[input.ndim - 1 - i] + pad[2 * i] + pad[2 * i + 1] for i in range(k)]
    if mode == "circular" and min(outs) < 0:
        raise RuntimeError("Negative padding value is resulting in an empty dimension")
    if mode != "circular" and (min(outs) < 0 or max(outs) < 1):
        # torch's reflection/replication shape check: some padded dim must keep a size of at least 1,
        # and none may go negative (the output's allocation refuses that)
        sizes = ", ".join(f"{'DHW'[3 - k + j]}: {input.shape[input.ndim - k + j]}" for j in range(k))
        raise RuntimeError(f"{mode} pad: input ({sizes}) is too small. Calculated output sizes "
                           f"{outs[::-1]} (last {k} dims)")
