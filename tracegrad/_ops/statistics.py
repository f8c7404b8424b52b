"""Statistics that skip NaNs: ``nanmedian`` (whole tensor, or along a dim with indices) and
``nanquantile``. NaNs sort last (JAX's sort, like torch's), so a slice's ``k`` non-NaN values
are its first ``k`` sorted ones; an all-NaN slice gives NaN."""
from __future__ import annotations

import jax.numpy as jnp

from .reduction import _on_0d, sorted_pick, whole_median
from .registry import defop


def _valid(x, axis):
    return jnp.sum(~jnp.isnan(x), axis=axis, keepdims=True)


def _nanmedian(x, dim, keepdim):
    # the lower median of the non-NaN values (position 0 of an all-NaN slice: NaN)
    return sorted_pick(x, dim, keepdim, jnp.maximum((_valid(x, dim) - 1) // 2, 0))


defop("nanmedian_dim", _on_0d(_nanmedian), grad_fn="NanmedianBackward1", n_out=2, n_diff=1, saves=("self",))
defop("nanmedian_all", lambda x: whole_median(x, _nanmedian), grad_fn="NanmedianBackward0", saves=("self",))


def _nanquantile(x, q, dim, keepdim, interpolation):
    # quantile's sort + gather + lerp, with each slice's own count of non-NaN values
    if dim is None:
        out = _nanquantile(x.ravel(), q, 0, False, interpolation)
        return out.reshape(jnp.shape(q) + (1,) * x.ndim) if keepdim else out
    xs = jnp.moveaxis(jnp.sort(x, axis=dim), dim, -1)
    q = jnp.asarray(q, x.dtype)
    n = _valid(xs, -1).astype(x.dtype)                       # (..., 1)
    pos = q.reshape(-1) * jnp.maximum(n - 1, 0)              # (..., Q)
    lo, hi = jnp.floor(pos), jnp.ceil(pos)
    if interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    elif interpolation == "nearest":
        lo = hi = jnp.round(pos)     # round half to even, as torch's nearest
    frac = jnp.where(lo == hi, 0, 0.5 if interpolation == "midpoint" else pos - lo).astype(x.dtype)
    a = jnp.take_along_axis(xs, lo.astype(jnp.int32), axis=-1)
    b = jnp.take_along_axis(xs, hi.astype(jnp.int32), axis=-1)
    out = jnp.where(n > 0, a + (b - a) * frac, jnp.nan)
    out = out.reshape(out.shape[:-1] + q.shape)
    out = jnp.moveaxis(out, tuple(range(out.ndim - q.ndim, out.ndim)), tuple(range(q.ndim)))
    if keepdim and x.ndim:
        out = jnp.expand_dims(out, q.ndim + dim)
    return out


defop("nanquantile", _nanquantile, args=("self", "q"), grad_fn="SqueezeBackward4", saves=("self", "q"),
      no_edge=("q",))
