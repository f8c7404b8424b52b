"""NOTE [returned objects]: plain objects a compiled function returns (a ``SimpleNamespace``, a
dataclass, a dict-subclass dataclass such as Hugging Face's ``ModelOutput``) are no pytree
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
the constant it was, as eagerly that same object is returned. So does one with a value that
is not a tensor, an immutable scalar, or a tuple/list/dict of those (a list from outside
inside it would come back as a copy), or without a ``__dict__``."""
from __future__ import annotations

import dataclasses
import gc
import types

import jax

from .._tensor.tensor import Tensor
from .carry import IMMUTABLE


class Rebuilt:
    """A returned object the call made, inside ``_flatten``: a pytree node whose children are
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


def _candidate(x) -> bool:
    t = type(x)
    if t is types.SimpleNamespace:
        return True
    return dataclasses.is_dataclass(x) and not isinstance(x, type) and isinstance(getattr(x, "__dict__", None), dict)


def _plain_value(v, depth=3) -> bool:
    """A value an object the call made may hold and still be rebuilt: tensors, immutable
    scalars, and tuples/lists/dicts of those (a few levels down)."""
    if isinstance(v, Tensor) or type(v) in IMMUTABLE or v is None:
        return True
    if depth and type(v) in (tuple, list):
        return all(_plain_value(e, depth - 1) for e in v)
    if depth and type(v) is dict:
        return all(_plain_value(e, depth - 1) for e in v.values())
    return False


def made_objects(result) -> set:
    """Ids of the objects in ``result`` (NOTE [returned objects]) that the call made."""
    containers, candidates = set(), []

    def walk(v, depth):
        t = type(v)
        if t in (list, tuple, dict) or (isinstance(v, tuple) and hasattr(t, "_fields")):
            if id(v) in containers or depth == 0:
                return
            containers.add(id(v))
            for e in (v.values() if t is dict else v):
                walk(e, depth - 1)
        elif _candidate(v) and id(v) not in containers:
            containers.update((id(v), id(vars(v))))
            candidates.append(v)
            for e in list(vars(v).values()) + (list(v.values()) if isinstance(v, dict) else []):
                walk(e, depth - 1)
    walk(result, 8)
    if not candidates:
        return set()
    made = set()
    for c in candidates:
        values = list(vars(c).values()) + (list(c.values()) if isinstance(c, dict) else [])
        if not all(_plain_value(v) or id(v) in containers for v in values):
            continue
        held = [r for r in gc.get_referrers(c)
                if not isinstance(r, types.FrameType) and id(r) not in containers and r is not candidates]
        if not held:
            made.add(id(c))
    return made


def as_node(x, made, convert):
    """``x`` as a ``Rebuilt`` node when the call made it (``made``), its values passed through
    ``convert``; None otherwise."""
    if not made or id(x) not in made:
        return None
    items = {k: convert(v) for k, v in x.items()} if isinstance(x, dict) else {}
    return Rebuilt(type(x), items, {k: convert(v) for k, v in vars(x).items()})


def build(r, convert):
    """A new object of ``r``'s class holding ``r``'s values passed through ``convert``."""
    obj = r.cls.__new__(r.cls)
    if r.items:
        # the builtin base's own __setitem__ (an OrderedDict's keeps its order; a user class's
        # may refuse, as ModelOutput's update() does)
        base = next(b for b in r.cls.__mro__ if b.__module__ in ("builtins", "collections"))
        for k, v in r.items.items():
            base.__setitem__(obj, k, convert(v))
    vars(obj).update({k: convert(v) for k, v in r.attrs.items()})
    return obj
