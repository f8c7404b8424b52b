"""Mirrors ``torch.distributions.ContinuousBernoulli`` (Loaiza-Ganem & Cunningham, 2019)."""
from __future__ import annotations

import math
import numbers

import tracegrad

from . import constraints
from .bernoulli import Bernoulli
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """Mirrors ``torch.distributions.ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501),
    validate_args=None)``: density ``C(p) p^x (1 - p)^(1 - x)`` on ``[0, 1]``.

    Exactly one of ``probs`` in (0, 1) (clamped away from 0 and 1) or real ``logits`` (numbers or
    tensors; ``batch_shape`` is their shape). Near ``p = 1/2`` (inside ``lims``) the normaliser, mean,
    variance and icdf use Taylor expansions, as torch. ``rsample`` is ``icdf(U(0, 1))``
    (reparameterised). Raises ValueError when both or neither are given, for probs outside
    [0, 1] when ``validate_args`` is passed, and (validation on) for values outside [0, 1]."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
            # torch checks the unclamped probs only when validate_args is passed explicitly
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(() if is_scalar else self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        return Bernoulli.expand(self, batch_shape, new)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.shape

    def _stable(self):
        """Where the closed forms are used (probs outside ``lims``)."""
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        # inside lims the closed forms divide by ~0; they are evaluated at lims[0] and discarded
        return tracegrad.where(self._stable(), self.probs, tracegrad.full_like(self.probs, self._lims[0]))

    def _log_norm(self):
        """``log C(p)``."""
        p = self._cut_probs()
        below = tracegrad.where(p <= 0.5, p, tracegrad.zeros_like(p))
        above = tracegrad.where(p >= 0.5, p, tracegrad.ones_like(p))
        closed = ((-p).log1p() - p.log()).abs().log() - tracegrad.where(
            p <= 0.5, (-2.0 * below).log1p(), (2.0 * above - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return tracegrad.where(self._stable(), closed, taylor)

    @property
    def mean(self):
        p = self._cut_probs()
        closed = p / (2.0 * p - 1.0) + 1.0 / ((-p).log1p() - p.log())
        x = self.probs - 0.5
        return tracegrad.where(self._stable(), closed, 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x)

    @property
    def variance(self):
        p = self._cut_probs()
        closed = p * (p - 1.0) / (1.0 - 2.0 * p).pow(2) + 1.0 / ((-p).log1p() - p.log()).pow(2)
        x = (self.probs - 0.5).pow(2)
        return tracegrad.where(self._stable(), closed, 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(tracegrad.rand(shape, dtype=self.probs.dtype, device=self.probs.device))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        bce = tracegrad.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")
        return -bce + self._log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        p = self._cut_probs()
        closed = (p.pow(value) * (1.0 - p).pow(1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inside = tracegrad.where(self._stable(), closed, value)
        return tracegrad.where(value <= 0.0, tracegrad.zeros_like(value),
                               tracegrad.where(value >= 1.0, tracegrad.ones_like(value), inside))

    def icdf(self, value):
        p = self._cut_probs()
        closed = ((-p + value * (2.0 * p - 1.0)).log1p() - (-p).log1p()) / (p.log() - (-p).log1p())
        return tracegrad.where(self._stable(), closed, value)

    def entropy(self):
        log_q, log_p = (-self.probs).log1p(), self.probs.log()
        return self.mean * (log_q - log_p) - self._log_norm() - log_q

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        lo, hi = self._lims[0] - 0.5, self._lims[1] - 0.5
        stable = (x <= lo) | (x > hi)
        cut = tracegrad.where(stable, x, tracegrad.full_like(x, lo))
        closed = cut.expm1().abs().log() - cut.abs().log()
        return tracegrad.where(stable, closed, 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0)
