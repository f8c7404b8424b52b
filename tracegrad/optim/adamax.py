"""``Adamax``. Mirrors ``torch.optim.Adamax``."""
from __future__ import annotations

from .. import float32, tensor, zeros_like
from ._functional import adamax_step
from ._simple import check_common
from .optimizer import Optimizer

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm). Mirrors ``torch.optim.Adamax``.

    Args: params; lr (default 2e-3), betas ((0.9, 0.999)), eps (1e-8), weight_decay (0),
    maximize (False); foreach, differentiable, capturable: stored.
    State per parameter: ``step`` (float32 0-d tensor), ``exp_avg``, ``exp_inf``.
    Raises: ValueError for lr, eps, weight_decay < 0 or a beta outside [0, 1).
    """

    _fusable = True    # eager steps run as fused programs (compiler.fused_optimizer_group)

    _tensor_state_keys = ("step",)
    # options torch added after the class shipped: a state_dict saved before them (its groups
    # lack the keys) still loads and steps, as torch's __setstate__ fills them in
    _setstate_group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_common(lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        return {"step": tensor(0.0, dtype=float32), "exp_avg": zeros_like(p),
                "exp_inf": zeros_like(p)}

    def _update(self, p, grad, state, group):
        beta1, beta2 = group["betas"]
        adamax_step(p, grad, state["exp_avg"], state["exp_inf"], state["step"], lr=group["lr"],
                    beta1=beta1, beta2=beta2, eps=group["eps"],
                    weight_decay=group["weight_decay"], maximize=group["maximize"])

# torch.optim.adamax.adamax: the functional form (defined with the other rules in _functional.py)
from ._functional import adamax as adamax  # noqa: E402,F401
