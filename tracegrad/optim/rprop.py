"""``Rprop``. Mirrors ``torch.optim.Rprop``."""
from __future__ import annotations

from .. import float32, tensor, zeros_like
from ._functional import rprop_step
from ._simple import check_common
from .optimizer import Optimizer, full_like_reals

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    """Resilient backpropagation. Mirrors ``torch.optim.Rprop``.

    Args: params; lr (default 1e-2), etas ((0.5, 1.2)), step_sizes ((1e-6, 50)), maximize
    (False); foreach, differentiable, capturable: stored.
    State per parameter: ``step`` (float32 0-d tensor), ``prev`` (the last gradient used),
    ``step_size`` (per element, starts at lr).
    Raises: ValueError for lr < 0 or etas not satisfying 0 < etaminus < 1 < etaplus.
    """

    _fusable = True    # eager steps run as fused programs (compiler.fused_optimizer_group)

    _tensor_state_keys = ("step",)
    # options torch added after the class shipped: a state_dict saved before them (its groups
    # lack the keys) still loads and steps, as torch's __setstate__ fills them in
    _setstate_group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False,
                 foreach=None, maximize=False, differentiable=False):
        check_common(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        lr = group["lr"]
        if hasattr(lr, "shape") and not p.is_complex():
            # a tensor lr (the user's, or the input a compiled step lifts a numeric lr into,
            # when the state is created inside a trace, e.g. after ``state.clear()``): filled
            # by a tensor op; ``.item()`` there would end the trace (a graph break)
            step_size = zeros_like(p) + lr.detach().reshape(()).to(p.dtype)
        else:
            step_size = full_like_reals(p, float(lr) if not hasattr(lr, "shape") else lr.item())
        return {"step": tensor(0.0, dtype=float32), "prev": zeros_like(p), "step_size": step_size}

    def _update(self, p, grad, state, group):
        etaminus, etaplus = group["etas"]
        lo, hi = group["step_sizes"]
        rprop_step(p, grad, state["prev"], state["step_size"], state["step"], etaminus=etaminus,
                   etaplus=etaplus, step_size_min=lo, step_size_max=hi, maximize=group["maximize"])

# torch.optim.rprop.rprop: the functional form (defined with the other rules in _functional.py)
from ._functional import rprop as rprop  # noqa: E402,F401
