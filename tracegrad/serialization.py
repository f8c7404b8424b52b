"""``tracegrad.save`` / ``tracegrad.load``: checkpoints as safetensors files; ``load`` also
reads files written by PyTorch's ``torch.save`` (``_serialization_torch.py``), without torch.

The file is a standard safetensors file: the arrays are its tensors (named ``"0"``, ``"1"``,
...), and a JSON description of the saved object's structure sits in the safetensors
metadata under ``"tracegrad"``. Loading parses JSON and copies bytes into arrays: a
checkpoint of tensors, containers and plain values can never run code.

What is described in JSON: tensors (``nn.Parameter`` stays a Parameter), ``dict`` /
``OrderedDict`` (keys: str, int, float, bool or None), ``list``, ``tuple``, and plain ``int``,
``float``, ``str``, ``bool``, ``None`` values, nested to any depth: model and optimizer
``state_dict()``s, and dicts holding both with an epoch number. Any other object (a whole
``nn.Module``, an optimizer, a user class) is pickled, as ``torch.save`` does, with the tensors
it holds stored as arrays of the file (one array per tensor object: tied weights stay tied);
loading such an entry runs its pickle, so with ``weights_only=True`` (the default, as in torch
2.6+) every class it names must be allowlisted (``add_safe_globals``, ``safe_globals``), else
``pickle.UnpicklingError``; ``weights_only=False`` loads anything.

Tensors are saved as torch saves them, against their storage (NOTE [views in checkpoints]):
tensors that shared a storage (``x``, ``x[1:]``, ``x.t()``) share one after loading, with their
offsets and strides, and saving a view writes its whole storage; the same tensor object saved
twice (tied weights under two keys) loads as one object. A layout no chain of views expresses
loads as an equal-valued copy.

Differs from torch:
- Tensors are loaded on the device they were saved from (``map_location`` overrides).
- A plain safetensors file written by another tool loads as a ``dict`` of tensors.

``torch.save`` files (zip, and the legacy format of ``_use_new_zipfile_serialization=False``;
``load`` tells them apart by their first bytes) load as torch loads them: a state_dict of a torch
model loads into the same tracegrad model (``model.load_state_dict(tracegrad.load("m.pt"))``),
an optimizer's into the same tracegrad optimizer. Tensors sharing a storage (``x``, ``x[1:]``,
``x.t()``, tied weights) share one after loading: each is ``x`` or a view of it (or of a base
holding the storage); a layout no chain of views can express (overlapping windows, a view whose
rows wrap past the storage's end) loads as an equal-valued copy. ``weights_only=True`` admits
tensors, containers, plain values, ``torch.Size``/``device``/dtypes, Parameters and the
allowlist; a pickled torch object (a whole ``nn.Module``, an optimizer) cannot be rebuilt
without torch and is refused by name also under ``weights_only=False``. Differs from torch: a
callable ``map_location`` receives each storage as a tracegrad tensor (of its storage's dtype;
``lambda storage, loc: storage`` works as in torch); torch dtypes tracegrad has no tensors of
(complex32, quantized, bits: NOTE [dtypes without storage]) raise RuntimeError; TorchScript
archives are refused.
"""
from __future__ import annotations

import base64
import collections
import importlib
import io
import json
import os
import pickle
import pickletools
import struct
import sys
import tempfile

import numpy as np
import safetensors.numpy

from . import _serialization_torch as _torch_format
from ._ops import dtypes as _dt
from ._tensor.factories import empty, from_file_array
from ._tensor.tensor import Tensor
from ._api.sparse_coo import sparse_coo_tensor
from ._api.strided import _storage_tensor
from .utils.hooks import warn_if_has_hooks
from ._ops.warn import warn as _warn

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "SourceChangeWarning"]


class SourceChangeWarning(Warning):
    """Mirrors ``torch.serialization.SourceChangeWarning`` (the class programs filter with
    ``warnings.simplefilter``). tracegrad's checkpoints hold no module source code, so
    ``load`` never issues it."""

_FORMAT = "tracegrad.save/1"
_PLAIN = (bool, int, float, str, type(None))
_SUPPORTED = ("tensors, dict/OrderedDict (keys str, int, float, bool or None), list, tuple, "
              "int, float, str, bool and None, nested")
# complex128 has no safetensors dtype (torch's writer refuses it too): stored as a float64
# view. bfloat16 and complex64 are stored as safetensors' own BF16 / C64, with their shape,
# so torch's and safetensors' readers see them as they are. Files from older tracegrad
# versions held bfloat16/complex64 as uint16/float32 views; the JSON dtype still says so.
_STORED_AS = {"complex128": np.float64}
# safetensors dtype names -> numpy dtypes, for reading (safetensors' numpy reader lacks BF16)
_ST_DTYPES = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16,
              "I32": np.int32, "U32": np.uint32, "I64": np.int64, "U64": np.uint64, "F16": np.float16,
              "F32": np.float32, "F64": np.float64, "BF16": _dt.bfloat16.np, "C64": np.complex64,
              "F8_E4M3": _dt.float8_e4m3fn.np, "F8_E5M2": _dt.float8_e5m2.np, "F8_E8M0": _dt.float8_e8m0fnu.np,
              "F8_E4M3FNUZ": _dt.float8_e4m3fnuz.np, "F8_E5M2FNUZ": _dt.float8_e5m2fnuz.np}


def _parameter_class():
    try:
        from .nn.parameter import Parameter   # local: tracegrad/__init__ imports this module (save/load) before nn
        return Parameter
    except ImportError:  # nn not importable: nothing can be a Parameter
        return None


def _is_lazy(obj):
    """A lazy module's placeholder (``UninitializedParameter`` / ``UninitializedBuffer``)."""
    try:
        from .nn.parameter import is_lazy   # local, as _parameter_class
    except ImportError:
        return False
    return is_lazy(obj)


# --- encode: object -> (JSON-able node, arrays) ------------------------------------------

