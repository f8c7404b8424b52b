"""``Muon``. Mirrors ``torch.optim.Muon`` (momentum orthogonalized by Newton-Schulz, 2-D only)."""
from __future__ import annotations

from .. import Tensor, zeros_like
from ._functional import muon_step
from ._simple import check_bounds
from .adafactor import _refuse_complex_or_sparse
from .optimizer import Optimizer

__all__ = ["Muon"]

_ADJUST_LR_FNS = (None, "original", "match_rms_adamw")


class Muon(Optimizer):
    """Muon. Mirrors ``torch.optim.Muon``.

    Args:
        params: iterable of 2-D Tensors or of group dicts.
        lr (float, default 1e-3), weight_decay (float, default 0.1; decoupled),
        momentum (float, default 0.95), nesterov (bool, default True),
        ns_coefficients (three floats, default (3.4445, -4.7750, 2.0315)),
        eps (float, default 1e-7; floors the norm the update is divided by),
        ns_steps (int < 100, default 5), adjust_lr_fn (None/"original": lr scaled by
        ``sqrt(max(1, rows/cols))``; "match_rms_adamw": by ``0.2 * sqrt(max(rows, cols))``).

    The orthogonalization runs in bfloat16, as torch; XLA's and ATen's bfloat16 matmuls may
    round differently, so parameters agree with torch to bfloat16 precision of the update.
    State per parameter: ``momentum_buffer`` (zeros like the gradient, on its first step).

    Raises:
        ValueError: lr, momentum or weight_decay < 0; an unknown adjust_lr_fn; a parameter of
            the constructor's groups that is not 2-D (torch's messages); at ``step()``, ns_steps
            >= 100 or not three coefficients.
        RuntimeError: at ``step()``, a complex parameter or a sparse gradient.
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(3.4445, -4.7750, 2.0315), eps=1e-7, ns_steps=5,
                 adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_bounds(("Learning rate", lr, ">=", 0), ("momentum", momentum, ">=", 0),
                     ("weight decay", weight_decay, ">=", 0))
        if adjust_lr_fn not in _ADJUST_LR_FNS:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: {p.size()}")

    _sparse_grad_error = None   # checked in _state_of, after the complex check (torch's order)

    def _state_of(self, p, group):
        _refuse_complex_or_sparse(type(self).__name__, p)
        state = self.state[p]
        if "momentum_buffer" not in state:     # torch's test (not "state is empty")
            state["momentum_buffer"] = zeros_like(p.grad)
        return state

    def _update(self, p, grad, state, group):
        muon_step(p, grad, state["momentum_buffer"], lr=group["lr"], weight_decay=group["weight_decay"],
                  momentum=group["momentum"], nesterov=group["nesterov"],
                  ns_coefficients=group["ns_coefficients"], ns_steps=group["ns_steps"],
                  eps=group["eps"], adjust_lr_fn=group["adjust_lr_fn"])
