"""The Python values a trace read, guarded on every call (NOTE [Python values read]): a number,
flag, string, function or NumPy array the program baked in, found from the code of the function
and of the modules it called; ``guard_code.checker`` writes the check that they are all still
what the trace read. ``pystate`` finds the references these are read through and the side effects on them.
"""
from __future__ import annotations

import array
import collections
import collections.abc
import datetime
import dis
import enum
import functools
import gc
import inspect
import numbers
import operator
import os
import types
import weakref

import numpy as np

from .. import _state
from .._tensor.generator import Generator
from .._tensor.tensor import Tensor
from .pycode import _user_class
from .pystate import (_FUNCTIONS, _MISSING, _SCALARS, _code_names, _object_names, _plain_object, _user_methods,
                      _value, CellSlot, attributes, is_memoized, python_refs)

_HELD = _state.HELD_STORAGES    # storages compiled programs read: their flags' flips go to _state.RG_FLIPS


# NOTE [Python values read]: a number, string or bool (or a NumPy array, by its bytes) the
# trace reads from an object (a module's ``self.temperature`` or ``self.p``, ``cfg["shift"]``,
# ``holder.scale``, ``cfg["model"]["scale"]``, ``sizes[1]``, a tuple of numbers) or from a
# closure cell or global is baked into the program (dicts and lists are looked into
# ``_GUARD_DEPTH`` levels deep, as side effects are ``_NESTED`` levels deep). Each such value is guarded on every call (a new value traces again), so a
# change between calls is never answered with a frozen constant. Which attributes the trace
# may read is taken from the code: the names the function's code loads (and that of the
# methods it calls on those objects), and for a module every name its class's methods load
# (with the numbers and small dicts among the globals they name), and the globals the user's
# helper functions it calls name (two levels down).
# An attribute no code there names (a trainer's ``global_step`` bumped outside) is not
# guarded, so it never causes a new trace (unless that code calls ``getattr``/``vars``: NOTE
# [other holders]). A dict or list of more than ``_GUARD_DICT_MAX`` entries is not looked into
# entry by entry: one of numbers/strings is compared as a whole with a copy (one C-level
# comparison, ~15 us for 512 entries), one of other values by the identity of each entry (the
# same keys holding the same objects: a C-level loop, ~25 ns an entry). Either costs time in
# proportion to its size on every call (a vocabulary of 50,000 entries: ~1 ms), which is the
# price of never running on a value frozen at trace time; a value changed in place inside such
# an entry (a nested dict's item) is not seen.
_GUARD_DICT_MAX = 64
_GUARD_DEPTH = 3          # containers inside containers: cfg["model"]["dropout"]


_NAMES = weakref.WeakKeyDictionary()      # class -> names its methods load
_GLOBALS = weakref.WeakKeyDictionary()    # class -> globals its methods name


def _class_names(cls, cache=_NAMES):
    names = cache.get(cls)
    if names is None:
        names = set()
        for klass in cls.__mro__:
            if klass is object or klass.__dict__.get("_tracegrad_base_module"):
                continue
            own = set()
            for f in klass.__dict__.values():
                f = getattr(f, "__func__", f)
                if isinstance(f, property):
                    f = f.fget
                if isinstance(f, types.FunctionType):
                    _code_names(f.__code__, own)
            if klass.__module__.startswith("tracegrad."):
                # tracegrad's own methods probe only the module's tables (``getattr(self,
                # name)`` in Sequential), which the region follows: as probes they would guard
                # every name those methods load as absent on every module (120 checks on the
                # digits MLP)
                own -= _PROBES
            names |= own
        cache[cls] = names
    return names


def _class_globals(cls, cache=_GLOBALS):
    """``(name, globals)`` of the globals a user class's methods name (tracegrad's own classes
    read no user globals)."""
    refs = cache.get(cls)
    if refs is None:
        refs = []
        for klass in cls.__mro__:
            if klass.__module__.split(".")[0] in ("tracegrad", "builtins"):
                continue
            for f in klass.__dict__.values():
                f = getattr(f, "__func__", f)
                if isinstance(f, types.FunctionType):
                    g = f.__globals__
                    refs += [(n, g) for n in sorted(_code_names(f.__code__, set())) if n in g]
        unique = {(n, id(g)): (n, g) for n, g in refs}
        cache[cls] = refs = tuple(unique.values())
    return refs


def _guard_globals(refs, checks, seen):
    for name, g in refs:
        v = g.get(name)
        if not _guard_value(g, name, v, checks):
            _guard_container(v, checks, seen, place=(g, name))


class _Checks(list):
    """The checks being built, and the ids of the modules the trace called (``called``)."""

    called = frozenset()
    pinned = frozenset()      # ids of the storages the program reads as inputs (not carried)
    followable = {}           # id -> input index of the pinned storages a place may follow
    places = None             # input index -> [(slot, tensor)] where such a storage was found
    by_shape = frozenset()    # (id(dict), name) of module attributes guarded by shape elsewhere
    unread = ()               # NOTE [tensors compared by identity]: (view, key) places of unread tensors
    rebound = frozenset()     # (id(container), key) of the places the program binds anew each call
    grown = frozenset()       # ids of the lists each run appends to (NOTE [Python appends] in pystate.py)


def _guard_object(o, names, checks, seen):
    # NOTE: an object reached twice (a closure cell of ``__init__`` and ``self.helper`` of the
    # module whose ``forward`` calls ``helper.factor()``) is guarded for the names of each way:
    # the first way's names alone (``__init__``'s) left ``helper.n`` unguarded (round 48)
    if ("all", id(o)) in seen:
        return
    first = id(o) not in seen
    seen.add(id(o))
    names = frozenset(k for k in names if (id(o), k) not in seen)
    if not (first or names):
        return
    seen.update((id(o), k) for k in names)
    d = attributes(o)
    # a plain object's attribute count (a user module's when its code calls hasattr/getattr), and
    # with getattr()/vars() in the code every attribute (NOTE [other holders])
    plain = _plain_object(o)
    every = plain and not names.isdisjoint(_DYNAMIC_READS)
    if every:
        seen.add(("all", id(o)))
    if first and (plain or (not names.isdisjoint(_PROBES) and _user_class(type(o)))):
        checks.append((_Len(d), None, len(d), None))
    if first and plain:
        # its class, by identity: ``obj.__class__ = Other`` between calls (other methods, other
        # class attributes) ran the traced class's code (round-36's adversarial tests)
        checks.append((_Attributes(o), "__class__", type(o), _IDENTITY))
    for k, v in d.items():
        if k == "training" or (k not in names and not every):
            continue
        if not (_guard_value(d, k, v, checks) or _guard_container(v, checks, seen, names=names, place=(d, k))):
            # the names code naming ``names`` may read on it (not every method's: a schedule
            # wrapper's counter, loaded only by the method the step never calls, moved between
            # calls and sent each call back to tracing)
            _guard_held(v, _scheduler_names(type(v), names) if _is_scheduler(v) else _object_names(type(v), names),
                        checks, seen, (d, k))
    _guard_class_attributes(o, d, names, checks, every)