def _user_subclass(cls):
    """A Tensor subclass of the user's (not tracegrad's own: Parameter, the sparse class...)."""
    return cls is not Tensor and not cls.__module__.startswith("tracegrad") and \
        not (_parameter_class() is not None and issubclass(cls, _parameter_class()))


def _class_named(qualified):
    """The class ``module.qualname`` names, imported (pickle's lookup of a global)."""
    module, _, name = qualified.partition(":")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _encode(obj, arrays, path):
    if isinstance(obj, Tensor) and _is_lazy(obj):
        # a lazy module's placeholder has no shape or data: torch pickles it by its class (a fresh
        # placeholder on load, refused by a weights-only load unless allowlisted); so here
        return _encode_pickled(obj, arrays, path)
    if isinstance(obj, Tensor) and _user_subclass(type(obj)):
        # a tensor of a user's subclass keeps its class, as torch pickles it (its
        # _rebuild_from_type_v2): the class by name, refused by a weights-only load unless
        # allowlisted; a class pickle cannot name fails as pickle fails
        cls = type(obj)
        if "<locals>" in cls.__qualname__:
            raise AttributeError(f"tracegrad.save: Can't pickle local object {cls.__qualname__!r} at {path} (a "
                                 "Tensor subclass defined in a function); define the class at module level")
        qualified = f"{cls.__module__}:{cls.__qualname__}"
        try:
            if _class_named(qualified) is not cls:
                raise AttributeError
        except (ImportError, AttributeError):
            raise pickle.PicklingError(f"tracegrad.save: Can't pickle {cls!r} at {path}: it's not found as "
                                       f"{cls.__module__}.{cls.__qualname__}") from None
        memo = getattr(arrays, "pickled", None)    # one object saved twice loads as one (as a tensor)
        hit = memo.get(id(obj)) if memo is not None else None
        if hit is not None:
            return json.loads(hit[1])
        node = {"t": "subclass", "cls": qualified, "tensor": _encode(obj.as_subclass(Tensor), arrays, path)}
        if memo is not None:
            memo[id(obj)] = (obj, json.dumps(node))
        return node
    if isinstance(obj, Tensor) and obj.is_sparse:
        warn_if_has_hooks(obj)
        # a sparse COO tensor is saved as torch saves it: its indices and values as stored (not
        # coalesced on the way), its size and coalesced flag (not requires_grad: torch's
        # rebuild of a sparse tensor drops it); it loads back sparse
        return {"t": "sparse_coo", "size": list(obj.shape), "coalesced": bool(obj.is_coalesced()),
                "indices": _encode(obj._indices().detach(), arrays, f"{path}._indices()"),
                "values": _encode(obj._values().detach(), arrays, f"{path}._values()")}
    if isinstance(obj, Tensor):
        # the same tensor object met again (a tied weight under two names, a tensor in a
        # state_dict and in a pickled module) is one array and one node: it loads as one object
        memo = getattr(arrays, "pickled", None)
        hit = memo.get(id(obj)) if memo is not None else None
        if hit is not None:
            return json.loads(hit[1])
        warn_if_has_hooks(obj)    # as torch's Tensor.__reduce_ex__: hooks are not saved
        name = obj.dtype.name
        node = {"t": "tensor", "key": None, "dtype": name, "shape": list(obj.shape),
                "requires_grad": bool(obj.requires_grad), "device": str(obj.device)}
        shared = _storage_entry(obj, arrays)
        if shared is not None:   # NOTE [views in checkpoints]
            node["key"], view = shared
            if view is not None:
                node["view"] = view
        else:
            key = node["key"] = str(len(arrays))
            # np.asarray, not .numpy(): float8 tensors have no numpy() (as torch) but are saved;
            # a meta tensor has no data: its shape and dtype are the node's
            # a conjugated view is stored as the values it views, with its conj bit in the node
            # (torch keeps the bit through save/load too: the loaded tensor is_conj())
            src = obj.detach()
            if obj.dtype.is_complex and obj.is_conj():
                src, node["conj"] = src.conj().resolve_conj(), True
            arr = np.zeros(0, obj.dtype.np) if obj.is_meta else np.ascontiguousarray(np.asarray(src))
            if name in _STORED_AS:
                arr = arr.reshape(-1).view(_STORED_AS[name])  # 1-D: a 0-d array cannot change itemsize
            arrays[key] = arr
        param = _parameter_class()
        if param is not None and isinstance(obj, param):
            node["t"] = "parameter"
        if memo is not None:
            memo[id(obj)] = (obj, json.dumps(node))
        return node
    if isinstance(obj, bool):
        return {"t": "bool", "v": obj}
    if isinstance(obj, int):
        return {"t": "int", "v": int(obj)}
    if isinstance(obj, float):
        return {"t": "float", "v": repr(float(obj))}  # repr keeps nan/inf and every bit
    if isinstance(obj, str):
        return {"t": "str", "v": obj}
    if obj is None:
        return {"t": "none"}
    if isinstance(obj, dict) and type(obj) in (dict, collections.OrderedDict):
        if not all(isinstance(k, _PLAIN) for k in obj):     # tuple keys...: pickled whole
            return _encode_pickled(obj, arrays, path)
        items = []
        for k, v in obj.items():
            items.append([_encode(k, arrays, path), _encode(v, arrays, f"{path}[{k!r}]")])
        node = {"t": "odict" if type(obj) is collections.OrderedDict else "dict", "items": items}
        attrs = getattr(obj, "__dict__", None)
        if attrs:   # an OrderedDict's attributes (state_dict()'s _metadata), as pickle keeps them
            node["attrs"] = _encode(dict(attrs), arrays, f"{path}.__dict__")
        return node
    if type(obj) in (list, tuple):
        return {"t": type(obj).__name__,
                "items": [_encode(v, arrays, f"{path}[{i}]") for i, v in enumerate(obj)]}
    return _encode_pickled(obj, arrays, path)


