"""``tracegrad.accelerator``: mirrors ``torch.accelerator`` -- the current accelerator is CUDA
when JAX sees a GPU, else there is none (the CPU is not an accelerator, as in torch)."""
from __future__ import annotations

from ._ops.warn import warn as _warn
from ._tensor.device import cuda_devices, device
from . import cuda as _cuda

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "current_device_idx",
           "set_device_index", "set_device_idx", "device_index", "synchronize"]


def is_available() -> bool:
    """Mirrors ``torch.accelerator.is_available``: True when JAX has a GPU."""
    return bool(cuda_devices())


def current_accelerator(check_available: bool = False):
    """Mirrors ``torch.accelerator.current_accelerator``: ``device('cuda')`` or None."""
    return device("cuda") if cuda_devices() else None


def device_count() -> int:
    """Mirrors ``torch.accelerator.device_count``: the number of JAX GPUs."""
    return len(cuda_devices())


def _need_accelerator() -> None:
    # torch's message for every call that needs the current accelerator when there is none
    if not cuda_devices():
        raise RuntimeError("Cannot access accelerator device when none is available. (tracegrad found no GPU on "
                           "this machine; check torch.accelerator.is_available() first)")


def _index(idx) -> int:
    if isinstance(idx, device):
        if idx.type != "cuda":
            raise RuntimeError(f"Accelerator expected, got the device {idx}")
        return idx.index or 0
    if isinstance(idx, str):
        return _index(device(idx))
    return idx


def current_device_index() -> int:
    """Mirrors ``torch.accelerator.current_device_index``: 0 with a GPU; RuntimeError without
    one, as torch."""
    _need_accelerator()
    return 0


def current_device_idx() -> int:
    """Deprecated alias of ``current_device_index`` (torch's FutureWarning)."""
    _warn("Use `current_device_index` instead.", FutureWarning)
    return current_device_index()


def set_device_index(device) -> None:
    """Mirrors ``torch.accelerator.set_device_index``: -1 (or None) does nothing; any other index
    needs an accelerator (RuntimeError without one, as torch) and is checked as
    ``tracegrad.cuda.set_device``."""
    i = _index(device)
    if i is None or i == -1:
        return
    _need_accelerator()
    _cuda.set_device(i)


def set_device_idx(device) -> None:
    """Deprecated alias of ``set_device_index`` (torch's FutureWarning)."""
    _warn("Use `set_device_index` instead.", FutureWarning)
    set_device_index(device)


class device_index:
    """Mirrors ``torch.accelerator.device_index(idx)``: a context manager that makes ``idx`` the
    current accelerator index (None: does nothing). RuntimeError on entry without an accelerator."""

    def __init__(self, device, /):
        self.idx = device

    def __enter__(self):
        set_device_index(self.idx)
        return self

    def __exit__(self, *exc):
        return False


def synchronize(device=None) -> None:
    """Mirrors ``torch.accelerator.synchronize``: waits for queued JAX work (tracegrad runs
    eagerly without async dispatch, so there is none to wait for). RuntimeError without an
    accelerator or for a device that is not one, as torch."""
    if device is not None:
        _index(device)
    _need_accelerator()

