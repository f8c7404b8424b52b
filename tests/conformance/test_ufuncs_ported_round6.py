"""Round 6 of PyTorch's own tests, ported: the non-OpInfo tests of test/test_binary_ufuncs.py
(TestBinaryUfuncs) and test/test_unary_ufuncs.py (TestUnaryUfuncs), device 'cpu', float32/float64
(and the integer/bool dtypes those tests loop over). Each case is one small program run with torch
(the oracle) and with tracegrad (``parity.same_outcome``): equal dtypes, shapes and values, or the
same builtin exception class. Where the original compared against numpy or hand-written values,
torch is the oracle. Each case names the test it follows; cases earlier rounds already have
(test_ufuncs_ported.py) are not repeated."""
import math

import pytest

from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")

nan, inf = float("nan"), float("inf")


def grad_of(T, fn, *vals, dtype=None):
    """d(sum(fn(x...)))/dx for float64 leaves built from ``vals``."""
    xs = [T.tensor(v, dtype=dtype or T.float64, requires_grad=True) for v in vals]
    fn(*xs).sum().backward()
    return [x.grad for x in xs]


def inplace(T, x, name, *args, **kw):
    getattr(x, name)(*args, **kw)
    return x


# ---- TestBinaryUfuncs ------------------------------------------------------------------------------
BINARY = {
    # test_add (alpha, bool, int + float scalar, broadcasting)
    "add_alpha": lambda T: T.add(T.tensor([1., 2.]), T.tensor([3., 4.]), alpha=2),
    "add_int_alpha_float_raises": lambda T: T.add(T.tensor([1, 2]), T.tensor([3, 4]), alpha=0.5),
    "add_bool": lambda T: T.tensor([True, False]) + T.tensor([True, True]),
    "add_bool_alpha_int": lambda T: T.add(T.tensor([True, False]), T.tensor([True, True]), alpha=2),
    "add_int_float_scalar": lambda T: T.tensor([1, 2]) + 0.5,
    "add_int8_int_scalar_keeps_dtype": lambda T: T.tensor([100], dtype=T.int8) + 100,
    # test_sub_typing: subtraction of bools is refused
    "sub_bool_bool": lambda T: T.tensor([True]) - T.tensor([False]),
    "sub_bool_scalar": lambda T: T.tensor([True]) - True,
    "sub_scalar_bool": lambda T: 1 - T.tensor([True, False]),
    "rsub_int": lambda T: T.rsub(T.tensor([1, 2]), 5),
    "sub_alpha": lambda T: T.sub(T.tensor([4., 5.]), T.tensor([1., 1.]), alpha=3),
    # test_not_broadcastable / test_add_broadcast_empty
    "add_not_broadcastable": lambda T: T.ones(3) + T.ones(4),
    "add_empty_mismatch": lambda T: T.ones(5, 0) + T.ones(0, 5),
    "add_empty_same": lambda T: T.ones(5, 0) + T.ones(5, 0),
    "add_empty_broadcast": lambda T: T.ones(0, 7, 0, 6, 5, 0, 1) + T.ones(7, 0, 6, 5, 0, 7),
    "add_empty_scalar": lambda T: T.ones(0) + T.tensor(3.),
    # test_muldiv_scalar / test_mul_intertype_scalar / test_divmul_scalar
    "mul_float_by_int_0d": lambda T: T.tensor([1.5, 2.5]) * T.tensor(3),
    "mul_int_by_float_scalar": lambda T: T.tensor([3, 4]) * 1.5,
    "rdiv_scalar": lambda T: 5 / T.tensor([2., 4.]),
    "rdiv_int_tensor": lambda T: 5 / T.tensor([2, 4]),
    "div_scalar_tiny": lambda T: T.tensor([100.], dtype=T.float64) / 1e-4,
    "mul_uint8_wrap": lambda T: T.tensor([200], dtype=T.uint8) * 2,
    "true_divide_ints": lambda T: T.true_divide(T.tensor([3, 4]), T.tensor([2, 8])),
    "div_int_by_zero_float_result": lambda T: T.tensor([1, -1, 0]) / 0,
    # test_floor_divide_zero / test_fmod_remainder_by_zero_integral / _float
    "floor_divide_int_zero": lambda T: T.floor_divide(T.tensor([1, 2]), T.tensor([0, 1])),
    "fmod_int_by_zero": lambda T: T.fmod(T.tensor([1, 2]), 0),
    "remainder_int_by_zero": lambda T: T.remainder(T.tensor([1, 2]), T.tensor([0, 1])),
    "fmod_float_by_zero": lambda T: T.fmod(T.tensor([1., -2., 0.]), 0.),
    "remainder_float_by_zero": lambda T: T.remainder(T.tensor([1., -2., 0.]), 0.),
    # test_fmod_remainder: sign of the result follows the dividend (fmod) or divisor (remainder)
    "fmod_signs": lambda T: T.fmod(T.tensor([-7., 7., -7., 7.]), T.tensor([3., -3., -3., 3.])),
    "remainder_signs": lambda T: T.remainder(T.tensor([-7., 7., -7., 7.]), T.tensor([3., -3., -3., 3.])),
    "fmod_int_signs": lambda T: T.fmod(T.tensor([-7, 7, -7, 7]), T.tensor([3, -3, -3, 3])),
    "remainder_int_signs": lambda T: T.remainder(T.tensor([-7, 7, -7, 7]), T.tensor([3, -3, -3, 3])),
    "remainder_scalar_tensor": lambda T: T.remainder(5, T.tensor([3, -3])),
    "fmod_float_scalar": lambda T: T.fmod(T.tensor([5.5, -5.5], dtype=T.float64), 1.5),
    "remainder_inf_divisor": lambda T: T.remainder(T.tensor([3., -3.]), inf),
    "fmod_inf_divisor": lambda T: T.fmod(T.tensor([3., -3.]), inf),
    # test_remainder_overflow
    "remainder_large_int64": lambda T: T.remainder(T.tensor([2 ** 48, -(2 ** 48)]), 10),
    # test_rpow
    "rpow_int": lambda T: 2 ** T.tensor([1., 2., 3.]),
    "rpow_float_on_int": lambda T: 2.5 ** T.tensor([1, 2]),
    "rpow_zero_base": lambda T: 0 ** T.tensor([0., 1., -1.]),
    # test_pow_inplace_resizing: in-place pow cannot broadcast self to a bigger shape
    "pow_inplace_broadcast_refused": lambda T: T.ones(3).pow_(T.ones(2, 3)),
    "pow_inplace_int_by_float_tensor": lambda T: T.tensor([2, 3]).pow_(T.tensor([0.5, 0.5])),
    # test_min_max_binary_op_nan / test_maximum_and_minimum_subgradient
    "maximum_nan": lambda T: T.maximum(T.tensor([nan, 1., 2.]), T.tensor([0., nan, 1.])),
    "minimum_nan": lambda T: T.minimum(T.tensor([nan, 1., 2.]), T.tensor([0., nan, 1.])),
    "max_binary_nan": lambda T: T.max(T.tensor([nan, 1.]), T.tensor([0., 3.])),
    "maximum_grad_ties": lambda T: grad_of(T, T.maximum, [1., 2., 3.], [1., 1., 4.]),
    "minimum_grad_ties": lambda T: grad_of(T, T.minimum, [1., 2., 3.], [1., 1., 4.]),
    "fmax_grad_nan": lambda T: grad_of(T, T.fmax, [nan, 2., 3.], [1., nan, 4.]),
    "maximum_bool": lambda T: T.maximum(T.tensor([True, False]), T.tensor([False, False])),
    "maximum_int_float": lambda T: T.maximum(T.tensor([1, 5]), T.tensor([2.5, 0.5])),
    # test_logical_and / or / xor across dtypes (the result is bool)
    "logical_and_float_int": lambda T: T.logical_and(T.tensor([0., 1., 2.]), T.tensor([1, 0, 3])),
    "logical_or_nan": lambda T: T.logical_or(T.tensor([nan, 0.]), T.tensor([0., 0.])),
    "logical_xor_int": lambda T: T.logical_xor(T.tensor([0, 1, 2]), T.tensor([0, 0, 5])),
    "logical_and_inplace_float": lambda T: inplace(T, T.tensor([0., 1., 2.]), "logical_and_", T.tensor([1., 1., 0.])),
    "logical_xor_complex": lambda T: T.logical_xor(T.tensor([0j, 1j]), T.tensor([1j, 1j])),
    # test_bitwise_ops with scalars, test_bitwise_shift_overflow / test_shift_limits
    "bitwise_and_scalar": lambda T: T.tensor([12, 10]) & 6,
    "bitwise_or_rscalar": lambda T: 6 | T.tensor([12, 10]),
    "bitwise_xor_bool_int": lambda T: T.bitwise_xor(T.tensor([True, False]), T.tensor([3, 3])),
    "bitwise_and_float_raises": lambda T: T.bitwise_and(T.tensor([1.]), T.tensor([1.])),
    "lshift_int8_overflow": lambda T: T.tensor([1, 3, -1], dtype=T.int8) << 7,
    "lshift_uint8_full": lambda T: T.tensor([1, 255], dtype=T.uint8) << 8,
    "rshift_int64_big": lambda T: T.tensor([5, -5]) >> 70,
    "lshift_int32_big": lambda T: T.tensor([5, -5], dtype=T.int32) << 40,
    "rshift_negative_count": lambda T: T.tensor([16, -16]) >> T.tensor([-1, 2]),
    "rlshift_scalar": lambda T: 1 << T.tensor([0, 3, 5]),
    # test_lerp: scalar and tensor weights, extrapolation, dtype mismatch
    "lerp_scalar_weight": lambda T: T.lerp(T.tensor([1., 2.]), T.tensor([3., 6.]), 0.25),
    "lerp_extrapolate": lambda T: T.lerp(T.tensor([1., 2.]), T.tensor([3., 6.]), T.tensor([1.5, -0.5])),
    "lerp_dtype_mismatch": lambda T: T.lerp(T.tensor([1., 2.]), T.tensor([3., 6.], dtype=T.float64), 0.5),
    "lerp_broadcast": lambda T: T.lerp(T.zeros(2, 1), T.ones(3), T.tensor([[0.5], [0.25]])),
    "lerp_grad": lambda T: grad_of(T, lambda a, b, w: T.lerp(a, b, w), [1., 2.], [3., 6.], [0.5, 0.9]),
    # test_logaddexp / logaddexp2 at large and infinite magnitudes
    "logaddexp_large": lambda T: T.logaddexp(T.tensor([1e3, -1e3, inf, -inf]), T.tensor([1e3, -1e3, inf, -inf])),
    "logaddexp2_mixed": lambda T: T.logaddexp2(T.tensor([0., 100., -inf]), T.tensor([1., -100., 3.])),
    "logaddexp_int_input": lambda T: T.logaddexp(T.tensor([1, 2]), T.tensor([3, 4])),
    # test_xlogy_xlog1py: the 0 * log(0) convention and NaN propagation
    "xlogy_special": lambda T: T.xlogy(T.tensor([0., 0., 1., 2., 0.]), T.tensor([0., nan, 0., -1., 3.])),
    "xlog1py_special": lambda T: T.special.xlog1py(T.tensor([0., 0., 1., 2.]), T.tensor([-1., nan, -1., -2.])),
    "xlogy_scalar_self": lambda T: T.xlogy(2, T.tensor([1., 3.])),
    "xlogy_int_tensors": lambda T: T.xlogy(T.tensor([0, 2]), T.tensor([0, 3])),
    # test_zeta
    "zeta": lambda T: T.special.zeta(T.tensor([2., 3., 1., 0.5], dtype=T.float64), T.tensor([1., 2., 1., 1.], dtype=T.float64)),
    "zeta_scalar_q": lambda T: T.special.zeta(T.tensor([2., 4.], dtype=T.float64), 1.),
    # test_comparison_ops with a non-tensor right side
    "eq_none": lambda T: T.tensor([1.]) == None,  # noqa: E711
    "ne_string": lambda T: T.tensor([1.]) != "a",
    "lt_bool_float": lambda T: T.tensor([True, False]) < T.tensor([0.5, 0.5]),
    "ge_int_nan_scalar": lambda T: T.tensor([1, 2]) >= nan,
    "eq_uint8_negative_scalar": lambda T: T.tensor([255], dtype=T.uint8) == -1,
    # test_atan2 / test_hypot type promotion
    "atan2_int": lambda T: T.atan2(T.tensor([1, -1]), T.tensor([0, 0])),
    "atan2_broadcast": lambda T: T.atan2(T.tensor([[1.], [-1.]]), T.tensor([1., -1., 0.])),
    "hypot_broadcast_f64": lambda T: T.hypot(T.tensor([3.], dtype=T.float64), T.tensor([[4.], [0.]], dtype=T.float64)),
    "hypot_int_raises": lambda T: T.hypot(T.tensor([3]), T.tensor([4])),
    # test_copysign_subgradient at +-0 (torch's formula)
    "copysign_grad_zero": lambda T: grad_of(T, T.copysign, [0., -0., 2.], [1., -1., -0.]),
    # test_float_power_exceptions: in-place on a float32 tensor refuses a float64 result
    "float_power_inplace_float32": lambda T: T.tensor([2.]).float_power_(2),
    "float_power_inplace_float64": lambda T: T.tensor([2.], dtype=T.float64).float_power_(T.tensor([3])),
    # test_cumulative: div with rounding_mode on mixed int/float
    "div_floor_int_float": lambda T: T.div(T.tensor([7, -7]), T.tensor([2., 2.]), rounding_mode="floor"),
    "div_trunc_int_scalar": lambda T: T.div(T.tensor([7, -7]), 2, rounding_mode="trunc"),
    "div_bad_rounding_mode": lambda T: T.div(T.tensor([7.]), 2, rounding_mode="round"),
}


