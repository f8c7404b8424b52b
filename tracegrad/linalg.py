"""``tracegrad.linalg``: the common part of ``torch.linalg`` (norms, inverse, determinants,
solve, factorizations), each one tracegrad op whose backward is JAX's VJP of the same JAX
function (``tracegrad.func.jax_function``, DESIGN 2.1). Batched over leading dimensions as in
torch. Results are float tensors of the input's dtype; gradients match torch's where torch's
are defined (``svd``/``eigh`` gradients assume distinct singular values / eigenvalues, as
torch's do).

Errors: a non-square or non-floating input raises RuntimeError naming the function, as torch;
a singular input to ``inv``/``solve`` or a non positive-definite one to ``cholesky`` raises
``LinAlgError`` (a RuntimeError) when computed eagerly (inside a compiled function or a
transform the value is not inspected: it holds inf/nan, as JAX returns).
"""
from __future__ import annotations

import functools
import math
import operator

import jax
import jax.numpy as jnp
import numpy as np

from . import _state
from ._linalg_decomp import LinAlgError, _check, _check_precision, _check_rhs, _cholesky_ex, _hermitian_from, _solve_ex
from ._linalg_decomp import _cholesky_info, _singular_info, first_error, has_error
from ._linalg_decomp import (  # noqa: F401  (tracegrad.linalg's factorizations and solves)
    cholesky_ex as cholesky_ex, eig as eig, eigvals as eigvals, householder_product as householder_product,
    inv_ex as inv_ex, lstsq as lstsq, lu as lu, lu_factor as lu_factor, lu_factor_ex as lu_factor_ex,
    lu_solve as lu_solve, matrix_exp as matrix_exp, solve_ex as solve_ex, solve_triangular as solve_triangular,
    vander as vander
)
from ._linalg_ldl import ldl_factor as ldl_factor, ldl_factor_ex as ldl_factor_ex, ldl_solve as ldl_solve  # noqa: E402
from ._api.promotion import check_same_dtype, check_tensors
from ._ops.errors import broadcast_shape
from ._api import reduction as _reduction
from .return_types import _structseq
from ._ops import dtypes as _dt
from ._tensor.factories import eye, tensor as _tensor, zeros as _zeros
from ._tensor.tensor import Tensor, _wrap_dim
from .autograd import grad_mode as _grad_mode
from .autograd._dispatch import apply_op as _apply_op
from ._ops.registry import OPS as _OPS
from .autograd.function import Function as _Function, _backward_cls
from .func import jax_function
from ._tensor.out import _cpp_type_name, accepts_out

__all__ = ["LinAlgError", "norm", "vector_norm", "matrix_norm", "inv", "det", "slogdet", "solve",
           "cholesky", "qr", "svd", "svdvals", "eigh", "eigvalsh", "pinv", "cross", "matrix_power",
           "multi_dot", "matmul", "diagonal", "vecdot", "matrix_rank", "cond", "tensorinv", "tensorsolve",
           # the factorizations and solves of _linalg_decomp.py
           "cholesky_ex", "inv_ex", "solve_ex", "lu_factor", "lu_factor_ex", "lu", "lu_solve", "solve_triangular",
           "lstsq", "eig", "eigvals", "householder_product", "matrix_exp", "vander",
           "ldl_factor", "ldl_factor_ex", "ldl_solve"]


# torch.return_types.linalg_slogdet (torch.slogdet's own type is return_types.slogdet)
SlogdetResult = _structseq("linalg_slogdet", ["sign", "logabsdet"])
QRResult = _structseq("linalg_qr", ["Q", "R"])
SVDResult = _structseq("linalg_svd", ["U", "S", "Vh"])
EighResult = _structseq("linalg_eigh", ["eigenvalues", "eigenvectors"])


def _finite_or_raise(out, api, why, A=None, info_of=None, detail=None, pivots_only=False):
    """``out``, or LinAlgError when it holds a non-finite value (eagerly). With ``A``, ``info_of``
    (the op giving LAPACK's ``info`` codes) and ``detail`` (a code -> message function), the
    message names the first failing batch element and code, as torch's does. ``pivots_only``:
    only a nonzero ``info`` is an error (torch's LU solvers give NaN for a NaN/inf input)."""
    if isinstance(out._value, jax.core.Tracer):
        # checked when a compiled program runs (NOTE [value checks at run time])
        _state.check_values(out._value, lambda v: ~jnp.isfinite(v))
        return out
    if not bool(np.isfinite(np.asarray(out.detach()._value)).all()):
        if info_of is not None:
            info = info_of(A.detach()).detach()
            if has_error(info):      # (a NaN input has no zero pivot: the plain message then)
                where, k = first_error(info)
                raise LinAlgError(f"linalg.{api}: {where}{detail(k)}")
            if pivots_only:
                return out
        raise LinAlgError(f"linalg.{api}: {why}")
    return out


