"""Mirrors ``torch.distributions.MultivariateNormal``."""
from __future__ import annotations

import math

import tracegrad

from . import constraints
from .distribution import Distribution, _CentredAtLoc
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def precision_to_scale_tril(P):
    """The lower Cholesky factor ``L`` of ``P^-1`` (``L @ L.mT == inv(P)``) without inverting
    ``P``: ``cholesky(inv(P))`` fails for a badly conditioned precision (an RBF kernel) that
    torch accepts. With ``J`` the reversal permutation, ``cholesky(J P J) = Lf`` gives
    ``P = U U^T`` for the upper-triangular ``U = J Lf J``, so ``inv(P) = U^-T U^-1`` and
    ``L = inv(U^T)``, one triangular solve."""
    lf = tracegrad.linalg.cholesky(tracegrad.flip(P, (-2, -1)))
    u_t = tracegrad.flip(lf, (-2, -1)).mT
    eye = tracegrad.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return tracegrad.linalg.solve_triangular(u_t, eye, upper=False)


class MultivariateNormal(_CentredAtLoc, Distribution):
    """Mirrors ``torch.distributions.MultivariateNormal(loc, covariance_matrix=None,
    precision_matrix=None, scale_tril=None, validate_args=None)``: exactly one of the three
    matrix arguments ((..., k, k)); ``loc`` (..., k). Event shape ``(k,)``; ``rsample`` is
    ``loc + scale_tril @ eps`` (gradients reach loc and the matrix). Raises ValueError for a
    ``loc`` of dim 0, not exactly one matrix argument, or (validation on) a matrix that is not
    positive definite / lower Cholesky."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        mat = scale_tril if scale_tril is not None else (
            covariance_matrix if covariance_matrix is not None else precision_matrix)
        if mat.dim() < 2:
            raise ValueError("scale_tril, covariance_matrix or precision_matrix must be at least "
                             "two-dimensional, with optional leading batch dimensions")
        batch_shape = tracegrad.broadcast_shapes(tuple(mat.shape[:-2]), tuple(loc.shape[:-1]))
        k = loc.shape[-1]
        # the matrix keeps its own last two sizes (as torch): one that is not k x k is the
        # constraint's ValueError under validate_args, not an expand error
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(tuple(batch_shape) + (-1, -1))
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(tuple(batch_shape) + (-1, -1))
        else:
            self.precision_matrix = precision_matrix.expand(tuple(batch_shape) + (-1, -1))
        self.loc = loc.expand(tuple(batch_shape) + (k,))
        super().__init__(tuple(batch_shape), (k,), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = tracegrad.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = tracegrad.Size(batch_shape)
        k = tuple(self._event_shape)
        new.loc = self.loc.expand(tuple(batch_shape) + k)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(tuple(batch_shape) + k * 2))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-2, -1)).expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def precision_matrix(self):
        return tracegrad.linalg.inv(self.covariance_matrix)

    @property
    def variance(self):
        L = self._unbroadcasted_scale_tril
        return L.pow(2).sum(-1).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = tracegrad.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        L = self._unbroadcasted_scale_tril
        shape = tracegrad.broadcast_shapes(tuple(diff.shape[:-1]), tuple(L.shape[:-2]))
        k = diff.shape[-1]
        # the lower triangle only, as a triangular solve reads it (upper entries get no gradient)
        z = tracegrad.linalg.solve(L.tril().expand(tuple(shape) + (k, k)), diff.expand(tuple(shape) + (k,)).unsqueeze(-1))
        m = z.squeeze(-1).pow(2).sum(-1)
        return -0.5 * (k * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(tuple(self._batch_shape)) if len(self._batch_shape) else h
