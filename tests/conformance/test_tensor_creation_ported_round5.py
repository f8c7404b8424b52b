"""Round 5: PyTorch's test/test_tensor_creation_ops.py (TestTensorCreation, TestRandomTensorCreation,
TestLikeTensorCreation, TestAsArray; CPU, no CUDA/meta/large-tensor tests) ported test by test.
Each body runs under the ``T`` fixture, once with torch 2.13 (so torch itself checks every
expectation the port makes) and once with tracegrad. Where the original compared with NumPy or
SciPy, the port compares with NumPy; random inputs come from a seeded NumPy generator so both
runs see the same numbers. Each test names its original. Earlier call-table coverage of the same
ops lives in test_shape_creation_ported.py and test_torch_files_ported.py."""
import math
from itertools import permutations, product

import numpy as np
import pytest
from _nn_files_helpers import xfail_tracegrad

ALL_DT = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128"]
INT_DT = ["uint8", "int8", "int16", "int32", "int64"]


def _np(t):
    """A tensor's values as a NumPy array (bfloat16 read through float32)."""
    t = t.detach()
    if str(t.dtype).endswith("bfloat16"):
        t = t.float()
    return np.asarray(t.numpy())


def _dn(dt):
    return str(dt).rsplit(".")[-1]


def _eq(got, want, exact_dtype=True, rtol=1e-5, atol=1e-6):
    """``assertEqual`` for a tensor against a tensor or array: shape, dtype, values (nan == nan)."""
    g = _np(got)
    w = _np(want) if hasattr(want, "detach") else np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    if exact_dtype and hasattr(want, "detach"):
        assert _dn(got.dtype) == _dn(want.dtype), (got.dtype, want.dtype)
    if g.dtype.kind in "biu" and w.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


