"""``tracegrad.amp``: mirrors ``torch.amp`` -- ``autocast`` (mixed-precision op lists) and
``GradScaler`` (dynamic loss scaling)."""
from .autocast_mode import (autocast, custom_bwd, custom_fwd, get_autocast_dtype, is_autocast_available,  # noqa: F401
                            is_autocast_enabled)
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd", "is_autocast_available"]
