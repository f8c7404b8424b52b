"""Programs whose objects nothing but programs hold any more (NOTE [objects only programs hold]).

NOTE [objects only programs hold]
A program reads the modules and optimizers it was traced with by identity, and its region
holds them (its guards' constants, its module list, the optimizers whose hyper-parameters it
reads). A compiled step defined once and called after the user made a new model and optimizer
(a notebook cell run again) misses those programs for good -- but they kept the old model, its
parameters and the old optimizer's state alive, and counted toward ``cache_size_limit``, so the
fifth model made again sent the step to eager for good. torch's guards hold such objects weakly
and drop the cache entry when one dies. Here, when a call misses because such an object was
replaced (``guards.replaced_objects``: rare, on the way to a trace), the old objects are
checked: one that only the compiled function's own regions and plans refer to can never be
read again, and the regions that read it are dead (NOTE [dead programs] in compiler.py).

The check is exact or says "alive": ``gc.get_referrers`` gives the containers that refer to the
object, each reference is counted, and the object is gone for good only when every reference
``sys.getrefcount`` counts is in a container of the compiled function's regions and plans (a
reference from anywhere else, seen or not -- the user's list of models, a hook's closure, a C
object -- keeps it alive). Cost: one walk of the heap per object checked, tens of ms.
"""
from __future__ import annotations

import functools
import gc
import sys
import types


# a region's fields that hold the user's own values (what its guards compare with): only the
# tuples of their entries are the region's; a list among them may be the user's, and counting
# a user's list's references as the program's could call a model the user keeps in it gone
_USER_VALUES = frozenset({"value_guards", "state_guards", "py_refs", "py_scalars", "counters", "appends",
                          "attr_guards"})


def _ours(obj, out, lists=True, depth=0):
    """Collect the containers reachable from a region's field that the region made: tuples,
    lists (not under ``_USER_VALUES``), ``functools.partial`` objects and instances of this
    package's classes (a guard's probe, a place wrapper) with their attribute dicts. A user's
    dict or object among them is not entered: its references are the user's."""
    if depth > 6 or id(obj) in out:
        return
    t = type(obj)
    if t is tuple or (t is list and (lists or depth == 0)):
        out[id(obj)] = obj
        for e in obj:
            _ours(e, out, lists, depth + 1)
    elif t is functools.partial:
        out[id(obj)] = obj
        _ours(obj.args, out, False, depth + 1)
        if obj.keywords:
            out[id(obj.keywords)] = obj.keywords
    elif t.__module__.startswith(__package__ + ".") and not isinstance(obj, type):
        out[id(obj)] = obj
        d = getattr(obj, "__dict__", None)
        if d is not None:
            out[id(d)] = d
            for v in d.values():
                if type(v) is tuple or type(v) is functools.partial:
                    _ours(v, out, False, depth + 1)
        for name in getattr(t, "__slots__", ()):
            v = getattr(obj, name, None)
            if type(v) is tuple or type(v) is functools.partial:
                _ours(v, out, False, depth + 1)


def containers(regions, plans) -> dict:
    """id -> container for the containers the compiled function itself holds: its regions'
    and plans' attribute dicts, what ``_ours`` finds in them, the regions' generated guards'
    constants."""
    out = {}
    for r in regions:
        d = r.__dict__
        out[id(d)] = d
        for name, v in d.items():
            _ours(v, out, name not in _USER_VALUES)
        for ref in d.get("py_refs", ()):
            if _argument_place(ref):
                out[id(ref[2])] = ref[2]
        check = d.get("_checker")
        if isinstance(check, types.FunctionType):
            out[id(check.__globals__)] = check.__globals__
    for p in plans:
        d = p.__dict__
        out[id(d)] = d
        for v in d.values():
            if type(v) is dict or type(v) is list:
                out[id(v)] = v
    return out


def _argument_place(ref) -> bool:
    """Whether a ``python_refs`` entry (name, cell, dict) is the dict ``pystate`` made as the
    place of an argument or of the object a compiled method is bound to (``{"argument 0": m}``):
    the region's own, not a user's namespace."""
    name, cell, g = ref
    return cell is None and type(g) is dict and len(g) == 1 and name in g and (
        name == "self" or name.startswith("argument "))


def _count(container, obj) -> int:
    if type(container) is dict:
        return sum(v is obj for v in container.values()) + sum(k is obj for k in container)
    return sum(e is obj for e in container)


def held_only_by_programs(refs, inside) -> list:
    """The weakrefs among ``refs`` whose objects are referred to only from the containers
    ``inside`` (``containers``). One walk of the heap for all of them (``gc.get_referrers`` of
    several objects): a miss with another instance of each of a model's twelve layers checks
    eleven objects at once, not eleven walks."""
    index = {}
    for ref in refs:
        if ref() is not None:
            index.setdefault(id(ref()), len(index))
    if not index:
        return []
    # the only references this function holds: one each in ``targets`` (passed to
    # get_referrers as its very argument tuple, skipped there)
    targets = tuple(r() for r in {id(r()): r for r in refs if r() is not None}.values())
    counted = [0] * len(targets)
    alive = set()
    for r in gc.get_referrers(*targets):
        if r is targets or isinstance(r, types.FrameType):
            continue
        held = {index[i] for i in map(id, gc.get_referents(r)) if i in index}
        if inside.get(id(r)) is not r:
            alive |= held       # a reference from elsewhere
            continue
        for k in held:
            counted[k] += _count(r, targets[k])
    # references: ``targets``' own, getrefcount's argument, and those counted above (no
    # loop variable may hold one while counting)
    gone = {id(targets[k]) for k in range(len(targets))
            if k not in alive and sys.getrefcount(targets[k]) - 2 == counted[k]}
    targets = None
    return [ref for ref in refs if id(ref()) in gone]


def dead_regions(regions, plans, replaced, keys=()):
    """``(dead, gone)``: the regions among ``regions`` that read an object only the regions,
    ``plans`` and cache-key parts ``keys`` (tuples holding an argument object: NOTE [module
    arguments] in compiler.py) hold now, of ``replaced`` (weakrefs to the objects whose places
    hold others: ``guards.replaced_objects``), and the weakrefs to those objects."""
    inside = containers(regions, plans)
    for part in keys:
        inside[id(part)] = part
    gone = held_only_by_programs(replaced, inside)
    inside = None
    ids = {id(ref()) for ref in gone}       # alive: the regions hold them
    return [r for r in regions if any(id(v) in ids for _, _, v, _ in r.value_guards)], gone
