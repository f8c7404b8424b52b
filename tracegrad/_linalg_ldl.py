"""``tracegrad.linalg.ldl_factor``, ``ldl_factor_ex`` and ``ldl_solve``: the Bunch-Kaufman
factorization of a symmetric (or Hermitian) matrix and the solve with it, LAPACK's ``sytrf``/
``hetrf`` and ``sytrs``/``hetrs`` in the form torch returns them.

The factorization is LAPACK's unblocked algorithm (``sytf2``, lower triangle), step by step in a
``lax.while_loop``: the same pivot tests (``alpha = (1 + sqrt 17) / 8``; LAPACK's ``|re| + |im|``
for complex entries), the same 1x1/2x2 blocks and interchanges, the same update formulas. So
``LD`` and ``pivots`` are LAPACK's for matrices up to LAPACK's block size (64; larger ones are
factored by torch's LAPACK in panels, whose pivots may differ in near-ties: ``ldl_solve`` agrees
either way). ``LD`` holds ``L`` (unit lower, below the diagonal) and the block diagonal ``D``
(diagonal and, for 2x2 blocks, the first subdiagonal); its upper triangle is zero. ``pivots``
(int32, 1-based) are LAPACK's ``ipiv``: ``p > 0`` a 1x1 block after swapping rows/columns ``k``
and ``p``; ``-p, -p`` on two consecutive entries a 2x2 block after swapping ``k + 1`` and ``p``.
Only the lower triangle of ``A`` is read.

No gradient: torch has none (its outputs require grad but their backward raises "not
implemented"); here they do not require grad.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ._linalg_decomp import LinAlgError, _check, _check_rhs, has_error
from ._api.promotion import _SCALAR_NAME
from .func import jax_function
from .return_types import _structseq
from ._tensor.out import accepts_out
from ._tensor.tensor import Tensor

__all__ = ["ldl_factor", "ldl_factor_ex", "ldl_solve"]

LDLFactorResult = _structseq("linalg_ldl_factor", ["LD", "pivots"])
LDLFactorExResult = _structseq("linalg_ldl_factor_ex", ["LD", "pivots", "info"])

_ALPHA = (1 + math.sqrt(17.0)) / 8


def _abs1(x):
    """LAPACK's ``cabs1``: ``|re| + |im|`` (``|x|`` for reals)."""
    return jnp.abs(jnp.real(x)) + jnp.abs(jnp.imag(x)) if jnp.iscomplexobj(x) else jnp.abs(x)


def _full(A, hermitian):
    """The full matrix from the lower triangle: every value read below comes from there."""
    low = jnp.tril(A, -1)
    up = jnp.conj(low) if hermitian else low
    d = jnp.diagonal(A)
    return low + up.T + jnp.diag(jnp.real(d).astype(A.dtype) if hermitian else d)