# NOTE [views in checkpoints]: as torch.save, a tensor is saved as (its storage, offset, size,
# stride), each storage once per file: tensors that shared a storage (``x``, ``x[1:]``, ``x.t()``)
# share one after loading, with their strides, and saving a view writes its whole storage. A
# tensor that is its whole storage (offset 0, contiguous, every element) is stored as an array
# of its shape (the plain node, readable by any safetensors reader); a storage is stored flat
# when the first tensor met on it is a view. A later tensor on the same storage, and every view,
# records ``"view": [offset, stride]`` against that array. Meta, zero-element and conjugated
# tensors keep the plain, by-value node.
def _storage_entry(obj, arrays):
    """``(key, view)`` for a tensor saved against its storage's array (``view`` None for the
    plain node of a whole storage met first), or None for a tensor stored by value."""
    if obj.is_meta or obj.numel() == 0 or (obj.dtype.is_complex and obj.is_conj()):
        return None
    try:
        storage = obj.untyped_storage()
        n = storage.nbytes() // obj.element_size()
        sid = (storage.data_ptr(), obj.dtype.name, str(obj.device))
    except (AttributeError, RuntimeError, TypeError):
        return None
    if n <= 0:
        return None
    seen = arrays.storage_dtypes.setdefault(sid[::2], obj.dtype.name)
    if seen != obj.dtype.name:   # torch.save refuses it too (its storages carry one dtype in the file)
        raise RuntimeError(f"tracegrad.save: Cannot save multiple tensors or storages that view the same data as "
                           f"different types ({seen} and {obj.dtype.name}); save a .clone() of one of them")
    stride, offset = [int(s) for s in obj.stride()], int(obj.storage_offset())
    whole = offset == 0 and obj.numel() == n and obj.is_contiguous()
    entry = arrays.storages.get(sid)
    if entry is None:
        key = str(len(arrays))
        if whole:
            arr = np.ascontiguousarray(np.asarray(obj.detach()))
        else:
            # the whole storage, read in obj's element type: a complex part view (``z.imag``)
            # is saved as torch's, a float storage over the complex bytes
            arr = np.ascontiguousarray(np.asarray(_storage_tensor(obj).detach())).reshape(-1).view(obj.dtype.np)
        if obj.dtype.name in _STORED_AS:
            arr = arr.reshape(-1).view(_STORED_AS[obj.dtype.name])
        arrays[key] = arr
        arrays.storages[sid] = (key, n, obj)   # obj kept alive: its address names the storage
        if whole:
            return key, None
    else:
        key = entry[0]
    return key, [offset, stride]


class _TensorPickler(pickle.Pickler):
    """Pickles an object with every tensor in it written as an array of the file (its
    persistent id is the tensor's JSON node); the same tensor object twice is one array."""

    def __init__(self, buf, arrays, path):
        super().__init__(buf, protocol=pickle.HIGHEST_PROTOCOL)
        self.arrays, self.path, self.tensors = arrays, path, arrays.pickled

    def persistent_id(self, obj):
        if not isinstance(obj, Tensor) or _is_lazy(obj):   # a placeholder pickles by its class
            return None
        node = self.tensors.get(id(obj))
        if node is None:
            node = self.tensors[id(obj)] = (obj, json.dumps(_encode(obj, self.arrays, self.path)))
        return node[1]


def _encode_pickled(obj, arrays, path):
    buf = io.BytesIO()
    try:
        _TensorPickler(buf, arrays, path).dump(obj)
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        # torch.save raises pickle's own error; this one also says where in ``obj`` it was
        raise type(e)(f"tracegrad.save: cannot pickle {type(obj).__module__}.{type(obj).__qualname__} "
                      f"at {path} ({e}); {_SUPPORTED} are saved without pickle: save "
                      f"model.state_dict() instead of the model, say") from None
    return {"t": "pickle", "v": base64.b64encode(buf.getvalue()).decode("ascii")}


class _Arrays(dict):
    """The file's arrays by name, and the JSON node of each tensor object met inside pickled
    entries (``pickled``): one array per object across all of them, so a module and its
    optimizer saved side by side still share their parameters after loading, as in torch."""

    def __init__(self):
        super().__init__()
        self.pickled = {}
        self.storages = {}   # (storage address, dtype, device) -> (array key, elements, a tensor on it)
        self.storage_dtypes = {}   # (storage address, device) -> the dtype its tensors are saved as


def _to_bytes(obj, legacy=False):
    arrays = _Arrays()
    try:
        tree = _encode(obj, arrays, "obj")
    except RecursionError:
        raise ValueError(f"tracegrad.save: the object is nested too deeply to save (more than about "
                         f"{sys.getrecursionlimit() // 2} levels of dicts/lists/tuples); flatten it "
                         f"first") from None
    meta = {"tracegrad": json.dumps({"format": _FORMAT, "tree": tree}, separators=(",", ":"))}
    if legacy:
        # save(_use_new_zipfile_serialization=False): the same format, marked, because torch's
        # legacy files cannot be memory-mapped and load(mmap=True) refuses them
        meta["tracegrad_legacy"] = "1"
    return safetensors.numpy.save(arrays, metadata=meta)


# --- decode: (node, arrays) -> object -----------------------------------------------------

class _Corrupt(Exception):
    pass


class _TensorUnpickler(pickle.Unpickler):
    """Unpickles a saved object, its tensors read from the file's arrays. With
    ``weights_only`` (torch's default) only the classes and functions allowlisted with
    ``add_safe_globals`` / ``safe_globals`` (and ``_ALWAYS_SAFE``) may be named by the pickle:
    anything else is an ``UnpicklingError`` naming it, as torch's weights-only unpickler."""

    def __init__(self, data, arrays, place):
        super().__init__(io.BytesIO(data))
        self.arrays, self.place, self.tensors = arrays, place, place.pickled
        if place.weights_only and b"\x91" in data and \
                any(op.name == "FROZENSET" for op, _arg, _pos in pickletools.genops(data)):
            # pickle's own frozenset opcode names no global: torch's weights-only unpickler refuses it
            raise _refuse("builtins", "frozenset")

    def persistent_load(self, pid):
        t = self.tensors.get(pid)
        if t is None:
            t = self.tensors[pid] = _decode(json.loads(pid), self.arrays, self.place)
        return t

    def find_class(self, module, name):
        # checked by name before importing anything: an import can run code too
        if not self.place.weights_only or _allowed(f"{module}.{name}"):
            return super().find_class(module, name)
        raise _refuse(module, name)


