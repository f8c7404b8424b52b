"""One training step (forward, cross-entropy loss, backward, SGD-momentum update) at batch 64
for two models, side by side:

- ``cnn``: the digits CNN of ``tracegrad/examples/digits.py`` (1x8x8 input,
  Conv(16)-ReLU-MaxPool-Conv(32)-ReLU-MaxPool-Linear(10)),
- ``mlp``: Linear 64-256-256-10 with ReLUs,

run with tracegrad eager, torch eager (in its own process: at 1 thread, and at torch's default
thread count) and a hand-written JAX + optax step under ``jax.jit``. Prints the median
ms/step and ratios to tracegrad. Not a test.

    python benchmarks/train_step.py [--steps 50] [--warmup 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BATCH = 64
LR, MOMENTUM = 0.01, 0.9


def build(nn, name):
    """The model, built from a torch-like ``nn`` module (tracegrad.nn or torch.nn)."""
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 2 * 2, 10))
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


def input_shape(name):
    return (BATCH, 1, 8, 8) if name == "cnn" else (BATCH, 64)


def time_steps(step, steps, warmup):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def eager(torch, name, steps, warmup):
    """ms/step of the torch-style eager loop; ``torch`` is tracegrad or torch."""
    torch.manual_seed(0)
    model = build(torch.nn, name)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.rand(*input_shape(name))
    y = torch.randint(0, 10, (BATCH,))

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()  # waits for the result, as a training loop that logs the loss
    return time_steps(step, steps, warmup)


def jax_jit(name, steps, warmup):
    """ms/step of a hand-written JAX model + optax SGD, the whole step under jax.jit."""
    import jax
    import jax.numpy as jnp
    import optax

    keys = iter(jax.random.split(jax.random.PRNGKey(0), 16))

    def dense(i, o):
        bound = 1 / i ** 0.5
        return {"w": jax.random.uniform(next(keys), (i, o), jnp.float32, -bound, bound),
                "b": jax.random.uniform(next(keys), (o,), jnp.float32, -bound, bound)}

    def conv(i, o):
        bound = 1 / (i * 9) ** 0.5
        return {"w": jax.random.uniform(next(keys), (o, i, 3, 3), jnp.float32, -bound, bound),
                "b": jax.random.uniform(next(keys), (o,), jnp.float32, -bound, bound)}

    def conv_relu_pool(p, x):
        x = jax.lax.conv_general_dilated(x, p["w"], (1, 1), ((1, 1), (1, 1)),
                                         dimension_numbers=("NCHW", "OIHW", "NCHW"))
        x = jax.nn.relu(x + p["b"][None, :, None, None])
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    if name == "cnn":
        params = {"c1": conv(1, 16), "c2": conv(16, 32), "fc": dense(128, 10)}

        def forward(p, x):
            x = conv_relu_pool(p["c2"], conv_relu_pool(p["c1"], x))
            return x.reshape(x.shape[0], -1) @ p["fc"]["w"] + p["fc"]["b"]
    else:
        params = {"l1": dense(64, 256), "l2": dense(256, 256), "l3": dense(256, 10)}

        def forward(p, x):
            x = jax.nn.relu(x @ p["l1"]["w"] + p["l1"]["b"])
            x = jax.nn.relu(x @ p["l2"]["w"] + p["l2"]["b"])
            return x @ p["l3"]["w"] + p["l3"]["b"]

    def loss_fn(p, x, y):
        return optax.softmax_cross_entropy_with_integer_labels(forward(p, x), y).mean()

    opt = optax.sgd(LR, momentum=MOMENTUM)
    state = [params, opt.init(params)]

    @jax.jit
    def train_step(p, s, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        updates, s = opt.update(g, s, p)
        return optax.apply_updates(p, updates), s, loss

    x = jax.random.uniform(next(keys), input_shape(name), jnp.float32)
    y = jax.random.randint(next(keys), (BATCH,), 0, 10)

    def step():
        state[0], state[1], loss = train_step(state[0], state[1], x, y)
        return float(loss)
    return time_steps(step, steps, warmup)


def torch_in_subprocess(threads, steps, warmup):
    """Run the torch eager measurement in a fresh process (torch and JAX in one process slow
    each other down); ``threads`` None keeps torch's default thread count."""
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-worker", "--steps", str(steps),
           "--warmup", str(warmup)]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    models = ("cnn", "mlp")

    if args.torch_worker:
        import torch
        if args.threads is not None:
            torch.set_num_threads(args.threads)
        print(json.dumps({m: eager(torch, m, args.steps, args.warmup) for m in models}
                         | {"threads": torch.get_num_threads()}))
        return

    try:
        torch1 = torch_in_subprocess(1, args.steps, args.warmup)
        torchd = torch_in_subprocess(None, args.steps, args.warmup)
    except (subprocess.CalledProcessError, FileNotFoundError) as e:
        print(f"torch unavailable ({e}); showing tracegrad and JAX only")
        torch1 = torchd = None

    import tracegrad
    import tracegrad.nn  # noqa: F401  (torch.nn / torch.optim are attributes after import torch)
    import tracegrad.optim  # noqa: F401
    rows = {m: {"tracegrad eager": eager(tracegrad, m, args.steps, args.warmup),
                "jax+optax jit": jax_jit(m, args.steps, args.warmup)} for m in models}
    for m in models:
        if torch1 is not None:
            rows[m]["torch eager (1 thread)"] = torch1[m]
            rows[m][f"torch eager ({torchd['threads']} threads)"] = torchd[m]

    print(f"training step, batch {BATCH}, SGD momentum; median of {args.steps} steps after "
          f"{args.warmup} warm-up; ms/step (ratio = time / tracegrad eager)")
    for m in models:
        print(f"\n{m}:")
        base = rows[m]["tracegrad eager"]
        for label, ms in rows[m].items():
            print(f"  {label:<26} {ms:8.3f} ms   x{ms / base:6.3f}")


if __name__ == "__main__":
    main()
