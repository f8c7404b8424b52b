"""Elementwise ops: unary math, binary arithmetic, comparisons, where/clamp/lerp/addc*.

Binary ops take the computation dtype as the static ``dtype`` (torch's promotion is decided
by the caller, ``_api/promotion.py``: ``result_dtype``); casting happens inside the op so the VJP returns
gradients in each input's own dtype, as torch does.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from .registry import defop


def bool_as(x, dtype):
    """``x.astype(dtype)``, a bool array made 0/1 of ``dtype`` through uint8 when ``dtype`` is
    inexact. NOTE [bool casts]: XLA's algebraic simplifier rewrites ``convert(pred) * y`` (and
    ``/``) into ``select(pred, y, 0)``, dropping IEEE's ``0 * inf = nan``: ``mask * inf`` or
    ``mask / 0`` gave 0 where torch gives nan, in eager ops that cast inside (mul, div) and in
    compiled programs fusing ``mask.float() * x``. The uint8 step is not folded into that
    pattern (the values are the same)."""
    if x.dtype == jnp.bool_ and jnp.issubdtype(dtype, jnp.inexact):
        x = x.astype(jnp.uint8)
    return x.astype(dtype)


def _c(x, dtype):
    if getattr(x, "dtype", None) == jnp.bool_:
        return bool_as(jnp.asarray(x), dtype)
    return jnp.asarray(x, dtype=dtype)


def opmath(fn):
    """``fn(x, ...)`` computed in float32 for a float16/bfloat16 ``x`` and rounded once to its
    dtype, as torch's CPU activation kernels (and their backward) do in their opmath type: a
    composite (``x * sigmoid(x)``) evaluated in 16 bits rounds after each step, a bf16 step or
    more away from torch (test_nn's activations_bfloat16_half_cpu)."""
    @functools.wraps(fn)   # the op keeps its defining module (the op-table coverage reads it)
    def f(x, *args, **kw):
        if x.dtype in (jnp.float16, jnp.bfloat16):
            return fn(x.astype(jnp.float32), *args, **kw).astype(x.dtype)
        return fn(x, *args, **kw)
    return f


def _u(fn):
    def f(x, dtype=None):
        return fn(x if dtype is None else x.astype(dtype))
    return f


def _sign(x):
    # torch's sign is (0 < x) - (x < 0): 0 for NaN and +0 for -0 (jnp.sign keeps both)
    if x.dtype == jnp.bool_ or jnp.issubdtype(x.dtype, jnp.unsignedinteger):
        return jnp.sign(x)
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


def _sgn_complex(x):
    # x / |x| with the origin mapped to 0 by a where on a safe divisor, so the gradient there is
    # 0 (torch's) instead of NaN
    a = jnp.abs(x)
    zero = a == 0
    return jnp.where(zero, jnp.zeros_like(x), x / jnp.where(zero, jnp.ones_like(a), a).astype(x.dtype))


def _abs_complex(z):
    """|z| with the hypot rule torch follows: an infinite part makes it inf even when the other
    part is NaN (jnp.abs gave NaN for inf + nan*j)."""
    inf_part = jnp.isinf(z.real) | jnp.isinf(z.imag)
    return jnp.where(inf_part, jnp.inf, jnp.abs(z)).astype(jnp.abs(z).dtype)


@jax.custom_jvp
def _abs_real(x):
    return x * jnp.sign(x)


@_abs_real.defjvp
def _abs_real_jvp(primals, tangents):
    # torch's derivative, grad * sgn(x): 0 at +-0 and at NaN (JAX's sign gives NaN there)
    (x,), (t,) = primals, tangents
    return _abs_real(x), t * ((x > 0).astype(t.dtype) - (x < 0).astype(t.dtype))


# ---- unary -----------------------------------------------------------------------------
# NOTE [saved set]: ops saving "result" give vjp_result (result, grad) -> grad_input.
_UNARY = [
    # name, jax fn, grad_fn, saves, vjp_result
    ("abs", lambda x: _abs_complex(x) if jnp.iscomplexobj(x) else _abs_real(x), "AbsBackward0", ("self",), None),
    ("neg", jnp.negative, "NegBackward0", (), None),
    ("exp", jnp.exp, "ExpBackward0", ("result",), lambda y, g: g * y),
    ("exp2", jnp.exp2, "Exp2Backward0", ("result",), lambda y, g: g * y * jnp.log(jnp.asarray(2, y.dtype))),
    ("expm1", jnp.expm1, "Expm1Backward0", ("result",), lambda y, g: g * (y + 1)),
    ("log", jnp.log, "LogBackward0", ("self",), None),
    ("log2", jnp.log2, "Log2Backward0", ("self",), None),
    ("log10", jnp.log10, "Log10Backward0", ("self",), None),
    ("log1p", jnp.log1p, "Log1PBackward0", ("self",), None),
    ("sqrt", jnp.sqrt, "SqrtBackward0", ("result",), lambda y, g: g / (2 * y)),
    ("rsqrt", jax.lax.rsqrt, "RsqrtBackward0", ("result",), lambda y, g: -0.5 * g * y * y * y),
    ("sin", jnp.sin, "SinBackward0", ("self",), None),
    ("cos", jnp.cos, "CosBackward0", ("self",), None),
    ("tan", jnp.tan, "TanBackward0", ("result",), lambda y, g: g * (1 + y * y)),
    ("asin", jnp.arcsin, "AsinBackward0", ("self",), None),
    ("acos", jnp.arccos, "AcosBackward0", ("self",), None),
    ("atan", jnp.arctan, "AtanBackward0", ("self",), None),
    ("asinh", jnp.arcsinh, "AsinhBackward0", ("self",), None),
    ("acosh", jnp.arccosh, "AcoshBackward0", ("self",), None),
    ("atanh", jnp.arctanh, "AtanhBackward0", ("self",), None),
    ("sinh", jnp.sinh, "SinhBackward0", ("self",), None),
    ("cosh", jnp.cosh, "CoshBackward0", ("self",), None),
    # torch's formula, 1 - y * y (ATen's tanh_backward): its rounding is what optimizer
    # trajectories are compared against. Near |y| = 1 it cancels, and whether XLA fuses it into
    # an fma (the jitted eager backward) or not (a whole-function JAX transform) then moves the
    # result in the 4th digit: torch.func's Jacobian and backward()'s rows differ there
    # (the jacobians tutorial's strict xfail); (1 - y)(1 + y) would agree with itself but not
    # with torch's trajectories
    ("tanh", jnp.tanh, "TanhBackward0", ("result",), lambda y, g: g * (1 - y * y)),
    ("sigmoid", jax.nn.sigmoid, "SigmoidBackward0", ("result",), lambda y, g: g * y * (1 - y)),
    ("relu", jax.nn.relu, "ReluBackward0", ("result",), lambda y, g: jnp.where(y <= 0, 0, g).astype(g.dtype)),   # torch's mask: a NaN passes
    ("erf", jax.scipy.special.erf, "ErfBackward0", ("self",), None),
    ("erfinv", jax.scipy.special.erfinv, "ErfinvBackward0", ("self",), None),
    ("sign", _sign, "SignBackward0", (), None),
    ("floor", jnp.floor, "FloorBackward0", (), None),
    ("ceil", jnp.ceil, "CeilBackward0", (), None),
    ("round", jnp.round, "RoundBackward0", (), None),
    ("trunc", jnp.trunc, "TruncBackward0", (), None),
    ("frac", lambda x: x - jnp.trunc(x), "FracBackward0", (), None),
    ("reciprocal", jnp.reciprocal, "ReciprocalBackward0", ("result",), lambda y, g: -g * y * y),
    ("square", jnp.square, "PowBackward0", ("self",), None),
    ("logical_not", jnp.logical_not, None, (), None),
    ("bitwise_not", jnp.invert, None, (), None),
    ("isnan", jnp.isnan, None, (), None),
    ("isinf", jnp.isinf, None, (), None),
    ("isfinite", jnp.isfinite, None, (), None),
    ("signbit", jnp.signbit, None, (), None),
    ("silu", opmath(jax.nn.silu), "SiluBackward0", ("self",), None),
    ("mish", opmath(lambda x: x * jnp.tanh(jax.nn.softplus(x))), "MishBackward0", ("self",), None),
    # a real sgn is sign (0 for NaN, as torch: zero gradient); a complex one is x / |x|, 0 at 0,
    # differentiated by JAX (torch's sgn_backward: nonzero off the origin, 0 at it)
    ("sgn", lambda x: _sgn_complex(x) if jnp.iscomplexobj(x) else _sign(x), "SgnBackward0", ("self", "result"), None),
]
# ops that turn integer inputs into the default float dtype, as torch's "unary float" ops
FLOAT_UNARY = {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin",
               "cos", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sinh", "cosh", "tanh", "sigmoid", "erf",
               "erfinv", "reciprocal", "silu", "mish"}


def unary_kernel(name):
    """The name of torch's CPU kernel for the unary op ``name``, as its dtype refusals print it
    (``"floor_vml_cpu" not implemented for 'Bool'``): the rounding ops run vectorized (vml) kernels."""
    return f"{name}_vml_cpu" if name in ("floor", "ceil", "round", "trunc") else f"{name}_cpu"



def _result_jvp(fn, rule):
    """``fn`` whose derivative under JAX transforms (torch.func, jacobian, compile) is the
    op's ``vjp_result`` rule, the formula eager backward uses: for an elementwise op the
    Jacobian is diagonal, so the rule maps a tangent as it maps a cotangent. Without it JAX
    differentiates ``fn`` its own way (tanh: ``(1 + y)(1 - y)`` where torch computes
    ``1 - y * y``) and ``torch.func`` results differ from ``backward()``'s in the last bits."""
    f = jax.custom_jvp(fn)

    @f.defjvp
    def _jvp(primals, tangents):
        y = fn(*primals)
        return y, rule(y, tangents[0])
    return f


# The floating unary ops take a float16/bfloat16 input through float32 and round once
# (``opmath``), as torch's CPU kernels. Computed in 16 bits, XLA:CPU's result depends on the
# emitter: eager's per-op programs (the LLVM IR emitters, NOTE [eager compile options]) and a
# compiled program (the fusion emitters) rounded float16 rsqrt, log1p, tan, asinh, acosh and
# atanh differently in a third of the values (so compiled differed from eager), and most of
# these ops a float16 ulp away from torch in either.
_OPMATH_UNARY = FLOAT_UNARY - {"silu", "mish"}    # those two are opmath in the table already
for _name, _fn, _gf, _saves, _vr in _UNARY:
    if _name in _OPMATH_UNARY:
        _fn = opmath(_fn)
    defop(_name, _u(_fn if _vr is None else _result_jvp(_fn, _vr)), grad_fn=_gf, saves=_saves, vjp_result=_vr)


def _round_decimals(x, decimals):
    # torch: nearbyint(x * 10**d) / 10**d (half to even), for negative d x / 10**-d first
    if decimals >= 0:
        p = jnp.asarray(10.0 ** decimals, x.dtype)
        return jnp.round(x * p) / p
    p = jnp.asarray(10.0 ** -decimals, x.dtype)
    return jnp.round(x / p) * p


defop("round_decimals", _round_decimals, grad_fn="RoundBackward1")

# ---- binary arithmetic ------------------------------------------------------------------


def _acc_dtype(a, b, dtype):
    # torch computes a half/bfloat16 add in float and reduces a broadcast operand's gradient
    # (sum_to_size) with float accumulation; jnp's implicit broadcast would sum that gradient in
    # the low precision itself (a linear layer's bias grad under CPU autocast rounded differently).
    # Computing in float32 and rounding once gives torch's values and, through the casts' transposes,
    # its float32 gradient reduction. (With an ``alpha`` the low-precision values still differ from
    # torch's in the last bit; that path is left as it was.)
    if jnp.dtype(dtype) in (jnp.bfloat16, jnp.float16) and jnp.shape(a) != jnp.shape(b):
        return jnp.float32
    return dtype


def _add(a, b, alpha, dtype):
    a, b = _c(a, dtype), _c(b, dtype)
    if alpha is not None:
        return a + _c(alpha, dtype) * b
    acc = _acc_dtype(a, b, dtype)
    return (a.astype(acc) + b.astype(acc)).astype(dtype)


def _sub(a, b, alpha, dtype):
    a, b = _c(a, dtype), _c(b, dtype)
    if alpha is not None:
        return a - _c(alpha, dtype) * b
    acc = _acc_dtype(a, b, dtype)
    return (a.astype(acc) - b.astype(acc)).astype(dtype)


_LOWP = (jnp.float16, jnp.bfloat16)


def _lowp_scalar(b, dtype):
    """The one-element second operand of a float16/bfloat16 mul/div as torch's CPU kernels read
    it: a Python number (``x / 0.1``) or any one-element tensor is taken at float32 precision
    from its own dtype (TensorIterator's ``original_scalar_value<opmath_t>``), not first
    rounded to the 16-bit dtype: ``half(1e-5) * 1e5`` is 1.0 in torch, not inf (1e5 has no
    float16 value), and ``bf16 / 0.1`` divides by 0.1f, not by bf16(0.1) = 0.10009766.
    None where ``b`` is not such a scalar (nor the dtype a 16-bit float)."""
    if jnp.dtype(dtype) in _LOWP and jnp.size(b) == 1 and not jnp.iscomplexobj(b):
        return jnp.asarray(b).astype(jnp.float32)
    return None


def _mul(a, b, dtype):
    s = _lowp_scalar(b, dtype)
    if s is not None:
        return (_c(a, dtype).astype(jnp.float32) * s).astype(dtype)
    return _c(a, dtype) * _c(b, dtype)


# NOTE [16-bit mul backward]
# torch's MulBackward0 computes each gradient with its mul kernel, ``grad * other`` for self and
# ``grad * self`` for other, then sums it down to the input's shape in the result dtype and
# casts it to the input's dtype. With a float16/bfloat16 result that differs from ``jax.vjp``
# of ``_mul`` in two places: (1) the kernel reads a one-element *second* operand at float32
# precision (``_lowp_scalar``), so ``s * x`` with ``s`` a float32 0-d tensor (a CLIP
# ``logit_scale`` times bfloat16 features) gives ``x`` the gradient ``bf16(grad * s)``, while
# the forward rounded ``s`` to bfloat16 first (``s`` was the first operand) and so does
# jax.vjp's ``grad * bf16(s)``; (2) the gradient of a broadcast input is the sum of products
# each rounded to 16 bits, summed in float32 and rounded once (torch's reduced-float sum), not
# a 16-bit reduction of unrounded products. ``_mul_vjp_lowp`` is that formula; float32/float64
# results keep jax.vjp (one rounding either way). DivBackward0 likewise runs torch's div/mul
# kernels step by step, each rounded to 16 bits: ``grad / other`` for self and
# ``-grad * ((self / other) / other)`` for other (``_div_vjp_lowp``).
def round_to(dtype):
    """Float32 values rounded to the 16-bit ``dtype`` and back, one kernel step of torch's
    (a cast pair: ``lax.reduce_precision`` flushes float16's subnormals to zero)."""
    return lambda v: v.astype(dtype).astype(jnp.float32)


def _sum_to_lowp(x, shape, dtype):
    """``x`` (float32 values already rounded to ``dtype``) summed down to ``shape`` (leading
    dims, then the dims ``shape`` has as 1) in float32 and rounded once to ``dtype``, as torch's
    ``sum_to`` of a 16-bit gradient."""
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1)
    if axes:
        x = x.sum(axes).reshape(shape)
    return x.astype(dtype)


