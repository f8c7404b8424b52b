"""The profiler's recording: a ``Recorder`` sits in dispatch's interposer slot (NOTE [interposer]
in ``_state``) while a trace is active and times every op, ``record_function`` range, backward
node and compiled call into ``FunctionEvent``s.

Timing blocks (NOTE [profiler blocking]): JAX dispatches asynchronously on GPU (and on CPU when
``TRACEGRAD_ASYNC_DISPATCH=1``), so the Python call returns before the result exists. The
recorder waits for each op's outputs before it stops the clock, so an op's CPU time is the time
until its result is ready, as torch's CPU ops (which compute synchronously). This serialises
work that would otherwise overlap, as profiling in torch does too; outside a trace nothing waits.

Ops traced inside a region (``tracegrad.compile``'s trace, checkpoint recomputes, ``func``
transforms) hold no values and are not recorded: a compiled call is one event,
``Torch-Compiled Region: <function>``, the time of its whole XLA program.
"""
from __future__ import annotations

import functools
import itertools
import os
import threading
import time
import traceback

import jax

from .. import _state
from .._tensor.tensor import Tensor, _JaxTracer
from ..autograd import _dispatch
from ._events import FunctionEvent
from ._names import event_name

_INTERPOSE = _state.INTERPOSE
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def block(obj) -> None:
    """Wait until every array in ``obj`` (Tensors, JAX arrays, nested in tuples/lists/dicts)
    has been computed. Traced values and deleted (donated) arrays are skipped: nothing to wait for."""
    if isinstance(obj, Tensor):
        obj = obj._value
    if isinstance(obj, (tuple, list)):
        for o in obj:
            block(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            block(o)
    elif isinstance(obj, jax.Array) and not isinstance(obj, _JaxTracer) and not obj.is_deleted():
        obj.block_until_ready()


def _shape(a):
    return list(a.shape) if isinstance(a, Tensor) else []


def _out_bytes(out):
    outs = out if isinstance(out, tuple) else (out,)
    return sum(o._value.nbytes for o in outs if isinstance(o, Tensor) and not isinstance(o._value, _JaxTracer))


def _user_stack():
    """The caller's Python stack, innermost first, as torch's ``file(line): function`` lines,
    without tracegrad's own frames."""
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(traceback.extract_stack())
            if not f.filename.startswith(_PACKAGE_DIR)]


class _Open:
    """A range being timed: its event, and the time and memory its children took."""
    __slots__ = ("event", "t0", "child_ns", "child_mem")

    def __init__(self, event, t0):
        self.event, self.t0, self.child_ns, self.child_mem = event, t0, 0, 0


