"""torch 2.13's test/test_binary_ufuncs.py and test/test_unary_ufuncs.py, ported in our own
words: the special-value checks (pow with negative exponents and 0**0, floor_divide / div
rounding modes / fmod / remainder by zero and across signs, float_power promotion and its
in-place dtype error, nan_to_num defaults per dtype, frexp/ldexp, logit with and without eps,
sinc at 0, xlogy/xlog1py at 0, i0) and the gradients torch defines at the awkward points
(logit at 0 and 1 and outside [0, 1], i0 at 0, clamp on its bounds and at NaN inputs or
bounds, maximum at ties and NaNs, pow at 0). Each
program runs with torch and with tracegrad; the records must agree. Shapes are kept to a few
length-4 vectors so the file compiles few programs."""
import math

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")
NAN, INF = math.nan, math.inf


def _record(lib, program):
    """program(lib) as plain data: (dtype name, values) per tensor, or the exception's class
    and the start of its message."""
    try:
        out = program(lib)
    except Exception as e:  # noqa: BLE001 - the class is what both libraries must agree on
        return ("raised", type(e).__name__, str(e).split(";")[0][:60])
    outs = out if isinstance(out, tuple) else (out,)
    return [(str(o.dtype).split(".")[-1], o.detach().numpy()) if hasattr(o, "numpy") else o for o in outs]


def _check(program, rtol=1e-6, atol=1e-7):
    want, got = _record(torch, program), _record(tracegrad, program)
    if want and want[0] == "raised":
        assert got[:2] == want[:2], (want, got)
        return
    assert isinstance(got, list) and len(got) == len(want), (want, got)
    for (wd, wv), (gd, gv) in zip(want, got):
        assert gd == wd, (wd, gd)
        np.testing.assert_allclose(gv.astype(np.float64) if gv.dtype != bool else gv, wv.astype(np.float64) if wv.dtype != bool else wv,
                                   rtol=rtol, atol=atol, equal_nan=True)


def _grad(program, *inputs):
    """A program giving the gradients of program(lib, *leaves).sum() for float32 leaves."""
    def run(lib):
        leaves = [lib.tensor(v, requires_grad=True) for v in inputs]
        program(lib, *leaves).sum().backward()
        return tuple(x.grad for x in leaves)
    return run


def test_pow_edges():
    i4, f4 = [2, -2, 1, 0], [0.0, -0.0, 2.0, -1.0]
    _check(lambda L: L.pow(L.tensor(i4), L.tensor([-1, -1, -1, -1])))      # integer tensor ** negative integer tensor
    _check(lambda L: L.tensor(i4) ** -2)                                   # ...** a negative number: refused
    _check(lambda L: L.pow(2, L.tensor([-1, 2, 0, 3])))                    # number base, integer exponents
    _check(lambda L: L.tensor(f4) ** -1)                                   # +-inf at signed zeros
    _check(lambda L: L.pow(L.tensor(f4), L.tensor([0.0, 0.0, 0.5, 0.5])))  # 0 ** 0 == 1; (-1) ** 0.5 is NaN
    _check(lambda L: L.pow(L.tensor([3, 200, 0, 1], dtype=L.uint8), 2))     # wraps in uint8
    _check(lambda L: L.pow(L.tensor([True, False, True, False]), 2))
    _check(lambda L: L.float_power(L.tensor(i4), 2))                        # float64 from integers
    _check(lambda L: L.float_power(L.tensor(f4), L.tensor([0.5, 2.0, -1.0, 3.0])))
    _check(lambda L: L.float_power(2, L.tensor([1, 2, -1, 0])))
    _check(lambda L: L.float_power(L.tensor([1 + 1j, 2j, 1, 0]), 2))       # complex128
    _check(lambda L: L.tensor(f4).float_power_(2))                         # float32 base: RuntimeError
    _check(lambda L: L.tensor(f4, dtype=L.float64).float_power_(2))


