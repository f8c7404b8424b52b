"""NOTE [returned objects]: plain objects a compiled function returns (a ``SimpleNamespace``, a
dataclass (``slots=True`` too), a dict-subclass dataclass such as Hugging Face's ``ModelOutput``,
an instance of a plain user class, a distribution: ``_candidate``) are no pytree
containers, so the trace kept the traced call's object as a constant of the program: every
cached call handed back that one object, its tensors refreshed in place, so an object the
caller kept from an earlier call showed the latest call's values (eager: a new object per
call, over that call's tensors). One the call made is now a pytree node of the result
(``Rebuilt``): its tensors are results like any other, and each call builds a new object of
its class around them (``build``), without calling its ``__init__`` (a dataclass's
``__post_init__`` ran while tracing: its effect is in the values).

"Made by the call" is what no outside place can hold: after the trace, the object's only
referrers (``gc.get_referrers``) are frames and the result's own containers. One held
anywhere else (an attribute, a closure cell, a global, a list from before the call) stays
the constant it was, as eagerly that same object is returned. So does one holding containers
nested too deep. Other values it holds (a module, an object from outside) come back as
themselves."""
from __future__ import annotations

import collections
import dataclasses
import functools
import gc
import sys
import types

import jax

from .._tensor.tensor import Tensor
from .carry import IMMUTABLE


class Rebuilt:
    """A returned object the call made, inside ``call_tree.flatten``: a pytree node whose children are
    its dict items (a dict subclass) then its attributes, rebuilt per call by ``build``."""

    __slots__ = ("cls", "items", "attrs")

    def __init__(self, cls, items, attrs):
        self.cls, self.items, self.attrs = cls, items, attrs


def _children(r):
    return (list(r.items.values()) + list(r.attrs.values()),
            (r.cls, tuple(r.items), tuple(r.attrs)))


def _from_children(aux, values):
    cls, item_keys, attr_keys = aux
    n = len(item_keys)
    return Rebuilt(cls, dict(zip(item_keys, values[:n])), dict(zip(attr_keys, values[n:])))


jax.tree_util.register_pytree_node(Rebuilt, _children, _from_children)


_SLOTS: dict = {}      # class -> _slot_names (read on every call of a data container argument)


def _slot_names(cls) -> tuple:
    """The attribute names ``cls``'s ``__slots__`` (and its bases') declare, private names
    mangled as Python stores them."""
    names = _SLOTS.get(cls)
    if names is None:
        if len(_SLOTS) > 4096:
            _SLOTS.clear()
        names = _SLOTS[cls] = _declared_slots(cls)
    return names


def _declared_slots(cls) -> tuple:
    names = []
    if _exception_base(cls) is not None:
        # an exception's own state (NOTE [returned exceptions]), set in this order: setting
        # ``__cause__`` turns ``__suppress_context__`` on, so that one comes last
        names += ["args", "__context__", "__cause__", "__suppress_context__"]
    for c in cls.__mro__:
        slots = c.__dict__.get("__slots__", ())
        for n in ((slots,) if isinstance(slots, str) else slots):
            if n in ("__dict__", "__weakref__"):
                continue
            if n.startswith("__") and not n.endswith("__"):
                n = f"_{c.__name__.lstrip('_')}{n}"
            names.append(n)
    return tuple(names)


def _attrs(x) -> dict:
    """``x``'s instance attributes: its ``__dict__`` then the slots that are set."""
    out = dict(getattr(x, "__dict__", None) or {})
    for n in _slot_names(type(x)):
        try:
            out[n] = object.__getattribute__(x, n)
        except AttributeError:     # a slot never set stays unset
            pass
    return out


