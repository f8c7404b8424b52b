"""Mirrors ``torch.distributions.LogisticNormal``: a Normal pushed onto the simplex."""
from __future__ import annotations

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """Mirrors ``torch.distributions.LogisticNormal(loc, scale, validate_args=None)``:
    ``StickBreakingTransform()(x)`` for ``x ~ Normal(loc, scale)`` (independent over the last dim).

    ``loc``/``scale`` of shape ``(..., K - 1)`` (numbers act as ``(1,)``) give samples on the
    ``K``-simplex: ``batch_shape`` is ``loc.shape[:-1]``, ``event_shape`` ``(K,)``. Reparameterised.
    Raises ValueError for a non-positive scale (validation on) or (validation on) a value off the
    simplex."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(LogisticNormal, _instance))

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale
