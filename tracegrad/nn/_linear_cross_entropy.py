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

import tracegrad
from .._ops.warn import warn as _warn

__all__ = ["linear_cross_entropy", "LinearCrossEntropyOptions"]


@dataclasses.dataclass(frozen=True, slots=True)
class LinearCrossEntropyOptions:
    """Mirrors ``torch.nn.LinearCrossEntropyOptions``, the chunking configuration of
    ``linear_cross_entropy`` (fields and defaults as torch's). Differs from torch: tracegrad
    computes the reference path whatever the options say (same values, no chunking)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        # torch validates the fields on construction (ValueError); a chunking_method that is not a
        # str fails there reading it as one (AttributeError)
        if self.acc_policy not in _POLICIES:
            raise ValueError(f"LinearCrossEntropyOptions: invalid acc_policy {self.acc_policy!r}; use one of "
                             f"{sorted(_POLICIES)}")
        if self.chunking_method not in (None, "auto"):
            if not isinstance(self.chunking_method, str):
                raise AttributeError(f"LinearCrossEntropyOptions: chunking_method must be a str or None, got "
                                     f"{type(self.chunking_method).__name__}")
            if _aspect_factor(self.chunking_method) is None:
                raise ValueError(f"LinearCrossEntropyOptions: invalid chunking_method {self.chunking_method!r}; "
                                 "use 'auto', 'aspect_ratio', 'aspect_ratio:N' (N >= 1) or None")
        bcs = self.batch_chunk_size
        if bcs is not None and not (isinstance(bcs, int) and bcs > 0):
            raise ValueError(f"LinearCrossEntropyOptions: batch_chunk_size must be a positive int or None, got {bcs!r}")
        if self.acc_dtype is not None and self.acc_dtype not in _acc_dtypes():
            raise ValueError(f"LinearCrossEntropyOptions: acc_dtype must be None or one of tracegrad.float16, "
                             f"bfloat16, float32, float64, got {self.acc_dtype!r}; None picks it from the input")

    def _chunk_size(self, num_batches, in_features, num_classes):
        """The rows per chunk torch's chunked path would use; ValueError when ``batch_chunk_size``
        and an explicit ``chunking_method`` disagree (tracegrad computes no chunks, but keeps the
        check so a configuration torch refuses is refused here too)."""
        method = self.chunking_method
        if method == "auto":   # auto picks a heuristic only without an explicit size (CPU: 'aspect_ratio')
            method = None if self.batch_chunk_size is not None else "aspect_ratio"
        if method is None:
            return max(1, min(self.batch_chunk_size or num_batches, num_batches))
        target = -(-num_batches // -(-num_classes // max(in_features, 1)))
        size = min((1 << (target - 1).bit_length()) // _aspect_factor(method), num_batches)
        if self.batch_chunk_size is not None and self.batch_chunk_size != size:
            raise ValueError(f"linear_cross_entropy: batch_chunk_size (={self.batch_chunk_size}) and chunking_method "
                             f"({method!r}) give different chunk sizes ({self.batch_chunk_size} vs {size}); pass "
                             "only one of them")
        return max(1, size)


_POLICIES = frozenset({"auto", "accurate", "balanced", "compact"})


def _aspect_factor(method):
    """N of ``'aspect_ratio'`` (1) or ``'aspect_ratio:N'``; None for any other method."""
    name, sep, factor = method.partition(":")
    factor = factor if sep else "1"
    return int(factor) if name == "aspect_ratio" and factor.isdigit() and int(factor) > 0 else None


def _acc_dtypes():
    return (tracegrad.float16, tracegrad.bfloat16, tracegrad.float32, tracegrad.float64)


class _ChunkedBackwardOnce(tracegrad.autograd.Function):
    """Identity whose backward runs once: torch's chunked path (``options`` given, a scalar
    reduction, ``allow_retain_graph=False``) hands out precomputed gradients a single time, so
    a second backward through a retained graph is refused (RuntimeError)."""

    @staticmethod
    def forward(ctx, loss):
        ctx.spent = False
        return loss.clone()

    @staticmethod
    def backward(ctx, grad):
        if ctx.spent:
            raise RuntimeError("linear_cross_entropy: the chunked backward (options given) runs once; for "
                               "retain_graph=True or a second backward construct the options with "
                               "allow_retain_graph=True")
        ctx.spent = True
        return grad


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
    probability targets (torch's messages); AttributeError for ``options`` that is not a
    ``LinearCrossEntropyOptions``. On torch's chunked path (``options`` given, class-index int64
    target, no label smoothing, a mean/sum/none reduction): ValueError for a chunk size the
    options contradict, RuntimeError for an ``acc_dtype`` that does not fit the input, a class
    index out of range, or a second backward without ``allow_retain_graph``.
    Differs from torch: ``options`` never chunks (same values)."""
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
    if options is not None and not isinstance(options, LinearCrossEntropyOptions):
        # torch calls a method of the options object first (AttributeError)
        raise AttributeError(f"linear_cross_entropy: options must be a LinearCrossEntropyOptions or None, got "
                             f"{type(options).__name__}")
    if options is not None and (out_features or reduction not in ("mean", "sum", "none") or label_smoothing != 0.0
                                or target.dtype != tracegrad.int64):
        _warn("linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
              "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, out_features == (). Got "
              f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
              f"out_features={out_features}, tracing=False, linear_bias.shape="
              f"{tuple(linear_bias.shape) if linear_bias is not None else None}.")
    chunked = (options is not None and not out_features and reduction in ("mean", "sum", "none")
               and label_smoothing == 0.0 and target.dtype == tracegrad.int64)
    if chunked:
        _check_chunked(options, input, num_batches, in_features, num_classes, target, ignore_index)
    if out_features:
        rows = math.prod(out_features) * num_classes
        linear_weight = linear_weight.reshape(rows, in_features)
        linear_bias = linear_bias.reshape(rows) if linear_bias is not None else None
    F = tracegrad.nn.functional
    logits = F.linear(input, linear_weight, linear_bias).reshape(logits_shape)
    loss = F.cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                           label_smoothing=label_smoothing)
    if chunked and reduction != "none" and not options.allow_retain_graph and loss.requires_grad \
            and not tracegrad.compiler._tracing():   # (torch.compile forces allow_retain_graph too)
        loss = _ChunkedBackwardOnce.apply(loss)
    return loss


def _check_chunked(options, input, num_batches, in_features, num_classes, target, ignore_index):
    """torch's checks on the chunked path: the chunk size (ValueError when batch_chunk_size and
    chunking_method disagree), the accumulation dtype (float32 for float16/bfloat16 input, else
    the input's: RuntimeError) and, eagerly, the class indices (RuntimeError, as its gather)."""
    options._chunk_size(num_batches[0] if num_batches else 1, in_features, num_classes)
    acc, dtype = options.acc_dtype, input.dtype
    if acc is not None and acc != dtype and not (dtype in (tracegrad.float16, tracegrad.bfloat16)
                                                 and acc == tracegrad.float32):
        raise RuntimeError(f"linear_cross_entropy: acc_dtype {acc} does not fit {dtype} input; the chunked path "
                           "accumulates float16/bfloat16 input in float32 and any other input in its own dtype "
                           "(pass acc_dtype=None)")
    if tracegrad.compiler._tracing() or target.numel() == 0:
        return
    kept = target[target != ignore_index]
    bad = kept[(kept < 0) | (kept >= num_classes)]
    if bad.numel():
        raise RuntimeError(f"linear_cross_entropy: index {int(bad[0])} is out of bounds for dimension 1 with size "
                           f"{num_classes}; class indices must lie in [0, {num_classes})")