def _candidate(x) -> bool:
    """A returned object that may be rebuilt per call: a ``SimpleNamespace``, a dataclass (one
    with ``slots=True`` too), or an instance of a plain Python class (its ``__new__`` is
    ``object``'s; no Module, no Tensor, no library class). Round 33: a ``slots=True`` dataclass
    or a plain ``class Out`` the call made stayed the program's one object, so a result kept
    from an earlier call showed the latest call's tensors."""
    t = type(x)
    if t is types.SimpleNamespace:
        return True
    if _sequence_subclass(x) or t is types.MappingProxyType:      # NOTE [returned container subclasses]
        return True
    if isinstance(x, type) or not (isinstance(getattr(x, "__dict__", None), dict) or _slot_names(t)):
        return False
    if dataclasses.is_dataclass(x):
        return True
    mod = getattr(t, "__module__", "") or ""
    if getattr(t, "_tracegrad_result_object", False):
        # a library record class that opts in (nn.attention.SDPAParams): plain slots, no state
        return True
    if mod.startswith("tracegrad.distributions."):
        # Categorical(logits=model(x)): plain attributes (lazy ones cached there); by module name,
        # as this layer does not import the library's (DESIGN 2, tests/test_layering.py)
        return t.__new__ is object.__new__
    # ``_tracegrad_state_is_captured``: a Module, Optimizer or autograd Function (their state is
    # the region's, never rebuilt)
    return (t.__new__ is object.__new__ and not isinstance(x, (Tensor, BaseException))
            and not getattr(t, "_tracegrad_state_is_captured", False)
            and mod != "builtins" and not mod.startswith(("tracegrad.", "jax", "numpy")))


# NOTE [returned container subclasses]: an instance of a user's ``list``, ``tuple`` or ``dict``
# subclass (``class Batch(list)``, ``class Pair(tuple)``, ``class Out(dict)``, a ``Counter``)
# is no pytree container, so one the call made and returned was the trace's constant: every
# compiled call handed back that one object, its tensors refreshed in place, and a result the
# caller kept from an earlier call showed the latest call's values (eager: a new object per
# call; test_list.py's CustomNewTupleTests, round 36). One the call made is now rebuilt per
# call like a plain object (``Rebuilt``): its items (by position for a list or tuple, by key
# for a dict) and its instance attributes are its values; ``build`` makes it through the
# builtin base (``tuple.__new__(cls, items)``, ``list.__new__`` then ``list.extend``), never
# the class's ``__init__`` (its effect is in the values, as for a plain object). A class with
# its own ``__new__`` (a tuple subclass taking extra arguments), a ``defaultdict`` subclass (its
# factory is no attribute) and a ``deque`` (its ``maxlen`` neither) are not rebuilt: a trace
# returning one that holds tensors ends in a graph break (NOTE [returned objects that cannot be
# rebuilt]). namedtuples, and plain/ordered/default dicts, are pytree containers already. So is
# a set or frozenset the call made (``return {y}``, a set of ints the caller may change): each
# call builds its own (its items in the trace's iteration order; a set has no other). And a
# ``MappingProxyType`` over a dict the call made (both held by nothing else): a new read-only
# view of a new dict of that call's values.
_BASES = (list, tuple, dict, set, frozenset)


def _container_base(t):
    """``list``, ``tuple``, ``dict``, ``set`` or ``frozenset``: the builtin container class
    ``t`` derives from (None for none; a dict's ``collections`` subclasses derive from ``dict``)."""
    return next((b for b in _BASES if issubclass(t, b)), None)


def _user_container(x) -> bool:
    """An instance of a subclass of list, tuple or dict that is no pytree container (not a
    namedtuple, ``OrderedDict`` or ``defaultdict`` itself) and no library class, or a set or
    frozenset (no pytree container, subclass or not)."""
    t = type(x)
    if t is set or t is frozenset:
        return True
    if t in _BASES or t is collections.OrderedDict or t is collections.defaultdict or not isinstance(x, _BASES):
        return False
    if isinstance(x, tuple) and hasattr(t, "_fields"):
        return False
    mod = getattr(t, "__module__", "") or ""
    return not mod.startswith(("tracegrad", "jax", "numpy"))


def _sequence_subclass(x) -> bool:
    """A user container subclass instance (``_user_container``) ``build`` can make again: its
    class's ``__new__`` is its builtin base's."""
    return (_user_container(x) and type(x).__new__ is _container_base(type(x)).__new__
            and not isinstance(x, collections.defaultdict))     # (its factory is no attribute)


