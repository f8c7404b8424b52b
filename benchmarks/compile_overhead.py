"""Where the host time of one ``tracegrad.compile`` call goes, against the device work: the
guards (``Region.check``), reading the state (``read_inputs``), the jitted program (dispatch
plus device time, waited for), writing the state back (``write_back``), and a cProfile of the
whole calls. Also JAX's own per-call cost of a jitted function by number of array arguments
and results (what a step with many state tensors pays in dispatch alone). Not a test.

    python benchmarks/compile_overhead.py [--models mlp,lm] [--calls 200] [--eager lm]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def med_us(fn, n):
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6


def med_us_after(before, fn, n):
    """Median us of ``fn()`` timed right after ``before()`` (untimed) each time."""
    ts = []
    for _ in range(n):
        before()
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6


def profile(call, calls, rows):
    """The top ``rows`` functions by own time over ``calls`` calls, indented."""
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(calls):
        call()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(rows)
    return "\n".join("    " + ln for ln in s.getvalue().splitlines() if ln.strip())[:3500]


def parts(name, calls):
    import jax
    import compile_step as cs
    import tracegrad
    from tracegrad._x64 import x64_enter, x64_exit
    call, _, f, xy = cs.torch_style(tracegrad, name, "adamw", True)
    for _ in range(5):
        call()
    region = next(r for entries in f._cache.values() if isinstance(entries, list) for r in entries)
    leaves = list(xy)
    prev = x64_enter()
    try:
        flat = region.read_inputs(leaves)
        n_in = len(flat)
        outs = region.program(flat, False)
        jax.block_until_ready(outs)
        n_out = len(jax.tree_util.tree_leaves(outs))
        row = {"check": med_us(region.check, calls), "read_inputs": med_us(lambda: region.read_inputs(leaves), calls),
               "program (not donated, waited)": med_us(lambda: jax.block_until_ready(region.program(region.read_inputs(leaves), False)), calls),
               "write_back": med_us(lambda: region.write_back(outs, leaves), calls)}
    finally:
        x64_exit(prev)
    row["whole call (loss.item())"] = med_us(call, calls)
    # in a real call the guards run right after the previous program, whose arrays evicted
    # their Python objects from the CPU caches: timed that way they cost ~4x the figure above
    # (measured 2026-12-04 on one core: Region.check 10 us hot, 39 us after a run, 43 us after
    # touching 8 MB; a function that does nothing: 1 us either way)
    prev = x64_enter()
    try:
        row["check, right after a run"] = med_us_after(call, region.check, calls)
        row["read_inputs, right after a run"] = med_us_after(call, lambda: region.read_inputs(leaves), calls)
    finally:
        x64_exit(prev)
    print(f"\n{name} + adamw: {n_in} program inputs, {n_out} outputs; median us per call")
    for k, v in row.items():
        print(f"  {k:<32} {v:10.1f}")
    print("  cProfile of the whole calls (tottime):")
    print(profile(call, calls, 12))


def eager(name, calls):
    """cProfile of eager steps (no compile): where each op's host time goes."""
    import compile_step as cs
    import tracegrad
    call, _, _, _ = cs.torch_style(tracegrad, name, "adamw", False)
    for _ in range(2):
        call()
    t = med_us(call, calls)
    print(f"\n{name} + adamw eager: {t / 1e3:.2f} ms per step; cProfile (tottime):")
    print(profile(call, calls, 15))


def dispatch(calls):
    import jax
    import jax.numpy as jnp
    print("\nJAX alone: a jitted f(*xs) -> [x + 1 for x in xs] over n float32 scalars (donated), median us per call:")
    for n in (1, 10, 100, 300):
        xs = [jnp.zeros((), jnp.float32) for _ in range(n)]
        f = jax.jit(lambda *a: [x + 1 for x in a], donate_argnums=tuple(range(n)))
        state = [f(*xs)]

        def step():
            state[0] = f(*state[0])
            jax.block_until_ready(state[0])
        step()
        print(f"  n={n:<4} {med_us(step, calls):9.1f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="mlp,lm")
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--eager", default="", help="models whose eager steps to profile too, e.g. lm")
    args = p.parse_args()
    import jax
    print(f"device: {jax.devices()[0].device_kind}")
    for name in args.models.split(","):
        parts(name, args.calls)
    for name in filter(None, args.eager.split(",")):
        eager(name, max(3, args.calls // 20))
    dispatch(args.calls)


if __name__ == "__main__":
    main()
