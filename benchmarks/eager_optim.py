"""Eager ``optimizer.step()`` time: tracegrad (fused group programs, and the per-op path) vs torch.

Models: the digits MLP (64-256-256-10: 6 parameters) and a stack of 25 ``Linear(16, 16)``
(50 small parameters). Optimizers: SGD with momentum, Adam, AdamW. Each step sees the same
gradients (set once); the lr changes every step, as under a scheduler. Prints the median
per-step time in us and the ratios to torch (1 thread, run in its own process: torch and JAX
in one process slow each other down).

    python benchmarks/eager_optim.py [--steps 200] [--old]   # --old: per-op path only
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

MODELS = {"mlp": [(256, 64), (256,), (256, 256), (256,), (10, 256), (10,)],
          "50params": [(16, 16), (16,)] * 25}
OPTIMIZERS = {"SGD-momentum": ("SGD", dict(lr=0.01, momentum=0.9)),
              "Adam": ("Adam", dict(lr=1e-3)),
              "AdamW": ("AdamW", dict(lr=1e-3))}


def measure(mod, steps):
    """``{model/optimizer: median seconds per step}`` for module ``mod`` (torch or tracegrad)."""
    out = {}
    for model, shapes in MODELS.items():
        for oname, (cls, kw) in OPTIMIZERS.items():
            mod.manual_seed(0)
            params = [mod.randn(*s, requires_grad=True) for s in shapes]
            for p in params:
                p.grad = mod.randn(*p.shape) * 1e-3
            opt = getattr(mod.optim, cls)(params, **kw)
            times = []
            for i in range(steps + 5):
                opt.param_groups[0]["lr"] = kw["lr"] * (1 - i / (2 * steps))
                t = time.perf_counter()
                opt.step()
                times.append(time.perf_counter() - t)
            out[f"{model}/{oname}"] = statistics.median(times[5:])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--old", action="store_true", help="tracegrad's per-op path only")
    ap.add_argument("--torch", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch:
        import torch
        torch.set_num_threads(1)
        print(json.dumps(measure(torch, args.steps)))
        return
    ref = json.loads(subprocess.run([sys.executable, __file__, "--torch", "--steps", str(args.steps)],
                                    check=True, capture_output=True, text=True).stdout)
    import tracegrad
    from tracegrad._lowering import fused_optim as _fused
    with _fused.disabled():
        old = measure(tracegrad, args.steps)
    new = None if args.old else measure(tracegrad, args.steps)
    print(f"{'case':<24}{'torch us':>10}{'per-op us':>11}{'ratio':>7}" + ("" if new is None else f"{'fused us':>10}{'ratio':>7}"))
    for k, t in ref.items():
        line = f"{k:<24}{t * 1e6:>10.1f}{old[k] * 1e6:>11.1f}{old[k] / t:>7.2f}"
        if new is not None:
            line += f"{new[k] * 1e6:>10.1f}{new[k] / t:>7.2f}"
        print(line)


if __name__ == "__main__":
    main()
