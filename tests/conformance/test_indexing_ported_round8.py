"""Round 8 of PyTorch's own tests, ported: test/test_indexing.py (TestIndexing and NumpyTests),
device 'cpu'. Each test names its original and restates its checks in our own code; bodies run
under torch and under tracegrad (the ``T`` fixture), so torch 2.13 checks every expectation the
port makes. Random inputs are replaced by fixed numpy values (the same numbers for both
libraries), and sizes are kept small.

Not ported: CUDA/XPU/MPS-only tests, ``torch.jit`` (``test_jit_indexing``), ``torch.ops.aten``
calls, deterministic-algorithm switches, and tensors of 2**31 elements
(``test_index_put_accumulate_large_tensor``). test_indexing_ported.py checks many of the same
rules case by case; this file keeps the original tests' grouping and names."""
import itertools
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(808)


def _randn(T, *shape, dtype=None):
    """Fixed normal values made by numpy (the same for both libraries)."""
    t = T.tensor(_RNG.standard_normal(shape).astype(np.float32))
    return t if dtype is None else t.to(dtype)


def _np(t):
    return np.asarray(t.detach().tolist())


def _eq(a, b):
    """Exact equality of values and shapes (``b`` a tensor, list, or number)."""
    av = _np(a)
    bv = _np(b) if hasattr(b, "detach") else np.asarray(b)
    assert av.shape == bv.shape, (av.shape, bv.shape)
    np.testing.assert_array_equal(av, bv)


def _consec(T, size, start=1):
    n = int(np.prod(size))
    return (T.arange(n, dtype=T.float32) + start).view(*size)


# ==== TestIndexing ===============================================================================
def test_index_basic_and_ellipsis(T):
    # test_index: integer, slice, Ellipsis and None indexing of a (3, 3, 3) sequence
    ref = _consec(T, (3, 3, 3))
    assert tuple(ref[T.tensor([], dtype=T.int64)].shape) == (0, 3, 3)
    _eq(ref[0], _consec(T, (3, 3)))
    _eq(ref[1], _consec(T, (3, 3), 10))
    _eq(ref[0, 1], _consec(T, (3,), 4))
    _eq(ref[0:2], _consec(T, (2, 3, 3)))
    assert ref[2, 2, 2].item() == 27
    _eq(ref[..., 2], [[3., 6., 9.], [12., 15., 18.], [21., 24., 27.]])
    _eq(ref[0, ..., 2], [3., 6., 9.])
    _eq(ref[0, 2, ...], ref[0, 2])
    for key in ((Ellipsis, 2, 2, 2), (2, Ellipsis, 2, 2), (2, 2, Ellipsis, 2), (2, 2, 2, Ellipsis)):
        assert ref[key].item() == 27
    _eq(ref[...], ref)
    r5 = _consec(T, (3, 3, 3, 3, 3))
    _eq(r5[..., 1, 0], r5[:, :, :, 1, 0])
    _eq(r5[2, ..., 1, 0], r5[2, :, :, 1, 0])
    _eq(r5[2, 1, 0, ..., 1], r5[2, 1, 0, :, 1])


def test_index_long_none_and_step(T):
    # test_index: LongTensor, None, 0-length slices and steps
    ref = _consec(T, (5, 5, 5))
    _eq(ref[T.tensor([2, 4])], T.stack([ref[2], ref[4]]))
    _eq(ref[2, None], ref[2].unsqueeze(0))
    _eq(ref[2, None, None], ref[2].unsqueeze(0).unsqueeze(0))
    _eq(ref[2:4, None], ref[2:4].unsqueeze(1))
    _eq(ref[None, 2, None, None], ref.unsqueeze(0)[:, 2].unsqueeze(0).unsqueeze(0))
    _eq(ref[None, 2:5, None, None], ref.unsqueeze(0)[:, 2:5].unsqueeze(2).unsqueeze(2))
    assert tuple(ref[slice(0)].shape) == (0, 5, 5)
    assert tuple(ref[slice(0), 2].shape) == (0, 5)
    assert tuple(ref[2, slice(0)].shape) == (0, 5)
    assert tuple(ref[2, 1:1, 2].shape) == (0,)
    ref = _consec(T, (6, 6, 6))
    _eq(ref[1:5:2], T.stack([ref[1], ref[3]], 0))
    _eq(ref[1:6:2], T.stack([ref[1], ref[3], ref[5]], 0))
    _eq(ref[2:4, 1:5:2], T.stack([ref[2:4, 1], ref[2:4, 3]], 1))
    _eq(ref[None, 2, 1:6:4], T.stack([ref[2, 1], ref[2, 5]], 0).unsqueeze(0))
    _eq(ref[:, 2, 1:6:2], T.stack([ref[:, 2, 1], ref[:, 2, 3], ref[:, 2, 5]], 1))


def test_index_slices_like_lists(T):
    # test_index: random slice pairs on a 10x10 table agree with Python list slicing
    lst = [list(range(i, i + 10)) for i in range(0, 100, 10)]
    t = T.tensor(lst, dtype=T.float64)
    rng = np.random.default_rng(3)
    for _ in range(20):
        s1 = int(rng.integers(10))
        i1 = slice(s1, s1 + int(rng.integers(1, 10 - s1 + 1)), int(rng.integers(1, 8)))
        s2 = int(rng.integers(10))
        i2 = slice(s2, s2 + int(rng.integers(1, 10 - s2 + 1)), int(rng.integers(1, 8)))
        _eq(t[i1, i2], [row[i2] for row in lst[i1]])
        _eq(t[i1], lst[i1])


