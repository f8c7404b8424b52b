"""Summary protocol buffers for scalars and histograms, built with tensorboard's own proto
classes from numpy values (tracegrad tensors are read with ``.detach().cpu().numpy()``)."""
from __future__ import annotations

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.plugins.scalar.plugin_data_pb2 import ScalarPluginData

import tracegrad


def to_numpy(x):
    """A tensor, numpy array, list or number as a numpy array."""
    if isinstance(x, tracegrad.Tensor):
        x = x.detach().cpu()
        if x.dtype is tracegrad.bfloat16:
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def scalar(name, value, new_style=False, double_precision=False):
    """One scalar: a ``simple_value`` summary, or with ``new_style`` a rank-0 tensor summary
    tagged for the scalars plugin. Raises ValueError when ``value`` has more than one element."""
    arr = to_numpy(value)
    if arr.squeeze().ndim != 0:
        raise ValueError(f"add_scalar: scalar_value should be a single number (0-D), got shape {arr.shape}")
    v = float(arr.reshape(()))
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=v)])
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="scalars", content=ScalarPluginData(version=0).SerializeToString()))
    tensor = TensorProto(dtype="DT_DOUBLE" if double_precision else "DT_FLOAT",
                         **({"double_val": [v]} if double_precision else {"float_val": [v]}))
    return Summary(value=[Summary.Value(tag=name, tensor=tensor, metadata=meta)])


def default_bins():
    """TensorFlow's histogram edges: +-1e-12 growing by 10% up to 1e20, and 0."""
    pos, v = [], 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-x for x in reversed(pos)] + [0] + pos


def histogram(name, values, bins, max_bins=None):
    """A histogram summary of ``values`` (flattened, as float64). ``bins``: anything
    ``numpy.histogram`` takes, or "tensorflow" for ``default_bins()``. Empty buckets before the
    first and after the last filled one are dropped; one empty bucket is kept in front so the
    left edge is recorded (TensorBoard reads ``bucket_limit`` as right edges).
    Raises: ValueError for an empty input."""
    arr = to_numpy(values).astype(np.float64).reshape(-1)
    if arr.size == 0:
        raise ValueError("add_histogram: the input has no element")
    counts, edges = np.histogram(arr, bins=default_bins() if isinstance(bins, str) and bins == "tensorflow" else bins)
    if max_bins is not None and len(counts) > max_bins:   # merge neighbours so at most max_bins remain
        group = -(-len(counts) // max_bins)
        pad = (-len(counts)) % group
        counts = np.pad(counts, (0, pad)).reshape(-1, group).sum(1)
        edges = np.concatenate([edges[:-1:group], edges[-1:]])
    filled = np.nonzero(counts)[0]
    first, last = (int(filled[0]), int(filled[-1])) if filled.size else (0, len(counts) - 1)
    bucket = [0.0] + counts[first:last + 1].astype(np.float64).tolist()
    limits = edges[first:last + 2].tolist()
    return Summary(value=[Summary.Value(tag=name, histo=HistogramProto(
        min=float(arr.min()), max=float(arr.max()), num=float(arr.size), sum=float(arr.sum()),
        sum_squares=float(arr.dot(arr)), bucket_limit=limits, bucket=bucket))])
