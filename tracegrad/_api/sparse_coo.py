"""Sparse COO tensors: ``torch.sparse_coo_tensor``, ``Tensor.to_sparse`` and the sparse tensor's
own methods (a minimal subset of torch's; everything else raises torch's NotImplementedError).

Representation: ``SparseCooTensor`` is a Tensor subclass holding two dense tensors, ``indices``
(int64 ``(sparse_dim, nnz)``) and ``values`` (``(nnz, *dense_shape)``), the ``size`` and a
coalesced flag. It has no dense value: reading ``_value`` raises ``SparseOperand``
(``_tensor/layout.py``), so a dense op given a sparse tensor fails with torch's
NotImplementedError naming the op, and the dense per-op path carries no check for it.

Autograd runs through ``values``: ops on a sparse tensor are dense ops on its values (``s * 2``
is ``values * 2``; ``to_dense`` and ``mm`` are ops of ``_ops/sparse.py`` taking the values), so
the dense graph machinery does the rest. ``requires_grad``/``grad_fn``/``is_leaf`` are the
values'. A leaf's ``.grad`` is read from the values' gradient: torch's gradient of a sparse leaf
is the dense gradient at its (coalesced) positions, which is the values' gradient at the first
entry of each position.

Index-dependent shapes (coalesce's nnz, to_sparse's nonzeros, invariant checks) are computed on
the host, so those ops work in eager mode only; a compiled function given a sparse tensor gets
its indices and values as program arguments (``_lowering/call_tree.SparseArg``), so ``to_dense``
and ``mm`` of it compile.

Differs from torch: ``type(s)`` is ``SparseCooTensor`` (a subclass of ``tracegrad.Tensor``;
torch's is ``torch.Tensor``); ``s.grad`` is a new tensor on each read and cannot be assigned but
to None; ``s + t`` walks both entry lists as torch's CPU kernel does for contiguous values (torch
concatenates instead when a values tensor is non-contiguous, e.g. an expanded gradient, so nnz
may differ there; the tensors are equal) and records ``CoalesceBackward0`` (torch
``AddBackward0``); index bounds are always checked (torch: only with ``check_invariants=True``);
no pickling/``tracegrad.save``; no sparse parameters (``nn.Parameter`` of one raises).
Sparse + sparse of float16 or bool and sparse * sparse of bool compute here; torch 2.13's CPU
kernels refuse them (NotImplementedError '"cadd_sparse" / "mul_out_sparse" not implemented for
'Half'/'Bool'', depending on the inputs' coalesced state); sparse * sparse is always coalesced
here (torch leaves the product of uncoalesced inputs uncoalesced; the tensors are equal).
"""
from __future__ import annotations

import numpy as np

from .._ops import dtypes as _dt
from .._ops.registry import OPS
from .._tensor import factories as _factories
from .._tensor.factories import check_pin_memory, tensor as _tensor
from .._tensor.layout import SparseOperand, sparse_coo, strided
from .._tensor.tensor import Size, Tensor, _JaxTracer, _disabled_torch_function_impl
from .._tensor.tensor_str import _shows_dtype, autograd_suffixes, format_array, join_suffixes, printable
from ..autograd._dispatch import apply_op
from ._registry import function, method, prop
from .argcheck import require_bool
from .promotion import _SCALAR_NAME, check_sub_bool
from .shape import _wrap_dim, cat


def host_values(t) -> np.ndarray:
    """``t``'s values on the host: sparse structure (nnz, positions) is decided there."""
    check_eager(t)
    return np.asarray(t.detach().numpy())


def check_eager(t, instead="nn.Embedding(sparse=False)"):
    """RuntimeError when ``t`` is traced: sparse COO tensors are made and used eagerly only."""
    if isinstance(t._value, _JaxTracer):
        raise RuntimeError("tracegrad: sparse COO tensors work in eager mode only; their structure depends on "
                           "index values, which a compiled or traced function does not have. Move the sparse "
                           f"step out of tracegrad.compile (or use {instead}).")


def make_sparse(indices, values, size, coalesced=False):
    """A ``SparseCooTensor`` over ``indices`` (int64 ``(sparse_dim, nnz)``) and ``values``
    (``(nnz, *dense)``) with ``size``; no checks (callers have made them consistent)."""
    s = SparseCooTensor._make(None)
    s._sp_indices, s._sp_values, s._sp_size, s._sp_coalesced = indices, values, Size(size), bool(coalesced)
    return s


