"""Summary protocol buffers (scalars, histograms, images, text, hparams), built with
tensorboard's own proto classes and plugin metadata from numpy values (tracegrad tensors are
read with ``.detach().cpu().numpy()``)."""
from __future__ import annotations

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.hparams import api_pb2 as _hp_api
from tensorboard.plugins.hparams import metadata as _hp_meta
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo
from tensorboard.plugins.scalar.plugin_data_pb2 import ScalarPluginData
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

import tracegrad

from . import _image


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
    meta = _plugin("scalars", ScalarPluginData(version=0).SerializeToString())
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
    return histogram_raw(name, float(arr.min()), float(arr.max()), float(arr.size), float(arr.sum()),
                         float(arr.dot(arr)), limits, bucket)


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):  # noqa: A002
    """A histogram summary from precomputed statistics: ``bucket_limits`` are the buckets' right
    edges, ``bucket_counts`` their counts (same length). Raises: ValueError when the lengths differ."""
    if len(bucket_limits) != len(bucket_counts):
        raise ValueError(f"add_histogram_raw: len(bucket_limits) != len(bucket_counts) ({len(bucket_limits)} and "
                         f"{len(bucket_counts)}); pass one count per bucket limit")
    return Summary(value=[Summary.Value(tag=name, histo=HistogramProto(
        min=float(min), max=float(max), num=float(num), sum=float(sum), sum_squares=float(sum_squares),
        bucket_limit=[float(v) for v in bucket_limits], bucket=[float(v) for v in bucket_counts]))])


def image(tag, img, dataformats="NCHW", rescale=1):
    """One PNG image summary of ``img`` laid out as ``dataformats`` (a batch is tiled into a
    grid). Float images are read as [0, 1], uint8 as [0, 255]. Raises AssertionError (as torch)
    when the layout does not fit the array."""
    hwc = _image.to_uint8(_image.to_hwc(to_numpy(img), dataformats))
    h, w, c, png = _image.encode_png(hwc, rescale)
    return Summary(value=[Summary.Value(tag=tag, image=Summary.Image(
        height=h, width=w, colorspace=c, encoded_image_string=png))])


def _plugin(name, content):
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=name, content=content))


def text(tag, text_string):
    """A text-plugin summary (a one-element string tensor) under ``<tag>/text_summary``."""
    tensor = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf_8")],
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    meta = _plugin("text", TextPluginData(version=0).SerializeToString())
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=tensor)])


def _hparam_value(key, v):
    """(field of the hparams plugin's Value, value, DataType name) for one hyperparameter.
    bool is an int in Python: it is logged as a number, as torch does."""
    if isinstance(v, (int, float)):
        return "number_value", v, "DATA_TYPE_FLOAT64"
    if isinstance(v, str):
        return "string_value", v, "DATA_TYPE_STRING"
    if isinstance(v, tracegrad.Tensor):
        return "number_value", float(to_numpy(v).reshape(-1)[0]), "DATA_TYPE_FLOAT64"
    raise ValueError(f"add_hparams: the value of hyperparameter {key!r} is a {type(v).__name__}; "
                     "it should be one of int, float, str, bool, or Tensor")


def hparams(hparam_dict, metric_dict, hparam_domain_discrete=None):
    """The hparams plugin's three summaries (experiment, session start, session end) for one
    run. Raises TypeError when a dict argument is not a dict or a discrete domain is not a list
    of values of its hyperparameter's type; ValueError for an unsupported value type."""
    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise TypeError("add_hparams: hparam_dict and metric_dict should be dictionaries; nothing logged.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("add_hparams: hparam_domain_discrete should be a dictionary; nothing logged.")
    for k, d in domains.items():
        if k not in hparam_dict or not isinstance(d, list) or not all(isinstance(x, type(hparam_dict[k])) for x in d):
            raise TypeError(f"add_hparams: hparam_domain_discrete[{k!r}] should be a list of values of the "
                            f"type of hparam_dict[{k!r}].")
    start, infos = SessionStartInfo(), []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        field, value, dtype = _hparam_value(k, v)
        setattr(start.hparams[k], field, value)
        info = _hp_api.HParamInfo(name=k, type=_hp_api.DataType.Value(dtype))
        if k in domains and not isinstance(v, tracegrad.Tensor):
            info.domain_discrete.values.extend([struct_pb2.Value(**{field: x}) for x in domains[k]])
        infos.append(info)
    experiment = _hp_api.Experiment(hparam_infos=infos,
                                    metric_infos=[_hp_api.MetricInfo(name=_hp_api.MetricName(tag=k)) for k in metric_dict])
    end = SessionEndInfo(status=_hp_api.Status.Value("STATUS_SUCCESS"))
    out = []
    for tag, data in ((_hp_meta.EXPERIMENT_TAG, {"experiment": experiment}),
                      (_hp_meta.SESSION_START_INFO_TAG, {"session_start_info": start}),
                      (_hp_meta.SESSION_END_INFO_TAG, {"session_end_info": end})):
        content = HParamsPluginData(version=_hp_meta.PLUGIN_DATA_VERSION, **data).SerializeToString()
        out.append(Summary(value=[Summary.Value(tag=tag, metadata=_plugin(_hp_meta.PLUGIN_NAME, content))]))
    return tuple(out)
