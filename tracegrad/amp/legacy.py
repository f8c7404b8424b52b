"""torch's per-device autocast accessors (``torch.is_autocast_cpu_enabled``,
``torch.set_autocast_gpu_dtype``...), deprecated there in favour of the ones taking a device
type; each warns as torch does and forwards to ``autocast_mode``."""
from __future__ import annotations

from .autocast_mode import get_autocast_dtype, is_autocast_enabled, set_autocast_dtype, set_autocast_enabled
from .._ops.warn import warn as _warn


def _deprecated(old, new):
    _warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning)


def is_autocast_cpu_enabled() -> bool:
    """Mirrors ``torch.is_autocast_cpu_enabled()``: ``is_autocast_enabled('cpu')``."""
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Mirrors ``torch.set_autocast_cpu_enabled(enabled)``: ``set_autocast_enabled('cpu', enabled)``."""
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    """Mirrors ``torch.get_autocast_cpu_dtype()``: ``get_autocast_dtype('cpu')``."""
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    """Mirrors ``torch.set_autocast_cpu_dtype(dtype)``: ``set_autocast_dtype('cpu', dtype)``."""
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    """Mirrors ``torch.get_autocast_gpu_dtype()``: ``get_autocast_dtype('cuda')``."""
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype) -> None:
    """Mirrors ``torch.set_autocast_gpu_dtype(dtype)``: ``set_autocast_dtype('cuda', dtype)``."""
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)
