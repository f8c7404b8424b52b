"""``tracegrad.cpu.amp``: mirrors ``torch.cpu.amp`` -- ``autocast`` for device 'cpu' (bfloat16 by
default) and ``GradScaler`` for 'cpu', both from ``tracegrad.amp``."""
from __future__ import annotations

from .._ops.dtypes import bfloat16
from ..amp import GradScaler as _GradScaler
from ..amp import autocast as _autocast

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """Mirrors ``torch.cpu.amp.autocast(enabled=True, dtype=torch.bfloat16, cache_enabled=True)``."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cpu", dtype=bfloat16 if dtype is None else dtype, enabled=enabled,
                         cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """Mirrors ``torch.cpu.amp.GradScaler`` (``tracegrad.amp.GradScaler`` for device 'cpu')."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
