"""Mirrors ``torch.nn.utils.stateless``: the deprecated home of ``functional_call``."""
from __future__ import annotations

from ..._ops.warn import warn as _warn

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Mirrors ``torch.nn.utils.stateless.functional_call``: ``tracegrad.func.functional_call``
    (same arguments and result) with torch's FutureWarning that this spelling is deprecated."""
    _warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in "
          "a future version of PyTorch. Use `torch.func.functional_call` instead, which is a drop-in "
          "replacement.", FutureWarning)
    from tracegrad.func import functional_call as call   # func sits above nn's import time
    return call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
