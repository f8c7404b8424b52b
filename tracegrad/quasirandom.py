"""``tracegrad.quasirandom.SobolEngine``: torch's Sobol' sequence generator, same API and, without
scrambling, the same points.

Points are 30-bit integers scaled by ``2**-30``. Point ``k`` (counting from 0) is the XOR of the
direction numbers selected by the bits of ``k``'s Gray code ``k ^ (k >> 1)`` (the order torch and
Antonov-Saleev use), XORed with the scrambling shift. The direction numbers are Joe and Kuo's
(``new-joe-kuo-6.21201``, the set torch uses), read from the copy SciPy ships with its own Sobol'
engine (SciPy is a dependency of JAX).

Scrambling (``scramble=True``) is torch's kind: a random lower-triangular binary matrix (unit
diagonal) applied to every direction number's bits, and a random digital shift, drawn from a
``tracegrad.Generator`` seeded with ``seed``. Differs from torch: torch draws them from its own
CPU generator (Mersenne Twister), so scrambled points are valid scrambled Sobol' points but not
torch's for the same seed.
"""
from __future__ import annotations

import os

import numpy as np

from ._ops import dtypes as _dt
from ._tensor.factories import tensor as _tensor
from ._tensor.generator import Generator
from ._tensor.tensor import Tensor
from ._tensor.factories import randint

__all__ = ["SobolEngine"]

_DIRECTIONS = None


def _direction_table():
    """Joe-Kuo's primitive polynomials and initial direction numbers (SciPy's copy), loaded once."""
    global _DIRECTIONS
    if _DIRECTIONS is None:
        import scipy.stats
        path = os.path.join(os.path.dirname(scipy.stats.__file__), "_sobol_direction_numbers.npz")
        if not os.path.exists(path):
            raise RuntimeError("SobolEngine: SciPy's Sobol' direction numbers (scipy/stats/_sobol_direction_numbers.npz) "
                               "were not found; install a SciPy that ships them (>= 1.7)")
        with np.load(path) as z:
            _DIRECTIONS = (z["poly"].astype(np.int64), z["vinit"].astype(np.int64))
    return _DIRECTIONS


def _direction_numbers(dimension, maxbit):
    """``(dimension, maxbit)`` int64: direction number ``j`` of each coordinate, scaled to ``maxbit`` bits."""
    poly, vinit = _direction_table()
    poly = poly[:dimension]
    deg = np.array([int(p).bit_length() - 1 for p in poly], np.int64)    # each polynomial's degree
    deg[0] = 0
    rows = np.arange(dimension)
    m = np.zeros((dimension, maxbit), np.int64)
    m[:, :vinit.shape[1]] = vinit[:dimension, :maxbit]
    m[0] = 1
    m = np.where(np.arange(maxbit) < np.maximum(deg, 1)[:, None], m, 0)
    for k in range(1, maxbit):                 # Bratley-Fox recurrence, every coordinate at once
        live = (k >= deg) & (deg > 0)
        s = np.where(live, deg, 1)
        back = m[rows, k - s]
        new = back ^ (back << s)
        for i in range(1, int(deg.max(initial=0))):
            use = live & (i < deg) & (((poly >> np.maximum(s - i, 0)) & 1) == 1)
            new = new ^ np.where(use, m[rows, np.maximum(k - i, 0)] << i, 0)
        m[:, k] = np.where(live, new, m[:, k])
    m[0] = 1
    return m << (maxbit - 1 - np.arange(maxbit))


