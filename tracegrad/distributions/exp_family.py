"""Mirrors ``torch.distributions.ExponentialFamily``: the base class whose entropy (and same-family
KL divergence, in ``kl.py``) come from the log normalizer by automatic differentiation."""
from __future__ import annotations

import tracegrad

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


def _detached_leaves(params):
    return [p.detach().requires_grad_() for p in params]


def _normalizer_and_grads(dist, params):
    """``F(theta)`` at ``params`` and ``dF/dtheta`` (kept differentiable, as torch's create_graph)."""
    value = dist._log_normalizer(*params)
    with tracegrad.enable_grad():
        grads = tracegrad.autograd.grad(value.sum(), params, create_graph=True)
    return value, grads


class ExponentialFamily(Distribution):
    """Mirrors ``torch.distributions.ExponentialFamily``: densities
    ``p(x; theta) = exp(<t(x), theta> - F(theta) + k(x))``.

    Subclasses give ``_natural_params`` (a tuple of tensors ``theta``), ``_log_normalizer(*theta)``
    (``F``, shape ``batch_shape``) and ``_mean_carrier_measure`` (``E[k(x)]``). ``entropy()`` is then
    ``F(theta) - <theta, grad F(theta)> - E[k(x)]`` (the Bregman form). As in torch it is computed at
    detached copies of the natural parameters, so it carries no gradient back to the parameters;
    families with a closed-form entropy override it. Raises NotImplementedError when a subclass
    lacks one of the three pieces."""

    @property
    def _natural_params(self):
        raise NotImplementedError(f"{type(self).__name__} does not define its natural parameters")

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError(f"{type(self).__name__} does not define its log normalizer")

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError(f"{type(self).__name__} does not define its mean carrier measure")

    def entropy(self):
        params = _detached_leaves(self._natural_params)
        value, grads = _normalizer_and_grads(self, params)
        result = value - self._mean_carrier_measure
        for theta, g in zip(params, grads):
            result = result - (theta * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
