"""torch's storage classes as names: ``UntypedStorage`` (the class of ``Tensor.untyped_storage()``,
``storage.Storage``), the legacy typed storages (``FloatStorage``, ``LongStorage``...: a
``TypedStorage`` of one dtype), and ``tensor(storage)``, a tensor over a storage.

``Storage``'s own constructor takes a ``jax.Array`` and runs for every op output, so torch's
constructor forms (``UntypedStorage(n)``, ``FloatStorage([1, 2])``) live on these name classes,
whose ``isinstance`` checks look at the storages themselves.
"""
from __future__ import annotations

import jax

import numpy as np

from .._ops import dtypes as _dt
from .._x64 import x64_scope
from .._ops.registry import OPS
from .storage import Storage, TypedStorage, host_bytes, new_storage
from .tensor import Tensor

__all__ = ["UntypedStorage", "LEGACY_STORAGES", "tensor_on_storage"]


class _UntypedStorageType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Storage)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, Storage)


class UntypedStorage(metaclass=_UntypedStorageType):
    """Mirrors ``torch.UntypedStorage``: ``UntypedStorage()`` (empty), ``UntypedStorage(nbytes)``
    (zeros; torch's are uninitialised) or ``UntypedStorage(sequence_of_bytes)``, ``device=``
    as a tensor's. The object made, like every tensor's ``untyped_storage()``, is a
    ``tracegrad._tensor.storage.Storage`` (``isinstance(s, UntypedStorage)`` holds): see its
    methods. TypeError for other data."""

    def __new__(cls, *args, device=None):
        if len(args) > 1:
            raise TypeError(f"UntypedStorage(): expected no arguments, (int size) or (Sequence data), got "
                            f"{len(args)} positional arguments")
        data = args[0] if args else 0
        # torch's UntypedStorage constructor: RuntimeError for data that is neither a size nor a
        # sequence of ints (bytes are one); the typed storages' parser gives TypeError instead
        if isinstance(data, bytes):
            data = list(data)
        elif isinstance(data, str) or not isinstance(data, (int, np.integer)) and not hasattr(data, "__len__"):
            raise RuntimeError(f"torch.UntypedStorage(): Expected a sequence type, but got {type(data).__name__}; "
                               "pass a size in bytes or a sequence of ints")
        elif not isinstance(data, (int, np.integer)):
            bad = next((v for v in data if not isinstance(v, (int, np.integer))), None)
            if bad is not None:
                raise RuntimeError(f"torch.UntypedStorage(): tried to construct a storage from a sequence "
                                   f"({type(data).__name__}), but one of the items was of type {type(bad).__name__} "
                                   "instead of int")
        return new_storage(data, _dt.uint8, device)


class _LegacyStorageType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, TypedStorage) and obj.dtype == cls.dtype

    def __call__(cls, *args, wrap_storage=None, device=None):
        return TypedStorage(*args, dtype=cls.dtype, device=device, wrap_storage=wrap_storage)


def _legacy(scalar_name):
    d = next(d for d in _dt.ALL if _dt.SCALAR_NAMES[d.name] == scalar_name)
    doc = (f"Mirrors torch's legacy ``torch.{scalar_name}Storage``: ``{scalar_name}Storage(...)`` is "
           f"``TypedStorage(..., dtype={d})``; ``isinstance(s, {scalar_name}Storage)`` holds for typed storages "
           f"of that dtype.")
    # a TypedStorage subclass, as torch's (``issubclass(FloatStorage, TypedStorage)``), though
    # calling it makes a plain TypedStorage of that dtype
    return _LegacyStorageType(f"{scalar_name}Storage", (TypedStorage,), {"dtype": d, "__module__": "tracegrad", "__doc__": doc})


LEGACY_STORAGES = {f"{n}Storage": _legacy(n) for n in ("BFloat16", "Bool", "Byte", "Char", "ComplexDouble",
                                                       "ComplexFloat", "Double", "Float", "Half", "Int", "Long",
                                                       "Short")}


def tensor_on_storage(storage, dtype=None, requires_grad=False):
    """``tracegrad.tensor(storage)`` as torch's: a 1-D tensor over all of ``storage`` that shares
    it (writes through either are seen by the other). A typed storage must be of ``dtype``
    (default: the default dtype), an untyped one is read as ``dtype`` elements (default int64).
    RuntimeError for a typed storage of another dtype. Differs from torch: bytes read as a
    dtype other than the storage array's own are copied, not shared."""
    if isinstance(storage, TypedStorage):
        want = _dt.get_default_dtype() if dtype is None else _dt.to_dtype(dtype)
        if storage.dtype != want:
            raise RuntimeError(f"Expected a Storage of type {_dt.SCALAR_NAMES[want.name]} or an UntypedStorage, but "
                               f"got {_dt.SCALAR_NAMES[storage.dtype.name]}")
        st = storage.untyped()
    else:
        want, st = (_dt.int64 if dtype is None else _dt.to_dtype(dtype)), storage
    n = st.nbytes() // want.itemsize
    if requires_grad and not (want.is_floating_point or want.is_complex):
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    if st.array.dtype != want.np:    # another element type: the bytes, copied
        value = host_bytes(st)[:n * want.itemsize].view(want.np)
        with x64_scope():
            st = Storage(jax.device_put(value, next(iter(st.array.devices()))))
    t = Tensor._make(st.array, requires_grad)
    t._st = st
    if st.array.ndim != 1:   # a view of the whole array as n elements, row-major (physical) order
        t._chain = ((OPS["view"], (("shape", (n,)),), None),)
        t._vgen = -1
    return t
