"""``Compare``: mirrors ``torch.utils.benchmark.Compare`` -- measurements as text tables, one
per ``label``: a column per ``description``, a row per ``sub_label`` (or statement) in groups
by ``num_threads``, each cell the median in one unit for the table."""
from __future__ import annotations

import collections
import enum
import math

from .common import Measurement, select_unit, trim_sigfig, unit_to_english

__all__ = ["Colorize", "Compare"]

_BEST, _GOOD, _BAD, _VERY_BAD, _BOLD, _END = "\033[92m", "\033[34m", "\033[2m\033[91m", "\033[31m", "\033[1m", "\033[0m"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _unique(items):
    return list(dict.fromkeys(items))


def _color(cell, value, best):
    """Green for the best (within 1% or 100 ns), blue within 10%, red from 2x, bright red from 5x."""
    if value <= best * 1.01 or value <= best + 100e-9:
        return _BEST + _BOLD + cell + _END * 2
    if value <= best * 1.1:
        return _GOOD + _BOLD + cell + _END * 2
    if value >= best * 5:
        return _VERY_BAD + _BOLD + cell + _END * 2
    if value >= best * 2:
        return _BAD + cell + _END * 2
    return cell


class _Table:
    """One label's measurements laid out: rows (threads, env, row name), columns (description)."""

    def __init__(self, results, colorize, trim, highlight):
        self.results, self.colorize, self.trim = results, colorize, trim
        self.unit, self.scale = select_unit(min(r.median for r in results))
        rows = _unique((r.num_threads, r.env, r.as_row_name) for r in results)
        self.rows = sorted(rows, key=lambda k: k[:2])          # stable: statement order kept
        self.cols = _unique(r.description for r in results)
        self.grid = {(self.rows.index((r.num_threads, r.env, r.as_row_name)), self.cols.index(r.description)): r
                     for r in results}
        self.highlight = highlight and any(r.has_warnings for r in results)
        # per column, as torch: a column with a noisy cell gets room for the "(! XX%)" marks
        self.marks = [self.highlight and any(m.has_warnings for (_, c), m in self.grid.items() if c == j)
                      for j in range(len(self.cols))]

    def _cell_format(self, j):
        ms = [m for (_, c), m in self.grid.items() if c == j]
        digits = [math.ceil(math.log10(m.median / self.scale)) for m in ms]
        decimals = min(max(m.significant_figures - d, 0) for m, d in zip(ms, digits)) if self.trim else 1
        width = max(digits) + decimals + (1 if decimals else 0)
        marks = self.marks[j]
        return lambda v, spread=None: f"{v:>{width}.{decimals}f}" + (
            (f" (! {spread * 100:.0f}%)" if spread is not None else "").rjust(7) if marks else "")

    def _cell(self, fmt, m):
        if m is None:
            return " " * len(fmt(1.0))
        value = m.median / self.scale
        if self.trim:
            value = trim_sigfig(value, m.significant_figures)
        return fmt(value, m.iqr / m.median if m.has_warnings else None)

    def render(self) -> str:
        fmts = [self._cell_format(j) for j in range(len(self.cols))]
        envs = {r.env for r in self.results}
        env_width = max(len(e) for e in envs) if len(envs) > 1 else 0
        table = [[""] + [c or "" for c in self.cols]]
        prev_env = None
        for i, (threads, env, name) in enumerate(self.rows):
            env_str = f"({env})" if len(envs) > 1 and env != prev_env else ""
            prev_env = env
            table.append(["  " + env_str.ljust(env_width + 4) + name]
                         + [self._cell(fmts[j], self.grid.get((i, j))) for j in range(len(self.cols))])
        widths = [max(len(row[k]) for row in table) for k in range(len(table[0]))]
        lines = ["  |  ".join(s.center(w) for s, w in zip(table[0], widths))]
        total = len(lines[0])
        prev_threads = None
        for i, ((threads, _, _), row) in enumerate(zip(self.rows, table[1:])):
            if threads != prev_threads:
                lines.append(f"{threads} threads: ".ljust(total, "-"))
                prev_threads = threads
            cells = [row[0].ljust(widths[0])]
            for j, (s, w) in enumerate(zip(row[1:], widths[1:])):
                s, m = s.center(w), self.grid.get((i, j))
                if self.colorize is not Colorize.NONE and m is not None:
                    peers = ([r for (a, _), r in self.grid.items() if a == i] if self.colorize is Colorize.ROWWISE
                             else [r for (a, b), r in self.grid.items() if b == j and self.rows[a][0] == threads])
                    s = _color(s, m.median, min(r.median for r in peers))
                cells.append(s)
            lines.append("  |  ".join(cells))
        label = self.results[0].label or ""
        out = [f"[{(' ' + label + ' ').center(total - 2, '-')}]", *lines, "",
               f"Times are in {unit_to_english(self.unit)}s ({self.unit}).", ""]
        if self.highlight:
            out.insert(-1, "(! XX%) Measurement has high variance, where XX is the IQR / median * 100.")
        return "\n".join(out)


class Compare:
    """Mirrors ``torch.utils.benchmark.Compare(results)``: ``str(compare)`` / ``print()`` give one
    table per label (replicates of one task merged). ``trim_significant_figures()`` rounds
    cells to the digits the spread supports, ``colorize(rowwise=False)`` colours cells against
    the best of their column (or row), ``highlight_warnings()`` marks high-variance cells.
    Raises ValueError when a result is not a ``Measurement``."""

    def __init__(self, results):
        self._results = []
        self.extend_results(results)
        self._trim = False
        self._colorize = Colorize.NONE
        self._highlight = False

    def extend_results(self, results):
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self):
        self._trim = True

    def colorize(self, rowwise=False):
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self):
        self._highlight = True

    def print(self):
        print(str(self))

    def __str__(self):
        groups = collections.defaultdict(list)
        for r in Measurement.merge(self._results):
            groups[r.label].append(r)
        return "\n".join(_Table(g, self._colorize, self._trim, self._highlight).render() for g in groups.values())
