"""What the interposer check (forward-mode AD and the profiler, NOTE [interposer] in _state)
costs the per-op hot path, and what a dual op and a profiled op cost.

1. ``a + b`` on (4,) float32 tensors with ``apply_op`` as built, against the same function
   without its interposer check (rebuilt from its own source), in alternating blocks of one
   process, so machine load drifts over both alike: the check's cost is the paired difference.
2. Inside a dual level: ``a + b`` on plain tensors (the level's pass-through) and with a dual
   ``a`` (the op plus its cached jvp op); inside ``tracegrad.profiler.profile()``.

    python benchmarks/forward_ad_dispatch.py [--blocks 20] [--ops 5000]
"""
from __future__ import annotations

import argparse
import inspect
import statistics
import time

import tracegrad
import tracegrad._api.promotion as promotion
from tracegrad.autograd import _dispatch


def _without_check():
    lines = inspect.getsource(_dispatch.apply_op).splitlines()
    i = next(k for k, line in enumerate(lines) if "if _INTERPOSE[0] is not None" in line)
    ns = dict(vars(_dispatch))
    exec("\n".join(lines[:i] + lines[i + 2:]), ns)   # the check and its return line
    return ns["apply_op"]


def _per_op(fn, ops):
    for _ in range(ops // 10):
        fn()
    t0 = time.perf_counter()
    for _ in range(ops):
        fn()
    return (time.perf_counter() - t0) / ops * 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--blocks", type=int, default=20)
    p.add_argument("--ops", type=int, default=5000)
    args = p.parse_args()
    a, b = tracegrad.randn(4), tracegrad.randn(4)
    variants = {"with check": _dispatch.apply_op, "without check": _without_check()}
    times = {k: [] for k in variants}
    try:
        for _ in range(args.blocks):
            for name, f in variants.items():
                promotion.apply_op = f          # what `a + b` calls
                times[name].append(_per_op(lambda: a + b, args.ops))
    finally:
        promotion.apply_op = variants["with check"]
    for name, v in times.items():
        print(f"a + b, apply_op {name}: median {statistics.median(v):.2f} us, min {min(v):.2f} us")
    diff = [x - y for x, y in zip(times["with check"], times["without check"])]
    print(f"paired difference: median {statistics.median(diff) * 1000:.0f} ns per op")
    fa = tracegrad.autograd.forward_ad
    with fa.dual_level():
        d = fa.make_dual(a, tracegrad.randn(4))
        print(f"in a dual level, plain a + b: {_per_op(lambda: a + b, args.ops // 5):.1f} us; "
              f"dual a + b: {_per_op(lambda: d + b, args.ops // 5):.1f} us")
    with tracegrad.profiler.profile():
        print(f"profiled a + b: {_per_op(lambda: a + b, args.ops // 5):.1f} us")


if __name__ == "__main__":
    main()
