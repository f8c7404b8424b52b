"""``tracegrad.cuda.amp``: mirrors ``torch.cuda.amp`` -- ``autocast`` for device 'cuda' (float16
by default) and ``GradScaler``, both from ``tracegrad.amp``."""
from __future__ import annotations

from .._ops.dtypes import float16
from ..amp._device import device_classes

__all__ = ["autocast", "GradScaler"]

autocast, GradScaler = device_classes("cuda", float16, __name__)