def _svd_converges(A, api="svd"):
    """torch's LAPACK SVD (gesdd) refuses a matrix holding a NaN: LinAlgError, naming the first
    such batch element as torch does ("(Batch element i): "). A traced ``A`` has no value to read:
    checked when the compiled program runs (NOTE [value checks at run time]: a NaN reruns the call
    eagerly, which raises)."""
    if isinstance(A._value, jax.core.Tracer):
        _state.check_values(A._value, jnp.isnan)
        return
    if not A.numel():
        return
    bad = np.isnan(np.asarray(A.detach()._value)).reshape(-1, A.shape[-2] * A.shape[-1]).any(axis=1)
    if bad.any():
        where = f"(Batch element {int(np.flatnonzero(bad)[0])}): " if A.dim() > 2 else ""
        raise LinAlgError(f"linalg.svd: {where}The algorithm failed to converge because the input matrix "
                          f"contained non-finite values (linalg.{api}).")


def _op(name):
    """A JAX function as a tracegrad op named ``name`` (grad_fn ``<name>Backward``)."""
    return lambda fn: jax_function(fn, name=name)


def _vector_norm(x, *, ord, dim, keepdim):
    """The op table's norm (Tensor.norm's, node LinalgVectorNormBackward0): torch's zero
    gradients where entries (or the norm) are 0, and its float16/bfloat16 backward rounding
    (``_norm_vjp_lowp`` in _ops/reduction.py; a jax_function op of ``_norm`` kept jax.vjp's)."""
    return _apply_op(_OPS["norm"], (x,), (("ord", float(ord)), ("dim", dim), ("keepdim", bool(keepdim))))


@accepts_out(exact_dtype=True)
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mirrors ``torch.linalg.vector_norm``: ``sum(|x|**ord) ** (1/ord)`` over ``dim`` (all
    elements when None or empty); ``ord`` inf/-inf: max/min of ``|x|``, 0: the count of non-zeros.
    Raises RuntimeError for a non-floating input."""
    if not isinstance(x, Tensor):
        raise TypeError(f"linalg.vector_norm(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    # torch's argument parser checks ord's type before the op looks at the dtype
    if not isinstance(ord, (int, float, complex, Tensor)) and type(ord).__module__ != "numpy":   # a str, None, a list
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}; for the "
                        "Frobenius/nuclear norms use linalg.matrix_norm")
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {_dt.SCALAR_NAMES.get(x.dtype.name, x.dtype.name)}")
    if x.dim() > 64:   # torch's kernel marks reduced dims in a 64-bit mask, dim=None included
        raise RuntimeError(f"only tensors with up to 64 dims are supported (linalg.vector_norm of a {x.dim()}-d "
                           "input); reshape it to 64 dims or fewer first")
    if dtype is not None:
        x = x.to(_reduction.norm_dtype("vector_norm", x, dtype))
    if isinstance(dim, int):
        dim = (dim,)
    # an empty dim list reduces over every dimension, as torch's (not over none)
    dim = None if dim is None or len(dim) == 0 else tuple(_wrap_dim(d, x.dim()) for d in dim)
    if dim is not None and len(set(dim)) != len(dim):
        rep = next(d for i, d in enumerate(dim) if d in dim[:i])
        raise RuntimeError(f"linalg.vector_norm: dim {rep} appears multiple times in the list of dims; "
                           "name each dim once")
    if x.dim() == 0:
        dim = None
    if isinstance(ord, complex):   # torch's parser takes a complex Number; the op refuses it
        raise RuntimeError("linalg.vector_norm: Expected a non-complex scalar as the order of norm.")
    if not isinstance(ord, (int, float, Tensor)) and type(ord).__module__ != "numpy":   # a str, None, a list
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}; for the "
                        "Frobenius/nuclear norms use linalg.matrix_norm")
    ord = float(ord)
    if ord < 0 or ord == float("inf"):   # max/min/negative powers have no value on no elements
        for d in (range(x.dim()) if dim is None else dim):
            if x.shape[d] == 0 and (dim is not None or x.numel() == 0):
                raise RuntimeError(f"linalg.vector_norm cannot compute the {ord:g} norm on the dimension {d} because "
                                   "this dimension is empty and the operation does not have an identity")
    return _vector_norm(x, ord=ord, dim=dim, keepdim=bool(keepdim))


@_op("LinalgMatrixNorm")
def _matrix_norm(A, *, ord, dim, keepdim):
    return jnp.linalg.norm(A, ord=ord, axis=dim, keepdims=keepdim)


@accepts_out(exact_dtype=True)
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Mirrors ``torch.linalg.matrix_norm``: ``ord`` in 'fro', 'nuc', 2, -2, 1, -1, inf, -inf
    over the two dims ``dim``. Raises RuntimeError for fewer than 2 dims or an unknown order,
    TypeError (torch's parser) for an ``ord`` that is neither a number nor a str (None)."""
    if not isinstance(ord, (str, int, float)) and type(ord).__module__ != "numpy":
        raise TypeError(f"linalg_matrix_norm(): argument 'ord' must be Number or str, not {type(ord).__name__}; "
                        "pass 'fro', 'nuc' or one of 2, -2, 1, -1, inf, -inf")
    _check(A, "matrix_norm", square=False)
    if dtype is not None:
        A = A.to(_reduction.norm_dtype("matrix_norm", A, dtype))
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {len(dim)}")
    dim = tuple(_wrap_dim(d, A.dim()) for d in dim)
    if dim[0] == dim[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got {dim}")
    if ord not in ("fro", "nuc", 2, -2, 1, -1, float("inf"), float("-inf")):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord == "fro":
        return _vector_norm(A, ord=2.0, dim=dim, keepdim=bool(keepdim))
    # the negative orders end in a minimum (of the singular values, of the row or column sums),
    # which has no value over no elements: torch's amin raises IndexError (NumPy's min raised
    # its own ValueError here)
    empty = {-2: dim if min(A.shape[d] for d in dim) == 0 else (), float("-inf"): (dim[0],), -1: (dim[1],)}
    for d in empty.get(ord, ()):
        if A.shape[d] == 0:
            raise IndexError(f"linalg.matrix_norm: the {ord:g} norm takes a minimum over dimension {d}, which is "
                             "expected to have non-zero size; use a positive order or a non-empty input")
    return _matrix_norm(A, ord=ord, dim=dim, keepdim=bool(keepdim))


_reduction.MATRIX_NORM[0] = matrix_norm   # torch.norm(p="nuc") calls it


@accepts_out(exact_dtype=True)
def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mirrors ``torch.linalg.norm``: with ``ord`` None, the 2-norm of the flattened input (or
    over ``dim``); a vector norm for one dim, a matrix norm for two."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.norm(): argument 'input' (position 1) must be Tensor, not {type(A).__name__}")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    if isinstance(ord, str):   # a matrix norm; torch's checks in its order and words
        if A.dim() < 2:
            raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
        if dim is None and A.dim() != 2:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {A.dim()}D.")
        if dim is not None and len(dim) != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}")
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if dim is None:
        if A.dim() == 1:
            return vector_norm(A, ord, None, keepdim, dtype=dtype)
        if A.dim() == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {A.dim()}D.")
    if len(dim) == 1:
        return vector_norm(A, ord, dim, keepdim, dtype=dtype)
    return matrix_norm(A, ord, dim, keepdim, dtype=dtype)