def test_division_family_signs_and_zero():
    a, b = [-3.0, 3.0, -3.0, 3.0], [2.0, 2.0, -2.0, -2.0]
    for name in ("fmod", "remainder", "floor_divide"):
        _check(lambda L: getattr(L, name)(L.tensor(a), L.tensor(b)))                  # sign of the dividend / divisor
        _check(lambda L: getattr(L, name)(L.tensor([-3, 3, -3, 3]), L.tensor([2, 2, -2, -2])))
        _check(lambda L: getattr(L, name)(L.tensor([1.0, -1.0, 0.0, INF]), 0.0))      # float by zero: NaN / inf
        _check(lambda L: getattr(L, name)(L.tensor([1.0, -1.0, INF, -2.5]), L.tensor([INF, INF, 2.0, INF])))
    _check(lambda L: L.fmod(L.tensor([1, -1, 0, 5]), 0))                              # integer by zero: ZeroDivisionError
    _check(lambda L: L.remainder(L.tensor([1, -1, 0, 5]), 0))
    _check(lambda L: L.floor_divide(L.tensor([1, 2, 0, -1]), L.tensor([0, 0, 0, 0])))
    _check(lambda L: L.remainder(-3, L.tensor([2, -2, 3, -3])))                       # number first
    for mode in ("floor", "trunc", None):
        _check(lambda L: L.div(L.tensor([-7, 7, -8, 0]), 2, rounding_mode=mode))
        _check(lambda L: L.div(L.tensor([-7.5, 7.5, -1.0, 0.0]), L.tensor([2.0, -2.0, 0.0, 0.0]), rounding_mode=mode))
    _check(lambda L: L.div(L.tensor([-7, 7, -8, 0]), 0, rounding_mode="trunc"))       # integer by zero
    _check(lambda L: L.div(L.tensor([1, 2, 0, -1]), L.tensor([0, 0, 0, 0])))          # true division: inf / NaN


def test_special_values_of_unary_ufuncs():
    x = [NAN, INF, -INF, 1.5]
    _check(lambda L: L.nan_to_num(L.tensor(x)))                                        # float32's finite extremes
    _check(lambda L: L.nan_to_num(L.tensor(x), nan=1.0, posinf=2.0, neginf=-3.0))
    _check(lambda L: L.nan_to_num(L.tensor(x, dtype=L.float16)))                       # float16's extremes
    _check(lambda L: L.nan_to_num(L.tensor(x, dtype=L.bfloat16)).float())
    _check(lambda L: L.nan_to_num(L.tensor([1, 2, -3, 0])))                            # integers unchanged
    _check(lambda L: L.nan_to_num(L.tensor([complex(NAN, INF), 1j, complex(-INF, 0), 0j])))
    _check(lambda L: L.frexp(L.tensor([0.0, -3.5, INF, 1e-40])))                       # a subnormal normalised
    _check(lambda L: L.frexp(L.tensor([0.75, 1024.0, -0.0, NAN], dtype=L.float64)))
    _check(lambda L: L.frexp(L.tensor([1, 2, 3, 4])))                                  # RuntimeError
    _check(lambda L: L.ldexp(L.tensor([1.0, 2.0, -0.5, 0.0]), L.tensor([3, -1, 2, 100])))
    _check(lambda L: L.ldexp(L.tensor([1, 2, 3, 4]), L.tensor([3, -1, 2, 0])))        # float32 from integers
    _check(lambda L: L.ldexp(L.tensor([1.0], dtype=L.float64), L.tensor([1030])))     # past float32's range
    for eps in (None, 0.25, -0.1, 0.0):
        _check(lambda L: L.logit(L.tensor([0.0, 0.25, 1.0, -0.5]), eps=eps))
    _check(lambda L: L.logit(L.tensor([0, 1, 1, 0])))
    _check(lambda L: L.sinc(L.tensor([0.0, 1.0, 0.5, -0.0])))
    _check(lambda L: L.sinc(L.tensor([0, 1, 2, -1])))
    _check(lambda L: L.xlogy(L.tensor([0.0, 0.0, 1.0, 2.0]), L.tensor([0.0, NAN, 0.0, -1.0])))   # 0 * log(0) == 0; NaN stays
    _check(lambda L: L.special.xlog1py(L.tensor([0.0, 0.0, 1.0, 2.0]), L.tensor([-1.0, NAN, -1.0, 1.0])))
    _check(lambda L: L.i0(L.tensor([0.0, 1.0, -3.0, 10.0])), rtol=2e-6)
    _check(lambda L: L.copysign(L.tensor([1, -2, 3, 0]), L.tensor([-0.0, 0.0, -1.0, -0.0])))
    _check(lambda L: L.heaviside(L.tensor([-1.0, 0.0, 2.0, NAN]), L.tensor([0.5])))
    _check(lambda L: L.heaviside(L.tensor([-1.0, 0.0, 2.0, 0.0]), L.tensor([1])))   # mixed dtypes: RuntimeError
    _check(lambda L: L.hypot(L.tensor([3, 0, 1, 2]), L.tensor([4, 0, 1, 2])))       # integers: NotImplementedError
    _check(lambda L: L.bitwise_not(L.tensor([1.0, 2.0, 3.0, 4.0])))


