"""Conformance tests ported from PyTorch's test/test_binary_ufuncs.py and test/test_unary_ufuncs.py
(their non-OpInfo tests): the behaviours they check, re-expressed as small call tables run once
with torch (the oracle) and once with tracegrad. Each call's result (dtype, shape, values) or the
builtin exception class it raises must agree. Each test names the PyTorch tests it covers."""
import math

import pytest

from parity import run_both, run_cases

torch = pytest.importorskip("torch")

INT_DTYPES = ("uint8", "int8", "int16", "int32", "int64")


# ---- pow / float_power -------------------------------------------------------------------------
def test_pow_integer_rules():
    # test_int_pow, test_pow_scalar_base / test_pow_scalar_overloads_mem_overlap, test_int_tensor_pow_neg_ints,
    # test_long_tensor_pow_floats, test_float_scalar_pow_float_tensor, test_complex_scalar_pow_tensor
    i = lambda T: T.tensor([2, 3, -2])  # noqa: E731
    run_cases({
        "int ** int": lambda T: i(T) ** 3,
        "int ** 0": lambda T: i(T) ** 0,
        "int ** negative int": lambda T: i(T) ** -1,
        "int ** negative tensor": lambda T: i(T) ** T.tensor([-1, 1, 2]),
        "int.pow_(negative)": lambda T: i(T).pow_(-2),
        "ones ** negative": lambda T: T.tensor([1, -1]) ** -2,
        "int ** float": lambda T: i(T) ** 0.5,
        "int ** 2.0": lambda T: i(T) ** 2.0,
        "int8 ** int overflow wraps": lambda T: T.tensor([4, 5], dtype=T.int8) ** 4,
        "uint8 ** 2": lambda T: T.tensor([20], dtype=T.uint8) ** 2,
        "int ** float tensor": lambda T: i(T) ** T.tensor([0.5, 2., 1.]),
        "int scalar ** int tensor": lambda T: 2 ** T.tensor([0, 3, 5]),
        "int scalar ** negative int tensor": lambda T: 2 ** T.tensor([-1]),
        "float scalar ** int tensor": lambda T: 2.5 ** T.tensor([1, 2]),
        "complex scalar ** float tensor": lambda T: (1j) ** T.tensor([1., 2.]),
        "float ** complex scalar": lambda T: T.tensor([1., 4.]) ** 0.5j,
        "negative ** fractional": lambda T: T.tensor([-8.]) ** (1 / 3),
        "0 ** negative": lambda T: T.tensor([0.]) ** -1.,
        "0 ** 0": lambda T: T.tensor([0., 0.]) ** T.tensor([0., -0.]),
        "bool ** bool": lambda T: T.tensor([True, False]) ** T.tensor([True, True]),
        "bool ** int": lambda T: T.tensor([True, False]) ** 2,
        "float16 ** float64 0-d": lambda T: T.tensor([2.], dtype=T.float16) ** T.tensor(2., dtype=T.float64),
        "int32 ** int64 0-d": lambda T: T.tensor([2], dtype=T.int32) ** T.tensor(3),
        "pow scalar self": lambda T: T.pow(3, T.tensor([2., 0.5])),
        "pow bool scalar base": lambda T: T.pow(True, T.tensor([2, 0])),
        "big int exponent": lambda T: T.tensor([1, -1, 2]) ** 63,
        "float ** 1e20": lambda T: T.tensor([1., 0.5, 2.]) ** 1e20,
        "pow_ int by float": lambda T: T.tensor([2, 3]).pow_(1.5),
        "pow out-of-place int base float tensor": lambda T: T.pow(2, T.tensor([0.5])),
    })


def test_float_power():
    # test_float_power, test_float_power_exceptions
    run_cases({
        "float tensors": lambda T: T.float_power(T.tensor([2., 3.]), T.tensor([2., 0.5])),
        "int tensors": lambda T: T.float_power(T.tensor([2, 3]), T.tensor([-1, 2])),
        "int ** scalar": lambda T: T.float_power(T.tensor([4]), 0.5),
        "scalar ** tensor": lambda T: T.float_power(2, T.tensor([1., 3.], dtype=T.float16)),
        "complex": lambda T: T.float_power(T.tensor([1j]), 2),
        "complex scalar": lambda T: T.float_power(T.tensor([2.]), 1j),
        "negative ** fractional": lambda T: T.float_power(T.tensor([-2.]), 0.5),
        "inplace on float64": lambda T: T.tensor([2.], dtype=T.float64).float_power_(2),
        "inplace on float32 refused": lambda T: T.tensor([2.]).float_power_(2),
        "inplace on complex64 refused": lambda T: T.tensor([2j]).float_power_(2),
        "inplace complex128 ok": lambda T: T.tensor([2j], dtype=T.complex128).float_power_(2),
        "method": lambda T: T.tensor([3, 2], dtype=T.int8).float_power(T.tensor(2, dtype=T.uint8)),
        "bool": lambda T: T.float_power(T.tensor([True]), T.tensor([True])),
    })