@_op("LinalgInvEx")
def _inv(A):
    return jnp.linalg.inv(A)


@accepts_out(exact_dtype=True)
def inv(A, *, out=None):
    """Mirrors ``torch.linalg.inv`` (batched). Raises LinAlgError for a singular matrix (eagerly)."""
    _check(A, "inv")
    return _finite_or_raise(_inv(A), "inv", "The input matrix is singular, so it cannot be inverted.", A,
                            _singular_info, lambda k: f"The diagonal element {k} is zero, the inversion could not "
                                                      f"be completed because the input matrix is singular.",
                            pivots_only=True)


@_op("LinalgDet")
def _det(A):
    if A.shape[-1] == 0:   # the empty product; jnp.linalg.det's VJP fails on 0x0 matrices
        return jnp.ones(A.shape[:-2], A.dtype) + jnp.sum(A, axis=(-2, -1))
    return jnp.linalg.det(A)


@accepts_out(exact_dtype=True)
def det(A, *, out=None):
    """Mirrors ``torch.linalg.det`` (batched): the determinant, shape ``A.shape[:-2]``."""
    _check(A, "det")
    return _det(A)


@_op("LinalgSlogdet")
def _slogdet(A):
    sign, logabs = jnp.linalg.slogdet(A)
    return sign, logabs


@accepts_out(exact_dtype=True)
def slogdet(A, *, out=None):
    """Mirrors ``torch.linalg.slogdet``: ``(sign, logabsdet)`` of the determinant (a named
    tuple; ``logabsdet`` is ``-inf`` for a singular matrix, as torch)."""
    _check(A, "slogdet")
    return SlogdetResult(*_slogdet(A))


@accepts_out(exact_dtype=True)
def solve(A, B, *, left=True, out=None):
    """Mirrors ``torch.linalg.solve``: ``X`` with ``A @ X = B`` (``X @ A = B`` with
    ``left=False``); ``B`` may be a batch of vectors. Raises LinAlgError for a singular ``A``."""
    if not (isinstance(A, Tensor) and isinstance(B, Tensor)):   # torch's parser: two Tensors
        check_tensors("linalg.solve", A, B, names=("A", "B"))
    # torch compares B's dtype and shape with A's before its LU kernel refuses float16/bfloat16
    _check(A, "solve", precision=False)
    vector = _check_rhs("solve", A, B, left)
    _check_precision(A, "solve")
    if not left:
        return solve(A.mT, B.mT).mT
    return _finite_or_raise(_solve_ex(A, B, vector=vector), "solve",
                            "The solver failed because the input matrix is singular.", A, _singular_info,
                            lambda k: "The solver failed because the input matrix is singular.", pivots_only=True)


