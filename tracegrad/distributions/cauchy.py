"""Mirrors ``torch.distributions.Cauchy``."""
from __future__ import annotations

import math

import tracegrad

from .distribution import _LocScale

__all__ = ["Cauchy"]


class Cauchy(_LocScale):
    """Mirrors ``torch.distributions.Cauchy(loc, scale, validate_args=None)``: density
    ``1 / (pi * scale * (1 + ((x - loc) / scale)**2))``. Mean is NaN and variance infinite (as
    torch). ``rsample`` is ``loc + scale * eps`` with standard Cauchy ``eps`` (reparameterised).
    Raises ValueError for ``scale <= 0`` (validation on)."""

    @property
    def mean(self):
        return tracegrad.full(self._extended_shape(), float("nan"), dtype=self.loc.dtype)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return tracegrad.full(self._extended_shape(), float("inf"), dtype=self.loc.dtype)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = tracegrad.empty(shape, dtype=self.loc.dtype).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - ((value - self.loc) / self.scale).pow(2).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return tracegrad.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return tracegrad.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
