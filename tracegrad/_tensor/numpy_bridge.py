"""torch's numpy bridge: ``Tensor.numpy()`` and ``torch.from_numpy`` share memory.

NOTE [numpy bridge]
In torch a tensor and the ndarray from ``t.numpy()`` / ``torch.from_numpy(a)`` are two views of
one buffer: a write through either is seen by the other. A ``Storage`` holds an immutable
``jax.Array``, so such a storage becomes a ``HostSharedStorage``, whose numpy array is the
authority: every write to the storage (an in-place op, a compiled step's write-back) is copied
into it, and a read sees what numpy holds now, in one of two ways:

- *alias*: on the CPU backend a C-contiguous array whose address is 64-byte aligned is handed to
  XLA without a copy (``jax.device_put`` aliases it): the storage's array *is* the numpy memory,
  so reads cost nothing. ``Tensor.numpy()`` allocates its buffer aligned, so it always aliases.
- *copy per read* for a small array that cannot be aliased (``from_numpy`` of a user's array at
  an unaligned address, or a strided one): each read copies it (a few microseconds).

A large user array that cannot be aliased is copied once (*snapshot*): copying it per read would
make ``TensorDataset(torch.from_numpy(X))`` copy all of ``X`` per sample. Writes through the
tensor still reach the array; writes to the array after ``from_numpy`` are not seen. That is
the one departure, documented in ``from_numpy``.

The aliased ``jax.Array`` must never be donated to a program (XLA would reuse the numpy memory
for outputs, or delete the array the storage holds): the storage keeps a second reference to it,
so the programs' exclusive-holder check (``_lowering/program.py``) never donates it. Views cache
their value per storage write generation; numpy-side writes leave no generation behind, so a
shared storage reports a new generation on every read (views recompute from the alias).
"""
from __future__ import annotations

import itertools
import weakref

import jax
import numpy as np

from .._x64 import x64_scope
from .host import put
from .storage import Storage

_SLOT = Storage.array            # the base class's slot, under the property below
_GEN_SLOT = Storage.gen
_READ = object()                 # slot marker: copy the numpy array on each read
_ALIGN = 64                      # XLA:CPU aliases host memory aligned to this only
_SNAPSHOT_BYTES = 256 << 10      # larger unaliasable user arrays are copied once (see NOTE)
_TICK = itertools.count(1 << 40)
# every live HostSharedStorage: id -> (weakref, low, high), its array's byte bounds
# (``overlapping``; bounds computed once, as the array never changes)
_LIVE: dict = {}
try:
    from numpy.lib.array_utils import byte_bounds as _byte_bounds
except ImportError:          # numpy < 2
    _byte_bounds = np.byte_bounds


class HostSharedStorage(Storage):
    """A ``Storage`` whose bytes are a numpy array's (NOTE [numpy bridge]); ``_np`` holds
    ``(ndarray, alias or None, snapshot)``."""

    __slots__ = ()

    @property
    def array(self):
        a = _SLOT.__get__(self)
        if a is _READ:
            return _host_copy(self._np[0])
        return a

    @array.setter
    def array(self, value):
        if isinstance(value, jax.core.Tracer):       # a trace swaps its stand-in in and out
            _SLOT.__set__(self, value)
            return
        host, alias, snapshot = self._np
        if not isinstance(value, jax.Array) or value.shape != host.shape or value.dtype != host.dtype:
            demote(self, value)                      # resized or retyped: no longer shared
            return
        if value is not alias:
            np.copyto(host, np.asarray(value))
        _SLOT.__set__(self, value if snapshot else alias if alias is not None else _READ)

    @property
    def gen(self):
        return next(_TICK)

    @gen.setter
    def gen(self, value):
        _GEN_SLOT.__set__(self, value)


def demote(st, value):
    """``st`` stops sharing its numpy array (its array was replaced by one of another shape or
    dtype, as torch cannot resize a numpy-owned buffer either) and holds ``value``."""
    st.__class__ = Storage
    st._np = None
    _LIVE.pop(id(st), None)
    st.array = value


def _alias(host):
    """A ``jax.Array`` on the host's memory, without a copy, or None where XLA cannot use it
    (not on the CPU backend, not C-contiguous, not 64-byte aligned)."""
    if not host.flags.c_contiguous or host.ctypes.data % _ALIGN or host.size == 0:
        return None
    with x64_scope():
        a = put(host)
    if a.dtype != host.dtype or not _on_cpu(a) or a.unsafe_buffer_pointer() != host.ctypes.data:
        return None
    return a


def _on_cpu(a) -> bool:
    # Under a user's jax.jit trace device_put gives a tracer: no memory to share, so a copy.
    if isinstance(a, jax.core.Tracer):
        return False
    devices = a.devices()
    return len(devices) == 1 and next(iter(devices)).platform == "cpu"


