"""PyTorch's test/test_view_ops.py (TestViewOps, TestOldViewOps) ported: each test names its
original and restates its checks in our own code. Bodies run under torch and tracegrad (the
``T`` fixture), so torch 2.13 checks every expectation the port makes; the view relation is
read through the same internals torch's tests read (``_is_view()``, ``_base``,
``untyped_storage().data_ptr()``, ``stride()``, ``storage_offset()``, ``is_contiguous()``).

Not ported: quantized tensors (``test_ravel``'s and ``test_flatten``'s quantized halves), sparse
CSR tensors (``test_crow_col_indices``), ``complex32``, channels_last memory formats (``test_memory_format_resize_*``,
``test_view_copy_output_contiguous``: tracegrad has no memory formats), and the tests torch
itself skips (``test_chunk_view``, ``test_split_view``). Random shapes and
dtype products are replaced by fixed small ones."""
import itertools
import warnings

import numpy as np
import pytest

_RNG = np.random.default_rng(4321)


def _vals(t):
    t = t.detach()
    kind = np.complex128 if t.dtype.is_complex else np.float64
    return np.asarray(t.tolist(), dtype=kind).reshape(tuple(t.shape))


def _same(a, b, exact_dtype=True):
    if exact_dtype and hasattr(b, "dtype") and not isinstance(b, np.ndarray):
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
    bv = b if isinstance(b, np.ndarray) else _vals(b)
    assert tuple(a.shape) == tuple(bv.shape), (tuple(a.shape), bv.shape)
    np.testing.assert_array_equal(_vals(a), bv.astype(_vals(a).dtype))


def _make(T, shape, name="float32"):
    """Fixed random values of dtype ``name`` (made by numpy: the same numbers for both libraries)."""
    d = getattr(T, name)
    if name == "bool":
        return T.tensor(_RNG.integers(0, 2, shape).astype(bool))
    if d.is_complex:
        return T.tensor(_RNG.integers(-5, 5, shape) + 1j * _RNG.integers(-5, 5, shape)).to(d)
    return T.tensor(_RNG.integers(-5, 5, shape)).to(d)


def _is_view_of(base, other):
    """torch's ``TestViewOps.is_view_of``: ``other`` is a view whose ``_base`` is ``base`` and
    which shares its storage."""
    if not other._is_view() or other is base or other._base is not base or base.device != other.device:
        return False
    return base.untyped_storage().data_ptr() == other.untyped_storage().data_ptr()


def _is_view_of_same_base(v1, v2):
    return v1._is_view() and v1 is not v2 and _is_view_of(v1._base, v2)


# ==== TestViewOps =============================================================================
@pytest.mark.parametrize("name", ["int64", "float32", "bool"])
def test_conj_self(T, name):
    # TestViewOps.test_conj_self: conj() of a real tensor is the tensor itself
    t = T.ones(5, 5).to(getattr(T, name))
    assert t.conj() is t


def _view_dtype_inputs(T, name):
    yield _make(T, (2, 2, 16), name)
    yield _make(T, (2, 2, 16), name).permute(1, 0, 2)
    yield _make(T, (2, 16, 2), name).permute(2, 0, 1)
    yield _make(T, (1, 3, 1), name).expand(3, 3, 16)
    yield _make(T, (2, 3, 32), name)[1::2, 1:, ::2]
    yield _make(T, (0, 3, 16), name)
    yield _make(T, (), name)