def _rand(T, shape, dtype="float32", seed=0, low=-9, high=9):
    """``make_tensor``/``randn``-like input from a seeded NumPy generator."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return T.tensor(rng.random(shape) > 0.5)
    if dtype.startswith("complex"):
        return T.tensor((rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(dtype))
    if dtype.startswith(("float", "bfloat")):
        return T.tensor(rng.uniform(low, high, shape).astype(np.float32)).to(getattr(T, dtype))
    lo = 0 if dtype == "uint8" else low
    return T.tensor(rng.integers(lo, high, shape)).to(getattr(T, dtype))


# ==== diag_embed / vander / cat basics ===========================================================
def test_diag_embed(T):
    # TestTensorCreation.test_diag_embed
    x = T.arange(3 * 4, dtype=T.float).view(3, 4)
    _eq(T.diag_embed(x), T.stack([T.diag(r) for r in x], 0))
    _eq(T.diag_embed(x, offset=1, dim1=0, dim2=2), T.stack([T.diag(r, 1) for r in x], 1))


def test_cat_mem_overlap(T):
    # TestTensorCreation.test_cat_mem_overlap: an expanded (internally overlapping) out= raises
    x = _rand(T, (1, 3)).expand((6, 3))
    y = _rand(T, (3, 3), seed=1)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        T.cat([y, y], out=x)


def test_vander(T):
    # TestTensorCreation.test_vander
    x = T.tensor([1, 2, 3, 5])
    assert tuple(T.vander(T.tensor([]), 0).shape) == (0, 0)
    with pytest.raises(RuntimeError, match="N must be non-negative."):
        T.vander(x, N=-1)
    with pytest.raises(RuntimeError, match="x must be a one-dimensional tensor."):
        T.vander(T.stack((x, x)))


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float32",
                                   "float64", "complex64", "complex128"])
def test_vander_types(T, dtype):
    # TestTensorCreation.test_vander_types: against np.vander for N in (None, 0, 1, 3), both orders
    if dtype == "uint8":
        X = [[1, 2, 3, 5], [0, 1 / 3, 1, math.pi, 3 / 7]]
    elif dtype == "bool":
        X = [[True, True, True, True], [False, True, True, True, True]]
    elif dtype.startswith("complex"):
        X = [[1 + 1j, 1 + 0j, 0 + 1j, 0 + 0j], [2 + 2j, 3 + 2j, 4 + 3j, 5 + 4j]]
    else:
        X = [[1, 2, 3, 5], [-math.pi, 0, 1 / 3, 1, math.pi, 3 / 7]]
    for x, n, inc in product(X, [None, 0, 1, 3], [False, True]):
        pt_x = T.tensor(x, dtype=getattr(T, dtype))
        np_x = np.array(x, dtype=dtype)
        pt_res = T.vander(pt_x, increasing=inc) if n is None else T.vander(pt_x, n, inc)
        _eq(pt_res, np.vander(np_x, n, inc), exact_dtype=False, atol=1e-3, rtol=0)


def test_cat_all_dtypes_and_devices(T):
    # TestTensorCreation.test_cat_all_dtypes_and_devices (chalf left out)
    for dt in ALL_DT:
        d = getattr(T, dt)
        x = T.tensor([[1, 2], [3, 4]], dtype=d)
        _eq(T.cat((x, x), 0), T.tensor([[1, 2], [3, 4], [1, 2], [3, 4]], dtype=d))
        _eq(T.cat((x, x), 1), T.tensor([[1, 2, 1, 2], [3, 4, 3, 4]], dtype=d))


def test_fill_all_dtypes_and_devices(T):
    # TestTensorCreation.test_fill_all_dtypes_and_devices (the "large" tensor is 1000 long here)
    for dt in ALL_DT:
        d = getattr(T, dt)
        for x in [T.tensor((10, 10), dtype=d), T.empty(1000, dtype=d)]:
            numel = x.numel()
            bound = 100 if dt in ("uint8", "int8") else 2000
            for n in range(-bound, bound, bound // 10):
                x.fill_(n)
                _eq(x, T.tensor([n] * numel, dtype=d))
                assert x.dtype == d


def test_roll(T):
    # TestTensorCreation.test_roll
    numbers = T.arange(1, 9)
    _eq(numbers.roll(1, 0), T.tensor([8, 1, 2, 3, 4, 5, 6, 7]))
    _eq(numbers.roll(-2, 0), T.tensor([3, 4, 5, 6, 7, 8, 1, 2]))
    data = numbers.view(2, 2, 2)
    _eq(data.roll(1, 0), T.tensor([5, 6, 7, 8, 1, 2, 3, 4]).view(2, 2, 2))
    data = data.view(2, 4)
    _eq(data.roll(2, 0).roll(4, 1), data)
    _eq(data.roll(-20, 0).roll(-40, 1), data)
    strided = numbers.view(2, 4).transpose(0, 1)
    assert not strided.is_contiguous()
    _eq(strided.roll(1, 0), T.tensor([4, 8, 1, 5, 2, 6, 3, 7]).view(4, 2))
    expected = numbers.roll(1, 0).view(2, 4)
    _eq(data.roll(1), expected)
    _eq(data.roll(1, dims=None), expected)
    _eq(data.roll(shifts=(2, -1), dims=(1, 0)), T.tensor([[7, 8, 5, 6], [3, 4, 1, 2]]))
    with pytest.raises(RuntimeError, match="required"):
        data.roll(shifts=(), dims=())
    with pytest.raises(RuntimeError, match="required"):
        data.roll(shifts=(), dims=1)
    with pytest.raises(RuntimeError, match="align"):
        data.roll(shifts=(1, 2), dims=(1,))
    with pytest.raises(RuntimeError, match="align"):
        data.roll(shifts=(1,), dims=(1, 2))
    t = T.zeros(6, dtype=T.bool)
    t[0] = True
    t[3] = True
    _eq(t.roll(1, 0), T.tensor([False, True, False, False, True, False]))
    t = T.tensor([1, 2 + 1j, 3.5, 4. + 2j, 5j, 6.])
    t[0] = 1 + 0.5j
    t[3] = 4.
    _eq(t.roll(1, 0), T.tensor([6., 1 + 0.5j, 2 + 1j, 3.5, 4., 5j]))


def test_diagflat(T):
    # TestTensorCreation.test_diagflat
    x = _rand(T, (100,))
    _eq(T.diagflat(x), T.diag(x))
    x = _rand(T, (100,), seed=1)
    _eq(T.diagflat(x, 17), T.diag(x, 17))
    x = _rand(T, (2, 3, 4), seed=2)
    _eq(T.diagflat(x), T.diag(x.contiguous().view(-1)))
    x = _rand(T, (2, 3, 4), seed=3).transpose(2, 0)
    assert not x.is_contiguous()
    _eq(T.diagflat(x), T.diag(x.contiguous().view(-1)))
    _eq(T.diagflat(T.ones(4, dtype=T.complex128)), T.eye(4, dtype=T.complex128))


def test_block_diag(T):
    # TestTensorCreation.test_block_diag: against a zeros-and-slices reference
    def workaround(*arrs):
        ex = []
        for a in arrs:
            ex.append(a if a.dim() == 2 else a.expand(1, a.size(0)) if a.dim() == 1 else a.expand(1, 1))
        shapes = [tuple(a.shape) for a in ex]
        out = T.zeros(sum(s[0] for s in shapes), sum(s[1] for s in shapes), dtype=ex[0].dtype)
        r = c = 0
        for a, (rr, cc) in zip(ex, shapes):
            out[r:r + rr, c:c + cc] = a
            r, c = r + rr, c + cc
        return out

    tensors = [_rand(T, (2, 2)), _rand(T, (2, 3), seed=1), _rand(T, (10,), seed=2),
               _rand(T, (8, 1), seed=3), _rand(T, (1,), seed=4)[0]]
    _eq(T.block_diag(*tensors), workaround(*tensors))
    t = _rand(T, (1,), seed=5)[0]
    _eq(T.block_diag(t), t.expand(1, 1))
    t = _rand(T, (10,), seed=6)
    _eq(T.block_diag(t), t.expand(1, t.size(0)))
    r = T.block_diag()
    _eq(r, T.empty(1, 0))
    assert r.device.type == "cpu"
    dts = ["uint8", "int8", "int16", "int32", "int64", "float32", "float64", "complex64", "complex128"]
    for d1, d2 in product(dts, dts):
        a = T.tensor(1, dtype=getattr(T, d1))
        b = T.tensor(2, dtype=getattr(T, d2))
        _eq(T.block_diag(a, b), T.tensor([[1, 0], [0, 2]], dtype=T.result_type(a, b)))
    with pytest.raises(RuntimeError, match="torch.block_diag: Input tensors must have 2 or fewer "
                                           "dimensions. Input 1 has 3 dimensions"):
        T.block_diag(T.tensor(5), T.tensor([[[6]]]))
    with pytest.raises(RuntimeError, match="torch.block_diag: Input tensors must have 2 or fewer "
                                           "dimensions. Input 0 has 4 dimensions"):
        T.block_diag(T.tensor([[[[6]]]]))


def _np_block_diag(*arrs):
    """scipy.linalg.block_diag's rule (0-D/1-D inputs become rows) written with NumPy."""
    arrs = [np.atleast_2d(a) for a in arrs]
    out = np.zeros((sum(a.shape[0] for a in arrs), sum(a.shape[1] for a in arrs)),
                   dtype=np.result_type(*arrs) if arrs else np.float64)
    r = c = 0
    for a in arrs:
        out[r:r + a.shape[0], c:c + a.shape[1]] = a
        r, c = r + a.shape[0], c + a.shape[1]
    return out


