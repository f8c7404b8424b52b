"""Gradient clipping: mirrors ``torch.nn.utils.clip_grad``."""
from __future__ import annotations

import math
import types

import tracegrad
from tracegrad import Tensor
from ..._ops.warn import warn as _warn


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Mirrors ``torch.nn.utils.get_total_norm``: the ``norm_type`` norm of the norms of ``tensors``."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tracegrad.tensor(0.0)
    if norm_type == math.inf:
        norms = [t.detach().abs().max() for t in tensors]
        total = norms[0] if len(norms) == 1 else tracegrad.stack(norms).max()
    else:
        norms = [t.detach().norm(norm_type) for t in tensors]
        total = tracegrad.stack(norms).norm(norm_type)
    if error_if_nonfinite and bool(total.isnan() | total.isinf()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           f"it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           f"norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Mirrors ``torch.nn.utils.clip_grad_norm_``: scales every ``.grad`` in place by
    ``min(1, max_norm / (total_norm + 1e-6))``; returns the total norm (a 0-d tensor).
    ``norm_type`` may be ``inf``. RuntimeError for a non-finite norm with ``error_if_nonfinite``."""
    # as torch: both numbers are read first, whether or not any gradient is there to clip
    max_norm, norm_type = float(max_norm), float(norm_type)
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)   # read twice: a generator would be empty the second time
        # torch warns for an exhausted generator (a second pass over model.parameters() is a
        # common slip that silently clips nothing); a plain empty list says nothing
        if is_generator and not parameters:
            _warn("`parameters` is an empty generator, no gradient clipping will occur.")
    grads = _grads(parameters)
    if not grads:
        return tracegrad.tensor(0.0)
    # (error_if_nonfinite reads the norm before any gradient is scaled; a NaN in the key would
    # never be found again)
    if not error_if_nonfinite and math.isfinite(max_norm) and not math.isnan(norm_type):
        # eagerly, the norms and the scaling of every gradient as one cached program: ~2 ops
        # per gradient were as many dispatches (and a compilation per gradient shape)
        fused = tracegrad.compiler.fused_inplace(("clip_grad_norm_", max_norm, norm_type),
                                                 lambda gs, _: ([_clip_norm(gs, max_norm, norm_type)], None), grads)
        if fused is not None:
            return fused[0][0]
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    _scale(grads, max_norm, total)
    return total


def _clip_norm(grads, max_norm, norm_type):
    total = get_total_norm(grads, norm_type)
    _scale(grads, max_norm, total)
    return total


def _scale(grads, max_norm, total_norm):
    coef = (float(max_norm) / (total_norm + 1e-6)).clamp_max(1.0)
    with tracegrad.no_grad():
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Mirrors ``torch.nn.utils.clip_grads_with_norm_``: scales every ``.grad`` of ``parameters``
    in place by ``min(1, max_norm / (total_norm + 1e-6))`` for a ``total_norm`` computed
    beforehand (e.g. by ``get_total_norm``). Returns None. ``max_norm`` is read with ``float``
    first (ValueError/TypeError for one that is not a number). TypeError, as torch's
    ``clamp(max_norm / (total_norm + 1e-6), max=1.0)``, for a ``total_norm`` that is not a Tensor
    (a Python number included) when some parameter has a gradient; RuntimeError, as torch's
    foreach path, for a ``total_norm`` that is not 0-d unless ``foreach=False``."""
    max_norm = float(max_norm)
    grads = _grads(parameters)
    if not grads:
        return
    if not isinstance(total_norm, Tensor):
        # torch clamps max_norm / (total_norm + 1e-6): of a number that is no Tensor (its TypeError)
        raise TypeError(f"clip_grads_with_norm_: total_norm must be a Tensor (as get_total_norm returns), "
                        f"not {type(total_norm).__name__}; torch.clamp() takes no {type(total_norm).__name__}")
    if total_norm.dim() != 0 and foreach is not False:
        # torch's foreach path (its default) multiplies by the coefficient as a scalar tensor; only
        # foreach=False broadcasts one of another shape (a per-element scale, silently)
        raise RuntimeError(f"clip_grads_with_norm_: scalar tensor expected to be 0 dim but it has "
                           f"{total_norm.dim()} dimensions and {total_norm.numel()} elements; pass the 0-d "
                           "norm get_total_norm returns")
    _scale(grads, max_norm, total_norm)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of ``clip_grad_norm_`` (FutureWarning, as torch)."""
    _warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
          FutureWarning)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Mirrors ``torch.nn.utils.clip_grad_value_``: clamps every ``.grad`` to [-clip_value, clip_value] in place.
    RuntimeError, as torch, when no parameter has a gradient (an empty list too)."""
    clip_value = float(clip_value)
    grads = _grads(parameters)
    if not grads:   # torch groups the gradients with a helper that refuses an empty list
        raise RuntimeError("clip_grad_value_: Expected !nested_tensorlist[0].empty() to be true, but got false: "
                           "none of the parameters has a .grad; call it after backward()")
    if math.isfinite(clip_value) and tracegrad.compiler.fused_inplace(("clip_grad_value_", clip_value),
                                                  lambda gs, _: (_clamp(gs, clip_value), None), grads) is not None:
        return
    _clamp(grads, clip_value)


def _clamp(grads, clip_value):
    with tracegrad.no_grad():
        for g in grads:             # two writes, as torch's clamp_min_ and clamp_max_ (``_version``)
            g.clamp_(min=-clip_value)
            g.clamp_(max=clip_value)
    return []
