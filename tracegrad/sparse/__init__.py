"""``tracegrad.sparse``: mirrors ``torch.sparse`` for sparse COO tensors -- ``mm``, ``sum``, and the
deprecated typed constructors (``FloatTensor(indices, values, size)``, ``_legacy.py``).

The sparse COO tensor itself (``tracegrad.sparse_coo_tensor``, ``Tensor.to_sparse``) and what it
supports are described in ``tracegrad/_api/sparse_coo.py``.
"""
from __future__ import annotations

from .._api.sparse_coo import SparseCooTensor, make_sparse, sparse_mm, sparse_sum
from ._legacy import (  # torch's deprecated typed sparse constructors
    BFloat16Tensor as BFloat16Tensor, ByteTensor as ByteTensor, CharTensor as CharTensor,
    DoubleTensor as DoubleTensor, FloatTensor as FloatTensor, HalfTensor as HalfTensor, IntTensor as IntTensor,
    LongTensor as LongTensor, ShortTensor as ShortTensor)

__all__ = ["mm", "sum", "softmax", "log_softmax"]


def mm(mat1, mat2):
    """Mirrors ``torch.sparse.mm(mat1, mat2)``: ``mat1`` a 2-D sparse COO tensor, ``mat2`` a dense
    2-D tensor of the same dtype; a dense ``(n, p)`` result, grad_fn ``SparseAddmmBackward0``
    (gradients with respect to ``mat1``'s values and ``mat2``). A dense ``mat1`` is ``torch.mm``.
    Raises: RuntimeError for mismatched shapes or dtypes; NotImplementedError for a sparse
    ``mat2`` (torch's sparse @ sparse is not provided)."""
    if not isinstance(mat1, SparseCooTensor):
        return mat1.mm(mat2)
    return sparse_mm(mat1, mat2, "sparse_coo_addmm")


def sum(input, dim=None, dtype=None):  # noqa: A001  (torch's name)
    """Mirrors ``torch.sparse.sum(input, dim=None, dtype=None)``: over all dims a dense 0-d
    tensor; over some dims a coalesced sparse COO tensor (dense when every sparse dim is
    reduced). Raises IndexError for a dim out of range; for a dense (strided) input, as torch,
    RuntimeError over all dims (its coalesce refuses the layout) and NotImplementedError over
    some (no strided kernel)."""
    if not isinstance(input, SparseCooTensor):
        if dim is None:
            raise RuntimeError("torch.sparse.sum: coalesce expected sparse coordinate tensor layout but got "
                               "Strided; use Tensor.sum for a dense tensor")
        raise NotImplementedError("torch.sparse.sum: Could not run 'aten::_indices' with arguments from the 'CPU' "
                                  "backend (a dense tensor); use Tensor.sum for a dense tensor")
    return sparse_sum(input, dim, dtype=dtype)


def _sparse_softmax(api, input, dim, dtype, log):
    if not isinstance(input, SparseCooTensor):
        raise NotImplementedError(f"torch.sparse.{api}: Could not run 'aten::_sparse_{api}' with arguments from "
                                  f"the 'CPU' backend (a dense tensor); use torch.{api} for a dense tensor")
    import tracegrad   # (function-local: the package imports this module while it loads)
    s = input.coalesce()
    if dtype is not None:
        s = make_sparse(s._sp_indices, s._sp_values.to(dtype), s._sp_size, True)
    # the entries a sparse tensor does not hold count as -inf: the softmax runs over the held ones
    held = make_sparse(s._sp_indices, tracegrad.ones_like(s._sp_values, dtype=tracegrad.bool), s._sp_size,
                       True).to_dense()
    dense = s.to_dense().masked_fill(~held, float("-inf"))
    out = tracegrad.log_softmax(dense, dim) if log else tracegrad.softmax(dense, dim)
    return make_sparse(s._sp_indices, out[tuple(s._sp_indices)], s._sp_size, True)


def softmax(input, dim, *, dtype=None):
    """Mirrors ``torch.sparse.softmax(input, dim, dtype=None)`` of a sparse COO tensor: a softmax
    over the held entries along ``dim`` (the others count as -inf), a coalesced sparse COO result
    with the same entries. NotImplementedError for a dense input, as torch."""
    return _sparse_softmax("softmax", input, dim, dtype, log=False)


def log_softmax(input, dim, *, dtype=None):
    """Mirrors ``torch.sparse.log_softmax(input, dim, dtype=None)``: ``softmax``'s logarithm.
    NotImplementedError for a dense input, as torch."""
    return _sparse_softmax("log_softmax", input, dim, dtype, log=True)


def __getattr__(name):
    """``torch.sparse.torch`` is the torch module itself in torch (its sparse module imports it),
    and programs reach it that way (capsule-networks' ``torch.sparse.torch.eye(n)``): here it is
    the tracegrad module."""
    if name == "torch":
        import sys
        return sys.modules["tracegrad"]
    raise AttributeError(f"module 'tracegrad.sparse' has no attribute '{name}'")
