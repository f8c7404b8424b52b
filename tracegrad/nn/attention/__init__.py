"""``tracegrad.nn.attention``: mirrors ``torch.nn.attention`` -- ``sdpa_kernel`` and ``SDPBackend``
(the backend choice of ``F.scaled_dot_product_attention``) and ``flex_attention``.

tracegrad has one attention implementation (XLA's, from the math formula), so choosing a
backend changes nothing about the result: ``sdpa_kernel`` validates its argument and records the
choice for the duration of the block (``current_backends()``), as torch's context manager."""
from __future__ import annotations

import contextlib
import enum

# torch.nn.attention re-exports these from torch.backends.cuda: the same objects here
from ...backends.cuda import SDPAParams, can_use_efficient_attention, can_use_flash_attention

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS", "can_use_flash_attention",
           "can_use_efficient_attention", "SDPAParams"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """Mirrors ``torch.nn.attention.SDPBackend`` (same members and values)."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_ACTIVE = [tuple(SDPBackend)[1:]]


def current_backends() -> tuple:
    """The backends the innermost ``sdpa_kernel`` block allows (all of them outside one)."""
    return _ACTIVE[0]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Mirrors ``torch.nn.attention.sdpa_kernel(backends, set_priority=False)``: a context
    manager restricting ``scaled_dot_product_attention`` to ``backends`` (one ``SDPBackend`` or a
    list). Results are the same for every backend here (one XLA implementation). TypeError, as
    torch, for anything but SDPBackend members."""
    items = [backends] if isinstance(backends, SDPBackend) else list(backends) if isinstance(backends, (list, tuple, set)) else None
    if items is None or not all(isinstance(b, SDPBackend) for b in items):
        raise TypeError(f"sdpa_kernel: backends must be an SDPBackend or a list of them, got {backends!r}")
    prev = _ACTIVE[0]
    _ACTIVE[0] = tuple(items)
    try:
        yield
    finally:
        _ACTIVE[0] = prev


def _cur_sdpa_kernel_backends() -> list:
    """Mirrors ``torch.nn.attention._cur_sdpa_kernel_backends()``: the backends the innermost
    ``sdpa_kernel`` block enables (all of them outside one), as a list in torch's fixed order
    (cuDNN, flash, efficient, math, overrideable) whatever order or priority the block gave."""
    on = set(current_backends())
    return [b for b in _TORCH_ORDER if b in on]


_TORCH_ORDER = (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                SDPBackend.MATH, SDPBackend.OVERRIDEABLE)
