"""``tracegrad.cuda``: mirrors ``torch.cuda`` on JAX's GPU devices -- availability and counts,
seeding (one PRNG key stream serves every device, so ``manual_seed`` is a no-op), and
``tracegrad.cuda.amp`` (``autocast``, ``GradScaler``)."""
from __future__ import annotations

from .._tensor.device import cuda_devices, device as _device, need_gpu as _need_gpu
from . import amp  # noqa: F401
from .._api.torch_extras import OutOfMemoryError  # noqa: F401  (torch.cuda.OutOfMemoryError)
from .._api import streams as _streams
from .._api.creation import CUDA_LEGACY_TYPES as _CUDA_LEGACY_TYPES

# torch.cuda.FloatTensor, torch.cuda.LongTensor, ...: the legacy typed constructors of GPU tensors
# (``_api/creation.py``'s ``CudaLegacyTensorType``; calling one without a GPU is a TypeError)
(FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, LongTensor, IntTensor, ShortTensor, CharTensor,
 ByteTensor, BoolTensor) = (_CUDA_LEGACY_TYPES[k] for k in (
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
    "CharTensor", "ByteTensor", "BoolTensor"))

__all__ = ["is_available", "device_count", "current_device", "get_device_name", "is_bf16_supported",
           "is_tf32_supported",
           "manual_seed", "manual_seed_all", "synchronize", "empty_cache", "amp", "set_device", "is_initialized",
           "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
           "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
           "CharTensor", "ByteTensor", "BoolTensor"]


def is_available() -> bool:
    """Mirrors ``torch.cuda.is_available``: True when JAX has a GPU."""
    return bool(cuda_devices())


def device_count() -> int:
    """Mirrors ``torch.cuda.device_count``: the number of JAX GPUs."""
    return len(cuda_devices())


def current_device() -> int:
    """Mirrors ``torch.cuda.current_device``; AssertionError without a GPU, as torch."""
    _need_gpu()
    return 0


def get_device_name(device=None) -> str:
    """Mirrors ``torch.cuda.get_device_name``: JAX's device kind (e.g. 'NVIDIA H100 80GB HBM3')."""
    _need_gpu()
    i = 0 if device is None else (device if isinstance(device, int) else (_device(device).index or 0))
    return cuda_devices()[i].device_kind


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Mirrors ``torch.cuda.is_bf16_supported``: XLA supports bfloat16 on every GPU it runs."""
    return bool(cuda_devices())


def is_tf32_supported() -> bool:
    """Mirrors ``torch.cuda.is_tf32_supported``: True when a GPU computes TF32 natively
    (compute capability 8.0+, the GPUs with native bfloat16); False without a GPU, as torch."""
    for d in cuda_devices():
        try:
            if float(getattr(d, "compute_capability", "0")) >= 8.0:
                return True
        except (TypeError, ValueError):
            return True  # capability not reported: every GPU XLA targets today has TF32
    return False


def manual_seed(seed) -> None:
    """No-op: tracegrad's one generator serves all devices (``tracegrad.manual_seed`` seeds it).
    The seed must convert with ``int()`` (ValueError / TypeError otherwise, as torch)."""
    int(seed)


manual_seed_all = manual_seed


def synchronize(device=None) -> None:
    """Mirrors ``torch.cuda.synchronize``: nothing is queued (eager dispatch is synchronous);
    AssertionError without a GPU, as torch's CPU build."""
    _need_gpu()


def empty_cache() -> None:
    """Mirrors ``torch.cuda.empty_cache``: JAX's allocator owns GPU memory; nothing to release."""


def set_device(device) -> None:
    """Mirrors ``torch.cuda.set_device``: accepted for device 0 (tracegrad places arrays with
    ``.to(device)`` / ``set_default_device``); ValueError for an ordinal JAX does not have."""
    _need_gpu()
    i = device if isinstance(device, int) else (_device(device).index or 0)
    if not 0 <= i < len(cuda_devices()):
        raise ValueError(f"set_device: invalid device ordinal {i}; {len(cuda_devices())} GPU(s) found")


def is_initialized() -> bool:
    """Mirrors ``torch.cuda.is_initialized``: JAX starts its GPU backend on first use."""
    return bool(cuda_devices())


def _memory_stat(key, device=None) -> int:
    gpus = cuda_devices()
    if not gpus:
        return 0
    i = 0 if device is None else (device if isinstance(device, int) else (getattr(device, "index", None) or 0))
    stats = gpus[i].memory_stats() or {}
    return int(stats.get(key, 0))


def memory_allocated(device=None) -> int:
    """Mirrors ``torch.cuda.memory_allocated``: bytes in use by JAX's GPU allocator (0 without a GPU)."""
    return _memory_stat("bytes_in_use", device)


def max_memory_allocated(device=None) -> int:
    """Mirrors ``torch.cuda.max_memory_allocated``: JAX's peak bytes in use (0 without a GPU)."""
    return _memory_stat("peak_bytes_in_use", device)


def reset_peak_memory_stats(device=None) -> None:
    """Accepted: JAX's allocator keeps its peak since start-up (no reset)."""


class Stream(_streams.Stream):
    """Mirrors ``torch.cuda.Stream(device=None, priority=0)``: ``tracegrad.Stream`` on a CUDA
    device (JAX orders GPU work by data dependence, so it changes nothing); RuntimeError without
    a GPU, as torch's CPU build."""

    def __init__(self, device=None, priority=0, **kwargs):
        if not cuda_devices():
            raise RuntimeError("torch.cuda.Stream requires CUDA support (tracegrad found no GPU on this machine)")
        super().__init__("cuda" if device is None else device, priority=priority, **kwargs)
