"""Parity of elementwise ops with torch: unary math, binary arithmetic and reflected
operators, clamp/where/lerp/addc*, comparisons and logical ops (one line per case)."""
import numpy as np
import pytest

import tracegrad

from parity import A, B, C, D, F, H, I, check_parity, params

torch = pytest.importorskip("torch")

POS = dict(lo=0.1, hi=3.0)
UNIT = dict(lo=-0.9, hi=0.9)

UNARY = [
    C("abs", lambda t, x: t.abs(x), [F(3, 4)]),
    C("neg", lambda t, x: t.neg(x), [F(3, 4)]),
    C("neg_op", lambda t, x: -x, [F(3, 4)]),
    C("exp", lambda t, x: t.exp(x), [F(3, 4)]),
    C("exp2", lambda t, x: t.exp2(x), [F(3, 4)]),
    C("expm1", lambda t, x: t.expm1(x), [F(3, 4)]),
    C("log", lambda t, x: t.log(x), [F(3, 4, **POS)]),
    C("log2", lambda t, x: t.log2(x), [F(3, 4, **POS)]),
    C("log10", lambda t, x: t.log10(x), [F(3, 4, **POS)]),
    C("log1p", lambda t, x: t.log1p(x), [F(3, 4, **POS)]),
    C("sqrt", lambda t, x: t.sqrt(x), [F(3, 4, **POS)]),
    C("rsqrt", lambda t, x: t.rsqrt(x), [F(3, 4, **POS)]),
    C("sin", lambda t, x: t.sin(x), [F(3, 4)]),
    C("cos", lambda t, x: t.cos(x), [F(3, 4)]),
    C("tan", lambda t, x: t.tan(x), [F(3, 4, **UNIT)]),
    C("asin", lambda t, x: t.asin(x), [F(3, 4, **UNIT)]),
    C("acos", lambda t, x: t.acos(x), [F(3, 4, **UNIT)]),
    C("atan", lambda t, x: t.atan(x), [F(3, 4)]),
    C("arcsin", lambda t, x: t.arcsin(x), [F(3, 4, **UNIT)]),
    C("sinh", lambda t, x: t.sinh(x), [F(3, 4)]),
    C("cosh", lambda t, x: t.cosh(x), [F(3, 4)]),
    C("tanh", lambda t, x: t.tanh(x), [F(3, 4)]),
    C("sigmoid", lambda t, x: t.sigmoid(x), [F(3, 4)]),
    C("relu", lambda t, x: t.relu(x), [F(3, 4)]),
    C("erf", lambda t, x: t.erf(x), [F(3, 4)]),
    C("erfinv", lambda t, x: t.erfinv(x), [F(3, 4, **UNIT)], tol=(1e-4, 1e-4)),
    C("sign", lambda t, x: t.sign(x), [F(3, 4)]),
    C("sgn", lambda t, x: t.sgn(x), [F(3, 4)], grad=False),  # torch's grad is a ZeroTensor
    C("floor", lambda t, x: t.floor(x), [F(3, 4)]),
    C("ceil", lambda t, x: t.ceil(x), [F(3, 4)]),
    C("round", lambda t, x: t.round(x), [A([0.5, 1.5, 2.5, -0.5, 1.2])]),
    C("round_decimals", lambda t, x: t.round(x, decimals=2), [A([0.123, 1.5555, -2.456])], tol=(1e-5, 1e-6)),
    C("trunc", lambda t, x: t.trunc(x), [F(3, 4)]),
    C("frac", lambda t, x: t.frac(x), [F(3, 4)]),
    C("reciprocal", lambda t, x: t.reciprocal(x), [F(3, 4, **POS)]),
    C("square", lambda t, x: t.square(x), [F(3, 4)]),
    C("signbit", lambda t, x: t.signbit(x), [F(3, 4)]),
    C("isnan", lambda t, x: t.isnan(x), [A([1.0, np.nan, np.inf, -np.inf])]),
    C("isinf", lambda t, x: t.isinf(x), [A([1.0, np.nan, np.inf, -np.inf])]),
    C("isfinite", lambda t, x: t.isfinite(x), [A([1.0, np.nan, np.inf, -np.inf])]),
    C("logical_not", lambda t, x: t.logical_not(x), [B(3, 4)]),
    C("bitwise_not", lambda t, x: t.bitwise_not(x), [I(3, 4)]),
    C("invert_bool", lambda t, x: ~x, [B(3, 4)]),
    C("invert_int", lambda t, x: ~x, [I(3, 4)]),
    # integer inputs to float ops give the default float dtype
    C("exp_int", lambda t, x: t.exp(x), [I(3, 4)]),
    C("sqrt_int", lambda t, x: t.sqrt(x), [I(3, 4)]),
    C("sigmoid_bool", lambda t, x: t.sigmoid(x), [B(3)]),
    C("abs_int", lambda t, x: t.abs(x), [I(3, 4, lo=-4)]),
    C("neg_int", lambda t, x: -x, [I(3, 4, lo=-4)]),
    C("exp_f64", lambda t, x: t.exp(x), [D(3, 4)]),
    C("tanh_f16", lambda t, x: t.tanh(x), [H(3, 4)]),
    C("exp_0d", lambda t, x: t.exp(x), [F()]),
    C("log_empty", lambda t, x: t.log(x), [F(0, 3, **POS)]),
    C("neg_bool_raises", lambda t, x: -x, [B(3)], raises=True),
]