# ---- integer division, remainder, fmod ---------------------------------------------------------
def test_div_rounding_modes():
    # test_div_rounding_modes, test_div_rounding_nonfinite, test_div_rounding_numpy, test_floor_divide_tensor,
    # test_floor_divide_scalar, test_true_divide_out, test_floordiv_and_div_by_zero (integers raise)
    a = lambda T, d="int64": T.tensor([7, -7, 7, -7, 0], dtype=getattr(T, d))  # noqa: E731
    b = lambda T, d="int64": T.tensor([2, 2, -2, -2, 3], dtype=getattr(T, d))  # noqa: E731
    f = lambda T: T.tensor([7.5, -7.5, float("inf"), float("nan"), -0.0, 1.])  # noqa: E731
    g = lambda T: T.tensor([2., 2., 3., 1., 5., 0.])  # noqa: E731
    cases = {}
    for d in INT_DTYPES:
        if d == "uint8":
            continue
        cases.update({
            f"{d} true": lambda T, d=d: T.div(a(T, d), b(T, d)),
            f"{d} trunc": lambda T, d=d: T.div(a(T, d), b(T, d), rounding_mode="trunc"),
            f"{d} floor": lambda T, d=d: T.div(a(T, d), b(T, d), rounding_mode="floor"),
            f"{d} //": lambda T, d=d: a(T, d) // b(T, d),
            f"{d} %": lambda T, d=d: a(T, d) % b(T, d),
            f"{d} fmod": lambda T, d=d: T.fmod(a(T, d), b(T, d)),
        })
    cases.update({
        "float true": lambda T: f(T) / g(T),
        "float trunc": lambda T: T.div(f(T), g(T), rounding_mode="trunc"),
        "float floor": lambda T: T.div(f(T), g(T), rounding_mode="floor"),
        "float //": lambda T: f(T) // g(T),
        "float %": lambda T: f(T) % g(T),
        "float fmod": lambda T: T.fmod(f(T), g(T)),
        "float remainder by -inf": lambda T: T.remainder(T.tensor([3., -3.]), float("-inf")),
        "float fmod by inf": lambda T: T.fmod(T.tensor([3., -3.]), float("inf")),
        "int // float scalar": lambda T: a(T) // 2.5,
        "int % float scalar": lambda T: a(T) % -2.5,
        "int fmod negative scalar": lambda T: T.fmod(a(T), -3),
        "scalar // tensor": lambda T: 7 // T.tensor([2, -2]),
        "scalar % tensor": lambda T: 7 % T.tensor([3, -3]),
        "scalar rdiv int": lambda T: 1 / T.tensor([2, 4]),
        "uint8 floor": lambda T: T.div(T.tensor([7, 250], dtype=T.uint8), T.tensor([2, 3], dtype=T.uint8), rounding_mode="floor"),
        "bool true div": lambda T: T.tensor([True, False]) / T.tensor([True, True]),
        "bool floor div": lambda T: T.div(T.tensor([True]), T.tensor([True]), rounding_mode="floor"),
        "bad rounding mode": lambda T: T.div(a(T), b(T), rounding_mode="round"),
        "int // 0": lambda T: T.tensor([1, 2]) // 0,
        "int // zero tensor": lambda T: T.tensor([1, 2]) // T.tensor([1, 0]),
        "int div trunc by 0": lambda T: T.div(T.tensor([1]), 0, rounding_mode="trunc"),
        "int div true by 0": lambda T: T.div(T.tensor([1, 0, -1]), 0),
        "int % 0": lambda T: T.tensor([5]) % 0,
        "int fmod 0": lambda T: T.fmod(T.tensor([5]), 0),
        "int remainder zero tensor": lambda T: T.remainder(T.tensor([5]), T.tensor([0])),
        "float // 0": lambda T: T.tensor([1., -1., 0.]) // 0,
        "float % 0": lambda T: T.tensor([1., -1.]) % 0,
        "int8 min // -1": lambda T: T.tensor([-128], dtype=T.int8) // T.tensor([-1], dtype=T.int8),
        "floor_divide": lambda T: T.floor_divide(T.tensor([-7, 7]), 2),
        "div_ int inplace true refused": lambda T: T.tensor([7, 8]).div_(2),
        "div_ int inplace floor ok": lambda T: T.tensor([7, 8]).div_(2, rounding_mode="floor"),
        "true_divide": lambda T: T.true_divide(T.tensor([3]), T.tensor([2])),
        "remainder scalar self": lambda T: T.remainder(-7, T.tensor([3, -3])),
        "remainder large dividend": lambda T: T.remainder(T.tensor([2 ** 40 + 3, -(2 ** 40) - 3]), T.tensor([7, 7])),
        "fmod large float": lambda T: T.fmod(T.tensor([1e10, -1e10], dtype=T.float64), 3.),
        "remainder float32 tiny": lambda T: T.remainder(T.tensor([-1e-8]), 1.),
    })
    run_cases(cases)


