"""Round 4: PyTorch's test/test_shape_ops.py (TestShapeOps, CPU, no quantized/JIT/large-tensor
tests) ported test by test. Each body runs under the ``T`` fixture, once with torch 2.13 (so torch
itself checks every expectation the port makes) and once with tracegrad; where the original
compared with NumPy (``compare_with_numpy``), the port does too. Inputs come from a seeded NumPy
generator instead of torch's RNG, so both runs see the same numbers. Each test names its original;
the call tables of test_shape_creation_ported.py cover other corners of the same ops."""
import itertools
import warnings

import numpy as np
import pytest
from _nn_files_helpers import xfail_tracegrad

DT3 = ["int64", "float32", "complex128"]          # @dtypes(torch.int64, torch.float, torch.complex128)
# (the original's int16, bfloat16 and float64 go uint8/int64's, float16's and float32's way: flip
# moves elements, and each dtype compiles ~70 flip programs)
FLIP_DT = ["bool", "uint8", "int64", "float16", "float32", "complex64"]


def _np(t):
    """A tensor's values as a NumPy array (bfloat16 read through float32)."""
    t = t.detach()
    if str(t.dtype).endswith("bfloat16"):
        t = t.float()
    return np.asarray(t.numpy())


def _eq(got, want, exact_dtype=True, rtol=1e-5, atol=1e-6):
    """``assertEqual`` for a tensor against a tensor or array: shape, values (nan == nan)."""
    g = _np(got)
    w = _np(want) if hasattr(want, "detach") else np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    if exact_dtype and hasattr(want, "detach"):
        assert str(got.dtype).rsplit(".")[-1] == str(want.dtype).rsplit(".")[-1], (got.dtype, want.dtype)
    if g.dtype.kind in "biu" and w.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


