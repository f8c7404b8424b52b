"""The transforms of ``torch.distributions.transforms`` built from other transforms or objects:
``CatTransform``/``StackTransform`` (per-slice transforms), ``CorrCholeskyTransform`` and
``PositiveDefiniteTransform`` (matrix-valued codomains), ``CumulativeDistributionTransform`` (a
distribution's cdf). Re-exported by ``transforms``."""
from __future__ import annotations

import math

import tracegrad

from . import constraints
from .independent import _sum_rightmost
from .transforms import LowerCholeskyTransform, Transform, _SameType
from .utils import lazy_property, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["CatTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform", "PositiveDefiniteTransform",
           "StackTransform"]


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


class CorrCholeskyTransform(_SameType, Transform):
    """Mirrors ``torch.distributions.transforms.CorrCholeskyTransform``: a real vector of length
    ``D(D-1)/2`` -> the lower Cholesky factor of a ``D x D`` correlation matrix (unit-norm rows).
    The entries pass through tanh to partial correlations in (-1, 1), then each row is filled by
    stick breaking on its squared norm. Raises ValueError for a length that is not triangular."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = tracegrad.finfo(x.dtype).eps
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        # row i, column j takes r_ij times the stick left by the entries before it
        stick = (1 - r.pow(2)).sqrt().cumprod(-1)
        eye = tracegrad.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return (r + eye) * tracegrad.nn.functional.pad(stick[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        left = tracegrad.nn.functional.pad((1 - (y * y).cumsum(-1))[..., :-1], [1, 0], value=1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left, diag=-1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        stick_logdet = 0.5 * tril_matrix_to_vec(1 - (y * y).cumsum(-1), diag=-2).log().sum(-1)
        # log(1 - tanh(x)^2) in a form that stays finite for large |x|
        tanh_logdet = -2 * (x + tracegrad.nn.functional.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_logdet + tanh_logdet

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


class PositiveDefiniteTransform(_SameType, Transform):
    """Mirrors ``torch.distributions.transforms.PositiveDefiniteTransform``: square matrices ->
    positive-definite ones, ``L @ L.mT`` with ``L = LowerCholeskyTransform()(x)``. Not bijective
    on its domain (the upper triangle is ignored); no log-det Jacobian, as torch."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(tracegrad.linalg.cholesky(y))


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
