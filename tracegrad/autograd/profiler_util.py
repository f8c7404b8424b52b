"""``tracegrad.autograd.profiler_util``: mirrors ``torch.autograd.profiler_util`` -- the profiler's
result classes (``EventList``, ``FunctionEvent``, ``FunctionEventAvg``) and its time/memory
formatters. Re-exports of ``tracegrad.profiler._events`` (library layer, like
``autograd.profiler``)."""
from __future__ import annotations

from ..profiler._events import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401
from ..profiler._events import format_memory as _format_memory  # noqa: F401
from ..profiler._events import format_time as _format_time  # noqa: F401

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg"]