def _is_scheduler(v) -> bool:
    return any(c.__name__ == "LRScheduler" and c.__module__.startswith("tracegrad.") for c in type(v).__mro__)


def _scheduler_names(cls, used):
    """The names an lr scheduler held by an object the trace reads (``self.sched`` of a trainer)
    may have read: ``used`` and what the scheduler's methods ``used`` names load (``get_last_lr``
    reads ``_last_lr``), following the methods those name -- but not ``step``'s: inside a trace
    it is deferred (NOTE [deferred scheduler step]) and reads the attributes after each run, so
    its counters (``last_epoch``, ``_step_count``) moving every call are no values the program
    baked. ``_class_names`` (every method's names) guarded them: a new trace every call of a
    trainer's step that ends with ``self.sched.step()``. A step that could not be deferred ran
    in the trace and its changes are a side effect (``pystate.changed``)."""
    methods = {}
    for klass in reversed(cls.__mro__):
        for k, f in klass.__dict__.items():
            f = f.fget if isinstance(f, property) else getattr(f, "__func__", f)
            if isinstance(f, types.FunctionType):
                methods[k] = f
    names, todo = set(used), [n for n in used if n in methods and n != "step"]
    done = set()
    while todo:
        n = todo.pop()
        if n not in done:
            done.add(n)
            new = _code_names(methods[n].__code__, set()) - names
            names |= new
            todo += [m for m in new if m in methods and m != "step"]
    return names


_DYNAMIC_READS = frozenset({"getattr", "vars", "__dict__"})
_PROBES = _DYNAMIC_READS | {"hasattr"}     # code that may ask for an attribute the object lacks


def _guard_held(v, names, checks, seen, place=None):
    """A plain object (its attributes ``names`` names; and that ``place``, ``(mapping, key)``,
    still holds this very object: one bound there between calls is another object) or a module
    (the ``training`` flags of the submodules the trace did not call: NOTE [other holders])
    found in a variable, a container or an attribute."""
    if _plain_object(v):
        if place is not None:
            checks.append((*place, v, _IDENTITY))
        if is_memoized(v):           # a cached helper's results the trace baked: cleared, traced again
            checks.append((_Probe(lambda f=v: f.cache_info().currsize), None, v.cache_info().currsize, None))
        _guard_object(v, names, checks, seen)
    elif getattr(type(v), "_tracegrad_state_is_captured", False) and callable(getattr(v, "modules", None)):
        if place is not None and _guarded_place(place, checks):
            # that very module: another one bound there between calls (``model = other``,
            # ``box["m"] = b``) ran the traced one's parameters and code; and a module built
            # since no trace bumps the structure any more (NOTE [objects no trace has seen])
            checks.append((*place, v, _IDENTITY))
        _guard_module_attributes(v, names, checks, seen)
        if ("modes", id(v)) in seen:
            return
        seen.add(("modes", id(v)))
        for m in v.modules():
            if id(m) not in checks.called and "training" in vars(m):
                checks.append((vars(m), "training", m.training, None))
    elif getattr(type(v), "_tracegrad_state_is_captured", False) and isinstance(getattr(v, "defaults", None), dict):
        # an optimizer: ``opt.defaults["lr"]`` (or a subclass's own attribute) read by the step
        # was baked in unguarded (round-15's adversarial tests). Its param_groups and state are
        # followed by the region itself (``hyper``: guarding their numbers here would retrace
        # on every scheduler step), so only the other attributes the code names. The place
        # must still hold this very optimizer: the program updates its state, and a new one
        # bound there between calls (``box["opt"] = SGD(...)``) was left untouched while the
        # old one's momentum moved on (round 39's adversarial tests)
        if place is not None:
            checks.append((*place, v, _IDENTITY))
        _guard_module_attributes(v, [k for k in names if k not in _OPTIMIZER_FOLLOWED], checks, seen)


_OPTIMIZER_FOLLOWED = frozenset({"param_groups", "state"})


def _guard_module_attributes(m, names, checks, seen):
    """A module's own attributes that the code reading the module names (the step's
    ``x * model.noise``, ``model.cfg["tau"]``): the module's class code alone (``_class_names``)
    does not name them, and ``model.noise = 1.0`` between calls must trace again."""
    d = vars(m)
    probes = not _PROBES.isdisjoint(names)      # (names: any iterable of names)
    for k in names:
        # (``training`` and the module's own ``_parameters``/``_modules``/... tables are
        # state the program already follows)
        if k == "training" or k.startswith("_") or ("attr", id(m), k) in seen:
            continue
        if k not in d:
            # ``hasattr(net, "foo")``/``getattr(net, "foo", 0)`` False at trace: one set later
            # was not seen (round-15's adversarial tests). Only with such probes in the code:
            # every other name the code loads would add a check per module
            if probes and not hasattr(type(m), k) and k not in _module_tables(d):
                seen.add(("attr", id(m), k))
                checks.append((d, k, _MISSING, None))
            continue
        seen.add(("attr", id(m), k))
        v = d[k]
        if not _guard_value(d, k, v, checks) and not _guard_container(v, checks, seen, names=names, place=(d, k)) \
                and _plain_object(v):
            # a plain object kept on the module (``model.cfg = Config(scale=1.5)``, read by the
            # step as ``model.cfg.scale``): that very object and the attributes the code names.
            # ``model.cfg = Config(scale=3.0)`` between calls was frozen (round 33)
            _guard_held(v, frozenset(names) | _class_names(type(v)), checks, seen, (d, k))
    _guard_class_attributes(m, d, names, checks)
    # The submodules' own attributes too: ``net.drop.p``, ``seq[1].p`` or ``blocks[0].scale``
    # read by the step from a module it does not call (a called one is guarded by its class's
    # names) was baked in unguarded (round-14's adversarial tests). Every submodule, not only
    # those the code names: ``seq[1]`` and ``blocks[0]`` reach theirs by index. Only the names
    # the code loads are looked up, each module once (``seen``).
    for sm in (d.get("_modules") or {}).values():
        if sm is not None and ("sub", id(sm)) not in seen and isinstance(getattr(sm, "__dict__", None), dict):
            seen.add(("sub", id(sm)))
            _guard_module_attributes(sm, names, checks, seen)


