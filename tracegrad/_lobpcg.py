"""``tracegrad.lobpcg`` (torch.lobpcg): the ``k`` largest (or smallest) eigenpairs of a symmetric
``A`` (optionally of the generalized problem ``A x = lambda B x``, and with a preconditioner
``iK``) by Knyazev's locally optimal block preconditioned conjugate gradient method.

Each iteration is a Rayleigh-Ritz step on the span of the current block ``X``, the
(preconditioned) residuals ``W`` and the previous step ``P``, whitened in the ``B`` inner
product by an eigen-decomposition of its Gram matrix (directions it finds degenerate are
dropped, so a converged ``W`` or the empty first ``P`` cannot break the step). It runs as one
``lax.while_loop`` until every wanted residual ``||A x - lambda B x||`` is below
``tol * (||A|| + |lambda| ||B||)`` or ``niter`` steps have run. torch's ``method="ortho"``/
``"basic"`` variants, ``tracker`` and ``ortho_*`` parameters are accepted; the iteration is
this one for all (results agree to the tolerance, not bit for bit). The random starting block
comes from tracegrad's generator, not torch's.

Gradient as torch's (``LOBPCGAutogradFunction``): the derivative of the partial symmetric
eigen-decomposition (for ``B = None``, real ``A``), with ``A`` symmetrized first, so the
gradient is symmetric. It is the analytic one, written out here (the iteration is not
differentiated): ``dA = sum_j u_j u_j^T dE_j + sum_{i != j} v_i v_i^T dU_j u_j^T / (e_j - e_i)``
over the full eigenbasis ``(e, v)`` of ``A``.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from . import linalg
from ._api.shape import stack
from .autograd.function import Function
from ._ops import dtypes as _dt
from ._tensor.factories import randn
from ._tensor.tensor import Tensor
from .func import jax_function

__all__ = ["lobpcg"]


def _whiten(S, B):
    """``(V, keep)``: ``V`` spans ``S``'s columns, ``B``-orthonormal where ``keep`` (else zero)."""
    G = S.T @ (S if B is None else B @ S)
    G = (G + G.T) / 2
    w, Q = jnp.linalg.eigh(G)
    keep = w > jnp.finfo(S.dtype).eps * S.shape[0] * jnp.maximum(w[-1], 0)
    return S @ (Q * jnp.where(keep, 1 / jnp.sqrt(jnp.where(keep, w, 1)), 0)), keep


def _rayleigh_ritz(A, S, B, n):
    """The ``n`` largest Ritz pairs of ``A`` on ``span(S)``, largest first."""
    V, keep = _whiten(S, B)
    H = V.T @ A @ V
    H = (H + H.T) / 2
    big = jnp.abs(H).max() + 1
    H = jnp.where(keep[:, None] & keep[None, :], H, 0) - jnp.diag(jnp.where(keep, 0, 2 * big))
    e, Z = jnp.linalg.eigh(H)
    top = jnp.arange(S.shape[1] - 1, S.shape[1] - 1 - n, -1)
    return e[top], V @ Z[:, top]


def _lobpcg_core(A, B, iK, X0, *, k, largest, tol, niter):
    sign = 1.0 if largest else -1.0
    A = sign * (A + A.T) / 2                            # always the largest of sign * A
    n = X0.shape[1]
    anorm = jnp.linalg.norm(A)
    bnorm = 1.0 if B is None else jnp.linalg.norm(B)
    E, X = _rayleigh_ritz(A, X0, B, n)

    def residual(E, X):
        R = A @ X - (X if B is None else B @ X) * E
        return R, jnp.linalg.norm(R, axis=0) <= tol * (anorm + jnp.abs(E) * bnorm)

    def cond(state):
        it, E, X, P = state
        return (it < niter) & ~jnp.all(residual(E, X)[1][:k])

    def body(state):
        it, E, X, P = state
        R, _ = residual(E, X)
        W = R if iK is None else iK @ R
        E2, X2 = _rayleigh_ritz(A, jnp.concatenate([X, W, P], axis=1), B, n)
        P2 = X2 - X @ (X.T @ (X2 if B is None else B @ X2))
        return it + 1, E2, X2, P2

    _, E, X, _ = jax.lax.while_loop(cond, body, (jnp.asarray(0), E, X, jnp.zeros_like(X)))
    return sign * E[:k], X[:, :k]


_CORE = {}


def _core(k, largest, tol, niter, with_B, with_iK):
    key = (k, largest, tol, niter, with_B, with_iK)
    if key not in _CORE:
        def f(A, *rest):
            rest = list(rest)
            B = rest.pop(0) if with_B else None
            iK = rest.pop(0) if with_iK else None
            return _lobpcg_core(A, B, iK, rest[0], k=k, largest=largest, tol=tol, niter=niter)
        _CORE[key] = jax_function(f, name="Lobpcg")
    return _CORE[key]