def test_block_diag_scipy(T):
    # TestTensorCreation.test_block_diag_scipy (scipy.linalg.block_diag restated with NumPy)
    cases = [([1, [2], [], [3, 4, 5], [[], []], [[6], [7.3]]], "float32"),
             ([[[1, 2], [3, 4]], [1]], "int64"),
             ([[[4, 9], [7, 10]], [4.6, 9.12], [1j + 3]], "complex64"),
             ([], "float32")]
    for arrs, want in cases:
        res = T.block_diag(*[T.tensor(a) for a in arrs])
        assert _dn(res.dtype) == want
        ref = _np_block_diag(*[np.asarray(a) for a in arrs]) if arrs else np.empty((1, 0))
        _eq(res, ref, exact_dtype=False)


# ==== complex / polar ============================================================================
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_torch_complex(T, dtype, request):
    # TestTensorCreation.test_torch_complex
    if dtype == "float16":
        xfail_tracegrad(request, T, "complex(half, half) is a complex32 (chalf) tensor in torch; XLA has "
                                    "no complex32 arrays, so tracegrad cannot make one")
    real = T.tensor([1, 2], dtype=getattr(T, dtype))
    imag = T.tensor([3, 4], dtype=getattr(T, dtype))
    want = {"float16": "complex32", "float32": "complex64", "float64": "complex128"}[dtype]
    z = T.complex(real, imag)
    assert _dn(z.dtype) == want
    if dtype == "float16":
        z = z.to(T.complex64)
    _eq(z, np.array([1 + 3j, 2 + 4j]), exact_dtype=False)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_polar(T, dtype):
    # TestTensorCreation.test_torch_polar
    d = getattr(T, dtype)
    ab = T.tensor([1, 2, -3, -4.5, 1, 1], dtype=d)
    angle = T.tensor([math.pi / 2, 5 * math.pi / 4, 0, -11 * math.pi / 6, math.pi, -math.pi], dtype=d)
    z = T.polar(ab, angle)
    assert _dn(z.dtype) == ("complex64" if dtype == "float32" else "complex128")
    _eq(z, np.array([1j, -1.41421356237 - 1.41421356237j, -3, -3.89711431703 - 2.25j, -1, -1]),
        exact_dtype=False, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64", "complex64",
                                   "complex128", "bool"])
