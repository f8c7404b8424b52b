"""``tracegrad.mps``: mirrors ``torch.mps`` on a machine without Apple's Metal backend (JAX has
none here): ``is_available()``/``device_count()`` answer False/0, seeding is a no-op as in
torch's build without MPS, and what needs the device raises torch's RuntimeError, so code that
probes for an Apple GPU takes its CPU branch."""
from __future__ import annotations

__all__ = ["is_available", "device_count", "synchronize", "empty_cache", "manual_seed", "seed",
           "get_rng_state", "set_rng_state", "current_allocated_memory", "driver_allocated_memory",
           "recommended_max_memory", "set_per_process_memory_fraction"]


def is_available() -> bool:
    """Mirrors ``torch.mps.is_available``: False (no Metal backend)."""
    return False


def device_count() -> int:
    """Mirrors ``torch.mps.device_count``: 0."""
    return 0


def manual_seed(seed) -> None:
    """Mirrors ``torch.mps.manual_seed``: without an MPS device, nothing to seed."""


def _no_backend(what):
    def f(*args, **kwargs):
        raise RuntimeError(f"Cannot execute {what}() without MPS backend.")
    f.__name__ = what
    f.__doc__ = f"Mirrors ``torch.mps``'s function of that name: RuntimeError (no MPS backend here)."
    return f


synchronize = _no_backend("deviceSynchronize")
empty_cache = _no_backend("emptyCache")
seed = get_rng_state = set_rng_state = _no_backend("getDefaultGenerator")
current_allocated_memory = _no_backend("getCurrentAllocatedMemory")
driver_allocated_memory = _no_backend("getDriverAllocatedMemory")
recommended_max_memory = _no_backend("getRecommendedMaxMemory")
set_per_process_memory_fraction = _no_backend("setMemoryFraction")
