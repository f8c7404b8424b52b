"""``tracegrad.cpu``: mirrors ``torch.cpu`` -- the CPU device module device-agnostic code calls
through ``getattr(torch, device_type)`` (``is_available``, ``device_count``, ``synchronize``,
``current_device``, ``amp.autocast``)."""
from __future__ import annotations

import contextlib

from . import amp  # noqa: F401

__all__ = ["is_available", "device_count", "current_device", "synchronize", "set_device", "Stream", "stream",
           "current_stream", "amp"]


def is_available() -> bool:
    """Mirrors ``torch.cpu.is_available``: True."""
    return True


def device_count() -> int:
    """Mirrors ``torch.cpu.device_count``: 1."""
    return 1


def current_device() -> str:
    """Mirrors ``torch.cpu.current_device``: ``'cpu'``."""
    return "cpu"


def set_device(device) -> None:
    """Mirrors ``torch.cpu.set_device``: a no-op (one CPU device)."""


def synchronize(device=None) -> None:
    """Mirrors ``torch.cpu.synchronize``: returns at once (eager CPU results are ready when read)."""


class Stream:
    """Mirrors ``torch.cpu.Stream``: CPU streams do nothing."""

    def __init__(self, priority: int = -1):
        self.priority = priority

    def wait_stream(self, stream) -> None:
        pass

    def synchronize(self) -> None:
        pass


_DEFAULT_STREAM = Stream()


def current_stream(device=None) -> Stream:
    """Mirrors ``torch.cpu.current_stream``."""
    return _DEFAULT_STREAM


@contextlib.contextmanager
def stream(stream):
    """Mirrors ``torch.cpu.stream``: a context manager that changes nothing."""
    yield
