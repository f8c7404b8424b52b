"""Eager activation-checkpoint memory: tracegrad vs torch eager (1 thread), side by side. Not a test.

Model: an MLP of N blocks ``Linear(W, W) + GELU`` (or ReLU: ``--act relu``; default 32 blocks,
width 1024, batch 256), or with ``--model transformer`` a stack of N
``TransformerEncoderLayer(W, --heads, 4W, dropout=0, batch_first=True, GELU)`` on input
``(batch, --seq, W)``; loss ``out.square().mean()``, one forward + backward per measurement.
Variants:

* ``none``: no checkpointing;
* ``per-layer``: every block under ``checkpoint(use_reentrant=False)``;
* ``per-layer-reentrant``: the same with ``use_reentrant=True``;
* ``sqrt-n``: ceil(sqrt(N)) segments, every one checkpointed (non-reentrant);
* ``sequential``: ``checkpoint_sequential(model, ceil(sqrt(N)), x, use_reentrant=False)`` (the last
  segment runs plain, as torch's does).

Columns:

* ``saved MiB``: peak bytes held for backward, counted with ``saved_tensors_hooks`` around the
  forward: every packed tensor is counted once per storage (parameters excluded: they live
  anyway) from pack until its node frees it. With checkpointing only the checkpoints' inputs
  reach these hooks (what the region saves inside goes to the checkpoint's own hooks).
* ``peak MiB``: process working-set growth during one step (without the counting hooks) from
  parameters and input alone
  (Linux VmHWM after resetting it via /proc/self/clear_refs, minus VmRSS before; gradients,
  activations and temporaries), each (library, variant) in a fresh process with a fixed
  malloc mmap threshold so freed buffers leave RSS.
* ``ms``: the step's wall time (second step; the first compiles tracegrad's per-op programs).
* ``grad diff``: max |grad - grad without checkpointing| over all parameters (same process).

With ``--compiled``, a third row per variant, ``compiled``: ``tracegrad.compile`` of the whole
training step (zero_grad, forward, backward, ``SGD`` step); ``XLA temp MiB`` is
``memory_analysis().temp_size_in_bytes`` of its program and ``ms`` a compiled call.

    python benchmarks/checkpoint_memory.py [--model mlp|transformer] [--blocks 32] [--width 1024]
        [--batch 256] [--seq 64] [--heads 4] [--act gelu|relu] [--variants ...] [--compiled]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

VARIANTS = ("none", "per-layer", "per-layer-reentrant", "sqrt-n", "sequential")


def _status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")   # resets VmHWM to the current RSS
    except OSError:
        pass


def _trim():
    # give freed heap memory back to the OS, so the next step's growth shows in RSS
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def build(torch, blocks, width, act="gelu", model="mlp", heads=4):
    nn = torch.nn
    torch.manual_seed(0)
    if model == "transformer":
        return nn.Sequential(*[nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0,
                                                          activation=act, batch_first=True)
                               for _ in range(blocks)])
    a = {"gelu": nn.GELU, "relu": nn.ReLU}[act]
    return nn.Sequential(*[nn.Sequential(nn.Linear(width, width), a()) for _ in range(blocks)])


def forward(torch, model, x, variant):
    ck = torch.utils.checkpoint
    blocks = list(model.children())
    n = len(blocks)
    seg = math.ceil(math.sqrt(n))
    if variant == "none":
        return model(x)
    if variant in ("per-layer", "per-layer-reentrant"):
        for b in blocks:
            x = ck.checkpoint(b, x, use_reentrant=variant.endswith("reentrant"))
        return x
    if variant == "sqrt-n":
        size = math.ceil(n / seg)
        for i in range(0, n, size):
            x = ck.checkpoint(torch.nn.Sequential(*blocks[i:i + size]), x, use_reentrant=False)
        return x
    if variant == "sequential":
        return ck.checkpoint_sequential(model, seg, x, use_reentrant=False)
    raise ValueError(variant)


class SavedCounter:
    """Counts bytes packed for backward, per storage, from pack until the packed object dies."""

    def __init__(self, torch, storage_key, params):
        self.torch, self.key = torch, storage_key
        self.param_keys = {storage_key(p) for p in params}
        self.live, self.refs, self.total, self.peak = {}, {}, 0, 0

    def hooks(self):
        counter = self

        class Packed:
            __slots__ = ("t", "k")

            def __init__(self, t, k):
                self.t, self.k = t, k

            def __del__(self):
                if self.k is not None:
                    counter._drop(self.k)

        def pack(t):
            k = self.key(t)
            if k in self.param_keys:   # a parameter or a view of one (addmm saves weight.t())
                return Packed(t, None)
            if self.refs.get(k, 0) == 0:
                self.live[k] = t.numel() * t.element_size()
                self.total += self.live[k]
                self.peak = max(self.peak, self.total)
            self.refs[k] = self.refs.get(k, 0) + 1
            return Packed(t, k)

        def unpack(p):
            return p.t
        return self.torch.autograd.graph.saved_tensors_hooks(pack, unpack)

    def _drop(self, k):
        self.refs[k] -= 1
        if self.refs[k] == 0:
            self.total -= self.live.pop(k)


def compiled_one(variant, blocks, width, batch, act, model_kind, seq, heads):
    """XLA temp bytes and time of one compiled training step of ``variant`` (tracegrad)."""
    import numpy as np
    import tracegrad as torch
    model = build(torch, blocks, width, act, model_kind, heads)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    shape = (batch, seq, width) if model_kind == "transformer" else (batch, width)
    x = torch.tensor(np.random.RandomState(0).standard_normal(shape).astype(np.float32),
                     requires_grad=True)

    @torch.compile
    def step(x):
        opt.zero_grad()
        loss = forward(torch, model, x, variant).square().mean()
        loss.backward()
        opt.step()
        return loss

    for _ in range(2):      # eager first call, then the trace
        step(x).item()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        step(x).item()
        times.append((time.perf_counter() - t0) * 1e3)
    temp = step.memory_analysis(x).temp_size_in_bytes
    return {"lib": "compiled", "variant": variant, "temp": temp, "ms": sorted(times)[1],
            "breaks": len(step.stats["graph_breaks"])}


def one(lib, variant, blocks, width, batch, act, model_kind="mlp", seq=64, heads=4):
    """Measure one (library, variant) in this process; returns a dict."""
    import numpy as np
    if lib == "compiled":
        return compiled_one(variant, blocks, width, batch, act, model_kind, seq, heads)
    if lib == "torch":
        import torch
        torch.set_num_threads(1)

        def key(t):
            return t.untyped_storage().data_ptr()
    else:
        import tracegrad as torch

        def key(t):
            return id(t._st)   # the Storage object: views and detach() share it
    model = build(torch, blocks, width, act, model_kind, heads)
    # the input requires grad, as a block's input inside a network does (the reentrant
    # variant gives no parameter gradients otherwise)
    shape = (batch, seq, width) if model_kind == "transformer" else (batch, width)
    x = torch.tensor(np.random.RandomState(0).standard_normal(shape).astype(np.float32),
                     requires_grad=True)
    params = list(model.parameters())

    def step(v, count=None):
        for p in params:
            p.grad = None
        if count is None:
            out = forward(torch, model, x, v)
        else:
            with count.hooks():
                out = forward(torch, model, x, v)
        out.square().mean().backward()

    step(variant)   # warm-up: tracegrad compiles its per-op programs here
    import gc
    gc.collect()
    count = SavedCounter(torch, key, params)
    for p in params:   # the growth below then includes the new gradients, as a first step
        p.grad = None
    gc.collect()
    _trim()
    rss0 = _status("VmRSS")
    _reset_peak()
    t0 = time.perf_counter()
    step(variant)   # no hooks here: a pack hook keeps what it is given (tracegrad: a view's copy)
    ms = (time.perf_counter() - t0) * 1e3
    peak = _status("VmHWM") - rss0
    got = [p.grad.detach().numpy().copy() for p in params]
    step(variant, count)
    step("none")
    ref = [p.grad.detach().numpy() for p in params]
    diff = max(float(np.abs(a - b).max()) for a, b in zip(got, ref))
    return {"lib": lib, "variant": variant, "saved": count.peak, "peak": peak, "ms": ms, "diff": diff}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=32)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--act", default="gelu", choices=("gelu", "relu"))
    ap.add_argument("--model", default="mlp", choices=("mlp", "transformer"))
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--compiled", action="store_true", help="add tracegrad.compile rows")
    ap.add_argument("--one", nargs=2, metavar=("LIB", "VARIANT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one[0], a.one[1], a.blocks, a.width, a.batch, a.act, a.model,
                             a.seq, a.heads)))
        return
    rows = []
    for variant in a.variants.split(","):
        for lib in ("torch", "tracegrad") + (("compiled",) if a.compiled else ()):
            cmd = [sys.executable, __file__, "--one", lib, variant, "--blocks", str(a.blocks),
                   "--width", str(a.width), "--batch", str(a.batch), "--act", a.act,
                   "--model", a.model, "--seq", str(a.seq), "--heads", str(a.heads)]
            # a fixed mmap threshold: every large buffer is its own mapping, returned to the OS
            # when freed, so RSS follows the working set in both libraries
            env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if r.returncode:
                print(r.stderr[-2000:], file=sys.stderr)
                continue
            rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
    mib = 2 ** 20
    if a.model == "transformer":
        print(f"{a.blocks} x TransformerEncoderLayer(d_model={a.width}, nhead={a.heads}, "
              f"dim_feedforward={4 * a.width}, {a.act}), input ({a.batch}, {a.seq}, {a.width}), "
              "float32, one forward+backward")
    else:
        print(f"MLP {a.blocks} x (Linear({a.width}, {a.width}) + {a.act.upper()}), batch {a.batch}, "
              "float32, one forward+backward")
    print(f"{'variant':<22}{'library':<11}{'saved MiB':>10}{'peak MiB':>10}{'ms':>9}{'grad diff':>11}"
          f"{'XLA temp MiB':>14}")
    for r in rows:
        if r["lib"] == "compiled":
            print(f"{r['variant']:<22}{r['lib']:<11}{'':>10}{'':>10}{r['ms']:>9.0f}{'':>11}"
                  f"{r['temp'] / mib:>14.1f}" + (f"  ({r['breaks']} graph breaks)" if r["breaks"] else ""))
            continue
        print(f"{r['variant']:<22}{r['lib']:<11}{r['saved'] / mib:>10.1f}{r['peak'] / mib:>10.1f}"
              f"{r['ms']:>9.0f}{r['diff']:>11.1e}")
    for lib, field in (("torch", "saved"), ("tracegrad", "saved"), ("compiled", "temp")):
        base = {r["variant"]: r[field] for r in rows if r["lib"] == lib}
        if "none" not in base:
            continue
        red = [f"{v} {base['none'] / max(b, 1):.1f}x" for v, b in base.items() if v != "none"]
        print(f"{'XLA temp' if lib == 'compiled' else 'saved-bytes'} reduction, {lib}: " + ", ".join(red))


if __name__ == "__main__":
    main()