class SparseCooTensor(Tensor):
    """A sparse COO tensor. Mirrors a torch tensor with ``layout == torch.sparse_coo``; made by
    ``tracegrad.sparse_coo_tensor`` or ``Tensor.to_sparse``. See the module docstring for what
    it supports and how autograd flows."""

    # the sparse functions build their own results: no __torch_function__ conversion
    __torch_function__ = _disabled_torch_function_impl
    is_sparse = True
    is_sparse_csr = False
    layout = sparse_coo

    # ----- no dense value -----------------------------------------------------------------
    @property
    def _value(self):
        raise SparseOperand(self)

    # ----- metadata -------------------------------------------------------------------------
    @property
    def shape(self):
        return self._sp_size

    def size(self, dim=None):
        if dim is None:
            return self._sp_size
        return self._sp_size[dim]

    @property
    def dtype(self):
        return self._sp_values.dtype

    @property
    def device(self):
        return self._sp_values.device

    @property
    def ndim(self):
        return len(self._sp_size)

    def dim(self):
        return len(self._sp_size)

    def numel(self):
        return int(np.prod(self._sp_size, dtype=np.int64))

    def __len__(self):
        if not self._sp_size:
            raise TypeError("len() of a 0-d tensor")
        return self._sp_size[0]

    def numpy(self, *, force=False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def sparse_dim(self):
        """Mirrors ``torch.Tensor.sparse_dim``: the number of indexed (sparse) dims."""
        return self._sp_indices.shape[0]

    def dense_dim(self):
        """Mirrors ``torch.Tensor.dense_dim``: the trailing dims each value holds."""
        return self._sp_values.ndim - 1

    def _nnz(self):
        """Mirrors ``torch.Tensor._nnz``: the number of stored entries (duplicates counted)."""
        return self._sp_values.shape[0]

    def is_coalesced(self):
        """Mirrors ``torch.Tensor.is_coalesced``: True after ``coalesce()`` (or for tensors made
        coalesced: ``to_sparse``, ``is_coalesced=True``)."""
        return self._sp_coalesced

    def _indices(self):
        """Mirrors ``torch.Tensor._indices``: the int64 ``(sparse_dim, nnz)`` indices, as stored."""
        return self._sp_indices

    def _values(self):
        """Mirrors ``torch.Tensor._values``: the ``(nnz, *dense)`` values, as stored (an alias)."""
        return self._sp_values

    def indices(self):
        """Mirrors ``torch.Tensor.indices``; RuntimeError on an uncoalesced tensor, as torch."""
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._sp_indices

    def values(self):
        """Mirrors ``torch.Tensor.values``; RuntimeError on an uncoalesced tensor, as torch."""
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._sp_values

    # ----- autograd: the values' ---------------------------------------------------------------
    @property
    def requires_grad(self):
        return self._sp_values.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._set_requires_grad(value)

    def requires_grad_(self, requires_grad=True):
        self._sp_values.requires_grad_(requires_grad)
        return self

    def _set_requires_grad(self, requires_grad):
        self._sp_values._set_requires_grad(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._sp_values.grad_fn

    @property
    def is_leaf(self):
        return self._sp_values.grad_fn is None

    @property
    def grad(self):
        """A leaf's gradient: a sparse tensor at its coalesced positions holding the dense
        gradient there (torch's), read from the values' gradient."""
        g = self._sp_values.grad
        return None if g is None else self._grad_from_values(g)

    def _grad_from_values(self, g):
        """The gradient with respect to this tensor given ``g``, its values' gradient: sparse,
        at the coalesced positions (the autograd engine calls it for a sparse ``grad`` input)."""
        idx, first, _ = _unique_positions(self)
        return make_sparse(_tensor(idx, dtype=_dt.int64), g[_tensor(first, dtype=_dt.int64)], self._sp_size)

    def _values_grad(self, grad):
        """The gradient flowing into the values when this tensor is a backward/grad output with
        gradient ``grad`` (dense or sparse, of this tensor's size): ``grad`` at each entry's
        position, so duplicated positions each get it (the engine calls it)."""
        dense = grad.to_dense() if isinstance(grad, SparseCooTensor) else grad
        return dense[tuple(self._sp_indices)]

    @grad.setter
    def grad(self, value):
        if value is not None:
            raise RuntimeError("tracegrad: assigning .grad of a sparse tensor is not supported; set it to None")
        self._sp_values.grad = None

    def detach(self):
        return make_sparse(self._sp_indices, self._sp_values.detach(), self._sp_size, self._sp_coalesced)

    def clone(self, *, memory_format=None):
        return make_sparse(self._sp_indices.clone(), self._sp_values.clone(), self._sp_size, self._sp_coalesced)

    # ----- conversions --------------------------------------------------------------------------
    def to_dense(self, dtype=None, *, masked_grad=None):
        """Mirrors ``torch.Tensor.to_dense``: the dense tensor (duplicates summed); grad_fn
        ``ToDenseBackward0``, differentiable with respect to the values."""
        _check_masked_grad(masked_grad)
        out = apply_op(OPS["sparse_coo_to_dense"], (self._sp_indices, self._sp_values),
                       (("size", tuple(self._sp_size)),))
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, *args, **kwargs):
        return self

    def to_sparse_coo(self):
        """Mirrors ``torch.Tensor.to_sparse_coo``: already sparse COO, ``self``."""
        return self

    def coalesce(self):
        """Mirrors ``torch.Tensor.coalesce``: entries sorted by position, duplicates summed
        (``CoalesceBackward0``); ``self`` when already coalesced."""
        if self._sp_coalesced:
            return self
        idx, _, inverse = _unique_positions(self)
        values = apply_op(OPS["sparse_coo_coalesce"], (self._sp_values, _tensor(inverse, dtype=_dt.int64)),
                          (("n", idx.shape[1]),))
        return make_sparse(_tensor(idx, dtype=_dt.int64), values, self._sp_size, True)

    # ----- arithmetic -----------------------------------------------------------------------
    def add(self, other, *, alpha=1):
        """Mirrors ``torch.add`` of two sparse COO tensors (same size): the entries of both, with
        ``alpha * other``'s values; coalesced when both are. RuntimeError for a dense ``other``
        (torch: use ``dense + sparse``)."""
        if not isinstance(other, SparseCooTensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        if other._sp_size != self._sp_size:
            raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but {list(self._sp_size)} != "
                               f"{list(other._sp_size)}")
        if other.sparse_dim() != self.sparse_dim():
            raise RuntimeError("add: expected 'self' and 'other' to have the same number of sparse dims")
        dt = _dt.promote_types(self.dtype, other.dtype)
        # scale after the cast: a uint8 other of a sub is negated in the result dtype (int8 - uint8)
        theirs = other._sp_values.to(dt) if alpha == 1 else other._sp_values.to(dt) * alpha
        idx, slots = _merge_walk(self, other)
        values = apply_op(OPS["sparse_coo_coalesce"], (cat([self._sp_values.to(dt), theirs.to(dt)], 0),
                                                      _tensor(slots, dtype=_dt.int64)), (("n", idx.shape[1]),))
        return make_sparse(_tensor(idx, dtype=_dt.int64), values, self._sp_size,
                           self._sp_coalesced and other._sp_coalesced)

    def sub(self, other, *, alpha=1):
        check_sub_bool(self, other)
        return self.add(other, alpha=-alpha)

    def add_(self, other, *, alpha=1):
        """In-place ``add``: self takes the combined entries (torch's in-place sparse add),
        computed in the promoted dtype and cast back to self's; RuntimeError when that cast
        crosses a category (float into an integer self)."""
        out = self.add(other, alpha=alpha)
        self._sp_indices, self._sp_values, self._sp_coalesced = \
            out._sp_indices, _cast_back(out._sp_values, self.dtype, "add"), out._sp_coalesced
        return self

    def sub_(self, other, *, alpha=1):
        check_sub_bool(self, other)
        return self.add_(other, alpha=-alpha)

    def __add__(self, other):
        return self.add(other)

    def __radd__(self, other):
        # dense + sparse: a dense result, as torch (reached first: the subclass's reflected op)
        if isinstance(other, Tensor) and not isinstance(other, SparseCooTensor):
            return self._sparse_operand(None, "add", other, self)
        return self.add(other)

    def __sub__(self, other):
        return self.sub(other)

    def __rsub__(self, other):
        if isinstance(other, Tensor) and not isinstance(other, SparseCooTensor):
            return self._sparse_operand(None, "sub", other, self)
        raise RuntimeError("sub(scalar, sparse) is not supported")

    def _scale(self, other, api):
        if isinstance(other, Tensor) and (other.is_sparse or other.ndim != 0):
            raise RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor (got shape "
                               f"{list(other.shape)} for divisor)")
        return other

    def mul(self, other):
        """Mirrors ``torch.mul`` with a sparse ``self``: by a Python number or 0-d tensor (same
        indices, values scaled); by a sparse tensor of the same size (both coalesced, the product
        at the positions they share); by a dense tensor broadcastable to self's size (same indices, values times the
        dense entries at them). Sparse result in the promoted dtype."""
        if isinstance(other, SparseCooTensor):
            return _mul_sparse(self, other)
        if isinstance(other, Tensor) and other.ndim != 0:
            return _mul_dense(self, other)
        return make_sparse(self._sp_indices, self._sp_values * other, self._sp_size, self._sp_coalesced)

    def mul_(self, other):
        """In-place ``mul``. By a Python number or 0-d tensor, as torch, self takes a new values
        tensor (one taken earlier with ``_values()`` keeps the old numbers; poincare-embeddings'
        RiemannianSGD scales a sparse gradient built on a values tensor it still holds) and is
        marked uncoalesced; by a dense tensor it keeps its indices and coalesced flag; a result
        dtype other than self's is a RuntimeError. By a sparse tensor, self takes the product,
        cast back to its dtype (RuntimeError across a category)."""
        if isinstance(other, SparseCooTensor):
            out = _mul_sparse(self, other)
            self._sp_indices, self._sp_values, self._sp_coalesced = \
                out._sp_indices, _cast_back(out._sp_values, self.dtype, "mul"), out._sp_coalesced
            return self
        coalesced = False
        if isinstance(other, Tensor) and other.ndim != 0:
            values, coalesced = _mul_dense(self, other)._sp_values, self._sp_coalesced
        else:
            values = self._sp_values * other
        if values.dtype is not self.dtype:
            raise RuntimeError(f"dtype of values ({_SCALAR_NAME[values.dtype.name]}) must match dtype of sparse "
                               f"tensor ({_SCALAR_NAME[self.dtype.name]})")
        self._sp_values, self._sp_coalesced = values, coalesced
        return self

    def div(self, other):
        return make_sparse(self._sp_indices, self._sp_values / self._scale(other, "div"), self._sp_size,
                           self._sp_coalesced)

    def div_(self, other):
        """In-place ``div`` by a Python number or 0-d tensor: unlike ``mul_``, torch divides the
        values tensor itself in place (an alias taken with ``_values()`` sees it) and keeps the
        coalesced flag."""
        self._sp_values.div_(self._scale(other, "div_"))
        return self

    def neg_(self):
        """In-place ``neg``: the values tensor negated in place, as torch."""
        self._sp_values.neg_()
        return self

    __mul__ = __rmul__ = mul
    __truediv__ = div

    def t(self):
        """Mirrors ``torch.Tensor.t`` of a sparse COO tensor: with 2 sparse dims the index rows
        swapped (not coalesced, as torch), with fewer the same entries; the values are shared, so
        gradients reach them. RuntimeError for more than 2 sparse dims or any dense dim, as
        torch."""
        sd, dd = self.sparse_dim(), self.dense_dim()
        if sd > 2 or dd > 0:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got {sd} sparse "
                               f"and {dd} dense dimensions (call .to_dense().t() for it)")
        if sd < 2:
            return make_sparse(self._sp_indices, self._sp_values, self._sp_size, self._sp_coalesced)
        return make_sparse(self._sp_indices.flip(0), self._sp_values, tuple(reversed(self._sp_size)), False)

    def transpose(self, dim0, dim1):
        """Mirrors ``torch.Tensor.transpose`` of a sparse COO tensor: two sparse dims swapped (their
        index rows exchanged; not coalesced unless ``dim0 == dim1``), values shared. IndexError
        for a dim out of range; RuntimeError for a dense dim, as torch."""
        n, sd = self.ndim, self.sparse_dim()
        d0, d1 = _wrap_dim(dim0, n), _wrap_dim(dim1, n)
        if d0 >= sd or d1 >= sd:
            raise RuntimeError(f"sparse transpose: transposed dimensions must be sparse Got sparse_dim: {sd}, "
                               f"d0: {d0}, d1: {d1} (call .to_dense() to transpose dense dims)")
        if d0 == d1:
            return make_sparse(self._sp_indices, self._sp_values, self._sp_size, self._sp_coalesced)
        order = list(range(sd))
        order[d0], order[d1] = d1, d0
        size = list(self._sp_size)
        size[d0], size[d1] = size[d1], size[d0]
        return make_sparse(self._sp_indices[order], self._sp_values, tuple(size), False)

    swapdims = swapaxes = transpose

    def neg(self):
        return make_sparse(self._sp_indices, -self._sp_values, self._sp_size, self._sp_coalesced)

    __neg__ = neg

    def conj(self):
        """Mirrors ``torch.Tensor.conj`` / ``conj_physical`` of a sparse COO tensor. Sparse layouts
        have no conjugate bit in torch, so a complex tensor's values are conjugated into a new
        sparse tensor (``is_conj()`` False; autograd ``ConjPhysicalBackward0`` through the values,
        as torch); a real tensor is returned itself."""
        if not self.dtype.is_complex:
            return self
        return make_sparse(self._sp_indices, self._sp_values.conj_physical(), self._sp_size, self._sp_coalesced)

    conj_physical = conj

    # ----- reductions and products -------------------------------------------------------------
    def mm(self, mat2):
        """Mirrors ``torch.mm(sparse, dense)``: a dense ``(n, p)`` result, grad_fn ``MmBackward0``
        (with respect to the values and ``mat2``)."""
        return sparse_mm(self, mat2, "sparse_coo_mm")

    matmul = __matmul__ = mm

    def sum(self, dim=None, keepdim=False, *, dtype=None):
        """Mirrors ``torch.sum`` / ``torch.sparse.sum`` of a sparse tensor: all dims give a dense
        0-d tensor (``SumBackward0``); some dims give a coalesced sparse tensor, or a dense one
        when every sparse dim is reduced. NotImplementedError for ``keepdim=True``."""
        return sparse_sum(self, dim, keepdim=keepdim, dtype=dtype)

    # ----- where a dense function meets a sparse operand (NOTE in _tensor/layout.py) ----------
    def _sparse_operand(self, exc, api, a, b, **kwargs):
        """``api(a, b)`` raised ``exc`` reading this tensor's dense value: run the sparse method
        when this tensor is ``a`` (``torch.add(sparse, ...)``, ``torch.mm(sparse, dense)``); a dense
        ``a`` plus, minus or matmul this tensor gives a dense result, as torch; anything else
        re-raises."""
        if a is self and api in _SPARSE_METHODS:
            return getattr(self, api)(b, **kwargs)
        if b is self and api in ("div", "div_"):
            self._scale(self, api)   # torch's RuntimeError: a sparse divisor
        if b is self and api in ("add", "sub", "add_", "sub_", "mul", "mul_") and not a.is_sparse:
            # dense with sparse: the values are cast to the result dtype first, so duplicate
            # entries add up there (two True entries of a bool tensor count 2 in a uint8 sum)
            dt = _dt.promote_types(a.dtype, self.dtype)
            if api.endswith("_") and not _dt.can_cast(dt, a.dtype):
                raise RuntimeError(f"Can't convert result type {_SCALAR_NAME[dt.name]} to output "
                                   f"{_SCALAR_NAME[a.dtype.name]} in add operation")
            if api.startswith("mul"):   # dense * sparse is sparse (dense.mul_(sparse) stays dense)
                out = _mul_dense(self, a)
                return a.copy_(out.to_dense()) if api == "mul_" else out
            dense = make_sparse(self._sp_indices, self._sp_values.to(dt), self._sp_size, self._sp_coalesced)
            return getattr(a, api)(dense.to_dense(), **kwargs)
        if b is self and api == "matmul" and not a.is_sparse:   # dense @ sparse: a dense product
            return a.matmul(self.to_dense())
        raise exc

    @staticmethod
    def _accumulate_grad(old, new):
        """AccumulateGrad's sum with a sparse side (torch's rules): a first sparse gradient is
        copied, sparse into sparse adds in place (torch's merge walk), sparse into dense adds in
        place, dense into sparse gives the dense sum."""
        if old is None:
            return new.detach().clone()
        if isinstance(new, SparseCooTensor):
            return old.add_(new.detach())
        return new.detach() + old.to_dense()

    def zero_(self):
        """Mirrors ``torch.Tensor.zero_`` on a sparse tensor: no entries left."""
        self._sp_indices = self._sp_indices[:, :0]
        self._sp_values = self._sp_values[:0].detach()
        self._sp_coalesced = True
        return self

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            values = self._sp_values.detach().clone()._set_requires_grad(self._sp_values.requires_grad)
            memo[id(self)] = make_sparse(self._sp_indices.clone(), values, self._sp_size, self._sp_coalesced)
        return memo[id(self)]

    def __reduce_ex__(self, proto):
        raise NotImplementedError("tracegrad: pickling or saving a sparse COO tensor is not supported; save "
                                  "._indices(), ._values() and .shape instead")

    def __repr__(self):
        return sparse_repr(self)

    __str__ = __repr__


