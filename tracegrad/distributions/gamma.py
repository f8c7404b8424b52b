"""Mirrors ``torch.distributions.Gamma``."""
from __future__ import annotations

import numbers

import tracegrad
from tracegrad._api.random_draws import standard_gamma

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Mirrors ``torch.distributions.Gamma(concentration, rate, validate_args=None)``: density
    ``rate**c * x**(c - 1) * exp(-rate * x) / Gamma(c)`` on ``x >= 0``.

    ``concentration``/``rate``: floats or tensors, broadcast; ``batch_shape`` is their shape.
    ``rsample`` is ``standard_gamma(concentration) / rate`` (implicit
    reparameterization: gradients reach both parameters), floored at the dtype's smallest
    normal number as torch. Draws come from tracegrad's generator (not torch's numbers).
    Raises ValueError (validation on) for a parameter ``<= 0`` or a negative ``log_prob`` value.
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    _mean_carrier_measure = 0
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        numbers_only = isinstance(concentration, numbers.Number) and isinstance(rate, numbers.Number)
        super().__init__(() if numbers_only else self.concentration.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=tracegrad.finfo(value.dtype).tiny)

    def log_prob(self, value):
        value = tracegrad.as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        return tracegrad.xlogy(c, r) + tracegrad.xlogy(c - 1, value) - r * value - tracegrad.lgamma(c)

    def cdf(self, value):
        """The regularized lower incomplete gamma function of ``rate * value``."""
        if self._validate_args:
            self._validate_sample(value)
        return tracegrad.special.gammainc(self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - tracegrad.log(self.rate) + tracegrad.lgamma(c) + (1.0 - c) * tracegrad.digamma(c)

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return (x + 1).lgamma() + (x + 1) * (-y.reciprocal()).log()