def _module_tables(d):
    """The names a module holds in its parameter, buffer and submodule tables."""
    out = set()
    for table in ("_parameters", "_buffers", "_modules"):
        out.update(d.get(table) or ())
    return out


def _guard_class_attributes(o, d, names, checks, every=False):
    """``self.SCALE`` read from the class (``Model.SCALE = 2.0`` between calls): guarded in the
    user class that defines it, with the instance still not shadowing it."""
    for klass in type(o).__mro__:
        if klass is object or klass.__module__.split(".")[0] in ("tracegrad", "builtins"):
            continue
        cd = klass.__dict__
        for k, v in list(cd.items()) if every else ((k, cd[k]) for k in names if k in cd):
            if k not in d and not (every and (k.startswith("__") or isinstance(v, _FUNCTIONS))) \
                    and _guard_value(cd, k, v, checks):
                checks.append((d, k, _MISSING, None))


def _guard_container(c, checks, seen, depth=_GUARD_DEPTH, names=None, place=None) -> bool:
    """Guard the values in a dict or list (``cfg["opt"]["lr"]``, ``sizes[1]``), and in the
    dicts and lists inside it, ``depth`` levels down (and the attributes ``names`` of the plain
    objects there); True when ``c`` is one of them. Other holders: NOTE [other holders]."""
    if id(c) in checks.grown:
        # what the function does with it needs none of its items, and whatever list the place
        # holds at a call is the one grown (``Region._append``; the checker: still a list)
        return True
    if type(c) is tuple or (isinstance(c, tuple) and hasattr(c, "_fields")):
        # a tuple (a namedtuple) holding lists or dicts (``STATE = ([], {"k": 1.0})``): those
        # are read through it like a container's entries (``STATE[1]["k"]`` changed between
        # calls was read at its traced value: round-32's adversarial tests). Only when it holds
        # some: one of tensors (an LSTM's ``(h, c)``, rebound by every call) is not guarded by
        # identity at its place, its tensors are followed as they are elsewhere.
        inner = [(i, e) for i, e in enumerate(c) if type(e) in (list, dict) or (
            isinstance(e, tuple) and not _scalar_tuple(e)) or (names is not None and _plain_object(e))]
        guarded = place is not None and _guarded_place(place, checks)
        if guarded:
            # a tensor in it that the program reads: a new tuple bound at this place between
            # calls (``G = (w2,)``, a function's ``__defaults__``) holds another input while
            # the old one may live on elsewhere (no orphaned storage to see); the place must
            # still hold that tensor at that index (a tuple rebuilt of the same tensors does)
            for i, e in enumerate(c):
                if isinstance(e, Tensor) and id(e._st) in checks.pinned:
                    checks.append((_Probe(functools.partial(_tuple_holds, place[0], place[1], i, weakref.ref(e))),
                                   None, True, None))
        if not inner or depth <= 1:
            return False
        if guarded:
            checks.append((*place, c, _IDENTITY))
        view = _ListMap(c)
        for i, e in inner:
            if not _guard_container(e, checks, seen, depth - 1, names, (view, i)) and names is not None:
                _guard_held(e, _object_names(type(e), names), checks, seen, (view, i))
        return True
    held = _entries(c)
    if held is None:
        return False
    if place is not None and _guarded_place(place, checks):
        # that ``place`` (``(mapping, key)``) still holds this very container: a new list or
        # dict bound there between calls (``self.idx = [1, 2]``, ``cfg["sizes"] = [3]``, a
        # list of tensors) is not the one whose entries are guarded below, and was read at its
        # traced value (round-32's adversarial tests)
        checks.append((*place, c, _IDENTITY))
    if id(c) in seen:
        return True
    if len(c) > _GUARD_DICT_MAX and held[1] is not None and not isinstance(c, weakref.WeakKeyDictionary):
        seen.add(id(c))
        mapping = isinstance(c, collections.abc.Mapping)
        scalars = type(c) in (dict, list) and all(type(v) in _SCALARS for v in (c.values() if mapping else c))
        checks.append((_unchanged(c) if scalars else _same_entries(c, mapping), None, True, None))
        return True
    seen.add(id(c))
    if isinstance(c, dict) and any(type(k) is Tensor for k in c):     # NOTE [tensors compared by identity]
        checks.unread.append((c, KEYS))
    # its length too: a key added (``cfg.get("scale", 1.0)``), a tensor appended to a list the
    # function loops over
    checks.append((_Len(c), None, len(c), None))
    items, view = held
    if view is None:         # a set: by its contents
        checks.append((_Same(c), None, set(c), None))
        return True
    for k, v in list(items):
        if not _guard_value(view, k, v, checks) and depth > 1 \
                and not _guard_container(v, checks, seen, depth - 1, names, (view, k)) and names is not None:
            _guard_held(v, _object_names(type(v), names), checks, seen, (view, k))
    return True


# NOTE [other holders]: values are read through more than dicts and lists, and each is guarded
# where it is read from: a ChainMap, a WeakKeyDictionary (by weak references to its keys), a
# MappingProxy or any other Mapping (by ``get``, as a dict), a deque (by index), a set (by its
# contents: ``len(s)``, ``k in s``), ``os.environ``/``os.getenv`` (the environment's contents:
# one dict comparison), an enum member, a NumPy scalar, a class or a (named) tuple of those (by
# value or identity), an object inside a list (``cfgs[0].scale``: its attributes, as an
# object's). A plain object read through a variable, an entry or an attribute is also guarded
# by identity there: a new object bound in its place between calls (``cfg = Config(...)``,
# ``self.cfg = ...``) is not the one whose attributes the trace read. Attributes: a plain
# object's attribute count (``hasattr(cfg, "scale")`` False at trace: one added later is seen;
# a user module's too when its code calls ``hasattr``/``getattr``), and with ``getattr``/``vars``
# in the code (a name computed at run time) every attribute, its class's too. Flags: the ``requires_grad`` of a tensor no program reads (``if w.requires_grad``;
# a program input's flip: NOTE [requires_grad flips between calls]) and the ``training`` flag of a
# module the trace reads but did not call (``net[1].training``; called ones are the region's).
def _guarded_place(place, checks) -> bool:
    """Whether a container found at ``place`` is guarded by identity there: not at a place the
    program itself binds anew on every call (``self.hidden = [h, c]``: the carry follows it,
    NOTE [carried state])."""
    slot = _slot(*place)
    return slot is None or (id(slot[0]), slot[1]) not in checks.rebound


