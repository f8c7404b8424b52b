"""Special-function and scan ops: gamma family, modified Bessel functions, normal-distribution
functions, ``nextafter``/``frexp``, and the cumulative ``logcumsumexp``/``cummax``/``cummin``.

Each is one row of the op table (DESIGN 2.1): its backward is the VJP of the JAX function
(``jax.scipy.special`` supplies the derivatives: digamma for lgamma, polygamma(n+1) for
polygamma(n), i1 for i0...). Callers (``_api/special_math.py``) decide the computation dtype
and pass it as the static ``dtype``; integer inputs are cast inside the op.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import jax.scipy.special as jss
from functools import partial

from .elementwise import opmath
from .registry import defop


def _u(fn):
    def f(x, dtype=None):
        return fn(x if dtype is None else x.astype(dtype))
    return f


# NOTE [polygamma below zero]: JAX's polygamma(n, x) is a Hurwitz zeta, wrong for x < 0 (at
# x = -8.99 it gives -53098 for trigamma, where the function is 7516.7); torch's is right there.
# Below zero we use the reflection formula
#   psi_n(x) = (-1)^(n+1) * ((-1)^n * pi * d^n/dx^n cot(pi x) - psi_n(1 - x)),
# whose derivative JAX's AD gets right. digamma's own value is right below zero, but its JAX
# derivative is that trigamma, so digamma takes ours as its derivative.
def _cot_derivative(x, n):
    f = lambda v: 1 / jnp.tan(jnp.pi * v)   # noqa: E731
    for _ in range(n):
        f = jax.grad(f)
    return jnp.vectorize(f)(x)


def _polygamma_n(x, n):
    """polygamma(n, x) for n >= 1, right on the whole real line. float32 is computed in float64:
    the reflection cancels digits (torch's float32 kernel is within 1e-4 of the float64 value)."""
    w = x.astype(jnp.float64) if x.dtype == jnp.float32 else x
    neg = w < 0
    pos = jss.polygamma(jnp.asarray(n, jnp.int32), jnp.where(neg, 1 - w, w))
    refl = (-1) ** (n + 1) * ((-1) ** n * jnp.pi * _cot_derivative(jnp.where(neg, w, 0.5), n) - pos)
    return jnp.where(neg, refl, pos).astype(x.dtype)


@jax.custom_jvp
def _digamma(x):
    return jnp.where(x == 0, jnp.copysign(jnp.inf, -x).astype(x.dtype), jss.digamma(x))   # torch: -inf at +0, +inf at -0 (JAX: NaN)


@_digamma.defjvp
def _digamma_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _digamma(x), _polygamma_n(x, 1) * t


# NOTE [erfcx underflow]: jax.scipy.special.erfcx switches to its asymptotic series only where
# exp(x^2) would overflow (x > 26.64 in float64, 9.4 in float32); just below, erfc(x) is a
# subnormal that XLA's CPU flushes to zero, so exp(x^2) * erfc(x) gave 0 for x in (26.55, 26.64)
# (float64) and (9.19, 9.4) (float32) where torch gives 0.0212 / 0.0606. The series (with its
# terms' sizes at the switch point well under the dtype's epsilon) takes over earlier here.
_ERFCX_SWITCH = {jnp.dtype(jnp.float64): (26.0, 9), jnp.dtype(jnp.float32): (9.0, 5)}


def _erfcx(x):
    if x.dtype not in _ERFCX_SWITCH:            # half precision: computed in float32
        return _erfcx(x.astype(jnp.float32)).astype(x.dtype) if jnp.issubdtype(x.dtype, jnp.floating) else jss.erfcx(x)
    switch, nterms = _ERFCX_SWITCH[x.dtype]
    large = x > switch
    safe = jnp.where(large, 1.0, x).astype(x.dtype)   # no overflow (nor its NaN gradient) off the branch
    direct = jnp.exp(safe * safe) * jss.erfc(safe)
    big = jnp.where(large, x, switch + 1.0).astype(x.dtype)
    inv2 = 1.0 / (2.0 * big * big)
    term, series = jnp.ones_like(big), jnp.ones_like(big)
    for k in range(1, nterms + 1):            # sum_k (-1)^k (2k-1)!! / (2 x^2)^k
        term = -term * (2 * k - 1) * inv2
        series = series + term
    return jnp.where(large, series / (big * jnp.sqrt(jnp.pi).astype(x.dtype)), direct)


_UNARY = [
    # name, jax fn, torch grad_fn
    ("lgamma", jss.gammaln, "LgammaBackward0"),
    ("digamma", _digamma, "DigammaBackward0"),
    ("erfc", jss.erfc, "ErfcBackward0"),
    ("i0e", jss.i0e, "SpecialI0EBackward0"),
    ("i1", jss.i1, "SpecialI1Backward0"),
    ("i1e", jss.i1e, "SpecialI1EBackward0"),
    ("log_ndtr", jss.log_ndtr, "SpecialLogNdtrBackward0"),
    ("erfcx", _erfcx, "SpecialErfcxBackward0"),   # NOTE [erfcx underflow]
]
for _name, _fn, _gf in _UNARY:
    defop(_name, _u(_fn), grad_fn=_gf, saves=("self",))


@jax.custom_jvp
def _i0(x):
    return jss.i0(x)


@_i0.defjvp
def _i0_jvp(primals, tangents):
    # torch's formula, i1(x): JAX's own derivative of i0 (through |x| and i0e) is 1 at x = 0
    (x,), (t,) = primals, tangents
    return _i0(x), jss.i1(x) * t


@jax.custom_jvp
def _ndtri(x):
    return jss.ndtri(x)


@_ndtri.defjvp
def _ndtri_jvp(primals, tangents):
    # torch's formula sqrt(2 pi) exp(ndtri(x)^2 / 2): inf at 0 and 1 (JAX's derivative gave 0 there)
    (x,), (t,) = primals, tangents
    y = _ndtri(x)
    return y, (t * (np.sqrt(2 * np.pi) * jnp.exp(y * y / 2))).astype(t.dtype)


defop("ndtri", _u(_ndtri), grad_fn="SpecialNdtriBackward0", saves=("self",))
defop("i0", _u(_i0), grad_fn="I0Backward0", saves=("self",))


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def _logit_fn(x, eps):
    xc = x if eps is None else jnp.clip(x, eps, 1 - eps)
    return jnp.log(xc / (1 - xc))


@_logit_fn.defjvp
def _logit_jvp(eps, primals, tangents):
    # torch's LogitBackward0: grad / (x (1 - x)) (inf at 0 and 1), NaN outside [0, 1] without
    # eps; with eps, 0 outside [eps, 1 - eps]. The chain rule through log(x / (1 - x)) gave NaN
    # at 0 and 1 and finite values outside [0, 1].
    (x,), (t,) = primals, tangents
    d = 1 / (x * (1 - x))          # a coefficient on t: a constant put in a tangent's place is dropped by the VJP
    if eps is None:
        d = jnp.where((x < 0) | (x > 1), jnp.nan, d)
    else:
        d = jnp.where((x < eps) | (x > 1 - eps), 0, d)
    return _logit_fn(x, eps), (t * d).astype(t.dtype)


def _logit(x, eps=None, dtype=None):
    return _logit_fn(x if dtype is None else x.astype(dtype), eps)


defop("logit", _logit, grad_fn="LogitBackward0", saves=("self",))


def _polygamma(x, n, dtype=None):
    x = x if dtype is None else x.astype(dtype)
    return _digamma(x) if n == 0 else _polygamma_n(x, n)   # NOTE [polygamma below zero]


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


@jax.custom_jvp
def _nextafter_fn(a, b):
    return jnp.nextafter(a, b)


@_nextafter_fn.defjvp
def _nextafter_jvp(primals, tangents):
    # torch's gradient: 1 for self, 0 for other (the step is treated as a constant); self's
    # tangent broadcast to the result's shape (other may broadcast self up)
    out = _nextafter_fn(*primals)
    return out, jnp.broadcast_to(tangents[0], out.shape)


def _nextafter(a, b, dtype):
    return _nextafter_fn(a.astype(dtype), b.astype(dtype))


defop("nextafter", _nextafter, args=("self", "other"), grad_fn="NextafterBackward0")
def _frexp(x):
    """``jnp.frexp`` with subnormal inputs normalised as torch does (mantissa in [0.5, 1)):
    JAX's rescales them by a multiplication that XLA flushes to zero, giving 0.5 and the
    minimum exponent. A subnormal's fraction bits are shifted up to the leading one here."""
    m, e = jnp.frexp(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return m, e
    fi = jnp.finfo(x.dtype)
    nbits, nmant, bias = fi.bits, fi.nmant, fi.maxexp - 1
    udt = {16: jnp.uint16, 32: jnp.uint32, 64: jnp.uint64}[nbits]
    bits = jax.lax.bitcast_convert_type(x, udt)
    mask = udt((1 << nmant) - 1)
    frac = bits & mask
    sub = ((bits >> udt(nmant)) & udt((1 << (nbits - 1 - nmant)) - 1) == 0) & (frac != 0)
    lead = (nbits - 1) - jax.lax.clz(frac).astype(jnp.int32)          # position of the leading one
    shift = jnp.clip(nmant - lead, 0, nmant).astype(udt)
    mbits = (bits & udt(1 << (nbits - 1))) | udt((bias - 1) << nmant) | ((frac << shift) & mask)
    m_sub = jax.lax.bitcast_convert_type(mbits, x.dtype)
    return jnp.where(sub, m_sub, m), jnp.where(sub, lead + 2 - bias - nmant, e).astype(e.dtype)


@jax.custom_jvp
def _frexp_fn(x):
    return _frexp(x)


@_frexp_fn.defjvp
def _frexp_jvp(primals, tangents):
    # torch's gradient of the mantissa: grad / 2**exponent, the power taken in float32 (torch's
    # exp2 of the int32 exponent), so it is inf for exponents below -149 even for float64
    (x,), (t,) = primals, tangents
    m, e = _frexp(x)
    return (m, e), ((t / jnp.exp2(e.astype(jnp.float32))).astype(t.dtype), np.zeros(e.shape, jax.dtypes.float0))


defop("frexp", lambda x: _frexp_fn(x) if jnp.issubdtype(x.dtype, jnp.floating) else tuple(jnp.frexp(x)), grad_fn="FrexpBackward0", n_out=2, n_diff=1, saves=("self",))   # mantissa, int32 exponent


# NOTE [logcumsumexp float32 gradient]: the backward is JAX's derivative of its scan. torch's
# float32 backward (reversed log-cum-sum-exps of log|grad| - result, TF's formula) differs from it
# by up to ~5e-4 on inputs with a large spread, and is the one further from the float64 gradient
# (measured: 2.5e-4 against 6e-7 at spread 1e3), so this keeps JAX's; tests/ops/test_composite_more.py.
def _logcumsumexp(x, dim):
    if x.ndim == 0:   # torch takes a 0-d input (dim 0 or -1): itself; XLA's scan needs an axis
        return jax.lax.cumlogsumexp(x.reshape(1), axis=0).reshape(())
    return jax.lax.cumlogsumexp(x, axis=dim)


def _scan_as_torch(fn):
    """``fn`` scanning in torch's CPU accumulation type and rounding once: float16/bfloat16 in
    float32 (opmath), float32 in float64 (NOTE [cumulative scans in a wider type] in
    reduction.py: XLA's float32 scan was a float32 step off torch in a third of the outputs)."""
    low = opmath(fn)

    @functools.wraps(fn)   # (the op keeps its defining module, as opmath's)
    def f(x, *args, **kw):
        if x.dtype == jnp.float32:
            return fn(x.astype(jnp.float64), *args, **kw).astype(jnp.float32)
        return low(x, *args, **kw)
    return f


defop("logcumsumexp", _scan_as_torch(_logcumsumexp), grad_fn="LogcumsumexpBackward0", saves=("self", "result"))


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
    # torch has no derivative for ``input`` (the shape parameter): NOTE [not-implemented derivatives]
    a = jax.lax.stop_gradient(a)
    # evaluated in float64 and rounded once: JAX's float32 series drifts ~1.5e-5 from the exact
    # value for a, x ~ 50 where torch's float32 kernel stays within 1e-5 (test_igamma_common)
    a64, x64 = a.astype(jnp.float64), x.astype(jnp.float64)
    r = jax.scipy.special.gammaincc(a64, x64) if upper else jax.scipy.special.gammainc(a64, x64)
    # torch's edge rules, checked in this order (JAX gives NaN for most of them): a < 0 or x < 0
    # is NaN; a == 0 is the limit 1 (P) / 0 (Q) for x > 0 else NaN; x == 0 is 0 (P) / 1 (Q);
    # a = inf is NaN with x = inf else 0 (P) / 1 (Q); x = inf is 1 (P) / 0 (Q)
    lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)
    nan = jnp.nan
    r = jnp.where(jnp.isinf(x64), hi, r)
    r = jnp.where(jnp.isinf(a64), jnp.where(jnp.isinf(x64), nan, lo), r)
    r = jnp.where(x64 == 0, lo, r)
    r = jnp.where(a64 == 0, jnp.where(x64 > 0, hi, nan), r)
    r = jnp.where((a64 < 0) | (x64 < 0), nan, r)
    return r.astype(a.dtype)


defop("igamma", lambda a, x, dtype: _igamma(a, x, dtype, False), args=("self", "other"), grad_fn="IgammaBackward0",
      saves=("self", "other"), no_derivative={"self": "igamma: input"}, no_forward_ad="igamma")
defop("igammac", lambda a, x, dtype: _igamma(a, x, dtype, True), args=("self", "other"), grad_fn="IgammacBackward0",
      saves=("self", "other"), no_derivative={"self": "igammac: input"}, no_forward_ad="igammac")


def _zeta(x, q, dtype):
    """Hurwitz zeta with torch's (Cephes') domain rules, which JAX's series does not follow for
    q <= 0: a pole (inf) at x == 1 and at integer q <= 0, NaN for x < 1 and for a fractional
    power (x) of a negative base (q < 0). Differentiable in ``q`` only, by torch's formula
    ``-x * zeta(x + 1, q)`` (also where the masks above pick a constant)."""
    x, q = jnp.asarray(x, dtype), jnp.asarray(q, dtype)
    return _zeta_q(jax.lax.stop_gradient(x), q)


@jax.custom_jvp
def _zeta_q(x, q):
    return _zeta_value(x, q)


@_zeta_q.defjvp
def _zeta_q_jvp(primals, tangents):
    x, q = primals
    return _zeta_value(x, q), -x * _zeta_value(x + 1, q) * tangents[1]


def _zeta_value(x, q):
    inf, nan = jnp.array(jnp.inf, x.dtype), jnp.array(jnp.nan, x.dtype)
    out = jss.zeta(x, q)
    out = jnp.where((q < 0) & (x != jnp.floor(x)), nan, out)
    out = jnp.where(((q <= 0) & (q == jnp.floor(q))) | (x == 1), inf, out)
    return jnp.where(x < 1, nan, out)


defop("zeta", _zeta, args=("self", "other"), grad_fn="SpecialZetaBackward0", saves=("self", "other"),
      no_derivative={"self": "zeta"}, no_forward_ad="special_zeta")


# NOTE [xlogy at x = 0]: torch defines xlogy(0, y) = 0 (NaN only for a NaN y) and, from
# derivatives.yaml, d/dx = log(y) except 0 where x == 0 and y <= 0 (the derivative along x = 0,
# pytorch issue 80770), d/dy = x / y (NaN at (0, 0)). xlog1py is the same with log1p and a pole
# at y = -1. A Python-number y follows torch's scalar overload: d/dx is 0 where x == 0 unless
# y > pole (so also for a NaN number). JAX's derivative of the masked product differs at all
# of these points, hence the custom JVP (linear in the tangents: it transposes to torch's VJP).
def _xlog(log, shift):
    @partial(jax.custom_jvp, nondiff_argnums=(2,))
    def f(x, y, scalar_other):
        value = jnp.where(x == 0, jnp.zeros_like(x * y), x * log(y))
        return jnp.where(jnp.isnan(y), y, value).astype(value.dtype)

    @f.defjvp
    def f_jvp(scalar_other, primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        at_pole = ~(y > -shift) if scalar_other else y <= -shift
        dx = jnp.where((x == 0) & at_pole, 0, log(y))
        return f(x, y, scalar_other), tx * dx + ty * (x / (y + shift))

    def op(x, y, dtype, scalar_other=False):
        return f(jnp.asarray(x, dtype), jnp.asarray(y, dtype), scalar_other)
    return op


for _name, _log, _shift, _gf in (("xlogy", jnp.log, 0, "XlogyBackward"),
                                 ("xlog1py", jnp.log1p, 1, "SpecialXlog1PyBackward")):
    _fn = _xlog(_log, _shift)
    # torch names the node by overload: 0 two tensors, 1 a number self, 2 a number other
    defop(_name, _fn, args=("self", "other"), grad_fn=_gf + "0", saves=("self", "other"))
    defop(_name + "_scalar_self", _fn, args=("self", "other"), grad_fn=_gf + "1", saves=("other",),
          no_edge=("self",))
    defop(_name + "_scalar_other", lambda x, y, dtype, _fn=_fn: _fn(x, y, dtype, True), args=("self", "other"),
          grad_fn=_gf + "2", saves=("self",), no_edge=("other",))
