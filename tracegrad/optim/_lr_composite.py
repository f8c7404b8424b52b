"""Schedulers made of other schedulers: ``SequentialLR`` (one after another at milestones)
and ``ChainedScheduler`` (all of them on every step). Part of ``tracegrad.optim.lr_scheduler``."""
from __future__ import annotations

from bisect import bisect_right

from .. import compiler

from ._lr_base import LRScheduler, _param_groups_val_list, _update_param_group_val
from ._lr_plateau import ReduceLROnPlateau


class SequentialLR(LRScheduler):
    """Run ``schedulers`` one after another, switching at ``milestones``. Mirrors
    ``torch.optim.lr_scheduler.SequentialLR``.

    Raises: ValueError for no schedulers, a ReduceLROnPlateau, a scheduler of another
    optimizer, or ``len(milestones) != len(schedulers) - 1``; TypeError for an object without
    ``optimizer``.
    """

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        name = self.__class__.__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        for i, s in enumerate(schedulers):
            if not hasattr(s, "optimizer"):
                raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"{name} does not support `ReduceLROnPlateau` scheduler as it "
                                 "requires additional kwargs to be specified when calling `step`, "
                                 f"but got one at index {i} in the given schedulers sequence.")
            if optimizer is not s.optimizer:
                raise ValueError(f"{name} expects all schedulers to belong to the same optimizer, "
                                 f"but got scheduler {s.__class__.__name__} at index {i} has "
                                 f"{s.optimizer}, which is different from {optimizer.__class__.__name__}.")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one "
                             "more than the number of milestone points, but got number of "
                             f"schedulers {len(schedulers)} and the number of milestones to be "
                             f"equal to {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in self.optimizer.param_groups:
            _update_param_group_val(group, "lr", group["initial_lr"])
        self.recursive_undo()
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def recursive_undo(self, sched=None):
        """Undo the initial step each sub-scheduler took at construction."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self):
        """Advance one epoch, stepping the scheduler in charge (restarting it at a milestone).
        Inside a compiled function it runs after the program (NOTE [deferred scheduler step])."""
        if compiler._tracing() and compiler._defer_scheduler_step(self):
            return
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self):
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict):
        _schedulers = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        state_dict["_schedulers"] = _schedulers
        for idx, s in enumerate(_schedulers):
            self._schedulers[idx].load_state_dict(s)


class ChainedScheduler(LRScheduler):
    """Step several schedulers together each epoch. Mirrors
    ``torch.optim.lr_scheduler.ChainedScheduler``."""

    def __init__(self, schedulers, optimizer=None):
        if len(schedulers) < 1:
            raise ValueError(f"{self.__class__.__name__} expects at least one scheduler to be "
                             "chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        for i, s in enumerate(schedulers):
            if not hasattr(s, "optimizer"):
                raise TypeError(f"{self.__class__.__name__} at index {i} should have `optimizer` "
                                "as its attribute.")
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"{self.__class__.__name__} does not support `ReduceLROnPlateau` "
                                 f"scheduler, but got one at index {i}.")
            if optimizer is not s.optimizer:
                raise ValueError(f"{self.__class__.__name__} expects all schedulers to belong to "
                                 f"the same optimizer, but got scheduler {s.__class__.__name__} at index "
                                 f"{i} has {s.optimizer}, which is different from "
                                 f"{optimizer.__class__.__name__}.")
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _param_groups_val_list(self._schedulers[-1].optimizer, "lr")

    def step(self):
        """Step every scheduler; inside a compiled function after the program (NOTE [deferred
        scheduler step])."""
        if compiler._tracing() and compiler._defer_scheduler_step(self):
            return
        for s in self._schedulers:
            s.step()
        self._last_lr = _param_groups_val_list(self._schedulers[-1].optimizer, "lr")

    state_dict = SequentialLR.state_dict
    load_state_dict = SequentialLR.load_state_dict
