"""``AdamW``. Mirrors ``torch.optim.AdamW``: Adam with decoupled weight decay."""
from __future__ import annotations

from .adam import Adam

__all__ = ["AdamW", "adamw"]


class AdamW(Adam):
    """AdamW. Mirrors ``torch.optim.AdamW``: ``Adam(..., decoupled_weight_decay=True)`` with
    ``weight_decay`` defaulting to 1e-2; each step first scales the parameter by
    ``1 - lr * weight_decay``. Same state and errors as :class:`Adam`."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True

# torch.optim.adamw.adamw: the functional form (defined with the other rules in _functional.py)
from ._functional import adamw as adamw  # noqa: E402,F401
