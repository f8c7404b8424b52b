"""Forward-mode AD with dual tensors: mirrors ``torch.autograd.forward_ad``.

    with forward_ad.dual_level():
        x = forward_ad.make_dual(primal, tangent)
        y = f(x)                                   # any tracegrad ops, modules, functionals
        value, jvp = forward_ad.unpack_dual(y)     # jvp = J_f(primal) @ tangent

Tangents propagate through every op of the table (``jax.jvp`` of the op, cached), views (a
view's tangent is the same view of its base's tangent), in-place ops and custom
``autograd.Function``s with a ``jvp``. A tangent computed from tensors that require grad records
reverse-mode history, so ``autograd.grad`` of a tangent works (reverse-over-forward); gradients
computed under the level carry tangents too (forward-over-reverse: Hessian-vector products). As
in torch, one level exists at a time. Inside ``tracegrad.compile`` a dual level makes the call run
eagerly (a graph break); tangents never enter ``utils.checkpoint`` or ``tracegrad.func`` regions
(RuntimeError). The machinery is in ``_forward_ad_impl.py``.
"""
from __future__ import annotations

import functools
from typing import NamedTuple, Optional

from .. import _state
from .._ops.registry import OPS
from .._tensor import factories as _factories
from .._tensor.memory_format import grad_like_param
from .._tensor.tensor import Tensor
from . import _dispatch
from . import _forward_ad_impl as _impl

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]


def enter_dual_level() -> int:
    """Mirrors ``torch.autograd.forward_ad.enter_dual_level``: opens the forward-AD level and
    returns its number (0), the default ``level`` of ``make_dual``/``unpack_dual``.

    Raises RuntimeError when a level is already open (torch supports one level; use
    ``tracegrad.func.jvp`` for higher orders). Inside a ``tracegrad.compile``d function, the call
    runs eagerly instead (a graph break)."""
    if _impl._LEVEL[0] >= 0:
        raise RuntimeError(_impl.MSG_NESTED)
    _state.note_effect("entering a forward-AD dual level (autograd.forward_ad.dual_level)")
    _impl._LEVEL[0] = 0
    _impl._OPEN[0] = _impl.Level(0)
    if _impl._FW_ENABLED[0]:    # with forward-grad mode off the level opens paused
        _state.set_forward_ad(_impl._OPEN[0])
    return 0


def exit_dual_level(*, level: Optional[int] = None) -> None:
    """Mirrors ``torch.autograd.forward_ad.exit_dual_level``: closes the level (default: the
    open one) and drops every tangent it gave; ``unpack_dual`` then returns tangent None.

    Raises RuntimeError when ``level`` is not the open level, or no level is open."""
    current = _impl._LEVEL[0]
    if level is None:
        level = current
    if level != current:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. "
                           "This is not supported.")
    if level < 0:
        raise RuntimeError("exit_dual_level: no forward AD level is open; enter one with enter_dual_level() "
                           "or dual_level() first.")
    lvl = _impl._OPEN[0]
    _impl._OPEN[0] = None
    _state.set_forward_ad(None)
    _impl._LEVEL[0] = -1
    lvl.drop_tangents()


def _check_level(level, what):
    current = _impl._LEVEL[0]
    if level is None:
        level = current
    if level < 0 and what == "_make_dual":
        raise RuntimeError(_impl.MSG_NO_LEVEL)
    if level != current or level < 0:
        raise RuntimeError(f"Invalid level given to {what}: {level}; the open forward AD level is {current}.")
    return level


def make_dual(tensor: Tensor, tangent: Tensor, *, level: Optional[int] = None) -> Tensor:
    """Mirrors ``torch.autograd.forward_ad.make_dual``: a new tensor aliasing ``tensor`` (a view,
    ``grad_fn`` ``ViewBackward0`` when ``tensor`` requires grad) with ``tangent`` as its forward
    gradient, kept as-is (``unpack_dual`` gives back the same object).

    Args: ``tensor`` floating or complex; ``tangent`` of the same shape, floating or complex (a
    wider dtype than the primal is kept, as torch). Differentiable in reverse mode through both.
    Raises: RuntimeError outside a dual level or for another ``level``, for a shape mismatch, or
    when ``tensor`` already has a tangent; ValueError for a non-floating primal or tangent."""
    level = _check_level(level, "_make_dual")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError("make_dual(): expected Tensors for tensor and tangent, got "
                        f"{type(tensor).__name__} and {type(tangent).__name__}")
    if not (tensor.dtype.is_floating_point or tensor.dtype.is_complex):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.dtype.is_floating_point or tangent.dtype.is_complex):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if _impl.tangent_of(tensor) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward gradient at the "
                           f"same level {level} is not supported.")
    if _impl.tangent_of(tangent) is not None:
        raise RuntimeError("Setting a forward grad that itself has a forward gradient at the same level "
                           f"{level} is not supported.")
    if not _same_layout(tensor, tangent):
        tangent = _impl.plain(_laid_out_copy, tangent, tensor)
    dual = _impl.mark_alias(_impl.plain(_dispatch.apply_op, OPS["view"], (tensor,), (("shape", tuple(tensor.shape)),)))
    _impl._OPEN[0].set_tangent(dual, tangent)
    return dual


