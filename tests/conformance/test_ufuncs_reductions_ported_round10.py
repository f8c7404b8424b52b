"""Round 10: gaps left in PyTorch's test/test_binary_ufuncs.py (TestBinaryUfuncs) and
test/test_reductions.py (TestReductions), CPU, float32/float64 and integer dtypes. Each body runs
under the ``T`` fixture, once with torch 2.13 (so torch itself checks every expectation the port
makes) and once with tracegrad; where the original compared with NumPy the port does too. Inputs
come from seeded NumPy generators so both runs see the same numbers; each test names its
original. Shapes are few and small: every distinct shape is an XLA compile."""
import itertools
import math
import warnings

import numpy as np
import pytest

NAN, INF = float("nan"), float("inf")


def _np(t):
    return np.asarray(t.detach().numpy())


def _eq(got, want, rtol=1e-5, atol=1e-6, dtype=None):
    """Shape and values (nan == nan) of ``got`` against ``want`` (tensor, array or list)."""
    g = _np(got)
    w = _np(want) if hasattr(want, "detach") else np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    if dtype is not None:
        assert str(got.dtype).rsplit(".")[-1] == dtype, got.dtype
    if g.dtype.kind in "biu" and w.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


def _dt(t):
    return str(t.dtype).rsplit(".")[-1]


def _randn(T, shape, seed=0, dtype="float32"):
    return T.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


# ==== test_binary_ufuncs.py ======================================================================
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("zero", [0.0, -0.0])
def test_divide_by_zero_rounding(T, dtype, zero):
    # TestBinaryUfuncs.test_divide_by_zero_rounding: every rounding mode of x / 0 is NumPy's x / 0
    vals = [-1, 0, 1, -INF, INF, NAN]
    a = T.tensor(vals, dtype=getattr(T, dtype))
    with np.errstate(all="ignore"):
        exp = np.divide(np.array(vals, dtype=dtype), np.array(zero, dtype=dtype))
    for mode in (None, "trunc", "floor"):
        _eq(T.div(a, zero, rounding_mode=mode), exp, dtype=dtype)
        _eq(T.div(a, T.full_like(a, zero), rounding_mode=mode), exp, dtype=dtype)


def test_bool_tensor_comparison_ops(T):
    # TestBinaryUfuncs.test_bool_tensor_comparison_ops
    a = T.tensor([True, False, True, False, True, False], dtype=T.bool)
    b = T.tensor([True, False, True, True, True, True], dtype=T.bool)
    _eq(a == b, [True, True, True, False, True, False], dtype="bool")
    _eq(a != b, [False, False, False, True, False, True], dtype="bool")
    _eq(a < b, [False, False, False, True, False, True], dtype="bool")
    _eq(a > b, [False, False, False, False, False, False], dtype="bool")
    _eq(a >= b, [True, True, True, False, True, False], dtype="bool")
    _eq(a <= b, [True, True, True, True, True, True], dtype="bool")
    _eq(a > False, [True, False, True, False, True, False], dtype="bool")
    _eq(a == T.tensor(True, dtype=T.bool), [True, False, True, False, True, False], dtype="bool")
    _eq(a == T.tensor(0, dtype=T.bool), [False, True, False, True, False, True], dtype="bool")
    assert not a.equal(b)


@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or",
                                "logical_xor"])
def test_comparison_ops_must_take_bool_output(T, op):
    # TestBinaryUfuncs.test_comparison_ops_must_take_bool_output: the result is bool for any inputs
    for x, y in ((T.tensor([True]), T.tensor([False])), (T.tensor([1, 2]), T.tensor([2.5, 1.0]))):
        assert getattr(T, op)(x, y).dtype == T.bool


@pytest.mark.parametrize("op", ["lt_", "le_", "gt_", "ge_", "eq_", "ne_"])
def test_inplace_comparison_ops_keep_self_dtype(T, op):
    # TestBinaryUfuncs.test_inplace_comparison_ops_require_inputs_have_same_dtype (torch 2.13: an
    # in-place comparison of an int tensor with a float one writes the bool result as self's dtype)
    x = T.tensor([1, 3])
    y = T.tensor([2.0, 2.0])
    r = getattr(x, op)(y)
    assert r is x and x.dtype == T.int64
    want = {"lt_": [1, 0], "le_": [1, 0], "gt_": [0, 1], "ge_": [0, 1], "eq_": [0, 0],
            "ne_": [1, 1]}[op]
    _eq(x, np.array(want, dtype=np.int64), dtype="int64")


