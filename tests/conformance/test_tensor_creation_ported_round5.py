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
    # promotion across kinds and widths (uint8 with int8 gives int16, float64 with complex64
    # complex128); each pair compiles block_diag once, so int16/int32/complex128 only as results
    dts = ["uint8", "int8", "int64", "float32", "float64", "complex64"]
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


# (one or two dtypes of each class: int8/int16/int32 go int64's way, complex128 complex64's)
@pytest.mark.parametrize("dtype", ["uint8", "int64", "float32", "float64", "complex64"])
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


# ==== hsplit / vsplit / dsplit ===================================================================
def _hvd_split(T, torch_fn, np_fn, op_name, inputs, dtype, dim):
    """TestTensorCreation._hvd_split_helper: against NumPy, or torch's errors where NumPy raises."""
    for shape, arg in inputs:
        direction = dim - (len(shape) == 1 and dim == 1)
        bound = dim + 2 * (dim == 0) + (dim == 2)
        error_expected = len(shape) < bound or (not isinstance(arg, list) and shape[direction] % arg != 0)
        t = _rand(T, shape, dtype)
        if not error_expected:
            got, want = torch_fn(t, arg), np_fn(_np(t), arg)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                _eq(g, w, exact_dtype=False)
        else:
            with pytest.raises(ValueError):
                np_fn(_np(t), arg)
            msg = (op_name + " requires a tensor with at least " if len(shape) < bound
                   else op_name + " attempted to split along dimension ")
            with pytest.raises(RuntimeError, match=msg):
                torch_fn(t, arg)


@pytest.mark.parametrize("dtype", ["int64", "float32", "complex64"])
def test_hsplit(T, dtype):
    # TestTensorCreation.test_hsplit
    inputs = (((), 3), ((), [2, 4, 6]), ((6,), 2), ((6,), 4), ((6,), [2, 5]), ((6,), [7, 9]),
              ((3, 8), 4), ((3, 8), 5), ((3, 8), [1, 5]), ((3, 8), [3, 8]), ((5, 5, 5), 2),
              ((5, 5, 5), [1, 4]), ((5, 0, 5), 3), ((5, 5, 0), [2, 6]))
    _hvd_split(T, T.hsplit, np.hsplit, "torch.hsplit", inputs, dtype, 1)


@pytest.mark.parametrize("dtype", ["int64", "float32", "complex64"])
def test_vsplit(T, dtype):
    # TestTensorCreation.test_vsplit
    inputs = (((6,), 2), ((6,), 4), ((6, 5), 2), ((6, 5), 4), ((6, 5), [1, 2, 3]), ((6, 5), [1, 5, 9]),
              ((6, 5, 5), 2), ((6, 0, 5), 2), ((5, 0, 5), [1, 5]))
    _hvd_split(T, T.vsplit, np.vsplit, "torch.vsplit", inputs, dtype, 0)


@pytest.mark.parametrize("dtype", ["int64", "float32", "complex64"])
def test_dsplit(T, dtype):
    # TestTensorCreation.test_dsplit
    inputs = (((6,), 4), ((6, 6), 3), ((5, 5, 6), 2), ((5, 5, 6), 4), ((5, 5, 6), [1, 2, 3]),
              ((5, 5, 6), [1, 5, 9]), ((5, 5, 0), 2), ((5, 0, 6), 4), ((5, 0, 6), [1, 2, 3]),
              ((5, 5, 6), [1, 5, 9]))
    _hvd_split(T, T.dsplit, np.dsplit, "torch.dsplit", inputs, dtype, 2)


# ==== hstack / column_stack / vstack / row_stack / dstack ========================================
def _special_stacks(T, dim, at_least_dim, torch_fn, np_fn, dtype, seed=0):
    """TestTensorCreation._test_special_stacks, with a seeded NumPy generator for the sizes."""
    rng = np.random.default_rng(seed)
    t = _rand(T, (10,))
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        torch_fn(t)
    inputs = [T.tensor(float(rng.uniform(0, 10))).to(getattr(T, dtype)) for _ in range(int(rng.integers(1, 6)))]
    _eq(torch_fn(inputs), np_fn([_np(x) for x in inputs]), exact_dtype=False)
    for ndims in range(1, 5):
        base = list(rng.integers(1, 6, ndims))
        for i in range(ndims):
            shape = list(base)
            ins = []
            for k in range(int(rng.integers(1, 6))):
                shape[i] = int(rng.integers(1, 6))
                ins.append(_rand(T, tuple(shape), dtype, seed=k, low=15, high=100))
            valid = all(not ((ndims < at_least_dim or td != dim) and ins[k].size()[td] != ins[k + 1].size()[td])
                        for k in range(len(ins) - 1) for td in range(ndims))
            if valid or (torch_fn is T.hstack and ndims == 1):
                _eq(torch_fn(ins), np_fn([_np(x) for x in ins]), exact_dtype=False)
            else:
                with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension"):
                    torch_fn(ins)
                with pytest.raises(ValueError):
                    np_fn([_np(x) for x in ins])


# all_types_and_complex_and(half) in the original; one of each kind here (the suite's time budget)
STACK_DT = ["uint8", "int64", "float16", "float64", "complex64"]


@pytest.mark.parametrize("dtype", STACK_DT)
def test_hstack_column_stack(T, dtype):
    # TestTensorCreation.test_hstack_column_stack
    for torch_op, np_op in ((T.hstack, np.hstack), (T.column_stack, np.column_stack)):
        _special_stacks(T, 1, 1, torch_op, np_op, dtype)
    one = T.arange(0, 10).to(dtype=getattr(T, dtype))
    two = T.arange(0, 100).to(dtype=getattr(T, dtype)).reshape(10, 10)
    ins = (two, one, two, one)
    _eq(T.column_stack(ins), np.column_stack([_np(x) for x in ins]), exact_dtype=False)


@pytest.mark.parametrize("dtype", STACK_DT)
def test_vstack_row_stack(T, dtype):
    # TestTensorCreation.test_vstack_row_stack
    for torch_op, np_op in ((T.vstack, np.vstack), (T.row_stack, np.vstack)):
        _special_stacks(T, 0, 2, torch_op, np_op, dtype)
        for n in (1, 4, 7):
            ins = [_rand(T, (n,), dtype, low=15, high=100), _rand(T, (1, n), dtype, seed=1, low=15, high=100)]
            _eq(torch_op(ins), np_op([_np(x) for x in ins]), exact_dtype=False)


@pytest.mark.parametrize("dtype", STACK_DT)
def test_dstack(T, dtype):
    # TestTensorCreation.test_dstack
    _special_stacks(T, 2, 3, T.dstack, np.dstack, dtype)
    for m, n in ((1, 3), (4, 2), (6, 5)):
        ins = [_rand(T, (n,), dtype, low=15, high=100), _rand(T, (1, n), dtype, seed=1, low=15, high=100),
               _rand(T, (1, n, 1), dtype, seed=2, low=15, high=100)]
        _eq(T.dstack(ins), np.dstack([_np(x) for x in ins]), exact_dtype=False)
        ins = [_rand(T, (m, n), dtype, low=15, high=100), _rand(T, (m, n, 1), dtype, seed=3, low=15, high=100)]
        _eq(T.dstack(ins), np.dstack([_np(x) for x in ins]), exact_dtype=False)