def test_remainder_fmod_grads():
    def program(T, log):
        a = T.tensor([7.5, -7.5, 3.], requires_grad=True)
        b = T.tensor([2., 2., -2.], requires_grad=True)
        (T.remainder(a, b) * 2 + T.fmod(a, b)).sum().backward()
        log("grads", [a.grad, b.grad])
    run_both(program)


# ---- shifts and bitwise ops -------------------------------------------------------------------
def test_shifts_and_bitwise_dtypes():
    # test_bitwise_shift, test_bitwise_shift_float, test_lshift_rshift_scalar, test_bitwise_ops,
    # test_bitwise_and_or_xor_bool, test_bitwise_not
    run_cases({
        "<< int": lambda T: T.tensor([1, -3, 5]) << 2,
        ">> int": lambda T: T.tensor([16, -16, 5]) >> 2,
        "<< tensor": lambda T: T.tensor([1, 1]) << T.tensor([0, 3]),
        ">> by width": lambda T: T.tensor([-8, 8], dtype=T.int8) >> 10,
        "<< by width": lambda T: T.tensor([1], dtype=T.int32) << 40,
        "<< negative amount": lambda T: T.tensor([8]) << -1,
        ">> negative amount": lambda T: T.tensor([8]) >> -1,
        "uint8 >>": lambda T: T.tensor([255], dtype=T.uint8) >> 3,
        "uint8 << overflow": lambda T: T.tensor([255], dtype=T.uint8) << 1,
        "int8 << int64 0-d": lambda T: T.tensor([3], dtype=T.int8) << T.tensor(2),
        "int8 << int32 tensor": lambda T: T.tensor([3], dtype=T.int8) << T.tensor([2], dtype=T.int32),
        "scalar << tensor": lambda T: 1 << T.tensor([0, 4]),
        "scalar >> tensor": lambda T: 64 >> T.tensor([1, 3]),
        "float << int": lambda T: T.tensor([1.5]) << 2,
        "float >> int": lambda T: T.tensor([8.]) >> 1,
        "int << float": lambda T: T.tensor([1]) << 1.5,
        "bool << int": lambda T: T.tensor([True]) << 1,
        "bitwise_left_shift fn": lambda T: T.bitwise_left_shift(T.tensor([3]), T.tensor([2])),
        "bitwise_right_shift scalar": lambda T: T.bitwise_right_shift(T.tensor([-9]), 1),
        "<<= inplace": lambda T: (lambda x: x.__ilshift__(1))(T.tensor([1, 2])),
        "& int": lambda T: T.tensor([12, -1]) & T.tensor([10, 7]),
        "| int8 and int64 0-d": lambda T: T.tensor([1], dtype=T.int8) | T.tensor(256),
        "^ int scalar": lambda T: T.tensor([5, 6], dtype=T.int16) ^ 3,
        "& bool": lambda T: T.tensor([True, False]) & T.tensor([True, True]),
        "| bool and int": lambda T: T.tensor([True, False]) | T.tensor([2, 0]),
        "^ bool scalar": lambda T: T.tensor([True, False]) ^ True,
        "& bool tensor int scalar": lambda T: T.tensor([True, False]) & 1,
        "& float": lambda T: T.tensor([1.]) & T.tensor([1.]),
        "| float scalar": lambda T: T.tensor([1]) | 1.5,
        "~ int": lambda T: ~T.tensor([0, 5, -1]),
        "~ uint8": lambda T: ~T.tensor([0, 5], dtype=T.uint8),
        "~ bool": lambda T: ~T.tensor([True, False]),
        "~ float": lambda T: ~T.tensor([1.]),
        "bitwise_not float": lambda T: T.bitwise_not(T.tensor([1.])),
        "bitwise_and scalar first": lambda T: T.bitwise_and(3, T.tensor([1, 2])),
        "logical_and mixed": lambda T: T.logical_and(T.tensor([1., 0.]), T.tensor([2, 2])),
        "logical_xor complex": lambda T: T.logical_xor(T.tensor([1j, 0j]), T.tensor([0., 0.])),
        "logical_not int": lambda T: T.logical_not(T.tensor([0, 3])),
        "&= int by bool": lambda T: (lambda x: x.__iand__(T.tensor([True, False])))(T.tensor([3, 3])),
        "&= bool by int refused": lambda T: (lambda x: x.__iand__(T.tensor([3, 0])))(T.tensor([True, True])),
    })


