"""More of ``torch.nn.functional``'s layers, composed of tracegrad ops: ``lp_pool1d/2d/3d``,
``max_unpool1d/2d/3d``, ``adaptive_max_pool3d``, ``local_response_norm``, ``channel_shuffle``,
``pdist`` and ``fractional_max_pool2d/3d``. Re-exported by ``functional.py``. Index sets (unpool output sizes, adaptive bins,
pdist pairs) come from static shapes only, so each traces into one program."""
from __future__ import annotations

import math

import numpy as np

import tracegrad
from tracegrad._ops.registry import OPS
from tracegrad.autograd._dispatch import apply_op
from tracegrad._ops.random import scalar_name as _scalar_name
from tracegrad._api.nn_functions import adaptive_max_pool as _adaptive_max_pool, check_adaptive_nonempty, \
    check_output_size_items, max_unpool as _max_unpool_op

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "adaptive_max_pool3d", "local_response_norm", "channel_shuffle", "pdist", "fractional_max_pool2d",
           "fractional_max_pool3d"]


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, n):
    F = tracegrad.nn.functional
    pool = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[n]
    if n > 1 and isinstance(kernel_size, (str, list, tuple)) and len(kernel_size) != n:
        # torch's lp_pool2d/3d unpack a non-int kernel_size into n names first: ValueError
        raise ValueError(f"lp_pool{n}d: kernel_size must be an int or {n} ints, got {kernel_size!r} "
                         f"(not enough / too many values to unpack)")
    if n == 1 and isinstance(kernel_size, (list, tuple)) and len(kernel_size) == 1:
        # torch's lp_pool1d multiplies the pooled tensor by kernel_size itself: an int only (TypeError;
        # another length fails in the pool first, its RuntimeError)
        raise TypeError(f"lp_pool1d(): kernel_size must be an int, not {type(kernel_size).__name__}; pass "
                        f"kernel_size={kernel_size[0]}")
    k = _tuple(kernel_size, n)
    if isinstance(norm_type, (int, float)) and math.isinf(norm_type):
        # torch's norm_type=+-inf is the max (min) of |x| over the window, a max pool; the
        # power-average path would give inf**0 = 1 for every window
        maxpool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[n]
        if norm_type > 0:
            return maxpool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        return -maxpool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = pool(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (out.sign() * out.abs().relu()).mul(math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Mirrors ``torch.nn.functional.lp_pool1d``: ``(sum over the window of x^p)^(1/p)``
    (an average pool of ``x^p`` times the window size); ``(N, C, L)`` or ``(C, L)``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Mirrors ``torch.nn.functional.lp_pool2d`` (see ``lp_pool1d``); ``(N, C, H, W)``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Mirrors ``torch.nn.functional.lp_pool3d`` (see ``lp_pool1d``); ``(N, C, D, H, W)``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    n = len(kernel_size)
    default = [(input.shape[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a "
                         f"length of '{len(output_size)}'")
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})')
    return [int(s) for s in output_size]


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, n):
    k = _tuple(kernel_size, n)
    s = _tuple(stride if stride is not None else kernel_size, n)
    p = _tuple(padding, n)
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"max_unpool{n}d: expected {n + 1}D or {n + 2}D input, got {input.dim()}D")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"max_unpool{n}d: expected indices of the input's shape {list(input.shape)}, got "
                           f"{list(indices.shape)}")
    if indices.dtype != tracegrad.int64:
        raise RuntimeError(f"max_unpool{n}d: expected indices of dtype int64 (from max_pool{n}d("
                           f"return_indices=True)), got {indices.dtype}")
    out = _unpool_output_size(input, k, s, p, output_size)
    if len(k) != n:
        raise RuntimeError(f"max_unpool{n}d: kernel_size must have {n} elements, got {list(k)}")
    if n == 1:   # as torch: a 2-D unpool of a trailing unit dim, squeezed (grad_fn SqueezeBackward1)
        return _max_unpool_op(input.unsqueeze(-1), indices.unsqueeze(-1), out + [1]).squeeze(-1)
    return _max_unpool_op(input, indices, out)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Mirrors ``torch.nn.functional.max_unpool1d``: the inverse of ``max_pool1d(...,
    return_indices=True)``: each value written at its flat index of an ``L_out`` row, zeros
    elsewhere; ``L_out = (L - 1) * stride - 2 * padding + kernel_size`` unless ``output_size``.
    Raises ValueError for an ``output_size`` of the wrong length or out of range."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Mirrors ``torch.nn.functional.max_unpool2d`` (see ``max_unpool1d``); indices into ``H*W``."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Mirrors ``torch.nn.functional.max_unpool3d`` (see ``max_unpool1d``); indices into ``D*H*W``."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Mirrors ``torch.nn.functional.adaptive_max_pool3d``: ``(N, C, D, H, W)`` or ``(C, D, H,
    W)`` to ``output_size`` (an int, a triple, ``None`` keeps a size) with torch's bins
    ``[floor(i*In/Out), ceil((i+1)*In/Out))``; grad_fn ``AdaptiveMaxPool3DBackward0``.
    With ``return_indices``, ``(values, indices)``: int64 positions ``(d * H + h) * W + w``."""
    if not isinstance(output_size, (list, tuple, int, str)) and not hasattr(output_size, "__index__"):
        # torch's wrapper takes len(output_size) first
        raise TypeError(f"adaptive_max_pool3d(): argument 'output_size' must be an int or a tuple of ints, not "
                        f"{type(output_size).__name__}")
    if isinstance(output_size, (list, tuple, str)) and input.dim() <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")   # torch's wrapper check
    check_output_size_items(output_size, "adaptive_max_pool3d")
    if input.dim() not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: {list(input.shape)}")
    # torch's kernel refuses an empty non-batch dim (an empty channel dim gave an empty result)
    check_adaptive_nonempty(input, 1, "adaptive_max_pool3d")
    out = _tuple(output_size, 3)
    if len(out) != 3:
        raise RuntimeError(f"adaptive_max_pool3d(): internal error: output_size.size() must be 3, got {len(out)}")
    sizes = []
    for d, o in enumerate(out):
        size = input.shape[input.dim() - 3 + d]
        o = size if o is None else int(o)
        if o < 0:   # torch's allocation of the output refuses it
            raise RuntimeError(f"Trying to create tensor with negative dimension {o}: "
                               f"{list(input.shape[:-3]) + [int(v) for v in out]}; adaptive_max_pool3d's output_size "
                               "must be >= 0")
        sizes.append(o)
    if not input.dtype.is_floating_point:   # after the size checks, as torch's kernel
        raise NotImplementedError(f"\"adaptive_max_pool3d_cpu\" not implemented for "
                                  f"'{_scalar_name(input.dtype.np)}'; convert the input with .float()")
    return _adaptive_max_pool(input, sizes, return_indices)


def _channel_window_mean(sq, before, after, size):
    """Sum of ``sq`` over channels ``c - before .. c + after`` (zero beyond the ends) divided by
    ``size``, for every channel ``c`` of an ``(N, C, *)`` tensor: an average pool over a padded
    channel axis, scaled where the window is not ``size`` long (CrossMapLRN2d's, for even sizes)."""
    F = tracegrad.nn.functional
    sizes, window = tuple(sq.shape), before + after + 1
    x = sq.reshape(sizes[0], 1, sizes[1], sizes[2] if len(sizes) > 2 else 1, -1)
    x = F.avg_pool3d(F.pad(x, (0, 0, 0, 0, before, after)), (window, 1, 1), stride=1).reshape(sizes)
    return x if window == size else x * (window / size)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Mirrors ``torch.nn.functional.local_response_norm``: ``x / (k + alpha * mean of x^2 over
    `size` neighbouring channels)^beta`` (channels ``c - size//2 .. c + (size-1)//2``,
    zero-padded at the channel ends). Raises ValueError for an input of fewer than 3 dims."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = _channel_window_mean(input.mul(input), size // 2, (size - 1) // 2, size)
    return input / div.mul(alpha).add(k).pow(beta)


def _window_sum(x, before, after):
    """Sum of ``x`` over channels ``c - before .. c + after`` (zero beyond the ends); a complex
    ``x`` part by part (the average pool it runs on has no complex kernel, torch's loop sums them)."""
    if x.dtype.is_complex:
        return tracegrad.complex(_window_sum(x.real, before, after), _window_sum(x.imag, before, after))
    return _channel_window_mean(x, before, after, before + after + 1) * (before + after + 1)


class CrossMapLRN2d(tracegrad.autograd.Function):
    """torch's ``CrossMapLRN2d`` autograd Function (its node: ``CrossMapLRN2dBackward``).

    NOTE [CrossMapLRN2d, Lua torch's kernel]: torch keeps Lua torch's running-sum loops, and
    their quirks are its results. Forward: ``scale = k + alpha / size * s`` with ``s`` the sum of
    ``x^2`` over channels ``c - h .. c + h`` (``h = (size-1)//2``: an even ``size`` sums ``size
    - 1``), plus channel 0 for every ``c > h`` (the loop never takes it back out); output ``x *
    scale^-beta``. Backward (not the derivative of that forward): ``g * scale^-beta - 2 alpha beta
    / size * x * sum_j r_j`` with ``r = g * output / scale`` summed over channels ``j = c - p ..
    c + size - 1 - p``, ``p = int(size - (size-1)/2)`` (a window that leans to lower channels)."""

    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        half = (size - 1) // 2
        sq = input * input
        s = _window_sum(sq, half, half)
        if input.shape[1] > half + 1:   # channel 0 stays in the running sum
            s = s + tracegrad.cat([tracegrad.zeros_like(sq[:, :half + 1]),
                                   sq[:, :1].expand(-1, input.shape[1] - half - 1, -1, -1)], 1)
        scale = s * (alpha / size) + k
        output = input * scale.pow(-beta)
        ctx.save_for_backward(input, output, scale)
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output, scale = ctx.saved_tensors
        size, p = ctx.size, int(ctx.size - (ctx.size - 1) / 2)
        ratio = _window_sum(grad_output * output / scale, p, size - 1 - p)
        grad = grad_output * scale.pow(-ctx.beta) - (2 * ctx.alpha * ctx.beta / size) * input * ratio
        return grad, None, None, None, None


def cross_map_lrn2d(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """``torch.nn.CrossMapLRN2d``'s function on a 4-D ``(N, C, H, W)`` input: local response
    normalisation across channels with Lua torch's kernel, values and gradient as torch's (NOTE
    [CrossMapLRN2d, Lua torch's kernel]); node ``CrossMapLRN2dBackward``. ValueError for an
    input that is not 4-D, as torch. Differs from torch: ``size=1`` gives a gradient where
    torch's backward fails (RuntimeError from ``narrow``)."""
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    # torch's steps, in its order: ``pow(input, 2, out=)`` into a buffer of the input's dtype (a
    # bool input's square is Long), its channel 0 selected, the buffer scaled in place by a float
    # (an integer one cannot hold it); unchecked, a bool or integer input reached the average
    # pool's kernel check or was computed, and an empty channel dim was a reshape error
    if input.dtype is tracegrad.bool:
        raise RuntimeError("CrossMapLRN2d: result type Long can't be cast to the desired output type Bool; convert "
                           "the input with .float()")
    if input.shape[1] == 0:
        raise IndexError(f"select(): index 0 out of range for tensor of size {list(input.shape)} at dimension 1 "
                         "(CrossMapLRN2d needs at least one channel)")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"CrossMapLRN2d: result type Float can't be cast to the desired output type "
                           f"{_scalar_name(input.dtype.np)}; convert the input with .float()")
    return CrossMapLRN2d.apply(input, size, alpha, beta, k)


def channel_shuffle(input, groups):
    """Mirrors ``torch.nn.functional.channel_shuffle``: ``(N, C, *)`` with channels regrouped
    ``(g, C/g) -> (C/g, g)``. Raises RuntimeError for fewer than 3 dims, ``groups <= 0`` or
    ``C`` not divisible by ``groups``."""
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c = input.shape[0], input.shape[1]
    if c % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


def pdist(input, p=2):
    """Mirrors ``torch.nn.functional.pdist``: the p-norm distance of every pair ``i < j`` of the
    rows of an ``(N, M)`` input, in row-major upper-triangle order: ``(N*(N-1)/2,)``. Raises
    RuntimeError for a non-2-D input or a negative ``p``."""
    tracegrad._api.promotion.check_tensors("pdist", input)
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        # torch's check, before p's (a complex input was computed; an integer one was
        # linalg.vector_norm's error)
        raise RuntimeError(f"pdist only supports floating-point dtypes (got {input.dtype}); convert the input with "
                           ".float()")
    if not p >= 0:   # NaN too, as torch
        raise RuntimeError("pdist only supports non-negative p values")
    # one PdistBackward0 node, as torch (its inf-norm gradient differs from vector_norm's at ties)
    return apply_op(OPS["pdist"], (input,), (("p", float(p)),))


def _fractional_starts(sample, size, out, k):
    """torch's interval sequence for one spatial dim: ``floor((i + u) * alpha) - floor(u * alpha)``
    for ``i < out - 1`` and ``size - k`` last, ``alpha = (size - k) / (out - 1)`` (float32 as
    the kernel computes it); ``sample`` ``(N, C)`` gives ``(N, C, out)`` int64 starts."""
    if out <= 1:   # one window at the end, or none (an output size of 0)
        return tracegrad.full((*sample.shape, out), size - k, dtype=tracegrad.long, device=sample.device)
    alpha = float(np.float32(size - k) / np.float32(out - 1))
    i = tracegrad.arange(out - 1, dtype=sample.dtype, device=sample.device)
    u = sample.unsqueeze(-1)
    seq = ((i + u) * alpha).floor() - (u * alpha).floor()
    last = tracegrad.full((*sample.shape, 1), size - k, dtype=tracegrad.long, device=sample.device)
    return tracegrad.cat([seq.long(), last], -1)


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices, samples, n):
    name = f"fractional_max_pool{n}d"
    if output_size is None and output_ratio is None:   # torch's Python wrapper: before the kernel's checks
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if samples is None and input.dim() < n + 1:
        # torch's Python wrapper reads input.size(-n-1) (the channels) to draw the samples first
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(input.dim(), 1)}, "
                         f"{max(input.dim(), 1) - 1}], but got {-n - 1}); {name} takes a {n + 1}-D or "
                         f"{n + 2}-D input")
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got: {list(input.shape)}")
    spatial = tuple(input.shape[-n:])
    k = _tuple(kernel_size, n)
    if len(k) != n:
        raise RuntimeError(f"{name}(): kernel_size must either be a single int or a tuple of {n} ints, got "
                           f"{kernel_size}")
    if output_size is None:
        ratio = _tuple(output_ratio, n)
        if len(ratio) != n:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        output_size = [int(s * r) for s, r in zip(spatial, ratio)]
    out = [int(o) for o in _tuple(output_size, n)]
    if len(out) != n:
        raise RuntimeError(f"{name}(): output_size must either be a single int or a tuple of {n} ints, got "
                           f"{output_size}")
    dims = ["time", "height", "width"][-n:]
    for d in range(n):
        # torch's 3-D kernel wants out + k - 1 strictly below the input size, its 2-D kernel allows equality
        if out[d] + k[d] - 1 > spatial[d] - (n == 3):
            raise RuntimeError(f"{name}(): pool {dims[d]} {k[d]} too large relative to input {dims[d]} "
                               f"{spatial[d]}")
    batched = input.dim() == n + 2
    # torch checks dims 1.. whether batched or not (an unbatched input's empty channel dim is taken)
    empty = [d for d in range(1, input.dim()) if input.shape[d] == 0]
    if empty:
        raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but got"
                           f"{list(input.shape)} with dimension {empty[0]} being empty.")
    x = input if batched else input.unsqueeze(0)
    nb, c = x.shape[0], x.shape[1]
    if samples is None:
        samples = tracegrad.rand(nb, c, n, dtype=input.dtype, device=input.device)
    if samples.dtype != input.dtype:   # (the draw would otherwise be read in any dtype)
        raise RuntimeError(f"Expect _random_samples to have the same dtype as input ({input.dtype}), got "
                           f"{samples.dtype}")
    if samples.dim() == 3 and samples.shape[0] < nb:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    samples = samples[:nb]
    if tuple(samples.shape) != (nb, c, n):
        raise RuntimeError(f"{name}(): expected _random_samples of shape {[nb, c, n]}, got {list(samples.shape)}")
    if input.dtype.is_complex:   # torch's kernel has no complex version (max compared them unchecked)
        raise NotImplementedError(f"\"{name}_out_frame\" not implemented for '{_scalar_name(input.dtype.np)}'; "
                                  "convert the input with .real or .abs()")
    # torch's sample order: (w, h) for 2-D, (t, h, w) for 3-D
    order = [1, 0] if n == 2 else [0, 1, 2]
    starts = [_fractional_starts(samples[..., order[d]], spatial[d], out[d], k[d]) for d in range(n)]
    if min(k) <= 0:
        # an empty window (kernel_size 0 or negative, which torch's functional form takes): torch's
        # kernel never updates its running max, giving -inf at each window's first position
        values = tracegrad.full((nb, c, *out), -math.inf, dtype=input.dtype, device=input.device)
        arg = tracegrad.zeros((nb, c, *out), dtype=tracegrad.long, device=input.device)
        return _fractional_result(values, arg, starts, spatial, out, k, batched, return_indices)
    # gather each dim's windows (out_d * k_d rows) one dim at a time, then max over the k-box
    for d in range(n):
        dim = 2 + d
        idx = (starts[d].unsqueeze(-1) + tracegrad.arange(k[d], device=input.device)).reshape(nb, c, out[d] * k[d])
        shape = list(x.shape)
        shape[dim] = idx.shape[-1]
        view = [nb, c] + [1] * n
        view[dim] = idx.shape[-1]
        x = x.gather(dim, idx.reshape(view).expand(shape))
    split = [nb, c]
    for d in range(n):
        split += [out[d], k[d]]
    x = x.reshape(split).permute(0, 1, *[2 + 2 * d for d in range(n)], *[3 + 2 * d for d in range(n)])
    values, arg = x.reshape(nb, c, *out, math.prod(k)).max(-1)
    return _fractional_result(values, arg, starts, spatial, out, k, batched, return_indices)


