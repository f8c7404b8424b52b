"""PyTorch's test/test_type_promotion.py (TestTypePromotion) ported: each test names its original
and restates its checks in our own code. Bodies run under torch and tracegrad (the ``T``
fixture), so torch 2.13 checks every expectation the port makes.

Not ported: the sparse tests (``test_sparse_*``, ``_test_sparse_op``: tracegrad has no sparse
tensors), ``complex32``/``chalf`` and float8 cases (no such dtypes here), and the half of
``test_numpy_array_binary_ufunc_promotion`` that asserts torch's known bug (pytorch#36363: an
ndarray on the left of ``+``). Dtype products are sampled (one pair per promotion category
rather than every pair) to keep the file fast; ``float_double_default_dtype`` is the ``dd``
fixture."""
import itertools
import operator

import numpy as np
import pytest

_RNG = np.random.default_rng(1234)


@pytest.fixture(params=["float32", "float64"])
def dd(T, request):
    """torch's ``float_double_default_dtype``: the body runs under both default dtypes."""
    old = T.get_default_dtype()
    T.set_default_dtype(getattr(T, request.param))
    yield getattr(T, request.param)
    T.set_default_dtype(old)


def _vals(t):
    """Values as a numpy array (complex kept; half/bfloat16/bool via float64)."""
    t = t.detach()
    if t.dtype.is_complex:
        return np.asarray(t.cpu().tolist(), dtype=np.complex128)
    return np.asarray(t.cpu().tolist(), dtype=np.float64)


def _same(a, b, *, rtol=1e-6, atol=1e-6, exact_dtype=True):
    if exact_dtype:
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(_vals(a), _vals(b), rtol=rtol, atol=atol, equal_nan=True)


def _dt(T, name):
    return getattr(T, name)


def _test_tensor(T, dtype, shape=(5, 5, 5), remove_zeros=False):
    """torch's ``_get_test_tensor``: random values of ``dtype`` (made from numpy so both
    libraries see the same numbers)."""
    if dtype == T.bool:
        v = _RNG.integers(int(remove_zeros), 2, shape).astype(bool)
        return T.tensor(v)
    if dtype.is_floating_point or dtype.is_complex:
        v = _RNG.standard_normal(shape)
        if remove_zeros:
            v[np.abs(v) < 0.05] = 5
        return T.tensor(v, dtype=T.float32).to(dtype)
    signed = dtype != T.uint8
    v = _RNG.integers(-5 if signed else 0, 10, shape)
    if remove_zeros:
        v[v == 0] = 5
    return T.tensor(v).to(dtype)


# ---- in-place and basic promotion ------------------------------------------------------------
def test_inplace(T, dd):
    # TestTypePromotion.test_inplace: in-place ops do not promote; the result must be castable
    # to self's dtype (int <- float and bool <- uint8 refuse; uint8 <- int16 demotes)
    int_tensor = T.ones([4, 4, 4], dtype=T.int32)
    with pytest.raises(RuntimeError, match="can't be cast to"):
        int_tensor.add_(1.5)
    int_tensor.add_(T.ones([4, 4, 4], dtype=T.int64))
    int_tensor.add_(1)
    _same(int_tensor, T.ones([4, 4, 4], dtype=T.int32) + 2)
    bool_tensor = T.tensor([1, 1, 1], dtype=T.bool)
    uint8_tensor = T.tensor([1, 1, 1], dtype=T.uint8)
    with pytest.raises(RuntimeError, match="can't be cast to"):
        bool_tensor.add_(uint8_tensor)
    uint8_tensor *= T.tensor([1, 1, 1], dtype=T.int16)
    assert uint8_tensor.dtype == T.uint8


def test_unsigned(T, dd):
    # TestTypePromotion.test_unsigned: a Python int does not promote uint8
    assert (T.ones(3, dtype=T.uint8) + 5).dtype == T.uint8


@pytest.mark.parametrize("lo,hi", [("int32", "int64"), ("float32", "float64"), ("complex64", "complex128")])
def test_int_float_complex_promotion(T, dd, lo, hi):
    # TestTypePromotion.test_int_promotion / test_float_promotion / test_complex_promotion
    # (first part): the wider dtype wins, from either side
    a = T.ones([4, 4, 4], dtype=_dt(T, lo))
    b = T.ones([4, 4, 4], dtype=_dt(T, hi))
    _same(a + b, b + b)
    _same(b + a, b + b)


