"""Reading files written by PyTorch's own ``torch.save``, without torch: ``tracegrad.load``
(``serialization.py``) hands a file here when it is a torch zip archive or a legacy torch file.

Formats:
- zip (torch >= 1.6's default): records under one top folder (the file's stem when saved):
  ``data.pkl`` (the object, pickled), ``data/<key>`` (one raw storage per key), ``byteorder``
  (``little``/``big``), ``version``, ``.data/serialization_id``. A TorchScript archive
  (``constants.pkl``) is refused: ``tracegrad.jit.load`` cannot run TorchScript either.
- legacy (``_use_new_zipfile_serialization=False``): pickled magic number, protocol version and
  system info, the object's pickle, the pickled list of storage keys, then each storage as an
  int64 element count and its raw bytes. The storages' dtypes are known only from the object's
  pickle, which comes first; NOTE [legacy scan] says how they are found before it runs.

The object's pickle names torch globals (``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``,
``torch.float32``, ``torch.Size``, ``torch.device``...); each maps onto tracegrad's own in
``_TORCH_GLOBALS``, so nothing of torch is imported. Tensors are rebuilt from (storage, offset,
size, stride) as torch does; tensors sharing one storage share it after loading too where tracegrad
can express the layout as views (NOTE [shared storages]), else they are equal-valued copies.
"""
from __future__ import annotations

import _compat_pickle
import io
import math
import mmap as _mmap
import os
import pickle
import struct
import zipfile

import numpy as np

from ._ops import dtypes as _dt
from ._tensor.device import device as _device
from ._tensor.factories import from_file_array
from ._tensor.tensor import Tensor

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C      # torch's legacy header, pickled as the first object
LEGACY_PROTOCOL_VERSION = 1001

# the legacy storage classes torch's pickles name, by the tracegrad dtype of their elements
_STORAGE_CLASSES = {
    "DoubleStorage": _dt.float64, "FloatStorage": _dt.float32, "HalfStorage": _dt.float16,
    "BFloat16Storage": _dt.bfloat16, "ComplexDoubleStorage": _dt.complex128,
    "ComplexFloatStorage": _dt.complex64, "LongStorage": _dt.int64, "IntStorage": _dt.int32,
    "ShortStorage": _dt.int16, "CharStorage": _dt.int8, "ByteStorage": _dt.uint8, "BoolStorage": _dt.bool_,
}
# the dtypes torch names in ``_rebuild_tensor_v3`` (uint16/32/64 and float8 have no legacy storage class)
_DTYPES = {d.name: d for d in _dt.ALL}
# torch dtypes and storages tracegrad has no tensors of (NOTE [dtypes without storage]): named in the error
_MISSING_DTYPES = tuple(d.name for d in _dt.NO_STORAGE)


class _StorageClass:
    """What ``torch.FloatStorage`` (``dtype`` float32) or ``torch.UntypedStorage`` (bytes:
    ``dtype`` None, the tensor's own dtype comes with ``_rebuild_tensor_v3``) stand for."""

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


def _refuse_unsupported(reader, module, name):
    """RuntimeError for what torch's own loader rebuilds but tracegrad cannot: a dtype (or its
    storage class) tracegrad lacks, and sparse, quantized, meta, nested or subclass tensors."""
    dtype = name if name in _MISSING_DTYPES else name.removesuffix("Storage").lower()
    if module == "torch" and dtype in _MISSING_DTYPES:
        raise RuntimeError(f"tracegrad.load: {reader.name!r} holds a tensor or value of dtype torch.{dtype}, "
                           f"which tracegrad does not have (it has {', '.join(sorted(_DTYPES))}); convert it "
                           f"in PyTorch (e.g. .to(torch.float32)) and save again")
    if module == "torch._utils" and name.startswith("_rebuild_"):
        raise RuntimeError(f"tracegrad.load: {reader.name!r} holds a tensor torch rebuilds with "
                           f"torch._utils.{name} (a sparse, quantized, meta, nested or subclass tensor), "
                           f"which tracegrad does not have; save it as a dense tensor in PyTorch (.to_dense(), "
                           f".dequantize()) and save again")


# --- tensors ---------------------------------------------------------------------------------

