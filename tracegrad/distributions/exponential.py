"""Mirrors ``torch.distributions.Exponential``."""
from __future__ import annotations

import numbers

import tracegrad

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """Mirrors ``torch.distributions.Exponential(rate, validate_args=None)``.

    ``rate``: float or tensor; ``batch_shape`` is its shape. ``rsample`` is
    ``-log1p(-U) / rate`` with U uniform from tracegrad's generator (gradients reach ``rate``).
    Raises ValueError for ``rate <= 0`` or a negative value in ``log_prob`` (validation on).
    """

    arg_constraints = {"rate": constraints.positive}
    _mean_carrier_measure = 0
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(() if isinstance(rate, numbers.Number) else self.rate.shape,
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Exponential, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return tracegrad.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = tracegrad.rand(shape, dtype=self.rate.dtype, device=self.rate.device)
        return -tracegrad.log1p(-u) / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - tracegrad.exp(-self.rate * value)

    def icdf(self, value):
        return -tracegrad.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - tracegrad.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -(-x).log()