def test_torch_complex_floating_dtype_error(T, dtype):
    # TestTensorCreation.test_torch_complex_floating_dtype_error (the original's loop checks only
    # its last op; both are checked here)
    a = T.tensor([1, 2], dtype=getattr(T, dtype))
    b = T.tensor([3, 4], dtype=getattr(T, dtype))
    for op in (T.complex, T.polar):
        with pytest.raises(RuntimeError, match=r"Expected both inputs to be Half, Float or Double "
                                               r"tensors but got [A-Za-z]+ and [A-Za-z]+"):
            op(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_complex_same_dtype_error(T, dtype):
    # TestTensorCreation.test_torch_complex_same_dtype_error
    name = {"float32": "Float", "float64": "Double"}
    other = "float64" if dtype == "float32" else "float32"
    for op in (T.complex, T.polar):
        a = T.tensor([1, 2], dtype=getattr(T, dtype))
        b = T.tensor([3, 4], dtype=getattr(T, other))
        with pytest.raises(RuntimeError, match=f"Expected object of scalar type {name[dtype]} but got "
                                               f"scalar type {name[other]} for second argument"):
            op(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_complex_out_dtype_error(T, dtype):
    # TestTensorCreation.test_torch_complex_out_dtype_error
    cname = "ComplexFloat" if dtype == "float32" else "ComplexDouble"
    name = "Float" if dtype == "float32" else "Double"
    for op in (T.complex, T.polar):
        a = T.tensor([1, 2], dtype=getattr(T, dtype))
        b = T.tensor([3, 4], dtype=getattr(T, dtype))
        out = T.zeros(2, dtype=getattr(T, dtype))
        with pytest.raises(RuntimeError, match=f"Expected object of scalar type {cname} but got scalar "
                                               f"type {name} for argument 'out'"):
            op(a, b, out=out)


# ==== cat ========================================================================================
def test_cat_empty_legacy(T):
    # TestTensorCreation.test_cat_empty_legacy (4x3x8x8 instead of 4x3x32x32)
    x = _rand(T, (4, 3, 8, 8))
    empty = _rand(T, (0,))
    _eq(T.cat([x, empty], dim=1), T.cat([empty, x], dim=1))
    _eq(T.cat([empty, empty], dim=1), empty)


def test_cat_empty(T):
    # TestTensorCreation.test_cat_empty
    x = _rand(T, (4, 3, 8, 8))
    empty = _rand(T, (4, 0, 8, 8))
    _eq(T.cat([x, empty], dim=1), T.cat([empty, x], dim=1))
    _eq(T.cat([empty, empty], dim=1), empty)


def test_cat_out(T):
    # TestTensorCreation.test_cat_out (pytorch issue 49878: out= a narrowed, maybe non-contiguous view)
    y = _rand(T, (4, 6))
    w = y.view(-1).clone()
    a = T.cat([w[:2], w[4:6]])
    b = T.cat([w[:2], w[4:6]], out=w[6:10])
    _eq(a, b)
    _eq(a, w[6:10])
    _eq(w[:6], y.view(-1)[:6])
    for dim, random_length in [(0, 1), (0, 3), (1, 2), (1, 4)]:
        x = T.zeros((10, 5, 2))
        y = x.narrow(dim, 0, x.shape[dim] - random_length)
        val = T.full_like(y[0], 3.)
        assert y.is_contiguous() == (dim == 0)
        T.cat((val[None],) * y.shape[0], dim=0, out=y)
        expected_y = T.cat((val[None],) * y.shape[0], dim=0)
        expected_x = T.zeros((10, 5, 2))
        if dim == 0:
            expected_x[:x.shape[dim] - random_length, :, :] = expected_y
        else:
            expected_x[:, :x.shape[dim] - random_length, :] = expected_y
        _eq(y, expected_y)
        _eq(x, expected_x)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64", "float32", "float64",
                                   "complex64", "complex128"])
