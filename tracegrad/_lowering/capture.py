"""What one trace of a Python function over Tensors touched (DESIGN 2.4).

A ``Capture`` is installed in ``_state.CAPTURE`` while a region is traced. The lower layers
report to it: every op's tensor arguments (``see_tensors``), every in-place write
(``see_write``), every PRNG draw (``see_generator``), Python reading a tensor's value
(``python_read``), a user hook about to run (``on_hook``), an optimizer's ``step``/``zero_grad``
(``see_optimizer``). From that it knows

- which storages that existed before the trace were read or written without being lifted
  (their values would be baked into the program as constants): the caller lifts them and
  traces again, so a compiled program never holds a frozen copy of outside state;
- which optimizers ran (their ``lr`` values become traced inputs, their other
  hyper-parameters are guarded);
- whether something makes the function untraceable (a value read by Python, a hook with
  possible side effects): ``GraphBreak`` is raised at that point with the user's file and line.
"""
from __future__ import annotations

import builtins
import contextlib
import dis
import io
import logging
import os
import itertools
import sys
import threading
import time
import traceback
import weakref

import jax
import jax.numpy as jnp
from jax._src.interpreters import ad as _ad

from .. import _state
from .._api import threads as _threads
from .._ops import warn as _warn
from .._tensor import runtime as _runtime
from .._tensor.numpy_bridge import owned_array
from .._tensor.tensor import Tensor, chain_is_contiguous, rowmajor_strides, storage_offset_of, strides_of
from .._tensor.torch_function import outside_dispatch
from ..autograd._graph_impl import _ACCUMULATE_SEQ, AccumulateGrad, _seq as _node_seq
from .pycode import _user_code, counter_uses, opened_by_user
from .pystate import (_attr_signature, _copy, _plain_object, _put_back, append_changes, changed, clock_reads,
                      cut_appends, effects_signature, grown_lists, python_refs, restore, snapshot, stateful_reads)
from .pystate import optimizer_attributes as _own_attributes
from .constants import Constants
from .exc import Unsupported
from .warned import Catcher
from .guards import _Attributes, _Probe

_Tracer = jax.core.Tracer
# the tracers of JAX's differentiation (jax.vjp traces through a LinearizeTracer in jax 0.10)
_AD_TRACERS = tuple(c for c in (getattr(_ad, "JVPTracer", None), getattr(_ad, "LinearizeTracer", None)) if c)


# NOTE [transforms inside a custom Function's forward]
# A custom Function's forward runs inside a ``jax.custom_vjp`` when the compiled function's
# results are differentiated outside it. A value it reads from a closure that JAX
# differentiates (an AD tracer of a trace that differentiates the Function's call) cannot be
# closed over: a graph break naming the closure. The forward may also differentiate on its
# own: tracegrad.func records ``grad``/``jvp``/``jacrev``/``hessian`` of a tensor that requires
# grad as one such Function (``FuncTransform``), whose forward runs JAX's transform and meets
# that transform's own AD tracers. Those once got the closure's reason, which named no closure
# the user wrote (``grad(f)(x) * 1`` backpropagated, a MAML inner step, forward-over-reverse
# ``jvp``); they get their own reason now. Still a graph break, and it must stay one until the
# trace can nest the two: forward runs with grad mode off, so ``graph_inputs`` cuts every op
# input from JAX's derivative -- the inner transform's too -- and a traced call gave zero
# gradients (measured: ``grad(lambda a: (a ** 3).sum())(x * 2)`` gave zeros compiled).
def outer_ad_traces(arrays) -> tuple:
    """The AD traces (JVP/linearize) that ``arrays`` (a custom Function's inputs) are tracers
    of, with every trace enclosing them (NOTE [transforms inside a custom Function's
    forward])."""
    traces = []
    for a in arrays:
        t = getattr(a, "_trace", None) if isinstance(a, _AD_TRACERS) else None
        while t is not None and not any(t is u for u in traces):
            traces.append(t)
            t = getattr(t, "parent_trace", None)
    return tuple(traces)


def _outer_ad(a, traces) -> bool:
    """Whether ``a`` is an AD tracer of one of ``traces`` (one of unknown trace counts)."""
    if not isinstance(a, _AD_TRACERS):
        return False
    t = getattr(a, "_trace", None)
    return t is None or any(t is u for u in traces)


def settings_now() -> tuple:
    """The process-wide settings outside the call key that Python code may set or read (print
    options, matmul precision, deterministic algorithms, thread counts, ``warn_always``, the
    ``torch.backends`` flags: NOTE [settings flags] in ``_state.py``)."""
    return (tuple(_state.PRINT_OPTS.items()), _runtime._matmul_precision[0],
            tuple(_runtime._deterministic), _threads._num_threads["intra"], _threads._num_threads["interop"],
            _warn.WARN_ALWAYS[0], _state.settings_values())


def _profiler_on() -> bool:
    return _state.PROFILER[0] is not None


_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the standard library's logging package: a graph break raised from a logging call names the
# user's line that made the call, not logging's own frames
_LOGGING = os.path.dirname(os.path.abspath(logging.__file__)) + os.sep
_OWN_LOGGERS = ("tracegrad", "jax", "jaxlib", "absl")

# NOTE [logger levels read in a trace]: a logging call a logger's level (or ``logging.disable``)
# silences never reaches ``Logger._log``, where a record the user's logger emits is a graph
# break: the trace passes it, and the program stayed silent after the level was lowered
# (``log.setLevel(WARNING)`` between calls: eager logs from then on, the program never did;
# round 49). So each (logger, level) whose ``isEnabledFor`` the trace asked is guarded at that
# answer: a program traced with the logger off runs while it stays off, and a call that finds
# it on traces again (its record is then the graph break above). One ``isEnabledFor`` (a dict
# lookup in logging's cache) per guarded pair per call; none for a function that logs nothing.


def _is_traced_value(v):
    """A tensor (or a container of them): state the program carries, not a Python value."""
    if isinstance(v, Tensor):
        return True
    return isinstance(v, (list, tuple, dict)) and not isinstance(v, str) and any(
        _is_traced_value(x) for x in (v.values() if isinstance(v, dict) else v))


def _same_python_value(a, b):
    try:
        return bool(a == b)
    except Exception:       # an array-like comparison with no single truth value
        return False


class GraphBreak(Unsupported):
    """A compiled function does something a single XLA program cannot reproduce on every call
    (Python reads a tensor's value, a hook with Python side effects runs, tensor state is
    rebound). ``tracegrad.compile`` runs such a function eagerly, or raises this error when
    ``fullgraph=True``. ``where`` is the user's ``file:line``."""

    def __init__(self, reason, where=None):
        self.reason, self.where = reason, where or user_frame()
        cap = _state.CAPTURE[0]
        if cap is not None and cap.broken is None:
            # the trace is void even if the user's code catches this error (kept as text: the
            # exception's traceback would keep the trace's frames alive)
            cap.broken = (reason, self.where)
        super().__init__(f"tracegrad.compile cannot capture this function as one program: {reason}"
                         + (f" (at {self.where})" if self.where else "")
                         + ". Move it outside the compiled function, keep the computation in tensor "
                           "ops (e.g. tracegrad.where instead of if/else on a tensor), or call "
                           "tracegrad.compile without fullgraph=True to run such calls eagerly.")


def user_frame(stack=None) -> str | None:
    """``file:line`` of the innermost frame outside the tracegrad package (and outside JAX,
    contextlib and the logging package)."""
    frames = stack if stack is not None else traceback.extract_stack()
    for fr in reversed(frames):
        f = os.path.abspath(fr.filename)
        if not f.startswith(_PKG) and f"{os.sep}jax{os.sep}" not in f and "contextlib" not in f \
                and not f.startswith(_LOGGING):
            return f"{fr.filename}:{fr.lineno}"
    return None


def def_site(fn) -> str | None:
    """``file:line, in name`` of where the compiled function ``fn`` (a function, a bound method,
    a module's ``forward``, a ``functools.partial``) is defined, followed by the caller's line:
    for a graph break found after the call (a list it was passed appended to, a counter
    changed), which no single op of the function raised."""
    f = fn
    for _ in range(4):        # partial -> func, module -> forward, method -> __func__
        if getattr(f, "__code__", None) is not None:
            break
        f = getattr(f, "func", None) or getattr(f, "forward", None) or getattr(f, "__func__", None)
        if f is None:
            return user_frame()
    code = getattr(f, "__code__", None)
    if code is None:
        return user_frame()
    caller = user_frame()
    return (f"{code.co_filename}:{code.co_firstlineno}, in {code.co_name}"
            + (f"; called at {caller}" if caller else ""))


class StreamGuard:
    """``sys.stdout``/``sys.stderr`` while a trace runs: a write (``print``) is a graph break,
    because the program would print only while tracing, not on every call. The write raises
    before any text goes out, so the eager rerun prints each line exactly once. A warning
    passes through: eager shows it once per place as well (Python's default filter)."""

    def __init__(self, stream, name):
        self._stream, self._name = stream, name
        self._thread = threading.get_ident()       # other threads' output is not the trace's

    def write(self, text):
        if not text:
            return 0
        if threading.get_ident() != self._thread or sys._getframe(1).f_code.co_name == "_showwarnmsg_impl":
            return self._stream.write(text)
        raise GraphBreak(f"print() or a write to sys.{self._name} happens on every eager call, but "
                         "only once while tracing")

    def __getattr__(self, name):      # flush, encoding, isatty...: the real stream's
        return getattr(self._stream, name)


@contextlib.contextmanager
def guard_output(warned, code=None, levels=None):
    """While tracing: ``print`` to stdout/stderr and a logging record that a user's logger
    would emit are graph breaks (their text would come out once, not on every call). Loggers
    of tracegrad, JAX and absl are left alone (their records are about tracing itself).
    A warning the function gives is kept in ``warned`` (not shown) for every run of the
    program to give again: NOTE [warnings in a trace]. Whether a user's logger is on for a
    level, read while tracing (a ``logger.debug`` the level silences, ``isEnabledFor``), goes
    into ``levels`` for the program's guards: NOTE [logger levels read in a trace]."""
    out, err, log = sys.stdout, sys.stderr, logging.Logger._log
    enabled = logging.Logger.__dict__["isEnabledFor"]
    thread = threading.get_ident()

    def _log(logger, level, msg, *args, **kwargs):
        if threading.get_ident() != thread or logger.name.split(".")[0] in _OWN_LOGGERS:
            return log(logger, level, msg, *args, **kwargs)
        raise GraphBreak(f"the logging call {msg!r} on logger '{logger.name}' happens on every eager "
                         "call, but only once while tracing")

    def _enabled(logger, level):
        on = enabled(logger, level)
        if levels is not None and threading.get_ident() == thread and logger.name.split(".")[0] not in _OWN_LOGGERS:
            levels[(logger, level)] = on
        return on
    sys.stdout, sys.stderr = StreamGuard(out, "stdout"), StreamGuard(err, "stderr")
    logging.Logger._log = _log
    logging.Logger.isEnabledFor = _enabled
    catcher = Catcher(warned, code).__enter__()
    clocks = {n: getattr(time, n) for n in CLOCKS if hasattr(time, n)}
    for n, real in clocks.items():
        setattr(time, n, _clock_guard(n, real, thread))
    real_open = builtins.open

    def _open(*args, **kwargs):
        # a file read or written while tracing would be read (baked) or written once
        if threading.get_ident() == thread and opened_by_user(sys._getframe(1)):
            raise GraphBreak("a file is opened inside the compiled function: what it reads would be "
                             "baked into the program, what it writes written once, while tracing")
        return real_open(*args, **kwargs)
    builtins.open = io.open = _open
    real_build = builtins.__build_class__

    def _build_class(func, name, *bases, **kwds):
        # remembered for the result check (NOTE [classes made in a trace] in result_objects.py)
        cls = real_build(func, name, *bases, **kwds)
        cap = _state.CAPTURE[0]
        if cap is not None and threading.get_ident() == thread:
            cap.made_classes[id(cls)] = cls
        return cls
    builtins.__build_class__ = _build_class
    attrs = {n: Tensor.__dict__.get(n) for n in ("__setattr__", "__delattr__")}
    Tensor.__setattr__, Tensor.__delattr__ = _tensor_attr_guard(thread)
    try:
        yield
    finally:
        for n, real in attrs.items():     # as they were (a nested trace leaves the outer's)
            if real is None:
                delattr(Tensor, n)
            else:
                setattr(Tensor, n, real)
        sys.stdout, sys.stderr = out, err
        logging.Logger._log = log
        logging.Logger.isEnabledFor = enabled
        catcher.__exit__()
        for n, real in clocks.items():
            setattr(time, n, real)
        builtins.open = io.open = real_open
        if builtins.__build_class__ is _build_class:    # (a wrapper put over it since is left alone)
            builtins.__build_class__ = real_build


def _tensor_attr_guard(thread):
    """``Tensor.__setattr__``/``__delattr__`` while tracing: the user's code setting or deleting
    a Python attribute on a tensor made before the call is remembered with the tensor's
    attributes before it (``Capture.attrs_left_changed``). Tracegrad's own attributes (the
    ``__slots__``), properties the capture follows (``grad``, ``data``, ``requires_grad``) and
    tensors made in the trace pass."""
    def check(t, name):
        cap = _state.CAPTURE[0]
        if cap is None or hasattr(getattr(type(t), name, None), "__set__") or threading.get_ident() != thread:
            return
        st = getattr(t, "_st", None)
        if st is not None and st not in cap.created and id(t) not in cap.tensor_attrs:
            frame = sys._getframe(2)
            if _user_code(frame.f_code):
                cap.tensor_attrs[id(t)] = (t, dict(t.__dict__), f"{frame.f_code.co_filename}:{frame.f_lineno}")

    def set_(t, name, value):
        check(t, name)
        object.__setattr__(t, name, value)

    def del_(t, name):
        check(t, name)
        object.__delattr__(t, name)
    return set_, del_


# a clock read by the user's code while tracing would be read once and its value baked into the
# program (a timer that never moves); the ones named directly (``from time import time``) are
# found from the code (``pystate.clock_reads``)
CLOCKS = ("time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time",
          "process_time_ns", "thread_time", "thread_time_ns")


def _clock_guard(name, real, thread):
    def read():
        if threading.get_ident() == thread and _user_code(sys._getframe(1).f_code):
            raise GraphBreak(f"time.{name}() gives a new value on every eager call, but would be read once "
                             "while tracing (read it outside and pass it as an argument)")
        return real()
    return read


def _grad_leaf(t) -> bool:
    """A leaf tensor that requires grad and is no view (a parameter): the tensor of its
    storage whose ``.grad`` a backward fills."""
    return t._rg and t._gf is None and not t._chain


@jax.custom_jvp
def _written(old, new):
    """``new``, with the derivative of ``old`` (an identity through an unrecorded write)."""
    return new


@_written.defjvp
def _written_jvp(primals, tangents):
    return primals[1], tangents[0]


# NOTE [hooks in a trace]: a tensor hook, a post-accumulate-grad hook, a module hook or an
# optimizer step hook runs inside the trace like the function's own code: its tensor math
# (``g.clamp(-1, 1)``, an output scaled or replaced) is part of the program and runs on every
# call. Its Python is checked like the function's: the closure cells and globals it reads are
# guarded (a hook's ``scale`` changed between calls traces again), and one that changes Python
# state (appends to a list, counts, stores a tensor) or reads a file or the clock makes the
# call a graph break, so it runs eagerly and does that on every call. Pack hooks of
# ``saved_tensors_hooks`` and hooks on autograd Nodes still break (their unpack halves and
# the Nodes' lifetimes are not followed here). A module's state_dict and load_state_dict hooks
# (``net.state_dict()`` inside a step) are module hooks too: reported as their own kinds only so
# that a graph break names them.
_TRACED_HOOKS = ("tensor", "post accumulate grad", "module", "optimizer step", "state_dict", "load_state_dict")


