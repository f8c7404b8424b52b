"""Storage: the one ``jax.Array`` behind a tensor and its views, and torch's storage API on it.

A ``Storage`` holds one ``jax.Array`` and a write generation (``gen``). torch code reads a
storage's address to tell views from copies (``x.untyped_storage().data_ptr() ==
y.untyped_storage().data_ptr()``, ``x.data_ptr() == x.reshape(-1).data_ptr()``). JAX arrays have no
stable address (an in-place write replaces the array), so a storage gets a synthetic one the
first time it is asked for: addresses come from a counter, each storage's range as long as its
bytes (at least one), so ``data_ptr() + storage_offset() * element_size()`` of two different
storages never meet, as real allocations do not.
"""
from __future__ import annotations


import numpy as np
from jax import ShapeDtypeStruct as _ShapeDtypeStruct   # a meta storage's array (meta.py)

from .. import _state
from .._ops import dtypes as _dt
from .._ops.warn import warn

_CAPTURE = _state.CAPTURE
_ALIGN = 64
_NEXT_ADDRESS = [1 << 20]   # addresses handed out so far (the first is far from 0, a null pointer)


class Storage:
    """Mirrors ``torch.UntypedStorage`` for what programs read of it: ``data_ptr()``, ``nbytes()``,
    ``size()``/``len()`` (bytes), ``element_size()`` (1) and ``device``. Its bytes cannot be read
    or written through it (JAX owns them): go through a tensor. On the 'meta' device ``array`` is
    a ``jax.ShapeDtypeStruct`` and there are no bytes at all (NOTE [meta tensors] in meta.py)."""

    # ``_layout``: set (True) when the array is held in a non-row-major order (NOTE [storage
    # layouts] in memory_format.py); unset otherwise, so the constructor stays as short
    __slots__ = ("array", "gen", "_address", "_shared", "_layout", "__weakref__")

    def __init__(self, array):
        self.array = array
        self.gen = 0
        if _CAPTURE[0] is not None:   # made inside a compiled region: not outside state
            _CAPTURE[0].storage_created(self)

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

    def __reduce__(self):
        # pickled by value (a meta storage by its shape and dtype); pickle's memo rebuilds one
        # Storage for all tensors that share it
        a = self.array
        if type(a) is _ShapeDtypeStruct:
            return (_meta_storage, (a.shape, np.dtype(a.dtype).str))
        return (_storage_from_numpy, (np.asarray(a),))

    def __repr__(self):
        where = ", device='meta'" if type(self.array) is _ShapeDtypeStruct else ""
        return f"tracegrad.UntypedStorage(nbytes={self.nbytes()}, data_ptr={self.data_ptr():#x}{where})"


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
    import jax.numpy as jnp   # only unpickling needs it
    from .._x64 import x64_scope
    with x64_scope():
        return Storage(jnp.asarray(array))


_TYPED_WARNED = [False]


class TypedStorage:
    """Mirrors ``torch.TypedStorage`` (``Tensor.storage()``, deprecated in torch as here): a
    storage seen in elements of ``dtype``. ``data_ptr()``, ``size()``/``len()`` (elements),
    ``element_size()``, ``dtype``, ``untyped()``."""

    __slots__ = ("_untyped", "dtype")

    def __init__(self, untyped: Storage, dtype):
        if not _TYPED_WARNED[0]:    # torch warns once per process
            _TYPED_WARNED[0] = True
            warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will "
                 "be the only storage class. Use tensor.untyped_storage() instead of tensor.storage()", UserWarning)
        self._untyped, self.dtype = untyped, dtype

    def data_ptr(self) -> int:
        return self._untyped.data_ptr()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def size(self) -> int:
        return self._untyped.nbytes() // self.dtype.itemsize

    __len__ = size

    def untyped(self) -> Storage:
        return self._untyped

    @property
    def device(self):
        return self._untyped.device

    def __repr__(self):
        return f"tracegrad.TypedStorage(dtype={self.dtype}, size={self.size()})"


def typed_storage(t) -> TypedStorage:
    """``t.storage()``: t's storage in elements of t's dtype (a complex part view counts floats)."""
    return TypedStorage(t._st, _dt.from_numpy_dtype(t._value.dtype))
