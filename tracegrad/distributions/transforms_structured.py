"""The transforms of ``torch.distributions.transforms`` built from other transforms or objects:
``CatTransform``/``StackTransform`` (per-slice transforms) and ``CumulativeDistributionTransform``
(a distribution's cdf). Re-exported by ``transforms``."""
from __future__ import annotations

import tracegrad

from . import constraints
from .independent import _sum_rightmost
from .transform_base import Transform
from .utils import lazy_property

__all__ = ["CatTransform", "CumulativeDistributionTransform", "StackTransform"]


def _check_size(t, value, dim, size, what):
    if not -value.dim() <= dim < value.dim():
        raise AssertionError(f"dim {dim} out of range for {what} with {value.dim()} dimensions")
    if value.shape[dim] != size:
        raise AssertionError(f"{what}.size({dim}) = {value.shape[dim]} must equal {size} "
                             f"(the parts of this {type(t).__name__})")


class _Sliced(Transform):
    """A transform made of ``transforms`` applied to slices of its input along ``dim``; subclasses
    say how to cut (``_parts``) and join (``_join``)."""

    def __init__(self, tseq, dim, cache_size):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        super().__init__(cache_size=cache_size)
        self.transforms = [t.with_cache(cache_size) for t in tseq] if cache_size else list(tseq)
        self.dim = dim

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    def _map(self, value, method):
        return self._join([method(t)(part) for t, part in zip(self.transforms, self._parts(value, "tensor"))])

    def _call(self, x):
        return self._map(x, lambda t: t)

    def _inverse(self, y):
        return self._map(y, lambda t: t.inv)


class CatTransform(_Sliced):
    """Mirrors ``torch.distributions.transforms.CatTransform(tseq, dim=0, lengths=None, cache_size=0)``:
    ``tseq[i]`` maps the ``i``-th run of ``lengths[i]`` entries along ``dim`` (default 1 each), the
    results concatenated. ``log_abs_det_jacobian`` sums each part's event dims up to the largest.
    Raises AssertionError (as torch) for a non-Transform, mismatched ``lengths``, or an input whose
    size along ``dim`` is not ``sum(lengths)``."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        super().__init__(tseq, dim, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")

    @lazy_property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else CatTransform(self.transforms, self.dim, self.lengths,
                                                                        cache_size)

    def _parts(self, value, what):
        _check_size(self, value, self.dim, self.length, what)
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return [value.narrow(self.dim, s, n) for s, n in zip(starts, self.lengths)]

    def _join(self, parts):
        return tracegrad.cat(parts, dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        parts = [t.log_abs_det_jacobian(xs, ys) for t, xs, ys in
                 zip(self.transforms, self._parts(x, "x"), self._parts(y, "y"))]
        parts = [_sum_rightmost(p, self.event_dim - t.event_dim) for t, p in zip(self.transforms, parts)]
        # the cat dim counted from the right of what remains once the event dims are reduced
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        return tracegrad.cat(parts, dim=dim) if dim < 0 else sum(parts)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(_Sliced):
    """Mirrors ``torch.distributions.transforms.StackTransform(tseq, dim=0, cache_size=0)``:
    ``tseq[i]`` maps ``x.select(dim, i)``, the results stacked along ``dim``. Raises
    AssertionError (as torch) for a non-Transform or an input whose size along ``dim`` is not
    ``len(tseq)``."""

    def __init__(self, tseq, dim=0, cache_size=0):
        super().__init__(tseq, dim, cache_size)

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else StackTransform(self.transforms, self.dim, cache_size)

    def _parts(self, value, what):
        _check_size(self, value, self.dim, len(self.transforms), what)
        return [value.select(self.dim, i) for i in range(value.shape[self.dim])]

    def _join(self, parts):
        return tracegrad.stack(parts, dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        return self._join([t.log_abs_det_jacobian(xs, ys) for t, xs, ys in
                           zip(self.transforms, self._parts(x, "x"), self._parts(y, "y"))])

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """Mirrors ``torch.distributions.transforms.CumulativeDistributionTransform(distribution,
    cache_size=0)``: ``y = distribution.cdf(x)`` onto the unit interval, inverse ``icdf``,
    log-det Jacobian ``distribution.log_prob(x)``; its domain is the distribution's support.
    Raises NotImplementedError where the distribution lacks cdf/icdf."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
