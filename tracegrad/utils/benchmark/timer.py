"""``Timer``: mirrors ``torch.utils.benchmark.Timer`` for Python statements.

Timing waits for results (NOTE [benchmark blocking]): tracegrad's ops return before XLA has
computed them wherever JAX dispatches asynchronously (GPU; CPU with
``TRACEGRAD_ASYNC_DISPATCH=1``). torch's Timer synchronizes the accelerator before reading the
clock; JAX has no "wait for everything", so after each block of runs the Timer waits for every
tensor or JAX array the statement's namespace holds -- the value of a final expression
statement and the names it assigned (also inside tuples, lists and dicts), and the tensors among
the globals passed in (written in place by the statement). XLA runs one device's work in
dispatch order, so waiting for the last results waits for the work before them."""
from __future__ import annotations

import ast
import textwrap
import timeit

import numpy as np

from ...profiler._recorder import block
from .common import Measurement, TaskSpec

__all__ = ["Language", "Timer", "timer"]

timer = timeit.default_timer
_LAST = "_tg_benchmark_last"    # holds the value of the statement's final expression


class Language:
    """Mirrors ``torch.utils.benchmark.Language``: only PYTHON runs here."""
    PYTHON = 0
    CPP = 1


def _keep_last_value(stmt: str) -> str:
    """``stmt`` with its final expression statement assigned to ``_LAST`` (so the timer can
    wait for it). Raises SyntaxError, as Python would, for a statement that does not parse."""
    tree = ast.parse(stmt)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        tree.body[-1] = ast.copy_location(ast.Assign(targets=[ast.Name(_LAST, ast.Store())], value=last.value), last)
        ast.fix_missing_locations(tree)
    return ast.unparse(tree)


class Timer:
    """Mirrors ``torch.utils.benchmark.Timer(stmt='pass', setup='pass', global_setup='',
    timer=timeit.default_timer, globals=None, label=None, sub_label=None, description=None,
    env=None, num_threads=1, language=Language.PYTHON)``.

    ``stmt`` runs ``number`` times per block after ``setup`` (both Python source; ``globals``
    is copied, and ``torch`` in it defaults to ``tracegrad``). ``timeit(number)`` measures one
    block after a warm-up; ``blocked_autorange(min_run_time=0.2)`` picks a block size whose
    timer overhead is small and measures blocks for at least ``min_run_time`` seconds;
    ``adaptive_autorange(threshold=0.1, min_run_time=0.01, max_run_time=10.0)`` measures until
    the IQR is under ``threshold`` of the median. Each returns a ``Measurement``; the clock
    waits for results (see the module). ``label``, ``sub_label``, ``description``, ``env``
    and ``num_threads`` label the result for ``Compare``.
    Differs from torch: ``num_threads`` is a label only (XLA's CPU thread pool is fixed when
    JAX starts); C++ statements and ``collect_callgrind`` are not available.
    Raises ValueError for a non-string ``stmt``/``setup`` or ``num_threads`` < 1,
    NotImplementedError for ``language=Language.CPP``, SyntaxError for bad source."""

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timer, globals=None, label=None,
                 sub_label=None, description=None, env=None, num_threads=1, language=Language.PYTHON):
        if not isinstance(stmt, str) or not isinstance(setup, str):
            raise ValueError("Timer: stmt and setup should be strings of Python source (only a `str` stmt is supported)")
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("Timer: tracegrad times Python statements only (language=Language.PYTHON)")
        if not isinstance(num_threads, int) or num_threads < 1:
            raise ValueError(f"Timer: num_threads should be a positive int, got {num_threads!r}")
        import tracegrad
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", tracegrad)
        # only these globals are waited for: walking every global container would add to the timed block
        self._global_tensors = [v for v in self._globals.values() if isinstance(v, tracegrad.Tensor)]
        stmt, setup = textwrap.dedent(stmt), textwrap.dedent(setup)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                   sub_label=sub_label, description=description, env=env, num_threads=num_threads)
        self._timer = timer
        body = textwrap.indent(_keep_last_value(stmt), " " * 8)
        src = (f"def _tg_benchmark_inner(_tg_number, _tg_timer, _tg_block):\n"
               f"{textwrap.indent(setup, ' ' * 4)}\n"
               f"    {_LAST} = None\n"
               f"    _tg_t0 = _tg_timer()\n"
               f"    for _ in range(_tg_number):\n{body}\n"
               f"    _tg_block(locals())\n"
               f"    return _tg_timer() - _tg_t0\n")
        namespace = dict(self._globals)
        exec(compile(src, "<tracegrad.utils.benchmark.Timer>", "exec"), namespace)
        self._inner = namespace["_tg_benchmark_inner"]

    def _wait(self, local_vars):
        block(list(local_vars.values()))
        block(self._global_tensors)

    def _timeit(self, number: int) -> float:
        return self._inner(number, self._timer, self._wait)

    def timeit(self, number: int = 1000000) -> Measurement:
        """Runs ``stmt`` ``max(number // 100, 2)`` times to warm up, then measures one block of
        ``number`` runs (mirrors ``timeit.Timer.timeit``)."""
        self._timeit(max(number // 100, 2))
        return Measurement(number, [self._timeit(number)], self._task_spec)

    def _block_size(self, min_run_time: float) -> int:
        """Runs per block: grown tenfold until the timer's own overhead is under 0.01% of a
        block (and a block takes min_run_time/1000), or a block takes min_run_time."""
        overhead = float(np.median([self._timeit(0) for _ in range(5)]))
        number = 1
        while True:
            took = self._timeit(number)
            if (overhead / took <= 1e-4 and took >= min_run_time / 1000) or took > min_run_time:
                return number
            if number * 10 > 2147483647:
                return number
            number *= 10

    def _measure(self, number, min_run_time, max_run_time=None, stop=lambda times: True, callback=None):
        times, total, can_stop = [], 0.0, False
        while total < min_run_time or not can_stop:
            took = self._timeit(number)
            times.append(took)
            total += took
            if callback is not None:
                callback(number, took)
            can_stop = stop(times)
            if max_run_time and total > max_run_time:
                break
        return Measurement(number, times, self._task_spec)

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of an automatically chosen size, for at least ``min_run_time`` seconds.
        ``callback(number, seconds)`` is called after each block."""
        return self._measure(self._block_size(min_run_time), min_run_time, callback=callback)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0, callback=None) -> Measurement:
        """Blocks until more than 3 were measured, ``min_run_time`` has passed and the IQR is
        under ``threshold`` times the median, or ``max_run_time`` seconds were spent."""
        number = self._block_size(0.05)

        def stop(times):
            return len(times) > 3 and Measurement(number, times, self._task_spec).meets_confidence(threshold)
        return self._measure(number, min_run_time, max_run_time, stop, callback)

    def repeat(self, repeat: int = -1, number: int = -1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")
