"""Round 10: gaps left in PyTorch's shape and promotion tests: tril/triu and their index
factories (test/test_tensor_creation_ops.py test_tril_and_triu_indices, test/test_torch.py
test_triu_tril), roll and flip on empty and multi-dim cases (test/test_shape_ops.py,
test/test_torch.py), and result dtypes of atan2 / cumulative ops (test/test_type_promotion.py).
Each body runs under the ``T`` fixture, once with torch 2.13 (the oracle: every expectation holds
there too) and once with tracegrad, against NumPy where the original did. Each test names its
original."""
import numpy as np
import pytest


def _np(t):
    return np.asarray(t.detach().numpy())


def _eq(got, want, dtype=None):
    g = _np(got)
    w = _np(want) if hasattr(want, "detach") else np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    if dtype is not None:
        assert str(got.dtype).rsplit(".")[-1] == dtype, got.dtype
    np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, equal_nan=True)


# ==== tril / triu ================================================================================
@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (4, 3, 1), (3, 5, -1), (0, 3, 0), (3, 0, 0),
                                            (5, 2, -3), (2, 5, 4), (4, 4, -10), (1, 1, 10)])
def test_tril_and_triu_indices(T, row, col, offset):
    # TestTensorCreation.test_tril_and_triu_indices: against NumPy's index functions
    _eq(T.tril_indices(row, col, offset), np.stack(np.tril_indices(row, offset, col)).astype(np.int64)
        .reshape(2, -1), dtype="int64")
    _eq(T.triu_indices(row, col, offset), np.stack(np.triu_indices(row, offset, col)).astype(np.int64)
        .reshape(2, -1), dtype="int64")
    assert T.tril_indices(row, col, offset, dtype=T.int32).dtype == T.int32


def test_tril_and_triu_indices_errors(T):
    # TestTensorCreation.test_tril_and_triu_indices (argument checks)
    with pytest.raises(RuntimeError):
        T.tril_indices(-1, 3)
    with pytest.raises(RuntimeError):
        T.triu_indices(3, -1)


@pytest.mark.parametrize("shape", [(5, 5), (3, 6), (6, 3), (2, 3, 4)])
def test_triu_tril(T, shape):
    # TestTorch.test_triu_tril: every diagonal, contiguous and transposed inputs, in-place forms
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    t = T.tensor(x)
    for diag in range(-4, 5):
        _eq(T.tril(t, diag), np.tril(x, diag))
        _eq(T.triu(t, diag), np.triu(x, diag))
        tt = t.transpose(-1, -2)
        xt = np.swapaxes(x, -1, -2)
        _eq(tt.tril(diag), np.tril(xt, diag))
        _eq(tt.triu(diag), np.triu(xt, diag))
        c = t.clone()
        c.tril_(diag)
        _eq(c, np.tril(x, diag))
        c = t.clone()
        c.triu_(diag)
        _eq(c, np.triu(x, diag))


def test_tril_triu_grad_and_errors(T):
    # TestTorch.test_triu_tril (backward masks the gradient; a 1-d input is an error)
    x = T.ones(3, 3, requires_grad=True)
    (T.tril(x, -1) * 2).sum().backward()
    _eq(x.grad, np.tril(np.full((3, 3), 2.0, np.float32), -1))
    with pytest.raises(RuntimeError):
        T.tril(T.ones(3))
    with pytest.raises(RuntimeError):
        T.triu(T.ones(3))
    _eq(T.tril(T.ones(2, 0, 3)), np.ones((2, 0, 3)))


# ==== roll / flip ================================================================================
def test_roll(T):
    # TestShapeOps / TestTorch.test_roll: shifts along dims, negative and past-size shifts,
    # several dims at once, no dim (flattened), against NumPy
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = T.tensor(x)
    for shifts, dims in ((1, 0), (-1, 2), (5, 1), (13, 2), ((1, 2), (0, 2)), ((-2, 1, 3), (2, 1, 0)),
                         (0, 1)):
        _eq(T.roll(t, shifts, dims), np.roll(x, shifts, dims))
    for s in (0, 1, -5, 30):
        _eq(t.roll(s), np.roll(x, s))
    tt = t.transpose(0, 2)                      # non-contiguous input
    _eq(tt.roll(1, 0), np.roll(x.transpose(2, 1, 0), 1, 0))
    _eq(tt.roll(3), np.roll(x.transpose(2, 1, 0), 3))