class _Storage:
    """One storage of the file: its class (``cls``: the dtype its ``numel`` counts), its bytes
    (``raw``, uint8; None until read) and, per dtype, the tensor the storage's later tensors are
    views of (NOTE [shared storages])."""

    def __init__(self, reader, key, cls, location, numel):
        self.reader, self.key, self.cls, self.location = reader, key, cls, location
        self.itemsize = 1 if cls.dtype is None else np.dtype(cls.dtype.np).itemsize
        self.nbytes = numel * self.itemsize
        self.raw, self.owners, self.arrays = None, {}, {}

    def array(self, dtype):
        """The storage's elements as a flat numpy array of ``dtype`` (native byte order)."""
        arr = self.arrays.get(dtype)
        if arr is None:
            if self.raw is None:
                self.raw = self.reader.storage_bytes(self.key, self.nbytes)
            npd = np.dtype(dtype.np)
            if self.raw.size % npd.itemsize:
                raise RuntimeError(f"tracegrad.load: {self.reader.name!r} is damaged: storage {self.key!r} has "
                                   f"{self.raw.size} bytes, not a whole number of {dtype.name} elements")
            arr = self.raw.view(npd)
            if self.reader.big_endian and npd.itemsize > 1:
                # swap each scalar: a complex number is two floats, each swapped on its own
                part = npd.itemsize // 2 if dtype.is_complex else npd.itemsize
                arr = self.raw.view(f"u{part}").byteswap().view(npd)
            self.arrays[dtype] = arr
        return arr

    def tensor(self, dtype, offset, size, stride):
        size, stride, offset = tuple(int(s) for s in size), tuple(int(s) for s in stride), int(offset)
        arr = self.array(dtype)
        if len(size) != len(stride) or offset < 0 or any(s < 0 for s in size + stride):
            raise RuntimeError(f"tracegrad.load: {self.reader.name!r} is damaged: a tensor has size {size}, "
                               f"stride {stride} and storage offset {offset}")
        if 0 in size:
            return self.reader.place(from_file_array(np.empty(size, arr.dtype)), self.location)
        if offset + sum((n - 1) * s for n, s in zip(size, stride)) >= arr.size:
            raise RuntimeError(f"tracegrad.load: {self.reader.name!r} is damaged: a tensor of size {size}, stride "
                               f"{stride}, offset {offset} reaches past the end of its storage ({arr.size} elements)")
        owner = self.owners.get(dtype)
        if owner is None:
            if offset == 0 and math.prod(size) == arr.size and _is_contiguous(size, stride):
                owner = self.owners[dtype] = self.reader.place(from_file_array(arr.reshape(size)), self.location)
                return owner
            if _plan((arr.size,), arr.size, offset, size, stride) is not None:
                owner = self.owners[dtype] = self.reader.place(from_file_array(arr), self.location)
        if owner is not None:
            view = _strided_view(owner, arr.size, offset, size, stride)
            if view is not None:
                return view
        copy = np.lib.stride_tricks.as_strided(arr[offset:], size, tuple(s * arr.itemsize for s in stride))
        return self.reader.place(from_file_array(np.array(copy)), self.location)


def _is_contiguous(size, stride):
    step = 1
    for n, s in zip(reversed(size), reversed(stride)):
        if n != 1 and s != step:     # a size-1 dim's stride is never used
            return False
        step *= n
    return True


# NOTE [shared storages]
# torch's tensors are (storage, offset, size, stride); tracegrad's are a storage and a chain of
# views (slicing with steps, view, permute, unsqueeze, expand) from a base. The first tensor of a
# storage that covers it whole and contiguously becomes that storage's base, as it is; otherwise
# a base holding the whole storage, flat, is made (not returned: the tensor is a view of it, which
# keeps the whole storage alive as torch does). Each later tensor of the storage is a view of the
# base when each of its dims walks one dim of the base's shape, with a step (``x``, ``x[1:]``,
# ``x.t()``, ``x[::2, 1:]``, ``x[:, 3]``, broadcast dims); failing that, one dim of a grid of the
# flat storage built from its own strides (each a multiple of the next one's span: a view of a
# view, with the base shaped otherwise). Layouts that are neither (overlapping windows, rows that
# wrap past the storage's end) load as copies: equal values, but a write to one is not seen by
# the other.

