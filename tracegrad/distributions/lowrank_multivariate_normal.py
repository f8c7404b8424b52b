"""Mirrors ``torch.distributions.LowRankMultivariateNormal``: a Gaussian whose covariance is
``W @ W.T + diag(D)``, evaluated through the ``r x r`` capacitance matrix (Woodbury identity and the
matrix determinant lemma) so log_prob costs O(k r^2) instead of O(k^3)."""
from __future__ import annotations

import math

import tracegrad

from . import constraints
from .distribution import Distribution, _CentredAtLoc
from .utils import lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _mv(mat, vec):
    return (mat @ vec.unsqueeze(-1)).squeeze(-1)


def _capacitance_tril(W, D):
    """Cholesky factor of ``I + W.T @ diag(D)^-1 @ W`` (``(..., r, r)``)."""
    r = W.shape[-1]
    K = (W.mT / D.unsqueeze(-2)) @ W
    return tracegrad.linalg.cholesky(K + tracegrad.eye(r, dtype=K.dtype, device=K.device))


def _lowrank_logdet(W, D, cap_tril):
    """``log|W W^T + D| = log|C| + log|D|`` (matrix determinant lemma)."""
    return 2 * cap_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _lowrank_mahalanobis(W, D, x, cap_tril):
    """``x^T (W W^T + D)^-1 x`` by Woodbury: ``x^T D^-1 x - |C^-1/2 W^T D^-1 x|^2``."""
    proj = _mv(W.mT / D.unsqueeze(-2), x)
    shape = tracegrad.broadcast_shapes(tuple(proj.shape[:-1]), tuple(cap_tril.shape[:-2]))
    r = cap_tril.shape[-1]
    z = tracegrad.linalg.solve_triangular(cap_tril.expand(tuple(shape) + (r, r)),
                                          proj.expand(tuple(shape) + (r,)).unsqueeze(-1), upper=False)
    return (x.pow(2) / D).sum(-1) - z.squeeze(-1).pow(2).sum(-1)


class LowRankMultivariateNormal(_CentredAtLoc, Distribution):
    """Mirrors ``torch.distributions.LowRankMultivariateNormal(loc, cov_factor, cov_diag,
    validate_args=None)``: covariance ``cov_factor @ cov_factor.mT + diag(cov_diag)``.

    Shapes: ``loc`` ``(..., k)``, ``cov_factor`` ``(..., k, r)``, ``cov_diag`` ``(..., k)`` (positive),
    batch dims broadcast together; event shape ``(k,)``. ``rsample`` is
    ``loc + W @ eps_r + sqrt(D) * eps_k`` (gradients reach all three parameters).
    Raises ValueError for a 0-D ``loc``, a ``cov_factor`` under 2-D or whose rows differ from ``k``,
    a ``cov_diag`` of another length, batch shapes that do not broadcast, and (validation on) a
    non-positive ``cov_diag``."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {tracegrad.Size(event_shape)}")
        try:
            loc_, self.cov_factor, diag_ = tracegrad.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                       cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc, self.cov_diag = loc_[..., 0], diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        # before validation, as torch: a factor that breaks the Cholesky raises LinAlgError first
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(tuple(self.loc.shape[:-1]), event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = tracegrad.Size(batch_shape)
        full = tuple(batch_shape) + tuple(self._event_shape)
        new.loc, new.cov_diag = self.loc.expand(full), self.cov_diag.expand(full)
        new.cov_factor = self.cov_factor.expand(tuple(batch_shape) + tuple(self.cov_factor.shape[-2:]))
        for name in ("_unbroadcasted_cov_factor", "_unbroadcasted_cov_diag", "_capacitance_tril"):
            setattr(new, name, getattr(self, name))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _full(self, value, event_dims):
        return value.expand(tuple(self._batch_shape) + tuple(self._event_shape) * event_dims)

    @lazy_property
    def variance(self):
        return self._full(self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag, 1)

    @lazy_property
    def _unbroadcasted_scale_tril(self):
        # L = sqrt(D) chol(I + D^-1/2 W W^T D^-1/2): the Cholesky factor of W W^T + D
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        k = self._event_shape[0]
        sqrt_d = D.sqrt().unsqueeze(-1)
        scaled = W / sqrt_d
        K = scaled @ scaled.mT + tracegrad.eye(k, dtype=W.dtype, device=W.device)
        return sqrt_d * tracegrad.linalg.cholesky(K)

    @lazy_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril, 2)

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        return self._full(W @ W.mT + self._unbroadcasted_cov_diag.diag_embed(), 2)

    @lazy_property
    def precision_matrix(self):
        # Woodbury: D^-1 - (C^-1/2 W^T D^-1)^T (C^-1/2 W^T D^-1)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        a = tracegrad.linalg.solve_triangular(self._capacitance_tril, W.mT / D.unsqueeze(-2), upper=False)
        return self._full(D.reciprocal().diag_embed() - a.mT @ a, 2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        opts = dict(dtype=self.loc.dtype, device=self.loc.device)
        eps_w = tracegrad.randn(tuple(shape[:-1]) + tuple(self.cov_factor.shape[-1:]), **opts)
        eps_d = tracegrad.randn(shape, **opts)
        return self.loc + _mv(self._unbroadcasted_cov_factor, eps_w) + self._unbroadcasted_cov_diag.sqrt() * eps_d

    def _logdet(self):
        return _lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        m = _lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, value - self.loc,
                                 self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._logdet() + m)

    def entropy(self):
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._logdet())
        return h.expand(tuple(self._batch_shape)) if len(self._batch_shape) else h
