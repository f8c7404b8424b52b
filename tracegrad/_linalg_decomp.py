"""The factorization half of ``tracegrad.linalg``: LU (``lu_factor``, ``lu``, ``lu_solve``),
Cholesky with an error code (``cholesky_ex``), ``inv_ex``/``solve_ex``, triangular and
least-squares solves, the general eigen-decomposition (``eig``/``eigvals``, complex results),
Householder products, the matrix exponential and ``vander``; also the input checks and
``LinAlgError`` that ``tracegrad.linalg`` shares (it imports this module and re-exports each
name). torch's older top-level spellings built on these live in ``_linalg_functions.py``.

Each differentiable function is one tracegrad op whose backward is JAX's VJP of the same JAX
function (``jax_function``, DESIGN 2.1). Integer results (pivots, ``info``, ``rank``) never
require grad. Batch dimensions broadcast where torch's do (``lu_solve``, ``solve_triangular``).
"""
from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np

from . import _state
from ._api.shape import cat
from ._ops import dtypes as _dt
from .return_types import _structseq
from ._ops.errors import _broadcast_message, broadcast_shape
from ._tensor.factories import zeros as _zeros
from ._tensor.tensor import Tensor, _JaxTracer
from .func import jax_function
from ._tensor.out import accepts_out

__all__ = ["LinAlgError", "cholesky_ex", "inv_ex", "solve_ex", "lu_factor", "lu_factor_ex", "lu", "lu_solve",
           "solve_triangular", "lstsq", "eig", "eigvals", "householder_product", "matrix_exp", "vander"]