@pytest.mark.parametrize("name", ["uint8", "float64", "complex64"])
def test_view_dtype_new(T, name):
    # TestViewOps.test_view_dtype_new: view(dtype) reinterprets the bytes; the last dim scales
    # by the size ratio, strides follow, a 0-dim or non-unit last stride refuses a size change
    dtype = getattr(T, name)
    targets = ("uint8", "int16", "float32", "int64", "complex128")
    for a in _view_dtype_inputs(T, name):
        a_np = a.numpy()
        for tn in targets:
            vd = getattr(T, tn)
            size_a, size_v = a.element_size(), T.empty(0, dtype=vd).element_size()
            if size_a != size_v and a.dim() == 0:
                with pytest.raises(RuntimeError, match=r"self.dim\(\) cannot be 0"):
                    a.view(vd)
                continue
            if size_a != size_v and a.stride(-1) != 1:
                with pytest.raises(RuntimeError, match=r"self.stride\(-1\) must be 1"):
                    a.view(vd)
                continue
            v = a.view(vd)
            assert v.dtype == vd
            assert a.data_ptr() == v.data_ptr()
            if size_a == size_v:
                exp_size, exp_stride = tuple(a.size()), a.stride()
            elif size_a > size_v:
                r = size_a // size_v
                exp_size = tuple(a.size())[:-1] + (a.size(-1) * r,)
                exp_stride = tuple(s * r for s in a.stride())[:-1] + (1,)
            else:
                r = size_v // size_a
                exp_size = tuple(a.size())[:-1] + (a.size(-1) // r,)
                exp_stride = tuple(s // r for s in a.stride())[:-1] + (1,)
            assert tuple(v.size()) == exp_size
            assert v.stride() == exp_stride
            _same(v.view(dtype), a)
            np_v = (a_np if size_a == size_v else np.ascontiguousarray(a_np)).view(np.dtype(tn))
            np.testing.assert_array_equal(v.numpy(), np_v)
    if dtype.is_floating_point or dtype.is_complex:
        t = _make(T, (5, 5, 8), name).requires_grad_()
        for vd in (T.float32, T.float64, T.complex64):
            assert not t.view(vd).requires_grad


@pytest.mark.parametrize("name", ["bool", "uint8", "int16", "int32", "float32"])
def test_view_dtype_upsize_errors(T, name):
    # TestViewOps.test_view_dtype_upsize_errors: a wider view dtype needs the last dim, the
    # storage offset and the other strides divisible by the size ratio
    size = T.empty(0, dtype=getattr(T, name)).element_size()
    for tn in ("int16", "int32", "int64", "float64", "complex128"):
        vd = getattr(T, tn)
        vsize = T.empty(0, dtype=vd).element_size()
        if vsize <= size:
            continue
        r = vsize // size
        a = _make(T, (4, 4, r + 1), name)
        with pytest.raises(RuntimeError, match=rf"self.size\(-1\) must be divisible by {r}"):
            a.view(vd)
        with pytest.raises(RuntimeError, match=rf"self.storage_offset\(\) must be divisible by {r}"):
            a[:, :, 1:].view(vd)
        a = _make(T, (4, 4, r), name).as_strided((4, 4, r), (r, 1, 1))
        with pytest.raises(RuntimeError, match=rf"self.stride\(1\) must be divisible by {r}"):
            a.view(vd)


def test_view_as_complex(T):
    # TestViewOps.test_view_as_complex: a view; the last dim must have size 2 and stride 1, the
    # other strides be even, and the input have dims
    def check(transposed, dim0=0, dim1=1):
        t = _make(T, (3, 2, 2))
        c_t = t[:, :, 0] + 1j * t[:, :, 1]
        inp = t.transpose(dim0, dim1) if transposed else t
        if inp.size(-1) != 2:
            with pytest.raises(RuntimeError, match="Tensor must have a last dimension of size 2"):
                T.view_as_complex(inp)
            return
        if inp.stride(-1) != 1:
            with pytest.raises(RuntimeError, match="Tensor must have a last dimension with stride 1"):
                T.view_as_complex(inp)
            return
        res = T.view_as_complex(inp)
        _same(res, c_t.transpose(dim0, dim1) if transposed else c_t)
        assert _is_view_of(t, res)

    check(False)
    check(True)
    check(True, 0, 2)
    check(True, 1, 2)
    x = _make(T, (3, 3))
    with pytest.raises(RuntimeError, match="Tensor must have a stride divisible by 2 for all but last dimension"):
        T.view_as_complex(T.as_strided(x, (2, 2), (1, 1)))
    x = T.tensor([])
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension of size 2"):
        T.view_as_complex(x)
    with pytest.raises(RuntimeError, match="Input tensor must have one or more dimensions"):
        T.view_as_complex(T.tensor(2.0))
    res = T.view_as_complex(x.reshape(0, 2))
    assert _is_view_of(x, res)
    assert tuple(res.shape) == (0,)


@pytest.mark.parametrize("name", ["complex64", "complex128"])
def test_view_as_real(T, name):
    # TestViewOps.test_view_as_real: a view of the (real, imag) pairs, also of a transpose,
    # an empty and a 0-dim tensor
    for transposed in (False, True):
        t = _make(T, (3, 4), name)
        inp = t.transpose(0, 1) if transposed else t
        res = T.view_as_real(inp)
        _same(res[:, :, 0], inp.real)
        _same(res[:, :, 1], inp.imag)
        assert _is_view_of(t, res)
    x = T.tensor([], dtype=getattr(T, name))
    res = T.view_as_real(x)
    assert _is_view_of(x, res) and tuple(res.shape) == (0, 2)
    x = T.tensor(2 + 3j, dtype=getattr(T, name))
    res = T.view_as_real(x)
    assert _is_view_of(x, res) and tuple(res.shape) == (2,)


@pytest.mark.parametrize("name", ["bool", "float32", "complex64"])
def test_view_tensor_split(T, name):
    # TestViewOps.test_view_tensor_split / _hsplit / _vsplit / _dsplit: the pieces are views
    a = _make(T, (8, 6), name)
    for dim in (0, 1):
        assert all(_is_view_of(a, p) for p in a.tensor_split(3, dim))
    t = _make(T, (4, 4, 4), name)
    pieces = {"h": T.hsplit(t, 2), "v": T.vsplit(t, 2), "d": T.dsplit(t, 2)}
    assert all(_is_view_of(t, p) for ps in pieces.values() for p in ps)
    t[2, 2, 2] = 7 if name != "bool" else False
    for k, where in (("h", (2, 0, 2)), ("v", (0, 2, 2)), ("d", (2, 2, 0))):
        assert pieces[k][1][where].item() == t[2, 2, 2].item()


def test_imag_noncomplex(T):
    # TestViewOps.test_imag_noncomplex
    with pytest.raises(RuntimeError):
        T.imag(T.ones((5, 5)))


@pytest.mark.parametrize("name", ["complex64", "complex128"])
def test_real_imag_view(T, name):
    # TestViewOps.test_real_imag_view: real/imag are views of the base, also through a transpose;
    # their storage offsets are right (a[5:].real == a.real[5:])
    for contiguous in (True, False):
        t = _make(T, (3, 3), name)
        u = t if contiguous else t.T
        re, im = u.real, u.imag
        np.testing.assert_array_equal(_vals(re), _vals(u).real)
        np.testing.assert_array_equal(_vals(im), _vals(u).imag)
        assert _is_view_of(t, re) and _is_view_of(t, im)
    a = _make(T, (10,), name)
    _same(a[5:].real, a.real[5:])
    _same(a[5:].imag, a.imag[5:])
    assert a[5:].real.storage_offset() == a.real[5:].storage_offset()


@pytest.mark.parametrize("name", ["complex64", "complex128"])
def test_conj_imag_view(T, name):
    # TestViewOps.test_conj_imag_view: conj() and its imag are views with the conjugated values;
    # the imag of a conj view carries the negative bit, and so do views of it (not a copy)
    t = _make(T, (4, 5), name)
    v = t.conj()
    assert _is_view_of(t, v)
    np.testing.assert_array_equal(_vals(v), np.conj(_vals(t)))
    v_imag = v.imag
    assert _is_view_of(t, v_imag)
    np.testing.assert_array_equal(_vals(v_imag), np.conj(_vals(t)).imag)
    assert v_imag.is_neg() and T.is_neg(v_imag) and v_imag[0].is_neg() and v_imag.detach().is_neg()
    assert not (t.imag.is_neg() or v.real.is_neg() or v.is_neg() or v_imag.clone().is_neg() or (v_imag + 0).is_neg())
    r = v_imag.resolve_neg()
    im = t.imag
    assert not r.is_neg() and not r._is_view() and im.resolve_neg() is im
    np.testing.assert_array_equal(_vals(r), np.conj(_vals(t)).imag)


def test_conj_view_with_shared_memory(T):
    # TestViewOps.test_conj_view_with_shared_memory: ops whose inputs alias their output
    a = _make(T, (4, 5), "complex64")
    b, c = a.conj(), a.conj()
    _same(T.add(a, b), a.add_(b))
    _same(T.add(b, c), T.add(b, c, out=a))
    _same(T.add(b, c), b.add_(c))


@pytest.mark.parametrize("pair", [("complex64", "float32"), ("complex128", "int64"), ("complex64", "complex128"),
                                  ("complex128", "bool")], ids="-".join)
def test_set_real_imag(T, pair):
    # TestViewOps.test_set_real_imag: assigning .real / .imag writes the parts
    x = _make(T, (10,), pair[0])
    new_real, new_imag = _make(T, (10,), pair[1]), _make(T, (10,), pair[1])
    x.real = new_real
    x.imag = new_imag
    if new_real.is_complex():
        new_real, new_imag = new_real.real, new_imag.real
    np.testing.assert_array_equal(_vals(x.real), _vals(new_real))
    np.testing.assert_array_equal(_vals(x.imag), _vals(new_imag))


def _writes_through(base, view, view_idx, base_idx, value=0):
    view[view_idx] = value
    return base[base_idx].item() == view[view_idx].item() == value


def test_diagonal_view(T):
    # TestViewOps.test_diagonal_view
    t = T.ones((5, 5))
    v = T.diagonal(t)
    assert _is_view_of(t, v) and _writes_through(t, v, 0, (0, 0))
    t = T.ones((3, 3, 3))
    v = T.diagonal(t, offset=1, dim1=1, dim2=2)
    assert _is_view_of(t, v) and _writes_through(t, v, (0, 0), (0, 0, 1))


@pytest.mark.parametrize("case", ["select", "expand", "expand_as", "narrow", "permute", "swapdims", "swapaxes",
                                  "transpose", "t", "T", "H", "mT", "mH", "unfold", "unsqueeze", "as_strided",
                                  "view", "view_as", "reshape", "reshape_as", "movedim", "moveaxis",
                                  "slice", "ellipsis", "newaxis"])
def test_view_ops_are_views(T, case):
    # TestViewOps.test_select_view, test_expand_view, test_expand_as_view, test_narrow_view,
    # test_permute_view, test_transpose_view, test_t_view, test_T_view, test_unfold_view,
    # test_unsqueeze_view, test_as_strided_view, test_view_view, test_view_as_view,
    # test_reshape_view, test_reshape_as_view, test_movedim_view,
    # test_basic_indexing_{slice,ellipses,newaxis}_view: a view of t; a write lands in t
    t = T.ones((5, 1)) if case.startswith("expand") else (T.ones(10) if case == "unfold" else T.ones(5, 5))
    made = {
        "select": lambda: (t.select(0, 2), 0, (2, 0)),
        "expand": lambda: (t.expand(5, 5), (2, 2), (2, 0)),
        "expand_as": lambda: (t.expand_as(T.empty((5, 5))), (2, 2), (2, 0)),
        "narrow": lambda: (T.narrow(t, 1, 2, 2), (0, 0), (0, 2)),
        "permute": lambda: (t.permute(1, 0), (0, 1), (1, 0)),
        "swapdims": lambda: (T.swapdims(t, 0, 1), (0, 1), (1, 0)),
        "swapaxes": lambda: (T.swapaxes(t, 0, 1), (0, 1), (1, 0)),
        "transpose": lambda: (T.transpose(t, 0, 1), (0, 1), (1, 0)),
        "t": lambda: (t.t(), (0, 1), (1, 0)),
        "T": lambda: (t.T, (0, 1), (1, 0)),
        "H": lambda: (t.H, (0, 1), (1, 0)),
        "mT": lambda: (t.mT, (0, 1), (1, 0)),
        "mH": lambda: (t.mH, (0, 1), (1, 0)),
        "unfold": lambda: (t.unfold(0, 3, 2), (1, 0), 2),
        "unsqueeze": lambda: (T.unsqueeze(t, 1), (0, 0, 1), (0, 1)),
        "as_strided": lambda: (T.as_strided(t, (25,), (1,)), 6, (1, 1)),
        "view": lambda: (t.view(25), 6, (1, 1)),
        "view_as": lambda: (t.view_as(T.empty((25,))), 6, (1, 1)),
        "reshape": lambda: (T.reshape(t, (25,)), 6, (1, 1)),
        "reshape_as": lambda: (t.reshape_as(T.empty((25,))), 6, (1, 1)),
        "movedim": lambda: (T.movedim(t, (0, 1), (1, 0)), (0, 1), (1, 0)),
        "moveaxis": lambda: (T.moveaxis(t, 0, 1), (0, 1), (1, 0)),
        "slice": lambda: (t[:2, :3], (0, 0), (0, 0)),
        "ellipsis": lambda: (t[..., :2], (0, 0), (0, 0)),
        "newaxis": lambda: (t[None, :2, 3], (0, 0), (0, 3)),
    }
    v, vi, ti = made[case]()
    assert _is_view_of(t, v)
    assert _writes_through(t, v, vi, ti)


@pytest.mark.parametrize("case", ["swapdims_", "swapaxes_", "transpose_", "t_", "squeeze_", "unsqueeze_",
                                  "as_strided_"])
def test_inplace_view_ops(T, case):
    # TestViewOps.test_transpose_inplace_view, test_t_inplace_view, test_squeeze_inplace_view,
    # test_unsqueeze_inplace_view, test_as_strided_inplace_view: the in-place view ops keep a
    # view of t a view of t
    t = T.ones(5, 5)
    v = t.view_as(t)
    made = {
        "swapdims_": lambda: (v.swapdims_(0, 1), (0, 1), (1, 0)),
        "swapaxes_": lambda: (v.swapaxes_(0, 1), (0, 1), (1, 0)),
        "transpose_": lambda: (v.transpose_(0, 1), (0, 1), (1, 0)),
        "t_": lambda: (v.t_(), (0, 1), (1, 0)),
        "squeeze_": lambda: (v.squeeze_(), (0, 1), (0, 1)),
        "unsqueeze_": lambda: (v.unsqueeze_(1), (0, 0, 1), (0, 1)),
        "as_strided_": lambda: (v.as_strided_((25,), (1,)), 6, (1, 1)),
    }
    r, vi, ti = made[case]()
    assert r is v
    assert _is_view_of(t, v)
    assert _writes_through(t, v, vi, ti)


def test_unbind_view(T):
    # TestViewOps.test_unbind_view
    t = T.zeros((5, 5))
    for idx, v in enumerate(T.unbind(t)):
        assert _is_view_of(t, v)
        assert _writes_through(t, v, 0, (idx, 0), idx + 1)


def test_unbind(T):
    # TestViewOps.test_unbind: gradients of all and of single outputs
    g = T.tensor(_RNG.standard_normal((3, 4, 4)), dtype=T.float32)
    stacked = T.tensor(_RNG.standard_normal((3, 4, 4)), dtype=T.float32, requires_grad=True)
    T.autograd.backward(list(stacked.unbind()), list(g.unbind()))
    _same(stacked.grad, g)
    for i in range(3):
        stacked = T.zeros(3, 4, 4, requires_grad=True)
        gi = g.unbind()[i]
        (grad,) = T.autograd.grad(stacked.unbind()[i], stacked, gi)
        _same(grad, T.stack([gi if j == i else T.zeros_like(gi) for j in range(3)]))
    stacked = T.tensor(_RNG.standard_normal((3, 2, 2)), dtype=T.float64, requires_grad=True)
    assert T.autograd.gradcheck(lambda x: x.unbind(), (stacked,))


@pytest.mark.parametrize("case", ["squeeze", "squeeze_"])
def test_squeeze_view(T, case):
    # TestViewOps.test_squeeze_view / test_squeeze_inplace_view: v._base is t
    t = T.ones(5, 1, 5)
    v = T.squeeze(t) if case == "squeeze" else t.view_as(t).squeeze_()
    assert _is_view_of(t, v)
    v[0, 1] = 0
    assert v._base is t
    assert t[0, 0, 1].item() == 0


# (size, stride, offset) cases of test_as_strided_gradients, each with its input preparation
_AS_STRIDED = [
    ((25,), lambda x: x.view(5, 5), [3, 3], [6, 2], 2),
    ((12,), None, [1, 2, 1, 5], [0, 5, 100, 1], 2),
    ((5,), None, [3, 3, 3], [0, 1, 0], 2),
    ((5,), None, [3, 3, 3], [0, 0, 0], 4),
    ((5,), lambda x: x.expand(5, 5), [5, 5], [0, 1], 0),
    ((35,), None, [6, 6], [5, 1], 2),
    ((15,), None, [3, 2], [3, 6], 2),
    ((3, 4), None, [4, 3], [1, 4], None),
    ((2, 3), lambda x: x.expand(10, 2, 3), [2, 3], [3, 1], 0),
]


@pytest.mark.parametrize("case", range(len(_AS_STRIDED)))
def test_as_strided_gradients(T, case):
    # TestViewOps.test_as_strided_gradients: gradcheck of as_strided over contiguous,
    # expanded, overlapping and transposed layouts (gradgradcheck on three of them, for time)
    shape, prep, size, stride, offset = _AS_STRIDED[case]
    x = T.tensor(_RNG.standard_normal(shape), dtype=T.float64, requires_grad=True)

    def closure(x):
        y = prep(x) if prep is not None else x
        return y.as_strided(size, stride, offset)

    assert T.autograd.gradcheck(closure, (x,))
    if case in (0, 2, 7):
        assert T.autograd.gradgradcheck(closure, (x,))


def test_as_strided_reads_storage(T):
    # TestViewOps.test_as_strided_gradients, "getting things outside the input": as_strided of
    # a view addresses the whole storage
    x = T.tensor(_RNG.standard_normal((6, 2)), dtype=T.float32)
    _same(x[3:].as_strided([3, 2], [2, 1], 0), x[:3])
    assert x[3:].storage_offset() == 6


def test_contiguous_self_and_nonview(T):
    # TestViewOps.test_contiguous_self / test_contiguous_nonview
    t = T.ones(5, 5)
    assert t.contiguous() is t
    nv = t.t().contiguous()
    assert not _is_view_of(t, nv)
    nv[0, 0] = 0
    assert t[0, 0].item() != nv[0, 0].item()


def test_reshape_nonview(T):
    # TestViewOps.test_reshape_nonview: reshape of a transpose copies
    t = T.ones(5, 5)
    nv = T.reshape(t.t(), (25,))
    assert not _is_view_of(t, nv)
    nv[6] = 0
    assert t[1, 1].item() != nv[6].item()


def _propagates(t, v):
    v[(0,) * v.ndim] = 0
    return t[(0,) * t.ndim].item() == v[(0,) * v.ndim].item()


def test_flatten_view(T):
    # TestViewOps.test_flatten_view: flatten is a view when the merged dims are contiguous,
    # also over as_strided storage with stride-0 dims
    t = T.ones(1, 2, 3, 4)
    v = t.flatten()
    assert _is_view_of(t, v) and _propagates(t, v)
    t = T.tensor(1)
    v = t.flatten()
    assert _propagates(t, v) and _is_view_of(t, v)
    t = T.ones(1, 2, 3, 4).transpose(2, 3)
    v = t.flatten(0, 1)
    assert _propagates(t, v) and _is_view_of_same_base(t, v)
    t = T.ones(720).as_strided((2, 3, 2, 3, 5, 4), (6, 2, 15, 5, 1, 0))
    v1 = t.flatten(0, 1)
    v2 = v1.flatten(1, 3)
    v3 = v2.flatten(2, 2)
    for v in (v1, v2, v3):
        assert _propagates(t, v) and _is_view_of_same_base(t, v)


def test_flatten_nonview(T):
    # TestViewOps.test_flatten_nonview: a copy when the dims cannot merge; flatten(d, d) is self
    for t, args in ((T.ones(2, 3, 2, 3).transpose(2, 3), (1, 3)), (T.ones(2, 2).T, ())):
        nv = t.flatten(*args)
        assert not nv._is_view()
        nv[(0,) * nv.ndim] = 0
        assert t[(0,) * t.ndim].item() != nv[(0,) * nv.ndim].item()
    t = T.ones(2, 2)
    assert t.flatten(1, 1) is t


def test_advanced_indexing_nonview_and_assignment(T):
    # TestViewOps.test_advanced_indexing_nonview / test_advanced_indexing_assignment
    t = T.ones(3, 3)
    rows, cols = T.tensor([[0, 0], [2, 2]]), T.tensor([[0, 1], [2, 2]])
    nv = t[rows, cols]
    assert not _is_view_of(t, nv)
    nv[1, 1] = 0
    assert t[2, 2].item() != nv[1, 1].item()
    t[rows, cols] = 0
    assert t[2, 2].item() == 0


def test_view_copy(T):
    # TestViewOps.test_view_copy: view_copy computes the view's value into a new tensor, with
    # the same gradient
    a = T.tensor(_RNG.standard_normal(4), dtype=T.float32, requires_grad=True)
    a_ref = a.detach().clone().requires_grad_()
    a_view = a_ref.view(2, 2)
    a_view_copy = T.view_copy(a, (2, 2))
    assert _is_view_of(a_ref, a_view)
    assert not _is_view_of(a, a_view_copy)
    a_view_copy.sum().backward()
    a_view.sum().backward()
    _same(a_view_copy, a_view)
    _same(a.grad, a_ref.grad)


def test_view_copy_out(T):
    # TestViewOps.test_view_copy_out: diagonal_copy / split_copy with out=
    a = T.tensor(_RNG.standard_normal((2, 2)), dtype=T.float32)
    out = T.empty(2)
    T.diagonal_copy(a, out=out)
    _same(out, T.diagonal_copy(a))
    a = T.tensor(_RNG.standard_normal(4), dtype=T.float32)
    out1, out2 = T.empty(2), T.empty(2)
    T.split_copy(a, 2, out=(out1, out2))
    e1, e2 = T.split_copy(a, 2)
    _same(out1, e1)
    _same(out2, e2)


# ==== TestOldViewOps ==========================================================================
def test_ravel(T):
    # TestOldViewOps.test_ravel (float tensors): a contiguous input gives a view (its _base),
    # a non-contiguous one a contiguous copy
    for src, nc in ((_make(T, (5, 5, 5, 5)), False), (_make(T, (0, 2, 3)), False), (_make(T, (3, 0, 2)), False),
                    (_make(T, (5, 5)), True)):
        flat = src.ravel()
        assert tuple(flat.shape) == (src.numel(),)
        _same(src.view(-1), flat)
        assert flat._base is src
        assert flat.is_contiguous()
        if nc:
            nc_flat = src.t().ravel()
            _same(src.t().contiguous().view(-1), nc_flat)
            assert nc_flat._base is not src
            assert nc_flat.is_contiguous()
    z = T.tensor(123)
    assert tuple(z.ravel().shape) == (1,) and z.ravel().is_contiguous()
    _same(z.ravel(), T.tensor([123]))
    f2 = T.ones(10)[::2].ravel()
    assert tuple(f2.shape) == (5,) and f2.is_contiguous()


def test_empty_reshape_and_view(T):
    # TestOldViewOps.test_empty_reshape / test_view_empty
    x = T.zeros(0, 6)
    assert tuple(x.reshape(1, 0, 6, 1, 1).shape) == (1, 0, 6, 1, 1)
    assert x.data_ptr() == x.reshape(1, 0, 6, 1, 1).data_ptr()
    with pytest.raises(RuntimeError):
        x.reshape(0, -1)
    assert tuple(x.view(1, 0, 6, 1, 1).shape) == (1, 0, 6, 1, 1)


def test_expand(T):
    # TestOldViewOps.test_expand
    tensor, tensor2 = _make(T, (1, 8, 1)), _make(T, (5,))
    template = T.zeros(4, 8, 5)
    target = (4, 8, 5)
    for t in (tensor, tensor2):
        assert tuple(t.expand_as(template).size()) == target
        assert tuple(t.expand(4, 8, 5).size()) == target
        assert tuple(t.expand(template.size()).size()) == target
    _same(tensor2.expand(1, 5).expand(2, 2, 5), tensor2.repeat(2, 2, 1))
    noncontig = _make(T, (5, 2, 1, 3))[:, 0]
    assert not noncontig.is_contiguous()
    _same(noncontig.expand(2, 5, 4, 3), noncontig.contiguous().repeat(2, 1, 4, 1))
    expanded, unsqueezed = tensor2.expand(1, 1, 5), tensor2.unsqueeze(0).unsqueeze(1)
    _same(expanded, unsqueezed)
    assert expanded.stride() == unsqueezed.stride()
    _same(tensor.expand(4, -1, 5), tensor.expand(4, 8, 5))
    with pytest.raises(RuntimeError):
        tensor2.expand(-1, -1)
    _same(T.zeros(0).expand((0,)), T.zeros(0))


def test_reshape(T):
    # TestOldViewOps.test_reshape: data_ptr tells a view from a copy
    x = _make(T, (3, 3))
    assert x.data_ptr() == x.reshape(-1).data_ptr() == x.reshape(1, 9, 1).data_ptr()
    _same(T.reshape(x, (9,)), x.reshape(9))
    with pytest.raises(RuntimeError):
        x.reshape(-1, -1)
    y = _make(T, (4, 4, 4))[:, 0, :]
    assert y.data_ptr() != y.reshape(-1).data_ptr()
    _same(y.contiguous().view(-1), y.reshape(-1))
    assert y.reshape(2, 2, 4).data_ptr() == y.data_ptr()
    s = T.tensor(1.5)
    assert s.data_ptr() == s.reshape(()).data_ptr()
    assert tuple(s.reshape(-1).shape) == (1,)
    with pytest.raises(RuntimeError):
        s.reshape(2)
    empty = T.tensor([])
    _same(empty, empty.reshape(-1))
    _same(empty, empty.reshape([0]))
    assert tuple(empty.reshape([0, 1]).shape) == (0, 1)
    assert tuple(empty.reshape([1, -1]).shape) == (1, 0)
    with pytest.raises(RuntimeError):
        empty.reshape(1)
    x = _make(T, (3, 3))
    assert x.data_ptr() == x.reshape_as(T.zeros(9)).data_ptr() == x.reshape_as(T.zeros(1, 9, 1)).data_ptr()
    with pytest.raises(RuntimeError):
        x.reshape_as(T.zeros(10))


def test_flatten(T):
    # TestOldViewOps.test_flatten (float tensors)
    z = T.tensor(123)
    _same(z.flatten(), T.tensor([123]))
    src = _make(T, (5, 5, 5, 5))
    for args, shape in (((0, -1), (625,)), ((0, 2), (125, 5)), ((0, 1), (25, 5, 5)), ((1, 2), (5, 25, 5)),
                        ((2, 3), (5, 5, 25)), ((-2, -1), (5, 5, 25))):
        flat = src.flatten(*args)
        assert tuple(flat.shape) == shape
        _same(src.view(-1), flat.view(-1))
    _same(src.flatten(2, 2), src)
    with pytest.raises(IndexError, match="Dimension out of range"):
        src.flatten(5, 10)
    with pytest.raises(RuntimeError, match="start_dim cannot come after end_dim"):
        src.flatten(2, 0)


def test_narrow(T):
    # TestOldViewOps.test_narrow / test_narrow_tensor
    x = T.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8]])
    for args, expect in (((0, 0, 1), [[0, 1, 2]]), ((0, 0, 2), [[0, 1, 2], [3, 4, 5]]), ((0, 1, 1), [[3, 4, 5]]),
                         ((0, -1, 1), [[6, 7, 8]]), ((0, -2, 2), [[3, 4, 5], [6, 7, 8]]),
                         ((0, -3, 3), [[0, 1, 2], [3, 4, 5], [6, 7, 8]]), ((-1, -1, 1), [[2], [5], [8]]),
                         ((-2, -1, 1), [[6, 7, 8]])):
        _same(x.narrow(*args), T.tensor(expect))
    _same(x.narrow(0, T.tensor(0), 1), T.tensor([[0, 1, 2]]))
    for bad in (T.tensor(0.0), T.tensor([0]), T.tensor([0, 1])):
        with pytest.raises(Exception):
            x.narrow(0, bad, 1)


