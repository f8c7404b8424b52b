"""``ASGD``. Mirrors ``torch.optim.ASGD``."""
from __future__ import annotations

from .. import float32, ones, tensor, zeros_like
from ._functional import asgd_step
from ._simple import check_common
from .optimizer import Optimizer

__all__ = ["ASGD", "asgd"]


class ASGD(Optimizer):
    """Averaged stochastic gradient descent. Mirrors ``torch.optim.ASGD``.

    Args: params; lr (default 1e-2), lambd (1e-4), alpha (0.75), t0 (1e6), weight_decay (0),
    maximize (False); foreach, differentiable, capturable: stored.
    State per parameter: ``step``, ``eta`` (starts at lr), ``mu`` (starts at 1), all float32
    0-d tensors, and ``ax`` (the averaged parameter).
    Raises: ValueError for lr < 0 or weight_decay < 0; RuntimeError on ``step`` for an integer
    or bool parameter (as torch's in-place float update).
    """

    _fusable = True    # eager steps run as fused programs (compiler.fused_optimizer_group)

    _tensor_state_keys = ("step", "eta", "mu")
    # options torch added after the class shipped: a state_dict saved before them (its groups
    # lack the keys) still loads and steps, as torch's __setstate__ fills them in
    _setstate_group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_common(lr, weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        if not (p.is_floating_point() or p.is_complex()):
            # the rule casts its float factors to the parameter's dtype (to keep float16 params
            # float16), which would truncate them to 0 for an integer one; torch's in-place
            # ``param.mul_(1 - lambd * eta)`` refuses the float result instead. Checked here,
            # on the first step, so the step itself pays nothing (no state is stored, so each
            # later step refuses too, as torch's)
            raise RuntimeError(f"ASGD.step: result type Float can't be cast to the desired output type "
                               f"{p.dtype} of a parameter; ASGD scales parameters by float factors, "
                               "so optimize floating-point (or complex) tensors")
        lr = group["lr"]
        # clone() last: ``eta`` owns its storage (``reshape(())`` of a 0-d tensor is a view, and
        # a compiled step cannot bind a view into optimizer state: a graph break)
        eta = (lr.detach().reshape(()).to(float32).clone() if hasattr(lr, "shape")
               else tensor(lr, dtype=float32))
        return {"step": tensor(0.0, dtype=float32), "eta": eta, "mu": ones((), dtype=float32),
                "ax": zeros_like(p)}

    def _update(self, p, grad, state, group):
        asgd_step(p, grad, state["ax"], state["eta"], state["mu"], state["step"], lr=group["lr"],
                  lambd=group["lambd"], alpha=group["alpha"], t0=group["t0"],
                  weight_decay=group["weight_decay"], maximize=group["maximize"])

# torch.optim.asgd.asgd: the functional form (defined with the other rules in _functional.py)
from ._functional import asgd as asgd  # noqa: E402,F401
