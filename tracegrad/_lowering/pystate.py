"""The Python values a compiled function reads directly: its closure cells, the globals its
code names, the object a bound method is bound to and its non-tensor arguments. A number,
string or bool among them is baked into the program when traced, so it is guarded (a new value
traces again); a list, dict, set or deque it changes while tracing (an ``append``, a counter),
or a buffer it writes (a NumPy array, an ``array.array``, a bytearray) is a side effect the
program would not repeat: a graph break. Iterators and files: NOTE [iterators and files].

NOTE [object attributes]: a plain Python object among them (a ``GradScaler``, a trainer, a
counter object, with a ``__dict__`` or ``__slots__``) is looked at one level down, its attributes: rebinding a number on it
(``self.step += 1``), growing a container it holds, or binding a new non-tensor value is the
same kind of side effect (a graph break), and an abandoned trace puts every attribute back, so
no traced value or half-done update stays in it for the eager rerun. A tensor attribute
rebound to a new tensor is not a side effect (the program writes carried tensors back every
call, NOTE [carried state] in ``carry.py``). Objects whose Python state the capture tracks by
other means are skipped: tensors and generators, and the classes that set
``_tracegrad_state_is_captured`` (modules, optimizers, compiled functions). An optimizer's
param-group options are looked at the same way (``_tracegrad_option_dicts``): an lr changed
inside the step (by hand or by a scheduler stepping there) is a side effect. So are its own
attributes other than those compile tracks (``optimizer_attributes``): a wrapper optimizer's
counter (michaelrzhang/lookahead's ``self._la_step += 1``, in a ``step`` that never reaches
``Optimizer.step``'s tracing hook because the wrapper skips ``Optimizer.__init__``), or
``opt.n += 1`` written by the step function after ``opt.step()``.

Side effects are looked for in these values only; the values a trace reads are found further
out, from the code of the modules and helper functions it calls (NOTE [Python values read] in
``guards.py``).
"""
from __future__ import annotations

import array
import builtins
import collections
import datetime
import functools
import io
import itertools
import random
import sys
import time
import types
import weakref

import numpy as np

from .._tensor.generator import Generator
from ..autograd.function import Function
from .._tensor.tensor import Tensor, is_tensor_container
from .pycode import (_DYNAMIC_NAMES, _FORMATS, _REACH_ALL, _REACHED_BY_BUILTIN, _absent_globals, _formats,
                     _getter_names, _user_class, _user_code, _user_module, counter_uses, parameter_reads)

_SCALARS = (int, float, bool, str, complex, type(None))
SHORT_SEQUENCE = 8     # ``scalar_signature``: a list/tuple of numbers this long or shorter is keyed by value
_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, functools.partial)
_CONTAINERS = (list, dict, set, collections.deque)
# looked into as containers are, though not changed themselves: a tuple (a NamedTuple) holding a
# list or a dict the function changes (``STATE = ([], {})``, ``STATE[1]["n"] += 1``)
_HOLDERS = _CONTAINERS + (tuple,)
# written in place by index (``hist[i] = 1``): compared by their bytes, put back from a copy
_BUFFERS = (np.ndarray, array.array, bytearray)
_BUFFER_COPY_MAX = 64 << 20     # bytes; a larger buffer a trace wrote is still a break, not undone
_BUF = object()                 # marks a buffer's copy in ``_copy``'s result
_BUILTINS = vars(builtins)


def python_refs(fn, args=(), loaded_out=None, counters_out=None):
    """See ``_python_refs``; ``counters_out``, six sets, gets the attribute names the code
    scanned uses only as counters, those it stores plainly, the closure cells' and globals'
    names it bumps, and those it uses otherwise (NOTE [Python counters]); then the names
    (cells, globals, attributes) it grows a list through and those it uses otherwise (NOTE
    [Python appends])."""
    if counters_out is None:
        return _python_refs(fn, args, loaded_out)
    _SEEN.append(counters_out)
    try:
        return _python_refs(fn, args, loaded_out)
    finally:
        _SEEN.remove(counters_out)


def _python_refs(fn, args=(), loaded_out=None):
    """``(refs, names)``: ``refs`` are ``(name, cell, globals)`` for the closure cells and
    globals ``fn``'s code reads, and those of the user functions it can reach (NOTE [helper
    functions]), plus the object ``fn`` is bound to and the non-tensor objects among ``args``
    (each in a dict of its own, read like a global that is never rebound); ``names[i]`` is
    the set of names the code reading ``refs[i]`` loads (which attributes it may read).
    ``loaded_out``, a set, gets the names the helpers' code loads (NOTE [attributes read by
    helpers])."""
    found = {}                     # ref key -> (ref, names)

    def add(ref, names):
        k = _ref_key(ref)
        if k in found:
            found[k][1].update(names)
        else:
            found[k] = (ref, set(names))
    queue = []
    bound = getattr(fn, "__self__", None)
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    own = _code_names(code, set()) if code is not None else set()
    if bound is None and _plain_object(fn):
        # NOTE: the compiled callable is an object with ``__call__``: its attributes are read
        # like a bound method's ``self`` (``scaler.k = -1.0`` between calls was baked in,
        # round-17's adversarial tests)
        bound, own = fn, {"__call__"}      # (``_object_names`` follows it to what it loads)
    reach = {}          # NOTE [methods reached by name]
    if bound is not None and not isinstance(bound, types.ModuleType):
        add(("self", None, {"self": bound}), _object_names(type(bound), own))
        _reached(reach, bound, own)
        queue.append((bound, 1))
    for i, a in enumerate(args):
        if _plain_object(a):
            add((f"argument {i}", None, {f"argument {i}": a}), _object_names(type(a), own | {"__call__"}))
        elif getattr(type(a), "_tracegrad_state_is_captured", False) and not isinstance(a, Tensor):
            # a module (or optimizer) passed as an argument, as ``self`` of a method compiled in
            # its class body (``@compile def score(self, x)``): read like a bound method's
            # ``self``, its Python attributes guarded (``self.s += 1`` between calls was baked
            # in when the call never ran its ``forward``: round-31's adversarial tests)
            add((f"argument {i}", None, {f"argument {i}": a}), _object_names(type(a), own))
        elif _stateful_kind(a) is not None:
            # a generator or iterator argument (``next(it)`` inside): NOTE [iterators and files]
            add((f"argument {i}", None, {f"argument {i}": a}), own)
        elif isinstance(a, (set, collections.deque, types.MappingProxyType)):
            # a set or deque argument reaches the trace as itself (a list or dict is a rebuilt
            # copy): one the function changes (``q.pop()``) is put back after the trace and the
            # call runs eagerly; it was left changed, so the eager rerun popped again (round 28,
            # MiscTests.test_deque_input). A MappingProxyType argument is one too, keyed by
            # identity: the entries the trace read through it are guarded by value, or a change
            # to the dict behind it between calls ran the first trace's numbers
            # (round 29, DictTests.test_mapping_proxy_existing)
            add((f"argument {i}", None, {f"argument {i}": a}), own)
        _reached(reach, a, own | {"__call__"})
        queue.append((a, 1))
    # default values (``def step(x, acc=[])``, keyword-only ones too): the same object every
    # call, read and changed like a global
    f0 = getattr(fn, "__func__", fn)
    for k, v in enumerate(getattr(f0, "__defaults__", None) or ()):
        if type(v) not in _SCALARS:
            label = f"default argument {k}"
            add((label, None, {label: v}), _object_names(type(v), own) if _plain_object(v) else own)
    kwdefaults = getattr(f0, "__kwdefaults__", None)
    if kwdefaults:           # a dict the function's keyword-only defaults are read from
        add(("keyword defaults", None, {"keyword defaults": kwdefaults}), own)
    loaded, through = set(), set()
    _scan(getattr(fn, "__func__", fn), 0, add, queue, top=True, reach=reach)
    scanned = {}
    _scan_queue(queue, scanned, reach, add, loaded, through)
    # NOTE [nested objects' methods]: a nested object's methods run when the function's code
    # calls them through an attribute (``self.fake_B_pool.query(x)``, CycleGAN's image pool):
    # their globals and cells are state like a helper's. They were not scanned: a
    # ``random.Random`` global drawn from there was not put back after an abandoned trace, so
    # the eager rerun drew other numbers than eager (round 55's public programs)
    queue = [(x, 1) for x in _nested_objects(found, add)]
    for x, _ in queue:
        reach[id(x)] = None        # called through an attribute by code not followed by name
    _scan_queue(queue, scanned, reach, add, loaded, through)
    # NOTE [attributes read by helpers]: an object handed to a helper function (``helper(cfg,
    # x)`` reading ``cfg.k``) has its attributes read by the helper's code through a parameter,
    # whose names belong to no reference of their own. Giving every reference the names of
    # every helper the scan reached (round 32's first fix) also gave a trainer object the
    # names its ``__init__`` and logging methods load: a counter bumped between calls
    # (``self.global_step += 1``) that the step never reads made a new trace per call. So a
    # called module gets the names of the helpers its own class's methods reach
    # (``loaded_out``, guards.py), and every reference gets only the attribute names a helper
    # reads *through one of its parameters* (``cfg.k``, ``holder.inner.k``: ``through``), not
    # a method's reads through its own ``self`` (the object it is bound to has its class's
    # names already): which object a call site hands to which parameter is not followed, so
    # such a name is guarded on every reference that has it.
    if loaded_out is not None:
        loaded_out |= loaded
    if through:
        for entry in found.values():
            entry[1].update(through)
    for (name, cell, g), _ in list(found.values()):
        v = _value(cell, g, name)
        for klass in _classes_of(v):
            add((klass.__qualname__, None, {klass.__qualname__: klass}), ())
        if type(v) is types.BuiltinMethodType and isinstance(v.__self__, _GROWN_BY_METHODS):
            # ``record = hist.append`` made outside: calling it changes ``hist``, which the code
            # never names. The container is state like a global (a change while tracing is a
            # side effect, put back after an abandoned trace): the trace's tensors stayed in
            # the list (round 43)
            label = f"{name}.__self__"
            add((label, None, {label: v.__self__}), ())
    refs = tuple(r for r, _ in found.values())
    return refs, tuple(frozenset(n) for _, n in found.values())


