"""Bessel and Airy functions of ``torch.special`` that ``jax.scipy.special`` lacks: J0, J1, Y0, Y1,
K0, K1 (and their exp-scaled forms), Ai, and the spherical j0. No gradient, as torch
(derivatives.yaml has none for them): the ops are declared without ``grad_fn``.

The algorithm is torch's (Cephes'): a short expansion of the function's smooth part near zero
and Hankel's asymptotic form ``sqrt(2 / (pi x)) (P cos chi - Q sin chi)`` (J; Y with sin/cos
swapped) beyond, with the exponential factored out for K and Ai. The expansions are Chebyshev
series whose coefficients are our own fit of 40-digit values (``bessel_tables.py``,
``scripts/gen_bessel_tables.py``), evaluated in float64 (float32 inputs are rounded once at
the end, so they are at least as accurate as torch's float32 kernels). The intervals:

* J0, J1/x, Y0 - (2/pi) ln(x) J0, (Y1 - (2/pi)(J1 ln x - 1/x))/x: series in ``x**2`` on |x| <= 8;
  beyond, P(u) and Q(u) in ``u = 8/x``.
* K0 + ln(x/2) I0, (K1 - ln(x/2) I1 - 1/x)/x: series in ``x**2`` on (0, 2]; beyond,
  ``K e^x sqrt(x)`` in ``u = 2/x``.
* Ai: itself on |x| <= 2.09; beyond, in ``u = 1/zeta`` (``zeta = 2/3 |x|**1.5``) the factor of
  ``e^-zeta / (2 sqrt(pi) x**(1/4))`` (x > 0) or the two amplitudes of ``sin``/``cos(zeta + pi/4)``
  (x < 0).
Domain edges follow torch: Y0/Y1 are -inf at 0 and NaN below; K0/K1 are inf at 0 and NaN
below; Ai is NaN at +-inf and 0 beyond x = 103.892; the spherical j0 is 0 at +-inf.
"""
from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.special as jss

from . import bessel_tables as _t
from .registry import defop

_2_PI = 2 / jnp.pi


def _cheb(coef, t):
    """Clenshaw's sum of ``coef[k] T_k(t)``."""
    b1 = b2 = jnp.zeros_like(t)
    for c in coef[:0:-1]:
        b1, b2 = 2 * t * b1 - b2 + c, b1
    return t * b1 - b2 + coef[0]


def _small(coef, s, top):
    return _cheb(coef, s * (2 / top) - 1)    # s in [0, top] onto [-1, 1]


def _hankel(x, nu, second):
    """J_nu (``second=False``) or Y_nu for x > 8, from P and Q in u = 8/x."""
    big = jnp.maximum(x, 8.0)
    u = 8.0 / big
    p = _cheb(getattr(_t, f"P{nu}_LARGE"), 2 * u - 1)
    q = _cheb(getattr(_t, f"Q{nu}_LARGE"), 2 * u - 1)
    chi = big - (2 * nu + 1) * jnp.pi / 4
    c, s = jnp.cos(chi), jnp.sin(chi)
    amp = jnp.sqrt(_2_PI / big)
    return amp * (p * s + q * c) if second else amp * (p * c - q * s)


def _j0(x):
    a = jnp.abs(x)
    small = _small(_t.J0_SMALL, jnp.minimum(a, 8.0) ** 2, 64.0)
    return jnp.where(a <= 8, small, _hankel(a, 0, False))


def _j1(x):
    a = jnp.abs(x)
    small = x * _small(_t.J1_SMALL, jnp.minimum(a, 8.0) ** 2, 64.0)
    return jnp.where(a <= 8, small, jnp.sign(x) * _hankel(a, 1, False))


def _y_edges(x, value):
    return jnp.where(x == 0, -jnp.inf, jnp.where(x < 0, jnp.nan, value))


def _y0(x):
    a = jnp.clip(x, 1e-300, 8.0)
    small = _small(_t.Y0_SMALL, a * a, 64.0) + _2_PI * jnp.log(a) * _j0(a)
    return _y_edges(x, jnp.where(x <= 8, small, _hankel(x, 0, True)))


