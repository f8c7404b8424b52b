"""Mirrors ``torch.distributions.Kumaraswamy``: a Beta-like law on (0, 1) with a closed-form cdf."""
from __future__ import annotations

import math

import tracegrad

from . import constraints
from .gumbel import _EULER
from .transformed_distribution import _Params
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Kumaraswamy"]


def _moment(a, b, n):
    """``E[X^n] = b B(1 + n/a, b)``."""
    arg = 1 + n / a
    return b * (arg.lgamma() + b.lgamma() - (arg + b).lgamma()).exp()


class Kumaraswamy(_Params):
    """Mirrors ``torch.distributions.Kumaraswamy(concentration1, concentration0, validate_args=None)``:
    density ``a b x^(a-1) (1 - x^a)^(b-1)`` on (0, 1) with ``a = concentration1``,
    ``b = concentration0``; built as ``(1 - U^(1/b))^(1/a)`` for ``U ~ Uniform(0, 1)``.

    Parameters: positive numbers or tensors, broadcast into ``batch_shape``. ``rsample`` is
    reparameterised. ``mode`` is NaN where either concentration is below 1. Raises ValueError
    for a non-positive parameter (validation on)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True
    _names = ("concentration1", "concentration0")

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(tracegrad.zeros_like(self.concentration0), tracegrad.ones_like(self.concentration0),
                       validate_args=validate_args)
        super().__init__(base, [PowerTransform(exponent=self.concentration0.reciprocal()),
                                AffineTransform(loc=1.0, scale=-1.0),
                                PowerTransform(exponent=self.concentration1.reciprocal())],
                         validate_args=validate_args)

    @property
    def mean(self):
        return _moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        # in log space for stability
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return log_mode.masked_fill((b < 1) | (a < 1), math.nan).exp()

    @property
    def variance(self):
        return _moment(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic = (b + 1).digamma() + _EULER
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic - a.log() - b.log()