_SPARSE_METHODS = ("add", "sub", "add_", "sub_", "mm", "matmul", "mul", "mul_", "div", "div_", "sum")


def _cast_back(values, dtype, api):
    """An in-place sparse op's result ``values`` cast to self's ``dtype``: torch allows a cast
    within a category (int16 into uint8) and refuses one across (float into an integer)."""
    if values.dtype is dtype:
        return values
    if not _dt.can_cast(values.dtype, dtype):
        raise RuntimeError(f"Can't convert result type {_SCALAR_NAME[values.dtype.name]} to output "
                           f"{_SCALAR_NAME[dtype.name]} in {api} operation")
    return values.to(dtype)


def _mul_sparse(a, b):
    """``a * b`` of two sparse COO tensors of one size: both coalesced (in the promoted dtype),
    the products at the positions both hold; a coalesced result."""
    if a._sp_size != b._sp_size:
        raise RuntimeError(f"mul(sparse, sparse): expected sizes to match, but {list(a._sp_size)} != "
                           f"{list(b._sp_size)}")
    dt = _dt.promote_types(a.dtype, b.dtype)
    a = make_sparse(a._sp_indices, a._sp_values.to(dt), a._sp_size, a._sp_coalesced).coalesce()
    b = make_sparse(b._sp_indices, b._sp_values.to(dt), b._sp_size, b._sp_coalesced).coalesce()
    (ia, la), (_, lb) = _linear(a), _linear(b)
    common, pa, pb = np.intersect1d(la, lb, assume_unique=True, return_indices=True)
    pos = _tensor(pa, dtype=_dt.int64)
    values = a._sp_values.index_select(0, pos) * b._sp_values.index_select(0, _tensor(pb, dtype=_dt.int64))
    return make_sparse(_tensor(ia[:, pa], dtype=_dt.int64), values, a._sp_size, True)


