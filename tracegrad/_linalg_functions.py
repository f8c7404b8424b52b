"""torch's older top-level linear-algebra functions, written on ``tracegrad.linalg``: ``det``,
``inverse``, ``logdet``, ``slogdet``, ``svd`` (returns ``V``, not ``Vh``), ``cross`` (the
first dim of size 3 by default), the Cholesky/LU/QR/triangular spellings (``cholesky``,
``cholesky_solve``, ``cholesky_inverse``, ``lu``, ``lu_unpack``, ``lu_solve``, ``qr``,
``triangular_solve``) and ``matrix_exp``, bound as ``tracegrad.<name>`` in
``tracegrad/__init__.py`` and as Tensor methods here.

Layering (tests/test_layering.py): ``tracegrad.linalg`` is L7, above the API layer whose
registry installs Tensor's methods, so this L7 module sets its Tensor methods itself;
tests/api/test_registration.py lists each in ``ATTACHED_ELSEWHERE``.
"""
from __future__ import annotations


from . import _linalg_decomp, linalg
from ._api.argcheck import check_kinds
from ._api.promotion import check_tensors
from ._ops.errors import _broadcast_message
from ._ops import dtypes as _dt
from .return_types import _structseq
from ._ops.warn import warn_once
from ._tensor.factories import zeros
from ._tensor.tensor import Tensor
from ._tensor.out import accepts_out
from ._api.out_functions import method_form

__all__ = ["det", "inverse", "logdet", "slogdet", "svd", "cross", "matrix_power", "pinverse", "cholesky",
           "cholesky_solve", "cholesky_inverse", "lu", "lu_unpack", "lu_solve", "qr", "triangular_solve", "matrix_exp",
           "geqrf", "orgqr", "ormqr", "nuclear_norm", "frobenius_norm"]

SVDResult = _structseq("svd", ["U", "S", "V"])
SlogdetResult = _structseq("slogdet", ["sign", "logabsdet"])
QRResult = _structseq("qr", ["Q", "R"])
LUResult = _structseq("_lu_with_info", ["LU", "pivots", "info"])
LUUnpackResult = _structseq("lu_unpack", ["P", "L", "U"])
TriangularSolveResult = _structseq("triangular_solve", ["solution", "cloned_coefficient"])


# what to write instead of each deprecated spelling: the second part of its warning (the first
# sentence is torch's, so that code filtering on it filters ours too)
_INSTEAD = {
    "qr": "linalg.qr takes a string mode where qr took the bool `some`: write "
          "tracegrad.linalg.qr(A, 'reduced' if some else 'complete').",
    "cholesky": "write tracegrad.linalg.cholesky(A) for cholesky(A), and tracegrad.linalg.cholesky(A).mH for "
                "cholesky(A, upper=True).",
    "solve_triangular": "linalg.solve_triangular takes A first and returns the solution alone: write "
                        "tracegrad.linalg.solve_triangular(A, B) for triangular_solve(B, A).solution.",
    "lu_solve": "linalg.lu_solve takes B last: write tracegrad.linalg.lu_solve(LU, pivots, B) for "
                "lu_solve(B, LU, pivots).",
}


def _deprecated(name, instead):
    """torch's once-per-process deprecation of ``torch.<name>`` (TORCH_WARN_ONCE, each its own
    flag): its first sentence, then how to call ``linalg.<instead>``."""
    warn_once(f"tracegrad.{name} is deprecated in favor of tracegrad.linalg.{instead} and will be removed in "
              f"a future PyTorch release.\n{_INSTEAD[instead]}", UserWarning)


def det(input):
    """Mirrors ``torch.det``: ``tracegrad.linalg.det`` (batched determinant, shape
    ``input.shape[:-2]``). RuntimeError for non-square or non-floating input."""
    return linalg.det(input)


@accepts_out(exact_dtype=True)
def inverse(input, *, out=None):
    """Mirrors ``torch.inverse``: ``tracegrad.linalg.inv`` (batched). LinAlgError (a
    RuntimeError) for a singular matrix, computed eagerly."""
    return linalg.inv(input)


@accepts_out(exact_dtype=True)
def slogdet(input, *, out=None):
    """Mirrors ``torch.slogdet``: ``tracegrad.linalg.slogdet``'s ``(sign, logabsdet)`` as
    ``tracegrad.return_types.slogdet`` (torch's name for this form)."""
    return SlogdetResult(*linalg.slogdet(input))


def logdet(input):
    """Mirrors ``torch.logdet``: ``log(det(input))`` for batches of square matrices: NaN where
    a real determinant is negative, ``-inf`` where it is 0; complex input gives the complex log. Gradient through ``slogdet``.
    RuntimeError for fewer than 2 dims or a non-floating input, as torch."""
    if isinstance(input, Tensor) and input.dim() < 2:
        raise RuntimeError("logdet: The input tensor A must have at least 2 dimensions; pass a (batch of) "
                           "square matrices")
    sign, logabs = linalg.slogdet(input)
    if sign.is_complex():        # log(det) = log|det| + i arg(det), as torch
        return sign.log() + logabs
    return logabs.where(sign >= 0, float("nan"))