# ==== linspace / scalar conversions ==============================================================
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_large_linspace(T, dtype):
    # TestTensorCreation.test_large_linspace
    d = getattr(T, dtype)
    start = T.iinfo(d).min
    end = T.iinfo(d).max & ~0xfff
    x = T.linspace(start, end, 15, dtype=d)
    assert (x[1] - x[0]).item() > (end - start) / 15


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unpack_double(T, dtype):
    # TestTensorCreation.test_unpack_double (pytorch issue 33111)
    vals = (2 ** 24 + 1, 2 ** 53 + 1, np.iinfo(np.int64).max, np.iinfo(np.uint64).max,
            np.iinfo(np.uint64).max + 1, -1e500, 1e500)
    for val in vals:
        _eq(T.tensor(val, dtype=getattr(T, dtype)), np.array(val, dtype=dtype), exact_dtype=False, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
def test_float_to_int_conversion_finite(T, dtype):
    # TestTensorCreation.test_float_to_int_conversion_finite (CPU branch)
    fmin, fmax = T.finfo(T.float).min, T.finfo(T.float).max
    vals = (fmin, -2, -1.5, -.5, 0, .5, 1.5, 2, fmax)
    refs = None
    if dtype == "uint8":
        vals = (fmin, -2, -1.5, -.5, 0, .5, 1.5, 2)
        refs = np.array((0, 254, 255, 0, 0, 0, 1, 2), dtype=np.uint8)
    if refs is None:
        refs = np.array(vals, dtype=np.float32).astype(dtype)
    _eq(T.tensor(vals, dtype=T.float).to(getattr(T, dtype)), refs, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
def test_float_to_int_conversion_nonfinite(T, dtype):
    # TestTensorCreation.test_float_to_int_conversion_nonfinite
    vals = (float("-inf"), float("inf"), float("nan"))
    with np.errstate(invalid="ignore"):
        refs = np.array(vals, dtype=np.float32).astype(dtype)
    _eq(T.tensor(vals, dtype=T.float).to(getattr(T, dtype)), refs, rtol=0, atol=0)


# ==== cat2 / stack ===============================================================================
@pytest.mark.parametrize("dtype", ["float16", "float64", "int32"])
def test_cat2(T, dtype):
    # TestTensorCreation.test_cat2 (SIZE 4 instead of 10)
    d = getattr(T, dtype)
    for dim in range(-3, 3):
        pos = dim if dim >= 0 else 3 + dim
        x, y, z = (_rand(T, (n, 4, 4), "int64", seed=n, low=-100, high=100).to(d).transpose(0, pos)
                   for n in (13, 17, 19))
        res = T.cat((x, y, z), dim)
        _eq(res.narrow(pos, 0, 13), x, rtol=0, atol=0)
        _eq(res.narrow(pos, 13, 17), y, rtol=0, atol=0)
        _eq(res.narrow(pos, 30, 19), z, rtol=0, atol=0)
    x = _rand(T, (20, 4, 4), "int64", low=-100, high=100).to(d)
    _eq(T.cat(T.split(x, 7)), x)
    _eq(T.cat(T.chunk(x, 7)), x)
    assert tuple(T.cat([x, _rand(T, (1, 4, 4), "int64").to(d)]).size()) == (21, 4, 4)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int16", "int64", "float16", "float32", "complex64"])
def test_zeros_dtype_layout_device_match(T, dtype):
    # TestTensorCreation.test_zeros_dtype_layout_device_match
    d = getattr(T, dtype)
    t = T.zeros((2, 3), device="cpu", dtype=d, layout=T.strided)
    assert t.dtype is d
    assert t.layout is T.strided
    assert t.device == T.device("cpu")


def test_stack(T):
    # TestTensorCreation.test_stack
    for dt in (T.half, T.double, T.int):
        x, y, z = (_rand(T, (2, 3, 4), "int64", seed=s, low=-100, high=100).to(dt) for s in range(3))
        for dim in range(4):
            res = T.stack((x, y, z), dim)
            _eq(res, T.stack((x, y, z), dim - 4))
            assert tuple(res.size()) == tuple(x.size())[:dim] + (3,) + tuple(x.size())[dim:]
            _eq(res.select(dim, 0), x, rtol=0, atol=0)
            _eq(res.select(dim, 1), y, rtol=0, atol=0)
            _eq(res.select(dim, 2), z, rtol=0, atol=0)


def test_stack_out(T):
    # TestTensorCreation.test_stack_out: out= of the right size is written in place (same data_ptr)
    for dt in (T.half, T.double, T.int):
        x, y, z = (_rand(T, (2, 3, 4), "int64", seed=s, low=-100, high=100).to(dt) for s in range(3))
        for dim in range(4):
            size = tuple(x.size())[:dim] + (3,) + tuple(x.size())[dim:]
            res_out, res_neg_out = x.new(T.Size(size)), x.new(T.Size(size))
            dp, dpn = res_out.data_ptr(), res_neg_out.data_ptr()
            T.stack((x, y, z), dim, out=res_out)
            T.stack((x, y, z), dim - 4, out=res_neg_out)
            _eq(res_out, res_neg_out)
            assert tuple(res_out.size()) == size
            assert res_out.data_ptr() == dp
            assert res_neg_out.data_ptr() == dpn
            _eq(res_out.select(dim, 0), x, rtol=0, atol=0)
            _eq(res_out.select(dim, 1), y, rtol=0, atol=0)
            _eq(res_out.select(dim, 2), z, rtol=0, atol=0)


def test_repeat_interleave(T):
    # TestTensorCreation.test_repeat_interleave
    x = T.tensor([0, 1, 2, 3])
    _eq(T.repeat_interleave(x), T.tensor([1, 2, 2, 3, 3, 3]))
    for bad in (T.arange(4).reshape(2, 2), T.arange(4.0), T.tensor([1, 2, -1, 3, 4])):
        with pytest.raises(RuntimeError):
            T.repeat_interleave(bad)
    y = T.tensor([[1, 2], [3, 4]])
    want = T.tensor([1, 1, 2, 2, 3, 3, 4, 4])
    _eq(T.repeat_interleave(y, 2), want)
    _eq(T.repeat_interleave(y, T.tensor(2)), want)
    _eq(T.repeat_interleave(y, T.tensor([2])), want)
    _eq(T.repeat_interleave(y, 3, dim=1), T.tensor([[1, 1, 1, 2, 2, 2], [3, 3, 3, 4, 4, 4]]))
    _eq(T.repeat_interleave(y, T.tensor([1, 2]), dim=0), T.tensor([[1, 2], [3, 4], [3, 4]]))
    with pytest.raises(RuntimeError):
        T.repeat_interleave(y, T.tensor([1, 2, 3]), dim=0)
    with pytest.raises(RuntimeError):
        T.repeat_interleave(y, T.arange(9).reshape(3, 3), dim=0)
    x = T.zeros((5, 0))
    _eq(T.repeat_interleave(x, repeats=3, dim=1), x.new_zeros(5, 0))
    x = T.tensor([], dtype=T.int64)
    _eq(T.repeat_interleave(x, x), x)


def test_new_methods_requires_grad(T):
    # TestTensorCreation.test_new_methods_requires_grad
    size = (10,)
    for name, args in (("new_full", [size, 1]), ("new_empty", [size]), ("new_zeros", [size]), ("new_ones", [size])):
        x = _rand(T, size)
        for rg in (True, False):
            assert getattr(x, name)(*args, requires_grad=rg).requires_grad == rg
        x = _rand(T, size, "int64", low=0, high=10)
        with pytest.raises(RuntimeError, match=r"Only Tensors of floating point and complex dtype can require gradients"):
            getattr(x, name)(*args, requires_grad=True)


def test_tensor_from_sequence(T):
    # TestTensorCreation.test_tensor_from_sequence: a sequence whose __getitem__ raises TypeError
    class MockSequence:
        def __init__(self, lst):
            self.lst = lst

        def __len__(self):
            return len(self.lst)

        def __getitem__(self, item):
            raise TypeError

    class GoodMockSequence(MockSequence):
        def __getitem__(self, item):
            return self.lst[item]

    with pytest.raises(ValueError, match="could not determine the shape of object type 'MockSequence'"):
        T.tensor(MockSequence([1.0, 2.0, 3.0]))   # TypeError in the original; torch 2.13 raises ValueError
    _eq(T.tensor(GoodMockSequence([1.0, 2.0, 3.0])), T.tensor([1.0, 2.0, 3.0]))


def test_simple_scalar_cast(T):
    # TestTensorCreation.test_simple_scalar_cast
    for tensor, value in zip([T.tensor([1.5]), T.zeros(1, 1, 1, 1)], [1.5, 0]):
        assert int(tensor) == int(value)
        assert float(tensor) == float(value)
        assert complex(tensor) == complex(value)
    assert complex(T.tensor(1.5j)) == 1.5j
    for tensor in map(T.Tensor, [[], [1, 2], [[1, 2], [3, 4]]]):
        for conv in (int, float, complex):
            with pytest.raises(ValueError):
                conv(tensor)
    with pytest.raises(RuntimeError):
        float(T.tensor(1.5j))
    with pytest.raises(RuntimeError):
        int(T.tensor(1.5j))


def test_offset_scalar_cast(T):
    # TestTensorCreation.test_offset_scalar_cast
    assert int(T.tensor([1., 2., 3.])[2:]) == 3


# ==== meshgrid / cartesian_prod / combinations ===================================================
def test_meshgrid_empty(T):
    # TestTensorCreation.test_meshgrid_empty
    with pytest.raises(RuntimeError, match="expects a non-empty TensorList"):
        T.meshgrid()


def test_meshgrid_unsupported_indexing(T):
    # TestTensorCreation.test_meshgrid_unsupported_indexing
    with pytest.raises(RuntimeError, match='indexing must be one of "xy" or "ij"'):
        T.meshgrid(T.tensor([1, 2]), indexing="")


def test_meshgrid_non_1d_tensor(T):
    # TestTensorCreation.test_meshgrid_non_1d_tensor
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor"):
        T.meshgrid(T.tensor([[1, 2], [3, 4]]))


def test_meshgrid_inconsistent_dtype(T):
    # TestTensorCreation.test_meshgrid_inconsistent_dtype
    with pytest.raises(RuntimeError, match="expects all tensors to have the same dtype"):
        T.meshgrid(T.tensor([1], dtype=T.int), T.tensor([2], dtype=T.float))


def test_meshgrid_inconsistent_device(T):
    # TestTensorCreation.test_meshgrid_inconsistent_device
    with pytest.raises(RuntimeError, match="expects all tensors to have the same device"):
        T.meshgrid(T.tensor([1], device="cpu"), T.tensor([2], device="meta"))


def test_meshgrid_warns_if_no_indexing(T):
    # TestTensorCreation.test_meshgrid_warns_if_no_indexing (assertWarnsOnceRegex: warnings reset)
    import warnings
    prev = T.is_warn_always_enabled()
    T.set_warn_always(True)     # what assertWarnsOnceRegex does: a once-per-process warning again
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            T.meshgrid(T.tensor([1, 2]))
    finally:
        T.set_warn_always(prev)
    assert any(issubclass(x.category, UserWarning) and "will be required to pass the indexing arg"
               in str(x.message) for x in w)


def _abc(T):
    return T.tensor(1), T.tensor([1, 2, 3]), T.tensor([1, 2])


@pytest.mark.parametrize("indexing", [None, "ij", "xy"])
def test_meshgrid_indexing(T, indexing):
    # TestTensorCreation.test_meshgrid_default_indexing / test_meshgrid_xy_indexing /
    # test_meshgrid_ij_indexing: list and varargs spellings, shapes and values
    import warnings
    a, b, c = _abc(T)
    kw = {} if indexing is None else {"indexing": indexing}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grids = [T.meshgrid([a, b, c], **kw), T.meshgrid(a, b, c, **kw)]
    if indexing == "xy":
        shape = (3, 1, 2)
        want = (T.ones(3, 1, 2, dtype=T.int64), T.tensor([[[1, 1]], [[2, 2]], [[3, 3]]]),
                T.tensor([[[1, 2]], [[1, 2]], [[1, 2]]]))
    else:
        shape = (1, 3, 2)
        want = (T.ones(1, 3, 2, dtype=T.int64), T.tensor([[[1, 1], [2, 2], [3, 3]]]),
                T.tensor([[[1, 2], [1, 2], [1, 2]]]))
    for gs in grids:
        for g, w in zip(gs, want):
            assert g.shape == T.Size(shape)
            assert g.equal(w)


def test_meshgrid_ij_indexing_is_default(T):
    # TestTensorCreation.test_meshgrid_ij_indexing_is_default
    import warnings
    a, b, c = _abc(T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for g1, g2 in zip(T.meshgrid(a, b, c, indexing="ij"), T.meshgrid(a, b, c)):
            assert g1.equal(g2)


def test_meshgrid_vs_numpy(T):
    # TestTensorCreation.test_meshgrid_vs_numpy
    import warnings
    cases = [[[]], [[1], [1], [1]], [[], [], []], [[3], [5], [7]], [[3], [], [7]], [[11], [13]], [[15]]]
    corr = [({}, {"indexing": "ij"}), ({"indexing": "xy"}, {}), ({"indexing": "ij"}, {"indexing": "ij"}),
            ({"indexing": "xy"}, {"indexing": "xy"})]
    for shapes, (tkw, nkw) in product(cases, corr):
        tensors = [_rand(T, tuple(s), "int32", seed=i) for i, s in enumerate(shapes)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tg = T.meshgrid(*tensors, **tkw)
        ng = np.meshgrid(*(_np(t) for t in tensors), **nkw)
        assert len(tg) == len(ng)
        for g, w in zip(tg, ng):
            _eq(g, w, exact_dtype=False)


def test_cartesian_prod(T):
    # TestTensorCreation.test_cartesian_prod
    a, b, c = T.tensor([1]), T.tensor([1, 2, 3]), T.tensor([1, 2])
    want = np.array(list(product([1], [1, 2, 3], [1, 2])))
    _eq(T.cartesian_prod(a, b, c), want, exact_dtype=False)
    d = T.empty(0, dtype=b.dtype)
    _eq(T.cartesian_prod(a, b, c, d), T.empty(0, 4, dtype=b.dtype))
    _eq(T.cartesian_prod(b), b)


def test_combinations(T):
    # TestTensorCreation.test_combinations
    from itertools import combinations, combinations_with_replacement
    a = T.tensor([1, 2, 3])
    vals = [1, 2, 3]
    _eq(T.combinations(a, r=0), T.empty(0, dtype=a.dtype))
    _eq(T.combinations(a, r=1), np.array(list(combinations(vals, r=1))), exact_dtype=False)
    _eq(T.combinations(a, r=1, with_replacement=True), np.array(list(combinations_with_replacement(vals, r=1))),
        exact_dtype=False)
    _eq(T.combinations(a), np.array(list(combinations(vals, r=2))), exact_dtype=False)
    _eq(T.combinations(a, with_replacement=True), np.array(list(combinations_with_replacement(vals, r=2))),
        exact_dtype=False)
    _eq(T.combinations(a, r=3), np.array(list(combinations(vals, r=3))), exact_dtype=False)
    _eq(T.combinations(a, r=4), T.empty(0, 4, dtype=a.dtype))
    _eq(T.combinations(a, r=5), T.empty(0, 5, dtype=a.dtype))
    a = T.empty(0)
    _eq(T.combinations(a), T.empty(0, 2, dtype=a.dtype))
    _eq(T.combinations(a, with_replacement=True), T.empty(0, 2, dtype=a.dtype))


def test_linlogspace_mem_overlap(T):
    # TestTensorCreation.test_linlogspace_mem_overlap
    x = _rand(T, (1,)).expand(10)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        T.linspace(1, 10, 10, out=x)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        T.logspace(1, 10, 10, out=x)


def test_ctor_with_numpy_array(T):
    # TestTensorCreation.test_ctor_with_numpy_array: legacy typed constructors up/down-cast arrays
    for dtype in [np.double, float, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint8, bool]:
        array = np.array([1, 2, 3, 4], dtype=dtype)
        for ctor in (T.DoubleTensor, T.FloatTensor, T.HalfTensor):
            tensor = ctor(array)
            for i in range(len(array)):
                assert tensor[i].item() == array[i]


# ==== random_ ====================================================================================
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int16", "int32", "int64"])
def test_random(T, dtype):
    # TestTensorCreation.test_random
    t = T.empty(200, dtype=getattr(T, dtype))
    t.fill_(-1)
    t.random_(1, 4)
    assert t.min().item() == 1 and t.max().item() == 3
    t.fill_(-1)
    t.random_(4)
    assert t.min().item() == 0 and t.max().item() == 3


def test_random_bool(T):
    # TestTensorCreation.test_random_bool
    size = 2000
    t = T.empty(size, dtype=T.bool)
    for start in (False, True):
        t.fill_(start)
        t.random_()
        assert t.min().item() is False and t.max().item() is True
        assert 0.4 < t.eq(True).to(T.int).sum().item() / size < 0.6


def test_random_from_to_bool(T):
    # TestTensorCreation.test_random_from_to_bool
    lo, hi = T.iinfo(T.int64).min, T.iinfo(T.int64).max
    froms = [lo, -42, -1, 0, 1, 2, 42]
    tos = [-42, -1, 0, 1, 2, 42, hi]
    for from_, to_ in product(froms, tos):
        t = T.empty(2000, dtype=T.bool)
        if to_ > from_:
            if not 0 <= from_ <= 1:
                with pytest.raises(RuntimeError, match="from is out of bounds"):
                    t.random_(from_, to_)
            elif not 0 <= to_ - 1 <= 1:
                with pytest.raises(RuntimeError, match="to - 1 is out of bounds"):
                    t.random_(from_, to_)
            else:
                t.random_(from_, to_)
                assert from_ <= t.to(T.int).min().item() < from_ + 1
                assert to_ - 1 <= t.to(T.int).max().item() < to_
        else:
            with pytest.raises(RuntimeError, match=f"random_ expects 'from' to be less than 'to', but got "
                                                   f"from={from_} >= to={to_}"):
                t.random_(from_, to_)


RANDOM_DT = ["uint8", "int8", "int16", "int32", "int64", "float32", "float64", "float16", "bfloat16"]
FP_LIMIT = {"float64": 2 ** 53, "float32": 2 ** 24, "float16": 2 ** 11, "bfloat16": 2 ** 8}


@pytest.mark.parametrize("dtype", RANDOM_DT)
def test_random_full_range(T, dtype):
    # TestTensorCreation.test_random_full_range
    d = getattr(T, dtype)
    lo, hi = T.iinfo(T.int64).min, T.iinfo(T.int64).max
    t = T.empty(2000, dtype=d)
    if dtype in FP_LIMIT:
        from_, to_inc = int(max(-FP_LIMIT[dtype], lo)), int(min(FP_LIMIT[dtype], hi))
    else:
        from_, to_inc = int(max(T.iinfo(d).min, lo)), int(min(T.iinfo(d).max, hi))
    t.random_(from_, None)
    delta = max(1, 0.1 * (to_inc - from_ + 1))
    assert from_ <= t.to(T.double).min().item() < from_ + delta
    assert to_inc - delta < t.to(T.double).max().item() <= to_inc


def _from_to_grid(T, dtype):
    lo, hi = T.iinfo(T.int64).min, T.iinfo(T.int64).max
    d = getattr(T, dtype)
    if dtype in ("float32", "float64", "float16"):
        mn, mx = int(max(T.finfo(d).min, lo)), int(min(T.finfo(d).max, hi))
        return mn, mx, [mn, -42, 0, 42], [-42, 0, 42, mx >> 1]
    if dtype == "bfloat16":
        return lo, hi, [lo, -42, 0, 42], [-42, 0, 42, hi >> 1]
    if dtype == "uint8":
        mn, mx = T.iinfo(d).min, T.iinfo(d).max
        return mn, mx, [lo, -42, mn - 1, mn, 42, mx, mx + 1], [-42, mn - 1, mn, 42, mx, mx + 1, hi]
    if dtype == "int64":
        return lo, hi, [lo, -42, 0, 42], [-42, 0, 42, hi]
    mn, mx = T.iinfo(d).min, T.iinfo(d).max
    return mn, mx, [lo, mn - 1, mn, -42, 0, 42, mx, mx + 1], [mn - 1, mn, -42, 0, 42, mx, mx + 1, hi]


@pytest.mark.parametrize("dtype", RANDOM_DT)
def test_random_from_to(T, dtype):
    # TestTensorCreation.test_random_from_to
    import warnings
    d = getattr(T, dtype)
    mn, mx, froms, tos = _from_to_grid(T, dtype)
    fp = FP_LIMIT.get(dtype, 0)
    for from_, to_ in product(froms, tos):
        t = T.empty(2000, dtype=d)
        if to_ <= from_:
            with pytest.raises(RuntimeError, match=f"random_ expects 'from' to be less than 'to', but got "
                                                   f"from={from_} >= to={to_}"):
                t.random_(from_, to_)
        elif not mn <= from_ <= mx:
            with pytest.raises(RuntimeError, match="from is out of bounds"):
                t.random_(from_, to_)
        elif not mn <= to_ - 1 <= mx:
            with pytest.raises(RuntimeError, match="to - 1 is out of bounds"):
                t.random_(from_, to_)
        elif d.is_floating_point and (not -fp <= from_ <= fp or not -fp <= to_ - 1 <= fp):
            for bad, msg in ((not -fp <= from_ <= fp, "from is out of bounds"),
                             (not -fp <= to_ - 1 <= fp, "to - 1 is out of bounds")):
                if bad:
                    with pytest.warns(UserWarning, match=msg):
                        t.random_(from_, to_)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                t.random_(from_, to_)
            delta = max(1, 0.1 * (to_ - from_))
            assert from_ <= t.to(T.double).min().item() < from_ + delta
            if dtype == "bfloat16":
                assert to_ - delta < t.to(T.double).max().item() <= to_
            else:
                assert to_ - delta <= t.to(T.double).max().item() < to_


@pytest.mark.parametrize("dtype", RANDOM_DT)
def test_random_to(T, dtype):
    # TestTensorCreation.test_random_to
    d = getattr(T, dtype)
    mn, mx, _, _ = _from_to_grid(T, dtype)
    lo, hi = T.iinfo(T.int64).min, T.iinfo(T.int64).max
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        tos = [-42, 0, 42, mx >> 1]
    elif dtype == "uint8":
        tos = [-42, mn - 1, mn, 42, mx, mx + 1, hi]
    elif dtype == "int64":
        tos = [-42, 0, 42, mx]
    else:
        tos = [mn - 1, mn, -42, 0, 42, mx, mx + 1, hi]
    for to_ in tos:
        t = T.empty(2000, dtype=d)
        if to_ <= 0:
            with pytest.raises(RuntimeError, match=f"random_ expects 'from' to be less than 'to', but got "
                                                   f"from=0 >= to={to_}"):
                t.random_(0, to_)
        elif not mn <= to_ - 1 <= mx:
            with pytest.raises(RuntimeError, match="to - 1 is out of bounds"):
                t.random_(0, to_)
        else:
            t.random_(to_)
            delta = max(1, 0.1 * to_)
            assert 0 <= t.to(T.double).min().item() < delta
            if dtype == "bfloat16":
                assert to_ - delta < t.to(T.double).max().item() <= to_
            else:
                assert to_ - delta <= t.to(T.double).max().item() < to_


@pytest.mark.parametrize("dtype", RANDOM_DT)
def test_random_default(T, dtype):
    # TestTensorCreation.test_random_default
    d = getattr(T, dtype)
    to_inc = {"float32": 1 << 24, "float64": 1 << 53, "float16": 1 << 11, "bfloat16": 1 << 8}.get(dtype)
    if to_inc is None:
        to_inc = T.iinfo(d).max
    t = T.empty(2000, dtype=d)
    t.random_()
    assert 0 <= t.to(T.double).min().item() < 0.1 * to_inc
    assert to_inc - 0.1 * to_inc < t.to(T.double).max().item() <= to_inc


# ==== constructors and factories =================================================================
def test_tensor_device(T):
    # TestTensorCreation.test_tensor_device (its CPU branch)
    assert T.tensor(5).device.type == "cpu"
    assert T.ones((2, 3), dtype=T.float32, device="cpu").device.type == "cpu"
    assert T.ones((2, 3), dtype=T.float32, device="cpu:0").device.type == "cpu"
    assert T.tensor(T.ones((2, 3), dtype=T.float32), device="cpu:0").device.type == "cpu"
    assert T.tensor(np.random.default_rng(0).standard_normal((2, 3)), device="cpu").device.type == "cpu"


def test_as_strided_neg(T):
    # TestTensorCreation.test_as_strided_neg
    error = r"as_strided: Negative strides are not supported at the moment, got strides: \[-?[0-9]+(, -?[0-9]+)*\]"
    with pytest.raises(RuntimeError, match=error):
        T.as_strided(T.ones(3, 3), (1, 1), (2, -1))
    with pytest.raises(RuntimeError, match=error):
        T.as_strided(T.ones(14), (2,), (-11,))


def test_zeros(T):
    # TestTensorCreation.test_zeros (the complex32 case left out: XLA has no complex32 arrays)
    res1 = T.zeros(100, 100)
    res2 = T.tensor(())
    T.zeros(100, 100, out=res2)
    _eq(res1, res2)
    _eq(T.zeros(2, 2, dtype=T.bool), T.tensor([[False, False], [False, False]], dtype=T.bool))
    _eq(T.zeros(1, 1, dtype=T.half), T.tensor([[0.]], dtype=T.float16))
    _eq(T.zeros(1, 1, dtype=T.bfloat16), T.tensor([[0.]], dtype=T.bfloat16))
    _eq(T.zeros(2, 2, dtype=T.complex64), T.tensor([[0., 0.], [0., 0.]], dtype=T.complex64))


def test_zeros_out(T):
    # TestTensorCreation.test_zeros_out
    shape = (3, 4)
    out = T.zeros(shape)
    T.zeros(shape, out=out)
    with pytest.raises(RuntimeError):
        T.zeros(shape, dtype=T.int64, out=out)
    with pytest.raises(RuntimeError):
        T.zeros(shape, layout=T.sparse_coo, out=out)
    _eq(T.zeros(shape, dtype=out.dtype, out=out), T.zeros(shape))
    _eq(T.zeros(shape, layout=T.strided, out=out), T.zeros(shape))
    _eq(T.zeros(shape, out=out), T.zeros(shape))


def test_ones(T):
    # TestTensorCreation.test_ones (the chalf case left out: XLA has no complex32 arrays)
    res1 = T.ones(100, 100)
    res2 = T.tensor(())
    T.ones(100, 100, out=res2)
    _eq(res1, res2)
    _eq(T.ones(1, 2, dtype=T.bool), T.tensor([[True, True]], dtype=T.bool))


def test_constructor_dtypes(T):
    # TestTensorCreation.test_constructor_dtypes (CPU; restores the default dtype/type it changes)
    default_type = T.tensor([]).type()
    saved = T.get_default_dtype()
    try:
        assert T.tensor([]).dtype is T.get_default_dtype()
        assert T.ByteTensor.dtype is T.uint8
        assert T.FloatTensor.dtype is T.float32
        assert T.DoubleTensor.dtype is T.float64
        T.set_default_tensor_type("torch.FloatTensor")
        assert T.get_default_dtype() is T.float32
        assert T.Storage is T.FloatStorage
        with pytest.raises(TypeError):
            T.set_default_tensor_type("torch.IntTensor")
        T.set_default_dtype(T.float64)
        assert T.get_default_dtype() is T.float64
        assert T.Storage is T.DoubleStorage
        T.set_default_tensor_type(T.FloatTensor)
        assert T.get_default_dtype() is T.float32
        assert T.Storage is T.FloatStorage
        with pytest.raises(TypeError):
            T.set_default_tensor_type(T.float32)
        for name in ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
                     "complex64", "complex128", "bfloat16"]:
            t = getattr(T, name)
            if name in ("float16", "float32", "float64", "bfloat16"):
                T.set_default_dtype(t)
            else:
                with pytest.raises(TypeError):
                    T.set_default_dtype(t)
    finally:
        T.set_default_dtype(saved)
        T.set_default_tensor_type(default_type)


def test_constructor_device_legacy(T):
    # TestTensorCreation.test_constructor_device_legacy (CPU part: a CUDA device is refused)
    for make in (lambda: T.FloatTensor(device="cuda"), lambda: T.FloatTensor(T.Size([2, 3, 4]), device="cuda"),
                 lambda: T.FloatTensor((2.0, 3.0), device="cuda"), lambda: T.Tensor(device="cuda"),
                 lambda: T.Tensor(T.Size([2, 3, 4]), device="cuda"), lambda: T.Tensor((2.0, 3.0), device="cuda")):
        with pytest.raises(RuntimeError):
            make()
    i = T.tensor([1], device="cpu")
    for make in (lambda: T.Tensor(i, device="cpu"), lambda: i.new(i, device="cpu"),
                 lambda: T.Tensor(i, device="cuda"), lambda: i.new(i, device="cuda")):
        with pytest.raises(RuntimeError):
            make()
    x = _rand(T, (3,))
    for make in (lambda: x.new(device="cuda"), lambda: x.new(T.Size([2, 3, 4]), device="cuda"),
                 lambda: x.new((2.0, 3.0), device="cuda")):
        with pytest.raises(RuntimeError):
            make()


def test_tensor_factory(T):
    # TestTensorCreation.test_tensor_factory
    import warnings
    expected = T.Tensor([1, 1])
    _eq(T.tensor([1, 1]), expected, exact_dtype=False)
    lst = [1, 2, 3]
    for st in (set(lst), frozenset(lst)):   # read as data by newer torch; refused by torch 2.13
        with pytest.raises(RuntimeError, match="Could not infer dtype of"):
            T.tensor(st)
    res1 = T.tensor([1, 1], dtype=T.int)
    _eq(res1, expected, exact_dtype=False)
    assert res1.dtype is T.int
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res2 = T.tensor(expected)
        _eq(res2, expected)
        res2[1] = 2
        _eq(expected, T.ones_like(expected))
        res2 = T.tensor(expected, dtype=T.int)
        assert res2.dtype is T.int
    for dtype in [np.float64, np.int64, np.int8, np.uint8]:
        a = np.array([5.]).astype(dtype)
        res1 = T.tensor(a)
        assert res1[0].item() == 5.
        a[0] = 7.
        assert res1[0].item() == 5.
    a = T.tensor([True, True, False, True, True], dtype=T.bool)
    _eq(T.tensor([-1, -1.1, 0, 1, 1.1], dtype=T.bool), a)
    _eq(T.tensor([-0.1, -1.1, 0, 1, 0.1], dtype=T.bool), a)
    e = T.tensor((True, False, True, True, True), dtype=T.bool)
    _eq(T.tensor((-.3, 0, .3, 1, 3 / 7), dtype=T.bool), e)
    _eq(T.tensor((-1, 0, -1.1, 1, 1.1), dtype=T.bool), e)
    i64max, i64min = T.iinfo(T.int64).max, T.iinfo(T.int64).min
    f64max, f64min = T.finfo(T.float64).max, T.finfo(T.float64).min
    _eq(T.tensor((float("nan"), 0, i64min, i64max, i64min - 1), dtype=T.bool), e)
    _eq(T.tensor((i64max + 1, 0, (i64max + 1) * 2, (i64max + 1) * 2 + 1, f64min), dtype=T.bool), e)
    _eq(T.tensor((f64max, 0, f64max + 1, f64min - 1, f64max + 1e291), dtype=T.bool), e)
    h = T.tensor([True, False, False, True, False, True, True], dtype=T.bool)
    _eq(T.tensor([1e-323, 1e-324, 0j, 1e-323j, 1e-324j, 1 + 2j, -1j], dtype=T.bool), h)
    _eq(T.tensor((1e323, -1e323, float("inf"), -float("inf")), dtype=T.bool), T.tensor((True,) * 4))


def test_tensor_factory_copy_var(T):
    # TestTensorCreation.test_tensor_factory_copy_var
    import warnings
    source = _rand(T, (5, 5), "float64").requires_grad_()

    def check_copy(copy, is_leaf, requires_grad, data_ptr=None):
        data_ptr = copy.data_ptr if data_ptr is None else data_ptr
        _eq(copy, source, exact_dtype=False)
        assert copy.is_leaf == is_leaf
        assert copy.requires_grad == requires_grad
        assert copy.data_ptr == data_ptr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_copy(T.tensor(source), True, False)
        check_copy(T.tensor(source, requires_grad=False), True, False)
        check_copy(T.tensor(source, requires_grad=True), True, True)
        copy = _rand(T, (1,))
        check_copy(copy.new_tensor(source), True, False)
        check_copy(copy.new_tensor(source, requires_grad=False), True, False)
        check_copy(copy.new_tensor(source, requires_grad=True), True, True)
    check_copy(T.as_tensor(source), source.is_leaf, source.requires_grad, source.data_ptr)
    check_copy(T.as_tensor(source, dtype=T.float), False, True)


@pytest.mark.parametrize("default", ["float64", "float32"])
def test_tensor_factory_type_inference(T, default):
    # TestTensorCreation.test_tensor_factory_type_inference
    saved = T.get_default_dtype()
    dd = getattr(T, default)
    T.set_default_dtype(dd)
    try:
        dc = T.complex64 if dd is T.float32 else T.complex128
        assert T.tensor(()).dtype is dd
        assert T.tensor(5.).dtype is dd
        assert T.tensor(5).dtype is T.int64
        assert T.tensor(True).dtype is T.bool
        assert T.tensor(5, dtype=T.int32).dtype is T.int32
        assert T.tensor(((7, 5), (9, 5.))).dtype is dd
        assert T.tensor(((5., 5), (3, 5))).dtype is dd
        assert T.tensor(((5, 3), (3, 5))).dtype is T.int64
        assert T.tensor(((5, 3 + 2j), (3, 5 + 4j))).dtype is dc
        assert T.tensor(np.array(())).dtype is T.float64
        assert T.tensor(np.array(5.)).dtype is T.float64
        assert T.tensor(np.array(5)).dtype is T.int64
        assert T.tensor(np.array(3, dtype=np.uint8)).dtype is T.uint8
        assert T.tensor(((7, np.array(5)), (np.array(9), 5.))).dtype is dd
        assert T.tensor(((7, 5), (9, np.array(5.)))).dtype is T.float64
        assert T.tensor(((5, np.array(3)), (np.array(3), 5))).dtype is T.int64
    finally:
        T.set_default_dtype(saved)


def test_new_tensor(T):
    # TestTensorCreation.test_new_tensor
    import warnings
    expected = T.autograd.Variable(T.ByteTensor([1, 1]))
    _eq(expected.new_tensor([1, 1]), expected)
    res1 = expected.new_tensor([1, 1], dtype=T.int)
    _eq(res1, expected, exact_dtype=False)
    assert res1.dtype is T.int
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res2 = expected.new_tensor(expected)
        _eq(res2, expected)
        res2[1] = 2
        _eq(expected, T.ones_like(expected))
        res2 = expected.new_tensor(expected, dtype=T.int)
        _eq(res2, expected, exact_dtype=False)
        assert res2.dtype is T.int
    a = np.array([5.])
    res1 = T.tensor(a).new_tensor(a)
    assert res1[0].item() == 5.
    a[0] = 7.
    assert res1[0].item() == 5.


def test_as_tensor(T):
    # TestTensorCreation.test_as_tensor
    x = [[0, 1], [2, 3]]
    _eq(T.as_tensor(x), T.tensor(x))
    _eq(T.as_tensor(x, dtype=T.float32), T.tensor(x, dtype=T.float32))
    for fn in (T.tensor, T.as_tensor):
        with pytest.raises(TypeError, match="invalid data type"):
            fn([0, "torch"])
    z = [0]
    z += [z]
    for data in (z, [[1, 2], z]):
        for fn in (T.tensor, T.as_tensor):
            with pytest.raises(TypeError, match="self-referential lists are incompatible"):
                fn(data)
    y = T.tensor(x)
    assert T.as_tensor(y) is y
    assert T.as_tensor(y, dtype=T.float32) is not y
    rng = np.random.default_rng(0)
    n = rng.random((5, 6)).astype(np.float32)
    n_astensor = T.as_tensor(n, dtype=T.float64)
    _eq(n_astensor, T.tensor(n, dtype=T.float64))
    n_astensor[0][1] = 250.8
    assert not T.equal(T.tensor(n, dtype=T.float64), n_astensor)


def test_as_tensor_shares_numpy_memory(T, request):
    # TestTensorCreation.test_as_tensor ("doesn't copy": a write through as_tensor(ndarray) is
    # seen by the array)
    rng = np.random.default_rng(0)
    for dtype in [np.float64, np.int64, np.int8, np.uint8]:
        n = rng.random((5, 6)).astype(dtype)
        n_astensor = T.as_tensor(n)
        _eq(n_astensor, T.tensor(n))
        n_astensor[0][0] = 25.7
        _eq(n_astensor, T.tensor(n))


def test_range(T):
    # TestTensorCreation.test_range
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res1 = T.range(0, 1)
        res2 = T.tensor(())
        T.range(0, 1, out=res2)
        _eq(res1, res2, rtol=0, atol=0)
        x = T.zeros(2, 3)
        T.range(0, 3, out=x.narrow(1, 1, 2))
        _eq(x, T.tensor(((0, 0, 1), (0, 2, 3)), dtype=T.float32), rtol=0, atol=1e-16)
        res2 = T.tensor(())
        T.range(1, 0, -1, out=res2)
        _eq(res2, T.tensor((1, 0), dtype=T.float32), rtol=0, atol=0)
        res2 = T.tensor(())
        T.range(1, 1, -1, out=res2)
        _eq(res2, T.ones(1), rtol=0, atol=0)
        T.range(1, 1, 1, out=res2)
        _eq(res2, T.ones(1), rtol=0, atol=0)


def test_range_warning(T):
    # TestTensorCreation.test_range_warning
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        T.range(0, 10)
    assert len(w) == 1


def test_arange(T):
    # TestTensorCreation.test_arange (sizes cut: 1000 elements, a 3x3x300 permuted out=)
    import warnings
    res = T.tensor(range(1000))
    res2 = T.tensor([], dtype=T.int64)
    T.arange(0, 1000, out=res2)
    _eq(T.arange(0, 1000), res, rtol=0, atol=0)
    _eq(res2, res, rtol=0, atol=0)
    res = T.zeros(3, 3, 300).to(T.int64).permute(2, 0, 1)
    T.arange(0, 300 * 3 * 3, out=res)
    _eq(res.flatten(), T.arange(0, 300 * 3 * 3))
    _eq(T.arange(10), T.arange(0, 10), rtol=0, atol=0)
    x = T.zeros(2, 3)
    T.arange(0, 4, out=x.narrow(1, 1, 2))
    _eq(x, T.tensor(((0., 0., 1.), (0., 2., 3.))), rtol=0, atol=1e-16)
    res2 = T.tensor([])
    T.arange(1, -1, -1, out=res2)
    _eq(res2, T.tensor((1., 0.)), rtol=0, atol=0)
    res2 = T.tensor([])
    T.arange(1, 0, -1, out=res2)
    _eq(res2, T.ones(1), rtol=0, atol=0)
    T.arange(1, 2, 1, out=res2)
    _eq(res2, T.ones(1), rtol=0, atol=0)
    for dt in (T.float, T.double):
        res1 = T.arange(0.6, 0.89, 0.1, out=T.tensor([], dtype=dt))
        _eq(res1, np.array([0.6, 0.7, 0.8]), exact_dtype=False)
        res1 = T.arange(1, 10, 0.3, out=T.tensor([], dtype=dt))
        assert res1.size(0) == 30
        assert res1[0].item() == 1
        assert abs(res1[29].item() - 9.7) < 1e-5
    r, r2 = T.arange(True), T.arange(False)
    assert r[0].item() == 0 and len(r2) == 0
    assert r.dtype == T.int64 and r2.dtype == T.int64
    for args, mn, mx, n in (((0, 5), 0, 4, 5), ((0, 6, 3), 0, 3, 2), ((0, 5, 2), 0, 4, 3), ((0, -5, -2), -4, 0, 3)):
        r = T.arange(*args)
        assert (r.min().item(), r.max().item(), r.numel()) == (mn, mx, n)
    r1, r2, r3 = T.arange(0, 5 + 1e-6), T.arange(0, 5, dtype=T.float32), T.arange(0, 5 - 1e-6)
    _eq(r1[:-1], r2, rtol=0, atol=0)
    _eq(r2, r3, rtol=0, atol=0)
    r1, r2, r3 = T.arange(10, -1 + 1e-6, -1), T.arange(10, -1, -1, dtype=T.float32), T.arange(10, -1 - 1e-6, -1)
    _eq(r1, r2, rtol=0, atol=0)
    _eq(r2, r3[:-1], rtol=0, atol=0)
    w = 1449629115440469
    assert T.arange(0, 100 * w, w).numel() == 100
    line = T.zeros(size=(1, 49))
    with pytest.warns(UserWarning, match="The out tensor will be resized"):
        T.arange(-1, 1, 2. / 49, dtype=T.float32, out=line)
    assert tuple(line.shape) == (50,)
    with pytest.raises(RuntimeError):
        T.arange(10, out=T.empty(1).expand(10))
    for args in ((-5, float("nan")), (0, float("-inf"), -1), (0, float("inf")), (float("-inf"), 10),
                 (float("nan"), 10), (float("inf"),), (float("nan"),)):
        with pytest.raises(RuntimeError, match="unsupported range"):
            T.arange(*args)
    with pytest.raises(RuntimeError, match="overflow"):
        T.arange(1.175494351e-38, 3.402823466e+38)
    assert T.arange(-4.0, 4.0, 0.01, dtype=T.float32).shape[0] == 800
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")


def test_arange_inference(T):
    # TestTensorCreation.test_arange_inference
    saved = T.get_default_dtype()
    T.set_default_dtype(T.float32)
    try:
        t = T.tensor
        for got, want in (
                (T.arange(1.), T.float32), (T.arange(t(1.)), T.float32), (T.arange(t(1., dtype=T.float64)), T.float32),
                (T.arange(1), T.int64), (T.arange(t(1)), T.int64), (T.arange(t(1, dtype=T.int16)), T.int64),
                (T.arange(1., 3), T.float32), (T.arange(t(1., dtype=T.float64), 3), T.float32),
                (T.arange(1, 3.), T.float32), (T.arange(t(1, dtype=T.int16), t(3.)), T.float32),
                (T.arange(1, 3, 1.), T.float32),
                (T.arange(t(1), t(3, dtype=T.int16), t(1., dtype=T.float64)), T.float32),
                (T.arange(1, 3), T.int64), (T.arange(t(1), 3), T.int64),
                (T.arange(t(1), t(3, dtype=T.int16)), T.int64), (T.arange(1, 3, 1), T.int64),
                (T.arange(t(1), t(3), t(1, dtype=T.int16)), T.int64)):
            assert got.dtype is want
    finally:
        T.set_default_dtype(saved)


def test_empty_strided(T):
    # TestTensorCreation.test_empty_strided: the same shape/strides as_strided gives on a storage
    # of empty_strided's storage size
    for shape in [(2, 3, 4), (0, 2, 0)]:
        for strides in [(12, 4, 1), (2, 4, 6), (0, 0, 0)]:
            es = T.empty_strided(shape, strides)
            ast = T.empty(es.untyped_storage().size() // es.element_size()).as_strided(shape, strides)
            assert es.shape == ast.shape
            assert es.stride() == ast.stride()


def test_new_empty_strided(T):
    # TestTensorCreation.test_new_empty_strided (pytorch issue 82416 for the length check)
    def check(sizes, strides, dtype):
        x = T.zeros(5, 5, dtype=dtype)
        result = x.new_empty_strided(sizes, strides)
        expected = T.empty_strided(sizes, strides, dtype=x.dtype, device=x.device)
        assert result.shape == expected.shape
        assert result.stride() == expected.stride()
        assert result.dtype == expected.dtype
        assert result.device == expected.device

    check([2, 3], [3, 1], T.float)
    check([5, 3], [0, 1], T.int)
    check([], [], T.float)
    for shape in [(2, 3, 4), (0, 2, 0)]:
        for strides in [(12, 4, 1), (2, 4, 6), (0, 0, 0)]:
            check(shape, strides, T.float)
    with pytest.raises(RuntimeError, match=r"dimensionality of sizes \(1\) must match dimensionality of strides \(0\)"):
        T.tensor(-4.8270, dtype=T.float64).new_empty_strided((2,), (), dtype=T.float64)


def test_strided_mismatched_stride_shape(T):
    # TestTensorCreation.test_strided_mismatched_stride_shape
    for shape, strides in [((1,), ()), ((1, 2), (1,))]:
        with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
            T.tensor(0.42).as_strided(shape, strides)
        with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
            T.tensor(0.42).as_strided_(shape, strides)


def test_empty_tensor_props(T):
    # TestTensorCreation.test_empty_tensor_props
    for size in [(0,), (0, 3), (5, 0), (5, 0, 3, 0, 2), (0, 3, 0, 2), (0, 5, 0, 2, 0)]:
        x = T.empty(tuple(size))
        assert tuple(x.shape) == size
        assert x.is_contiguous()
        y = T.empty(tuple(s if s != 0 else 1 for s in size))
        assert x.stride() == y.stride()


def test_empty_overflow(T):
    # TestTensorCreation.test_empty_overflow
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        T.empty([2, 4, 2 ** 29, 2 ** 29], dtype=T.float64)
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        T.empty([8, 8, 2 ** 29, 2 ** 29], dtype=T.float64)
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        T.empty_strided([8, 8], [2 ** 61, 1], dtype=T.float64)
    with pytest.raises(RuntimeError, match="Stride calculation overflowed"):
        T.empty([0, 4, 2305843009213693952], dtype=T.float32)


def test_eye(T):
    # TestTensorCreation.test_eye (bfloat16 skipped as the original)
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
             "complex64", "complex128"]
    for name in names:
        dt = getattr(T, name)
        for n, m in ((-1, 1), (1, -1), (-1, -1)):
            with pytest.raises(RuntimeError, match="must be greater or equal to"):
                T.eye(n, m, dtype=dt)
        # values: one or two dtypes of each class (each (dtype, shape) compiles five programs)
        if name not in ("bool", "uint8", "int32", "float16", "float64", "complex64"):
            continue
        for n, m in [(3, None), (3, 5), (5, 3)]:    # square, wide, tall
            res1 = T.eye(n, dtype=dt) if m is None else T.eye(n, m, dtype=dt)
            naive = T.zeros(n, n if m is None else m, dtype=dt)
            naive.diagonal(dim1=-2, dim2=-1).fill_(1)
            _eq(res1, naive)
            res2 = T.empty(0, dtype=dt)
            if m is None:
                T.eye(n, out=res2)
            else:
                T.eye(n, m, out=res2)
            _eq(res2, res1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_linspace_vs_numpy(T, dtype):
    # TestTensorCreation.test_linspace_vs_numpy (steps up to 257; the 2**22 case left out)
    cplx = dtype.startswith("complex")
    start = -0.0316082797944545745849609375 + (0.8888888888j if cplx else 0)
    end = .0315315723419189453125 + (0.444444444444j if cplx else 0)
    tol = 1e-8 if dtype in ("float32", "complex64") else 1e-10
    for steps in [1, 2, 3, 5, 11, 256, 257]:
        t = T.linspace(start, end, steps, dtype=getattr(T, dtype))
        a = np.linspace(start, end, steps, dtype=dtype)
        _eq(t, a, exact_dtype=False, rtol=1.3e-6 if dtype in ("float32", "complex64") else 1e-7, atol=tol)
        assert t[0].item() == a[0]
        assert t[steps - 1].item() == a[steps - 1]


@pytest.mark.parametrize("dtype", INT_DT)
def test_linspace_vs_numpy_integral(T, dtype):
    # TestTensorCreation.test_linspace_vs_numpy_integral
    for steps in [25, 50]:
        t = T.linspace(1, 127, steps, dtype=getattr(T, dtype))
        a = np.linspace(1, 127, steps, dtype=dtype)
        _eq(t, a, exact_dtype=False)
        assert t[0].item() == a[0]
        assert t[steps - 1].item() == a[steps - 1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logspace_vs_numpy(T, dtype):
    # TestTensorCreation.test_logspace_vs_numpy (steps up to 257)
    start, end = -0.0316082797944545745849609375, .0315315723419189453125
    for steps in [1, 2, 3, 5, 11, 256, 257]:
        t = T.logspace(start, end, steps, dtype=getattr(T, dtype))
        a = np.logspace(start, end, steps, dtype=dtype)
        tol = 1e-6 if dtype == "float32" else 1e-10
        _eq(t, a, exact_dtype=False, rtol=1.3e-6, atol=tol)
        assert abs(t[0].item() - a[0]) <= tol
        assert abs(t[steps - 1].item() - a[steps - 1]) <= tol


def test_tensor_ctor_device_inference(T):
    # TestTensorCreation.test_tensor_ctor_device_inference (CPU)
    import warnings
    values = T.tensor((1, 2, 3))
    for op in (T.tensor, T.as_tensor):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert op(values).device == T.device("cpu")
            assert op(values, dtype=T.float64).device == T.device("cpu")
    indices = T.tensor([[0, 1, 1], [2, 0, 1], [2, 1, 0]])
    assert T.sparse_coo_tensor(indices, values, (3, 3, 3)).device == T.device("cpu")
    assert T.sparse_coo_tensor(indices, values, (3, 3, 3), dtype=T.float64).device == T.device("cpu")