def _mul_dense(s, d):
    """``s * d`` of a sparse COO ``s`` and a dense ``d`` broadcastable to its size: ``s``'s
    indices, its values (in the promoted dtype) times ``d``'s entries at them."""
    dt = _dt.promote_types(s.dtype, d.dtype)
    at = d.expand(*s._sp_size)[tuple(s._sp_indices[k] for k in range(s.sparse_dim()))]
    return make_sparse(s._sp_indices, s._sp_values.to(dt) * at.to(dt), s._sp_size, s._sp_coalesced)


def sparse_mm(s, mat2, opname):
    """``s @ mat2`` for a 2-D sparse ``s`` (no dense dims) and a dense 2-D ``mat2``; ``opname``
    picks the recorded node (``MmBackward0`` or ``SparseAddmmBackward0``)."""
    if isinstance(mat2, SparseCooTensor):
        raise NotImplementedError("tracegrad: sparse @ sparse is not supported; convert one operand with .to_dense()")
    if not isinstance(mat2, Tensor):
        raise TypeError(f"mm(): argument 'mat2' must be Tensor, not {type(mat2).__name__}")
    if s.ndim != 2 or s.dense_dim() != 0:
        raise RuntimeError(f"mm: expected a 2-D sparse matrix with no dense dims, got size {list(s.shape)} with "
                           f"{s.dense_dim()} dense dims")
    if mat2.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got {mat2.ndim}D tensor")
    if mat2.shape[0] != s.shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s.shape[1]}, got {mat2.shape[0]}")
    if mat2.dtype is not s.dtype:
        raise RuntimeError(f"expected scalar type {_SCALAR_NAME[s.dtype.name]} but found {_SCALAR_NAME[mat2.dtype.name]}")
    return apply_op(OPS[opname], (s._sp_indices, s._sp_values, mat2), (("rows", s.shape[0]),))


