"""Linear layers: mirror ``torch.nn.Identity``, ``Linear``, ``Bilinear``."""
from __future__ import annotations

import math

import tracegrad

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module
from . import _elsewhere


def weight_and_bias(module, weight_shape, out_features, bias, dtype):
    """Register ``weight`` and an optional ``bias`` (None when absent), then initialise them with
    the module's ``reset_parameters``; shared by Linear, Bilinear and the conv layers."""
    module.weight = Parameter(tracegrad.empty(weight_shape, dtype=dtype))
    if bias:
        module.bias = Parameter(tracegrad.empty(out_features, dtype=dtype))
    else:
        module.register_parameter("bias", None)
    module.reset_parameters()


def reset_kaiming(weight, bias):
    """torch's default for Linear and Conv: kaiming_uniform_(a=sqrt(5)), bias U(+-1/sqrt(fan_in))."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


class Identity(Module):
    """Mirrors ``torch.nn.Identity``: returns its input; constructor arguments are ignored."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """Mirrors ``torch.nn.Linear``: ``y = x @ weight.T + bias``; weight ``(out, in)``, bias ``(out,)``.
    Initialised as torch: ``kaiming_uniform_(a=sqrt(5))`` and bias U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        weight_and_bias(self, (out_features, in_features), out_features, bias, dtype)

    def reset_parameters(self):
        reset_kaiming(self.weight, self.bias)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """Mirrors ``torch.nn.modules.linear.NonDynamicallyQuantizableLinear``: a plain Linear under
    another name (``MultiheadAttention.out_proj``; programs list it in ``safe_globals``)."""


class Bilinear(Module):
    """Mirrors ``torch.nn.Bilinear``: ``y_k = x1 @ W_k @ x2 + b_k``; weight ``(out, in1, in2)``."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(in1_features, int) and in1_features == 0:   # torch's check (its init divides by in1_features); negatives fail at the weight
            raise ValueError(f"in1_features must be > 0, but got (in1_features={in1_features})")
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        weight_and_bias(self, (out_features, in1_features, in2_features), out_features, bias, dtype)

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


__getattr__ = _elsewhere.module_getattr(__name__)   # torch's names of this file defined elsewhere here
