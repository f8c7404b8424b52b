"""``embedding(..., sparse=True)``: the lookup whose weight gradient is a sparse COO tensor (one
entry per looked-up index, uncoalesced, the ``padding_idx`` entries left out), as torch's
``embedding_sparse_backward``. The gradient's rows are picked on the host (eager only)."""
from __future__ import annotations

import numpy as np

from .._ops import dtypes as _dt
from .._ops.registry import OPS
from .._tensor.factories import tensor as _tensor
from ..autograd._dispatch import apply_op
from ..autograd.function import Function, _backward_cls
from .sparse_coo import host_values, make_sparse


class _SparseEmbedding(Function):
    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        ctx.save_for_backward(indices)
        ctx.padding_idx, ctx.weight_shape = padding_idx, tuple(weight.shape)
        return apply_op(OPS["nn_embedding"], (weight, indices), (("padding_idx", padding_idx),))

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        rows, dim = ctx.weight_shape
        flat = indices.reshape(-1)
        values = grad.reshape(-1, dim)
        if ctx.padding_idx is not None:
            keep = np.nonzero(host_values(flat) != ctx.padding_idx)[0]
            if keep.size != flat.shape[0]:
                keep = _tensor(keep, dtype=_dt.int64)
                flat, values = flat[keep], values[keep]
        return make_sparse(flat.reshape(1, -1), values, ctx.weight_shape), None, None


_backward_cls(_SparseEmbedding).__name__ = "EmbeddingBackward0"   # torch's node for both layouts


def sparse_embedding(weight, indices, padding_idx, scale_grad_by_freq):
    """``weight[indices]`` recording ``EmbeddingBackward0`` whose weight gradient is sparse COO.
    NotImplementedError with ``scale_grad_by_freq`` (not provided for sparse gradients here)."""
    if scale_grad_by_freq:
        raise NotImplementedError("tracegrad: embedding(sparse=True, scale_grad_by_freq=True) is not supported; "
                                  "use sparse=False")
    return _SparseEmbedding.apply(weight, indices, padding_idx)