# ---- comparisons ------------------------------------------------------------------------------------
def test_comparisons_mixed_dtypes_and_scalars():
    # test_comparison_ops_type_promotion_and_broadcasting, test_cmp_with_scalar_*, test_compare_complex,
    # test_comparison_ops_nan, test_maximum_minimum_type_promotion, test_maximum_minimum_complex, test_fmax_fmin
    run_cases({
        "int8 < float 0-d": lambda T: T.tensor([1, 2], dtype=T.int8) < T.tensor(1.5),
        "uint8 > -1": lambda T: T.tensor([0, 255], dtype=T.uint8) > -1,
        "uint8 == 256": lambda T: T.tensor([0], dtype=T.uint8) == 256,
        "int == 2.5": lambda T: T.tensor([2, 3]) == 2.5,
        "int64 large vs float": lambda T: T.tensor([2 ** 53 + 1]) == T.tensor([float(2 ** 53)], dtype=T.float64),
        "bool < int": lambda T: T.tensor([True, False]) < T.tensor([1, 1]),
        "nan comparisons": lambda T: [T.tensor([float("nan")]) == T.tensor([float("nan")]),
                                      T.tensor([float("nan")]) != T.tensor([float("nan")]),
                                      T.tensor([float("nan")]) < 1.],
        "complex eq": lambda T: T.tensor([1 + 1j, 2]) == T.tensor([1 + 1j, 2 + 1j]),
        "complex lt refused": lambda T: T.tensor([1 + 1j]) < T.tensor([1j]),
        "complex vs scalar ne": lambda T: T.tensor([1j]) != 1j,
        "float vs complex scalar eq": lambda T: T.tensor([1.]) == (1 + 0j),
        "broadcast": lambda T: T.tensor([[1], [2]]) >= T.tensor([1, 2, 3]),
        "not broadcastable": lambda T: T.ones(2) < T.ones(3),
        "eq None": lambda T: T.tensor([1]) == None,  # noqa: E711
        "eq string": lambda T: T.tensor([1]).eq("a"),
        "eq list": lambda T: T.tensor([1, 2]) == [1, 3],
        "ge_ inplace keeps dtype": lambda T: T.tensor([1., 5.]).ge_(2),
        "lt_ int by float": lambda T: T.tensor([1, 5]).lt_(2.5),
        "maximum int float": lambda T: T.maximum(T.tensor([1, 5]), T.tensor([2.5, 2.5])),
        "maximum nan": lambda T: T.maximum(T.tensor([1., float("nan")]), T.tensor([float("nan"), 2.])),
        "minimum bool": lambda T: T.minimum(T.tensor([True, False]), T.tensor([True, True])),
        "maximum complex refused": lambda T: T.maximum(T.tensor([1j]), T.tensor([2j])),
        "maximum int8 uint8": lambda T: T.maximum(T.tensor([-1], dtype=T.int8), T.tensor([200], dtype=T.uint8)),
        "maximum scalar refused": lambda T: T.maximum(T.tensor([1.]), 2.),
        "fmax nan": lambda T: T.fmax(T.tensor([1., float("nan"), float("nan")]), T.tensor([float("nan"), 2., float("nan")])),
        "fmin int": lambda T: T.fmin(T.tensor([1, 5]), T.tensor([3, 2])),
        "max binary": lambda T: T.max(T.tensor([1., 4.]), T.tensor([3., 2.])),
        "min binary nan": lambda T: T.min(T.tensor([1., float("nan")]), T.tensor([3., 2.])),
    })


def test_isclose_allclose_equal_nan():
    # test_isclose_* (bool, int, float, complex, equal_nan), test_allclose
    run_cases({
        "float": lambda T: T.isclose(T.tensor([1., 1.1, float("inf"), float("-inf"), float("nan")]),
                                     T.tensor([1. + 1e-9, 1., float("inf"), float("inf"), float("nan")])),
        "float equal_nan": lambda T: T.isclose(T.tensor([float("nan"), 1.]), T.tensor([float("nan"), float("nan")]), equal_nan=True),
        "int": lambda T: T.isclose(T.tensor([1, 2, 100]), T.tensor([1, 3, 101]), rtol=0.01, atol=0),
        "int atol": lambda T: T.isclose(T.tensor([1, 2]), T.tensor([2, 4]), atol=1, rtol=0),
        "bool": lambda T: T.isclose(T.tensor([True, False]), T.tensor([True, True])),
        "uint8 underflow": lambda T: T.isclose(T.tensor([0], dtype=T.uint8), T.tensor([255], dtype=T.uint8), atol=1, rtol=0),
        "complex": lambda T: T.isclose(T.tensor([1 + 1j, complex("nan+1j")]), T.tensor([1 + 1.00001j, complex("nan+1j")])),
        "complex equal_nan": lambda T: T.isclose(T.tensor([complex("nan+1j")]), T.tensor([complex("1+nanj")]), equal_nan=True),
        "mixed dtypes refused": lambda T: T.isclose(T.tensor([1.]), T.tensor([1])),
        "float and double refused": lambda T: T.isclose(T.tensor([1.]), T.tensor([1.], dtype=T.float64)),
        "negative rtol": lambda T: T.isclose(T.tensor([1.]), T.tensor([1.]), rtol=-1.),
        "negative atol": lambda T: T.isclose(T.tensor([1.]), T.tensor([1.]), atol=-1.),
        "broadcast": lambda T: T.isclose(T.tensor([[1.], [2.]]), T.tensor([1., 2.])),
        "allclose": lambda T: T.allclose(T.tensor([1., float("nan")]), T.tensor([1., float("nan")])),
        "allclose equal_nan": lambda T: T.allclose(T.tensor([1., float("nan")]), T.tensor([1., float("nan")]), equal_nan=True),
        "allclose type": lambda T: type(T.allclose(T.tensor([1.]), T.tensor([1.]))).__name__,
        "allclose int": lambda T: T.allclose(T.tensor([1, 2]), T.tensor([1, 2])),
        "allclose shapes broadcast": lambda T: T.allclose(T.tensor([1., 1.]), T.tensor(1.)),
        "method": lambda T: T.tensor([1.]).isclose(T.tensor([1.0001]), rtol=0, atol=1e-3),
    })


