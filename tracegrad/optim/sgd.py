"""``SGD``. Mirrors ``torch.optim.SGD`` (momentum, dampening, Nesterov, weight decay, maximize)."""
from __future__ import annotations

from .. import Tensor
from ._functional import sgd_step
from .optimizer import Optimizer

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    """Stochastic gradient descent. Mirrors ``torch.optim.SGD``.

    Args:
        params: iterable of Tensors or of group dicts.
        lr (float, default 1e-3), momentum (float, default 0), dampening (float, default 0),
        weight_decay (float, default 0, L2 penalty added to the gradient),
        nesterov (bool, default False), maximize (bool, default False).
        foreach, differentiable, fused: accepted and stored in the groups (an eager step with
        ``differentiable=False`` runs each group as fused programs either way).

    State per parameter: ``momentum_buffer`` (Tensor, or None while momentum == 0), created on
    the first step as a clone of the gradient, as torch. Parameters whose ``.grad`` is None are
    skipped.

    Raises:
        ValueError: ``lr``, ``momentum`` or ``weight_decay`` < 0; ``nesterov`` without momentum
            or with nonzero dampening.
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:    # not check_common: torch's SGD lets a NaN lr through
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        if fused:          # torch's argument checks (the kernel does not depend on the flag)
            self._step_supports_amp_scaling = True    # NOTE [amp scaling inputs] (optimizer.py)
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    _setstate_group_defaults = dict(nesterov=False, maximize=False, foreach=None,
                                    differentiable=False, fused=False)

    _supports_complex = True
    _sparse_grad_error = None   # sparse COO gradients step through the same rule (sparse ops)
    _amp_scaling = True   # NOTE [amp scaling inputs] (optimizer.py)
    _foreach_differentiable_error = None   # torch's foreach SGD differentiates (it keeps a graph)

    _fusable = True    # eager steps run as fused programs (compiler.fused_optimizer_group)

    def _state_of(self, p, group):
        # torch touches self.state only when momentum is on (no empty entries otherwise); the
        # buffer itself is created by sgd_step on the first step, not here
        return self.state[p] if group["momentum"] != 0 else {}

    def _update(self, p, grad, state, group):
        buf = sgd_step(p, grad, state.get("momentum_buffer"), lr=group["lr"],
                       momentum=group["momentum"], dampening=group["dampening"],
                       nesterov=group["nesterov"], weight_decay=group["weight_decay"],
                       maximize=group["maximize"])
        if group["momentum"] != 0:
            state["momentum_buffer"] = buf

# torch.optim.sgd.sgd: the functional form (defined with the other rules in _functional.py)
from ._functional import sgd as sgd  # noqa: E402,F401