def _sytf2(A, hermitian):
    """One matrix: ``(LD, ipiv, info)``."""
    n = A.shape[-1]
    idx = jnp.arange(n)
    cplx = jnp.iscomplexobj(A)
    diag_abs = (lambda v: jnp.abs(jnp.real(v))) if hermitian and cplx else _abs1

    def pivot(k, A):
        """(kp, kstep, zero column?) by the Bunch-Kaufman tests."""
        col = jnp.where(idx > k, _abs1(A[:, k]), -1.0)
        imax = jnp.argmax(col)
        colmax = jnp.maximum(col[imax], 0.0)
        absakk = diag_abs(A[k, k])
        zero = (jnp.maximum(absakk, colmax) == 0) | jnp.isnan(absakk)
        row = jnp.where((idx >= k) & (idx != imax), _abs1(A[imax, :]), -1.0)   # A is full: row imax
        rowmax = jnp.max(row)
        first = absakk >= _ALPHA * colmax
        second = absakk >= _ALPHA * colmax * (colmax / jnp.where(rowmax == 0, 1, rowmax))
        third = diag_abs(A[imax, imax]) >= _ALPHA * rowmax
        kp = jnp.where(zero | first | second, k, imax)
        kstep = jnp.where(zero | first | second | third, 1, 2)
        return kp, kstep, zero

    def swap(A, k, kk, kp):
        """Interchange rows and columns kk and kp of the trailing block (indices >= k)."""
        perm = jnp.where(idx == kk, kp, jnp.where(idx == kp, kk, idx))
        P = A[perm][:, perm]
        trailing = (idx[:, None] >= k) & (idx[None, :] >= k)
        return jnp.where(trailing, P, A)

    def update1(k, A):
        x = jnp.where(idx > k, A[:, k], 0)
        if hermitian and cplx:
            d11 = 1 / jnp.real(A[k, k])
            A = A - jnp.outer(x, d11 * jnp.conj(x))
            A = A.at[idx, idx].set(jnp.real(jnp.diagonal(A)).astype(A.dtype))
        else:
            d11 = 1 / A[k, k]
            A = A - jnp.outer(x, d11 * x)
        return A.at[:, k].set(jnp.where(idx > k, A[:, k] * d11, A[:, k]))

    def update2(k, A):
        rows = idx > k + 1
        ak, ak1 = jnp.where(rows, A[:, k], 0), jnp.where(rows, A[:, k + 1], 0)
        if hermitian and cplx:
            d = jnp.abs(A[k + 1, k])
            d11, d22 = jnp.real(A[k + 1, k + 1]) / d, jnp.real(A[k, k]) / d
            tt = 1 / (d11 * d22 - 1)
            d21 = A[k + 1, k] / d
            d = tt / d
            wk = d * (d11 * ak - d21 * ak1)
            wkp1 = d * (d22 * ak1 - jnp.conj(d21) * ak)
            A = A - (jnp.outer(ak, jnp.conj(wk)) + jnp.outer(ak1, jnp.conj(wkp1)))
            A = A.at[idx, idx].set(jnp.real(jnp.diagonal(A)).astype(A.dtype))
        else:
            d21 = A[k + 1, k]
            d11, d22 = A[k + 1, k + 1] / d21, A[k, k] / d21
            t = 1 / (d11 * d22 - 1)
            d21 = t / d21
            wk = d21 * (d11 * ak - ak1)
            wkp1 = d21 * (d22 * ak1 - ak)
            A = A - (jnp.outer(ak, wk) + jnp.outer(ak1, wkp1))
        A = A.at[:, k].set(jnp.where(rows, wk, A[:, k]))
        return A.at[:, k + 1].set(jnp.where(rows, wkp1, A[:, k + 1]))

    def body(state):
        k, A, ipiv, info = state
        A = _full(A, hermitian)                          # the trailing block as LAPACK's lower triangle
        kp, kstep, zero = pivot(k, A)
        kk = k + kstep - 1
        A = swap(A, k, kk, kp)
        untouched = A
        A = jax.lax.cond(kstep == 1, lambda a: jax.lax.cond(k < n - 1, lambda b: update1(k, b), lambda b: b, a),
                         lambda a: update2(k, a), A)
        A = jnp.where(zero, untouched, A)
        info = jnp.where(zero & (info == 0), k + 1, info)
        code = jnp.where(kstep == 1, kp + 1, -(kp + 1)).astype(jnp.int32)
        ipiv = ipiv.at[k].set(code)
        ipiv = jnp.where((kstep == 2) & (idx == k + 1), code, ipiv)
        return k + kstep, A, ipiv, info

    state = (jnp.asarray(0), A, jnp.zeros(n, jnp.int32), jnp.asarray(0, jnp.int32))
    _, A, ipiv, info = jax.lax.while_loop(lambda s: s[0] < n, body, state)
    return jnp.tril(A), ipiv, info


def _factor(A, hermitian):
    batch = A.shape[:-2]
    if A.size == 0:   # 0x0 matrices or an empty batch: nothing to factor (torch returns the empty results)
        return A, jnp.zeros(batch + A.shape[-1:], jnp.int32), jnp.zeros(batch, jnp.int32)
    flat = A.reshape((-1,) + A.shape[-2:])
    LD, piv, info = jax.vmap(lambda a: _sytf2(a, hermitian))(flat)
    return LD.reshape(A.shape), piv.reshape(batch + A.shape[-1:]), info.reshape(batch)