@pytest.mark.parametrize("dtype", ["int16", "int32", "int64"])
def test_signed_shift(T, dtype):
    # TestBinaryUfuncs.test_signed_shift: shifts of negative ints are arithmetic
    a = T.tensor([-10, 10], dtype=getattr(T, dtype))
    _eq(a << 2, np.array([-40, 40]), dtype=dtype)
    _eq(a >> 1, np.array([-5, 5]), dtype=dtype)
    _eq(T.bitwise_left_shift(a, 1), np.array([-20, 20]), dtype=dtype)
    _eq(T.bitwise_right_shift(a, 2), np.array([-3, 2]), dtype=dtype)


def test_addcmul_scalars_as_floats(T):
    # TestBinaryUfuncs.test_addcmul_scalars_as_floats: a 0-dim tensor without grad binds to value=
    x = T.tensor(2.0)
    y = T.tensor(3.0)
    # 3 + (3 * 3) * 2
    assert y.addcmul(y, y, value=x).item() == 21
    x = T.tensor(2.0, requires_grad=True)
    with pytest.raises(Exception):
        y.addcmul(y, y, value=x)
    # the same parser rule on addcdiv's value and add/sub's alpha; a 1-element non-0-dim tensor
    # does not bind to a Number either
    with pytest.raises(TypeError, match="value"):
        y.addcdiv(y, y, value=x)
    with pytest.raises(TypeError, match="alpha"):
        T.add(y, y, alpha=x)
    with pytest.raises(TypeError, match="alpha"):
        T.sub(y, y, alpha=T.tensor([2.0]))
    with pytest.raises(TypeError, match="value"):
        y.addcmul(y, y, value=T.tensor([2.0]))
    with pytest.raises(TypeError, match="alpha"):
        y.clone().sub_(y, alpha=T.tensor([2.0]))
    assert T.add(y, y, alpha=T.tensor(2.0)).item() == 9
    assert y.addcdiv(y, y, value=T.tensor(2.0)).item() == 5


@pytest.mark.parametrize("tail", [1, 63, 67, 130])
def test_add_with_tail(T, tail):
    # TestBinaryUfuncs.test_add_with_tail (size 4096 + tail in the original; 64 + tail here)
    rng = np.random.default_rng(tail)
    a = rng.standard_normal(64 + tail).astype(np.float32)
    b = rng.standard_normal(64 + tail).astype(np.float32)
    _eq(T.tensor(a) + T.tensor(b), a + b, dtype="float32")


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_and_float_pow(T, dtype):
    # TestBinaryUfuncs.test_int_and_float_pow: int ** int stays int, int ** float and float ** int
    # promote to the default float dtype, compared with NumPy
    base = np.arange(-4, 5, dtype=dtype)
    t = T.tensor(base)
    _eq(t ** 2, base ** 2, dtype=dtype)
    _eq(T.pow(t, 3), base ** 3, dtype=dtype)
    _eq(t.abs() ** 2.5, np.abs(base).astype(np.float64) ** 2.5, rtol=1e-5, dtype="float32")
    _eq(1.5 ** t, 1.5 ** base.astype(np.float64), rtol=1e-5, dtype="float32")
    _eq(2 ** t.abs(), 2 ** np.abs(base), dtype=dtype)
    _eq(t.float() ** 2, base.astype(np.float32) ** 2, dtype="float32")


def test_complex_scalar_pow_tensor(T):
    # TestBinaryUfuncs.test_complex_scalar_pow_tensor: a complex Python base with a real tensor
    # exponent gives the default complex dtype, as NumPy's power
    exps = np.array([0.0, 1.0, 2.0, -1.5, 0.5], dtype=np.float32)
    for base in (2 + 3j, -1j, 0.5 - 0.25j):
        got = base ** T.tensor(exps)
        assert _dt(got) == "complex64"
        np.testing.assert_allclose(_np(got), np.power(base, exps.astype(np.float64)), rtol=1e-5)
        got = T.pow(base, T.tensor(exps, dtype=T.float64))
        assert _dt(got) == "complex128"
        np.testing.assert_allclose(_np(got), np.power(base, exps.astype(np.float64)), rtol=1e-12)


