"""Mirrors ``torch.distributions.Chi2`` and ``StudentT`` (both built on Gamma draws)."""
from __future__ import annotations

import math

import tracegrad

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["Chi2", "StudentT"]


class Chi2(Gamma):
    """Mirrors ``torch.distributions.Chi2(df, validate_args=None)``: ``Gamma(df / 2, 1 / 2)``.
    Raises ValueError for ``df <= 0`` (validation on)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, self._get_checked_instance(Chi2, _instance))

    @property
    def df(self):
        return self.concentration * 2


class StudentT(Distribution):
    """Mirrors ``torch.distributions.StudentT(df, loc=0.0, scale=1.0, validate_args=None)``.
    ``rsample`` is ``loc + scale * N / sqrt(G / df)`` with ``G ~ Chi2(df)`` (reparameterised in
    all three parameters). ``mean`` is NaN for ``df <= 1``; ``variance`` is inf for
    ``1 < df <= 2`` and NaN for ``df <= 1``, as torch. Raises ValueError for ``df <= 0`` or
    ``scale <= 0`` (validation on)."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df = broadcast_all(df, loc, scale)[0]
        self._chi2 = Chi2(self.df)
        self._init_params(("df", "loc", "scale"), (df, loc, scale), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self):
        return tracegrad.where(self.df > 1, self.loc, float("nan"))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        var = self.scale.pow(2) * self.df / (self.df - 2)
        var = tracegrad.where(self.df > 2, var, float("inf"))
        return tracegrad.where(self.df > 1, var, float("nan"))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        normal = tracegrad.randn(shape, dtype=self.df.dtype)
        chi2 = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * normal * (chi2 / self.df).rsqrt()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        norm = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
                + (0.5 * self.df).lgamma() - (0.5 * (self.df + 1.0)).lgamma())
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - norm

    def entropy(self):
        half, half_up = 0.5 * self.df, 0.5 * (self.df + 1)
        lbeta = half.lgamma() + math.lgamma(0.5) - half_up.lgamma()
        return (self.scale.log() + half_up * (half_up.digamma() - half.digamma())
                + 0.5 * self.df.log() + lbeta)