# NOTE [returned exceptions]: an exception object the call made and returns unraised
# (``return y, ValueError(1, 2, 3)``, its ``__context__`` set by hand) was no ``_candidate``
# (``__new__`` is BaseException's), so it stayed the trace's object: every compiled call handed
# back that one exception, a tensor in its ``args`` refreshed in place, so one the caller kept
# from an earlier call showed the latest call's tensor (eager: a new exception per call). One
# the call made is now rebuilt per call like a plain object: its ``args``, ``__context__``,
# ``__cause__``, ``__suppress_context__`` (``_declared_slots``) and ``__dict__`` are its
# values, and ``build`` makes it through its builtin base (``__new__`` and ``__init__`` with
# the args: what ``StopIteration.value`` or ``SystemExit.code`` hold), never the user
# class's ``__init__``. Not rebuilt (left as before): one that was raised (its traceback holds
# the trace's frames), a class with its own ``__new__``, and the builtin bases that keep
# state outside ``args`` given by keyword (``_KEYWORD_STATE``).
_KEYWORD_STATE = (ImportError, AttributeError, NameError, BaseExceptionGroup)


def _exception_base(cls):
    """The builtin exception class ``cls`` derives from when its instances can be rebuilt from
    their ``args`` (NOTE [returned exceptions]); None otherwise."""
    if not (isinstance(cls, type) and issubclass(cls, BaseException)) or issubclass(cls, _KEYWORD_STATE):
        return None
    base = next(b for b in cls.__mro__ if b.__module__ == "builtins")
    return base if cls.__new__ is base.__new__ else None


def result_candidate(x) -> bool:
    """A returned object that may be rebuilt per call: ``_candidate``, or an exception object
    not raised (NOTE [returned exceptions])."""
    if isinstance(x, BaseException):
        return x.__traceback__ is None and _exception_base(type(x)) is not None
    return _candidate(x)


def _plain_value(v, depth=3) -> bool:
    """A value an object the call made may hold and still be rebuilt: anything but a tuple,
    list or dict nested deeper than a few levels. Tensors become results; lists and dicts are
    walked (``made_objects``); any other object (a module, a function, an object held outside)
    comes back as itself, a constant, as eagerly the same object is referenced (round 33: an
    ``Out(loss, model)`` holding the module stayed the program's one object, so an ``Out``
    kept from an earlier call showed the latest call's loss). A function closing over the
    call's tensors is refused later (NOTE [returned closures] in ``results.py``)."""
    if depth and type(v) in (tuple, list):
        return all(_plain_value(e, depth - 1) for e in v)
    if depth and type(v) is dict:
        return all(_plain_value(e, depth - 1) for e in v.values())
    return type(v) not in (tuple, list, dict)


def values_of(x) -> list:
    """What an object holds that a rebuilt copy holds too: its attributes, then its items (a
    list or tuple subclass's elements: NOTE [returned container subclasses])."""
    return list(_attrs(x).values()) + _items(x)


def _items(x) -> list:
    if isinstance(x, (dict, types.MappingProxyType)):
        return list(x.values())
    return list(x) if isinstance(x, (list, tuple, set, frozenset, collections.deque)) else []


def made_objects(result) -> dict:
    """The objects in ``result`` (NOTE [returned objects]) that the call made, by id."""
    containers, candidates = set(), []

    def walk(v, depth):
        t = type(v)
        if t in (list, tuple, dict) or (isinstance(v, tuple) and hasattr(t, "_fields")):
            if id(v) in containers or depth == 0:
                return
            containers.add(id(v))
            for e in (v.values() if t is dict else v):
                walk(e, depth - 1)
        elif result_candidate(v) and id(v) not in containers:
            containers.add(id(v))
            if isinstance(getattr(v, "__dict__", None), dict):
                containers.add(id(vars(v)))
            candidates.append(v)
            for e in values_of(v):
                walk(e, depth - 1)
    walk(result, 8)
    if not candidates:
        return {}
    made = {}
    for c in candidates:
        values = values_of(c)
        if not all(_plain_value(v) or id(v) in containers for v in values):
            continue
        held = [r for r in gc.get_referrers(c)
                if not isinstance(r, types.FrameType) and id(r) not in containers
                and r is not candidates and r is not values]     # ``values``: an object holding itself
        if not held and type(c) is types.MappingProxyType:
            # the dict behind a read-only view: one held elsewhere is seen live through it
            held = _view_held(c, containers)
        if not held:
            made[id(c)] = c
    return made


