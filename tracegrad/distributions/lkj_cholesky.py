"""Mirrors ``torch.distributions.LKJCholesky``: the LKJ law on Cholesky factors of correlation matrices."""
from __future__ import annotations

import math

import tracegrad

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """Mirrors ``torch.distributions.LKJCholesky(dim, concentration=1.0, validate_args=None)``:
    ``L`` with ``L @ L.mT`` a correlation matrix of density proportional to ``det(L L^T)^(eta - 1)``.

    ``dim`` >= 2; ``concentration`` ``eta`` positive (number or tensor: ``batch_shape`` is its
    shape); event shape ``(dim, dim)``. Sampling is the onion method (Ghosh & Henderson): each row
    is a Beta-distributed squared norm times a uniform direction. No ``rsample``. Raises
    ValueError for ``dim < 2``, a non-positive concentration, and (validation on) a ``log_prob``
    value that is no correlation Cholesky factor."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        c = self.concentration
        # row i's squared off-diagonal norm is Beta(i/2, eta + (dim - 2 - (i - 1))/2); row 0 is unused
        offset = tracegrad.arange(dim - 1, dtype=c.dtype, device=c.device)
        offset = tracegrad.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, (c + 0.5 * (dim - 2)).unsqueeze(-1) - 0.5 * offset)
        super().__init__(tuple(c.shape), (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = tracegrad.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with tracegrad.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u = tracegrad.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            norm = u.norm(dim=-1, keepdim=True)
            # row 0 has no off-diagonal entries: its direction is zero, not 0/0
            first = tracegrad.arange(self.dim, device=y.device).unsqueeze(-1) == 0
            direction = tracegrad.where(first, tracegrad.zeros_like(u), u / tracegrad.where(first, 1.0, norm))
            w = y.sqrt() * direction
            diag = (1 - w.pow(2).sum(-1)).clamp(min=tracegrad.finfo(w.dtype).tiny).sqrt()
            return w + diag.diag_embed()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = tracegrad.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalizer = 0.5 * dm1 * math.log(math.pi) + tracegrad.mvlgamma(alpha - 0.5, dm1) - alpha.lgamma() * dm1
        return unnormalized - normalizer