def test_complex_tensor_pow(T):
    # TestBinaryUfuncs.test_pow (complex tensor ** complex/real exponent against NumPy)
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(6) + 1j * rng.standard_normal(6)).astype(np.complex64)
    b = (rng.standard_normal(6) + 1j * rng.standard_normal(6)).astype(np.complex64)
    np.testing.assert_allclose(_np(T.tensor(a) ** T.tensor(b)), a ** b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(T.tensor(a) ** 2), a ** 2, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(T.tensor(a) ** 0.5), a ** 0.5, rtol=1e-5, atol=1e-5)


def test_maximum_minimum_float_int_mix(T):
    # TestBinaryUfuncs.test_maximum_minimum_type_promotion / _float_nan_and_inf (mixed operands)
    a = T.tensor([1, 5, -3], dtype=T.int32)
    b = T.tensor([2.5, NAN, -INF])
    assert T.maximum(a, b).dtype == T.float32
    _eq(T.maximum(a, b), [2.5, NAN, -3.0])
    _eq(T.minimum(a, b), [1.0, NAN, -INF])
    _eq(T.fmax(a, b), [2.5, 5.0, -3.0])
    _eq(T.fmin(a, b), [1.0, 5.0, -INF])
    assert T.maximum(a, T.tensor([1, 1], dtype=T.int64)[:1]).dtype == T.int64


# ==== test_reductions.py =========================================================================
_CMP = [
    ("amax", lambda T, x, **k: T.amax(x, **k)),
    ("amin", lambda T, x, **k: T.amin(x, **k)),
    ("max", lambda T, x, **k: T.max(x, **k).values),
    ("min", lambda T, x, **k: T.min(x, **k).values),
    ("median", lambda T, x, **k: T.median(x, **k).values),
    ("kthvalue", lambda T, x, **k: T.kthvalue(x, 1, **k).values),
    ("argmax", lambda T, x, **k: T.argmax(x, **k)),
    ("argmin", lambda T, x, **k: T.argmin(x, **k)),
    ("mode", lambda T, x, **k: T.mode(x, **k).values),
]


@pytest.mark.parametrize("name", [n for n, _ in _CMP])
def test_tensor_compare_ops_empty(T, name):
    # TestReductions.test_tensor_compare_ops_empty: reducing a nonzero dim of an empty tensor gives
    # an empty result; reducing its zero-size dim raises IndexError
    fn = dict(_CMP)[name]
    x = T.zeros(2, 0, 4)
    assert tuple(fn(T, x, dim=2).shape) == (2, 0)
    assert tuple(fn(T, x, dim=-1).shape) == (2, 0)
    assert tuple(fn(T, x, dim=2, keepdim=True).shape) == (2, 0, 1)
    with pytest.raises(IndexError, match="Expected reduction dim"):
        fn(T, x, dim=1)


