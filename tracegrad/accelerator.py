"""``tracegrad.accelerator``: mirrors ``torch.accelerator`` -- the current accelerator is CUDA
when JAX sees a GPU, else there is none (the CPU is not an accelerator, as in torch)."""
from __future__ import annotations

from ._tensor.device import cuda_devices, device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "synchronize"]


def is_available() -> bool:
    """Mirrors ``torch.accelerator.is_available``: True when JAX has a GPU."""
    return bool(cuda_devices())


def current_accelerator(check_available: bool = False):
    """Mirrors ``torch.accelerator.current_accelerator``: ``device('cuda')`` or None."""
    return device("cuda") if cuda_devices() else None


def device_count() -> int:
    """Mirrors ``torch.accelerator.device_count``: the number of JAX GPUs."""
    return len(cuda_devices())


def current_device_index() -> int:
    """Mirrors ``torch.accelerator.current_device_index``: 0 with a GPU, -1 without."""
    return 0 if cuda_devices() else -1


def synchronize(device=None) -> None:
    """Mirrors ``torch.accelerator.synchronize``: waits for queued JAX work (tracegrad runs
    eagerly without async dispatch, so there is none to wait for)."""