def _fractional_result(values, arg, starts, spatial, out, k, batched, return_indices):
    """The pooled ``values`` ``(N, C, *out)`` (unbatched again when the input was), and with
    ``return_indices`` the flat ``prod(spatial)`` index of each max: the window's start in each dim
    plus ``arg``'s offset (``arg`` indexes the window's k-box, row-major)."""
    n, (nb, c) = len(out), tuple(values.shape[:2])
    if not batched:
        values = values.squeeze(0)
    if not return_indices:
        return values
    flat = tracegrad.zeros_like(arg)
    rem = arg
    for d in range(n):
        inner = max(math.prod(k[d + 1:]), 1)   # (an empty window's arg is 0: no offset)
        off = rem // inner
        rem = rem - off * inner
        view = [nb, c] + [1] * n
        view[2 + d] = out[d]
        pos = starts[d].reshape(view) + off
        flat = flat * spatial[d] + pos
    return values, (flat if batched else flat.squeeze(0))


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Mirrors ``torch.nn.functional.fractional_max_pool2d``: max over ``kernel_size`` windows at
    pseudo-random fractional starts (one uniform sample per (sample, channel, dim), from
    tracegrad's generator unless ``_random_samples`` ``(N, C, 2)`` is given; torch's interval
    rule), to ``output_size`` or ``int(size * output_ratio)``. ``return_indices`` adds int64
    flat indices into ``H*W`` (for ``max_unpool2d``). Raises ValueError without an output size
    or ratio; RuntimeError when the pool is too large for the input; TypeError for a bare number
    ``output_ratio`` (torch 2.13's 2-D wrapper takes its ``len``; the module form pairs it)."""
    if output_size is None and output_ratio is not None and not hasattr(output_ratio, "__len__"):
        raise TypeError(f"object of type '{type(output_ratio).__name__}' has no len(): fractional_max_pool2d "
                        "takes output_ratio as a pair, e.g. (0.5, 0.5)")
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Mirrors ``torch.nn.functional.fractional_max_pool3d`` (see ``fractional_max_pool2d``);
    ``_random_samples`` ``(N, C, 3)``, indices into ``D*H*W``."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3)