def _mul_vjp_lowp(static):
    """The backward rule of ``mul`` with a 16-bit float result (NOTE [16-bit mul backward]);
    None (``jax.vjp``) for every other result dtype."""
    dtype = static.get("dtype")
    if dtype is None or jnp.dtype(dtype) not in _LOWP:
        return None
    rnd = round_to(dtype)

    def rule(args, diff_pos, grad):
        g32 = grad.astype(dtype).astype(jnp.float32)
        out = []
        for p in diff_pos:
            x, other = args[p], args[1 - p]
            s = _lowp_scalar(other, dtype)
            o32 = s if s is not None else _c(other, dtype).astype(jnp.float32)
            g = _sum_to_lowp(rnd(g32 * o32), jnp.shape(x), dtype)
            out.append(g.astype(jnp.result_type(x)))
        return out
    return rule


def quotient(a, b):
    """``a / b`` correctly rounded, as torch divides (used by trunc division). XLA rewrites a division by a broadcast
    divisor (a Python number, a 0-d tensor, ``x / x.norm(dim=1, keepdim=True)``) into a
    multiplication by its reciprocal, one ulp off torch for about a third of the elements
    (``t / 3.3`` in float32 and float64; a trunc division then lands an integer below).
    The divisor broadcast behind an optimization barrier is a full array XLA cannot see
    through; a divisor of the result's shape needs nothing."""
    shape = jnp.broadcast_shapes(jnp.shape(a), jnp.shape(b))
    if jnp.shape(b) != shape and jnp.issubdtype(jnp.result_type(a, b), jnp.inexact):
        b = jax.lax.optimization_barrier(jnp.broadcast_to(b, shape))
    return a / b