@accepts_out(exact_dtype=True)
def cholesky(A, *, upper=False, out=None):
    """Mirrors ``torch.linalg.cholesky``: lower-triangular ``L`` with ``A = L @ L.mH`` (``L.mH``
    with ``upper=True``). Raises LinAlgError when ``A`` is not positive-definite (eagerly)."""
    _check(A, "cholesky")
    L = _finite_or_raise(_cholesky_ex(A), "cholesky",
                         "The factorization could not be completed because the input is not positive-definite.",
                         A, _cholesky_info, lambda k: f"The factorization could not be completed because the input "
                                                      f"is not positive-definite (the leading minor of order {k} "
                                                      f"is not positive-definite).")
    return L.mH if upper else L


@_op("LinalgQr")
def _qr(A, *, mode):
    return tuple(jnp.linalg.qr(A, mode=mode))


@accepts_out(exact_dtype=True)
def qr(A, mode="reduced", *, out=None):
    """Mirrors ``torch.linalg.qr``: ``(Q, R)`` with ``mode`` 'reduced' or 'complete'; 'r'
    returns only ``R`` (reduced), with an empty ``Q``, as torch."""
    if not isinstance(mode, str):   # torch's parser: mode is a str, before the input is looked at
        raise TypeError(f"linalg_qr(): argument 'mode' must be str, not {type(mode).__name__}; pass 'reduced', "
                        "'complete' or 'r'")
    _check(A, "qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                           "(default), 'r', or 'complete'")
    if mode == "r":
        R = _qr(A, mode="reduced")[1]
        if _grad_mode.is_grad_enabled() and A.requires_grad:
            R = _QrOnlyR.apply(A, R.detach())
        return QRResult(eye(0, dtype=A.dtype).reshape(0), R)
    Q, R = _qr(A, mode=mode)
    if mode == "complete" and A.shape[-2] > A.shape[-1] and _grad_mode.is_grad_enabled() and A.requires_grad:
        # torch has no derivative for a complete QR of a tall matrix (the extra columns of Q are not
        # unique); its backward raises, where JAX's would give a gradient of one arbitrary choice
        Q, R = _QrCompleteTall.apply(A, Q.detach(), R.detach())
    return QRResult(Q, R)


class _QrOnlyR(_Function):
    """The ``R`` of ``qr(A, mode='r')`` as torch's: it requires grad with ``A``, and its backward
    raises torch's RuntimeError (the derivative needs ``Q``, which mode 'r' does not compute)."""

    @staticmethod
    def forward(ctx, A, R):
        return R.clone()

    @staticmethod
    def backward(ctx, grad_R):
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                           "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")


_backward_cls(_QrOnlyR).__name__ = "LinalgQrBackward0"   # torch's node name


class _QrCompleteTall(_Function):
    """``(Q, R)`` of ``qr(A, mode='complete')`` for a tall ``A`` (more rows than columns) as torch's:
    both require grad with ``A``, and their backward raises torch's RuntimeError."""

    @staticmethod
    def forward(ctx, A, Q, R):
        return Q.clone(), R.clone()

    @staticmethod
    def backward(ctx, grad_Q, grad_R):
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols. "
                           "Use mode='reduced' (linalg.qr) to differentiate through it.")


_backward_cls(_QrCompleteTall).__name__ = "LinalgQrBackward0"


@_op("LinalgSvd")
def _svd(A, *, full_matrices):
    m, n = A.shape[-2:]
    if full_matrices and m != n:
        return _svd_full(A)
    U, S, Vh = jnp.linalg.svd(A, full_matrices=full_matrices)
    return U, S, Vh


@jax.custom_jvp
def _svd_full(A):
    """``jnp.linalg.svd(A, full_matrices=True)`` of a non-square ``A``, differentiable as torch's
    linalg.svd: JAX has no derivative for the full case; torch's backward narrows U and Vh to
    their first min(m, n) columns/rows (the others are any orthonormal completion) and uses the
    reduced SVD's derivative, so the completion carries no gradient."""
    return tuple(jnp.linalg.svd(A, full_matrices=True))


