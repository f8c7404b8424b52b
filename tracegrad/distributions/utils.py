"""Mirrors ``torch.distributions.utils``: ``broadcast_all``, probs <-> logits, ``lazy_property``."""
from __future__ import annotations

import numbers

import tracegrad
from tracegrad.overrides import is_tensor_like

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]


def delegated(owner, name):
    """A read-only property that returns ``self.<owner>.<name>`` (a wrapper distribution's
    parameters live on the distribution it wraps)."""
    return property(lambda self: getattr(getattr(self, owner), name), doc=f"``{owner}.{name}``")


def broadcast_all(*values):
    """Mirrors ``broadcast_all``: Python numbers become tensors (the dtype and device of the first
    tensor argument, else the default dtype) and everything is broadcast to one shape. Objects
    with ``__torch_function__`` (a wrapper that is no Tensor) count as tensors and are handed to
    ``broadcast_tensors`` as they are, so their override runs, as in torch.
    Raises: ValueError for an argument that is neither a number nor tensor-like."""
    tensor_like = [is_tensor_like(v) for v in values]
    if not all(t or isinstance(v, numbers.Number) for t, v in zip(tensor_like, values)):
        raise ValueError("Input arguments must all be instances of numbers.Number, tracegrad.Tensor or objects "
                         "implementing __torch_function__.")
    if not all(tensor_like):
        like = next((v for v in values if isinstance(v, tracegrad.Tensor)), None)
        opts = (dict(dtype=like.dtype, device=like.device) if like is not None
                else dict(dtype=tracegrad.get_default_dtype()))
        values = [v if t else tracegrad.tensor(v, **opts) for t, v in zip(tensor_like, values)]
    return tuple(tracegrad.broadcast_tensors(*values))


def clamp_probs(probs):
    """Clamps to ``[eps, 1 - eps]`` (``eps`` = ``finfo(dtype).eps``)."""
    eps = tracegrad.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    """Sigmoid for binary, softmax over the last dim otherwise."""
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def probs_to_logits(probs, is_binary=False):
    """``log(p) - log1p(-p)`` for binary, ``log(p)`` otherwise, of the clamped probabilities."""
    ps = clamp_probs(probs)
    return ps.log() - (-ps).log1p() if is_binary else ps.log()


def _tril_mask(n, diag, device):
    ar = tracegrad.arange(n, device=device)
    return ar < ar.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat, diag=0):
    """Mirrors ``tril_matrix_to_vec``: the entries on and below diagonal ``diag`` of ``(..., D, D)``
    matrices, in row order, as ``(..., N)``. Raises ValueError for ``diag`` outside ``[-D, D-1]``."""
    n = mat.shape[-1]
    if not -n <= diag < n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = _tril_mask(n, diag, mat.device).nonzero().unbind(-1)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec, diag=0):
    """Mirrors ``vec_to_tril_matrix``: the inverse of ``tril_matrix_to_vec`` (zeros elsewhere).
    Raises ValueError when the length of the last dim is no triangular number for ``diag``."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > tracegrad.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as the lower "
                         f"triangular part of a square D x D matrix.")
    n = round(n)
    mask = _tril_mask(n, diag, vec.device).reshape(-1)
    # each matrix slot reads its vector entry; slots off the triangle read an appended zero
    slot = tracegrad.where(mask, mask.long().cumsum(0) - 1, tracegrad.full_like(mask, vec.shape[-1], dtype=tracegrad.int64))
    padded = tracegrad.cat([vec, vec.new_zeros(tuple(vec.shape[:-1]) + (1,))], -1)
    return padded[..., slot].reshape(tuple(vec.shape[:-1]) + (n, n))


class lazy_property:
    """Mirrors ``torch.distributions.utils.lazy_property``: computed on first access (with grad
    enabled) and cached in the instance's ``__dict__``."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with tracegrad.enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value