def _row_major(shape):
    out, step = [], 1
    for k in reversed(shape):
        out.append(step)
        step *= k
    return tuple(reversed(out))


def _walk(shape, offset, size, stride):
    """``(index, dims)`` such that ``base[index]``, for a contiguous ``base`` of ``shape``, is the
    tensor ``(offset, size, stride)`` of its storage without its size-1 and broadcast dims, with
    the others in the order ``dims`` (tensor dim numbers); None when no such index exists."""
    steps, coords, rest = _row_major(shape), [], offset
    for st in steps:
        coords.append(rest // st)
        rest -= coords[-1] * st
    if any(c >= k for c, k in zip(coords, shape)) or (not shape and offset):
        return None
    walks = {}                      # base dim -> (tensor dim, step)
    for i, (k, s) in enumerate(zip(size, stride)):
        if k == 1 or s == 0:
            continue
        for j, st in enumerate(steps):     # the coarsest base dim the tensor dim can walk
            if j not in walks and s % st == 0 and coords[j] + (k - 1) * (s // st) < shape[j]:
                walks[j] = (i, s // st)
                break
        else:
            return None
    index = tuple(slice(c, c + (size[walks[j][0]] - 1) * walks[j][1] + 1, walks[j][1]) if j in walks else c
                  for j, c in enumerate(coords))
    return index, [walks[j][0] for j in sorted(walks)]


def _grid(n, size, stride):
    """A shape for the flat storage of ``n`` elements with one dim per non-trivial dim of the
    tensor ``(size, stride)``, of that dim's stride, or None when its strides do not nest."""
    dims = sorted(((s, k) for k, s in zip(size, stride) if k > 1 and s > 0), reverse=True)
    for (sa, _), (sb, kb) in zip(dims, dims[1:]):
        if sa % sb or sa < kb * sb:
            return None
    if not dims:
        return (n,)
    strides = [s for s, _ in dims]
    return (n // strides[0],) + tuple(a // b for a, b in zip(strides, strides[1:])) + (strides[-1],)


def _plan(base_shape, n, offset, size, stride):
    """``(grid, index, dims)``: the tensor ``(offset, size, stride)`` is ``base[index]`` (``base``
    contiguous, of ``base_shape``, holding its whole storage of ``n`` elements), or that of
    ``base`` flattened and viewed as ``grid`` (when not None), as in ``_walk``; None if neither."""
    found = _walk(base_shape, offset, size, stride)
    if found is not None:
        return (None,) + found
    grid = _grid(n, size, stride)
    found = None if grid is None else _walk(grid, offset, size, stride)
    return None if found is None else (grid,) + found


def _strided_view(base, n, offset, size, stride):
    """The tensor ``(offset, size, stride)`` as a view of ``base`` (which holds its whole storage
    of ``n`` elements, contiguous), or None (NOTE [shared storages])."""
    plan = _plan(tuple(base.shape), n, offset, size, stride)
    if plan is None:
        return None
    grid, index, dims = plan
    v = base.detach()
    if grid is not None:
        v = v.view(-1)[:math.prod(grid)].view(grid)
    v = v[index]
    # back in the tensor's order, then its size-1 and broadcast (stride 0) dims added
    if len(dims) > 1:
        v = v.permute(sorted(range(len(dims)), key=lambda j: dims[j]))
    for i, (k, s) in enumerate(zip(size, stride)):
        if k == 1 or s == 0:
            v = v.unsqueeze(i)
    return v.expand(size) if tuple(v.shape) != size else v


def _with_metadata(t, metadata):
    # torch saves a conjugate or negative *view* as its un-conjugated storage plus these bits
    if metadata:
        if metadata.get("conj"):
            t = t.conj_physical() if hasattr(t, "conj_physical") else t.conj()
        if metadata.get("neg"):
            t = -t
    return t


def _requires_grad(t, requires_grad):
    return t._set_requires_grad(True) if requires_grad else t


def _rebuild_tensor(storage, storage_offset, size, stride):
    if storage.cls.dtype is None:
        raise RuntimeError(f"tracegrad.load: {storage.reader.name!r} is damaged: an untyped storage is rebuilt "
                           f"without a dtype")
    return storage.tensor(storage.cls.dtype, storage_offset, size, stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    t = _with_metadata(_rebuild_tensor(storage, storage_offset, size, stride), metadata)
    return _requires_grad(t, requires_grad)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                       metadata=None):
    if not isinstance(dtype, _dt.dtype):
        raise RuntimeError(f"tracegrad.load: {storage.reader.name!r} is damaged: a tensor's dtype is {dtype!r}")
    t = _with_metadata(storage.tensor(dtype, storage_offset, size, stride), metadata)
    return _requires_grad(t, requires_grad)


def _parameter_class():
    from .nn.parameter import Parameter   # local: nn imports tracegrad, which imports serialization
    return Parameter


def _rebuild_parameter(data, requires_grad, backward_hooks):
    return _parameter_class()(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def _set_state(obj, state):
    """Python attributes a tensor carried (``(dict, slots)`` or a dict), as ``torch._utils._set_obj_state``."""
    if isinstance(state, tuple) and len(state) == 2:
        parts = state
    elif state is None or isinstance(state, dict):
        parts = (state,)
    else:
        raise RuntimeError(f"tracegrad.load: a tensor's saved state is {type(state).__name__}, not a dict")
    for part in parts:
        for k, v in (part or {}).items():
            setattr(obj, k, v)
    return obj


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor of class ``new_type`` (``Tensor``, ``Parameter`` or an allowlisted subclass) with
    Python attributes ``state``: ``func(*args)`` rebuilds its data."""
    ret = func(*args)
    if isinstance(new_type, type) and issubclass(new_type, Tensor) and not isinstance(ret, new_type):
        if new_type is _parameter_class():
            ret = new_type(ret, ret.requires_grad)
        elif hasattr(ret, "as_subclass"):
            ret = ret.as_subclass(new_type)
        else:
            raise RuntimeError(f"tracegrad.load: cannot rebuild a tensor of class {new_type.__qualname__}")
    setstate = getattr(type(ret), "__setstate__", None)
    if setstate is not None and setstate is not getattr(Tensor, "__setstate__", None):
        ret.__setstate__(state)
        return ret
    return _set_state(ret, state)


def _size(dims=()):
    from . import Size    # local: the API layer assembles tracegrad.Size
    return Size(dims)


_TORCH_GLOBALS = {
    "torch._utils._rebuild_tensor": _rebuild_tensor,
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
    "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
    "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
    "torch.Size": _size,
    "torch.device": _device,
    "torch.UntypedStorage": _StorageClass("UntypedStorage", None),
    "torch.storage.UntypedStorage": _StorageClass("UntypedStorage", None),
    "_codecs.encode": lambda s, encoding="utf-8": s.encode(encoding),   # bytes, in protocol-2 pickles
    **{f"torch.{name}": _StorageClass(name, d) for name, d in _STORAGE_CLASSES.items()},
    **{f"torch.{name}": d for name, d in _DTYPES.items()},
}
# classes looked up when named: tracegrad.nn cannot be imported while tracegrad (which imports
# this module) is still loading
_TORCH_CLASSES = {"torch.Tensor": lambda: Tensor, "torch._tensor.Tensor": lambda: Tensor,
                  "torch.nn.parameter.Parameter": _parameter_class}


# --- unpickling ------------------------------------------------------------------------------

class _Unpickler(pickle.Unpickler):
    """The object's pickle: storages come from ``reader``, torch's globals from ``_TORCH_GLOBALS``.
    With ``weights_only`` anything else must be allowlisted (``reader.safe_global``), as torch's
    weights-only unpickler; without it, other globals import as usual, but a torch class still
    cannot be rebuilt without torch and is refused by name."""

    def __init__(self, file, reader, **kwargs):
        super().__init__(file, **kwargs)
        self.reader = reader

    def find_class(self, module, name):
        # protocol 2 (torch's) writes Python 2 names (``__builtin__.set``): map them, as pickle does
        module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        qualified = f"{module}.{name}"
        found = _TORCH_GLOBALS.get(qualified)
        if found is not None:
            return found
        if qualified in _TORCH_CLASSES:
            return _TORCH_CLASSES[qualified]()
        _refuse_unsupported(self.reader, module, name)
        safe = self.reader.safe_global(qualified)
        if safe is not None:     # allowlisted (a class, or an (object, name) pair mapping a torch name)
            return safe
        if module == "torch" or module.startswith("torch."):
            if self.reader.weights_only:
                raise self.reader.refusal(module, name)
            raise RuntimeError(
                f"tracegrad.load: {self.reader.name!r} holds a {qualified} object, which cannot be rebuilt "
                f"without PyTorch. In PyTorch, save its state_dict() instead (torch.save(model.state_dict(), "
                f"path)) and load that into the tracegrad model with model.load_state_dict(tracegrad.load(path)).")
        if self.reader.weights_only:
            raise self.reader.refusal(module, name)
        return super().find_class(module, name)

    def persistent_load(self, pid):
        return self.reader.persistent_load(pid)


def _pickle_kwargs(pickle_load_args):
    # torch.load reads Python 2 strings as utf-8 unless told otherwise
    return {"encoding": pickle_load_args.get("encoding", "utf-8"), "errors": pickle_load_args.get("errors", "strict")}


class _Reader:
    """What one load needs besides the pickle: where storages' bytes are, the byte order, and the
    policy (placement, weights-only allowlist) ``serialization.load`` passes in."""

    def __init__(self, name, place, weights_only, safe_global, refuse):
        self.name, self.place, self.weights_only = name, place, weights_only
        self.safe_global, self.refuse = safe_global, refuse
        self.big_endian, self.storages, self.refused = False, {}, None

    def storage_bytes(self, key, nbytes):
        raise NotImplementedError

    def refusal(self, module, name):
        # kept, so that load_torch tells this UnpicklingError from a damaged pickle's
        self.refused = self.refuse(module, name)
        return self.refused

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or not pid:
            raise RuntimeError(f"tracegrad.load: {self.name!r} is damaged: unknown persistent id {pid!r:.80}")
        kind = pid[0].decode("ascii") if isinstance(pid[0], bytes) else pid[0]
        if kind == "module" and len(pid) > 1:     # legacy files: a module class's source, unused
            return pid[1]
        if kind != "storage" or len(pid) < 5 or not isinstance(pid[1], _StorageClass):
            raise RuntimeError(f"tracegrad.load: {self.name!r} is damaged: expected a storage reference, got "
                               f"{pid!r:.80}")
        cls, key, location, numel = pid[1:5]
        if len(pid) > 5 and pid[5] is not None:
            raise RuntimeError(f"tracegrad.load: {self.name!r} holds a storage view of a torch older than 0.4; "
                               f"load and save it again with a newer PyTorch")
        key = str(key)
        storage = self.storages.get(key)
        if storage is None:
            if not isinstance(numel, int) or numel < 0:
                raise RuntimeError(f"tracegrad.load: {self.name!r} is damaged: storage {key!r} has {numel!r} elements")
            location = location.decode("ascii") if isinstance(location, bytes) else str(location)
            storage = self.storages[key] = _Storage(self, key, cls, location, numel)
        return storage

    def unpickle(self, file, pickle_load_args):
        return _Unpickler(file, self, **_pickle_kwargs(pickle_load_args)).load()


class _SeekableMmap:
    """An mmap as the file object zipfile wants (Python < 3.13's mmap lacks ``seekable``)."""

    def __init__(self, m):
        self.m = m

    def __getattr__(self, name):
        return getattr(self.m, name)

    def seekable(self):
        return True


class _ZipReader(_Reader):
    """torch's zip archive, read from ``buf`` (bytes or an mmap)."""

    def __init__(self, buf, *args):
        super().__init__(*args)
        self.buf = buf
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(buf) if isinstance(buf, bytes) else _SeekableMmap(buf))
            names = self.zip.namelist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, struct.error) as e:
            raise RuntimeError(f"tracegrad.load: {self.name!r}: PytorchStreamReader failed reading zip archive: "
                               f"failed finding central directory (the file is truncated or damaged: "
                               f"{type(e).__name__})") from None
        self.prefix = names[0].split("/", 1)[0] + "/" if names and "/" in names[0] else ""
        if any(n == f"{self.prefix}constants.pkl" or n.startswith(f"{self.prefix}code/") for n in names):
            raise RuntimeError(f"tracegrad.load: {self.name!r} is a TorchScript archive (torch.jit.save); "
                               f"tracegrad cannot run TorchScript: in PyTorch, torch.save the module's "
                               f"state_dict() and load that")
        order = self.record("byteorder", required=False)
        if order is not None and order not in (b"little", b"big"):
            raise RuntimeError(f"tracegrad.load: {self.name!r}: unknown endianness type {order.decode('latin1')!r}")
        self.big_endian = order == b"big"

    def record(self, rel, required=True):
        name = self.prefix + rel
        try:
            return self.zip.read(name)
        except KeyError:
            if not required:
                return None
            raise RuntimeError(f"tracegrad.load: {self.name!r}: PytorchStreamReader failed locating file {rel}: "
                               f"file not found (not a torch.save archive, or damaged)") from None
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, struct.error, NotImplementedError) as e:
            raise RuntimeError(f"tracegrad.load: {self.name!r}: PytorchStreamReader failed reading file {rel}: "
                               f"file read failed ({type(e).__name__}; the file is damaged)") from None

    def storage_bytes(self, key, nbytes):
        rel = f"data/{key}"
        try:
            info = self.zip.getinfo(self.prefix + rel)
        except KeyError:
            raise RuntimeError(f"tracegrad.load: {self.name!r}: PytorchStreamReader failed locating file {rel}: "
                               f"file not found (the archive is damaged)") from None
        if info.file_size < nbytes:
            raise RuntimeError(f"tracegrad.load: {self.name!r}: storage {rel} holds {info.file_size} bytes where "
                               f"{nbytes} are needed (the archive is damaged)")
        if info.compress_type == zipfile.ZIP_STORED:
            # torch stores records uncompressed: read them in place (no copy; an mmap stays lazy)
            head = bytes(self.buf[info.header_offset:info.header_offset + 30])
            if len(head) == 30 and head[:4] == b"PK\x03\x04":
                name_len, extra_len = struct.unpack("<HH", head[26:30])
                start = info.header_offset + 30 + name_len + extra_len
                if start + nbytes <= len(self.buf):
                    return np.frombuffer(self.buf, np.uint8, nbytes, start)
        return np.frombuffer(self.record(rel), np.uint8, nbytes)

    def load(self, pickle_load_args):
        return self.unpickle(io.BytesIO(self.record("data.pkl")), pickle_load_args)


# NOTE [legacy scan]
# A legacy file's storages follow the object's pickle, and their byte counts depend on dtypes
# named only inside it. The pickle is first run by ``_ScanUnpickler``: every global but a
# storage class is a do-nothing stand-in, so no code runs and no tensor is built, and the
# persistent ids it meets give each storage's dtype. Then the storages are read, and the pickle
# is run for real.

class _Anything:
    """Stands for every object during the scan: absorbs calls, state and items."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Anything()

    def __setstate__(self, state):
        pass

    def __setitem__(self, key, value):
        pass

    def append(self, value):
        pass

    def extend(self, values):
        pass


class _ScanUnpickler(pickle.Unpickler):
    def __init__(self, file, reader, **kwargs):
        super().__init__(file, **kwargs)
        self.reader = reader

    def find_class(self, module, name):
        found = _TORCH_GLOBALS.get(f"{module}.{name}")
        if isinstance(found, _StorageClass):
            return found
        if found is None:
            _refuse_unsupported(self.reader, module, name)
        return _Anything

    def persistent_load(self, pid):
        return self.reader.persistent_load(pid)


class _PlainUnpickler(pickle.Unpickler):
    """The legacy header's plain values (numbers, dicts, a list of keys): names no global."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"unexpected global {module}.{name} in the file's header")


class _LegacyReader(_Reader):
    def __init__(self, buf, *args):
        super().__init__(*args)
        self.buf = buf

    def load(self, pickle_load_args):
        f = io.BytesIO(self.buf)
        kwargs = _pickle_kwargs(pickle_load_args)
        if _PlainUnpickler(f).load() != MAGIC_NUMBER:
            raise RuntimeError(f"tracegrad.load: {self.name!r}: invalid magic number; corrupt file?")
        version = _PlainUnpickler(f).load()
        if version != LEGACY_PROTOCOL_VERSION:
            raise RuntimeError(f"tracegrad.load: {self.name!r}: invalid protocol version: {version!r}")
        _PlainUnpickler(f, **kwargs).load()     # system info; legacy storages are little-endian always
        start = f.tell()
        _ScanUnpickler(f, self, **kwargs).load()
        keys = _PlainUnpickler(f, **kwargs).load()
        if not isinstance(keys, list):
            raise RuntimeError(f"tracegrad.load: {self.name!r} is damaged: no storage key list after the object")
        pos = f.tell()
        for key in keys:
            storage = self.storages.get(str(key))
            if storage is None or pos + 8 > len(self.buf):
                raise RuntimeError(f"tracegrad.load: {self.name!r} is damaged or truncated: storage {key!r} "
                                   f"is missing")
            # each storage's element count is in the writer's byte order (its elements are not)
            head, nbytes = bytes(self.buf[pos:pos + 8]), storage.nbytes
            counts = {struct.unpack("<q", head)[0], struct.unpack(">q", head)[0]}
            if nbytes // storage.itemsize not in counts or pos + 8 + nbytes > len(self.buf):
                raise RuntimeError(f"tracegrad.load: {self.name!r} is damaged or truncated: storage {key!r} "
                                   f"should hold {storage.nbytes} bytes")
            storage.raw = np.frombuffer(self.buf, np.uint8, nbytes, pos + 8)
            pos += 8 + nbytes
        f.seek(start)
        return self.unpickle(f, pickle_load_args)

    def storage_bytes(self, key, nbytes):
        raise RuntimeError(f"tracegrad.load: {self.name!r} is damaged or truncated: storage {key!r} has no data")


def is_legacy(data):
    """Whether ``data`` starts as a legacy ``torch.save`` file (its pickled magic number)."""
    if data[:1] != b"\x80":
        return False
    try:
        return _PlainUnpickler(io.BytesIO(bytes(data[:64]))).load() == MAGIC_NUMBER
    except Exception:   # noqa: BLE001  (any failure: not a legacy file)
        return False


def load_torch(data, name, place, weights_only, safe_global, refuse, pickle_load_args):
    """The object in the ``torch.save`` file ``data`` (bytes or an mmap of the file; ``name``
    for messages). ``place(tensor, saved_location)`` puts each storage where ``map_location``
    says; ``safe_global(qualified_name)`` is the allowlisted object or None; ``refuse(module,
    name)`` the ``UnpicklingError`` for a global that is not. RuntimeError for a damaged file."""
    legacy = data[:4] != b"PK\x03\x04"
    reader = (_LegacyReader if legacy else _ZipReader)(data, name, place, weights_only, safe_global, refuse)
    try:
        return reader.load(pickle_load_args)
    except RuntimeError:
        raise
    except pickle.UnpicklingError as e:
        if e is reader.refused:
            raise
        raise RuntimeError(f"tracegrad.load: {name!r} is damaged or truncated: its pickle could not be read "
                           f"({e})") from e
    except (EOFError, ValueError, KeyError, IndexError, TypeError, AttributeError, struct.error,
            zipfile.BadZipFile) as e:
        if getattr(e, "tracegrad_user_error", False):   # the map_location callable's TypeError
            raise
        raise RuntimeError(f"tracegrad.load: {name!r} is damaged or truncated: its pickle could not be read "
                           f"({type(e).__name__}: {e})") from e


def read_file(path, mmap):
    """The bytes of the file at ``path``. A torch zip file (and any file with ``mmap``) is
    memory-mapped read-only rather than read: its storages are then read once, straight into
    tensors (tracegrad copies them, so nothing keeps the mapping after ``load``), and a large
    checkpoint does not sit in memory twice. A file that cannot be mapped is read."""
    with open(path, "rb") as fh:
        head = fh.read(4)
        if mmap or head == b"PK\x03\x04":
            try:
                if os.fstat(fh.fileno()).st_size > 0:
                    return _mmap.mmap(fh.fileno(), 0, access=_mmap.ACCESS_READ)
            except (OSError, ValueError):   # not a regular file (a pipe...): read it
                pass
        return head + fh.read()


__all__ = ["load_torch", "is_legacy", "read_file", "MAGIC_NUMBER"]