def test_cat_out_fast_path_dim0_dim1(T, dtype):
    # TestTensorCreation.test_cat_out_fast_path_dim0_dim1
    y = _rand(T, (4, 6), dtype, low=0, high=100) if dtype in INT_DT else _rand(T, (4, 6), dtype)
    w = y.view(-1).clone()
    a = T.cat([w[:2], w[4:6]])
    b = T.cat([w[:2], w[4:6]], out=w[6:10])
    _eq(a, b)
    _eq(a, w[6:10])
    _eq(w[:6], y.view(-1)[:6])
    _eq(T.cat([w[:2].contiguous(), w[4:6].contiguous()]), a)
    w = y.clone()
    ws = T.tensor_split(w, (2, 4), dim=1)
    expected_b = T.index_select(w, 1, T.tensor([0, 1, 2, 3]))
    _eq(T.cat([ws[0], ws[1]], dim=1), expected_b)
    _eq(T.cat([ws[0].contiguous(), ws[1].contiguous()], dim=1), expected_b)
    if dtype in INT_DT:
        return
    d = getattr(T, dtype)
    a, b, c, e = (_rand(T, s, dtype, seed=i).requires_grad_() for i, s in
                  enumerate([(4, 3), (2, 3), (5, 3), (5, 2)]))
    cplx = dtype.startswith("complex")
    out0 = T.cat([a.contiguous(), b.contiguous()], dim=0).sum()
    (out0.abs() if cplx else out0).backward()
    out1 = T.cat([c.contiguous(), e.contiguous()], dim=1).sum()
    (out1.abs() if cplx else out1).backward()
    for t in (a, b, c, e):
        if cplx:
            _eq(t.grad.abs(), T.ones(t.shape, dtype=d).abs())
        else:
            _eq(t.grad, T.ones(t.shape, dtype=d))


def test_cat_out_channels_last(T):
    # TestTensorCreation.test_cat_out_channels_last
    x = _rand(T, (4, 3, 8, 8))
    y = _rand(T, (4, 3, 8, 8), seed=1)
    res1 = T.cat((x, y))
    z = res1.clone().contiguous(memory_format=T.channels_last)
    _eq(T.cat((x, y), out=z), res1)


def test_cat_in_channels_last(T):
    # TestTensorCreation.test_cat_in_channels_last (the larger-than-grain-size half left out)
    for dim in range(4):
        x = _rand(T, (4, 15, 8, 8), seed=dim)
        y = _rand(T, (4, 15, 8, 8), seed=dim + 10)
        res1 = T.cat((x, y), dim=dim)
        x = x.clone().contiguous(memory_format=T.channels_last)
        y = y.clone().contiguous(memory_format=T.channels_last)
        res2 = T.cat((x, y), dim=dim)
        assert res2.is_contiguous(memory_format=T.channels_last)
        _eq(res1, res2)


def test_cat_preserve_channels_last(T):
    # TestTensorCreation.test_cat_preserve_channels_last
    x = _rand(T, (4, 3, 8, 8))
    y = _rand(T, (4, 3, 8, 8), seed=1)
    res1 = T.cat((x, y))
    res2 = T.cat((x.contiguous(memory_format=T.channels_last), y.contiguous(memory_format=T.channels_last)))
    _eq(res1, res2)
    assert res2.is_contiguous(memory_format=T.channels_last)
    x = T.arange(24, dtype=T.float).reshape(2, 2, 3, 2).to(memory_format=T.channels_last)
    x1, x2 = x[:, :, :2], x[:, :, 1:]
    res1 = T.cat((x1, x2), dim=-1)
    _eq(res1, T.cat((x1.contiguous(), x2.contiguous()), dim=-1))
    assert res1.is_contiguous(memory_format=T.channels_last)