def test_index_errors(T):
    # test_index: bad steps, too many indices, float indices, del
    ref = _consec(T, (3, 3, 3))
    for key, exc in (((slice(1, 9, 0),), ValueError), ((slice(1, 9, -1),), ValueError),
                     ((1, 1, 1, 1), IndexError), ((1, 1, 1, slice(1, 1)), IndexError),
                     ((3,) * 8, IndexError), ((0.0,), IndexError), ((slice(0.0, 2.0),), TypeError),
                     ((0.0, slice(0.0, 2.0)), IndexError), ((0.0, slice(None), slice(0.0, 2.0)), IndexError),
                     ((0.0, Ellipsis, slice(0.0, 2.0)), IndexError), ((0.0, slice(None), 0.0), IndexError)):
        with pytest.raises(exc):
            ref[key if len(key) > 1 else key[0]]
    with pytest.raises(TypeError):
        del ref[0]


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_advancedindex_1d(T, dtype):
    # test_advancedindex (Case 1): purely integer array indexing and setting, lists/tuples/tensors
    dt = getattr(T, dtype)
    x = (T.arange(10, dtype=T.float32) + 1).to(dt)
    for key in ([0], (T.tensor([0]),), ([3],), [2, 3, 4], (T.tensor([0, 2, 4]),), ((0, 2, 4),)):
        got = x[key]
        assert got.dtype == dt
        idx = key if isinstance(key, list) else key[0]
        _eq(got, [float(i) + 1 for i in (idx.tolist() if hasattr(idx, "tolist") else idx)])
    x[[0]] = -2
    _eq(x[[0]], [-2.])
    x[[2, 3, 4]] = 4
    _eq(x[[2, 3, 4]], [4., 4., 4.])
    x[(T.tensor([0, 2, 4]),)] = T.tensor([5, 4, 3], dtype=dt)
    _eq(x[[0, 2, 4]], [5., 4., 3.])


def test_advancedindex_strided(T):
    # test_advancedindex: a tensor set_ on a storage with stride 2 (then offset 4, stride 4)
    ref = T.arange(10, dtype=T.float64) + 1
    s = T.tensor((), dtype=T.float64)
    s.set_(ref.untyped_storage(), storage_offset=0, size=T.Size([4]), stride=[2])
    _eq(s[[0]], [1.])
    _eq(s[[3]], [7.])
    _eq(s[[1, 2]], [3., 5.])
    _eq(s[T.tensor([[2, 1], [0, 3]])], [[5., 3.], [1., 7.]])
    s = T.tensor((), dtype=T.float64)
    s.set_(ref.untyped_storage(), storage_offset=4, size=T.Size([2]), stride=[4])
    _eq(s[[0]], [5.])
    _eq(s[[0, 1]], [5., 9.])
    _eq(s[T.tensor([[0, 1], [1, 0]])], [[5., 9.], [9., 5.]])


def test_advancedindex_2d_pairs(T):
    # test_advancedindex: pairs of index arrays on a (3, 2) table, broadcast rows/columns, setting
    ref = _consec(T, (3, 2)).double()
    _eq(ref[[0, 1, 2], [0]], [1., 3., 5.])
    _eq(ref[[0, 1, 2], [1]], [2., 4., 6.])
    _eq(ref[(T.tensor([0, 1, 1, 0, 2]), T.tensor([1]))], [2., 4., 4., 2., 6.])
    _eq(ref[([0, 0, 1, 1], [0, 1, 0, 0])], [1., 2., 3., 3.])
    rows = T.tensor([[0, 0], [1, 2]])
    _eq(ref[rows, ([0],)], [[1., 1.], [3., 5.]])
    _eq(ref[rows, T.tensor([1, 0])], [[2., 1.], [4., 5.]])
    cols = T.tensor([[0, 1], [1, 0]])
    _eq(ref[rows, cols], [[1., 2.], [4., 5.]])
    ref[[0], [1]] = -1
    _eq(ref[[0], [1]], [-1.])
    ref[[0, 1, 2], [0]] = T.tensor([-1., 2., -4.], dtype=T.float64)
    _eq(ref[[0, 1, 2], [0]], [-1., 2., -4.])
    ref[rows, cols] = T.tensor([[4., 6.], [2., 3.]], dtype=T.float64)
    _eq(ref[rows, cols], [[4., 6.], [2., 3.]])


def test_advancedindex_transposed(T):
    # test_advancedindex: the same rules on a transposed (non-contiguous) tensor, get and set
    ref = T.tensor([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], dtype=T.float64).t_()
    assert not ref.is_contiguous()
    _eq(ref[[0, 1, 2], [0]], [0., 1., 2.])
    _eq(ref[[0, 1, 2], [1]], [4., 5., 6.])
    _eq(ref[([0, 0], [0, 1])], [0., 4.])
    _eq(ref[([0, 1, 1, 0, 3], [1])], [4., 5., 5., 4., 7.])
    _eq(ref[([0, 0, 1, 1], [0, 1, 0, 0])], [0., 4., 1., 1.])
    rows = T.tensor([[0, 0], [1, 2]])
    _eq(ref[rows, [0]], [[0., 0.], [1., 2.]])
    ref[[0], [1]] = -1
    _eq(ref[[0], [1]], [-1.])
    ref[rows, T.tensor([[0, 1], [1, 0]])] = T.tensor([[4., 6.], [2., 3.]], dtype=T.float64)
    _eq(ref[rows, T.tensor([[0, 1], [1, 0]])], [[4., 6.], [2., 3.]])


def test_advancedindex_mixed_with_slices(T):
    # test_advancedindex (Part II): advanced indices mixed with slices/Ellipsis on a 3-d tensor,
    # compared against numpy's result for the same key
    ref = _consec(T, (3, 4, 4)).double()
    arr = _np(ref)
    keys = [
        (slice(None), [0, 1]), (slice(None), [0, 1], slice(None)), ([0, 1], slice(None)),
        ([0, 1], Ellipsis), (Ellipsis, [1, 2]), (slice(None), slice(None), [0, 3]),
        (slice(None), [0, 2], [1, 3]), ([1, 2], slice(None), [1, 3]), ([[0, 1], [1, 2]], slice(None), 0),
        (slice(None), [[0, 1], [1, 0]], [[2, 3], [3, 0]]), (slice(None), [[2]], [[0, 3], [3, 3]]),
        ([0, 2], slice(1, 3), [1, 3]), (0, [1, 2], slice(None)),
    ]
    for key in keys:
        _eq(ref[key], arr[key])
        x = ref.clone()
        x[key] = 1333
        expect = arr.copy()
        expect[key] = 1333
        _eq(x, expect)


