"""Vision ops: resampling (``interpolate``), pixel shuffle, im2col/col2im (``unfold``/``fold``),
3-D pooling, ``grid_sample``/``affine_grid`` and ``embedding_bag``.

Resampling is separable: each resized axis is a contraction with a small constant matrix
(one row per output position holding torch's interpolation weights), built with numpy
when the op is traced. The matrices are exact for every mode and make the backward (the
transposed contraction) come from ``jax.vjp`` with no scatter.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import nn_ops, reduction
from .registry import defop
from .spacing import torch_linspace

_HI = lax.Precision.HIGHEST


# ---- resampling -----------------------------------------------------------------------------
def _scale(n_in, n_out, align_corners, scale, cubic_or_linear):
    """torch's ``area_pixel_compute_scale``: the source step per output step."""
    if cubic_or_linear and align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale else n_in / n_out


def _nearest_matrix(n_in, n_out, scale, exact):
    # torch computes the source index in float32
    s = np.float32(_scale(n_in, n_out, False, scale, False))
    dst = np.arange(n_out, dtype=np.float32)
    src = np.floor((dst + np.float32(0.5)) * s) if exact else np.floor(dst * s)
    src = np.minimum(src.astype(np.int64), n_in - 1)
    m = np.zeros((n_out, n_in))
    m[np.arange(n_out), src] = 1.0
    return m


def _linear_matrix(n_in, n_out, align_corners, scale):
    s = _scale(n_in, n_out, align_corners, scale, True)
    m = np.zeros((n_out, n_in))
    for d in range(n_out):
        src = s * d if align_corners else max(s * (d + 0.5) - 0.5, 0.0)
        i0 = min(int(math.floor(src)), n_in - 1)
        i1 = i0 + (1 if i0 < n_in - 1 else 0)
        lam = src - i0
        m[d, i0] += 1.0 - lam
        m[d, i1] += lam
    return m


def _cubic_weights(t, a=-0.75):
    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _cubic_matrix(n_in, n_out, align_corners, scale):
    s = _scale(n_in, n_out, align_corners, scale, True)
    m = np.zeros((n_out, n_in))
    for d in range(n_out):
        src = s * d if align_corners else s * (d + 0.5) - 0.5   # no clamp for cubic, as torch
        i = int(math.floor(src))
        for k, w in enumerate(_cubic_weights(src - i)):
            m[d, min(max(i - 1 + k, 0), n_in - 1)] += w
    return m


