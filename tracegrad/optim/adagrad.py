"""``Adagrad``. Mirrors ``torch.optim.Adagrad`` (lr_decay, initial_accumulator_value)."""
from __future__ import annotations

from .. import float32, tensor
from ._functional import adagrad_step
from ._simple import check_common
from .optimizer import Optimizer, full_like_reals

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    """Adagrad. Mirrors ``torch.optim.Adagrad`` (dense gradients).

    Args:
        params: iterable of Tensors or of group dicts.
        lr (float, default 1e-2), lr_decay (float, default 0), weight_decay (float, default 0),
        initial_accumulator_value (float, default 0), eps (float, default 1e-10),
        foreach (stored), maximize (bool, default False), differentiable, fused (stored).

    State per parameter, created in ``__init__`` as torch: ``step`` (float32 0-d tensor) and
    ``sum`` (filled with ``initial_accumulator_value``).

    Raises:
        ValueError: lr, lr_decay, weight_decay, initial_accumulator_value or eps < 0.
    """

    _tensor_state_keys = ("step",)
    _sparse_grad_error = None   # adagrad_step has torch's sparse branch
    _amp_scaling = True   # NOTE [amp scaling inputs] (optimizer.py)

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_common(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        if fused:          # torch's argument checks (the kernel does not depend on the flag)
            self._step_supports_amp_scaling = True    # NOTE [amp scaling inputs] (optimizer.py)
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        # torch creates Adagrad's state here, for every parameter; parameters of a group added
        # later get theirs on their first step (``_init_state``)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p].update(self._init_state(p, group))

    _setstate_group_defaults = dict(foreach=None, maximize=False, differentiable=False, fused=None)

    _fusable = True    # eager steps run as fused programs (compiler.fused_optimizer_group)

    def _init_state(self, p, group):
        # as torch: the constructor's initial_accumulator_value, even for a group that set its own
        return {"step": tensor(0.0, dtype=float32), "sum": full_like_reals(p, self.defaults["initial_accumulator_value"])}

    def share_memory(self):
        """Mirrors ``torch.optim.Adagrad.share_memory``: moves every parameter's ``sum`` state
        into shared memory (``Tensor.share_memory_``), for optimizers shared across processes."""
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    def _update(self, p, grad, state, group):
        adagrad_step(p, grad, state["sum"], state["step"], lr=group["lr"],
                     lr_decay=group["lr_decay"], eps=group["eps"],
                     weight_decay=group["weight_decay"], maximize=group["maximize"])

# torch.optim.adagrad.adagrad: the functional form (defined with the other rules in _functional.py)
from ._functional import adagrad as adagrad  # noqa: E402,F401