def _view_held(view, containers) -> bool:
    """Whether the mapping behind the read-only ``view`` is referenced by anything but the view,
    frames and ``containers`` (a function of its own: a comprehension naming the caller's loop
    variable would make it a closure cell, one more referrer of the object it checks)."""
    inner = gc.get_referents(view)
    for m in inner:
        for r in gc.get_referrers(m):
            if r is not view and r is not inner and not isinstance(r, types.FrameType) and id(r) not in containers:
                return True
    return False


# NOTE [returned objects that cannot be rebuilt]: an object the call made whose class has its
# own ``__new__`` (a user class, or an exception class: NOTE [returned exceptions]) is no
# candidate -- ``build`` would have to call that ``__new__`` with arguments it does not know --
# so it stayed the program's constant: each compiled call handed back the traced call's object,
# its tensors refreshed in place, and an object kept from an earlier call silently showed the
# latest call's values. So did an exception raised and caught inside, then returned (its
# traceback holds the trace's frames: not rebuilt). A trace whose result reaches such an object
# holding a tensor now ends in a graph break (``unrebuilt_made``), and the call runs eagerly.
# Checked once per trace.


def _unrebuildable(v):
    """Why ``build`` cannot make ``v`` again: an exception that was raised (its traceback holds
    the trace's frames), or an instance of a user class (an exception class) with its own
    ``__new__``; None for anything else."""
    t = type(v)
    if isinstance(v, BaseException):
        if v.__traceback__ is not None:
            return "an exception raised inside the call"
        return None if _exception_base(t) is not None else "its class has its own __new__"
    if isinstance(v, collections.deque):
        return "a deque"
    if _user_container(v) and not _sequence_subclass(v):      # NOTE [returned container subclasses]
        return "a defaultdict subclass" if isinstance(v, collections.defaultdict) else "its class has its own __new__"
    return "its class has its own __new__" if _own_new(v) else None


def _own_new(v) -> bool:
    """An instance of a user class with its own ``__new__``."""
    t = type(v)
    mod = (getattr(t, "__module__", "") or "").partition(".")[0]
    # (containers -- dict, list, set subclasses: OrderedDict, defaultdict -- are flattened as
    # such; the standard library's and the libraries' own classes are left as they were)
    return (isinstance(getattr(v, "__dict__", None), dict) and t.__new__ is not object.__new__
            and not isinstance(v, (Tensor, type, dict, list, tuple, set, frozenset, types.FunctionType,
                                   types.MethodType, types.ModuleType))
            and not getattr(t, "_tracegrad_state_is_captured", False)
            and mod not in sys.stdlib_module_names and mod not in ("tracegrad", "jax", "jaxlib", "numpy"))


def unrebuilt_made(result):
    """The first object ``result`` reaches (through lists, tuples, dicts and the objects
    ``result_candidate`` accepts) that the call made, that holds a tensor, and that ``build``
    cannot make again, with why (``_unrebuildable``: NOTE [returned objects that cannot be
    rebuilt]); None when there is none."""
    seen, found = set(), []

    def walk(v, depth):
        if depth < 0 or id(v) in seen or isinstance(v, (Tensor, type, *IMMUTABLE)):
            return
        seen.add(id(v))
        if isinstance(v, collections.deque) or _user_container(v) and not _sequence_subclass(v):
            parts = values_of(v)
            if any(isinstance(p, Tensor) or isinstance(p, (list, tuple)) and any(isinstance(e, Tensor) for e in p)
                   for p in parts):
                found.append(v)
        elif isinstance(v, (list, tuple)):
            parts = list(v)
        elif type(v) is dict:
            parts = list(v.values())
        elif result_candidate(v):
            parts = values_of(v)
        elif _unrebuildable(v) is not None:
            parts = values_of(v)
            if any(isinstance(p, Tensor) or isinstance(p, (list, tuple)) and any(isinstance(e, Tensor) for e in p)
                   for p in parts + list(getattr(v, "args", ()))):
                found.append(v)
        else:
            return
        for p in parts:
            walk(p, depth - 1)
    walk(result, 8)
    for v in found:
        held = [r for r in gc.get_referrers(v)
                if not isinstance(r, types.FrameType) and id(r) not in seen and r is not found]
        if not held:
            return v, _unrebuildable(v)
    return None