@_svd_full.defjvp
def _svd_full_jvp(primals, tangents):
    (A,), (dA,) = primals, tangents
    U, S, Vh = _svd_full(A)
    k = S.shape[-1]
    dU, dVh = jnp.zeros_like(U), jnp.zeros_like(Vh)
    if k == 0:      # an empty matrix: nothing to differentiate
        return (U, S, Vh), (dU, jnp.zeros_like(S), dVh)
    (Ur, _, _), (dUr, dS, dVhr) = jax.jvp(functools.partial(jnp.linalg.svd, full_matrices=False), (A,), (dA,))
    # the reduced factors equal the full ones' leading part up to each column's sign/phase (LAPACK
    # gives the same ones; aligned anyway so the tangent is the one of the returned vectors)
    ph = jnp.sum(jnp.conj(U[..., :k]) * Ur, axis=-2)
    ph = jnp.where(jnp.abs(ph) > 0, ph / jnp.where(jnp.abs(ph) > 0, jnp.abs(ph), 1), 1)
    dU = dU.at[..., :k].set(dUr * jnp.conj(ph)[..., None, :])
    dVh = dVh.at[..., :k, :].set(dVhr * ph[..., :, None])
    return (U, S, Vh), (dU, dS, dVh)


@accepts_out(exact_dtype=True)
def svd(A, full_matrices=True, *, driver=None, out=None):
    """Mirrors ``torch.linalg.svd``: ``(U, S, Vh)``, singular values in descending order."""
    _check(A, "svd", square=False)
    _no_driver("svd", driver)
    _svd_converges(A)
    return SVDResult(*_svd(A, full_matrices=bool(full_matrices)))


@_op("LinalgSvdvals")
def _svdvals(A):
    return jnp.linalg.svd(A, compute_uv=False)


@accepts_out(exact_dtype=True)
def svdvals(A, *, driver=None, out=None):
    """Mirrors ``torch.linalg.svdvals``: the singular values, descending."""
    _check(A, "svdvals", square=False)
    _no_driver("svdvals", driver)
    _svd_converges(A, "svdvals")
    return _svdvals(A)


def _no_driver(api, driver):
    if driver is not None:
        raise RuntimeError(f"torch.linalg.{api}: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend; leave driver=None on the CPU")


@_op("LinalgEigh")
def _eigh(A, *, lower):
    w, v = jnp.linalg.eigh(_hermitian_from(A, lower), UPLO="L" if lower else "U", symmetrize_input=False)
    return w, v


@accepts_out(exact_dtype=True)
def eigh(A, UPLO="L", *, out=None):
    """Mirrors ``torch.linalg.eigh``: ascending eigenvalues and eigenvectors of a symmetric
    (Hermitian) matrix, reading its ``UPLO`` triangle."""
    if not isinstance(UPLO, str):   # torch's parser: TypeError (not the value check's RuntimeError)
        raise TypeError(f"linalg_eigh(): argument 'UPLO' must be str, not {type(UPLO).__name__}; pass 'L' or 'U'")
    if UPLO.upper() not in ("L", "U"):   # checked before the input's dtype and shape, as torch
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    if isinstance(A, Tensor) and not (A.is_floating_point() or A.is_complex()):
        raise NotImplementedError(f"linalg.eigh: \"linalg_eigh_cpu\" not implemented for '{A.dtype}'; convert "
                                  "the input with .double() or .float()")
    _check(A, "eigh")
    return EighResult(*_eigh(A, lower=UPLO.upper() == "L"))


@accepts_out(exact_dtype=True)
def eigvalsh(A, UPLO="L", *, out=None):
    """Mirrors ``torch.linalg.eigvalsh``: the ascending eigenvalues of ``eigh``."""
    return eigh(A, UPLO).eigenvalues


@_op("LinalgPinv")
def _pinv(A, *, hermitian):
    if hermitian:    # torch reads the lower triangle only
        A = _hermitian_from(A, lower=True)
    return jnp.linalg.pinv(A, hermitian=hermitian)


@_op("LinalgPinv")
def _pinv_tol(A, atol, rtol, *, hermitian):
    # torch keeps the singular values above max(atol, rtol * largest), per matrix (atol and rtol
    # broadcast over the batch); JAX's pinv takes the relative cutoff only
    # a tolerance with more batch dims than A gives one pseudo-inverse per tolerance, as torch
    batch = jnp.broadcast_shapes(A.shape[:-2], jnp.shape(atol), jnp.shape(rtol))
    A = jnp.broadcast_to(A, batch + A.shape[-2:])
    if hermitian:
        A = _hermitian_from(A, lower=True)
    sv = jnp.abs(jnp.linalg.eigvalsh(A)) if hermitian else jnp.linalg.svd(A, compute_uv=False)
    smax = jax.lax.stop_gradient(jnp.max(sv, axis=-1, initial=0.0))
    cut = jnp.maximum(atol, rtol * smax)
    rel = jnp.broadcast_to(cut / jnp.where(smax > 0, smax, 1), A.shape[:-2])
    return jnp.linalg.pinv(A, rtol=jax.lax.stop_gradient(rel), hermitian=hermitian)