def _floor_div_lowp(a, b, dtype):
    """torch's elementwise CPU floor division of two float16/bfloat16 tensors: its
    fmod-based floor division (``(a - fmod(a, b)) / b``, one down where the signs differ, to
    the nearer integer) with each step rounded to the 16-bit dtype, as its vectorized 16-bit
    arithmetic does; a float32 floor of the float32 quotient is a 16-bit step off for a few
    percent of random operands."""
    def r(x):
        return x.astype(dtype).astype(jnp.float32)
    a, b = a.astype(jnp.float32), b.astype(jnp.float32)
    mod = jnp.fmod(a, b)                       # exact: the remainder fits the inputs' dtype
    div = r(r(a - mod) / b)
    div = jnp.where((mod != 0) & ((b < 0) != (mod < 0)), r(div - 1), div)
    fl = jnp.floor(div)
    fl = jnp.where(div - fl > 0.5, fl + 1, fl)
    q = a / b
    fl = jnp.where(div == 0, jnp.copysign(jnp.zeros_like(q), q), fl)
    return jnp.where(b == 0, q, fl).astype(dtype)


def _div(a, b, dtype, rounding_mode=None):
    s = _lowp_scalar(b, dtype)
    a, b = _c(a, dtype), _c(b, dtype)
    if jnp.dtype(dtype) in _LOWP:
        # 16-bit floats divide in float32 and round once, as torch's CPU opmath kernels. Not
        # only torch's rounding: inside a compiled program a Python-number divisor is a
        # constant, and XLA rewrites a float16 ``x / c`` into ``x * (1 / c)`` with the
        # reciprocal rounded to float16 (``x / 3``: one float16 ulp off for about a third of
        # the values), which eager's jitted op with the divisor as an argument never does
        if s is None and rounding_mode == "trunc":
            # torch's elementwise (non-scalar) trunc kernel truncates the quotient already
            # rounded to the 16-bit dtype: bf16 1 / bf16(0.1) is 9.99 in float32, 10 in bf16
            q = (a.astype(jnp.float32) / b.astype(jnp.float32)).astype(dtype)
            return jnp.trunc(q)
        if s is None and rounding_mode == "floor":
            return _floor_div_lowp(a, b, dtype)
        b32 = b.astype(jnp.float32) if s is None else s
        if rounding_mode is None:
            # the exact float32 quotient, as torch's kernel divides: XLA's ``a * (1/b)`` for a
            # broadcast divisor is an ulp off, which rounding to 16 bits turns into a 16-bit
            # step for about 2% of ``bf16 / 0.3`` (the trade-off below is float32's)
            return quotient(a.astype(jnp.float32), b32).astype(dtype)
        return _div(a.astype(jnp.float32), b32, jnp.float32, rounding_mode).astype(dtype)
    if rounding_mode is None:
        # true division keeps XLA's ``a * (1/b)`` for a broadcast divisor (one ulp off torch for
        # some elements): the exact quotient changed the rounding of whole programs (a spectral-
        # norm GAN, a compiled conv step) past their parity tests' tolerances, and costs compiled
        # programs a materialized divisor; a trunc division, where that ulp is an integer step,
        # takes the exact one
        return a / b
    if rounding_mode == "trunc":
        # lax.div (integer division rounding toward zero) does not broadcast its operands
        q = quotient(a, b) if jnp.issubdtype(dtype, jnp.floating) else jax.lax.div(*jnp.broadcast_arrays(a, b))
        return jnp.trunc(q).astype(dtype)
    if jnp.issubdtype(dtype, jnp.floating):
        return _floor_div_float(a, b)
    return jnp.floor_divide(a, b)


