"""Mirrors ``torch.autograd.Variable``: torch's deprecated wrapper, now a name for Tensor.
``Variable(t, requires_grad=False)`` returns a new tensor sharing ``t``'s data, detached from
its graph, and ``isinstance(x, Variable)`` holds for every tensor."""
from __future__ import annotations

from .._tensor.factories import tensor as _tensor
from .._tensor.tensor import Tensor
from .._ops.warn import warn as _warn


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class _ExecutionEngine:
    """Mirrors the object torch exposes as ``Variable._execution_engine`` (only
    ``queue_callback``, the part user code such as DDP-style reducers calls)."""

    @staticmethod
    def queue_callback(callback):
        """Run ``callback()`` at the end of the running backward call; see
        ``tracegrad.autograd.engine.queue_callback``."""
        from .engine import queue_callback
        queue_callback(callback)


class Variable(metaclass=_VariableMeta):
    """Mirrors ``torch.autograd.Variable(data=None, requires_grad=False, volatile=False)``.

    Returns: a Tensor (not a Variable object) that shares ``data``'s storage, detached from
    its graph, with ``requires_grad`` set; with no data, an empty float tensor.
    ``volatile=True`` has no effect and warns as torch does (UserWarning: "volatile was
    removed...").
    Raises: ValueError for ``volatile`` together with ``requires_grad`` (torch's message);
    TypeError when ``data`` is not a tensor; RuntimeError (from ``requires_grad_``) for
    ``requires_grad=True`` on an integer tensor.
    """

    _execution_engine = _ExecutionEngine()

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            _warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                  UserWarning)
            if requires_grad:
                raise ValueError("Variable can't be volatile and require_grad at the same time!")
        if data is None:
            return _tensor([])._set_requires_grad(requires_grad)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach()._set_requires_grad(requires_grad)
