"""Eager ``optimizer.step()`` time: tracegrad (fused group programs, and the per-op path) vs torch.

Models: the digits MLP (64-256-256-10: 6 parameters) and a stack of 25 ``Linear(16, 16)``
(50 small parameters). Optimizers: SGD with momentum, Adam, AdamW. Each step sees the same
gradients (set once); the lr changes every step, as under a scheduler. Prints the median
and 10th-percentile per-step time in us and their ratios to torch (1 thread, run in its own
process: torch and JAX in one process slow each other down). The fused and per-op paths run
in alternating blocks of 10 steps (the p10 is the steadier figure on a loaded machine).

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


def _setup(mod, shapes, cls, kw):
    mod.manual_seed(0)
    params = [mod.randn(*s, requires_grad=True) for s in shapes]
    for p in params:
        p.grad = mod.randn(*p.shape) * 1e-3
    return getattr(mod.optim, cls)(params, **kw)


def measure(mod, steps, modes=(None,)):
    """``{mode: {model/optimizer: (median, p10) seconds per step}}`` for module ``mod``. Each
    mode is a context manager factory (None: as is); modes alternate in blocks of 10 steps, so
    a load change on a shared machine hits them alike."""
    out = {m: {} for m in modes}
    for model, shapes in MODELS.items():
        for oname, (cls, kw) in OPTIMIZERS.items():
            opts = {m: _setup(mod, shapes, cls, kw) for m in modes}
            times = {m: [] for m in modes}
            for block in range(-1, steps // 10):          # block -1: warm-up (traces, compiles)
                for m in modes:
                    opt = opts[m]
                    with (m() if m else _nothing()):
                        for i in range(10):
                            opt.param_groups[0]["lr"] = kw["lr"] * (1 - (block * 10 + i) / (4 * steps))
                            t = time.perf_counter()
                            opt.step()
                            if block >= 0:
                                times[m].append(time.perf_counter() - t)
            for m in modes:
                ts = sorted(times[m])
                out[m][f"{model}/{oname}"] = (statistics.median(ts), ts[len(ts) // 10])
    return out


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--old", action="store_true", help="tracegrad's per-op path only")
    ap.add_argument("--torch", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch:
        import torch
        torch.set_num_threads(1)
        print(json.dumps(measure(torch, args.steps)[None]))
        return
    ref = json.loads(subprocess.run([sys.executable, __file__, "--torch", "--steps", str(args.steps)],
                                    check=True, capture_output=True, text=True).stdout)
    import tracegrad
    from tracegrad._lowering import fused_optim
    modes = (fused_optim.disabled,) if args.old else (fused_optim.disabled, None)
    res = measure(tracegrad, args.steps, modes)
    old, new = res[fused_optim.disabled], res.get(None)
    print("us per step, median (p10); ratio = tracegrad / torch (1 thread), median (p10)")
    head = f"{'case':<23}{'torch':>16}{'per-op':>17}{'ratio':>13}"
    print(head + ("" if new is None else f"{'fused':>17}{'ratio':>13}"))

    def cell(t, r):
        return f"{t[0] * 1e6:>9.0f} ({t[1] * 1e6:>5.0f}){t[0] / r[0]:>6.2f} ({t[1] / r[1]:>4.2f})"
    for k, r in ref.items():
        line = f"{k:<23}{r[0] * 1e6:>9.0f} ({r[1] * 1e6:>5.0f})" + cell(old[k], r)
        if new is not None:
            line += cell(new[k], r)
        print(line)


if __name__ == "__main__":
    main()