def _same_layout(a, b) -> bool:
    """torch's metadata check on a forward grad: same strides, storage offset and storage size
    (a tensor without elements always passes)."""
    if a.numel() == 0:
        return True
    # torch's check also compares the conjugate bit: a tangent conjugated unlike its primal is
    # copied (NOTE [conj views]; tracegrad has no negative bit to compare)
    return (a.is_conj() == b.is_conj() and a.stride() == b.stride() and a.storage_offset() == b.storage_offset()
            and a.untyped_storage().nbytes() // a.element_size() == b.untyped_storage().nbytes() // b.element_size())


def _laid_out_copy(tangent, primal):
    """torch's make_dual for a tangent laid out unlike its primal: a copy (differentiable, as
    torch's copy_) with the primal's strides, so the caller's tangent is never written through
    the dual."""
    new = _factories.zeros(tuple(primal.shape), dtype=tangent.dtype)
    grad_like_param(new, primal)
    if primal.is_conj() and new.dtype.is_complex:   # the copy carries the primal's conj bit
        new = new.conj()
    return _dispatch.apply_inplace(OPS["copy"], new, (tangent,))


class UnpackedDualTensor(NamedTuple):
    """Mirrors ``torch.autograd.forward_ad.UnpackedDualTensor``: ``(primal, tangent)``."""
    primal: Tensor
    tangent: Optional[Tensor]


def unpack_dual(tensor: Tensor, *, level: Optional[int] = None) -> UnpackedDualTensor:
    """Mirrors ``torch.autograd.forward_ad.unpack_dual``: ``(primal, tangent)`` where
    ``primal`` is a view of ``tensor`` without tangent (``AliasBackward0`` when it requires grad)
    and ``tangent`` its forward gradient as-is, or None (no tangent, or no level open).

    Another ``level`` than the open one gives tangent None, as torch. TypeError for a non-Tensor
    while a level is open (with none open, torch hands any object back)."""
    current = _impl._LEVEL[0]
    if level is None and current < 0:
        return UnpackedDualTensor(tensor, None)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual(): argument 'dual' (position 1) must be Tensor, not {type(tensor).__name__}")
    # as torch, a level that is not the open one has no tangents (no error), and neither has a
    # custom Function's forward or jvp (the level is computing: FORWARD_AD[0] is None)
    live = level in (None, current) and _state.FORWARD_AD[0] is not None
    tangent = _impl.tangent_of(tensor) if live else None
    primal = _impl.mark_alias(_impl.plain(_dispatch.apply_op, OPS["alias"], (tensor,), ()))
    return UnpackedDualTensor(primal, tangent)


class dual_level:
    """Mirrors ``torch.autograd.forward_ad.dual_level``: a context manager (and decorator) that
    enters the dual level on entry and exits it, dropping every tangent, on exit."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)
        return wrapper


def _is_fwd_grad_enabled() -> bool:
    """Mirrors ``torch.autograd.forward_ad._is_fwd_grad_enabled``: the forward-grad mode (True
    unless ``_set_fwd_grad_enabled(False)``)."""
    return _impl._FW_ENABLED[0]


class _set_fwd_grad_enabled:
    """Mirrors ``torch.autograd.forward_ad._set_fwd_grad_enabled(mode)``: sets the forward-grad
    mode on construction (as ``set_grad_enabled``) and restores the previous one on exit; also a
    decorator. While off, ops propagate no tangents and ``unpack_dual`` gives tangent None."""

    def __init__(self, mode: bool) -> None:
        self.prev = _impl._FW_ENABLED[0]
        self.mode = bool(mode)
        _impl.set_fwd_grad_enabled(self.mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        _impl.set_fwd_grad_enabled(self.prev)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = _impl._FW_ENABLED[0]
            _impl.set_fwd_grad_enabled(self.mode)
            try:
                return fn(*args, **kwargs)
            finally:
                _impl.set_fwd_grad_enabled(prev)
        return wrapper


def __getattr__(name):
    # torch's module global ``_current_level`` (-1 outside any dual level): programs and
    # gradcheck tests read it to know whether forward AD is running
    if name == "_current_level":
        return _impl._LEVEL[0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
