"""Per-op eager overhead: a chain of 100 small elementwise ops on a (64, 64) float32 array.

Prints µs per op for tracegrad eager, jax.numpy eager and torch eager (torch runs in its own
process at one thread: torch and JAX in one process slow each other down), and the ratios.
Then forward+backward: tracegrad (tape of cached jitted kernels) vs ``jax.grad`` called
eagerly vs jitted JAX vs torch.

    python benchmarks/eager_overhead.py [--n 100] [--repeats 20]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

N_DEFAULT = 100

# the chain: cycles through these ops (each keeps values bounded)
CHAIN = ["mul", "add", "tanh", "sub", "sigmoid", "exp_neg", "relu", "div"]

TORCH_SCRIPT = r"""
import json, sys, time, torch
torch.set_num_threads(1)
n, repeats = int(sys.argv[1]), int(sys.argv[2])
x = torch.rand(64, 64)
def chain(x):
    for i in range(n):
        k = i % 8
        if k == 0: x = x * 1.01
        elif k == 1: x = x + 0.5
        elif k == 2: x = torch.tanh(x)
        elif k == 3: x = x - 0.25
        elif k == 4: x = torch.sigmoid(x)
        elif k == 5: x = torch.exp(-x)
        elif k == 6: x = torch.relu(x)
        else: x = x / 1.5
    return x
def best(f):
    f()
    ts = []
    for _ in range(repeats):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return min(ts)
fwd = best(lambda: chain(x))
xg = x.clone().requires_grad_()
fb = best(lambda: chain(xg).sum().backward())
print(json.dumps({"fwd": fwd, "fwdbwd": fb}))
"""


def chain(mod, x, n, ops):
    for i in range(n):
        k = i % 8
        if k == 0:
            x = x * 1.01
        elif k == 1:
            x = x + 0.5
        elif k == 2:
            x = ops.tanh(x)
        elif k == 3:
            x = x - 0.25
        elif k == 4:
            x = ops.sigmoid(x)
        elif k == 5:
            x = ops.exp(-x)
        elif k == 6:
            x = ops.relu(x)
        else:
            x = x / 1.5
    return x


def best(f, repeats):
    f()
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=N_DEFAULT)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    n, R = args.n, args.repeats

    import jax
    import jax.numpy as jnp
    import numpy as np

    import tracegrad

    class JOps:
        tanh, exp = staticmethod(jnp.tanh), staticmethod(jnp.exp)
        sigmoid, relu = staticmethod(jax.nn.sigmoid), staticmethod(jax.nn.relu)

    class TOps:
        tanh, exp, sigmoid, relu = (staticmethod(getattr(tracegrad, k)) for k in ("tanh", "exp", "sigmoid", "relu"))

    xa = jnp.asarray(np.random.RandomState(0).rand(64, 64).astype(np.float32))
    xt = tracegrad.Tensor._make(xa)

    jnp_fwd = best(lambda: chain(jnp, xa, n, JOps).block_until_ready(), R)
    tg_fwd = best(lambda: chain(tracegrad, xt, n, TOps)._value.block_until_ready(), R)

    xg = tracegrad.Tensor._make(xa).requires_grad_()

    def tg_fb():
        xg.grad = None
        chain(tracegrad, xg, n, TOps).sum().backward()
        xg.grad._value.block_until_ready()

    tg_fwdbwd = best(tg_fb, R)
    gfun = jax.grad(lambda x: chain(jnp, x, n, JOps).sum())
    jgrad_eager = best(lambda: gfun(xa).block_until_ready(), max(3, R // 4))
    jitted = jax.jit(gfun)
    jit_fb = best(lambda: jitted(xa).block_until_ready(), R)

    torch_res = None
    try:
        out = subprocess.run([sys.executable, "-c", TORCH_SCRIPT, str(n), str(R)], capture_output=True,
                             text=True, timeout=300)
        torch_res = json.loads(out.stdout.strip().splitlines()[-1])
    except Exception as e:  # torch is optional
        print(f"(torch not measured: {e})")

    us = lambda s: s / n * 1e6  # noqa: E731
    print(f"chain of {n} elementwise ops on (64, 64) float32, best of {R}")
    print(f"{'':28s}{'us/op':>10s}")
    print(f"{'tracegrad eager fwd':28s}{us(tg_fwd):10.1f}")
    print(f"{'jax.numpy eager fwd':28s}{us(jnp_fwd):10.1f}")
    if torch_res:
        print(f"{'torch eager fwd (1 thread)':28s}{us(torch_res['fwd']):10.1f}")
    print(f"{'tracegrad fwd+bwd':28s}{us(tg_fwdbwd):10.1f}")
    print(f"{'jax.grad eager fwd+bwd':28s}{us(jgrad_eager):10.1f}")
    print(f"{'jax.jit(grad) fwd+bwd':28s}{us(jit_fb):10.1f}")
    if torch_res:
        print(f"{'torch fwd+bwd (1 thread)':28s}{us(torch_res['fwdbwd']):10.1f}")
    print()
    print(f"ratio tracegrad/jax.numpy eager fwd : {tg_fwd / jnp_fwd:6.2f}   (target <= 1.0)")
    print(f"ratio tracegrad/jax.grad eager f+b  : {tg_fwdbwd / jgrad_eager:6.2f}")
    print(f"ratio tracegrad/jax.jit f+b         : {tg_fwdbwd / jit_fb:6.2f}")
    if torch_res:
        print(f"ratio tracegrad/torch fwd           : {tg_fwd / torch_res['fwd']:6.2f}")
        print(f"ratio tracegrad/torch fwd+bwd       : {tg_fwdbwd / torch_res['fwdbwd']:6.2f}   (target <= 3.0)")


if __name__ == "__main__":
    main()