@accepts_out(exact_dtype=True)
def svd(input, some=True, compute_uv=True, *, out=None):
    """Mirrors ``torch.svd``: ``(U, S, V)`` with ``input = U @ diag(S) @ V.mT`` (``V``, where
    ``tracegrad.linalg.svd`` returns ``Vh``); ``some=True``: reduced ``U`` ``(*, m, k)`` and
    ``V`` ``(*, n, k)``, ``k = min(m, n)``; ``some=False``: square ``U`` and ``V``. With
    ``compute_uv=False`` ``U`` and ``V`` are zeros of shapes ``(*, m, m)``, ``(*, n, n)``.
    Gradients assume distinct singular values, as torch. RuntimeError for fewer than 2 dims."""
    if isinstance(input, Tensor) and input.dim() < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has {input.dim()} "
                           "dimensions instead; pass a (batch of) matrices")
    if not compute_uv:
        S = linalg.svdvals(input)
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        return SVDResult(zeros(batch + (m, m), dtype=input.dtype), S, zeros(batch + (n, n), dtype=input.dtype))
    U, S, Vh = linalg.svd(input, full_matrices=not some)
    return SVDResult(U, S, Vh.mT.conj_physical() if Vh.is_complex() else Vh.mT)


@accepts_out(exact_dtype=True)
def cross(input, other, dim=None, *, out=None):
    """Mirrors ``torch.cross``: the cross product of 3-vectors along ``dim``; with ``dim=None``
    (deprecated in torch, which warns the same) the first dim of size 3 of ``input`` (torch looks
    at ``input`` alone, then leaves the rest to linalg.cross: its rank and size checks and words).
    RuntimeError when there is none or ``dim`` is not of size 3."""
    check_tensors("cross", input, other, names=("input", "other"))
    if dim is None:
        # torch's first sentence, word for word (tests match on it), then our advice
        warn_once("Using torch.cross without specifying the dim arg is deprecated.\nPass dim explicitly "
                  "or use tracegrad.linalg.cross; the default dim will become linalg.cross's (-1).", UserWarning)
        dim = next((i for i, s in enumerate(input.shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input; pass tensors with a dim of size 3")
    return linalg.cross(input, other, dim=dim)


def matrix_power(input, n):
    """Mirrors ``torch.matrix_power``: ``tracegrad.linalg.matrix_power`` (``n`` < 0 inverts)."""
    return linalg.matrix_power(input, n)


def pinverse(input, rcond=1e-15):
    """Mirrors ``torch.pinverse``: ``tracegrad.linalg.pinv`` with ``rtol=rcond`` (singular values
    at or below ``rcond`` times the largest count as zero). TypeError for an ``rcond`` that is not a
    number (None too), as torch's parser."""
    if isinstance(rcond, bool) or not isinstance(rcond, (int, float)):
        raise TypeError(f"pinverse(): argument 'rcond' (position 2) must be float, not {type(rcond).__name__}")
    return linalg.pinv(input, rtol=rcond)


@accepts_out()
def cholesky(input, upper=False, *, out=None):
    """Mirrors ``torch.cholesky`` (deprecated in torch, which warns the same): ``linalg.cholesky``
    with ``upper``. LinAlgError for a matrix that is not positive-definite."""
    _deprecated("cholesky", "cholesky")
    if isinstance(input, Tensor):   # the deprecated kernel's dtype refusal (linalg.cholesky's is RuntimeError)
        if input.dim() < 2:   # torch checks the rank before the dtype
            raise RuntimeError("cholesky: The input tensor A must have at least 2 dimensions.")
        _floating_kernel("cholesky", input, "cholesky_cpu")
    try:
        return linalg.cholesky(input, upper=upper)
    except linalg.LinAlgError as e:     # torch names the deprecated function
        raise linalg.LinAlgError(str(e).replace("linalg.cholesky:", "cholesky:", 1)) from None


def _floating_kernel(api, t, kernel):
    """torch's NotImplementedError for an integer or bool input to a floating-only linalg kernel."""
    if not (t.dtype.is_floating_point or t.dtype.is_complex):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dt.SCALAR_NAMES.get(t.dtype.name, t.dtype.name)}'"
                                  f"; {api} needs a floating point or complex input")


def _check_pair(api, b, A, dims_message, kernel=True):
    """torch's checks of the right-hand side ``b`` and the matrix ``A`` of cholesky_solve /
    triangular_solve (its linearSolveCheckInputs), in its order and words: each at least 2-D
    (``dims_message(name, ndim)``, the op's own words), one dtype, ``A`` square, ``A``'s size
    matching ``b``'s rows, batch dims that broadcast; then (``kernel``) NotImplementedError for an
    integer dtype (no CPU kernel)."""
    for name, t in (("b", b), ("A", A)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{api}(): argument '{'input' if name == 'b' else 'A'}' must be Tensor, not "
                            f"{type(t).__name__}")
    for name, t in (("b", b), ("A", A)):
        if t.dim() < 2:
            raise RuntimeError(dims_message(name, t.dim()))
    if b.dtype is not A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_dt.SCALAR_NAMES.get(b.dtype.name)} and A of type {_dt.SCALAR_NAMES.get(A.dtype.name)} "
                           "instead.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           "matrices")
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {api}: each A matrix is {A.shape[-1]} by {A.shape[-1]} "
                           f"but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    msg = _broadcast_message([tuple(b.shape[:-2]), tuple(A.shape[:-2])])
    if msg is not None:
        raise RuntimeError(msg)
    if kernel:
        _floating_kernel(api, b, f"{api}_cpu")