CholeskyExResult = _structseq("linalg_cholesky_ex", ["L", "info"])
InvExResult = _structseq("linalg_inv_ex", ["inverse", "info"])
SolveExResult = _structseq("linalg_solve_ex", ["result", "info"])
LUFactorResult = _structseq("linalg_lu_factor", ["LU", "pivots"])
LUFactorExResult = _structseq("linalg_lu_factor_ex", ["LU", "pivots", "info"])
LUResult = _structseq("linalg_lu", ["P", "L", "U"])
LstsqResult = _structseq("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
EigResult = _structseq("linalg_eig", ["eigenvalues", "eigenvectors"])

class LinAlgError(RuntimeError):
    """Mirrors ``torch.linalg.LinAlgError``: a singular or non positive-definite input."""


# torch's CPU LAPACK kernels have no float16/bfloat16 ones: the kernel's NotImplementedError (by
# the API that reaches it), or the RuntimeError of the APIs that check the dtype first
_LOW_PRECISION_KERNEL = {
    **dict.fromkeys(("det", "solve", "solve_ex", "lu_factor_ex", "lu"), "lu_cpu"),
    **dict.fromkeys(("cholesky", "cholesky_ex"), "cholesky_cpu"),
    **dict.fromkeys(("svd", "svdvals", "cond"), "linalg_svd_cpu"),
    **dict.fromkeys(("eigh", "eigvalsh"), "linalg_eigh_cpu"), **dict.fromkeys(("eig", "eigvals"), "linalg_eig_out_cpu"),
    **dict.fromkeys(("qr", "geqrf"), "geqrf_cpu"), "solve_triangular": "triangular_solve_cpu",
    "householder_product": "orgqr_cpu", "ldl_factor_ex": "ldl_factor_kernel_cpu"}
_LOW_PRECISION_RUNTIME = {"inv": "inv", "inv_ex": "inv", "slogdet": "slogdet", "lu_solve": "lu_solve"}


def _check_precision(A, api):
    name = A.dtype.name
    if name not in ("float16", "bfloat16"):
        return
    torch_name = "Half" if name == "float16" else "BFloat16"
    if api in _LOW_PRECISION_KERNEL:
        raise NotImplementedError(f"\"{_LOW_PRECISION_KERNEL[api]}\" not implemented for '{torch_name}'; "
                                  f"linalg.{api} runs in float32/float64: convert with .float()")
    if api in _LOW_PRECISION_RUNTIME:
        raise RuntimeError(f"linalg.{_LOW_PRECISION_RUNTIME[api]}: Low precision dtypes not supported. Got "
                           f"{torch_name}; convert with .float()")
    if api in ("lstsq", "matrix_rank"):
        raise RuntimeError(f"linalg.{api}: This function doesn't handle types other than float and double "
                           f"(got {torch_name}); convert with .float()")


def _check(A, api, square=True, min_dim=2, floating=True, precision=True, prefix="linalg."):
    """torch's checks of a linalg input: a Tensor (TypeError), at least ``min_dim`` dims, a
    floating or complex dtype (when ``floating``), square matrices when ``square`` (RuntimeError);
    float16/bfloat16 where torch's CPU kernels have none (NotImplementedError or RuntimeError).
    ``prefix``: how torch qualifies ``api`` in these words ("torch.linalg." for ldl_factor_ex)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.{api}(): argument 'A' (position 1) must be Tensor, not {type(A).__name__}")
    if A.dim() < min_dim:
        raise RuntimeError(f"{prefix}{api}: The input tensor A must have at least {min_dim} dimensions.")
    if floating and not (A.is_floating_point() or A.is_complex()):
        # torch's scalar-type name ('Long', not 'Int64')
        raise RuntimeError(f"{prefix}{api}: Expected a floating point or complex tensor as input. "
                           f"Got {_dt.SCALAR_NAMES.get(A.dtype.name, A.dtype.name)}")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{prefix}{api}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if precision:
        _check_precision(A, api)


def _sizes(A, B, vector=False):
    """The matrix sizes torch's solvers name in a shape mismatch: "3x3 and 2x1" (a vector ``B``
    of ``n`` entries is an ``n x 1`` matrix; batch dims are not named)."""
    b = f"{B.shape[-1]}x1" if vector else f"{B.shape[-2]}x{B.shape[-1]}"
    return f"{A.shape[-2]}x{A.shape[-1]} and {b}"


def _check_rhs(api, A, B, left=True):
    """torch's checks of a solve's right-hand side ``B`` against ``A`` (RuntimeError: another
    dtype, too few dims, sizes or batch dims that do not fit), in torch's order and words
    (solve_ex's are solve's, "linalg.solve: ..."); whether ``B`` is a (batch of) vector(s), which
    torch allows only with ``left=True`` (a vector is an ``n x 1`` matrix in the size check, which
    comes first: with ``left=False`` only ``n == 1`` reaches the vector refusal, as in torch)."""
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg.{api}(): argument 'B' (position 2) must be Tensor, not {type(B).__name__}")
    label = "solve" if api == "solve_ex" else api
    if B.dtype is not A.dtype:
        raise RuntimeError(f"linalg.{label}: Expected A and B to have the same dtype, but found A of type "
                           f"{_dt.SCALAR_NAMES.get(A.dtype.name)} and B of type {_dt.SCALAR_NAMES.get(B.dtype.name)} "
                           "instead")
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if not vector and B.dim() < 2:
        raise RuntimeError(f"linalg.{label}: The input tensor B must have at least 2 dimensions.")
    matrix = tuple(B.shape) + (1,) if vector else tuple(B.shape)
    if (matrix[-2] if left else matrix[-1]) != A.shape[-1]:
        raise RuntimeError(f"linalg.{label}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({_sizes(A, B, vector)})")
    if vector and not left:
        raise RuntimeError(f"linalg.{label}: Vector broadcasting of the left hand side is not supported for "
                           f"left=False. In this case linalg.{label} is equivalent to B / A.squeeze(-1)")
    # torch broadcasts B's batch dims with A's (its words name B's size first), no api prefix
    msg = _broadcast_message([tuple(B.shape[:-1] if vector else B.shape[:-2]), tuple(A.shape[:-2])])
    if msg is not None:
        raise RuntimeError(msg)
    return vector


def _op(name):
    return lambda fn: jax_function(fn, name=name)


def _ints(*ts):
    """Integer results as plain tensors (the op marks every output as requiring grad)."""
    return tuple(t.detach() for t in ts)


def has_error(info):
    """Whether any ``info`` code is nonzero; False inside a compiled function or transform,
    where there is no value to check (the results then hold NaN/inf, as JAX returns)."""
    return not isinstance(info._value, _JaxTracer) and bool((info != 0).any())


def first_error(info):
    """``(prefix, code)`` of the first nonzero ``info`` code, as torch's error messages name it:
    ``"(Batch element i): "`` (``i`` the flat batch index) for a batch, ``""`` for one matrix."""
    codes = np.asarray(info.detach()._value).reshape(-1)
    i = int(np.flatnonzero(codes)[0])
    return (f"(Batch element {i}): " if info.dim() else ""), int(codes[i])


def _mT(x):
    return jnp.swapaxes(x, -1, -2)


def _mH(x):
    return jnp.conj(_mT(x)) if jnp.iscomplexobj(x) else _mT(x)


def _batch_pair(a, b):
    """``a`` and ``b`` broadcast over their batch dims (all but the last two)."""
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return jnp.broadcast_to(a, batch + a.shape[-2:]), jnp.broadcast_to(b, batch + b.shape[-2:])


def _first_bad(bad):
    """``info`` as LAPACK reports it: 1 + the index of the first True along the last dim, else 0."""
    n = bad.shape[-1]
    idx = jnp.where(bad, jnp.arange(1, n + 1), n + 1).min(-1, initial=n + 1)
    return jnp.where(idx > n, 0, idx).astype(jnp.int32)


# ---- Cholesky ------------------------------------------------------------------------------
def _cholesky_pivots(A):
    """The pivots ``d_j`` of an unblocked Cholesky of ``A`` (the same order LAPACK's potrf
    meets them): ``info`` is the first ``j`` with ``d_j <= 0`` (NaN included)."""
    n = A.shape[-1]
    rows = jnp.arange(n)

    def body(j, carry):
        L, d = carry
        lj = L[..., j, :]                                   # row j: zeros from column j on
        dj = jnp.real(A[..., j, j]) - jnp.sum(jnp.abs(lj) ** 2, -1)
        ok = dj > 0
        ljj = jnp.sqrt(jnp.where(ok, dj, 1))
        col = (A[..., :, j] - jnp.einsum("...ik,...k->...i", L, jnp.conj(lj))) / ljj[..., None]
        col = jnp.where(rows > j, col, jnp.where(rows == j, ljj[..., None].astype(col.dtype), 0))
        return L.at[..., :, j].set(col), d.at[..., j].set(dj)
    L0 = jnp.zeros_like(A)
    d0 = jnp.zeros(A.shape[:-1], jnp.real(A).dtype)
    return jax.lax.fori_loop(0, n, body, (L0, d0))[1]


def _hermitian_from(A, lower):
    """The Hermitian matrix torch's ``UPLO`` reads from ``A`` (its ``lower`` or upper triangle),
    differentiated as torch's eigh is: the gradient reaches both triangles of ``A`` and is the
    Hermitian part of JAX's (torch projects ``V^H gV`` onto the skew-Hermitian matrices)."""
    tri = jnp.tril(A) if lower else jnp.triu(A)
    strict = jnp.tril(A, -1) if lower else jnp.triu(A, 1)
    herm = tri + jnp.conj(jnp.swapaxes(strict, -1, -2))
    if jnp.iscomplexobj(A):      # LAPACK ignores the diagonal's imaginary part
        eye = jnp.eye(A.shape[-1], dtype=A.dtype)
        herm = herm - 1j * jnp.imag(jnp.diagonal(herm, axis1=-2, axis2=-1))[..., None].astype(A.dtype) * eye
    x = A + jax.lax.stop_gradient(herm - A)     # herm's value, A's derivative
    return (x + jnp.conj(jnp.swapaxes(x, -1, -2))) / 2


