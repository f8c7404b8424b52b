"""``tracegrad.segment_reduce`` (torch.segment_reduce) over the ``segment_reduce`` op
(``_ops/segment.py``). The segment layout is read on the host (the output's shape depends on
``lengths``/``offsets``), so inside a compiled function this is a graph break, like ``unique``."""
from __future__ import annotations

import numpy as np

from ..autograd._dispatch import apply_op
from .._ops.registry import OPS
from .._tensor.factories import tensor as _tensor
from .._tensor.tensor import Tensor, _wrap_dim
from ._registry import function
from .composite import _host
from .promotion import _SCALAR_NAME

_REDUCE = {"sum": "sum", "mean": "mean", "prod": "prod", "max": "max", "amax": "max", "min": "min", "amin": "min"}


def _layout(lengths, n, unsafe):
    """Host arrays for the op: ``index``/``valid`` (B, S*W) and ``counts`` (B, S) from ``lengths`` (B, S)."""
    if (lengths < 0).any():
        raise RuntimeError("segment_reduce(): lengths contains negative value!")
    if not unsafe and (lengths.sum(-1) != n).any():
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to data.size(axis) "
                           f"(= {n}) when !unsafe; got row sums {lengths.sum(-1).tolist()}")
    width = max(int(lengths.max(initial=0)), 1)
    starts = np.cumsum(lengths, -1) - lengths
    pos = starts[..., None] + np.arange(width)                                # (B, S, W)
    valid = (np.arange(width) < lengths[..., None]) & (pos < n)
    index = np.where(valid, pos, 0)
    b = lengths.shape[0]
    return index.reshape(b, -1), valid.reshape(b, -1), np.minimum(lengths, np.maximum(n - starts, 0))


@function()
def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """Mirrors ``torch.segment_reduce``: reduce ``data`` along ``axis`` over consecutive segments
    given by ``lengths`` (their sizes) or ``offsets`` (their boundaries, one more than segments);
    for a ``data`` of more than ``axis + 1`` leading dimensions ``lengths`` has ``data``'s leading
    dimensions plus one (its last dimension is ``axis``), one segmentation per row. ``reduce``:
    ``"sum"``, ``"mean"``, ``"prod"``, ``"max"``/``"amax"``, ``"min"``/``"amin"``. ``initial``
    joins every segment (an empty segment gives it; without it an empty segment gives 0, NaN,
    1, -inf, inf for sum, mean, prod, max, min). ``unsafe=True`` skips the check that the
    lengths sum to ``data.size(axis)`` (differs from torch: elements past the end are skipped, where
    torch reads past its buffer). Output: ``data``'s
    shape with ``axis`` of size ``segments``, ``data``'s dtype. Autograd:
    ``SegmentReduceBackward0`` (ties of max/min share the gradient; prod's gradient is exact
    around zeros). Reads the lengths on the host. RuntimeError for a bad ``reduce``, neither or
    ``indices`` given, negative lengths, lengths that do not sum up, or ``axis`` not the last
    dimension of ``lengths``; NotImplementedError for integer ``data`` or floating ``lengths``;
    IndexError for an ``axis`` out of range; TypeError for a ``reduce`` that is not a string."""
    if not isinstance(reduce, str):
        raise TypeError(f"segment_reduce(): argument 'reduce' (position 2) must be str, not {type(reduce).__name__}")
    if reduce not in _REDUCE:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet; pass lengths or offsets")
    if not isinstance(data, Tensor):
        raise TypeError(f"segment_reduce(): argument 'data' must be Tensor, not {type(data).__name__}")
    if not data.is_floating_point():
        name = _SCALAR_NAME.get(data.dtype.name, data.dtype.name)
        raise NotImplementedError(f"\"_segment_reduce_cpu\" not implemented for '{name}'; convert data with .float()")
    seg = lengths if lengths is not None else offsets
    if seg is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if seg.is_floating_point() or seg.is_complex():
        name = _SCALAR_NAME.get(seg.dtype.name, seg.dtype.name)
        kind = "lengths" if lengths is not None else "offsets"
        raise NotImplementedError(f"\"_segment_reduce_{kind}_cpu_kernel1\" not implemented for '{name}'; pass "
                                  f"integer {kind}")
    ax = _wrap_dim(axis, data.dim())
    if ax != seg.dim() - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of lengths but got {ax}.")
    lens = _host(seg).astype(np.int64)
    if lengths is None:
        lens = np.diff(lens, axis=-1)
    lead, n = tuple(data.shape[:ax]), data.shape[ax]
    if lens.shape[:-1] != lead:
        raise RuntimeError(f"segment_reduce(): lengths' leading dimensions {tuple(lens.shape[:-1])} must be data's "
                           f"dimensions before axis, {lead}")
    segments = lens.shape[-1]
    index, valid, counts = _layout(lens.reshape(-1, segments), n, unsafe)
    static = (("reduce", _REDUCE[reduce]), ("segments", segments),
              ("initial", None if initial is None else float(initial)), ("axis", ax))
    return apply_op(OPS["segment_reduce"], (data, _tensor(index), _tensor(valid), _tensor(counts)), static)


__all__ = ["segment_reduce"]
