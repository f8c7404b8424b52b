"""torch's older top-level linear-algebra functions, written on ``tracegrad.linalg``: ``det``,
``inverse``, ``logdet``, ``slogdet``, ``svd`` (returns ``V``, not ``Vh``) and ``cross`` (the
first dim of size 3 by default), bound as ``tracegrad.<name>`` in ``tracegrad/__init__.py``
and as Tensor methods here.

Layering (tests/test_layering.py): ``tracegrad.linalg`` is L7, above the API layer whose
registry installs Tensor's methods, so this L7 module sets its Tensor methods itself;
tests/api/test_registration.py lists each in ``ATTACHED_ELSEWHERE``.
"""
from __future__ import annotations

import collections
import warnings

from . import linalg
from ._ops.errors import broadcast_shape
from ._tensor.factories import zeros
from ._tensor.tensor import Tensor
from ._tensor.out import accepts_out

__all__ = ["det", "inverse", "logdet", "slogdet", "svd", "cross", "matrix_power", "pinverse"]

SVDResult = collections.namedtuple("svd", ["U", "S", "V"])


def det(input):
    """Mirrors ``torch.det``: ``tracegrad.linalg.det`` (batched determinant, shape
    ``input.shape[:-2]``). RuntimeError for non-square or non-floating input."""
    return linalg.det(input)


@accepts_out(exact_dtype=True)
def inverse(input, *, out=None):
    """Mirrors ``torch.inverse``: ``tracegrad.linalg.inv`` (batched). LinAlgError (a
    RuntimeError) for a singular matrix, computed eagerly."""
    return linalg.inv(input)


def slogdet(input):
    """Mirrors ``torch.slogdet``: ``(sign, logabsdet)`` of ``tracegrad.linalg.slogdet``."""
    return linalg.slogdet(input)


def logdet(input):
    """Mirrors ``torch.logdet``: ``log(det(input))`` for batches of square matrices: NaN where
    the determinant is negative, ``-inf`` where it is 0. Gradient through ``slogdet``.
    RuntimeError for fewer than 2 dims or a non-floating input, as torch."""
    if isinstance(input, Tensor) and input.dim() < 2:
        raise RuntimeError("logdet: The input tensor A must have at least 2 dimensions; pass a (batch of) "
                           "square matrices")
    sign, logabs = linalg.slogdet(input)
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
    (deprecated in torch, which warns the same) the first dim of size 3 of the broadcast
    shape. RuntimeError when there is none or ``dim`` is not of size 3."""
    if dim is None:
        warnings.warn("Using tracegrad.cross without specifying the dim arg is deprecated (as in torch); pass "
                      "dim explicitly or use tracegrad.linalg.cross", UserWarning, stacklevel=2)
        shape = broadcast_shape([input.shape, other.shape], "cross")
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input; pass tensors with a dim of size 3")
    return linalg.cross(input, other, dim=dim)


def matrix_power(input, n):
    """Mirrors ``torch.matrix_power``: ``tracegrad.linalg.matrix_power`` (``n`` < 0 inverts)."""
    return linalg.matrix_power(input, n)


def pinverse(input, rcond=1e-15):
    """Mirrors ``torch.pinverse``: ``tracegrad.linalg.pinv`` (singular values below ``rcond``
    times the largest count as zero; tracegrad uses linalg.pinv's default cut, which equals
    torch's for ``rcond`` at or below float eps -- differs from torch for larger ``rcond``)."""
    return linalg.pinv(input)


def _cross_method(self, other, dim=None):
    """Mirrors ``Tensor.cross(other, dim=None)``: see ``tracegrad.cross``."""
    return cross(self, other, dim)


# Tensor methods of the same meaning (ATTACHED_ELSEWHERE in tests/api/test_registration.py)
Tensor.det = det
Tensor.inverse = inverse
Tensor.logdet = logdet
Tensor.slogdet = slogdet
Tensor.svd = svd
Tensor.cross = _cross_method
Tensor.matrix_power = matrix_power
Tensor.pinverse = pinverse