# NOTE [methods reached by name]: a plain object the code reaches (a trainer bound as the
# compiled method's ``self``, a global or closure variable, an argument) has its methods
# scanned for the state they read and change -- only those the code reaching it can call:
# the methods its names name (``self.opt``, ``trainer.update()``) and, through theirs, the
# methods those call (``_object_names``), as its attributes are guarded. Scanning every method
# of its class also scanned a ``summary()`` reading ``self.losses``, which made the step's
# ``self.losses.append(loss.item())`` a list read as well: every call ran eagerly. ``reach``
# maps an object's id to the names the code reaching it loads, or to None (every method) where
# it is reached by code whose names are not followed (a partial's argument, a nested object,
# ``getattr`` with a computed name); an object scanned for fewer names than it is reached by
# later is scanned again.
def _reached(reach, v, names):
    """Record that code loading ``names`` reaches ``v`` (NOTE [methods reached by name])."""
    if reach is None or not _plain_object(v) or isinstance(v, type):
        return
    k = id(v)
    if k not in reach:
        reach[k] = set(names)
    elif reach[k] is not None:
        reach[k] |= names


def _scan_queue(queue, scanned, reach, add, loaded, through):
    """Scan the callables queued (and those their scans queue), each once for what reaches it."""
    while queue and len(scanned) < _SCAN_MAX:
        f, depth = queue.pop(0)
        k, now = id(f), reach.get(id(f))
        done = scanned.get(k, _MISSING)
        if done is _MISSING or (done is not None and (now is None or not now <= done)):
            scanned[k] = None if now is None else frozenset(now)
            _scan(f, depth, add, queue, loaded=loaded, through=through, reach=reach)


def _methods_reached(f, reach):
    """The user methods of plain object ``f`` its reaching code may call (NOTE [methods reached
    by name])."""
    names = reach.get(id(f)) if reach is not None else None
    if names is None or not _REACH_ALL.isdisjoint(names):
        return _user_methods(type(f))
    called = _object_names(type(f), names).union(_ALWAYS_REACHED)
    return [m for k, m in _named_user_methods(type(f)) if k in called]


# NOTE [nested objects]: a plain object among the references may hold others -- a hand-written
# ``Sequential`` keeping its layer objects in a list, each rebinding ``self.running_mean`` or
# ``self.out`` on every call (karpathy/nn-zero-to-hero makemore part 5). Their attributes are
# the same Python state one level further down, so each plain object reached through a
# reference's attributes (directly, or inside a small list, tuple or dict there) becomes a
# reference of its own, ``_NESTED_DEPTH`` levels down: its rebound tensors are carried and an
# abandoned trace puts its attributes back. Without it a traced tensor stayed bound there (a
# leaked tracer on the next call, or on the eager rerun after a graph break).
_NESTED_DEPTH = 2
_GROWN_BY_METHODS = (list, dict, set, bytearray, collections.deque)
_NESTED_OBJECTS_MAX = 64


def _nested_objects(found, add):
    """Add the plain objects held by the references' plain objects (NOTE [nested objects]);
    returns those added."""
    queue, nested = [], []
    for (name, cell, g), _ in list(found.values()):
        v = _value(cell, g, name)
        if _plain_object(v) and not isinstance(v, type):
            queue.append((name, v, 0))
    added = 0
    while queue and added < _NESTED_OBJECTS_MAX:
        label, v, depth = queue.pop(0)
        if depth >= _NESTED_DEPTH:
            continue
        try:
            items = list(attributes(v).items())
        except Exception:        # an object whose attributes cannot be listed: not looked into
            continue
        for k, a in items:
            inner = [(f"{label}.{k}", a)]
            if isinstance(a, (list, tuple)) and len(a) <= _NESTED_MAX:
                inner = [(f"{label}.{k}[{i}]", x) for i, x in enumerate(a)]
            elif type(a) is dict and len(a) <= _NESTED_MAX:
                inner = [(f"{label}.{k}[{_key(j)}]", x) for j, x in a.items()]
            for lab, x in inner:
                if _plain_object(x) and not isinstance(x, (type, types.ModuleType)) and not callable(
                        getattr(x, "__get__", None)):
                    if ("object", id(x)) not in found:
                        add((lab, None, {lab: x}), _object_names(type(x), {"__call__", "forward"}))
                        added += 1
                        nested.append(x)
                        queue.append((lab, x, depth + 1))
    return nested


# NOTE [helper functions]: a compiled function reaches Python values through the functions it
# calls: a global read by a helper or by a lambda passed as an argument, a helper's closure
# cell, an attribute of a Python module (``config.SCALE``) or of a class (``Config.SCALE``),
# the attributes a callable object's methods read. Those functions are found from the code
# (``_SCAN_DEPTH`` calls down: functions, lambdas, ``functools.partial``, bound methods and
# callable objects named by a global, a closure cell, an argument or a Python module's
# attribute; user code only); their cells and globals are references like the compiled
# function's own: read values are guarded, changes made while tracing are side effects.
# Code is not run to find them (a trace function over every frame doubled trace time), so a
# function reached only through a value computed at run time is not looked into.
_SCAN_DEPTH = 3
_SCAN_MAX = 64


