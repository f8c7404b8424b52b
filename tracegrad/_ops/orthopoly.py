"""Orthogonal polynomials of ``torch.special`` evaluated at ``(x, n)``: Chebyshev T/U/V/W (and
their shifted forms on [0, 1]), physicists' and probabilists' Hermite, Laguerre, Legendre. No
gradient, as torch. Each follows torch's kernel case by case, so edge values agree:

* ``n`` is truncated to an integer (torch's ``static_cast<int64_t>``); a negative ``n`` gives 0,
  and so do NaN, infinite and out-of-int64 ``n`` (the conversion's result there is negative).
* Values fixed at the ends of the interval (``T_n(-1) = (-1)^n``, ``U_n(1) = n + 1``...).
* Chebyshev polynomials inside (-1, 1) and above a small degree take the trigonometric closed
  form (``T_n(x) = cos(n acos x)``); the other cases the three-term recurrence, run ``n - 1``
  times and stopped where the value turns NaN (it overflows for large ``n`` and |x| > 1: torch
  returns NaN there and so does this).
* Hermite polynomials are NaN beyond degree 128 (float32) / 512 (float64), as torch.
Differs from torch: for NaN ``x`` and ``n >= 2`` torch returns an uninitialised value (its loop
never runs); this returns NaN.

The recurrence is a ``lax.while_loop`` over all elements at once, as long as the largest degree
still being recurred (elements on closed forms do not loop).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from .registry import defop

_HERMITE_LIMIT = {jnp.dtype(jnp.float32): 128, jnp.dtype(jnp.float64): 512}


def _degree(n):
    """torch's ``static_cast<int64_t>(n)``, with the conversions C++ leaves undefined (NaN, inf,
    beyond int64) mapped to -1, which every polynomial sends to 0 as x86 does."""
    if jnp.issubdtype(n.dtype, jnp.integer):
        return n.astype(jnp.int64)
    ok = jnp.isfinite(n) & (jnp.abs(n) < 2.0 ** 63)
    return jnp.where(ok, jnp.trunc(jnp.where(ok, n, 0)), -1).astype(jnp.int64)


def _recur(q0, n, need, step, nan_stop):
    """Run ``r = step(i, p, q); p, q = q, r`` for i = 1 .. n - 1 where ``need``; return q."""
    iters = jnp.where(need, n - 1, 0)

    def active(i, q):
        a = i <= iters
        return a & ~jnp.isnan(q) if nan_stop else a

    def cond(state):
        i, _, q = state
        return jnp.any(active(i, q))

    def body(state):
        i, p, q = state
        on = active(i, q)
        r = step(i, p, q)
        return i + 1, jnp.where(on, q, p), jnp.where(on, r, q)

    _, _, q = jax.lax.while_loop(cond, body, (jnp.asarray(1, jnp.int64), jnp.ones_like(q0), q0))
    return q


def _signed(n, value):
    return jnp.where(n % 2 == 0, value, -value)


def _chebyshev(x, n, kind, shifted):
    """T/U/V/W at y = x (or 2x - 1 computed as torch's ``x + x - 1`` for the shifted forms)."""
    dt = x.dtype
    y = x + x - 1 if shifted else x
    nf = n.astype(dt)
    q0 = {"t": y, "u": y + y, "v": y + y - 1, "w": y + y + 1}[kind]
    one = jnp.ones_like(y)
    ends = {"t": jnp.where((y > 0) | (n % 2 == 0), one, -one),
            "u": jnp.where((y > 0) | (n % 2 == 0), nf + 1, -(nf + 1)),
            "v": jnp.where(y > 0, one, _signed(n, 2 * nf + 1)),
            "w": jnp.where(y > 0, 2 * nf + 1, _signed(n, one))}[kind]
    inside = jnp.abs(y) < 1
    a = jnp.arccos(jnp.where(inside, y, 0))
    if kind == "t":
        closed = jnp.cos(nf * a)
    elif kind == "u":
        closed = jnp.where(jnp.sin(a) != 0, jnp.sin((nf + 1) * a) / jnp.sin(a), (nf + 1) * jnp.cos((nf + 1) * a) / y)
    elif kind == "v":
        closed = jnp.where(jnp.sin(a / 2) != 1, jnp.cos((nf + 0.5) * a) / jnp.cos(a / 2), _signed(n, 2 * nf + 1))
    else:
        fallback = _signed(n, one) if shifted else jnp.where(y > 0, 2 * nf + 1, _signed(n, one))
        closed = jnp.where(jnp.cos(a / 2) != 1, jnp.sin((nf + 0.5) * a) / jnp.sin(a / 2), fallback)
    threshold = ({"t": 6, "u": 6, "v": 6, "w": 4} if shifted else {"t": 6, "u": 8, "v": 8, "w": 8})[kind]
    at_end = jnp.abs(y) == 1
    use_closed = ~at_end & (n > threshold) & inside
    need = (n >= 2) & ~at_end & ~use_closed
    rec = _recur(q0, n, need, lambda i, p, q: (y + y) * q - p, nan_stop=True)
    out = jnp.where(n == 1, q0, jnp.where(n == 0, one, rec))
    out = jnp.where(use_closed, closed, out)
    return jnp.where(n < 0, 0, jnp.where(at_end, ends, out))


def _hermite(x, n, physicists):
    dt = x.dtype
    one = jnp.ones_like(x)
    q0 = x + x if physicists else x
    if physicists:
        step = lambda i, p, q: (x + x) * q - (2 * i).astype(dt) * p      # noqa: E731
    else:
        step = lambda i, p, q: x * q - i.astype(dt) * p                 # noqa: E731
    too_high = n > _HERMITE_LIMIT.get(jnp.dtype(dt), 1024)
    rec = _recur(q0, n, (n >= 2) & ~too_high, step, nan_stop=False)
    out = jnp.where(too_high, jnp.nan, rec)
    return jnp.where(n < 0, 0, jnp.where(n == 0, one, jnp.where(n == 1, q0, out)))


def _laguerre(x, n):
    dt = x.dtype
    one = jnp.ones_like(x)
    q0 = 1 - x

    def step(i, p, q):
        k = i.astype(dt)
        return (((k + k) + (1 - x)) * q - k * p) / (k + 1)
    rec = _recur(q0, n, (n >= 2) & (x != 0), step, nan_stop=True)
    out = jnp.where(n == 0, one, jnp.where(n == 1, q0, rec))
    return jnp.where(n < 0, 0, jnp.where(x == 0, one, out))


def _legendre(x, n):
    dt = x.dtype
    one = jnp.ones_like(x)

    def step(i, p, q):
        k = i.astype(dt)
        return ((k + k + 1) * x * q - k * p) / (k + 1)
    at_end = jnp.abs(x) == 1
    rec = _recur(x, n, (n >= 2) & ~at_end, step, nan_stop=True)
    out = jnp.where(n == 0, one, jnp.where(n == 1, x, rec))
    ends = jnp.where((x > 0) | (n % 2 == 0), one, -one)
    return jnp.where(n < 0, 0, jnp.where(at_end, ends, out))


_KINDS = {
    "chebyshev_polynomial_t": lambda x, n: _chebyshev(x, n, "t", False),
    "chebyshev_polynomial_u": lambda x, n: _chebyshev(x, n, "u", False),
    "chebyshev_polynomial_v": lambda x, n: _chebyshev(x, n, "v", False),
    "chebyshev_polynomial_w": lambda x, n: _chebyshev(x, n, "w", False),
    "shifted_chebyshev_polynomial_t": lambda x, n: _chebyshev(x, n, "t", True),
    "shifted_chebyshev_polynomial_u": lambda x, n: _chebyshev(x, n, "u", True),
    "shifted_chebyshev_polynomial_v": lambda x, n: _chebyshev(x, n, "v", True),
    "shifted_chebyshev_polynomial_w": lambda x, n: _chebyshev(x, n, "w", True),
    "hermite_polynomial_h": lambda x, n: _hermite(x, n, True),
    "hermite_polynomial_he": lambda x, n: _hermite(x, n, False),
    "laguerre_polynomial_l": _laguerre,
    "legendre_polynomial_p": _legendre,
}


def _op(poly):
    def f(x, n, dtype):
        # torch converts n to the result dtype before truncating it
        x, n = jnp.broadcast_arrays(x.astype(dtype), n.astype(dtype))
        return poly(x, _degree(n)).astype(dtype)
    return f


POLYNOMIALS = tuple(_KINDS)
for _name, _poly in _KINDS.items():
    defop("special_" + _name, _op(_poly), args=("x", "n"))
