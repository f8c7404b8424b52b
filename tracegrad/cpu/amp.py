"""``tracegrad.cpu.amp``: mirrors ``torch.cpu.amp`` -- ``autocast`` for device 'cpu' (bfloat16 by
default) and ``GradScaler`` for 'cpu', both from ``tracegrad.amp``."""
from __future__ import annotations

from .._ops.dtypes import bfloat16
from ..amp._device import device_classes

__all__ = ["autocast", "GradScaler"]

autocast, GradScaler = device_classes("cpu", bfloat16, __name__)
