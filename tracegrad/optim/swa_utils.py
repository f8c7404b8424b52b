"""``tracegrad.optim.swa_utils``: mirrors ``torch.optim.swa_utils`` -- ``AveragedModel`` (SWA
and EMA weight averaging), ``SWALR`` and ``update_bn``."""
from __future__ import annotations

import copy
import itertools
import math

import tracegrad

from .. import Tensor, nn
from ._lr_base import LRScheduler, _format_param

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def get_ema_multi_avg_fn(decay=0.999):
    """Mirrors ``torch.optim.swa_utils.get_ema_multi_avg_fn``: an in-place update of lists of
    averaged tensors, ``ema = ema + (1 - decay) * (current - ema)``."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    @tracegrad.no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        for e, c in zip(ema_param_list, current_param_list):
            if e.is_floating_point() or e.is_complex():
                e.lerp_(c, 1 - decay)
            else:
                e.copy_(e * decay + c * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """Mirrors ``torch.optim.swa_utils.get_swa_multi_avg_fn``: the running equal-weight mean of
    lists of tensors, ``avg += (current - avg) / (n + 1)``. Integer tensors are refused as torch's
    foreach kernels refuse them: RuntimeError from ``addcdiv_`` (integer division) for a tensor
    ``num_averaged``, from ``add_`` (a float alpha) for an int one."""
    @tracegrad.no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        for a, c in zip(averaged_param_list, current_param_list):
            if a.is_floating_point() or a.is_complex():
                w = 1 / (num_averaged + 1)
                w = w.to(a.dtype) if isinstance(w, Tensor) else w
                a.lerp_(c, w)
            elif isinstance(num_averaged, Tensor):
                a.addcdiv_(c - a, num_averaged + 1)
            else:
                a.add_(c - a, alpha=1.0 / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """Mirrors ``torch.optim.swa_utils.get_ema_avg_fn``: ``decay * ema + (1 - decay) * current``."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    @tracegrad.no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """Mirrors ``torch.optim.swa_utils.get_swa_avg_fn``: ``avg + (current - avg) / (n + 1)``."""
    @tracegrad.no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(nn.Module):
    """Mirrors ``torch.optim.swa_utils.AveragedModel``: a deep copy of ``model`` (at ``.module``)
    whose parameters (and buffers with ``use_buffers=True``) are averaged by
    ``update_parameters(model)``: equal weights by default, or ``avg_fn(avg, current, n)`` /
    ``multi_avg_fn(avg_list, current_list, n)``. ``n_averaged`` is an int64 buffer; the state_dict
    keys are torch's (``n_averaged``, ``module.<name>``)."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tracegrad.tensor(0, dtype=tracegrad.long))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Folds ``model``'s current parameters (and buffers with ``use_buffers``) into the
        average; the first call copies them."""
        self_param = (itertools.chain(self.module.parameters(), self.module.buffers())
                      if self.use_buffers else self.parameters())
        model_param = (itertools.chain(model.parameters(), model.buffers())
                       if self.use_buffers else model.parameters())
        avg = [p.detach() for p in self_param]
        cur = [p.detach() for p in model_param]
        with tracegrad.no_grad():
            if tracegrad.compiler._tracing():
                # inside a compiled step the first-update branch is a select in the program:
                # reading n_averaged in Python would run the whole step eagerly
                first = self.n_averaged == 0
                folded = [a.clone() for a in avg]
                self._fold(folded, cur)
                for a, c, f in zip(avg, cur, folded):
                    a.copy_(tracegrad.where(first, c, f))
            elif int(self.n_averaged) == 0:
                for a, c in zip(avg, cur):
                    a.copy_(c)
            else:
                self._fold(avg, cur)
            if not self.use_buffers:
                # buffers are not averaged: keep them in sync with the source model; a model with
                # other buffers is refused (ValueError from zip), as torch
                for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_swa.detach().copy_(b_model.detach())
            self.n_averaged.add_(1)

    def _fold(self, avg, cur):
        """Averages ``cur`` into ``avg`` in place with the chosen rule."""
        if self.multi_avg_fn is not None:
            self.multi_avg_fn(avg, cur, self.n_averaged)
            return
        # the default rule is torch's on the CPU (its foreach kernels are for accelerators only):
        # get_swa_avg_fn per tensor, so an integer buffer (use_buffers=True) is averaged and
        # truncated, where the foreach rule refuses it
        fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
        for a, c in zip(avg, cur):
            a.copy_(fn(a, c, self.n_averaged))


@tracegrad.no_grad()
def update_bn(loader, model, device=None):
    """Mirrors ``torch.optim.swa_utils.update_bn``: recomputes every BatchNorm's running
    statistics as the plain average over one pass of ``loader`` (a batch that is a list/tuple
    uses its first element), then restores momenta and the train/eval mode."""
    batchnorms = tuple(getattr(nn, n) for n in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm")
                       if hasattr(nn, n))
    momenta = {}
    for module in model.modules():
        if isinstance(module, batchnorms):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, m in momenta.items():
        module.momentum = m
    model.train(was_training)


class SWALR(LRScheduler):
    """Mirrors ``torch.optim.swa_utils.SWALR``: anneals each group's lr to ``swa_lr`` (a number
    or one per group, stored as ``group['swa_lr']``) over ``anneal_epochs`` steps, by cosine
    (``'cos'``) or linearly, then holds it. Raises ValueError for another strategy, a negative
    or non-int ``anneal_epochs`` or a ``swa_lr`` list of the wrong length."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        # _format_param clones Tensor swa_lrs, so changing the caller's tensor later does not
        # move the schedule (torch's test_constant_initial_params_swalr)
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', "
                             f"instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        """Every attribute but the optimizer and ``anneal_func`` (a function: the state dict
        keeps ``_anneal_strategy`` instead, so it loads with ``weights_only=True``), as torch."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        """Restore attributes from ``state_dict()`` and the anneal function they name."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev_lrs)]