def test_complex_promotion_scalars(T, dd):
    # TestTypePromotion.test_complex_promotion: a Python number or a 0-dim tensor does not
    # widen a complex64 tensor; complex scalars and tensors against float/int tensors
    a = T.tensor(_RNG.standard_normal(3), dtype=T.complex64)
    assert (a * 5).dtype == T.complex64
    assert (a + T.tensor(5.5, dtype=T.double)).dtype == T.complex64

    # (a half tensor would give complex32, a dtype tracegrad lacks: not ported)
    to_complex = {T.bfloat16: T.complex64, T.float32: T.complex64,
                  T.float64: T.complex128}

    def check(s, t):
        if t.dtype.is_floating_point:
            expected = to_complex[t.dtype]
        elif isinstance(s, T.Tensor):
            expected = s.dtype
        else:
            expected = to_complex[T.get_default_dtype()]
        assert (s * t).dtype == expected
        assert (t * s).dtype == expected
        assert T.result_type(s, t) == expected
        assert T.result_type(t, s) == expected

    for sdt, tdts in ((T.cfloat, (T.float, T.double, T.long)), (T.cdouble, (T.float, T.bfloat16))):
        s = T.tensor(1.5 - 0.5j, dtype=sdt)
        for tdt in tdts:
            t = T.tensor([1.0, 2.0, 3.0]).to(tdt)
            check(s, t)
            check(s.item(), t)


def test_complex_scalar_mult_tensor_promotion(T, dd):
    # TestTypePromotion.test_complex_scalar_mult_tensor_promotion
    a = 1j * T.ones(2)
    a = a + 1j
    b = T.tensor([2j, 2j])
    _same(a, b)


def test_add_wrapped(T, dd):
    # TestTypePromotion.test_add_wrapped: int32 + Python int stays int32
    a = T.ones([4, 4, 4], dtype=T.int)
    _same(a + 1, a + a)


def test_int_to_float(T, dd):
    # TestTypePromotion.test_int_to_float
    c = T.ones([4, 4, 4], dtype=T.int32) + T.ones([4, 4, 4], dtype=T.float)
    assert c.dtype == T.float32


def test_from_issue(T, dd):
    # TestTypePromotion.test_from_issue (pytorch#9515): wrapped numbers and 0-dim tensors
    a = T.tensor(_RNG.random(3), dtype=T.float32)
    u = T.tensor([0, 0, 1], dtype=T.uint8)
    assert (a * 5).dtype == T.float32
    assert (u + 1).dtype == T.uint8
    assert (u + 1000).dtype == T.uint8
    other = T.tensor(5.5, dtype=T.double)
    assert (u + 5.5).dtype == T.get_default_dtype()
    assert (u + other).dtype == T.double
    assert (a + other).dtype == T.float32


def test_half(T, dd):
    # TestTypePromotion.test_half (torch 2.13 computes half on CPU)
    half = T.tensor(5.5, dtype=T.float16)
    assert (half + 2.2).dtype == T.float16
    assert (half + 100000).dtype == T.float16
    assert (half + T.tensor(100000.0)).dtype == T.get_default_dtype()


def test_bfloat16(T):
    # TestTypePromotion.test_bfloat16: scalars keep bfloat16 (complex ones give cfloat);
    # against tensors of every dtype, promote_types and the sum agree
    bf = T.tensor(5.5, dtype=T.bfloat16)
    for scalar in (2.2, 5, 100000):
        assert (bf + scalar).dtype == T.bfloat16
        _same(scalar + bf, bf + scalar)
    for scalar in (complex(1, 1), complex(-2, 0), complex(0, -3)):
        assert (bf + scalar).dtype == T.cfloat
        _same(bf + scalar, scalar + bf)
    for name in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
                 "float64", "complex64", "complex128"):
        dtype = _dt(T, name)
        t = T.tensor(1, dtype=dtype)
        _same(bf + t, t + bf)
        if name in ("float16",):
            expected = T.float32
        elif dtype.is_floating_point and name != "bfloat16" or dtype.is_complex:
            expected = dtype
        else:
            expected = T.bfloat16
        assert T.promote_types(dtype, T.bfloat16) == expected
        assert T.promote_types(T.bfloat16, dtype) == expected
        assert (bf + t).dtype == expected


