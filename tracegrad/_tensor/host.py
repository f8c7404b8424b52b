"""Host (numpy) arrays onto the device without compiling a program (NOTE [host arrays])."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import _state

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
_PUT_FIRST = 500
_HOST_FILL_BYTES = 1 << 20
_SEEN: dict = _state.register_cache("_tensor.host._seen", {})    # (shape, dtype) -> arrays put
_SEEN_MAX = 1 << 16        # a bound on the counts kept (programs with ever-new shapes)


def to_device(arr: np.ndarray) -> jax.Array:
    """``arr`` (a numpy array that nothing else will write: callers pass their own copy) as a
    ``jax.Array`` on JAX's default device, with its dtype. Call inside the x64 scope."""
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
    return jax.device_put(arr)


def filled(shape: tuple, value, dtype) -> jax.Array:
    """A new array of ``shape`` and numpy ``dtype`` holding the number ``value`` everywhere,
    cast as ``jnp.full`` casts: C's conversion from the number's own numpy type (-1 into uint8 is
    255, 1e40 into float32 is inf), without a warning. Call inside the x64 scope."""
    if small(shape, dtype):
        with np.errstate(all="ignore"):
            return jax.device_put(np.full(shape, np.asarray(value).astype(dtype), dtype))
    return jnp.full(shape, value, dtype)
