"""``Adam``. Mirrors ``torch.optim.Adam`` (amsgrad, weight decay, maximize, decoupled decay)."""
from __future__ import annotations

from .. import Tensor, bfloat16, float16, float32, tensor, zeros_like
from ._functional import _scalar, adam_bias_corrections, adam_step, fused_adam_step_low
from ._simple import check_common
from .optimizer import Optimizer

__all__ = ["Adam", "adam"]


class Adam(Optimizer):
    """Adam. Mirrors ``torch.optim.Adam``.

    Args:
        params: iterable of Tensors or of group dicts.
        lr (float, default 1e-3), betas (tuple of two floats, default (0.9, 0.999)),
        eps (float, default 1e-8), weight_decay (float, default 0; L2 added to the gradient,
        or decoupled when ``decoupled_weight_decay=True``), amsgrad (bool, default False),
        maximize (bool, default False).
        foreach, capturable, differentiable, fused: accepted and stored (an eager step with
        ``differentiable=False`` runs each group as fused programs either way).

    State per parameter (created lazily on the first step with a gradient): ``step`` (float32
    0-d tensor), ``exp_avg``, ``exp_avg_sq`` and, with amsgrad, ``max_exp_avg_sq`` (zeros like
    the parameter).

    Raises:
        ValueError: lr, eps or weight_decay < 0; a beta outside [0, 1); betas not both floats or
            both Tensors; a Tensor lr or beta of more than one element, or with ``foreach=True``
            and ``capturable=False``.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        _check_tensor_hyperparameter("lr", lr, foreach=foreach, capturable=capturable)
        check_common(lr, eps=eps, betas=betas, weight_decay=weight_decay)
        _check_betas(betas, foreach=foreach, capturable=capturable)
        defaults = dict(lr=lr, betas=tuple(_scalar(b) for b in betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        if fused:
            self._step_supports_amp_scaling = True    # NOTE [amp scaling inputs] (optimizer.py)
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    _sparse_grad_error = "Adam does not support sparse gradients, please consider SparseAdam instead"
    _amp_scaling = True   # NOTE [amp scaling inputs] (optimizer.py)
    _setstate_group_defaults = dict(amsgrad=False, maximize=False, foreach=None, capturable=False,
                                    differentiable=False, decoupled_weight_decay=False, fused=None)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    p_state["step"] = tensor(float(p_state["step"]), dtype=float32)

    _fusable = True    # eager steps run as fused programs (compiler.fused_optimizer_group)

    def _init_state(self, p, group):
        state = {"step": tensor(0.0, dtype=float32), "exp_avg": zeros_like(p),
                 "exp_avg_sq": zeros_like(p)}
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_like(p)
        return state

    def _update(self, p, grad, state, group):
        self._adam(group, [(p, grad, state)])

    def _update_group(self, group, items):
        if len({id(state["step"]) for _, _, state in items}) != len(items):
            # a step tensor shared by two parameters: each must see the count after its own
            # increment, as in torch's per-parameter loop
            return super()._update_group(group, items)
        self._adam(group, items)

    def _adam(self, group, items):
        # amsgrad's buffer is read before any state changes, as torch's _init_group does: amsgrad
        # switched on after the state was made is torch's KeyError with every step count kept
        maxes = [state["max_exp_avg_sq"] if group["amsgrad"] else None for _, _, state in items]
        steps = [state["step"] for _, _, state in items]
        for step in steps:
            step.add_(1)
        beta1, beta2 = group["betas"]
        if group.get("fused"):
            # torch's fused kernel computes 16-bit parameters in float32 (NOTE [fused Adam on
            # float16/bfloat16]); the others take the single-tensor rule below
            low = [item for item in zip(items, maxes, steps) if item[0][0].dtype in (bfloat16, float16)]
            for (p, grad, state), max_sq, step in low:
                fused_adam_step_low(p, grad, state["exp_avg"], state["exp_avg_sq"], max_sq, step,
                                    lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                                    weight_decay=group["weight_decay"], amsgrad=group["amsgrad"],
                                    maximize=group["maximize"],
                                    decoupled_weight_decay=group["decoupled_weight_decay"])
            if low:
                kept = [i for i, (p, _, _) in enumerate(items) if p.dtype not in (bfloat16, float16)]
                items, maxes, steps = [items[i] for i in kept], [maxes[i] for i in kept], [steps[i] for i in kept]
                if not items:
                    return
        scalars = adam_bias_corrections(steps, group["lr"], beta1, beta2, [p.dtype for p, _, _ in items])
        for (p, grad, state), max_sq, step_size, inv_bc2_sqrt in zip(items, maxes, *scalars):
            adam_step(p, grad, state["exp_avg"], state["exp_avg_sq"], max_sq,
                      step_size, inv_bc2_sqrt, lr=group["lr"], beta1=beta1, beta2=beta2,
                      eps=group["eps"], weight_decay=group["weight_decay"],
                      amsgrad=group["amsgrad"], maximize=group["maximize"],
                      decoupled_weight_decay=group["decoupled_weight_decay"])


def _check_tensor_hyperparameter(name, value, *, foreach, capturable):
    """torch's checks on a Tensor lr or beta: not with foreach unless capturable (torch's foreach
    kernels read it as a host number), and one element."""
    if isinstance(value, Tensor):
        if foreach and not capturable:
            raise ValueError(f"{name} as a Tensor is not supported for capturable=False and foreach=True")
        if value.numel() != 1:
            raise ValueError(f"Tensor {name} must be 1-element")


def _check_betas(betas, *, foreach, capturable):
    # torch accepts two floats or two Tensors, nothing mixed (an int beta counts as mixed there too)
    if not (all(isinstance(b, float) for b in betas) or all(isinstance(b, Tensor) for b in betas)):
        raise ValueError("betas must be either both floats or both Tensors")
    for i, b in enumerate(betas):
        _check_tensor_hyperparameter(f"betas[{i}]", b, foreach=foreach, capturable=capturable)

# torch.optim.adam.adam: the functional form (defined with the other rules in _functional.py)
from ._functional import adam as adam  # noqa: E402,F401
