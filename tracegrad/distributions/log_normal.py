"""Mirrors ``torch.distributions.LogNormal``, ``HalfNormal`` and ``HalfCauchy`` (a Normal or
Cauchy pushed through ``exp``/``abs``)."""
from __future__ import annotations

import math

import tracegrad

from . import constraints
from .cauchy import Cauchy
from .normal import Normal
from .transformed_distribution import _Params
from .transforms import AbsTransform, ExpTransform
from .utils import delegated

__all__ = ["HalfCauchy", "HalfNormal", "LogNormal"]


class LogNormal(_Params):
    """Mirrors ``torch.distributions.LogNormal(loc, scale, validate_args=None)``: ``exp(X)`` for
    ``X ~ Normal(loc, scale)``; ``loc``/``scale`` are X's. Reparameterised. Raises ValueError for
    ``scale <= 0`` and (validation on) non-positive ``log_prob`` values."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(), validate_args=validate_args)

    loc = delegated("base_dist", "loc")

    scale = delegated("base_dist", "scale")

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class _Half(_Params):
    """``|X|`` for ``X`` symmetric about 0 (``base``): the density doubles on ``[0, inf)`` and is
    0 (``log_prob`` ``-inf``, validation off) below it."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, base, validate_args=None):
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    scale = delegated("base_dist", "scale")

    @property
    def mode(self):
        return tracegrad.zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = tracegrad.as_tensor(value, dtype=self.scale.dtype)
        lp = self.base_dist.log_prob(value) + math.log(2)
        return tracegrad.where(value >= 0, lp, float("-inf"))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Half):
    """Mirrors ``torch.distributions.HalfNormal(scale, validate_args=None)``: ``|X|`` for
    ``X ~ Normal(0, scale)``, on ``[0, inf)``. Reparameterised; ``log_prob`` is ``-inf`` below 0
    (validation off). Raises ValueError for ``scale <= 0``."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Half):
    """Mirrors ``torch.distributions.HalfCauchy(scale, validate_args=None)``: ``|X|`` for
    ``X ~ Cauchy(0, scale)``. Mean and variance are infinite (as torch). Raises ValueError for
    ``scale <= 0``."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), validate_args=validate_args)

    @property
    def mean(self):
        return tracegrad.full(self._extended_shape(), math.inf, dtype=self.scale.dtype)

    @property
    def variance(self):
        return tracegrad.full(self._extended_shape(), math.inf, dtype=self.scale.dtype)
