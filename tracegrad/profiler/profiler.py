"""``torch.profiler``'s ``profile``, ``schedule``, ``ProfilerAction``, ``ProfilerActivity`` and
``tensorboard_trace_handler``, on tracegrad's recorder (``_recorder.py``: what is timed and how).

Differs from torch: there is no device-side (kernel) timeline: ``ProfilerActivity.CUDA`` is
accepted, and an op's CPU time includes its device work because the recorder waits for each
result (NOTE [profiler blocking]); device-time columns are absent. As torch, asking for it on a
machine without a GPU warns "CUDA is not available, disabling CUDA profiling" each time a trace
is prepared. ``with_flops``, ``with_modules``, ``experimental_config``,
``execution_trace_observer`` and ``acc_events`` are accepted and ignored (a second trace of one
profiler warns once per process, as torch, that events are cleared at each cycle unless
``acc_events=True``)."""
from __future__ import annotations

import enum
import os
import socket
import time

from ._events import EventList
from ._recorder import Recorder, record_function
from .._ops.warn import warn as _warn
from .._ops.warn import warn_once as _warn_once

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "schedule", "supported_activities",
           "tensorboard_trace_handler"]


class ProfilerActivity(enum.Enum):
    """Mirrors ``torch.profiler.ProfilerActivity``: the event groups a profile may collect."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """Mirrors ``torch.profiler.ProfilerAction``: what the profiler does at a step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    """Mirrors ``torch.profiler.supported_activities``: CPU, and CUDA when JAX has a GPU."""
    from .. import cuda
    return {ProfilerActivity.CPU} | ({ProfilerActivity.CUDA} if cuda.is_available() else set())


