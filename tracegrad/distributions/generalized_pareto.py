"""Mirrors ``torch.distributions.GeneralizedPareto``: the peaks-over-threshold law of extreme values."""
from __future__ import annotations

import math

import tracegrad

from . import constraints
from .distribution import Distribution

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Mirrors ``torch.distributions.GeneralizedPareto(loc, scale, concentration, validate_args=None)``:
    survival ``(1 + xi z)^(-1/xi)`` for ``z = (x - loc) / scale`` (``exp(-z)`` at ``xi = 0``).

    Parameters broadcast into ``batch_shape``; ``scale`` positive, ``concentration`` ``xi`` real
    (``|xi| <= 1e-8`` is treated as 0, as torch's isclose). The support is ``[loc, inf)``, or
    ``[loc, loc - scale/xi]`` for ``xi < 0``. ``rsample`` is ``icdf(U(0, 1))`` (reparameterised).
    ``mean`` is NaN for ``xi >= 1``, ``variance`` for ``xi >= 1/2``. Raises ValueError for a
    non-positive scale and (validation on) values outside the support."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self._init_params(("loc", "scale", "concentration"), (loc, scale, concentration), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(GeneralizedPareto, batch_shape, _instance, ("loc", "scale", "concentration"))

    def _safe_concentration(self):
        """``(xi == 0 mask, xi with those entries replaced by 1)``: both branches stay finite so
        ``where`` passes clean gradients."""
        xi = self.concentration
        zero = tracegrad.isclose(xi, tracegrad.zeros_like(xi))
        return zero, tracegrad.where(zero, tracegrad.ones_like(xi), xi)

    def _z(self, x):
        return (x - self.loc) / self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(tracegrad.rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        zero, xi = self._safe_concentration()
        y = 1 / xi + tracegrad.ones_like(z)
        nonzero = tracegrad.where(y == 0, y, y * (xi * z).log1p())
        return -self.scale.log() - tracegrad.where(zero, z, nonzero)

    def log_survival_function(self, value):
        """``log P(X > value)``."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        zero, xi = self._safe_concentration()
        return tracegrad.where(zero, -z, -(xi * z).log1p() / xi)

    def log_cdf(self, value):
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        zero, xi = self._safe_concentration()
        log_u = (-value).log1p()
        return tracegrad.where(zero, self.loc - self.scale * log_u,
                               self.loc + self.scale / xi * (-xi * log_u).expm1())

    @property
    def mean(self):
        xi = self.concentration
        valid = xi < 1
        safe = tracegrad.where(valid, xi, tracegrad.full_like(xi, 0.5))
        return tracegrad.where(valid, self.loc + self.scale / (1 - safe), tracegrad.full_like(xi, math.nan))

    @property
    def variance(self):
        xi = self.concentration
        valid = xi < 0.5
        safe = tracegrad.where(valid, xi, tracegrad.full_like(xi, 0.25))
        return tracegrad.where(valid, self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe)),
                               tracegrad.full_like(xi, math.nan))

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        return (self.scale.log() + self.concentration + 1).broadcast_to(tuple(self._batch_shape))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = tracegrad.where(self.concentration < 0, lower - self.scale / self.concentration,
                                tracegrad.full_like(lower, math.inf))
        return constraints.interval(lower, upper)