def test_alternate_result(T, dd):
    # TestTypePromotion.test_alternate_result: out= of a lower category refuses; a wider
    # float out receives the result
    x = T.tensor([1, 1, 1, 1], dtype=T.float)
    o = T.tensor([0, 0, 0, 0], dtype=T.long)
    with pytest.raises(RuntimeError, match="can't be cast to"):
        T.add(x, x, out=o)
    d = T.tensor([1, 1, 1, 1], dtype=T.double)
    T.add(x, x, out=d)
    assert d.dtype == T.double
    x = x.to(T.double)
    _same(x + x, d)


def test_mixed_type_backward(T, dd):
    # TestTypePromotion.test_mixed_type_backward: gradients come back in each input's dtype
    f = T.ones([3, 3], dtype=T.float, requires_grad=True)
    ten = T.tensor([10.0], dtype=T.double)
    tens = f * ten
    (tens + 2).sum().backward()
    assert f.grad.dtype == T.float
    _same(tens, f.grad.to(T.double))
    for func in (T.add, T.sub, T.rsub, T.mul, T.div):
        for d1, d2 in ((T.float, T.double), (T.float, T.int), (T.double, T.float), (T.double, T.long)):
            x = T.ones(10, requires_grad=True, dtype=d1)
            y = T.ones(10, dtype=d2)
            func(x, y).sum().backward()
            assert x.grad.dtype == d1


# one pair per promotion category (bool/unsigned/signed/float/complex, across and within)
_PAIRS = [("bool", "uint8"), ("uint8", "int8"), ("int64", "float16"), ("bfloat16", "float16"),
          ("float32", "float64"), ("int32", "complex64"), ("float64", "complex64")]


@pytest.mark.parametrize("pair", _PAIRS, ids="-".join)
def test_many_promotions(T, pair):
    # TestTypePromotion.test_many_promotions: op(a, b) == op(a.to(common), b.to(common)) in
    # dtype and value, for contiguous and non-contiguous operands (strides differ)
    dt1, dt2 = (_dt(T, n) for n in pair)
    common = T.promote_types(dt1, dt2)
    for op, non_contiguous in itertools.product((T.add, T.sub, T.mul, T.div, T.rsub), (True, False)):
        if op in (T.sub, T.rsub) and T.bool in (dt1, dt2):
            continue      # subtraction with a bool tensor is refused (tested below)
        first = _test_tensor(T, dt1)
        second = _test_tensor(T, dt2, remove_zeros=op is T.div)
        if non_contiguous:
            first, second = first.transpose(0, 2), second.transpose(2, 1)
            assert first.stride() != second.stride()
        assert first.is_contiguous() != non_contiguous
        assert second.is_contiguous() != non_contiguous
        result = op(first, second)
        expected = op(first.to(common), second.to(common))
        tol = 1e-2 if common in (T.float16, T.bfloat16) else 1e-6
        _same(result, expected, rtol=tol, atol=tol)


def test_bool_subtraction_refused(T):
    # TestTypePromotion.test_many_promotions' skipped case: ``-`` on bools is a RuntimeError
    b = T.tensor([True, False])
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors"):
        T.sub(b, b)
    for other in (T.tensor([1, 2], dtype=T.uint8), T.tensor([1.0, 2.0])):
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
            T.sub(b, other)


def test_non_promoting_ops(T, dd):
    # TestTypePromotion.test_non_promoting_ops: lerp needs one dtype
    x = T.ones(4, dtype=T.double)
    with pytest.raises(RuntimeError):
        T.lerp(x, T.ones(4, dtype=T.float), 1)


def test_alpha_mismatch(T, dd):
    # TestTypePromotion.test_alpha_mismatch: a float alpha with integral/bool tensors
    x = T.ones(4, dtype=T.int)
    with pytest.raises(RuntimeError, match="alpha must not be"):
        T.add(x, x, alpha=1.1)
    x = x.to(T.bool)
    with pytest.raises(RuntimeError, match="alpha must not be"):
        T.add(x, x, alpha=1.1)
    _same(x + x, T.add(x, x, alpha=True))


def test_booleans(T, dd):
    # TestTypePromotion.test_booleans
    onedim = T.tensor([True])
    _same(onedim + onedim, onedim)
    _same(onedim + True, onedim)
    for a, b in ((True, True), (False, False), (False, True)):
        r = T.add(a, b)
        assert r.dtype == T.bool and bool(r) == (a or b)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported"):
        T.add(1, 1, alpha=True)
    _same(T.add(T.tensor(True), T.tensor(True), True), T.tensor(True))


