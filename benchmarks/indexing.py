"""Eager integer/slice indexing: cost of a NEW position vs a repeated one. Not a test.

For each case the script times ``--n`` calls, each at a position not used before in the
process (``new``), then ``--n`` calls at one position already used (``repeat``), and prints
the median milliseconds per call and the number of XLA programs the case compiled during the
``new`` calls (JAX's ``/jax/core/compile/backend_compile_duration`` monitoring events). Cases:

* ``a[i]``, ``a[i:i+2]``, ``a[-i-1]``, ``a[i, 1:5:2]``, ``a.select(0, i)``, ``a.narrow(0, i, 2)``;
* ``a[i][j]`` (a view of a view);
* ``a[i] = v`` and ``a[i].add_(1)`` with no grad (writes through the view chain);
* ``a[i].sum().backward()`` (case ``g[i]...``) with ``a`` a leaf that requires grad (forward + backward);
* ``read after write``: a view ``a[i]`` read again after its base was written in place;
* ``h[i] = x (grad)``: ``h = a * 1.0``, ``x`` requires grad: the write records ``CopySlices``;
* ``a[i, [0, 2]]``: an int beside an index list (advanced indexing, a gather).

Each case runs on its own tensor ``randn(100 + k, 8)``, so no case reuses another's programs.
A position being "new" costs one XLA compile per program it needs when positions are
static arguments of the programs; with positions as runtime operands it costs about what a
repeated one costs.

    python benchmarks/indexing.py [--n 50]
"""
from __future__ import annotations

import argparse
from functools import partial
import statistics
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    args = ap.parse_args()
    n = args.n

    import jax
    import tracegrad as torch

    compiles = [0]

    def on_event(name, secs, **kw):
        if name == "/jax/core/compile/backend_compile_duration":
            compiles[0] += 1
    jax.monitoring.register_event_duration_secs_listener(on_event)

    v = torch.ones(8)

    def setitem(a, i):
        a[i] = v

    def add_(a, i):
        a[i].add_(1)

    def backward(a, i):
        a[i].sum().backward()

    x = torch.randn(8, requires_grad=True)

    def copy_slices(a, i):
        h = a * 1.0            # a non-leaf
        h[i] = x               # CopySlices on h
        return h

    def read_after_write(a, i):
        w = a[i]
        a.mul_(1.0)
        return w.sum()

    # each case gets its own tensor (100 + k rows): no case reuses another's programs
    cases = [
        ("a[i]", lambda a, i: a[i]),
        ("a[i:i+2]", lambda a, i: a[i:i + 2]),
        ("a[-i-1]", lambda a, i: a[-i - 1]),
        ("a[i, 1:5:2]", lambda a, i: a[i, 1:5:2]),
        ("a.select(0, i)", lambda a, i: a.select(0, i)),
        ("a.narrow(0, i, 2)", lambda a, i: a.narrow(0, i, 2)),
        ("a[i][j]", lambda a, i: a[i][i % 8]),
        ("a[i] = v", setitem),
        ("a[i].add_(1)", add_),
        ("g[i].sum().backward()", backward),
        ("read after write", read_after_write),
        ("h[i] = x (grad)", copy_slices),
        ("a[i, [0, 2]]", lambda a, i: a[i, [0, 2]]),
    ]
    print(f"{'case':24s} {'new ms':>9s} {'repeat ms':>10s} {'compiles':>9s}   (median of {n})")
    for k, (name, case) in enumerate(cases):
        a = torch.randn(100 + k, 8, requires_grad=name.startswith("g["))
        f = partial(case, a)
        f(98)            # the case's shape-independent programs (sum, ones...) once
        jax.effects_barrier()
        c0 = compiles[0]
        # positions not used before by this case: start after the warm-up position
        new = []
        for i in range(n):
            t0 = time.perf_counter()
            out = f(i % 97)
            if hasattr(out, "_value"):
                out._value.block_until_ready()
            new.append(time.perf_counter() - t0)
        n_compiled = compiles[0] - c0
        rep = []
        for _ in range(n):
            t0 = time.perf_counter()
            out = f(3)
            if hasattr(out, "_value"):
                out._value.block_until_ready()
            rep.append(time.perf_counter() - t0)
        print(f"{name:24s} {statistics.median(new) * 1e3:9.3f} {statistics.median(rep) * 1e3:10.3f} "
              f"{n_compiled:9d}")


if __name__ == "__main__":
    main()
