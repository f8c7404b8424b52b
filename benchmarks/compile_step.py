"""A whole training step (forward, cross-entropy, backward, optimizer) compiled with
``tracegrad.compile``, side by side with the same step as a hand-written ``jax.jit`` + optax
function with donated state (the limit), tracegrad eager, torch eager (1 thread) and
``torch.compile`` (torch in its own process). Not a test.

Models: the digits MLP (64-256-256-10) and CNN at batch 64, with SGD momentum and AdamW, and
a 4-layer transformer LM (d=128, 4 heads, vocab 256) at batch 32 x seq 64 with AdamW.

Prints median ms/step, each ratio to the JAX+optax step, first-call (trace + compile) seconds,
the number of traces over all calls (an lr scheduler changes lr on every call: it must stay
at one trace), and tracegrad.compile's Python cost per call (the whole call minus the jitted
program alone).

    python benchmarks/compile_step.py [--steps 50] [--warmup 5] [--models mlp,cnn,lm] [--no-torch-compile]
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
LM = dict(vocab=256, d=128, heads=4, layers=4, batch=32, seq=64)


def build(torch, name):
    nn = torch.nn
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 2 * 2, 10))
    if name == "mlp":
        return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    return _lm(torch)


def _lm(torch):
    nn, F = torch.nn, torch.nn.functional
    c = LM

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(c["d"]), nn.LayerNorm(c["d"])
            self.qkv, self.proj = nn.Linear(c["d"], 3 * c["d"]), nn.Linear(c["d"], c["d"])
            self.fc1, self.fc2 = nn.Linear(c["d"], 4 * c["d"]), nn.Linear(4 * c["d"], c["d"])

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, c["heads"], d // c["heads"]).transpose(1, 2) for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class LMNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.pos = nn.Embedding(c["vocab"], c["d"]), nn.Embedding(c["seq"], c["d"])
            self.blocks = nn.ModuleList([Block() for _ in range(c["layers"])])
            self.ln, self.head = nn.LayerNorm(c["d"]), nn.Linear(c["d"], c["vocab"])

        def forward(self, idx):
            x = self.emb(idx) + self.pos(torch.arange(idx.shape[1]))
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln(x)).view(-1, c["vocab"])
    return LMNet()


def data(torch, name):
    if name == "lm":
        x = torch.randint(0, LM["vocab"], (LM["batch"], LM["seq"]))
        return x, torch.randint(0, LM["vocab"], (LM["batch"] * LM["seq"],))
    shape = (BATCH, 1, 8, 8) if name == "cnn" else (BATCH, 64)
    return torch.rand(*shape), torch.randint(0, 10, (BATCH,))


def make_opt(torch, model, opt):
    if opt == "sgd":
        return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return torch.optim.AdamW(model.parameters(), lr=1e-3)


def time_calls(call, steps, warmup):
    t0 = time.perf_counter()
    call()
    first = time.perf_counter() - t0
    for _ in range(warmup):
        call()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3, first


def torch_style(torch, name, opt_name, steps, warmup, compiled):
    """(ms/step, first-call s, extra) for tracegrad or torch, eager or compiled."""
    torch.manual_seed(0)
    model = build(torch, name)
    opt = make_opt(torch, model, opt_name)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 1.0 / (1 + 1e-3 * i))
    x, y = data(torch, name)
    F = torch.nn.functional

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    f = torch.compile(step) if compiled else step

    def call():
        loss = f(x, y)
        sched.step()                 # lr changes on every call
        return loss.item()           # waits for the result, as a loop that logs the loss
    ms, first = time_calls(call, steps, warmup)
    extra = {}
    if compiled and hasattr(f, "stats"):
        extra["traces"] = f.stats["traces"]
        extra["eager_calls"] = f.stats["eager_calls"]
        extra["overhead_us"] = _python_overhead(f, x, y, steps)
    return ms, first, extra


def _python_overhead(f, x, y, steps):
    """us per call spent outside the jitted program (guards, state gathering, write-back)."""
    import jax
    from tracegrad._x64 import x64_enter, x64_exit
    region = next(r for entries in f._cache.values() if isinstance(entries, list) for r in entries)
    whole, alone = [], []
    for _ in range(steps):
        t = time.perf_counter()
        jax.block_until_ready(f(x, y)._value)
        whole.append(time.perf_counter() - t)
    for _ in range(steps):
        t = time.perf_counter()
        prev = x64_enter()
        try:
            outs = region.program(region.read_inputs([x, y]))
        finally:
            x64_exit(prev)
        jax.block_until_ready(outs[0])
        alone.append(time.perf_counter() - t)
        region.write_back(outs, [x, y])
    return (statistics.median(whole) - statistics.median(alone)) * 1e6


def jax_optax(name, opt_name, steps, warmup):
    """The same step written by hand in JAX + optax, jitted, state donated."""
    import jax
    import optax
    import tracegrad
    # the same model built by tracegrad, then read out as a params pytree (same init/shapes)
    tracegrad.manual_seed(0)
    model = build(tracegrad, name)
    x, y = data(tracegrad, name)
    named = dict(model.named_parameters())
    params = {k: v.detach()._value for k, v in named.items()}

    def loss_fn(p, xa, ya):
        # the tracegrad model's forward as a pure function of p: storages hold the traced arrays
        old = {k: named[k]._st.array for k in p}
        for k, v in p.items():
            named[k]._st.array = v
            named[k]._st.gen += 1
        try:
            with tracegrad.no_grad():
                out = model(tracegrad.Tensor._make(xa))._value
        finally:
            for k, v in old.items():
                named[k]._st.array = v
                named[k]._st.gen += 1
        return optax.softmax_cross_entropy_with_integer_labels(out, ya).mean()
    tx = optax.sgd(0.01, momentum=0.9) if opt_name == "sgd" else optax.adamw(1e-3, weight_decay=1e-2)
    state = [params, tx.init(params)]

    def train_step(p, s, xa, ya):
        loss, g = jax.value_and_grad(loss_fn)(p, xa, ya)
        updates, s = tx.update(g, s, p)
        return optax.apply_updates(p, updates), s, loss
    train_step = jax.jit(train_step, donate_argnums=(0, 1))
    xa, ya = x._value, y._value
    from tracegrad._x64 import x64_scope

    def call():
        with x64_scope():
            state[0], state[1], loss = train_step(state[0], state[1], xa, ya)
        return float(loss)
    return time_calls(call, steps, warmup)


def torch_worker(args):
    import torch
    torch.set_num_threads(1)
    out = {}
    for name in args.models:
        for opt in ("sgd", "adamw"):
            if name == "lm" and opt == "sgd":
                continue
            out[f"{name}/{opt}/eager"] = torch_style(torch, name, opt, args.steps, args.warmup, False)[:2]
            if args.torch_compile:
                try:
                    out[f"{name}/{opt}/compile"] = torch_style(torch, name, opt, args.steps, args.warmup, True)[:2]
                except Exception as e:  # noqa: BLE001 -- a missing C++ toolchain, say
                    out[f"{name}/{opt}/compile"] = str(e).splitlines()[0][:80]
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--models", default="mlp,cnn,lm")
    p.add_argument("--no-torch-compile", dest="torch_compile", action="store_false")
    p.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.models = args.models.split(",")
    if args.torch_worker:
        return torch_worker(args)
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-worker", "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--models", ",".join(args.models)]
    if not args.torch_compile:
        cmd.append("--no-torch-compile")
    try:
        torch_rows = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True)
                                .stdout.strip().splitlines()[-1])
    except (subprocess.CalledProcessError, FileNotFoundError, IndexError) as e:
        print(f"torch unavailable ({e}); tracegrad and JAX only")
        torch_rows = {}
    import tracegrad
    import jax
    print(f"device: {jax.devices()[0].device_kind}; median of {args.steps} calls after {args.warmup} warm-up; "
          "ratio = time / JAX+optax jit")
    for name in args.models:
        for opt in ("sgd", "adamw"):
            if name == "lm" and opt == "sgd":
                continue
            ref_ms, ref_first = jax_optax(name, opt, args.steps, args.warmup)
            tc_ms, tc_first, extra = torch_style(tracegrad, name, opt, args.steps, args.warmup, True)
            te_ms, _, _ = torch_style(tracegrad, name, opt, max(5, args.steps // 5), 2, False)
            print(f"\n{name} + {opt}:")
            rows = [("jax+optax jit (donated)", ref_ms, ref_first),
                    ("tracegrad.compile", tc_ms, tc_first), ("tracegrad eager", te_ms, None)]
            for label, key in (("torch eager (1 thread)", "eager"), ("torch.compile (1 thread)", "compile")):
                v = torch_rows.get(f"{name}/{opt}/{key}")
                if isinstance(v, list):
                    rows.append((label, v[0], v[1]))
                elif v:
                    rows.append((label + f" [{v}]", float("nan"), None))
            for label, ms, first in rows:
                f = f"   first call {first:6.2f} s" if first is not None else ""
                print(f"  {label:<32} {ms:9.3f} ms  x{ms / ref_ms:6.2f}{f}")
            print(f"  tracegrad.compile: {extra.get('traces')} traces over all calls (lr changes every call), "
                  f"{extra.get('eager_calls')} eager call(s), Python per call ~{extra.get('overhead_us', 0):.0f} us")


if __name__ == "__main__":
    main()
