"""``SparseAdam``. Mirrors ``torch.optim.SparseAdam`` (Adam on the rows a sparse gradient holds)."""
from __future__ import annotations

from .. import Tensor, zeros_like
from ._functional import sparse_adam_step
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """SparseAdam. Mirrors ``torch.optim.SparseAdam``: for sparse COO gradients
    (``nn.Embedding(sparse=True)``); only the rows present in a step's gradient change, their
    moments included.

    Args:
        params: iterable of dense Tensors or of group dicts.
        lr (float, default 1e-3), betas (default (0.9, 0.999)), eps (default 1e-8),
        maximize (bool, default False).

    State per parameter (on its first step): ``step`` (Python int, as torch), ``exp_avg`` and
    ``exp_avg_sq`` (dense zeros like the parameter). Eager only: the rows are found on the host.

    Raises:
        ValueError: lr <= 0, eps <= 0, a beta outside [0, 1), a sparse or complex parameter
            (torch's messages).
        RuntimeError: at ``step()``, a dense gradient.
    """

    _sparse_grad_error = None

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        for check, what in ((lambda p: p.is_sparse, "SparseAdam requires dense parameter tensors"),
                            (lambda p: p.is_complex(), "SparseAdam does not support complex parameters")):
            bad = [[i, j] for i, g in enumerate(self.param_groups) for j, p in enumerate(g["params"]) if check(p)]
            if bad:
                kind = "Sparse" if "dense" in what else "Complex"
                raise ValueError(f"{kind} params at indices {bad}: {what}")

    def _state_of(self, p, group):
        if not p.grad.is_sparse:
            raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        return super()._state_of(p, group)

    def _init_state(self, p, group):
        return {"step": 0, "exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)}

    def _update(self, p, grad, state, group):
        state["step"] += 1
        beta1, beta2 = group["betas"]
        sparse_adam_step(p, grad, state["exp_avg"], state["exp_avg_sq"], state["step"], lr=group["lr"],
                         beta1=beta1, beta2=beta2, eps=group["eps"], maximize=group.get("maximize", False))