def as_node(x, made, convert):
    """``x`` as a ``Rebuilt`` node when the call made it (``made``), its values passed through
    ``convert``; None otherwise."""
    if not made or id(x) not in made:
        return None
    if isinstance(x, (dict, types.MappingProxyType)):
        items = {k: convert(v) for k, v in x.items()}
    else:      # a list, tuple or set's elements, by position (NOTE [returned container subclasses])
        items = {i: convert(v) for i, v in enumerate(x)} if isinstance(x, (list, tuple, set, frozenset)) else {}
    return Rebuilt(type(x), items, {k: convert(v) for k, v in _attrs(x).items()})


def build(r, convert, register=None):
    """A new object of ``r``'s class holding ``r``'s values passed through ``convert``;
    ``register(obj)`` first, when given (an object holding itself: NOTE [one object returned
    twice] in ``call_tree.py``)."""
    if r.cls is types.MappingProxyType:     # a new view of a new dict (NOTE [returned container subclasses])
        obj = types.MappingProxyType({k: convert(v) for k, v in r.items.items()})
        if register is not None:
            register(obj)
        return obj
    base = _exception_base(r.cls)
    seq = _container_base(r.cls) if r.cls is not types.SimpleNamespace else None
    if seq is tuple or seq is frozenset:    # NOTE [returned container subclasses]: the items make it
        obj = seq.__new__(r.cls, [convert(v) for v in r.items.values()])
    elif base is None:
        obj = r.cls.__new__(r.cls)
    else:       # through the builtin base: the state its __init__ derives from args
        args = tuple(convert(r.attrs["args"]))
        obj = base.__new__(r.cls, *args)
        base.__init__(obj, *args)
    if register is not None:
        register(obj)
    if r.items and seq is list:
        list.extend(obj, [convert(v) for v in r.items.values()])
    elif r.items and seq is set:
        set.update(obj, [convert(v) for v in r.items.values()])
    elif r.items and seq is dict:
        # the builtin base's own __setitem__ (an OrderedDict's keeps its order; a user class's
        # may refuse, as ModelOutput's update() does)
        base = next(b for b in r.cls.__mro__ if b.__module__ in ("builtins", "collections"))
        for k, v in r.items.items():
            base.__setitem__(obj, k, convert(v))
    slots = _slot_names(r.cls)
    for k, v in r.attrs.items():
        if base is not None and k == "args":
            continue                        # set above, converted once
        if k in slots:                      # a frozen or slotted class's own __setattr__ bypassed
            object.__setattr__(obj, k, convert(v))
        else:
            vars(obj)[k] = convert(v)
    return obj


def refill(obj, convert):
    """Replace in place each value of ``obj`` (a made object built for this call) that
    ``convert`` changes (an argument's list put back: ``call_tree.fill_arg_boxes``); returns
    ``obj``, or a new one of its class for a tuple subclass whose items change (NOTE [returned
    container subclasses]: a tuple cannot change in place)."""
    if isinstance(obj, types.MappingProxyType):
        vals = {k: convert(v) for k, v in obj.items()}
        return obj if all(vals[k] is v for k, v in obj.items()) else types.MappingProxyType(vals)
    if isinstance(obj, (tuple, frozenset, set)):
        vals = [convert(v) for v in obj]
        if all(a is b for a, b in zip(vals, obj)):
            return obj
        if isinstance(obj, set):
            set.clear(obj)
            set.update(obj, vals)
            return obj
        new = (tuple if isinstance(obj, tuple) else frozenset).__new__(type(obj), vals)
        for k, v in _attrs(obj).items():
            object.__setattr__(new, k, convert(v))
        return new
    slots = _slot_names(type(obj))
    for k, v in _attrs(obj).items():
        new = convert(v)
        if new is not v:
            if k in slots:
                object.__setattr__(obj, k, new)
            else:
                vars(obj)[k] = new
    if isinstance(obj, dict):
        base = next(b for b in type(obj).__mro__ if b.__module__ in ("builtins", "collections"))
        for k, v in list(obj.items()):
            new = convert(v)
            if new is not v:
                base.__setitem__(obj, k, new)
    elif isinstance(obj, list):
        for k, v in enumerate(list(obj)):
            new = convert(v)
            if new is not v:
                list.__setitem__(obj, k, new)
    return obj


