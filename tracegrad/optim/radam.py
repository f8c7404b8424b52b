"""``RAdam``. Mirrors ``torch.optim.RAdam``."""
from __future__ import annotations

from .. import float32, tensor, zeros_like
from ._functional import radam_step
from ._simple import check_common
from .optimizer import Optimizer

__all__ = ["RAdam", "radam"]


class RAdam(Optimizer):
    """RAdam (rectified Adam). Mirrors ``torch.optim.RAdam``.

    Args: params; lr (default 1e-3), betas ((0.9, 0.999)), eps (1e-8), weight_decay (0),
    decoupled_weight_decay (False), maximize (False); foreach, capturable, differentiable:
    stored.
    State per parameter: ``step`` (float32 0-d tensor), ``exp_avg``, ``exp_avg_sq``.
    Raises: ValueError for lr, eps, weight_decay < 0 or a beta outside [0, 1).
    """

    _fusable = True    # eager steps run as fused programs (compiler.fused_optimizer_group)

    _tensor_state_keys = ("step",)
    # options torch added after the class shipped: a state_dict saved before them (its groups
    # lack the keys) still loads and steps, as torch's __setstate__ fills them in
    _setstate_group_defaults = dict(foreach=None, maximize=False, differentiable=False, decoupled_weight_decay=False,
                                    capturable=False)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        check_common(lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        return {"step": tensor(0.0, dtype=float32), "exp_avg": zeros_like(p),
                "exp_avg_sq": zeros_like(p)}

    def _update(self, p, grad, state, group):
        beta1, beta2 = group["betas"]
        radam_step(p, grad, state["exp_avg"], state["exp_avg_sq"], state["step"], lr=group["lr"],
                   beta1=beta1, beta2=beta2, eps=group["eps"],
                   weight_decay=group["weight_decay"], maximize=group["maximize"],
                   decoupled_weight_decay=group["decoupled_weight_decay"])

# torch.optim.radam.radam: the functional form (defined with the other rules in _functional.py)
from ._functional import radam as radam  # noqa: E402,F401
