"""``LRScheduler``, the base of ``tracegrad.optim.lr_scheduler``'s schedulers, and the helpers
they share (one value per param group, Tensor lrs updated in place, get_lr call warnings).

Schedulers are plain Python over the optimizer's ``param_groups`` (no tensors involved unless
a group's ``lr`` is a Tensor, which is updated in place with ``fill_``). Each scheduler uses
torch's *chainable* formula in ``get_lr`` (the new lr computed from the group's current lr)
and its *closed form* only when ``step(epoch)`` is given, exactly as torch does, so the float
sequences agree with torch bit for bit.
"""
from __future__ import annotations

from functools import wraps
from weakref import ref

from .. import Tensor, compiler
from .optimizer import Optimizer
from .._ops.warn import warn as _warn


EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available.")


# the page torch's call-order warnings point to (users and tests look for it in the message)
_ORDER_DOCS = "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"


def _format_param(name, optimizer, param):
    """One value per param group (a list/tuple must have one entry per group)."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} "
                             f"has {len(param)} values, param_groups has "
                             f"{len(optimizer.param_groups)}.")
    else:
        param = [param] * len(optimizer.param_groups)
    return [p.clone() if isinstance(p, Tensor) else p for p in param]


def _param_groups_val_list(optimizer, key):
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key] for g in optimizer.param_groups]


def _update_param_group_val(param_group, key, val):
    if isinstance(param_group[key], Tensor):
        param_group[key].fill_(val.item() if isinstance(val, Tensor) else val)
    else:
        param_group[key] = val


def _warn_get_lr_called_within_step(sched):
    if not sched._get_lr_called_within_step:
        _warn("To get the last learning rate computed by the scheduler, please use "
              "`get_last_lr()`.", UserWarning)


class _enable_get_lr_call:
    def __init__(self, o):
        self.o = o

    def __enter__(self):
        self.o._get_lr_called_within_step = True
        return self

    def __exit__(self, *exc):
        self.o._get_lr_called_within_step = False


class _initial_mode:
    def __init__(self, o):
        self.o = o

    def __enter__(self):
        self.o._is_initial = True

    def __exit__(self, *exc):
        self.o._is_initial = False


class LRScheduler:
    """Base class of the schedulers. Mirrors ``torch.optim.lr_scheduler.LRScheduler``.

    Args:
        optimizer: the ``Optimizer`` whose groups' ``"lr"`` it sets.
        last_epoch (int, default -1): -1 starts fresh (records ``initial_lr`` in each group);
            >= 0 resumes and needs ``initial_lr`` in every group (KeyError otherwise).

    Attributes: ``base_lrs``, ``last_epoch``, ``_step_count``; ``get_last_lr()`` gives the lrs
    set by the last ``step``. ``state_dict()`` holds every attribute but the optimizer.

    Raises: TypeError if ``optimizer`` is not an ``Optimizer``.
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __new__(cls, *args, **kwargs):
        # every scheduler, the composite ones whose __init__ is their own included: one built
        # inside a compiled call is that call's own (compiler._note_scheduler_made)
        self = super().__new__(cls)
        compiler._note_scheduler_made(self)
        return self

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                initial_lr = group["lr"]
                if isinstance(initial_lr, Tensor):
                    initial_lr = initial_lr.clone()
                group.setdefault("initial_lr", initial_lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when "
                                   "resuming scheduler with last_epoch >= 0; load the optimizer's "
                                   "state_dict first, or start with last_epoch=-1")
        self.base_lrs = _param_groups_val_list(optimizer, "initial_lr")
        self.last_epoch = last_epoch

        # mark the optimizer when its step() runs, to warn about calling them in the wrong order
        opt = self.optimizer
        if not hasattr(opt.step, "_wrapped_by_lr_sched"):
            opt_ref = ref(opt)
            func = opt.step.__func__

            @wraps(func)
            def wrapper(*args, **kwargs):
                o = opt_ref()
                o._opt_called = True
                return func.__get__(o, o.__class__)(*args, **kwargs)
            wrapper._wrapped_by_lr_sched = True
            opt.step = wrapper
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        with _initial_mode(self):
            self.step()

    def state_dict(self):
        """Every attribute except the optimizer (torch's layout). Inside a compiled function
        each is guarded (the program would keep the numbers it read)."""
        if compiler._tracing():
            for k in self.__dict__:
                if k != "optimizer":
                    compiler._guard_read(self, k)
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        """Restore attributes from ``state_dict()``."""
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """The lrs (one per group) set by the last ``step``. Read inside a compiled function,
        the numbers are guarded: a scheduler stepped between calls traces again (they would
        be baked into the program)."""
        if compiler._tracing():
            compiler._guard_read(self, "_last_lr")
        return self._last_lr

    def get_lr(self):
        """The next lrs; subclasses implement it (NotImplementedError on the base class, as torch,
        with a message that says so: torch's is empty)."""
        raise NotImplementedError(f"{type(self).__name__}.get_lr() is not implemented: LRScheduler is a base "
                                  "class; subclass it and define get_lr(), or use a scheduler such as StepLR")

    def step(self, epoch=None):
        """Advance one epoch and write the new lrs into the optimizer's groups. ``epoch``
        (deprecated, warns) jumps to that epoch using the closed form where there is one.
        Inside a compiled function it runs after the program, on every call (NOTE [deferred
        scheduler step] in ``_lowering/deferred_step.py``)."""
        if epoch is None and compiler._tracing() and compiler._defer_scheduler_step(self):
            return
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                _warn("Seems like `optimizer.step()` has been overridden after learning "
                      "rate scheduler initialization. Please, make sure to call "
                      "`optimizer.step()` before `lr_scheduler.step()`. See more details at "
                      f"{_ORDER_DOCS}", UserWarning)
            elif not getattr(self.optimizer, "_opt_called", False):
                _warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                      "You should call them in the opposite order: `optimizer.step()` "
                      "before `lr_scheduler.step()`.  Failure to do this will result in "
                      "skipping the first value of the learning rate schedule. See more "
                      f"details at {_ORDER_DOCS}",
                      UserWarning)
        self._step_count += 1
        if epoch is not None:
            _warn(EPOCH_DEPRECATION_WARNING, UserWarning)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        with _enable_get_lr_call(self):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                if hasattr(self, "_get_closed_form_lr"):
                    values = self._get_closed_form_lr()
                else:
                    values = self.get_lr()
        # strict, as torch: a param group added after the scheduler was built has no lr here
        # (ValueError, not a group silently left at its lr)
        for param_group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _update_param_group_val(param_group, "lr", lr)
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")


class _LRScheduler(LRScheduler):
    """torch's older name, kept as a subclass (as in torch): the built-in schedulers derive from
    ``LRScheduler`` and are not ``_LRScheduler`` instances; a user scheduler may derive from either."""