def test_cat_split_chunk_roundtrip(T):
    # TestTensorCreation.test_cat (its device-independent checks: narrow pieces, split/chunk round trip)
    for dim in range(-3, 3):
        pos = dim if dim >= 0 else 3 + dim
        x = _rand(T, (13, 4, 4), seed=1).transpose(0, pos)
        y = _rand(T, (17, 4, 4), seed=2).transpose(0, pos)
        z = _rand(T, (19, 4, 4), seed=3).transpose(0, pos)
        res = T.cat((x, y, z), dim)
        _eq(res.narrow(pos, 0, 13), x, rtol=0, atol=0)
        _eq(res.narrow(pos, 13, 17), y, rtol=0, atol=0)
        _eq(res.narrow(pos, 30, 19), z, rtol=0, atol=0)
    x = _rand(T, (20, 4, 4))
    _eq(T.cat(T.split(x, 7)), x)
    _eq(T.cat(T.chunk(x, 7)), x)
    assert tuple(T.cat([x, _rand(T, (1, 4, 4))]).size()) == (21, 4, 4)


def test_device_rounding(T):
    # TestTensorCreation.test_device_rounding (CUDA-only there; round half to even holds on CPU too)
    a = [-5.8, -3.5, -2.3, -1.5, -0.5, 0.5, 1.5, 2.3, 3.5, 5.8]
    for dt in (T.float, T.double):
        _eq(T.tensor(a, dtype=dt).round(), np.array([-6., -4., -2., -2., 0., 0., 2., 2., 4., 6.]),
            exact_dtype=False, rtol=0, atol=0)


def _like_fns(T):
    return [lambda t: T.zeros_like(t), lambda t: T.ones_like(t),
            lambda t: T.randint_like(t, 10, 100), lambda t: T.randint_like(t, 100),
            lambda t: T.randn_like(t), lambda t: T.rand_like(t), lambda t: T.full_like(t, 7),
            lambda t: T.empty_like(t)]


def _stride_set(T):
    """dense, sliced, gapped, 0-strided, overlapping (general, sliced, gapped, 0-strided, equal)."""
    return (_rand(T, (4, 3, 2)),
            _rand(T, (4, 3, 2))[:, :, ::2],
            T.empty_strided((4, 3, 2), (10, 3, 1)).fill_(1.0),
            T.empty_strided((4, 3, 2), (10, 0, 3)).fill_(1.0),
            T.empty_strided((4, 3, 2), (10, 1, 2)).fill_(1.0),
            T.empty_strided((4, 3, 2), (4, 2, 1))[:, :, ::2].fill_(1.0),
            T.empty_strided((4, 3, 2), (10, 1, 1)).fill_(1.0),
            T.empty_strided((4, 1, 1, 2), (10, 0, 0, 2)).fill_(1.0),
            T.empty_strided((4, 2, 3), (10, 3, 3)).fill_(1.0))


def test_like_fn_stride_proparation_vs_tensoriterator_unary_op(T, request):
    # TestTensorCreation.test_like_fn_stride_proparation_vs_tensoriterator_unary_op: *_like keeps
    # the strides an elementwise op (exp) would give, for every permutation of each layout
    xfail_tracegrad(request, T, "a pointwise op on a plain permuted view gives a contiguous result in "
                                "tracegrad (NOTE [storage layouts], _tensor/memory_format.py); its *_like "
                                "strides match torch's (test_like_fn_strides_match_torch)")
    for like_fn in _like_fns(T):
        for t in _stride_set(T):
            for p in permutations(range(t.dim())):
                tp = t.permute(p)
                te, tl = T.exp(tp), like_fn(tp)
                assert te.stride() == tl.stride(), (tp.shape, tp.stride())
                assert te.size() == tl.size()


def test_like_fn_strides_match_torch():
    # the *_like half of test_like_fn_stride_proparation_vs_tensoriterator_unary_op, against
    # torch's own *_like strides (the same layouts and permutations; also fill_ on overlapping memory)
    import torch
    import tracegrad
    for fa, fb in zip(_like_fns(torch), _like_fns(tracegrad)):
        for a, b in zip(_stride_set(torch), _stride_set(tracegrad)):
            for p in permutations(range(a.dim())):
                ta, tb = a.permute(p), b.permute(p)
                assert tb.stride() == ta.stride()
                assert fb(tb).stride() == fa(ta).stride(), (ta.shape, ta.stride())
                assert tuple(fb(tb).size()) == tuple(fa(ta).size())
