"""Mirrors ``torch.distributions.RelaxedBernoulli`` and ``RelaxedOneHotCategorical`` (the
Concrete / Gumbel-softmax relaxations) with their logit-space bases ``LogitRelaxedBernoulli``
and ``ExpRelaxedCategorical``."""
from __future__ import annotations

import tracegrad

from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .geometric import _ProbsLogits, _one_of
from .transformed_distribution import _Params
from .transforms import ExpTransform, SigmoidTransform
from .utils import broadcast_all, clamp_probs, delegated

__all__ = ["ExpRelaxedCategorical", "LogitRelaxedBernoulli", "RelaxedBernoulli", "RelaxedOneHotCategorical"]


class LogitRelaxedBernoulli(_ProbsLogits):
    """Mirrors ``LogitRelaxedBernoulli(temperature, probs=None, logits=None, validate_args=None)``:
    ``(logistic noise + logits) / temperature``, on the reals. Reparameterised."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        name, param, scalar = _one_of(probs, logits)
        setattr(self, name, param)
        super().__init__(() if scalar else param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_probs_logits(LogitRelaxedBernoulli, batch_shape, _instance)
        new.temperature = self.temperature
        return new

    @property
    def param_shape(self):
        return (self.probs if "probs" in self.__dict__ else self.logits).shape

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(tracegrad.rand(shape, dtype=probs.dtype))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        t = self.temperature
        log_t = t.log() if isinstance(t, tracegrad.Tensor) else tracegrad.tensor(float(t), dtype=diff.dtype).log()
        return log_t + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(_Params):
    """Mirrors ``torch.distributions.RelaxedBernoulli(temperature, probs=None, logits=None,
    validate_args=None)``: ``sigmoid`` of a ``LogitRelaxedBernoulli``, values in (0, 1),
    reparameterised (low temperature approaches Bernoulli). Raises ValueError as Bernoulli."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    temperature = delegated("base_dist", "temperature")
    logits = delegated("base_dist", "logits")
    probs = delegated("base_dist", "probs")


class ExpRelaxedCategorical(Distribution):
    """Mirrors ``ExpRelaxedCategorical(temperature, probs=None, logits=None, validate_args=None)``:
    the log of a Gumbel-softmax sample (event shape ``(K,)``, log-simplex). Reparameterised."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        shape = self._categorical.param_shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        batch_shape = tracegrad.Size(batch_shape)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    param_shape = delegated("_categorical", "param_shape")
    logits = delegated("_categorical", "logits")
    probs = delegated("_categorical", "probs")

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(tracegrad.rand(shape, dtype=self.logits.dtype))
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        t = self.temperature if isinstance(self.temperature, tracegrad.Tensor) else \
            tracegrad.tensor(float(self.temperature), dtype=logits.dtype)
        log_scale = tracegrad.full_like(t, float(k)).lgamma() + t.log() * (k - 1)
        score = logits - value * t
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(_Params):
    """Mirrors ``torch.distributions.RelaxedOneHotCategorical(temperature, probs=None,
    logits=None, validate_args=None)``: Gumbel-softmax samples on the simplex (event shape
    ``(K,)``), reparameterised. Raises ValueError as Categorical."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    temperature = delegated("base_dist", "temperature")
    logits = delegated("base_dist", "logits")
    probs = delegated("base_dist", "probs")
