"""Eager training memory without checkpointing: tracegrad vs torch eager (1 thread). Not a test.

Model (issue 9): an MLP of N blocks ``Linear(W, W) + GELU`` (default 24 blocks, width 1024,
batch 2048, float32), loss ``out.square().mean()``, ``SGD(lr=1e-3)``; a step is
``zero_grad(); loss.backward(); opt.step()``. Each (library, allocator) runs in a fresh process.

Columns:

* ``peak MiB``: process working-set growth over ``--steps`` training steps, the first one
  included (tracegrad compiles or loads its per-op programs there): Linux VmHWM after the
  steps minus VmRSS after imports, model, optimizer and input were made. This is what a user
  sees: gradients, activations, temporaries, and what the C allocator keeps of freed memory.
* ``mmap MiB``: the same with ``MALLOC_MMAP_THRESHOLD_=131072`` for both libraries: every
  large buffer is its own mapping, returned to the OS when freed, so this is the live working
  set without allocator retention (slower: every buffer is fresh pages).
* ``saved MiB``: peak bytes held for backward, counted with ``saved_tensors_hooks`` (parameters
  excluded), as benchmarks/checkpoint_memory.py counts them.
* ``ms``, ``sys ms``: median wall and kernel time of the steps after the first (kernel time is
  mostly page faults: memory handed back to the OS is faulted in again when reused).

Rows: ``torch``; ``tracegrad``; ``tracegrad no-trim``: tracegrad with the engine's return of
freed memory off (NOTE [returning freed memory] in tracegrad/autograd/engine.py), i.e. before
issue 9's fix; ``tracegrad zero_grad``: ``opt.zero_grad()`` also reports the gradients it drops
to ``engine.note_released`` (done here by wrapping it, until the optimizer does it itself).

    python benchmarks/eager_memory.py [--blocks 24] [--width 1024] [--batch 2048] [--steps 3]
        [--repeat 1] [--no-mmap] [--libs torch,tracegrad,...]
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checkpoint_memory import SavedCounter, _reset_peak, _status  # noqa: E402

LIBS = ("torch", "tracegrad", "tracegrad no-trim", "tracegrad zero_grad")


def one(lib, blocks, width, batch, steps):
    """Train ``steps`` steps in this process; returns a dict of measurements."""
    import numpy as np
    if lib == "torch":
        import torch
        torch.set_num_threads(1)

        def key(t):
            return t.untyped_storage().data_ptr()
    else:
        import tracegrad as torch
        if lib.endswith("no-trim"):
            from tracegrad.autograd import engine
            engine._TRIM_BYTES = 1 << 62

        def key(t):
            return id(t._st)
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.GELU()) for _ in range(blocks)])
    params = list(model.parameters())
    rs = np.random.RandomState(1)   # the same initial weights in both libraries
    with torch.no_grad():
        for p in params:
            p.copy_(torch.tensor(rs.uniform(-1, 1, tuple(p.shape)).astype(np.float32) / width ** 0.5))
    opt = torch.optim.SGD(params, lr=1e-3)
    x = torch.tensor(np.random.RandomState(0).standard_normal((batch, width)).astype(np.float32))
    if lib.endswith("zero_grad") and not _reports_released(opt):
        from tracegrad.autograd import engine
        zero_grad = opt.zero_grad

        def reporting_zero_grad(set_to_none=True):
            n = sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None)
            zero_grad(set_to_none)
            if set_to_none:
                engine.note_released(n)
        opt.zero_grad = reporting_zero_grad

    def step(count=None):
        opt.zero_grad()
        if count is None:
            out = model(x)
        else:
            with count.hooks():
                out = model(x)
        loss = out.square().mean()
        del out
        loss.backward()
        opt.step()
        return float(loss)

    gc.collect()
    rss0 = _status("VmRSS")
    _reset_peak()
    wall, sys_ms, losses = [], [], []
    for _ in range(steps):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        losses.append(step())
        wall.append((time.perf_counter() - t0) * 1e3)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        sys_ms.append((r1.ru_stime - r0.ru_stime) * 1e3)
    peak = _status("VmHWM") - rss0
    count = SavedCounter(torch, key, params)
    step(count)
    return {"lib": lib, "peak": peak, "saved": count.peak, "ms": statistics.median(wall[1:] or wall),
            "sys_ms": statistics.median(sys_ms[1:] or sys_ms), "losses": losses}


def _reports_released(opt):
    import inspect
    try:
        return "note_released" in inspect.getsource(type(opt).zero_grad)
    except (OSError, TypeError):
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=24)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--libs", default=",".join(LIBS))
    ap.add_argument("--no-mmap", action="store_true", help="skip the fixed-mmap-threshold runs")
    ap.add_argument("--repeat", type=int, default=1,
                    help="processes per row (the C allocator's placement varies run to run): "
                         "the median is shown, with the range")
    ap.add_argument("--one", metavar="LIB", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one, a.blocks, a.width, a.batch, a.steps)))
        return
    rows = {}
    for lib in a.libs.split(","):
        for mmap in (False,) if a.no_mmap else (False, True):
            cmd = [sys.executable, __file__, "--one", lib, "--blocks", str(a.blocks),
                   "--width", str(a.width), "--batch", str(a.batch), "--steps", str(a.steps)]
            env = dict(os.environ)
            env.pop("MALLOC_MMAP_THRESHOLD_", None)
            if mmap:
                env["MALLOC_MMAP_THRESHOLD_"] = "131072"
            runs = []
            for _ in range(a.repeat):
                r = subprocess.run(cmd, capture_output=True, text=True, env=env)
                if r.returncode:
                    print(r.stderr[-2000:], file=sys.stderr)
                    continue
                runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
            if runs:
                runs.sort(key=lambda r: r["peak"])
                row = dict(runs[len(runs) // 2])
                row["range"] = (runs[0]["peak"], runs[-1]["peak"])
                rows[(lib, mmap)] = row
    mib = 2 ** 20
    print(f"MLP {a.blocks} x (Linear({a.width}, {a.width}) + GELU), batch {a.batch}, float32, SGD, "
          f"{a.steps} training steps from a fresh model, no checkpointing")
    print(f"{'library':<20}{'peak MiB':>10}{'x torch':>9}{'mmap MiB':>10}{'x torch':>9}"
          f"{'saved MiB':>11}{'ms':>8}{'sys ms':>8}" + ("   peak range" if a.repeat > 1 else ""))
    ref = rows.get(("torch", False))
    ref_m = rows.get(("torch", True))
    for lib in a.libs.split(","):
        r, m = rows.get((lib, False)), rows.get((lib, True))
        if r is None:
            continue

        def ratio(v, base):
            return f"{v / base:>8.2f}x" if base else f"{'':>9}"
        mm = f"{m['peak'] / mib:>10.0f}{ratio(m['peak'], ref_m and ref_m['peak'])}" if m else f"{'':>19}"
        rng = f"   {r['range'][0] / mib:.0f}-{r['range'][1] / mib:.0f}" if a.repeat > 1 else ""
        print(f"{lib:<20}{r['peak'] / mib:>10.0f}{ratio(r['peak'], ref and ref['peak'])}{mm}"
              f"{r['saved'] / mib:>11.0f}{r['ms']:>8.0f}{r['sys_ms']:>8.0f}{rng}")
    if ref and ("tracegrad", False) in rows:
        d = max(abs(u - v) for u, v in zip(ref["losses"], rows[("tracegrad", False)]["losses"]))
        print(f"max |loss difference| torch vs tracegrad over the steps (same initial weights): {d:.2e}")


if __name__ == "__main__":
    main()