def _scan(f, depth, add, queue, top=False, loaded=None, through=None, reach=None):
    """Add the references of one callable's code and queue the callables it names (and the
    names a helper's code loads into ``loaded``: NOTE [attributes read by helpers])."""
    # a decorated helper (``functools.wraps``: ``contextmanager``, a compiled function) runs
    # the user function it wraps, whose cells and globals are state as well. Not a memoized
    # one (``lru_cache``): it runs only on a miss, eagerly too; its cache size is guarded
    # (``guards._guard_held``), so a ``cache_clear()`` traces again
    wrapped = _attribute(f, "__wrapped__") if not isinstance(f, (type, types.ModuleType)) else None
    if wrapped is not None and wrapped is not f and _callable_value(wrapped) and not is_memoized(f):
        queue.append((wrapped, depth))
    if isinstance(f, functools.partial):
        if top:
            # NOTE: the compiled callable is itself a partial: ``p.keywords["k"] = 5.0`` between
            # calls was baked in at the traced value (round-17's adversarial tests); its keywords
            # dict is read like a global dict (numbers guarded, a tensor bound there followed)
            label = "partial keywords"
            add((label, None, {label: f.keywords}), ())
        else:
            # a partial reached from the function (an attribute, a cell): the lists and dicts
            # bound as its arguments are read by its function like a closure's (round 20)
            for k, a in enumerate(tuple(f.args) + tuple(f.keywords.values())):
                if isinstance(a, _HOLDERS):
                    label = f"partial argument {k} of {getattr(f.func, '__qualname__', '?')}"
                    add((label, None, {label: a}), ())
        queue.append((f.func, depth))
        code = getattr(getattr(f.func, "__func__", f.func), "__code__", None)
        loads = (_code_names(code, set()) if code is not None else set()) | {"__call__"}
        for k, a in enumerate(tuple(f.args) + tuple(f.keywords.values())):
            if _plain_object(a) and not isinstance(a, type):
                # an object bound as an argument (``partial(run, trainer)``) is read and changed
                # by the function like a bound method's ``self``: its attributes are state
                # (an abandoned trace left the items it appended to ``trainer.losses``)
                label = f"partial argument {k} of {getattr(f.func, '__qualname__', '?')}"
                add((label, None, {label: a}), _object_names(type(a), loads))
                if reach is not None:
                    reach[id(a)] = None      # its methods are called through a parameter
            queue.append((a, depth))
        return
    if isinstance(f, types.MethodType):
        if _plain_object(f.__self__):
            add((f"{f.__name__}.__self__", None, {f"{f.__name__}.__self__": f.__self__}),
                _object_names(type(f.__self__), {f.__name__}))
        f = f.__func__
    elif _plain_object(f):
        # its methods and property getters (NOTE [getters and classes]): ``r.scale`` runs
        # code whose closure cells and globals are read and changed like the function's own;
        # those the code reaching it can call (NOTE [methods reached by name])
        for m in _methods_reached(f, reach):
            queue.append((m, depth))
        # the modules it holds (a compiled module's call, a trainer's ``self.model``): their
        # Python state below (NOTE [module attributes])
        try:
            held = list(attributes(f).values())
        except Exception:        # noqa: BLE001 -- attributes that cannot be listed: not looked into
            held = ()
        queue += [(a, depth) for a in held if _captured_module(a)]
        # not a wrapper's ``__wrapped__`` (an ``lru_cache`` runs it only on a miss, see above),
        # nor an lr scheduler's lambdas: its step runs outside the program on every call
        # (NOTE [deferred scheduler step]), so what they read is never baked in
        if not is_memoized(f) and not any(c.__name__ == "LRScheduler" for c in type(f).__mro__):
            queue += [(h, depth + 1) for h in _held_functions(held)]
        return
    elif isinstance(f, Tensor):
        # an argument of a user Tensor subclass: its methods (an overridden ``exp`` that
        # appends to a log) run when the function calls them
        if type(f) is not Tensor:
            queue += [(m, depth) for m in _user_methods(type(f))]
        return
    elif _custom_function(f):
        # NOTE [custom Function code]: its forward and backward run inside the trace (the
        # engine calls backward there), so their cells and globals are state like the
        # function's own: a list a backward appends to is a side effect, not a silent no-op
        queue += [(m, depth) for m in _user_methods(f)]
        return
    elif isinstance(f, type):
        # a user class the code names: constructing it runs ``__init__``, ``Variable.constant(a)``
        # a static method; their cells and globals are state like a helper's (a global name
        # counter bumped by every ``__init__``, test/dynamo/test_global.py's fresh_name). Not
        # modules' and optimizers' classes (below: their instances are scanned)
        if _user_class(f) and not getattr(f, "_tracegrad_state_is_captured", False):
            queue += [(m, depth) for m in _user_methods(f)]
        return
    elif getattr(type(f), "_tracegrad_state_is_captured", False) and not isinstance(f, type):
        # a module (each submodule) or an optimizer: the user-written methods of its classes
        subs = list(f.modules()) if callable(getattr(f, "modules", None)) else [f]
        for cls in {type(m) for m in subs}:
            queue += [(m, depth) for m in _user_methods(cls)]
        if _captured_module(f):      # not an optimizer: its state is carried (capture.py)
            for m in subs:
                _module_attributes(m, add)
                queue += [(h, depth + 1) for h in _held_functions(list(vars(m).values()))]
                # NOTE [module attributes' methods]: a plain object a user module keeps
                # (``self.prior``, a distribution whose ``sample`` draws from a NumPy generator
                # it closes over) runs its methods when the module's code calls them: their
                # cells and globals are state like a helper's. Not scanned, the trace drew once
                # more and the program returned that draw on every call (round 62). In a small
                # list, tuple or dict on the module (``self.hs = [Counter(), Noise()]``) too:
                # those were frozen (round 48)
                queue += [(o, depth + 1) for _, a in _module_own_attributes(m) for o in _held_objects(a)]
        return
    if not isinstance(f, types.FunctionType) or not (top or _user_code(f.__code__)):
        return
    code = f.__code__
    names = _code_names(code, set())
    names |= _getter_names(f, names)
    if loaded is not None and not top:
        loaded |= names
    if through is not None and not top:
        through |= parameter_reads(f)
    g = f.__globals__
    follow = depth < _SCAN_DEPTH
    if f.__dict__ or f.__name__ in names or f.__name__ in code.co_freevars:
        # NOTE [function attributes]: ``step.calls += 1`` (a counter kept on the function
        # itself, which its code names) is Python state like a global: a change while tracing
        # is a side effect, a number read is guarded, an abandoned trace puts it back
        label = f"{f.__qualname__} (its attributes)"
        add((label, None, {label: FunctionAttributes(f)}), names)
    if not top and (f.__defaults__ or f.__kwdefaults__):
        # NOTE [helper defaults]: a helper's defaults are read by every call that leaves the
        # argument out; ``helper.__defaults__ = (0.9,)`` between calls kept the traced value
        add(("__defaults__", None, _DefaultsMap(f)), names)
        add(("__kwdefaults__", None, _DefaultsMap(f)), names)
        add(("__signature__", None, _DefaultsMap(f)), names)
    for n, cell in zip(code.co_freevars, f.__closure__ or ()):
        add((n, cell, None), names)
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        _module_refs(v, names, add)
        if follow:
            if isinstance(v, types.ModuleType):
                ns = vars(v)
                queue += [(ns[a], depth + 1) for a in sorted(names) if a in ns and isinstance(ns[a], types.FunctionType)]
            else:
                _reached(reach, v, names)
                queue.append((v, depth + 1))
                queue += [(h, depth + 1) for h in _held_functions((v,)) if h is not v]
    for n in sorted(_absent_globals(code, g)):
        # not defined when traced (``if "SCALE" in globals()``, ``except NameError``): one
        # defined later must be read, not the branch the trace took
        add((n, None, g), names)
    for n in sorted(names):
        if n not in g:
            continue
        add((n, None, g), names)
        v = g[n]
        _module_refs(v, names, add)
        if not follow:
            continue
        if isinstance(v, types.ModuleType):
            ns = vars(v)
            queue += [(ns[a], depth + 1) for a in sorted(names) if a in ns and isinstance(ns[a], types.FunctionType)]
        elif _callable_value(v):
            _reached(reach, v, names)
            queue.append((v, depth + 1))
        elif type(v) in (list, tuple, dict):
            # NOTE [functions held as attributes], in a global: ``for h in HOOKS: h()`` runs
            # them (a global counter they bump was bumped by the trace alone, then never again)
            queue += [(h, depth + 1) for h in _held_functions((v,))]


# NOTE [functions held as attributes]: a function kept on an object or a module
# (``AveragedModel(net, avg_fn=lambda avg, new, n: decay[0] * avg + ...)``, ``self.act = fn``)
# runs when a method calls it, so its closure cells and globals are state like a helper's. It
# was not scanned (only methods of the class were), and the decay list's entry was baked in at
# the traced value: a later ``decay[0] = 0.9`` was silently ignored (round-20's adversarial tests).
# Functions in a small list, tuple or dict attribute (``self.acts = {"f": fn}``) as well.
def _held_functions(values):
    found = []
    for a in values:
        inner = a.values() if type(a) is dict else a if isinstance(a, (list, tuple)) else (a,)
        if len(inner) <= _NESTED_MAX:
            # (a bound method too: ``self.callbacks = [self.on_step]`` calls a method no name in
            # the code reaches: NOTE [methods reached by name])
            found += [h for h in inner if isinstance(h, (types.FunctionType, functools.partial, types.MethodType))]
    return found


def _held_objects(a):
    """The plain objects (not classes, not callables) ``a`` is or a small list, tuple or dict
    ``a`` holds (NOTE [module attributes' methods])."""
    inner = a.values() if type(a) is dict else a if type(a) in (list, tuple) else (a,)
    if len(inner) > _NESTED_MAX:
        return ()
    return [o for o in inner if _plain_object(o) and not isinstance(o, type) and not callable(o)]


class _DefaultsMap(dict):
    """A helper function's ``__defaults__``/``__kwdefaults__`` read (live) like a global dict's
    entries (NOTE [helper defaults]); a dict subclass so the carry code reads it with ``get``.
    Its ``__signature__`` too (None while it has none): ``inspect.signature`` prefers it to the
    defaults (a custom Function's forward bound by ``apply``)."""

    _KEYS = ("__defaults__", "__kwdefaults__", "__signature__")

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def values(self):
        return [getattr(self.fn, k, None) for k in self.keys()]

    def get(self, name, default=None):
        # a function without a ``__signature__`` reads as None, as ``__getitem__``: one value
        # for the guard to compare, not a missing entry
        return getattr(self.fn, name, None) if name in self._KEYS else default

    def __getitem__(self, name):
        return getattr(self.fn, name, None)

    def __contains__(self, name):
        return name in self._KEYS

    def __setitem__(self, name, value):
        if name != "__signature__" or value is not None or "__signature__" in self.fn.__dict__:
            setattr(self.fn, name, value)

    def __len__(self):
        return len(self._KEYS)

    def __iter__(self):
        return iter(self._KEYS)

    def keys(self):
        return self._KEYS

    def items(self):
        return [(k, getattr(self.fn, k, None)) for k in self.keys()]


class FunctionAttributes:
    """A user function's own attributes (``step.calls``, ``step.scale``) as a plain object's:
    ``attributes`` of it is the function's ``__dict__`` (NOTE [function attributes])."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    @property
    def __dict__(self):
        return self.fn.__dict__


# NOTE [module attributes]: a user module's forward may change Python state it keeps on
# itself without rebinding an attribute (which ``Module.__setattr__`` reports): a counter in a
# dict (``self.stats["n"] += 1``), a list it appends to, a plain object's attribute
# (``self.meter.count += 1``). Those attributes of every user-class module reached (not the
# ones every ``Module`` has: its parameter, buffer, submodule and hook registries) are
# references like a global: a change while tracing is a side effect (a graph break) and an
# abandoned trace puts it back. Without it the trace made the change once (or twice: the
# trace and the eager rerun) and the program never again.
_MODULE_BASE_ATTRS: dict = {}      # the base module class -> the attribute names a bare one has


def _captured_module(v) -> bool:
    return getattr(type(v), "_tracegrad_state_is_captured", False) and callable(getattr(v, "modules", None)) \
        and not isinstance(v, type)


def _module_own_attributes(m):
    """``(name, value)`` of the attributes user module ``m`` set itself: not those every
    module of its base class has (its parameter, buffer, submodule and hook registries), not
    tensors; none for a module of a library class."""
    cls = type(m)
    if not _user_class(cls):
        return []
    base = next((k for k in reversed(cls.__mro__) if k.__dict__.get("_tracegrad_state_is_captured")), None)
    internal = _MODULE_BASE_ATTRS.get(base)
    if internal is None:
        try:
            internal = frozenset(vars(base()))
        except Exception:      # noqa: BLE001 -- no bare instance: only the registries by name
            internal = frozenset()
        _MODULE_BASE_ATTRS[base] = internal
    return [(k, a) for k, a in list(vars(m).items()) if k not in internal and not isinstance(a, Tensor)]


def _module_attributes(m, add) -> None:
    cls = type(m)
    for k, a in _module_own_attributes(m):
        if _stateful_kind(a) is not None:
            # an iterator a forward calls ``next`` on (``self.beta = iter(schedule)``): not a
            # plain object, and a trace would bake in the one position it read there, silently
            # (NOTE [iterators and files]); the reference makes ``stateful_reads`` see it
            label = f"{cls.__name__}.{k}"
            add((label, None, {label: a}), ())
            continue
        if not (isinstance(a, _HOLDERS + _BUFFERS) or (_plain_object(a) and not callable(a))):
            continue
        label = f"{cls.__name__}.{k}"
        add((label, None, _AttributePlace(label, a, vars(m), k)), _object_names(type(a), set()) if _plain_object(a) else ())
        if isinstance(a, _HOLDERS):
            # the plain objects in it are read and changed by their methods like one held
            # directly (NOTE [module attributes' methods]): ``self.hs[0].n += 1``
            for o in _held_objects(a):
                add((label, None, {label: o}), _object_names(type(o), set()))


class _AttributePlace(dict):
    """The one-entry namespace ``{label: value}`` of a module attribute's reference
    (``_module_attributes``), knowing the module's ``__dict__`` and the attribute's name: the
    place a list only appended to grows on each run (NOTE [Python appends])."""

    __slots__ = ("attrs", "key")

    def __init__(self, label, value, attrs, key):
        super().__init__({label: value})
        self.attrs, self.key = attrs, key


# NOTE [getters and classes]: reading ``r.scale`` may run a property getter (or ``__getattr__``)
# whose closure cells and globals are state like the function's own (a list it appends to):
# the methods and getters of the plain objects the function reads are scanned as helper
# functions are. And a class is state too: ``Counter.n += 1`` or ``type(self).n += 1`` changes
# the class of an object the function reads, so the user classes of those objects (and of the
# classes it names) are references of their own: a class attribute changed while tracing is a
# side effect (a graph break), put back for the eager rerun (``_ClassDict``).
def _classes_of(v):
    """The user classes behind ``v`` (a plain object, or a user class): its (base) classes."""
    mro = v.__mro__ if _user_class(v) else type(v).__mro__ if _plain_object(v) else ()
    return [k for k in mro if k is not v and _user_class(k)]


def _class_attributes(cls):
    """A user class's own attributes that code may rebind (not ``__dunder__`` ones)."""
    return [(k, a) for k, a in list(vars(cls).items()) if not (k.startswith("__") and k.endswith("__"))]


