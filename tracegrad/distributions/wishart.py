"""Mirrors ``torch.distributions.Wishart``: the law of ``sum_i x_i x_i^T`` for ``df`` Gaussian
vectors, on positive-definite matrices."""
from __future__ import annotations

import math
import numbers

import tracegrad

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .multivariate_normal import precision_to_scale_tril
from .student_t import Chi2
from .utils import lazy_property, vec_to_tril_matrix
from .._ops.warn import warn as _warn

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    """The multivariate digamma ``sum_{i<p} digamma(x - i/2)``."""
    return (x.unsqueeze(-1) - tracegrad.arange(p, dtype=x.dtype, device=x.device) / 2).digamma().sum(-1)


class Wishart(ExponentialFamily):
    """Mirrors ``torch.distributions.Wishart(df, covariance_matrix=None, precision_matrix=None,
    scale_tril=None, validate_args=None)``.

    ``df`` > ``p - 1`` (number or tensor), and exactly one ``(..., p, p)`` scale argument; batch
    dims broadcast; event shape ``(p, p)``. ``rsample`` is Bartlett's decomposition
    ``(L A)(L A)^T`` with chi-distributed diagonal and Gaussian lower part (gradients reach df
    through the Chi2 rsample and the scale); batch entries whose sample is not positive definite
    are redrawn up to ``max_try_correction`` times (default 10). Warns for ``df < p`` (singular
    samples likely). Raises AssertionError (as torch) unless exactly one scale argument is given,
    ValueError for a scale under 2-D, ``df <= p - 1``, or (validation on) a scale that is not
    positive definite / lower Cholesky."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        given = {k: v for k, v in (("covariance_matrix", covariance_matrix), ("precision_matrix", precision_matrix),
                                   ("scale_tril", scale_tril)) if v is not None}
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        (name, param), = given.items()
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = tuple(param.shape[:-2])
            self.df = tracegrad.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = tuple(tracegrad.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        p = param.shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, param.expand(batch_shape + (p, p)))
        if bool((self.df < p).any()):
            _warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < "
                  "ndim.")
        super().__init__(batch_shape, (p, p), validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = param
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = tracegrad.linalg.cholesky(param)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(param)
        self._dist_chi2 = self._chi2(batch_shape)

    def _chi2(self, batch_shape):
        # Bartlett: the i-th diagonal entry of A is chi-distributed with df - i degrees of freedom
        p = self._event_shape[-1]
        steps = tracegrad.arange(p, dtype=self._unbroadcasted_scale_tril.dtype, device=self.df.device)
        return Chi2(df=self.df.unsqueeze(-1) - steps.expand(tuple(batch_shape) + (p,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = tracegrad.Size(batch_shape)
        mat_shape = tuple(batch_shape) + tuple(self._event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(mat_shape)
        new.df = self.df.expand(batch_shape)
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(mat_shape))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._dist_chi2 = new._chi2(batch_shape)
        new._validate_args = self._validate_args
        return new

    def _full(self, mat):
        return mat.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def _df_matrix(self, value):
        return value.view(tuple(self._batch_shape) + (1, 1))

    @lazy_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return self._full(L @ L.mT)

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        eye = tracegrad.eye(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return self._full(tracegrad.cholesky_solve(eye, L))

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self._event_shape[-1] - 1
        return self._df_matrix(factor.masked_fill(factor <= 0, math.nan)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        d = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (V.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett(self, sample_shape):
        p = self._event_shape[-1]
        chi = self._dist_chi2.rsample(sample_shape).sqrt()
        diag = chi.clamp(min=tracegrad.finfo(chi.dtype).eps).diag_embed()
        lower = tracegrad.randn(tuple(sample_shape) + tuple(self._batch_shape) + (p * (p - 1) // 2,),
                                dtype=chi.dtype, device=chi.device)
        chol = self._unbroadcasted_scale_tril @ (diag + vec_to_tril_matrix(lower, diag=-1))
        return chol @ chol.mT

    def rsample(self, sample_shape=(), max_try_correction=None):
        sample_shape = tuple(sample_shape)
        sample = self._bartlett(sample_shape)
        tries = 10 if max_try_correction is None else max_try_correction
        bad = ~self.support.check(sample.detach())
        if bool(bad.any()):
            _warn("Singular sample detected.")
            for _ in range(tries):
                # redraw everything and keep the new value only where the old one failed
                sample = tracegrad.where(bad[..., None, None], self._bartlett(sample_shape), sample)
                bad = ~self.support.check(sample.detach())
                if not bool(bad.any()):
                    break
        return sample

    def _log_det_scale(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        trace = tracegrad.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (-nu * (p * _LOG_2 / 2 + self._log_det_scale()) - tracegrad.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * tracegrad.linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        return ((p + 1) * (p * _LOG_2 / 2 + self._log_det_scale()) + tracegrad.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self):
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-tracegrad.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + tracegrad.mvlgamma(y + (p + 1) / 2, p=p))