def _sytrs(LD, ipiv, B, hermitian):
    """One system: solve ``A X = B`` from ``A``'s factorization (LAPACK's sytrs, lower)."""
    n = LD.shape[-1]
    idx = jnp.arange(n)
    cj = jnp.conj if hermitian and jnp.iscomplexobj(LD) else (lambda v: v)

    def swap_rows(B, i, j):
        perm = jnp.where(idx == i, j, jnp.where(idx == j, i, idx))
        return B[perm]

    def block(k):
        """(1x1 block?, the 0-based row swapped with) from ``ipiv[k]``."""
        p = ipiv[k]
        return p > 0, jnp.where(p > 0, p - 1, -p - 1)

    def fwd(state):
        k, B = state
        one, kp = block(k)

        def single(B):
            B = swap_rows(B, k, kp)
            col = jnp.where(idx > k, LD[:, k], 0)
            B = B - jnp.outer(col, B[k])
            dkk = jnp.real(LD[k, k]).astype(B.dtype) if hermitian else LD[k, k]
            return B.at[k].set(B[k] / dkk)

        def double(B):
            B = swap_rows(B, k + 1, kp)
            rows = idx > k + 1
            B = B - (jnp.outer(jnp.where(rows, LD[:, k], 0), B[k]) + jnp.outer(jnp.where(rows, LD[:, k + 1], 0), B[k + 1]))
            akm1k = LD[k + 1, k]
            akm1 = LD[k, k] / cj(akm1k)
            ak = LD[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1
            bkm1, bk = B[k] / cj(akm1k), B[k + 1] / akm1k
            return B.at[k].set((ak * bkm1 - bk) / denom).at[k + 1].set((akm1 * bk - bkm1) / denom)
        return k + jnp.where(one, 1, 2), jax.lax.cond(one, single, double, B)

    def bwd(state):
        k, B = state
        one, kp = block(k)

        def single(B):
            col = cj(jnp.where(idx > k, LD[:, k], 0))
            B = B.at[k].set(B[k] - col @ B)
            return swap_rows(B, k, kp)

        def double(B):
            rows = idx > k
            c1 = cj(jnp.where(rows, LD[:, k], 0))
            c0 = cj(jnp.where(rows, LD[:, k - 1], 0))
            B = B.at[k].set(B[k] - c1 @ B).at[k - 1].set(B[k - 1] - c0 @ B)
            return swap_rows(B, k, kp)
        return k - jnp.where(one, 1, 2), jax.lax.cond(one, single, double, B)

    _, B = jax.lax.while_loop(lambda s: s[0] < n, fwd, (jnp.asarray(0), B))
    _, B = jax.lax.while_loop(lambda s: s[0] >= 0, bwd, (jnp.asarray(n - 1), B))
    return B


def _solve(LD, pivots, B, hermitian):
    batch = jnp.broadcast_shapes(LD.shape[:-2], pivots.shape[:-1], B.shape[:-2])
    if LD.size == 0 or B.size == 0:   # n == 0 or an empty batch: X has no rows to solve for (zeros)
        return jnp.zeros(batch + B.shape[-2:], B.dtype)
    LD = jnp.broadcast_to(LD, batch + LD.shape[-2:]).reshape((-1,) + LD.shape[-2:])
    pivots = jnp.broadcast_to(pivots, batch + pivots.shape[-1:]).reshape((-1,) + pivots.shape[-1:])
    Bb = jnp.broadcast_to(B, batch + B.shape[-2:])
    X = jax.vmap(lambda a, p, b: _sytrs(a, p, b, hermitian))(LD, pivots, Bb.reshape((-1,) + B.shape[-2:]))
    return X.reshape(batch + B.shape[-2:])


_FACTOR = {h: jax_function(lambda A, h=h: _factor(A, h), name="LinalgLdlFactorEx") for h in (False, True)}
_SOLVE = {h: jax_function(lambda LD, piv, B, h=h: _solve(LD, piv, B, h), name="LinalgLdlSolve") for h in (False, True)}


@accepts_out(exact_dtype=True)
def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """Mirrors ``torch.linalg.ldl_factor_ex``: ``(LD, pivots, info)`` of the Bunch-Kaufman
    factorization ``A = P L D L^T P^T`` (``L^H`` with ``hermitian=True``) of the symmetric
    ``A`` (batches ``(*, n, n)``, float or complex; only the lower triangle is read). ``LD`` and
    ``pivots`` are LAPACK's (see the module docstring: the same for n <= 64; beyond, pivots may
    differ from torch's in near-ties while ``ldl_solve`` agrees); ``info`` (int32) is ``k`` when
    ``D[k-1, k-1]`` is exactly zero (the factorization is complete but singular), else 0. No
    gradient (see the module). RuntimeError for a non-square, non-floating or under-2-d input;
    LinAlgError with ``check_errors=True`` when ``info`` is nonzero."""
    _check(A, "ldl_factor_ex", prefix="torch.linalg.")
    LD, piv, info = (t.detach() for t in _FACTOR[bool(hermitian)](A.detach()))
    if check_errors and has_error(info):
        raise LinAlgError(f"torch.linalg.ldl_factor_ex: D[{int(info.max()) - 1}, {int(info.max()) - 1}] is exactly "
                          "zero: the matrix is singular (info > 0)")
    return LDLFactorExResult(LD, piv, info)


@accepts_out(exact_dtype=True)
def ldl_factor(A, *, hermitian=False, out=None):
    """Mirrors ``torch.linalg.ldl_factor``: ``(LD, pivots)`` as ``ldl_factor_ex``. Differs from
    torch: where ``D`` is exactly singular (``info > 0``) torch 2.13 fails with an internal
    assertion; this raises LinAlgError naming the zero pivot."""
    LD, piv, info = ldl_factor_ex(A, hermitian=hermitian)
    if has_error(info):
        raise LinAlgError(f"torch.linalg.ldl_factor: D[{int(info.max()) - 1}, {int(info.max()) - 1}] is exactly zero: "
                          "the matrix is singular; use ldl_factor_ex to get info without raising")
    return LDLFactorResult(LD, piv)


@accepts_out(exact_dtype=True)
def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """Mirrors ``torch.linalg.ldl_solve``: the solution ``X`` of ``A X = B`` from ``A``'s
    ``ldl_factor`` (``LD``, ``pivots``; ``hermitian`` as in the factorization); ``B`` is
    ``(*, n, k)``, batches broadcast; result in ``B``'s shape and dtype. No gradient (torch's
    raises "not implemented"). RuntimeError for a non-int32 ``pivots``, a ``B`` of another
    dtype or with a row count other than ``n``."""
    _check(LD, "ldl_solve")
    if not isinstance(pivots, Tensor) or pivots.dtype._cat != 1:   # torch takes any integer dtype
        got = type(pivots).__name__ if not isinstance(pivots, Tensor) else _SCALAR_NAME.get(pivots.dtype.name)
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected pivots to be integers. Got {got}; pass the int32 "
                           "pivots from ldl_factor")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD.shape[:-1] and pivots.shape to be the same, but got "
                           f"pivots with shape {list(pivots.shape)} instead")
    if isinstance(B, Tensor) and B.dim() >= 2 and B.shape[-2] != LD.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is {LD.shape[-1]} by "
                           f"{LD.shape[-1]} but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    if isinstance(B, Tensor) and B.dtype is not LD.dtype:   # torch's words for this op
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_SCALAR_NAME.get(B.dtype.name)} and A of type {_SCALAR_NAME.get(LD.dtype.name)} instead.")
    _check_rhs("ldl_solve", LD, B)
    if B.dim() < 2:   # torch reads B.size(-2) first: IndexError
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got -2); "
                         f"torch.linalg.ldl_solve: B must be (*, n, k), got shape {tuple(B.shape)}")
    if pivots.dtype.name != "int32":
        pivots = pivots.int()
    return _SOLVE[bool(hermitian)](LD.detach(), pivots, B.detach()).detach()