def test_t(T):
    # TestOldViewOps.test_t (dense half)
    for x in (T.tensor(1.5), T.arange(4)):
        _same(x, x.t())
    x = _make(T, (2, 2))
    _same(x.t(), x.transpose(0, 1))
    with pytest.raises(RuntimeError, match="expects a tensor with <= 2 dimensions, but self is 3D"):
        _make(T, (2, 2, 2)).t()


def _sparse_parts(s):
    s = s.coalesce()
    return tuple(s.shape), s._indices().tolist(), s._values().tolist()


def test_t_sparse(T):
    # TestOldViewOps.test_t (sparse half): t() / transpose of sparse COO tensors, 0-dim included
    for x in (T.tensor(1.5), T.tensor(0.0), T.arange(4), _make(T, (2, 3))):
        s = x.to_sparse()
        assert _sparse_parts(s.t()) == _sparse_parts(x.t().to_sparse())
        assert _sparse_parts(T.t(s)) == _sparse_parts(x.t().to_sparse())
        _same(s.t().to_dense(), x.t())
    s = _make(T, (2, 3)).to_sparse()
    assert s.t().is_coalesced() is False and s.transpose(0, 0).is_coalesced() is True
    assert _sparse_parts(T.transpose(s, 0, 1)) == _sparse_parts(s.t())
    with pytest.raises(RuntimeError, match="expects a tensor with <= 2 sparse and 0 dense dimensions"):
        _make(T, (2, 2, 2)).to_sparse().t()
    with pytest.raises(RuntimeError, match="expects a tensor with <= 2 sparse and 0 dense dimensions"):
        _make(T, (2, 2)).to_sparse(1).t()
    with pytest.raises(RuntimeError, match="transposed dimensions must be sparse"):
        _make(T, (2, 3, 2)).to_sparse(2).transpose(0, 2)
    with pytest.raises(RuntimeError, match="sparse_dim argument must be in >0"):
        T.zeros(3).to_sparse(0)
    # gradients reach the dense source through the transposed sparse tensor
    a = T.tensor([[0.0, 1.0], [2.0, 0.0]], requires_grad=True)
    (a.to_sparse().t().to_dense() * T.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    _same(a.grad, T.tensor([[0.0, 3.0], [2.0, 0.0]]))


def test_split_and_chunk(T):
    # TestOldViewOps.test_split / test_chunk: pieces equal narrow(); chunk(<=0) refuses
    for tensor, how, dim, sizes in ((_make(T, (7, 4)), 3, 0, ([3, 4], [3, 4], [1, 4])),
                                    (_make(T, (20, 10)), [5, 5, 10], 0, ([5, 10], [5, 10], [10, 10])),
                                    (_make(T, (20, 10)), [2, 2, 6], 1, ([20, 2], [20, 2], [20, 6]))):
        start = 0
        for size, piece in zip(sizes, tensor.split(how, dim)):
            assert list(piece.size()) == size
            _same(tensor.narrow(dim, start, size[dim]), piece)
            start += size[dim]
    tensor = _make(T, (4, 7))
    start = 0
    for size, piece in zip(([4, 3], [4, 3], [4, 1]), tensor.chunk(3, 1)):
        assert list(piece.size()) == size
        _same(tensor.narrow(1, start, size[1]), piece)
        start += size[1]
    for bad in (0, -2):
        with pytest.raises(RuntimeError, match="chunk expects.*greater than 0"):
            tensor.chunk(bad)


def test_unsqueeze(T):
    # TestOldViewOps.test_unsqueeze: also of a non-contiguous tensor and in place
    x = _make(T, (2, 3, 4))
    _same(x.unsqueeze(1), x.view(2, 1, 3, 4))
    _same(x.clone().unsqueeze_(2), x.view(2, 3, 1, 4))
    x = x[:, 1]
    assert not x.is_contiguous()
    _same(x.unsqueeze(1), x.contiguous().view(2, 1, 4))
    _same(x.clone().unsqueeze_(2), x.contiguous().view(2, 4, 1))


def test_big_transpose(T):
    # TestOldViewOps.test_big_transpose (smaller): t().contiguous() equals numpy's transpose
    t = _make(T, (45, 78))
    np.testing.assert_array_equal(_vals(t.t().contiguous()), _vals(t).T)


def test_T(T):
    # TestOldViewOps.test_T: T reverses the dims (a 1-D or 0-dim tensor is unchanged)
    a = _make(T, (2, 3, 4))
    with warnings.catch_warnings():     # torch deprecates T on other than 2 dims (warns once)
        warnings.simplefilter("ignore")
        _same(a.T, a.permute(2, 1, 0))
    b = _make(T, (10,))
    _same(b, b.T)
    s = T.tensor(5)
    _same(s, s.T)


@pytest.mark.parametrize("name", ["bool", "float32", "complex64"])
def test_transposes(T, name):
    # TestOldViewOps.test_transposes / test_transposes_errors: T/H/mT/mH/adjoint against
    # transpose(-2, -1) (and conj for H), and their "only supported on matrices" errors
    for op in ("T", "H", "mT", "mH", "adjoint"):
        shapes = ((), (2, 3), (2, 3, 4)) if op[0] == "m" or op == "adjoint" else ((), (2, 3))
        for shape in shapes:
            a = _make(T, shape, name)
            with warnings.catch_warnings():   # 0-dim: deprecated identities (conj for H/mH/adjoint)
                warnings.simplefilter("ignore")
                r = getattr(a, op)
                r = r() if op == "adjoint" else r
            e = a.transpose(-2, -1) if a.ndim else a
            if op[-1] == "H" or op == "adjoint":
                e = e.conj()
            _same(r.resolve_conj(), e.resolve_conj())
    for op in ("H", "mT", "mH", "adjoint"):
        for shape in (((2,), (2, 3, 4)) if op == "H" else ((2,),)):
            a = _make(T, shape, name)
            with pytest.raises(RuntimeError, match="only supported on matrices"):
                r = getattr(a, op)
                if op == "adjoint":
                    r()


def test_python_types(T):
    # TestOldViewOps.test_python_types: dtype=float/int/bool are float64/int64/bool
    assert T.zeros((1, 2), dtype=T.float64).dtype == T.zeros((1, 2), dtype=float).dtype
    assert T.arange(10, 20, dtype=T.int64).dtype == T.arange(10, 20, dtype=int).dtype
    assert T.tensor([True, False], dtype=T.bool).dtype == T.tensor([True, False], dtype=bool).dtype


def test_resize_as_preserves_strides(T):
    # TestOldViewOps.test_resize_as_preserves_strides
    x = T.empty(2, 3).t()
    old = x.stride()
    x.resize_as_(x)
    assert x.stride() == old


@pytest.mark.parametrize("name", ["int64", "float32", "float64"])
def test_transpose_invalid(T, name):
    # TestOldViewOps.test_transpose_invalid
    x = _make(T, (5, 6, 7, 5), name)
    for fn in (T.swapdims, T.swapaxes, T.transpose):
        for a, b in ((5, 0), (0, 5)):
            with pytest.raises(IndexError, match="Dimension out of range"):
                fn(x, a, b)


@pytest.mark.parametrize("name", ["int64", "complex64"])
def test_transpose_vs_numpy(T, name):
    # TestOldViewOps.test_transpose_vs_numpy: every pair of dims (also negative) as numpy
    for nd in range(4):
        x = _make(T, (2, 3, 4, 5)[:nd], name)
        xn = _vals(x)
        for src, dst in itertools.permutations(range(nd), 2):
            for s, d in ((src, dst), (src - nd, dst), (src, dst - nd)):
                for fn in (lambda v: T.swapdims(v, dim0=s, dim1=d), lambda v: T.swapaxes(v, axis0=s, axis1=d),
                           lambda v: T.transpose(v, dim0=s, dim1=d)):
                    np.testing.assert_array_equal(_vals(fn(x)), np.swapaxes(xn, s, d))
    x = _make(T, (2, 3, 5), name)
    np.testing.assert_array_equal(_vals(T.transpose(x, 0, 0)), _vals(x))


@pytest.mark.parametrize("fn", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast(T, fn):
    # TestOldViewOps.test_atleast / test_atleast_gradient: shapes as numpy's, for one tensor
    # and for a sequence; gradients pass through
    f, nf = getattr(T, fn), getattr(np, fn)
    for shape in ((), (3,), (3, 4), (3, 4, 2), (3, 4, 2, 1)):
        x = _make(T, shape)
        for inp in (x, x.T):
            np.testing.assert_array_equal(_vals(f(inp)), nf(_vals(inp)))
        outs = f(x, x, x)
        assert isinstance(outs, tuple) and len(outs) == 3
        for o in outs:
            np.testing.assert_array_equal(_vals(o), nf(_vals(x)))
    xs = [T.tensor(_RNG.random(s), dtype=T.float64, requires_grad=True) for s in ((), (4,), (4, 3))]
    assert T.autograd.gradcheck(lambda *a: f(*a), xs)


def test_broadcast_tensors_shapes_to(T):
    # TestOldViewOps.test_broadcast_tensors / test_broadcast_shapes / test_broadcast_to
    y0, y1, y2 = T.broadcast_tensors(T.zeros(2, 1, 3), T.zeros(3), T.zeros(3, 1))
    assert all(tuple(y.size()) == (2, 3, 3) for y in (y0, y1, y2))
    # an input that already has the common shape comes back itself (no ExpandBackward0 view:
    # distributions' broadcast_all keeps a parameter's own grad_fn); the others are expanded
    a = T.zeros(2, 3, requires_grad=True) * 2
    b = T.zeros(3, requires_grad=True)
    x, y = T.broadcast_tensors(a, b)
    assert x is a and type(x.grad_fn).__name__ == "MulBackward0"
    assert type(y.grad_fn).__name__ == "ExpandBackward0" and y._base is b
    # (the original's (1, 1) left out: (1,) and (4, 1, 1) cover size-1 dims that broadcast, and
    # each pair's broadcast_tensors/broadcast_to compiles its expand programs)
    examples = [(), (1,), (2,), (3, 1), (3, 2), (4, 1, 1), (4, 3, 2)]
    for s0 in examples:
        assert T.broadcast_shapes(s0) == T.broadcast_tensors(T.zeros(s0))[0].shape
        for s1 in examples:
            assert T.broadcast_shapes(s0, s1) == T.broadcast_tensors(T.zeros(s0), T.zeros(s1))[0].shape
    for ints in ([1, 4], [4, 1], [1, 1, 3]):
        assert T.broadcast_shapes(*ints) == T.broadcast_tensors(*map(T.empty, ints))[0].shape
    # torch 2.13 (its Python reference implementation) raises ValueError for a negative size met
    # where the common size is still 1, RuntimeError for a mismatch (the original test's
    # messages are older torch's)
    for bad in ([1, 1, -12], [-1, 1], [-11]):
        with pytest.raises(ValueError, match="Attempting to broadcast a dimension with negative length"):
            T.broadcast_shapes(*bad)
    for bad in (((3, 5), (2, 4, 1)), ((3,), (-1,))):
        with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length"):
            T.broadcast_shapes(*bad)
    for s0 in [(-1,), (1, -12), (4, -11), (-4, 1), (1, 1, -2)]:
        with pytest.raises(ValueError, match="Attempting to broadcast a dimension with negative length"):
            T.broadcast_shapes(s0)
        with pytest.raises(ValueError, match="Attempting to broadcast a dimension with negative length"):
            T.broadcast_shapes(s0, (1, 1, -2))
    for f in (1.1, 2.0):
        with pytest.raises(RuntimeError, match="Input shapes should be of type ints, a tuple of ints, or a list of ints"):
            T.broadcast_shapes(f)
    for s0 in [(1, (5,)), (3, (1,)), (1, (3, 4))]:
        assert T.broadcast_shapes(*s0) == T.broadcast_tensors(*map(T.empty, s0))[0].shape
    for s0, s1 in itertools.combinations(examples, 2):
        t = _make(T, s0, "int64")
        ok = all(a == 1 or a == b for a, b in zip(reversed(s0), reversed(s1)))
        if ok:
            np.testing.assert_array_equal(_vals(T.broadcast_to(t, s1)), np.broadcast_to(_vals(t), s1))
        else:
            with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(\d\) must match the existing size \(\d\)"):
                T.broadcast_to(t, s1)


def test_view(T):
    # TestOldViewOps.test_view: sizes, -1 inference (also with empty tensors), invalid views,
    # and views of tensors contiguous only in the touched dims (strides from transposes)
    tensor = _make(T, (15,))
    template = T.zeros(3, 5)
    for v in (tensor.view_as(template), tensor.view(3, 5), tensor.view(T.Size([3, 5])), tensor.view(-1, 5),
              tensor.view(3, -1)):
        assert tuple(v.size()) == (3, 5)
    tensor.view(5, 3).fill_(0.25)
    assert bool((tensor == 0.25).all())
    empty = T.zeros(0)
    _same(empty.view_as(empty), empty)
    _same(empty.view(0), empty)
    assert tuple(empty.view(0, 3, 0, 1).size()) == (0, 3, 0, 1)
    _same(empty.view(0, 3, 0, 1).view(0), empty)
    assert tuple(empty.view(-1).size()) == (0,)
    assert tuple(empty.view(10, 3, -1).size()) == (10, 3, 0)
    for bad in ((-1, 0), (3, 0, -1, 0)):
        with pytest.raises(RuntimeError, match=r"because the unspecified dimension size -1 can be any value"):
            empty.view(*bad)
    for bad in ((15, 0), (7, -1), (15, -1, -1)):
        with pytest.raises(RuntimeError):
            tensor.view(*bad)
    tensor = _make(T, (4, 2, 5, 1, 6, 2, 9, 3)).transpose(-1, 2).transpose(-2, 3)
    contig = tensor.clone()
    for size in ([8, 1, 3, 3, 3, 4, 1, 3, 5], [2, 4, 3, 1, 9, 2, 2, 3, 5, 1],
                 [1, 1, 2, 1, 4, 3, 1, 1, 9, 1, 2, 1, 2, 3, 1, 5, 1, 1]):
        _same(tensor.view(*size), contig.view(*size))
    for bad in ((-1,), (24, 9, 6, 2, 1, 5), (8, 3, 9, 6, 10), (8, 3, 54, 2, 1, 5)):
        with pytest.raises(RuntimeError):
            tensor.view(*bad)
    tensor = T.zeros(1, 1).expand(3, 4)
    contig = tensor.clone()
    for size in ((-1,), (1, -1, 1), (-1, 1), (6, 2, 1), (1, 6, 2, 1)):
        _same(tensor.view(*size), contig.view(*size))


@pytest.mark.parametrize("name", ["bool", "complex64"])
def test_reshape_view_semantics(T, name):
    # TestOldViewOps.test_reshape_view_semantics: the same storage when viewable, a new one
    # when a transpose forces a copy
    tensor = _make(T, (15, 4), name)
    v = tensor.reshape(20, 3)
    assert tuple(v.size()) == (20, 3)
    assert tensor.untyped_storage().data_ptr() == v.untyped_storage().data_ptr()
    c = tensor.transpose(0, 1).reshape(20, 3)
    assert tensor.untyped_storage().data_ptr() != c.untyped_storage().data_ptr()


def test_contiguous(T):
    # TestOldViewOps.test_contiguous: a size-1 dim's stride does not matter (set_ restrides)
    x = _make(T, (1, 16, 5, 5))
    assert x.is_contiguous()
    stride = list(x.stride())
    stride[0] = 20
    x.set_(x.untyped_storage(), 0, x.size(), stride)
    assert x.is_contiguous()


_SPLIT_SIZES = [(0,), (10,), (10, 0), (4, 10)]


def test_tensor_split_sections_and_indices(T):
    # TestOldViewOps.test_tensor_split_sections / test_tensor_split_indices: as numpy's
    # array_split, with ints and with int64 tensors
    for size in _SPLIT_SIZES:
        a = _make(T, size, "int64")
        an = _vals(a)
        for dim in range(-a.dim(), a.dim()):
            for sections in range(1, 2 * a.size(dim), 3):
                for r1 in (T.tensor_split(a, sections, dim), T.tensor_split(a, T.tensor(sections), dim)):
                    for x, y in zip(r1, np.array_split(an, sections, dim)):
                        assert x.dtype == a.dtype
                        np.testing.assert_array_equal(_vals(x), y)
            for indices in ((), (0,), (3,), (-1,), (2, -1), (3, 4, 10), (0, -1, 0, 10), (1, 5, 2, 8)):
                r2 = T.tensor_split(a, T.tensor(indices, dtype=T.int64), dim) if indices else None
                for res in (T.tensor_split(a, indices, dim), r2):
                    if res is None:
                        continue
                    for x, y in zip(res, np.array_split(an, list(indices), dim)):
                        np.testing.assert_array_equal(_vals(x), y)


def test_tensor_split_errors(T):
    # TestOldViewOps.test_tensor_split_errors
    cases = [((10,), 10, 1, IndexError, r"Dimension out of range"),
             ((), 10, 0, RuntimeError, r"tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"),
             ((10,), (10,), 1, IndexError, r"Dimension out of range"),
             ((), (10,), 0, RuntimeError, r"tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"),
             ((10,), 0, 0, RuntimeError, r"number of sections must be larger than 0, got 0"),
             ((10,), -1, 0, RuntimeError, r"number of sections must be larger than 0, got -1")]
    for size, spec, dim, err, msg in cases:
        a = T.zeros(size)
        with pytest.raises(err, match=msg):
            T.tensor_split(a, spec, dim)
        with pytest.raises(err, match=msg):
            T.tensor_split(a, T.tensor(spec), dim)
    with pytest.raises(RuntimeError, match=r"tensor_split expected tensor_indices_or_sections to have dtype of long, but got Float"):
        T.tensor_split(T.zeros(10), T.tensor(1.1), 0)
    with pytest.raises(RuntimeError, match=r"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor, but got a tensor with 2 dims"):
        T.tensor_split(T.zeros(10), T.tensor(((1,),)), 0)


@pytest.mark.parametrize("name", ["bool", "uint8", "int16", "int64", "float16", "bfloat16", "complex128"])
def test_resize_and_view_all_dtypes(T, name):
    # TestOldViewOps.test_resize_all_dtypes_and_devices / test_resize_as_all_dtypes_and_devices /
    # test_view_all_dtypes_and_devices
    d = getattr(T, name)
    x = T.tensor([[1, 2], [3, 4], [5, 6]], dtype=d)
    assert tuple(x.view(6).shape) == (6,)
    x.resize_((2, 2))
    assert tuple(x.shape) == (2, 2)
    _same(x, T.tensor([[1, 2], [3, 4]], dtype=d))
    x = T.tensor([[1, 2], [3, 4], [5, 6]], dtype=d)
    y = T.tensor([[1, 2, 3], [4, 5, 6]], dtype=d)
    x.resize_as_(y)
    assert tuple(x.shape) == tuple(y.shape)


def test_resize_overflow(T):
    # TestOldViewOps.test_resize_overflow: a byte count past int64 is refused before allocating
    x = T.empty((), dtype=T.float64)
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        x.resize_([2, 4, 2 ** 29, 2 ** 29])
    with pytest.raises(RuntimeError, match="overflow"):
        x.resize_([8, 8, 2 ** 29, 2 ** 29])


def test_conj_view_numpy_error(T):
    # TestOldViewOps.test_conj_neg_view_numpy_error
    with pytest.raises(RuntimeError, match="has conjugate bit set"):
        T.tensor([1 + 2j]).conj().numpy()
    with pytest.raises(RuntimeError, match="has negative bit set"):
        T.tensor([1 + 2j]).conj().imag.numpy()
    with pytest.raises(RuntimeError, match="has negative bit set"):
        np.asarray(T.tensor([1 + 2j]).conj().imag)
    with pytest.raises(RuntimeError, match="not supported for conjugate view tensors"):
        T.tensor([1 + 2j]).conj().view(T.float64)
    with pytest.raises(RuntimeError, match="not supported for tensors with negative bit set"):
        T.tensor([1 + 2j]).conj().imag.view(T.int32)
    # the negated values come out once resolved (force=True resolves, as torch)
    np.testing.assert_array_equal(T.tensor([1 + 2j, 3 - 1j]).conj().imag.numpy(force=True), [-2.0, 1.0])
    np.testing.assert_array_equal(T.tensor([1 + 2j, 3 - 1j]).conj().imag.resolve_neg().numpy(), [-2.0, 1.0])


# ==== metadata parity (not a ported test): the internals the ported tests read ==================
_PROGRAMS = {
    "slice_step": lambda T: T.arange(24.0).view(4, 6)[1:, ::2],
    "select": lambda T: T.arange(24.0).view(2, 3, 4).select(1, 2),
    "transpose": lambda T: T.arange(24.0).view(2, 3, 4).transpose(0, 2),
    "expand": lambda T: T.arange(3.0).view(3, 1).expand(3, 4),
    "unsqueeze_noncontig": lambda T: T.arange(12.0).view(3, 4).t().unsqueeze(1),
    "diagonal": lambda T: T.arange(16.0).view(4, 4).diagonal(1),
    "unfold": lambda T: T.arange(10.0).unfold(0, 3, 2),
    "as_strided": lambda T: T.arange(20.0)[2:].as_strided((3, 2), (4, 1), 5),
    "real_of_slice": lambda T: (T.arange(8.0) * 1j)[3:].real,
    "imag_t": lambda T: (T.arange(6.0) * 1j).view(2, 3).t().imag,
    "view_as_real": lambda T: T.view_as_real((T.arange(6.0) + 0j)[1:]),
    "view_dtype_down": lambda T: T.arange(12, dtype=T.int32).view(3, 4)[:, 2:].view(T.int16),
    "view_dtype_up": lambda T: T.arange(16, dtype=T.int16).view(2, 8)[:, 4:].view(T.int32),
    "chunk_last": lambda T: T.arange(10.0).chunk(3)[2],
    "split_dim1": lambda T: T.arange(12.0).view(3, 4).split(3, 1)[1],
    "narrow_permute": lambda T: T.arange(60.0).view(3, 4, 5).permute(2, 0, 1).narrow(0, 1, 2),
    "index_none_ellipsis": lambda T: T.arange(24.0).view(2, 3, 4)[None, ..., 1],
    "reshape_copy": lambda T: T.arange(12.0).view(3, 4).t().reshape(12),
    "flatten_view": lambda T: T.arange(24.0).view(2, 3, 4)[:, 1:].flatten(1),
    "movedim": lambda T: T.arange(24.0).view(2, 3, 4).movedim(0, -1),
}


@pytest.mark.parametrize("name", list(_PROGRAMS))
def test_view_metadata_parity(name):
    # the same view program under torch and tracegrad: shape, stride(), storage_offset(),
    # is_contiguous(), _is_view(), the data_ptr distance to the base and the values agree
    import tracegrad
    torch = pytest.importorskip("torch")

    def facts(T):
        v = _PROGRAMS[name](T)
        base = v._base if v._is_view() else v
        return (tuple(v.shape), v.stride(), v.storage_offset(), v.is_contiguous(), v._is_view(),
                (v.data_ptr() - base.data_ptr()) // v.element_size(), _vals(v).tolist())

    assert facts(tracegrad) == facts(torch)


def test_inplace_on_expanded_view_in_graph_refused():
    # (not ported; the rule test_expand_view leans on) writing into a view with a stride-0 dim
    # of more than one element is refused, also when the base is in an autograd graph
    torch = pytest.importorskip("torch")
    import tracegrad
    for T in (torch, tracegrad):
        a = T.ones(5, 1, requires_grad=True).clone()
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            a.expand(5, 5).mul_(2)
