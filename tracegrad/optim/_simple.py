"""Shared constructor checks for the optimizer classes (torch's messages)."""
from __future__ import annotations

from .. import Tensor


_UNSET = object()   # an argument this optimizer does not take (None given is torch's TypeError)


def check_common(lr, eps=_UNSET, weight_decay=_UNSET, betas=None):
    """ValueError like torch for a bad lr (negative, or a Tensor of more than one element),
    eps, weight_decay or betas; TypeError for an eps or weight_decay of None (torch compares
    it with 0.0)."""
    for name, v in (("eps", eps), ("weight_decay", weight_decay)):
        if v is None:
            raise TypeError(f"'<=' not supported between instances of 'float' and 'NoneType' (optimizer argument "
                            f"{name}=None; pass a number)")
    eps = None if eps is _UNSET else eps
    weight_decay = None if weight_decay is _UNSET else weight_decay
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if eps is not None and not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if betas is not None:
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if weight_decay is not None and not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def check_bounds(*checks):
    """ValueError in the wording of torch's newer optimizers (Adafactor, Muon): ``"<what> should be
    >= <bound> but is: <value>"`` for the first ``(what, value, op, bound)`` (op ``">="`` or
    ``"<="``) that fails; a None value is skipped."""
    for what, value, op, bound in checks:
        if value is not None and not (value >= bound if op == ">=" else value <= bound):
            raise ValueError(f"{what} should be {op} {bound} but is: {value}")
