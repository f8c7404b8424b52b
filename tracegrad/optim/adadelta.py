"""``Adadelta``. Mirrors ``torch.optim.Adadelta``."""
from __future__ import annotations

from .. import float32, tensor, zeros_like
from ._functional import adadelta_step
from ._simple import check_common
from .optimizer import Optimizer

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    """Adadelta. Mirrors ``torch.optim.Adadelta``.

    Args: params; lr (default 1.0), rho (0.9), eps (1e-6), weight_decay (0), maximize (False);
    foreach, capturable, differentiable: stored.
    State per parameter: ``step`` (float32 0-d tensor), ``square_avg``, ``acc_delta``.
    Raises: ValueError for lr, eps, weight_decay < 0 or rho outside [0, 1].
    """

    _fusable = True    # eager steps run as fused programs (compiler.fused_optimizer_group)

    _tensor_state_keys = ("step",)
    # options torch added after the class shipped: a state_dict saved before them (its groups
    # lack the keys) still loads and steps, as torch's __setstate__ fills them in
    _setstate_group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_common(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_common(0.0, eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        return {"step": tensor(0.0, dtype=float32), "square_avg": zeros_like(p),
                "acc_delta": zeros_like(p)}

    def _update(self, p, grad, state, group):
        adadelta_step(p, grad, state["square_avg"], state["acc_delta"], state["step"],
                      lr=group["lr"], rho=group["rho"], eps=group["eps"],
                      weight_decay=group["weight_decay"], maximize=group["maximize"])

# torch.optim.adadelta.adadelta: the functional form (defined with the other rules in _functional.py)
from ._functional import adadelta as adadelta  # noqa: E402,F401
