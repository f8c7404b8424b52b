"""``tracegrad.svd_lowrank`` and ``tracegrad.pca_lowrank`` (torch._lowrank): randomized SVD by
Halko, Martinsson and Tropp (2009): a random Gaussian sketch ``A R``, ``niter`` rounds of subspace
iteration with QR re-orthonormalization, then the exact SVD of the small ``Q^H A``.

Written on tracegrad's public ops, so gradients flow as torch's do (through matmul, QR and SVD).
The sketch ``R`` comes from tracegrad's generator (``tracegrad.randn``), not torch's: the factors
differ from torch's for the same seed, while the approximation (``U diag(S) V^H``) and the leading
singular values agree up to the method's accuracy (exactly for a matrix of rank <= q).
"""
from __future__ import annotations

from . import linalg
from ._ops import dtypes as _dt
from ._tensor.factories import randn
from ._tensor.tensor import Tensor

__all__ = ["svd_lowrank", "pca_lowrank"]


def _floating(A):
    return A.dtype if (A.is_floating_point() or A.is_complex()) else _dt.float32


def _minus_mean(A, M, X, adjoint=False):
    """``A X`` (or ``A^H X``), less ``M X`` when a mean ``M`` is given (never forming ``A - M``)."""
    out = (A.mH if adjoint else A) @ X
    return out if M is None else out - (M.mH if adjoint else M) @ X


def _range_basis(A, q, niter, M):
    """``Q`` with ``q`` orthonormal columns such that ``Q Q^H (A - M)`` approximates ``A - M``."""
    R = randn(A.shape[-1], q, dtype=_floating(A), device=A.device)
    Q = linalg.qr(_minus_mean(A, M, R)).Q
    for _ in range(niter):
        Q = linalg.qr(_minus_mean(A, M, Q, adjoint=True)).Q
        Q = linalg.qr(_minus_mean(A, M, Q)).Q
    return Q


def _svd_lowrank(A, q, niter, M):
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    wide = m < n
    if wide:                                   # work on the tall one
        A, M = A.mH, (None if M is None else M.mH)
    Q = _range_basis(A, q, niter, M)
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = linalg.svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mH
    return (V, S, U) if wide else (U, S, V)


def svd_lowrank(A, q=6, niter=2, M=None):
    """Mirrors ``torch.svd_lowrank``: ``(U, S, V)`` with ``A - M ≈ U diag(S) V^H`` (``M``
    optional, broadcast to ``A``), ``U`` ``(*, m, q)``, ``S`` ``(*, q)``, ``V`` ``(*, n, q)``, from a
    randomized range finder with ``niter`` subspace iterations (``q`` defaults to 6, ``niter`` to
    2). Differentiable. Randomness from tracegrad's generator (see the module docstring).
    AttributeError for a non-Tensor ``A`` (torch's Python code reads ``A.shape``)."""
    if not isinstance(A, Tensor):
        raise AttributeError(f"svd_lowrank(): argument 'A' must be a Tensor, not {type(A).__name__} "
                             f"('{type(A).__name__}' object has no attribute 'shape')")
    return _svd_lowrank(A, 6 if q is None else q, 2 if niter is None else niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """Mirrors ``torch.pca_lowrank``: ``(U, S, V)`` of the (column-centred, with ``center=True``)
    data matrix ``A`` ``(*, m, n)`` by ``svd_lowrank``; ``V``'s columns are the principal
    directions and ``S**2 / (m - 1)`` the variances along them. ``q`` defaults to ``min(6, m, n)``.
    ValueError for ``q`` outside ``[0, min(m, n)]`` or a negative ``niter``, as torch."""
    if not isinstance(A, Tensor):   # AttributeError, as torch's Python code (it reads A.shape)
        raise AttributeError(f"pca_lowrank(): argument 'A' must be a Tensor, not {type(A).__name__} "
                             f"('{type(A).__name__}' object has no attribute 'shape')")
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(dim=-2, keepdim=True), q, niter, None)
