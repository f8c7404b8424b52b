"""``Adafactor``. Mirrors ``torch.optim.Adafactor`` (factored second moments, relative step)."""
from __future__ import annotations

from .. import Tensor, finfo, float32, tensor, zeros, zeros_like
from ._functional import adafactor_step
from ._simple import check_bounds
from .optimizer import Optimizer

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern, 2018). Mirrors ``torch.optim.Adafactor``.

    Args:
        params: iterable of Tensors or of group dicts.
        lr (float or 1-element Tensor, default 1e-2): the cap on the relative step size
            ``min(lr, 1/sqrt(step))``.
        beta2_decay (float <= 0, default -0.8): the second-moment weight is ``step ** beta2_decay``.
        eps (tuple ``(eps1, eps2)``, default ``(None, 1e-3)``): eps1 floors the second moment
            (None: the machine eps of the group's first parameter's dtype, as torch); eps2 floors
            the parameter RMS that scales the step.
        d (float >= 1, default 1.0): update clipping threshold (on the update's RMS).
        weight_decay (float, default 0): decoupled (``param *= 1 - lr * weight_decay``).
        foreach (stored; no special kernels), maximize (bool, default False).

    State per parameter (created on its first step with a gradient): ``step`` (float32 0-d);
    for a gradient of >= 2 dims ``row_var`` (shape with the last dim 1) and ``col_var`` (the
    second-to-last dim 1), else ``variance`` (like the parameter).

    Raises:
        ValueError: lr < 0 (or a Tensor lr of more than one element), beta2_decay > 0,
            eps1 < 0, eps2 < 0, d < 1, weight_decay < 0 (torch's messages).
        RuntimeError: at ``step()``, a complex parameter or a sparse gradient.
        ZeroDivisionError: at ``step()``, a parameter with no elements (as torch).
    """

    _tensor_state_keys = ("step",)
    _sparse_grad_error = None   # checked in _state_of, after the complex check (torch's order)
    _setstate_group_defaults = dict(foreach=None)

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr is None:   # torch compares it (0.0 <= lr): TypeError, where check_bounds skips a None
            raise TypeError("Adafactor: '<=' not supported between instances of 'float' and 'NoneType' (lr must "
                            "be a number)")
        check_bounds(("Learning rate", lr, ">=", 0), ("beta2_decay", beta2_decay, "<=", 0),
                     ("epsilon1", eps[0], ">=", 0), ("epsilon2", eps[1], ">=", 0),
                     ("Clipping threshold d", d, ">=", 1), ("weight_decay", weight_decay, ">=", 0))
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def _state_of(self, p, group):
        # torch checks each parameter as it gathers the group, before any update
        _refuse_complex_or_sparse(type(self).__name__, p)
        return super()._state_of(p, group)

    def _init_state(self, p, group):
        if p.numel() == 0:
            # torch's step divides the parameter's norm by sqrt(numel()) as Python floats; the
            # rule here would compute 0/0 silently. Checked once, on the first step (no state
            # is stored, so each later step refuses too)
            raise ZeroDivisionError("Adafactor.step: a parameter with no elements has no RMS (its norm is "
                                    "divided by sqrt(numel()) = 0); leave empty tensors out of the optimizer")
        state = {"step": tensor(0.0, dtype=float32)}
        if p.grad.dim() > 1:
            shape = list(p.grad.shape)
            state["row_var"] = zeros(shape[:-1] + [1], dtype=p.grad.dtype, device=p.grad.device)
            state["col_var"] = zeros(shape[:-2] + [1, shape[-1]], dtype=p.grad.dtype, device=p.grad.device)
        else:
            state["variance"] = zeros_like(p.grad)
        return state

    def _update_group(self, group, items):
        eps1 = group["eps"][0]
        if eps1 is None:
            # torch resolves it once, from the first parameter, for the whole group
            eps1 = finfo(items[0][0].dtype).eps
        for p, grad, state in items:
            self._update(p, grad, state, group, eps1=eps1)

    def _update(self, p, grad, state, group, eps1=None):
        # torch asserts the state matches the gradient's rank (a state_dict from other parameters)
        if grad.dim() > 1:
            if state.get("row_var") is None or state.get("col_var") is None:
                raise AssertionError("row_var and col_var should be defined when grad is multidimensional "
                                     "(Adafactor: the loaded state belongs to a parameter of another shape)")
        elif state.get("variance") is None:
            raise AssertionError("variance should be defined when grad is a vector (Adafactor: the loaded state "
                                 "belongs to a parameter of another shape)")
        adafactor_step(p, grad, state.get("row_var"), state.get("col_var"), state.get("variance"),
                       state["step"], lr=group["lr"], beta2_decay=group["beta2_decay"], eps1=eps1,
                       eps2=group["eps"][1], d=group["d"], weight_decay=group["weight_decay"],
                       maximize=group["maximize"])

def _refuse_complex_or_sparse(name, p):
    """torch's RuntimeErrors for the optimizers that take neither complex parameters nor sparse
    gradients (Adafactor, Muon)."""
    if p.is_complex():
        raise RuntimeError(f"{name} does not support complex parameters")
    if p.grad.is_sparse:
        raise RuntimeError(f"{name} does not support sparse gradients")