def test_gradients_at_special_points():
    edges = [-0.5, 0.0, 0.05, 0.1, 0.5, 0.9, 1.0, 2.0]
    for eps in (None, 0.1, -0.1, 0.0):   # inf at 0 and 1, NaN outside [0, 1]; 0 outside [eps, 1 - eps]
        _check(_grad(lambda L, x: L.logit(x, eps=eps), edges))
    x = torch.tensor([0.5], requires_grad=True)
    assert type(tracegrad.logit(tracegrad.tensor([0.5], requires_grad=True), eps=0.1).grad_fn).__name__ \
        == type(torch.logit(x, eps=0.1).grad_fn).__name__ == "LogitBackward0"
    _check(_grad(lambda L, x: L.i0(x), [0.0, 1.0, -3.0, 10.0]), rtol=2e-6)            # i1: 0 at 0
    _check(_grad(lambda L, x: L.sinc(x), [0.0, 1.0, 0.5, -0.0]))                        # 0 at 0
    _check(_grad(lambda L, x, y: L.pow(x, y), [0.0, 0.0, 2.0, -1.0], [0.0, 2.0, 0.0, 2.0]))
    _check(_grad(lambda L, x: L.pow(x, 0.5), [0.0, 4.0, 1.0, 9.0]))                     # inf at 0
    _check(_grad(lambda L, x, y: L.xlogy(x, y), [0.0, 0.0, 1.0, 2.0], [0.0, 1.0, 2.0, 0.5]))
    _check(_grad(lambda L, x: L.clamp(x, 0.0, 1.0), [0.0, 1.0, NAN, 2.0]))              # 1 on the bounds, 0 at NaN
    xs, lo, hi = [NAN, 1.0, 3.0, -1.0], [0.0, 0.0, NAN, 0.0], [2.0, 2.0, 2.0, NAN]
    _check(_grad(lambda L, x, a, b: L.clamp(x, a, b), xs, lo, hi))                     # nothing to a NaN bound
    _check(_grad(lambda L, x, a, b: L.clamp(x, b, a), xs, lo, hi))                     # min > max: max wins
    _check(_grad(lambda L, x, a: L.clamp_min(x, a), xs, lo))
    _check(_grad(lambda L, x, b: L.clamp_max(x, b), xs, hi))
    _check(_grad(lambda L, x, a: x.clamp(min=a[:1]), xs, lo[:1]))                      # a broadcast bound sums
    _check(_grad(lambda L, x, y: L.maximum(x, y), [1.0, 2.0, NAN, 0.0], [1.0, 1.0, 0.0, NAN]))   # ties split
    _check(_grad(lambda L, x, y: L.fmod(x, y), [-3.0, 3.0, 5.5, 1.0], [2.0, -2.0, 1.5, 3.0]))
    _check(_grad(lambda L, x, y: L.remainder(x, y), [-3.0, 3.0, 5.5, 1.0], [2.0, -2.0, 1.5, 3.0]))
    _check(_grad(lambda L, x: L.nan_to_num(x), [NAN, INF, -INF, 1.0]))                  # 0 where replaced
    _check(_grad(lambda L, x: L.abs(x), [NAN, -0.0, 0.0, -2.0]))                        # sgn: 0 at +-0 and NaN
    _check(_grad(lambda L, x, y: L.float_power(x, y), [2.0, 0.0, 1.0, 3.0], [3.0, 2.0, 0.0, -1.0]))
    _check(_grad(lambda L, x, y: L.atan2(x, y), [0.0, 1.0, -1.0, 0.0], [0.0, 1.0, 0.0, -1.0]))
    _check(_grad(lambda L, x: L.frexp(x)[0], [1.0, 3.0, -0.5, 8.0]))                    # grad / 2**exponent