def test_advancedindex_big(T):
    # test_advancedindex_big (smaller): a list index far into a long int32 range
    ref = T.arange(0, 12334, dtype=T.int32)
    got = ref[[0, 123, 4448, 6807, 12333],]
    assert got.dtype == T.int32
    _eq(got, [0, 123, 4448, 6807, 12333])


def test_set_item_to_scalar_tensor(T):
    # test_set_item_to_scalar_tensor: a 0-d tensor that requires grad written into a column
    z = _randn(T, 4, 3)
    w = T.tensor(1.0, requires_grad=True)
    z[:, 0] = w
    assert z.requires_grad
    z.sum().backward()
    assert w.grad.item() == 4.0


def test_single_multiple_int_and_none(T):
    # test_single_int, test_multiple_int, test_none
    v = _randn(T, 5, 7, 3)
    assert tuple(v[4].shape) == (7, 3)
    assert tuple(v[4, :, 1].shape) == (7,)
    assert tuple(v[None].shape) == (1, 5, 7, 3)
    assert tuple(v[:, None].shape) == (5, 1, 7, 3)
    assert tuple(v[:, None, None].shape) == (5, 1, 1, 7, 3)
    assert tuple(v[..., None].shape) == (5, 7, 3, 1)


def test_step(T):
    # test_step
    v = T.arange(10)
    _eq(v[::1], v)
    assert v[::2].tolist() == [0, 2, 4, 6, 8]
    assert v[::3].tolist() == [0, 3, 6, 9]
    assert v[::11].tolist() == [0]
    assert v[1:6:2].tolist() == [1, 3, 5]


def test_step_assignment(T):
    # test_step_assignment
    v = T.zeros(4, 4)
    v[0, 1::2] = T.tensor([3., 4.])
    assert v[0].tolist() == [0, 3, 0, 4]
    assert v[1:].sum().item() == 0


def test_bool_indices(T):
    # test_bool_indices: a bool mask picks rows; a uint8 mask does the same and warns once
    v = _randn(T, 5, 7, 3)
    mask = T.tensor([True, False, True, True, False])
    assert tuple(v[mask].shape) == (3, 7, 3)
    _eq(v[mask], T.stack([v[0], v[2], v[3]]))
    v = T.tensor([True, False, True])
    b = T.tensor([True, False, False])
    u = T.tensor([1, 0, 0], dtype=T.uint8)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        v1, v2 = v[b], v[u]
        assert v1.shape == v2.shape
        _eq(v1, v2)
        assert v[b].dtype == T.bool
        assert len(w) == 1


def test_list_indices(T):
    # test_list_indices (smaller): a list of ranges is a 2-d index; 31 of them are too many indices
    t = _randn(T, 60)
    indices = [range(i, i + 10) for i in range(50)]
    for i in (50, 40, 32):
        assert tuple(t[indices[:i]].shape) == (i, 10)
    with pytest.raises(IndexError, match="too many indices"):
        t[indices[:31]]


def test_bool_indices_accumulate(T):
    # test_bool_indices_accumulate: an all-False mask accumulates nothing
    mask = T.zeros(10, dtype=T.bool)
    y = T.ones(10, 10)
    y.index_put_((mask,), y[mask], accumulate=True)
    _eq(y, T.ones(10, 10))


def test_multiple_bool_indices(T):
    # test_multiple_bool_indices: two masks broadcast together and move to the front
    v = _randn(T, 5, 7, 3)
    m1 = T.tensor([1, 0, 1, 1, 0], dtype=T.bool)
    m2 = T.tensor([1, 1, 1], dtype=T.bool)
    assert tuple(v[m1, :, m2].shape) == (3, 7)


def test_multi_dimensional_bool_mask(T):
    # test_multi_dimensional_bool_mask: a 2-d mask as a nested tuple or a tensor, with extras
    x = _randn(T, 2, 2, 3)
    b = ((True, False), (False, False))
    m = T.tensor(b, dtype=T.bool)
    z, t, f = T.tensor(0), T.tensor(True), T.tensor(False)
    for mask in (b, m):
        for extra, shape in (((), (1, 3)), ((slice(None, None, 2),), (1, 2)), ((None,), (1, 1, 3)),
                             ((0,), (1,)), ((z,), (1,)), ((True,), (1, 3)), ((True,) * 4, (1, 3)),
                             ((False,), (0, 3)), ((True, True, False, True), (0, 3)), ((t,), (1, 3)),
                             ((f,), (0, 3))):
            assert tuple(x[(mask,) + extra].shape) == shape, (extra, shape)
    x = _randn(T, 3, 2, 2, 5)
    assert tuple(x[:, m, :].shape) == (3, 1, 5)
    assert tuple(x[0, m, ::2].shape) == (1, 3)
    assert tuple(x[..., m, ::2].shape) == (3, 1, 3)
    assert tuple(x[None, ..., m, ::2].shape) == (1, 3, 1, 3)


def test_bool_mask_assignment(T):
    # test_bool_mask_assignment
    v = T.tensor([[1, 2], [3, 4]])
    mask = T.tensor([1, 0], dtype=T.bool)
    v[mask, :] = 0
    assert v.tolist() == [[0, 0], [3, 4]]
    v = T.tensor([[1, 2], [3, 4]])
    v[:, mask] = 0
    assert v.tolist() == [[0, 2], [0, 4]]


def test_multi_dimensional_bool_mask_assignment(T):
    # test_multi_dimensional_bool_mask_assignment (the aten call written as index_put_)
    mask = T.tensor([[1, 0], [0, 1]], dtype=T.bool)
    v = T.tensor([[[[1], [2]], [[3], [4]]]])
    v[:, mask, :] = 0
    assert v.tolist() == [[[[0], [2]], [[3], [0]]]]
    v = T.tensor([[[[1], [2]], [[3], [4]]]])
    v[(slice(None), mask)] = T.tensor(0)
    assert v.tolist() == [[[[0], [2]], [[3], [0]]]]


def test_byte_mask(T):
    # test_byte_mask: a uint8 mask indexes like a bool mask and warns once
    v = _randn(T, 5, 7, 3)
    mask = T.tensor([1, 0, 1, 1, 0], dtype=T.uint8)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = v[mask]
        assert tuple(res.shape) == (3, 7, 3)
        _eq(res, T.stack([v[0], v[2], v[3]]))
        assert len(w) == 1
    v = T.tensor([1.0])
    assert tuple(v[v == 0].shape) == (0,)


