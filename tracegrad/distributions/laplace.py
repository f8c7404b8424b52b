"""Mirrors ``torch.distributions.Laplace``."""
from __future__ import annotations

import math

import tracegrad

from .distribution import _CentredAtLoc, _LocScale

__all__ = ["Laplace"]


class Laplace(_CentredAtLoc, _LocScale):
    """Mirrors ``torch.distributions.Laplace(loc, scale, validate_args=None)``.

    ``loc``/``scale``: floats or tensors, broadcast together. ``rsample`` inverts the cdf at a
    uniform draw from tracegrad's generator (gradients reach loc and scale). Raises ValueError
    for ``scale <= 0`` (validation on).
    """

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        tiny = tracegrad.finfo(self.loc.dtype).eps
        u = tracegrad.rand(shape, dtype=self.loc.dtype, device=self.loc.device) * (2 - tiny) + (tiny - 1)
        return self.loc - self.scale * u.sign() * tracegrad.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -tracegrad.log(2 * self.scale) - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * tracegrad.expm1(-z.abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * tracegrad.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + tracegrad.log(2 * self.scale)