@accepts_out()
def cholesky_solve(input, input2, upper=False, *, out=None):
    """Mirrors ``torch.cholesky_solve(B, L, upper=False)``: ``X`` with ``A @ X = B`` where
    ``A = L @ L.mH`` (``L.mH @ L`` with ``upper=True``), reading only ``L``'s triangle; batch dims
    broadcast. Gradients for ``B`` and the whole of ``L`` (as torch's). RuntimeError for
    mismatched sizes, dtypes or fewer than 2 dims."""
    # torch names the factor "u" in its rank check
    _check_pair("cholesky_solve", input, input2,
                lambda name, d: f"{'u' if name == 'A' else name} should have at least 2 dimensions, but has {d} "
                                "dimensions instead")
    return _linalg_decomp.cholesky_solve_op(input, input2, upper)


@accepts_out()
def cholesky_inverse(input, upper=False, *, out=None):
    """Mirrors ``torch.cholesky_inverse(L, upper=False)``: the inverse of ``A = L @ L.mH``
    (``L.mH @ L`` with ``upper=True``) from its Cholesky factor. RuntimeError for fewer than 2
    dims or a non-square input (torch's words); LinAlgError, as LAPACK's potri in torch, for a
    factor with a zero on its diagonal (eagerly; a compiled program gets inf/NaN)."""
    check_tensors("cholesky_inverse", input, names=("input",))
    if input.dim() < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    if input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they are "
                           f"{input.shape[-2]} by {input.shape[-1]} matrices")
    _floating_kernel("cholesky_inverse", input, "cholesky_inverse_out_cpu")
    _linalg_decomp.check_cholesky_factor_diagonal(input, "cholesky_inverse")
    return _linalg_decomp.cholesky_inverse_op(input, upper)


@accepts_out(any_dtype=True)
def lu(A, pivot=True, get_infos=False, out=None):
    """Mirrors ``torch.lu``: ``(LU, pivots)`` of ``linalg.lu_factor`` (``(LU, pivots, infos)``
    with ``get_infos=True``; a singular matrix is factorized without an error either way, as
    torch), with torch's deprecation warning. TypeError for a ``pivot`` that is not a bool;
    ``get_infos`` is read for its truth, as torch's Python-level ``lu`` does (1, a str: the infos
    too; None: not)."""
    check_kinds("lu", pivot=pivot)
    warn_once("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
              "removed in a future PyTorch release.", UserWarning)
    LU, piv, info = linalg.lu_factor_ex(A, pivot=pivot)
    if get_infos:
        return LUResult(LU, piv, info)
    return LU, piv


@accepts_out(exact_dtype=True)
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """Mirrors ``torch.lu_unpack``: ``(P, L, U)`` from ``lu_factor``'s packed result (``P`` a
    permutation matrix of ``LU``'s dtype; empty tensors for the parts not asked for).
    Gradients through ``L`` and ``U``. RuntimeError for pivots that are not int32."""
    if LU_data.dim() < 2:
        raise RuntimeError(f"lu_unpack: LU_data must have at least 2 dimensions, got {LU_data.dim()}")
    return LUUnpackResult(*_linalg_decomp.lu_unpack_arrays(LU_data, LU_pivots, unpack_data, unpack_pivots))


@accepts_out(exact_dtype=True)
def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """Mirrors ``torch.lu_solve(b, LU_data, LU_pivots)`` (deprecated in torch, which warns once
    per process, as here): ``linalg.lu_solve(LU, pivots, b)``."""
    _deprecated("lu_solve", "lu_solve")
    return linalg.lu_solve(LU_data, LU_pivots, b)