@_op("LinalgCholeskyEx")
def _cholesky_ex(A):
    # LAPACK reads the lower triangle only; the gradient is torch's symmetric one
    return jnp.linalg.cholesky(_hermitian_from(A, lower=True))


@_op("LinalgCholeskyExInfo")
def _cholesky_info(A):
    return _first_bad(~(_cholesky_pivots(A) > 0))


@accepts_out(exact_dtype=True)
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """Mirrors ``torch.linalg.cholesky_ex``: ``(L, info)``, a named tuple; ``info`` (int32, shape
    ``A.shape[:-2]``) is 0 where ``A`` is positive-definite, else the order of the first leading
    minor that is not (``L`` is then not meaningful: NaN where torch has partial results).
    ``upper=True`` returns ``L.mH``. Raises LinAlgError for a failure only with
    ``check_errors=True``; RuntimeError for non-square or non-floating input."""
    _check(A, "cholesky_ex")
    L = _cholesky_ex(A)
    info = _cholesky_info(A.detach()) if A.shape[-1] else _zeros(tuple(A.shape[:-2]), dtype=_dt.int32)
    if check_errors and has_error(info):
        where, k = first_error(info)
        raise LinAlgError(f"linalg.cholesky_ex: {where}The factorization could not be completed because the input "
                          f"is not positive-definite (the leading minor of order {k} is not positive-definite).")
    return CholeskyExResult(L.mH if upper else L, info.detach())


def _tril_ste(L, upper):
    """``L``'s triangle as the value, the whole of ``L`` for the gradient: torch's
    ``cholesky_solve``/``cholesky_inverse`` gradients treat the factor as a full matrix."""
    tri = jnp.triu(L) if upper else jnp.tril(L)
    return L + jax.lax.stop_gradient(tri - L)


@_op("CholeskySolve")
def _cholesky_solve(B, L, *, upper):
    B, L = _batch_pair(B, L)
    F = _tril_ste(L, upper)
    A = _mH(F) @ F if upper else F @ _mH(F)
    return jnp.linalg.solve(A, B)


@_op("CholeskyInverse")
def _cholesky_inverse(L, *, upper):
    F = _tril_ste(L, upper)
    return jnp.linalg.inv(_mH(F) @ F if upper else F @ _mH(F))


def cholesky_solve_op(B, L, upper):
    return _cholesky_solve(B, L, upper=bool(upper))


@_op("CholeskyFactorInfo")
def _zero_diagonal_info(L):
    return _first_bad(jnp.diagonal(L, axis1=-2, axis2=-1) == 0)


def check_cholesky_factor_diagonal(L, api):
    """LAPACK's potri (torch's CPU cholesky_inverse) refuses a factor with a zero on its diagonal:
    LinAlgError naming the first such element (1-based) and, for a batch, its batch element. A
    traced ``L`` is checked when the compiled program runs (NOTE [value checks at run time]: a zero
    reruns the call eagerly, which raises)."""
    if isinstance(L._value, _JaxTracer):
        _state.check_values(L._value, lambda v: jnp.diagonal(v, axis1=-2, axis2=-1) == 0)   # in the trace's x64
        return
    if not L.numel():
        return
    info = _zero_diagonal_info(L.detach()).detach()
    if has_error(info):
        where, k = first_error(info)
        raise LinAlgError(f"{api}: {where}The diagonal element {k} is zero, the inversion could not be completed "
                          "because the input matrix is singular.")


def cholesky_inverse_op(L, upper):
    return _cholesky_inverse(L, upper=bool(upper))


# ---- inverse and solve with an error code --------------------------------------------------
def _lu_info(lu):
    k = min(lu.shape[-2:])
    return _first_bad(jnp.diagonal(lu, axis1=-2, axis2=-1)[..., :k] == 0)


@_op("LinalgInvEx")
def _inv_ex(A):
    return jnp.linalg.inv(A)


@_op("LinalgSolveEx")
def _solve_ex(A, B, *, vector):
    A, B = _batch_pair(A, B[..., None] if vector else B)
    X = jnp.linalg.solve(A, B)
    return X[..., 0] if vector else X


@_op("LinalgLuFactorExInfo")
def _singular_info(A):
    return _lu_info(jax.lax.linalg.lu(A)[0])


@accepts_out(exact_dtype=True)
def inv_ex(A, *, check_errors=False, out=None):
    """Mirrors ``torch.linalg.inv_ex``: ``(inverse, info)``; ``info`` (int32) is 0 for an
    invertible matrix, else 1 + the index of the first zero pivot of its LU factorization.
    LinAlgError with ``check_errors=True`` when a matrix is singular."""
    _check(A, "inv_ex")
    info = _singular_info(A.detach()).detach()
    if check_errors and has_error(info):
        where, k = first_error(info)
        raise LinAlgError(f"linalg.inv_ex: {where}The diagonal element {k} is zero, the inversion could not be "
                          "completed because the input matrix is singular.")
    return InvExResult(_inv_ex(A), info)


@accepts_out(exact_dtype=True)
def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """Mirrors ``torch.linalg.solve_ex``: ``(result, info)`` of ``linalg.solve`` with the
    ``info`` code of ``inv_ex``. LinAlgError with ``check_errors=True`` for a singular ``A``."""
    # torch compares B's dtype and shape with A's before its LU kernel refuses float16/bfloat16
    _check(A, "solve_ex", precision=False)
    _check_rhs("solve_ex", A, B, left)
    _check_precision(A, "solve_ex")
    info = _singular_info(A.detach()).detach()
    if check_errors and has_error(info):
        raise LinAlgError(f"torch.linalg.solve_ex: {first_error(info)[0]}The solver failed because the input matrix "
                          "is singular.")
    vector = _check_rhs("solve_ex", A, B, left)
    if not left:
        return SolveExResult(_solve_ex(A.mT, B.mT, vector=False).mT, info)
    return SolveExResult(_solve_ex(A, B, vector=vector), info)