def _floor_div_float(a, b):
    """torch's float floor division (``div_floor_floating``): the fmod-based quotient, one down
    where the remainder's sign differs from the divisor's, rounded to the nearer integer; a zero
    quotient takes the sign of ``a / b`` and a zero divisor gives ``a / b``. jnp.floor_divide does
    the same steps but returns +0.0 for a negative zero quotient (``-0.0 // 1.0``, ``-0.5 // inf``
    are -0.0 in torch)."""
    a, b = jnp.broadcast_arrays(a, b)
    mod = jnp.fmod(a, b)
    div = (a - mod) / b
    div = jnp.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
    fl = jnp.floor(div)
    fl = jnp.where(div - fl > 0.5, fl + 1, fl)
    q = a / b
    fl = jnp.where(div == 0, jnp.copysign(jnp.zeros_like(q), q), fl)
    return jnp.where(b == 0, q, fl)


def _div_vjp_lowp(static):
    """The backward rule of ``div`` (true division) with a 16-bit float result, torch's
    DivBackward0 formulas with each kernel's rounding (NOTE [16-bit mul backward]); None
    (``jax.vjp``) for every other result dtype."""
    dtype = static.get("dtype")
    if dtype is None or jnp.dtype(dtype) not in _LOWP or static.get("rounding_mode") is not None:
        return None
    rnd = round_to(dtype)

    def rule(args, diff_pos, grad):
        a, b = args
        g32 = grad.astype(dtype).astype(jnp.float32)
        s = _lowp_scalar(b, dtype)     # a one-element divisor is read at float32 precision
        b32 = s if s is not None else _c(b, dtype).astype(jnp.float32)
        out = []
        for p in diff_pos:
            if p == 0:
                full = rnd(quotient(g32, b32))
            else:
                a32 = _c(a, dtype).astype(jnp.float32)
                full = -rnd(g32 * rnd(quotient(rnd(quotient(a32, b32)), b32)))
            out.append(_sum_to_lowp(full, jnp.shape(args[p]), dtype).astype(jnp.result_type(args[p])))
        return out
    return rule


