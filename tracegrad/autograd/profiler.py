"""``tracegrad.autograd.profiler``: mirrors ``torch.autograd.profiler`` -- the older ``profile``
context manager, ``record_function``, ``EventList``/``FunctionEvent``. It shares
``tracegrad.profiler``'s recorder (and sits in the library layer with it, like
``autograd.functional``)."""
from __future__ import annotations

from ..profiler._events import EventList, FunctionEvent, FunctionEventAvg
from ..profiler._recorder import record_function
from .._ops.warn import warn as _warn
from ..profiler.profiler import _Profile, _warn_without_device

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]


class profile(_Profile):
    """Mirrors ``torch.autograd.profiler.profile(enabled=True, *, use_cuda=False,
    record_shapes=False, with_flops=False, profile_memory=False, with_stack=False, ...)``: records
    every op, ``record_function`` range and backward node run inside the ``with`` block.
    Results after exit: ``function_events``, ``key_averages()``, ``table(...)``,
    ``export_chrome_trace(path)``, ``self_cpu_time_total`` (us), ``total_average()``.
    ``enabled=False`` records nothing. Raises RuntimeError when entered twice, or when results
    are read before the block ends. ``use_cuda``/``use_device`` add no device timeline (see
    ``tracegrad.profiler``)."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        super().__init__(record_shapes, profile_memory, with_stack)
        self.enabled = enabled
        self.entered = False
        if not enabled:
            return
        # torch's warnings as the profiler is made: use_cuda is deprecated for use_device, and
        # the CUDA device is dropped where no GPU is
        if use_cuda:
            _warn("The attribute `use_cuda` will be deprecated soon, please use ``use_device = 'cuda'`` instead.",
                  FutureWarning)
            use_device = "cuda"
        _warn_without_device(use_device == "cuda")

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self.start_trace()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if self.enabled:
            self.stop_trace()
        return False

    @property
    def function_events(self) -> EventList:
        return self.events()

    @property
    def self_cpu_time_total(self) -> float:
        return self.events().self_cpu_time_total

    def total_average(self):
        return self.events().total_average()

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False):
        """The events (one row each, not grouped) as ``EventList.table``."""
        return self.events().table(sort_by, row_limit, max_src_column_width, max_name_column_width,
                                   max_shapes_column_width, header, top_level_events_only)

    def __str__(self):
        return self.key_averages().table() if self._events is not None else "<unfinished tracegrad.autograd.profiler.profile>"