def sparse_sum(s, dim=None, *, keepdim=False, dtype=None):
    """torch.sparse.sum / Tensor.sum of a sparse tensor (see ``SparseCooTensor.sum``)."""
    if keepdim:
        raise NotImplementedError("tracegrad: sum(keepdim=True) of a sparse COO tensor is not supported")
    values = s._sp_values if dtype is None else s._sp_values.to(dtype)
    if dim is None:
        return values.sum()
    nd, sd = s.ndim, s.sparse_dim()
    given = [(d + nd if d < 0 else d) for d in ((dim,) if isinstance(dim, int) else dim)]
    dims = sorted(set(given))
    if any(not 0 <= d < nd for d in dims):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    if len(dims) != len(given):   # as torch's dim list check: a dim named twice is an error, not one sum
        twice = next(d for d in given if given.count(d) > 1)
        raise RuntimeError(f"dim {twice} appears multiple times in the list of dims; name each dim once")
    dense_dims = [d - sd + 1 for d in dims if d >= sd]
    if dense_dims:
        values = values.sum(dense_dims)
    keep = [d for d in range(sd) if d not in dims]
    if not keep:                      # every sparse dim reduced: a dense result
        return values.sum(0)
    size = [s.shape[d] for d in keep] + [s.shape[d] for d in range(sd, nd) if d not in dims]
    ind = s._sp_indices[_tensor(keep, dtype=_dt.int64)]
    return make_sparse(ind, values, size).coalesce()


