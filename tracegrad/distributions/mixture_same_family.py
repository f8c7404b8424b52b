"""Mirrors ``torch.distributions.MixtureSameFamily``."""
from __future__ import annotations

import tracegrad

from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """Mirrors ``torch.distributions.MixtureSameFamily(mixture_distribution,
    component_distribution, validate_args=None)``: a ``Categorical`` over the rightmost batch
    dim of ``component_distribution`` picks the component. ``log_prob`` is a logsumexp over
    components (differentiable in both); no rsample. Raises ValueError when the mixture is not a
    Categorical, the component is not a Distribution, or their batch shapes / component
    counts do not match."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("The Mixture distribution needs to be an instance of torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of torch.distributions.Distribution")
        mdbs = tuple(mixture_distribution.batch_shape)
        cdbs = tuple(component_distribution.batch_shape)[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({tracegrad.Size(mdbs)}) is not compatible with "
                                 f"`component_distribution.batch_shape`({tracegrad.Size(cdbs)})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km is not None and kc is not None and km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cdbs, component_distribution.event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = tracegrad.Size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(tuple(batch_shape) + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        Distribution.__init__(new, batch_shape, new._component_distribution.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    def _component_weights(self):
        """The mixture probabilities shaped to broadcast against per-component event values."""
        probs = self._mixture_distribution.probs
        return probs.reshape(tuple(probs.shape) + (1,) * self._event_ndims)

    @property
    def mean(self):
        return (self._component_weights() * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        # law of total variance: E[Var(X | k)] + Var(E[X | k])
        w = self._component_weights()
        dim = -1 - self._event_ndims
        mean_cond_var = (w * self._component_distribution.variance).sum(dim)
        var_cond_mean = (w * (self._component_distribution.mean - self._pad(self.mean)).pow(2.0)).sum(dim)
        return mean_cond_var + var_cond_mean

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def cdf(self, x):
        x = self._pad(x)
        return (self._component_distribution.cdf(x) * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        per_component = self._component_distribution.log_prob(self._pad(x))
        log_mix = self._mixture_distribution.logits.log_softmax(-1)
        return (per_component + log_mix).logsumexp(-1)

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        with tracegrad.no_grad():
            which = self._mixture_distribution.sample(sample_shape)
            comps = self._component_distribution.sample(sample_shape)
            # one index per event element, pointing at the chosen component
            index = which.reshape(tuple(which.shape) + (1,) * (self._event_ndims + 1))
            index = index.expand(tuple(which.shape) + (1,) + tuple(self.event_shape))
            return comps.gather(len(sample_shape) + len(self.batch_shape), index).squeeze(
                len(sample_shape) + len(self.batch_shape))

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self._mixture_distribution},\n  {self._component_distribution})")