class _ClassDict:
    """A class's attributes written like a dict (``restore`` puts back what a trace changed)."""

    __slots__ = ("cls",)

    def __init__(self, cls):
        self.cls = cls

    def __iter__(self):
        return iter([k for k, _ in _class_attributes(self.cls)])

    def __setitem__(self, k, v):
        if vars(self.cls).get(k, _MISSING) is not v:
            setattr(self.cls, k, v)

    def get(self, k, default=None):
        return vars(self.cls).get(k, default)

    def __delitem__(self, k):
        delattr(self.cls, k)


def _attribute(v, name):
    """``v.name``, or None: a user ``__getattr__`` may raise anything for a name it lacks (a
    config backed by a dict raises KeyError)."""
    try:
        return getattr(v, name, None)
    except Exception:      # noqa: BLE001
        return None


def is_memoized(f) -> bool:
    """A ``functools.lru_cache``/``functools.cache`` wrapper."""
    return callable(_attribute(f, "cache_info")) and callable(_attribute(f, "cache_clear"))


def _callable_value(v):
    return isinstance(v, (types.FunctionType, functools.partial, types.MethodType)) or _plain_object(v) or \
        (getattr(type(v), "_tracegrad_state_is_captured", False) and not isinstance(v, type)) or _custom_function(v) \
        or (_user_class(v) and not getattr(v, "_tracegrad_state_is_captured", False))


def _custom_function(v) -> bool:
    """A user's ``autograd.Function`` subclass (``Scale.apply`` names the class)."""
    return isinstance(v, type) and issubclass(v, Function) and _user_class(v)


def _user_methods(cls):
    """The user-written functions of ``cls``: methods, static/class methods, property getters,
    and the user functions decorators wrap (``_wrapped_chain``)."""
    return [f for _, f in _named_user_methods(cls)]


def _named_user_methods(cls):
    """``(attribute name, function)`` of ``_user_methods``: by the name the class binds it to
    (``step = torch.no_grad()(update)`` is called as ``step``)."""
    return [(k, f) for klass in cls.__mro__ if klass is not object
            for k, a in klass.__dict__.items()
            for f in _wrapped_chain(_getter(a))
            if isinstance(f, types.FunctionType) and _user_code(f.__code__)]


def _getter(a):
    """The function that runs when a class attribute ``a`` is read on an instance: a property's
    ``fget``, a user descriptor's ``__get__`` (round 28, MiscTests.test_user_defined_data_
    descriptor: ``getattr(obj, self.storage_name)`` in it reads ``obj._x``, unguarded until its
    ``getattr`` was seen), else ``a`` itself (a method)."""
    if isinstance(a, property):
        return a.fget
    get = type(a).__dict__.get("__get__")
    if isinstance(get, types.FunctionType):
        return get
    return getattr(a, "__func__", a)


def _wrapped_chain(f):
    """``f`` and the functions it wraps (``functools.wraps``' ``__wrapped__``, a decorator stack).
    NOTE: a custom optimizer's ``@torch.no_grad() def step(self)`` is a wrapper whose code is
    tracegrad's (a user decorator's is a generic ``wrapper(*a, **k)``), so the attributes the
    user's ``step`` reads (``self.boost``) were not among the names guarded, and
    ``opt.boost = 3.0`` between calls ran the traced 1.0 (round-36's adversarial tests). Not
    into a memoized one (``lru_cache``: it runs only on a miss, and its cache size is guarded)."""
    out = [f]
    for _ in range(8):        # (bounded: a wrapper naming itself, a long decorator stack)
        if not isinstance(f, types.FunctionType) or is_memoized(f):
            break
        w = getattr(f, "__wrapped__", None)
        w = getattr(w, "__func__", w)
        if w is None or any(w is g for g in out):
            break
        out.append(f := w)
    return out


# NOTE [implicit methods]: ``x * knob`` runs ``Knob.__rmul__``, ``float(knob)`` its
# ``__float__``, ``if knob:`` its ``__bool__``, ``knob[1]``/``len(knob)``/``a, b = knob``/
# ``knob(x)``/``f"{knob:.1f}"`` theirs: the code names none of them, so the attributes they read
# (``self.k``) were not guarded and a change between calls ran the traced value (round-36's
# adversarial tests). Not ``__init__``/``__repr__``/``__str__``: they run at construction or
# for printing, and guarding what they read (a trainer's step counter) would trace again.
_IMPLICIT = tuple(f"__{n}__" for n in (
    "call bool len length_hint float int index complex round trunc floor ceil abs neg pos invert "
    "getitem setitem delitem missing setattr delattr contains iter next reversed enter exit format eq ne lt le "
    "gt ge hash "
    "add radd iadd sub rsub isub mul rmul imul matmul rmatmul imatmul truediv rtruediv itruediv "
    "floordiv rfloordiv ifloordiv mod rmod imod pow rpow ipow and rand iand or ror ior xor rxor ixor "
    "lshift rlshift ilshift rshift rrshift irshift divmod rdivmod").split())


_ALWAYS_REACHED = ("__getattr__", "__getattribute__", *_IMPLICIT)    # methods Python calls unnamed


def _object_names(cls, used):
    """The attribute names code naming ``used`` may read on an instance of ``cls``: ``used``
    and what the user methods it names load (``holder.factor()`` reads ``self.scale``), and
    so on through the methods those name -- not the names of methods never called (a
    trainer's ``__init__`` naming its ``global_step``)."""
    methods = {}          # name -> its functions (a decorated method's wrapper and the user's own)
    for k, m in _named_user_methods(cls):
        methods.setdefault(k, []).append(m)
    # ``__getattr__`` answers every attribute the instance lacks (a config backed by a dict);
    # the protocol methods Python calls without the code naming them (NOTE [implicit methods])
    by_builtin = [m for n in used if n in _REACHED_BY_BUILTIN for m in _REACHED_BY_BUILTIN[n]]
    names, todo = set(used), [n for n in (*used, *_ALWAYS_REACHED, *by_builtin) if n in methods]
    done = set()
    while todo:
        n = todo.pop()
        if n in done:
            continue
        done.add(n)
        new = set().union(*(_code_names(m.__code__, set()) for m in methods[n])) - names
        names |= new
        todo += [m for m in new if m in methods]
    return names


def _ref_key(ref):
    name, cell, g = ref
    if cell is not None:
        return ("cell", id(cell))
    if len(g) == 1 and name in g:         # a one-object holder: the object itself
        return ("object", id(g[name]))
    return ("global", id(g), name)


def _module_refs(v, names, add) -> None:
    """A user module the code names (a global or a closure cell): the attributes of it the code
    may read (``utils.g_tensor = utils.g_tensor + 1``, ``cfg.n += 1``, ``cfg.log.append(...)``,
    test/dynamo/test_global.py's cross-file globals) are references like the function's own
    globals, so a change is a side effect and a rebound tensor is carried, not frozen."""
    if isinstance(v, types.ModuleType) and _user_module(v):
        ns = vars(v)
        for a in sorted(names):
            if a in ns and not isinstance(ns[a], (types.FunctionType, types.ModuleType, type)):
                add((a, None, ns), names)


_NOT_OBJECTS = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                functools.partial)


def _plain_object(v):
    """An object whose attributes are user Python state (NOTE [object attributes]): one with a
    ``__dict__``, or an instance of a user class with ``__slots__``; not a library object whose
    attributes are bookkeeping of its own (NOTE [transient library state])."""
    t = type(v)
    return (hasattr(v, "__dict__") or _slot_names(t)) and not isinstance(v, _NOT_OBJECTS + (Tensor, Generator)) \
        and not getattr(t, "_tracegrad_state_is_captured", False) and not getattr(t, "_tracegrad_transient_state", False)


