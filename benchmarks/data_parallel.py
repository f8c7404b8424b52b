"""Data parallel (DistributedDataParallel) and fully sharded (FullyShardedDataParallel) training
steps on 1, 2, 4 and 8 devices: median step time (compiled and eager) and memory per device.

    python benchmarks/data_parallel.py [--steps 20] [--devices 1,2,4,8]

Each device count runs in its own process with ``XLA_FLAGS=--xla_force_host_platform_device_count=N``
(JAX reads it once, when it starts). The step is an MLP (256-1024-1024-16, 1.3 M parameters)
with AdamW on a global batch of 256, wrapped in DDP or FSDP over a 1-d mesh of N devices and
compiled with ``tracegrad.compile`` (one XLA program per step, the gradient all-reduce or
reduce-scatter inside it). Columns:

- ``compiled ms`` / ``eager ms``: median wall time of one step;
- ``params/dev`` and ``optim/dev``: bytes of parameters and of AdamW's ``exp_avg``/``exp_avg_sq``
  held by one device (the first addressable shard of each array);
- ``args/dev``, ``temp/dev``: XLA's ``memory_analysis()`` of the compiled step (argument and
  temporary bytes per device).

Each process also gets ``--xla_cpu_multi_thread_eigen=false``: without it, N simulated devices on
a 2-core machine deadlocked in an all-reduce (XLA aborts after 40 s) once the matmuls were large
enough for Eigen's thread pool; do the same when simulating devices for your own runs. Even so,
on a cold compilation cache and a loaded machine a run occasionally aborted the same way (3 of
about 10 cold 8-device runs here, none of the warm ones): a worker that dies that way is run
once more.

On CPU the simulated devices share the same cores (here 2), so the time does not fall with
more devices: the curve shows what the collectives and the partitioning cost, not a speed-up.
The memory columns are what sharding buys: FSDP's per-device parameter and optimizer bytes
fall as 1/N, DDP's stay whole.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def worker(n, steps):
    import numpy as np

    import tracegrad as torch
    import tracegrad.nn as nn
    import tracegrad.nn.functional as F
    from tracegrad.distributed.device_mesh import init_device_mesh
    from tracegrad.distributed.fsdp import FullyShardedDataParallel as FSDP
    from tracegrad.nn.parallel import DistributedDataParallel as DDP

    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((256, 256)).astype(np.float32))
    y = torch.tensor(rng.integers(0, 16, 256))
    mesh = init_device_mesh("cpu", (n,), mesh_dim_names=("dp",))
    rows = []
    for name, wrap in (("DDP", lambda m: DDP(m, device_mesh=mesh)),
                       ("FSDP", lambda m: FSDP(m, device_mesh=mesh))):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 16))
        model = wrap(m)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        def timed(fn, k):
            times = []
            for _ in range(k):
                t0 = time.perf_counter()
                fn(x, y).item()
                times.append(time.perf_counter() - t0)
            return 1e3 * float(np.median(times))

        eager_ms = timed(step, max(3, steps // 4) + 1)
        compiled = torch.compile(step)
        for _ in range(3):                      # eager call, trace, first program call
            compiled(x, y).item()
        compiled_ms = timed(compiled, steps)
        mem = compiled.memory_analysis(x, y)

        def per_device(t):
            return t._st.array.addressable_shards[0].data.nbytes

        params = list(m.parameters())
        rows.append({
            "wrapper": name, "devices": n, "compiled_ms": compiled_ms, "eager_ms": eager_ms,
            "params_per_device": sum(per_device(p) for p in params),
            "params_total": sum(p._st.array.nbytes for p in params),
            "optim_per_device": sum(per_device(v) for p in params for k, v in opt.state[p].items()
                                    if k != "step"),
            "args_per_device": getattr(mem, "argument_size_in_bytes", None),
            "temp_per_device": getattr(mem, "temp_size_in_bytes", None)})
    print(json.dumps(rows))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--devices", default="1,2,4,8")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker is not None:
        return worker(a.worker, a.steps)
    rows = []
    for n in (int(v) for v in a.devices.split(",")):
        # one Eigen thread per op: with N simulated devices on few cores, a device program blocked
        # in a collective's rendezvous can hold the Eigen pool thread another device's matmul
        # needs, and XLA aborts after 40 s ("Termination timeout for `all reduce ...`")
        env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={n} "
                                         "--xla_cpu_multi_thread_eigen=false")
        for attempt in range(2):
            out = subprocess.run([sys.executable, __file__, "--worker", str(n), "--steps", str(a.steps)],
                                 env=env, capture_output=True, text=True, check=False)
            if not (out.returncode and "Termination timeout for `all reduce" in out.stderr):
                break
            # XLA:CPU aborted a collective whose participants did not all arrive (seen only on
            # a cold compilation cache with 8 simulated devices on 2 busy cores); run again
            print(f"{n} devices: XLA aborted an all-reduce rendezvous (attempt {attempt + 1}); "
                  "running again", file=sys.stderr)
        if out.returncode:
            sys.exit(out.stderr[-4000:])
        rows += json.loads(out.stdout.strip().splitlines()[-1])
    mib = 1 / 2 ** 20
    print("| wrapper | devices | compiled ms | eager ms | params/dev MiB | optim/dev MiB | "
          "args/dev MiB | temp/dev MiB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in sorted(rows, key=lambda r: (r["wrapper"], r["devices"])):
        fmt = [f"{r['compiled_ms']:.2f}", f"{r['eager_ms']:.1f}", f"{r['params_per_device'] * mib:.2f}",
               f"{r['optim_per_device'] * mib:.2f}",
               "-" if r["args_per_device"] is None else f"{r['args_per_device'] * mib:.2f}",
               "-" if r["temp_per_device"] is None else f"{r['temp_per_device'] * mib:.2f}"]
        print(f"| {r['wrapper']} | {r['devices']} | " + " | ".join(fmt) + " |")


if __name__ == "__main__":
    main()