def test_create_bool_tensors(T, dd):
    # TestTypePromotion.test_create_bool_tensors: bools are integers to the factories
    _same(T.arange(False, True), T.tensor([0], dtype=T.int64))
    _same(T.arange(True), T.tensor([0], dtype=T.int64))
    _same(T.arange(False, True, 0.5), T.tensor([0, 0.5], dtype=T.get_default_dtype()))
    _same(T.arange(False, False), T.ones(0, dtype=T.int64))
    _same(T.linspace(False, True, steps=10), T.linspace(0, 1, steps=10))
    _same(T.logspace(False, True, steps=10), T.logspace(0, 1, steps=10), rtol=1e-5)
    _same(T.scalar_tensor(False), T.tensor(0.0))


def _kind(T, x):
    """torch's ``_get_dtype`` of test_result_type: a scalar's dtype as if it were a tensor."""
    if isinstance(x, T.Tensor):
        return x.dtype
    return {bool: T.bool, int: T.int64, float: T.float32, complex: T.complex64}[type(x)]


@pytest.mark.parametrize("pair", _PAIRS + [("bool", "bool")], ids="-".join)
def test_result_type(T, pair):
    # TestTypePromotion.test_result_type: for tensors, 0-dim tensors and Python scalars of two
    # dtypes, ``a + b`` has dtype ``result_type(a, b)`` (and ``promote_types`` within a class)
    d1, d2 = (_dt(T, n) for n in pair)
    a_t, a_s = T.tensor((0, 1), dtype=d1), T.tensor(1, dtype=d1)
    b_t, b_s = T.tensor((1, 0), dtype=d2), T.tensor(1, dtype=d2)
    combo = ((a_t, a_s, a_s.item()), (b_t, b_s, b_s.item()))
    for a, b in itertools.product(*combo):
        res = a + b
        ra = _kind(T, res)
        both_py = not isinstance(a, T.Tensor) and not isinstance(b, T.Tensor)
        if both_py:
            continue          # Python's own arithmetic
        assert ra == T.result_type(a, b), (a, b)
        if any(a is x and b is y for x, y in zip(*combo)):
            assert ra == T.promote_types(_kind(T, a), _kind(T, b))


def test_result_type_tensor_vs_scalar(T, dd):
    # TestTypePromotion.test_result_type_tensor_vs_scalar: spot checks, both orders
    def spot(a, b, res):
        assert T.result_type(a, b) == res
        assert T.result_type(b, a) == res

    spot(T.tensor([1, 2], dtype=T.half), T.tensor(1, dtype=T.long), T.half)
    spot(T.tensor(1, dtype=T.float), T.tensor([1, 2], dtype=T.double), T.double)
    spot(T.tensor(1, dtype=T.int), 1, T.int)
    spot(T.tensor(1), 1.0, T.get_default_dtype())
    spot(T.tensor(1, dtype=T.long), T.tensor([1, 1], dtype=T.int), T.int)
    spot(T.tensor([1.0, 1.0], dtype=T.float), 1.0, T.float)
    spot(T.tensor([1.0, 1.0], dtype=T.complex64), T.tensor(1.0, dtype=T.complex128), T.complex64)
    spot(T.tensor([1.0, 1.0], dtype=T.complex128), T.tensor(1.0, dtype=T.complex64), T.complex128)
    spot(T.tensor([1, 1], dtype=T.bool), 1.0, T.get_default_dtype())


def test_can_cast(T, dd):
    # TestTypePromotion.test_can_cast
    assert T.can_cast(T.double, T.float)
    assert not T.can_cast(T.float, T.int)


_CMP = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
        "ne": operator.ne}
_BIG = {"uint8": 1 << 5, "int8": 1 << 5, "int16": 1 << 10, "int32": 1 << 20, "int64": 1 << 35,
        "float16": 1 << 10, "float32": 1 << 20, "float64": 1 << 35, "complex64": 1 << 20,
        "complex128": 1 << 35}