def _refuse(module, name):
    """The error of a weights-only load meeting a global that is not allowlisted, as torch's."""
    return pickle.UnpicklingError(
        f"tracegrad.load: weights-only load failed: the checkpoint names {module}.{name}, which is "
        f"not an allowed global. If you trust the file's source, allowlist it with "
        f"tracegrad.serialization.add_safe_globals([{name}]) or the safe_globals([{name}]) context "
        f"manager, or load with weights_only=False (unpickling can run arbitrary code).")


# collections.Counter as torch's weights-only unpickler: MultiStepLR keeps its milestones in one,
# so an lr scheduler's state_dict must load with weights_only=True. torch 2.13 refuses a
# frozenset, a slice, a range and Ellipsis there (add_safe_globals admits them)
_ALWAYS_SAFE = ("collections.OrderedDict", "collections.Counter", "builtins.set", "builtins.bytearray",
                "builtins.complex",
                # torch's weights-only unpickler takes torch.Size, dtypes and devices as values
                # (pickled as tracegrad.Size and tracegrad.device; files saved before name their modules)
                "tracegrad.Size", "tracegrad.device", "tracegrad._ops.dtypes._by_name",
                "tracegrad._tensor.tensor.Size", "tracegrad._tensor.device.device",
                # a module's hook tables: OrderedDicts that report direct edits to compiled programs
                # (nn/modules/module.py), pickled as themselves so a pickled hook handle still
                # refers to its module's table; an allowlisted module class loads with them
                "tracegrad.nn.modules.module._HookDict")


def _allowed(qualified):
    return qualified in _ALWAYS_SAFE or _safe_global(qualified) is not None


def _safe_global(qualified):
    """The object allowlisted under ``qualified`` (``module.name``), or None: an ``(obj, name)``
    pair maps a name to any object (a torch class's name to tracegrad's, say)."""
    if qualified in _ALWAYS_SAFE:
        module, _, name = qualified.rpartition(".")
        return getattr(importlib.import_module(module), name)
    for g in _SAFE_GLOBALS:
        if isinstance(g, tuple) and len(g) == 2:
            if g[1] == qualified:
                return g[0]
        elif f"{getattr(g, '__module__', '')}.{getattr(g, '__qualname__', '')}" == qualified:
            return g
    return None


class _Unpickling(Exception):
    """An error raised by unpickling a saved object (a class no longer importable...): re-raised
    by ``load`` as it is, not reported as a damaged file."""


def _decode_tensor(kind, node, arrays, place):
    """A tensor (or Parameter) node as a new tensor, placed by ``place``."""
    d = _dt.to_dtype(node["dtype"])
    arr = arrays[node["key"]]
    if arr.dtype != d.np:   # stored as a same-size view (complex128, older files)
        arr = np.ascontiguousarray(arr).reshape(-1).view(d.np)
    if node["device"] == "meta":   # no data was saved: a meta tensor again, as torch's
        t = empty(node["shape"], dtype=d, device="meta")
    elif "view" in node or node["key"] in place.owners:
        t = _decode_view(node, arr, place)
    else:
        t = place(from_file_array(np.ascontiguousarray(arr).reshape(node["shape"])), node["device"])
        place.owners[node["key"]] = t
    if node.get("conj"):
        t = t.conj()
    if kind == "parameter" and _parameter_class() is not None:
        return _parameter_class()(t, requires_grad=node["requires_grad"])
    return t._set_requires_grad(True) if node["requires_grad"] else t


def _decode_view(node, arr, place):
    """A tensor saved against a storage array (NOTE [views in checkpoints]): a view of the one
    tensor that holds that array (made on first use), or an equal-valued copy for a layout no
    chain of views expresses."""
    offset, stride = node.get("view") or [0, None]
    size = tuple(int(k) for k in node["shape"])
    stride = tuple(int(k) for k in (stride if stride is not None else _torch_format._row_major(size)))
    flat = np.ascontiguousarray(arr).reshape(-1)
    if len(stride) != len(size) or offset < 0 or any(k < 0 for k in stride) or \
            (flat.size and offset + sum((k - 1) * s for k, s in zip(size, stride)) >= flat.size):
        raise _Corrupt(f"a tensor of size {size}, stride {stride}, offset {offset} reaches past its storage")
    owner = place.owners.get(node["key"])
    if owner is None:
        owner = place.owners[node["key"]] = place(from_file_array(arr if arr.ndim else flat), node["device"])
    if owner.dtype.name != node["dtype"]:   # another dtype over the same bytes: by value
        owner = None
    view = None if owner is None else _torch_format._strided_view(owner, flat.size, offset, size, stride)
    if view is None:
        copy = np.lib.stride_tricks.as_strided(flat[offset:], size, tuple(s * flat.itemsize for s in stride))
        return place(from_file_array(np.array(copy)), node["device"])
    return view


