"""Mirrors ``torch.distributions.VonMises``: the circular normal distribution on ``[-pi, pi)``."""
from __future__ import annotations

import math

import tracegrad

from . import constraints
from .distribution import _CentredAtLoc, _LocScale
from .utils import lazy_property

__all__ = ["VonMises"]


def _log_bessel_i(x, order):
    """``log I_order(x)`` for ``x > 0`` and order 0 or 1, from the exponentially scaled Bessel
    functions (``I_n(x) = i_ne(x) * exp(x)``) so large concentrations do not overflow."""
    scaled = tracegrad.special.i0e(x) if order == 0 else tracegrad.special.i1e(x)
    return scaled.log() + x


def _rejection_sample(loc, concentration, proposal_r, shape):
    """Best & Fisher (1979): proposals from a wrapped Cauchy envelope, accepted elementwise until
    every position holds one; result wrapped into ``[-pi, pi)``."""
    x = tracegrad.zeros(shape, dtype=loc.dtype, device=loc.device)
    done = tracegrad.zeros(shape, dtype=tracegrad.bool, device=loc.device)
    while not bool(done.all()):
        u1, u2, u3 = tracegrad.rand((3,) + tuple(shape), dtype=loc.dtype, device=loc.device).unbind()
        z = (math.pi * u1).cos()
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        x = tracegrad.where(accept & ~done, (u3 - 0.5).sign() * f.acos(), x)
        done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(_CentredAtLoc, _LocScale):
    """Mirrors ``torch.distributions.VonMises(loc, concentration, validate_args=None)``:
    density ``exp(kappa cos(x - loc)) / (2 pi I_0(kappa))``; samples in ``[-pi, pi)``.

    ``loc`` (real, radians) and ``concentration`` ``kappa`` (positive) broadcast together into
    ``batch_shape``. ``mean``/``mode`` are ``loc`` and ``variance`` the circular variance
    ``1 - I_1(kappa)/I_0(kappa)``. Sampling is rejection sampling in float64 (as torch, so small
    kappa cannot stall it), returned in ``loc``'s dtype; no ``rsample``. Raises ValueError for a
    non-positive concentration (validation on)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real      # as torch: log_prob is 2 pi periodic, any real angle is accepted
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self._init_params(("loc", "concentration"), (loc, concentration), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(VonMises, batch_shape, _instance, ("loc", "concentration"))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * (value - self.loc).cos() - math.log(2 * math.pi)
                - _log_bessel_i(self.concentration, 0))

    @lazy_property
    def variance(self):
        return 1 - (_log_bessel_i(self.concentration, 1) - _log_bessel_i(self.concentration, 0)).exp()

    def _proposal_r(self, kappa):
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        # second-order Taylor expansion where the closed form loses all precision
        return tracegrad.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with tracegrad.no_grad():
            loc, kappa = self.loc.double(), self.concentration.double()
            return _rejection_sample(loc, kappa, self._proposal_r(kappa), shape).to(self.loc.dtype)

    def rsample(self, sample_shape=()):
        raise NotImplementedError("VonMises has no rsample (its samples are not reparameterised); use sample()")