class SobolEngine:
    """Mirrors ``torch.quasirandom.SobolEngine(dimension, scramble=False, seed=None)``: draws
    points of the ``dimension``-dimensional Sobol' sequence (``1 <= dimension <= 21201``) in
    order, starting with the origin (or the shift, scrambled); ``draw``/``draw_base2`` return
    ``(n, dimension)`` tensors in ``[0, 1)``. See the module docstring for scrambling. ValueError
    for a dimension out of range, as torch."""
    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension, scramble=False, seed=None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]")
        self.seed, self.scramble, self.dimension = seed, scramble, dimension
        v = _direction_numbers(dimension, self.MAXBIT)
        shift = np.zeros(dimension, np.int64)
        if scramble:
            g = Generator()
            if seed is not None:
                g.manual_seed(seed)
            shift_bits = randint(2, (dimension, self.MAXBIT), generator=g).numpy()
            shift = shift_bits @ (1 << np.arange(self.MAXBIT, dtype=np.int64))
            ltm = np.tril(randint(2, (dimension, self.MAXBIT, self.MAXBIT), generator=g).numpy())
            v = self._scramble(v, ltm)
        self._v = v
        self.sobolstate = _tensor(v)
        self.shift = _tensor(shift)
        self.quasi = self.shift.clone()
        self.num_generated = 0

    def _scramble(self, v, ltm):
        """Left-multiply each direction number's bit column (most significant bit first) by the
        unit lower-triangular ``ltm[d]`` over GF(2)."""
        ltm = ltm.copy()
        idx = np.arange(self.MAXBIT)
        ltm[:, idx, idx] = 1
        place = 1 << (self.MAXBIT - 1 - idx)                       # row r of ltm gives bit MAXBIT-1-r
        bits = (v[:, None, :] & place[None, :, None]) != 0         # (d, bit row, j)
        mixed = np.einsum("drk,dkj->drj", ltm, bits.astype(np.int64)) & 1
        return (mixed * place[None, :, None]).sum(1)

    def _points(self, start, n):
        k = np.arange(start, start + n, dtype=np.int64)
        gray = k ^ (k >> 1)
        bits = (gray[:, None] >> np.arange(self.MAXBIT)) & 1      # (n, MAXBIT)
        chosen = np.where(bits[:, None, :] == 1, self._v[None], 0)  # (n, d, MAXBIT)
        return np.bitwise_xor.reduce(chosen, axis=-1) ^ self.shift.numpy()[None]

    def draw(self, n=1, out=None, dtype=None):
        """Mirrors ``SobolEngine.draw``: the next ``n`` points, ``(n, dimension)`` in ``dtype``
        (default: the default float dtype); with ``out`` the points are written there (resized).
        TypeError for an ``n`` that is not an int, RuntimeError for a negative one (and for 0 as
        the first draw, as torch), NotImplementedError for a dtype other than float32/float64."""
        dtype = _dt.get_default_dtype() if dtype is None else dtype
        if not (self.num_generated == 0 and n == 1):   # torch's stored first point skips its kernel's checks
            self._check_draw(n, dtype)
        n = int(n)
        q = self._points(self.num_generated, n)
        if n:
            self.quasi = _tensor(q[-1])
        self.num_generated += n
        result = _tensor(q.astype(np.float64) * 2.0 ** -self.MAXBIT, dtype=dtype)
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def _check_draw(self, n, dtype):
        """torch's kernel checks of a draw, in its order: ``n`` an int (a 0-d integer tensor too;
        TypeError for a float or a bool), the rows it makes not negative (the first draw makes
        ``n - 1`` rows after the first point: RuntimeError), a float32/float64 ``dtype``
        (NotImplementedError)."""
        if isinstance(n, Tensor):
            ok = n.dim() == 0 and not (n.is_floating_point() or n.is_complex() or n.dtype is _dt.bool_)
        else:
            ok = isinstance(n, (int, np.integer)) and not isinstance(n, bool)
        if not ok:
            raise TypeError(f"_sobol_engine_draw(): argument 'n' (position 2) must be int, not {type(n).__name__}; "
                            f"pass SobolEngine.draw the number of points as an int")
        rows = int(n) - (self.num_generated == 0)
        if rows < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {rows}: [{rows}, {self.dimension}] "
                               f"(SobolEngine.draw(n={int(n)}); pass n >= {int(self.num_generated == 0)})")
        if dtype is not _dt.float32 and dtype is not _dt.float64:
            name = _dt.SCALAR_NAMES.get(dtype.name, dtype.name) if isinstance(dtype, _dt.dtype) else dtype
            raise NotImplementedError(f"\"_sobol_engine_draw\" not implemented for '{name}'; pass dtype=float32 or "
                                      f"float64")

    def draw_base2(self, m, out=None, dtype=None):
        """Mirrors ``SobolEngine.draw_base2``: ``2**m`` points; ValueError unless the total drawn
        stays a power of 2 (the balance property), as torch."""
        n = 2 ** m
        total = self.num_generated + n
        if total & (total - 1):
            raise ValueError("The balance properties of Sobol' points require n to be a power of 2. "
                             f"{self.num_generated} points have been previously generated, then: "
                             f"n={self.num_generated}+2**{m}={total}. If you still want to do this, please use "
                             "'SobolEngine.draw()' instead.")
        return self.draw(n, out=out, dtype=dtype)

    def reset(self):
        """Mirrors ``SobolEngine.reset``: back to the first point. Returns ``self``."""
        self.quasi = self.shift.clone()
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        """Mirrors ``SobolEngine.fast_forward``: skip ``n`` points. Returns ``self``."""
        if n:
            self.quasi = _tensor(self._points(self.num_generated + n - 1, 1)[0])
        self.num_generated += n
        return self

    def __repr__(self):
        parts = [f"dimension={self.dimension}"]
        if self.scramble:
            parts.append("scramble=True")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(parts)})"
