"""Storage: the one ``jax.Array`` behind a tensor and its views, and torch's storage API on it.

A ``Storage`` holds one ``jax.Array`` and a write generation (``gen``). torch code reads a
storage's address to tell views from copies (``x.untyped_storage().data_ptr() ==
y.untyped_storage().data_ptr()``, ``x.data_ptr() == x.reshape(-1).data_ptr()``). JAX arrays have no
stable address (an in-place write replaces the array), so a storage gets a synthetic one the
first time it is asked for: addresses come from a counter, each storage's range as long as its
bytes (at least one), so ``data_ptr() + storage_offset() * element_size()`` of two different
storages never meet, as real allocations do not.

NOTE [storage bytes]: torch's storages read and write their bytes (``storage[i]``, ``tolist()``,
``fill_``, ``copy_``). Here the bytes are those of the storage's array in row-major order (a
laid-out storage holds its array in physical order: NOTE [storage layouts]), read by one host
copy; a write builds the new array from the edited bytes and bumps the write generation so
every tensor on the storage sees it. As in torch, such writes bypass autograd and the version
counter. They need concrete values: inside a compiled region, and on the 'meta' device, they
raise.
"""
from __future__ import annotations


import numpy as np
import jax
from jax import ShapeDtypeStruct as _ShapeDtypeStruct   # a meta storage's array (meta.py)

from .. import _state
from .._ops import dtypes as _dt
from .._ops.warn import warn_once

_CAPTURE = _state.CAPTURE
_BORN = _state.BORN
_ALIGN = 64
_NEXT_ADDRESS = [1 << 20]   # addresses handed out so far (the first is far from 0, a null pointer)


