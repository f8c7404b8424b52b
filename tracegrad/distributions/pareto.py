"""Mirrors ``torch.distributions.Pareto``, ``Weibull`` and ``InverseGamma``: transformed
Exponential and Gamma variables."""
from __future__ import annotations

import math

import tracegrad

from . import constraints
from .exponential import Exponential
from .gamma import Gamma
from .transformed_distribution import _Params
from .transforms import AffineTransform, ExpTransform, PowerTransform
from .utils import broadcast_all, delegated

__all__ = ["InverseGamma", "Pareto", "Weibull"]

_EULER = 0.57721566490153286060


class Pareto(_Params):
    """Mirrors ``torch.distributions.Pareto(scale, alpha, validate_args=None)``: ``scale *
    exp(E)`` for ``E ~ Exponential(alpha)``, on ``[scale, inf)``. ``mean`` is inf for
    ``alpha <= 1``, ``variance`` for ``alpha <= 2`` (as torch). Raises ValueError for
    non-positive parameters (validation on)."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    _names = ("scale", "alpha")

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        super().__init__(Exponential(self.alpha, validate_args=validate_args),
                         [ExpTransform(), AffineTransform(loc=0, scale=self.scale)], validate_args=validate_args)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Weibull(_Params):
    """Mirrors ``torch.distributions.Weibull(scale, concentration, validate_args=None)``:
    ``scale * E ** (1 / concentration)`` for ``E ~ Exponential(1)``. Reparameterised. Raises
    ValueError for non-positive parameters (validation on)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    _names = ("scale", "concentration", "concentration_reciprocal")

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        super().__init__(Exponential(tracegrad.ones_like(self.scale), validate_args=validate_args),
                         [PowerTransform(exponent=self.concentration_reciprocal),
                          AffineTransform(loc=0, scale=self.scale)], validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * (1 + self.concentration_reciprocal).lgamma().exp()

    @property
    def mode(self):
        c = self.concentration
        return self.scale * ((c - 1) / c) ** c.reciprocal()

    @property
    def variance(self):
        r = self.concentration_reciprocal
        return self.scale.pow(2) * ((1 + 2 * r).lgamma().exp() - (2 * (1 + r).lgamma()).exp())

    def entropy(self):
        return _EULER * (1 - self.concentration_reciprocal) + (self.scale * self.concentration_reciprocal).log() + 1


class InverseGamma(_Params):
    """Mirrors ``torch.distributions.InverseGamma(concentration, rate, validate_args=None)``:
    ``1 / G`` for ``G ~ Gamma(concentration, rate)``. ``mean`` is inf for ``concentration <= 1``,
    ``variance`` for ``concentration <= 2``. Raises ValueError for non-positive parameters."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base, PowerTransform(-tracegrad.ones_like(base.rate)), validate_args=validate_args)

    concentration = delegated("base_dist", "concentration")

    rate = delegated("base_dist", "rate")

    @property
    def mean(self):
        c = self.concentration
        return tracegrad.where(c > 1, self.rate / (c - 1), math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        c = self.concentration
        return tracegrad.where(c > 2, self.rate.pow(2) / ((c - 1).pow(2) * (c - 2)), math.inf)

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + c.lgamma() - (1 + c) * c.digamma()