@pytest.mark.parametrize("name", list(_CMP))
def test_comparison_ops_with_type_promotion(T, name):
    # TestTypePromotion.test_comparison_ops_with_type_promotion: comparisons promote (a value
    # that only fits the wider dtype compares right), give bool, with and without out=,
    # for 1-element and 0-dim operands; operand dtypes are unchanged
    fn, pyop = getattr(T, name), _CMP[name]
    for n1, n2 in (("uint8", "int64"), ("int32", "float16"), ("float32", "int64"), ("int16", "complex128")):
        d1, d2 = _dt(T, n1), _dt(T, n2)
        if (d1.is_complex or d2.is_complex) and name not in ("eq", "ne"):
            continue
        v1, v2 = _BIG[n1], _BIG[n2]
        for make in (lambda v, d: T.tensor([v], dtype=d), lambda v, d: T.tensor(v, dtype=d)):
            t1, t2 = make(v1, d1), make(v2, d2)
            expected = make(pyop(v1, v2), T.bool)
            out = fn(t1, t2, out=T.empty(0, dtype=T.bool))
            _same(out, expected)
            _same(fn(t1, t2), expected)
            assert t1.dtype == d1 and t2.dtype == d2


@pytest.mark.parametrize("name", ["lt", "le", "gt", "ge"])
def test_complex_assertraises(T, name):
    # TestTypePromotion.test_complex_assertraises: ordering comparisons refuse complex operands
    for d1, d2 in ((T.complex64, T.float32), (T.int64, T.complex128), (T.complex64, T.complex64)):
        u, v = T.tensor([1], dtype=d1), T.tensor([2], dtype=d2)
        with pytest.raises(RuntimeError):
            _CMP[name](u, v)


def test_lt_with_type_promotion(T, dd):
    # TestTypePromotion.test_lt_with_type_promotion: an integer 0 is below the float 0.5
    for d in (T.uint8, T.int32, T.float16, T.float64):
        for shape_val in ([0], 0):
            x = T.tensor(shape_val, dtype=d)
            for other in (0.5, T.tensor(0.5)):
                actual = x < other
                assert actual.dtype == T.bool
                assert bool(actual.all())


def test_promote_types(T, dd):
    # TestTypePromotion.test_promote_types (float8 lines not ported: no float8 dtypes)
    assert T.promote_types(T.float, T.int) == T.float
    assert T.promote_types(T.float, T.double) == T.double
    assert T.promote_types(T.int, T.uint8) == T.int


def test_promote_self(T, dd):
    # TestTypePromotion.test_promote_self
    for n in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
              "complex64", "complex128"):
        d = _dt(T, n)
        assert T.promote_types(d, d) == d


def test_indexing_fail(T, dd):
    # TestTypePromotion.test_indexing_fail (pytorch#28010): index_put does not promote
    a = T.ones(5, 2, dtype=T.double)
    b = T.zeros(5, dtype=T.int)
    with pytest.raises(RuntimeError):
        a[:, [1]] = b.unsqueeze(-1)


def test_index_put_dtype_rules(T):
    # (not ported; around test_indexing_fail) index_put needs the values' dtype, a 0-dim value
    # included, except under a bool mask, where torch fills (and casts) like masked_fill
    a = T.ones(5, dtype=T.double)
    for key, value in (([0, 1], T.tensor(1)), ([0, 1], T.tensor([1.0, 2.0]))):
        with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
            a[key] = value
    a[T.tensor([True, False, True, False, True])] = T.tensor(2, dtype=T.int32)
    _same(a, T.tensor([2.0, 1.0, 2.0, 1.0, 2.0], dtype=T.double))


def test_indexing(T, dd):
    # TestTypePromotion.test_indexing (pytorch#27824): index_put of the same dtype; a uint8
    # slice added to a float tensor
    x = T.ones(5, 2, dtype=T.double)
    x[:, [1]] = T.zeros(5, dtype=T.double).unsqueeze(-1)
    _same(x, T.tensor([(1, 0)] * 5, dtype=T.double))
    tmp = T.ones(9, 9, dtype=T.float)
    mask = T.ones(10, 10, dtype=T.uint8)
    _same(tmp + mask[1:, 1:], T.full([9, 9], 2.0, dtype=T.float))


def test_transpose(T, dd):
    # TestTypePromotion.test_transpose (pytorch#28502): comparing a transposed bool tensor
    a = T.tensor([[True, True], [False, True]])
    _same(a.t() == 0, a.t() == False)  # noqa: E712


