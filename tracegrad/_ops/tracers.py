"""Concrete values behind JAX's differentiation tracers (NOTE [concrete primals])."""
from __future__ import annotations

import jax

# NOTE [concrete primals]
# torch.func's grad/vjp/jacrev/jvp run the function eagerly: ``.item()``, ``bool(t)`` in an
# ``if``, ``nonzero()`` and printing see values, and a tensor stashed inside (a list, an
# attribute) is a plain tensor afterwards. tracegrad.func traces the function with JAX's
# autodiff, whose tracers over eager values compute every primal eagerly: a JVPTracer's or a
# LinearizeTracer's ``primal`` is the concrete array (or another such tracer, one level out).
# Reading it gives torch's value and records nothing, as a Python number carries no gradient
# in torch either. Under a jit (tracegrad.compile) or vmap the chain ends in a tracer without
# a value: there the caller's error stands. JAX keeps the classes private; a JAX without them
# has no concrete primals (every caller then raises as before).
try:
    from jax._src.interpreters.ad import JVPTracer as _JVP, LinearizeTracer as _Linearize
    _PRIMAL_TRACERS: tuple = (_JVP, _Linearize)
except ImportError:       # pragma: no cover - an older or newer JAX layout
    _PRIMAL_TRACERS = ()
try:
    from jax._src.core import EvalTrace as _EvalTrace, trace_ctx as _trace_ctx
except ImportError:       # pragma: no cover
    _EvalTrace = _trace_ctx = None

_Tracer = jax.core.Tracer


def concrete_primal(v):
    """The concrete array behind ``v`` (``v`` itself when it is no tracer), or None when it
    has no concrete value (a jit or vmap tracer)."""
    while isinstance(v, _Tracer):
        if type(v) not in _PRIMAL_TRACERS:
            return None
        v = v.primal
    return v


def escaped(v) -> bool:
    """Whether ``v`` is a tracer of a trace that has ended (kept in a list or attribute by the
    traced function and used after it): JAX marked its trace invalid, or no trace is running
    at all. (A tracer met inside another trace is left to JAX: telling an outer transform's
    live tracer from an escaped one there would need JAX's trace stack.)"""
    trace = getattr(v, "_trace", None)
    if trace is None:
        return False
    is_valid = getattr(trace, "is_valid", None)
    if is_valid is not None and not is_valid():
        return True
    return _EvalTrace is not None and type(_trace_ctx.trace) is _EvalTrace


def live(v):
    """``v``, or for a tracer whose trace has ended its primal (torch's plain value of a tensor
    that escaped a transform: the array, or the tracer of a transform still open around it).
    An escaped jit or vmap tracer has none and is returned as it is (JAX's leaked-tracer error
    follows, which tracegrad.compile turns into its own)."""
    while escaped(v) and type(v) in _PRIMAL_TRACERS:
        v = v.primal          # one level out
    return v
