"""``tracegrad.profiler``: mirrors ``torch.profiler`` -- ``profile``, ``schedule``,
``ProfilerActivity``, ``ProfilerAction``, ``record_function``, ``tensorboard_trace_handler``.
How ops are timed and named: ``_recorder.py`` and ``_events.py``."""
from ._events import EventList, FunctionEvent, FunctionEventAvg
from ._recorder import record_function
from .profiler import (ProfilerAction, ProfilerActivity, profile, schedule, supported_activities,
                       tensorboard_trace_handler)

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction", "ProfilerActivity", "profile",
           "record_function", "schedule", "supported_activities", "tensorboard_trace_handler"]
