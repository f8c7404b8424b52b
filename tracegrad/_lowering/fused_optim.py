"""The eager step of one optimizer parameter group as a few XLA programs (torch's
``foreach``/``fused`` kernels); ``tracegrad.compiler.fused_optimizer_group`` is its entry
from ``optim``.

An eager step runs the group's update rule (``_update_group``: the same ``_functional.py``
rules, op for op) once on stand-in tensors under ``_lowering.fused``, which keeps the traced
program per (optimizer class, options, state layout, shapes and dtypes) and afterwards applies
the update in one call per chunk of up to 8 parameters (NOTE [chunked groups]): the dozen
~10-20 us dispatches per parameter become a fraction of one.
Results equal the per-op path's to float rounding (XLA may fuse the arithmetic differently);
parameters and state tensors keep their identity, views and ``_version`` counts.

``lr``, ``momentum`` and ``betas`` (what schedulers change) are traced inputs, as in a compiled
step (``_lowering/hyper.py``): a scheduler never retraces. The other options are part of the
key (a new ``eps`` or ``weight_decay`` traces a new program). Tensor-valued options (a Tensor
lr) are inputs like the state.

The per-op path runs instead whenever the step is unusual: grad mode on (``differentiable``),
a gradient or state tensor that requires grad, a sparse gradient, complex parameters, two
tensors sharing a storage (a step tensor shared by two parameters, a parameter listed twice),
inference or dual tensors, a non-tensor state value other than None, an update rule patched on
the instance, and inside a compiled step, forward AD or the profiler (``_lowering/fused.py``).
"""
from __future__ import annotations

import contextlib

from .._state import GRAD_MODE
from .._tensor.tensor import Tensor
from . import fused as _engine
from .fused import plain
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


def _collect_item(p, grad, state):
    """``(tensors, layout, donate)`` of one parameter's update (``donate``: positions in
    ``tensors`` the update may overwrite: the parameter and its state, not the gradient), or
    None when it must run per op."""
    # a sparse gradient takes the rule's own sparse branch (a stand-in would be dense)
    if grad._rg or grad.is_sparse or p.is_complex() or not plain(p) or not plain(grad):
        return None
    tensors, layout, donate = [p, grad], [], [0]
    for k, v in state.items():
        if isinstance(v, Tensor):
            if v._rg or not plain(v):
                return None
            donate.append(len(tensors))
            tensors.append(v)
            layout.append(k)
        elif v is None:
            layout.append((k, None))
        else:
            return None
    return tensors, tuple(layout), donate


def _collect_options(group):
    """``(key, tensors, numbers)`` of the group's options: lifted numbers traced, Tensor
    options as inputs, the rest by value in the key; None when one is unhashable."""
    options, tensors, numbers = [], [], []
    for k, v in dict.items(group):
        if k in _SKIP:
            continue
        nums = lifted(group, k) if k in LIFTED else ()
        if nums:
            numbers.extend(nums)
            options.append((k, len(nums)))
        elif isinstance(v, Tensor) or (isinstance(v, tuple) and any(isinstance(x, Tensor) for x in v)):
            for x in (v if isinstance(v, tuple) else (v,)):
                if isinstance(x, Tensor):
                    if not plain(x):
                        return None
                    tensors.append(x)
            options.append((k, "tensor", tuple(isinstance(x, Tensor) for x in v) if isinstance(v, tuple) else ()))
        else:
            try:
                hash(v)
            except TypeError:
                return None
            options.append((k, type(v), v))
    return tuple(options), tensors, numbers


# NOTE [chunked groups]: XLA:CPU's compile time grows with the program (measured: a 50-parameter
# Adam group as one program compiles in ~10 s, 500 parameters in minutes), while the run time
# of a fused update is mostly per parameter (~30 us each, whether 1 or 16 share a call) plus a
# fixed ~40 us per call. So a group runs in consecutive chunks of up to ``_CHUNK`` parameters,
# each its own program: a small model is one program, and a deep one repeats a few chunk
# signatures (its layers repeat), each compiled once.
_CHUNK = 8


def _rebuild(group, items, tensors, hypers):
    """``group`` and ``items`` with their tensors replaced by ``tensors`` (the items' in
    ``_collect_item``'s order, then the Tensor options in the group's order) and the lifted
    numbers by ``hypers``."""
    ts, hs = iter(tensors), iter(hypers)
    new_items = [(next(ts), next(ts), {k: next(ts) if isinstance(v, Tensor) else v for k, v in state.items()})
                 for _, _, state in items]
    new_group = {}
    for k, v in dict.items(group):
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
    """Run ``opt._update_group(group, items)`` as fused programs (NOTE [chunked groups]);
    False (nothing done) when the step must take the per-op path (module docstring)."""
    if not ENABLED[0] or not opt._fuses(group) or GRAD_MODE[0] or group.get("differentiable"):
        return False
    d = opt.__dict__
    if "_update" in d or "_update_group" in d:
        # a rule patched on this instance (a spy, a wrapper): its Python runs on every
        # update, and programs are cached per class
        return False
    options = _collect_options(group)
    if options is None:
        return False
    okey, otensors, numbers = options
    collected, storages = [], {id(t._st) for t in otensors}
    n = len(otensors)
    for p, grad, state in items:
        c = _collect_item(p, grad, state)
        if c is None:
            return False
        collected.append(c)
        storages.update(id(t._st) for t in c[0])
        n += len(c[0])
    if len(storages) != n:     # two of them share a storage: per op, in torch's order
        return False
    for at in range(0, len(items), _CHUNK):
        sub = items[at:at + _CHUNK]
        if not _run_chunk(opt, group, sub, collected[at:at + _CHUNK], okey, otensors, numbers):
            opt._update_group(group, sub)
    return True


def _run_chunk(opt, group, items, collected, okey, otensors, numbers) -> bool:
    tensors, donate = [], []
    for ts, _, don in collected:
        donate.extend(len(tensors) + i for i in don)
        tensors.extend(ts)
    tensors.extend(otensors)
    key = (type(opt), okey, tuple(c[1] for c in collected))

    def update(stand_ins, hypers):
        new_group, new_items = _rebuild(group, items, stand_ins, hypers)
        before = [dict(state) for _, _, state in new_items]
        opt._update_group(new_group, new_items)
        return _new_state(new_items, before)

    out = _engine.run_inplace(key, update, tensors, numbers, tuple(donate))
    if out is None:
        return False
    for t, (j, k) in zip(*out):
        items[j][2][k] = t
    return True