def test_roll_errors_and_empty(T):
    # TestTorch.test_roll (shifts and dims must align; an empty tensor rolls to itself)
    t = T.ones(2, 3)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        T.roll(t, (1, 2), (0,))
    with pytest.raises(IndexError):
        T.roll(t, 1, 2)
    e = T.ones(0, 3)
    assert tuple(T.roll(e, 1, 0).shape) == (0, 3)
    assert tuple(T.roll(e, 2).shape) == (0, 3)


def test_roll_grad(T):
    # TestTorch.test_roll (autograd: the gradient rolls back)
    x = T.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    w = T.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) + 10)
    (T.roll(x, 1, 1) * w).sum().backward()
    _eq(x.grad, np.roll(np.arange(6, dtype=np.float32).reshape(2, 3) + 10, -1, 1))


def test_flip_empty(T):
    # TestShapeOps.test_flip (empty and size-1 dims)
    e = T.ones(0, 3)
    assert tuple(T.flip(e, (0,)).shape) == (0, 3)
    assert tuple(T.flip(e, (0, 1)).shape) == (0, 3)
    x = np.arange(6, dtype=np.float32).reshape(1, 6)
    _eq(T.flip(T.tensor(x), (0,)), x)
    _eq(T.flip(T.tensor(x), (-1, 0)), x[::-1, ::-1])


# ==== type promotion =============================================================================
def test_atan2_type_promotion(T):
    # TestTypePromotion (atan2 rows of the binary float ops): integers promote to the default
    # float, mixed floats to the wider one
    a = T.tensor([1, -2, 3], dtype=T.int32)
    b = T.tensor([2, 2, -1], dtype=T.int64)
    r = T.atan2(a, b)
    _eq(r, np.arctan2([1, -2, 3], [2, 2, -1]).astype(np.float32), dtype="float32")
    r = T.atan2(a.float(), b.double())
    assert r.dtype == T.float64
    assert T.atan2(T.tensor([1.0]), T.tensor(2.0, dtype=T.float64)).dtype == T.float32
    assert T.atan2(T.tensor([True]), T.tensor([False])).dtype == T.float32


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_cumulative_type_promotion(T, op):
    # TestTypePromotion / TestReductions.test_cumsum_integer_upcast: integer and bool inputs
    # accumulate in int64; dtype= wins; float stays float
    for dt in ("bool", "uint8", "int8", "int16", "int32", "int64"):
        t = T.tensor([1, 0, 1, 1]).to(getattr(T, dt))
        r = getattr(T, op)(t, 0)
        assert r.dtype == T.int64, (dt, r.dtype)
        want = np.cumsum([1, 0, 1, 1]) if op == "cumsum" else np.cumprod([1, 0, 1, 1])
        _eq(r, want)
    t = T.tensor([1, 2, 3], dtype=T.int32)
    assert getattr(T, op)(t, 0, dtype=T.float64).dtype == T.float64
    assert getattr(t, op)(0, dtype=T.int16).dtype == T.int16
    assert getattr(T, op)(T.tensor([1.0, 2.0], dtype=T.float16), 0).dtype == T.float16


def test_sum_prod_type_promotion(T):
    # TestReductions.test_reduce_integer_upcast (the dim forms): sum/prod of ints and bools are
    # int64, mean of ints is an error without dtype=
    for dt in ("bool", "uint8", "int8", "int32"):
        t = T.ones(2, 3).to(getattr(T, dt))
        assert T.sum(t, 1).dtype == T.int64
        assert T.prod(t, 1).dtype == T.int64
        assert T.sum(t, 1, dtype=T.int32).dtype == T.int32
    with pytest.raises(RuntimeError):
        T.mean(T.ones(2, 3, dtype=T.int64), 1)
    assert T.mean(T.ones(2, 3, dtype=T.int64), 1, dtype=T.float64).dtype == T.float64
