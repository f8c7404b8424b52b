"""Mirrors ``torch.distributions.Geometric`` and ``Binomial`` (counts parameterised by a success
probability, given as ``probs`` or ``logits``)."""
from __future__ import annotations

import numbers

import tracegrad

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Binomial", "Geometric"]


def _one_of(probs, logits):
    """The given one of ``probs``/``logits`` as a tensor and whether it was a plain number.
    Raises ValueError unless exactly one is given (torch's rule)."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    given = probs if probs is not None else logits
    (tensor,) = broadcast_all(given)
    return ("probs" if probs is not None else "logits"), tensor, isinstance(given, numbers.Number)


class _ProbsLogits(Distribution):
    """The ``probs``/``logits`` pair: the one given is stored, the other derived lazily."""

    _binary = True

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=self._binary)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=self._binary)

    def _expand_probs_logits(self, cls, batch_shape, _instance, extra=()):
        names = tuple(n for n in ("probs", "logits") if n in self.__dict__) + tuple(extra)
        return self._expand_params(cls, batch_shape, _instance, names)


class Geometric(_ProbsLogits):
    """Mirrors ``torch.distributions.Geometric(probs=None, logits=None, validate_args=None)``:
    the number of failures before the first success, ``P(k) = (1 - p)**k * p`` for ``k >= 0``.
    Samples are float counts (no rsample). Raises ValueError when both or neither parameter is
    given, for ``probs`` outside ``(0, 1]`` (validation on), and for values that are not
    non-negative integers."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        name, param, scalar = _one_of(probs, logits)
        setattr(self, name, param)
        super().__init__(() if scalar else param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape "
                             f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but found "
                             f"invalid values:\n{self.probs}")

    def expand(self, batch_shape, _instance=None):
        return self._expand_probs_logits(Geometric, batch_shape, _instance)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return tracegrad.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        tiny = tracegrad.finfo(self.probs.dtype).tiny
        with tracegrad.no_grad():
            u = tracegrad.rand(shape, dtype=self.probs.dtype).clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # P(0) = 1 when p = 1: 0 * log(0) must count as 0
        probs = tracegrad.where((probs == 1) & (value == 0), tracegrad.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        bce = tracegrad.nn.functional.binary_cross_entropy_with_logits
        return bce(self.logits, self.probs, reduction="none") / self.probs


def _clamp_by_zero(x):
    # max(x, 0) whose gradient at 0 is 1/2, as torch's
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(_ProbsLogits):
    """Mirrors ``torch.distributions.Binomial(total_count=1, probs=None, logits=None,
    validate_args=None)``: successes in ``total_count`` trials. Samples are float counts (no
    rsample); ``entropy``/``enumerate_support`` need one total_count for the whole batch
    (NotImplementedError otherwise, as torch). Raises ValueError when both or neither of
    probs/logits is given, for a negative or fractional total_count, probs outside [0, 1], and
    (validation on) values outside ``0..total_count``."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        name, param, scalar = _one_of(probs, logits)
        count, param = broadcast_all(total_count, param)
        self.total_count = count.type_as(param)
        setattr(self, name, param)
        super().__init__(() if scalar and isinstance(total_count, numbers.Number) else param.shape,
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_probs_logits(Binomial, batch_shape, _instance, ("total_count",))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with tracegrad.no_grad():
            return tracegrad.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n, k = self.total_count, value
        normalizer = n * _clamp_by_zero(self.logits) + n * (-self.logits.abs()).exp().log1p() - (n + 1).lgamma()
        return k * self.logits - (k + 1).lgamma() - (n - k + 1).lgamma() - normalizer

    def _count(self, api):
        n = int(self.total_count.max())
        if not bool((self.total_count == n).all()):
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{api}`.")
        return n

    def enumerate_support(self, expand=True):
        n = self._count("enumerate_support")
        # total_count has the given parameter's dtype: reading self.probs here would compute and
        # cache probs for a distribution built from logits (torch never does)
        values = tracegrad.arange(1 + n, dtype=self.total_count.dtype).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

    def entropy(self):
        self._count("entropy")
        lp = self.log_prob(self.enumerate_support(False))
        return -(lp.exp() * lp).sum(0)
