"""How long a ``tracegrad.compile`` function takes to become a program: the CPU time of the
call that traces it (its first size, then a new batch size) and how many times the function's
Python was traced for it (discovery traces included: NOTE [plans of other sizes] in
tracegrad/compiler.py), for a forward compiled alone (``compile(model)``, backward outside) and
a whole training step, beside ``jax.jit`` of the same step written in JAX + optax (its first
call: trace and XLA compile). CPU time of this process (``time.process_time``), median over
``--repeats`` fresh processes, the persistent compilation cache off. Not a test.

    python benchmarks/compile_latency.py [--repeats 3] [--layers 2]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

SCRIPT = r"""
import json, os, sys, time
os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"
import jax
jax.config.update("jax_enable_compilation_cache", False)
import tracegrad as torch
import tracegrad.compiler as compiler_mod
nn = torch.nn
layers = int(sys.argv[1])
traces = [0]
real = compiler_mod.trace_region
def counting(*a, **k):
    traces[0] += 1
    return real(*a, **k)
compiler_mod.trace_region = counting
torch.manual_seed(0)

def model():
    blocks = []
    for _ in range(layers):
        blocks += [nn.Linear(64, 64), nn.LayerNorm(64), nn.GELU()]
    return nn.Sequential(nn.Linear(16, 64), *blocks, nn.Linear(64, 10))

def timed(f, *a):
    traces[0] = 0
    t = time.process_time()
    out = f(*a)
    float(out.sum())
    return time.process_time() - t, traces[0]

res = {}
m = model()
fwd = torch.compile(lambda x: m(x))
y = torch.randint(0, 10, (32,))
fwd(torch.randn(32, 16)).sum().backward()                    # the eager first call
res["forward, first size"] = timed(lambda x: fwd(x), torch.randn(32, 16))
res["forward, new size"] = timed(lambda x: fwd(x), torch.randn(20, 16))
m2 = model()
opt = torch.optim.AdamW(m2.parameters(), lr=1e-3)
@torch.compile
def step(x, y):
    loss = nn.functional.cross_entropy(m2(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.detach()
step(torch.randn(32, 16), y)
res["training step, first size"] = timed(step, torch.randn(32, 16), y)
res["training step, new size"] = timed(step, torch.randn(20, 16), y[:20].clone())

import jax.numpy as jnp, optax
def init(key):
    sizes = [16] + [64] * (layers + 1) + [10]
    ps = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        key, k = jax.random.split(key)
        ps.append((jax.random.normal(k, (a, b)) * 0.1, jnp.zeros(b), jnp.ones(b), jnp.zeros(b)))
    return ps
def loss_fn(ps, x, y):
    h = x @ ps[0][0] + ps[0][1]
    for w, b, g, be in ps[1:-1]:
        h = h @ w + b
        mu, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
        h = jax.nn.gelu((h - mu) / jnp.sqrt(var + 1e-5) * g + be, approximate=False)
    logits = h @ ps[-1][0] + ps[-1][1]
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
tx = optax.adamw(1e-3)
ps = init(jax.random.PRNGKey(0))
st = tx.init(ps)
@jax.jit
def jstep(ps, st, x, y):
    l, g = jax.value_and_grad(loss_fn)(ps, x, y)
    u, st = tx.update(g, st, ps)
    return optax.apply_updates(ps, u), st, l
x = jnp.ones((32, 16)); yj = jnp.zeros(32, jnp.int32)
t = time.process_time(); out = jstep(ps, st, x, yj); float(out[2]); res["jax.jit step, first size"] = (time.process_time() - t, 1)
t = time.process_time(); out = jstep(ps, st, x[:20], yj[:20]); float(out[2]); res["jax.jit step, new size"] = (time.process_time() - t, 1)
print(json.dumps(res))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--layers", type=int, default=2)
    args = ap.parse_args()
    runs = []
    for _ in range(args.repeats):
        out = subprocess.run([sys.executable, "-c", SCRIPT, str(args.layers)], capture_output=True, text=True,
                             env={**os.environ, "JAX_ENABLE_COMPILATION_CACHE": "false"})
        if out.returncode:
            sys.exit(out.stderr)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"time to a program, CPU seconds, median of {args.repeats} processes ({args.layers} hidden layers)")
    print(f"{'':32s}{'cpu s':>8s}{'traces':>8s}")
    for k in runs[0]:
        secs = statistics.median(r[k][0] for r in runs)
        n = runs[0][k][1]
        print(f"{k:32s}{secs:8.3f}{n:8d}")
    jax_first = statistics.median(r["jax.jit step, first size"][0] for r in runs)
    tg_first = statistics.median(r["training step, first size"][0] for r in runs)
    print(f"\ntraining step's first program / jax.jit's: x{tg_first / jax_first:.2f}")


if __name__ == "__main__":
    main()