def test_byte_mask_accumulate(T):
    # test_byte_mask_accumulate: two uint8 uses, two warnings, nothing accumulated
    mask = T.zeros(10, dtype=T.uint8)
    y = T.ones(10, 10)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y.index_put_((mask,), y[mask], accumulate=True)
        _eq(y, T.ones(10, 10))
        assert len(w) == 2


def test_index_put_accumulate_expanded_values(T):
    # test_index_put_accumulate_expanded_values: 0-d/1-d/2-d values broadcast over the indices
    t = T.zeros(5, 2)
    idx = [T.tensor([0, 1, 2, 3]), T.tensor([1])]
    t.index_put_(idx, T.tensor(1.0), accumulate=True)
    _eq(t, [[0, 1], [0, 1], [0, 1], [0, 1], [0, 0]])
    t.index_put_(idx, T.tensor([1.0]), accumulate=True)
    _eq(t, [[0, 2], [0, 2], [0, 2], [0, 2], [0, 0]])
    t = T.zeros(4, 3, 2)
    idx = [T.tensor([0]), T.arange(3)[:, None], T.arange(2)[None, :]]
    t.index_put_(idx, T.tensor([-1.0, -2.0]), accumulate=True)
    t.index_put_(idx, T.tensor([[-1.0, -2.0]]), accumulate=True)
    _eq(t[0], [[-2, -4]] * 3)
    assert t[1:].abs().sum().item() == 0


def test_index_put_accumulate_duplicate_indices(T):
    # test_index_put_accumulate_duplicate_indices (fewer sizes): random-walk indices with many
    # duplicates accumulate like a Python loop
    rng = np.random.default_rng(11)
    for n in (1, 7, 40):
        indices = np.abs(np.cumsum(rng.uniform(-1, 1, n)).astype(np.int64))
        inp = rng.standard_normal(indices.max() + 1)
        vals = rng.standard_normal(n)
        out = T.tensor(inp).index_put((T.tensor(indices),), T.tensor(vals), accumulate=True)
        expect = inp.copy()
        for i, v in zip(indices, vals):
            expect[i] += v
        np.testing.assert_allclose(_np(out), expect, rtol=1e-12, atol=1e-12)


def test_index_ind_dtype(T):
    # test_index_ind_dtype: int32 indices behave like int64 ones for index and index_put_
    x = _randn(T, 4, 4)
    il = T.tensor([3, 0, 2, 2])
    ii = il.int()
    _eq(x[il, il], x[ii, ii])
    _eq(x[il, :], x[ii, :])
    _eq(x[:, il], x[:, ii])
    src = _randn(T, 4)
    il, ii = T.arange(4), T.arange(4).int()
    for accum in (True, False):
        a, b = x.clone(), x.clone()
        T.index_put_(a, (il, il), src, accum)
        T.index_put_(b, (ii, ii), src, accum)
        _eq(a, b)


def test_index_put_accumulate_empty(T):
    # test_index_put_accumulate_empty: no indices on a 0-d input is an error
    with pytest.raises(RuntimeError):
        T.rand([]).index_put([], T.tensor([1.0]), True)


