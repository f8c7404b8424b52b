"""``tracegrad.cuda.amp``: mirrors ``torch.cuda.amp`` -- ``autocast`` for device 'cuda' and
``GradScaler``, both from ``tracegrad.amp``."""
from __future__ import annotations

from .._ops.dtypes import float16
from ..amp import GradScaler as _GradScaler
from ..amp import autocast as _autocast

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """Mirrors ``torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)``."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cuda", dtype=float16 if dtype is None else dtype, enabled=enabled,
                         cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """Mirrors ``torch.cuda.amp.GradScaler`` (``tracegrad.amp.GradScaler`` for device 'cuda')."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
