"""``tracegrad.sparse``: mirrors ``torch.sparse`` for sparse COO tensors -- ``mm``, ``sum``, and the
deprecated typed constructors (``FloatTensor(indices, values, size)``, ``_legacy.py``).

The sparse COO tensor itself (``tracegrad.sparse_coo_tensor``, ``Tensor.to_sparse``) and what it
supports are described in ``tracegrad/_api/sparse_coo.py``.
"""
from __future__ import annotations

from .._api.sparse_coo import SparseCooTensor, sparse_mm, sparse_sum
from ._legacy import (  # torch's deprecated typed sparse constructors
    BFloat16Tensor as BFloat16Tensor, ByteTensor as ByteTensor, CharTensor as CharTensor,
    DoubleTensor as DoubleTensor, FloatTensor as FloatTensor, HalfTensor as HalfTensor, IntTensor as IntTensor,
    LongTensor as LongTensor, ShortTensor as ShortTensor)

__all__ = ["mm", "sum"]


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
    reduced). Raises IndexError for a dim out of range."""
    if not isinstance(input, SparseCooTensor):
        return input.sum() if dim is None else input.sum(dim, dtype=dtype)
    return sparse_sum(input, dim, dtype=dtype)


def __getattr__(name):
    """``torch.sparse.torch`` is the torch module itself in torch (its sparse module imports it),
    and programs reach it that way (capsule-networks' ``torch.sparse.torch.eye(n)``): here it is
    the tracegrad module."""
    if name == "torch":
        import sys
        return sys.modules["tracegrad"]
    raise AttributeError(f"module 'tracegrad.sparse' has no attribute '{name}'")