def _y1(x):
    a = jnp.clip(x, 1e-300, 8.0)
    small = a * _small(_t.Y1_SMALL, a * a, 64.0) + _2_PI * (_j1(a) * jnp.log(a) - 1 / a)
    return _y_edges(x, jnp.where(x <= 8, small, _hankel(x, 1, True)))


def _k_scaled(x, nu):
    """``K_nu(x) e^x`` for x >= 0 (inf at 0, NaN below, as torch)."""
    a = jnp.clip(x, 1e-300, 2.0)
    if nu == 0:
        small = _small(_t.K0_SMALL, a * a, 4.0) - jnp.log(a / 2) * jss.i0(a)
    else:
        small = a * _small(_t.K1_SMALL, a * a, 4.0) + jnp.log(a / 2) * jss.i1(a) + 1 / a
    big = jnp.maximum(x, 2.0)
    large = _cheb(getattr(_t, f"K{nu}_LARGE"), 4 / big - 1) / jnp.sqrt(big)
    out = jnp.where(x <= 2, small * jnp.exp(a), large)
    return jnp.where(x == 0, jnp.inf, jnp.where(x < 0, jnp.nan, out))


def _k(x, nu):
    return _k_scaled(x, nu) * jnp.exp(-jnp.where(x > 0, x, 0.0))


def _airy_ai(x):
    sw, umax = _t.AIRY_SWITCH, _t.AIRY_UMAX
    mid = _cheb(_t.AI_MID, jnp.clip(x, -sw, sw) / sw)
    a = jnp.maximum(jnp.abs(x), sw)
    zeta = 2.0 / 3.0 * a * jnp.sqrt(a)
    t = 2 / (zeta * umax) - 1                     # u = 1/zeta in (0, umax] onto [-1, 1]
    pos = _cheb(_t.AI_POS, t) * jnp.exp(-zeta) / (2 * jnp.sqrt(jnp.pi) * a ** 0.25)
    th = zeta + jnp.pi / 4
    neg = (jnp.sin(th) * _cheb(_t.AI_NEG_F, t) - jnp.cos(th) * _cheb(_t.AI_NEG_G, t)) / (jnp.sqrt(jnp.pi) * a ** 0.25)
    out = jnp.where(x > sw, pos, jnp.where(x < -sw, neg, mid))
    return jnp.where(jnp.isinf(x), jnp.nan, jnp.where(x > 103.892, 0.0, out))


def _spherical_j0(x):
    s = jnp.where(jnp.abs(x) < 0.5, 1.0, x)
    x2 = x * x
    series = 1 + x2 * (-1 / 6 + x2 * (1 / 120 + x2 * (-1 / 5040 + x2 * (1 / 362880 + x2 * (-1 / 39916800)))))
    return jnp.where(jnp.isinf(x), 0.0, jnp.where(jnp.abs(x) < 0.5, series, jnp.sin(s) / s))


def _in_float64(fn):
    """Evaluate ``fn`` in float64 (the tables hold double-precision coefficients) and round once
    to the result dtype; ``x`` may be an integer tensor (torch computes those in the default float)."""
    def f(x, dtype):
        return fn(x.astype(jnp.float64)).astype(dtype)
    return f


_FUNCS = {
    "special_airy_ai": _airy_ai,
    "special_bessel_j0": _j0,
    "special_bessel_j1": _j1,
    "special_bessel_y0": _y0,
    "special_bessel_y1": _y1,
    "special_modified_bessel_i0": jss.i0,
    "special_modified_bessel_i1": jss.i1,
    "special_modified_bessel_k0": lambda x: _k(x, 0),
    "special_modified_bessel_k1": lambda x: _k(x, 1),
    "special_scaled_modified_bessel_k0": lambda x: _k_scaled(x, 0),
    "special_scaled_modified_bessel_k1": lambda x: _k_scaled(x, 1),
    "special_spherical_bessel_j0": _spherical_j0,
}
for _name, _fn in _FUNCS.items():
    defop(_name, _in_float64(_fn))
