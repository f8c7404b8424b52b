"""Mirrors ``torch.distributions.constraint_registry``: ``biject_to(constraint)`` (a bijective
transform from the reals onto the constraint's set) and ``transform_to(constraint)`` (any
transform onto it), looked up by the constraint's class, extensible with ``register``."""
from __future__ import annotations

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Mirrors ``ConstraintRegistry``: constraint class -> ``factory(constraint) -> Transform``.
    Calling it with a constraint without a factory raises NotImplementedError."""

    def __init__(self):
        self._registry: dict = {}

    def register(self, constraint, factory=None):
        """Registers ``factory`` for ``constraint`` (a Constraint subclass or instance; an
        instance stands for its class); usable as a decorator. TypeError for anything else."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(constraint):
    def decorator(factory):
        biject_to.register(constraint, factory)
        transform_to.register(constraint, factory)
        return factory
    return decorator


@_both(constraints.real)
def _to_real(constraint):
    return transforms.identity_transform


def _biject_independent(constraint):
    return transforms.IndependentTransform(biject_to(constraint.base_constraint), constraint.reinterpreted_batch_ndims)


def _transform_independent(constraint):
    return transforms.IndependentTransform(transform_to(constraint.base_constraint),
                                           constraint.reinterpreted_batch_ndims)


biject_to.register(constraints.independent, _biject_independent)
transform_to.register(constraints.independent, _transform_independent)


@_both(constraints.greater_than)
@_both(constraints.greater_than_eq)
def _to_greater_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(), transforms.AffineTransform(constraint.lower_bound, 1)])


@_both(constraints.less_than)
def _to_less_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(), transforms.AffineTransform(constraint.upper_bound, -1)])


@_both(constraints.interval)
@_both(constraints.half_open_interval)
def _to_interval(constraint):
    lower, upper = constraint.lower_bound, constraint.upper_bound
    if _is_number(lower) and _is_number(upper) and lower == 0 and upper == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(), transforms.AffineTransform(lower, upper - lower)])


def _is_number(v):
    return isinstance(v, (int, float))


biject_to.register(constraints.simplex, lambda constraint: transforms.StickBreakingTransform())
transform_to.register(constraints.simplex, lambda constraint: transforms.SoftmaxTransform())
transform_to.register(constraints.lower_cholesky, lambda constraint: transforms.LowerCholeskyTransform())
transform_to.register(constraints.positive_definite, lambda constraint: transforms.PositiveDefiniteTransform())
transform_to.register(constraints.positive_semidefinite, lambda constraint: transforms.PositiveDefiniteTransform())
_both(constraints.corr_cholesky)(lambda constraint: transforms.CorrCholeskyTransform())


def _per_part(registry):
    """Cat/stack constraints: the registry's transform for each part, combined the same way."""
    def factory(constraint):
        parts = [registry(c) for c in constraint.cseq]
        if isinstance(constraint, constraints.stack):
            return transforms.StackTransform(parts, constraint.dim)
        return transforms.CatTransform(parts, constraint.dim, constraint.lengths)
    return factory


for _registry in (biject_to, transform_to):
    _registry.register(constraints.cat, _per_part(_registry))
    _registry.register(constraints.stack, _per_part(_registry))