def test_tensor_reduce_ops_empty(T):
    # TestReductions.test_tensor_reduce_ops_empty: reductions with an identity fill it in
    x = T.zeros(2, 0, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = [
            (T.sum, 0.0), (T.prod, 1.0), (T.nansum, 0.0), (T.mean, NAN), (T.nanmean, NAN),
            (T.logsumexp, -INF), (T.std, NAN), (T.var, NAN),
            (lambda x, dim, **k: T.var_mean(x, dim, **k)[1], NAN),
            (T.count_nonzero, 0),
        ]
        for fn, ident in cases:
            r = fn(x, 1)
            assert tuple(r.shape) == (2, 4)
            _eq(r.float(), np.full((2, 4), ident, dtype=np.float32))
            assert tuple(fn(x, 2).shape) == (2, 0)
            if fn is not T.count_nonzero:
                assert tuple(fn(x, 1, keepdim=True).shape) == (2, 1, 4)
    assert T.sum(x).item() == 0 and T.prod(x).item() == 1
    assert math.isnan(T.mean(x).item())


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool"])
def test_reduction_empty_any_all(T, dtype):
    # TestReductions.test_reduction_empty_any_all: any/all of empty are False/True, bool results
    # (uint8 keeps uint8)
    x = T.zeros(2, 0, 4, dtype=getattr(T, dtype))
    out = "uint8" if dtype == "uint8" else "bool"
    assert _dt(T.any(x)) == out and not bool(T.any(x))
    assert _dt(T.all(x)) == out and bool(T.all(x))
    _eq(T.any(x, 1), np.zeros((2, 4), dtype=out), dtype=out)
    _eq(T.all(x, 1), np.ones((2, 4), dtype=out), dtype=out)
    assert tuple(T.any(x, 2).shape) == (2, 0) and tuple(T.all(x, 1, keepdim=True).shape) == (2, 1, 4)


_NAN_FNS = [
    ("min", lambda x: x.min()), ("max", lambda x: x.max()),
    ("amin", lambda x: x.amin()), ("amax", lambda x: x.amax()),
    ("min_dim", lambda x: x.min(0).values), ("max_dim", lambda x: x.max(0).values),
    ("amin_dim", lambda x: x.amin(0)), ("amax_dim", lambda x: x.amax(0)),
    ("aminmax", lambda x: x.aminmax(dim=0).min),
]


@pytest.mark.parametrize("name", [n for n, _ in _NAN_FNS])
def test_min_max_nan(T, name):
    # TestReductions.test_min_max_nan: a NaN wins every min/max it takes part in
    f = dict(_NAN_FNS)[name]
    a = T.arange(25.0).view(5, 5)
    a[2, 2] = NAN
    ref = np.arange(25.0, dtype=np.float32).reshape(5, 5)
    ref[2, 2] = np.nan
    np_f = np.min if ("min" in name) else np.max
    _eq(f(a), np_f(ref) if "dim" not in name and name != "aminmax" else np_f(ref, axis=0))


def test_min_max_dim_nan_indices(T):
    # TestReductions.test_min_max_nan (the indices half): max/min over a dim point at the NaN
    a = T.tensor([[1.0, NAN, 3.0], [NAN, 0.0, NAN]])
    v, i = a.max(1)
    _eq(v, [NAN, NAN])
    _eq(i, np.array([1, 0]))
    _eq(a.min(1).indices, np.array([1, 0]))
    _eq(a.argmax(1), np.array([1, 0]))
    _eq(a.argmin(0), np.array([1, 0, 1]))


def test_amin_amax_some_dims(T):
    # TestReductions.test_amin_amax_some_dims: every dim subset, keepdim or not, against NumPy
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    t = T.tensor(x)
    for k in (1, 2, 3):
        for dims in itertools.combinations(range(3), k):
            for keepdim in (False, True):
                _eq(T.amax(t, dims, keepdim), np.amax(x, axis=dims, keepdims=keepdim))
                _eq(T.amin(t, dims, keepdim), np.amin(x, axis=dims, keepdims=keepdim))


def test_sum_noncontig(T):
    # TestReductions.test_sum_noncontig: a permuted (non-contiguous) input sums as NumPy
    x = np.random.default_rng(2).standard_normal((1, 5, 3, 4)).astype(np.float32)
    t = T.tensor(x).permute(0, 3, 1, 2)
    xp = x.transpose(0, 3, 1, 2)
    assert not t.is_contiguous()
    _eq(t.sum(), xp.sum(), rtol=1e-5, atol=1e-5)
    _eq(t.sum(dim=(2, 3)), xp.sum(axis=(2, 3)), rtol=1e-5, atol=1e-5)
    _eq(t.sum(dim=1, keepdim=True), xp.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "prod", "nansum", "std", "var",
                                "logsumexp", "count_nonzero"])
def test_dim_default_none_single_multi(T, op):
    # TestReductions.test_dim_default / test_dim_none / test_dim_single / test_dim_multi /
    # test_dim_multi_unsorted / test_dim_negative / test_dim_default_keepdim
    x = np.random.default_rng(4).standard_normal((2, 3, 4)).astype(np.float32)
    t = T.tensor(x)
    npf = {"sum": np.sum, "mean": np.mean, "amax": np.amax, "amin": np.amin, "prod": np.prod,
           "nansum": np.nansum, "std": lambda a, axis=None, keepdims=False: np.std(
               a, axis=axis, ddof=1, keepdims=keepdims),
           "var": lambda a, axis=None, keepdims=False: np.var(a, axis=axis, ddof=1,
                                                               keepdims=keepdims),
           "logsumexp": lambda a, axis=None, keepdims=False: np.log(np.sum(
               np.exp(a), axis=axis, keepdims=keepdims)),
           "count_nonzero": lambda a, axis=None, keepdims=False: np.count_nonzero(a, axis=axis)}[op]
    fn = getattr(T, op)
    tol = dict(rtol=1e-5, atol=1e-5)
    if op != "logsumexp":                       # logsumexp needs a dim
        _eq(fn(t), npf(x), **tol)                # test_dim_default
    if op not in ("count_nonzero",):
        _eq(fn(t, 1), npf(x, axis=1), **tol)                                   # test_dim_single
        _eq(fn(t, -1, keepdim=True), npf(x, axis=-1, keepdims=True), **tol)     # test_dim_negative
        if op != "prod":                        # prod takes one int dim only
            _eq(fn(t, (0, 2)), npf(x, axis=(0, 2)), **tol)                     # test_dim_multi
            _eq(fn(t, (2, 0), keepdim=True), npf(x, axis=(0, 2), keepdims=True), **tol)
    else:
        _eq(fn(t, 1), npf(x, axis=1))
        _eq(fn(t, (0, 2)), npf(x, axis=(0, 2)))
    if op in ("sum", "mean", "amax", "amin", "nansum", "std", "var"):
        _eq(fn(t, None), npf(x), **tol)                                        # test_dim_none


