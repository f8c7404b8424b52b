"""A digits-MLP training step fed NumPy batches (``torch.from_numpy`` inside the step), with
``tracegrad.compile``, side by side with the same step fed tensors and with torch eager (1
thread). Not a test.

Each call gets a new batch of arrays. A NumPy argument the step only converts is a program
input (NOTE [numpy arguments] in tracegrad/_lowering/numpy_args.py): one trace for every batch,
at the cost of the tensor-fed step plus a copy of the arrays in. Before that, each new array
was a constant of a program of its own: a trace per batch until ``cache_size_limit``, then
eager. The row "reads by value" is such a step (it also computes ``x.std()`` in NumPy): what
a step that reads its arrays with NumPy still costs.

Prints median ms/step over the timed steps, the traces and eager calls, and each ratio to the
tensor-fed compiled step.

    python benchmarks/numpy_batches.py [--steps 100] [--batches 32]
"""
from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np


def step_fn(T, model, opt, convert):
    def step(x, y):
        xt, yt = convert(T, x, y)
        loss = T.nn.functional.cross_entropy(model(xt), yt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def arrays_in(T, x, y):
    return T.from_numpy(x), T.from_numpy(y)


def read_by_value(T, x, y):
    return T.from_numpy(x / np.float32(x.std() + 1)), T.from_numpy(y)


def tensors_in(T, x, y):
    return x, y


def run(T, convert, compiled, batches, steps):
    """Median ms per step over ``steps`` calls cycling through ``batches``; the step's stats."""
    T.manual_seed(0)
    model = T.nn.Sequential(T.nn.Linear(64, 256), T.nn.ReLU(), T.nn.Linear(256, 256), T.nn.ReLU(),
                            T.nn.Linear(256, 10))
    opt = T.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    f = step_fn(T, model, opt, convert)
    f = T.compile(f) if compiled else f
    if convert is tensors_in:
        batches = [(T.from_numpy(x.copy()), T.from_numpy(y.copy())) for x, y in batches]
    times = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # the cache-limit warning of the by-value row
        for i in range(steps):
            x, y = batches[i % len(batches)]
            t0 = time.perf_counter()
            float(f(x, y))
            times.append(time.perf_counter() - t0)
    stats = getattr(f, "stats", {})
    return statistics.median(times[len(times) // 4:]) * 1e3, stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batches", type=int, default=32)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((64, 64)).astype(np.float32), rng.integers(0, 10, 64))
               for _ in range(a.batches)]
    import tracegrad
    rows = [("tracegrad.compile, tensors", tracegrad, tensors_in, True),
            ("tracegrad.compile, NumPy arrays", tracegrad, arrays_in, True),
            ("tracegrad.compile, reads by value", tracegrad, read_by_value, True),
            ("tracegrad eager, NumPy arrays", tracegrad, arrays_in, False)]
    try:
        import torch
        torch.set_num_threads(1)
        rows.append(("torch eager, NumPy arrays", torch, arrays_in, False))
    except ImportError:
        pass
    base = None
    print(f"digits MLP + SGD momentum, batch 64, {a.batches} NumPy batches cycled, {a.steps} steps")
    print(f"  {'':36} {'ms/step':>8} {'ratio':>6} {'traces':>7} {'eager':>6}")
    for name, T, convert, compiled in rows:
        ms, st = run(T, convert, compiled, batches, a.steps)
        base = base or ms
        print(f"  {name:36} {ms:8.3f} {ms / base:6.2f} {st.get('traces', '-'):>7} {st.get('eager_calls', '-'):>6}")


if __name__ == "__main__":
    main()