@accepts_out()
def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Mirrors ``torch.linalg.pinv``: the Moore-Penrose pseudo-inverse, treating singular values
    (eigenvalues with ``hermitian``) at or below ``max(atol, rtol * largest)`` as zero; ``atol``
    and ``rtol`` are numbers or tensors broadcasting over the batch. Defaults as torch: ``rtol``
    is ``eps * max(m, n)`` where ``atol`` is not positive, else 0. ``rcond`` (positional or
    keyword, NumPy's name) is torch's other overload: ``rtol=rcond`` with ``atol=0``, and it
    cannot be mixed with ``atol``/``rtol`` (TypeError, as torch's parser)."""
    if rcond is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg_pinv() received an invalid combination of arguments: pass either rcond or "
                            "atol/rtol, not both")
        _complex_tol("rcond", rcond)
        atol, rtol = 0.0, rcond
    _complex_tol("atol", atol)
    _complex_tol("rtol", rtol)
    if isinstance(A, Tensor) and (A.dim() < 2 or A.dtype.name not in ("float32", "float64", "complex64",
                                                                       "complex128")):
        # torch's own words for pinv: the input's type and shape, then what it takes
        raise RuntimeError(f"linalg.pinv({_dt.SCALAR_NAMES.get(A.dtype.name, A.dtype.name)}{{{list(A.shape)}}}): "
                           "expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble types")
    _check(A, "pinv", square=False)
    if hermitian and A.shape[-1] != A.shape[-2]:   # torch runs eigh: its square check, not a broadcast error
        raise RuntimeError(f"linalg.eigh: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices (linalg.pinv with hermitian=True)")
    if not hermitian:
        _svd_converges(A, "pinv")
    if atol is None and rtol is None:
        return _pinv(A, hermitian=bool(hermitian))
    real = A.real.dtype if A.is_complex() else A.dtype
    atol = _scalar_tensor(0.0 if atol is None else atol, real)
    if rtol is None:
        eps = float(np.finfo(np.dtype(real.name)).eps) * max(A.shape[-2:])
        rtol = _scalar_tensor(eps, real).where(atol <= 0, 0.0)
    return _pinv_tol(A, atol, _scalar_tensor(rtol, real), hermitian=bool(hermitian))


def _complex_tol(name, v):
    """torch refuses a complex tolerance tensor (it would silently drop the imaginary part)."""
    if isinstance(v, Tensor) and v.is_complex():
        raise RuntimeError(f"torch.linalg.pinv: {name} tensor of complex type is not supported. Got "
                           f"{_dt.SCALAR_NAMES.get(v.dtype.name, v.dtype.name)}")


def _scalar_tensor(v, dtype):
    return v.to(dtype) if isinstance(v, Tensor) else _tensor(float(v), dtype=dtype)


@_op("LinalgCross")
def _cross(a, b, *, dim):
    return jnp.cross(a, b, axis=dim)


@accepts_out(exact_dtype=True)
def cross(input, other, *, dim=-1, out=None):
    """Mirrors ``torch.linalg.cross``: the cross product of 3-vectors along ``dim`` (inputs
    broadcast). Raises RuntimeError when that dim is not of size 3, the ranks differ or the
    other dims do not broadcast; IndexError for a dim out of range."""
    if input.ndim != other.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions. (got {input.ndim} and "
                           f"{other.ndim})")
    check_same_dtype("linalg.cross", input, other)
    if input.dtype is _dt.bool_:
        raise NotImplementedError("linalg.cross: \"cross\" not implemented for 'Bool'; convert the inputs with .long()")
    d = _wrap_dim(dim, input.ndim)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. "
                           f"Got {input.shape[d]} and {other.shape[d]}")
    broadcast_shape([input.shape, other.shape], "linalg.cross")   # torch's RuntimeError, not the layer below's
    return _cross(input, other, dim=dim)


@accepts_out(exact_dtype=True)
def matrix_power(A, n, *, out=None):
    """Mirrors ``torch.linalg.matrix_power``: ``A`` multiplied by itself ``n`` times (``n`` < 0:
    of its inverse; 0: the identity, written into a copy of ``A`` as torch does, so it stays in
    A's graph with a zero gradient)."""
    if type(n) is not int:   # a float, a tensor of several elements: torch's parser TypeError
        try:
            n = operator.index(n)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}; pass an int") from None
    # integer matrices multiply exactly: torch allows them for n >= 0 (bool has no matmul kernel)
    exact = isinstance(A, Tensor) and n >= 0 and not (A.is_floating_point() or A.is_complex())
    if exact and A.dtype.name == "bool":
        raise NotImplementedError("linalg.matrix_power: \"addmm_impl_cpu_\" not implemented for 'Bool'; "
                                  "convert the input with .long() or .float()")
    # a non-floating A with n < 0 is refused by inv, in its words ("linalg.inv: Expected a floating
    # point or complex tensor as input. Got Int"), as torch
    _check(A, "matrix_power", floating=False)
    if n == 0:
        return A.clone().copy_(eye(A.shape[-1], dtype=A.dtype).expand(A.shape))
    if n < 0:
        A, n = inv(A), -n
    out = A
    for _ in range(n - 1):
        out = out @ A
    return out


