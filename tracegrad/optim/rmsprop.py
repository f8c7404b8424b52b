"""``RMSprop``. Mirrors ``torch.optim.RMSprop`` (alpha, eps, centered, momentum)."""
from __future__ import annotations

from .. import Tensor, float32, tensor, zeros_like
from ._functional import rmsprop_step
from .optimizer import Optimizer, _check_real, _use_grad_for_differentiable

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop. Mirrors ``torch.optim.RMSprop``.

    Args:
        params: iterable of Tensors or of group dicts.
        lr (float, default 1e-2), alpha (float, default 0.99), eps (float, default 1e-8),
        weight_decay (float, default 0), momentum (float, default 0), centered (bool, default
        False), maximize (bool, default False); capturable, foreach, differentiable: stored.

    State per parameter: ``step`` (float32 0-d tensor), ``square_avg``, plus
    ``momentum_buffer`` when momentum > 0 and ``grad_avg`` when centered.

    Raises:
        ValueError: lr, eps, momentum, weight_decay or alpha < 0.
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """One RMSprop step over every parameter with a gradient; returns ``closure()``'s loss."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                _check_real(p, "RMSprop")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = tensor(0.0, dtype=float32)
                    state["square_avg"] = zeros_like(p)
                    if group["momentum"] > 0:
                        state["momentum_buffer"] = zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = zeros_like(p)
                rmsprop_step(p, p.grad, state["square_avg"], state.get("grad_avg"),
                             state.get("momentum_buffer"), state["step"], lr=group["lr"],
                             alpha=group["alpha"], eps=group["eps"],
                             weight_decay=group["weight_decay"], momentum=group["momentum"],
                             centered=group["centered"], maximize=group["maximize"])
        return loss