def _make(T, shape, dtype, seed=0, low=-9, high=9):
    """``make_tensor``-like input from a seeded NumPy generator."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return T.tensor(rng.random(shape) > 0.5)
    if dtype in ("complex64", "complex128"):
        a = rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)
        return T.tensor(a.astype(dtype))
    if dtype.startswith(("float", "bfloat")):
        return T.tensor(rng.uniform(low, high, shape).astype(np.float32)).to(getattr(T, dtype))
    lo = 0 if dtype == "uint8" else low
    return T.tensor(rng.integers(lo, high, shape)).to(getattr(T, dtype))


def _compare_with_numpy(T, tfn, nfn, x, **kw):
    _eq(tfn(x), nfn(_np(x)), exact_dtype=False, **kw)


# ==== unbind / tolist ============================================================================
def test_unbind(T):
    # TestShapeOps.test_unbind
    x = T.tensor(np.random.default_rng(0).random((2, 3, 4, 5)).astype(np.float32))
    for dim in range(4):
        res, res2 = T.unbind(x, dim), x.unbind(dim)
        assert x.size(dim) == len(res) == len(res2)
        for i in range(x.size(dim)):
            _eq(res[i], x.select(dim, i))
            _eq(res2[i], x.select(dim, i))


def test_tolist(T):
    # TestShapeOps.test_tolist (without the typed Storage part)
    assert T.tensor([]).tolist() == []
    assert T.tensor([1.0, 2.0, 3.0]).tolist() == [1.0, 2.0, 3.0]
    assert T.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    t3 = T.tensor([[[1, 2], [3, 4]], [[5, 6], [7, 8]]])
    nc = t3.select(1, 1)
    assert not nc.is_contiguous()
    assert nc.tolist() == [[3, 4], [7, 8]]


# ==== movedim / moveaxis =========================================================================
@pytest.mark.parametrize("dtype", DT3)
def test_movedim_invalid(T, dtype):
    # TestShapeOps.test_movedim_invalid
    x = _make(T, (5, 6, 7, 8), dtype)
    for fn in (T.movedim, T.moveaxis):
        with pytest.raises(IndexError, match="Dimension out of range"):
            fn(x, 5, 0)
        with pytest.raises(IndexError, match="Dimension out of range"):
            fn(x, 0, 5)
        with pytest.raises(RuntimeError, match="movedim: Invalid source or destination dims:"):
            fn(x, (1, 0), (0,))
        for src, dst in [((0, 0), (0, 1)), ((0, 1, 0), (0, 1, 2))]:
            with pytest.raises(RuntimeError, match="movedim: repeated dim in `source`"):
                fn(x, src, dst)
        for src, dst in [((0, 1), (1, 1)), ((0, 1, 2), (1, 0, 1))]:
            with pytest.raises(RuntimeError, match="movedim: repeated dim in `destination`"):
                fn(x, src, dst)


@pytest.mark.parametrize("dtype", DT3)
def test_movedim(T, dtype):
    # TestShapeOps.test_movedim: every (source, destination) pair and a sample of sequences,
    # positive and negative, against np.moveaxis (sizes cut to 2..4)
    for fn in (T.moveaxis, T.movedim):
        # the same draws for both names (the alias runs the programs moveaxis compiled; fresh
        # draws for it compiled ~40% more permutations, checking the same code)
        rng = np.random.default_rng(1)
        for nd in range(5):
            shape = tuple(int(s) for s in rng.integers(2, 4, nd))
            x = _make(T, shape, dtype, seed=nd)
            for src, dst in itertools.permutations(range(nd), 2):
                for s, d in [(src, dst), (src - nd, dst), (src, dst - nd), (src - nd, dst - nd)]:
                    _compare_with_numpy(T, lambda t: fn(t, s, d), lambda a: np.moveaxis(a, s, d), x)
            for r in range(1, nd + 1):
                for src in list(itertools.permutations(range(nd), r))[:6]:
                    dst = tuple(int(v) for v in rng.permutation(nd)[:r])
                    neg = tuple(v - nd if i == 0 else v for i, v in enumerate(src))
                    for s in (src, neg):
                        _compare_with_numpy(T, lambda t: fn(t, s, dst),
                                            lambda a: np.moveaxis(a, s, dst), x)
        x = T.randn(2, 3, 5, 7, 11)
        for s, d in [((0, 1), (0, 1)), (1, 1), ((), ())]:
            _compare_with_numpy(T, lambda t: fn(t, s, d), lambda a: np.moveaxis(a, s, d), x)


# ==== diag / diagonal / trace ====================================================================
@pytest.mark.parametrize("dtype", ["float32", "bool"])
def test_diag(T, dtype):
    # TestShapeOps.test_diag: the out= form matches the functional one
    x = _make(T, (20, 20), dtype)
    res1 = T.diag(x)
    res2 = T.tensor((), dtype=getattr(T, dtype))
    T.diag(x, out=res2)
    _eq(res1, res2)


def test_diagonal(T):
    # TestShapeOps.test_diagonal
    x = _make(T, (30, 30), "float32")
    _eq(T.diagonal(x), T.diag(x))
    _eq(T.diagonal(x, 17), T.diag(x, 17))


def test_diagonal_multidim(T):
    # TestShapeOps.test_diagonal_multidim (shape cut to 3x4x5x6)
    x = _make(T, (3, 4, 5, 6), "float32")
    xn = _np(x)
    for args in [(2, 2, 3), (2,), (-2, 1, 2), (0, -2, -1)]:
        _eq(T.diagonal(x, *args), xn.diagonal(*args))
    xp = x.permute(1, 2, 3, 0)
    _eq(T.diagonal(xp, 0, -2, -1), _np(xp).diagonal(0, -2, -1))


# (int8/int16 accumulate in int64 as uint8/int32 do: each dtype compiles its five shapes' programs)
@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float32", "float64"])
def test_trace(T, dtype):
    # TestShapeOps.test_trace: against np.trace accumulated in the dtype sum() gives
    for shape in ([10, 1], [1, 10], [20, 20], [8, 20], [20, 8]):
        t = _make(T, shape, dtype, low=-9, high=9)
        want_dt = str(t.sum().dtype).rsplit(".")[-1]
        want = np.trace(_np(t), dtype=np.dtype(want_dt))
        got = t.trace()
        assert str(got.dtype).rsplit(".")[-1] == want_dt
        _eq(got, want)


# ==== clamp / clip ===============================================================================
def _clamp_ops(T):
    return (T.clamp, T.Tensor.clamp, T.Tensor.clamp_, T.clip, T.Tensor.clip, T.Tensor.clip_)


def _clamp_input(T, dtype, with_nans, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.random(100) * 50 - 25).astype(np.float32)
    if with_nans:
        x[rng.integers(0, 2, 100).astype(bool)] = np.nan
    return T.tensor(x).to(getattr(T, dtype))


@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_clamp(T, dtype):
    # TestShapeOps.test_clamp: clamp/clip, functional, method and in-place, with out=
    for op in _clamp_ops(T):
        for lo, hi in itertools.product((-10, None), (10, None)):
            if lo is None and hi is None:
                continue
            X = _clamp_input(T, dtype, False)
            want = np.clip(_np(X), lo, hi)
            _eq(op(X.clone(), lo, hi), want)
            if op in (T.clamp, T.clip):
                out = T.empty_like(X)
                op(X, min=lo, max=hi, out=out)
                _eq(out, want)


def test_clamp_propagates_nans(T):
    # TestShapeOps.test_clamp_propagates_nans
    for op in _clamp_ops(T):
        for lo, hi in itertools.product((-10, None), (10, None)):
            if lo is None and hi is None:
                continue
            X = _clamp_input(T, "float32", True)
            want = np.isnan(np.clip(_np(X), lo, hi))
            _eq(T.isnan(op(X.clone(), lo, hi)), want)
            if op in (T.clamp, T.clip):
                out = T.empty_like(X)
                op(X, lo, hi, out=out)
                _eq(T.isnan(out), want)


def test_clamp_scalar_nan_bounds(T):
    # TestShapeOps.test_clamp_scalar_nan_bounds
    x = T.ones(3)
    assert T.isnan(T.clamp(x, None, float("nan"))).all()
    assert T.isnan(T.clamp(x, float("nan"), None)).all()


def test_clamp_raises_arg_errors(T):
    # TestShapeOps.test_clamp_raises_arg_errors
    X = T.randn(10)
    msg = "At least one of 'min' or 'max' must not be None"
    for call in (lambda: X.clamp(), lambda: X.clamp_(), lambda: T.clamp(X)):
        with pytest.raises(RuntimeError, match=msg):
            call()


# ==== flip / fliplr / flipud / rot90 =============================================================
def _flip_cases(T, dtype):
    data = T.tensor([1, 2, 3, 4, 5, 6, 7, 8]).to(getattr(T, dtype)).view(2, 2, 2)
    mk = lambda vals, shape: T.tensor(vals).to(getattr(T, dtype)).view(*shape)  # noqa: E731
    nonctg = T.zeros(2, 2, 4, dtype=getattr(T, dtype))[..., ::2].copy_(data)
    results = [(0, [5, 6, 7, 8, 1, 2, 3, 4]), (1, [3, 4, 1, 2, 7, 8, 5, 6]),
               (2, [2, 1, 4, 3, 6, 5, 8, 7]), ((0, 1), [7, 8, 5, 6, 3, 4, 1, 2]),
               ((0, 1, 2), [8, 7, 6, 5, 4, 3, 2, 1])]
    for src in (data, nonctg):
        for dims, vals in results:
            yield src, dims, mk(vals, (2, 2, 2))
    expanded = mk([1, 2, 3], (3, 1)).expand(3, 2)
    yield expanded, 0, mk([3, 3, 2, 2, 1, 1], (3, 2))
    yield expanded, 1, expanded
    yield data.transpose(0, 1), (0, 1, 2), mk([8, 7, 4, 3, 6, 5, 2, 1], (2, 2, 2))
    rect = mk([1, 2, 3, 4, 5, 6], (2, 3))
    yield rect, 0, mk([4, 5, 6, 1, 2, 3], (2, 3))
    yield rect, 1, mk([3, 2, 1, 6, 5, 4], (2, 3))
    if dtype != "bfloat16":   # the vectorised NCHW cases, against NumPy
        for c in (2, 3):
            img = _make(T, (2, c, 6, 6), dtype)
            n = _np(img)
            yield img, 3, T.tensor(n[:, :, :, ::-1].copy()).to(img.dtype)
            yield img, 2, T.tensor(n[:, :, ::-1, :].copy()).to(img.dtype)
            sub = img[..., ::2, :]
            yield sub, 3, T.tensor(_np(sub)[..., ::-1].copy()).to(img.dtype)
    empty = T.tensor([]).to(getattr(T, dtype))
    yield empty, 0, empty
    yield empty, (), empty
    t = _make(T, (3, 2, 1), dtype)
    yield t, (), t
    z = T.zeros(3, 0, 2, dtype=getattr(T, dtype))
    for i in range(3):
        yield z, i, z
    s = _make(T, (), dtype)
    yield s, 0, s
    s1 = _make(T, (1,), dtype)
    yield s1, 0, s1


@pytest.mark.parametrize("dtype", FLIP_DT)
def test_flip(T, dtype):
    # TestShapeOps.test_flip (no quantized dtypes): every permutation of the dims and the
    # wrapped first dim give the same result; the shape never changes
    for src, dims, want in _flip_cases(T, dtype):
        _eq(src.flip(dims), want)
        n = src.ndim
        if not isinstance(dims, tuple):
            _eq(src.flip(-n + dims), want)
        else:
            for p in itertools.permutations(dims):
                _eq(src.flip(p), want)
                if p:
                    _eq(src.flip((-n + p[0],) + p[1:]), want)
    data = _make(T, (2, 3, 4), dtype)
    for dims in itertools.chain(itertools.combinations(range(3), 1), itertools.combinations(range(3), 2)):
        assert list(data.flip(dims).size()) == [2, 3, 4]


@pytest.mark.parametrize("dtype", ["bool", "int64", "float32", "complex64"])
def test_flip_errors(T, dtype):
    # TestShapeOps.test_flip_errors
    data = _make(T, (2, 2, 2), dtype)
    with pytest.raises(RuntimeError):
        data.flip(0, 1, 1)
    with pytest.raises(TypeError):
        data.flip()
    with pytest.raises(IndexError):
        data.flip(0, 1, 2, 3)
    with pytest.raises(IndexError):
        data.flip(3)


@pytest.mark.parametrize("dtype", ["bool", "int32", "float16", "float64", "complex128"])
def test_flip_numpy(T, dtype):
    # TestShapeOps.test_flip_numpy (sizes 2..4)
    rng = np.random.default_rng(2)
    for ndim in (3, 4):
        data = _make(T, tuple(int(s) for s in rng.integers(2, 5, ndim)), dtype)
        for i in range(1, ndim + 1):
            for dims in itertools.combinations(range(ndim), i):
                _compare_with_numpy(T, lambda t: T.flip(t, dims=dims), lambda a: np.flip(a, axis=dims), data)


@pytest.mark.parametrize("dtype", ["int64", "float64", "complex128"])
def test_fliplr_flipud(T, dtype):
    # TestShapeOps.test_fliplr / test_flipud (via _test_fliplr_flipud)
    rng = np.random.default_rng(3)
    for tfn, nfn, lo in ((T.fliplr, np.fliplr, 2), (T.flipud, np.flipud, 1)):
        for dim in range(lo, 5):
            data = _make(T, tuple(int(s) for s in rng.integers(2, 5, dim)), dtype)
            _compare_with_numpy(T, tfn, nfn, data)


@pytest.mark.parametrize("dtype", ["int64", "float64", "complex128"])
def test_fliplr_flipud_invalid(T, dtype):
    # TestShapeOps.test_fliplr_invalid / test_flipud_invalid
    x = T.randn(42).to(getattr(T, dtype))
    with pytest.raises(RuntimeError, match="Input must be >= 2-d."):
        T.fliplr(x)
    with pytest.raises(RuntimeError, match="Input must be >= 2-d."):
        T.fliplr(T.tensor(42, dtype=getattr(T, dtype)))
    with pytest.raises(RuntimeError, match="Input must be >= 1-d."):
        T.flipud(T.tensor(42, dtype=getattr(T, dtype)))


def test_rot90(T):
    # TestShapeOps.test_rot90
    data = T.arange(1, 5).view(2, 2)
    for k, vals in [(0, [1, 2, 3, 4]), (1, [2, 4, 1, 3]), (2, [4, 3, 2, 1]), (3, [3, 1, 4, 2])]:
        _eq(data.rot90(k, [0, 1]), T.tensor(vals).view(2, 2))
    _eq(data.rot90(), data.rot90(1, [0, 1]))
    _eq(data.rot90(3, [0, 1]), data.rot90(1, [1, 0]))
    _eq(data.rot90(5, [0, 1]), data.rot90(1, [0, 1]))
    _eq(data.rot90(3, [0, 1]), data.rot90(-1, [0, 1]))
    _eq(data.rot90(-5, [0, 1]), data.rot90(-1, [0, 1]))
    for dims in ([0, -3], [0, 2]):    # torch 2.13: IndexError (the original, older: RuntimeError)
        with pytest.raises(IndexError, match="Dimension out of range"):
            data.rot90(1, dims)
    data = T.arange(1, 9).view(2, 2, 2)
    _eq(data.rot90(1, [1, 2]), T.tensor([2, 4, 1, 3, 6, 8, 5, 7]).view(2, 2, 2))
    _eq(data.rot90(1, [1, -1]), data.rot90(1, [1, 2]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        data.rot90(1, [0, 3])
    for dims in ([1, 1], [0, 1, 2], [0]):
        with pytest.raises(RuntimeError):
            data.rot90(1, dims)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_rot90(T, dtype):
    # TestShapeOps.test_complex_rot90
    data = _make(T, (3, 4, 5), dtype)
    for k in range(4):
        _compare_with_numpy(T, lambda t: T.rot90(t, k=k, dims=[0, 1]),
                            lambda a: np.rot90(a, k=k, axes=[0, 1]), data)


# ==== nonzero ====================================================================================
def test_nonzero_no_warning(T):
    # TestShapeOps.test_nonzero_no_warning
    t = T.randn(2, 2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        T.nonzero(t)
        t.nonzero()
    assert len(w) == 0


# (int32 and float64 go int64's and float32's way; each dtype compiles nonzero for every shape)
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "float16", "bfloat16", "float32"])
def test_nonzero(T, dtype):
    # TestShapeOps.test_nonzero: functional, method and out= forms against np.nonzero; a float
    # out tensor is refused
    rng = np.random.default_rng(4)
    for shape in [(12,), (12, 1), (1, 12), (6, 2), (3, 2, 2)]:   # (the original: also (5, 5, 5))
        t = T.tensor(rng.integers(0, 2, shape)).to(getattr(T, dtype))
        want = np.stack(_np(t).nonzero()).T
        dst3 = T.empty([], dtype=T.long)
        T.nonzero(t, out=dst3)
        with pytest.raises(RuntimeError, match="scalar type Long"):
            T.nonzero(t, out=T.empty([], dtype=T.float))
        for got in (T.nonzero(t, as_tuple=False), t.nonzero(as_tuple=False), dst3):
            _eq(got, want)
        for tup in (T.nonzero(t, as_tuple=True), t.nonzero(as_tuple=True)):
            _eq(T.stack(tup).t(), want)


def test_nonzero_astuple_out(T):
    # TestShapeOps.test_nonzero_astuple_out (the TorchScript half left out)
    t = T.tensor(np.random.default_rng(5).standard_normal((3, 3, 3)).astype(np.float32))
    out = T.empty_like(t, dtype=T.long)
    with pytest.raises(RuntimeError):
        T.nonzero(t, as_tuple=True, out=out)
    _eq(T.nonzero(t, as_tuple=False, out=out), T.nonzero(t, out=out))


def test_nonzero_discontiguous(T):
    # TestShapeOps.test_nonzero_discontiguous: a strided input, and an out= tensor whose
    # storage (and strides, when discontiguous) is reused
    tensor = T.tensor(np.random.default_rng(6).integers(0, 2, (4, 4)))
    tensor_nc = T.empty(4, 8)[:, ::2].copy_(tensor)
    dst1 = tensor.nonzero(as_tuple=False)
    _eq(tensor_nc.nonzero(as_tuple=False), dst1)
    dst3 = T.empty_like(dst1)
    ptr = dst3.data_ptr()
    T.nonzero(tensor, out=dst3)
    assert dst3.data_ptr() == ptr
    _eq(dst3, dst1)
    dst4 = T.empty(dst1.size(0), dst1.size(1) * 2, dtype=T.long)[:, ::2]
    ptr, strides = dst4.data_ptr(), dst4.stride()
    T.nonzero(tensor, out=dst4)
    assert dst4.data_ptr() == ptr
    _eq(dst4, dst1)
    assert dst4.stride() == strides


def test_nonzero_non_diff(T):
    # TestShapeOps.test_nonzero_non_diff
    x = T.randn(10, requires_grad=True)
    assert not x.nonzero().requires_grad


# ==== sparse_dim / unfold ========================================================================
@pytest.mark.parametrize("dtype", DT3)
def test_sparse_dense_dim(T, dtype):
    # TestShapeOps.test_sparse_dense_dim
    for shape in [(), (2,), (2, 3)]:
        x = _make(T, shape, dtype)
        assert x.sparse_dim() == 0
        assert x.dense_dim() == len(shape)


def test_unfold_all_devices_and_dtypes(T):
    # TestShapeOps.test_unfold_all_devices_and_dtypes
    for dt in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
               "float32", "float64", "complex64", "complex128"):
        x = T.empty((0, 1, 3, 0), dtype=getattr(T, dt))
        assert tuple(x.unfold(2, 3, 2).shape) == (0, 1, 1, 0, 3)


def test_unfold_scalars(T):
    # TestShapeOps.test_unfold_scalars: a 0-d tensor unfolds to a 1-d tensor of length ``size``
    x = T.tensor(0.5)
    _eq(x.unfold(0, 0, 1), T.empty(0))
    _eq(x.unfold(0, 0, 2), T.empty(0))
    _eq(x.unfold(0, 1, 1), T.tensor([0.5]))


def test_unfold_errors(T):
    # TestShapeOps.test_unfold_errors
    x = T.arange(1.0, 8)
    with pytest.raises(RuntimeError, match="size is -1 but must be >= 0"):
        x.unfold(0, -1, 1)
    with pytest.raises(RuntimeError, match="step is -1 but must be > 0"):
        x.unfold(0, 1, -1)


def test_unfold_backward_values(T):
    # TestShapeOps.test_unfold_backward_errors reaches aten.unfold_backward directly; the public
    # route to the same kernel is unfold's gradient: overlapping windows add up
    x = T.arange(1.0, 8, requires_grad=True)
    x.unfold(0, 3, 2).sum().backward()
    _eq(x.grad, T.tensor([1.0, 1, 2, 1, 2, 1, 1]))