@accepts_out(exact_dtype=True)
def multi_dot(tensors, *, out=None):
    """Mirrors ``torch.linalg.multi_dot``: the chained product, left to right (1-d first/last
    arguments are treated as row/column vectors). RuntimeError for fewer than two tensors, a
    tensor of the wrong rank, mixed dtypes or neighbours whose sizes do not chain, as torch.
    TypeError when ``tensors`` is not a sequence of tensors (a lone Tensor would iterate its rows)."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)) \
            or not all(isinstance(t, Tensor) for t in tensors):
        what = type(tensors).__name__ if not isinstance(tensors, (list, tuple)) else \
            f"{type(tensors).__name__} of {type(next(t for t in tensors if not isinstance(t, Tensor))).__name__}"
        raise TypeError(f"linalg_multi_dot(): argument 'tensors' (position 1) must be tuple of Tensors, not {what}")
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        inner = 0 < i < len(tensors) - 1
        if t.dim() != 2 if inner else t.dim() not in (1, 2):
            if inner:   # torch names an inner tensor by its index ("tensor 1 must be 2D")
                raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
            raise RuntimeError(f"multi_dot(): the {'first' if i == 0 else 'last'} tensor must be 1D or 2D but "
                               f"got {t.dim()}D")
    # torch checks the chain up front, naming multi_dot and the pair (not matmul's "mat1 and mat2" text)
    for i in range(1, len(tensors)):
        a, b = tensors[i - 1], tensors[i]
        if b.dtype is not tensors[0].dtype:
            # torch names the dtypes by their C++ element types ("tensor 0 is float and tensor 1 double")
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{_cpp_type_name(tensors[0].dtype)} and tensor {i} {_cpp_type_name(b.dtype)}")
        if a.shape[-1] != b.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i - 1} and {i} with shapes {list(a.shape)} and "
                               f"{list(b.shape)} cannot be multiplied")
    return functools.reduce(lambda a, b: a @ b, tensors)


@accepts_out(exact_dtype=True)
def matmul(input, other, *, out=None):
    """Mirrors ``torch.linalg.matmul``: ``input @ other``."""
    return input @ other


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """Mirrors ``torch.linalg.diagonal``: ``A.diagonal(offset, dim1, dim2)``."""
    return A.diagonal(offset, dim1, dim2)


@accepts_out(exact_dtype=True)
def vecdot(x, y, *, dim=-1, out=None):
    """Mirrors ``torch.linalg.vecdot``: ``sum(x.conj() * y, dim)`` (inputs broadcast).
    RuntimeError for differing dtypes or a non-floating input, as torch."""
    if not (isinstance(x, Tensor) and isinstance(y, Tensor)):   # a number was broadcast: torch's parser
        check_tensors("linalg.vecdot", x, y, names=("x", "y"))
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{_dt.SCALAR_NAMES[x.dtype.name]} and y of type {_dt.SCALAR_NAMES[y.dtype.name]} instead")
    check_same_dtype("linalg.vecdot", x, y)
    _check(x, "vecdot", square=False, min_dim=0)
    if isinstance(y, Tensor) and x.dim() == 1 and y.dim() == 1:
        dim = 0   # torch takes two vectors' dot product without looking at dim (any int runs)
        if x.shape[0] != y.shape[0]:   # ... in its dot kernel's words
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{x.shape[0]}] and src [{y.shape[0]}] to "
                               f"have the same number of elements, but got {x.shape[0]} and {y.shape[0]} elements "
                               "respectively")
    return (x.conj() * y).sum(dim) if x.is_complex() else (x * y).sum(dim)



@accepts_out()
def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Mirrors ``torch.linalg.matrix_rank``: the number of singular values (``|eigenvalues|``
    with ``hermitian=True``) above ``max(atol, rtol * largest)``; with neither given
    ``rtol = eps * max(m, n)``, with only ``atol`` (or the legacy ``tol``) ``rtol = 0``.
    int64, shape ``A.shape[:-2]``. RuntimeError for fewer than 2 dims or non-floating input."""
    _check(A, "matrix_rank", square=bool(hermitian))
    if tol is not None:
        if atol is not None or rtol is not None:   # torch's overloads: tol alone, or atol/rtol
            raise TypeError("linalg_matrix_rank() received an invalid combination of arguments - got tol with "
                            "atol/rtol; pass either tol or atol=/rtol=")
        atol = tol
    A = A.detach()
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    m, n = A.shape[-2:]
    if rtol is None:
        rtol = 0.0 if atol is not None else float(np.finfo(np.dtype(S._value.dtype)).eps * max(m, n))
    if S.numel() == 0:
        return _zeros(tuple(A.shape[:-2]), dtype=_dt.int64)
    top = S.amax(-1, keepdim=True)
    cut = top * rtol if not isinstance(rtol, Tensor) else top * rtol.unsqueeze(-1)
    if atol is not None:
        a = atol.unsqueeze(-1) if isinstance(atol, Tensor) else atol
        cut = (cut * 0 + a).maximum(cut) if isinstance(a, Tensor) else cut.clamp(min=float(a))
    return (S > cut).sum(-1)


