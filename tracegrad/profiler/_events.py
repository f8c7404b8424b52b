"""Profiler results: ``FunctionEvent`` (one timed range), ``FunctionEventAvg`` (events grouped
by name), ``EventList`` with ``key_averages``, ``table`` and ``export_chrome_trace``. Mirrors
``torch.autograd.profiler_util``: times in microseconds (floats), memory in bytes.

Op names are torch's ``aten::<op>`` (``aten::mm``, in place ``aten::add_``; ``_names.py`` maps the
op-table rows whose names differ from torch's). One op here is one event: torch's nested
decompositions (``aten::linear`` calling ``aten::t`` and ``aten::addmm``) show only where
tracegrad runs them as separate ops, and torch's helper ops (``aten::resolve_conj``,
``aten::empty_strided``) and factory ops (``aten::ones``: tensors made without an op) do not
appear."""
from __future__ import annotations

import gzip
import json
import os
import socket
import time
from collections import OrderedDict


def format_time(us: float) -> str:
    """``1.234ms`` style, as torch's tables."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def format_memory(nbytes: int) -> str:
    """``12.50 Kb`` style (powers of 1024), as torch's tables."""
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


class FunctionEvent:
    """One recorded range: ``name`` (``ProfilerStep#N`` ranges are all named ``ProfilerStep*``,
    as torch, so tables add them up; ``trace_name`` keeps the number), ``id``, ``thread``, ``time_range`` start/end (``cpu_time_total``,
    ``self_cpu_time_total`` in us), ``input_shapes`` (with ``record_shapes``), ``stack`` (with
    ``with_stack``, innermost frame first), memory the op's outputs took (``profile_memory``;
    allocations only: frees are not seen), and ``cpu_parent``'s id in ``parent_id``."""

    def __init__(self, id, name, thread=0, start_us=0, end_us=0, fwd_thread=None, input_shapes=None,
                 stack=None, scope=0, use_device=None, cpu_memory_usage=0, device_memory_usage=0,
                 is_async=False, is_remote=False, sequence_nr=-1, node_id=-1, *, category="cpu_op", **_ignored):
        # torch's constructor (FunctionEvent(id=, node_id=, name=, thread=, start_us=, end_us=),
        # as torch's own tests build events by hand); the recorder fills the times in ns later
        self.id, self.category, self.thread, self.trace_name = id, category, thread, name
        self.name = "ProfilerStep*" if name.startswith("ProfilerStep#") else name
        self.input_shapes, self.stack = input_shapes if input_shapes is not None else [], stack or []
        self.fwd_thread, self.scope, self.node_id, self.sequence_nr = fwd_thread, scope, node_id, sequence_nr
        self.is_async, self.is_remote = is_async, is_remote
        self.start_ns, self.end_ns = int(start_us * 1000), int(end_us * 1000)
        self.self_ns = self.end_ns - self.start_ns     # less its children's time once they are known
        self.cpu_memory_usage = self.self_cpu_memory_usage = cpu_memory_usage
        self.parent_id = None
        self.cpu_parent = None
        self.cpu_children = []
        self.count = 1

    def append_cpu_child(self, child):
        """Mirrors ``FunctionEvent.append_cpu_child``: ``child`` runs inside this range; its time
        is no longer this event's self time."""
        self.cpu_children.append(child)
        self.self_ns -= child.end_ns - child.start_ns

    def set_cpu_parent(self, parent):
        """Mirrors ``FunctionEvent.set_cpu_parent``."""
        self.cpu_parent, self.parent_id = parent, parent.id

    key = property(lambda self: self.name)
    cpu_time_total = property(lambda self: (self.end_ns - self.start_ns) / 1e3)
    self_cpu_time_total = property(lambda self: self.self_ns / 1e3)
    cpu_time = cpu_time_total
    device_time_total = self_device_time_total = device_time = property(lambda self: 0.0)
    device_memory_usage = self_device_memory_usage = property(lambda self: 0)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={format_time(self.cpu_time_total)} "
                f"thread={self.thread} input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg:
    """Events sharing a key (name, plus input shapes or stack when grouped so): ``count``, summed
    ``cpu_time_total``/``self_cpu_time_total``, the mean ``cpu_time``, summed memory."""

    def __init__(self, key=None, input_shapes=None, stack=None):
        # torch's FunctionEventAvg() takes no arguments: the first event added names it
        self.key, self.input_shapes, self.stack = key, input_shapes, stack
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0

    def add(self, ev):
        if self.key is None:
            self.key, self.input_shapes, self.stack = ev.key, ev.input_shapes, ev.stack
        self.count += ev.count
        self.cpu_time_total += ev.cpu_time_total
        self.self_cpu_time_total += ev.self_cpu_time_total
        self.cpu_memory_usage += ev.cpu_memory_usage
        self.self_cpu_memory_usage += ev.self_cpu_memory_usage
        return self

    cpu_time = property(lambda self: self.cpu_time_total / max(self.count, 1))
    device_time_total = self_device_time_total = device_time = property(lambda self: 0.0)
    device_memory_usage = self_device_memory_usage = property(lambda self: 0)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={format_time(self.self_cpu_time_total)} "
                f"cpu_time={format_time(self.cpu_time)} input_shapes={self.input_shapes}>")


_SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "device_time", "device_time_total",
              "self_device_time_total", "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage",
              "self_device_memory_usage", "count")


class EventList(list):
    """A list of ``FunctionEvent``s (or ``FunctionEventAvg``s), with torch's summaries."""

    def __init__(self, events=(), profile_memory=False, record_shapes=False, with_stack=False):
        super().__init__(events)
        self._profile_memory, self._record_shapes, self._with_stack = profile_memory, record_shapes, with_stack
        self._by_shape = False     # rows are key_averages(group_by_input_shape=True)'s

    def _populate_cpu_children(self):
        """Mirrors ``EventList._populate_cpu_children``: per thread, each synchronous event
        becomes the child of the innermost earlier event whose range holds it (``cpu_parent``,
        ``cpu_children``; the parent's self time loses the child's)."""
        by_thread: dict = {}
        for ev in self:
            if not getattr(ev, "is_async", False) and isinstance(ev, FunctionEvent):
                by_thread.setdefault(ev.thread, []).append(ev)
        for evs in by_thread.values():
            evs.sort(key=lambda e: (e.start_ns, -e.end_ns))
            open_: list = []
            for ev in evs:
                while open_ and not (open_[-1].start_ns <= ev.start_ns and ev.end_ns <= open_[-1].end_ns):
                    open_.pop()
                if open_ and ev.cpu_parent is None:
                    open_[-1].append_cpu_child(ev)
                    ev.set_cpu_parent(open_[-1])
                open_.append(ev)

    @property
    def self_cpu_time_total(self) -> float:
        """Sum of every event's self time, in us."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """Mirrors ``EventList.key_averages``: one ``FunctionEventAvg`` per name (and per input
        shapes / top ``group_by_stack_n`` frames when asked), in first-seen order."""
        groups: OrderedDict = OrderedDict()
        for ev in self:
            shapes = ev.input_shapes if group_by_input_shape else None
            stack = ev.stack[:group_by_stack_n] if group_by_stack_n > 0 else None
            key = (ev.name, str(shapes), tuple(stack or ()))
            g = groups.get(key)
            if g is None:
                g = groups[key] = FunctionEventAvg(ev.name, shapes if shapes is not None else ev.input_shapes,
                                                   stack or [])
            g.add(ev)
        out = EventList(groups.values(), self._profile_memory, self._record_shapes, self._with_stack)
        out._by_shape = group_by_input_shape
        return out

    def total_average(self):
        """All events as one ``FunctionEventAvg`` keyed ``Total``."""
        total = FunctionEventAvg("Total", [], [])
        for ev in self:
            total.add(ev)
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """Mirrors ``EventList.table``: a text table, one row per entry (call it on
        ``key_averages()`` for one row per op), sorted descending by ``sort_by`` (an attribute:
        ``cpu_time_total``, ``self_cpu_time_total``, ``cpu_time``, ``count``,
        ``cpu_memory_usage``...; ``cuda_*`` names map to ``device_*``), at most ``row_limit``
        rows (negative: all). Columns: Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg,
        CPU Mem and Self CPU Mem (with ``profile_memory``), # of Calls, Input Shapes (when rows
        are grouped by shape), Source Location (when grouped by stack).
        Raises AttributeError for an unknown ``sort_by``."""
        rows = list(self)
        if top_level_events_only:
            rows = [e for e in rows if getattr(e, "parent_id", None) is None]
        if sort_by is not None:
            attr = sort_by.replace("cuda", "device").replace("gpu", "device")
            if attr not in _SORT_KEYS:
                raise AttributeError(f"table: cannot sort by {sort_by!r}; use one of {', '.join(_SORT_KEYS)}")
            rows.sort(key=lambda e: getattr(e, attr), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        total = self.self_cpu_time_total or 1.0
        pct = lambda v: f"{100.0 * v / total:.2f}%"  # noqa: E731
        cols = [("Self CPU %", lambda e: pct(e.self_cpu_time_total)),
                ("Self CPU", lambda e: format_time(e.self_cpu_time_total)),
                ("CPU total %", lambda e: pct(e.cpu_time_total)),
                ("CPU total", lambda e: format_time(e.cpu_time_total)),
                ("CPU time avg", lambda e: format_time(e.cpu_time_total / max(e.count, 1)))]
        if self._profile_memory:
            cols += [("CPU Mem", lambda e: format_memory(e.cpu_memory_usage)),
                     ("Self CPU Mem", lambda e: format_memory(e.self_cpu_memory_usage))]
        cols.append(("# of Calls", lambda e: str(e.count)))
        if self._by_shape:
            cols.append(("Input Shapes", lambda e: str(e.input_shapes)[:max_shapes_column_width]))
        if any(isinstance(e, FunctionEventAvg) and e.stack for e in rows):
            cols.append(("Source Location", lambda e: (e.stack[0] if e.stack else "")[:max_src_column_width]))
        names = [e.key[:max_name_column_width] for e in rows]
        cells = [[f(e) for _, f in cols] for e in rows]
        widths = [max([len("Name"), *map(len, names)]) + 2]
        widths += [max([len(h), *(len(c[i]) for c in cells)]) + 2 for i, (h, _) in enumerate(cols)]
        line = "  ".join("-" * w for w in widths) + "  "
        fmt = lambda vals: "  ".join(v.rjust(w) for v, w in zip(vals, widths)) + "  "  # noqa: E731
        out = [header] if header else []
        out += [line, fmt(["Name", *(h for h, _ in cols)]), line]
        out += [fmt([n, *c]) for n, c in zip(names, cells)]
        out += [line, f"Self CPU time total: {format_time(self.self_cpu_time_total)}", ""]
        return "\n".join(out)

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path):
        """Writes the events as Chrome trace JSON (``chrome://tracing``, Perfetto, TensorBoard's
        profile plugin): one complete ("X") event per range, ts/dur in us, gzip-compressed when
        ``path`` ends with ``.gz``."""
        pid = os.getpid()
        wall_minus_perf = time.time_ns() - time.perf_counter_ns()   # events hold perf_counter_ns times
        base = min((e.start_ns for e in self), default=0)
        events = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}}]
        events += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": t, "args": {"name": f"thread {t} (python)"}}
                   for t in sorted({e.thread for e in self})]
        for e in self:
            args = {"External id": e.id}
            if self._record_shapes:
                args["Input Dims"] = e.input_shapes
            if e.stack:
                args["Python stack"] = e.stack
            if self._profile_memory:
                args["Self CPU Mem"] = e.self_cpu_memory_usage
            events.append({"ph": "X", "cat": e.category, "name": e.trace_name, "pid": pid, "tid": e.thread,
                           "ts": (e.start_ns - base) / 1e3, "dur": (e.end_ns - e.start_ns) / 1e3, "args": args})
        doc = {"schemaVersion": 1, "traceName": str(path), "host_name": socket.gethostname(),
               "displayTimeUnit": "ms", "baseTimeNanoseconds": base + wall_minus_perf, "record_shapes": int(self._record_shapes),
               "profile_memory": int(self._profile_memory), "traceEvents": events}
        data = json.dumps(doc).encode()
        with (gzip.open if str(path).endswith(".gz") else open)(path, "wb") as f:
            f.write(data)

    _STACK_METRICS = ("self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                      "self_privateuse1_time_total")

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Mirrors ``EventList.export_stacks(path, metric)``: one line per event that has a stack
        and a positive ``metric`` (us, truncated), in the collapsed-stack format flame-graph tools
        read: the frames outermost first, joined by ``;`` (spaces, ``;``, tabs and newlines in a
        frame become ``_``), a space, the value. The device metrics are 0 here (no device
        timeline). ValueError for another metric."""
        if metric not in self._STACK_METRICS:
            raise ValueError(f"metric should be one of: {list(self._STACK_METRICS)}")
        clean = str.maketrans(" ;\t\n", "____")
        with open(path, "w") as f:
            for e in self:
                value = int(getattr(e, metric, 0) if metric == "self_cpu_time_total" else 0)
                if e.stack and value > 0:
                    f.write(";".join(fr.translate(clean) for fr in reversed(e.stack)) + f" {value}\n")
