"""``tracegrad.cuda``: mirrors ``torch.cuda`` on JAX's GPU devices -- availability and counts,
seeding (one PRNG key stream serves every device, so ``manual_seed`` is a no-op), and
``tracegrad.cuda.amp`` (``autocast``, ``GradScaler``)."""
from __future__ import annotations

from .._device import cuda_devices
from . import amp  # noqa: F401

__all__ = ["is_available", "device_count", "current_device", "get_device_name", "is_bf16_supported",
           "manual_seed", "manual_seed_all", "synchronize", "empty_cache", "amp"]


def is_available() -> bool:
    """Mirrors ``torch.cuda.is_available``: True when JAX has a GPU."""
    return bool(cuda_devices())


def device_count() -> int:
    """Mirrors ``torch.cuda.device_count``: the number of JAX GPUs."""
    return len(cuda_devices())


def _need_gpu():
    if not cuda_devices():
        raise AssertionError("Torch not compiled with CUDA enabled (tracegrad: JAX found no GPU on this machine)")


def current_device() -> int:
    """Mirrors ``torch.cuda.current_device``; AssertionError without a GPU, as torch."""
    _need_gpu()
    return 0


def get_device_name(device=None) -> str:
    """Mirrors ``torch.cuda.get_device_name``: JAX's device kind (e.g. 'NVIDIA H100 80GB HBM3')."""
    _need_gpu()
    from .._device import device as _device
    i = 0 if device is None else (device if isinstance(device, int) else (_device(device).index or 0))
    return cuda_devices()[i].device_kind


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Mirrors ``torch.cuda.is_bf16_supported``: XLA supports bfloat16 on every GPU it runs."""
    return bool(cuda_devices())


def manual_seed(seed) -> None:
    """No-op: tracegrad's one generator serves all devices (``tracegrad.manual_seed`` seeds it)."""


manual_seed_all = manual_seed


def synchronize(device=None) -> None:
    """Mirrors ``torch.cuda.synchronize``: nothing is queued (eager dispatch is synchronous)."""


def empty_cache() -> None:
    """Mirrors ``torch.cuda.empty_cache``: JAX's allocator owns GPU memory; nothing to release."""
