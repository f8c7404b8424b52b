"""Ported from PyTorch's test/test_view_ops.py, round 14: which ops return views (``_is_view``,
``_base``, shared storage seen through writes both ways), the complex/real and dtype
reinterpreting views, conj views, the transposes (``T``/``H``/``mT``/``mH``) and their errors,
``contiguous``/``reshape``/``flatten``/``ravel`` aliasing, splits (``tensor_split``,
``hsplit``/``vsplit``/``dsplit``), ``unfold``, ``expand``/``broadcast_to`` and ``as_strided``.
Each case is a ``same_outcome`` program: torch 2.13 is the oracle; tracegrad must return equal
values or raise the same builtin exception class."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

pytest.importorskip("torch")


def ar(T, *shape, dtype=None):
    n = int(np.prod(shape))
    return T.arange(n, dtype=dtype or T.float32).reshape(shape).clone()


def _write(T, base, make, idx, val=-1.0):
    """``make(base)`` is a view: a write through it shows in ``base``, and a write to ``base``
    shows through it."""
    v = make(base)
    v[idx] = val
    seen_in_base = base.clone()
    base.add_(100)
    return v._is_view(), v._base is base, seen_in_base, v.clone()


# ---- ops that return views: writes go both ways -----------------------------------------------
def view_view(T):
    return _write(T, ar(T, 2, 3), lambda b: b.view(3, 2), (1, 1))
def view_as_view(T):
    return _write(T, ar(T, 2, 3), lambda b: b.view_as(T.zeros(6)), 4)
def diagonal_view(T):
    return _write(T, ar(T, 3, 3), lambda b: b.diagonal(), 1)
def diagonal_offset_view(T):
    return _write(T, ar(T, 3, 4), lambda b: T.diagonal(b, offset=1), 0)
def select_view(T):
    return _write(T, ar(T, 3, 4), lambda b: b.select(0, 1), 2)
def unbind_view(T):
    b = ar(T, 2, 3)
    u = b.unbind(1)
    u[2][0] = -5.0
    return b, [x._is_view() for x in u], u[0]._base is b
def expand_view(T):
    b = ar(T, 3, 1)
    e = b.expand(3, 4)
    b[1, 0] = -1.0
    return e._is_view(), e._base is b, e, e.stride(), e.is_contiguous()
def expand_as_view(T):
    b = ar(T, 1, 3)
    e = b.expand_as(T.zeros(2, 3))
    b[0, 2] = 9.0
    return e._is_view(), e
def narrow_view(T):
    return _write(T, ar(T, 4, 3), lambda b: b.narrow(0, 1, 2), (0, 0))
def narrow_tensor_start(T):
    b = ar(T, 5)
    return b.narrow(0, T.tensor(2), 2)
def permute_view(T):
    return _write(T, ar(T, 2, 3, 4), lambda b: b.permute(2, 0, 1), (3, 1, 2))
def transpose_view(T):
    return _write(T, ar(T, 2, 3), lambda b: b.transpose(0, 1), (2, 0))
def transpose_inplace_view(T):
    b = ar(T, 2, 3)
    v = b.view(6).view(2, 3)
    v.t_()
    v[0, 1] = -1.0
    return b, v.shape, v.stride(), v._is_view()
def t_view(T):
    return _write(T, ar(T, 2, 3), lambda b: b.t(), (1, 0))
def T_view(T):
    return _write(T, ar(T, 2, 3, 4), lambda b: b.permute(2, 1, 0), (0, 0, 1))
def mT_view(T):
    return _write(T, ar(T, 2, 3, 4), lambda b: b.mT, (1, 3, 2))
def squeeze_view(T):
    return _write(T, ar(T, 1, 3, 1), lambda b: b.squeeze(), 1)
def squeeze_dim_view(T):
    return _write(T, ar(T, 3, 1), lambda b: b.squeeze(1), 0)
def unsqueeze_view(T):
    return _write(T, ar(T, 3), lambda b: b.unsqueeze(0), (0, 2))
def as_strided_view(T):
    return _write(T, ar(T, 4, 4), lambda b: b.as_strided((2, 2), (4, 1), 5), (1, 1))
def unfold_view(T):
    return _write(T, ar(T, 7), lambda b: b.unfold(0, 3, 2), (1, 0))
def unflatten_view(T):
    return _write(T, ar(T, 2, 6), lambda b: b.unflatten(1, (2, 3)), (1, 1, 2))
def movedim_view(T):
    return _write(T, ar(T, 2, 3, 4), lambda b: b.movedim(0, 2), (1, 2, 0))
def swapdims_view(T):
    return _write(T, ar(T, 2, 3), lambda b: T.swapdims(b, 0, 1), (0, 1))
def chunk_view(T):
    b = ar(T, 6, 2)
    cs = b.chunk(3)
    cs[1][0, 0] = -7.0
    return b, [c._is_view() for c in cs], [c._base is b for c in cs]
def split_view(T):
    b = ar(T, 5, 2)
    ss = b.split(2)
    ss[2][0, 1] = -7.0
    return b, [s.shape for s in ss], [s._is_view() for s in ss]
def split_with_sizes_view(T):
    b = ar(T, 6)
    ss = b.split_with_sizes([1, 2, 3])
    ss[1][1] = -2.0
    return b, [s._is_view() for s in ss]
def basic_indexing_slice_view(T):
    return _write(T, ar(T, 4, 4), lambda b: b[1:3, ::2], (0, 1))
def basic_indexing_ellipsis_view(T):
    return _write(T, ar(T, 2, 3), lambda b: b[..., None], (1, 2, 0))
def advanced_indexing_nonview(T):
    b = ar(T, 4, 4)
    v = b[[0, 2]]
    v[0, 0] = -1.0
    return b, v._is_view(), v
def bool_indexing_nonview(T):
    b = ar(T, 4)
    v = b[b > 1]
    v[0] = -1.0
    return b, v._is_view()
def real_of_real_is_self(T):
    b = ar(T, 3)
    return b.real is b or b.real._base is None or True, b.real
def view_base_chain(T):
    a = ar(T, 2, 3)
    v1 = a.view(6)
    v2 = v1.view(3, 2)
    v3 = v2.t()
    return v2._base is a, v3._base is a, a._base is None, a._is_view(), v3._is_view()


# ---- contiguous / reshape / flatten / ravel: view when the strides allow ----------------------
def contiguous_self(T):
    a = ar(T, 2, 3)
    return a.contiguous() is a, a.t().contiguous() is a.t(), a.t().contiguous().is_contiguous()
def contiguous_nonview(T):
    a = ar(T, 2, 3)
    c = a.t().contiguous()
    c[0, 0] = -1.0
    return a, c._is_view()
def reshape_view(T):
    return _write(T, ar(T, 2, 3), lambda b: b.reshape(3, 2), (2, 1))
def reshape_nonview(T):
    a = ar(T, 2, 3)
    r = a.t().reshape(6)
    r[0] = -1.0
    return a, r._is_view(), r
def reshape_as_view(T):
    a = ar(T, 2, 3)
    r = a.reshape_as(T.zeros(6))
    return r._is_view(), r._base is a
def flatten_view(T):
    return _write(T, ar(T, 2, 3, 4), lambda b: b.flatten(1), (1, 5))
def flatten_nonview(T):
    a = ar(T, 2, 3)
    f = a.t().flatten()
    f[1] = -1.0
    return a, f._is_view(), f
def flatten_zero_dim(T):
    a = T.tensor(3.0)
    f = a.flatten()
    return f.shape, f._is_view(), f._base is a, a.flatten(0, 0).shape
def flatten_same_dims_self(T):
    a = ar(T, 2, 3)
    return a.flatten(1, 1) is a, a.flatten(1, 1).shape
def ravel(T):
    a = ar(T, 2, 3)
    r = a.ravel()
    r[0] = -3.0
    n = a.t().ravel()
    return a, r._is_view(), n._is_view(), n
def view_noncontiguous_error(T):
    return ar(T, 2, 3).t().view(6)
def view_size_mismatch_error(T):
    return ar(T, 2, 3).view(4)
def view_two_minus_one_error(T):
    return ar(T, 2, 3).view(-1, -1)
def view_compatible_noncontig(T):
    a = ar(T, 4, 6)[:, ::2]
    return a.view(4, 3, 1).shape, a.view(2, 2, 3).stride()


# ---- complex / real / dtype views -------------------------------------------------------------
def view_as_complex_roundtrip(T):
    a = ar(T, 3, 2)
    c = T.view_as_complex(a)
    c[1] = 5 + 6j
    r = T.view_as_real(c)
    return a, c, c._is_view(), r._is_view(), r.shape, c.dtype
def view_as_complex_bad_last_dim(T):
    return T.view_as_complex(ar(T, 3, 3))
def view_as_complex_bad_stride(T):
    return T.view_as_complex(ar(T, 2, 3).t())
def view_as_complex_zero_dim_error(T):
    return T.view_as_complex(T.tensor(1.0))
def view_as_complex_float64(T):
    c = T.view_as_complex(ar(T, 2, 2, dtype=T.float64))
    return c.dtype, c
def view_as_complex_int_error(T):
    return T.view_as_complex(T.zeros(3, 2, dtype=T.int64))
def view_as_real_mutation(T):
    c = T.tensor([1 + 2j, 3 - 4j])
    r = T.view_as_real(c)
    r[0, 1] = 10.0
    c[1] = 0.5j
    return c, r, r.stride()
def view_as_real_real_error(T):
    return T.view_as_real(ar(T, 3))
def real_imag_views(T):
    c = T.tensor([1 + 2j, 3 - 4j])
    re, im = c.real, c.imag
    re[0] = 7.0
    im[1] = 8.0
    return c, re._is_view(), im._is_view(), re.dtype, im.stride()
def imag_of_real_error(T):
    return ar(T, 3).imag
def view_dtype_same_size(T):
    a = T.tensor([1.0, -2.0, 0.5])
    i = a.view(T.int32)
    i[0] = 0
    return a, i, i._is_view()
def view_dtype_smaller(T):
    a = T.tensor([[1.0, 2.0]], dtype=T.float32)
    v = a.view(T.int16)
    return v.shape, v.dtype, a.view(T.uint8).shape
def view_dtype_larger(T):
    a = T.zeros(2, 4, dtype=T.int16)
    return a.view(T.float32).shape, a.view(T.int64).shape
def view_dtype_larger_bad_size(T):
    return T.zeros(2, 3, dtype=T.int16).view(T.float32)
def view_dtype_smaller_noncontig_error(T):
    return T.zeros(4, 2).t().view(T.int16)
def view_dtype_bool(T):
    a = T.tensor([0, 1, 2], dtype=T.uint8)
    return a.view(T.bool).dtype, a.view(T.int8)
def conj_view(T):
    c = T.tensor([1 + 2j, 3 - 4j])
    k = c.conj()
    return k.is_conj(), c.is_conj(), k, k.resolve_conj().is_conj(), k.conj().is_conj(), T.is_conj(k)
def conj_real_is_self(T):
    a = ar(T, 3)
    return a.conj() is a, a.conj().is_conj()
def conj_physical(T):
    c = T.tensor([1 + 2j])
    return T.conj_physical(c), T.conj_physical(c).is_conj(), c.conj().conj_physical().is_conj()
def H_mH(T):
    c = T.tensor([[1 + 2j, 3 - 4j, 1j]])
    return c.H, c.mH, c.adjoint(), c.H.is_conj()


# ---- transposes ------------------------------------------------------------------------------
def T_property(T):
    a = ar(T, 2, 3)
    return a.T, ar(T, 3).T, T.tensor(2.0).T
def T_3d_deprecated_reverse(T):
    return ar(T, 2, 3, 4).T
def mT_1d_error(T):
    return ar(T, 3).mT
def mH_1d_error(T):
    return ar(T, 3).mH
def H_3d_error(T):
    return ar(T, 2, 3, 4).H
def mT_values(T):
    a = ar(T, 2, 3, 4)
    return a.mT, a.mH, a.mT.stride()
def transpose_same_dim(T):
    a = ar(T, 2, 3)
    return a.transpose(1, 1), a.transpose(-1, 1), a.transpose(0, -1)
def transpose_bad_dim(T):
    return ar(T, 2, 3).transpose(0, 2)
def t_3d_error(T):
    return ar(T, 2, 3, 4).t()
def t_0d_1d(T):
    return T.tensor(1.0).t(), ar(T, 3).t()


# ---- splits --------------------------------------------------------------------------------
def tensor_split_sections(T):
    a = ar(T, 7)
    return [x for x in T.tensor_split(a, 3)], [x.shape for x in a.tensor_split(10)]
def tensor_split_indices(T):
    a = ar(T, 3, 7)
    return [x.shape for x in T.tensor_split(a, [1, 4, 9], dim=1)], [x.shape for x in a.tensor_split((2, 1))]
def tensor_split_tensor_arg(T):
    a = ar(T, 8)
    return [x.shape for x in T.tensor_split(a, T.tensor(3))], [x.shape for x in T.tensor_split(a, T.tensor([1, 5]))]
def tensor_split_zero_sections_error(T):
    return T.tensor_split(ar(T, 4), 0)
def tensor_split_float_tensor_error(T):
    return T.tensor_split(ar(T, 4), T.tensor([1.0]))
def tensor_split_2d_tensor_error(T):
    return T.tensor_split(ar(T, 4), T.tensor([[1]]))
def tensor_split_0d_input_error(T):
    return T.tensor_split(T.tensor(1.0), 2)
def hsplit_vsplit_dsplit(T):
    a = ar(T, 4, 6, 2)
    return ([x.shape for x in T.hsplit(a, 3)], [x.shape for x in T.vsplit(a, [1, 3])], [x.shape for x in T.dsplit(a, 2)],
            [x.shape for x in T.hsplit(ar(T, 6), 2)])
def hsplit_uneven_error(T):
    return T.hsplit(ar(T, 4, 5), 2)
def vsplit_1d_error(T):
    return T.vsplit(ar(T, 4), 2)
def dsplit_2d_error(T):
    return T.dsplit(ar(T, 4, 4), 2)
def hsplit_0d_error(T):
    return T.hsplit(T.tensor(1.0), 1)
def split_views_share(T):
    a = ar(T, 6)
    p = T.tensor_split(a, 2)
    p[1][0] = -1.0
    return a, [x._is_view() for x in p]


# ---- unfold / expand / broadcast / as_strided -------------------------------------------------
def unfold_shapes(T):
    a = ar(T, 2, 7)
    u = a.unfold(1, 3, 2)
    return u, u.stride(), a.unfold(0, 2, 1).shape, T.tensor(5.0).unfold(0, 1, 1)
def unfold_size_too_big_error(T):
    return ar(T, 3).unfold(0, 4, 1)
def unfold_step_zero_error(T):
    return ar(T, 3).unfold(0, 2, 0)
def unfold_backward(T):
    a = ar(T, 6).requires_grad_()
    a.unfold(0, 3, 2).sum().backward()
    return a.grad
def expand_minus_one_and_new_dims(T):
    a = ar(T, 3, 1)
    return a.expand(2, -1, 4), a.expand(2, 3, 4).stride(), a.expand(T.Size([3, 2]))
def expand_bad_size_error(T):
    return ar(T, 3, 2).expand(3, 4)
def expand_too_few_dims_error(T):
    return ar(T, 2, 3).expand(3)
def expand_minus_one_new_dim_error(T):
    return ar(T, 3).expand(-1, 3)
def expand_writes_error(T):
    e = ar(T, 1).expand(3)
    e.add_(1)
    return e
def broadcast_to_view(T):
    a = ar(T, 3)
    b = T.broadcast_to(a, (2, 3))
    a[0] = -1.0
    return b, b._is_view(), b.stride()
def broadcast_to_error(T):
    return T.broadcast_to(ar(T, 3), (2, 4))
def broadcast_shapes(T):
    return T.broadcast_shapes((2, 1), (3,), (1, 1, 1)), T.broadcast_shapes(4, (1,)), T.broadcast_shapes()
def broadcast_shapes_error(T):
    return T.broadcast_shapes((2, 3), (4,))
def broadcast_tensors(T):
    x, y = T.broadcast_tensors(ar(T, 3, 1), ar(T, 4))
    return x, y, x._is_view(), y.stride()
def as_strided_overlap(T):
    a = ar(T, 6)
    s = T.as_strided(a, (3, 3), (1, 1))
    return s, s.stride(), s.storage_offset()
def as_strided_offset(T):
    a = ar(T, 3, 4)
    v = a[1:]
    return v.storage_offset(), v.as_strided((2,), (1,)), v.as_strided((2,), (1,), 0)
def as_strided_backward_overlap(T):
    a = ar(T, 5).requires_grad_()
    T.as_strided(a, (3, 2), (1, 1)).sum().backward()
    return a.grad


# ---- atleast / view_copy ----------------------------------------------------------------------
def atleast(T):
    s = T.tensor(1.0)
    v = ar(T, 3)
    m = ar(T, 2, 2)
    return (T.atleast_1d(s).shape, T.atleast_2d(s).shape, T.atleast_3d(s).shape, T.atleast_2d(v).shape,
            T.atleast_3d(v).shape, T.atleast_3d(m).shape, [x.shape for x in T.atleast_1d(s, v)],
            [x.shape for x in T.atleast_2d([s, m])], T.atleast_1d(v) is v)
def view_copy_ops(T):
    a = ar(T, 2, 3)
    outs = [T.view_copy(a, (3, 2)), T.t_copy(a), T.diagonal_copy(a), T.expand_copy(ar(T, 1), (3,)),
            T.permute_copy(a, (1, 0)), T.select_copy(a, 0, 1), T.unsqueeze_copy(a, 0), T.transpose_copy(a, 0, 1)]
    return [o._is_view() for o in outs], outs


CASES = {k: v for k, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
         and not k.startswith("_") and k not in ("ar", "same_outcome", "outcome_params")}


@pytest.mark.parametrize("fn", outcome_params(CASES))
def test_view_ops(fn):
    same_outcome(fn)
