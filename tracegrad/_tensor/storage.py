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

from .. import _state
from .._ops import dtypes as _dt
from .._ops.warn import warn

_CAPTURE = _state.CAPTURE
_ALIGN = 64
_NEXT_ADDRESS = [1 << 20]   # addresses handed out so far (the first is far from 0, a null pointer)


class Storage:
    """Mirrors ``torch.UntypedStorage`` for what programs read of it: ``data_ptr()``, ``nbytes()``,
    ``size()``/``len()`` (bytes), ``element_size()`` (1) and ``device``. Its bytes cannot be read
    or written through it (JAX owns them): go through a tensor."""

    # ``_layout``: set (True) when the array is held in a non-row-major order (NOTE [storage
    # layouts] in memory_format.py); unset otherwise, so the constructor stays as short
    __slots__ = ("array", "gen", "_address", "_shared", "_layout", "__weakref__")

    def __init__(self, array):
        self.array = array
        self.gen = 0
        if _CAPTURE[0] is not None:   # made inside a compiled region: not outside state
            _CAPTURE[0].storage_created(self)

    def data_ptr(self) -> int:
        """The storage's (synthetic, stable) address: equal for views of one storage only."""
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
        # pickled by value; pickle's memo rebuilds one Storage for all tensors that share it
        return (_storage_from_numpy, (np.asarray(self.array),))

    def __repr__(self):
        return f"tracegrad.UntypedStorage(nbytes={self.nbytes()}, data_ptr={self.data_ptr():#x})"


# NOTE [meta tensors]: torch's 'meta' device has shapes and dtypes but no data. tracegrad's meta
# tensor keeps a zero array on the CPU in a ``MetaStorage`` (so every shape rule, view and
# module method works unchanged) and reports ``device('meta')``; reading its values
# (``item``, ``tolist``, ``numpy``, a copy to another device) raises torch's errors. Made by
# factories with ``device='meta'`` (or inside ``with device('meta')``), ``.to('meta')`` and
# ``Module.to('meta')``; ``Module.to_empty(device=...)`` gives real tensors back. Results of
# ops on meta tensors are meta tensors (``follow_meta``: computed on the zeros, marked after).
# Differs from torch: the zeros take memory.
class MetaStorage(Storage):
    """A storage on torch's 'meta' device (NOTE [meta tensors])."""

    __slots__ = ()

    @property
    def device(self):
        from .device import device   # a sibling module; imported late to keep this one small
        return device("meta")


# Whether ``apply_op`` must pass each op's outputs through ``memory_format.follow``: set once a
# laid-out storage (NOTE [storage layouts]) or a meta storage exists, so plain programs pay one
# flag check per op for both.
FOLLOW_NEEDED = [False]


def make_meta(t):
    """Mark ``t`` (which must own its storage) as a meta tensor; returns it."""
    t._st.__class__ = MetaStorage
    FOLLOW_NEEDED[0] = True
    return t


def follow_meta(tensors, outs, api):
    """An op's fresh outputs are meta tensors when its tensor inputs are (torch computes only
    their metadata); a meta input beside a CPU tensor that is not a 0-d scalar is torch's
    RuntimeError."""
    metas = [type(a._st) is MetaStorage for a in tensors]
    if not any(metas):
        return
    for a, m in zip(tensors, metas):
        if not m and a.ndim:
            raise RuntimeError(f"Tensor on device {a.device} is not on the expected device meta! "
                               f"({api}: move it with .to('meta'))")
    for t in outs:
        if t._base is None and type(t._st) is not MetaStorage:
            make_meta(t)


def check_not_meta(t, what):
    """torch's error for reading the data of a meta tensor (``what``: the API)."""
    if type(t._st) is MetaStorage:
        if what in ("item()", "bool()"):
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        if what.startswith("numpy"):
            raise TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
                            "host memory first.")
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")


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
