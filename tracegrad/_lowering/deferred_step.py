"""``scheduler.step()`` inside a compiled function, run after the program on every call.

NOTE [deferred scheduler step]: many training steps end with ``opt.step(); sched.step()``.
A scheduler's step is Python arithmetic on floats that writes the new ``lr`` (and
``momentum``/``betas``) into the optimizer's param groups, a Python side effect the program
cannot repeat: the whole call used to run eagerly (a graph break). The program does not need
those numbers: it reads each group's lifted options as inputs at the start of the call
(``hyper``). So while tracing, ``LRScheduler.step()`` is not run but recorded, and every call
of the region (the traced one included) runs it eagerly after the program's write-back, in
the order the function called it. That equals eager as long as nothing in the rest of the
function sees the difference, which is checked, not assumed:

- the scheduler is *sealed* from the deferral to the end of the function: any attribute read
  on it but ``step`` (``sched.get_last_lr()``, ``sched.last_epoch``) raises a graph break;
- a read of its optimizer's param groups (``ParamGroup.__getitem__`` and friends) or a later
  ``step()`` of that optimizer (which would use the lr the program read before the
  scheduler moved it) raises a graph break too.

A graph break runs the call eagerly, as before. Deferred: ``LRScheduler.step()`` (every
built-in per-epoch and cyclic schedule, and user subclasses that keep it),
``CosineAnnealingWarmRestarts.step()`` and ``SequentialLR``/``ChainedScheduler.step()`` (the
schedulers they step are sealed with them). Not deferred: ``step(epoch)`` and
``ReduceLROnPlateau`` (its step takes a metric).
"""
from __future__ import annotations

from .capture import GraphBreak

_SEALED: dict = {}        # class -> its sealed subclass


def _sealed_getattribute(self, name):
    if name == "step" or name.startswith("__"):
        return object.__getattribute__(self, name)
    raise GraphBreak(f"the function reads the lr scheduler's '{name}' after calling its step(), which a compiled "
                     "call runs after its program (read it before step(), or outside the compiled function)")


def _sealed_class(cls):
    sealed = _SEALED.get(cls)
    if sealed is None:
        sealed = _SEALED[cls] = type(cls.__name__, (cls,), {"__slots__": (), "__module__": cls.__module__,
                                                             "__qualname__": cls.__qualname__,
                                                             "__getattribute__": _sealed_getattribute})
    return sealed


def defer(cap, sched) -> bool:
    """Record ``sched.step()`` on capture ``cap`` (NOTE [deferred scheduler step]); False when
    this scheduler's step cannot be deferred (it then runs in the trace as before)."""
    opt = object.__getattribute__(sched, "__dict__").get("optimizer")
    groups = getattr(opt, "param_groups", None)
    if not isinstance(groups, list):
        return False
    if not _seal(cap, sched):
        return False
    cap.deferred_steps.append(sched)
    cap.note_deferral()
    cap.deferred_groups.update(map(id, groups))
    cap.deferred_optimizers.add(id(opt))
    return True


def _seal(cap, sched) -> bool:
    """Seal ``sched`` and, for ``SequentialLR``/``ChainedScheduler``, the schedulers it steps
    (their ``get_last_lr()`` read after the composite's deferred step would be stale too)."""
    cls = object.__getattribute__(sched, "__class__")
    if cls not in _SEALED.values():
        try:
            object.__setattr__(sched, "__class__", _sealed_class(cls))
        except TypeError:       # a layout __class__ assignment refuses (a user class with slots)
            return False
        cap.sealed.append((sched, cls))
    subs = object.__getattribute__(sched, "__dict__").get("_schedulers", ())
    return all(_seal(cap, s) for s in subs)


def unseal(cap):
    """The sealed schedulers get their own classes back (the function returned or raised)."""
    for sched, cls in reversed(cap.sealed):
        object.__setattr__(sched, "__class__", cls)
    cap.sealed.clear()


def check_group_read(cap, group, key):
    """An option of a param group whose scheduler step was deferred is read after it (its
    ``params``, which no scheduler changes, may be: ``opt.zero_grad()`` after ``sched.step()``)."""
    if cap.deferred_groups and key != "params" and id(group) in cap.deferred_groups:
        raise GraphBreak("the function reads the optimizer's param_groups after calling lr_scheduler.step(), "
                         "which a compiled call runs after its program (read them before step(), or outside)")


def check_optimizer_step(cap, opt):
    """``opt.step()`` after a deferred ``step()`` of a scheduler of ``opt``."""
    if id(opt) in cap.deferred_optimizers:
        raise GraphBreak("the function calls optimizer.step() after lr_scheduler.step() of that optimizer, "
                         "which a compiled call runs after its program: the program would use the lr from "
                         "before the scheduler's step")


def run_deferred(steps):
    """Run the deferred scheduler steps of one call, eagerly, in order."""
    for sched in steps:
        sched.step()