BINARY = [
    C("add", lambda t, x, y: x + y, [F(3, 4), F(3, 4)]),
    C("add_fn_alpha", lambda t, x, y: t.add(x, y, alpha=2.5), [F(3, 4), F(3, 4)]),
    C("add_broadcast", lambda t, x, y: x + y, [F(3, 1), F(1, 4)]),
    C("add_scalar", lambda t, x: x + 2.0, [F(3, 4)]),
    C("radd_scalar", lambda t, x: 2 + x, [F(3, 4)]),
    C("sub", lambda t, x, y: x - y, [F(3, 4), F(4)]),
    C("sub_alpha", lambda t, x, y: t.sub(x, y, alpha=3), [F(3, 4), F(4)]),
    C("rsub_scalar", lambda t, x: 2 - x, [F(3, 4)]),
    C("rsub_fn", lambda t, x, y: t.rsub(x, y), [F(3, 4), F(3, 4)]),
    C("sub_bool_raises", lambda t, x, y: x - y, [B(3), B(3)], raises=True),
    C("mul", lambda t, x, y: x * y, [F(3, 4), F(3, 4)]),
    C("mul_scalar", lambda t, x: x * 3, [F(3, 4)]),
    C("rmul_scalar", lambda t, x: 3.5 * x, [F(3, 4)]),
    C("div", lambda t, x, y: x / y, [F(3, 4), F(3, 4, **POS)]),
    C("rdiv_scalar", lambda t, x: 2 / x, [F(3, 4, **POS)]),
    C("div_trunc", lambda t, x, y: t.div(x, y, rounding_mode="trunc"), [F(3, 4), F(3, 4, **POS)], grad=False),
    C("div_floor", lambda t, x, y: t.div(x, y, rounding_mode="floor"), [F(3, 4), F(3, 4, **POS)], grad=False),
    C("div_bad_mode", lambda t, x, y: t.div(x, y, rounding_mode="round"), [F(3), F(3)], raises=True),
    C("floordiv_op", lambda t, x, y: x // y, [F(3, 4), F(3, 4, **POS)], grad=False),
    C("rfloordiv", lambda t, x: 7 // x, [I(3, 4, lo=1)]),
    C("floordiv_int", lambda t, x, y: x // y, [I(6, lo=-9, hi=9), I(6, lo=1, hi=4)]),
    C("div_trunc_int", lambda t, x, y: t.div(x, y, rounding_mode="trunc"), [I(6, lo=-9, hi=9), I(6, lo=1, hi=4)]),
    C("div_trunc_int_broadcast", lambda t, x, y: t.div(x, y, rounding_mode="trunc"), [I(2, 1, lo=-9, hi=9), I(3, lo=1, hi=4)]),
    C("floor_divide", lambda t, x, y: t.floor_divide(x, y), [I(6, lo=-9, hi=9), I(6, lo=1, hi=4)]),
    C("remainder", lambda t, x, y: t.remainder(x, y), [F(3, 4), F(3, 4, **POS)]),
    C("mod_op_int", lambda t, x: x % 3, [I(6, lo=-9, hi=9)]),
    C("rmod", lambda t, x: 7 % x, [I(6, lo=1, hi=4)]),
    C("fmod", lambda t, x, y: t.fmod(x, y), [F(3, 4), F(3, 4, **POS)]),
    C("pow_scalar", lambda t, x: x ** 2, [F(3, 4)]),
    C("pow_frac", lambda t, x: t.pow(x, 0.5), [F(3, 4, **POS)]),
    C("pow_tensor", lambda t, x, y: x ** y, [F(3, 4, **POS), F(3, 4)]),
    C("rpow", lambda t, x: 2 ** x, [F(3, 4)]),
    C("pow_int", lambda t, x: x ** 2, [I(3, 4)]),
    C("pow_int_float", lambda t, x: x ** 0.5, [I(3, 4)]),
    C("atan2", lambda t, x, y: t.atan2(x, y), [F(3, 4), F(3, 4)]),
    # other's gradient is a zero tensor (CopysignBackward0); -0.0 and 0 in both operands
    C("copysign", lambda t, x, y: t.copysign(x, y), [A([1.0, -2.0, 0.0, -0.0, 3.0]), A([-1.0, 3.0, -1.0, 1.0, -0.0])]),
    C("copysign_scalar", lambda t, x: t.copysign(x, -2.0), [F(3, 4)]),
    C("maximum_number_raises", lambda t, x: t.maximum(x, 2), [F(3)], raises=True),
    C("eq_two_numbers_raises", lambda t: t.eq(2, 3), [], raises=True),
    C("maximum", lambda t, x, y: t.maximum(x, y), [F(3, 4), F(3, 4)]),
    C("minimum", lambda t, x, y: t.minimum(x, y), [F(3, 4), F(4)]),
    C("fmax", lambda t, x, y: t.fmax(x, y), [A([1.0, np.nan, 3.0]), A([np.nan, 2.0, 1.0])]),
    C("fmin", lambda t, x, y: t.fmin(x, y), [A([1.0, np.nan, 3.0]), A([np.nan, 2.0, 1.0])]),
    C("max_binary", lambda t, x, y: t.max(x, y), [F(3, 4), F(3, 4)]),
    C("add_shape_mismatch", lambda t, x, y: x + y, [F(3, 4), F(3, 5)], raises=True),
    C("add_bad_type", lambda t, x: t.add(x, "a"), [F(3)], raises=True),
    C("rsub_fn_scalar", lambda t, x: t.rsub(x, 2.0), [F(3, 4)]),
    C("remainder_scalar", lambda t, x: t.remainder(x, 1.5), [F(3, 4)]),
    C("fmod_scalar", lambda t, x: t.fmod(x, 1.5), [F(3, 4)]),
    C("mul_shape_mismatch", lambda t, x, y: x * y, [F(2, 3), F(3, 2)], raises=True),
    C("lt_shape_mismatch", lambda t, x, y: x < y, [F(3), F(4)], raises=True),
    C("pow_shape_mismatch", lambda t, x, y: x ** y, [F(3), F(4)], raises=True),
    C("div_shape_mismatch", lambda t, x, y: x / y, [F(3), F(4)], raises=True),
    C("rdiv_int", lambda t, x: 2 / x, [I(3, 4, lo=1)]),
    C("matmul_op", lambda t, x, y: x @ y, [F(3, 4), F(4, 2)]),
    C("bitwise_and", lambda t, x, y: x & y, [I(5), I(5)]),
    C("bitwise_or", lambda t, x, y: x | y, [I(5), I(5)]),
    C("bitwise_xor", lambda t, x, y: x ^ y, [I(5), I(5)]),
    C("and_bool", lambda t, x, y: x & y, [B(5), B(5)]),
    C("or_bool", lambda t, x, y: x | y, [B(5), B(5)]),
    C("xor_bool", lambda t, x, y: x ^ y, [B(5), B(5)]),
]

COMPARE = [
    C(f"{n}", (lambda n: lambda t, x, y: getattr(t, n)(x, y))(n), [A([1., 2., 3., 4.]), A([2., 2., 1., 5.])])
    for n in ("eq", "ne", "lt", "le", "gt", "ge")
] + [
    C("eq_op", lambda t, x, y: x == y, [I(5), I(5)]),
    C("ne_op_scalar", lambda t, x: x != 2, [I(5)]),
    C("lt_op_float_int", lambda t, x, y: x < y, [F(5), I(5)]),
    C("ge_op_scalar", lambda t, x: x >= 0.5, [F(5)]),
    C("gt_broadcast", lambda t, x, y: x > y, [F(3, 1), F(4)]),
    C("logical_and", lambda t, x, y: t.logical_and(x, y), [B(5), I(5)]),
    C("logical_or", lambda t, x, y: t.logical_or(x, y), [B(5), F(5)]),
    C("logical_xor", lambda t, x, y: t.logical_xor(x, y), [B(5), B(5)]),
    C("isclose", lambda t, x, y: t.isclose(x, y), [A([1.0, 1.0 + 1e-6, 2.0, np.nan]), A([1.0, 1.0, 2.1, np.nan])]),
    C("isclose_nan", lambda t, x, y: t.isclose(x, y, equal_nan=True), [A([1.0, np.nan]), A([1.0, np.nan])]),
    C("allclose", lambda t, x, y: t.allclose(x, y), [A([1.0, 2.0]), A([1.0, 2.0 + 1e-7])]),
    C("allclose_false", lambda t, x, y: t.allclose(x, y, rtol=0, atol=0), [A([1.0, 2.0]), A([1.0, 2.001])]),
    C("equal", lambda t, x, y: t.equal(x, y), [A([1, 2]), A([1, 2])]),
    C("equal_shape", lambda t, x, y: t.equal(x, y), [A([1, 2]), A([[1, 2]])]),
    C("equal_false", lambda t, x, y: t.equal(x, y), [A([1, 2]), A([1, 3])]),
]

TERNARY = [
    C("clamp", lambda t, x: t.clamp(x, -0.5, 0.5), [F(3, 4)]),
    C("clamp_min", lambda t, x: t.clamp(x, min=0.0), [F(3, 4)]),
    C("clamp_max", lambda t, x: x.clamp(max=0.1), [F(3, 4)]),
    C("clamp_min_fn", lambda t, x: t.clamp_min(x, 0.2), [F(3, 4)]),
    C("clamp_max_fn", lambda t, x: x.clamp_max(0.2), [F(3, 4)]),
    C("clamp_min_tensor_fn", lambda t, x, lo: t.clamp_min(x, lo), [F(3, 4), F(3, 4)]),
    C("clamp_max_tensor_fn", lambda t, x, hi: t.clamp_max(x, hi), [F(3, 4), F(4)]),
    C("clip", lambda t, x: t.clip(x, -0.2, 0.3), [F(3, 4)]),
    C("clamp_tensor", lambda t, x, lo, hi: t.clamp(x, lo, hi), [F(3, 4), F(3, 4, lo=-1, hi=0), F(4, lo=0, hi=1)]),
    C("clamp_tensor_min", lambda t, x, lo: t.clamp(x, min=lo), [F(3, 4), F(3, 4)]),
    C("clamp_int_float", lambda t, x: t.clamp(x, 0.5, 2.5), [I(3, 4)]),
    C("clamp_int", lambda t, x: t.clamp(x, 1, 3), [I(3, 4)]),
    C("clamp_none", lambda t, x: t.clamp(x), [F(3)], raises=True),
    C("where", lambda t, c, x, y: t.where(c, x, y), [B(3, 4), F(3, 4), F(3, 4)]),
    C("where_broadcast", lambda t, c, x, y: t.where(c, x, y), [B(3, 1), F(4), F(3, 4)]),
    C("where_scalar", lambda t, c, x: t.where(c, x, 0.0), [B(3, 4), F(3, 4)]),
    C("where_scalars_int", lambda t, c, x: t.where(c, x, 2), [B(3, 4), I(3, 4)]),
    C("where_method", lambda t, c, x, y: x.where(c, y), [B(3, 4), F(3, 4), F(3, 4)]),
    C("where_mixed_dtype", lambda t, c, x, y: t.where(c, x, y), [B(4), F(4), D(4)]),
    C("where_nonbool", lambda t, c, x, y: t.where(c, x, y), [I(4), F(4), F(4)], raises=True),
    C("where_1arg", lambda t, c: t.where(c), [B(3, 4)]),
    C("lerp", lambda t, x, y: t.lerp(x, y, 0.3), [F(3, 4), F(3, 4)]),
    C("lerp_tensor", lambda t, x, y, w: t.lerp(x, y, w), [F(3, 4), F(3, 4), F(3, 4)]),
    C("addcmul", lambda t, s, a, b: t.addcmul(s, a, b, value=0.5), [F(3, 4), F(3, 4), F(3, 4)]),
    C("addcdiv", lambda t, s, a, b: t.addcdiv(s, a, b, value=2), [F(3, 4), F(3, 4), F(3, 4, **POS)]),
    C("addcmul_broadcast", lambda t, s, a, b: t.addcmul(s, a, b), [F(4), F(3, 1), F(3, 4)]),
]

NN = [
    C("silu", lambda t, x: t.nn.functional.silu(x), [F(3, 4)]),
    C("mish", lambda t, x: t.nn.functional.mish(x), [F(3, 4)]),
]

ALL = UNARY + BINARY + COMPARE + TERNARY + NN


@params(ALL)
def test_parity(case):
    if case in NN and not hasattr(tracegrad, "nn"):
        pytest.skip("tracegrad.nn.functional is not built yet")
    check_parity(case, torch)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_low_precision_broadcast_add_values_and_grads(dtype, op):
    # torch computes a half/bfloat16 add in float and sums a broadcast operand's gradient with float
    # accumulation (a linear bias's grad under CPU autocast); bit-equal values and gradients
    rs = np.random.RandomState(0)
    a, b, g = rs.randn(30, 2, 24), rs.randn(24), rs.randn(30, 2, 24)
    res = []
    for mod in (torch, tracegrad):
        dt = getattr(mod, dtype)
        A_ = mod.tensor(a, dtype=dt, requires_grad=True)
        B_ = mod.tensor(b, dtype=dt, requires_grad=True)
        out = A_ + B_ if op == "add" else A_ - B_
        out.backward(mod.tensor(g, dtype=dt))
        res.append([np.asarray(t.detach().float().numpy()) for t in (out, A_.grad, B_.grad)])
        assert str(B_.grad.dtype).endswith(dtype)
    for t, r in zip(*res):
        np.testing.assert_array_equal(t, r)
