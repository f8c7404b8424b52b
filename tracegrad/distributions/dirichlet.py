"""Mirrors ``torch.distributions.Dirichlet``."""
from __future__ import annotations

import tracegrad
from tracegrad._api.random_draws import standard_gamma

from . import constraints
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Mirrors ``torch.distributions.Dirichlet(concentration, validate_args=None)``: a
    distribution on the simplex over the last dim of ``concentration``.

    ``concentration``: tensor ``(*batch, K)``, K >= 1; ``batch_shape`` is ``concentration.shape[:-1]``,
    ``event_shape`` ``(K,)``. ``rsample`` normalizes K Gamma(concentration_i) draws
    (``standard_gamma``, torch's ``_standard_gamma``), so gradients reach ``concentration`` through the Gamma
    reparameterization (torch differentiates its Dirichlet draw with a formula of its own:
    the same distribution of gradients, not the same numbers). Draws come from tracegrad's
    generator. Raises ValueError for a 0-D concentration, a non-positive entry (validation on),
    or a ``log_prob`` value off the simplex (validation on).
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:   # (a non-tensor has no .dim(): AttributeError, as torch)
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Dirichlet, batch_shape, _instance, ("concentration",), self.event_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        g = standard_gamma(self.concentration.expand(shape))
        tiny = tracegrad.finfo(g.dtype).tiny
        return (g / g.sum(-1, keepdim=True)).clamp(min=tiny, max=1 - tracegrad.finfo(g.dtype).eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (tracegrad.xlogy(c - 1.0, value).sum(-1) + tracegrad.lgamma(c.sum(-1))
                - tracegrad.lgamma(c).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        """torch's rule: ``(c - 1)^+`` normalized; where every ``c < 1``, the one-hot of the first
        category. (torch takes the argmax of that row of the normalized vector, all 0/0 = NaN, and
        an argmax over NaNs is index 0: so Beta(a, b) with a, b < 1 has mode 1, not the mode at
        the end with more mass.)"""
        c = self.concentration
        m = (c - 1).clamp(min=0.0)
        m = m / m.sum(-1, keepdim=True)
        hot = tracegrad.nn.functional.one_hot(tracegrad.zeros(c.shape[:-1], dtype=tracegrad.int64, device=c.device),
                                              c.shape[-1]).to(c.dtype)
        return tracegrad.where((c < 1).all(-1, keepdim=True), hot, m)

    @property
    def variance(self):
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.size(-1)
        a0 = c.sum(-1)
        return (tracegrad.lgamma(c).sum(-1) - tracegrad.lgamma(a0) - (k - a0) * tracegrad.digamma(a0)
                - ((c - 1.0) * tracegrad.digamma(c)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - x.sum(-1).lgamma()