def _linear(s):
    idx = host_values(s._sp_indices).reshape(s.sparse_dim(), -1)
    dims = tuple(s._sp_size[:idx.shape[0]])
    return idx, (np.ravel_multi_index(tuple(idx), dims) if dims and idx.shape[1] else np.zeros(idx.shape[1], np.int64))


def _merge_walk(a, b):
    """torch's CPU sparse add: one walk over both entry lists in order, taking the smaller
    position first and merging the heads when they are equal (so coalesced inputs give the
    coalesced sum; other inputs merge only the equal heads the walk meets). Returns the result's
    indices and, for each entry of ``a`` then ``b``, its result slot."""
    ia, la = _linear(a)
    ib, lb = _linear(b)
    na, nb = la.shape[0], lb.shape[0]
    slots = np.empty(na + nb, np.int64)
    src = []
    i = j = r = 0
    la_, lb_ = la.tolist(), lb.tolist()
    while i < na or j < nb:
        take_a = j >= nb or (i < na and la_[i] <= lb_[j])
        take_b = i >= na or (j < nb and lb_[j] <= la_[i])
        if take_a:
            slots[i] = r
            src.append(ia[:, i])
            i += 1
        if take_b:
            slots[na + j] = r
            if not take_a:
                src.append(ib[:, j])
            j += 1
        r += 1
    idx = np.stack(src, 1) if src else np.zeros((ia.shape[0], 0), np.int64)
    return idx, slots


def _unique_positions(s):
    """(sorted unique indices ``(sparse_dim, n)``, first entry of each, entry -> unique slot),
    on the host."""
    idx, linear = _linear(s)
    if idx.shape[1] == 0:
        return idx, np.zeros(0, np.int64), np.zeros(0, np.int64)
    _, first, inverse = np.unique(linear, return_index=True, return_inverse=True)
    return idx[:, first], first, inverse.reshape(-1)