def _decode(node, arrays, place):
    if isinstance(node, dict) and node.get("t") == "pickle":
        try:
            data = base64.b64decode(node["v"])
        except (KeyError, TypeError, ValueError) as e:
            raise _Corrupt(f"bad pickled entry: {type(e).__name__}: {e}") from None
        try:
            return _TensorUnpickler(data, arrays, place).load()
        except (_Corrupt, _Unpickling, pickle.UnpicklingError):
            raise
        except Exception as e:
            raise _Unpickling(e) from e
    try:
        kind = node["t"]
        if kind in ("tensor", "parameter"):
            memo = getattr(place, "pickled", None)
            if memo is not None:   # one object per saved tensor object (see _encode)
                pid = json.dumps(node)
                t = memo.get(pid)
                if t is None:
                    t = memo[pid] = _decode_tensor(kind, node, arrays, place)
                return t
            return _decode_tensor(kind, node, arrays, place)
        if kind == "subclass":
            memo = getattr(place, "pickled", None)
            if memo is not None and json.dumps(node) in memo:
                return memo[json.dumps(node)]
            module, _, name = node["cls"].partition(":")
            if place.weights_only:
                cls = _safe_global(f"{module}.{name}")
                if cls is None:
                    raise _refuse(module, name)
            else:
                cls = _class_named(node["cls"])
            t = _decode(node["tensor"], arrays, place).as_subclass(cls)
            if memo is not None:
                memo[json.dumps(node)] = t
            return t
        if kind == "sparse_coo":
            return sparse_coo_tensor(_decode(node["indices"], arrays, place), _decode(node["values"], arrays, place),
                                     node["size"], is_coalesced=node["coalesced"])
        if kind in ("bool", "int", "str"):
            return {"bool": bool, "int": int, "str": str}[kind](node["v"])
        if kind == "float":
            return float(node["v"])
        if kind == "none":
            return None
        if kind in ("dict", "odict"):
            out = collections.OrderedDict() if kind == "odict" else {}
            for k, v in node["items"]:
                out[_decode(k, arrays, place)] = _decode(v, arrays, place)
            if kind == "odict" and "attrs" in node:
                out.__dict__.update(_decode(node["attrs"], arrays, place))
            return out
        if kind in ("list", "tuple"):
            items = [_decode(v, arrays, place) for v in node["items"]]
            return items if kind == "list" else tuple(items)
    except (_Corrupt, _Unpickling, pickle.UnpicklingError):
        raise
    except (KeyError, TypeError, ValueError) as e:
        if getattr(e, "tracegrad_user_error", False):
            raise

        raise _Corrupt(f"bad entry {node!r:.200}: {type(e).__name__}: {e}") from None
    raise _Corrupt(f"unknown entry type {kind!r}")


def _header(data):
    """The safetensors JSON header, or None when ``data`` is not a safetensors file."""
    if len(data) < 8:
        return None
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8 or n == 0:
        return None
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return header if isinstance(header, dict) else None


def _placer(map_location):
    if not (map_location is None or callable(map_location) or isinstance(map_location, (str, dict))
            or type(map_location).__name__ == "device"):
        raise TypeError(f"tracegrad.load: map_location should be a string, a device, a dict or a callable, "
                        f"not {type(map_location).__name__}")

    def place(t, saved_device):
        target = saved_device
        if map_location is not None:
            if callable(map_location):
                try:
                    moved = map_location(t, saved_device)
                except Exception as e:
                    e.tracegrad_user_error = True   # the callable's own error, as torch lets it through
                    raise
                if moved is not None and isinstance(moved, Tensor) and moved.numel() != t.numel():
                    e = RuntimeError(f"tracegrad.load: map_location returned {moved.numel()} elements for a storage "
                                     f"of {t.numel()} (torch: Trying to resize storage that is not resizable); "
                                     "return the storage it was given, moved")
                    e.tracegrad_user_error = True
                    raise e
                if moved is not None and not isinstance(moved, Tensor):
                    # torch builds a storage from what the callable returns: TypeError for
                    # anything else (the object was taken as the loaded tensor before)
                    e = TypeError(f"tracegrad.load: map_location returned {type(moved).__name__}; the callable "
                                  f"must return the storage it was given (moved, e.g. storage.cpu()) or None")
                    e.tracegrad_user_error = True   # the readers pass it on, not as a damaged file
                    raise e
                return t if moved is None else moved
            if isinstance(map_location, dict):
                target = map_location.get(saved_device, saved_device)
            else:
                target = map_location
        if str(target) == str(t.device):
            return t
        try:
            return t.to(target)
        except Exception as e:
            if target is not saved_device:
                # the target is map_location's (a string or a dict's value): it is what is wrong,
                # not the device the tensor was saved on (torch: "don't know how to restore
                # data location ... (tagged with foo)")
                raise RuntimeError(f"tracegrad.load: cannot place a tensor saved on {saved_device!r} on "
                                   f"map_location {target!r} ({e}); pass a device available here such as "
                                   "'cpu', a dict of saved -> new device, or a callable") from None
            raise RuntimeError(f"tracegrad.load: tensor was saved on {saved_device!r}, which is not "
                               f"available here ({e}); pass map_location='cpu'") from None
    return place


# --- public API ---------------------------------------------------------------------------

def _path(f, api, method):
    """``f`` as a path; AttributeError (as torch, which then treats ``f`` as a file object and
    looks for its ``read``/``write``) for anything else."""
    try:
        path = os.fspath(f)
        if isinstance(path, bytes):    # torch takes a str or os.PathLike path only
            raise TypeError
        return path
    except TypeError:
        raise AttributeError(f"tracegrad.{api}: f must be a path (str or os.PathLike) or a file-like object "
                             f"with {method}(), not {type(f).__name__}") from None


# the opcodes a weights-only read takes (those of torch's weights-only unpickler: protocol 2's
# binary forms; no FRAME, text or bytes opcode): any other is refused before a legacy file's
# magic number is compared, as is a GLOBAL that is not allowlisted
_WEIGHTS_ONLY_OPS = frozenset((
    "PROTO", "STOP", "MARK", "GLOBAL", "NEWOBJ", "REDUCE", "BUILD", "APPEND", "APPENDS", "SETITEM", "SETITEMS",
    "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "EMPTY_TUPLE", "EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET", "NONE",
    "NEWTRUE", "NEWFALSE", "BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT", "BINUNICODE", "SHORT_BINSTRING",
    "BINPERSID", "BINGET", "LONG_BINGET", "BINPUT", "LONG_BINPUT"))


def _pickled_global_allowed(arg):
    """Whether a GLOBAL opcode's ``"module name"`` is one a weights-only read takes (protocol 2
    names ``builtins`` as ``__builtin__``, and bytes as ``_codecs.encode``)."""
    import _compat_pickle
    module, _, name = str(arg).partition(" ")
    module = _compat_pickle.IMPORT_MAPPING.get(module, module)
    return f"{module}.{name}" == "_codecs.encode" or _allowed(f"{module}.{name}")