defop("add", _add, args=("self", "other", "alpha"), grad_fn="AddBackward0")
defop("sub", _sub, args=("self", "other", "alpha"), grad_fn="SubBackward0")
# torch names the node by overload: RsubBackward0 for two tensors, RsubBackward1 for a scalar
defop("rsub", lambda a, b, alpha, dtype: _sub(b, a, alpha, dtype), args=("self", "other", "alpha"),
      grad_fn="RsubBackward1", no_edge=("other",))
defop("rsub_tensor", lambda a, b, alpha, dtype: _sub(b, a, alpha, dtype), args=("self", "other", "alpha"),
      grad_fn="RsubBackward0")
defop("mul", _mul, args=("self", "other"), grad_fn="MulBackward0", saves=("other", "self"),
      save_if={"other": "self", "self": "other"}, vjp_rule=_mul_vjp_lowp)
defop("div", _div, args=("self", "other"), grad_fn="DivBackward0", saves=("other", "self"),
      save_if={"self": "other"}, vjp_rule=_div_vjp_lowp)
# torch names the node by overload: an explicit ``rounding_mode`` (None included) is div's
# Tensor_mode/Scalar_mode overload, DivBackward2, which also shows ``_saved_rounding_mode``
defop("div_mode", _div, args=("self", "other"), grad_fn="DivBackward2", saves=("other", "self"),
      save_if={"self": "other"})
# scalar ``other``: Backward0 (saves nothing); tensor ``other``: Backward1
defop("remainder", lambda a, b, dtype: jnp.remainder(_c(a, dtype), _c(b, dtype)),
      args=("self", "other"), grad_fn="RemainderBackward0")
defop("remainder_tensor", lambda a, b, dtype: jnp.remainder(_c(a, dtype), _c(b, dtype)),
      args=("self", "other"), grad_fn="RemainderBackward1", saves=("other", "self"))
defop("fmod", lambda a, b, dtype: jnp.fmod(_c(a, dtype), _c(b, dtype)), args=("self", "other"),
      grad_fn="FmodBackward0")
defop("fmod_tensor", lambda a, b, dtype: jnp.fmod(_c(a, dtype), _c(b, dtype)), args=("self", "other"),
      grad_fn="FmodBackward1", saves=("other", "self"))
@jax.custom_jvp
def _atan2(a, b):
    return jnp.arctan2(a, b)


@_atan2.defjvp
def _atan2_jvp(primals, tangents):
    # torch zeroes the reciprocal where a^2 + b^2 == 0 (JAX's derivative is 0/0 = nan at 0, 0)
    a, b = primals
    da, db = tangents
    den = a * a + b * b
    recip = jnp.where(den == 0, 0, 1 / jnp.where(den == 0, 1, den))
    return _atan2(a, b), (b * da - a * db) * recip


def _copysign(a, b, dtype):
    a = _c(a, dtype)
    mag = a * jnp.sign(a)   # |a| with torch's zero gradient at a == 0 (JAX's abs has 1 there)
    return jnp.where(jnp.signbit(_c(b, dtype)), -mag, mag)   # -0.0 counts as negative, as torch


# other's gradient is zero (it only reaches the result through its sign bit), as torch. torch
# saves (self, result), the result carrying other's sign; the VJP here reads other itself.
defop("copysign", _copysign, args=("self", "other"), grad_fn="CopysignBackward0", saves=("self", "other"))
defop("copysign_scalar", _copysign, args=("self", "other"), grad_fn="CopysignBackward1", saves=("self",),
      no_edge=("other",))
defop("atan2", lambda a, b, dtype: _atan2(_c(a, dtype), _c(b, dtype)), args=("self", "other"),
      grad_fn="Atan2Backward0", saves=("other", "self"))
def _pow(a, b, dtype):
    # torch's gradient of x ** 0 is 0 everywhere (JAX's is nan at x == 0): route the base
    # away from 0 where the exponent is 0
    a, b = _c(a, dtype), _c(b, dtype)
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        return jnp.power(a, b)
    safe = jnp.where(b == 0, jnp.ones_like(a), a)
    out = jnp.power(safe, b)
    if jnp.iscomplexobj(a):
        # torch computes a complex base to the exponents 2, 3, 0.5, -1, -2 exactly as products,
        # sqrt and reciprocals (the general exp(b log a) leaves 1e-8 residues: (1+1j)**2)
        for e, f in ((2, lambda z: z * z), (3, lambda z: z * z * z), (0.5, jnp.sqrt), (-1, lambda z: 1 / z),
                     (-2, lambda z: 1 / (z * z))):
            # (b is cast to a's complex dtype); unused branches see 1 (no nan in their gradient)
            hit = b == e
            out = jnp.where(hit, f(jnp.where(hit, safe, jnp.ones_like(safe))), out)
    return jnp.where(b == 0, jnp.ones_like(a), out)


defop("pow", _pow, args=("self", "exponent"),
      grad_fn="PowBackward0", saves=("self",), no_edge=("exponent",))
@jax.custom_jvp
def _pow_tensor_inexact(a, b):
    return jnp.power(a, b)


@_pow_tensor_inexact.defjvp
def _pow_tensor_jvp(primals, tangents):
    # torch's masks: d/da is 0 where the exponent is 0, d/db is 0 where a == 0 and b >= 0
    # (JAX gives 0 * inf = nan at a == 0)
    a, b = primals
    da, db = tangents
    y = _pow_tensor_inexact(a, b)
    ga = jnp.where(b == 0, 0, b * jnp.power(a, b - 1))
    gb = jnp.where((a == 0) & (b >= 0), 0, y * jnp.log(a))
    return y, ga * da + gb * db


