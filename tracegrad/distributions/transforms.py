"""Mirrors ``torch.distributions.transforms``: invertible maps between constrained spaces with
their log absolute Jacobian determinants, the building blocks of ``TransformedDistribution``.
Written on tracegrad's public ops, so every method is differentiable."""
from __future__ import annotations

import functools
import math
import numbers
import operator
import weakref

import tracegrad

from . import constraints
from .independent import _sum_rightmost
from .transform_base import Transform, _SameType
from .transforms_structured import CatTransform, CumulativeDistributionTransform, StackTransform
from .utils import broadcast_all, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "PositiveDefiniteTransform",
           "StackTransform",
           "LowerCholeskyTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "SoftplusTransform", "StickBreakingTransform", "TanhTransform", "Transform", "identity_transform"]


class ComposeTransform(Transform):
    """Mirrors ``ComposeTransform(parts, cache_size=0)``: ``parts`` applied left to right; the
    Jacobian terms are summed over the event dims each part adds. An empty list is the identity."""

    def __init__(self, parts, cache_size=0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = parts   # kept as given, as torch (a non-list fails where it is first iterated)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    def _event_dims(self):
        """(domain event dim, codomain event dim) of the whole chain: walking it, a part that
        needs more event dims than the running count raises the count (on either side)."""
        dim = 0
        start = 0
        for part in self.parts:
            if dim < part.domain.event_dim:
                start += part.domain.event_dim - dim
                dim = part.domain.event_dim
            dim += part.codomain.event_dim - part.domain.event_dim
        return start, dim

    @constraints.dependent_property
    def domain(self):
        if not self.parts:
            return constraints.real
        base = self.parts[0].domain
        need = self._event_dims()[0]
        return constraints.independent(base, need - base.event_dim) if need > base.event_dim else base

    @constraints.dependent_property
    def codomain(self):
        if not self.parts:
            return constraints.real
        base = self.parts[-1].codomain
        need = self._event_dims()[1]
        return constraints.independent(base, need - base.event_dim) if need > base.event_dim else base

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        return functools.reduce(operator.mul, (p.sign for p in self.parts), 1)

    @property
    def inv(self):
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return tracegrad.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total = 0
        dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            total = total + _sum_rightmost(part.log_abs_det_jacobian(a, b), dim - part.domain.event_dim)
            dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        return f"{type(self).__name__}(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class ExpTransform(_SameType, Transform):
    """Mirrors ``ExpTransform``: ``y = exp(x)``, real -> positive."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """Mirrors ``PowerTransform(exponent)``: ``y = x ** exponent`` on positive numbers."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)   # (ValueError for a str, as torch)

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool(self.exponent.eq(other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return tracegrad.broadcast_shapes(shape, getattr(self.exponent, "shape", ()))

    inverse_shape = forward_shape


class SigmoidTransform(_SameType, Transform):
    """Mirrors ``SigmoidTransform``: ``y = sigmoid(x)``, real -> unit interval, kept inside
    ``[tiny, 1 - eps]`` of the dtype so the inverse stays finite (as torch)."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def _call(self, x):
        return _clipped(x.sigmoid(), x.dtype)   # the limits of x's dtype: TypeError for an int x, as torch

    def _inverse(self, y):
        y = _clipped(y)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        softplus = tracegrad.nn.functional.softplus
        return -softplus(-x) - softplus(x)


def _clipped(p, dtype=None):
    info = tracegrad.finfo(p.dtype if dtype is None else dtype)
    return p.clamp(min=info.tiny, max=1.0 - info.eps)


class TanhTransform(_SameType, Transform):
    """Mirrors ``TanhTransform``: ``y = tanh(x)``, real -> (-1, 1); the Jacobian term is the
    stable ``2 * (log 2 - x - softplus(-2x))``."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - tracegrad.nn.functional.softplus(-2.0 * x))


class AbsTransform(_SameType, Transform):
    """Mirrors ``AbsTransform``: ``y = |x|`` (not bijective; the inverse picks ``x = y``)."""

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


def _as_tensors(*values):
    return tuple(v if isinstance(v, tracegrad.Tensor) else tracegrad.tensor(v) for v in values)


class AffineTransform(Transform):
    """Mirrors ``AffineTransform(loc, scale, event_dim=0, cache_size=0)``: ``y = loc + scale * x``
    (numbers or tensors, broadcast). With ``event_dim`` the Jacobian term sums over that many
    rightmost dims."""

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real,
                                                                                     self._event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return self.domain

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        return _same_value(self.loc, other.loc) and _same_value(self.scale, other.scale)

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = x.shape
        if isinstance(self.scale, numbers.Real):
            result = tracegrad.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self._event_dim:
            result = result.reshape(tuple(result.shape[:result.dim() - self._event_dim]) + (-1,)).sum(-1)
            shape = shape[:len(shape) - self._event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return tracegrad.broadcast_shapes(shape, getattr(self.loc, "shape", ()), getattr(self.scale, "shape", ()))

    inverse_shape = forward_shape


def _same_value(a, b):
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    return bool((tracegrad.as_tensor(a) == tracegrad.as_tensor(b)).all())


class SoftmaxTransform(_SameType, Transform):
    """Mirrors ``SoftmaxTransform``: unconstrained vectors -> the simplex by ``exp`` and
    normalisation over the last dim (not bijective; the inverse is ``log``)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        probs = (x - x.max(-1, keepdim=True)[0]).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


class SoftplusTransform(_SameType, Transform):
    """Mirrors ``SoftplusTransform``: ``y = log(1 + exp(x))``, real -> positive."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return tracegrad.nn.functional.softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -tracegrad.nn.functional.softplus(-x)


class IndependentTransform(Transform):
    """Mirrors ``IndependentTransform(base_transform, reinterpreted_batch_ndims)``: the base
    transform with its rightmost ``reinterpreted_batch_ndims`` dims treated as event dims (the
    Jacobian term sums over them)."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Mirrors ``ReshapeTransform(in_shape, out_shape)``: reshapes the rightmost event dims
    (volume preserving, log-det 0). Raises ValueError when the shapes hold different numbers
    of elements or an input does not end in ``in_shape``."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape, self.out_shape = tracegrad.Size(in_shape), tracegrad.Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else ReshapeTransform(self.in_shape, self.out_shape, cache_size)

    def _call(self, x):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch + tuple(self.out_shape))

    def _inverse(self, y):
        batch = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[:x.dim() - len(self.in_shape)]))

    def _reshaped(self, shape, src, dst):
        shape = tuple(shape)
        if len(shape) < len(src):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(src)
        if shape[cut:] != tuple(src):
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {tuple(src)}")
        return shape[:cut] + tuple(dst)

    def forward_shape(self, shape):
        return self._reshaped(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._reshaped(shape, self.out_shape, self.in_shape)


class StickBreakingTransform(_SameType, Transform):
    """Mirrors ``StickBreakingTransform``: unconstrained ``K - 1`` vectors <-> the ``K``-simplex
    by stick breaking (bijective, unlike SoftmaxTransform)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    @staticmethod
    def _log_offset(n, like):
        # log(n), log(n - 1), ..., log(1): centres each logit so x = 0 maps to the uniform point
        return tracegrad.arange(n, 0, -1, dtype=like.dtype).log()

    def _call(self, x):
        z = (x - self._log_offset(x.shape[-1], x)).sigmoid()
        remaining = (1 - z).cumprod(-1)
        pad = tracegrad.nn.functional.pad
        return pad(z, [0, 1], value=1) * pad(remaining, [1, 0], value=1)

    def _inverse(self, y):
        head = y[..., :-1]
        rest = (1 - head.cumsum(-1)).clamp(min=tracegrad.finfo(y.dtype).tiny)
        return head.log() - rest.log() + self._log_offset(head.shape[-1], y)

    def log_abs_det_jacobian(self, x, y):
        shifted = x - self._log_offset(x.shape[-1], x)
        return (-shifted + tracegrad.nn.functional.logsigmoid(shifted) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(_SameType, Transform):
    """Mirrors ``LowerCholeskyTransform``: square matrices -> lower-triangular ones with a
    positive diagonal (strict lower part kept, diagonal exponentiated)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


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