@pytest.mark.parametrize("fn", outcome_params(BINARY))
def test_binary_ufuncs(fn):
    same_outcome(fn)


# ---- TestUnaryUfuncs -------------------------------------------------------------------------------
UNARY = {
    # test_sinc: sinc(0) is 1 and its gradient 0
    "sinc_values": lambda T: T.sinc(T.tensor([0., 0.5, -1., 1e-8, 2.5], dtype=T.float64)),
    "sinc_grad_at_zero": lambda T: grad_of(T, T.sinc, [0., 0.5]),
    "sinc_int": lambda T: T.sinc(T.tensor([0, 1, 2])),
    # test_digamma / test_polygamma special values
    "digamma_special": lambda T: T.digamma(T.tensor([0., -0., 1., -1., 0.5, 10.], dtype=T.float64)),
    "polygamma_1": lambda T: T.polygamma(1, T.tensor([0.5, 1., 3.], dtype=T.float64)),
    "polygamma_2": lambda T: T.polygamma(2, T.tensor([0.5, 1., 3.], dtype=T.float64)),
    "polygamma_negative_n": lambda T: T.polygamma(-1, T.tensor([1.])),
    "lgamma_special": lambda T: T.lgamma(T.tensor([0., -1., 0.5, -2.5, inf], dtype=T.float64)),
    # test_mvlgamma_argcheck: the input must exceed (p - 1) / 2
    "mvlgamma_ok": lambda T: T.mvlgamma(T.tensor([2.5, 3.], dtype=T.float64), 3),
    "mvlgamma_too_small": lambda T: T.mvlgamma(T.tensor([0.5, 3.]), 3),
    "mvlgamma_p0": lambda T: T.mvlgamma(T.tensor([2.5]), 0),
    # test_i0_range* / test_special_i0_i1_vs_scipy / test_special_i0e_vs_scipy / i1e
    "i0": lambda T: T.i0(T.tensor([0., 1., -3., 20.], dtype=T.float64)),
    "i0e": lambda T: T.special.i0e(T.tensor([0., 1., -3., 50.], dtype=T.float64)),
    "i1": lambda T: T.special.i1(T.tensor([0., 1., -3., 20.], dtype=T.float64)),
    "i1e": lambda T: T.special.i1e(T.tensor([0., 1., -3., 50.], dtype=T.float64)),
    "i0_int": lambda T: T.i0(T.tensor([0, 1, 2])),
    # test_special_ndtr_vs_scipy / ndtri / log_ndtr / erfcx
    "ndtr": lambda T: T.special.ndtr(T.tensor([-inf, -3., 0., 2., inf], dtype=T.float64)),
    "ndtri": lambda T: T.special.ndtri(T.tensor([0., 0.025, 0.5, 0.975, 1., 1.5], dtype=T.float64)),
    "log_ndtr": lambda T: T.special.log_ndtr(T.tensor([-40., -3., 0., 3.], dtype=T.float64)),
    "erfcx": lambda T: T.special.erfcx(T.tensor([-3., 0., 1., 30.], dtype=T.float64)),
    "erfinv_edges": lambda T: T.erfinv(T.tensor([-1., 0., 0.5, 1., 1.5], dtype=T.float64)),
    # test_logit with and without eps
    "logit_eps": lambda T: T.logit(T.tensor([0., 0.25, 1.], dtype=T.float64), eps=0.1),
    "logit_edges": lambda T: T.logit(T.tensor([0., 1., -0.5, 0.5])),
    "logit_int": lambda T: T.logit(T.tensor([0, 1])),
    "logit_grad_eps": lambda T: grad_of(T, lambda x: T.logit(x, eps=0.2), [0.1, 0.5, 0.95]),
    # test_hardshrink / test_hardshrink_edge_cases / softshrink
    "hardshrink_default": lambda T: T.nn.functional.hardshrink(T.tensor([-0.5, -0.6, 0., 0.4, 0.5, 0.7])),
    "hardshrink_lambd": lambda T: T.nn.functional.hardshrink(T.tensor([-1., -2., 1., 3.]), lambd=2.),
    "hardshrink_tensor_method": lambda T: T.tensor([[-0.2, 0.8], [1.5, -2.]]).hardshrink(1.),
    "hardshrink_inf_nan": lambda T: T.nn.functional.hardshrink(T.tensor([inf, -inf, nan, 0.3])),
    "softshrink_negative_lambd": lambda T: T.nn.functional.softshrink(T.tensor([1.]), -0.5),
    # test_abs_angle_complex_to_float
    "abs_complex_dtype": lambda T: T.abs(T.tensor([3 + 4j, -1j], dtype=T.complex128)),
    "angle_complex_dtype": lambda T: T.angle(T.tensor([1j, -1 + 0j], dtype=T.complex64)),
    "angle_real": lambda T: T.angle(T.tensor([-2., 0., 3., nan, -0.])),
    "angle_int": lambda T: T.angle(T.tensor([-2, 0, 3])),
    # test_isfinite_isinf_isnan / test_isposinf_isneginf_* / test_signbit
    "isposinf": lambda T: T.isposinf(T.tensor([inf, -inf, nan, 1.])),
    "isneginf_int": lambda T: T.isneginf(T.tensor([1, -2])),
    "isposinf_complex_raises": lambda T: T.isposinf(T.tensor([1j])),
    "isinf_int": lambda T: T.isinf(T.tensor([1, 2])),
    "isfinite_complex": lambda T: T.isfinite(T.tensor([complex(inf, 0.), complex(0., nan), 1j])),
    "isnan_bool": lambda T: T.isnan(T.tensor([True])),
    "signbit_zeros": lambda T: T.signbit(T.tensor([0., -0., -1., nan, -inf])),
    "signbit_int": lambda T: T.signbit(T.tensor([0, -3, 4])),
    "signbit_complex_raises": lambda T: T.signbit(T.tensor([1j])),
    # test_round (decimals), test_trunc / test_frac on infinities
    "round_decimals": lambda T: T.round(T.tensor([1.2345, -2.5678, 0.125], dtype=T.float64), decimals=2),
    "round_negative_decimals": lambda T: T.round(T.tensor([1234.5, -2567.8], dtype=T.float64), decimals=-2),
    "round_half_even": lambda T: T.round(T.tensor([0.5, 1.5, 2.5, -0.5, -1.5])),
    "round_int": lambda T: T.round(T.tensor([1, -2])),
    "frac_inf": lambda T: T.frac(T.tensor([inf, -inf, 2.5, -2.5])),
    "trunc_int": lambda T: T.trunc(T.tensor([3, -3])),
    # test_exp: complex inputs with infinite or large parts
    "exp_complex_special": lambda T: T.exp(T.tensor([complex(0., 0.), complex(1., math.pi), complex(-inf, 1.)],
                                                     dtype=T.complex128)),
    "exp_large": lambda T: T.exp(T.tensor([100., 1000., -1000.])),
    "expm1_small": lambda T: T.expm1(T.tensor([1e-10, -1e-10, 0.], dtype=T.float64)),
    "log1p_small": lambda T: T.log1p(T.tensor([1e-10, -1., -2.], dtype=T.float64)),
    # test_sgn / sign on complex and -0
    "sgn_complex": lambda T: T.sgn(T.tensor([3 + 4j, 0j, -2j])),
    "sign_complex_raises": lambda T: T.sign(T.tensor([3 + 4j])),
    "sign_negative_zero_nan": lambda T: T.sign(T.tensor([-0., 0., nan, -3.])),
    # test_nonfinite values through rsqrt / reciprocal / sqrt
    "rsqrt_special": lambda T: T.rsqrt(T.tensor([0., -0., -1., inf])),
    "reciprocal_int": lambda T: T.reciprocal(T.tensor([2, 0, -4])),
    "sqrt_negative": lambda T: T.sqrt(T.tensor([-1., 4.])),
    "neg_bool_raises": lambda T: T.neg(T.tensor([True])),
    "bitwise_not_float_raises": lambda T: T.bitwise_not(T.tensor([1.])),
    "logical_not_float": lambda T: T.logical_not(T.tensor([0., -0., nan, 2.])),
    # test_silu / test_mish / test_sigmoid at extreme inputs
    "silu_extremes": lambda T: T.nn.functional.silu(T.tensor([-1e3, -20., 0., 20., 1e3])),
    "mish_extremes": lambda T: T.nn.functional.mish(T.tensor([-1e3, -20., 0., 20., 1e3])),
    "sigmoid_extremes": lambda T: T.sigmoid(T.tensor([-1e3, -100., 0., 100.], dtype=T.float64)),
    "logsigmoid_extremes": lambda T: T.nn.functional.logsigmoid(T.tensor([-1e3, -100., 0., 100.])),
    # test_unary_out_op_mem_overlap: an input overlapping the output is refused
    "abs_out_overlap": lambda T: (lambda x: T.abs(x[:-1], out=x[1:]))(T.tensor([1., -2., 3.])),
    # test_special_entr / test_special_sinc / test_special_log_softmax style entry points
    "special_entr": lambda T: T.special.entr(T.tensor([0., 0.5, 1., -1., inf])),
    "special_expit_int": lambda T: T.special.expit(T.tensor([0, 2])),
    "special_exp2_int": lambda T: T.special.exp2(T.tensor([0, 3, -1])),
    "special_log1p_int": lambda T: T.special.log1p(T.tensor([0, 3])),
    "special_round_decimals": lambda T: T.special.round(T.tensor([1.26, 2.5]), decimals=1),
}


