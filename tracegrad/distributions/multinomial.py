"""Mirrors ``torch.distributions.Multinomial`` and ``NegativeBinomial``."""
from __future__ import annotations

import tracegrad

from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .gamma import Gamma
from .geometric import Binomial, _ProbsLogits, _one_of
from .utils import broadcast_all, delegated

__all__ = ["Multinomial", "NegativeBinomial"]


class Multinomial(Distribution):
    """Mirrors ``torch.distributions.Multinomial(total_count=1, probs=None, logits=None,
    validate_args=None)``: counts of ``total_count`` draws over ``K`` categories. Event shape
    ``(K,)``; samples are float counts summing to ``total_count`` (no rsample). ``total_count``
    is one Python int for the whole batch. Raises NotImplementedError for a non-int
    ``total_count`` (as torch),
    ValueError as ``Categorical`` for the probabilities and (validation on) for negative counts
    or counts summing above ``total_count``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int) or isinstance(total_count, bool):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = tracegrad.Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new._categorical.probs, validate_args=False)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    probs = delegated("_categorical", "probs")
    logits = delegated("_categorical", "logits")
    param_shape = delegated("_categorical", "param_shape")

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        with tracegrad.no_grad():
            # total_count category draws per sample, moved to the last dim and counted per category
            draws = self._categorical.sample((self.total_count,) + sample_shape)
            draws = draws.permute(*range(1, draws.dim()), 0)
            counts = tracegrad.zeros(self._extended_shape(sample_shape), dtype=self.probs.dtype)
            return counts.scatter_add_(-1, draws, tracegrad.ones_like(draws, dtype=self.probs.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # 0 * log(0) counts as 0 for a category that cannot occur and was not drawn
        logits = tracegrad.where((value == 0) & (logits == float("-inf")), tracegrad.zeros_like(logits), logits)
        return ((value.sum(-1) + 1).lgamma() - (value + 1).lgamma().sum(-1) + (logits * value).sum(-1))

    def entropy(self):
        n = tracegrad.tensor(float(self.total_count), dtype=self.probs.dtype)
        first = n * self._categorical.entropy() - (n + 1).lgamma()
        counts = self._binomial.enumerate_support(expand=False)[1:]
        weights = self._binomial.log_prob(counts).exp() * (counts + 1).lgamma()
        return first + weights.sum(0).sum(-1)


class NegativeBinomial(_ProbsLogits):
    """Mirrors ``torch.distributions.NegativeBinomial(total_count, probs=None, logits=None,
    validate_args=None)``: successes before ``total_count`` failures, success probability
    ``probs``. Samples are float counts (Poisson of a Gamma rate; no rsample). Raises ValueError
    when both or neither of probs/logits is given, for a negative total_count or probs outside
    ``[0, 1)`` (validation on), and for values that are not non-negative integers."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        name, param, _ = _one_of(probs, logits)
        count, param = broadcast_all(total_count, param)
        self.total_count = count.type_as(param)
        setattr(self, name, param)
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_probs_logits(NegativeBinomial, batch_shape, _instance, ("total_count",))

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape=()):
        with tracegrad.no_grad():
            rate = Gamma(self.total_count, (-self.logits).exp(), validate_args=False).sample(sample_shape)
            return tracegrad.poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logsigmoid = tracegrad.nn.functional.logsigmoid
        unnormalized = self.total_count * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        norm = -(self.total_count + value).lgamma() + (1.0 + value).lgamma() + self.total_count.lgamma()
        # the total_count = value = 0 corner: probability 1
        norm = norm.masked_fill(self.total_count + value == 0.0, 0.0)
        return unnormalized - norm
