"""The values of torch's CPU ``arange`` for floating dtypes, bit for bit.

torch's kernel (ATen's RangeFactoriesKernel) fills the output with 256-bit vectors two at a time:
each vector's first lane is ``start + step * i`` in the accumulate type (double for float32 and
float64, float for float16 and bfloat16), rounded to the dtype, and lane ``j`` adds ``j * step`` to
that rounded base; elements past the last pair of whole vectors are ``start + step * i`` each. The
vectorized builds contract ``a * b + c`` into a fused multiply-add (except bfloat16's lanes, which
round the product before adding). The plain ``start + i * step``
differs from it by one unit in the last place in about a fifth of the elements, enough for
``arange(0, 1, 0.05)[k] == torch's`` to fail. Emulated here on the host with an exact fused
multiply-add for doubles (error-free products and sums); the float32 ones of the 16-bit types
are done in double, which rounds twice in rare ties. One thread's layout (torch splits ranges over 32,768 elements across its threads).
"""
from __future__ import annotations

import numpy as np

_SPLIT = 134217729.0    # 2**27 + 1: Veltkamp's splitter for doubles


def _split(x):
    t = _SPLIT * x
    hi = t - (t - x)
    return hi, x - hi


def _fma(a, b, c):
    """``a * b + c`` rounded once (float64 arrays): the product as an exact pair (Dekker), the
    sum as an exact pair (Knuth), then one rounding of their total."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    t = (p - (s - bb)) + (c - bb)
    return s + (t + e)


def arange_values(start: float, step: float, n: int, np_dtype) -> np.ndarray:
    """``n`` values of ``torch.arange(start, ..., step, dtype)`` for a floating ``np_dtype``, as
    torch's CPU kernel computes them (module docstring)."""
    itemsize = np.dtype(np_dtype).itemsize
    lanes = 32 // itemsize
    i = np.arange(n)
    in_vectors = i < (n // (2 * lanes)) * 2 * lanes
    j = np.where(in_vectors, i % lanes, 0).astype(np.float64)
    first = i.astype(np.float64) - j
    if itemsize >= 4:
        st, s = np.full(n, float(step)), np.full(n, float(start))
        base = _fma(st, first, s).astype(np_dtype).astype(np.float64)
        return _fma(j, st, base).astype(np_dtype)
    # float accumulate: the base a fused multiply-add in float32 (its product exact in double);
    # each lane one too for float16, while bfloat16's vectors multiply and add in two roundings
    st, s = np.float32(step), np.float32(start)
    base = (np.float64(st) * first + np.float64(s)).astype(np.float32).astype(np_dtype).astype(np.float32)
    if np.dtype(np_dtype) == np.float16:
        return (j * np.float64(st) + base.astype(np.float64)).astype(np.float32).astype(np_dtype)
    return (j.astype(np.float32) * st + base).astype(np_dtype)