def _pow_tensor(a, b, dtype):
    a, b = _c(a, dtype), _c(b, dtype)
    if jnp.issubdtype(a.dtype, jnp.inexact):
        return _pow_tensor_inexact(a, b)
    return jnp.power(a, b)


defop("pow_tensor", _pow_tensor, args=("self", "exponent"),
      grad_fn="PowBackward1", saves=("exponent", "self", "result"))
# a scalar base takes the tensor-tensor masks too: d(0 ** b)/db is -inf for b < 0, as torch
# (JAX's own power rule gives inf * 0 = nan there)
defop("pow_scalar_base", _pow_tensor,
      args=("self", "exponent"), grad_fn="PowBackward2", saves=("exponent", "result"), no_edge=("self",))
def _max_min(pick, self_loses):
    """maximum/minimum with torch's derivative: half the gradient to each side on a tie, none to
    the losing side, and the whole gradient to BOTH sides where either is NaN (no comparison
    holds there; JAX's derivative gave NaN positions no gradient at all)."""
    @jax.custom_jvp
    def f(a, b):
        return pick(a, b)

    @f.defjvp
    def f_jvp(primals, tangents):
        (a, b), (da, db) = primals, tangents
        tie = a == b
        ca = jnp.where(tie, 0.5, jnp.where(self_loses(a, b), 0.0, 1.0)).astype(da.dtype)
        cb = jnp.where(tie, 0.5, jnp.where(self_loses(b, a), 0.0, 1.0)).astype(db.dtype)
        return f(a, b), ca * da + cb * db

    return lambda a, b, dtype: f(_c(a, dtype), _c(b, dtype))


defop("maximum", _max_min(jnp.maximum, jnp.less), args=("self", "other"),
      grad_fn="MaximumBackward0", saves=("other", "self"))
defop("minimum", _max_min(jnp.minimum, jnp.greater), args=("self", "other"),
      grad_fn="MinimumBackward0", saves=("other", "self"))
def _fmax_fmin(keep_self):
    """NaN-ignoring max/min written as a select, so that the derivative is torch's: ``self``
    takes the whole gradient where it is kept (ties, and where ``other`` is NaN), not half."""
    def f(a, b, dtype):
        a, b = _c(a, dtype), _c(b, dtype)
        return jnp.where(keep_self(a, b) | jnp.isnan(b), a, b)
    return f


defop("fmax", _fmax_fmin(lambda a, b: a >= b), args=("self", "other"), grad_fn="FmaxBackward0",
      saves=("other", "self"))
defop("fmin", _fmax_fmin(lambda a, b: a <= b), args=("self", "other"), grad_fn="FminBackward0",
      saves=("other", "self"))

# ---- comparisons and logical (no grad) --------------------------------------------------
for _name, _fn in [("eq", jnp.equal), ("ne", jnp.not_equal), ("lt", jnp.less), ("le", jnp.less_equal),
                   ("gt", jnp.greater), ("ge", jnp.greater_equal), ("logical_and", jnp.logical_and),
                   ("logical_or", jnp.logical_or), ("logical_xor", jnp.logical_xor)]:
    defop(_name, (lambda f: lambda a, b, dtype: f(_c(a, dtype), _c(b, dtype)))(_fn), args=("self", "other"))
for _name, _fn in [("bitwise_and", jnp.bitwise_and), ("bitwise_or", jnp.bitwise_or),
                   ("bitwise_xor", jnp.bitwise_xor)]:
    defop(_name, (lambda f: lambda a, b, dtype: f(_c(a, dtype), _c(b, dtype)))(_fn), args=("self", "other"))

defop("isclose", lambda a, b, rtol, atol, equal_nan, dtype: jnp.isclose(
    _c(a, dtype), _c(b, dtype), rtol=rtol, atol=atol, equal_nan=equal_nan), args=("self", "other"))

# ---- ternary ----------------------------------------------------------------------------


# NOTE [16-bit broadcast gradients]
# The gradient of an input a float16/bfloat16 op broadcast is summed over the broadcast dims.
# torch sums it in float32 (its reduced-float accumulate type) and rounds once (``sum_to``);
# ``jax.vjp`` of a broadcast written in 16 bits transposes to a 16-bit reduction, which XLA:CPU
# accumulates in 16 bits (a bfloat16 bias of 64 rows: gradients a few bfloat16 steps off). Ops
# that broadcast 16-bit inputs (``expand``, ``where``) therefore broadcast them as float32 --
# exact, the forward's values are unchanged -- and round the result: the transpose then sums
# in float32 and rounds once. add/sub already compute in float32 (``_acc_dtype``).
def _where(c, a, b, dtype):
    if jnp.dtype(dtype) in _LOWP:
        f32 = jnp.float32
        return jnp.where(c, _c(a, dtype).astype(f32), _c(b, dtype).astype(f32)).astype(dtype)
    return jnp.where(c, _c(a, dtype), _c(b, dtype))


defop("where", _where, args=("condition", "self", "other"), grad_fn="WhereBackward0",
      saves=("condition",))


def _clamp_value(x, lo, hi):
    # where, not maximum/minimum: a NaN bound gives NaN, as torch (lo != lo)
    if lo is not None:
        x = jnp.where((x < lo) | (lo != lo), lo, x)
    if hi is not None:
        x = jnp.where((x > hi) | (hi != hi), hi, x)
    return x


@jax.custom_jvp
def _clamp_fn(x, lo, hi):
    return _clamp_value(x, lo, hi)