def _warn_without_device(cuda_asked):
    """torch's warning where a profiler asks for the CUDA activity on a machine without a GPU
    (it profiles the CPU only, as tracegrad always does)."""
    from .. import cuda
    if cuda_asked and not cuda.is_available():
        _warn("CUDA is not available, disabling CUDA profiling")


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """Mirrors ``torch.profiler.schedule``: a function from step number to ``ProfilerAction``.
    After ``skip_first`` steps, cycles of ``wait`` idle, ``warmup`` warm-up and ``active``
    recorded steps (the last one RECORD_AND_SAVE, which hands the trace to ``on_trace_ready``),
    ``repeat`` times (0: forever). ``skip_first_wait`` nonzero skips the first cycle's wait.
    Raises AssertionError, as torch, for a negative count or ``active`` < 1 (and for a negative
    step); warns when ``warmup`` is 0."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
                             f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
                             f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        _warn("Profiler won't be using warmup, this can skew profiler results")
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step = step - skip_first + (wait if skip_first_wait else 0)
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return action


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False, use_python_export=False):
    """Mirrors ``torch.profiler.tensorboard_trace_handler``: an ``on_trace_ready`` callback that
    writes each trace to ``dir_name/<worker_name>.<time_ns>.pt.trace.json[.gz]`` (``worker_name``
    defaults to ``<hostname>_<pid>``), the layout TensorBoard's profile plugin reads.
    Raises RuntimeError when ``dir_name`` cannot be created."""

    def handler(prof):
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as e:
            raise RuntimeError("Can't create directory: " + str(dir_name)) from e
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else ""))
        prof.export_chrome_trace(path)
    return handler


class _Profile:
    """What torch.profiler.profile and torch.autograd.profiler.profile share: a recorder per
    trace, and the results of the last finished one."""

    # what reading results of a profiler never started raises: torch.profiler.profile asserts
    # (AssertionError "Profiler must be initialized before ..."); the older autograd profiler
    # keeps tracegrad's RuntimeError
    _NOT_STARTED = None

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False):
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self._recorder = None
        self._events = None

    def _results(self, what):
        if self._events is None and self._recorder is None and self._NOT_STARTED is not None:
            raise self._NOT_STARTED(f"Profiler must be initialized before {what}: run the code inside "
                                    "`with profile(...) as prof:` (or call prof.start()/prof.stop()) first")
        return _Profile.events(self)

    def prepare_trace(self):
        self._recorder = Recorder(self.record_shapes, self.profile_memory, self.with_stack)

    def start_trace(self):
        if self._recorder is None:
            self.prepare_trace()
        self._recorder.start()

    def stop_trace(self):
        if self._recorder is not None:
            self._recorder.stop()
            self._events = EventList(sorted(self._recorder.events, key=lambda e: e.start_ns), self.profile_memory,
                                     self.record_shapes, self.with_stack)
            self._recorder = None

    def events(self) -> EventList:
        """Every recorded ``FunctionEvent`` of the last finished trace, by start time.
        Raises RuntimeError when no trace has finished yet."""
        if self._events is None:
            raise RuntimeError("Profiler: no trace has finished yet; read results after the profiled block "
                               "(or in on_trace_ready)")
        return self._events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """The last trace's events grouped by name (see ``EventList.key_averages``)."""
        return self._results("getting key averages").key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path):
        """Writes the last trace as Chrome trace JSON (see ``EventList.export_chrome_trace``)."""
        return self._results("exporting chrome trace").export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Mirrors ``export_stacks(path, metric="self_cpu_time_total")``: writes the last trace's
        stacks in the collapsed format flame-graph tools read (see ``EventList.export_stacks``).
        AssertionError, as torch, when the profile was not made ``with_stack=True``."""
        events = self._results("exporting stacks")
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True: profile with "
                                 "profile(with_stack=True, ...)")
        return events.export_stacks(path, metric)


_TRANSITIONS = {   # (previous action, next action or None at stop) -> what to do, torch's table
    ("NONE", "WARMUP"): ("prepare",), ("NONE", "RECORD"): ("prepare", "start"),
    ("NONE", "RECORD_AND_SAVE"): ("prepare", "start"),
    ("WARMUP", "NONE"): ("warn", "start", "stop"), ("WARMUP", "RECORD"): ("start",),
    ("WARMUP", "RECORD_AND_SAVE"): ("start",),
    ("RECORD", "NONE"): ("warn", "stop"), ("RECORD", "WARMUP"): ("warn", "stop"),
    ("RECORD_AND_SAVE", "NONE"): ("stop", "ready"), ("RECORD_AND_SAVE", "WARMUP"): ("stop", "ready", "prepare"),
    ("RECORD_AND_SAVE", "RECORD"): ("stop", "ready", "prepare", "start"),
    ("RECORD_AND_SAVE", "RECORD_AND_SAVE"): ("stop", "ready", "prepare", "start"),
    ("WARMUP", None): ("start", "stop"), ("RECORD", None): ("stop", "ready"),
    ("RECORD_AND_SAVE", None): ("stop", "ready"),
}


class profile(_Profile):
    """Mirrors ``torch.profiler.profile(activities=None, schedule=None, on_trace_ready=None,
    record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
    with_modules=False, ...)``: a context manager (or ``start()``/``stop()``) that records every
    op tracegrad runs, ``record_function`` ranges, backward nodes
    (``autograd::engine::evaluate_function: MulBackward0``) and compiled calls.

    With a ``schedule``, ``step()`` advances it: steps are recorded as ``ProfilerStep#N``
    ranges, and ``on_trace_ready(prof)`` runs after each RECORD_AND_SAVE step (and at exit for
    an unfinished active cycle); without one, everything between enter and exit is one trace,
    handed to ``on_trace_ready`` at exit. Results: ``key_averages().table(...)``, ``events()``,
    ``export_chrome_trace(path)``. ``record_shapes`` keeps input shapes, ``profile_memory`` the
    bytes each op's outputs take, ``with_stack`` the Python stack of each op's caller.
    Raises AssertionError, as torch, when ``activities`` holds no ProfilerActivity, and when
    results are read (or ``stop()`` called, or ``step()`` reaches a recording step) before it
    ever started; see the module for
    what differs from torch."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 use_cuda=None, custom_trace_id_callback=None):
        super().__init__(record_shapes, profile_memory, with_stack)
        self.activities = set(activities) if activities is not None else supported_activities()
        self._check_activities()
        self.schedule = schedule if schedule is not None else (lambda step: ProfilerAction.RECORD)
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(0)     # (as torch: step() before start() follows it)
        self._step_range = None
        self.acc_events = acc_events
        self._prepared = False

    _NOT_STARTED = AssertionError

    def _check_activities(self):
        # as torch's: none valid is its AssertionError, another kind of entry beside valid ones
        # its TypeError
        if not any(isinstance(a, ProfilerActivity) for a in self.activities):
            raise AssertionError("No valid profiler activities found; pass activities=[ProfilerActivity.CPU]")
        for a in self.activities:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"Expected ProfilerActivity or dict, got {type(a)} ({a!r}) in activities")

    def events(self) -> EventList:
        """Every recorded ``FunctionEvent`` of the last finished trace, by start time.
        AssertionError, as torch, before the profiler ever ran; RuntimeError while it runs."""
        return self._results("accessing events")

    def prepare_trace(self):
        # torch's warnings as it prepares a trace: each trace after the first replaces the last
        # one's events unless acc_events (once per process, whatever set_warn_always says), and
        # the CUDA activity is dropped where no GPU is (by each new autograd profiler torch
        # makes: every trace's, the first one only under acc_events)
        if self._prepared and not self.acc_events:
            _warn_once("Warning: Profiler clears events at the end of each cycle. Only events from the current "
                       "cycle will be reported. To keep events across cycles, set acc_events=True.",
                       follows_warn_always=False)
        if not (self._prepared and self.acc_events):
            _warn_without_device(ProfilerActivity.CUDA in self.activities)
        self._prepared = True
        super().prepare_trace()

    def start_trace(self):
        # (the older autograd profiler prepares on start; this one's schedule prepares first)
        if self._recorder is None:
            raise AssertionError("Profiler must be initialized before starting trace: start it (prof.start() or "
                                 "`with profile(...)`) before step()")
        super().start_trace()

    def stop_trace(self):
        if self._recorder is None:
            raise AssertionError("Profiler must be initialized before stopping trace: start it (prof.start() or "
                                 "`with profile(...)`) before stop()")
        super().stop_trace()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def start(self):
        """Starts profiling at step 0 (what ``with`` does on entry)."""
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._transit("NONE", self.current_action.name)
        self._open_step()

    def stop(self):
        """Finishes the current step and trace (what ``with`` does on exit)."""
        self._close_step()
        self._transit(self.current_action.name, None)

    def step(self):
        """Signals that the next step begins: advances the schedule (maybe finishing a trace and
        calling ``on_trace_ready``)."""
        self._close_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev.name, self.current_action.name)
        self._open_step()

    def _open_step(self):
        if self.record_steps:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _close_step(self):
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    def _transit(self, prev, nxt):
        for what in _TRANSITIONS.get((prev, nxt), ()):
            if what == "warn":
                _warn(f"Incorrect schedule: {prev} followed by {nxt}")
            elif what == "prepare":
                self.prepare_trace()
            elif what == "start":
                self.start_trace()
            elif what == "stop":
                self.stop_trace()
            elif self.on_trace_ready is not None:
                self.on_trace_ready(self)