def _entries(c):
    """``(items, view)`` of a container the trace reads values from (``view.get(key)``: one
    value now); ``(None, None)`` for a set; None for anything else."""
    if isinstance(c, dict):
        return c.items(), c
    if isinstance(c, (list, collections.deque)):
        return enumerate(c), _ListMap(c)
    if type(c) is set:
        return None, None
    if isinstance(c, weakref.WeakKeyDictionary):     # keys held weakly by the guard too
        return [(weakref.ref(k), v) for k, v in list(c.items())], _WeakKeys(c)
    if isinstance(c, collections.abc.Mapping) and not isinstance(c, type(os.environ)):
        return list(c.items()), c
    return None


class _WeakKeys:
    """A WeakKeyDictionary read by weak references to its keys (a dead key: missing)."""

    __slots__ = ("c",)

    def __init__(self, c):
        self.c = c

    def get(self, ref, default):
        k = ref()
        return default if k is None else self.c.get(k, default)


class _Same:
    """An object read like a dict entry: itself (a set, compared with a copy)."""

    __slots__ = ("c",)

    def __init__(self, c):
        self.c = c

    def get(self, _key, default):
        return self.c


def _layout(t):
    try:
        v = t._value
    except Exception:    # a sparse COO tensor has no dense value: its public shape and dtype
        return tuple(t.shape), t.dtype
    # the view chain: strides and storage offset (``set_`` to a transposed tensor keeps the shape)
    return v.shape, v.dtype, t._chain


class _Layout:
    """The shape, dtype and view chain of the tensor a place holds, read like the place's entry."""

    __slots__ = ("d",)

    def __init__(self, d):
        self.d = d

    def get(self, k, default):
        t = self.d.get(k, default)
        return _layout(t) if isinstance(t, Tensor) else t


class _FlagOf:
    """The ``requires_grad`` flag of one tensor (held weakly), read like a place's entry."""

    __slots__ = ("ref",)

    def __init__(self, t):
        self.ref = weakref.ref(t)

    def get(self, k, default):
        t = self.ref()
        return default if t is None else t._rg


def flag_guards(read, readers) -> list:
    """Checks (for ``guard_code``) of the ``requires_grad`` flags the traced Python read
    (``read``: the tensors from outside, ``Capture.rg_reads``), except those of the tensors the
    program reads (``readers``: ids; NOTE [requires_grad flips between calls] follows them)."""
    return [(_FlagOf(t), None, t._rg, None) for t in read if id(t) not in readers]


class _RequiresGrad:
    """The ``requires_grad`` flag of the tensor a place holds, read like the place's entry."""

    __slots__ = ("d",)

    def __init__(self, d):
        self.d = d

    def get(self, k, default):
        t = self.d.get(k, default)
        return t._rg if isinstance(t, Tensor) else t


class _Len:
    """A container's length read like a dict entry (for ``guard_code``)."""

    __slots__ = ("c",)

    def __init__(self, c):
        self.c = c

    def get(self, _key, default):
        return len(self.c)


class _ListMap:
    """A list read like a dict of its indices (for ``guard_code``)."""

    __slots__ = ("lst",)

    def __init__(self, lst):
        self.lst = lst

    def get(self, i, default):
        return self.lst[i] if i < len(self.lst) else default


def _scalar_tuple(t, depth=2):
    """A tuple (a namedtuple too) of numbers, strings, bools and the other values compared by
    value or identity (``_atom``: enum members, slices...), nested up to ``depth``."""
    return all(_atom(e) or (isinstance(e, tuple) and depth > 0 and _scalar_tuple(e, depth - 1)) for e in t)


def _atom(v) -> bool:
    """A value compared by value or identity: a number, string or bool, one of ``_ATOMS`` (an
    enum member, a NumPy scalar, a function or class), and the index values a trace bakes in as
    they are: ``Ellipsis``, a ``range``, a ``slice`` of numbers (``y[self.window]`` with
    ``self.window = slice(1, 4)`` rebound between calls was frozen: round-32's adversarial tests),
    a frozenset of those."""
    return (type(v) in _SCALARS or isinstance(v, _ATOMS) or v is Ellipsis or type(v) is range
            or (type(v) is slice and all(type(e) in _SCALARS or isinstance(e, np.integer)
                                         for e in (v.start, v.stop, v.step)))
            or (type(v) is frozenset and all(type(e) in _SCALARS or isinstance(e, _ATOMS) for e in v)))


class _Probe:
    """A value computed on every check, read like a dict entry: whether a place still holds
    one tensor (held weakly), whether a large container still equals its copy, an
    ``lru_cache``'s size."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def get(self, _key, default):
        return self.fn()


def _holds(d, k, t):
    ref = weakref.ref(t)        # a guard keeps no tensor alive
    return _Probe(lambda: d.get(k, _MISSING) is ref())


def _tuple_holds(d, k, i, ref):
    c = d.get(k, _MISSING)
    return isinstance(c, tuple) and len(c) > i and c[i] is ref()


def _unchanged(c):
    copy = c.copy()

    def equal():
        try:
            return c == copy
        except Exception:      # noqa: BLE001 -- a value whose comparison raises (a tensor put there)
            return False
    return _Probe(equal)


def _same_entries(c, mapping):
    """A large mapping or sequence of other values than numbers and strings: its keys, each
    holding the very object it held (compared by identity: ``==`` of a tensor entry is a tensor)."""
    keys = list(c) if mapping else None
    values = list(c.values()) if mapping else list(c)

    def same():
        if len(c) != len(values):
            return False
        if keys is None:
            return all(map(operator.is_, c, values))
        return all(map(operator.is_, c, keys)) and all(map(operator.is_, c.values(), values))
    return _Probe(same)


class _Attributes:
    """An object's attributes read like a dict (for ``guard_code``)."""

    __slots__ = ("o",)

    def __init__(self, o):
        self.o = o

    def get(self, k, default):
        return getattr(self.o, k, default)