@accepts_out()
def cond(A, p=None, *, out=None):
    """Mirrors ``torch.linalg.cond``: ``p`` None/2: ratio of the largest to the smallest
    singular value (-2: its inverse); 'fro', 'nuc', inf, -inf, 1, -1: ``norm(A, p) *
    norm(inv(A), p)`` (square ``A``). Differentiable. RuntimeError for an unknown ``p`` or a
    non-square ``A`` with a norm-based ``p``."""
    if p in (None, 2, -2):
        _check(A, "cond", square=False)
        if A.numel() == 0:
            return _zeros(tuple(A.shape[:-2]), dtype=A.real.dtype if A.is_complex() else A.dtype)
        S = svdvals(A)
        big, small = S[..., 0], S[..., -1]
        return big / small if p != -2 else small / big
    if p not in ("fro", "nuc", math.inf, -math.inf, 1, -1):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    _check(A, "cond")
    if A.numel() == 0:
        return _zeros(tuple(A.shape[:-2]), dtype=A.real.dtype if A.is_complex() else A.dtype)
    inverse, info = inv_ex(A)
    out = matrix_norm(A, p) * matrix_norm(inverse, p)
    return out.masked_fill(info != 0, math.inf)      # a singular matrix has condition number inf, as torch


@accepts_out()
def tensorinv(A, ind=2, *, out=None):
    """Mirrors ``torch.linalg.tensorinv``: the tensor ``X`` of shape ``A.shape[ind:] +
    A.shape[:ind]`` with ``tensordot(X, A, ind)`` the identity. RuntimeError for ``ind <= 0``
    or when ``prod(A.shape[:ind]) != prod(A.shape[ind:])``."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    if isinstance(A, Tensor) and ind > A.dim():   # torch slices A's shape at ind: RuntimeError past its end
        raise RuntimeError(f"linalg.tensorinv: 'ind' ({ind}) is larger than the number of dimensions of A "
                           f"({A.dim()}); pass 0 < ind <= A.dim()")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(tuple(A.shape[ind:]) + tuple(A.shape[:ind]))


@accepts_out()
def tensorsolve(A, B, dims=None, *, out=None):
    """Mirrors ``torch.linalg.tensorsolve``: ``X`` of shape ``A.shape[B.dim():]`` with
    ``tensordot(A, X, X.dim()) == B`` (``dims`` of ``A`` are moved to the end first).
    RuntimeError when the sizes do not make a square system."""
    if dims is not None:   # (d % A.dim() wrapped any dim, solving a system torch refuses: IndexError)
        dims = [_wrap_dim(d, A.dim()) for d in dims]
        rest = [d for d in range(A.dim()) if d not in dims]
        A = A.permute(rest + dims)
    xs = tuple(A.shape[B.dim():])
    rows, cols = B.numel(), math.prod(xs)
    if math.prod(A.shape[:B.dim()]) != rows or rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return solve(A.reshape(rows, cols), B.reshape(rows)).reshape(xs)


# torch's parser TypeError for an argument of the wrong kind (a str where a bool or a number goes:
# cholesky(upper='a'), lstsq(rcond='a')), as the top-level functions get (argcheck.py: checked
# after a failure, and before the call only for the strict kinds)
from ._api.argcheck import guard as _guard, guard_all as _guard_all  # noqa: E402

_guard_all(globals(), prefix="linalg.", modules=("tracegrad.linalg", "tracegrad._linalg"))
# the top-level torch.norm/lu/... of these names are written in Python (PYTHON_LEVEL skips them);
# torch.linalg's are C++ functions behind the argument parser
for _name in ("cond", "eig", "lstsq", "lu", "matrix_rank", "norm", "solve"):
    globals()[_name] = _guard("linalg." + _name, globals()[_name])
del _name

# torch.linalg's functions are C++-bound, so their parser takes NumPy's names too:
# ``linalg.norm(A, ord=1, axis=(-2, -1))``, ``vector_norm(x, axis=0, keepdims=True)``
from ._api.numpy_names import numpy_names as _numpy_names  # noqa: E402

for _name in ("norm", "vector_norm", "matrix_norm", "cross", "vecdot"):
    globals()[_name] = _numpy_names(globals()[_name], "linalg_" + _name)
del _name
