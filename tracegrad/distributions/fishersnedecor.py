"""Mirrors ``torch.distributions.FisherSnedecor``: the F distribution."""
from __future__ import annotations

import math

import tracegrad

from . import constraints
from .distribution import Distribution
from .gamma import Gamma

__all__ = ["FisherSnedecor"]


def _nan_where(value, mask):
    return value.masked_fill(mask, math.nan)


class FisherSnedecor(Distribution):
    """Mirrors ``torch.distributions.FisherSnedecor(df1, df2, validate_args=None)``: the ratio
    ``(X1 / df1) / (X2 / df2)`` of scaled chi-squares, on positive numbers.

    ``df1``/``df2``: positive numbers or tensors, broadcast into ``batch_shape``. ``rsample`` is a
    ratio of Gamma rsamples (gradients reach both), floored at the dtype's smallest normal number
    as torch. ``mean`` is NaN where ``df2 <= 2``, ``variance`` where ``df2 <= 4``, ``mode`` where
    ``df1 <= 2``. Raises ValueError for non-positive degrees of freedom and (validation on) a
    non-positive ``log_prob`` value."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self._init_params(("df1", "df2"), (df1, df2), validate_args)
        # Gamma(df/2, rate=df) has mean 1/2: the df/2 factors cancel in the ratio
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(FisherSnedecor, batch_shape, _instance, ("df1", "df2"))
        new._gamma1, new._gamma2 = self._gamma1.expand(batch_shape), self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self):
        # NaN put into df2 before the formula, as torch: df1's gradient is NaN there too
        df2 = _nan_where(self.df2, self.df2 <= 2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        return _nan_where((self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2), self.df1 <= 2)

    @property
    def variance(self):
        df1, df2 = self.df1, _nan_where(self.df2, self.df2 <= 4)
        return 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        tiny = tracegrad.finfo(self.df1.dtype).tiny
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape).clamp(min=tiny)
        return (x1 / x2).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        h1, h2 = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        t1 = (h1 + h2).lgamma() - h1.lgamma() - h2.lgamma()
        t2 = h1 * ratio.log() + (h1 - 1) * value.log()
        return t1 + t2 - (h1 + h2) * (ratio * value).log1p()