# ---- nan_to_num, copysign, ldexp, lerp, logaddexp, hypot, heaviside, xlogy ------------------
def test_nan_to_num():
    # test_nan_to_num (TestUnaryUfuncs), with posinf/neginf, integer and bool inputs, out of range values
    x = lambda T, d="float32": T.tensor([float("nan"), float("inf"), -float("inf"), 1.5], dtype=getattr(T, d))  # noqa: E731
    run_cases({
        "default": lambda T: T.nan_to_num(x(T)),
        "double": lambda T: T.nan_to_num(x(T, "float64")),
        "half": lambda T: T.nan_to_num(x(T, "float16")),
        "bfloat16": lambda T: T.nan_to_num(x(T, "bfloat16")).float(),
        "values": lambda T: T.nan_to_num(x(T), nan=0.5, posinf=10., neginf=-10.),
        "only posinf": lambda T: x(T).nan_to_num(posinf=1.),
        "huge posinf into half": lambda T: T.nan_to_num(x(T, "float16"), posinf=1e10),
        "int": lambda T: T.nan_to_num(T.tensor([1, 2]), nan=5.),
        "bool": lambda T: T.nan_to_num(T.tensor([True])),
        "complex": lambda T: T.nan_to_num(T.tensor([complex("nan+infj"), complex("-inf+1j")]), nan=1., posinf=2.),
        "inplace": lambda T: x(T).nan_to_num_(nan=-1.),
    })