def test_activation_and_loss_gradients_at_nan_and_kinks():
    """torch's backward masks test the excluded side (x <= 0, x <= min or x >= max), so a NaN
    input takes the gradient; prelu's slope applies at 0; smooth_l1 with beta 0 is l1 (0 at
    x == target); ndtri's gradient is inf at 0 and 1; binary_cross_entropy's target gradient."""
    x4 = [NAN, 0.0, -1.0, 7.0]
    for name in ("relu", "hardtanh", "relu6", "elu", "leaky_relu", "selu", "celu"):
        _check(_grad(lambda L, x: getattr(L.nn.functional, name)(x), x4))
    _check(lambda L: L.nn.functional.hardtanh(L.tensor(x4)))                                  # NaN stays NaN
    _check(_grad(lambda L, x, w: L.nn.functional.prelu(x, w), x4, [0.25]))
    for beta in (0.0, 1.0):
        _check(_grad(lambda L, x, t: L.nn.functional.smooth_l1_loss(x, t, beta=beta), [0.0, 1.0, 2.0, -3.0], [0.0, 0.0, 0.0, 0.0]))
    _check(_grad(lambda L, x: L.special.ndtri(x), [0.0, 0.5, 1.0, 2.0]))
    # binary_cross_entropy at x == 0 or 1: the input's gradient stays finite (its eps), the
    # target's is -logit(x), unclamped: inf / -inf
    _check(_grad(lambda L, x, t: L.nn.functional.binary_cross_entropy(x, t), [0.0, 1.0, 0.5, 1.0], [0.0, 1.0, 1.0, 0.0]))


def test_new_derivative_rules_under_double_backward_and_forward_ad():
    """The rules above (logit, maximum, clamp, relu, ndtri) also as torch under create_graph and
    in forward-mode AD."""
    def program(lib):
        x = lib.tensor([0.2, 0.7, 0.0, 1.0], requires_grad=True)
        y = lib.tensor([0.5, 0.5, 0.0, 2.0])
        out = []
        for f in (lambda v: lib.logit(v), lambda v: lib.maximum(v, y) ** 2, lambda v: lib.clamp(v, 0.1, 0.8) ** 2):
            g, = lib.autograd.grad(f(x).sum(), x, create_graph=True)
            out += [g.detach(), lib.autograd.grad(g.sum(), x)[0]]
        fa = lib.autograd.forward_ad
        with fa.dual_level():
            d = fa.make_dual(x.detach(), lib.ones(4))
            for r in (lib.logit(d, eps=0.1), lib.nn.functional.relu(d - 0.5), lib.special.ndtri(d)):
                out.append(fa.unpack_dual(r).tangent)
        return tuple(out)
    _check(program, rtol=2e-6)