# ---- LU --------------------------------------------------------------------------------------
@_op("LinalgLuFactorEx")
def _lu_factor(A):
    lu, piv, _ = jax.lax.linalg.lu(A)
    return lu, (piv + 1).astype(jnp.int32), _lu_info(lu)


@accepts_out(exact_dtype=True)
def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """Mirrors ``torch.linalg.lu_factor_ex``: ``(LU, pivots, info)`` with ``A = P @ L @ U``
    packed in ``LU`` (``L`` unit lower below the diagonal, ``U`` on and above it), ``pivots``
    int32 (1-based row swaps, LAPACK's), ``info`` int32 (1 + index of the first zero pivot,
    else 0). Rectangular and batched inputs work. RuntimeError for ``pivot=False`` (torch has
    it on CUDA only), and with ``check_errors=True`` for a zero pivot (an exactly singular ``A``;
    a RuntimeError, not LinAlgError, as torch)."""
    if isinstance(A, Tensor) and not (A.is_floating_point() or A.is_complex()):
        raise NotImplementedError(f"linalg.lu_factor: \"linalg_lu_factor_ex_out\" not implemented for "
                                  f"'{_dt.SCALAR_NAMES.get(A.dtype.name, A.dtype.name)}'; convert the input "
                                  "with .double() or .float()")
    _check(A, "lu_factor_ex", square=False)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU; pass pivot=True")
    LU, piv, info = _lu_factor(A)
    piv, info = _ints(piv, info)
    if check_errors and has_error(info):
        _raise_zero_pivot("lu_factor_ex", info)
    return LUFactorExResult(LU, piv, info)


def _raise_zero_pivot(api, info):
    # torch's LU checks raise a plain RuntimeError (not LinAlgError), for rectangular inputs too
    where, k = first_error(info)
    raise RuntimeError(f"linalg.{api}: {where}U[{k},{k}] is zero and using it on lu_solve would result in a "
                       f"division by zero. If you still want to perform the factorization, call linalg.lu(A) or "
                       f"linalg.lu_factor_ex(A), which return it with the error code instead")


@accepts_out(exact_dtype=True)
def lu_factor(A, *, pivot=True, out=None):
    """Mirrors ``torch.linalg.lu_factor``: ``(LU, pivots)`` of ``lu_factor_ex``; RuntimeError
    (not LinAlgError, as torch) when ``U`` has a zero pivot, square or rectangular ``A``."""
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    if has_error(info):
        _raise_zero_pivot("lu_factor", info)
    return LUFactorResult(LU, piv)


@_op("LuPivots")
def _perm_matrix(pivots, *, m, dtype):
    """The matrix ``P`` of ``A = P @ L @ U`` for LAPACK's 1-based ``pivots`` (``m`` rows)."""
    perm = jax.lax.linalg.lu_pivots_to_permutation(pivots - 1, m)
    return jnp.swapaxes(jax.nn.one_hot(perm, m, dtype=dtype), -1, -2)


def _unpack(lu):
    m, n = lu.shape[-2:]
    k = min(m, n)
    L = jnp.tril(lu[..., :, :k], -1) + jnp.eye(m, k, dtype=lu.dtype)
    U = jnp.triu(lu[..., :k, :])
    return L, U


@_op("LuUnpack")
def _lu_unpack(lu):
    return _unpack(lu)


def lu_unpack_arrays(LU, pivots, unpack_data=True, unpack_pivots=True):
    """``(P, L, U)`` of ``torch.lu_unpack`` (empty tensors for the parts not asked for)."""
    m = LU.shape[-2]
    if unpack_pivots:
        if pivots.dtype.name != "int32":
            raise RuntimeError(f"lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype, "
                               f"got {pivots.dtype}; pass the pivots lu_factor returned")
        # torch's words, its missing space included
        bad = "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive." + _ASK_LU
        _check_pivots(pivots, m, bad, bad)
        P = _perm_matrix(pivots, m=m, dtype=LU._value.dtype.name)
    else:
        P = _zeros((0,), dtype=LU.dtype)
    if unpack_data:
        L, U = _lu_unpack(LU)
    else:
        L, U = _zeros((0,), dtype=LU.dtype), _zeros((0,), dtype=LU.dtype)
    return P, L, U


_ASK_LU = "Did you properly pass the result of lu_factor?"


def _check_pivots(pivots, m, below, above):
    """torch's lu_unpack / lu_solve refuse pivots outside ``[1, m]`` (LAPACK's 1-based rows; an
    out-of-range one would index past the matrix) with ``below`` / ``above``, their words. A
    traced ``pivots`` is checked when the compiled program runs (NOTE [value checks at run time])."""
    if isinstance(pivots._value, _JaxTracer):
        _state.check_values(pivots._value, lambda v: (v < 1) | (v > m))
        return
    if not pivots.numel():
        return
    p = np.asarray(pivots.detach()._value)
    if (p < 1).any():
        raise RuntimeError(below)
    if (p > m).any():
        raise RuntimeError(above)


@accepts_out(exact_dtype=True)
def lu(A, *, pivot=True, out=None):
    """Mirrors ``torch.linalg.lu``: ``(P, L, U)`` with ``A = P @ L @ U``, ``L`` ``(*, m, k)``
    unit lower, ``U`` ``(*, k, n)`` upper, ``k = min(m, n)``, ``P`` a permutation matrix of
    ``A``'s dtype. Gradients through ``L`` and ``U`` (as torch). RuntimeError for
    ``pivot=False`` (CUDA only in torch); NotImplementedError for an integer or bool input (torch's
    CPU kernel has no such dtype, and refuses it by that class)."""
    if isinstance(A, Tensor) and not (A.is_floating_point() or A.is_complex()):
        raise NotImplementedError(f"linalg.lu: \"lu_cpu\" not implemented for "
                                  f"'{_dt.SCALAR_NAMES.get(A.dtype.name, A.dtype.name)}'; convert the input with "
                                  ".double() or .float()")
    _check(A, "lu", square=False)
    if not pivot:
        raise RuntimeError("linalg.lu: LU without pivoting is not implemented on the CPU; pass pivot=True")
    LU, piv, _ = _lu_factor(A)
    return LUResult(*lu_unpack_arrays(LU, piv.detach()))