def test_misc_binary_ufuncs():
    # test_copysign, test_copysign_subgradient, test_ldexp, test_lerp (tensor weight), test_logaddexp,
    # test_hypot, test_heaviside, test_heaviside_cross_device, test_xlogy_xlog1py_scalar_type_promotion,
    # test_nextafter, test_gcd/test_lcm, test_atan2_edgecases, test_cumulative_trapezoid not here
    run_cases({
        "copysign": lambda T: T.copysign(T.tensor([1., -2., 3., float("nan")]), T.tensor([-0., 0., -1., -1.])),
        "copysign int -> float": lambda T: T.copysign(T.tensor([1, -2]), T.tensor([-1, 1])),
        "copysign scalar": lambda T: T.copysign(T.tensor([1., 2.]), -1),
        "copysign bool": lambda T: T.copysign(T.tensor([True]), -1.),
        "copysign double other": lambda T: T.copysign(T.tensor([1.]), T.tensor([-1.], dtype=T.float64)),
        "ldexp": lambda T: T.ldexp(T.tensor([1., 3.]), T.tensor([2, -1])),
        "ldexp int": lambda T: T.ldexp(T.tensor([1, 3]), T.tensor([2, 1])),
        "ldexp double": lambda T: T.ldexp(T.tensor([1.], dtype=T.float64), T.tensor([1000])),
        "ldexp complex": lambda T: T.ldexp(T.tensor([1 + 1j]), T.tensor([3])),
        "ldexp_ float": lambda T: T.tensor([1., 2.]).ldexp_(T.tensor([1, 1])),
        "lerp scalar weight": lambda T: T.lerp(T.tensor([0., 10.]), T.tensor([10., 20.]), 0.25),
        "lerp tensor weight": lambda T: T.lerp(T.tensor([0., 10.]), T.tensor([10., 20.]), T.tensor([0.5, 2.])),
        "lerp broadcast weight": lambda T: T.lerp(T.zeros(2, 1), T.ones(3), T.tensor([[0.5], [0.75]])),
        "lerp int refused": lambda T: T.lerp(T.tensor([0]), T.tensor([10]), 0.5),
        "lerp dtype mismatch": lambda T: T.lerp(T.tensor([0.]), T.tensor([10.], dtype=T.float64), 0.5),
        "lerp weight dtype mismatch": lambda T: T.lerp(T.tensor([0.]), T.tensor([10.]), T.tensor([0.5], dtype=T.float64)),
        "lerp complex weight": lambda T: T.lerp(T.tensor([0j]), T.tensor([2j]), 0.5j),
        "lerp_": lambda T: T.tensor([1., 2.]).lerp_(T.tensor([3., 4.]), 0.5),
        "logaddexp": lambda T: T.logaddexp(T.tensor([0., float("-inf"), float("inf"), 100.]), T.tensor([0., float("-inf"), float("inf"), 100.])),
        "logaddexp2": lambda T: T.logaddexp2(T.tensor([1., float("-inf")]), T.tensor([1., 2.])),
        "logaddexp int refused": lambda T: T.logaddexp(T.tensor([1]), T.tensor([2])),
        "logaddexp complex": lambda T: T.logaddexp(T.tensor([1j]), T.tensor([0j])),
        "logaddexp mixed": lambda T: T.logaddexp(T.tensor([1.]), T.tensor([2.], dtype=T.float64)),
        "hypot": lambda T: T.hypot(T.tensor([3., float("inf"), float("nan")]), T.tensor([4., float("nan"), 1.])),
        "hypot int refused": lambda T: T.hypot(T.tensor([3]), T.tensor([4])),
        "hypot mixed float": lambda T: T.hypot(T.tensor([3.], dtype=T.float16), T.tensor([4.])),
        "heaviside": lambda T: T.heaviside(T.tensor([-1., 0., 2., float("nan")]), T.tensor([0.5])),
        "heaviside int": lambda T: T.heaviside(T.tensor([-1, 0, 2]), T.tensor([7])),
        "heaviside dtype mismatch": lambda T: T.heaviside(T.tensor([1.]), T.tensor([1])),
        "heaviside complex": lambda T: T.heaviside(T.tensor([1j]), T.tensor([1j])),
        "heaviside bool": lambda T: T.heaviside(T.tensor([True, False]), T.tensor([True])),
        "heaviside scalar refused": lambda T: T.heaviside(T.tensor([1.]), 0.5),
        "xlogy": lambda T: T.xlogy(T.tensor([0., 1., 2., float("nan")]), T.tensor([0., float("nan"), 3., 0.])),
        "xlogy int": lambda T: T.xlogy(T.tensor([1, 2]), T.tensor([3, 4])),
        "xlogy scalar self": lambda T: T.xlogy(2, T.tensor([3.])),
        "xlogy scalar other": lambda T: T.xlogy(T.tensor([3]), 2.),
        "xlog1py": lambda T: T.special.xlog1py(T.tensor([0., 2.]), T.tensor([-1., 1.])),
        "nextafter": lambda T: T.nextafter(T.tensor([1., 0.], dtype=T.float64), T.tensor([2., -1.], dtype=T.float64)) - T.tensor([1., 0.], dtype=T.float64),
        "nextafter int refused": lambda T: T.nextafter(T.tensor([1]), T.tensor([2])),
        "gcd": lambda T: T.gcd(T.tensor([12, -18, 0, 0]), T.tensor([8, 12, 5, 0])),
        "lcm": lambda T: T.lcm(T.tensor([4, -6, 0]), T.tensor([6, 4, 3])),
        "gcd float refused": lambda T: T.gcd(T.tensor([1.]), T.tensor([2.])),
        "gcd int8 int64": lambda T: T.gcd(T.tensor([12], dtype=T.int8), T.tensor([8])),
        "atan2 edges": lambda T: T.atan2(T.tensor([0., -0., 0., -0., 1., float("inf")]), T.tensor([0., 0., -0., -0., float("-inf"), float("inf")])),
        "atan2 int -> float": lambda T: T.atan2(T.tensor([1]), T.tensor([1])),
        "fmod_ int by float refused": lambda T: T.tensor([5]).fmod_(2.5),
        "sub alpha": lambda T: T.sub(T.tensor([1, 2]), T.tensor([1, 1]), alpha=3),
        "sub float alpha on int refused": lambda T: T.sub(T.tensor([1, 2]), T.tensor([1, 1]), alpha=1.5),
        "add bool alpha": lambda T: T.add(T.tensor([True]), T.tensor([True]), alpha=True),
        "rsub": lambda T: T.rsub(T.tensor([1., 2.]), 5, alpha=2),
        "mul bool": lambda T: T.tensor([True, False]) * T.tensor([True, True]),
        "add int tensor complex scalar": lambda T: T.tensor([1]) + 1j,
    })