class Storage:
    """Mirrors ``torch.UntypedStorage`` for what programs read of it: ``data_ptr()``, ``nbytes()``,
    ``size()``/``len()`` (bytes), ``element_size()`` (1) and ``device``. Its bytes cannot be read
    or written through it (JAX owns them): go through a tensor. On the 'meta' device ``array`` is
    a ``jax.ShapeDtypeStruct`` and there are no bytes at all (NOTE [meta tensors] in meta.py)."""

    # ``_layout``: set (True) when the array is held in a non-row-major order (NOTE [storage
    # layouts] in memory_format.py); unset otherwise, so the constructor stays as short
    # ``_np``: the numpy array a ``HostSharedStorage`` shares its bytes with (NOTE [numpy bridge])
    __slots__ = ("array", "gen", "_address", "_shared", "_layout", "_np", "__weakref__")

    def __init__(self, array):
        self.array = array
        self.gen = 0
        if _CAPTURE[0] is not None:   # made inside a compiled region: not outside state
            _CAPTURE[0].storage_created(self)
        if _BORN:                     # made inside a torch.cond branch: the branch's own
            for born in _BORN:
                born.add(id(self))

    def data_ptr(self) -> int:
        """The storage's (synthetic, stable) address: equal for views of one storage only; 0 on
        the 'meta' device (no memory), as torch's."""
        if type(self.array) is _ShapeDtypeStruct:
            return 0
        try:
            return self._address
        except AttributeError:
            a = self._address = _NEXT_ADDRESS[0]
            _NEXT_ADDRESS[0] += -(-max(self.nbytes(), 1) // _ALIGN) * _ALIGN + _ALIGN
            return a

    def nbytes(self) -> int:
        """Bytes held (elements times the storage dtype's size)."""
        a = self.array
        return int(np.prod(a.shape)) * a.dtype.itemsize

    size = nbytes
    __len__ = nbytes

    def is_shared(self) -> bool:
        """Mirrors ``torch.UntypedStorage.is_shared``: True once ``share_memory_()`` ran on it."""
        return getattr(self, "_shared", False)

    def share_memory_(self):
        """Mirrors ``torch.UntypedStorage.share_memory_`` in one process: marks the storage
        shared and returns it. There is no cross-process memory to move to: a JAX array is
        owned by its runtime, and torch.multiprocessing's tensor passing is not provided."""
        self._shared = True
        return self

    def element_size(self) -> int:
        return 1

    @property
    def device(self):
        from .device import device_of   # a sibling module; imported late to keep this one small
        return device_of(self.array)

    # ---- the bytes (NOTE [storage bytes]) ----------------------------------------------------
    def tolist(self) -> list:
        """Mirrors ``torch.UntypedStorage.tolist``: the bytes as ints in ``[0, 255]``."""
        return host_bytes(self).tolist()

    def __getitem__(self, idx):
        """Mirrors ``torch.UntypedStorage.__getitem__``: byte ``idx`` as an int (negative counts
        from the end). IndexError past the end. Differs from torch: a slice (a storage sharing
        these bytes in torch) raises NotImplementedError; read ``tolist()[a:b]`` instead."""
        if isinstance(idx, slice):
            raise NotImplementedError("tracegrad: an UntypedStorage slice shares memory in torch; tracegrad storages "
                                      "are whole arrays, so slice a tensor instead or read storage.tolist()[a:b]")
        raw = host_bytes(self)
        return int(raw[_check_index(idx, raw.size)])

    def __setitem__(self, idx, value):
        """Mirrors ``torch.UntypedStorage.__setitem__``: sets byte ``idx`` (or a slice of them)
        to ``value`` (modulo 256). RuntimeError, as torch, for a value that is not an int and for
        an index out of range."""
        if not isinstance(value, (int, np.integer)):
            raise RuntimeError(f"UntypedStorage.__setitem__: can only set storage content with a int types, but got "
                               f"{type(value).__name__} instead")
        raw = host_bytes(self)
        if not isinstance(idx, slice) and isinstance(idx, (int, np.integer)) and not -raw.size <= idx < raw.size:
            raise RuntimeError(f"UntypedStorage.__setitem__: out of bounds (index {idx} for a storage of "
                               f"{raw.size} bytes)")
        raw[idx if isinstance(idx, slice) else _check_index(idx, raw.size)] = int(value) & 0xFF
        put_bytes(self, raw)

    def fill_(self, value):
        """Mirrors ``torch.UntypedStorage.fill_``: every byte becomes ``value`` (modulo 256).
        Returns the storage. RuntimeError, as torch, for a value that is not an int."""
        if not isinstance(value, (int, np.integer)):
            raise RuntimeError(f"UntypedStorage.fill_: fill_ expects int, but got {type(value).__name__}")
        raw = host_bytes(self)
        raw[:] = int(value) & 0xFF
        put_bytes(self, raw)
        return self

    def copy_(self, src, non_blocking=None):
        """Mirrors ``torch.UntypedStorage.copy_``: the bytes of ``src`` (an untyped or typed
        storage) into this one. RuntimeError when the byte counts differ. Returns the storage."""
        src = src.untyped() if isinstance(src, TypedStorage) else src
        if not isinstance(src, Storage):
            raise TypeError(f"copy_(): argument 'src' must be a storage, not {type(src).__name__}")
        if src.nbytes() != self.nbytes():
            raise RuntimeError(f"size does not match, self was {self.nbytes()} bytes but src was {src.nbytes()} bytes")
        put_bytes(self, host_bytes(src))
        return self

    def type(self, dtype=None, non_blocking=False):
        """Mirrors ``torch.UntypedStorage.type()``: its type name."""
        return "torch.storage.UntypedStorage"

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def untyped(self):
        return self

    def __reduce__(self):
        # pickled by value (a meta storage by its shape and dtype); pickle's memo rebuilds one
        # Storage for all tensors that share it
        a = self.array
        if type(a) is _ShapeDtypeStruct:
            return (_meta_storage, (a.shape, np.dtype(a.dtype).str))
        return (_storage_from_numpy, (np.asarray(a),))

    def __repr__(self):
        return storage_repr("tracegrad.storage.UntypedStorage", "", self)


# Whether ``apply_op`` must pass each op through ``meta.run`` and its outputs through
# ``memory_format.follow``: set once a laid-out storage (NOTE [storage layouts]) or a meta storage
# (NOTE [meta tensors] in meta.py) exists, so plain programs pay one flag check per op for both.
FOLLOW_NEEDED = [False]


def _meta_storage(shape, dtype):
    """Rebuild a pickled meta storage (NOTE [meta tensors] in meta.py)."""
    FOLLOW_NEEDED[0] = True
    return Storage(_ShapeDtypeStruct(tuple(shape), np.dtype(dtype)))


def _storage_from_numpy(array):
    """Rebuild a pickled ``Storage`` (a copy of its numpy array, 64-bit dtypes kept)."""
    from .._x64 import x64_scope
    from .host import to_device
    with x64_scope():
        return Storage(to_device(np.array(array)))


def _check_element(value, dtype):
    """TypeError, as torch's typed storages, for a value that is not a number (or a tensor)."""
    if not isinstance(value, (int, float, complex, np.generic)) and not hasattr(value, "item"):
        from .._ops.dtypes import SCALAR_NAMES
        raise TypeError(f"TypedStorage: can't assign a {type(value).__name__} to a torch.{SCALAR_NAMES[dtype.name]}Tensor;"
                        " pass a number")


def _check_index(idx, size):
    if not isinstance(idx, (int, np.integer)):
        raise TypeError(f"storage indices must be integers or slices, not {type(idx).__name__}")
    if not -size <= idx < size:
        raise IndexError(f"index {idx} out of range for storage of size {size}")
    return int(idx) % size


def _concrete(st, what):
    a = st.array
    if type(a) is _ShapeDtypeStruct:
        raise NotImplementedError(f"tracegrad: cannot {what} a 'meta' storage: it holds no data (NOTE [meta tensors])")
    if isinstance(a, jax.core.Tracer) or _CAPTURE[0] is not None:
        raise RuntimeError(f"tracegrad: cannot {what} a storage's bytes inside a compiled region; read or write a "
                           f"tensor on it instead (NOTE [storage bytes])")
    return a


def host_bytes(st) -> np.ndarray:
    """A writable host copy of the storage's bytes, 1-D uint8 (NOTE [storage bytes])."""
    a = np.asarray(_concrete(st, "read"))
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8).copy()