def _make_shared(st, host, alias, first):
    """Turn ``st`` (a plain ``Storage`` holding ``first``) into one sharing ``host``."""
    st.__class__ = HostSharedStorage
    snapshot = alias is None and host.nbytes > _SNAPSHOT_BYTES
    st._np = (host, alias, snapshot)
    _SLOT.__set__(st, first if snapshot else alias if alias is not None else _READ)
    key = id(st)

    def gone(ref):
        if _LIVE.get(key, (None,))[0] is ref:
            del _LIVE[key]
    _LIVE[key] = (weakref.ref(st, gone), *_byte_bounds(host))
    return st


def overlapping(st):
    """The other storages sharing memory with ``st`` through numpy (``from_numpy`` twice on one
    array, or on overlapping views of it): torch's tensors over them see each other's writes,
    which tracegrad's storages do only when read eagerly. Empty for a storage that shares no
    numpy array."""
    if type(st) is not HostSharedStorage or len(_LIVE) < 2:
        return []
    entry = _LIVE.get(id(st))
    lo, hi = entry[1:] if entry is not None and entry[0]() is st else _byte_bounds(st._np[0])
    return _within(lo, hi, st)


def sharing_storages(host):
    """The storages sharing memory with ndarray ``host`` (NOTE [numpy arguments] in
    ``_lowering/numpy_args.py``: an array argument over a tensor's memory); empty when none."""
    return _within(*_byte_bounds(host), None) if _LIVE else []


def _within(lo, hi, st):
    # what ``np.may_share_memory`` answers (overlapping byte bounds; an empty array shares
    # nothing), at a comparison per storage instead of a numpy call: a compiled call checks its
    # arguments against every live one
    out = []
    for ref, low, high in list(_LIVE.values()):
        if low < hi and lo < high and low < high and lo < hi:
            o = ref()
            if o is not None and o is not st:
                out.append(o)
    return out


def storage_for_numpy(host):
    """A storage sharing ``host`` (a writable ndarray of a supported dtype), or None where the
    tensor must hold a copy (not on the CPU backend)."""
    alias = _alias(host)
    with x64_scope():
        first = alias if alias is not None else put(np.array(host))
    if first.dtype != host.dtype or not _on_cpu(first):
        return None
    return _make_shared(Storage(first), host, alias, first)


def share_storage(st):
    """The ndarray ``st`` shares its bytes with from now on (its array's shape), making a plain
    storage shared (in an aligned buffer of its own, so it aliases); None where it cannot (not a
    concrete CPU array)."""
    if type(st) is HostSharedStorage:
        return st._np[0]
    a = st.array
    if isinstance(a, jax.core.Tracer) or not isinstance(a, jax.Array) or not _on_cpu(a):
        return None
    host = aligned_empty(a.shape, np.dtype(a.dtype))
    np.copyto(host, np.asarray(a))
    alias = _alias(host)
    if alias is None:
        return None
    _make_shared(st, host, alias, alias)
    return host


def owned_array(st):
    """``st``'s array as one nothing else writes: a copy where ``st`` shares a numpy array's
    memory (its alias changes with the array), else the array itself (immutable). For what must
    keep the current value: an in-place op's snapshot of its input, a deepcopy."""
    a = st.array
    if type(st) is HostSharedStorage and not isinstance(a, jax.core.Tracer):
        return _host_copy(a)
    return a


def _host_copy(host):
    """A concrete ``jax.Array`` copy of ``host`` (an ndarray or a concrete array), also while a
    program is being traced: there ``device_put`` would give the trace's tracer, which a capture
    keeping the storage's value from before the trace would leak out of it."""
    with x64_scope(), jax.ensure_compile_time_eval():
        return jax.device_put(np.array(host))


def aligned_empty(shape, dtype):
    """An uninitialized C-contiguous ndarray whose data starts at a 64-byte boundary."""
    n = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(n + _ALIGN, np.uint8)
    start = -raw.ctypes.data % _ALIGN
    return raw[start:start + n].view(dtype).reshape(shape)


def strided_view(host, dt, shape, offset, strides):
    """The ndarray view of ``host`` (a shared storage's array) with element dtype ``dt`` (the
    storage's, or the float part of its complex dtype), ``shape``, and ``offset`` and ``strides``
    in elements of ``dt``; None where that is not a view of it."""
    flat = host.reshape(-1)
    if dt != flat.dtype:
        if flat.dtype.kind != "c" or dt.kind != "f" or dt.itemsize * 2 != flat.dtype.itemsize:
            return None
        flat = flat.view(dt)             # a real/imag part view counts floats
    if any(n == 0 for n in shape):
        return np.empty(shape, dt)
    last = offset + sum((n - 1) * s for n, s in zip(shape, strides))
    if offset < 0 or last >= flat.size or any(s < 0 for s in strides):
        return None
    return np.lib.stride_tricks.as_strided(flat[offset:], shape, tuple(s * dt.itemsize for s in strides))
