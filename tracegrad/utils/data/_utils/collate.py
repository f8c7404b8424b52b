"""``default_collate`` / ``default_convert``: turn a list of samples into a batch.

Mirrors ``torch.utils.data._utils.collate`` (same type table, same nesting rules, same
errors): tensors are stacked, numpy arrays and numpy scalars become tensors, Python floats
become float64 tensors and ints int64 tensors, strings and bytes stay lists, mappings and
namedtuples keep their type, other sequences are transposed (tuples come back as lists).
"""
from __future__ import annotations

import collections.abc
import copy
import re

import numpy as np

import tracegrad

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, "
    "dicts or lists; found {}")


def default_convert(data):
    """Convert numpy arrays (and those nested in mappings/sequences) to tensors, leaving the
    rest unchanged; the DataLoader's collate when automatic batching is off
    (``batch_size=None``). Mirrors ``torch.utils.data.default_convert``."""
    elem_type = type(data)
    if isinstance(data, tracegrad.Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        # np.asarray: tracegrad.as_tensor(np.float64(1)) gives float32 (a numpy scalar is read as
        # a Python float); torch keeps the numpy dtype.
        return tracegrad.as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # torch's backwards compatibility
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map=None):
    """Collate ``batch`` (a list of samples of one structure) by element type, looking types up
    in ``collate_fn_map`` (exact type, then ``isinstance`` in insertion order), recursing into
    mappings, namedtuples and sequences. Mirrors ``torch.utils.data._utils.collate.collate``.
    Raises: RuntimeError when sequences in the batch differ in length; TypeError for
    element types it cannot batch."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                              for key in elem})
                return clone
            return elem_type({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                              for key in elem})
        except TypeError:
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map) for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """Mirrors torch's ``collate_tensor_fn``: the batch's tensors stacked on a new dim 0.
    RuntimeError, as torch, for sparse tensors (stack would name the sparse kernel instead)."""
    if batch[0].layout != tracegrad.strided:
        raise RuntimeError("default_collate: batches of sparse tensors are not currently supported by the default "
                           "collate_fn; please provide a custom collate_fn to handle them appropriately")
    return tracegrad.stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([tracegrad.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return tracegrad.as_tensor(np.asarray(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return tracegrad.tensor(batch, dtype=tracegrad.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return tracegrad.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {tracegrad.Tensor: collate_tensor_fn,
                          np.ndarray: collate_numpy_array_fn,
                          (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
                          float: collate_float_fn,
                          int: collate_int_fn,
                          str: collate_str_fn,
                          bytes: collate_str_fn}


def default_collate(batch):
    """Stack a list of samples into a batch. Mirrors ``torch.utils.data.default_collate``:
    tensors ``(*)`` -> ``(B, *)`` (``tracegrad.stack``), numpy arrays likewise, numpy scalars
    -> 1-D tensor of their dtype, Python float -> float64, int -> int64 (bool -> bool),
    str/bytes -> list unchanged, dict/namedtuple -> same type of batches, tuple/list -> list
    (list subclasses keep their type) of batches.
    Raises: RuntimeError for sequences of unequal length; TypeError for other element types
    (torch's message)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