def test_dim_reduction_repeated_and_out_of_range(T):
    # TestReductions.test_dim_multi_duplicate / test_dim_out_of_range
    t = T.ones(2, 3)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        T.sum(t, (0, 0))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        T.amax(t, (1, -1))
    with pytest.raises(IndexError, match="Dimension out of range"):
        T.sum(t, 2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        T.mean(t, (0, -3))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_std_var_mean_correction_dims(T, dtype):
    # TestReductions.test_std_mean_correction / test_var_mean_correction against NumPy
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(dtype)
    t = T.tensor(x)
    for dim, corr, keep in itertools.product((None, 0, 1, (0, 1)), (0, 1, 2), (False, True)):
        s, m = T.std_mean(t, dim=dim, correction=corr, keepdim=keep)
        v, m2 = T.var_mean(t, dim=dim, correction=corr, keepdim=keep)
        ax = dim
        _eq(s, np.std(x, axis=ax, ddof=corr, keepdims=keep), rtol=1e-5, dtype=dtype)
        _eq(v, np.var(x, axis=ax, ddof=corr, keepdims=keep), rtol=1e-5, dtype=dtype)
        _eq(m, np.mean(x, axis=ax, keepdims=keep), rtol=1e-5, atol=1e-6, dtype=dtype)
        _eq(m2, m)


def test_reduction_grads(T):
    # TestReductions: backward of amax/amin split ties evenly, max(dim) routes to the index
    x = T.tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]], requires_grad=True)
    T.amax(x, 1).sum().backward()
    _eq(x.grad, [[0.0, 0.5, 0.5], [0.5, 0.0, 0.5]])
    x.grad = None
    T.amin(x).backward()
    _eq(x.grad, [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    x.grad = None
    v, i = x.max(1)
    v.sum().backward()
    g = np.zeros((2, 3), dtype=np.float32)
    g[0, _np(i)[0]] = 1
    g[1, _np(i)[1]] = 1
    _eq(x.grad, g)
    x.grad = None
    T.logsumexp(x, 1).sum().backward()
    xn = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]])
    sm = np.exp(xn) / np.exp(xn).sum(1, keepdims=True)
    _eq(x.grad, sm, rtol=1e-5)


# ==== the value=/alpha= parser rule inside optimizers ============================================
def _two_steps(T, name, lr):
    w = T.tensor([1.0, 2.0], requires_grad=True)
    p = w.clone()                      # a non-leaf param, as torch's differentiable optimizer tests
    p.grad = T.tensor([0.1, 0.3])
    opt = getattr(T.optim, name)([p], lr=lr, differentiable=True)
    with T.enable_grad():
        opt.step()
        opt.step()
    return p


def test_differentiable_adam_tensor_lr(T):
    # test/optim/test_optim.py (differentiable lr): Adam with a 0-d lr that requires grad steps
    # (torch's differentiable branch divides by the step size instead of passing value=), and
    # the gradient flows: d sum(p) / d lr = -sum over steps of m_hat / (sqrt(v_hat) + eps) ~ -4
    lr = T.tensor(0.01, requires_grad=True)
    p = _two_steps(T, "Adam", lr)
    (g,) = T.autograd.grad(p.sum(), lr)
    assert abs(g.item() + 4.0) < 1e-4
    assert abs(p[0].item() - (1.0 - 0.02)) < 1e-5


@pytest.mark.parametrize("name", ["Adagrad", "Adamax", "RMSprop"])
def test_differentiable_tensor_lr_value_argument(T, name):
    # torch 2.13's single-tensor Adagrad/Adamax/RMSprop pass an lr-derived tensor that requires
    # grad to value=, which its parser refuses with TypeError
    with pytest.raises(TypeError, match="value"):
        _two_steps(T, name, T.tensor(0.01, requires_grad=True))
