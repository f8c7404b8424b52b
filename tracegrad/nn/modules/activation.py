"""Activation layers: mirror ``torch.nn.ReLU``, ``LeakyReLU``, ``GELU``, ``SiLU``, ``Sigmoid``,
``Tanh``, ``Softmax``, ``LogSoftmax``... and ``MultiheadAttention`` (defined in ``transformer.py``,
importable from here as in torch)."""
from __future__ import annotations

import tracegrad

from .. import functional as F
from ..parameter import Parameter
from .module import Module
from . import _elsewhere
from ..._ops.warn import warn as _warn


class ReLU(Module):
    """Mirrors ``torch.nn.ReLU``: ``max(x, 0)``; ``inplace=True`` writes into the input."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """Mirrors ``torch.nn.LeakyReLU``: grad_fn ``LeakyReluBackward0``."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """Mirrors ``torch.nn.GELU``: ``approximate='none'`` (erf) or ``'tanh'``."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """Mirrors ``torch.nn.SiLU``."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Mish(Module):
    """Mirrors ``torch.nn.Mish``."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.mish(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class ELU(Module):
    """Mirrors ``torch.nn.ELU``."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """Mirrors ``torch.nn.Softplus``."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """Mirrors ``torch.nn.Hardtanh``: clamps to ``[min_val, max_val]``. AssertionError (torch's
    class) unless ``max_val > min_val``."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        # torch's older keyword names: still accepted, with its FutureWarning
        if min_value is not None:
            _warn("keyword argument `min_value` is deprecated and renamed to `min_val`", FutureWarning)
            min_val = min_value
        if max_value is not None:
            _warn("keyword argument `max_value` is deprecated and renamed to `max_val`", FutureWarning)
            max_val = max_value
        if max_val <= min_val:   # (a NaN bound passes, as torch's own test)
            raise AssertionError(f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    """Mirrors ``torch.nn.ReLU6``: ``Hardtanh(0, 6)`` (a subclass of it, as in torch)."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def forward(self, input):
        return F.relu6(input, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Sigmoid(Module):
    """Mirrors ``torch.nn.Sigmoid``."""

    def forward(self, input):
        try:
            return input.sigmoid()
        except AttributeError:   # torch's module calls torch.sigmoid: its parser's TypeError
            return tracegrad.sigmoid(input)


class Tanh(Module):
    """Mirrors ``torch.nn.Tanh``."""

    def forward(self, input):
        try:
            return input.tanh()
        except AttributeError:   # torch's module calls torch.tanh: its parser's TypeError
            return tracegrad.tanh(input)


class LogSigmoid(Module):
    """Mirrors ``torch.nn.LogSigmoid``."""

    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(Module):
    """Mirrors ``torch.nn.Softsign``."""

    def forward(self, input):
        return F.softsign(input)


class _DimModule(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_DimModule):
    """Mirrors ``torch.nn.Softmax``: grad_fn ``SoftmaxBackward0``."""

    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)


class Softmin(_DimModule):
    """Mirrors ``torch.nn.Softmin``."""

    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=5)


class LogSoftmax(_DimModule):
    """Mirrors ``torch.nn.LogSoftmax``: grad_fn ``LogSoftmaxBackward0``."""

    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)


class PReLU(Module):
    """Mirrors ``torch.nn.PReLU(num_parameters=1, init=0.25)``: ``x`` for ``x >= 0``, else
    ``weight * x``; ``weight`` is a Parameter ``(num_parameters,)`` filled with ``init``
    (1, or the channel count, dim 1 of the input)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(tracegrad.empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self):
        with tracegrad.no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """Mirrors ``torch.nn.GLU(dim=-1)``: ``a * sigmoid(b)`` of input's two halves along ``dim``."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Hardswish(Module):
    """Mirrors ``torch.nn.Hardswish``: ``x * relu6(x + 3) / 6``."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardswish(input, self.inplace)


class Hardsigmoid(Module):
    """Mirrors ``torch.nn.Hardsigmoid``: ``relu6(x + 3) / 6``."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)

from .activation_more import CELU, RReLU, SELU, Hardshrink, Softmax2d, Softshrink, Tanhshrink, Threshold  # noqa: F401,E402


__getattr__ = _elsewhere.module_getattr(__name__)   # torch's names of this file defined elsewhere here