# NOTE [transient library state]: a grad-mode manager object made once and entered by every call
# (``ng = torch.no_grad()`` outside, ``with ng:`` inside; CtxManagerTests, round 36) writes the
# mode it replaced onto itself in ``__enter__`` and reads it back in ``__exit__`` only: no value
# the function or a later call sees. Tracked as user state, that write was a "Python value the
# program would not repeat" and every call ran eagerly (torch.compile traces it). Library
# classes whose attributes are such bookkeeping say so with ``_tracegrad_transient_state`` (the
# grad mode itself is guarded and traced, DESIGN 2.5); their instances are no plain objects.


_SLOTS: dict = {}     # class -> its slot attribute names (empty: not a user class with slots)


def _slot_names(cls) -> tuple:
    names = _SLOTS.get(cls)
    if names is None:
        names = ()
        if all(k.__module__ != "builtins" for k in cls.__mro__[:-1]) and "__slots__" in cls.__dict__:
            for klass in cls.__mro__[:-1]:
                slots = klass.__dict__.get("__slots__", ())
                names += (slots,) if isinstance(slots, str) else tuple(slots)
            names = tuple(n for n in names if n not in ("__dict__", "__weakref__"))
        _SLOTS[cls] = names
    return names


def attributes(v):
    """A plain object's attributes as a mapping: its ``__dict__``, or a view of its slots."""
    d = getattr(v, "__dict__", None)
    return d if d is not None else _SlotMap(v)


class _SlotMap:
    """The set slots of an object read and written like a dict (frozen dataclasses too: the
    writes only put back what a trace changed)."""

    __slots__ = ("obj", "names")

    def __init__(self, obj):
        self.obj, self.names = obj, _slot_names(type(obj))

    def get(self, k, default=None):
        return getattr(self.obj, k, default) if k in self.names else default

    def items(self):
        return [(k, getattr(self.obj, k)) for k in self]

    def __iter__(self):
        return iter([k for k in self.names if hasattr(self.obj, k)])

    def __contains__(self, k):
        return k in self.names and hasattr(self.obj, k)

    def __len__(self):
        return sum(1 for _ in self)

    def __setitem__(self, k, v):
        object.__setattr__(self.obj, k, v)

    def __delitem__(self, k):
        object.__delattr__(self.obj, k)


def optimizer_attributes(opt, with_state=False):
    """An optimizer's attributes other than those compile tracks itself (its state, param
    groups, defaults, hook dicts) and an lr scheduler's ``_opt_called`` flag (set once, by the
    first eager step): a custom optimizer's counters, lists and flags. ``with_state``: its
    ``state`` too, which an abandoned trace puts back (a wrapper optimizer's own per-parameter
    dicts are tracked nowhere else: Lookahead's ``cached_mom`` rebound to the momentum buffer)."""
    skip = ("param_groups", "defaults", "_opt_called") if with_state else \
        ("state", "param_groups", "defaults", "_opt_called")
    return [(k, v) for k, v in vars(opt).items() if k not in skip and not k.startswith("_optimizer_")]


def _option_dicts(v):
    """An optimizer's list of param-group dicts (``_tracegrad_option_dicts``): Python options
    a step may change (``group["lr"] *= 0.5``, a scheduler stepping inside), or None."""
    get = getattr(type(v), "_tracegrad_option_dicts", None)
    return get(v) if get is not None and not isinstance(v, type) else None


_NESTED = 3      # containers inside containers looked into: stats["train"]["n"] += 1
_NESTED_MAX = 64  # ... when they are that small (a list of records is data, not a counter)


def _tensors(v):
    """The signature of a tuple, list or dict of tensors (``(h, c)``): rebinding one to a new
    such container is carried state too (``_lowering/carry.py``); its length (keys) is not."""
    if not is_tensor_container(v):
        return None
    return ("tensors", tuple(v) if type(v) is dict else len(v))


def _buffer_signature(v):
    return (id(v), getattr(v, "shape", len(v)), hash(bytes(v) if isinstance(v, bytearray) else v.tobytes()))


def _leaf(v, depth=_NESTED):
    if type(v) in _SCALARS:
        return v
    if isinstance(v, weakref.ref):
        # a weak reference is a cache, not program state: torch.distributions' Transform.inv
        # stores a new weakref to a fresh inverse on every call once the last one died
        # (TransformedDistribution.log_prob does that per call), and a program reading it must
        # already cope with a dead one
        return "weakref"
    if _rng_state(v) is not None:         # an object's own generator drawn from
        return ("generator", id(v), _rng_state(v))
    if isinstance(v, _BUFFERS):
        return _buffer_signature(v)
    if isinstance(v, Tensor):
        return "tensor"          # rebinding a tensor is carried state, not a side effect
    if _tensors(v) is not None:
        return _tensors(v)
    if depth > 1 and isinstance(v, _HOLDERS) and len(v) <= _NESTED_MAX:
        return (id(v),) + _items(v, depth - 1)
    return id(v)


def _key(k):
    """A dict key's label in a signature. NOTE [tensor dict keys are labelled by identity]: a
    dict keyed by parameters (one optimizer per parameter, stepped by a post-accumulate-grad
    hook) is common; ``repr`` of a tensor key would read its value, which inside a capture is
    a Python read of a traced value and sent the whole function to eager. A tensor key hashes
    by identity (``Tensor.__hash__``), so its identity is its label."""
    return f"<tensor {id(k)}>" if isinstance(k, Tensor) else repr(k)


def _items(v, depth=_NESTED):
    """A container's entries (and those of the containers in it, ``depth`` levels down), as
    (label, signature) pairs: a counter kept in a dict or list (``stats["n"] += 1``,
    ``stats["train"]["n"] += 1``) changes them; a tensor stored there does not."""
    if isinstance(v, dict):
        # a module's globals held as a value (the ``SimpleNamespace`` of an exec'd program's
        # globals a step reads) get ``__warningregistry__`` from Python's warnings machinery
        # when a warning is issued from that code, even one filtered out: its bookkeeping, not
        # user state, and a graph break on every call that warned
        kv = [(k, a) for k, a in v.items() if not (type(k) is str and k == "__warningregistry__")]
        return (("len", len(kv)),) + tuple((f"[{_key(k)}]", _leaf(a, depth)) for k, a in kv)
    if isinstance(v, (list, collections.deque, tuple)):
        return (("len", len(v)),) + tuple((f"[{i}]", _leaf(a, depth)) for i, a in enumerate(v))
    return (("len", len(v)),)


def _attr_signature(v):
    if _tensors(v) is not None:
        # an LSTM's ``(h, c)`` rebound on an object (``state.hidden = (h, c)``) is carried state
        # as a global's is (``_leaf``), not a new tuple's identity: it was a graph break
        return _tensors(v)
    if isinstance(v, _HOLDERS):
        return (id(v),) + _items(v)
    if _option_dicts(v) is not None:
        # an optimizer held by an object the function reads (``trainer.opt``): its own counters
        # and flags, as for one the function names itself
        return (id(v),) + tuple((k, _leaf(a)) for k, a in optimizer_attributes(v))
    return _leaf(v)


def _value(cell, g, name):
    if cell is not None:
        try:
            return cell.cell_contents
        except ValueError:          # not yet assigned
            return None
    return g.get(name)


def int_attributes(refs):
    """``(object, __dict__, name, value)`` of every int attribute of the plain objects among
    ``refs`` that keep their attributes in a ``__dict__`` and whose class keeps Python's own
    attribute access: the counters a trace may bump (NOTE [Python counters])."""
    out = []
    for name, cell, g in refs:
        v = _value(cell, g, name)
        cls = type(v)
        d = getattr(v, "__dict__", None) if _plain_object(v) else None
        # an argument is keyed by equality (``compiler._key``): one whose class compares by value
        # may be another object than the one a program's runs would bump
        if type(d) is dict and cls.__setattr__ is object.__setattr__ \
                and cls.__getattribute__ is object.__getattribute__ \
                and not (name.startswith("argument ") and cls.__hash__ not in (None, object.__hash__)):
            out += [(v, d, k, a) for k, a in list(d.items()) if type(a) is int]
        elif cls is type and _user_class(v):
            # a class attribute bumped through the class (``Stats.steps += 1``): its plain
            # metaclass sets it as a dict would
            d = _ClassDict(v)
            out += [(v, d, k, a) for k, a in _class_attributes(v) if type(a) is int]
    return out


def counter_changes(before, refs, names, counters):
    """NOTE [Python counters]: the ``(attributes, name, difference)`` of the attributes among
    ``before`` (``int_attributes``' answer before the trace) that the trace changed to another
    int, whose name the code scanned uses as a counter and never stores plainly (``counters``:
    ``python_refs``' pair of sets), and not among the names the code reading the object's
    references loads (``refs``/``names`` as ``python_refs`` gives them: any other use); each
    is put back to its value before the trace."""
    read = {}
    for (name, cell, g), used in zip(refs, names):
        read.setdefault(id(_value(cell, g, name)), set()).update(used)
    out = []
    for v, d, k, a in before:
        now = d.get(k, _MISSING)
        if type(now) is int and now != a and k in counters[0] and k not in counters[1] \
                and k not in read.get(id(v), ()):
            out.append((d, k, now - a))
            d[k] = a
    return tuple(out)


