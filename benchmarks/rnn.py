"""LSTM forward + backward: 2 layers, input/hidden 128, sequence 64, batch 32, loss ``out.sum()``.

Compares tracegrad eager (each layer is one jitted ``lax.scan`` program, its backward one more)
with torch eager at 1 thread, run in its own process so thread settings do not mix. Prints the
median ms per forward+backward and the ratio tracegrad / torch. Not a test.

    python benchmarks/rnn.py [--steps 20] [--warmup 3] [--bidirectional]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

from train_step import time_steps   # median ms over `steps` calls after `warmup` (benchmarks/ is on sys.path)

LAYERS, HIDDEN, SEQ, BATCH = 2, 128, 64, 32


def measure(torch, steps, warmup, bidirectional):
    """Median ms of forward+backward with ``torch`` (tracegrad or torch)."""
    torch.manual_seed(0)
    model = torch.nn.LSTM(HIDDEN, HIDDEN, num_layers=LAYERS, bidirectional=bidirectional)
    x = torch.randn(SEQ, BATCH, HIDDEN)

    def step():
        out, (h, c) = model(x)
        out.sum().backward()
        # reading one gradient value waits for the work (JAX dispatch is asynchronous)
        float(model.weight_hh_l0.grad[0, 0])

    return time_steps(step, steps, warmup)


def _child(which, steps, warmup, bidirectional):
    if which == "torch":
        import torch
        torch.set_num_threads(1)
    else:
        import tracegrad as torch
    print(json.dumps(measure(torch, steps, warmup, bidirectional)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--bidirectional", action="store_true")
    ap.add_argument("--child", choices=["torch", "tracegrad"])
    a = ap.parse_args()
    if a.child:
        return _child(a.child, a.steps, a.warmup, a.bidirectional)
    res = {}
    for which in ("tracegrad", "torch"):
        cmd = [sys.executable, __file__, "--child", which, "--steps", str(a.steps), "--warmup", str(a.warmup)]
        if a.bidirectional:
            cmd.append("--bidirectional")
        res[which] = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip())
    kind = "bidirectional " if a.bidirectional else ""
    print(f"{kind}LSTM {LAYERS}x{HIDDEN}, seq {SEQ}, batch {BATCH}: forward+backward, median of {a.steps}")
    print(f"  tracegrad eager      {res['tracegrad']:8.2f} ms")
    print(f"  torch eager (1 thr)  {res['torch']:8.2f} ms")
    print(f"  ratio tracegrad/torch {res['tracegrad'] / res['torch']:.2f}x")


if __name__ == "__main__":
    main()
