"""``embedding(..., sparse=True)`` and ``embedding_bag(..., sparse=True)``: lookups whose weight
gradient is a sparse COO tensor (one entry per looked-up index, uncoalesced, the ``padding_idx``
entries left out), as torch's ``embedding_sparse_backward``. The gradient's rows are picked on
the host (eager only). ``gather(..., sparse_grad=True)``: the input's gradient as a sparse COO
tensor with one entry per gathered element (``sparse_gather``)."""
from __future__ import annotations

import numpy as np

from .._ops import dtypes as _dt
from .._ops.registry import OPS
from .._tensor.factories import arange, tensor as _tensor
from ..autograd._dispatch import apply_op
from ..autograd.function import Function, _backward_cls
from .shape import cat, stack
from .sparse_coo import check_eager, host_values, make_sparse


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
        values = grad.reshape(flat.shape[0], dim)   # (an empty lookup of width 0 too)
        if ctx.padding_idx is not None:
            keep = np.nonzero(host_values(flat) != ctx.padding_idx)[0]
            if keep.size != flat.shape[0]:
                keep = _tensor(keep, dtype=_dt.int64)
                flat, values = flat[keep], values[keep]
        return make_sparse(flat.reshape(1, -1), values, ctx.weight_shape), None, None


_backward_cls(_SparseEmbedding).__name__ = "EmbeddingBackward0"   # torch's node for both layouts


def sparse_embedding(weight, indices, padding_idx, scale_grad_by_freq):
    """``weight[indices]`` recording ``EmbeddingBackward0`` whose weight gradient is sparse COO.
    NotImplementedError with ``scale_grad_by_freq`` (not provided for sparse gradients here);
    RuntimeError inside a compiled function (eager only)."""
    if scale_grad_by_freq:
        raise NotImplementedError("tracegrad: embedding(sparse=True, scale_grad_by_freq=True) is not supported; "
                                  "use sparse=False")
    # traced, the sparse backward failed later with an unrelated dtype error: say why up front
    check_eager(indices, "nn.Embedding(sparse=False)")
    return _SparseEmbedding.apply(weight, indices, padding_idx)


def sparse_embedding_bag(weight, input, offsets, per_sample_weights, mode, padding_idx):
    """``embedding_bag`` (sum or mean) of 1-D ``input`` with bag starts ``offsets`` whose weight
    gradient is sparse COO: the rows are looked up one per input entry (``_SparseEmbedding``, so
    each entry's gradient is its own sparse entry, as torch), then the bag op reduces those rows
    (grad_fn ``EmbeddingBagBackward0``). Padding entries point at an extra zero row that the bag
    op skips as its padding index."""
    check_eager(input, "nn.EmbeddingBag(sparse=False)")
    n = input.shape[0]
    rows = _SparseEmbedding.apply(weight, input, padding_idx)
    local = arange(n)
    if padding_idx is not None:
        local = local.masked_fill(input == padding_idx, n)
        rows = cat([rows, rows.new_zeros((1, rows.shape[1]))], 0)
    return apply_op(OPS["embedding_bag"], (rows, local, offsets, per_sample_weights),
                    (("mode", mode), ("n_bags", int(offsets.shape[0])), ("padding_idx", None if padding_idx is None else n)))


class _SparseGather(Function):
    @staticmethod
    def forward(ctx, input, index, dim):
        ctx.save_for_backward(index)
        ctx.dim, ctx.input_shape = dim, tuple(input.shape)
        return apply_op(OPS["gather"], (input, index), (("dim", dim),))

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        # entry k of the flattened index sits at coordinates (c_0, ..., c_{n-1}) of the index's
        # shape; its gradient lands at the same coordinates of the input with c_dim replaced by
        # the index value (torch's _gather_sparse_backward: uncoalesced, in the index's order)
        n = index.ndim
        rows = [index.reshape(-1) if i == ctx.dim else
                arange(m).reshape([m if j == i else 1 for j in range(n)]).expand(tuple(index.shape)).reshape(-1)
                for i, m in enumerate(index.shape)]
        return make_sparse(stack(rows), grad.reshape(-1), ctx.input_shape), None, None


_backward_cls(_SparseGather).__name__ = "GatherBackward0"


def sparse_gather(input, dim, index):
    """``gather(input, dim, index)`` (already checked, ``dim`` wrapped, both at least 1-D) whose
    gradient for ``input`` is a sparse COO tensor, as torch's ``sparse_grad=True``. Eager only:
    a compiled function gets a clear RuntimeError here (it then runs the call eagerly)."""
    check_eager(index, "sparse_grad=False")
    return _SparseGather.apply(input, index, dim)
