"""First-call cost of eager code (a notebook cell, a model's first step, a test): NOTE [host
first calls] in tracegrad/_ops/host_first.py.

Each workload runs once in a fresh process with the persistent compilation cache off, with
data-movement programs' first calls on the host (tracegrad's default) and with every
program compiled (``HOST_CALLS = 0``). Prints the median wall time over ``--repeats`` processes,
the XLA programs compiled (JAX's compile events) and the ratio, side by side.

    python benchmarks/first_calls.py [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

SCRIPT = r"""
import json, sys, time
import jax
import tracegrad as torch
from tracegrad._ops import host_first
import tracegrad.nn as nn, tracegrad.nn.functional as F
if sys.argv[2] == "off":
    host_first.HOST_CALLS = 0
compiles = [0]
def on_event(name, secs, **kw):
    if name == "/jax/core/compile/backend_compile_duration":
        compiles[0] += 1
jax.monitoring.register_event_duration_secs_listener(on_event)
torch.manual_seed(0)

def cnn_step():
    net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(8 * 4 * 4, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(16, 1, 8, 8), torch.randint(0, 10, (16,))
    for _ in range(2):
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()

def transformer_step():
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    opt = torch.optim.AdamW(layer.parameters(), lr=1e-3)
    x = torch.randn(4, 10, 32)
    for _ in range(2):
        opt.zero_grad()
        layer(x).pow(2).mean().backward()
        opt.step()

def views_cell():
    x = torch.arange(240.).reshape(4, 6, 10)
    parts = [x[1:, ::2], x.transpose(0, 2)[3], x.flip(1)[:, :3], x.permute(2, 0, 1).reshape(10, -1)[:, 5:9]]
    y = torch.cat([p.reshape(-1) for p in parts]) + torch.stack(x.chunk(2, dim=2)).sum()
    z = x.unsqueeze(0).expand(2, 4, 6, 10).contiguous().narrow(3, 2, 4)
    return float(y.sum()) + float(z.sum())

work = {"cnn_step": cnn_step, "transformer_step": transformer_step, "views_cell": views_cell}[sys.argv[1]]
t = time.perf_counter()
work()
print(json.dumps({"seconds": time.perf_counter() - t, "compiles": compiles[0]}))
"""

WORKLOADS = ["cnn_step", "transformer_step", "views_cell"]


def run(workload: str, mode: str) -> dict:
    env = dict(os.environ, TRACEGRAD_CACHE_DIR="")
    out = subprocess.run([sys.executable, "-c", SCRIPT, workload, mode], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"{'workload':18s} {'host first (s)':>15s} {'all compiled (s)':>17s} {'ratio':>6s} "
          f"{'programs':>9s} {'programs':>9s}")
    for w in WORKLOADS:
        res = {m: [run(w, m) for _ in range(args.repeats)] for m in ("on", "off")}
        sec = {m: statistics.median(r["seconds"] for r in res[m]) for m in res}
        prog = {m: res[m][0]["compiles"] for m in res}
        print(f"{w:18s} {sec['on']:15.2f} {sec['off']:17.2f} {sec['on'] / sec['off']:6.2f} "
              f"{prog['on']:9d} {prog['off']:9d}")


if __name__ == "__main__":
    main()