@_clamp_fn.defjvp
def _clamp_jvp(primals, tangents):
    # torch's masks (clamp_backward_min_max): self takes the gradient where min <= x <= max
    # (so on the bounds, and never at a NaN); min where x < min < max; max where x > max or
    # max < min. A NaN anywhere fails the comparisons: no gradient to a NaN bound.
    (x, lo, hi), (dx, dlo, dhi) = primals, tangents
    keep = jnp.ones(x.shape, bool)
    if lo is not None:
        keep = keep & (x >= lo)
    if hi is not None:
        keep = keep & (x <= hi)
    t = jnp.where(keep, dx, 0)
    if lo is not None:
        t = t + jnp.where((x < lo) if hi is None else (x < lo) & (lo < hi), dlo, 0)
    if hi is not None:
        t = t + jnp.where((x > hi) if lo is None else (x > hi) | (hi < lo), dhi, 0)
    return _clamp_fn(x, lo, hi), t.astype(dx.dtype)


def _clamp(x, lo, hi, dtype):
    x = _c(x, dtype)
    lo = None if lo is None else _c(lo, dtype)
    hi = None if hi is None else _c(hi, dtype)
    if jnp.issubdtype(x.dtype, jnp.inexact):
        return _clamp_fn(x, lo, hi)
    return _clamp_value(x, lo, hi)


defop("clamp", _clamp, args=("self", "min", "max"), grad_fn="ClampBackward1", saves=("self",),
      no_edge=("min", "max"))
defop("clamp_tensor", _clamp, args=("self", "min", "max"), grad_fn="ClampBackward0",
      saves=("max", "min", "self"))
# a number bound is torch's Scalar argument: no next_functions slot (the tensor overloads have one)
defop("clamp_min", lambda x, lo, dtype: _clamp(x, lo, None, dtype), args=("self", "min"),
      grad_fn="ClampMinBackward0", saves=("self",), no_edge=("min",))
defop("clamp_min_tensor", lambda x, lo, dtype: _clamp(x, lo, None, dtype), args=("self", "min"),
      grad_fn="ClampMinBackward1", saves=("min", "self"))
defop("clamp_max", lambda x, hi, dtype: _clamp(x, None, hi, dtype), args=("self", "max"),
      grad_fn="ClampMaxBackward0", saves=("self",), no_edge=("max",))
defop("clamp_max_tensor", lambda x, hi, dtype: _clamp(x, None, hi, dtype), args=("self", "max"),
      grad_fn="ClampMaxBackward1", saves=("max", "self"))
def _lerp(a, b, w, dtype):
    # torch's formula: from the nearer end, so a weight near 1 gives ``end`` to the last bit
    # (one ulp of difference here is amplified by Muon's bfloat16 orthogonalization)
    # 16-bit floats compute in float32 and round once, as torch's opmath kernels: a scalar
    # weight beyond float16's range (1e5) is still a finite weight there
    wide = jnp.float32 if jnp.dtype(dtype) in (jnp.float16, jnp.bfloat16) else dtype
    a, b, w = _c(a, wide), _c(b, wide), _c(w, wide)
    d = b - a
    return jnp.where(jnp.abs(w) < 0.5, a + w * d, b - d * (1 - w)).astype(dtype)


defop("lerp", _lerp, args=("self", "end", "weight"), grad_fn="LerpBackward0", no_edge=("weight",))
defop("lerp_tensor", _lerp,
      args=("self", "end", "weight"), grad_fn="LerpBackward1", saves=("end", "self", "weight"))


def _wide16(fn):
    """``fn(s, t1, t2, v, dtype)`` computed in float32 and rounded once for a 16-bit ``dtype``,
    as torch's CPU opmath kernels: in 16 bits a compiled program (a constant ``value``, other
    fusion) rounded the steps otherwise than the eager op."""
    @functools.wraps(fn)
    def f(s, t1, t2, v, dtype):
        if jnp.dtype(dtype) in (jnp.float16, jnp.bfloat16):
            return fn(s, t1, t2, v, jnp.float32).astype(dtype)
        return fn(s, t1, t2, v, dtype)
    return f


defop("addcmul", _wide16(lambda s, t1, t2, v, dtype: _c(s, dtype) + _c(v, dtype) * _c(t1, dtype) * _c(t2, dtype)),
      args=("self", "tensor1", "tensor2", "value"), grad_fn="AddcmulBackward0",
      saves=("tensor1", "tensor2"), no_edge=("value",), save_if={"tensor1": "tensor2", "tensor2": "tensor1"})
defop("addcdiv", _wide16(lambda s, t1, t2, v, dtype: _c(s, dtype) + _c(v, dtype) * _c(t1, dtype) / _c(t2, dtype)),
      args=("self", "tensor1", "tensor2", "value"), grad_fn="AddcdivBackward0",
      saves=("tensor1", "tensor2"), no_edge=("value",), save_if={"tensor1": "tensor2"})   # as torch: tensor1 only for tensor2's grad

# ---- dtype and copies -------------------------------------------------------------------
def cast(x, dtype):
    """``x.astype(dtype)`` with torch's CPU results for a float that an integer dtype cannot hold.
    NOTE [float to int casts]: XLA saturates (inf -> INT_MAX, nan -> 0); torch's CPU kernel
    truncates to int64 (for int64) or int32 (for every narrower type, which then keeps the low
    bits: 300.0 -> uint8 44, -2.0 -> uint8 254), and an out-of-range or nan value becomes that
    integer type's minimum (so 0 for int8/int16/uint8). A complex value cast to a real or
    integer dtype keeps its real part (torch's rule; JAX's astype deprecates that cast); to bool
    it is ``!= 0``. Other casts are plain ``astype``."""
    dt = jnp.dtype(dtype)
    if jnp.iscomplexobj(x) and dt.kind not in "cb":
        x = jnp.real(x)
    if dt.kind not in "iu" or dt.itemsize > 4 and dt.kind == "u" or not jnp.issubdtype(x.dtype, jnp.floating):
        return bool_as(x, dt)   # NOTE [bool casts]
    wide = jnp.int64 if dt.itemsize == 8 else jnp.int32
    lim = 2.0 ** (63 if dt.itemsize == 8 else 31)
    t = jnp.trunc(x)
    bad = jnp.isnan(t) | (t >= lim) | (t < -lim)
    y = jnp.where(bad, jnp.iinfo(wide).min, jnp.where(bad, 0, t).astype(wide))
    return y.astype(dt)