@pytest.mark.parametrize("fn", outcome_params(UNARY))
def test_unary_ufuncs(fn):
    same_outcome(fn)


# ---- in-place and out= dtype rules (test_inplace_dunders, test_binary_ops_with_scalars,
# test_out_resize_warning, test_div_and_floordiv_vs_python, test_cross_device_inplace_error_msg) ----
INPLACE = {
    "iadd_int_by_float_refused": lambda T: inplace(T, T.tensor([1, 2]), "add_", 1.5),
    "idiv_int_refused": lambda T: inplace(T, T.tensor([4, 6]), "div_", 2),
    "idiv_floor_int_ok": lambda T: inplace(T, T.tensor([5, -5]), "div_", 2, rounding_mode="floor"),
    "ifloordiv_int": lambda T: inplace(T, T.tensor([5, -5]), "floor_divide_", 2),
    "imul_bool_by_int_refused": lambda T: inplace(T, T.tensor([True, False]), "mul_", 2),
    "iadd_float32_by_float64_tensor": lambda T: inplace(T, T.tensor([1., 2.]), "add_", T.tensor([0.5, 0.5], dtype=T.float64)),
    "iadd_broadcast_self_refused": lambda T: inplace(T, T.ones(3), "add_", T.ones(2, 3)),
    "iadd_0d_into_vector": lambda T: inplace(T, T.ones(3), "add_", T.tensor(2.)),
    "isub_uint8_wraps": lambda T: inplace(T, T.tensor([0, 1], dtype=T.uint8), "sub_", 2),
    "ipow_float_by_int_tensor": lambda T: inplace(T, T.tensor([2., 3.]), "pow_", T.tensor([2, 3])),
    "iremainder_float": lambda T: inplace(T, T.tensor([5.5, -5.5]), "remainder_", 2),
    "ilerp_weight_tensor": lambda T: inplace(T, T.tensor([0., 1.]), "lerp_", T.tensor([2., 3.]), T.tensor([0.5, 0.25])),
    "iatan2_int_refused": lambda T: inplace(T, T.tensor([1, 2]), "atan2_", T.tensor([1, 1])),
    "ihypot": lambda T: inplace(T, T.tensor([3., 5.]), "hypot_", T.tensor([4., 12.])),
    "ilogical_or_int": lambda T: inplace(T, T.tensor([0, 2, 0]), "logical_or_", T.tensor([0, 0, 3])),
    "ibitwise_and_bool_by_int_refused": lambda T: inplace(T, T.tensor([True]), "bitwise_and_", T.tensor([3])),
    "add_out_int_refused": lambda T: T.add(T.tensor([1.5]), T.tensor([1.]), out=T.zeros(1, dtype=T.int64)),
    "add_out_float64_from_float32": lambda T: T.add(T.tensor([1.5]), T.tensor([1.]), out=T.zeros(1, dtype=T.float64)),
    "mul_out_resized": lambda T: T.mul(T.tensor([1., 2.]), 3, out=T.zeros(0)),
    "eq_out_float": lambda T: T.eq(T.tensor([1., 2.]), T.tensor([1., 3.]), out=T.zeros(2)),
    "div_out_int_refused": lambda T: T.div(T.tensor([3, 4]), 2, out=T.zeros(2, dtype=T.int64)),
    "div_floor_out_int": lambda T: T.div(T.tensor([3, 4]), 2, rounding_mode="floor", out=T.zeros(2, dtype=T.int64)),
    "pow_out_broadcast": lambda T: T.pow(T.tensor([[2.], [3.]]), T.tensor([1., 2.]), out=T.zeros(2, 2)),
    "maximum_out_dtype": lambda T: T.maximum(T.tensor([1, 5]), T.tensor([3, 2]), out=T.zeros(2)),
    "floor_divide_float_by_zero": lambda T: T.floor_divide(T.tensor([1., -1., 0.]), 0.),
    "python_floordiv_negative": lambda T: T.tensor([-7, 7, -7]) // T.tensor([2, -2, -2]),
    "python_mod_negative": lambda T: T.tensor([-7., 7., -7.]) % T.tensor([2., -2., -2.]),
    "rfloordiv_scalar": lambda T: 7 // T.tensor([2, -3]),
    "rmod_scalar": lambda T: 7 % T.tensor([2., -3.]),
    "complex_lt_refused": lambda T: T.tensor([1j]) < T.tensor([2j]),
    "complex_maximum_refused": lambda T: T.maximum(T.tensor([1j]), T.tensor([2j])),
    "complex_remainder_refused": lambda T: T.remainder(T.tensor([1j]), 2),
    "complex_floor_divide_refused": lambda T: T.floor_divide(T.tensor([1 + 1j]), 2),
    "add_complex_scalar_to_int": lambda T: T.tensor([1, 2]) + 1j,
    "mul_bool_tensor_by_float_scalar": lambda T: T.tensor([True, False]) * 2.5,
    "add_int_0d_to_uint8": lambda T: T.tensor([250], dtype=T.uint8) + T.tensor(10),
    "add_float_0d_to_int8": lambda T: T.tensor([1], dtype=T.int8) + T.tensor(1.5, dtype=T.float64),
    "sub_float16_scalar": lambda T: T.tensor([1.], dtype=T.float16) - 1e-4,
}


@pytest.mark.parametrize("fn", outcome_params(INPLACE))
def test_inplace_and_out_dtype_rules(fn):
    same_outcome(fn)
