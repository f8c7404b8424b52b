"""Write ``tests/slow_tests.txt``, the tests the default test command leaves out (NOTE [slow
tests] in tests/conftest.py), from the durations of a full run.

Usage::

    python -m pytest -n auto --maxprocesses 4 --dist loadfile tests --runslow --durations=0 > run.log
    python scripts/slow_tests.py run.log [--over 0.5]

A test is slow when its setup, call and teardown together took more than ``--over`` seconds
(pytest's ``--durations=0`` table, one line per phase). Run it on a quiet machine; the times
this machine gives are what the README's suite time is measured against.
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
# compilation cache. `--runslow` (or TRACEGRAD_RUN_SLOW=1) runs them too. Written by
# scripts/slow_tests.py; {n} tests, {secs:.0f} s of the run's {total:.0f} s.
"""


def durations(lines):
    """nodeid -> seconds, summed over the phases of pytest's ``--durations=0`` table."""
    out = collections.Counter()
    for line in lines:
        m = _LINE.match(line)
        if m:
            out[m.group(3)] += float(m.group(1))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", help="the output of a pytest run with --durations=0")
    ap.add_argument("--over", type=float, default=0.5, help="seconds above which a test is slow")
    args = ap.parse_args(argv)
    with open(args.log, encoding="utf-8", errors="replace") as f:
        times = durations(f)
    if not times:
        raise SystemExit(f"slow_tests.py: no --durations=0 table in {args.log}")
    slow = sorted(n for n, s in times.items() if s > args.over)
    text = _HEADER.format(over=args.over, n=len(slow), secs=sum(times[n] for n in slow),
                          total=sum(times.values())) + "".join(n + "\n" for n in slow)
    tmp = _OUT + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, _OUT)
    print(f"{len(slow)} of {len(times)} tests over {args.over} s -> {_OUT}")


if __name__ == "__main__":
    main()