def sparse_repr(s, prefix="tensor("):
    """torch's repr of a sparse COO tensor: ``indices=``, ``values=``, then size, nnz, dtype,
    layout and autograd suffixes on a new line."""
    indent = len(prefix)
    parts = []
    for name, t in (("indices=tensor(", s._sp_indices), ("values=tensor(", s._sp_values)):
        arr = printable(t.detach().numpy())
        body = "[]" if arr.size == 0 else format_array(arr, t.dtype, indent + len(name))
        if arr.size == 0:
            body += f", size={tuple(arr.shape)}"
        parts.append(name + body + ")")
    text = prefix + (",\n" + " " * indent).join(parts)
    suffixes = [f"size={tuple(s._sp_size)}", f"nnz={s._nnz()}"]
    if _shows_dtype(s.dtype):
        suffixes.append(f"dtype={s.dtype!r}")
    suffixes += [f"layout={sparse_coo!r}"] + autograd_suffixes(s)
    # torch starts the suffixes on a line of their own for sparse tensors
    return join_suffixes(text + ",\n" + " " * indent + suffixes[0], suffixes[1:], indent)


# ----- construction -------------------------------------------------------------------------------
@function()
def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """Mirrors ``torch.sparse_coo_tensor``: a sparse COO tensor with entries ``values[k]`` at
    ``indices[:, k]``.

    Args: indices: 2-D ``(sparse_dim, nnz)`` integer tensor or nested list (converted to int64);
        values: ``(nnz, *dense_shape)`` tensor, list or number array; size: the full shape (default:
        each sparse dim's largest index + 1, then values' trailing dims); dtype: converts values;
        requires_grad: makes the tensor a leaf that requires grad; is_coalesced: mark as
        coalesced (unchecked, as torch). check_invariants: accepted; bounds are always checked.
    Autograd: built from ``values`` that require grad, the tensor is not a leaf (grad_fn
        ``SparseCooTensorWithDimsAndTensorsBackward0``) and gradients reach ``values``.
    Raises: RuntimeError (torch's messages) for indices that are not 2-D, nnz that differ, a size
        of the wrong length, or an index outside ``size`` (or negative).
    """
    check_pin_memory(pin_memory, device)
    if not isinstance(indices, Tensor):
        indices = _tensor(indices)
    if not isinstance(values, Tensor):
        values = _tensor(values, dtype=dtype)
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if indices.dtype is not _dt.int64:
        indices = indices.to(_dt.int64)
    if dtype is not None and values.dtype is not dtype:
        values = values.to(dtype)
    if device is not None:
        values, indices = values.to(device), indices.to(device)
    sparse_dim, nnz = indices.shape
    if values.ndim == 0 or values.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from "
                           f"values: {values.shape[0] if values.ndim else 0}")
    host = host_values(indices)
    if size is None:
        extent = host.max(1) + 1 if nnz else np.zeros(sparse_dim, np.int64)
        size = tuple(int(m) for m in extent) + tuple(values.shape[1:])
    size = tuple(int(n) for n in size)
    dense_dim = values.ndim - 1
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sparse_dim}, dense_dim = {dense_dim}")
    if tuple(values.shape[1:]) != size[sparse_dim:]:
        raise RuntimeError(f"values has incorrect size, expected {[nnz] + list(size[sparse_dim:])}, got "
                           f"{list(values.shape)}")
    if nnz:
        for d in range(sparse_dim):
            lo, hi = int(host[d].min()), int(host[d].max())
            if lo < 0:
                raise RuntimeError(f"found negative index {lo} for dim {d}")
            if hi >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                                   f"index {hi}")
    if requires_grad:
        values = values.detach()._set_requires_grad(True)
    elif values.requires_grad:
        # torch's tensor is a node over the values it was given
        values = apply_op(OPS["sparse_coo_values"], (values,))
    # torch marks a tensor of at most one entry coalesced (nothing to sum or sort)
    return make_sparse(indices, values, size, bool(is_coalesced) or nnz < 2)


@method()
def to_sparse_coo(self):
    """Mirrors ``torch.Tensor.to_sparse_coo``: ``to_sparse()``, every dim indexed."""
    return to_sparse(self)


_ALL_DIMS = object()   # to_sparse() with no sparse_dim (an explicit None is torch's TypeError)


