"""Host (numpy) arrays onto the device without compiling a program (NOTE [host arrays])."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import _state
from .._ops.host_first import _host_device

try:
    from jax._src.core import trace_state_clean as _no_trace     # (JAX keeps it private)
except ImportError:        # pragma: no cover
    def _no_trace():
        return False

# NOTE [host arrays]
# ``jnp.asarray(ndarray)`` lifts the array with ``lax.stage``, a primitive that JAX compiles
# once per (shape, dtype): 20-80 ms on XLA:CPU. ``jnp.zeros/ones/full`` compile a broadcast
# (and a convert) per shape. ``jax.device_put`` copies the bytes with no program at all, but
# measured here it costs ~25 us more per call than an already compiled ``asarray``.
# Factories and ``tensor()`` see many one-off shapes (a notebook cell, a test, a model's
# buffers) and a few hot ones (a ``torch.tensor`` per batch in a training loop). So the first
# ``_PUT_FIRST`` arrays of a (shape, dtype) go through ``device_put``, later ones through
# ``asarray``, which compiles once and is then the faster path. Paying ~25 us per call until
# the calls have cost about what one compile does (ski rental: 500 calls, ~12 ms, against
# 20-80 ms) stays within about twice the best choice made knowing the future.
# A constant fill (zeros, ones, full) of up to ``_HOST_FILL_BYTES`` is made by numpy and put:
# that is faster than JAX's compiled fill even once compiled. Larger fills stay JAX's: copying
# a large host buffer costs more than one compile.
# Where JAX has one device and it is the CPU (the putter of NOTE [host first calls]), the put
# skips ``jax.device_put``'s Python (~40-70 us an array, measured 2026-12-07, JAX 0.10.2) for
# the C++ call it ends in (~5 us): faster than a compiled ``asarray`` from the first call, so
# there the ski rental above does not apply. Only outside any JAX trace: inside one (a
# tracegrad.compile trace, a user's jit or vmap) ``device_put`` gives the trace's tracer, and
# the C++ call would give a concrete constant instead.
_PUT_FIRST = 500
_HOST_FILL_BYTES = 1 << 20
_SEEN: dict = _state.register_cache("_tensor.host._seen", {})    # (shape, dtype) -> arrays put
_SEEN_MAX = 1 << 16        # a bound on the counts kept (programs with ever-new shapes)


def to_device(arr: np.ndarray) -> jax.Array:
    """``arr`` (a numpy array that nothing else will write: callers pass their own copy) as a
    ``jax.Array`` on JAX's default device, with its dtype. Call inside the x64 scope."""
    fast = _fast_put(arr)
    if fast is not None:
        return fast
    key = (arr.shape, arr.dtype)
    n = _SEEN.get(key, 0)
    if n >= _PUT_FIRST:
        return jnp.asarray(arr)
    if len(_SEEN) >= _SEEN_MAX:
        _SEEN.clear()
    _SEEN[key] = n + 1
    return jax.device_put(arr)


def small(shape: tuple, dtype) -> bool:
    """Whether an array of ``shape`` and numpy ``dtype`` is made faster by numpy and put on
    the device than by a program of JAX's."""
    # numpy holds at most 64 dims; torch (and XLA) hold more (torch.zeros([1] * 65)): JAX makes those
    return len(shape) <= 64 and int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize <= _HOST_FILL_BYTES


def put(arr: np.ndarray) -> jax.Array:
    """``arr`` (the caller's own array, which nothing else writes: JAX may keep its memory)
    as a ``jax.Array`` on JAX's default device, without compiling."""
    fast = _fast_put(arr)
    return jax.device_put(arr) if fast is None else fast


def _fast_put(arr):
    """``arr`` on the one CPU device through the C++ put, or None where that does not apply
    (several devices, an accelerator, inside a JAX trace: NOTE [host arrays])."""
    if not _no_trace():
        return None
    cpu = _host_device()
    return None if cpu is None else cpu[1](arr, jax.core.ShapedArray(arr.shape, arr.dtype))


def filled(shape: tuple, value, dtype) -> jax.Array:
    """A new array of ``shape`` and numpy ``dtype`` holding the number ``value`` everywhere,
    cast as ``jnp.full`` casts: C's conversion from the number's own numpy type (-1 into uint8 is
    255, 1e40 into float32 is inf), without a warning. Call inside the x64 scope."""
    if small(shape, dtype):
        with np.errstate(all="ignore"):
            return put(np.full(shape, np.asarray(value).astype(dtype), dtype))
    return jnp.full(shape, value, dtype)