_FIRST_READ: dict = {}      # code -> whether it loads its first parameter


def _reads_first_argument(fn) -> bool:
    """Whether hook ``fn``'s code uses its first parameter (the module, optimizer or tensor it
    is called with), so that object's lists are scanned (NOTE [lists hooks grow] in
    pystate.py); True for code it cannot tell (a bound method, a partial, ``*args``)."""
    code = getattr(fn, "__code__", None)
    if code is None or getattr(fn, "__self__", None) is not None or code.co_argcount == 0:
        return True
    found = _FIRST_READ.get(code)
    if found is None:
        first = code.co_varnames[0]
        found = first in code.co_cellvars or any(   # (3.13's LOAD_FAST_LOAD_FAST loads two)
            first in (x.argval if type(x.argval) is tuple else (x.argval,))
            for x in dis.get_instructions(code) if x.opname.startswith("LOAD_FAST"))
        _FIRST_READ[code] = found
    return found


def _hook_name(fn):
    return getattr(fn, "__qualname__", None) or type(fn).__name__


class TracedHook:
    """A hook that ran in this trace: the Python references its code reads, what they held
    when it first ran (``before``: to see a change; ``snap``: to put it back)."""

    __slots__ = ("kind", "fn", "refs", "names", "before", "snap", "lists", "other")

    def __init__(self, kind, fn, receives=()):
        self.kind, self.fn = kind, fn
        # a callable object (``self.features = out`` in its ``__call__``) is state of its own;
        # so are the module or optimizer it is called with (NOTE [lists hooks grow] in pystate.py)
        uses = (set(), set(), set(), set(), set(), set())
        objects = tuple(a for a in receives if not isinstance(a, Tensor))
        self.refs, self.names = python_refs(fn, ((fn,) if _plain_object(fn) else ()) + objects,
                                            counters_out=uses)
        # a tensor it is called with (a post-accumulate-grad hook's parameter): its attributes
        tensors = tuple(a for a in receives if isinstance(a, Tensor))
        self.refs += tuple((f"tensor {i}", None, {f"tensor {i}": a}) for i, a in enumerate(tensors))
        self.names += tuple(frozenset(uses[3]) for _ in tensors)
        # NOTE [Python appends] in pystate.py: the lists it only grows (``acts.append(out)``),
        # and the names its code uses otherwise (a list the function grows that it reads)
        self.lists, self.other = grown_lists(self.refs, uses), frozenset(uses[5])
        reads = stateful_reads(self.refs, self.names) or clock_reads(self.refs, self.names)
        if reads is not None:
            raise GraphBreak(f"the {kind} hook '{_hook_name(fn)}' reads {reads}, which gives a new value on "
                             "every eager call but would be read once while tracing")
        self.before, self.snap = effects_signature(self.refs), snapshot(self.refs)


class _ViewOfArgument:
    """The layout of view ``t`` of a view argument's stand-in as the same view of the caller's
    argument ``real`` has it: ``t``'s view steps (over the stand-in, whose storage is the
    argument's shape) follow the argument's own steps over its storage. Only what the layout
    functions read (``chain_is_contiguous``, ``strides_of``, ``is_contiguous_as``)."""
    __slots__ = ("_chain", "_st", "_value")

    def __init__(self, real, t):
        self._chain, self._st, self._value = real._chain + t._chain, real._st, t._value

    @property
    def shape(self):
        return tuple(self._value.shape)

    @property
    def ndim(self):
        return len(self._value.shape)


