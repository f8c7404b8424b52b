"""Special-function and scan ops: gamma family, modified Bessel functions, normal-distribution
functions, ``nextafter``/``frexp``, and the cumulative ``logcumsumexp``/``cummax``/``cummin``.

Each is one row of the op table (DESIGN 2.1): its backward is the VJP of the JAX function
(``jax.scipy.special`` supplies the derivatives: digamma for lgamma, polygamma(n+1) for
polygamma(n), i1 for i0...). Callers (``_api/special_math.py``) decide the computation dtype
and pass it as the static ``dtype``; integer inputs are cast inside the op.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.special as jss

from .registry import defop


def _u(fn):
    def f(x, dtype=None):
        return fn(x if dtype is None else x.astype(dtype))
    return f


_UNARY = [
    # name, jax fn, torch grad_fn
    ("lgamma", jss.gammaln, "LgammaBackward0"),
    ("digamma", lambda x: jnp.where(x == 0, jnp.copysign(jnp.inf, -x).astype(x.dtype), jss.digamma(x)),
     "DigammaBackward0"),   # torch: -inf at +0, +inf at -0 (JAX: NaN)
    ("erfc", jss.erfc, "ErfcBackward0"),
    ("i0", jss.i0, "I0Backward0"),
    ("i0e", jss.i0e, "SpecialI0EBackward0"),
    ("i1", jss.i1, "SpecialI1Backward0"),
    ("i1e", jss.i1e, "SpecialI1EBackward0"),
    ("ndtri", jss.ndtri, "SpecialNdtriBackward0"),
    ("log_ndtr", jss.log_ndtr, "SpecialLogNdtrBackward0"),
    ("erfcx", jss.erfcx, "SpecialErfcxBackward0"),
]
for _name, _fn, _gf in _UNARY:
    defop(_name, _u(_fn), grad_fn=_gf, saves=("self",))


def _polygamma(x, n, dtype=None):
    x = x if dtype is None else x.astype(dtype)
    return jss.polygamma(jnp.asarray(n, jnp.int32), x)


@jax.custom_jvp
def _entr(x):
    safe = jnp.where(x > 0, x, 1)
    return jnp.where(x > 0, -x * jnp.log(safe), jnp.where(x == 0, 0, jnp.where(x < 0, -jnp.inf, x))).astype(x.dtype)


@_entr.defjvp
def _entr_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _entr(x), -(1 + jnp.log(x)) * t        # torch's formula everywhere (NaN below 0, inf at 0)


defop("entr", _u(_entr), grad_fn="SpecialEntrBackward0", saves=("self",))
defop("polygamma", _polygamma, grad_fn="PolygammaBackward0", saves=("self",))


def _nextafter(a, b, dtype):
    return jnp.nextafter(a.astype(dtype), b.astype(dtype))


defop("nextafter", _nextafter, args=("self", "other"))                 # no gradient, as torch
defop("frexp", lambda x: tuple(jnp.frexp(x)), n_out=2)                 # mantissa, int32 exponent


def _logcumsumexp(x, dim):
    return jax.lax.cumlogsumexp(x, axis=dim)


defop("logcumsumexp", _logcumsumexp, grad_fn="LogcumsumexpBackward0", saves=("self", "result"))


def _cum_extreme(x, dim, take_later):
    """Running max/min with the index of the chosen element (the later one on ties, and a NaN
    sticks once seen, as torch's CPU kernel)."""
    idx = jax.lax.broadcasted_iota(jnp.int64, x.shape, dim)

    def combine(a, b):
        (va, ia), (vb, ib) = a, b
        pick_b = take_later(vb, va)
        if jnp.issubdtype(va.dtype, jnp.floating):
            pick_b = (pick_b | jnp.isnan(vb)) & ~(jnp.isnan(va) & ~jnp.isnan(vb))
        return jnp.where(pick_b, vb, va), jnp.where(pick_b, ib, ia)
    return jax.lax.associative_scan(combine, (x, idx), axis=dim)


defop("cummax", lambda x, dim: _cum_extreme(x, dim, lambda b, a: b >= a), grad_fn="CummaxBackward0",
      saves=("self",), n_out=2, n_diff=1)
defop("cummin", lambda x, dim: _cum_extreme(x, dim, lambda b, a: b <= a), grad_fn="CumminBackward0",
      saves=("self",), n_out=2, n_diff=1)


def _igamma(a, x, dtype, upper):
    a, x = jnp.asarray(a, dtype), jnp.asarray(x, dtype)
    # torch has no derivative for ``input`` (the shape parameter): only ``other`` gets one
    a = jax.lax.stop_gradient(a)
    return jax.scipy.special.gammaincc(a, x) if upper else jax.scipy.special.gammainc(a, x)


defop("igamma", lambda a, x, dtype: _igamma(a, x, dtype, False), args=("self", "other"), grad_fn="IgammaBackward0",
      saves=("self", "other"), no_edge=("self",))
defop("igammac", lambda a, x, dtype: _igamma(a, x, dtype, True), args=("self", "other"), grad_fn="IgammacBackward0",
      saves=("self", "other"), no_edge=("self",))
# Hurwitz zeta: no derivative in torch either
defop("zeta", lambda x, q, dtype: jss.zeta(jnp.asarray(x, dtype), jnp.asarray(q, dtype)), args=("self", "other"))