class CellSlot:
    """A closure cell read and written like a one-entry dict (a counter's place)."""

    __slots__ = ("cell",)

    def __init__(self, cell):
        self.cell = cell

    def get(self, name, default=None):
        try:
            return self.cell.cell_contents
        except ValueError:
            return default

    def __setitem__(self, name, value):
        self.cell.cell_contents = value


def scalar_counters(refs, counters):
    """``(place, name, value)`` of the int closure cells and globals among ``refs`` that the code
    scanned only bumps (``counters``: ``python_refs``' four sets; NOTE [Python counters])."""
    out = []
    for name, cell, g in refs:
        if name in counters[2] and name not in counters[3]:
            place = CellSlot(cell) if cell is not None else g
            if type(place.get(name)) is int:
                out.append((place, name, place.get(name)))
    return out


def scalar_changes(before):
    """``(place, name, difference)`` of the counters among ``before`` (``scalar_counters``' answer)
    that changed to another int, each put back."""
    out = []
    for place, name, a in before:
        now = place.get(name)
        if type(now) is int and now != a:
            out.append((place, name, now - a))
            place[name] = a
    return tuple(out)


def grown_lists(refs, counters):
    """NOTE [Python appends]: ``(place, name, list, copy)`` of the lists among ``refs`` (closure
    cells and globals) and among the attributes of the objects there (a trainer's
    ``self.losses``, a module's ``self.acts``) whose name the code scanned uses only to call
    ``append``/``extend`` on, and the lists in dicts it names only so (``history["loss"]``;
    ``counters``: ``python_refs``' six sets)."""
    names = counters[4] - counters[5]
    out, seen, read = [], set(), set()
    for name, cell, g in refs if names else ():
        v = _value(cell, g, name)
        if type(g) is _AttributePlace:
            place, name = g.attrs, g.key
        else:
            place = CellSlot(cell) if cell is not None else g
        if name in names:
            _grown_list(place, name, v, out, seen)
        else:
            _read_under(v, read)
        # a tensor's ``__dict__`` holds only the Python attributes set on it (``w.hist``)
        d = getattr(v, "__dict__", None)
        if type(d) is dict and not isinstance(v, _NOT_OBJECTS):
            for k, a in list(d.items()):
                if k in names:
                    _grown_list(d, k, a, out, seen)
                else:
                    _read_under(a, read)
    # a list also held under a name the code reads (``seen = hist; len(seen)``, ``t.log`` the
    # same list as ``t.losses``) is a value read: its length was baked in (round 43)
    return [e for e in out if id(e[2]) not in read]


def lists_read(refs, counters):
    """NOTE [lists hooks grow]: the ids of the lists the code scanned reads (``len(log)``,
    ``list(log)``, ``log[-1]``, returning it): those its ``refs`` (closure cells, globals) hold
    under a name it uses other than to grow the list through, and those held by an attribute
    of an object there whose name it so uses (``counters``: ``python_refs``' six sets)."""
    grow, other = counters[4] - counters[5], counters[5]
    read = set()
    for name, cell, g in refs:
        v = _value(cell, g, name)
        if name not in grow:
            _read_under(v, read)
        d = getattr(v, "__dict__", None)
        if type(d) is dict and not isinstance(v, _NOT_OBJECTS):
            for k, a in list(d.items()):
                if k in other:
                    _read_under(a, read)
    return read


def _read_under(v, read, depth=2):
    """Add to ``read`` the ids of the lists a name the code reads holds: ``v`` itself and the
    lists in the containers in it, ``depth`` levels down (``logs = {"a": hist}``)."""
    if type(v) is list:
        read.add(id(v))
    if depth and type(v) in (list, tuple, dict) and len(v) <= _NESTED_MAX:
        for a in (v.values() if type(v) is dict else v):
            if type(a) in (list, tuple, dict):
                _read_under(a, read, depth - 1)


def _grown_list(place, name, v, out, seen):
    """``grown_lists``' entry for a list at ``place[name]``, or for each list in a dict there
    (``history["loss"].append(v)``)."""
    if type(v) is dict:
        for k, a in list(v.items()):
            if type(a) is list:
                _grown_list(v, k, a, out, seen)
    elif type(v) is list and id(v) not in seen:
        seen.add(id(v))
        out.append((place, name, v, list(v)))


def slot_key(place, name):
    """``place_key`` of a counter's or a grown list's ``(place, name)``."""
    return (id(place.cell) if type(place) is CellSlot else id(place)), name


def place_key(ref):
    """The ``(id, name)`` of the place a reference (``name, cell, globals``) reads: the closure
    cell, the globals dict or, for a module attribute's reference, the module's ``__dict__``;
    ``slot_key`` of a counter's or a grown list's place is the same key."""
    name, cell, g = ref
    if cell is not None:
        return id(cell), name
    return (id(g.attrs), g.key) if type(g) is _AttributePlace else (id(g), name)


def cut_appends(before):
    """Cut the lists among ``before`` (``grown_lists``' answer) that only grew back to what
    they held (an abandoned trace's appends, tracers among them: NOTE [lists hooks grow])."""
    for _, _, lst, was in before:
        if len(lst) > len(was) and all(a is b for a, b in zip(was, lst)):
            del lst[len(was):]


def append_changes(before):
    """``(place, name, items)`` of the lists among ``before`` (``grown_lists``' answer) that a
    trace only grew, each cut back to what it held before."""
    out = []
    for place, name, lst, was in before:
        n = len(was)
        if place.get(name) is lst and len(lst) > n and all(a is b for a, b in zip(was, lst)):
            out.append((place, name, lst[n:]))
            del lst[n:]
    return out


def scalar_signature(refs):
    """The numbers/strings/bools among ``refs``, also inside short lists/tuples (a new value
    means a new program)."""
    out = []
    for name, cell, g in refs:
        v = _value(cell, g, name)
        if type(v) in _SCALARS:
            out.append((name, v))
        elif type(v) in (list, tuple) and len(v) <= SHORT_SEQUENCE and all(type(e) in _SCALARS for e in v):
            out.append((name, tuple(v)))
    return tuple(out)


class _OptimizerAttributes(dict):
    """``_copy``'s record of an optimizer's own attributes (``optimizer_attributes``, its state
    included), for ``_put_back``."""


def _copy(v, depth=_NESTED):
    """What ``_put_back`` needs to restore a container's contents, and those of the containers
    in it (``depth`` levels down), or an optimizer's own attributes; None for anything else."""
    if _option_dicts(v) is not None and depth > 1:
        own = _OptimizerAttributes(optimizer_attributes(v, with_state=True))
        return own, tuple((a, c) for a in own.values() for c in (_copy(a, depth - 1),) if c is not None)
    if isinstance(v, _BUFFERS):
        size = v.nbytes if isinstance(v, np.ndarray) else len(v) * getattr(v, "itemsize", 1)
        return None if size > _BUFFER_COPY_MAX else (_BUF, v.copy() if isinstance(v, np.ndarray) else v[:])
    if not isinstance(v, _HOLDERS) or (type(v) is tuple and len(v) > _NESTED_MAX):
        return None
    if v is _BUILTINS:
        # Python's own builtins namespace (an object holding ``globals()``'s ``__builtins__``,
        # e.g. ``SimpleNamespace(**namespace)`` of an exec'd program) is not user state, and
        # ``_put_back``'s clear-then-update of it emptied the builtins of the whole process
        return None
    shallow = dict(v) if isinstance(v, dict) else set(v) if isinstance(v, set) else list(v)
    inner = () if depth <= 1 or isinstance(v, set) or len(v) > _NESTED_MAX else tuple(
        (a, c) for a in (shallow.values() if isinstance(v, dict) else shallow)
        for c in (_copy(a, depth - 1),) if c is not None)
    return shallow, inner


def snapshot(refs):
    """What ``restore`` needs to undo a trace's changes to these variables (and to the
    attributes of the plain objects among them, and the random generators)."""
    snap = [(random.getstate(), np.random.get_state(),
             [(v, _get_rng(v)) for v in _generators(refs)])]
    for name, cell, g in refs:
        v = _value(cell, g, name)
        attrs = None
        if _plain_object(v):
            attrs = {k: (a, _copy(a)) for k, a in attributes(v).items()}
        elif _user_class(v):
            attrs = {k: (a, _copy(a)) for k, a in _class_attributes(v)}
        dicts = _option_dicts(v)
        if dicts is not None:
            attrs = (list(dicts), [(d, _copy(d)) for d in dicts],
                     {k: (a, _copy(a)) for k, a in optimizer_attributes(v, with_state=True)})
        snap.append((name, cell, g, v, _copy(v), attrs))
    return snap


def _put_back(v, copy):
    if copy is None:
        return
    shallow, inner = copy
    if isinstance(shallow, _OptimizerAttributes):
        d = vars(v)
        for k in [k for k, _ in optimizer_attributes(v, with_state=True) if k not in shallow]:
            del d[k]
        d.update(shallow)
        for a, c in inner:
            _put_back(a, c)
        return
    if shallow is _BUF:
        if isinstance(v, np.ndarray):
            np.copyto(v, inner)
        else:
            v[:] = inner
        return
    if isinstance(v, tuple):
        pass                          # itself unchanged: the containers in it are put back below
    elif isinstance(v, list):
        v[:] = shallow
    elif isinstance(v, collections.deque):
        v.clear()
        v.extend(shallow)
    elif isinstance(v, collections.OrderedDict):
        # its own methods: it keeps its order apart from dict's storage, and dict.clear/update
        # would leave a move_to_end made while tracing in place (an LRU cache moved twice)
        collections.OrderedDict.clear(v)
        collections.OrderedDict.update(v, shallow)
    elif isinstance(v, dict):         # dict's methods: a subclass may report writes (ParamGroup)
        dict.clear(v)
        dict.update(v, shallow)
    else:
        v.clear()
        v.update(shallow)
    for a, c in inner:
        _put_back(a, c)