_CellMap = CellSlot      # a closure cell read like a one-entry dict (for ``guard_code``)


def _guard_value(d, k, v, checks) -> bool:
    """Add the check of ``d[k]`` (value ``v``) when it is a number, string or bool (an enum
    member, a NumPy scalar, bytes), a function or class (by identity: rebinding it calls
    another), a NumPy array (by its bytes: the trace bakes its contents, changed in place or
    not), or a tensor no program reads (its ``requires_grad``: NOTE [other holders])."""
    if _atom(v) or (isinstance(v, tuple) and _scalar_tuple(v)):
        checks.append((d, k, v, _SIGNED_ZERO if type(v) is float and not v else
                       _NAN if isinstance(v, float) and v != v else None))
        if isinstance(v, functools.partial):     # its keywords are a dict changed in place
            checks.append((_Len(v.keywords), None, len(v.keywords), None))
            for name, a in v.keywords.items():
                _guard_value(v.keywords, name, a, checks)
    elif isinstance(v, np.ndarray):
        checks.append((d, k, v, hash(v.tobytes())))
    elif isinstance(v, (array.array, bytearray, memoryview)):
        # by its bytes too (``hist[0]`` of an ``array.array`` bumped between calls was read at
        # its traced value: round-32's adversarial tests)
        checks.append((d, k, v, _IDENTITY))
        checks.append((_Probe(lambda b=v: _bytes(b)), None, _bytes(v), None))
    elif isinstance(v, Tensor):
        if id(v._st) in checks.pinned:
            # an outside tensor the program reads: one bound here in its place between calls
            # is another input (the old one may live on in a list: no orphaned storage to see),
            # or the input itself (NOTE [tensors read by place])
            j = checks.followable.get(id(v._st))
            slot = _slot(d, k)
            if j is not None and slot is not None and type(v) is Tensor and not v._rg:
                checks.places.setdefault(j, []).append((slot, v))
            else:
                checks.append((_holds(d, k, v), None, True, None))
        elif id(v._st) not in _HELD:
            checks.append((_RequiresGrad(d), k, v._rg, None))
            checks.unread.append((d, k))
            # and what else the trace may have read of it as Python (``t.shape``, ``t.numel()``,
            # ``t.dtype``): a resize_, set_, t_ or ``.data =`` between calls was frozen
            # (round-15's adversarial tests). Not for an attribute the region guards by shape
            # itself: the trace may have rebound it (a mask remade for a new length), and the
            # tensor found there now is not the one a call finds
            if (id(d), k) not in checks.by_shape:
                checks.append((_Layout(d), k, _layout(v), None))
    elif isinstance(v, Generator):
        # a generator the trace drew from is program state by identity (its key an input and
        # output): another one bound in its place between calls (``cur["g"] = g_eval``, both
        # kept alive) made the program go on drawing from the old one
        checks.append((_holds(d, k, v), None, True, None))
    else:
        return False
    return True


# ``numbers.Number``: the other immutable numbers (``fractions.Fraction``, ``decimal.Decimal``),
# compared by value, and the immutable ``datetime`` values: a ``Decimal`` scale or a
# ``timedelta`` rebound between calls was frozen (round 33)
_ATOMS = _FUNCTIONS + (type, enum.Enum, np.generic, bytes, numbers.Number, datetime.date, datetime.time,
                       datetime.timedelta)


def _bytes(b):
    """A byte buffer's contents now (None for a memoryview whose buffer was released)."""
    try:
        return bytes(b)
    except ValueError:
        return None


def _slot(d, k):
    """The ``(container, key)`` place (``carry.get``/``put``) behind a guard's view ``d``, or
    None for a view that is not one (an attribute probe, a weak-keyed mapping)."""
    if type(d) is dict:
        return d, k
    if type(d) is _ListMap and type(d.lst) is list:
        return d.lst, k
    if type(d) is _CellMap:
        return d.cell, None
    return None


# NOTE [tensors read by place]: a storage the program only reads (not written by it, no tensor
# over it requiring grad), found through places of the function's Python state (``memory[i]``
# of a replay memory refilled between calls, views of one stacked batch among them; a global
# rebound to a new tensor), is read as eager reads it: over whatever storage those places'
# tensors share at each call, when they are views of it in the traced way (the same view
# chains) and it has the traced shape and dtype (``Region.check`` follows it, as a carried
# hidden state: NOTE [carried state]); not a new trace for every new tensor. Only when no
# other tensor over it could be read elsewhere (every tensor over the storage sits in one of
# those places, but the base those views were taken from when only they refer to it: a
# trace-time scan of the heap) and each place holds a tensor of its own: otherwise its places
# are guarded by identity.
def _followed(checks):
    """``[(input index, slots, chains)]`` of the ``checks.followable`` storages whose places
    may follow; the other storages' places are guarded by identity."""
    places = checks.places or {}
    ok = {j: found for j, found in places.items() if len({id(v) for _, v in found}) == len(found)}
    seen = {id(v) for found in ok.values() for _, v in found}
    bases = {id(v._base): v._base for found in ok.values() for _, v in found
             if v._base is not None and id(v._base) not in seen}
    counts = _tensor_counts([found[0][1]._st for found in ok.values()], _only_bases(bases))
    out = []
    for j, found in places.items():
        if j in ok and counts.get(id(found[0][1]._st)) == len(found):
            out.append((j, tuple(slot for slot, _ in found), tuple(v._chain for _, v in found)))
            continue
        for (c, k), v in found:
            view = _CellMap(c) if k is None and isinstance(c, types.CellType) else _ListMap(c) if type(c) is list else c
            checks.append((_holds(view, k, v), None, True, None))
    return out


def _only_bases(bases):
    """The ids of the tensors among ``bases`` (id -> tensor) that nothing but their views
    refers to (``data.unbind(0)`` put in a list: the batch itself is no longer reachable)."""
    out = set()
    for k in list(bases):
        query = (bases[k],)
        for r in gc.get_referrers(*query):
            if r is not bases and r is not query and not (isinstance(r, Tensor) and r._base is query[0]):
                break
        else:
            out.add(k)
    return out


def _tensor_counts(storages, bases):
    """id(storage) -> how many tensors refer to it, not counting the tensors ``bases`` (ids) of
    views (a trace-time scan of the heap)."""
    if not storages:
        return {}
    wanted = {id(st) for st in storages}
    counts = dict.fromkeys(wanted, 0)
    for r in gc.get_referrers(*storages):
        if isinstance(r, Tensor) and id(r._st) in wanted and id(r) not in bases:
            counts[id(r._st)] += 1
    return counts