def test_multiple_byte_mask(T):
    # test_multiple_byte_mask: two uint8 masks, one warning each
    v = _randn(T, 5, 7, 3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert tuple(v[T.tensor([1, 0, 1, 1, 0], dtype=T.uint8), :, T.tensor([1, 1, 1], dtype=T.uint8)].shape) == (3, 7)
        assert len(w) == 2


def test_byte_mask2d(T):
    # test_byte_mask2d: a 2-d comparison mask keeps the trailing dim
    v = _randn(T, 5, 7, 3)
    c = _randn(T, 5, 7)
    assert tuple(v[c > 0].shape) == ((c > 0).sum().item(), 3)


def test_int_indices(T):
    # test_int_indices
    v = _randn(T, 5, 7, 3)
    assert tuple(v[[0, 4, 2]].shape) == (3, 7, 3)
    assert tuple(v[:, [0, 4, 2]].shape) == (5, 3, 3)
    assert tuple(v[:, [[0, 1], [4, 3]]].shape) == (5, 2, 2, 3)


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float32", "int64", "bool"])
def test_index_put_src_datatype(T, dtype):
    # test_index_put_src_datatype: accumulate works for each dtype and keeps the shape
    d = getattr(T, dtype)
    src = T.ones(3, 2, 4, dtype=d)
    res = src.index_put_((T.tensor([0, 2, 1]),), T.ones(3, 2, 4, dtype=d), accumulate=True)
    assert res is src and tuple(res.shape) == (3, 2, 4) and res.dtype == d
    expect = np.full((3, 2, 4), True if dtype == "bool" else 2)
    _eq(res, expect)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_index_src_datatype(T, dtype):
    # test_index_src_datatype: index then index_put_ (no accumulate) of the same rows
    d = getattr(T, dtype)
    src = T.ones(3, 2, 4, dtype=d)
    res = src[[0, 2, 1], :, :]
    assert res.shape == src.shape
    src[[0, 2, 1], :, :] = res
    assert res.shape == src.shape and src.dtype == d


def test_int_indices2d_and_broadcast(T):
    # test_int_indices2d, test_int_indices_broadcast (NumPy's examples)
    x = T.arange(0, 12).view(4, 3)
    rows = T.tensor([[0, 0], [3, 3]])
    cols = T.tensor([[0, 2], [0, 2]])
    assert x[rows, cols].tolist() == [[0, 2], [9, 11]]
    rows, cols = T.tensor([0, 3]), T.tensor([0, 2])
    assert x[rows[:, None], cols].tolist() == [[0, 2], [9, 11]]


def test_empty_index(T):
    # test_empty_index: empty int index and all-False mask select nothing and write nothing
    x = T.arange(0, 12).view(4, 3)
    idx = T.tensor([], dtype=T.long)
    assert x[idx].numel() == 0
    y = x.clone()
    y[idx] = -1
    _eq(x, y)
    y[T.zeros(4, 3).bool()] = -1
    _eq(x, y)


def test_empty_ndim_index(T):
    # test_empty_ndim_index
    x = _randn(T, 5)
    assert tuple(x[T.empty(0, 2, dtype=T.int64)].shape) == (0, 2)
    x = _randn(T, 2, 3, 4, 5)
    assert tuple(x[:, T.empty(0, 6, dtype=T.int64)].shape) == (2, 0, 6, 4, 5)
    x = T.empty(10, 0)
    assert tuple(x[[1, 2]].shape) == (2, 0)
    assert tuple(x[[], []].shape) == (0,)
    with pytest.raises(IndexError, match="for dimension with size 0"):
        x[:, [0, 1]]


def test_empty_ndim_index_bool(T):
    # test_empty_ndim_index_bool
    with pytest.raises(IndexError):
        _randn(T, 5)[T.empty(0, 2, dtype=T.uint8)]


def test_empty_slice(T):
    # test_empty_slice: an empty slice keeps NumPy-like strides and is contiguous
    x = _randn(T, 2, 3, 4, 5)
    z = x[:, :, :, 1][:, 1:1, :]
    assert tuple(z.shape) == (2, 0, 4)
    assert z.stride() == (60, 20, 5)
    assert z.is_contiguous()


def test_index_getitem_copy_bools_slices(T):
    # test_index_getitem_copy_bools_slices: True/uint8 1 copy, False empties, None/... view
    true = T.tensor(1, dtype=T.uint8)
    false = T.tensor(0, dtype=T.uint8)
    for a in (_randn(T, 2, 3), T.tensor(3.0)):
        assert a.data_ptr() != a[True].data_ptr()
        assert tuple(a[False].shape) == (0,) + tuple(a.shape)
        assert a.data_ptr() != a[true].data_ptr()
        assert tuple(a[false].shape) == (0,) + tuple(a.shape)
        assert a.data_ptr() == a[None].data_ptr()
        assert a.data_ptr() == a[...].data_ptr()


def test_index_setitem_bools_slices(T):
    # test_index_setitem_bools_slices: leading 1s of the value are dropped; False writes nothing
    true = T.tensor(1, dtype=T.uint8)
    false = T.tensor(0, dtype=T.uint8)
    for a in (_randn(T, 2, 3), T.tensor(3)):
        neg = T.ones_like(a) * -1
        neg_x = neg.unsqueeze(0).unsqueeze(0)
        a[True] = neg_x
        _eq(a, neg)
        a[False] = 5
        _eq(a, neg)
        a[true] = neg_x * 2
        _eq(a, neg * 2)
        a[false] = 5
        _eq(a, neg * 2)
        a[None] = neg_x * 3
        _eq(a, neg * 3)
        a[...] = neg_x * 4
        _eq(a, neg * 4)
        if a.dim() == 0:
            with pytest.raises(IndexError):
                a[:] = neg_x * 5


def test_index_scalar_with_bool_mask(T):
    # test_index_scalar_with_bool_mask
    um = T.tensor(True, dtype=T.uint8)
    bm = T.tensor(True, dtype=T.bool)
    for a in (T.tensor(1), T.tensor(True, dtype=T.bool)):
        _eq(a[um], a[bm])
        assert a[um].dtype == a[bm].dtype


def test_setitem_expansion_error(T):
    # test_setitem_expansion_error: a value with a non-1 leading dim cannot be written
    a = _randn(T, 2, 3)
    big = a.expand(T.Size([5, 1]) + a.size())
    with pytest.raises(RuntimeError):
        a[True] = big
    with pytest.raises(RuntimeError):
        a[T.tensor(True)] = big


def test_getitem_scalars(T):
    # test_getitem_scalars: 0-d integer tensors index like ints (views); a 0-d tensor refuses them
    zero, one = T.tensor(0), T.tensor(1)
    a = _randn(T, 2, 3)
    _eq(a[0], a[zero])
    _eq(a[0][1], a[zero][one])
    _eq(a[0, 1], a[zero, one])
    _eq(a[0, one], a[zero, 1])
    assert a[0, 1].data_ptr() == a[zero, one].data_ptr()
    assert a[1].data_ptr() == a[one.int()].data_ptr()
    assert a[1].data_ptr() == a[one.short()].data_ptr()
    r = _randn(T)
    with pytest.raises(IndexError):
        r[:]
    with pytest.raises(IndexError):
        r[zero]
    _eq(r, r[...])


def test_setitem_scalars(T):
    # test_setitem_scalars
    zero = T.tensor(0)
    a = _randn(T, 2, 3)
    an, az = a.clone(), a.clone()
    b = _randn(T, 3)
    an[0] = b
    az[zero] = b
    _eq(an, az)
    a[1, zero] = 7.7
    assert abs(a[1, 0].item() - 7.7) < 1e-6
    r = _randn(T)
    with pytest.raises(IndexError):
        r[:] = 8.8
    with pytest.raises(IndexError):
        r[zero] = 8.8
    r[...] = 9.9
    assert abs(r.item() - 9.9) < 1e-6


def test_basic_advanced_combined(T):
    # test_basic_advanced_combined: advanced indexing copies; assignment writes through
    x = T.arange(0, 12).view(4, 3)
    _eq(x[1:2, 1:3], x[1:2, [1, 2]])
    assert x[1:2, 1:3].tolist() == [[4, 5]]
    before = x.clone()
    x[1:2, [1, 2]].zero_()
    _eq(x, before)
    x[1:2, [1, 2]] = 0
    assert not T.equal(x, before)


def test_int_assignment(T):
    # test_int_assignment
    x = T.arange(0, 4).view(2, 2)
    x[1] = 5
    assert x.tolist() == [[0, 1], [5, 5]]
    x = T.arange(0, 4).view(2, 2)
    x[1] = T.arange(5, 7)
    assert x.tolist() == [[0, 1], [5, 6]]


def test_byte_tensor_assignment(T):
    # test_byte_tensor_assignment: a uint8 mask assignment warns once and writes the masked rows
    x = T.arange(0., 16).view(4, 4)
    b = T.tensor([True, False, True, False]).to(T.uint8)
    value = T.tensor([3., 4., 5., 6.])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        x[b] = value
        assert len(w) == 1
    _eq(x[0], value)
    _eq(x[1], T.arange(4., 8))
    _eq(x[2], value)
    _eq(x[3], T.arange(12., 16))


def test_variable_slicing(T):
    # test_variable_slicing: 0-d int tensors as slice bounds
    x = T.arange(0, 16).view(4, 4)
    i, j = T.tensor([0, 1], dtype=T.int32)
    _eq(x[i:j], x[0:1])


def test_ellipsis_tensor(T):
    # test_ellipsis_tensor
    x = T.arange(0, 9).view(3, 3)
    idx = T.tensor([0, 2])
    assert x[..., idx].tolist() == [[0, 2], [3, 5], [6, 8]]
    assert x[idx, ...].tolist() == [[0, 1, 2], [6, 7, 8]]


def test_unravel_index_errors(T):
    # test_unravel_index_errors
    with pytest.raises(TypeError, match=r"expected 'indices' to be integer"):
        T.unravel_index(T.tensor(0.5), (2, 2))
    with pytest.raises(TypeError, match=r"expected 'indices' to be integer"):
        T.unravel_index(T.tensor([]), (10, 3, 5))
    with pytest.raises(TypeError, match=r"expected 'shape' to be int or sequence"):
        T.unravel_index(T.tensor([1], dtype=T.int64), T.tensor([1, 2, 3]))
    with pytest.raises(TypeError, match=r"expected 'shape' sequence to only contain ints"):
        T.unravel_index(T.tensor([1], dtype=T.int64), (1, 2, 2.0))
    with pytest.raises(ValueError, match=r"'shape' cannot have negative values, but got \(2, -3\)"):
        T.unravel_index(T.tensor(0), (2, -3))


def test_invalid_index(T):
    # test_invalid_index
    x = T.arange(0, 16).view(4, 4)
    with pytest.raises(TypeError, match="slice indices"):
        x["0":"1"]


def test_out_of_bound_index(T):
    # test_out_of_bound_index: the message names index, dimension and size
    x = T.arange(0, 100).view(2, 5, 10)
    for key, msg in (((0, 5), "index 5 is out of bounds for dimension 1 with size 5"),
                     ((4, 5), "index 4 is out of bounds for dimension 0 with size 2"),
                     ((0, 1, 15), "index 15 is out of bounds for dimension 2 with size 10"),
                     ((slice(None), slice(None), 12), "index 12 is out of bounds for dimension 2 with size 10")):
        with pytest.raises(IndexError, match=msg):
            x[key]


def test_zero_dim_index(T):
    # test_zero_dim_index
    x = T.tensor(10)
    assert x.item() == 10
    with pytest.raises(IndexError, match="invalid index"):
        x[0]


@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_take_along_dim(T, dtype):
    # test_take_along_dim: argsort indices along each dim (and flattened), broadcasting, empty
    d = getattr(T, dtype)
    rng = np.random.default_rng(5)
    for shape in ((3, 2), (2, 3, 5), (2, 4, 0), (2, 3, 1, 4)):
        for noncontig in (False, True):
            base = rng.integers(-9, 9, shape if not noncontig else shape[:-1] + (2 * shape[-1],))
            t = T.tensor(base).to(d)
            if noncontig:
                t = t[..., ::2]
            for dim in list(range(t.ndim)) + [None]:
                idx = T.argsort(t.reshape(-1) if dim is None else t, dim=0 if dim is None else dim, stable=True)
                got = T.take_along_dim(t, idx, dim=dim)
                arr = _np(t)
                want = np.take_along_axis(arr.reshape(-1) if dim is None else arr, _np(idx).astype(np.int64),
                                          axis=0 if dim is None else dim)
                _eq(got, want)
    t = T.ones((3, 4, 1))
    _eq(T.take_along_dim(t, T.ones((1, 2, 5), dtype=T.long), dim=1), np.ones((3, 2, 5)))
    assert tuple(T.take_along_dim(T.ones(3, 4, 5), T.ones((3, 0, 5), dtype=T.long), dim=1).shape) == (3, 0, 5)


@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_take_along_dim_invalid(T, dtype):
    # test_take_along_dim_invalid
    t = T.tensor(np.arange(24).reshape(2, 3, 1, 4) % 5).to(getattr(T, dtype))
    idx = T.argsort(t, dim=0)
    with pytest.raises(RuntimeError, match="input and indices should have the same number of dimensions"):
        T.take_along_dim(t, idx[0], dim=0)
    for bad in (T.bool, T.float32, T.int32):
        with pytest.raises(RuntimeError, match=r"dtype of indices should be Long"):
            T.take_along_dim(t, idx.to(bad), dim=0)
    for dim in (-7, 7):
        with pytest.raises(IndexError, match="Dimension out of range"):
            T.take_along_dim(t, idx, dim=dim)


def test_index_limits(T):
    # test_index_limits: int64 extremes on an empty tensor
    t = T.tensor([])
    with pytest.raises(IndexError):
        t[T.iinfo(T.int64).min]
    with pytest.raises(IndexError):
        t[T.iinfo(T.int64).max]


@pytest.mark.parametrize("reduce", ["prod", "amin", "amax", "mean"])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_index_reduce(T, reduce, dtype):
    # test_index_reduce (fewer combinations): index_reduce_ against a per-row Python loop
    d = getattr(T, dtype)
    rng = np.random.default_rng(7)
    size = (3, 4, 2)
    is_float = dtype == "float32"
    init = {"prod": 1, "mean": 0, "amin": np.inf if is_float else np.iinfo(np.int64).max,
            "amax": -np.inf if is_float else np.iinfo(np.int64).min}[reduce]
    for include_self, dim, idx_dtype in itertools.product((True, False), range(3), ("int32", "int64")):
        n_src = 5
        dest_np = rng.integers(-4, 5, size)
        src_np = rng.integers(-4, 5, size[:dim] + (n_src,) + size[dim + 1:])
        idx_np = rng.integers(0, size[dim], n_src)
        dest = T.tensor(dest_np).to(d)
        dest.index_reduce_(dim, T.tensor(idx_np).to(getattr(T, idx_dtype)), T.tensor(src_np).to(d), reduce,
                           include_self=include_self)
        exp = np.moveaxis(dest_np.astype(np.float64), dim, 0).copy()
        src = np.moveaxis(src_np.astype(np.float64), dim, 0)
        if not include_self:
            exp[np.unique(idx_np)] = init
        count = np.ones(exp.shape) if include_self else np.zeros(exp.shape)
        for i in range(n_src):
            r = idx_np[i]
            if reduce == "prod":
                exp[r] *= src[i]
            elif reduce == "amin":
                exp[r] = np.minimum(exp[r], src[i])
            elif reduce == "amax":
                exp[r] = np.maximum(exp[r], src[i])
            else:
                exp[r] += src[i]
                count[r] += 1
        if reduce == "mean":
            count[count == 0] = 1
            exp = exp / count if is_float else np.floor(exp / count)
        exp = np.moveaxis(exp, 0, dim)
        np.testing.assert_allclose(_np(dest).astype(np.float64), exp, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64"])
def test_index_copy(T, dtype):
    # test_index_copy: contiguous/non-contiguous dest, src and index against a loop of writes
    d = getattr(T, dtype)
    rng = np.random.default_rng(9)
    for dest_c, src_c, idx_c in itertools.product((True, False), repeat=3):
        for dim in range(3):
            sizes = [4, 5]
            dsize = sizes[:dim] + [5] + sizes[dim:]
            ssize = sizes[:dim] + [3] + sizes[dim:]

            def make(size, contig):
                a = T.tensor(rng.integers(0, 3, size if contig else size[:-1] + [2 * size[-1]])).to(d)
                return a if contig else a[..., ::2]
            dest, src = make(dsize, dest_c), make(ssize, src_c)
            idx = T.tensor(rng.permutation(5)[:3])
            if not idx_c:
                idx = T.repeat_interleave(idx, 2, dim=-1)[..., ::2]
            ref = dest.clone()
            dest.index_copy_(dim, idx, src)
            for i in range(3):
                ref[(slice(None),) * dim + (int(idx[i]),)] = src[(slice(None),) * dim + (i,)]
            _eq(dest, ref)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_index_copy_scalars(T, dtype):
    # test_index_copy_scalars: every mix of 0-d and 1-element target / index / source
    d = getattr(T, dtype)
    for st, si, ss in itertools.product([(), (1,)], repeat=3):
        target = T.zeros(st, dtype=d)
        source = T.ones(ss, dtype=d)
        target.index_copy_(0, T.zeros(si, dtype=T.int64), source)
        assert target.item() == source.item()


def test_errors_index_copy(T):
    # test_errors_index_copy: too large, negative and very negative indices
    a = _randn(T, 3, 5)
    c = T.zeros(3, 8)
    for fill in (5, -1, -6):
        with pytest.raises(IndexError):
            a.index_copy_(1, T.full((8,), fill), c)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64"])
def test_index_fill(T, dtype):
    # test_index_fill: fills a column; a complex value is refused for real dtypes; 0-d stays 0-d
    d = getattr(T, dtype)
    x = T.tensor([[1, 2], [4, 5]], dtype=d)
    index = T.tensor([0])
    x.index_fill_(1, index, 0)
    _eq(x, T.tensor([[0, 2], [0, 5]], dtype=d))
    if not x.is_complex():
        with pytest.raises(RuntimeError, match=r"Scalar"):
            x.index_fill_(1, index, 1 + 1j)
    x = T.tensor(1, dtype=d)
    assert x.index_fill(0, index, -1).dim() == 0
    assert x.index_fill_(0, index, -1).dim() == 0


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_index_select(T, dtype):
    # test_index_select: against numpy.take, contiguous and not, int32/int64 index, scalars
    d = getattr(T, dtype)
    rng = np.random.default_rng(2)
    for src_c, idx_c in itertools.product((True, False), repeat=2):
        for dim in range(3):
            sizes = [4, 5]
            size = sizes[:dim] + [3] + sizes[dim:]
            src = T.tensor(rng.integers(0, 3, size if src_c else size[:-1] + [2 * size[-1]])).to(d)
            if not src_c:
                src = src[..., ::2]
            idx_np = rng.integers(0, 3, 5 if idx_c else 10)
            idx = T.tensor(idx_np) if idx_c else T.tensor(idx_np)[::2]
            _eq(T.index_select(src, dim, idx), np.take(_np(src), _np(idx), axis=dim))
    for idx_type in (T.int32, T.int64):
        src = T.tensor(rng.integers(0, 3, (3, 3, 2))).to(d)
        idx = T.tensor([0, 2, 1, 1, 0]).to(idx_type)
        _eq(T.index_select(src, 1, idx), np.take(_np(src), [0, 2, 1, 1, 0], axis=1))
    for ss, si in itertools.product([(), (1,)], repeat=2):
        source = T.ones(ss, dtype=d)
        assert source.index_select(0, T.zeros(si, dtype=T.int64)).item() == source.item()


# ==== NumpyTests =================================================================================
def test_index_no_floats(T):
    # NumpyTests.test_index_no_floats
    a = T.tensor([[[5.]]])
    for f in (0.0, -1.4):
        for key in ((f,), (0, f), (f, 0), (f, slice(None)), (slice(None), f), (slice(None), f, slice(None)),
                    (f, slice(None), slice(None)), (0, 0, f), (f, 0, 0), (0, f, 0)):
            with pytest.raises(IndexError):
                a[key if len(key) > 1 else key[0]]


def test_none_and_empty_tuple_index(T):
    # NumpyTests.test_none_index, test_empty_tuple_index
    a = T.tensor([1, 2, 3])
    assert a[None].dim() == a.dim() + 1
    _eq(a[()], a)
    assert a[()].data_ptr() == a.data_ptr()


def test_empty_fancy_index(T):
    # NumpyTests.test_empty_fancy_index
    a = T.tensor([1, 2, 3])
    assert a[[]].dtype == T.long and tuple(a[[]].shape) == (0,)
    assert tuple(a[T.tensor([]).long()].shape) == (0,)
    with pytest.raises(IndexError):
        a[T.tensor([]).float()]


def test_ellipsis_index(T):
    # NumpyTests.test_ellipsis_index
    a = T.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    assert a[...] is not a
    _eq(a[...], a)
    assert a[...].data_ptr() == a.data_ptr()
    _eq(a[0, ...], a[0])
    _eq(a[0, ...], a[0, :])
    _eq(a[..., 0], a[:, 0])
    assert a[0, ..., 1].dim() == 0 and a[0, ..., 1].item() == 2
    b = T.tensor(1)
    b[(Ellipsis,)] = 2
    assert b.item() == 2


def test_single_int_index(T):
    # NumpyTests.test_single_int_index
    a = T.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    assert a[0].tolist() == [1, 2, 3]
    assert a[-1].tolist() == [7, 8, 9]
    with pytest.raises(IndexError):
        a[1 << 30]
    with pytest.raises(Exception):
        a[1 << 64]


def test_single_bool_index(T):
    # NumpyTests.test_single_bool_index
    a = T.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    _eq(a[True], a[None])
    _eq(a[False], a[None][0:0])


def test_boolean_shape_mismatch(T):
    # NumpyTests.test_boolean_shape_mismatch
    arr = T.ones((5, 4, 3))
    for key in (T.tensor([True]), T.tensor([False] * 6), T.zeros(4, 4, dtype=T.uint8),
                (slice(None), T.zeros(4, 4, dtype=T.uint8))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(IndexError, match="mask"):
                arr[key]


def test_boolean_indexing_onedim(T):
    # NumpyTests.test_boolean_indexing_onedim
    a = T.tensor([[0., 0., 0.]])
    b = T.tensor([True])
    _eq(a[b], a)
    a[b] = 1.0
    assert a.tolist() == [[1., 1., 1.]]


def test_boolean_assignment_value_mismatch(T):
    # NumpyTests.test_boolean_assignment_value_mismatch
    a = T.arange(0, 4)

    def f(a, v):
        a[a > -1] = T.tensor(v)
    for target, v in ((a, []), (a, [1, 2, 3]), (a[:1], [1, 2, 3])):
        with pytest.raises(Exception, match="shape mismatch"):
            f(target, v)


def test_boolean_indexing_twodim(T):
    # NumpyTests.test_boolean_indexing_twodim
    a = T.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    b = T.tensor([[True, False, True], [False, True, False], [True, False, True]])
    assert a[b].tolist() == [1, 3, 5, 7, 9]
    assert a[b[1]].tolist() == [[4, 5, 6]]
    _eq(a[b[0]], a[b[2]])
    a[b] = 0
    assert a.tolist() == [[0, 2, 0], [4, 0, 6], [0, 8, 0]]


@pytest.mark.parametrize("as_tensor", [False, True])
def test_boolean_indexing_weirdness(T, as_tensor):
    # NumpyTests.test_boolean_indexing_weirdness, test_boolean_indexing_weirdness_tensors
    t, f = (T.tensor(True), T.tensor(False)) if as_tensor else (True, False)
    a = T.ones((2, 3, 4))
    assert tuple(a[False, True, ...].shape) == (0, 2, 3, 4)
    _eq(a[t, [0, 1], t, t, [1], [[2]]], T.ones(1, 2))
    with pytest.raises(IndexError):
        a[f, [0, 1], ...]


def test_boolean_indexing_alldims(T):
    # NumpyTests.test_boolean_indexing_alldims
    a = T.ones((2, 3))
    assert tuple(a[True, True].shape) == (1, 2, 3)
    t = T.tensor(True)
    assert tuple(a[t, t].shape) == (1, 2, 3)


def test_boolean_list_indexing(T):
    # NumpyTests.test_boolean_list_indexing
    a = T.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    b, c = [True, False, False], [True, True, False]
    assert a[b].tolist() == [[1, 2, 3]]
    assert a[b, b].tolist() == [1]
    assert a[c].tolist() == [[1, 2, 3], [4, 5, 6]]
    assert a[c, c].tolist() == [1, 5]


def test_everything_returns_views(T):
    # NumpyTests.test_everything_returns_views
    a = T.tensor([5])
    assert a is not a[()]
    assert a is not a[...]
    assert a is not a[:]


def test_broaderrors_indexing(T):
    # NumpyTests.test_broaderrors_indexing
    a = T.zeros(5, 5)
    with pytest.raises(IndexError, match="shape mismatch"):
        a[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="shape mismatch"):
        a[[0, 1], [0, 1, 2]] = 0


def test_trivial_fancy_out_of_bounds(T):
    # NumpyTests.test_trivial_fancy_out_of_bounds
    a = T.zeros(5)
    for pos, bad in ((-1, 10), (0, 11)):
        ind = T.ones(20, dtype=T.int64)
        ind[pos] = bad
        with pytest.raises(IndexError):
            a[ind]
        with pytest.raises(IndexError):
            a[ind] = 0


def test_index_is_larger(T):
    # NumpyTests.test_index_is_larger
    a = T.zeros((5, 5))
    a[[[0], [1], [2]], [0, 1, 2]] = T.tensor([2., 3., 4.])
    assert (a[:3, :3] == T.tensor([2., 3., 4.])).all().item()
    assert a[3:].abs().sum().item() == 0 and a[:, 3:].abs().sum().item() == 0


def test_broadcast_subspace(T):
    # NumpyTests.test_broadcast_subspace (10 rows instead of 100)
    a = T.zeros((10, 10))
    v = T.arange(0., 10)[:, None]
    b = T.arange(9, -1, -1).long()
    a[b] = v
    _eq(a, b.float().unsqueeze(1).expand(10, 10))


def test_truncate_leading_1s(T):
    # NumpyTests.test_truncate_leading_1s: a (1, 4) value written to a diagonal via range indices
    col_max = _randn(T, 1, 4)
    kernel = col_max.T * col_max
    kernel2 = kernel.clone()
    kernel[range(len(kernel)), range(len(kernel))] = T.square(col_max)
    T.diagonal(kernel2).copy_(T.square(col_max.view(4)))
    _eq(kernel, kernel2)
