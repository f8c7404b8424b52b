"""``tracegrad.xpu``: mirrors ``torch.xpu`` (Intel GPUs) in a build without it, as torch's CPU
build answers: ``is_available()`` False, counts and memory 0, seeding a no-op, and what needs a
device the AssertionError "Torch not compiled with XPU enabled"."""
from __future__ import annotations

__all__ = ["is_available", "device_count", "is_initialized", "is_bf16_supported", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "empty_cache", "synchronize", "current_device", "set_device",
           "get_device_name", "get_device_properties", "get_device_capability"]


def is_available() -> bool:
    """Mirrors ``torch.xpu.is_available``: False."""
    return False


def device_count() -> int:
    """Mirrors ``torch.xpu.device_count``: 0."""
    return 0


def is_initialized() -> bool:
    """Mirrors ``torch.xpu.is_initialized``: False."""
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Mirrors ``torch.xpu.is_bf16_supported``: False without a device."""
    return False


def manual_seed(seed) -> None:
    """Mirrors ``torch.xpu.manual_seed``: without a device, nothing to seed."""


manual_seed_all = manual_seed


def seed() -> None:
    """Mirrors ``torch.xpu.seed``: nothing to seed."""


seed_all = seed


def memory_allocated(device=None) -> int:
    """Mirrors ``torch.xpu.memory_allocated``: 0."""
    return 0


max_memory_allocated = memory_reserved = memory_allocated


def empty_cache() -> None:
    """Mirrors ``torch.xpu.empty_cache``: nothing cached."""


def _not_compiled(name):
    def f(*args, **kwargs):
        raise AssertionError("Torch not compiled with XPU enabled")
    f.__name__ = name
    f.__doc__ = f"Mirrors ``torch.xpu.{name}``: AssertionError (no XPU support), as torch's CPU build."
    return f


synchronize = _not_compiled("synchronize")
current_device = _not_compiled("current_device")
set_device = _not_compiled("set_device")
get_device_name = _not_compiled("get_device_name")
get_device_properties = _not_compiled("get_device_properties")
get_device_capability = _not_compiled("get_device_capability")