@pytest.mark.parametrize("name", ["bool", "uint8", "int64"])
def test_div_promotion(T, dd, name):
    # TestTypePromotion.test_div_promotion: true division of integers gives the default dtype
    dtype = _dt(T, name)
    for op in (T.div, T.true_divide):
        dividend = (T.tensor(_RNG.standard_normal(5), dtype=T.float32) * 100).to(dtype)
        divisor = T.arange(1, 6).to(dtype)
        d = T.get_default_dtype()
        _same(op(dividend, divisor), dividend.to(d) / divisor.to(d))
        _same(op(dividend, 2.0), dividend.to(d) / 2)


@pytest.mark.parametrize("name", ["float64", "bool", "uint8", "int64"])
def test_div_promotion_out_and_inplace(T, name):
    # TestTypePromotion.test_div_promotion_out / test_div_promotion_inplace: an integral
    # quotient (out= or in place) is refused; a floating one is computed
    dtype = _dt(T, name)
    dividend = (T.tensor(_RNG.standard_normal(5), dtype=T.float32) * 100).to(dtype)
    divisor = T.arange(1, 6).to(dtype)
    for op, iop in ((T.div, T.Tensor.div_), (T.true_divide, T.Tensor.true_divide_)):
        if not dtype.is_floating_point:
            for other in (divisor, 2):
                with pytest.raises(RuntimeError):
                    op(dividend, other, out=T.empty(5, dtype=dtype))
                with pytest.raises(RuntimeError):
                    iop(dividend.clone(), other)
        else:
            _same(op(dividend, divisor, out=T.empty(5, dtype=dtype)), dividend / divisor)
            _same(op(dividend, 2, out=T.empty(5, dtype=dtype)), dividend / 2)
            _same(iop(dividend.clone(), divisor), dividend.clone().div_(divisor))
            _same(iop(dividend.clone(), 2), dividend.clone().div_(2))


@pytest.mark.parametrize("name", ["int8", "uint8", "int32", "int64"])
def test_integer_addcdiv_deprecated(T, name):
    # TestTypePromotion.test_integer_addcdiv_deprecated
    t = T.tensor(1, dtype=_dt(T, name))
    with pytest.raises(RuntimeError, match="^Integer division.+is no longer supported"):
        T.addcdiv(t, t, t)
    with pytest.raises(RuntimeError, match="^Integer division.+is no longer supported"):
        T.addcdiv(t, t, t, out=t)
    with pytest.raises(RuntimeError, match="^Integer division.+is no longer supported"):
        t.addcdiv_(t, t)


@pytest.mark.parametrize("np_name,t_name", [("int16", "float32"), ("float64", "int64"), ("bool", "uint8"),
                                            ("complex64", "float64")])
def test_numpy_array_binary_ufunc_promotion(T, dd, np_name, t_name):
    # TestTypePromotion.test_numpy_array_binary_ufunc_promotion, the case torch gets right:
    # ``tensor + ndarray`` is ``tensor + from_numpy(ndarray)`` (dtype and value)
    t = T.tensor((1,), dtype=_dt(T, t_name))
    a = np.array((1,), dtype=np_name)
    actual = t + a
    expected = t + T.from_numpy(a)
    _same(actual, expected)


def test_cat_different_dtypes(T):
    # TestTypePromotion.test_cat_different_dtypes: cat promotes; an empty operand too
    names = ("bool", "uint8", "float64", "complex64")
    for xn, yn in itertools.product(names, names):
        xd, yd = _dt(T, xn), _dt(T, yn)
        xv, yv = [1, 2, 3], [4, 5, 6]
        x, y = T.tensor(xv, dtype=xd), T.tensor(yv, dtype=yd)
        xv = [1, 1, 1] if xd == T.bool else xv
        yv = [1, 1, 1] if yd == T.bool else yv
        _same(T.cat([x, y]), T.tensor(xv + yv, dtype=T.result_type(x, y)))
        y = T.tensor([], dtype=yd)
        _same(T.cat([x, y]), T.tensor(xv, dtype=T.result_type(x, y)))


def test_cat_out_different_dtypes(T):
    # TestTypePromotion.test_cat_out_different_dtypes: out= may not hold a lower category
    # (torch 2.13 raises TypeError where the original expected RuntimeError)
    names = ("uint8", "int64", "float32", "float64", "complex64")
    for xn, yn, on in itertools.product(names, names, names):
        xd, yd, od = _dt(T, xn), _dt(T, yn), _dt(T, on)
        out = T.zeros(6, dtype=od)
        x, y = T.tensor([1, 2, 3], dtype=xd), T.tensor([4, 5, 6], dtype=yd)
        bad = ((xd.is_floating_point or yd.is_floating_point) and not (od.is_floating_point or od.is_complex)) \
            or ((xd.is_complex or yd.is_complex) and not od.is_complex)
        if bad:
            with pytest.raises(TypeError, match="can't be cast to the desired output type"):
                T.cat([x, y], out=out)
        else:
            T.cat([x, y], out=out)
            _same(out, T.tensor([1, 2, 3, 4, 5, 6], dtype=od))


