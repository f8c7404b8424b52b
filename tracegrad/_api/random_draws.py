"""Random draws that stay differentiable: ``standard_gamma`` (torch's private
``torch._standard_gamma``; tracegrad keeps private names off its top level), the
reparameterized Gamma sampler under ``distributions.Gamma``, ``Dirichlet`` and ``Beta``."""
from __future__ import annotations

from ..autograd._dispatch import apply_op
from .._ops import random as _rnd
from .._ops.registry import OPS
from .._tensor import generator as _generator
from .._tensor.tensor import Tensor
from .._x64 import with_x64


def standard_gamma(concentration, generator=None):
    """Mirrors ``torch._standard_gamma(concentration)``: one Gamma(concentration, rate 1) draw per
    element, same shape and floating dtype, from tracegrad's generator (streams differ from
    torch's). Autograd: ``StandardGammaBackward0``; the gradient with respect to
    ``concentration`` is the implicit reparameterization one (torch's ``_standard_gamma_grad``).
    A draw that underflows is the dtype's smallest normal number, as torch.
    Raises: TypeError unless ``concentration`` is a floating tensor."""
    if not isinstance(concentration, Tensor) or not concentration.dtype.is_floating_point:
        raise TypeError("standard_gamma(): concentration must be a floating-point Tensor")
    k = _generator.key_for(generator)
    sample = Tensor._make(with_x64(_rnd.standard_gamma)(k, concentration._value))
    return apply_op(OPS["standard_gamma"], (concentration, sample))
