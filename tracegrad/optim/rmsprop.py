"""``RMSprop``. Mirrors ``torch.optim.RMSprop`` (alpha, eps, centered, momentum)."""
from __future__ import annotations

from .. import float32, tensor, zeros_like
from ._functional import rmsprop_step
from ._simple import check_common
from .optimizer import Optimizer

__all__ = ["RMSprop", "rmsprop"]


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

    _tensor_state_keys = ("step",)

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_common(lr, eps=eps)
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

    _setstate_group_defaults = dict(momentum=0, centered=False, foreach=None, maximize=False,
                                    differentiable=False, capturable=False)

    _fusable = True    # eager steps run as fused programs (compiler.fused_optimizer_group)

    def _fuses(self, group):
        # centered groups run per op: ``square_avg - grad_avg**2`` cancels, and the fused
        # programs' rounding (XLA contracts a multiply and the add after it into an FMA, across
        # ops) is amplified past the per-op path's agreement with torch (1e-4 relative in 50
        # steps of tests/optim/test_optimizers.py's centered, momentum, weight decay case)
        return not group["centered"]

    def _init_state(self, p, group):
        state = {"step": tensor(0.0, dtype=float32), "square_avg": zeros_like(p)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = zeros_like(p)
        return state

    def _update(self, p, grad, state, group):
        rmsprop_step(p, grad, state["square_avg"], state.get("grad_avg"),
                     state.get("momentum_buffer"), state["step"], lr=group["lr"],
                     alpha=group["alpha"], eps=group["eps"], weight_decay=group["weight_decay"],
                     momentum=group["momentum"], centered=group["centered"],
                     maximize=group["maximize"])

# torch.optim.rmsprop.rmsprop: the functional form (defined with the other rules in _functional.py)
from ._functional import rmsprop as rmsprop  # noqa: E402,F401
