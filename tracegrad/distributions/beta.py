"""Mirrors ``torch.distributions.Beta``."""
from __future__ import annotations

import numbers

import tracegrad

from . import constraints
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    """Mirrors ``torch.distributions.Beta(concentration1, concentration0, validate_args=None)``:
    density ``x**(a - 1) * (1 - x)**(b - 1) / B(a, b)`` on ``[0, 1]`` with ``a = concentration1``,
    ``b = concentration0``.

    As torch, a two-class ``Dirichlet`` over ``stack([a, b], -1)``: ``rsample`` is its first
    coordinate (gradients reach both parameters), ``log_prob`` and ``entropy`` its own.
    ``batch_shape`` is the broadcast shape of the parameters (``()`` for two numbers).
    Raises ValueError (validation on) for a parameter ``<= 0`` or a value outside ``[0, 1]``.
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, numbers.Number) and isinstance(concentration0, numbers.Number):
            both = tracegrad.tensor([float(concentration1), float(concentration0)])
        else:
            c1, c0 = broadcast_all(concentration1, concentration0)
            both = tracegrad.stack([c1, c0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = tracegrad.Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:   # before any conversion: a Python number is a ValueError, as torch
            self._validate_sample(value)
        value = tracegrad.as_tensor(value, dtype=self.concentration1.dtype)
        return self._dirichlet.log_prob(tracegrad.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return x.lgamma() + y.lgamma() - (x + y).lgamma()