@accepts_out(exact_dtype=True)
def qr(input, some=True, *, out=None):
    """Mirrors ``torch.qr`` (deprecated in torch, which warns the same): ``linalg.qr`` in mode
    'reduced' (``some=True``) or 'complete'."""
    _deprecated("qr", "qr")
    return QRResult(*linalg.qr(input, "reduced" if some else "complete"))


@accepts_out(exact_dtype=True)
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """Mirrors ``torch.triangular_solve`` (deprecated in torch, which warns the same):
    ``(solution, cloned_coefficient)`` with ``op(A) @ solution = b``, ``op`` the transpose when
    ``transpose``; ``A``'s upper (default) or lower triangle is read."""
    # torch warns (once) after its shape and dtype checks, before looking for a kernel
    _check_pair("triangular_solve", b, A,
                lambda name, d: f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but it has "
                                f"{d} dimensions instead", kernel=False)
    _deprecated("triangular_solve", "solve_triangular")
    _floating_kernel("triangular_solve", b, "triangular_solve_cpu")
    if transpose:
        X = linalg.solve_triangular(A.mT, b, upper=not upper, unitriangular=unitriangular)
    else:
        X = linalg.solve_triangular(A, b, upper=upper, unitriangular=unitriangular)
    return TriangularSolveResult(X, A.expand(*X.shape[:-2], *A.shape[-2:]).clone())


def matrix_exp(input):
    """Mirrors ``torch.matrix_exp``: ``tracegrad.linalg.matrix_exp``."""
    return linalg.matrix_exp(input)


@accepts_out(exact_dtype=True)
def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """Mirrors the deprecated ``torch.nuclear_norm(input, keepdim=False)`` and
    ``torch.nuclear_norm(input, dim, keepdim=False)``: the sum of singular values over the
    matrices in ``dim`` (default the last two), ``linalg.matrix_norm(input, 'nuc', dim,
    keepdim)``, warning once as torch does. An int ``dim`` names one dim twice: RuntimeError
    (the two dims must differ)."""
    if isinstance(dim, bool):           # the (input, keepdim) overload
        dim, keepdim = None, dim
    warn_once("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
              "future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead", UserWarning)
    dim = (-2, -1) if dim is None else (dim, dim) if isinstance(dim, int) else tuple(dim)
    return linalg.matrix_norm(input, "nuc", dim, keepdim)


@accepts_out(exact_dtype=True)
def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """Mirrors the deprecated ``torch.frobenius_norm(input, dim, keepdim=False)``: the 2-norm
    over at most two dims (``()``: all of them), ``linalg.vector_norm(input, 2, dim, keepdim)``,
    warning once as torch does. RuntimeError for more than two dims, a repeated dim or an
    integer input; IndexError for a dim out of range."""
    warn_once("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
              "future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead", UserWarning)
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dim) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dim)} dimensions instead.")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{_dt.SCALAR_NAMES.get(input.dtype.name, input.dtype.name)} instead.")
    return linalg.vector_norm(input, 2, dim or None, keepdim)


geqrf = _linalg_decomp.geqrf
ormqr = _linalg_decomp.ormqr


def orgqr(input, tau, *, out=None):
    """Mirrors ``torch.orgqr(input, tau, *, out=None)``: ``tracegrad.linalg.householder_product(input,
    tau, out=out)``. TypeError for a non-Tensor ``tau`` (torch's parser; also for the method, which
    has no argument guard)."""
    if not isinstance(tau, Tensor):
        raise TypeError(f"orgqr(): argument 'input2' (position 2) must be Tensor, not {type(tau).__name__}")
    return linalg.householder_product(input, tau, out=out)


def _cross_method(self, other, dim=None):
    """Mirrors ``Tensor.cross(other, dim=None)``: see ``tracegrad.cross``."""
    return cross(self, other, dim)


# Tensor methods of the same meaning (ATTACHED_ELSEWHERE in tests/api/test_registration.py); those
# whose function takes out= get a method without it, as torch's
Tensor.det = det
Tensor.inverse = method_form(inverse)
Tensor.logdet = logdet
Tensor.slogdet = method_form(slogdet)
Tensor.svd = method_form(svd)
Tensor.cross = _cross_method
Tensor.matrix_power = matrix_power
Tensor.pinverse = pinverse
Tensor.cholesky = method_form(cholesky)
Tensor.cholesky_solve = method_form(cholesky_solve)
Tensor.cholesky_inverse = method_form(cholesky_inverse)
Tensor.lu = method_form(lu)
Tensor.lu_solve = method_form(lu_solve)
Tensor.qr = method_form(qr)
Tensor.triangular_solve = method_form(triangular_solve)
Tensor.matrix_exp = matrix_exp
Tensor.geqrf = method_form(geqrf)
Tensor.orgqr = orgqr
Tensor.ormqr = method_form(ormqr)