def _whole_pickle(data, plain=False) -> bool:
    """Whether ``data`` opens with one complete pickle (its opcodes parsed, nothing run); with
    ``plain``, one that a weights-only read gets through (see ``_WEIGHTS_ONLY_OPS``)."""
    import pickletools
    try:
        for op, arg, _pos in pickletools.genops(io.BytesIO(data)):
            if op.name == "STOP":
                return True
            if plain and (op.name not in _WEIGHTS_ONLY_OPS
                          or op.name == "GLOBAL" and not _pickled_global_allowed(arg)):
                return False
    except Exception:   # noqa: BLE001 -- any parse failure: not a pickle
        return False
    return False


def _unreadable_class(data):
    """The class torch.load raises for bytes that are no checkpoint: EOFError for an empty file,
    RuntimeError for a truncated one of its own format (here: a safetensors length prefix, whose
    high bytes are zero, or its header's ``{``), UnpicklingError for other bytes."""
    if not data:
        return EOFError
    prefix = data[:8]
    if len(data) < 8 and prefix[:1] == b"\x80" and prefix[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return pickle.UnpicklingError    # the opening of a pickle (protocol 2-5), cut short
    if all(b == 0 for b in prefix[4:]) and (len(data) <= 8 or data[8:9] == b"{"):
        return RuntimeError
    return pickle.UnpicklingError


def _check_pickle_module(pickle_module, api):
    """torch reads ``pickle_module.__name__`` (its dill version check) in save and load:
    AttributeError for an object without one."""
    if pickle_module is not None and not hasattr(pickle_module, "__name__"):
        raise AttributeError(f"'{type(pickle_module).__name__}' object has no attribute '__name__' "
                             f"(tracegrad.{api}: pickle_module must be a module such as pickle)")


def _check_pickle_args(pickle_module, pickle_protocol):
    """torch hands ``pickle_module`` / ``pickle_protocol`` to pickle (which refuses them with
    these classes); tracegrad ignores their effect, so it checks them the same way first."""
    if pickle_module is None:   # torch's default is the pickle module; None has no Pickler
        raise AttributeError("'NoneType' object has no attribute 'Pickler' (tracegrad.save: pickle_module must be "
                             "a module such as pickle; leave it out for the default)")
    _check_pickle_module(pickle_module, "save")
    if pickle_protocol is not None:
        if not hasattr(pickle_protocol, "__index__"):
            raise TypeError(f"'{type(pickle_protocol).__name__}' object cannot be interpreted as an integer "
                            f"(tracegrad.save: pickle_protocol must be an int)")
        if int(pickle_protocol) > pickle.HIGHEST_PROTOCOL:
            raise ValueError(f"pickle protocol must be <= {pickle.HIGHEST_PROTOCOL} (tracegrad.save got "
                             f"pickle_protocol={pickle_protocol})")


# the keywords torch.load hands on to its unpickler
_PICKLE_LOAD_ARGS = ("encoding", "errors", "fix_imports", "buffers")


def save(obj, f, pickle_module=pickle, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Write ``obj`` to ``f``. Mirrors ``torch.save`` (see the module notes).

    Args:    ``obj``: tensors, dicts (e.g. ``model.state_dict()``), lists, tuples and plain
             int/float/str/bool/None values, nested, are stored without pickle; any other
             object (a whole module, an optimizer) is pickled, its tensors stored as arrays;
             a sparse COO tensor keeps its indices, values and coalesced flag; a tensor of a
             user's Tensor subclass keeps its class by name (as torch pickles it: a
             weights-only load refuses it unless allowlisted); tensor hooks are not saved
             (a UserWarning, as torch, unless marked ``utils.hooks.unserializable_hook``);
             ``f``: a path (str or ``os.PathLike``)
             or a binary file object opened for writing. ``pickle_module`` and
             ``pickle_protocol`` are checked as torch's pickler reads them (AttributeError for
             ``pickle_module=None``) and otherwise ignored; ``_use_new_zipfile_serialization=False``
             writes the same format, marked so that ``load(mmap=True)`` refuses it as torch
             refuses its legacy files.
    Atomic:  for a path, the bytes go to a temporary file in the same directory, are
             ``fsync``'ed, and ``os.replace`` moves it over ``f``: a crash mid-save leaves the
             old file intact. A file object is written in place (no such guarantee).
    Dtypes:  every tracegrad dtype, bfloat16 and complex included, round-trips exactly.
    Raises:  pickle's error (``AttributeError`` for a local class or a lambda,
             ``TypeError``, ``PicklingError``) naming the object and its place in ``obj``;
             RuntimeError when the parent directory of a path does not exist.

    >>> import io
    >>> buf = io.BytesIO(); tracegrad.save({"w": tracegrad.ones(2)}, buf); _ = buf.seek(0)
    >>> tracegrad.load(buf)["w"]
    tensor([1., 1.])
    """
    _check_pickle_args(pickle_module, pickle_protocol)
    data = _to_bytes(obj, legacy=not _use_new_zipfile_serialization)
    if hasattr(f, "write"):
        f.write(data)
        if hasattr(f, "flush"):
            f.flush()
        return
    path = _path(f, "save", "write")
    if os.path.isdir(path):   # torch's file writer refuses it (RuntimeError), before any write
        raise RuntimeError(f"tracegrad.save: {path!r} is a directory; pass a file path inside it "
                           f"(os.path.join({path!r}, 'model.pt'))")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise RuntimeError(f"tracegrad.save: Parent directory {directory} does not exist.")
    prefix = _temp_prefix(path)
    _remove_stale_temps(directory, prefix)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f"{prefix}{os.getpid()}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable; not possible on every platform
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


def _temp_prefix(path):
    return f".{os.path.basename(path)}.tracegrad-save."


def _remove_stale_temps(directory, prefix):
    """Delete temp files a killed save of the same target left behind. Their names carry the
    writing process's id; a file is stale when that process is gone (a concurrent save by a
    live process keeps its file)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid = name[len(prefix):].split(".", 1)[0]
        if not pid.isdigit() or (int(pid) != os.getpid() and _alive(int(pid))):
            continue
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:
            pass


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:   # exists but is not ours to signal
        return True
    return True