@method()
def to_sparse(self, sparse_dim=_ALL_DIMS, *, layout=None, blocksize=None, dense_dim=None):
    """Mirrors ``torch.Tensor.to_sparse``: the nonzero entries as a coalesced sparse COO tensor
    (``sparse_dim`` leading dims indexed, default all; a value slice is kept when any of it is
    nonzero). Values are gathered from ``self``, so gradients flow back to it.
    Raises: RuntimeError for ``sparse_dim`` outside ``[0, ndim]``; NotImplementedError for a
    layout other than sparse_coo or a blocksize (CSR/BSR are not provided); TypeError for
    ``sparse_dim=None`` (leave it out for every dim), as torch's parser."""
    if sparse_dim is None:
        raise TypeError("to_sparse() received an invalid combination of arguments - got sparse_dim=None: pass an "
                        "int, or leave it out to index every dim")
    if sparse_dim is _ALL_DIMS:
        sparse_dim = None
    if layout is not None and not isinstance(layout, type(sparse_coo)):   # the parser's TypeError
        raise TypeError(f"to_sparse() received an invalid combination of arguments - got layout of type "
                        f"{type(layout).__name__}; pass layout=tracegrad.sparse_coo (or leave it out)")
    if (layout is not None and layout is not sparse_coo) or blocksize is not None:
        raise NotImplementedError(f"tracegrad: to_sparse(layout={layout!r}) is not supported; only sparse_coo")
    nd = self.ndim
    sd = nd if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= nd:
        raise RuntimeError(f"sparse_dim must be in [0, {nd}], got {sd}")
    if sd == 0 and nd > 0:     # torch's dense_to_sparse check
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in >0 when self.dim()>0 (got sparse_dim=0 "
                           f"for a {nd}-dim tensor); pass a sparse_dim in [1, {nd}]")
    nz = host_values(self) != 0
    if nd == 0:                # a scalar: one entry if it is nonzero (as torch), no index rows
        n = int(nz)
        return make_sparse(_tensor(np.zeros((0, n), np.int64), dtype=_dt.int64), self.unsqueeze(0)[:n], (), True)
    if sd < nd:
        nz = nz.reshape(nz.shape[:sd] + (-1,)).any(-1)
    idx = np.stack(np.nonzero(nz)).reshape(sd, -1).astype(np.int64)
    ind = _tensor(idx, dtype=_dt.int64)
    values = self[tuple(ind[d] for d in range(sd))] if sd else self.unsqueeze(0)
    return make_sparse(ind, values, tuple(self.shape), True)


def _check_masked_grad(masked_grad):
    """torch's parser TypeError for a ``masked_grad`` that is neither None nor a bool (1, a str)."""
    if masked_grad is not None and masked_grad is not True and masked_grad is not False:
        require_bool("to_dense", "masked_grad", masked_grad)


@method()
def to_dense(self, dtype=None, *, masked_grad=None):
    """Mirrors ``torch.Tensor.to_dense`` on a dense tensor: ``self`` (or a ``dtype`` copy);
    TypeError for a ``masked_grad`` that is neither None nor a bool."""
    _check_masked_grad(masked_grad)
    return self if dtype is None else self.to(dtype)


def _strided_refusal(name, layout):
    """torch's RuntimeError for a sparse accessor called on a strided (dense) tensor."""
    return RuntimeError(f"{name} expected {layout} layout but got Strided (Tensor.{name} reads a sparse tensor: "
                        f"make one with .to_sparse() or tracegrad.sparse_coo_tensor)")


@method()
def coalesce(self):
    """Mirrors ``torch.Tensor.coalesce`` on a dense tensor: RuntimeError (sparse COO only)."""
    raise _strided_refusal("coalesce", "sparse coordinate tensor")


@method()
def is_coalesced(self):
    """Mirrors ``torch.Tensor.is_coalesced`` on a dense tensor: RuntimeError (sparse COO only)."""
    raise _strided_refusal("is_coalesced", "sparse coordinate tensor")


@method()
def indices(self):
    """Mirrors ``torch.Tensor.indices`` on a dense tensor: RuntimeError (sparse COO only)."""
    raise _strided_refusal("indices", "sparse coordinate tensor")


@method()
def values(self):
    """Mirrors ``torch.Tensor.values`` on a dense tensor: RuntimeError (sparse tensors only)."""
    raise _strided_refusal("values", "sparse tensor")


def _no_dense_kernel(name):
    def refuse(self):
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the 'CPU' backend: "
                                  f"Tensor.{name} reads a sparse COO tensor, and this one is strided (dense)")
    refuse.__name__ = name
    refuse.__doc__ = f"Mirrors ``torch.Tensor.{name}`` on a dense tensor: NotImplementedError (sparse COO only)."
    return method(name)(refuse)


for _name in ("_indices", "_values", "_nnz"):
    _no_dense_kernel(_name)


@method()
def sparse_mask(self, mask):
    """Mirrors ``torch.Tensor.sparse_mask``: a sparse COO tensor with ``mask``'s (coalesced)
    positions holding ``self``'s values there. RuntimeError when ``mask`` is not sparse or the
    sizes differ."""
    if not isinstance(mask, SparseCooTensor):
        raise RuntimeError("sparse_mask: expected mask to be a sparse COO tensor")
    if tuple(mask.shape) != tuple(self.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {list(self.shape)} "
                           f"but mask has size {list(mask.shape)}")
    mask = mask.coalesce()
    ind = mask._sp_indices
    values = self[tuple(ind[d] for d in range(ind.shape[0]))]
    return make_sparse(ind, values, tuple(self.shape), True)


prop("layout")(lambda self: strided)

# zeros(..., layout=sparse_coo) and its kin build their result with this constructor (L2 -> L4 slot)
_factories.SPARSE_COO_TENSOR[0] = sparse_coo_tensor