def restore(snap):
    """Undo what an abandoned trace did to the function's closure/global variables (rebinding,
    appends, updates), so no traced value is left behind in them."""
    py_state, np_state, rngs = snap[0]
    random.setstate(py_state)
    np.random.set_state(np_state)
    for v, st in rngs:
        _set_rng(v, st)
    for name, cell, g, v, copy, attrs in snap[1:]:
        if cell is not None:
            try:
                if cell.cell_contents is not v:
                    cell.cell_contents = v
            except ValueError:
                pass
        elif g.get(name) is not v:
            g[name] = v
        _put_back(v, copy)
        if isinstance(attrs, tuple):             # an optimizer's param groups and own attributes
            dicts, copies, own = attrs
            dicts_now = _option_dicts(v)
            dicts_now[:] = dicts
            for d, c in copies:
                _put_back(d, c)
            d = vars(v)
            for k in [k for k, _ in optimizer_attributes(v, with_state=True) if k not in own]:
                del d[k]
            for k, (a, c) in own.items():
                d[k] = a
                _put_back(a, c)
        elif attrs is not None:
            d = _ClassDict(v) if isinstance(v, type) else attributes(v)
            for k in [k for k in d if k not in attrs]:
                del d[k]
            for k, (a, c) in attrs.items():
                d[k] = a
                _put_back(a, c)


# NOTE [iterators and files]: an iterator, a generator or a file object keeps its position
# where no snapshot reaches (C state, or a list iterator inside a DataLoader iterator): a
# ``next(it)`` or ``f.readline()`` while tracing would be baked into the program (the same batch
# on every call) and could not be undone for the eager rerun of an abandoned trace (a batch
# skipped, a line written twice). A function that can reach one (a global, a closure cell, an
# argument, or an attribute its code names on an object it reads) is a graph break before it
# is traced; sys.stdout and sys.stderr are left to the print check, which sees each write.
# A ``contextlib.contextmanager`` object holds its generator as ``gen``: its ``__enter__`` or
# ``__exit__`` inside (a manager passed in, entered or exited there) advances that generator.
def _stateful_kind(v):
    if isinstance(v, (types.GeneratorType, types.AsyncGeneratorType, types.CoroutineType)):
        return "generator"
    d = getattr(v, "__dict__", None)
    if type(d) is dict and isinstance(d.get("gen"), types.GeneratorType) and hasattr(type(v), "__exit__"):
        return "generator context manager"
    if isinstance(v, io.IOBase):
        # a closed file has no position left to move (reading it raises, eagerly and while
        # tracing alike): a script's ``with open(meta_path, 'rb') as f:`` leaves the closed ``f``
        # among its globals, and a step compiled there made every call run eagerly (round 73,
        # nanoGPT's train.py)
        if v in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__) or v.closed:
            return None
        return "file"
    if hasattr(type(v), "__next__") and not isinstance(v, (type, Tensor)):
        if type(v) is itertools.repeat and _endless(v):
            return None      # ``repeat(x)`` gives the same object on every ``next``: no position
        return "iterator"
    return None


def close_abandoned_generators(tb):
    """Close the suspended generators (and ``contextlib.contextmanager`` objects entered and
    never exited) that the frames of an abandoned trace (a graph break: the eager rerun runs
    the call again) hold as their own locals, while the trace's capture is still on and before
    its Python state is put back. Left open, one was closed later by the garbage collector and
    its ``finally`` (a log append) ran after the put-back: once more than eagerly. Arguments,
    globals and closure cells from outside are not touched (NOTE [iterators and files] breaks
    before tracing on those); what the closing raises (a graph break in the ``finally``) goes
    with the trace."""
    while tb is not None:
        frame, tb = tb.tb_frame, tb.tb_next
        code = frame.f_code
        n_args = code.co_argcount + code.co_kwonlyargcount
        own = (set(code.co_varnames) | set(code.co_cellvars)) - set(code.co_varnames[:n_args])
        for name, v in list(frame.f_locals.items()):
            kind = _stateful_kind(v) if name in own else None
            gen = v if kind == "generator" else getattr(v, "gen", None) if kind == "generator context manager" else None
            if isinstance(gen, types.GeneratorType) and gen.gi_frame is not None and not gen.gi_running:
                try:
                    gen.close()
                except Exception:     # noqa: BLE001 -- dropped with the abandoned trace
                    pass

def _endless(r) -> bool:
    """Whether an ``itertools.repeat`` was made without ``times`` (its length hint raises)."""
    try:
        r.__length_hint__()
    except TypeError:
        return True
    return False


def stateful_reads(refs, names) -> str | None:
    """A description of the first iterator, generator or file among ``refs`` (and the
    attributes ``names`` says the code reads on the plain objects among them; and the items of
    a dict or list there), or None (NOTE [iterators and files])."""
    for (name, cell, g), used in zip(refs, names):
        v = _value(cell, g, name)
        found = _stateful_in(name, v)
        if found is not None:
            return found
        if _plain_object(v):
            for k, a in attributes(v).items():
                if k in used:
                    found = _stateful_in(f"{name}.{k}", a)
                    if found is not None:
                        return found
    return None


def _stateful_in(name, v) -> str | None:
    """``v`` described when it is an iterator, generator or file, or holds one as an item of a
    dict or list: a generator kept in ``state["gen"]`` by an earlier call was read by the trace,
    its ``next`` baked into the program, every later call using the value the trace drew
    (round 30). Such items are not snapshotted either."""
    kind = _stateful_kind(v)
    if kind is not None:
        return f"the {kind} '{name}'"
    if type(v) in (dict, list) and len(v) <= _ITEMS_LOOKED_AT:
        for k, a in (v.items() if type(v) is dict else enumerate(v)):
            kind = _stateful_kind(a)
            if kind is not None:
                return f"the {kind} '{name}[{k!r}]'"
    return None


_ITEMS_LOOKED_AT = 64     # a longer dict or list (a dataset's) is not searched: pre-trace cost


_CLOCK_IDS = {id(getattr(time, n)) for n in ("time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic",
                                             "monotonic_ns", "process_time", "process_time_ns") if hasattr(time, n)}
_DATE_READS = frozenset({"now", "utcnow", "today"})


def clock_reads(refs, names) -> str | None:
    """A description of the first clock the code names directly (``from time import time``,
    ``datetime.now()``), or None: its value would be read once while tracing. ``time.time()``
    through the module is caught when called (``capture.guard_output``)."""
    for (name, cell, g), used in zip(refs, names):
        v = _value(cell, g, name)
        if id(v) in _CLOCK_IDS:
            return f"the clock '{name}'"
        if (v is datetime or v is datetime.datetime or v is datetime.date) and not used.isdisjoint(_DATE_READS):
            return f"the clock '{name}' (now/today)"
    return None


# NOTE [Python random numbers]: ``random.random()`` or ``np.random.rand()`` inside a compiled
# function would be drawn once, while tracing, and baked into the program (augmentation that
# flips the same way on every call). A trace that moves Python's or NumPy's global generator,
# or a NumPy generator the function closes over, is a graph break; an abandoned trace puts
# the generators back, so the eager rerun draws what eager would have drawn.
def _rng_state(v):
    if isinstance(v, random.Random):
        return v.getstate()
    if isinstance(v, np.random.Generator):
        return repr(v.bit_generator.state)
    if isinstance(v, np.random.RandomState):
        kind, keys, pos, has_gauss, gauss = v.get_state()
        return (kind, keys.tobytes(), pos, has_gauss, gauss)
    return None


def _get_rng(v):
    if isinstance(v, random.Random):
        return v.getstate()
    return v.bit_generator.state if isinstance(v, np.random.Generator) else v.get_state()


def _set_rng(v, st):
    if isinstance(v, random.Random):
        v.setstate(st)
    elif isinstance(v, np.random.Generator):
        v.bit_generator.state = st
    else:
        v.set_state(st)


def _held_generators(v):
    """The random generators in a small list, tuple or dict ``v`` (``cfg["rng"]``)."""
    if isinstance(v, (list, tuple, dict)) and len(v) <= _NESTED_MAX:
        yield from (a for a in (v.values() if isinstance(v, dict) else v) if _rng_state(a) is not None)


def _generators(refs):
    """The Python/NumPy random generators among ``refs``, in the small containers there, and
    among the attributes of the plain objects there (``self.rng = random.Random(0)``). A
    generator in a container (``cfg["rng"].random()``) moved by a trace was reported as a
    change but not put back, so the eager rerun drew the numbers after the trace's (round 55)."""
    for n, c, g in refs:
        v = _value(c, g, n)
        if _rng_state(v) is not None:
            yield v
        elif _plain_object(v):
            for _, a in list(attributes(v).items()):
                if _rng_state(a) is not None:
                    yield a
                else:
                    yield from _held_generators(a)
        else:
            yield from _held_generators(v)


def _global_rngs():
    return (("the random module's generator", random.getstate()),
            ("numpy.random's global generator", _rng_state(np.random.mtrand._rand)))