def value_guards(fn, refs, modules, names=(), pinned=frozenset(), followable=None, by_shape=frozenset(),
                 rebound=frozenset(), grown=frozenset()):
    """The ``(mapping, key, value)`` checks of NOTE [Python values read] for a trace of ``fn``
    that called ``modules`` and reads ``refs`` (``names``: per ref, the names the code reading
    it loads, from ``python_refs``; ``pinned``: ids of the storages the program reads as inputs,
    whose tensors' places are guarded by identity; ``followable``: id -> input index of those a
    place may follow instead, NOTE [tensors read by place]; ``by_shape``: ``(id(dict), name)``
    of the module attributes the region guards by the shape the call finds, NOTE [module tensor
    attributes]; ``rebound``: ``(id(container), key)`` of the places the program binds anew on
    every call, whose containers are not guarded by identity; ``grown``: ids of the lists the
    program's runs append to, not guarded at all). Returns the checks, the
    ``(input index, slot)`` places to follow and the places of the tensors no program reads
    (NOTE [tensors compared by identity])."""
    checks, seen, classes = _Checks(), set(), {}
    checks.called, checks.pinned, checks.by_shape = {id(m) for m in modules}, pinned, by_shape
    checks.rebound, checks.grown = rebound, grown
    checks.followable, checks.places, checks.unread = followable or {}, {}, []
    f = getattr(fn, "__func__", fn)
    if isinstance(f, types.FunctionType):
        # ``step.__defaults__ = (new_tensor,)``: the trace read (and may have lifted) the old ones
        for k in ("__defaults__", "__kwdefaults__"):
            if getattr(f, k) is not None:
                checks.append((_Attributes(f), k, getattr(f, k), _IDENTITY))
    code_names = _code_names(f.__code__, set()) if isinstance(f, types.FunctionType) else set()
    operators = operator_methods(f.__code__, set()) if isinstance(f, types.FunctionType) else set()
    for used in names or ():
        code_names |= used
    for m in modules:
        code_names |= _class_names(type(m))
        fwd = getattr(getattr(type(m), "forward", None), "__code__", None)
        if fwd is not None and _user_class(type(m)):
            operator_methods(fwd, operators)
    _guard_tensor_methods(code_names, checks, operators)
    for m in modules:
        if type(m) not in classes:          # the helpers a user module's methods call
            classes[type(m)] = loaded = set()
            # the ``forward`` its class resolves to, by identity: a library class's method
            # patched between calls (``nn.Linear.forward = lora_forward``) ran the traced one
            # (round-32's adversarial tests; a user class's own attributes are guarded below)
            fwd = getattr(type(m), "forward", None)
            if fwd is not None:
                checks.append((_Attributes(type(m)), "forward", fwd, _IDENTITY))
            for ref, used in zip(*python_refs(None, _user_methods(type(m)), loaded)):
                _guard_ref(ref, used, checks, seen)
        # the names its class's methods load, and those of the helpers they call, which may
        # read the module's attributes through a parameter (``scale(self, x)``: NOTE
        # [attributes read by helpers] in pystate.py)
        _guard_object(m, _class_names(type(m)) | classes[type(m)], checks, seen)
        _guard_held(m, (), checks, seen)       # ``self.drop.training`` of a submodule not called
        _guard_globals(_class_globals(type(m)), checks, seen)
    for ref, used in zip(refs, names or [frozenset()] * len(refs)):
        _guard_ref(ref, used, checks, seen)
    follows = _followed(checks)
    return tuple(checks), follows, tuple(checks.unread)


# NOTE [tensors compared by identity]: a tensor argument becomes a stand-in while tracing, so
# Python that compares it by identity with a tensor of the function's state that the program
# never reads as data (``if x is ref``) takes the other branch and bakes it in (round-17's
# adversarial tests). The places of those tensors (and of the tensors keying a dict) the guards
# found are kept: a call that passes one of them as a data argument runs eagerly (this call
# only), whether it traces or finds a program. By identity, not by memory: a view of such a
# tensor passed in (``step(X[i:j])`` while the step reads ``len(X)``) keeps its program, so
# ``x._base is ref`` is still answered by the stand-in (round-17's strict xfail).
KEYS = object()     # an ``unread`` place's key marker: the tensors among the dict's keys


def unread_identity(places, leaves, kinds):
    """The index of the first data argument (``kinds``, ``classify_args``) that is one of the
    tensors at the ``places`` NOTE [tensors compared by identity] keeps, or None."""
    found = set()
    for d, k in places:
        if k is KEYS:
            found.update(id(t) for t in list(d) if isinstance(t, Tensor))
        else:
            v = d.get(k, None)
            if isinstance(v, Tensor):
                found.add(id(v))
    for i, (a, kind) in enumerate(zip(leaves, kinds)):
        if kind == "data" and id(a) in found:
            return i
    return None


def optimizer_state_guards(optimizers, pinned):
    """Checks (for ``guard_code``) that each tensor in an optimizer's per-parameter state over
    a storage the program reads (``pinned``: ids) is still the one the trace read, reached
    through ``opt.state[p]`` on every call. The caller may bind a new tensor there between
    calls (``opt.state[p]["step"] = torch.tensor(10.)``, a new ``exp_avg`` or state dict)
    while still holding the old one (a list of snapshots): the orphan guard then sees nothing
    and the program would keep updating the old tensor. Parameters and tensors are held
    weakly: a guard must not keep the old state alive (the orphan guard drops a region whose
    storages only regions hold, after ``load_state_dict``)."""
    checks = []
    for o in optimizers:
        state = getattr(o, "state", None)
        if not isinstance(state, dict):
            continue
        entries = []
        for p, d in list(state.items()):
            if not isinstance(d, dict):
                continue
            refs = tuple((k, weakref.ref(v)) for k, v in d.items() if isinstance(v, Tensor) and id(v._st) in pinned)
            if refs:
                try:
                    entries.append((weakref.ref(p), refs))
                except TypeError:     # a key that is no tensor (a user optimizer's own state)
                    continue
        if entries:
            checks.append((_Probe(functools.partial(_state_holds, o, tuple(entries))), None, True, None))
    return tuple(checks)