def test_binary_grads_at_kinks():
    # test_copysign_subgradient, test_hypot grad, test_logaddexp / lerp / xlogy grads against torch's formulas
    cases = {   # name: (fn(T, a, b), a values, b values)
        "copysign": (lambda T, a, b: T.copysign(a, b), [1., -2., 0., -0., 3.], [-1., 2., 0., -1., -0.]),
        "hypot": (lambda T, a, b: T.hypot(a, b), [0., 3., 2.], [0., 4., 0.]),
        "logaddexp": (lambda T, a, b: T.logaddexp(a, b), [0., 1., float("-inf")], [0., float("-inf"), 1.]),
        "xlogy": (lambda T, a, b: T.xlogy(a, b), [0., 2., 0.], [1., 3., 0.5]),
        "lerp tensor weight": (lambda T, a, b: T.lerp(a, b, b * 0.25), [1., 2.], [3., 5.]),
        "maximum/fmin ties": (lambda T, a, b: T.maximum(a, b) + T.fmin(a, b), [1., 2., 3.], [1., 5., 0.]),
        "fmax ties": (lambda T, a, b: T.fmax(a, b), [1., float("nan"), 3.], [1., 5., float("nan")]),
    }

    def program(T, log):
        for name, (fn, av, bv) in cases.items():
            a, b = T.tensor(av, requires_grad=True), T.tensor(bv, requires_grad=True)
            (fn(T, a, b) * T.arange(1., len(av) + 1)).sum().backward()
            log(name, [a.grad, b.grad])
    run_both(program)


# ---- unary ufuncs: integer and special-value behaviours ------------------------------------
def test_xlogy_grad_at_zero_zero():
    def program(T, log):
        p = T.tensor([0.], requires_grad=True)
        q = T.tensor([0.], requires_grad=True)
        T.xlogy(p, q).sum().backward()
        log("xlogy", [p.grad, q.grad])
    run_both(program)


def test_unary_integer_and_bool_inputs():
    # test_abs_big_number, test_abs_zero, test_sign/sgn, test_frexp, test_exp (int -> float), test_sqrt_complex_edge
    run_cases({
        "abs int64 min": lambda T: T.tensor([-(2 ** 63)]).abs(),
        "abs int8 min": lambda T: T.tensor([-128], dtype=T.int8).abs(),
        "abs -0.": lambda T: T.tensor([-0.]).abs().signbit(),
        "neg uint8": lambda T: -T.tensor([1], dtype=T.uint8),
        "neg bool refused": lambda T: -T.tensor([True]),
        "sign": lambda T: T.tensor([-2., 0., -0., 3., float("nan")]).sign(),
        "sign int": lambda T: T.tensor([-2, 0, 5], dtype=T.int8).sign(),
        "sgn complex": lambda T: T.tensor([3 + 4j, 0j]).sgn(),
        "sign complex refused": lambda T: T.tensor([1j]).sign(),
        "signbit int": lambda T: T.tensor([-1, 0]).signbit(),
        "exp int": lambda T: T.tensor([0, 1]).exp(),
        "sqrt bool": lambda T: T.tensor([True, False]).sqrt(),
        "sin int16": lambda T: T.tensor([0], dtype=T.int16).sin(),
        "exp_ int refused": lambda T: T.tensor([1, 2]).exp_(),
        "floor int": lambda T: T.tensor([3, -3]).floor(),
        "round int": lambda T: T.tensor([3, -3]).round(),
        "round half even": lambda T: T.tensor([0.5, 1.5, 2.5, -0.5, -2.5]).round(),
        "round decimals": lambda T: T.tensor([1.2345, -2.5551, 1234.5]).round(decimals=2),
        "round negative decimals": lambda T: T.tensor([1234.5, 1250.]).round(decimals=-2),
        "round int decimals refused": lambda T: T.tensor([15]).round(decimals=-1),
        "trunc/frac": lambda T: (T.tensor([-2.7, 2.7]).trunc(), T.tensor([-2.7, 2.7, float("inf")]).frac()),
        "frexp": lambda T: T.frexp(T.tensor([8., 0.3, -5., 0., float("inf")])),
        "frexp double": lambda T: T.frexp(T.tensor([1e300], dtype=T.float64)),
        "frexp int refused": lambda T: T.frexp(T.tensor([8])),
        "reciprocal int": lambda T: T.tensor([2, 0]).reciprocal(),
        "rsqrt": lambda T: T.tensor([4., 0., -1.]).rsqrt(),
        "log of negative and zero": lambda T: T.tensor([-1., 0., float("inf")]).log(),
        "log1p/expm1 small": lambda T: (T.tensor([1e-10]).log1p(), T.tensor([1e-10]).expm1()),
        "sigmoid int": lambda T: T.sigmoid(T.tensor([0])),
        "logit eps": lambda T: T.logit(T.tensor([0., 0.5, 1.]), eps=0.1),
        "logit no eps": lambda T: T.logit(T.tensor([0., 1., 2.])),
        "sinc": lambda T: T.sinc(T.tensor([0., 0.5, 1., float("inf")])),
        "sinc int": lambda T: T.sinc(T.tensor([0, 1])),
        "angle": lambda T: T.angle(T.tensor([-1., 0., 2., float("nan")])),
        "angle int": lambda T: T.angle(T.tensor([-1, 1])),
        "angle complex": lambda T: T.angle(T.tensor([-1 + 0j, 1j])),
        "i0": lambda T: T.i0(T.tensor([0., 1., -3.])),
        "i0 int": lambda T: T.i0(T.tensor([1])),
        "digamma poles": lambda T: T.digamma(T.tensor([0., -0., -1., -2.5])),
        "lgamma": lambda T: T.lgamma(T.tensor([0., -1., 0.5, float("inf")])),
        "polygamma n=1": lambda T: T.polygamma(1, T.tensor([1., 0.5])),
        "polygamma negative n": lambda T: T.polygamma(-1, T.tensor([1.])),
        "mvlgamma": lambda T: T.mvlgamma(T.tensor([2.5, 3.]), p=2),
        "mvlgamma domain": lambda T: T.mvlgamma(T.tensor([0.4]), p=2),
        "erfinv ends": lambda T: T.erfinv(T.tensor([-1., 0., 1., 2.])),
        "clone of complex conj": lambda T: T.tensor([1 + 2j]).conj().clone().resolve_conj(),
        "positive bool refused": lambda T: T.positive(T.tensor([True])),
        "square int": lambda T: T.square(T.tensor([3], dtype=T.int8)),
        "square bool": lambda T: T.square(T.tensor([True])),
        "exp2 int": lambda T: T.exp2(T.tensor([3])),
        "deg2rad int": lambda T: T.deg2rad(T.tensor([180])),
        "rad2deg bool": lambda T: T.rad2deg(T.tensor([True])),
    })


