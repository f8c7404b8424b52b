"""The base of ``torch.distributions.transforms``: ``Transform`` (maps with cached inverses and log
absolute Jacobian determinants), the inverse wrapper ``t.inv`` and equality for parameter-free
transforms. Its own module so transforms defined in other modules can build on it without an
import cycle; ``transforms`` re-exports it."""
from __future__ import annotations

import weakref

from . import constraints

__all__ = ["Transform"]


class Transform:
    """Mirrors ``torch.distributions.transforms.Transform``: ``y = t(x)``, ``x = t.inv(y)``,
    ``t.log_abs_det_jacobian(x, y)`` (shape: ``x.shape`` minus the transform's event dims),
    ``domain``/``codomain`` constraints, ``bijective``, ``sign`` (+1/-1 for monotone maps).

    ``cache_size=1`` remembers the last ``(x, y)`` pair so ``t.inv(t(x))`` returns ``x`` itself
    (what ``TransformedDistribution.log_prob`` of an ``rsample`` relies on for exactness).
    Raises ValueError for a ``cache_size`` other than 0 or 1, NotImplementedError for a method a
    subclass does not define.
    """

    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = None, None
        self._inv = None

    @property
    def event_dim(self):
        if self.domain.event_dim != self.codomain.event_dim:
            raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")
        return self.domain.event_dim

    @property
    def inv(self):
        """The inverse transform (one object per transform, held weakly as torch does)."""
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self):
        raise NotImplementedError(f"{type(self).__name__}.sign is not defined")

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self).__name__}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        return self._cached(x, 0, self._call)

    def _inv_call(self, y):
        return self._cached(y, 1, self._inverse)

    def _cached(self, value, side, fn):
        """``fn(value)`` (the map from side ``side`` of the cached ``(x, y)`` pair to the other);
        with ``cache_size=1`` the same input object gives back the remembered result."""
        if self._cache_size == 0:
            return fn(value)
        pair = self._cached_x_y
        if value is pair[side]:
            return pair[1 - side]
        result = fn(value)
        self._cached_x_y = (value, result) if side == 0 else (result, value)
        return result

    def _call(self, x):
        raise NotImplementedError(f"{type(self).__name__} does not implement the forward map")

    def _inverse(self, y):
        raise NotImplementedError(f"{type(self).__name__} does not implement the inverse map")

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError(f"{type(self).__name__}.log_abs_det_jacobian is not implemented")

    def forward_shape(self, shape):
        """The shape of ``t(x)`` for an ``x`` of ``shape``."""
        return shape

    def inverse_shape(self, shape):
        """The shape of ``t.inv(y)`` for a ``y`` of ``shape``."""
        return shape

    def __repr__(self):
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """``t.inv``: swaps the maps, the constraints and the Jacobian's sign of the wrapped ``t``."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class _SameType:
    """Equality of parameter-free transforms: any two of the same class are equal."""

    def __eq__(self, other):
        return isinstance(other, type(self))

    __hash__ = object.__hash__
