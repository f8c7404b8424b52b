"""Write ``tests/slow_tests.txt``, the tests the default test command leaves out (NOTE [slow
tests] in tests/conftest.py), from the durations of a full run.

Usage::

    python -m pytest -n auto --maxprocesses 4 --dist loadfile tests --runslow --durations=0 > run.log
    TRACEGRAD_CACHE_DIR=$(mktemp -d) python -m pytest -n auto --maxprocesses 4 --dist loadfile tests --durations=0 > cold.log
    python scripts/slow_tests.py run.log [--over 0.5] [--cold cold.log [--cold-over 0.5]]

A test is slow when its setup, call and teardown together took more than ``--over`` seconds
in the full run (pytest's ``--durations=0`` table, one line per phase), or more than
``--cold-over`` in a run of the default tests with an empty compilation cache, as CI has (there
the first test to use an op and shape pays for compiling it). Run both on a quiet machine.
"""
from __future__ import annotations

import argparse
import collections
import os
import re

_LINE = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S.*?)\s*$")
_OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "slow_tests.txt")
_HEADER = """\
# Tests the default test command leaves out (NOTE [slow tests] in tests/conftest.py): each took
# more than {over} s (setup + call + teardown) in a full run on a 2-core machine with a warm
# compilation cache{cold}.
# `--runslow` (or TRACEGRAD_RUN_SLOW=1) runs them too. Written by scripts/slow_tests.py;
# {n} tests, {secs:.0f} s of the full run's {total:.0f} s.
"""


def durations(lines):
    """nodeid -> seconds, summed over the phases of pytest's ``--durations=0`` table."""
    out = collections.Counter()
    for line in lines:
        m = _LINE.match(line)
        if m:
            out[m.group(3)] += float(m.group(1))
    return out


def _read(log):
    with open(log, encoding="utf-8", errors="replace") as f:
        times = durations(f)
    if not times:
        raise SystemExit(f"slow_tests.py: no --durations=0 table in {log}")
    return times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", help="the output of a pytest run with --durations=0")
    ap.add_argument("--over", type=float, default=0.5, help="seconds above which a test is slow")
    ap.add_argument("--cold", help="the output of a run of the default tests with an empty compilation cache")
    ap.add_argument("--cold-over", type=float, default=0.5, help="seconds above which a test is slow there")
    args = ap.parse_args(argv)
    times = _read(args.log)
    slow = {n for n, s in times.items() if s > args.over}
    cold = ""
    if args.cold:
        slow |= {n for n, s in _read(args.cold).items() if s > args.cold_over}
        cold = f", or more than {args.cold_over} s in a run of the\n# other tests with an empty one (as CI's)"
    slow = sorted(slow)
    text = _HEADER.format(over=args.over, cold=cold, n=len(slow), secs=sum(times.get(n, 0.0) for n in slow),
                          total=sum(times.values())) + "".join(n + "\n" for n in slow)
    tmp = _OUT + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, _OUT)
    print(f"{len(slow)} of {len(times)} tests over {args.over} s -> {_OUT}")


if __name__ == "__main__":
    main()