def _read_arrays(data, header, name):
    """The tensors of a safetensors file, from its header (dtype, shape, byte offsets)."""
    n = struct.unpack("<Q", data[:8])[0]
    out = {}
    for key, info in header.items():
        if key == "__metadata__":
            continue
        try:
            dt = np.dtype(_ST_DTYPES[info["dtype"]])
            start, end = info["data_offsets"]
            shape = tuple(info["shape"])
            count = int(np.prod(shape, dtype=np.int64))
            if end - start != count * dt.itemsize or 8 + n + end > len(data):
                raise ValueError("byte range does not match its dtype and shape (truncated?)")
            out[key] = np.frombuffer(data, dtype=dt, count=count, offset=8 + n + start).reshape(shape)
        except (KeyError, TypeError, ValueError) as e:
            raise RuntimeError(f"tracegrad.load: {name!r} is damaged, truncated or holds an unsupported "
                               f"tensor {key!r} ({type(e).__name__}: {e})") from None
    return out


def _tell(f):
    """``f``'s position when it can seek back to one (else None)."""
    try:
        return f.tell() if f.seekable() else None
    except (AttributeError, OSError, ValueError):
        return None


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Read an object written by :func:`save`. Mirrors ``torch.load``.

    Args:    ``f``: a path or a binary file object opened for reading, holding a tracegrad
             checkpoint or a ``torch.save`` file (zip or legacy); ``map_location``:
             None (each tensor back on the device it was saved from), a device or device
             string, a dict ``{saved_device: device}``, or a callable ``(tensor, saved_device)
             -> tensor``; ``weights_only``: None (the default) means True as torch 2.6+, unless
             ``pickle_module`` is given or the environment sets
             ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` (``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` forces
             True), as torch; True unpickles a
             saved object (not tensors, containers or plain values) only when every class it
             names is allowlisted (``add_safe_globals``); ``mmap``: as torch, for a path only
             and not for a legacy torch file (a torch zip file at a path is always mapped,
             its storages read in place, so the flag changes nothing else).
             ``pickle_load_args``: ``encoding`` / ``errors`` for Python 2 strings in torch files
             (as torch, only ``encoding`` under ``weights_only=True``, with its UserWarning).
    Returns: the saved structure, with tensors (``requires_grad`` as saved) and plain values;
             dicts come back as dict or OrderedDict as saved, tuples as tuples. A seekable
             file object holding a tracegrad checkpoint is left just past it (objects saved
             one after another to one file load back in turn).
    Raises:  pickle.UnpicklingError for a pickled object naming a class that is not
             allowlisted, under ``weights_only=True``; the
             unpickling's own error (a class no longer importable) under False;
             RuntimeError naming the file when it is truncated or damaged, is neither a
             safetensors nor a ``torch.save`` file, holds a pickled torch object (a whole
             module) or a dtype tracegrad lacks, or its tensors' device is missing here (use
             ``map_location``); ValueError for ``mmap=True`` with a file object, RuntimeError
             with a legacy torch file; FileNotFoundError for a missing path; AttributeError
             (or io.UnsupportedOperation) for a file object that cannot seek and for a
             ``pickle_module`` without ``__name__``; a ``map_location`` callable's own error,
             TypeError when it returns no tensor, RuntimeError for one of another size.
    """
    weights_only = _weights_only_mode(weights_only, pickle_module)
    _check_pickle_module(pickle_module, "load")
    if weights_only and pickle_load_args:
        _warn("pickle_load_args only works if `weights_only=False`.")
    # torch's weights-only unpickler takes ``encoding`` only; pickle's takes the four
    unknown = [k for k in pickle_load_args if k not in (("encoding",) if weights_only else _PICKLE_LOAD_ARGS)]
    if unknown:   # torch's unpickler refuses them (TypeError)
        raise TypeError(f"load() got an unexpected keyword argument {unknown[0]!r} (tracegrad.load takes f, "
                        f"map_location, pickle_module, weights_only, mmap and the unpickler's "
                        f"{', '.join(_PICKLE_LOAD_ARGS)}; under weights_only=True only encoding)")
    if isinstance(f, (bytes, bytearray)) and not hasattr(f, "read"):
        # torch takes bytes for a file object and calls f.seek first
        raise AttributeError(f"'{type(f).__name__}' object has no attribute 'seek'. tracegrad.load reads a path or a "
                             f"seekable file object: wrap the data in io.BytesIO(data)")
    if hasattr(f, "read"):
        try:   # torch reads only a seekable file object (its f.seek(f.tell()) check)
            f.seek(f.tell())
        except (io.UnsupportedOperation, AttributeError) as e:
            raise type(e)(f"{e}. You can only tracegrad.load from a file that is seekable: pre-load the data into "
                          f"a buffer such as io.BytesIO(data) and load from it") from None
        name = getattr(f, "name", None) or repr(f)
        start = _tell(f)
        data = f.read()
    else:
        name = _path(f, "load", "read")
        data = _torch_format.read_file(name, mmap)
    if isinstance(data, str):
        # torch: EOFError for nothing read, else its unpickler's AssertionError (weights_only)
        # or pickle's TypeError
        cls = EOFError if not data else AssertionError if weights_only else TypeError
        raise cls(f"tracegrad.load: {name!r} was opened in text mode (expected bytes, got str); open it with 'rb'")
    if mmap and hasattr(f, "read") and (data[:4] == b"PK\x03\x04" or _header(bytes(data)) is not None):
        # torch looks at the format first: a file object holding a zip checkpoint is this
        # ValueError, anything else the "mmap can only be used with" RuntimeError below
        raise ValueError("tracegrad.load: f must be a file path in order to use the mmap argument")
    if data[:4] == b"PK\x03\x04" or _torch_format.is_legacy(data):   # written by torch.save
        if mmap and data[:4] != b"PK\x03\x04":
            raise RuntimeError(f"tracegrad.load: mmap can only be used with files saved with "
                               f"`torch.save({name}, _use_new_zipfile_serialization=True)`, please torch.save "
                               f"your checkpoint with this option in order to use mmap.")
        return _torch_format.load_torch(data, name, _placer(map_location), weights_only, _safe_global,
                                        _refuse, pickle_load_args)
    data = bytes(data)
    header = _header(data)
    if header is None and mmap:   # torch refuses mmap for anything but its zip format, before unpickling
        raise RuntimeError(f"tracegrad.load: mmap can only be used with files saved with "
                           f"`torch.save({name}, _use_new_zipfile_serialization=True)` or tracegrad.save, please "
                           f"save your checkpoint with one of them in order to use mmap.")
    if mmap and header is not None and (header.get("__metadata__") or {}).get("tracegrad_legacy"):
        raise RuntimeError(f"tracegrad.load: mmap can only be used with files saved with "
                           f"`save({name}, _use_new_zipfile_serialization=True)`; this one was saved with "
                           f"_use_new_zipfile_serialization=False: save it again without it to use mmap.")
    if header is None:
        if _whole_pickle(data, plain=weights_only):
            # torch's legacy reader unpickles a magic number first and finds another object
            # (under weights_only, one that names no global: a class is refused before that)
            raise RuntimeError(f"tracegrad.load: Invalid magic number; corrupt file? {name!r} is a plain pickle, "
                               f"not a checkpoint written by save (read it with pickle.load)")
        raise _unreadable_class(data)(
            f"tracegrad.load: {name!r} is not a tracegrad checkpoint (no valid safetensors header) nor a "
            f"torch.save file: the file is truncated, empty or of another format.")
    arrays = _read_arrays(data, header, name)
    if hasattr(f, "read") and start is not None:
        # leave the file object just past this checkpoint, as torch's reader does: several
        # objects written one after another to one file load back in turn
        n = struct.unpack("<Q", data[:8])[0]
        ends = [info["data_offsets"][1] for k, info in header.items() if k != "__metadata__"]
        f.seek(start + 8 + n + max(ends, default=0))
    desc = (header.get("__metadata__") or {}).get("tracegrad")
    place = _placer(map_location)
    place.weights_only, place.pickled = weights_only, {}     # one tensor per saved object
    place.owners = {}   # array key -> the tensor holding that storage (NOTE [views in checkpoints])
    if desc is None:  # a plain safetensors file from another tool
        return {k: place(from_file_array(np.ascontiguousarray(v)), "cpu") for k, v in arrays.items()}
    try:
        desc = json.loads(desc)
        if desc.get("format") != _FORMAT:
            raise _Corrupt(f"unknown format {desc.get('format')!r} (this tracegrad reads {_FORMAT!r})")
        return _decode(desc["tree"], arrays, place)
    except _Unpickling as e:
        raise e.args[0] from None
    except (_Corrupt, ValueError, KeyError, AttributeError) as e:
        raise RuntimeError(f"tracegrad.load: {name!r} has a damaged structure description: {e}") from None


_TRUE_VALUES = ("1", "y", "yes", "true")


def _weights_only_mode(weights_only, pickle_module):
    """``load``'s effective ``weights_only``, as torch decides it: not given (None) means True
    unless a ``pickle_module`` is passed; the environment variable
    ``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` forces True, ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` forces
    False only where the caller did not pass ``weights_only`` (with a UserWarning). The torch
    names are kept so that a program run under both libraries is switched by one variable
    (older scripts that ``torch.load`` a pickled numpy array need it since torch 2.6).
    Raises RuntimeError when both variables are set, or for ``weights_only=True`` with a
    ``pickle_module``."""
    force_on = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE_VALUES
    force_off = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE_VALUES
    if force_on and force_off:
        raise RuntimeError("tracegrad.load: only one of TORCH_FORCE_WEIGHTS_ONLY_LOAD or "
                           "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD should be set, but both were set; "
                           "unset one of them.")
    if force_on:
        return True
    if weights_only is None:
        if force_off:
            _warn("tracegrad.load: environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD "
                  "detected; since weights_only was not passed, loading with "
                  "weights_only=False.", UserWarning)
            return False
        return pickle_module is None
    if weights_only and pickle_module is not None:   # torch: the weights-only unpickler is its own
        raise RuntimeError("tracegrad.load: Can not safely load weights when explicit pickle_module is "
                           "specified; drop pickle_module or pass weights_only=False")
    return weights_only


# torch's weights-only unpickler accepts the classes and functions allowlisted here; so does
# ``load`` for the entries ``save`` pickled (whole modules, optimizers, user objects).
_SAFE_GLOBALS: list = []


def add_safe_globals(safe_globals):
    """Mirrors ``torch.serialization.add_safe_globals``: allowlists ``safe_globals`` (a list of
    classes/functions, or ``(obj, "module.name")`` pairs) for :func:`load` with
    ``weights_only=True`` (a pickled entry may name them). Raises TypeError for a non-list, as
    torch."""
    if not isinstance(safe_globals, list):
        raise TypeError(f"add_safe_globals: expected a list of globals, got {type(safe_globals).__name__}")
    _SAFE_GLOBALS.extend(safe_globals)


def get_safe_globals():
    """Mirrors ``torch.serialization.get_safe_globals``: the list :func:`add_safe_globals` built."""
    return list(_SAFE_GLOBALS)


def clear_safe_globals():
    """Mirrors ``torch.serialization.clear_safe_globals``."""
    _SAFE_GLOBALS.clear()


class safe_globals:  # noqa: N801  (torch's name: a context manager class)
    """Mirrors ``torch.serialization.safe_globals``: ``with safe_globals([...]):`` adds the list
    for the duration of the block and puts the previous list back on exit."""

    def __init__(self, safe_globals):
        if not isinstance(safe_globals, list):
            raise TypeError(f"safe_globals: expected a list of globals, got {type(safe_globals).__name__}")
        self.safe_globals = safe_globals

    def __enter__(self):
        self._saved = list(_SAFE_GLOBALS)
        _SAFE_GLOBALS.extend(self.safe_globals)
        return self

    def __exit__(self, *exc):
        _SAFE_GLOBALS[:] = self._saved
        return False
