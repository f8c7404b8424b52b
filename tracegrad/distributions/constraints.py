"""Mirrors ``torch.distributions.constraints``: the sets a parameter or a sample must lie in.
``check(value)`` returns a bool tensor (one entry per batch element, event dims reduced)."""
from __future__ import annotations

import tracegrad

__all__ = ["Constraint", "MixtureSameFamilyConstraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property", "greater_than",
           "greater_than_eq", "half_open_interval", "independent", "integer_interval", "interval", "less_than", "lower_cholesky",
           "lower_triangular", "multinomial", "nonnegative", "nonnegative_integer", "one_hot", "positive",
           "positive_definite", "positive_integer", "positive_semidefinite", "real", "real_vector", "simplex", "square",
           "stack", "symmetric", "unit_interval", "is_dependent"]


class Constraint:
    """Mirrors ``torch.distributions.constraints.Constraint``: ``is_discrete``, ``event_dim``,
    ``check(value)``."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A constraint that depends on other parameters: not checked (as torch)."""

    def __init__(self, *, is_discrete=False, event_dim=0):
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, *, is_discrete=False, event_dim=0):
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    """Mirrors ``constraints.is_dependent``."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """Mirrors ``constraints.dependent_property``: a property that is also a dependent constraint
    (an instance of ``_Dependent``, as in torch, so ``is_dependent`` sees it)."""

    def __init__(self, fn=None, *, is_discrete=False, event_dim=0):
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)


dependent_property = _DependentProperty


class _Real(Constraint):
    def check(self, value):
        return value == value   # False for NaN only


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self):
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return self.lower_bound < value

    def __repr__(self):
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(Constraint):      # not a _GreaterThan, as in torch
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return self.lower_bound <= value

    def __repr__(self):
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return f"{type(self).__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(Constraint):   # not an _Interval, as in torch
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)

    __repr__ = _Interval.__repr__


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_int = (value == 0) | (value == 1)
        return is_int.all(-1) & (value.sum(-1) == 1)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        lower = (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _Multinomial(Constraint):
    """Non-negative counts over the last dim summing to at most ``upper_bound``."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return (value >= 0).all(-1) & (value.sum(-1) <= self.upper_bound)


class _Matrix(Constraint):
    """Square matrices (``event_dim`` 2) whose elements all satisfy ``_elements``."""

    event_dim = 2

    def _elements(self, value):
        raise NotImplementedError

    def check(self, value):
        ok = self._elements(value)
        return ok.reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)


class _Square(_Matrix):
    def check(self, value):
        import tracegrad
        return tracegrad.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1], dtype=tracegrad.bool)


class _Symmetric(_Square):
    def check(self, value):
        square = super().check(value)
        if not bool(square.all()):
            return square
        # torch: isclose(value, value.mT, atol=1e-6) (rtol 1e-5)
        return ((value - value.transpose(-2, -1)).abs() <= 1e-6 + 1e-5 * value.transpose(-2, -1).abs()).reshape(
            tuple(value.shape[:-2]) + (-1,)).all(-1)


class _LowerTriangular(_Matrix):
    def _elements(self, value):
        return value.tril() == value


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        import tracegrad
        sym = super().check(value)
        if not bool(sym.all()):
            return sym
        return (tracegrad.linalg.eigvalsh(value) > 0).all(-1)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        import tracegrad
        sym = super().check(value)
        if not bool(sym.all()):
            return sym
        return (tracegrad.linalg.eigvalsh(value) >= 0).all(-1)


class _IndependentConstraint(Constraint):
    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        self.base_constraint, self.reinterpreted_batch_ndims = base_constraint, reinterpreted_batch_ndims
        self.is_discrete = base_constraint.is_discrete
        self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        for _ in range(self.reinterpreted_batch_ndims):
            result = result.all(-1)
        return result

    def __repr__(self):
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: positive diagonal and unit-norm rows (to
    ``10 * eps * n``, as torch)."""

    event_dim = 2

    def check(self, value):
        import tracegrad
        tol = tracegrad.finfo(value.dtype).eps * value.shape[-1] * 10
        unit_rows = ((value.detach().pow(2).sum(-1).sqrt() - 1.0).abs() <= tol).all(-1)
        return _LowerCholesky().check(value) & unit_rows


def _check_dim(dim, value):
    if not -value.dim() <= dim < value.dim():
        raise AssertionError(f"dim {dim} out of range for value with {value.dim()} dimensions")


class _Cat(Constraint):
    """``cseq[i]`` applied to consecutive slices of ``lengths[i]`` along ``dim`` (default 1 each)."""

    def __init__(self, cseq, dim=0, lengths=None):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match cseq ({len(self.cseq)})")
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        import tracegrad
        _check_dim(self.dim, value)
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return tracegrad.cat([c.check(value.narrow(self.dim, s, n))
                              for c, s, n in zip(self.cseq, starts, self.lengths)], self.dim)


class _Stack(Constraint):
    """``cseq[i]`` applied to ``value.select(dim, i)``."""

    def __init__(self, cseq, dim=0):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq, self.dim = list(cseq), dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        # a negative stacking dim inside the event adds one event dim
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value):
        import tracegrad
        _check_dim(self.dim, value)
        return tracegrad.stack([c.check(value.select(self.dim, i)) for i, c in enumerate(self.cseq)], self.dim)


dependent = _Dependent()
corr_cholesky = _CorrCholesky()
cat = _Cat
stack = _Stack
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
multinomial = _Multinomial
square = _Square()
symmetric = _Symmetric()
lower_triangular = _LowerTriangular()
positive_semidefinite = _PositiveSemidefinite()
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
del tracegrad


class MixtureSameFamilyConstraint(Constraint):
    """Mirrors ``torch.distributions.constraints.MixtureSameFamilyConstraint(base_constraint)``,
    ``MixtureSameFamily``'s support: the component's support checked on a value broadcast
    against every component, valid when it lies in all of them. Raises AssertionError (as
    torch) when ``base_constraint`` is not a Constraint."""

    def __init__(self, base_constraint):
        if not isinstance(base_constraint, Constraint):
            raise AssertionError(f"MixtureSameFamilyConstraint: base_constraint must be a Constraint, "
                                 f"got {type(base_constraint).__name__}")
        self.base_constraint = base_constraint
        self.is_discrete, self.event_dim = base_constraint.is_discrete, base_constraint.event_dim

    def check(self, value):
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        keep = value.dim() - self.event_dim
        return result.reshape(tuple(result.shape[:keep]) + (-1,)).all(-1)

    def __repr__(self):
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"