def put_bytes(st, raw) -> None:
    """Make ``raw`` (uint8, the storage's byte count) the storage's bytes, on its device and in
    its array's dtype and shape (NOTE [storage bytes])."""
    old = _concrete(st, "write")
    from .._x64 import x64_scope   # 64-bit dtypes stay 64-bit (DESIGN 2.7)
    value = np.ascontiguousarray(raw).view(old.dtype).reshape(old.shape)
    with x64_scope():
        st.array = jax.device_put(value, next(iter(old.devices())))
    st.gen += 1




class TypedStorage:
    """Mirrors ``torch.TypedStorage`` (``Tensor.storage()``, deprecated in torch as here): a
    storage seen in elements of ``dtype``.

    Built as torch's: ``TypedStorage(dtype=...)`` (empty), ``TypedStorage(size, dtype=...)``
    (zeros; torch's are uninitialised), ``TypedStorage(sequence, dtype=...)``, or
    ``TypedStorage(wrap_storage=untyped, dtype=...)`` (a view of those bytes); ``device=`` as a
    tensor's; dtype defaults to the default dtype. The first one made (or the first
    ``Tensor.storage()``) warns UserWarning, once per process, as torch.
    Reads: ``size()``/``len()`` (elements), ``nbytes()``, ``element_size()``, ``data_ptr()``,
    ``dtype``, ``device``, ``tolist()``, ``[i]`` (a Python number), ``untyped()``, ``type()``.
    Writes (NOTE [storage bytes]): ``[i] = v``, ``fill_(v)`` (cast to ``dtype`` as torch:
    floats truncate into integer storages), ``copy_(src)`` (bytes; RuntimeError when the byte
    counts differ). IndexError past the end; RuntimeError for a slice index, as torch."""

    __slots__ = ("_untyped", "dtype")

    def __init__(self, *args, dtype=None, device=None, wrap_storage=None, _internal=False):
        from .._ops.dtypes import get_default_dtype, to_dtype
        _warn_typed()
        if dtype is not None and not isinstance(dtype, type(get_default_dtype())):   # torch: a dtype only
            raise RuntimeError(f"TypedStorage(): expected torch.dtype, but got {type(dtype)}; pass e.g. "
                               "dtype=torch.float32")
        dtype = get_default_dtype() if dtype is None else to_dtype(dtype)
        if wrap_storage is not None:
            if args or not isinstance(wrap_storage, Storage):
                raise RuntimeError("TypedStorage(): wrap_storage= takes an UntypedStorage and no positional arguments")
            self._untyped, self.dtype = wrap_storage, dtype
            return
        if len(args) > 1:
            raise RuntimeError(f"TypedStorage.__new__ received an invalid combination of arguments: {len(args)} "
                               f"positional arguments; expected none, (int size) or (Sequence data)")
        self._untyped, self.dtype = new_storage(args[0] if args else 0, dtype, device), dtype

    @classmethod
    def _wrap(cls, untyped, dtype):
        t = object.__new__(TypedStorage)
        t._untyped, t.dtype = untyped, dtype
        return t

    def data_ptr(self) -> int:
        return self._untyped.data_ptr()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def size(self) -> int:
        return self._untyped.nbytes() // self.dtype.itemsize

    __len__ = size

    def nbytes(self) -> int:
        return self.size() * self.dtype.itemsize

    def untyped(self) -> Storage:
        return self._untyped

    @property
    def _untyped_storage(self) -> Storage:
        return self._untyped

    @property
    def device(self):
        return self._untyped.device

    @property
    def is_cuda(self) -> bool:
        return self._untyped.is_cuda

    def is_shared(self) -> bool:
        return self._untyped.is_shared()

    def share_memory_(self):
        self._untyped.share_memory_()
        return self

    def type(self, dtype=None, non_blocking=False):
        """Mirrors ``torch.TypedStorage.type()``: the legacy name, ``'torch.FloatStorage'``."""
        return f"torch.{self.pickle_storage_type()}"

    def pickle_storage_type(self) -> str:
        return f"{_dt.SCALAR_NAMES[self.dtype.name]}Storage"

    def _elements(self):
        """A writable host copy of the elements (NOTE [storage bytes])."""
        raw = host_bytes(self._untyped)
        return raw[:self.size() * self.dtype.itemsize].view(self.dtype.np)

    def _put(self, elems):
        raw = host_bytes(self._untyped)
        raw[:elems.nbytes] = elems.view(np.uint8)
        put_bytes(self._untyped, raw)

    def tolist(self) -> list:
        return _python_values(self._elements())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        elems = self._elements()
        return _python_values(elems[_check_index(idx, elems.size)])

    def __setitem__(self, idx, value):
        _check_element(value, self.dtype)
        elems = self._elements()
        elems[idx if isinstance(idx, slice) else _check_index(idx, elems.size)] = value
        self._put(elems)

    def fill_(self, value):
        _check_element(value, self.dtype)
        elems = self._elements()
        elems[:] = value
        self._put(elems)
        return self

    def copy_(self, source, non_blocking=None):
        self._untyped.copy_(source)
        return self

    def __iter__(self):
        return iter(self.tolist())

    def _cast(self, name):
        """A new storage of the elements converted to dtype ``name`` (always a copy, as torch)."""
        dtype = getattr(_dt, name)
        return TypedStorage(self._elements().astype(dtype.np).tolist(), dtype=dtype, device=self.device)

    # torch.TypedStorage's casts (each a copy, even to the same dtype)
    def double(self):
        return self._cast("float64")

    def float(self):
        return self._cast("float32")

    def half(self):
        return self._cast("float16")

    def bfloat16(self):
        return self._cast("bfloat16")

    def long(self):
        return self._cast("int64")

    def int(self):
        return self._cast("int32")

    def short(self):
        return self._cast("int16")

    def char(self):
        return self._cast("int8")

    def byte(self):
        return self._cast("uint8")

    def bool(self):
        return self._cast("bool_")

    def complex_float(self):
        return self._cast("complex64")

    def complex_double(self):
        return self._cast("complex128")

    def __array__(self, dtype=None, copy=None):
        elems = self._elements()
        return elems if dtype is None else elems.astype(dtype)

    def __repr__(self):
        _warn_typed()
        return storage_repr("tracegrad.storage.TypedStorage", f"dtype={self.dtype}, ", self)

    __str__ = __repr__


def storage_repr(name, dtype_part, storage) -> str:
    """torch's ``repr`` of a storage: its elements (bytes for an untyped one) one per line, then
    ``[<class>(dtype=..., device=cpu) of size n]``; ``...`` for the elements of a meta storage."""
    info = f"[{name}({dtype_part}device={storage.device}) of size {len(storage)}]"
    if storage.device.type == "meta":
        return "...\n" + info
    return " " + "\n ".join(str(v) for v in storage.tolist()) + "\n" + info


def _python_values(elems):
    """``tolist()`` of an element array (or one element), with torch's Python types: half and
    bfloat16 elements as floats."""
    if elems.dtype.itemsize <= 2 and elems.dtype.kind not in "iub":
        elems = elems.astype(np.float32)
    return elems.tolist()


def _warn_typed():
    warn_once("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the "
              "only storage class. This should only matter to you if you are using storages directly.  To "
              "access UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()",
              UserWarning, follows_warn_always=False)   # torch: its own switch, not set_warn_always


def new_storage(data, dtype, device=None) -> Storage:
    """A new storage of ``dtype`` elements: ``data`` an int (that many zeros) or a sequence of
    numbers; on ``device`` (default cpu; 'meta': no data). TypeError for other data."""
    from .device import device as _device
    if isinstance(data, (bool, str, bytes)) or not isinstance(data, (int, np.integer)) and not hasattr(data, "__len__"):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    if isinstance(data, (int, np.integer)) and data < 0:   # torch's allocator refuses the size
        raise RuntimeError(f"storage: alloc_cpu() seems to have been called with negative number: {int(data)} "
                           "elements; pass a size >= 0")
    npd = dtype.np
    where = _device("cpu" if device is None else device)
    if where.type == "meta":
        n = int(data) if isinstance(data, (int, np.integer)) else len(data)
        FOLLOW_NEEDED[0] = True
        return Storage(_ShapeDtypeStruct((n,), npd))
    host = np.zeros(int(data), npd) if isinstance(data, (int, np.integer)) else np.asarray(list(data)).astype(npd)
    from .._x64 import x64_scope
    with x64_scope():
        return Storage(jax.device_put(host.reshape(-1), where.jax_device()))


def typed_storage(t) -> TypedStorage:
    """``t.storage()``: t's storage in elements of t's dtype (a complex part view counts floats)."""
    _warn_typed()
    return TypedStorage._wrap(t._st, _dt.from_numpy_dtype(t._value.dtype))