# NOTE [stateful objects returned]: a module is never rebuilt per call (its state is the
# region's: ``_candidate``), so one the call made and returned (``return model``, a
# ``BatchNorm1d`` run once and handed back) stayed the program's one object: every later
# compiled call returned the traced call's object, its state tensors refreshed in place, so
# objects the caller kept from earlier calls changed with the latest call (eager: a new object
# per call, each with state of its own). The trace notes the ids of the modules constructed
# while it runs (``Capture.made_modules``); one the result reaches makes the call run eagerly.
# One made and used only inside the call (``nn.Softmax(1)(x)``) is not returned and stays
# compiled. An optimizer made in the trace that outlives the call, returned or stored, is a
# graph break before this check (NOTE [optimizers made in a trace] in capture.py).


def returned_made(result, made: set, depth: int = 6):
    """The first module or optimizer whose id is in ``made`` that ``result`` reaches through
    tuples, lists, dicts, sets, ``functools.partial`` objects, closures and plain objects'
    attributes (NOTE [stateful objects returned]); None when it reaches none."""
    if not made:
        return None
    return _first_reached(result, lambda v: id(v) in made and getattr(type(v), "_tracegrad_state_is_captured", False),
                          depth)


# NOTE [classes made in a trace]: a class statement inside a compiled function (``class Foo:``
# in the body or in a helper it calls) runs once, while tracing (``guard_output`` in capture.py
# records the class: ``Capture.made_classes``). A result that is that class, or an instance of
# it, was the trace's class on every compiled call, where eager makes a new class per call
# (``cls not in seen``, ``type(a) is type(b)`` across calls differ). Such a result makes the
# call run eagerly; a class used only inside the function (a custom Function made per call)
# changes nothing a caller sees and stays traced.
def returned_class(result, made: dict, depth: int = 6):
    """The first class in ``made`` (by id), or instance of one, that ``result`` reaches the way
    ``returned_made`` walks it; None when it reaches none."""
    if not made:
        return None
    return _first_reached(result, lambda v: id(v) in made or id(type(v)) in made, depth)


def _first_reached(result, hit, depth):
    """The first object ``result`` reaches (NOTE [stateful objects returned]) for which
    ``hit(obj)`` holds; a class is checked but not walked into; None when there is none."""
    seen = set()

    def walk(v, depth):
        if id(v) in seen or depth < 0 or isinstance(v, (Tensor, *IMMUTABLE)):
            return None
        seen.add(id(v))
        if hit(v):
            return v
        if isinstance(v, type):
            return None
        if isinstance(v, dict):
            parts = list(v.values())
        elif isinstance(v, (tuple, list, set, frozenset)):
            parts = list(v)
        elif isinstance(v, functools.partial):
            parts = [v.func, *v.args, *v.keywords.values()]
        elif isinstance(v, types.FunctionType):
            parts = [c.cell_contents for c in v.__closure__ or () if _filled(c)]
        elif getattr(type(v), "_tracegrad_state_is_captured", False):
            return None      # a module or optimizer from outside: what it holds is outside state
        else:
            parts = list(_attrs(v).values()) if isinstance(getattr(v, "__dict__", None), dict) else []
        for p in parts:
            found = walk(p, depth - 1)
            if found is not None:
                return found
        return None
    return walk(result, depth)


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:       # a cell not yet assigned
        return False
    return True
