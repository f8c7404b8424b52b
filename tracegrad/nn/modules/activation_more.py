"""More activation layers: mirror ``torch.nn.SELU``, ``CELU``, ``Threshold``, ``Hardshrink``,
``Softshrink``, ``Tanhshrink``, ``RReLU`` and ``Softmax2d`` (same constructor arguments and
``extra_repr`` as torch)."""
from __future__ import annotations

from .. import functional as F
from .module import Module


def _inplace(inplace):
    return ", inplace=True" if inplace else ""


class SELU(Module):
    """Mirrors ``torch.nn.SELU``: ``F.selu``."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.selu(input, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class CELU(Module):
    """Mirrors ``torch.nn.CELU``: ``F.celu`` with ``alpha``."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + _inplace(self.inplace)


class Threshold(Module):
    """Mirrors ``torch.nn.Threshold``: ``x`` where ``x > threshold``, else ``value``."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + _inplace(self.inplace)


class Hardshrink(Module):
    """Mirrors ``torch.nn.Hardshrink``."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Module):
    """Mirrors ``torch.nn.Softshrink`` (not a Hardshrink subclass, as in torch)."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def extra_repr(self):
        return str(self.lambd)

    def forward(self, input):
        return F.softshrink(input, self.lambd)


class Tanhshrink(Module):
    """Mirrors ``torch.nn.Tanhshrink``: ``x - tanh(x)``."""

    def forward(self, input):
        return F.tanhshrink(input)


class RReLU(Module):
    """Mirrors ``torch.nn.RReLU``: random negative slopes in ``[lower, upper]`` while training
    (tracegrad's generator), ``(lower + upper) / 2`` in eval."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + _inplace(self.inplace)


class Softmax2d(Module):
    """Mirrors ``torch.nn.Softmax2d``: softmax over the channel dim of ``(N, C, H, W)`` or
    ``(C, H, W)``. Raises ValueError for another number of dims."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)
