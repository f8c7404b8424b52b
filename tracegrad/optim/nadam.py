"""``NAdam``. Mirrors ``torch.optim.NAdam``."""
from __future__ import annotations

from .. import float32, tensor, zeros_like
from ._functional import nadam_step
from ._simple import check_common
from .optimizer import Optimizer

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    """NAdam (Adam with Nesterov momentum). Mirrors ``torch.optim.NAdam``.

    Args: params; lr (default 2e-3), betas ((0.9, 0.999)), eps (1e-8), weight_decay (0),
    momentum_decay (4e-3), decoupled_weight_decay (False), maximize (False); foreach,
    capturable, differentiable: stored.
    State per parameter: ``step`` and ``mu_product`` (float32 0-d tensors), ``exp_avg``,
    ``exp_avg_sq``.
    Raises: ValueError for lr, eps, weight_decay, momentum_decay < 0 or a beta outside [0, 1).
    """

    _fusable = True    # eager steps run as fused programs (compiler.fused_optimizer_group)

    _tensor_state_keys = ("step", "mu_product")
    # options torch added after the class shipped: a state_dict saved before them (its groups
    # lack the keys) still loads and steps, as torch's __setstate__ fills them in
    _setstate_group_defaults = dict(maximize=False, foreach=None, capturable=False, differentiable=False,
                                    decoupled_weight_decay=False)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_common(lr, eps=eps, betas=betas, weight_decay=weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        return {"step": tensor(0.0, dtype=float32), "mu_product": tensor(1.0, dtype=float32),
                "exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)}

    def _update(self, p, grad, state, group):
        beta1, beta2 = group["betas"]
        nadam_step(p, grad, state["exp_avg"], state["exp_avg_sq"], state["mu_product"],
                   state["step"], lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                   weight_decay=group["weight_decay"], momentum_decay=group["momentum_decay"],
                   maximize=group["maximize"],
                   decoupled_weight_decay=group["decoupled_weight_decay"])

# torch.optim.nadam.nadam: the functional form (defined with the other rules in _functional.py)
from ._functional import nadam as nadam  # noqa: E402,F401