def test_unary_out_and_inplace_dtype_rules():
    # test_out_arg_all_dtypes / test_inplace_dtype rules for unary float ops
    def program(T, log):
        out = T.empty(2, dtype=T.float64)
        T.exp(T.tensor([0., 1.]), out=out)
        log("exp float into double out", out)
        out = T.empty(0, dtype=T.int64)
        try:
            T.sqrt(T.tensor([4.]), out=out)
            log("sqrt into int out", out)
        except RuntimeError:
            log("sqrt into int out", "RuntimeError")
        o2 = T.empty(3)
        try:
            T.abs(T.tensor([-1, 2, -3]), out=o2)
            log("abs int into float out", o2)
        except RuntimeError:
            log("abs int into float out", "RuntimeError")
        o3 = T.empty(1, dtype=T.complex64)
        T.sin(T.tensor([1.]), out=o3)
        log("sin into complex out", o3)
        log("math consts", [math.isclose(float(T.tensor(1.).exp()), math.e, rel_tol=1e-6)])
    run_both(program)


def test_inplace_overlap_rounding_on_ints_and_integer_bounds():
    # test_binary_op_mem_overlap / test_unary_op_mem_overlap (partial overlap refused), test_frac / test_ceil
    # on integer and bool inputs, test_clamp scalar bounds out of the integer range, integer wrap-around
    run_cases({
        "partial overlap add_": lambda T: (lambda x: x[1:].add_(x[:-1]))(T.arange(4.)),
        "partial overlap mul_": lambda T: (lambda x: x[:2].mul_(x[1:]))(T.arange(3.)),
        "full overlap add_": lambda T: (lambda x: x.add_(x.detach()))(T.arange(3.)),
        "disjoint halves add_": lambda T: (lambda x: (x[:2].add_(x[2:]), x)[1])(T.arange(4.)),
        "frac int": lambda T: T.tensor([3]).frac(),
        "frac bool": lambda T: T.tensor([True]).frac(),
        **{f"{n} bool": (lambda T, n=n: getattr(T, n)(T.tensor([True]))) for n in ("floor", "ceil", "round", "trunc")},
        **{f"{n} int": (lambda T, n=n: getattr(T, n)(T.tensor([3, -3], dtype=T.int16))) for n in ("floor", "ceil", "trunc")},
        "clamp int8 max 1000": lambda T: T.tensor([1, 5], dtype=T.int8).clamp(max=1000),
        "clamp int8 min -1000": lambda T: T.tensor([1, 5], dtype=T.int8).clamp(min=-1000),
        "clamp int8 float bound": lambda T: T.tensor([1, 5], dtype=T.int8).clamp(max=1000.),
        "uint8 + -1": lambda T: T.tensor([0], dtype=T.uint8) + (-1),
        "int8 * 1000": lambda T: T.tensor([3], dtype=T.int8) * 1000,
        "int8 - 1 wraps": lambda T: T.tensor([-128], dtype=T.int8) - 1,
        "int / zero": lambda T: 2 / T.tensor([4, 0]),
    })
