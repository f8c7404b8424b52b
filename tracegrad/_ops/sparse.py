"""Ops on the parts of a sparse COO tensor: ``indices`` (int64 ``(sparse_dim, nnz)``) and
``values`` (``(nnz, *dense_shape)``). Each is a dense JAX function of those parts, so autograd
differentiates them with respect to ``values`` (and the dense operand) like any op; the sparse
tensor itself lives in ``_api/sparse_coo.py``. Shapes that depend on index values (coalesce's
nnz) are decided on the host before these run; here every shape is static.
"""
from __future__ import annotations

import jax.numpy as jnp

from .registry import defop


def _to_dense(indices, values, size):
    # duplicates add up, as torch's to_dense of an uncoalesced tensor (bool ones or together:
    # XLA has no bool add, and True + True is True in torch)
    out = jnp.zeros(size, values.dtype)
    if indices.shape[0] == 0:   # no sparse dims (a 0-dim tensor's to_sparse()): every entry lands on out
        return (values.any(0) if values.dtype == jnp.bool_ else values.sum(0, dtype=values.dtype)) + out
    at = out.at[tuple(indices[d] for d in range(indices.shape[0]))]
    return at.max(values) if values.dtype == jnp.bool_ else at.add(values)


def _mm(indices, values, dense, rows):
    # out[r] += v * dense[c] for each entry (r, c, v)
    out = jnp.zeros((rows, dense.shape[1]), jnp.result_type(values, dense))
    return out.at[indices[0]].add(values[:, None] * dense[indices[1]])


def _segment_sum(values, inverse, n):
    # coalesce: entry i goes to unique position inverse[i]
    at = jnp.zeros((n,) + values.shape[1:], values.dtype).at[inverse]
    return at.max(values) if values.dtype == jnp.bool_ else at.add(values)


defop("sparse_coo_to_dense", _to_dense, args=("indices", "values"), grad_fn="ToDenseBackward0", saves=("indices",))
# torch.mm / Tensor.mm of a sparse matrix record MmBackward0, torch.sparse.mm SparseAddmmBackward0
# (the backward needs both factors: saved, as torch's MmBackward0 saves self and mat2)
defop("sparse_coo_mm", _mm, args=("indices", "values", "mat2"), grad_fn="MmBackward0",
      saves=("indices", "values", "mat2"))
defop("sparse_coo_addmm", _mm, args=("indices", "values", "mat2"), grad_fn="SparseAddmmBackward0",
      saves=("indices", "values", "mat2"))
defop("sparse_coo_coalesce", _segment_sum, args=("values", "index"), grad_fn="CoalesceBackward0", saves=("index",))
# sparse_coo_tensor over values that require grad: torch's node between them and the tensor
defop("sparse_coo_values", lambda v: v, args=("values",), grad_fn="SparseCooTensorWithDimsAndTensorsBackward0")
