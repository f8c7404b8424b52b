"""``TaskSpec`` (what a Timer measures) and ``Measurement`` (its times and statistics): mirror
``torch.utils.benchmark.utils.common``. Times are seconds per run of the statement."""
from __future__ import annotations

import collections
import dataclasses
import math
import textwrap

import numpy as np

__all__ = ["Measurement", "TaskSpec", "select_unit", "trim_sigfig"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9     # 25 ns: no finer precision is claimed
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """The statement, setup and labels of a measurement (everything but its globals)."""
    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """``label: sub_label``, else the one-line statement, else the indented statement."""
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if not self.setup or self.setup == "pass":
            return ""
        return f"setup:\n{textwrap.indent(self.setup, '  ')}" if "\n" in self.setup else f"setup: {self.setup}"

    def summarize(self) -> str:
        parts = [p for p in (self.title, self.description or "", self.setup_str()) if p]
        return "\n".join(p + "\n" if "\n" in p else p for p in parts)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


def select_unit(t: float):
    """(unit, seconds per unit) that puts ``t`` seconds at 1-999 units: ns, us, ms or s."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def unit_to_english(u: str) -> str:
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures (3.14159, 2 -> 3.1)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    scale = 10.0 ** (math.ceil(math.log10(abs(x))) - n)
    return float(np.round(x / scale) * scale)


@dataclasses.dataclass(repr=False)
class Measurement:
    """Mirrors ``torch.utils.benchmark.Measurement(number_per_run, raw_times, task_spec,
    metadata=None)``: ``raw_times`` are seconds per block of ``number_per_run`` runs; ``times``
    are per run. ``median``, ``mean``, ``iqr`` (seconds), ``significant_figures``,
    ``has_warnings`` (IQR over 10% of the median), and TaskSpec's fields (``label``,
    ``stmt``, ``num_threads``...) as attributes. The repr is torch's report."""
    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None

    def __getattr__(self, name):
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute {name!r}")

    @property
    def times(self) -> list:
        return [t / self.number_per_run for t in self.raw_times]

    def _sorted(self):
        return np.sort(np.asarray(self.times, dtype=np.float64))

    median = property(lambda self: float(np.quantile(self._sorted(), 0.5)))
    mean = property(lambda self: float(np.mean(self._sorted())))
    _p25 = property(lambda self: float(np.quantile(self._sorted(), 0.25)))
    _p75 = property(lambda self: float(np.quantile(self._sorted(), 0.75)))
    iqr = property(lambda self: self._p75 - self._p25)

    @property
    def significant_figures(self) -> int:
        """Digits the middle half of the times supports (1 to 4): a rough 90% confidence
        interval of the median, used by ``Compare.trim_significant_figures``."""
        s = self._sorted()
        middle = s[len(s) // 4: math.ceil(3 * len(s) / 4)]
        ci = max(1.645 * float(np.std(middle)) / math.sqrt(len(middle)), _MIN_CONFIDENCE_INTERVAL)
        return min(max(math.floor(math.log10(self.median / ci)), 1), _MAX_SIGNIFICANT_FIGURES)

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        return self.iqr / self.median < threshold

    @property
    def _warnings(self):
        if not self.raw_times or self.meets_confidence(_IQR_WARN_THRESHOLD):
            return ()
        why = ("This suggests significant environmental influence." if not self.meets_confidence(
            _IQR_GROSS_WARN_THRESHOLD) else "This could indicate system fluctuation.")
        return (f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% of the median "
                f"measurement.\n           {why}",)

    has_warnings = property(lambda self: bool(self._warnings))
    title = property(lambda self: self.task_spec.title)
    as_row_name = property(lambda self: self.sub_label or self.stmt or "[Unknown]")

    def __repr__(self):
        n = len(self.raw_times)
        unit, scale = select_unit(self.median)
        lines = [object.__repr__(self), self.task_spec.summarize(), f"  {'Median: ' if n > 1 else ''}{self.median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} to {self._p75 / scale:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {self.num_threads} thread{'s' if self.num_threads > 1 else ''}")
        lines += self._warnings
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements):
        """Replicates of one TaskSpec as one Measurement of single runs (metadata dropped)."""
        groups = collections.defaultdict(list)
        for m in measurements:
            groups[m.task_spec].extend(m.times)
        return [Measurement(1, times, spec) for spec, times in groups.items()]
