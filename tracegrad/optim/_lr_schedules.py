"""The per-epoch schedules of ``tracegrad.optim.lr_scheduler``: ``LambdaLR``,
``MultiplicativeLR``, ``StepLR``, ``MultiStepLR``, ``ConstantLR``, ``LinearLR``,
``ExponentialLR``, ``PolynomialLR``, ``CosineAnnealingLR`` (each a chainable ``get_lr`` and,
where torch has one, a closed form)."""
from __future__ import annotations

import math
import types
from bisect import bisect_right
from collections import Counter

from ._lr_base import LRScheduler, _param_groups_val_list, _warn_get_lr_called_within_step


class _LambdaBase(LRScheduler):
    def _set_lambdas(self, optimizer, lr_lambda):
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)

    def state_dict(self):
        """Attributes except the optimizer; lambdas are saved only when they are callable
        objects (their ``__dict__``), as torch."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        sd["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                            for fn in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict):
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        state_dict["lr_lambdas"] = lr_lambdas
        for idx, fn in enumerate(lr_lambdas):
            if fn is not None:
                self.lr_lambdas[idx].__dict__.update(fn)


class LambdaLR(_LambdaBase):
    """``lr = base_lr * lr_lambda(epoch)``. Mirrors ``torch.optim.lr_scheduler.LambdaLR``.
    ``lr_lambda``: a function of the epoch, or a list with one per group (ValueError if the
    count differs)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        self._set_lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        return [base_lr * lmbda(self.last_epoch) for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs, strict=True)]


class MultiplicativeLR(_LambdaBase):
    """``lr *= lr_lambda(epoch)`` each step. Mirrors ``torch.optim.lr_scheduler.MultiplicativeLR``.
    TypeError for a non-callable lambda."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        self._set_lambdas(optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if not self._is_initial:
            return [g["lr"] * lmbda(self.last_epoch)
                    for lmbda, g in zip(self.lr_lambdas, self.optimizer.param_groups, strict=True)]
        return _param_groups_val_list(self.optimizer, "lr")


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` (default 0.1) every ``step_size`` epochs. Mirrors
    ``torch.optim.lr_scheduler.StepLR``."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _param_groups_val_list(self.optimizer, "lr")
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone epoch (repeated milestones multiply
    again). Mirrors ``torch.optim.lr_scheduler.MultiStepLR``."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self.last_epoch not in self.milestones:
            return _param_groups_val_list(self.optimizer, "lr")
        return [g["lr"] * self.gamma ** self.milestones[self.last_epoch] for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """Scale the lr by ``factor`` until ``total_iters``. Mirrors
    ``torch.optim.lr_scheduler.ConstantLR``. ValueError unless 0 <= factor <= 1."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _param_groups_val_list(self.optimizer, "lr")
        return [g["lr"] * (1.0 / self.factor) for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the lr linearly from ``start_factor`` to ``end_factor`` over ``total_iters``
    epochs. Mirrors ``torch.optim.lr_scheduler.LinearLR``. ValueError unless
    0 < start_factor <= 1 and 0 <= end_factor <= 1."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less "
                             "or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _param_groups_val_list(self.optimizer, "lr")
        d = self.end_factor - self.start_factor
        return [g["lr"] * (1.0 + d / (self.total_iters * self.start_factor + (self.last_epoch - 1) * d))
                for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                           * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch. Mirrors ``torch.optim.lr_scheduler.ExponentialLR``."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return _param_groups_val_list(self.optimizer, "lr")
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the lr with a polynomial of ``power`` over ``total_iters``. Mirrors
    ``torch.optim.lr_scheduler.PolynomialLR``."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self._is_initial or self.last_epoch > self.total_iters:
            return _param_groups_val_list(self.optimizer, "lr")
        decay = ((1.0 - self.last_epoch / self.total_iters)
                 / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [g["lr"] * decay for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the base lr to ``eta_min`` over ``T_max`` epochs (then back up,
    periodically). Mirrors ``torch.optim.lr_scheduler.CosineAnnealingLR``, recursive form."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return _param_groups_val_list(self.optimizer, "lr")
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base_lr, _ in zip(self.base_lrs, self.optimizer.param_groups, strict=True)]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [g["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, g in zip(self.base_lrs, self.optimizer.param_groups, strict=True)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (g["lr"] - self.eta_min) + self.eta_min
                for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]
