"""A region's guards as one generated Python function (NOTE [generated guards]).

``checker(region)`` returns ``check(region) -> bool``: what ``Region.check`` asks on every call
of a compiled function, written out for this region's guards, each constant bound once.
"""
from __future__ import annotations

import math
import sys

from .. import _state
from .._tensor.tensor import Tensor
from . import hyper
from .carry import get as slot_get
from .guards import _IDENTITY, _NAN, _SIGNED_ZERO
from .pystate import _MISSING, _SCALARS, SHORT_SEQUENCE, scalar_signature

# NOTE [generated guards]
# The guards of a region are fixed once its trace is finished (the tensors, dicts, modules
# and values they name; the storages they compare with live in a list that is updated in
# place when a tensor is followed onto a new storage). A generic loop over them walks tuples,
# unpacks entries and branches on each entry's kind on every call; the same checks written
# out as straight-line code with their constants as globals of the generated function ran
# in half the time (digits MLP SGD step, 25 value guards: 2.9 us as a loop, 1.4 us
# generated; the whole check 8.4 -> ~4 us, measured 2026-12-05, one core). The order of the
# checks is the order in which they must run: the requires_grad epoch moves on only once the
# earlier guards hold, and the orphan guard marks a dead region before the optimizer-state
# guards read that state. Rare kinds (carried places, place groups) call the region's methods.


class _Source:
    """Lines of the function being written and the constants they name (its globals)."""

    def __init__(self):
        self.lines = ["def check(self):"]
        self.env = {"_MISSING": _MISSING, "_getrefcount": sys.getrefcount, "_Tensor": Tensor, "_copysign": math.copysign,
                    "_slot_get": slot_get}

    def const(self, value) -> str:
        name = f"_c{len(self.env)}"
        self.env[name] = value
        return name

    def add(self, *lines, indent=1):
        self.lines += ["    " * indent + line for line in lines]

    def fail_unless(self, cond, indent=1):
        self.add(f"if not ({cond}):", "    return False", indent=indent)

    def function(self):
        self.add("return True")
        code = compile("\n".join(self.lines), "<tracegrad guards>", "exec")
        exec(code, self.env)       # noqa: S102 -- our own source, from the region's guards
        # popped: left in its own globals, the function made a reference cycle through the
        # constants it names (parameters, optimizer state), so they outlived the compiled
        # function until the cycle collector ran (test_static_address_finalizer, round 26)
        return self.env.pop("check")


def _values(src: _Source, checks):
    """``value_guards`` (``guards.value_guards``): ``(place, key, value, how)`` entries; the place
    is a dict or one of guards.py's dict-like views (``.get(key, default)``)."""
    for d, k, v, h in checks:
        get, key, val = src.const(d.get), src.const(k), src.const(v)
        src.add(f"c = {get}({key}, _MISSING)")
        if h is None:
            src.add(f"if c is not {val} and (type(c) is not type({val}) or c != {val}):", "    return False")
        elif h is _SIGNED_ZERO:      # -0.0 == 0.0, but 1 / k differs
            src.add(f"if type(c) is not float or c or _copysign(1.0, c) != _copysign(1.0, {val}):",
                    "    return False")
        elif h is _NAN:
            src.add(f"if type(c) is not type({val}) or c == c:", "    return False")
        elif h is _IDENTITY:
            src.add(f"if c is not {val}:", "    return False")
        else:                        # a NumPy array: this very one, with the bytes it had
            src.add(f"if c is not {val} or hash(c.tobytes()) != {src.const(h)}:", "    return False")


def _scalars(src: _Source, refs, signature):
    """``scalar_signature(refs) == signature`` (pystate.py), ref by ref: each variable the trace
    read as a number, string or short list of them still holds an equal one, and no other now
    holds one."""
    names = [name for name, _, _ in refs]
    if len(set(names)) != len(names):      # entries matched by name below
        src.fail_unless(f"{src.const(scalar_signature)}({src.const(refs)}) == {src.const(signature)}")
        return
    recorded = dict(signature)
    scalars, seqs = src.const(_SCALARS), src.const((list, tuple))
    short = (f"type(v) in {seqs} and len(v) <= {SHORT_SEQUENCE} and all(type(e) in {scalars} for e in v)")
    for name, cell, g in refs:
        if cell is not None:
            src.add("try:", f"    v = {src.const(cell)}.cell_contents", "except ValueError:", "    v = None")
        else:
            src.add(f"v = {src.const(g.get)}({src.const(name)})")
        if name not in recorded:
            src.add(f"if type(v) in {scalars} or ({short}):", "    return False")
            continue
        was = src.const(recorded[name])      # (entries compare as tuple items: identity or ==)
        if type(recorded[name]) is tuple:
            src.fail_unless(f"{short} and tuple(v) == {was}")
        else:
            src.fail_unless(f"type(v) in {scalars} and (v is {was} or v == {was})")


def checker(region):
    """``check(region)``: whether the state still has the shape ``region``'s program was traced
    for (``Region.check``'s guards, in its order)."""
    src = _Source()
    src.fail_unless(f"{src.const(_state.STRUCTURE)}[0] == {src.const(region.structure)}")
    src.add(f"if {src.const(_state.RG_EPOCH)}[0] != self.rg_epoch and not self._rg_flips_hold():", "    return False")
    for d, k, _, _ in region.counters:      # still an int to add to (NOTE [Python counters])
        src.fail_unless(f"type({src.const(d.get)}({src.const(k)})) is int")
    for d, k, _ in region.appends:           # still a list to grow (NOTE [Python appends])
        src.fail_unless(f"type({src.const(d.get)}({src.const(k)})) is list")
    if region.py_scalars:
        _scalars(src, region.py_refs, region.py_scalars)
    _values(src, region.value_guards)
    for m, t in zip(region.modules, region.training):
        src.fail_unless(f"{src.const(m)}.training is {src.const(t)}")
    if region.tensor_attr_guards:            # NOTE [tensor attributes] in capture.py
        src.fail_unless("self._tensor_attrs_hold()")
    for d, name, shape, dtype in region.attr_guards:
        src.add(f"v = {src.const(d.get)}({src.const(name)})")
        src.fail_unless(f"isinstance(v, _Tensor) and v.dtype is {src.const(dtype)} and tuple(v.shape) == {src.const(shape)}")
    if region.grad_view:
        # traced while a .grad was a view of another tensor (read through its view chain): the
        # program never runs again (the guard below wants plain .grads: a later plain .grad
        # passed it, and the program read it through the old chain: a JAX shape error)
        src.add("return False")
    for o, was_none in zip(region.owner_list, region.grad_none):
        src.add(f"g = {src.const(o)}._grad")
        src.fail_unless("g is None" if was_none else "g is not None and not g._chain")
    if region.carried:
        src.fail_unless("self._carried_hold()")
    if region.place_groups:
        src.fail_unless("self._place_groups_hold()")
    storages, held = src.const(region.storages), src.const(_state.HELD_STORAGES)
    for j, r in region.readers:
        if j in region.grad_state:
            # NOTE [the .grad a call starts with]: the program reads and writes the owner's .grad
            # of the moment (guarded above), never this storage: the .grad the eager first call
            # made, zero_grad()ed by the traced call, is no orphan that kills the program
            continue
        if r is not None:
            src.add(f"t = {src.const(r)}()", "if t is not None:")
            # NOTE [tensors moved off their storage]; a tensor on it: no orphan
            src.add(f"if t._st is not {storages}[{j}] and not self._follow_reader({j}, t):", "    return False",
                    indent=2)
            src.add("else:")
            indent = 2
        else:
            indent = 1
        # the orphan guard (``Region.check``): held only by regions, this variable and the
        # call's argument, the storage is gone for good: the region is dead
        src.add(f"st = {storages}[{j}]", f"if _getrefcount(st) <= 2 + {held}[id(st)]:",
                "    self.dead = self.state_died = True", "    return False", indent=indent)
    src.add("st = t = None")
    _values(src, region.state_guards)
    src.fail_unless(f"{src.const(hyper.holds)}({src.const(region.hyper)}) and "
                    f"{src.const(hyper.signs_hold)}({src.const(region.hyper_signs)})")
    return src.function()

