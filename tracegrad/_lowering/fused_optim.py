"""The eager step of one optimizer parameter group as one XLA program (torch's
``foreach``/``fused`` kernels); ``tracegrad.compiler.fused_optimizer_group`` is its entry
from ``optim``.

An eager step runs the group's update rule (``_update_group``: the same ``_functional.py``
rules, op for op) once on stand-in tensors under ``_lowering.fused``, which keeps the traced
program per (optimizer class, options, state layout, shapes and dtypes) and afterwards applies
the whole group's update in one call: the dozen ~10-20 us dispatches per parameter become one.
Results equal the per-op path's to float rounding (XLA may fuse the arithmetic differently);
parameters and state tensors keep their identity, views and ``_version`` counts.

``lr``, ``momentum`` and ``betas`` (what schedulers change) are traced inputs, as in a compiled
step (``_lowering/hyper.py``): a scheduler never retraces. The other options are part of the
key (a new ``eps`` or ``weight_decay`` traces a new program). Tensor-valued options (a Tensor
lr) are inputs like the state.

The per-op path runs instead whenever the step is unusual: grad mode on (``differentiable``),
a gradient or state tensor that requires grad, complex parameters (stepped as real views), two
tensors sharing a storage (a step tensor shared by two parameters, a parameter listed twice),
inference or dual tensors, a non-tensor state value other than None, an update rule patched on
the instance, and inside a compiled step, forward AD or the profiler (``_lowering/fused.py``).
"""
from __future__ import annotations

import contextlib

from .._state import GRAD_MODE
from .._tensor.tensor import Tensor
from . import fused as _engine
from .hyper import LIFTED, lifted

__all__ = ["step_group", "disabled", "STATS"]

ENABLED = [True]
STATS = _engine.STATS      # {"traces": programs traced, "calls": fused group updates run}
_SKIP = ("params", "param_names")


@contextlib.contextmanager
def disabled():
    """Within the block, optimizers take the per-op path (benchmarks, tests comparing both)."""
    prev = ENABLED[0]
    ENABLED[0] = False
    try:
        yield
    finally:
        ENABLED[0] = prev


def _plain(t) -> bool:
    # a tensor the fused program may stand in for: not an inference tensor (writing it in
    # place outside inference mode raises) nor a dual one (its tangent is updated op by op)
    d = t.__dict__
    return not (d and ("_inference" in d or "_fw" in d))


def _collect(group, items):
    """``(key, tensors, numbers, donate)`` for the group's update, or None when it must run per
    op. ``donate``: the positions of the parameters and state tensors (what the update may
    overwrite), not those of the gradients and Tensor options."""
    tensors, layout, donate = [], [], []
    for p, grad, state in items:
        if grad._rg or p.is_complex() or not _plain(p) or not _plain(grad):
            return None
        donate.append(len(tensors))
        tensors.append(p)
        tensors.append(grad)
        entry = []
        for k, v in state.items():
            if isinstance(v, Tensor):
                if v._rg or not _plain(v):
                    return None
                donate.append(len(tensors))
                tensors.append(v)
                entry.append(k)
            elif v is None:
                entry.append((k, None))
            else:
                return None
        layout.append(tuple(entry))
    options, numbers = [], []
    for k, v in group.items():
        if k in _SKIP:
            continue
        nums = lifted(group, k) if k in LIFTED else ()
        if nums:
            numbers.extend(nums)
            options.append((k, len(nums)))
        elif isinstance(v, Tensor) or (isinstance(v, tuple) and any(isinstance(x, Tensor) for x in v)):
            for x in (v if isinstance(v, tuple) else (v,)):
                if isinstance(x, Tensor):
                    if not _plain(x):
                        return None
                    tensors.append(x)
            options.append((k, "tensor", tuple(isinstance(x, Tensor) for x in v) if isinstance(v, tuple) else ()))
        else:
            try:
                hash(v)
            except TypeError:
                return None
            options.append((k, type(v), v))
    if len({id(t._st) for t in tensors}) != len(tensors):
        return None
    return (tuple(options), tuple(layout)), tensors, numbers, tuple(donate)


def _rebuild(group, items, tensors, hypers):
    """``group`` and ``items`` with their tensors replaced, in ``_collect``'s order, by
    ``tensors`` and the lifted numbers by ``hypers``."""
    ts, hs = iter(tensors), iter(hypers)
    new_items = [(next(ts), next(ts), {k: next(ts) if isinstance(v, Tensor) else v for k, v in state.items()})
                 for _, _, state in items]
    new_group = {}
    for k, v in group.items():
        if k == "params":
            v = [p for p, _, _ in new_items]
        elif k in LIFTED and lifted(group, k):
            v = tuple(next(hs) for _ in lifted(group, k))
            v = v if k == "betas" else v[0]
        elif isinstance(v, Tensor):
            v = next(ts)
        elif isinstance(v, tuple):
            v = tuple(next(ts) if isinstance(x, Tensor) else x for x in v)
        new_group[k] = v
    return new_group, new_items


def _new_state(items, before):
    """The state entries the rule created (SGD's first momentum buffer): ``(tensors,
    ((item index, key), ...))``; NotFusable for any other change to the state dicts."""
    new, places = [], []
    for j, ((_, _, state), old) in enumerate(zip(items, before)):
        if not old.keys() <= state.keys():
            raise _engine.NotFusable("state entries were removed")
        for k, v in state.items():
            if k in old and v is old[k]:
                continue
            if not isinstance(v, Tensor) or (k in old and old[k] is not None):
                raise _engine.NotFusable(f"state entry {k!r} was rebound")
            new.append(v)
            places.append((j, k))
    return new, tuple(places)


def step_group(opt, group, items) -> bool:
    """Run ``opt._update_group(group, items)`` as one fused program; False (nothing done) when
    the step must take the per-op path (module docstring)."""
    if not ENABLED[0] or not opt._fuses(group) or GRAD_MODE[0] or group.get("differentiable"):
        return False
    d = opt.__dict__
    if "_update" in d or "_update_group" in d:
        # a rule patched on this instance (a spy, a wrapper): its Python runs on every
        # update, and programs are cached per class
        return False
    collected = _collect(group, items)
    if collected is None:
        return False
    key, tensors, numbers, donate = collected

    def update(stand_ins, hypers):
        new_group, new_items = _rebuild(group, items, stand_ins, hypers)
        before = [dict(state) for _, _, state in new_items]
        opt._update_group(new_group, new_items)
        return _new_state(new_items, before)

    out = _engine.run_inplace((type(opt), key), update, tensors, numbers, donate)
    if out is None:
        return False
    for t, (j, k) in zip(*out):
        items[j][2][k] = t
    return True