def effects_signature(refs):
    """Everything a trace could change: scalar values, containers' contents, objects'
    attributes, bindings, Python's and NumPy's random generators."""
    out = list(_global_rngs())
    for name, cell, g in refs:
        v = _value(cell, g, name)
        if _rng_state(v) is not None:
            out.append((name, _rng_state(v)))
        elif type(v) in _SCALARS:
            out.append((name, v))
        elif isinstance(v, Tensor) or _tensors(v) is not None:
            out.append((name, _leaf(v)))      # rebinding tensors is carried state
        elif isinstance(v, _HOLDERS) and (type(v) is not tuple or len(v) <= _NESTED_MAX):
            items = _items(v)
            if getattr(v, "__dict__", None):
                # a dict or list subclass's own attributes (``d.tracker.append(1)`` on an
                # OrderedDict subclass) are state as a plain object's are: the program did not
                # repeat the append (round 28, MiscTests.test_mutable_mapping_dict_access_pattern)
                items += tuple((k, _attr_signature(a)) for k, a in attributes(v).items())
            out.append((name, id(v), _ATTRS, items))
        elif isinstance(v, _BUFFERS):
            out.append((name, _buffer_signature(v)))
        elif _plain_object(v):
            out.append((name, id(v), _ATTRS, tuple((k, _attr_signature(a)) for k, a in attributes(v).items())))
        elif _user_class(v):
            out.append((name, id(v), _ATTRS, tuple((k, _attr_signature(a)) for k, a in _class_attributes(v))))
        elif _option_dicts(v) is not None:
            dicts = _option_dicts(v)
            out.append((name, id(v), _ATTRS, (("param_groups", len(dicts)),) + tuple(
                (f"param_groups[{i}][{k!r}]", _attr_signature(a)) for i, d in enumerate(dicts)
                for k, a in d.items() if k != "params")
                + tuple((k, _attr_signature(a)) for k, a in optimizer_attributes(v))))
        else:
            out.append((name, id(v)))
    return tuple(out)


def changed(refs, before):
    """Name of the first closure/global variable whose value changed since ``before``
    (``name.attribute`` for an object's attribute)."""
    now = effects_signature(refs)
    for a, b in zip(before, now):
        if a != b:
            if len(a) == 4 and a[2] is _ATTRS and len(b) == 4 and a[:2] == b[:2]:
                old, new = dict(a[3]), dict(b[3])
                attr = next((k for k in {**old, **new} if old.get(k, _MISSING) != new.get(k, _MISSING)), None)
                if attr is not None:
                    return a[0] if attr == "len" else f"{a[0]}{attr}" if attr.startswith("[") else f"{a[0]}.{attr}"
            return a[0]
    return None


_MISSING = object()
_ATTRS = "attributes"


def numpy_sharing(snap, hosts):
    """Name of the first variable in ``snap`` (``snapshot``'s) that is, or holds, an ndarray
    sharing memory with one of ``hosts`` (the numpy arrays of storages a trace wrote: NOTE
    [numpy views in a trace]), or None."""
    def hit(v):
        return isinstance(v, np.ndarray) and any(np.may_share_memory(v, h) for h in hosts)

    def inner(copy):
        if copy is None or copy[0] is _BUF:
            return False
        return any(hit(a) or inner(c) for a, c in copy[1])
    for name, _, _, v, copy, attrs in snap[1:]:
        if hit(v) or inner(copy):
            return name
        if isinstance(attrs, dict) and any(hit(a) or inner(c) for a, c in attrs.values()):
            return name
    return None


# NOTE [Python counters]: ``self.global_step += 1`` in a compiled step (a trainer's method, a
# helper bumping a plain object's attribute, a module's forward counting its calls) reads the
# attribute only to add an int literal to it and store the sum back. The value never reaches
# the program nor the Python deciding what the trace does, so it is no value the trace read:
# ``_code_names`` leaves out a name a code object only bumps that way or stores (``self.n =
# 0`` in ``__init__`` reads nothing), and no guard bakes it. Nor is the change a side effect
# the program would skip: the trace's increments are measured and put back, and each run of
# the program (the first included) adds that difference again -- eagerly the call runs the
# same increments, as what decides how many (loops, branches) is guarded like any other value
# the trace read. Found two ways: on a plain object among the function's references
# (``counter_changes``: its name bumped in the code scanned, stored plainly nowhere there but
# in an ``__init__``, and read by none of the code reading that object), and on a module
# (``Module.__setattr__`` in a trace asks ``Capture.counter_store``, which checks that the
# calling instruction is such a bump's STORE_ATTR), and in a closure cell or a global
# (``nonlocal n; n += 1``, ``global step; step += 1``: ``scalar_counters``, whose name the code
# scanned uses in no other way; the cell or global is then left out of the values guarded).
# A name also read (a condition, a log line, ``getattr(self, "n")``), stored plainly, bumped by
# a float or an expression, or a class with its own ``__setattr__``/``__getattribute__``,
# keeps the earlier answer: a guarded value, and a change that runs the call eagerly; a counter
# some guard reads after all (the methods of a class the trace never calls naming it) does too
# (``trace_region``). Each run checks the place still holds an int (one deleted or set to a
# float between calls traces again); a bump before an lr scheduler's deferred ``step()`` is
# made before it on each run, one after it after (``trace._counters_in_order``).
# NOTE [Python appends]: ``history.append(loss.item())``, ``self.losses.append(loss.detach())``
# or a module's ``self.acts.append(h)`` in a compiled step grows a list the program cannot
# grow: the whole call used to run eagerly on every call. When the code scanned names that
# list (a closure cell, a global, an attribute of an object it reads, a module attribute) only
# to call ``append``/``extend`` on it (``_CounterUses.appended``; any other use of the name,
# ``len(hist)``, ``hist[-1]``, a plain store outside ``__init__``, keeps the old answer) and
# the trace only added items at its end (``append_changes``: the items before are the same
# objects), the added items are cut off again and become extra results of the program: every
# run (the traced one included) extends the list the place holds at that call with that run's
# items (``Region._append``): tensors the program computed, ``item()`` numbers read after the
# run (NOTE [deferred item]), rebuilt containers and constants, as returned results are. The
# list's items are no values the trace read: the place is left out of the guards but for
# "still holds a list" (``guard_code.checker``), so a list rebound between calls (an epoch's
# ``self.losses = []``) is grown the same way. Nothing else in the call can see the list
# before the run's end, the scan having found no other use. A deque, or a list subclass, keeps
# the old answer. ``hist += [v]`` (a global, a closure cell or an attribute stored back to
# itself: ``list.__iadd__`` returns the list) is an extend too (``pycode._list_extends``, round
# 36); a value that is no list there (a number, a tuple, a string) is no grown list and keeps the
# old answer.
# NOTE [lists hooks grow]: a hook that ran in the trace (a tensor hook, a post-accumulate-grad
# hook, a module's forward hook) and only grew a list has its items cut back and appended again
# by every run, as above. The function itself may read that list (``return len(log)``,
# ``n = len(self.acts)`` before the backward, ``list(log)``): the scan of the function's code
# (``lists_read``) says which lists it reads, and one a hook grew is a graph break; the program
# returned the length seen while tracing on every call (round 53). A hook reading a list the
# function grows is the same break (``trace_region``). A module or optimizer hook is scanned
# with the object it is called with (``m.acts.append(out)`` in a forward hook, one record per
# module it runs on): the list on the module was not looked at, so the traced append stayed in
# it and no run appended again; and an abandoned trace left its tracer there. The same held for
# a list set on a tensor (``w.hist.append(g.norm())`` by the function, by a hook closing over
# ``w`` or by a post-accumulate-grad hook on the parameter it is called with). Modules and
# tensors are no plain objects (``changed`` does not see their lists), so such a list is cut
# back whenever it only grew (``append_changes`` in ``trace_region`` and
# ``Capture.hooks_changed``; ``cut_appends`` when a trace is abandoned).


_SEEN: list = []     # the ``(counters, stored)`` sets ``python_refs(counters_out=...)`` collects


def _code_names(code, out):
    uses = counter_uses(code)
    if uses.unread:
        # names this code only stores or bumps are no values it reads (NOTE [Python counters])
        out.update(n for n in code.co_names if n not in uses.unread)
    else:
        out.update(code.co_names)
    for counters, stored, scalar_counters, scalar_other, appended, append_other in _SEEN:
        counters |= uses.counters
        stored |= uses.stored
        scalar_counters |= uses.scalar_counters
        scalar_other |= uses.scalar_other
        appended |= uses.appended
        append_other |= uses.append_other
    if _formats(code):
        out.add(_FORMATS)
    if not _DYNAMIC_NAMES.isdisjoint(code.co_names):
        # ``hasattr(net, "foo")``, ``getattr(cfg, "scale", 1.0)``, ``attrgetter("k")(cfg)``,
        # ``methodcaller("scale")(obj)``: the literal names are read too
        out.update(c for c in code.co_consts if type(c) is str and c.isidentifier())
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_names(c, out)
    return out


def attribute_writes(fn) -> str | None:
    """``name.attribute`` of the first attribute ``fn``'s code, or a user helper it calls, stores
    or bumps on a plain object or user class it reaches through a closure cell or a global
    (``state.enabled = True``, ``counter.depth += 1``, a property's setter), or None. A custom
    Function's backward is traced once (custom_function.py ``backward_effect``): such a write
    would happen once, not on every backward. Conservative: a write put back before the
    function returns counts too, as does a store of the same name on another object."""
    sets = tuple(set() for _ in range(6))
    refs, _ = python_refs(fn, counters_out=sets)
    stored = sets[0] | sets[1]
    if not stored:
        return None
    for name, cell, g in refs:
        v = _value(cell, g, name)
        if _user_class(v):
            own = {k for k, _ in _class_attributes(v)}
        elif _plain_object(v) and not isinstance(v, (type, types.ModuleType) + _FUNCTIONS):
            own = set(attributes(v)) | {k for c in _classes_of(v) for k, a in _class_attributes(c)
                                        if isinstance(a, property)}
        else:
            continue
        hit = sorted(stored & own)
        if hit:
            return f"{name}.{hit[0]}"
    return None