defop("to_copy", cast, grad_fn="ToCopyBackward0")
defop("clone", lambda x: x, grad_fn="CloneBackward0")
# `copy_` writes src (broadcast, cast) over self: the result does not depend on self's value
defop("copy", lambda s, src: jnp.broadcast_to(cast(src, s.dtype), s.shape), args=("self", "src"),
      grad_fn="CopyBackwards")
# torch 2.13: fill_(number) is FillBackward2, fill_(0-d tensor) FillBackward3
defop("fill", lambda s, v: jnp.full(s.shape, v, s.dtype), args=("self", "value"), grad_fn="FillBackward2",
      no_edge=("value",))
defop("fill_tensor", lambda s, v: jnp.broadcast_to(jnp.asarray(v).astype(s.dtype), s.shape),
      args=("self", "value"), grad_fn="FillBackward3")
defop("zero", lambda s: jnp.zeros_like(s), grad_fn="ZeroBackward0")


# ---- complex -----------------------------------------------------------------------------------
# (conj itself is a view: _ops/shape.py, NOTE [conj views] in _api/complex_api.py)
defop("conj_physical", jnp.conj, grad_fn="ConjPhysicalBackward0")
def _angle(x):
    # torch: a real number's angle is pi below zero, else 0 (-0.0 included; jnp.angle, an atan2,
    # gives pi for -0.0), and NaN stays NaN; its gradient is 0 everywhere, as torch's. A complex
    # zero goes through atan2 as 1 so that the gradient there is 0, not atan2's 0/0 NaN
    # (the real case casts to x's dtype: JAX's angle of a 0-d float32/16 array is float64 under x64)
    zero = x == 0
    if not jnp.iscomplexobj(x):
        return jax.lax.stop_gradient(jnp.where(zero, 0, jnp.angle(x)).astype(x.dtype))
    r = jnp.angle(jnp.where(zero, jnp.ones_like(x), x))
    return jnp.where(zero, jnp.angle(jax.lax.stop_gradient(x)), r)


defop("angle", _angle, grad_fn="AngleBackward0", saves=("self",))
defop("complex", lambda re, im: jax.lax.complex(*jnp.broadcast_arrays(re, im)), args=("real", "imag"),
      grad_fn="ComplexBackward0")


# Ops torch records as nodes of their own that tracegrad first composed of others (their
# values and derivatives are those compositions', fused into one function): real
# float32/float64 operands only, the API layer composes the rest (NOTE in _api/composite.py).
def _deg2rad(x):
    return x * jnp.asarray(3.141592653589793 / 180, x.dtype)


def _rad2deg(x):
    return x * jnp.asarray(180 / 3.141592653589793, x.dtype)


def _sinc(x):
    x = x * jnp.asarray(3.141592653589793, x.dtype)
    zero = x == 0
    safe = jnp.where(zero, 1, x)
    return jnp.where(zero, 1, jnp.sin(safe) / safe)    # gradient 0 at 0, as torch's masked formula


def _hypot(x, y):
    return jnp.where(jnp.isinf(x) | jnp.isinf(y), jnp.inf, jnp.sqrt(x * x + y * y)).astype(x.dtype)


def _logaddexp_with(exp, log1p_scale):
    @jax.custom_jvp
    def f(x, y):
        # the larger operand plus log1p(base ** -|x - y|) (scaled); equal infinities give that infinity
        d = jnp.abs(x - y)
        d = jnp.where(jnp.isnan(d), 0, d)
        out = jnp.maximum(x, y) + jnp.log1p(exp(-d)) * jnp.asarray(log1p_scale, x.dtype)
        return jnp.where((x == y) & jnp.isinf(x), x, out)

    @f.defjvp
    def f_jvp(primals, tangents):
        # torch's derivative formulas, not the composition's: 1 / (1 + base ** (other - self))
        # (half each at a tie, where the max in the value would give all to one side; nan for
        # equal infinities and NaN operands, as torch)
        x, y = primals
        dx, dy = tangents
        return f(x, y), dx / (1 + exp(y - x)) + dy / (1 + exp(x - y))
    return f


defop("deg2rad", _deg2rad, grad_fn="Deg2RadBackward0")
defop("rad2deg", _rad2deg, grad_fn="Rad2DegBackward0")
defop("sinc", _sinc, grad_fn="SincBackward0", saves=("self",))
defop("hypot", _hypot, args=("self", "other"), grad_fn="HypotBackward0", saves=("other", "self", "result"))
defop("logaddexp", _logaddexp_with(jnp.exp, 1.0), args=("self", "other"), grad_fn="LogaddexpBackward0",
      saves=("other", "self"))
defop("logaddexp2", _logaddexp_with(jnp.exp2, 1 / 0.6931471805599453), args=("self", "other"),
      grad_fn="Logaddexp2Backward0", saves=("other", "self"))


def _nan_to_num(x, nan, posinf, neginf):
    # the replacements arrive as (weakly typed) scalars: cast to x's dtype, 1e40 overflowing a
    # float32 to inf as torch's cast does; the gradient is 0 at the replaced elements, as torch's
    out = jnp.where(jnp.isnan(x), nan, x)
    out = jnp.where(out == jnp.inf, posinf, out)
    return jnp.where(out == -jnp.inf, neginf, out).astype(x.dtype)


defop("nan_to_num", _nan_to_num, args=("self", "nan", "posinf", "neginf"), grad_fn="NanToNumBackward0",
      saves=("self",), no_edge=("nan", "posinf", "neginf"))
