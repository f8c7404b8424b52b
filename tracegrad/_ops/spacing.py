"""``linspace`` values bit-for-bit as torch's CPU kernel computes them.

torch fills the first half of the points from ``start`` and the second half from ``end``:
``start + step * i`` for ``i < steps // 2``, else ``end - step * (steps - 1 - i)``, with
``step = (end - start) / (steps - 1)``. For float32/float64 the arithmetic is in the result's
dtype and each point is one fused multiply-add (one rounding); float16/bfloat16 round after
each operation; integer results are computed in double from the truncated endpoints and
truncated. ``jnp.linspace`` differs in the last place, and that matters where a value is then
floored: ``affine_grid``'s identity grid lands on pixel centres and ``grid_sample``'s gradient
picks the neighbour from the floor (the spatial transformer tutorial starts at the identity).
"""
import numpy as np

# an fma is emulated by computing in a wider type and rounding once
_WIDER = {np.dtype(np.float32): np.float64, np.dtype(np.float64): np.longdouble}


def torch_linspace(start, end, steps, dtype):
    """numpy array of ``steps`` points of ``dtype`` with torch's values; ``None`` for complex
    endpoints or dtypes (the caller keeps its own formula there)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c" or isinstance(start, complex) or isinstance(end, complex):
        return None
    if steps <= 1:
        return np.full((steps,), start).astype(dtype)
    i = np.arange(steps)
    first, rest = i < steps // 2, steps - 1 - i
    if dtype.kind in "iub":
        # torch casts the endpoints to the dtype first (truncating; wrapping for unsigned)
        lo, hi = (float(np.array(int(v)).astype(dtype)) for v in (start, end))
        step = (hi - lo) / (steps - 1)
        w = np.longdouble
        vals = np.where(first, w(step) * i + w(lo), w(hi) - w(step) * rest)
        return np.trunc(vals.astype(np.float64)).astype(dtype)
    lo, hi = dtype.type(start), dtype.type(end)
    step = dtype.type((hi - lo) / dtype.type(steps - 1))
    wide = _WIDER.get(dtype)
    if wide is None:     # float16 / bfloat16: every operation rounds to the dtype
        return np.where(first, lo + step * i.astype(dtype), hi - step * rest.astype(dtype)).astype(dtype)
    return np.where(first, wide(step) * i + wide(lo), wide(hi) - wide(step) * rest).astype(dtype)