class _LobpcgGrad(Function):
    """torch's gradient of the partial eigen-decomposition (see the module docstring)."""

    @staticmethod
    def forward(ctx, A, E, U):
        # the outputs are saved, not the detached iteration results: a double backward
        # (gradgradcheck, create_graph) then differentiates the formula through E and U too,
        # as torch's LOBPCGAutogradFunction does with its saved outputs
        E, U = E.clone(), U.clone()
        ctx.save_for_backward(A, E, U)
        return E, U

    @staticmethod
    def backward(ctx, dE, dU):
        A, E, U = ctx.saved_tensors
        G = (U * dE.unsqueeze(-2)) @ U.mT if dE is not None else A.new_zeros(A.shape)
        if dU is not None:
            e, v = linalg.eigh(A)
            diff = E.unsqueeze(-2) - e.unsqueeze(-1)                       # (m, k): e_j - e_i
            same = diff.abs() <= 1e-10 * (e.abs().max() + 1)               # u_j itself (and exact ties)
            coef = (v.mT @ dU) / diff.masked_fill(same, 1.0)
            G = G + (v @ coef.masked_fill(same, 0.0)) @ U.mT
        return (G + G.mT) / 2, None, None


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """Mirrors ``torch.lobpcg``: ``(E, X)``, the ``k`` largest (``largest=True``, default; the
    smallest otherwise) eigenvalues of the symmetric ``A`` ``(*, m, m)`` (of ``A x = e B x`` with
    ``B``), extremal first, and their eigenvectors ``(*, m, k)`` (``B``-orthonormal). ``X``: a
    starting block ``(*, m, n)`` (default: random, ``n`` columns, ``n`` defaulting to ``k``);
    ``iK``: a preconditioner ``(m, m)`` applied to the residuals; ``niter`` (default 1000, -1 for
    no limit) and ``tol`` (default ``sqrt(eps)`` of the dtype) stop the iteration. Autograd for
    ``B = None``: torch's partial-eigendecomposition gradient (module docstring). ValueError when
    ``m < 3 n``, as torch; AssertionError (torch's asserts) for a non-square ``A``, a ``B`` or an
    ``X`` of another shape; IndexError for an ``A`` of fewer than 2 dims."""
    if not isinstance(A, Tensor):   # AttributeError, as torch's Python code (it reads A.requires_grad)
        raise AttributeError(f"lobpcg(): argument 'A' must be a Tensor, not {type(A).__name__} "
                             f"('{type(A).__name__}' object has no attribute 'requires_grad')")
    # torch's Python code asserts the shapes (AssertionError) after reading A.shape[-2] (IndexError)
    if A.dim() < 2:
        raise IndexError(f"lobpcg: A must be a square matrix (or a batch of them), got shape {tuple(A.shape)} "
                         f"(tuple index out of range)")
    if A.shape[-1] != A.shape[-2]:
        raise AssertionError(f"lobpcg: A must be square, got shape {tuple(A.shape)}")
    if B is not None and tuple(B.shape) != tuple(A.shape):
        raise AssertionError(f"lobpcg: A and B must have same shape, got {tuple(A.shape)} vs {tuple(B.shape)}")
    # method is not checked: torch runs its basic update for any value but "ortho", and the
    # iteration here is one for both
    dtype = A.dtype if A.is_floating_point() else _dt.float32
    if tol is None:
        tol = {"float32": 1.2e-07, "float64": 2.23e-16}.get(dtype.name, 1.2e-07) ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than "
                         f"3 x the number of requested eigenpairs (={n})")
    if X is not None and tuple(X.shape) != tuple(A.shape[:-1]) + (n,):
        raise AssertionError(f"lobpcg: X shape mismatch: got {tuple(X.shape)}, expected "
                             f"{tuple(A.shape[:-1]) + (n,)} (A's rows by the n starting vectors)")
    niter = 1000 if niter is None else (2 ** 31 - 1 if niter < 0 else niter)
    largest = True if largest is None else bool(largest)
    batch = tuple(A.shape[:-2])
    core = _core(k, largest, float(tol), int(niter), B is not None, iK is not None)
    Es, Us = [], []
    flatA = A.detach().to(dtype).reshape(-1, m, m)
    flatB = None if B is None else B.detach().to(dtype).reshape(-1, m, m)
    flatX = None if X is None else X.detach().to(dtype).reshape(-1, m, n)
    for i in range(flatA.shape[0]):
        X0 = randn(m, n, dtype=dtype, device=A.device) if flatX is None else flatX[i]
        args = [flatA[i]] + ([flatB[i]] if B is not None else []) + ([iK.detach().to(dtype)] if iK is not None else [])
        E, U = core(*args, X0)
        Es.append(E.detach())
        Us.append(U.detach())
    E, U = stack(Es).reshape(batch + (k,)), stack(Us).reshape(batch + (m, k))
    if A.requires_grad and B is None:
        E, U = _LobpcgGrad.apply((A + A.mT) / 2, E, U)
    return E, U