@_op("LinalgLuSolve")
def _lu_solve(lu, piv, B, *, left, adjoint):
    lu, B = _batch_pair(lu, B)
    if not left:             # X A = B  <=>  A^H X^H = B^H
        return _mH(_lu_solve_left(lu, piv, _mH(B), not adjoint))
    return _lu_solve_left(lu, piv, B, adjoint)


def _lu_solve_left(lu, piv, B, adjoint):
    n = lu.shape[-1]
    perm = jax.lax.linalg.lu_pivots_to_permutation(piv - 1, n)
    perm = jnp.broadcast_to(perm, B.shape[:-2] + (n,))
    tri = jax.lax.linalg.triangular_solve
    if not adjoint:          # A = P L U: X = U^-1 L^-1 P^T B
        PB = jnp.take_along_axis(B, perm[..., :, None], axis=-2)
        Y = tri(lu, PB, left_side=True, lower=True, unit_diagonal=True)
        return tri(lu, Y, left_side=True, lower=False)
    # A^H = U^H L^H P^T: X = P L^-H U^-H B
    conj = jnp.iscomplexobj(lu)
    Y = tri(lu, B, left_side=True, lower=False, transpose_a=True, conjugate_a=conj)
    Z = tri(lu, Y, left_side=True, lower=True, transpose_a=True, conjugate_a=conj, unit_diagonal=True)
    inv = jnp.argsort(perm, axis=-1)
    return jnp.take_along_axis(Z, inv[..., :, None], axis=-2)


@accepts_out(exact_dtype=True)
def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """Mirrors ``torch.linalg.lu_solve``: ``X`` with ``A @ X = B`` for ``A`` given by
    ``lu_factor``'s ``(LU, pivots)`` (``X @ A = B`` with ``left=False``; ``A^H`` with
    ``adjoint=True``); batch dims broadcast. Gradients for ``LU`` and ``B``.
    RuntimeError for a non-square ``LU`` or mismatched sizes."""
    _check(LU, "lu_solve")
    n = LU.shape[-1]
    if B.dim() < 2:   # torch's words (a vector B is not taken here)
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({_sizes(LU, B)})")
    if pivots.dtype.name != "int32":
        raise RuntimeError(f"linalg.lu_solve: pivots should be a Tensor of scalar type int32, got {pivots.dtype}")
    if tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise RuntimeError(f"linalg.lu_solve: pivots should have shape {tuple(LU.shape[:-1])}, got "
                           f"{tuple(pivots.shape)}")
    if LU.dtype is not B.dtype:   # torch refuses a mixed pair (the triangular solves would get unlike dtypes)
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{_dt.SCALAR_NAMES[LU.dtype.name]} and B of type {_dt.SCALAR_NAMES[B.dtype.name]} instead; "
                           "convert B with .to(LU.dtype)")
    broadcast_shape([LU.shape[:-2], B.shape[:-2]], "linalg.lu_solve")
    _check_pivots(pivots, n, "Pivots given to lu_solve must all be greater or equal to 1. " + _ASK_LU,
                  "Pivots given to lu_solve must all be smaller or equal to LU.size(-2). " + _ASK_LU)
    return _lu_solve(LU, pivots, B, left=bool(left), adjoint=bool(adjoint))


# ---- triangular and least-squares solves -----------------------------------------------------
@_op("LinalgSolveTriangular")
def _solve_triangular(A, B, *, upper, left, unitriangular):
    A, B = _batch_pair(A, B)
    return jax.lax.linalg.triangular_solve(A, B, left_side=left, lower=not upper, unit_diagonal=unitriangular)


@accepts_out(exact_dtype=True)
def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """Mirrors ``torch.linalg.solve_triangular``: ``X`` with ``A @ X = B`` (``X @ A = B`` with
    ``left=False``) reading only ``A``'s upper or lower triangle (unit diagonal when
    ``unitriangular``); batch dims broadcast; the gradient of ``A`` is on that triangle, as
    torch. RuntimeError for mismatched sizes or dtypes, or a non-floating input."""
    _check(A, "solve_triangular", floating=False)
    if B.dim() < 2:
        raise RuntimeError(f"linalg.solve_triangular: The input tensor B must have at least 2 dimensions, got "
                           f"{B.dim()}; pass B as a (batch of) matrices")
    if (B.shape[-2] if left else B.shape[-1]) != A.shape[-1]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({_sizes(A, B)})")
    # the batch dims broadcast (torch's RuntimeError; JAX's ValueError would leak)
    broadcast_shape([A.shape[:-2], B.shape[:-2]], "linalg.solve_triangular")
    if not (A.is_floating_point() or A.is_complex()):   # torch's kernel has no integer version, checked last
        raise NotImplementedError(f'linalg.solve_triangular: "triangular_solve_cpu" not implemented for '
                                  f"'{_dt.SCALAR_NAMES.get(A.dtype.name, A.dtype.name)}'")
    if A.dtype is not B.dtype:    # torch computes in A's dtype
        B = B.to(A.dtype)
    return _solve_triangular(A, B, upper=bool(upper), left=bool(left), unitriangular=bool(unitriangular))


@_op("LinalgLstsq")
def _lstsq(A, B, *, rcond):
    A, B = _batch_pair(A, B)
    return jnp.linalg.pinv(A, rtol=rcond) @ B, jnp.linalg.svd(A, compute_uv=False)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@accepts_out()
