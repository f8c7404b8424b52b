"""Mirrors ``torch.distributions.TransformedDistribution``."""
from __future__ import annotations

import tracegrad

from . import constraints
from .distribution import Distribution
from .independent import Independent, _sum_rightmost
from .transforms import ComposeTransform, Transform

__all__ = ["TransformedDistribution"]


class TransformedDistribution(Distribution):
    """Mirrors ``torch.distributions.TransformedDistribution(base_distribution, transforms,
    validate_args=None)``: samples are ``transforms`` applied in order to the base's samples;
    ``log_prob(y)`` is the base's log-density of ``x = inverse(y)`` minus the log absolute
    Jacobian determinants (change of variables).

    Shapes: the transforms may broadcast the base (e.g. an ``AffineTransform`` with a batched
    scale expands it) and may claim base batch dims as event dims (wrapped in ``Independent``).
    ``cdf``/``icdf`` need monotone transforms (``sign``). Raises ValueError when ``transforms``
    is not a Transform or a list of them, or the base has too few dims for them.
    """

    arg_constraints: dict = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list) and all(isinstance(t, Transform) for t in transforms):
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or a list of Transforms, but was {transforms}")
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        chain = ComposeTransform(self.transforms)
        if len(base_shape) < chain.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least {chain.domain.event_dim}, "
                             f"but got {len(base_shape)}.")
        out_shape = tuple(chain.forward_shape(base_shape))
        # a transform whose parameters have more dims broadcasts the base up to them
        needed = tuple(chain.inverse_shape(out_shape))
        if needed != base_shape:
            base_distribution = base_distribution.expand(needed[:len(needed) - base_event_dim])
        if chain.domain.event_dim > base_event_dim:
            base_distribution = Independent(base_distribution, chain.domain.event_dim - base_event_dim)
        self.base_dist = base_distribution
        event_dim = max(chain.codomain.event_dim,
                        base_event_dim + chain.codomain.event_dim - chain.domain.event_dim)
        cut = len(out_shape) - event_dim
        super().__init__(out_shape[:cut], out_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = tracegrad.Size(batch_shape)
        shape = tuple(batch_shape) + tuple(self.event_shape)
        for t in reversed(self.transforms):
            shape = tuple(t.inverse_shape(shape))
        new.base_dist = self.base_dist.expand(shape[:len(shape) - len(self.base_dist.event_shape)])
        new.transforms = self.transforms
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def sample(self, sample_shape=()):
        with tracegrad.no_grad():
            return self._push(self.base_dist.sample(sample_shape))

    def rsample(self, sample_shape=()):
        return self._push(self.base_dist.rsample(sample_shape))

    def _push(self, x):
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        result = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            result = result - _sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
            y = x
        return result + _sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        """``value`` when the chain increases, ``1 - value`` when it decreases."""
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        return self._push(self.base_dist.icdf(self._monotonize_cdf(value)))


class _Params(TransformedDistribution):
    """A transformed distribution that keeps its own broadcast parameters ``_names`` (expanded
    with the base by ``expand``)."""

    _names: tuple = ()

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(type(self), _instance)
        for name in self._names:
            setattr(new, name, getattr(self, name).expand(batch_shape))
        return super().expand(batch_shape, _instance=new)