class Capture:
    """Bookkeeping for one trace. ``lifted``: ids of storages whose arrays are tracers now;
    ``generators``: generators whose keys are traced; ``hyper_inputs``: optimizer ->
    {group index: {key: traced value}} (``hyper.bind``): what its step sees instead of numbers."""

    def __init__(self, lifted_ids, generators, hyper_inputs, vjp=False):
        self.vjp = vjp      # JAX differentiates the trace: the engine's backward never runs in it
        self.broken = None  # the first GraphBreak raised in this trace
        self.lifted = lifted_ids
        self.generators = generators
        self.hyper_inputs = hyper_inputs
        self.hyper_signs = {}                  # lifted value compared with zero -> its sign then
        # NOTE [deferred scheduler step] (deferred_step.py): the schedulers whose step() each
        # call runs after the program, their optimizers' group and optimizer ids, and the
        # schedulers sealed until the function returns (with their own classes)
        self.deferred_steps, self.deferred_groups, self.deferred_optimizers, self.sealed = [], set(), set(), []
        self.read_guards = []                  # (mapping, key, value, None) checks library code asked for
        self.settings_guarded = False          # settings_now() is among read_guards
        # NOTE [profiler read while tracing]: whether a profiler was recording when the trace
        # began; guarded (``guard_profiler``) once the traced Python asks. The value at the
        # start, not at the read: a profiler the function itself opens is opened on every call
        self.profiler_at_start, self.profiler_guarded = _state.PROFILER[0] is not None, False
        # storages made during this trace, in the order made: a WeakSet iterates in address
        # order, and which escape paired with which storage then changed from run to run
        self.created = weakref.WeakKeyDictionary()
        self.numpy_copies = weakref.WeakKeyDictionary()     # ``numpy_copy``
        # first sight of outside state not lifted yet, with its value then (restored after)
        self.found = {}                        # id(storage) -> (a tensor over it, array, the storage)
        self.data_leaves = {}                  # id(storage) -> the grad leaf ``.data =`` moved off it
        self.found_restored = False            # restore_found ran
        self.found_generators = {}             # generator -> (key, seed)
        self.made_generators = []              # weakrefs: NOTE [generators made in a trace]
        self.optimizers = []                   # in first-seen order
        self.made_optimizers = []              # weakrefs: NOTE [optimizers made in a trace]
        self.made_schedulers = []              # weakrefs: lr schedulers made in this trace
        self.grad_owners = {}                  # id(tensor) -> (leaf tensor, its .grad then)
        self.backward_ran = False              # backward() ran: results' graphs are consumed
        self.modules = {}                      # id -> module called during the trace
        self.opt_state = {}                    # id(optimizer) -> its state before the trace
        self.opt_attrs = {}                    # id(optimizer) -> (it, its Python-valued attributes before)
        self.attr_stores = {}                  # id(module) -> its attribute dicts before the trace
        self.uses_remat = False                # a checkpoint recomputes behind a barrier
        self.outside_writes = 0                # in-place writes to storages made before the trace
        self.versions = {}                     # NOTE [versions of written state]: id(counter) -> (it, value before)
        self.rg_flips = {}                     # id(outside tensor) -> (it, requires_grad before, user line)
        self.layout_filled = False             # NOTE [a layout the trace changed] (region.py)
        self.rg_reads = {}                     # id(outside tensor) -> it: ``requires_grad`` read as Python
        self.aliases_made = {}                 # id(view/alias made by this trace) -> weakref to it
        self.tensor_attrs = {}                 # id(outside tensor) -> (it, its __dict__ before, user line)
        self.hooks = {}                        # id(hook) -> TracedHook (NOTE [hooks in a trace])
        self.current_grads = ()                # the gradients the engine's running node got
        self.first_node = next(_node_seq)      # autograd nodes numbered from here are the trace's
        self.stand_ins = {}                    # id(storage of an argument's stand-in) -> the argument
        self.numpy_inputs = {}                 # id(a NumPy argument's stand-in) -> the stand-in (NOTE
        # [numpy arguments] in numpy_args.py)
        self.contiguous_args = set()           # ids of view arguments whose contiguity the trace relies on
        self.layout_args = {}                  # id(view argument) -> (it, its strides): the trace relies on them
        # ids of the modules constructed during this trace (an object from before the call
        # cannot share an id with one of them; a set of ids works for unhashable modules too)
        self.made_modules = set()
        self.made_classes = {}       # id -> class made by a class statement while tracing
        # NOTE [Python counters] (pystate.py): the module counters bumped ((id(dict), name) ->
        # (dict, name, value before)), the plain objects' candidates (``int_attributes``), and
        # the counters' values when each scheduler step was deferred
        self.counter_stores, self.counter_candidates, self.deferral_counts = {}, (), []
        self.list_candidates = ()              # NOTE [Python appends]: the function's, ``grown_lists``'
        self.value_checks = []                 # NOTE [value checks at run time]
        self.data_sets = {}                    # id(tensor) -> (tensor, its storage, view chain, cache) before ``.data =``
        self.defer_items = None                # NOTE [deferred item]: the stand-in class, when deferring
        self.deferred = []                     # the DeferredItems handed out
        # the custom Function whose forward runs in a custom_vjp: (its name, the AD traces that
        # differentiate it from outside: NOTE [transforms inside a custom Function's forward])
        self.function_forward = None
        self.function_rule = None              # set by the region: custom_function.rule
        self.constants = Constants()           # NOTE [constants in a trace]

    # ---- reports from the lower layers ----------------------------------------------------
    # NOTE [value checks at run time]: eager ops raise on bad values (a class target or an
    # embedding id out of range, BCE probabilities outside [0, 1]) after reading them on the
    # host (NOTE [eager value checks] in _api/nn_functions.py). A trace has no values to read,
    # and XLA does not raise (a gather clamps the id), so a compiled step gave a number where
    # eager raised. The check reports its traced "bad" array here instead; the program returns
    # whether any was true, and when one was, the call writes nothing back and runs eagerly,
    # which raises the eager error at its line after eager's own side effects. Where the flag
    # is cheap to compute apart (a class target's or an index's range: ``Program.split_checks``),
    # those checks run as a small program of their own before the step, which keeps its state
    # donated; otherwise (a BCE input check needs the model's forward) the program returns the
    # flag and donates no state: the state must still be there for the eager run.
    def check_values(self, x, bad):
        """An eager value check on ``x`` (a tensor or array): ``bad(x)``, any element true when
        eager raises. Only traced values are checked (a meta tensor's have no data at all)."""
        if isinstance(getattr(x, "_value", x), _Tracer):
            b = bad(x)
            self.value_checks.append(getattr(b, "_value", b))

    def storage_created(self, st):
        self.created[st] = None

    def _external(self, t):
        st = t._st
        return id(st) not in self.lifted and st not in self.created and st.array is not None

    def see_tensors(self, args):
        for a in args:
            st = getattr(a, "_st", None)
            if st is None or id(st) in self.lifted or st in self.created or st.array is None:
                continue
            seen = self.found.get(id(st))
            if seen is None:
                if not isinstance(st.array, _Tracer):
                    self.found[id(st)] = (a, st.array, st)
            elif seen[0] is not a and _grad_leaf(a) and not _grad_leaf(seen[0]):
                # NOTE [the leaf of a found storage]: the storage was first reached through an
                # alias (``w.data[0] = ...``, ``w.detach()[1].mul_(...)``: a tensor made in the
                # trace, requiring no grad); the leaf over it is the one to differentiate and
                # to give ``.grad``. Read through the alias only, the storage was no
                # differentiable input at all: ``w.grad`` stayed None after a backward.
                self.found[id(st)] = (a, seen[1], st)

    # NOTE [gradients in a differentiated trace]: when JAX differentiates the trace (a compiled
    # forward whose outputs are differentiated outside, ``vjp``), it follows every array, but
    # torch's gradients follow only the recorded graph. So an op's input that is not part of
    # it -- a ``detach()``ed tensor, ``.data``, a value computed under ``no_grad`` or any tensor
    # that does not require grad, or every input while grad mode is off -- enters the op behind
    # ``stop_gradient``; and an in-place op that records nothing on a tensor that requires
    # grad (``with no_grad(): y.mul_(2)``) leaves its history as it was: the gradient passes
    # through the write as through an identity, as torch's unchanged grad_fn does -- for the
    # whole storage written, through a view too (``with no_grad(): w[0].mul_(0.5)``).
    def graph_inputs(self, args, arrays, grad_on):
        """``arrays`` (the op's inputs) with those outside the recorded graph cut from JAX's
        derivative (NOTE [gradients in a differentiated trace])."""
        if self.function_forward is not None and any(isinstance(a, _AD_TRACERS) for a in arrays):
            name, outer = self.function_forward
            if any(_outer_ad(a, outer) for a in arrays):
                # (custom_function.py) JAX's custom_vjp cannot close over a value it differentiates
                raise GraphBreak(f"the custom autograd.Function {name}'s forward reads a tensor that requires "
                                 "grad and is not one of its arguments (a parameter in a closure), inside a "
                                 "compiled function whose results are differentiated outside it; pass the "
                                 "tensor to apply() as an argument")
            raise GraphBreak(f"the custom autograd.Function {name}'s forward differentiates inside (a torch.func "
                             "grad/jvp/jacrev/hessian of a tensor that requires grad is one such Function), "
                             "inside a compiled function whose results are differentiated outside it: the "
                             "program cannot nest its derivative in the outer one (NOTE [transforms inside a "
                             "custom Function's forward])")
        out = list(arrays)
        for i, a in enumerate(args):
            if getattr(a, "_st", None) is not None and not (grad_on and a._rg):
                out[i] = jax.lax.stop_gradient(out[i])
        return out

    def unrecorded_write(self, st, old):
        """After an unrecorded in-place op (under ``no_grad``, or on a tensor outside the graph)
        wrote into storage ``st``, which held ``old``: the storage's new value, differentiated as
        ``old`` (NOTE [gradients in a differentiated trace]). Done on the whole storage, not on
        the written tensor: a view made under ``no_grad`` (``w[0].mul_(0.5)``) reads its base
        behind ``stop_gradient``, so an identity on the view's own value gave the written
        elements of the base no gradient at all (``w.grad``'s row 0 was zeros; torch's leaf keeps
        its gradient there)."""
        new = st.array
        if (new is old or not isinstance(old, _Tracer) or new.dtype != old.dtype or new.shape != old.shape
                or not jnp.issubdtype(old.dtype, jnp.inexact)):
            return
        st.array = _written(old, new)
        st.gen += 1         # views cached the value without the derivative

    def numpy_copy(self, st, argument=False):
        """``st`` was made inside the trace by ``from_numpy``/``as_tensor`` over a writable
        ndarray (``argument``: a NumPy argument's stand-in): a copy here (NOTE [numpy bridge]),
        so a write to it is a graph break, and so is an argument's copy kept past the call."""
        self.numpy_copies[st] = argument

    def numpy_argument_kept(self) -> bool:
        """Whether a tensor sharing a NumPy argument's memory eagerly (``from_numpy(x)``)
        outlives the trace (kept in Python state; a returned one is a result: ``trace_region``
        asks its results): the program's would be a copy that later writes to the caller's
        array never reach (NOTE [numpy arguments] in numpy_args.py)."""
        return any(self.numpy_copies.values())

    def see_write(self, t):
        if t._st in self.numpy_copies:
            # eagerly the tensor shares the array's memory, which outlives the call: a write
            # must reach it, and later calls must see the array as it is then
            raise GraphBreak("an in-place write to a tensor made inside by from_numpy/as_tensor: the "
                             "numpy array it shares would not see it (make the tensor outside and "
                             "pass it in)")
        if t._st not in self.created:
            self.outside_writes += 1
            self.versions.setdefault(id(t._vc), (t._vc, t._vc[0]))
        if self._external(t):
            # the value to put back (``restore_found``) as a copy where the storage shares a
            # numpy array's memory (``t.numpy()`` taken before the call, ``.grad`` included):
            # its array is the alias the write below overwrites in place (NOTE [numpy bridge]),
            # and putting the alias back restored nothing. (A read only, ``see_tensors``, keeps
            # the alias: a large shared dataset is not copied per trace.)
            st = t._st
            seen = self.found.get(id(st))
            if seen is None or seen[1] is st.array:
                self.found[id(st)] = (seen[0] if seen else t, owned_array(st), st)

    # NOTE [checkpoint side effects]: eagerly, backward re-runs a checkpointed block, so its
    # writes to outside state (a BatchNorm's running stats, num_batches_tracked) happen again
    # in backward, as in torch. A compiled forward differentiated outside (``vjp``) hands
    # backward JAX's VJP of the program, which recomputes values but repeats no write: the
    # second update would be lost. Such a call runs eagerly (a graph break); a block that
    # writes nothing outside (the usual transformer block) stays in the program.
    def checkpoint_ran(self, writes_before, lists_before):
        """A checkpointed block just ran in this trace, ``writes_before`` being
        ``outside_writes`` and ``lists_before`` ``list_lengths()`` at its start."""
        if self.vjp and self.outside_writes != writes_before:
            raise GraphBreak("a checkpointed block writes state made outside it (BatchNorm running stats, "
                             "an in-place update) in a compiled forward differentiated outside: backward "
                             "repeats those writes when it recomputes the block, a program's VJP would not")
        # an append there (NOTE [Python appends] in pystate.py) is such a write too; a hook that
        # first ran in the block compares with what its list held then
        if self.vjp and any(len(lst) != lists_before.get(id(lst), len(was)) for _, _, lst, was in self._lists()):
            raise GraphBreak("a checkpointed block appends to a list in a compiled forward differentiated "
                             "outside: backward appends again when it recomputes the block, a program's "
                             "VJP would not")

    def list_lengths(self):
        """``id(list) -> len`` of the lists the function and the hooks that ran only grow."""
        return {id(lst): len(lst) for _, _, lst, _ in self._lists()}

    def _lists(self):
        return itertools.chain(self.list_candidates, *(h.lists for h in self.hooks.values()))

    # NOTE [generators made in a trace]: a ``Generator()`` the function makes (and seeds) on
    # every call (``g = Generator().manual_seed(seed)``, draws with ``generator=g``) is the
    # call's own, as a tensor made inside is: its draws are part of the program. Found as
    # outside state, each retrace met a new one and the call ran eagerly ("outside state kept
    # changing"). One that outlives the call (returned, stored) would hold a traced key: a
    # graph break (``made_generators_left``).
    def see_generator_made(self, gen):
        self.made_generators.append(weakref.ref(gen))

    # NOTE [optimizers made in a trace]: an optimizer the function builds on every call
    # (``opt = Adam(model.parameters())`` inside the step, a slip or a PGD attack's ``SGD([delta])``)
    # is the call's own, as a generator made inside is: its state starts empty each call and is
    # made by the program. Lifted as outside state, each retrace met a new one and the call ran
    # eagerly ("outside state kept changing"). Its parameters are still outside state (their
    # grads and values are lifted through them). One that outlives the call would hold the
    # trace's values in its state: a graph break (``made_optimizers_left``).
    def see_optimizer_made(self, opt):
        self.made_optimizers.append(weakref.ref(opt))

    def optimizer_made_here(self, opt) -> bool:
        return any(r() is opt for r in self.made_optimizers)

    # An lr scheduler built in the trace (its constructor steps it once) is not the one a later
    # call would build: its step is not deferred past the program (NOTE [deferred scheduler
    # step]), which would step the trace's scheduler again on every call (``StepLR(opt, 1)``
    # made after ``opt.step()`` halved the lr each call, where eager keeps it: round 45).
    def see_scheduler_made(self, sched):
        self.made_schedulers.append(weakref.ref(sched))

    def scheduler_made_here(self, sched) -> bool:
        return any(r() is sched for r in self.made_schedulers)

    def made_optimizers_left(self):
        """An optimizer made in this trace that is still alive after the function returned
        (this capture's own references to it dropped first: it has nothing to put back)."""
        for r in self.made_optimizers:
            o = r()
            if o is not None and o in self.optimizers:
                self.optimizers.remove(o)
                self.opt_state.pop(id(o), None)
                self.opt_attrs.pop(id(o), None)
            del o
        return any(r() is not None for r in self.made_optimizers)

    def made_generators_left(self):
        """A generator made in this trace that is still alive after the function returned."""
        return any(r() is not None for r in self.made_generators)

    def see_generator(self, gen):
        if any(r() is gen for r in self.made_generators):
            return
        if gen not in self.generators and gen not in self.found_generators:
            self.found_generators[gen] = (gen._key, gen._seed)

    def guard_attribute(self, obj, name):
        """Library code (not the user's, whose reads NOTE [Python values read] finds from its
        code) hands the traced function ``obj.name``, a Python value the program would bake in:
        guard it (a copy of a list, so an in-place change is seen too); a new value traces
        again."""
        v = getattr(obj, name)
        self.read_guards.append((_Attributes(obj), name, list(v) if type(v) is list else v, None))

    def guard_settings(self):
        """Python read a process-wide setting (``_state.note_setting_read``): the program holds
        while every such setting is what the trace read (once per trace)."""
        if not self.settings_guarded:
            self.settings_guarded = True
            self.read_guards.append((_Probe(settings_now), None, settings_now(), None))

    def guard_profiler(self):
        """Python asked whether a profiler is recording (``_state.note_profiler_read``): the
        program holds while that is as when the trace began (once per trace)."""
        if not self.profiler_guarded:
            self.profiler_guarded = True
            self.read_guards.append((_Probe(_profiler_on), None, self.profiler_at_start, None))

    def cannot(self, reason):
        """A graph break that library code (a lower layer) asks for, with ``reason``."""
        raise GraphBreak(reason)

    def generator_keys(self) -> list:
        """Each generator this trace draws from, with its key now: two snapshots differ when
        random numbers were drawn in between."""
        gens = list(self.generators) + [g for g in self.found_generators if g not in self.generators]
        return [(g, g._key) for g in gens]

    def python_read(self, t, what):
        """Python asks for a tensor's value (``item()``, ``bool()``, ``numpy()``...): fine for a
        constant made inside the trace; anything else would freeze one call's value."""
        if isinstance(t._value, _Tracer) or self._external(t):
            raise GraphBreak(f"{what} reads a tensor's value in Python (data-dependent control "
                             "flow or a value taken out of the program)")

    def deferred_item(self, t):
        """NOTE [deferred item]: a stand-in for ``t.item()`` called from user code on a tensor
        traced at this trace's level, or None (the value is read as before)."""
        v = t._value
        while type(v).__name__ in ("JVPTracer", "LinearizeTracer"):
            # a differentiable result's value inside the region's ``jax.vjp``: the number is
            # its primal, computed by the same program
            v = v.primal
        if self.defer_items is None or type(v).__name__ != "DynamicJaxprTracer":
            return None
        # the caller of ``item()``, past the __torch_function__ trampolines once the protocol is
        # on (a Tensor subclass or mode was ever used: then every call passes through them)
        caller = outside_dispatch(sys._getframe(2))
        if caller is None or caller.f_globals.get("__name__", "").startswith("tracegrad"):
            return None
        return self.defer_items(v, self.deferred)

    def on_hook(self, kind, fn, receives=()):
        # one record per hook and object it is called with (a hook on every layer) when its
        # code reads that object, else one per hook (a scan with a module costs ~0.5 ms)
        receives = receives if receives and _reads_first_argument(fn) else ()
        key = (id(fn),) + tuple(map(id, receives))
        if getattr(fn, "_tracegrad_traceable", False) or key in self.hooks:
            return
        if fn is None:
            what = "removed" if kind == "removal" else "registered"
            raise GraphBreak(f"a hook is {what} inside the compiled function (it would be "
                             f"{what} once, while tracing)")
        if kind not in _TRACED_HOOKS:
            raise GraphBreak(f"the {kind} hook '{_hook_name(fn)}' runs inside the compiled function; its "
                             "Python side effects would happen only while tracing")
        self.hooks[key] = TracedHook(kind, fn, receives)

    def hooks_changed(self):
        """Raise the graph break for a hook that changed Python state while traced; the
        ``(place, name, items)`` of the lists the hooks only grew (NOTE [Python appends]),
        each cut back, the hook that first ran last first (what it added is at the lists' end)."""
        grown = []
        for h in reversed(list(self.hooks.values())):
            moved = changed(h.refs, h.before)
            # (a list on a module it is called with grows unseen by ``changed``: modules are
            # state the capture tracks by other means, their lists not; NOTE [lists hooks grow])
            if h.lists:
                found = append_changes(h.lists)
                if found:
                    grown += found
                    moved = changed(h.refs, h.before)
            if moved is not None:
                moved = moved.replace("argument 0", "self", 1) if moved.startswith("argument 0") else moved
                # the hook reads ``moved``; the hook or the code it ran around changed it
                raise GraphBreak(f"the call changes the Python value '{moved}' that the {h.kind} hook "
                                 f"'{_hook_name(h.fn)}' reads (a counter, an append, a stored tensor...): "
                                 "the program would do that only while tracing, not on every call")
        return grown

    def restore_hooks(self):
        """Put back what the hooks changed (an abandoned trace: the eager rerun runs them again)."""
        for h in reversed(list(self.hooks.values())):
            restore(h.snap)
            # a list on a module or tensor is in no snapshot (NOTE [lists hooks grow]): what
            # the abandoned trace appended (tracers) is cut off here
            cut_appends(h.lists)

    # NOTE [argument stand-ins]: the trace runs the function on a fresh tensor per tensor
    # argument (a leaf, contiguous, version 0, storage of its own), which answers Python's
    # questions about the argument's history, layout and identity as the caller's tensor may
    # not. The call signature says whether an argument is a leaf and whether it is a view
    # (``compiler._key``); asking ``grad_fn``/``is_leaf`` of a non-leaf argument, the layout
    # (``stride()``, ``is_contiguous()``) of a view of a view argument whose strides are not
    # row-major ones (``see_strides``; the argument's own layout: ``argument_layout``), ``data_ptr()`` of
    # any argument (another storage each call), or ``_version`` of any tensor from outside the call
    # (a write between calls would not be seen) is a graph break.
    def _argument(self, t):
        return self.stand_ins.get(id(t._st))

    def see_layout(self, t, what, every=False):
        real = self._argument(t)
        if real is not None and (every or real._chain):
            raise GraphBreak(f"{what} of a tensor argument{'' if every else ' that is a view'}: the "
                             "program's signature does not hold it")

    def see_strides(self, t, what):
        """``stride()``/``is_contiguous()`` of a view of a view argument's stand-in (LSTNet's
        ``x[:, -hw:, :].permute(0, 2, 1).contiguous()`` on a batch sliced off a bigger tensor;
        a seq2seq step's ``target_batches.transpose(0, 1).contiguous()`` on a batch passed
        transposed): returns what to answer from. An argument whose strides are row-major ones
        (a slice along dim 0) has the stand-in's strides, so every view of the stand-in has the
        strides the same view of the argument has (only the storage offset differs): ``t``
        itself. Any other view argument: ``t``'s view steps replayed after the argument's own
        on the argument's storage (``_ViewOfArgument``), as eager lays out the same view of the
        caller's tensor. Either way the argument's strides are a guard of the program
        (``Region.args_contiguous``): a view's strides follow from its input's."""
        real = self._argument(t)
        if real is None or not real._chain:
            return t
        self.layout_args[id(real)] = (real, strides_of(real))
        if strides_of(real) == rowmajor_strides(real.shape):
            return t
        return _ViewOfArgument(real, t)

    def see_layout_choice(self, t, what):
        """``reshape()``/``view()`` of (a view of) an argument: eager gives a view or a copy (or
        raises, for ``view``) by the argument's layout. A contiguous argument decides as its
        stand-in does (the program then checks it is contiguous on every call); a
        non-contiguous view argument itself decides by its own strides (returned: the caller
        decides with it, ``argument_layout``), and a view of one by the same view of the
        argument (``see_strides``); its strides are then the program's guard."""
        real = self._argument(t)
        if real is None or not real._chain:
            return None
        if not chain_is_contiguous(real):
            layout = self.argument_layout(t)
            return layout if layout is not None else self.see_strides(t, what)
        self.contiguous_args.add(id(real))
        return None

    def argument_layout(self, t):
        """The caller's view argument when ``t`` is its stand-in itself (no view chain of its own
        on the stand-in's storage): a layout question about ``t`` (``is_contiguous()``,
        ``stride()``, ``reshape``'s view-or-copy) is answered from the argument, as eager
        answers it (a permuted batch passed to a compiled step, then a ``Linear``), and the
        program keeps the argument's strides as a guard (``Region.args_contiguous``). None for
        anything else (a view of the stand-in: ``see_layout`` breaks the graph)."""
        real = self._argument(t)
        if real is None or not real._chain or t._chain:
            return None
        self.layout_args[id(real)] = (real, strides_of(real))
        return real

    def see_identity(self, t):
        """``hash()`` of an argument (a dict or set keyed by it, asked by the user's code): the
        trace's stand-in is another object than the caller's tensor on every call."""
        if not t._chain and self._argument(t) is not None and _user_code(sys._getframe(2).f_code):
            raise GraphBreak("hash() of a tensor argument (a dict or set keyed by it): the program runs on a "
                             "stand-in, not on the caller's tensor object")

    def see_leaf(self, t):
        real = self._argument(t)
        # the stand-in itself (a view of it or its detach() answers as eager's would)
        if real is not None and t._rg and t._gf is None and not t._chain and (real._gf is not None or real._chain):
            raise GraphBreak("grad_fn or is_leaf of a tensor argument that is not a leaf: the program "
                             "runs on a leaf stand-in for it")

    def see_bump(self, t):
        """``increment_version(t)`` while tracing: NOTE [versions of written state]."""
        if t._st not in self.created:
            self.versions.setdefault(id(t._vc), (t._vc, t._vc[0]))

    def see_requires_grad(self, t):
        """``t.requires_grad_()`` is about to change ``t``'s flag while tracing: remembered with
        its flag before the trace and the user's line (``flag_left_changed``). A ``detach()``
        alias this trace made of an outside tensor is not from outside (``alias_made_here``):
        eager makes a new one on every call (``autograd.functional.vjp`` inside a custom
        Function's backward: ``x.detach().requires_grad_()`` of its saved inputs)."""
        if t._st not in self.created and id(t) not in self.rg_flips and not self.alias_made_here(t):
            self.rg_flips[id(t)] = (t, t._rg, user_frame())

    def see_layout_filled(self, module):
        """A module from outside gets a submodule or parameter where it held None or nothing
        (``self.target = copy.deepcopy(self.online)`` behind ``if self.target is None``):
        NOTE [a layout the trace changed] in trace.py."""
        if id(module) not in self.made_modules:
            self.layout_filled = True

    def see_rg_read(self, t):
        """Python reads ``t.requires_grad`` while tracing: a tensor from outside keeps its flag
        guarded (``guards.flag_guards``), whether or not the program reads its values (a step
        counting ``p.requires_grad`` parameters after the caller froze one). A tensor an op of
        this trace made is not from outside even when its storage is (``w.t()`` of a parameter,
        whose flag a non-reentrant checkpoint's pack hook reads): its flag follows the guarded
        inputs of that op, and the guard on it, gone after the call, would never hold again."""
        if id(t) not in self.rg_reads and not self.made_here(t) \
                and not self.first_node <= getattr(t._gf, "_seq", -1) < _ACCUMULATE_SEQ \
                and not self.alias_made_here(t):
            self.rg_reads[id(t)] = t

    # A view or a detached alias this trace made of a tensor from outside that needs no grad
    # (``w[0].normal_()``, ``nn.init.normal_(w[0])`` inside the step: the in-place draw reads
    # ``self.requires_grad``; ``w.detach().requires_grad``) has no node to date it
    # (``first_node`` above), and its storage is from outside (``made_here``): it counted as a
    # tensor from outside, and the guard on its flag, gone with the alias after the call,
    # failed on every later call: a new trace per call (round 40). Its flag follows the guarded
    # state of the tensor it was made from, as an op's output's does.
    def see_alias_made(self, t):
        """A view or ``detach()`` alias ``t`` is being made while tracing (``_dispatch._make_view``,
        ``Tensor.detach``)."""
        self.aliases_made[id(t)] = weakref.ref(t)

    def alias_made_here(self, t) -> bool:
        """Whether ``t`` is a view or alias made during this trace (``see_alias_made``)."""
        r = self.aliases_made.get(id(t))
        return r is not None and r() is t

    # A flag flipped and set back within the call (a GAN step freezing the discriminator for the
    # generator's update) is the same on every call: the program stays valid. A flag the call
    # leaves changed (``p.requires_grad_(not p.requires_grad)``) would change only while tracing
    # (and a retrace flipped it back): a graph break.
    def flag_left_changed(self):
        """The user's line that left an outside tensor's ``requires_grad`` changed, or None."""
        for t, rg, where in self.rg_flips.values():
            if t._rg != rg:
                return where or "?"
        return None

    # NOTE [tensor attributes]: a Python attribute the call leaves changed on a tensor from
    # outside (``p.steps = p.steps + 1``, ``p.last_norm = g.norm()``) would change only while
    # tracing (and a retrace changed it again): a graph break. One set to the object it already
    # held, or set and put back within the call, is the same on every call.
    def attrs_left_changed(self):
        """``(name, the user's line)`` of an attribute the call left changed on an outside tensor."""
        for t, before, where in self.tensor_attrs.values():
            now = t.__dict__
            for k in set(now) | set(before):
                if now.get(k, before) is not before.get(k, now):
                    return k, where
        return None

    def restore_attrs(self):
        """Put back the Python attributes of outside tensors (an abandoned trace)."""
        for t, before, _ in self.tensor_attrs.values():
            t.__dict__.clear()
            t.__dict__.update(before)

    def restore_flags(self):
        """Put back the ``requires_grad`` flags the trace changed (an abandoned trace)."""
        for t, rg, _ in self.rg_flips.values():
            t._rg = rg

    def see_version(self, t):
        if t._st not in self.created or self._argument(t) is not None:
            raise GraphBreak("a tensor's _version read in Python: writes between calls would not "
                             "change the value the program holds")

    def counter_store(self, d, name, value) -> bool:
        """A module attribute being set to ``value`` is a counter's increment (NOTE [Python
        counters] in pystate.py): both ints, set by the ``STORE_ATTR`` of an ``obj.name += k``
        in the code calling ``__setattr__``. Recorded with the value before the trace."""
        if type(value) is not int or type(d.get(name)) is not int:
            return False
        f = sys._getframe(2)       # the code whose STORE_ATTR called Module.__setattr__
        if f.f_lasti not in counter_uses(f.f_code).stores:
            return False
        self.counter_stores.setdefault((id(d), name), (d, name, d[name]))
        return True

    def counters_changed(self):
        """``(dict, name, difference)`` of the module counters the trace bumped, each put back."""
        out = []
        for d, name, v0 in self.counter_stores.values():
            now = d.get(name)
            if now != v0:
                out.append((d, name, now - v0))
            d[name] = v0
        self.counter_stores = {}
        return tuple(out)

    def note_deferral(self):
        """A scheduler step is deferred now: the counters' values (before it, in eager order)."""
        counts = {(id(d), k): d.get(k) for _, d, k, _ in self.counter_candidates}
        counts.update({key: d.get(name) for key, (d, name, _) in self.counter_stores.items()})
        self.deferral_counts.append(counts)

    def restore_counters(self):
        for d, name, v0 in self.counter_stores.values():
            d[name] = v0

    def python_effect(self, what):
        raise GraphBreak(f"{what} is a Python side effect: the program would not repeat it on "
                         "later calls")

    def see_optimizer(self, opt):
        if opt not in self.optimizers:
            self.optimizers.append(opt)
            # its per-parameter state dicts as they were, for an abandoned trace to put back
            # (an entry that is not a dict -- ``self.state['n'] = 0`` under a key of its own --
            # is kept as itself)
            self.opt_state[id(opt)] = (opt, {id(p): (p, d, dict(d) if isinstance(d, dict) else None)
                                             for p, d in opt.state.items()})
            self.opt_attrs[id(opt)] = (opt, {k: (v, _attr_signature(v), _copy(v)) for k, v in _own_attributes(opt)})
        for group in opt.param_groups:
            for p in group["params"]:
                self.see_grad_owner(p)

    def see_optimizer_python_state(self, opt):
        """``opt.step()`` has just run in the trace: a Python value (not a tensor) it bound in
        a parameter's state dict or as its own attribute -- a custom optimizer's
        ``state['steps'] += 1`` or ``self.t += 1`` on a Python int -- would be baked into the
        program and never written again on later calls, so the program's bias corrections and
        the counter would stay at the traced step. A graph break (torch's dynamo guards such an
        int and recompiles); an abandoned trace puts the attributes back (``restore_objects``)."""
        missing = object()
        attrs = self.opt_attrs.get(id(opt), (None, {}))[1]
        for k, v in _own_attributes(opt):
            if isinstance(v, Tensor):
                continue
            was = attrs.get(k)
            if was is None or (was[0] is not v and not (type(was[0]) is type(v) and _same_python_value(was[0], v))):
                self.python_effect(f"{type(opt).__name__}.step() setting its attribute {k!r} "
                                   f"to a Python {type(v).__name__}")
            if _attr_signature(v) != was[1]:    # a list or dict it keeps, grown or written
                self.python_effect(f"{type(opt).__name__}.step() changing the {type(v).__name__} in "
                                   f"its attribute {k!r}")
        before = self.opt_state.get(id(opt), (None, {}))[1]
        for p, d in opt.state.items():
            if not isinstance(d, dict):
                was = before.get(id(p), (None, missing, None))[1]
                if _is_traced_value(d) or was is d or (type(was) is type(d) and _same_python_value(was, d)):
                    continue
                self.python_effect(f"{type(opt).__name__}.step() setting its state entry {p!r} to a "
                                   f"Python {type(d).__name__}")
            old = before.get(id(p), (None, None, {}))[2] or {}
            for k, v in d.items():
                if _is_traced_value(v):
                    continue
                was = old.get(k, missing)
                if was is v or (was is not missing and type(was) is type(v) and _same_python_value(was, v)):
                    continue
                self.python_effect(f"{type(opt).__name__}.step() setting its per-parameter state "
                                   f"{k!r} to a Python {type(v).__name__}")

    def see_function(self, cls):
        """A custom ``autograd.Function`` call is about to be recorded in this trace. When JAX
        differentiates the trace (``vjp``) its backward must be the region's VJP there: returns
        the runner ``Function.apply`` calls instead of forward (``custom_function.run``), or
        raises GraphBreak when the Function cannot be kept exactly; None otherwise."""
        if not self.vjp:
            return None
        if self.function_rule is None:
            raise GraphBreak(f"the custom autograd.Function {cls.__name__} runs inside a compiled "
                             "function whose results are differentiated outside it (its backward "
                             "would not run)")
        return self.function_rule(self, cls)

    def see_func_closure(self, shape):
        """A ``tracegrad.func`` transform read a tensor requiring grad from outside it: eagerly
        its results join the autograd graph through that tensor; a trace would detach them
        (``func/_wrap._traced_closure``)."""
        raise GraphBreak(f"a tracegrad.func transform reads a tensor that requires grad from outside "
                         f"its function (shape {list(shape)}, e.g. a model's parameter in a closure): "
                         "its results are differentiable eagerly but not in a compiled program; pass "
                         "the tensor as an argument of the transformed function, or read it detached "
                         "(.detach()) when no gradient should reach it")

    def see_backward_graph(self, nodes):
        """A backward inside the trace is about to run over ``nodes``: a node recorded before
        the trace began (an eager graph the function reaches through a list or an attribute,
        REINFORCE's kept log-probabilities) belongs to one call's Python, not to the program; and
        running it while tracing would free its saved tensors before the eager rerun. A graph
        break, raised before any node runs. (Leaves' accumulators are state, not graph.)"""
        first = self.first_node
        for n in nodes:
            if n._seq < first and not isinstance(n, AccumulateGrad):
                raise GraphBreak(f"backward() inside the compiled function reaches the graph of a tensor "
                                 f"computed before the call ({n.name()}); a compiled call cannot replay "
                                 "a graph built outside it")

    def see_retain_grad(self, t):
        if self.vjp:
            raise GraphBreak("retain_grad() inside a compiled function whose results are "
                             "differentiated outside it (the tensor's .grad would stay empty)")

    def see_module(self, m):
        """``m`` runs (or changes mode) in the trace: its ``training`` flag at call start is
        guarded; a flag the function changes is set again after every compiled call."""
        self.modules.setdefault(id(m), (m, m.training))

    def see_attribute(self, stores):
        """A module is about to get a tensor or module attribute (``self.h = h.detach()``); its
        attribute dicts (``stores``: ``__dict__``, ``_parameters``...) as they were, for an
        abandoned trace to put back: a retried trace must not read the tensor the abandoned one
        made, which holds a value of that trace."""
        self.attr_stores.setdefault(id(stores[0]), [(s, dict(s)) for s in stores])

    def made_here(self, t) -> bool:
        """Whether tensor ``t`` was made during this trace. Its storage alone does not tell:
        ``p.data = new`` moves a parameter from outside onto a storage the trace made, and its
        ``.grad`` is still state (NOTE [.data set in a trace])."""
        was = self.data_sets.get(id(t))
        return (t._st if was is None else was[1]) in self.created

    def made_inside(self, t) -> bool:
        """Whether ``t`` is a tensor the function made during this trace (``made_here``), not an
        argument's stand-in (NOTE [argument stand-ins]): one no caller can hold."""
        return self.made_here(t) and self._argument(t) is None

    def see_grad_owner(self, t, accumulate=False):
        """``t.grad`` is about to change: it is state (call before the change). ``accumulate``:
        a backward's AccumulateGrad changes it. An argument with a graph from outside
        (``step(loss)`` calling ``loss.backward()``) is a leaf stand-in in the trace, where
        eager's backward would carry on into that graph: a graph break,
        raised at the backward's line before the function reads ``.grad``s it would not fill
        (``_arg_grads`` in region.py would find it only after the function returned)."""
        arg = self.stand_ins.get(id(t._st)) if accumulate and self.stand_ins else None
        # a view of a tensor that needs no grad (``t = t.view(n, 1)`` before the call, then
        # ``t.requires_grad = True`` inside it) is a leaf, as eager's: its .grad is filled
        if arg is not None and (arg._gf is not None or (arg._base is not None and arg._base._rg)):
            raise GraphBreak("backward() inside the compiled function reaches a tensor argument whose graph "
                             "was built outside it")
        if id(t) not in self.grad_owners:
            self.grad_owners[id(t)] = (t, t._grad)

    def restore_found(self):
        """Put back what this trace changed in state it had not lifted (the trace is then
        redone with that state lifted, or the call runs eagerly). Once: an abandoned trace
        calls it before putting Python state back (region.py), so that the bytes of a numpy
        array the function wrote itself (``w = p.detach().numpy()``, ``w *= 0.9`` inside) are
        put back from their copy there after the tensor's value from first sight, not before."""
        if self.found_restored:
            return
        self.found_restored = True
        # the storage found, not the tensor's: ``t.data = ...`` may have moved ``t`` off it since
        for _, array, st in self.found.values():
            st.array = array
            st.gen += 1
        for gen, (key, seed) in self.found_generators.items():
            gen._key, gen._seed = key, seed

    def see_data_set(self, t, value=None):
        """``t.data = value`` is about to bind ``t`` to a new storage (holding a traced value):
        an abandoned trace must put the old one back (``restore_objects``), or the retrace and
        the eager rerun would read the dead trace's value through ``t``. ``value`` on a tensor
        argument's memory (``p.data = w``, ``w[0]``) with ``t`` from outside is a graph break:
        eagerly ``t`` shares the caller's tensor from then on (its later writes reach ``t``);
        the program has only the argument's stand-in, a copy."""
        if value is not None and self.stand_ins.get(id(value._st)) is not None and not self.made_here(t):
            raise GraphBreak("a tensor from outside moved onto a tensor argument's memory (t.data = arg, "
                             "t.set_(arg)): eagerly the two share memory after the call, a program cannot "
                             "make them")
        if value is not None:
            self.see_layout_change(t, value)
            if _grad_leaf(t) and not value._chain and value._st in self.created and t._st not in self.created:
                self._data_keeps_leaf(t, value)
        if id(t) not in self.data_sets:
            self.data_sets[id(t)] = (t, t._st, t._chain, t._vcache)

    def _data_keeps_leaf(self, t, value):
        """NOTE [the leaf of a found storage], for ``p.data = new`` (``w.data = w.data.clamp(-1, 1)``)
        on a parameter from outside inside a differentiated trace: eagerly ``p`` stays the leaf
        and its gradient is taken w.r.t. the new value. Here ``p`` leaves the input storage for
        one the trace made, which is no input of the VJP: ``p.grad`` stayed None. The input
        storage takes ``p`` as its tensor, and the new value is differentiated as the input's
        old one (an identity through the assignment, as through an unrecorded write)."""
        st = t._st
        self.data_leaves[id(st)] = t        # for a storage already lifted: Plan.absorb
        seen = self.found.get(id(st))
        if seen is not None and seen[0] is not t:
            self.found[id(st)] = (t, seen[1], seen[2])
        elif seen is None and id(st) not in self.lifted and st.array is not None and not isinstance(st.array, _Tracer):
            # never read before (``w.data = fresh``): an input all the same, the gradient's way
            self.found[id(st)] = (t, st.array, st)
        old, new = st.array, value._st.array
        if (self.vjp and isinstance(old, _Tracer) and new is not old and new.shape == old.shape
                and new.dtype == old.dtype and jnp.issubdtype(old.dtype, jnp.inexact)):
            value._st.array = _written(old, new)
            value._st.gen += 1

    def see_layout_change(self, t, value=None):
        """``t`` is about to take ``value``'s storage and layout (``t.data = value``, ``set_``,
        ``resize_``; ``value`` None: a layout change of its own, ``t_``, ``unsqueeze_``,
        ``as_strided_``...). For a tensor from outside, moving onto another storage made before
        the call or changing shape, strides or offset is Python metadata the program cannot
        repeat: eagerly ``a.data, b.data = b.data, a.data`` swaps on every call, ``buf.t_()``
        transposes on every call; a program would do it once, while tracing. A graph break. (An
        argument's stand-in is checked after the call, ``region.py``; a move onto a storage the
        trace made is followed: NOTE [.data set in a trace].)"""
        if self.made_here(t) or self._argument(t) is not None or (value is not None and value._st in self.created):
            return
        if value is not None and value._st is t._st and tuple(value.shape) == tuple(t.shape) \
                and strides_of(value) == strides_of(t) and storage_offset_of(value) == storage_offset_of(t):
            return      # ``p.data -= x``, ``p.data = p.data``: nothing moves
        raise GraphBreak("an in-place op or a .data/set_ assignment changes the storage, shape or strides of a "
                         "tensor made outside the compiled function (t_, unsqueeze_, resize_, as_strided_, "
                         "a.data = b.data...): eagerly it changes on every call, the program would change "
                         "it only while tracing")

    def restore_objects(self):
        """An abandoned trace may have created optimizer state holding traced values, set
        module attributes to them, or bound tensors to new storages (``p.data = ...``)."""
        for t, st, chain, vcache in self.data_sets.values():
            t._st, t._chain, t._vcache = st, chain, vcache
        for stores in self.attr_stores.values():
            for s, items in stores:
                # dict's own methods: a module's registries would report the layout changed
                # (nn/modules/module.py's _Registry), where this only undoes the trace
                dict.clear(s)
                dict.update(s, items)
        for opt, attrs in self.opt_attrs.values():
            for k in [k for k, _ in _own_attributes(opt) if k not in attrs]:
                delattr(opt, k)
            for k, (v, _, copy) in attrs.items():
                setattr(opt, k, v)
                _put_back(v, copy)
        for opt, before in self.opt_state.values():
            for p in list(opt.state.keys()):
                if id(p) not in before:
                    del opt.state[p]
            for p, d, items in before.values():
                opt.state[p] = d
                if items is not None:
                    d.clear()
                    d.update(items)
