"""One eager in-place update over many tensors as one cached XLA program (the optimizers'
``foreach``/``fused`` analogue).

An eager optimizer step is a dozen tiny in-place ops per parameter; each is a jitted call of
some 10-20 us, so a step costs far more in dispatch than in arithmetic. ``run_inplace`` runs a
Python update over Tensors (an optimizer's per-parameter rule, unchanged) once under
``jax.make_jaxpr`` on stand-in tensors, keeps the program, and on later calls with the same
key, shapes and dtypes runs that one program and writes the new values back into the real
tensors the way an in-place op does (through their view chains, bumping ``_version`` by as
many writes as the rule made to each, so ``_version`` reads as after the per-op path).

Hyper-parameters a scheduler changes enter as float64 0-d ``hyper.Hyper`` inputs (whose
comparisons with zero answer from the value; the key holds each value's sign), so a new lr
reuses the program. What the program cannot reproduce is refused before or while tracing
(``run_inplace`` returns None and the caller takes its per-op path): a call inside a trace or
under forward AD or the profiler (``_state.INTERPOSE``), tracer inputs, and any exception or
state change the trace could not account for (the key is then remembered as not fusable).
"""
from __future__ import annotations

import jax
import numpy as np

from .. import _state
from .._tensor.meta import is_meta
from .._tensor.tensor import Tensor
from .._ops.xla_options import compiler_options_for
from .._x64 import x64_enter, x64_exit
from . import hyper, interrupt
from .program import Program

# counters for tests and benchmarks: programs traced (each runs the Python update once) and
# fused calls made
STATS = {"traces": 0, "calls": 0}
_NOT_FUSABLE = object()
_Tracer = jax.core.Tracer
_CACHE: dict = _state.register_cache("_lowering.fused._CACHE", {})
_CACHE_LIMIT = 512


def plain(t) -> bool:
    """A tensor a fused program may stand in for: not an inference tensor (writing it in place
    outside inference mode raises) nor a dual one (its tangent is updated op by op), nor a meta
    one (no data to run a program on: its ops infer shapes, NOTE [meta tensors])."""
    d = t.__dict__
    return not (d and ("_inference" in d or "_fw" in d)) and not is_meta(t)


class NotFusable(Exception):
    """Raised by an update traced by ``run_inplace`` that did something its program could not
    repeat (replaced a tensor it was given by a view of another, rebound state...)."""


class _Entry:
    __slots__ = ("program", "written", "bumps", "new_versions", "meta")


def run_inplace(key, fn, tensors, numbers, donate=()):
    """Run ``fn(stand_ins, hypers)`` as one cached program and apply its writes to ``tensors``.

    Args:
        key: hashable; everything ``fn``'s Python decides on besides the tensors' shapes and
            dtypes and the numbers' signs (options by value, state layout).
        fn: ``fn(stand_ins, hypers) -> (new, meta)``: updates ``stand_ins`` (one fresh tensor
            per entry of ``tensors``, same value, shape and dtype) in place with tracegrad ops;
            ``hypers`` are float64 0-d tensors of ``numbers``. ``new`` lists tensors it created
            that outlive the call (fresh, not views), ``meta`` anything the caller needs to place
            them (kept with the program: it must be the same on every call with this key).
        tensors: distinct storages each (the caller checks); read, and written where ``fn``
            writes their stand-ins.
        numbers: Python floats, traced.
        donate: indices of ``tensors`` whose old buffers the program may reuse (used only when
            nothing else holds them).

    Returns: ``(new tensors, meta)``, or None when the update was not run (the caller runs it
    per op; nothing was changed).
    """
    if _state.CAPTURE[0] is not None or _state.INTERPOSE[0] is not None:
        return None
    arrays = [t._value for t in tensors]
    if any(isinstance(a, _Tracer) for a in arrays):   # inside a hand-written jax.jit: trace per op
        return None
    full_key = (key, tuple((a.shape, a.dtype) for a in arrays), tuple(hyper.sign(n) for n in numbers))
    entry = _CACHE.get(full_key)
    if entry is None:
        if len(_CACHE) > _CACHE_LIMIT:
            _CACHE.clear()
        entry = _CACHE[full_key] = _trace(fn, arrays, numbers, donate)
    if entry is _NOT_FUSABLE:
        return None
    arrays.extend(np.float64(n) for n in numbers)
    held = interrupt.hold()     # NOTE [interrupts and donated state] (interrupt.py)
    try:
        prev = x64_enter()
        try:
            # ``arrays`` is the only reference to the inputs besides their storages: a buffer
            # also held elsewhere (a clone that kept the array object) is not donated (Program)
            new, state_end = entry.program(arrays)
        finally:
            x64_exit(prev)
        for i, bump in zip(entry.written, entry.bumps):
            t = tensors[i]
            t._write(state_end[i])
            t._vc[0] += bump
    finally:
        interrupt.release(held)
    STATS["calls"] += 1
    made = []
    for value, version in zip(new, entry.new_versions):
        t = Tensor._make(value)
        t._vc[0] = version
        made.append(t)
    return made, entry.meta


def _trace(fn, arrays, numbers, donate):
    """Trace ``fn`` once on stand-ins of ``arrays``; an ``_Entry``, or ``_NOT_FUSABLE``."""
    found = {}

    def pure(state, hyper_in):
        # (results, state_end) with state_end[i] the new value of state[i] or None: the layout
        # Program keeps sharded state's layout by
        stand = [Tensor._make(a) for a in state]
        hypers = [hyper.make(a, v) for a, v in zip(hyper_in, numbers)]
        new, meta = fn(stand, hypers)
        inputs = set(id(t._st) for t in stand)
        for t in new:
            if not isinstance(t, Tensor) or t._chain or id(t._st) in inputs or t._rg:
                raise NotFusable("a new state tensor is not a fresh tensor")
        written = [i for i, t in enumerate(stand) if t._st.array is not state[i]]
        found.update(written=tuple(written), bumps=tuple(stand[i]._vc[0] - 1 for i in written),
                     new_versions=tuple(t._vc[0] for t in new), meta=meta)
        return [t._value for t in new], [t._st.array if i in written else None for i, t in enumerate(stand)]

    STATS["traces"] += 1
    prev = x64_enter()
    try:
        # eager's compile options (NOTE [eager compile options]): an update of 8 parameters
        # compiled in about half the time (SGD with momentum 1.0 -> 0.54 s, AdamW 1.5 -> 1.3 s
        # on a loaded machine), running as fast; but XLA's defaults for one that reduces
        # arrays of rank 3+ (``clip_grad_norm_``'s norms of conv weights' gradients: DARTS's
        # ~400 gradients compiled in 19 s, NOTE [reductions compile with the fusion emitters])
        program = Program.trace(pure, (arrays, [np.float64(v) for v in numbers]), {})
        program.options["compiler_options"].update(compiler_options_for(program.jaxpr.jaxpr))
    except Exception:      # whatever the trace could not do, the per-op path does (or raises)
        return _NOT_FUSABLE
    finally:
        x64_exit(prev)
    entry = _Entry()
    entry.program = program
    entry.written, entry.bumps = found["written"], found["bumps"]
    entry.new_versions, entry.meta = found["new_versions"], found["meta"]
    program.donate = tuple(i for i in donate if i in entry.written)
    return entry

