"""Tensors a compiled function binds to Python places that outlive the call.

NOTE [carried state]: ``carry["h"] = h.detach()`` (truncated BPTT), ``self.h = out.detach()``
on a module, ``nonlocal h; h = ...``, an EMA dict rebound to new tensors, ``stats["last"] =
loss.detach()``: eagerly, every call binds a *new* tensor holding that call's values to the
place, and the next call reads whatever tensor the place holds then. A compiled call keeps both
halves:

- the place is found by path: after the trace, the function's variables, the containers in
  them, plain objects' attributes (``pystate.snapshot``) and the attribute dicts of modules it
  set attributes on (``Capture.attr_stores``) are compared with what they held before; a place
  that now holds a tensor made in the trace is a ``Rebind``;
- after every call a new tensor with the call's value is bound there (a tensor the caller kept
  from an earlier call keeps its own values, as eagerly);
- when the place held, before the trace, a tensor the program reads (``carried``: the hidden
  state fed back), the program's input is whatever tensor the place holds at each call:
  ``Region.check`` follows it, so ``carry["h"] = torch.zeros(...)`` between calls (a new
  sequence) is read by the next call without a retrace, and a program never reads a tensor the
  place no longer holds.

A place may also hold a tuple, list or dict of tensors bound anew each call (``self.hidden =
(h, c)``, the LSTM tutorial's state; ``self.last = {"loss": loss.detach()}``): each tensor item is
a place of its own (``InSequence``), and binding one builds a new container, as eager's
assignment does (a tuple or dict the caller kept is never changed).

Places not found that way (a tensor reachable only through an object the scan does not look
into) fall back to ``carry_over``: the value is written into the same tensor on every call.
"""
from __future__ import annotations

import gc
import types

from .._tensor.tensor import Tensor, is_tensor_container
from .capture import GraphBreak
from .pystate import attributes


class Rebind:
    """Escape ``index`` of the program is bound, after each call, to the places ``slots``
    (``(container, key)``: a dict and its key, a list and its index, a cell and None); with
    ``carried`` set, program input ``carried`` is the tensor the first place holds, when it has
    ``read_rg`` (the ``requires_grad`` of the tensor the trace read there)."""

    __slots__ = ("index", "slots", "carried", "read_rg", "requires_grad", "kept_graph", "diff", "version",
                 "cls", "inference", "attrs")

    def __init__(self, index, slots, carried, requires_grad, kept_graph):
        # ``diff``: a differentiable output of the region's VJP (NOTE [kept graphs] in trace.py)
        self.diff = False
        self.index, self.slots, self.carried, self.read_rg = index, slots, carried, None
        self.requires_grad, self.kept_graph = requires_grad, kept_graph
        self.version = 0   # the bound tensor's version counter at the end of the trace
        # NOTE [what a rebound tensor keeps]: what eager's bound tensor is besides its value, for
        # every call's new one (each was lost, round-31's adversarial tests): its class (an
        # ``nn.Parameter(...)`` made inside), whether it was made under ``inference_mode()``
        # and the Python attributes the function set on it (``h.tag = "made"``)
        self.cls, self.inference, self.attrs = None, False, None


class InSequence:
    """The container of a slot ``(InSequence(place), j)``: item ``j`` of the tuple, list or dict
    that slot ``place`` holds; ``like``: ``(class, keys or length)`` of the one the trace bound
    there, for a call that finds no container at the place (``self.hidden = None`` between
    sequences: NOTE [places that held no tensor] in trace.py)."""

    __slots__ = ("place", "like")

    def __init__(self, place, like=None):
        self.place = place
        self.like = None if like is None else (type(like), tuple(like) if type(like) is dict else len(like))


def get(slot):
    c, k = slot
    if isinstance(c, InSequence):
        seq = get(c.place)
        if type(seq) is dict:
            return seq.get(k)
        return seq[k] if isinstance(seq, (tuple, list)) and k < len(seq) else None
    if isinstance(c, types.CellType):
        try:
            return c.cell_contents
        except ValueError:
            return None
    if isinstance(c, dict):
        return c.get(k)
    return c[k] if k < len(c) else None


def put(slot, value):
    c, k = slot
    if isinstance(c, InSequence):
        seq = get(c.place)
        if isinstance(seq, (tuple, list, dict)) or c.like is None:
            cls, items = type(seq), dict(seq) if type(seq) is dict else list(seq)
        else:      # a new container of the traced kind, its tensor items put one by one
            cls, size = c.like
            items = dict.fromkeys(size) if cls is dict else [None] * size
        items[k] = value
        put(c.place, cls._make(items) if hasattr(cls, "_fields") else cls(items))
    elif isinstance(c, types.CellType):
        c.cell_contents = value
    elif isinstance(c, dict):
        dict.__setitem__(c, k, value)     # dict's own: a module's stores, a user dict subclass
    else:
        c[k] = value


def attribute_places(modules, storages, attr_stores, carried):
    """NOTE [module tensor attributes]: a plain tensor attribute of a module the trace called
    (``self.src_mask``, a cache remade when the length changes: word_language_model's
    Transformer) is read by place, as eager reads it on every call, not by identity:

    - ``guards``: ``(dict, name, shape, dtype)`` of each such attribute as the call found it;
      the region runs only while the attribute holds a tensor of that shape and dtype (what the
      traced Python decided from, ``if self.src_mask.size(0) != len(src)``, holds again);
    - ``follows``: for an attribute whose tensor the program reads (a lifted storage not already
      carried), a ``Rebind`` without an escape (``index`` None) whose ``carried`` input is the
      tensor the attribute holds at each call (``Region.check`` follows it).

    So a trace that rebinds the attribute (a ``Rebind`` of its own) leaves the other programs
    valid (``Module.__setattr__`` does not bump the structure counter for it): each finds the
    attribute's new tensor, and a length whose mask is cached runs its program again.
    ``carried``: the input indices already carried (grows with the follows)."""
    before = {}
    for stores in attr_stores:
        d, old = stores[0]
        before[id(d)] = old
    index = {id(st): j for j, st in enumerate(storages)}
    follows, guards = [], []
    for m in modules:
        d = m.__dict__
        for name, v in before.get(id(d), d).items():
            if type(v) is not Tensor:       # Parameters and buffers live in their own dicts
                continue
            guards.append((d, name, tuple(v.shape), v.dtype))
            j = index.get(id(v._st))
            if j is not None and j not in carried and not v._chain and v._base is None:
                r = Rebind(None, [(d, name)], j, v._rg, False)
                r.read_rg = v._rg
                follows.append(r)
                carried.add(j)
    return follows, guards


def rebound_places(snap, attr_stores):
    """``(slot, before, after)`` for every place in ``snap`` (``pystate.snapshot``) and in
    ``attr_stores`` (``[(dict, dict as it was)]``) that holds a tensor now and held something
    else before (``before``: that value, or None)."""
    out = []

    def found(slot, b, a):
        if isinstance(a, Tensor):
            if a is not b:
                out.append((slot, b, a))
        elif a is not b and is_tensor_container(a):       # a new tuple/list/dict bound there: item by item
            if type(a) is dict:
                olds = b if type(b) is dict else {}
                for k, x in a.items():
                    found((InSequence(slot, a), k), olds.get(k), x)
                return
            olds = b if isinstance(b, (tuple, list)) else ()
            for j, x in enumerate(a):
                found((InSequence(slot, a), j), olds[j] if j < len(olds) else None, x)

    def compare(container, before_items):
        if isinstance(container, dict):
            for k, a in container.items():
                found((container, k), before_items.get(k), a)
        elif isinstance(container, list):
            for i, a in enumerate(container):
                found((container, i), before_items[i] if i < len(before_items) else None, a)

    def walk(v, copy):
        if copy is None:
            return
        shallow, inner = copy
        if not isinstance(inner, tuple):      # a buffer's copy (pystate._copy): holds no tensors
            return
        compare(v, shallow)
        for a, c in inner:
            walk(a, c)
    for name, cell, g, v, copy, attrs in snap[1:]:
        slot = (cell, None) if cell is not None else (g, name)
        found(slot, v, get(slot))
        walk(v, copy)
        if isinstance(attrs, dict):
            d = attributes(v)
            compare(d, {k: a for k, (a, _) in attrs.items()})
            for a, c in attrs.values():
                walk(a, c)
    for stores in attr_stores:
        for d, before in stores:
            compare(d, before)
    return out


class Shared:
    """Places bound, after each call, to result leaf ``result`` itself (``same``) or to a
    detached alias of it (``loss.detach()``; ``same_version``: sharing its version counter, as
    ``detach()`` does, else its own, as ``.data``); with ``grad``, to a tensor needing grad
    whose detached alias the result is (NOTE [a place holding what a result detaches])."""

    # ``carried``/``read_rg``: as a ``Rebind``'s -- the program input the place held before the
    # call (``self.h = self.h * 0.5 + x; return self.h``): it follows the place, so the next call
    # reads the result this call bound there
    __slots__ = ("result", "slots", "same", "same_version", "carried", "read_rg", "grad")

    def __init__(self, result, same, same_version, grad=None):
        self.result, self.slots, self.same, self.same_version = result, [], same, same_version
        self.carried = self.read_rg = None
        self.grad = grad


# NOTE [a place holding what a result detaches]: the old weight_norm / spectral_norm hooks
# bind the computed weight (needing grad, with a graph) to ``module.weight`` on every forward;
# a step returning ``m.weight.detach()`` then returns an alias of a tensor bound to a place.
# Eagerly, after the call the place holds a tensor needing grad that shares its storage and
# version counter with the returned one. That is the reverse of a place bound to a result's
# ``detach()``: the result needs no grad, the place's tensor does. Each call binds there a new
# alias of its result that needs grad (``grad == "leaf"``), with a graph that backward cannot
# go through (``"kept"``: ``dead_node(MSG_KEPT)``, as a ``Rebind`` whose graph a backward in
# the function consumed). A kept graph that no backward consumed stays a graph break: eagerly
# it is differentiable after the call, which only NOTE [kept graphs]'s ``Rebind`` provides.


def argument_places(places, stand_ins, storages):
    """The places (``rebound_places``) the call bound one of its tensor arguments to as itself
    (``self.X = X``): eagerly they hold the caller's tensor after the call, so after every
    call the region binds the caller's tensor there (``Region.write_back``); the trace's
    stand-in (``stand_ins[i]``) is bound nowhere. Returns ``(other places, ((i, slots), ...))``.
    A place whose previous tensor the program reads is a graph break: the next call would read
    the argument bound there, which is no input of the program."""
    inputs = {id(st) for st in storages}
    other, binds = [], {}
    for slot, before, after in places:
        i = next((i for i, w in enumerate(stand_ins) if w is after), None)
        if i is None:
            other.append((slot, before, after))
            continue
        if isinstance(before, Tensor) and id(before._st) in inputs:
            raise GraphBreak(f"the function binds its tensor argument {i} to {describe(slot)}, which held a tensor "
                             "it reads: the next call would read the argument bound there")
        binds.setdefault(i, []).append(slot)
    return other, tuple((i, tuple(slots)) for i, slots in binds.items())


def plan_rebinds(places, escapes, storages, created, grad_owners=frozenset(), results=None, consumed=False):
    """The ``Rebind`` of each escape (a storage made in the trace that outlives it) bound to
    found places as a whole tensor. ``storages``: the program's input storages, for the
    carried input; ``created``: the storages made in the trace; ``grad_owners``: ids of the
    tensors whose ``.grad`` the program writes (those, and tensors with a ``.grad``, stay the
    same tensor every call); ``results``: ``{id(storage): (leaf position, id(tensor), version
    counter)}`` of the plain new results, for places bound to a result or a detached alias of
    one (``Shared``); ``consumed``: a backward ran in the function (NOTE [a place holding what
    a result detaches]). Returns ``(rebinds, shared)``. Raises ``GraphBreak`` for a
    place bound to a tensor made in the trace that a compiled call cannot bind again: a view,
    or a tensor sharing its storage with a result."""
    where = {id(e): i for i, e in enumerate(escapes)}
    inputs = {id(st): j for j, st in enumerate(storages)}
    out, shared = {}, {}
    for slot, before, after in places:
        i = where.get(id(after._st))
        if id(after) in grad_owners or after._grad is not None:
            continue
        res = (results or {}).get(id(after._st))
        if i is None and res is not None and not after._chain and after._base is None:
            pos, rid, vc = res
            same = id(after) == rid
            grad = None if same or not after._rg else "leaf" if after._gf is None else "kept" if consumed else False
            if grad is not False:
                key = (pos, same, after._vc is vc, grad)
                sh = shared.get(key)
                if sh is None:
                    sh = shared[key] = Shared(pos, same, after._vc is vc, grad)
                sh.slots.append(slot)
                _carry(sh, before, inputs, after._st.array)
                continue
        if i is None or after._chain or after._base is not None:
            if after._st in created:
                raise GraphBreak(f"the function binds a view of a tensor, or a tensor sharing a result's "
                                 f"storage, to {describe(slot)}; a compiled call cannot bind it again")
            continue
        r = out.get(i)
        if r is None:
            r = out[i] = Rebind(i, [], None, after._rg, after._gf is not None)
            r.version = after._vc[0]
            _keep_kind(r, after, slot)
        r.slots.append(slot)
        _carry(r, before, inputs, escapes[i].array)
    # one place feeds one input: a second rebind claiming it reads by identity as before
    claimed = set()
    for r in (*out.values(), *shared.values()):
        if r.carried in claimed:
            r.carried = None
        elif r.carried is not None:
            claimed.add(r.carried)
        r.slots = tuple(r.slots)
    for sh in shared.values():
        sh.slots = tuple(sh.slots)
    return list(out.values()), list(shared.values())


IMMUTABLE = (int, float, bool, str, bytes, complex, type(None))


def plain_attributes(t):
    """``t``'s Python attributes (not the inference mark) and the first one that is not an
    immutable scalar or a tuple of them, as ``(attrs, (name, value) or None)``: only such
    attributes can be set again on every call's new tensor."""
    attrs = {k: v for k, v in t.__dict__.items() if k != "_inference"}
    for k, v in attrs.items():
        if not (isinstance(v, IMMUTABLE) or (type(v) is tuple and all(isinstance(e, IMMUTABLE) for e in v))):
            return attrs, (k, v)
    return attrs, None


def _keep_kind(r, t, slot):
    """NOTE [what a rebound tensor keeps]: ``t``'s class, inference-ness and Python attributes
    on the ``Rebind`` ``r``; an attribute that is not an immutable scalar (or a tuple of them)
    is a graph break, as on a result."""
    if type(t).__module__ == "tracegrad.nn.parameter":
        r.cls = type(t)
    r.inference = "_inference" in t.__dict__
    attrs, bad = plain_attributes(t)
    if bad is not None:
        k, v = bad
        raise GraphBreak(f"the function sets the attribute '{k}' of a tensor it binds to {describe(slot)} "
                         f"to a {type(v).__name__}: a compiled call can repeat only numbers, strings and "
                         "tuples of them")
    r.attrs = attrs or None


def _carry(r, before, inputs, e):
    """Set ``r.carried`` (a ``Rebind`` or ``Shared``) to the program input its place held
    before the call, when that tensor can stand for what the call binds there (same shape and
    dtype, a whole storage)."""
    if r.carried is None and isinstance(before, Tensor) and not before._chain and before._base is None \
            and id(before._st) in inputs \
            and before._st.array.shape == e.shape and before._st.array.dtype == e.dtype:
        r.carried, r.read_rg = inputs[id(before._st)], before._rg


def describe(slot) -> str:
    c, k = slot
    if isinstance(c, InSequence):
        return f"item {k!r} of a container held in {describe(c.place)}"
    if isinstance(c, types.CellType):
        return "a closure variable"
    return f"key {k!r} of a dict" if isinstance(c, dict) else f"item {k} of a list"


def carry_over(escapes, storages, skip=()):
    """The fallback of NOTE [carried state] for escapes whose places were not found (``skip``:
    the input storages rebinds feed): when an input storage no tensor refers to any more (and
    no other region holds) has the shape and dtype of an escape, the escape's tensors are
    pointed at that input storage: the program then writes the carried value where it reads it
    on the next call, which no Python object can tell apart (the old storage was unreachable).
    Returns the escapes with those storages substituted, and None for escapes no tensor refers
    to any more (their values are never written back).

    NOTE [carrying onto written and held inputs]: an input the program also writes is a
    candidate too (``Region.write_back`` writes the state first and the escapes after, so the
    escape's value is what the storage holds), and so is one another program of the function
    holds (it reads the same tensor there; no tensor refers to the storage either way). Both
    were left out: ``p.data = p.data.clamp(...)`` after ``opt.step()`` (WGAN's weight
    clipping) left each ``p`` on a storage the program does not read, so every call traced
    again, and after a second program (a changed clip value) too."""
    if not any(e is not None for e in escapes):
        return escapes
    cands = [st for st in storages if id(st) not in skip]
    gc.collect()
    users = {}
    for t in gc.get_referrers(*cands, *(e for e in escapes if e is not None)):
        if isinstance(t, Tensor):
            users.setdefault(id(t._st), []).append(t)
    orphans = [st for st in cands if id(st) not in users]
    out = []
    for e in escapes:
        if e is None or id(e) not in users:      # alive while tracing only (an engine buffer)
            out.append(None)
            continue
        o = next((o for o in orphans if o.array.shape == e.array.shape and o.array.dtype == e.array.dtype),
                 None)
        if o is None:
            out.append(e)
            continue
        orphans.remove(o)
        for t in users.get(id(e), ()):
            t._st = o
            t._vcache = None
        o.gen += 1
        out.append(o)
    return out
