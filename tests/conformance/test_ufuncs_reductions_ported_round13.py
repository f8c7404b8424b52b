"""Ported from PyTorch's test/test_binary_ufuncs.py and test/test_reductions.py, round 13:
integer division and remainder signs, shifts, pow corners, scalar type promotion, and the
reductions' dtype, dim, keepdim, empty-input and nan rules. Each case is a ``same_outcome``
program: torch 2.13 is the oracle and tracegrad must return equal values or raise the same
builtin exception class. Each case names its original."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

pytest.importorskip("torch")

INF, NAN = float("inf"), float("nan")


def t(T, a, **kw):
    return T.tensor(a, **kw)


# ---- binary ufuncs -----------------------------------------------------------------------------
def _div_rounding_modes_int(T):
    # test_div_rounding_modes / test_floor_divide_*: negative operands of every sign
    a = t(T, [7, -7, 7, -7, 0, 5])
    b = t(T, [2, 2, -2, -2, 3, -5])
    return (T.div(a, b), T.div(a, b, rounding_mode="trunc"), T.div(a, b, rounding_mode="floor"),
            a // b, T.floor_divide(a, 2), T.true_divide(a, b))


def _div_rounding_modes_float(T):
    a = t(T, [7.5, -7.5, 1.0, -1.0, 0.0, INF, NAN])
    b = t(T, [2.0, 2.0, 0.0, 0.0, -0.0, 2.0, 1.0])
    return T.div(a, b, rounding_mode="trunc"), T.div(a, b, rounding_mode="floor"), a // b


def _div_bad_rounding_mode(T):
    return T.div(t(T, [1.0]), 2, rounding_mode="ceil")


def _int_div_by_zero(T):
    return T.div(t(T, [1, 2]), t(T, [0, 1]), rounding_mode="floor")


def _remainder_fmod_signs(T):
    # test_fmod_remainder_by_zero_float / test_remainder_overflow / test_fmod_remainder
    a = t(T, [5.0, -5.0, 5.0, -5.0, 0.5, INF, 3.0])
    b = t(T, [3.0, 3.0, -3.0, -3.0, 0.0, 2.0, INF])
    ai = t(T, [5, -5, 5, -5])
    bi = t(T, [3, 3, -3, -3])
    return T.remainder(a, b), T.fmod(a, b), T.remainder(ai, bi), T.fmod(ai, bi), ai % 3, T.remainder(-7, t(T, [3, -3]))


def _remainder_int_by_zero(T):
    return T.remainder(t(T, [1, 2]), t(T, [0, 1]))


def _remainder_grad(T):
    a = t(T, [5.0, -5.0, 2.5], requires_grad=True)
    b = t(T, [3.0, 3.0, -1.5], requires_grad=True)
    (T.remainder(a, b) * t(T, [1.0, 2.0, 3.0])).sum().backward()
    g = (a.grad.clone(), b.grad.clone())
    a.grad = b.grad = None
    T.fmod(a, b).sum().backward()
    return g + (a.grad, b.grad)


def _shifts(T):
    # test_bitwise_shift / test_lshift_rshift: int dtypes, scalars, shifts past the width
    a = t(T, [1, -8, 100, 7], dtype=T.int32)
    s = t(T, [1, 2, 3, 0], dtype=T.int32)
    return (a << s, a >> s, a << 2, a >> 1, T.bitwise_left_shift(a, s), T.bitwise_right_shift(a, 1),
            t(T, [1, 2], dtype=T.uint8) << 3, t(T, [-16, 16], dtype=T.int8) >> 2)


def _shift_float(T):
    return t(T, [1.0]) << 1


def _bitwise_ops(T):
    a = t(T, [12, -3, 0], dtype=T.int16)
    b = t(T, [10, 5, -1], dtype=T.int16)
    m = t(T, [True, False, True])
    return a & b, a | b, a ^ b, ~a, a & 6, m ^ True, m | t(T, [False, False, True]), T.bitwise_not(m)


def _bitwise_float_error(T):
    return t(T, [1.0]) & t(T, [1.0])


def _pow_int_negative_exponent(T):
    # test_int_tensor_pow_neg_ints
    return T.pow(t(T, [2, 3]), -1)


def _pow_corners(T):
    # test_pow / test_float_power / test_pow_scalar_base
    a = t(T, [0.0, -2.0, 2.0, -0.5, INF, NAN, 1.0])
    ai = t(T, [0, -2, 2, 3])
    return (a ** 2, a ** 0.5, a ** 0, 2 ** a, T.pow(a, -1), ai ** 3, 2 ** ai, ai ** 0,
            T.float_power(ai, 2), T.float_power(a, -1.5), T.pow(1, a), (-ai) ** 2, t(T, [1.0, -1.0, 2.0]) ** -1)


def _pow_int_overflow_scalar(T):
    return t(T, [3, 5], dtype=T.int8) ** 4, t(T, [200], dtype=T.uint8) * 2


def _pow_grad_at_zero(T):
    x = t(T, [0.0, 1.0, -2.0], requires_grad=True)
    y = t(T, [0.0, 0.5, 2.0], requires_grad=True)
    (x ** 0).sum().backward()
    g0 = x.grad.clone()
    x.grad = None
    (x ** y).sum().backward()
    return g0, x.grad, y.grad


def _scalar_promotion(T):
    # test_binary_op_scalar_device_unspecified / type promotion with Python numbers
    i8 = t(T, [1, 2], dtype=T.int8)
    u8 = t(T, [1, 2], dtype=T.uint8)
    f16 = t(T, [1.0, 2.0], dtype=T.float16)
    b = t(T, [True, False])
    return [(x).dtype for x in (i8 + 1, i8 + 1.5, u8 * True, f16 * 2.5, b + 1, b + 1.0, b & True, i8 / 2, u8 // 2,
                                i8 + T.tensor(1000), f16 + T.tensor(1.0, dtype=T.float64), b * b, u8 - i8,
                                i8 + 1j, T.tensor(3) * 1.5, i8 + T.tensor(2.5))]


def _comparison_ops(T):
    a = t(T, [1.0, NAN, INF, -0.0])
    b = t(T, [1.0, NAN, INF, 0.0])
    return (a == b, a != b, a < 1, T.eq(a, 0.0), T.isclose(a, b), T.isclose(a, b, equal_nan=True),
            T.maximum(a, b), T.fmax(a, t(T, [0.0, 1.0, NAN, NAN])), T.minimum(a, t(T, [NAN, 0.0, 0.0, 0.0])))


def _copysign_nextafter_ldexp(T):
    a = t(T, [1.0, -2.0, 0.0, 3.0])
    b = t(T, [-1.0, -0.0, -3.0, 0.0])
    return (T.copysign(a, b), T.copysign(a, -1), T.nextafter(a, b), T.ldexp(a, t(T, [1, 2, 3, -1])),
            T.hypot(a, b), T.xlogy(a, t(T, [2.0, 0.0, 0.0, 1.0])), T.atan2(a, b), T.logaddexp(a, b),
            T.logaddexp2(a, b), T.heaviside(b, t(T, [0.5, 0.5, 0.5, 0.5])))


def _copysign_grad(T):
    a = t(T, [1.0, -2.0, 0.0, 3.0], requires_grad=True)
    b = t(T, [-1.0, -0.0, -3.0, 2.0], requires_grad=True)
    T.copysign(a, b).sum().backward()
    return a.grad, b.grad


def _xlogy_grad(T):
    x = t(T, [0.0, 1.0, 2.0], requires_grad=True)
    y = t(T, [0.0, 3.0, 0.5], requires_grad=True)
    T.xlogy(x, y).sum().backward()
    return x.grad, y.grad


def _add_alpha(T):
    a = t(T, [1, 2])
    return T.add(a, a, alpha=3), T.sub(t(T, [1.0]), t(T, [2.0]), alpha=0.5), T.add(a, t(T, [1.0, 2.0]), alpha=2)


def _add_alpha_float_for_int(T):
    return T.add(t(T, [1, 2]), t(T, [1, 2]), alpha=0.5)


def _sub_bool(T):
    return t(T, [True]) - t(T, [False])


def _inplace_promotion_error(T):
    a = t(T, [1, 2])
    a += 1.5
    return a


def _inplace_broadcast_error(T):
    a = T.ones(3)
    a.add_(T.ones(2, 3))
    return a


def _gcd_lcm(T):
    a = t(T, [12, -18, 0, 7])
    b = t(T, [8, 12, 5, 0])
    return T.gcd(a, b), T.lcm(a, b)


# ---- reductions --------------------------------------------------------------------------------
A = np.array([[1.0, -2.0, 3.0, 0.5], [4.0, 0.0, -1.0, 2.0], [-3.0, 5.0, 1.0, 1.0]], dtype=np.float32)


def _sum_prod_dtypes(T):
    # test_sum_integer_upcast / test_prod_integer_upcast / test_dtype_param
    i8 = t(T, [[100, 100], [1, 2]], dtype=T.int8)
    b = t(T, [True, True, False])
    return (i8.sum(), i8.prod(), b.sum(), b.prod(), i8.sum(dtype=T.int8), i8.sum(0, dtype=T.float32),
            T.cumsum(i8, 0), T.cumprod(b, 0), t(T, [1.5, 2.5]).sum(dtype=T.float64))


def _sum_multi_dim(T):
    x = t(T, A)
    return (x.sum((0, 1)), x.sum((-1, 0), keepdim=True), x.sum(()), x.mean((1,)), x.sum(dim=[]),
            x.amax((0, 1)), x.amin(1, keepdim=True), x.sum(dim=None))


def _sum_duplicate_dim(T):
    return t(T, A).sum((0, 0))


def _empty_reductions(T):
    # test_reduction_empty / test_empty_tensor_empty_slice
    e = T.ones(0, 3)
    return (e.sum(), e.prod(), e.sum(0), e.mean(0), e.amax(1), e.std(0), e.var(1), e.logsumexp(0), e.all(), e.any(),
            e.count_nonzero(), T.nansum(e, 1), e.norm(), e.max(1)[0])


def _empty_max_error(T):
    return T.ones(0, 3).max()


def _empty_amax_dim_error(T):
    return T.ones(0, 3).amax(0)


def _empty_argmax_error(T):
    return T.ones(0).argmax()


def _std_var_correction(T):
    # test_std_correction / test_var_correction / test_std_mean_correction
    x = t(T, A, requires_grad=True)
    out = [x.std(), x.var(0), x.std(1, correction=0), x.var(1, correction=2, keepdim=True), x.std(unbiased=False),
           T.std_mean(x, 1), T.var_mean(x, (0, 1), correction=0), x[:1, :1].std(), x[:1].var(0)]
    (out[0] + out[2].sum() + out[5][0].sum()).backward()
    return out + [x.grad]


def _nan_reductions(T):
    x = t(T, [[1.0, NAN, 2.0], [NAN, NAN, NAN], [0.0, -1.0, 3.0]])
    return (T.nansum(x), T.nansum(x, 1), T.nanmean(x, 1), T.nanmean(x), x.sum(1), x.amax(1), x.max(1), x.argmax(1),
            T.nanmedian(x, 1), x.median(1), T.nanquantile(x, 0.5, 1), x.argmin(), x.min(), T.aminmax(x, dim=1))


def _median_mode_kthvalue(T):
    x = t(T, [[1.0, 3.0, 2.0, 3.0], [4.0, 4.0, 1.0, 1.0]])
    return (x.median(), x.median(1), x.mode(1), T.kthvalue(x, 2, 1), T.kthvalue(x, 3), x.flatten().mode(),
            t(T, [5, 2, 2, 5, 1]).mode())


def _kthvalue_out_of_range(T):
    return T.kthvalue(t(T, [1.0, 2.0]), 3)


def _quantile_interpolation(T):
    # test_quantile: every interpolation mode, q tensor, dims and keepdim
    x = t(T, A)
    q = t(T, [0.0, 0.25, 0.6, 1.0])
    return [T.quantile(x, q, dim=1, interpolation=m) for m in ("linear", "lower", "higher", "midpoint", "nearest")] + [
        T.quantile(x, 0.3), T.quantile(x, 0.5, dim=0, keepdim=True), T.quantile(x.double(), q.double())]


def _quantile_bad_q(T):
    return T.quantile(t(T, A), 1.5)


def _quantile_int_input(T):
    return T.quantile(t(T, [1, 2, 3]), 0.5)


def _logsumexp_inf(T):
    # test_logsumexp: all -inf and +inf rows stay finite-safe
    x = t(T, [[-INF, -INF], [INF, 1.0], [INF, INF], [1.0, 2.0]], requires_grad=True)
    y = T.logsumexp(x, 1)
    y[3].backward()
    return y, x.grad, T.logsumexp(t(T, [1, 2]), 0)


def _all_any_dtypes(T):
    # test_all_any_with_dim / test_all_any_vs_numpy: uint8 keeps its dtype, others give bool
    u = t(T, [[0, 3], [1, 1]], dtype=T.uint8)
    f = t(T, [[0.0, NAN], [1.0, 2.0]])
    return u.all(), u.any(1), f.all(1), f.any(), T.all(f, dim=(0, 1)), t(T, [[1, 0]]).all(0, keepdim=True)


def _count_nonzero(T):
    x = t(T, [[0, 1, 2], [0, 0, 3]])
    return x.count_nonzero(), x.count_nonzero(0), x.count_nonzero((0, 1)), T.count_nonzero(x, dim=-1)


def _norm_variants(T):
    x = t(T, A, requires_grad=True)
    out = [x.norm(), x.norm(1), x.norm(INF), x.norm(-INF, dim=1), x.norm(0), x.norm(3, dim=0, keepdim=True),
           x.norm("fro"), x.norm("nuc"), T.linalg.vector_norm(x, 0.5), T.dist(x, x * 2, 3)]
    sum(o.sum() for o in out[:7]).backward()
    return out + [x.grad]


def _argmax_ties_and_keepdim(T):
    # test_argminmax_multiple / ties give the first index
    x = t(T, [[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]])
    return x.argmax(), x.argmax(1), x.argmin(1, keepdim=True), x.max(0), x.min(1, keepdim=True), T.max(x, 1).indices


def _max_min_grad_ties(T):
    # max/min with ties: full reduction splits the gradient, dim reduction picks the index
    x = t(T, [[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]], requires_grad=True)
    x.max().backward()
    g1 = x.grad.clone()
    x.grad = None
    x.max(1)[0].sum().backward()
    g2 = x.grad.clone()
    x.grad = None
    x.amax(1).sum().backward()
    return g1, g2, x.grad


def _cum_ops(T):
    x = t(T, [[1.0, NAN, 2.0], [3.0, 1.0, 4.0]], requires_grad=True)
    z = t(T, [[1.0, 0.0, 2.0], [3.0, 1.0, 4.0]], requires_grad=True)
    cm = T.cummax(x, 1)
    out = [T.cumsum(x, 1), T.cumprod(z, 0), cm, T.cummin(x, 0), T.logcumsumexp(x, 1)]
    (out[1].sum() + out[2].values[1].sum()).backward()
    out.append(z.grad)
    return out + [x.grad]


def _prod_grad_zeros(T):
    # test_prod_gradients with one and two zeros
    x = t(T, [[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]], requires_grad=True)
    x.prod(1).sum().backward()
    g = x.grad.clone()
    x.grad = None
    x.prod().backward()
    return g, x.grad


def _reduction_dim_out_of_range(T):
    return t(T, A).sum(2)


def _mean_int_error(T):
    return t(T, [1, 2]).mean()


def _mean_dtype(T):
    return t(T, [1, 2]).mean(dtype=T.float64), t(T, [1.0, 2.0], dtype=T.float16).mean(), t(T, [1, 2]).sum(dtype=T.float16)


def _scalar_dim_reductions(T):
    s = t(T, 3.0)
    return s.sum(0), s.max(0), s.argmax(0), s.std(0, correction=0), s.logsumexp(0), s.cumsum(0), s.sum(-1, keepdim=True)


CASES = {k[1:]: v for k, v in dict(globals()).items() if k.startswith("_") and callable(v) and not k.startswith("__")}

XFAIL = {}


@pytest.mark.parametrize("fn", outcome_params(CASES, XFAIL))
def test_ufuncs_reductions_round13(fn):
    same_outcome(fn)