def _state_holds(o, entries) -> bool:
    state = o.state
    for p_ref, refs in entries:
        p = p_ref()
        d = state.get(p) if p is not None else None
        if not isinstance(d, dict):
            return False
        for k, ref in refs:
            t = ref()
            if t is None or d.get(k) is not t:
                return False
    return True


_TENSOR_NS = vars(Tensor)      # a live view of the class dict


def _guard_tensor_methods(used, checks, operators=frozenset()):
    """A method set on ``tracegrad.Tensor`` between calls (``Tensor.twice = ...``, a patched
    ``Tensor.relu``) that the traced code names, or the special method of an operator it uses
    (``operators``: ``Tensor.__mul__`` for ``a * b``): its entry in Tensor's class dict, by
    identity (one check per such name; a metaclass seeing every class write would slow
    ``isinstance`` of every op's arguments)."""
    for k in used:
        if not k.startswith("__") and hasattr(Tensor, k):
            checks.append((_TENSOR_NS, k, _TENSOR_NS.get(k, _MISSING), None))
    for k in operators:
        if hasattr(Tensor, k):
            checks.append((_TENSOR_NS, k, _TENSOR_NS.get(k, _MISSING), None))


_BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv", "%": "mod", "**": "pow",
           "@": "matmul", "&": "and", "|": "or", "^": "xor", "<<": "lshift", ">>": "rshift"}
_COMPARE = {"<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__", "==": "__eq__", "!=": "__ne__"}
_UNARY = {"UNARY_NEGATIVE": "__neg__", "UNARY_POSITIVE": "__pos__", "UNARY_INVERT": "__invert__",
          "BINARY_SUBSCR": "__getitem__", "STORE_SUBSCR": "__setitem__"}


def operator_methods(code, out):
    """The special methods the operators in ``code`` (and the functions nested in it) call on
    a tensor operand: ``a * b`` -> ``__mul__``/``__rmul__``, ``a += b`` -> ``__iadd__`` too."""
    for ins in dis.get_instructions(code):
        if ins.opname == "BINARY_OP":
            op = ins.argrepr
            augmented = op.endswith("=")       # ``a += b``: BINARY_OP's argrepr is "+="
            name = _BINARY.get(op[:-1] if augmented else op)
            if name is not None:
                out.update((f"__{name}__", f"__r{name}__"))
                if augmented:
                    out.add(f"__i{name}__")
        elif ins.opname == "COMPARE_OP":
            name = _COMPARE.get(ins.argrepr)
            if name is not None:
                out.add(name)
        elif ins.opname in _UNARY:
            out.add(_UNARY[ins.opname])
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            operator_methods(c, out)
    return out


def _guard_ref(ref, used, checks, seen):
    name, cell, g = ref
    if cell is None and name not in g:        # a global not defined yet: defining it traces again
        checks.append((g, name, _MISSING, None))
        return
    v = _value(cell, g, name)
    holder = None if cell is None and len(g) == 1 else _CellMap(cell) if cell is not None else g
    if holder is None or not _guard_value(holder, name, v, checks) or isinstance(v, type):
        if _guard_container(v, checks, seen, names=used, place=None if holder is None else (holder, name)):
            pass
        elif isinstance(v, types.ModuleType):
            _guard_namespace(vars(v), used, checks, seen)
        elif isinstance(v, type) and v.__module__.split(".")[0] not in ("tracegrad", "builtins"):
            # and what the class's own methods read from it: a custom Function's backward
            # reading ``ScaleGrad.scale`` (the step's code names only ``apply``)
            _guard_namespace(v.__dict__, frozenset(used) | _class_names(v), checks, seen)
        else:
            _guard_held(v, _object_names(type(v), used), checks, seen, None if holder is None else (holder, name))


def _followed_module(m) -> bool:
    """A submodule whose names ``_guard_namespace`` guards too: the user's own modules and
    ``tracegrad.backends``'s flags (not tracegrad's op namespaces: their functions never
    change and would only add identity checks)."""
    name = getattr(m, "__name__", "")
    return name.startswith("tracegrad.backends") or name.split(".")[0] not in _LIBRARIES


_LIBRARIES = frozenset({"tracegrad", "builtins", "numpy", "jax", "jaxlib", "torch", "math", "os", "sys",
                        "functools", "itertools", "collections", "typing", "types", "operator"})


def _guard_namespace(ns, names, checks, seen):
    """A Python module's or a user class's attributes among ``names`` (``config.SCALE``,
    ``Config.SCALE``): guarded as globals are."""
    if id(ns) in seen:
        return
    seen.add(id(ns))
    for k in names:
        if k in ns and not k.startswith("__"):
            v = ns[k]
            if _guard_value(ns, k, v, checks) or _guard_container(v, checks, seen, place=(ns, k)):
                continue
            if isinstance(v, types.ModuleType):
                if _followed_module(v):
                    # ``torch.backends.cudnn.enabled``, ``config.train.SCALE``: a flag read through
                    # a submodule was baked in unguarded (round-15's adversarial tests)
                    _guard_namespace(vars(v), names, checks, seen)
            elif not isinstance(v, type):
                # an object held there (``Trainer.model``, ``config.net``): as in a variable
                _guard_held(v, _object_names(type(v), names), checks, seen, (ns, k))
    if ns is vars(os) and not names.isdisjoint(("environ", "getenv")):
        # ``os.environ[...]``, ``os.getenv(...)``: the environment as a whole (one comparison)
        env = getattr(os.environ, "_data", None)
        if isinstance(env, dict):
            checks.append((_Same(env), None, dict(env), None))


def outside_containers(refs) -> dict:
    """``id -> (container, check)`` for the lists and dicts the function can reach that existed
    before the call (in its closure cells and globals, on the plain objects among them, in
    the containers there, ``_GUARD_DEPTH`` levels down). One the function returns is returned
    as itself, as eagerly, not as a copy; ``check`` (for ``guard_code``) says its place still
    holds that very object."""
    out = {}

    def walk(v, place, depth):
        if type(v) not in (list, dict) or id(v) in out:
            return
        out[id(v)] = (v, (*place, v, _IDENTITY))
        if depth > 1 and len(v) <= _GUARD_DICT_MAX:
            view = v if type(v) is dict else _ListMap(v)
            for k, a in list(v.items() if type(v) is dict else enumerate(v)):
                walk(a, (view, k), depth - 1)
    for name, cell, g in refs:
        if cell is None and len(g) == 1:
            continue            # a one-object holder (an argument, the bound object): no place
        v = _value(cell, g, name)
        walk(v, (_CellMap(cell) if cell is not None else g, name), _GUARD_DEPTH)
        if _plain_object(v):
            d = attributes(v)
            for k, a in list(d.items()):
                walk(a, (d, k), _GUARD_DEPTH - 1)
    return out