@pytest.mark.parametrize("pair", list(itertools.product(("int64", "float32", "float64", "complex64"), repeat=2)),
                         ids="-".join)
def test_unary_op_out_casting(T, pair):
    # TestTypePromotion.test_unary_op_out_casting: neg/floor/ceil need out= of the input's
    # dtype; floor/ceil refuse complex
    d0, d1 = (_dt(T, n) for n in pair)
    t = T.tensor(1, dtype=d0)
    for op in (T.neg, T.floor, T.ceil):
        out = T.empty(0, dtype=d1)
        if d0 != d1 or (op is not T.neg and d0.is_complex):
            with pytest.raises(RuntimeError):
                op(t, out=out)
        else:
            _same(op(t, out=out), op(t))
            _same(out, op(t))


def test_computation_ignores_out(T):
    # TestTypePromotion.test_computation_ignores_out: the result is computed in the inputs'
    # dtype, then cast into out=
    out = T.empty(0, dtype=T.float64)
    t = T.tensor(33000, dtype=T.float16)
    result = T.add(t, t, out=out)
    assert result.item() == (t + t).item()          # float16 overflows to inf
    assert result.item() != (t.double() + t).item()
    a, b = T.tensor(1.5, dtype=T.float16), T.tensor(0.666, dtype=T.float16)
    result = T.true_divide(a, b, out=out)
    assert result.item() == (a / b).item()
    assert result.item() != (a.double() / a).item()
    a, b = T.tensor(5, dtype=T.uint8), T.tensor(8, dtype=T.uint8)
    result = T.sub(a, b, out=out)
    assert result.item() == (a - b).item()          # uint8 wraps around
    assert result.item() != (a.double() - b).item()


@pytest.mark.parametrize("dtypes", [("bool", "int32", "float32"), ("int32", "float64", "int32")], ids="-".join)
def test_clamp_type_promotion(T, dtypes):
    # TestTypePromotion.test_clamp_type_promotion: clamp with tensor/0-dim/scalar bounds
    # promotes as result_type over its arguments; clamp_min/clamp_max likewise
    d0, d1, d2 = (_dt(T, n) for n in dtypes)

    def make(dtype):
        if dtype == T.bool:
            return T.tensor(_RNG.integers(0, 2, 4).astype(bool))
        if dtype == T.int32:
            return T.tensor(_RNG.integers(0, 10, 4), dtype=T.int32)
        return T.tensor(_RNG.standard_normal(4), dtype=dtype)

    min_t, max_t = make(d1), make(d2)
    inp = make(d0)
    mins = (min_t, min_t[0], min_t[0].item())
    maxs = (max_t, max_t[0], max_t[0].item())
    for lo, hi in itertools.product(mins, maxs):
        if type(lo) is not type(hi):
            continue
        if isinstance(lo, T.Tensor) and lo.ndim == 0 and hi.ndim == 0:
            continue
        a1, a2 = (hi, lo) if isinstance(lo, T.Tensor) and lo.ndim == 0 else (lo, hi)
        step = T.empty_like(inp, dtype=T.result_type(inp, a1))
        exp_type = T.result_type(step, a2)
        if exp_type == T.bool:
            continue
        actual = T.clamp(inp, lo, hi)
        args = [x.to(exp_type) if isinstance(x, T.Tensor) else x for x in (inp, lo, hi)]
        _same(actual, T.clamp(*args))
    for val in mins:
        exp_type = T.result_type(inp, val)
        if exp_type == T.bool:
            continue
        args = [x.to(exp_type) if isinstance(x, T.Tensor) else x for x in (inp, val)]
        actual = T.clamp_min(inp, val)
        assert actual.dtype == exp_type
        _same(actual, T.clamp_min(*args))
        _same(T.clamp_max(inp, val), T.clamp_max(*args))
        if inp.dtype == exp_type:
            _same(T.clamp_min_(inp.clone(), val), T.clamp_min(*args))
