"""``torch.nn.functional.linear_cross_entropy`` and ``torch.nn.LinearCrossEntropyOptions``:
cross entropy of a linear projection, ``cross_entropy(linear(input, W, b), target)``.

torch has two paths: the reference one (``options=None``: materialise the logits) and a chunked
one that never holds all ``(N, num_classes)`` logits at once (``options=LinearCrossEntropyOptions
(...)``). The chunked path is a memory optimisation with the same values; tracegrad always runs
the reference composition (the ops' autograd and ``tracegrad.compile`` apply as to any
composition) and keeps ``options`` only for torch's argument checks and warning.
"""
from __future__ import annotations

import dataclasses
import math
import warnings

import tracegrad

__all__ = ["linear_cross_entropy", "LinearCrossEntropyOptions"]


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """Mirrors ``torch.nn.LinearCrossEntropyOptions``, the chunking configuration of
    ``linear_cross_entropy`` (fields and defaults as torch's). Differs from torch: tracegrad
    computes the reference path whatever the options say (same values, no chunking)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """Mirrors ``torch.nn.functional.linear_cross_entropy``: ``cross_entropy(logits, target)``
    with ``logits = linear(input, linear_weight, linear_bias)`` reshaped to
    ``(*N, C, *out_features)``.

    Shapes: input ``(in_features,)`` or ``(N, in_features)``; linear_weight ``(C, in_features)``
    or ``(C, d_1.., d_K, in_features)`` (K-dimensional loss; needs batched input); linear_bias
    ``(C, d_1.., d_K)``; target class indices (int64, ``(N, d_1.., d_K)``) or probabilities
    (the logits' shape). ``ignore_index`` None means -100 for class indices.
    Returns: the loss as ``cross_entropy`` with ``weight``, ``reduction``, ``label_smoothing``.
    Raises: RuntimeError for input not 1-D/2-D, a 1-D linear_weight, mismatched in_features or
    bias shape, a K-dimensional weight with unbatched input, and ``ignore_index`` with
    probability targets (torch's messages). Differs from torch: ``options`` never chunks."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    num_batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), "
                           f"got {input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not num_batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires"
                           f" batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    if num_batches and target.dim() > 0 and target.shape[0] != num_batches[0]:
        raise ValueError(f"Expected input batch_size ({num_batches[0]}) to match target batch_size ({target.shape[0]}).")
    logits_shape = (*num_batches, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if options is not None and (out_features or reduction not in ("mean", "sum", "none") or label_smoothing != 0.0
                                or target.dtype != tracegrad.int64):
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
                      "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, out_features == (). Got "
                      f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                      f"out_features={out_features}, tracing=False, linear_bias.shape="
                      f"{tuple(linear_bias.shape) if linear_bias is not None else None}.", stacklevel=2)
    if out_features:
        rows = math.prod(out_features) * num_classes
        linear_weight = linear_weight.reshape(rows, in_features)
        linear_bias = linear_bias.reshape(rows) if linear_bias is not None else None
    F = tracegrad.nn.functional
    logits = F.linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return F.cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                           label_smoothing=label_smoothing)