def _antialias_matrix(n_in, n_out, align_corners, scale, cubic):
    """torch's anti-aliased resampling (``antialias=True``): when shrinking, the filter (triangle,
    or Keys cubic with a = -0.5) is widened by the scale so every input pixel contributes;
    weights are normalised per output pixel."""
    s = _scale(n_in, n_out, align_corners, scale, True)
    support = (2.0 if cubic else 1.0) * (s if s >= 1.0 else 1.0)
    inv = 1.0 / s if s >= 1.0 else 1.0

    def filt(x):
        x = abs(x)
        if not cubic:
            return max(1.0 - x, 0.0)
        a = -0.5
        if x < 1.0:
            return ((a + 2) * x - (a + 3)) * x * x + 1
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a if x < 2.0 else 0.0

    m = np.zeros((n_out, n_in))
    for d in range(n_out):
        center = s * (d + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        w = np.array([filt((j - center + 0.5) * inv) for j in range(lo, hi)])
        total = w.sum()
        m[d, lo:hi] = w / total if total != 0 else w
    return m


def _resample_matrix(mode, n_in, n_out, align_corners, scale):
    if mode in ("linear-aa", "cubic-aa"):
        return _antialias_matrix(n_in, n_out, align_corners, scale, mode == "cubic-aa")
    if mode in ("nearest", "nearest-exact"):
        return _nearest_matrix(n_in, n_out, scale, mode == "nearest-exact")
    if mode == "cubic":
        return _cubic_matrix(n_in, n_out, align_corners, scale)
    return _linear_matrix(n_in, n_out, align_corners, scale)


def _upsample(x, *, mode, output_size, scales, align_corners):
    """Resize the trailing ``len(output_size)`` dims; ``scales`` are the user's scale factors
    (or None), which torch uses for the source index instead of ``in/out``."""
    if not (jnp.issubdtype(x.dtype, jnp.inexact) or mode in ("nearest", "nearest-exact")):
        # fractional weights in an integer dtype would truncate to 0: interpolate in float32 as
        # torch's uint8 kernels do, one pass per dim from the last, each rounded (halves up, its
        # fixed point adds half a unit before the shift) and clamped back to the integer range
        # before the next; off the halves its fixed-point weights can still differ by one
        info = jnp.iinfo(x.dtype)
        nd = len(output_size)
        out = x.astype(jnp.float32)
        for k in reversed(range(nd)):
            ax = x.ndim - nd + k
            m = _resample_matrix(mode, x.shape[ax], output_size[k], align_corners, scales[k])
            out = jnp.moveaxis(jnp.tensordot(out, jnp.asarray(m, jnp.float32), axes=((ax,), (1,)), precision=_HI),
                               -1, ax)
            out = jnp.clip(jnp.floor(out + 0.5), info.min, info.max)
        return out.astype(x.dtype)
    if x.dtype in (jnp.bfloat16, jnp.float16):
        # torch's CPU kernels accumulate 16-bit inputs in float32 and round once; resizing one axis
        # at a time in the 16-bit dtype rounds after every axis (forward, and in the backward the
        # sum over the output positions each input feeds), off by several ulps from torch
        return _upsample(x.astype(jnp.float32), mode=mode, output_size=output_size, scales=scales,
                         align_corners=align_corners).astype(x.dtype)
    nd = len(output_size)
    out = x
    for k, (o, sc) in enumerate(zip(output_size, scales)):
        ax = x.ndim - nd + k
        m = _resample_matrix(mode, x.shape[ax], o, align_corners, sc)
        out = jnp.moveaxis(jnp.tensordot(out, jnp.asarray(m, x.dtype), axes=((ax,), (1,)), precision=_HI), -1, ax)
    return out


UPSAMPLE_OPS = {}
for _nd, _sfx in ((1, "1d"), (2, "2d"), (3, "3d")):
    D = f"{_nd}D"
    UPSAMPLE_OPS["nearest", _nd] = defop(f"upsample_nearest{_sfx}", _upsample, grad_fn=f"UpsampleNearest{D}Backward0")
    UPSAMPLE_OPS["nearest-exact", _nd] = defop(f"upsample_nearest_exact{_sfx}", _upsample,
                                               grad_fn=f"UpsampleNearestExact{D}Backward0")
UPSAMPLE_OPS["linear", 1] = defop("upsample_linear1d", _upsample, grad_fn="UpsampleLinear1DBackward0")
UPSAMPLE_OPS["linear", 2] = defop("upsample_bilinear2d", _upsample, grad_fn="UpsampleBilinear2DBackward0")
UPSAMPLE_OPS["linear", 3] = defop("upsample_trilinear3d", _upsample, grad_fn="UpsampleTrilinear3DBackward0")
UPSAMPLE_OPS["cubic", 2] = defop("upsample_bicubic2d", _upsample, grad_fn="UpsampleBicubic2DBackward0")
UPSAMPLE_OPS["linear-aa", 2] = defop("upsample_bilinear2d_aa", _upsample, grad_fn="UpsampleBilinear2DAaBackward0")
UPSAMPLE_OPS["cubic-aa", 2] = defop("upsample_bicubic2d_aa", _upsample, grad_fn="UpsampleBicubic2DAaBackward0")


# ---- pixel shuffle --------------------------------------------------------------------------
def _pixel_shuffle(x, *, r):
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    n = len(lead)
    y = jnp.transpose(y, tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def _pixel_unshuffle(x, *, r):
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    n = len(lead)
    y = jnp.transpose(y, tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return y.reshape(*lead, c * r * r, h // r, w // r)


defop("pixel_shuffle", _pixel_shuffle, grad_fn="PixelShuffleBackward0")
defop("pixel_unshuffle", _pixel_unshuffle, grad_fn="PixelUnshuffleBackward0")


# ---- im2col / col2im ------------------------------------------------------------------------
def _windows(out_hw, kernel, dilation, stride):
    """One (row slice, col slice) per kernel offset, row-major as torch orders a column."""
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            yield (slice(i * dilation[0], i * dilation[0] + (out_hw[0] - 1) * stride[0] + 1, stride[0]),
                   slice(j * dilation[1], j * dilation[1] + (out_hw[1] - 1) * stride[1] + 1, stride[1]))


def fold_out_hw(size, kernel, dilation, padding, stride):
    return tuple((s + 2 * p - d * (k - 1) - 1) // st + 1 for s, k, d, p, st in zip(size, kernel, dilation, padding,
                                                                                   stride))


def _im2col(x, *, kernel, dilation, padding, stride):
    """(N, C, H, W) -> (N, C*kh*kw, L); unbatched (C, H, W) -> (C*kh*kw, L)."""
    if x.ndim == 3:
        return _im2col(x[None], kernel=kernel, dilation=dilation, padding=padding, stride=stride)[0]
    n, c = x.shape[:2]
    oh, ow = fold_out_hw(x.shape[2:], kernel, dilation, padding, stride)
    xp = jnp.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    cols = jnp.stack([xp[:, :, r, q] for r, q in _windows((oh, ow), kernel, dilation, stride)], axis=2)
    return cols.reshape(n, c * kernel[0] * kernel[1], oh * ow)


def _col2im(x, *, output_size, kernel, dilation, padding, stride):
    """(N, C*kh*kw, L) -> (N, C, H, W): overlapping windows are summed; unbatched (C*kh*kw, L) too."""
    if x.ndim == 2:
        return _col2im(x[None], output_size=output_size, kernel=kernel, dilation=dilation, padding=padding,
                       stride=stride)[0]
    if x.dtype == jnp.bool_:     # torch sums bool windows as a logical or
        return _col2im(x.astype(jnp.int32), output_size=output_size, kernel=kernel, dilation=dilation,
                       padding=padding, stride=stride) != 0
    n = x.shape[0]
    kk = kernel[0] * kernel[1]
    c = x.shape[1] // kk
    oh, ow = fold_out_hw(output_size, kernel, dilation, padding, stride)
    cols = x.reshape(n, c, kk, oh, ow)
    h, w = (s + 2 * p for s, p in zip(output_size, padding))
    out = jnp.zeros((n, c, h, w), x.dtype)
    for k, (r, q) in enumerate(_windows((oh, ow), kernel, dilation, stride)):
        out = out.at[:, :, r, q].add(cols[:, :, k])
    return out[:, :, padding[0]:padding[0] + output_size[0], padding[1]:padding[1] + output_size[1]]


defop("im2col", _im2col, grad_fn="Im2ColBackward0")
defop("col2im", _col2im, grad_fn="Col2ImBackward0")


# ---- 3-D pooling (the n-d pool functions of nn_ops under torch's 3-D node names) ------------
defop("max_pool3d", nn_ops._max_pool, grad_fn="MaxPool3DWithIndicesBackward0", saves=("self",))
defop("max_pool3d_with_indices", nn_ops._max_pool_indices, grad_fn="MaxPool3DWithIndicesBackward0",
      saves=("self",), n_out=2, n_diff=1)
defop("avg_pool3d", nn_ops._avg_pool, grad_fn="AvgPool3DBackward0", saves=("self",), shape_edges={"self": "zeros"})
defop("adaptive_avg_pool3d", nn_ops._adaptive_avg, grad_fn="AdaptiveAvgPool3DBackward0", saves=("self",),
      shape_edges={"self": "zeros"})


# ---- distances ------------------------------------------------------------------------------
# torch's pairwise_distance calls the legacy ``norm(x, p, dim)`` overload: node NormBackward1
def _pairwise_norm(x, *, ord, dim, keepdim):
    return reduction._norm(x, ord, dim, keepdim)


defop("pairwise_norm", _pairwise_norm, grad_fn="NormBackward1", saves=("self", "result"))


# torch.dist is one node (DistBackward0) over both inputs, broadcast, with p saved
def _dist(a, b, *, ord, dtype):
    return reduction._norm(a.astype(dtype) - b.astype(dtype), ord, None, False)


defop("dist", _dist, args=("self", "other"), grad_fn="DistBackward0", saves=("self", "other", "result"))


# ---- affine_grid / grid_sample --------------------------------------------------------------
def _base_coords(n, align_corners, dtype):
    """torch's ``linspace(-1, 1, n)`` (times ``(n - 1)``, over ``n`` without align_corners), with
    its roundings: an identity grid must land on the same side of each pixel centre as torch's."""
    if n <= 1:
        return jnp.zeros((1,), dtype)
    c = torch_linspace(-1.0, 1.0, n, dtype)
    if c is None:
        c = np.linspace(-1.0, 1.0, n).astype(dtype)
    if not align_corners:
        c = c * np.asarray(n - 1, c.dtype) / np.asarray(n, c.dtype)
    return jnp.asarray(c)


def _affine_grid(theta, *, size, align_corners):
    """theta (N, 2, 3) / (N, 3, 4); size (N, C, H, W) / (N, C, D, H, W) -> grid (N, *spatial, nd)."""
    spatial = size[2:]
    axes = [_base_coords(s, align_corners, theta.dtype) for s in reversed(spatial)]   # x, y[, z]
    mesh = jnp.meshgrid(*axes, indexing="ij")   # indexed (x, y[, z])
    base = jnp.stack(mesh + [jnp.ones_like(mesh[0])], axis=-1)
    base = jnp.transpose(base, tuple(reversed(range(len(spatial)))) + (len(spatial),))   # (*spatial, nd+1)
    return jnp.einsum("...k,njk->n...j", base, theta, precision=_HI)


defop("affine_grid_generator", _affine_grid, args=("theta",), grad_fn="AffineGridGeneratorBackward0")


def _reflect(x, lo2, hi2):
    if lo2 == hi2:
        return jnp.zeros_like(x)
    mn, span = lo2 / 2, (hi2 - lo2) / 2
    x = jnp.abs(x - mn)
    extra = jnp.fmod(x, span)
    flips = jnp.floor(x / span)
    return jnp.where(jnp.fmod(flips, 2) == 0, extra + mn, span - extra + mn)


def _unnormalize(coord, size, align_corners):
    """[-1, 1] -> pixel coordinates (corner pixels' centres, or their outer edges)."""
    return ((coord + 1) / 2) * (size - 1) if align_corners else ((coord + 1) * size - 1) / 2


def _clip_coords(x, size):
    """Clamp to [0, size - 1] with torch's gradient (``clip_coordinates_set_grad``): 1 strictly
    inside, 0 on the borders themselves as well as beyond them. jnp.clip would pass the gradient
    through at a coordinate that lands exactly on a border (a grid value of +-1), where torch's
    grid gradient is zero."""
    inside = (x > 0) & (x < size - 1)
    return jnp.where(inside, x, jax.lax.stop_gradient(jnp.clip(x, 0, size - 1)))


def _pad_coords(x, size, padding_mode, align_corners):
    """torch's ``compute_coordinates``: fold pixel coordinates back for border/reflection."""
    if padding_mode == "border":
        x = _clip_coords(x, size)
    elif padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        x = _clip_coords(x, size)
    return x


def _grid_sampler_2d(inp, grid, *, mode, padding_mode, align_corners):
    n, c, h, w = inp.shape
    ix = _unnormalize(grid[..., 0], w, align_corners)
    iy = _unnormalize(grid[..., 1], h, align_corners)
    flat = inp.reshape(n, c, h * w)
    go = grid.shape[1:3]

    def tap(yy, xx):
        ok = (xx >= 0) & (xx <= w - 1) & (yy >= 0) & (yy <= h - 1)
        # the sample count spelt out: with a batch of 0 a -1 would be ambiguous
        idx = (jnp.clip(yy, 0, h - 1) * w + jnp.clip(xx, 0, w - 1)).astype(jnp.int32).reshape(n, 1, go[0] * go[1])
        v = jnp.take_along_axis(flat, jnp.broadcast_to(idx, (n, c, idx.shape[-1])), axis=2)
        return v.reshape(n, c, *go) * ok[:, None].astype(inp.dtype)

    if mode == "bicubic":
        # 4x4 taps around floor(ix, iy); padding applies to each tap's coordinate, as torch
        x0, y0 = jnp.floor(ix), jnp.floor(iy)
        wx = _cubic_weights((ix - x0)[:, None])
        wy = _cubic_weights((iy - y0)[:, None])
        out = 0
        for i in range(4):
            yy = _pad_coords(y0 - 1 + i, h, padding_mode, align_corners)
            row = sum(tap(yy, _pad_coords(x0 - 1 + j, w, padding_mode, align_corners)) * wx[j] for j in range(4))
            out = out + row * wy[i]
        return out
    ix = _pad_coords(ix, w, padding_mode, align_corners)
    iy = _pad_coords(iy, h, padding_mode, align_corners)
    if mode == "nearest":
        return tap(jnp.round(iy), jnp.round(ix))   # round half to even, as torch's nearbyint
    x0, y0 = jnp.floor(ix), jnp.floor(iy)
    tx, ty = (ix - x0)[:, None], (iy - y0)[:, None]
    return (tap(y0, x0) * (1 - tx) * (1 - ty) + tap(y0, x0 + 1) * tx * (1 - ty)
            + tap(y0 + 1, x0) * (1 - tx) * ty + tap(y0 + 1, x0 + 1) * tx * ty)


def _grid_sampler_3d(inp, grid, *, mode, padding_mode, align_corners):
    """Volumetric sampling: input (N, C, D, H, W), grid (N, Do, Ho, Wo, 3) of (x, y, z);
    trilinear ('bilinear') or nearest."""
    n, c, dd, h, w = inp.shape
    sizes = (w, h, dd)
    coords = [_pad_coords(_unnormalize(grid[..., k], sizes[k], align_corners), sizes[k], padding_mode,
                          align_corners) for k in range(3)]
    flat = inp.reshape(n, c, dd * h * w)
    go = grid.shape[1:4]

    def tap(z, y, x):
        ok = (x >= 0) & (x <= w - 1) & (y >= 0) & (y <= h - 1) & (z >= 0) & (z <= dd - 1)
        lin = (jnp.clip(z, 0, dd - 1) * h + jnp.clip(y, 0, h - 1)) * w + jnp.clip(x, 0, w - 1)
        idx = lin.astype(jnp.int32).reshape(n, 1, go[0] * go[1] * go[2])   # (a batch of 0: no -1)
        v = jnp.take_along_axis(flat, jnp.broadcast_to(idx, (n, c, idx.shape[-1])), axis=2)
        return v.reshape(n, c, *go) * ok[:, None].astype(inp.dtype)

    ix, iy, iz = coords
    if mode == "nearest":
        return tap(jnp.round(iz), jnp.round(iy), jnp.round(ix))
    x0, y0, z0 = jnp.floor(ix), jnp.floor(iy), jnp.floor(iz)
    tx, ty, tz = (ix - x0)[:, None], (iy - y0)[:, None], (iz - z0)[:, None]
    out = 0
    for dz in (0, 1):
        for dy in (0, 1):
            for dx in (0, 1):
                wgt = (tx if dx else 1 - tx) * (ty if dy else 1 - ty) * (tz if dz else 1 - tz)
                out = out + tap(z0 + dz, y0 + dy, x0 + dx) * wgt
    return out


defop("grid_sampler_3d", _grid_sampler_3d, args=("input", "grid"), grad_fn="GridSampler3DBackward0",
      saves=("input", "grid"), shape_edges={"input": "undefined"})
defop("grid_sampler_2d", _grid_sampler_2d, args=("input", "grid"), grad_fn="GridSampler2DBackward0",
      saves=("input", "grid"), shape_edges={"input": "undefined"})


# ---- embedding_bag --------------------------------------------------------------------------
def _embedding_bag(w, idx, offsets, psw, *, mode, n_bags, padding_idx, scale_grad_by_freq=False):
    """1-D ``idx`` split into ``n_bags`` bags starting at ``offsets``; reduce rows per bag."""
    bag = jnp.searchsorted(offsets, jnp.arange(idx.shape[0]), side="right") - 1
    keep = jnp.ones(idx.shape, bool) if padding_idx is None else idx != padding_idx
    rows = jnp.take(w, idx, axis=0)
    if scale_grad_by_freq:
        rows = nn_ops.scale_rows_grad_by_freq(rows, idx, w.shape[0])
    if psw is not None:
        rows = rows * psw[:, None].astype(rows.dtype)
    if mode == "max":
        rows = jnp.where(keep[:, None], rows, -jnp.inf)
        out = jax.ops.segment_max(rows, bag, num_segments=n_bags)
        return jnp.where(jnp.isneginf(out), 0, out)
    rows = jnp.where(keep[:, None], rows, 0)
    out = jax.ops.segment_sum(rows, bag, num_segments=n_bags)
    if mode == "mean":
        cnt = jax.ops.segment_sum(keep.astype(w.dtype), bag, num_segments=n_bags)
        out = out / jnp.maximum(cnt, 1)[:, None]
    return out


defop("embedding_bag", _embedding_bag, args=("weight", "indices", "offsets", "per_sample_weights"),
      grad_fn="EmbeddingBagBackward0", saves=("weight", "indices", "offsets", "per_sample_weights"),
      no_edge=("offsets",))