_IDENTITY = "identity"     # a check's marker: the place holds this very object
_SIGNED_ZERO = "signed zero"     # a check's marker: a zero float, compared with its sign
_NAN = "nan"                     # a check's marker: a NaN (NaN != NaN): any NaN of its type


def changed_values(region) -> list:
    """Names (``the global 'step'``, ``the entry 'n' of a dict``, ``the attribute 'scale' of a
    Cfg``, ``the defaults of Agent.act``) of the Python numbers, strings, bools and NumPy arrays
    ``region``'s program was traced with that hold another value now: what made a call miss it,
    for the ``cache_size_limit`` warning (a counter the step reads, advanced between calls,
    traces a program per value; so does a replay buffer's array refilled between calls).

    NOTE [repeated names in the scalar signature]: ``py_scalars`` (``scalar_signature``) has
    one entry per ref that held a number when traced, in the refs' order, and names repeat: two
    helpers' ``__defaults__`` (an agent's ``select_action(..., is_evaluation=False)`` and its
    ``evaluation(..., steps=None)``). Matched by name through a dict, one helper's defaults were
    compared with the other's, and the warning blamed "the global '__defaults__'" for a call the
    replay buffer's arrays missed. The entries are walked beside the refs instead."""
    out = []
    sig, j = region.py_scalars, 0
    for name, cell, g in region.py_refs:
        if j >= len(sig) or sig[j][0] != name:
            continue
        was, j = sig[j][1], j + 1
        now = _value(cell, g, name) if cell is not None else g.get(name, _MISSING)
        if type(now) is list:       # recorded as a tuple (``scalar_signature``)
            now = tuple(now)
        if _differs(now, was):
            out.append(_ref_name(name, cell, g))
    for d, k, v, how in region.value_guards:
        if type(how) is int:        # a NumPy array, guarded by its bytes (``_guard_value``)
            try:
                now = d.get(k, _MISSING)
                same = now is v and hash(now.tobytes()) == how
            except Exception:     # noqa: BLE001 -- a property that raises now
                continue
            if not same:
                out.append(f"{_place_name(d, k)} (a NumPy array)")
            continue
        if how not in (None, _IDENTITY):
            continue
        try:
            now = d.get(k, _MISSING)
        except Exception:     # noqa: BLE001 -- a property that raises now
            continue
        if type(v) in _SCALARS or type(v) is tuple:
            if _differs(now, v):
                out.append(_place_name(d, k))
        elif _replaced(now, v):
            out.append(f"{_place_name(d, k)} (a new {type(now).__name__})")
    return out


def _replaced(now, was) -> bool:
    # another object of the object's own class (not a number, string or tuple)
    return now is not was and type(now) is type(was) and type(was) not in _SCALARS and type(was) is not tuple


# NOTE [plans after new objects]: a program reads the objects it was traced with (a model, an
# optimizer, a config) by identity. A new one of the same class in their place (a notebook cell
# that makes the model again, a compiled step defined in an earlier cell) is a new program;
# traced from the key's grown plan, it lifted the old objects' state as well as the new ones',
# so every model made again added its parameters to every later program (5 models: 20
# parameters lifted by the last program, for 4 used). Such a miss starts the trace from a fresh
# plan (``Plan.fresh``): the same two traces, and the program lifts what the function reads now.
# Only modules and optimizers (the objects whose tensors a plan lifts) count: a small object
# made again on every call (a config) misses its program anyway, and a fresh plan would cost
# each such call one more trace.
def holds_tensors(v) -> bool:
    # a module or an optimizer, read without running the object's own ``__getattr__`` (a
    # config class's raises KeyError for a missing name, or has side effects)
    try:
        return any(inspect.getattr_static(v, name, _MISSING) is not _MISSING for name in ("_parameters", "param_groups"))
    except Exception:     # noqa: BLE001 -- an object whose class lookup itself raises
        return False


def replaced_objects(region) -> list:
    """Weakrefs to the modules and optimizers ``region``'s program reads by identity from a
    place that now holds another one of that class (NOTE [plans after new objects]; NOTE
    [objects only programs hold] in orphans.py)."""
    out = []
    for d, k, v, how in region.value_guards:
        if (how is _IDENTITY or how is None) and holds_tensors(v):
            try:
                now = d.get(k, _MISSING)
            except Exception:     # noqa: BLE001 -- a property that raises now
                continue
            if _replaced(now, v):
                try:
                    out.append(weakref.ref(v))
                except TypeError:     # not weakly referenceable: never found gone
                    out.append(lambda: None)
    return out


def _ref_name(name, cell, g) -> str:
    """How ``changed_values`` names one of ``python_refs``' variables."""
    if cell is not None:
        return f"the closure variable '{name}'"
    fn = getattr(g, "fn", None)
    if name in ("__defaults__", "__kwdefaults__", "__signature__") and callable(fn):     # pystate._DefaultsMap
        return f"the defaults of {getattr(fn, '__qualname__', name)}"
    return f"the global '{name}'"


def _differs(now, was) -> bool:
    try:
        return now is not was and (type(now) is not type(was) or bool(now != was))
    except Exception:    # noqa: BLE001 -- a value whose comparison raises
        return True


def _place_name(d, k) -> str:
    if isinstance(d, _Attributes):
        return f"the attribute '{k}' of a {type(d.o).__name__}"
    if isinstance(d, CellSlot):
        return f"the closure variable '{k}'"
    if type(d) is dict and "__builtins__" in d:
        return f"the global '{k}'"
    if type(d) is dict:
        # an object's attributes are guarded in its ``__dict__``: name the object's class (a
        # search of the referrers, made once for the warning)
        owner = next((o for o in gc.get_referrers(d) if getattr(o, "__dict__", None) is d), None)
        if owner is not None:
            return f"the attribute '{k}' of a {type(owner).__name__}"
    if isinstance(d, (dict, _ListMap)):
        return f"the entry {k!r} of a {'dict' if isinstance(d, dict) else 'list'}"
    return f"a Python value ({k!r})" if isinstance(k, str) else "a Python value"
