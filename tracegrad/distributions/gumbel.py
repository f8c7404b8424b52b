"""Mirrors ``torch.distributions.Gumbel``."""
from __future__ import annotations

import math
import numbers

import tracegrad

from . import constraints
from .transformed_distribution import _Params
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Gumbel"]

_EULER = 0.57721566490153286060


class Gumbel(_Params):
    """Mirrors ``torch.distributions.Gumbel(loc, scale, validate_args=None)``: ``loc - scale *
    log(-log(U))`` for ``U`` uniform on ``(tiny, 1 - eps)``. Reparameterised. Raises ValueError
    for ``scale <= 0`` (validation on)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    _names = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        info = tracegrad.finfo(self.loc.dtype)
        if isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number):
            base = Uniform(info.tiny, 1 - info.eps, validate_args=validate_args)
        else:
            base = Uniform(tracegrad.full_like(self.loc, info.tiny), tracegrad.full_like(self.loc, 1 - info.eps),
                           validate_args=validate_args)
        chain = [ExpTransform().inv, AffineTransform(loc=0, scale=-tracegrad.ones_like(self.scale)),
                 ExpTransform().inv, AffineTransform(loc=self.loc, scale=-self.scale)]
        super().__init__(base, chain, validate_args=validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (self.loc - value) / self.scale
        return (z - z.exp()) - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * _EULER

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + _EULER)