class Recorder:
    """Collects events while a trace is active. ``apply_op``/``apply_inplace`` are the interposer
    protocol; ``begin``/``end`` time a named range (``record_function``, backward nodes,
    compiled calls)."""

    sees_ops = False    # compiled calls stay one event (utils.flop_counter's mode needs each op)

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False):
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.events: list = []
        self.active = False
        self._local = threading.local()     # each thread's stack of open ranges
        self._ids = itertools.count(1)      # (next() on it is atomic: ops may run in several threads)

    # ---- start / stop --------------------------------------------------------------------------
    def start(self):
        # a profile opened inside another records its own block; the outer one resumes after it
        # (torch's outer profile loses everything once an inner one ends)
        self.active, self._outer = True, _state.PROFILER[0]
        _state.set_profiler(self)

    def stop(self):
        self.active = False
        if _state.PROFILER[0] is self:
            outer = self._outer
            _state.set_profiler(outer if outer is not None and outer.active else None)

    # ---- ranges -------------------------------------------------------------------------------
    def _open_stack(self):
        st = getattr(self._local, "stack", None)
        if st is None:
            st = self._local.stack = []
        return st

    def begin(self, name, category, args=()):
        """Open a range named ``name`` (``category``: "cpu_op", "user_annotation", ...)."""
        ev = FunctionEvent(next(self._ids), name, threading.get_ident(),
                           input_shapes=[_shape(a) for a in args] if self.record_shapes else [],
                           stack=_user_stack() if self.with_stack else [], category=category)
        frame = _Open(ev, time.perf_counter_ns())
        self._open_stack().append(frame)
        return frame

    def end(self, frame, mem=0):
        """Close ``frame`` (and any range left open inside it), record its event."""
        t1 = time.perf_counter_ns()
        st = self._open_stack()
        if frame not in st:       # the trace restarted while the range was open: drop it
            return
        while st and st.pop() is not frame:
            pass
        ev = frame.event
        ev.start_ns, ev.end_ns = frame.t0, t1
        ev.self_ns = max(t1 - frame.t0 - frame.child_ns, 0)
        ev.cpu_memory_usage = mem + frame.child_mem if self.profile_memory else 0
        ev.self_cpu_memory_usage = mem if self.profile_memory else 0
        if st:
            st[-1].child_ns += t1 - frame.t0
            st[-1].child_mem += ev.cpu_memory_usage
            ev.parent_id = st[-1].event.id
            ev.cpu_parent = st[-1].event
            st[-1].event.cpu_children.append(ev)
        self.events.append(ev)

    def call(self, name, category, fn, *args):
        """``fn(*args)`` timed as one range (the result waited for), its ops recorded inside it."""
        frame = self.begin(name, category)
        try:
            out = fn(*args)
            block(out)
            return out
        finally:             # a call that raised is recorded too, as torch records it
            self.end(frame)

    # ---- the interposer protocol --------------------------------------------------------------
    def apply_op(self, op, args, static):
        return self._op(event_name(op), op, args, self._next("apply_op"), (op, args, static))

    def apply_inplace(self, op, self_t, args, static):
        return self._op(event_name(op, inplace=True), op, (self_t, *args), self._next("apply_inplace"),
                        (op, self_t, args, static))

    def _next(self, method):
        """Where an op goes after being timed: plain dispatch, or a flop counter this profile
        was opened inside (it must see every op too)."""
        outer = getattr(self, "_outer", None)
        if outer is not None and outer.sees_ops and outer.active:
            return getattr(outer, method)
        return getattr(_dispatch, method)

    def _op(self, name, op, args, fn, fn_args):
        prev = _INTERPOSE[0]
        _INTERPOSE[0] = None       # plain dispatch for this op and whatever it runs itself
        try:
            if _state.CAPTURE[0] is not None:   # traced, not run: no time to measure
                return fn(*fn_args)
            frame, mem = self.begin(name, "cpu_op", args), 0
            try:
                out = fn(*fn_args)
                block(out)           # NOTE [profiler blocking]
                if self.profile_memory and not op.view:
                    mem = _out_bytes(out)
                return out
            finally:
                self.end(frame, mem)
        finally:
            _INTERPOSE[0] = prev

    def evaluate_function(self, node, grads, create_graph):
        """One backward node, named as torch's engine names it."""
        name = node.name()
        if name == "AccumulateGrad":
            name = "torch::autograd::AccumulateGrad"
        outer = getattr(self, "_outer", None)
        run = (functools.partial(outer.evaluate_function, node) if outer is not None and outer.sees_ops and outer.active
               else node.apply)
        return self.call("autograd::engine::evaluate_function: " + name, "cpu_op", run, grads, create_graph)

    def compiled_call(self, label, fn, *args):
        """One run of a compiled program."""
        return self.call("Torch-Compiled Region: " + label, "cpu_op", fn, *args)


class record_function:
    """Mirrors ``torch.profiler.record_function(name, args=None)``: labels a block of code.
    A context manager and a decorator. While a profiler records, the block is one event named
    ``name`` (category ``user_annotation``) whose children are the ops it runs; the name also
    goes to ``jax.profiler.TraceAnnotation``, so JAX's own profiler (``jax.profiler.trace``,
    TensorBoard's profile plugin) shows the range. ``args`` (a string) is kept on the event.
    Raises RuntimeError on entry, as torch's operator behind it, when ``name`` is not a string
    (or bytes) or ``args`` not None or a string."""

    def __init__(self, name, args=None):
        self.name, self.args = name, args
        self._frame = self._annotation = self._recorder = None

    def _check(self):
        for arg, value, kind, ok in (("name", self.name, "str", (str, bytes)),
                                     ("args", self.args, "Optional[str]", (str, bytes, type(None)))):
            if not isinstance(value, ok):
                raise RuntimeError(f"record_function(): Expected a value of type '{kind}' for argument '{arg}' but "
                                   f"instead found type '{type(value).__name__}'; label the range with a str")
        if isinstance(self.name, bytes):
            self.name = self.name.decode()

    def __enter__(self):
        self._check()
        self._annotation = jax.profiler.TraceAnnotation(self.name)
        self._annotation.__enter__()
        rec = _state.PROFILER[0]
        if rec is not None:
            self._recorder, self._frame = rec, rec.begin(self.name, "user_annotation")
        return self

    def __exit__(self, *exc):
        if self._frame is not None:
            self._recorder.end(self._frame)
            self._frame = self._recorder = None
        self._annotation.__exit__(*exc)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapped
