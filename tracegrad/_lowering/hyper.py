"""Optimizer hyper-parameters that schedulers change, as traced program inputs.

An lr scheduler steps between compiled calls; ``OneCycleLR``/``CyclicLR`` also cycle
``momentum`` (SGD, RMSprop) or ``betas[0]`` (the Adam family). Baking those numbers into the
program would retrace on every call, so each group's numeric ``lr``, ``momentum`` and
``betas`` enter the program as float64 0-d inputs (a Python float is float64; the update
rules cast to the parameter's dtype exactly where torch casts the Python scalar).

The update rules also *branch* on these numbers (``if momentum != 0``: whether a momentum
buffer exists at all). While tracing, a lifted value is a ``Hyper`` tensor whose comparisons
with zero answer in Python from the value the trace saw, and the region's guard keeps the
sign of each value compared so (``signs_hold``): a call whose momentum crosses zero retraces
instead of taking the other branch silently, while an lr a scheduler takes down to 0 (never
compared) feeds the same program. Comparisons with any other number stay tensor comparisons,
so a branch on them is a graph break, never a frozen answer.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from .. import _state
from .._tensor.tensor import Tensor, _disabled_torch_function_impl
from .pystate import _MISSING

LIFTED = ("lr", "momentum", "betas")
_PY_CONST = (int, float, bool, str, complex, type(None), bytes)


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def lifted(group, key):
    """The numbers of ``group[key]`` that are traced inputs: a numeric lr/momentum, or both
    betas when each is a number; ``()`` when the value stays a Python constant."""
    v = dict.get(group, key)        # not ParamGroup.get: that notes the user's reads
    if _number(v):
        return (v,)
    if key == "betas" and isinstance(v, tuple) and len(v) == 2 and all(map(_number, v)):
        return v
    return ()


def sign(v):
    """-1, 0 or 1: the part of a hyper-parameter a program is specialised on."""
    # int(): a NumPy scalar (np.float64 is a float: an lr from a NumPy schedule) compares to
    # np.bool_, which has no subtraction
    return int(v > 0) - int(v < 0)


def signature(optimizers):
    """What the traced Python decided on: every option except ``params`` by value (lifted
    numbers only by how many there are: their signs are ``signs_hold``'s), plus how many
    parameters have state and which parameters each group holds."""
    sig = []
    for o in optimizers:
        sig.append(len(o.state))
        for g in o.param_groups:
            for k, v in dict.items(g):     # not ParamGroup.items: that notes reads
                if k == "params":
                    continue
                nums = lifted(g, k) if k in LIFTED else ()
                if nums:
                    sig.append((k, "traced", len(nums)))
                else:
                    sig.append((k, v if isinstance(v, (_PY_CONST, tuple)) else id(v)))
            # which parameters, not only how many: ``group["params"][i] = other`` between calls
            # (the program would keep updating the old one). By id: a guard holds no parameter
            sig.append(tuple(map(id, g["params"])))
    return tuple(sig)


def snapshot(optimizers):
    """``signature(optimizers)`` and the group dicts and values it was read from, for
    ``holds``: a guard that compares each option by identity first (the common case: nothing
    changed, or a scheduler's new lr) instead of building the signature again on every call
    (~15 us once the step's XLA work has evicted the interpreter's caches: the largest guard of
    a small step)."""
    def entries(g):
        return [(k, v, len(lifted(g, k)) if k in LIFTED else 0) for k, v in dict.items(g) if k != "params"]
    return [signature(optimizers), [
        (o, len(o.state), o.param_groups,
         [(g, len(g), tuple(map(id, g["params"])), entries(g)) for g in o.param_groups])
        for o in optimizers]]


def holds(snap) -> bool:
    """Whether ``signature`` of the snapshot's optimizers still equals the snapshot's."""
    sig, opts = snap
    for o, n_state, groups, items in opts:
        if len(o.state) != n_state:
            return False
        if o.param_groups is not groups or len(groups) != len(items):
            return _compare(snap)
        for g, (g0, n_keys, param_ids, kv) in zip(groups, items):
            # dict's own lookups: ParamGroup's note the traced Python's reads (none here)
            if g is not g0 or len(g) != n_keys or tuple(map(id, _item(g, "params"))) != param_ids:
                return _compare(snap)
            for k, v, n_lifted in kv:
                cur = _get(g, k, _ABSENT)
                if cur is not v and not (n_lifted and len(lifted(g, k)) == n_lifted):
                    return _compare(snap)
    return True


def _compare(snap) -> bool:
    """The full comparison; when equal (an option rewritten with an equal value, a group dict
    replaced by an equal one), the snapshot takes the current objects, so the next call is
    answered by identity again."""
    optimizers = [s[0] for s in snap[1]]
    if signature(optimizers) != snap[0]:
        return False
    snap[1] = snapshot(optimizers)[1]
    return True


_ABSENT = object()
_get, _item = dict.get, dict.__getitem__


def signs_hold(signs) -> bool:
    """Whether each lifted value the trace compared with zero still has the sign it saw
    (``signs``: ``((optimizer, group, key, position), sign)`` pairs), and each one the traced
    Python read as a number (``note_read``: the pair's second item ``("==", value)``) is
    still that number."""
    for (o, i, k, j), s in signs:
        groups = o.param_groups
        nums = lifted(groups[i], k) if i < len(groups) else ()
        if j >= len(nums):
            return False
        if type(s) is tuple:
            if type(nums[j]) is not type(s[1]) or nums[j] != s[1]:
                return False
        elif sign(nums[j]) != s:
            return False
    return True


def note_read(group, key):
    """``group[key]`` is being read by the traced Python outside ``Optimizer.step`` (a step that
    returns, logs or computes with ``opt.param_groups[0]["lr"]``): the number it gets is baked
    into the program, while the program takes the lifted value as an input and its guard
    ignores changes to it -- a later call with a scheduler's new lr would return the traced
    lr. Found by round-14's adversarial tests; the smallest fix is to guard that value exactly
    (a new value traces again), which keeps a step that never reads it free of retraces."""
    cap = _state.CAPTURE[0]
    if cap is None:
        return
    nums = lifted(group, key) if key in LIFTED else ()
    for o in cap.hyper_inputs:
        for i, g in enumerate(o.param_groups):
            if g is group:
                for j, n in enumerate(nums):
                    cap.hyper_signs[(o, i, key, j)] = ("==", n)
                return      # the other options: ``signature`` guards them by value
    # the group of an optimizer whose step the trace does not run (a compiled report reading
    # ``opt.state_dict()`` or ``group["lr"]`` while eager steps and a scheduler change it):
    # nothing else guards it, and the number read is baked in (round-15's adversarial tests)
    v = dict.get(group, key, _MISSING)
    if v is _MISSING or isinstance(v, _PY_CONST) or (isinstance(v, tuple) and all(isinstance(a, _PY_CONST) for a in v)):
        # a key the group lacks (``group.get('mult', 1)``, StyleGAN's adjust_lr) is guarded as
        # absent: the guard reads ``_MISSING`` for it, and recording None there failed on every
        # call, so each call traced again until the cache limit
        cap.read_guards.append((_GroupView(group), key, v, None))


class _GroupView:
    """A param group read by a guard with dict's own ``get`` (ParamGroup's notes reads)."""

    __slots__ = ("group",)

    def __init__(self, group):
        self.group = group

    def get(self, key, default):
        return dict.get(self.group, key, default)


def slots(optimizers):
    """``(optimizer, group index, key)`` of each lifted value, in program-input order."""
    return [(o, i, k) for o in optimizers for i, g in enumerate(o.param_groups) for k in LIFTED
            if lifted(g, k)]


def read(slot_list):
    """The current values of ``slot_list`` as the program's flat inputs: one float64 NumPy
    vector holding them all (``[]`` when there are none). One vector, not a scalar each: jit
    transfers every argument on its own (~2-3 us for a NumPy scalar in its C++ path; a device
    array built from a Python float costs ~40 us), so an AdamW step's three numbers cost ~10 us
    as scalars and ~4 us as one vector (measured 2026-12-04, JAX 0.10.2, one CPU core)."""
    nums = [x for o, i, k in slot_list for x in lifted(o.param_groups[i], k)]
    return [np.array(nums, np.float64)] if nums else []


class Hyper(Tensor):
    """A lifted hyper-parameter inside a trace: a float64 0-d tensor whose comparisons with
    zero answer from the traced value's sign (guarded by ``signature``)."""

    __torch_function__ = _disabled_torch_function_impl    # ops on it give plain Tensors

    __hash__ = Tensor.__hash__

    def _cmp(self, other, op, fallback):
        if _number(other) and other == 0:
            cap = _state.CAPTURE[0]
            if cap is not None and self._slot is not None and type(cap.hyper_signs.get(self._slot)) is not tuple:
                cap.hyper_signs[self._slot] = sign(self._known)     # guarded from now on
            return op(self._known, 0)
        return fallback(self, other)

    def __eq__(self, o): return self._cmp(o, lambda a, b: a == b, Tensor.__eq__)
    def __ne__(self, o): return self._cmp(o, lambda a, b: a != b, Tensor.__ne__)
    def __gt__(self, o): return self._cmp(o, lambda a, b: a > b, Tensor.__gt__)
    def __ge__(self, o): return self._cmp(o, lambda a, b: a >= b, Tensor.__ge__)
    def __lt__(self, o): return self._cmp(o, lambda a, b: a < b, Tensor.__lt__)
    def __le__(self, o): return self._cmp(o, lambda a, b: a <= b, Tensor.__le__)


def make(array, known, slot=None):
    h = Hyper._make(array)
    h._known, h._slot = known, slot
    return h


def bind(slot_list, arrays):
    """``{optimizer: {group index: {key: traced value}}}`` for ``swapped``; ``arrays``: what
    ``read`` gave, traced (one vector of every number)."""
    out, it = {}, iter(arrays[0] if arrays else ())
    for o, i, k in slot_list:
        nums = lifted(o.param_groups[i], k)
        vals = tuple(make(next(it), n, (o, i, k, j)) for j, n in enumerate(nums))
        out.setdefault(o, {}).setdefault(i, {})[k] = vals if k == "betas" else vals[0]
    return out


@contextmanager
def swapped(opt, values):
    """Within the block, ``opt``'s groups hold the traced values instead of the numbers."""
    saved = [dict(dict.items(g)) for g in opt.param_groups]   # not dict(g): ParamGroup notes reads
    try:
        # dict's own methods: the groups report writes by the traced function (optim's
        # ParamGroup), not these
        for i, kv in values.items():
            dict.update(opt.param_groups[i], kv)
        yield
    finally:
        for g, s in zip(opt.param_groups, saved):
            for k in LIFTED:
                if k in s:
                    dict.__setitem__(g, k, s[k])
