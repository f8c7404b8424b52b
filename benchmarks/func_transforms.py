"""``tracegrad.func`` and ``tracegrad.autograd.functional`` against torch (issue 12):

- per-sample gradients of an MLP (32-64-10, cross-entropy) over a batch of 256:
  ``vmap(grad(loss), in_dims=(None, 0, 0))`` over ``functional_call``, the same under
  ``jax.jit`` through ``func.to_jax``, and a Python loop of 256 ``backward()`` calls;
- the Jacobian of ``x -> tanh(W @ x)`` (100 -> 100): ``func.jacrev``,
  ``autograd.functional.jacobian`` with and without ``vectorize``.

torch runs in its own process at 1 thread (torch and JAX in one process slow each other).
Prints median ms per call side by side and the ratio tracegrad / torch (below 1: faster). Not a test.

    python benchmarks/func_transforms.py [--reps 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

BATCH, N = 256, 100


def timed(fn, reps, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return round(statistics.median(times) * 1e3, 2)


def cases(torch, reps, sync):
    """ms per call of each case, for ``torch`` = tracegrad or torch; ``sync(x)`` waits for x."""
    nn, F = torch.nn, torch.func
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((BATCH, 32)).astype(np.float32))
    y = torch.tensor(rng.integers(0, 10, BATCH))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        out = F.functional_call(model, p, (xi.unsqueeze(0),))
        return nn.functional.cross_entropy(out, yi.unsqueeze(0))
    per_sample = F.vmap(F.grad(loss), in_dims=(None, 0, 0))

    def loop():
        for i in range(BATCH):
            model.zero_grad()
            nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        sync(model[0].weight.grad)

    w = torch.tensor(rng.standard_normal((N, N)) / 10, dtype=torch.float32)
    v = torch.tensor(rng.standard_normal(N), dtype=torch.float32)

    def f(z):
        return torch.tanh(w @ z)
    res = {
        "per-sample grads vmap(grad)": timed(lambda: sync(per_sample(params, x, y)["0.weight"]), reps),
        "per-sample grads loop": timed(loop, max(1, reps // 2), warmup=1),
        "jacobian 100x100 func.jacrev": timed(lambda: sync(F.jacrev(f)(v)), reps),
        "jacobian 100x100 autograd.functional": timed(
            lambda: sync(torch.autograd.functional.jacobian(f, v)), max(1, reps // 2), warmup=1),
        "jacobian 100x100 autograd.functional vectorize": timed(
            lambda: sync(torch.autograd.functional.jacobian(f, v, vectorize=True)), reps),
    }
    if torch.__name__ == "tracegrad":
        compiled = torch.compile(per_sample)
        res["per-sample grads tracegrad.compile(vmap(grad))"] = timed(
            lambda: sync(compiled(params, x, y)["0.weight"]), reps)
        cjac = torch.compile(F.jacrev(f))
        res["jacobian 100x100 tracegrad.compile(func.jacrev)"] = timed(lambda: sync(cjac(v)), reps)
        import jax
        import jax.numpy as jnp
        jparams, apply = torch.func.to_jax(model)

        def jloss(p, xi, yi):
            logits = apply(p, xi[None])
            return -jax.nn.log_softmax(logits)[0, yi]
        jitted = jax.jit(jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0)))
        xa, ya = jnp.asarray(x.numpy()), jnp.asarray(y.numpy())
        res["per-sample grads to_jax + jax.jit"] = timed(
            lambda: jitted(jparams, xa, ya)["0.weight"].block_until_ready(), reps)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--torch-worker", action="store_true")
    args = ap.parse_args()
    if args.torch_worker:
        import torch
        torch.set_num_threads(1)
        print(json.dumps(cases(torch, args.reps, lambda t: t)))
        return
    import tracegrad
    ours = cases(tracegrad, args.reps, lambda t: t.jax().block_until_ready())
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--torch-worker", "--reps", str(args.reps)],
                         capture_output=True, text=True, check=True)
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"{'case':50s} {'tracegrad ms':>13s} {'torch ms':>10s} {'ratio':>7s}")
    for k, v in ours.items():
        t = theirs.get(k)
        ratio = f"{v / t:.2f}x" if t else "-"
        print(f"{k:50s} {v:13.2f} {t if t is not None else '-':>10} {ratio:>7s}")
    # rows without a torch counterpart: against torch's eager vmap(grad) / jacrev
    for k, base in (("per-sample grads tracegrad.compile(vmap(grad))", "per-sample grads vmap(grad)"),
                    ("per-sample grads to_jax + jax.jit", "per-sample grads vmap(grad)"),
                    ("jacobian 100x100 tracegrad.compile(func.jacrev)", "jacobian 100x100 func.jacrev")):
        if k in ours and theirs.get(base):
            print(f"  {k} vs torch {base}: {ours[k] / theirs[base]:.2f}x")


if __name__ == "__main__":
    main()