def lstsq(A, B, rcond=None, *, driver=None):
    """Mirrors ``torch.linalg.lstsq``: the named tuple ``(solution, residuals, rank,
    singular_values)`` of ``min ||A X - B||``; ``solution`` ``(*, n, k)`` is the minimum-norm
    least-squares solution (computed through the pseudo-inverse; equal to LAPACK's for every
    driver when ``A`` has full rank). As on torch's CPU: ``rank`` (int64) for drivers other
    than 'gels', ``singular_values`` for 'gelsd'/'gelss', ``residuals`` (squared, ``(*, k)``)
    when ``m > n``, every ``A`` has full rank and the driver is not 'gelsy' (the default);
    otherwise empty tensors. A 1-d ``B`` is a single right-hand side only when ``A`` is 2-d.
    RuntimeError for mismatched rows or dtypes, or an unknown driver (matched case-insensitively,
    as torch); TypeError for a driver that is not a str."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.lstsq(): argument 'A' (position 1) must be Tensor, not {type(A).__name__}")
    # torch's own checks, in its order and words (test_linalg.py matches them)
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if isinstance(B, Tensor) and B.dim() < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if isinstance(B, Tensor) and B.dim() == A.dim() - 1 and A.shape[-2] != B.shape[-1]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-1) ({A.shape[-2]} vs "
                           f"{B.shape[-1]})")
    if isinstance(B, Tensor) and B.dim() == A.dim() and A.shape[-2] != B.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2) ({A.shape[-2]} vs "
                           f"{B.shape[-2]})")
    if isinstance(B, Tensor) and A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {_dt.SCALAR_NAMES.get(A.dtype.name, A.dtype.name)} and other's dtype "
                           f"{_dt.SCALAR_NAMES.get(B.dtype.name, B.dtype.name)}")
    _check(A, "lstsq", square=False)
    if driver is not None and not isinstance(driver, str):   # torch's argument parser: TypeError
        raise TypeError(f"linalg_lstsq(): argument 'driver' must be str, not {type(driver).__name__}")
    # torch lower-cases the name before it checks it ('GELSD' is 'gelsd')
    driver = "gelsy" if driver is None else driver.lower()
    if driver not in _DRIVERS:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of ({', '.join(_DRIVERS)}), "
                           f"got {driver!r}")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {A.dtype} and other's dtype {B.dtype}")
    if not (A.dim() >= B.dim() and A.dim() - B.dim() <= 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           f"(input.dim() - other.dim()) <= 1; got {A.dim()} and {B.dim()}")
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2) ({A.shape[-2]} vs "
                           f"{Bm.shape[-2]})")
    # torch broadcasts the batch dims: torch's RuntimeError when they do not (not the draw's own error)
    broadcast_shape([A.shape[:-2], Bm.shape[:-2]], "torch.linalg.lstsq")
    m, n = A.shape[-2:]
    eps = np.finfo(np.dtype(A._value.real.dtype)).eps
    cut = float(rcond) if rcond is not None else float(eps * max(m, n))
    # LAPACK's own substitutions, which torch's CPU drivers inherit: gelsd takes an rcond outside
    # (0, 1) as the machine epsilon, gelss a negative one
    if rcond is not None and ((driver == "gelsd" and not 0 < cut < 1) or (driver == "gelss" and cut < 0)):
        cut = float(eps)
    X, S = _lstsq(A, Bm, rcond=cut)
    S = S.detach()
    empty = _zeros((0,), dtype=S.dtype)
    rank = (S > cut * S.amax(-1, keepdim=True)).sum(-1) if S.numel() else _zeros(tuple(S.shape[:-1]), dtype=_dt.int64)
    resid = X.reshape(-1)[:0]     # empty, on the graph (torch's empty residuals require grad too)
    resid = resid.real if resid.is_complex() else resid
    # traced: no value to test, the residuals are computed (as for a full-rank A)
    full_rank = isinstance(rank._value, _JaxTracer) or bool((rank == n).all())
    if m > n and driver != "gelsy" and full_rank:
        r = A @ X - Bm
        resid = (r.abs() ** 2).sum(-2) if r.is_complex() else (r * r).sum(-2)
    out_S = S if driver in ("gelsd", "gelss") else empty
    return LstsqResult(X.squeeze(-1) if vector else X, resid,
                       rank.detach() if driver != "gels" else _zeros((0,), dtype=rank.dtype), out_S)


# ---- eigen-decomposition of general matrices -------------------------------------------------
@_op("LinalgEig")
def _eig(A):
    # torch differentiates the eigenvectors under the same assumption (distinct eigenvalues,
    # a phase-invariant loss); JAX asks for it explicitly
    if A.shape[-1] == 0:    # 0x0 matrices: empty results, still differentiable (JAX's eig VJP fails on them)
        cdt = jnp.result_type(A.dtype, jnp.complex64)
        return A.sum(-1).astype(cdt), A.astype(cdt)
    w, v = jax.lax.linalg.eig(A, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
    return w, v


@_op("LinalgEigvals")
def _eigvals(A):
    return jnp.linalg.eigvals(A)


@accepts_out()
def eig(A, *, out=None):
    """Mirrors ``torch.linalg.eig``: complex ``(eigenvalues, eigenvectors)`` (complex64 for
    float32 input, complex128 for float64), eigenvectors of norm 1 (LAPACK's geev, as torch:
    the same phases). Gradients assume distinct eigenvalues and a loss invariant to the
    eigenvectors' phases, as torch's. JAX's ``eig`` (LAPACK's geev on CPU; tested on CPU only).
    RuntimeError for non-square or non-floating input."""
    _check(A, "eig")
    _finite_input("eig", A)
    return EigResult(*_eig(A))


def _finite_input(api, A):
    """torch's eig refuses a NaN or inf entry (RuntimeError). A traced ``A`` has no value to read:
    checked when the compiled program runs (NOTE [value checks at run time]: a non-finite entry
    reruns the call eagerly, which raises)."""
    if isinstance(A._value, _JaxTracer):
        _state.check_values(A._value, lambda v: ~jnp.isfinite(v))
        return
    if A.numel() and not bool(np.isfinite(np.asarray(A.detach()._value)).all()):
        raise RuntimeError(f"torch.linalg.{api}: input tensor should not contain infs or NaNs.")


@accepts_out()
def eigvals(A, *, out=None):
    """Mirrors ``torch.linalg.eigvals``: the complex eigenvalues of ``eig``."""
    _check(A, "eigvals")
    _finite_input("eigvals", A)
    return _eigvals(A)


# ---- Householder products, rank, condition number, exp, tensor inverse/solve ---------------
@_op("LinalgHouseholderProduct")
def _householder(A, tau):
    return _householder_q(A, tau)


def _householder_q(A, tau):
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    Q = jnp.broadcast_to(jnp.eye(m, n, dtype=A.dtype), A.shape)
    rows = jnp.arange(m)[:, None]
    for i in reversed(range(k)):          # Q = H_0 (H_1 (... (H_{k-1} I)))
        v = jnp.where(rows > i, A[..., :, i:i + 1], jnp.where(rows == i, 1, 0).astype(A.dtype))
        Q = Q - tau[..., i, None, None] * v @ (_mH(v) @ Q)
    return Q


@accepts_out()
def householder_product(A, tau, *, out=None):
    """Mirrors ``torch.linalg.householder_product`` (LAPACK's orgqr): the first ``n`` columns
    of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H`` with ``v_i`` column ``i`` of ``A`` below the
    diagonal and 1 on it; ``A`` ``(*, m, n)``, ``tau`` ``(*, k)``, ``k <= n <= m``. Gradients for
    both. RuntimeError for shapes that break those bounds or differing dtypes; NotImplementedError
    (no such kernel in torch) for integer or bool ones."""
    integral = isinstance(A, Tensor) and A.dtype._cat < 2
    if isinstance(A, Tensor) and A.dim() < 2:   # torch's own words for this op
        raise RuntimeError("torch.linalg.householder_product: input must have at least 2 dimensions.")
    _check(A.float() if integral else A, "householder_product", square=False)
    m, n = A.shape[-2:]
    if n > m:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1] (got {m} < {n})")
    if tau.dim() < 1 or tau.shape[-1] > n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1] (got {n} and tau of shape {tuple(tau.shape)})")
    if tau.dim() != A.dim() - 1:
        raise RuntimeError(f"torch.linalg.householder_product: Expected tau to have one dimension less than input, "
                           f"but got tau.ndim equal to {tau.dim()} and input.ndim is equal to {A.dim()}")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"torch.linalg.householder_product: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if A.dtype is not tau.dtype:
        # torch names the scalar types ("Int", "Float"), not the dtype objects
        raise RuntimeError(f"torch.linalg.householder_product: tau dtype {_dt.SCALAR_NAMES[tau.dtype.name]} does "
                           f"not match input dtype {_dt.SCALAR_NAMES[A.dtype.name]}")
    if integral:   # torch checks the shapes and dtypes above, then finds no kernel
        name = _dt.SCALAR_NAMES[A.dtype.name]
        raise NotImplementedError(f"\"orgqr_cpu\" not implemented for '{name}'; linalg.householder_product "
                                  "takes floating point or complex tensors")
    return _householder(A, tau)


GeqrfResult = _structseq("geqrf", ["a", "tau"])


@_op("Geqrf")
def _geqrf(A):
    """LAPACK's geqrf, written out (JAX keeps its geqrf private): column ``j``'s reflector
    ``H = I - tau v v^H`` with ``v[j] = 1`` maps ``A[j:, j]`` onto ``beta e_j``, ``beta = -sign(Re
    A[j, j]) |A[j:, j]|`` (dlarfg/zlarfg's convention, so ``a`` and ``tau`` equal LAPACK's);
    ``H^H`` then updates the columns to its right."""
    m, n = A.shape[-2:]
    rows, cols = jnp.arange(m), jnp.arange(n)
    taus = []
    for j in range(min(m, n)):
        x = A[..., :, j]
        alpha = x[..., j]
        below = jnp.where(rows > j, x, 0)
        xnorm2 = jnp.sum(jnp.abs(below) ** 2, -1)
        trivial = (xnorm2 == 0) & (jnp.imag(alpha) == 0)          # H = I, tau = 0
        beta = -jnp.copysign(jnp.sqrt(jnp.abs(alpha) ** 2 + xnorm2), jnp.real(alpha))
        beta = jnp.where(trivial, jnp.real(alpha), beta)
        tau = jnp.where(trivial, 0, (beta - alpha) / jnp.where(trivial, 1, beta)).astype(A.dtype)
        scale = jnp.where(trivial, 0, 1 / jnp.where(trivial, 1, alpha - beta))
        v = jnp.where(rows > j, below * scale[..., None], (rows == j).astype(A.dtype))
        w = jnp.where(cols > j, jnp.einsum("...m,...mn->...n", jnp.conj(v), A), 0)
        A = A - jnp.conj(tau)[..., None, None] * v[..., :, None] * w[..., None, :]
        A = A.at[..., :, j].set(jnp.where(rows > j, v, jnp.where(rows == j, beta[..., None].astype(A.dtype), x)))
        taus.append(tau)
    tau = jnp.stack(taus, -1) if taus else jnp.zeros(A.shape[:-2] + (0,), A.dtype)
    return A, tau


@accepts_out()
def geqrf(input, *, out=None):
    """Mirrors ``torch.geqrf`` (LAPACK's geqrf): ``(a, tau)``, ``R`` on and above ``a``'s diagonal
    and the Householder vectors below it, ``tau`` ``(*, min(m, n))``; ``householder_product(a,
    tau)`` rebuilds ``Q``. Differs from torch: differentiable (torch's backward raises
    NotImplementedError). RuntimeError for fewer than 2 dims; NotImplementedError for integers."""
    if isinstance(input, Tensor) and input.dim() < 2:   # torch's own words for this op
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if isinstance(input, Tensor) and not (input.is_floating_point() or input.is_complex()):
        raise NotImplementedError(f"\"geqrf_cpu\" not implemented for '{_dt.SCALAR_NAMES.get(input.dtype.name)}'; "
                                  "geqrf takes floating point or complex tensors (.double() or .float())")
    _check(input, "geqrf", square=False)
    return GeqrfResult(*_geqrf(input))


@_op("Ormqr")
def _ormqr(A, tau, C, *, left, transpose):
    m, k = A.shape[-2], tau.shape[-1]
    # Q (m x m) is the product of the k reflectors; zero taus add identity reflectors
    V = jnp.concatenate([A[..., :, :k], jnp.zeros(A.shape[:-1] + (m - k,), A.dtype)], -1)
    t = jnp.concatenate([tau, jnp.zeros(tau.shape[:-1] + (m - k,), tau.dtype)], -1)
    Q = _householder_q(V, t)
    Q = _mH(Q) if transpose else Q
    return Q @ C if left else C @ Q


@accepts_out(name="ormqr", exact_dtype=True)
def _ormqr_checked(input, tau, other, left, transpose):
    return _ormqr(input, tau, other, left=bool(left), transpose=bool(transpose))


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """Mirrors ``torch.ormqr(input, tau, other, left=True, transpose=False)``: ``other``
    multiplied by the ``m x m`` matrix ``Q`` of ``geqrf``'s ``(input, tau)`` (``Q^H`` with
    ``transpose``; on the left or the right). Differentiable. RuntimeError for sizes or dtypes
    that do not fit (torch's checks in torch's order and words: ``tau`` must have exactly
    ``min(other.shape[-2 or -1], input.shape[-1])`` entries, the batch dims must be equal, not
    broadcast; ``out`` must have ``input``'s dtype); NotImplementedError for integer tensors."""
    for name, t in (("input", input), ("tau", tau), ("other", other)):
        if not isinstance(t, Tensor):
            raise TypeError(f"ormqr(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if input.dim() < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if other.dim() < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    if tau.shape[-1] != min(other.shape[side], input.shape[-1]):
        # torch 2.x: exactly min(...) reflectors (a shorter tau is refused, not padded)
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{side}], "
                           "input.shape[-1])")
    if tau.dim() != input.dim() - 1:
        raise RuntimeError(f"torch.ormqr: Expected tau to have one dimension less than input, but got tau.ndim "
                           f"equal to {tau.dim()} and input.ndim is equal to {input.dim()}")
    if other.dim() != input.dim():
        raise RuntimeError(f"torch.ormqr: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {other.dim()} and input.ndim is equal to {input.dim()}")
    for name, t, batch in (("tau", tau, tau.shape[:-1]), ("other", other, other.shape[:-2])):
        if tuple(batch) != tuple(input.shape[:-2]):     # equal, torch does not broadcast them
            raise RuntimeError(f"torch.ormqr: Expected batch dimensions of {name} to be equal to input.shape[:-2], "
                               f"but got {list(batch)}")

    def scalar(dtype):
        return _dt.SCALAR_NAMES.get(dtype.name, dtype.name)
    # torch's words, including its missing space after "dtype"
    for name, t in (("tau", tau), ("other", other)) + ((("result", out),) if isinstance(out, Tensor) else ()):
        if t.dtype is not input.dtype:
            raise RuntimeError(f"torch.ormqr: Expected input and {name} to have the same dtype, but input has "
                               f"dtype{scalar(input.dtype)} and {name} has dtype {scalar(t.dtype)}")
    if not (input.is_floating_point() or input.is_complex()):
        raise NotImplementedError(f"\"ormqr_cpu\" not implemented for '{scalar(input.dtype)}'; ormqr takes "
                                  "floating point or complex tensors")
    return _ormqr_checked(input, tau, other, left, transpose, out=out)


@_op("LinalgMatrixExp")
def _matrix_exp(A):
    if A.dtype in (jnp.float16, jnp.bfloat16, jnp.float32, jnp.complex64):
        # XLA's expm has no half types, and in single precision its Pade steps lose up to 2e-4
        # relative (torch's Taylor scheme stays near 1e-5): computed in double inside the one
        # node (torch's LinalgMatrixExpBackward0), then cast back
        wide = jnp.complex128 if jnp.iscomplexobj(A) else jnp.float64
        return jax.scipy.linalg.expm(A.astype(wide)).astype(A.dtype)
    return jax.scipy.linalg.expm(A)


def matrix_exp(A):
    """Mirrors ``torch.linalg.matrix_exp`` (and ``torch.matrix_exp``): ``sum_k A^k / k!`` of a
    (batch of) square matrices, through scaling and squaring (Pade); differentiable.
    RuntimeError for non-square or non-floating input."""
    _check(A, "matrix_exp")
    return _matrix_exp(A)


def vander(x, *, N=None):
    """Mirrors ``torch.linalg.vander``: ``(*, n, N)`` with ``x[..., i] ** j`` in column ``j``
    (increasing powers, ``N`` default ``x.shape[-1]``); integer inputs stay int64.
    RuntimeError for a 0-d ``x`` or ``N <= 1``."""
    if isinstance(x, Tensor) and x.dtype is _dt.bool_:   # checked before N, as torch
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    if x.dim() == 0:              # torch: a 0-d x is one value
        x = x.reshape(1)
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError(f"linalg.vander: N must be greater than 1, got N={n}")
    if not (x.is_floating_point() or x.is_complex()):
        x = x.long()
    cols = x.unsqueeze(-1).expand(*x.shape, n - 1)
    ones = (x.unsqueeze(-1) * 0 + 1).detach()
    return cat([ones, cols.cumprod(-1)], -1)
