"""64-bit types for tracegrad's own JAX calls only (DESIGN 2.7).

torch has float64 and int64 tensors; JAX makes them only with its ``jax_enable_x64`` setting
on. tracegrad never turns that setting on for the process (the user's own JAX code keeps
float32/int32 defaults); it turns it on thread-locally around its own JAX calls instead.

Every call into JAX that makes, converts, traces or runs arrays must be inside the scope:

* with x64 off, JAX silently canonicalises int64/float64 inputs to 32 bits (``jax.device_put``,
  ``jnp.asarray``, the arguments of a jitted call) and ``jnp.zeros(n, jnp.int64)`` is int32;
* a ``jax.jit`` function's cache is keyed on the x64 setting: calling the same jitted
  function in and out of the scope traces and compiles it twice, with different dtypes.

Reading an existing array (``.dtype``, ``.shape``, ``np.asarray(a)``) needs no scope.

Three forms, fastest first (measured on this machine, jax 0.10.2; a jitted call is ~4-10 us):

* ``prev = x64_enter()`` ... ``x64_exit(prev)`` in a ``try/finally`` -- ~0.09 us alone, +0.16-0.2 us
  per eager op in ``Op.run`` (_ops/registry.py) (8.3 -> 8.5 us); for hot paths::

      prev = x64_enter()
      try:
          out = jitted(*arrays)
      finally:
          x64_exit(prev)

* ``@with_x64`` -- decorate a function (or wrap a jitted one: ``with_x64(jax.jit(step))``) so
  every call runs in the scope; ~0.15 us per call.
* ``with x64_scope():`` -- a context manager, ~0.3 us (``jax.enable_x64(True)``, JAX's own,
  costs ~0.57 us; a ``contextlib`` one ~1 us).

Never enter the scope while tracing someone else's ``jax.jit`` (an argument is a
``jax.core.Tracer``): flipping x64 mid-trace mixes 64- and 32-bit avals. Tracer paths run in the
mode of the trace (``tracegrad.compile`` traces inside a scope; a user's own ``jax.jit`` gets the
user's setting). ``astype`` below follows that rule.

All forms are thread-safe (the setting is thread-local) and nest (an inner scope restores
"on"). For ``tracegrad.compile``: wrap the ``jax.jit`` object *and* every call on it
(``.lower()``, ``.trace()``, ``.eval_shape``), e.g. ``step = with_x64(jax.jit(fn, donate_argnums=0))``
and ``with x64_scope(): lowered = jitted.lower(*args)``; the traced function then sees x64 on,
and its compiled-cache entry is the x64 one on every call.

Where the scope is entered (keep this list when adding JAX calls): ``Op.run`` (_ops/registry.py) (every
op forward and backward, Python-number arguments), ``_tensor`` view-chain read/write functions
and dtype casts on write, every factory in ``_tensor/factories.py``, ``_tensor/generator.py``/``_ops.random`` (seeding, key split,
host draws), in-place random fills, gradient accumulation, and ``tracegrad.compile``/``func``.
Reading values (``.numpy()``, ``.item()``, ``repr``, saving) goes through numpy and needs none.

User callbacks (hooks, custom ``Function.forward``) run with x64 on when tracegrad calls them
from inside a scope; that is tracegrad's code path, as for torch's own kernels.
"""
from __future__ import annotations

import functools

import jax

# jax.enable_x64 is JAX's thread-local config State for jax_enable_x64 (a context-manager
# factory); swap_local/set_local are the C++ accessors its context manager uses, without
# the context-manager object (~0.09 us against ~0.57 us).
_STATE = jax.enable_x64
x64_enter = functools.partial(_STATE.swap_local, True)
x64_enter.__doc__ = "Turn x64 on for this thread; returns the previous local value for ``x64_exit``."
x64_exit = _STATE.set_local


class x64_scope:
    """``with x64_scope():`` runs the block with JAX's x64 mode on in this thread, restoring
    the previous thread-local setting on exit (also on exceptions). Reentrant; a fresh
    object per ``with``."""
    __slots__ = ("_prev",)

    def __enter__(self):
        self._prev = _STATE.swap_local(True)
        return self

    def __exit__(self, *exc):
        _STATE.set_local(self._prev)
        return False


def with_x64(fn):
    """Decorator: ``fn`` (a Python function or a ``jax.jit`` object) always runs with x64 on.
    Returns a plain function; attributes of ``fn`` such as ``.lower`` are not forwarded, so
    call those inside ``x64_scope()``."""
    swap, restore = _STATE.swap_local, _STATE.set_local

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        prev = swap(True)
        try:
            return fn(*args, **kwargs)
        finally:
            restore(prev)
    wrapper.__wrapped__ = fn
    return wrapper


def x64_enabled() -> bool:
    """Whether JAX's x64 mode is on in this thread right now (inside a scope or globally)."""
    return bool(_STATE.value)


def astype(a, dtype):
    """``a.astype(dtype)`` keeping 64-bit dtypes. A tracer is cast in its own trace's mode
    (tracegrad never flips x64 in the middle of a trace)."""
    if isinstance(a, jax.core.Tracer):
        return a.astype(dtype)
    prev = _STATE.swap_local(True)
    try:
        return a.astype(dtype)
    finally:
        _STATE.set_local(prev)
