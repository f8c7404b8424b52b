"""A whole training step (forward, cross-entropy, backward, optimizer) compiled with
``tracegrad.compile``, side by side with the same step as a hand-written ``jax.jit`` + optax
function with donated state (the limit; also timed returning its gradients, which a torch step
keeps as ``.grad``), tracegrad eager, torch eager (1 thread) and
``torch.compile`` (torch in its own process). Not a test.

Models: the digits MLP (64-256-256-10) and CNN at batch 64, with SGD momentum and AdamW, and
a 4-layer transformer LM (d=128, 4 heads, vocab 256) at batch 32 x seq 64 with AdamW.

Prints median ms/step, each ratio to the JAX+optax step, first-call (trace + compile) seconds,
the number of traces over all calls (an lr scheduler changes lr on every call: it must stay
at one trace: counted on a second compiled step whose calls step a scheduler; the timed
steps keep lr fixed, as the JAX+optax one does), and tracegrad.compile's guard cost per call
(the whole call minus the jitted program with its state reads and write-back). The JAX+optax step, the compiled step and the
program alone are timed in interleaved blocks (``interleaved``), so the ratios hold on a
shared machine; the eager rows are timed on their own. ``--realtime`` runs it all under
``chrt -f`` where permitted: on a busy machine the medians then repeat within a few percent.

Cores. XLA:CPU runs the independent operations of one program concurrently on its thread
pool. On a 2-core machine the order its scheduler picks moves a digits-MLP step by up to 30%,
for reasons unrelated to what the program computes (measured 2026-12-01, JAX 0.10.2: the
JAX+optax step returning its gradients ran 1.41x the one returning none, and 0.78x with
``--xla_cpu_enable_concurrency_optimized_scheduler=false``; the two programs' optimized HLO
differs by one reduction). ``--cores 0`` pins everything to one core, where each program runs
its operations in one order: there, returning the gradients cost the JAX step 1-2%, and the
rows compare what the programs compute plus the per-call Python.

Async dispatch. tracegrad turns JAX's CPU async dispatch off (README "Runtime settings"), so
a compiled call returns only when its program has run and its Python adds to the step. A row
per model re-runs the JAX+optax and the compiled step in a process with it on
(``TRACEGRAD_ASYNC_DISPATCH=1``), waiting for the loss once per 50 steps: there each call's
Python overlaps the programs before it.

    python benchmarks/compile_step.py [--steps 200] [--warmup 5] [--models mlp,cnn,lm] [--no-torch-compile] [--realtime] [--torch-device cuda] [--cores 0]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
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
            x = self.emb(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
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


def interleaved(calls, steps, warmup, block=10):
    """``{label: median ms}`` of ``calls`` (``{label: call}``, each already called once), timed
    in rounds: each variant runs one untimed call then ``block`` timed ones per round, so its
    state is warm in the caches as in a training loop (a step that follows another model's
    step finds none of its state cached: on the digits MLP that alone costs ~10%), while load
    from elsewhere on a shared machine falls on every variant alike."""
    for _ in range(warmup):
        for call in calls.values():
            call()
    times = {label: [] for label in calls}
    for _ in range(max(1, steps // block)):
        for label, call in calls.items():
            call()
            for _ in range(block):
                t = time.perf_counter()
                call()
                times[label].append(time.perf_counter() - t)
    return {label: statistics.median(v) * 1e3 for label, v in times.items()}


def torch_style(torch, name, opt_name, compiled, schedule=False, device=None, item=False, zero_end=False):
    """``(call, first-call s, compiled function, (x, y))`` for tracegrad or torch, eager or
    compiled: ``call()`` runs one step and waits for the loss; with ``schedule`` it also steps
    an lr scheduler (lr changes on every call). ``device``: where torch puts the model and
    data (tracegrad uses JAX's default device). ``item``: the step itself returns
    ``loss.item()`` (a Python number out of the compiled step: NOTE [deferred item]).
    ``zero_end``: ``opt.zero_grad()`` after ``opt.step()`` instead of before the forward: no
    ``.grad`` is left after the call, so the program need not return the gradients (the
    observable result of the JAX+optax step)."""
    torch.manual_seed(0)
    model = build(torch, name)
    if device is not None:
        model.to(device)
    opt = make_opt(torch, model, opt_name)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 1.0 / (1 + 1e-3 * i))
    x, y = data(torch, name)
    if device is not None:
        x, y = x.to(device), y.to(device)
    F = torch.nn.functional

    def step(x, y):
        if not zero_end:
            opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if zero_end:
            opt.zero_grad()
        return loss.item() if item else loss
    f = torch.compile(step) if compiled else step

    def call():
        loss = f(x, y)
        if schedule:
            sched.step()
        return loss if item else loss.item()     # waits for the result, as a loop that logs the loss
    t0 = time.perf_counter()
    call()
    return call, time.perf_counter() - t0, f, (x, y)


def program_alone(f, leaves):
    """A call of the compiled function's jitted program with its state reads and write-back
    but without the guards and argument signature (``Python per call`` = whole call minus
    this)."""
    from tracegrad._x64 import x64_enter, x64_exit
    region = next(r for entries in f._cache.values() if isinstance(entries, list) for r in entries)

    def call():
        prev = x64_enter()
        try:
            outs = region.program(region.read_inputs(leaves))
        finally:
            x64_exit(prev)
        return region.write_back(outs, leaves).item()
    return call


def new_batches(f, xy, ring=4):
    """The compiled step called on a new copy of the batch each time (as from a DataLoader),
    so the class-target range check runs on every call: the rows above reuse one batch, whose
    arrays, already checked, are not checked again (``Precheck`` in _lowering/program.py)."""
    copies = [tuple(t.clone() for t in xy) for _ in range(ring)]
    k = [0]

    def call():
        k[0] = (k[0] + 1) % ring
        return f(*copies[k[0]]).item()
    return call


def jax_optax(name, opt_name, with_grads=False, wait=True):
    """The same step written by hand in JAX + optax, jitted, state donated: ``(call, first s)``.
    ``with_grads``: the step also returns its gradients, as a torch step must (each
    parameter's ``.grad`` is a new tensor after the call); on XLA:CPU that alone costs 10-25%
    on the digits MLP (NOTE [donation on CPU] in ``tracegrad/_lowering/program.py``).
    ``wait=False``: ``call()`` returns the loss array without waiting for it."""
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
        return (optax.apply_updates(p, updates), s, loss) + ((g,) if with_grads else ())
    train_step = jax.jit(train_step, donate_argnums=(0, 1))
    xa, ya = x._value, y._value
    from tracegrad._x64 import x64_scope

    def call():
        with x64_scope():
            state[0], state[1], loss = train_step(state[0], state[1], xa, ya)[:3]
        return float(loss) if wait else loss
    t0 = time.perf_counter()
    call()
    return call, time.perf_counter() - t0


def unsynced(calls, wait, steps, block=50):
    """``{label: median ms per step}`` of ``calls`` run ``block`` steps between waits (a loop
    that logs its loss every ``block`` steps), in interleaved rounds; ``wait[label](result)``
    waits for a call's result."""
    for label, call in calls.items():
        for _ in range(5):
            wait[label](call())
    times = {label: [] for label in calls}
    for _ in range(max(8, steps // block)):
        for label, call in calls.items():
            t = time.perf_counter()
            for _ in range(block):
                r = call()
            wait[label](r)
            times[label].append((time.perf_counter() - t) / block)
    return {label: statistics.median(v) * 1e3 for label, v in times.items()}


def async_worker(args):
    """Run with JAX's CPU async dispatch on (``TRACEGRAD_ASYNC_DISPATCH=1``, set by ``main``
    for this process): the JAX+optax and the compiled step waited for once per 50 steps,
    where each call's Python overlaps the programs still running. JSON rows to stdout."""
    import tracegrad
    out = {}
    for name in args.models:
        for opt in ("sgd", "adamw"):
            if name == "lm" and opt == "sgd":
                continue
            ref_call, _ = jax_optax(name, opt, wait=False)
            grads_call, _ = jax_optax(name, opt, with_grads=True, wait=False)
            _, _, f, (x, y) = torch_style(tracegrad, name, opt, True)
            ms = unsynced({"ref": ref_call, "grads": grads_call, "tc": lambda: f(x, y)},
                          {"ref": float, "grads": float, "tc": lambda t: t.item()}, args.steps)
            out[f"{name}/{opt}"] = [ms["ref"], ms["grads"], ms["tc"]]
    print(json.dumps(out))


def torch_worker(args):
    import torch
    if args.torch_device == "cpu":
        torch.set_num_threads(1)
    out = {}
    for name in args.models:
        for opt in ("sgd", "adamw"):
            if name == "lm" and opt == "sgd":
                continue
            call, first, _, _ = torch_style(torch, name, opt, False, device=args.torch_device)
            out[f"{name}/{opt}/eager"] = (time_calls(call, args.steps, args.warmup)[0], first)
            if args.torch_compile:
                try:
                    call, first, _, _ = torch_style(torch, name, opt, True, device=args.torch_device)
                    out[f"{name}/{opt}/compile"] = (time_calls(call, args.steps, args.warmup)[0], first)
                except Exception as e:  # noqa: BLE001 -- a missing C++ toolchain, say
                    out[f"{name}/{opt}/compile"] = str(e).splitlines()[0][:80]
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--models", default="mlp,cnn,lm")
    p.add_argument("--no-torch-compile", dest="torch_compile", action="store_false")
    p.add_argument("--realtime", action="store_true",
                   help="re-run under `chrt -f 10` (needs the privilege): stable medians on a busy machine; "
                        "ignored with a single --cores core")
    p.add_argument("--torch-device", default="cpu",
                   help="where torch runs its rows: 'cpu' (1 thread) or 'cuda' (beside tracegrad on a GPU)")
    p.add_argument("--cores", default="",
                   help="CPU cores to pin this process (and the torch worker) to, e.g. '0' or '0,1': "
                        "see 'Cores' in the module docstring")
    p.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--async-worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.models = args.models.split(",")
    if args.cores:
        # before JAX starts: its CPU client sizes its thread pool from the affinity mask
        os.sched_setaffinity(0, {int(c) for c in args.cores.split(",")})
    if args.realtime and "," not in args.cores and args.cores:
        # a real-time process pinned to one core starves that core's kernel threads: a run
        # under `--cores 0 --realtime` spun at startup for 27 minutes, unkillable until its
        # policy was reset (2026-12-07)
        print("--realtime ignored with a single --cores core: timing at normal priority")
        args.realtime = False
    if args.realtime and os.environ.get("_TRACEGRAD_BENCH_RT") != "1" and shutil.which("chrt"):
        # real-time scheduling: on a machine shared with other jobs, their load otherwise
        # lands on whichever variant runs during it (medians then move by 2x from run to run)
        os.environ["_TRACEGRAD_BENCH_RT"] = "1"
        argv = [a for a in sys.argv[1:] if a != "--realtime"]
        try:
            os.execvp("chrt", ["chrt", "-f", "10", sys.executable, os.path.abspath(__file__), *argv])
        except OSError as e:
            print(f"--realtime: chrt failed ({e}); timing at normal priority")
    if args.torch_worker:
        return torch_worker(args)
    if args.async_worker:
        return async_worker(args)
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-worker", "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--models", ",".join(args.models), "--torch-device", args.torch_device]
    if not args.torch_compile:
        cmd.append("--no-torch-compile")
    try:
        torch_rows = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True)
                                .stdout.strip().splitlines()[-1])
    except (subprocess.CalledProcessError, FileNotFoundError, IndexError) as e:
        print(f"torch unavailable ({e}); tracegrad and JAX only")
        torch_rows = {}
    # the unsynced loop, in a process with JAX's CPU async dispatch on (tracegrad turns it off)
    try:
        acmd = [sys.executable, os.path.abspath(__file__), "--async-worker", "--steps", str(args.steps),
                "--models", ",".join(args.models)]
        async_rows = json.loads(subprocess.run(acmd, capture_output=True, text=True, check=True,
                                               env={**os.environ, "TRACEGRAD_ASYNC_DISPATCH": "1"})
                                .stdout.strip().splitlines()[-1])
    except (subprocess.CalledProcessError, IndexError) as e:
        print(f"async-dispatch rows unavailable ({e})")
        async_rows = {}
    import tracegrad
    import jax
    print(f"device: {jax.devices()[0].device_kind}; median of {args.steps} calls after {args.warmup} warm-up; "
          "ratio = time / JAX+optax jit")
    for name in args.models:
        for opt in ("sgd", "adamw"):
            if name == "lm" and opt == "sgd":
                continue
            ref_call, ref_first = jax_optax(name, opt)
            tc_call, tc_first, f, xy = torch_style(tracegrad, name, opt, True)
            tc_call()                        # the first call runs eagerly; the second traces
            grads_call, grads_first = jax_optax(name, opt, with_grads=True)
            item_call, _, item_f, _ = torch_style(tracegrad, name, opt, True, item=True)
            item_call()
            end_call, _, _, _ = torch_style(tracegrad, name, opt, True, zero_end=True)
            end_call()
            # "alone": the compiled step's program with its state reads and write-back but no
            # guards (whole call minus it = the per-call Python the cache lookup costs)
            ms = interleaved({"ref": ref_call, "tc": tc_call, "grads": grads_call,
                              "alone": program_alone(f, list(xy)), "new": new_batches(f, xy), "item": item_call,
                              "end": end_call},
                             args.steps, args.warmup)
            ref_ms, tc_ms, ms_grads = ms["ref"], ms["tc"], ms["grads"]
            # the same compiled step with an lr scheduler stepping between calls: one trace
            sc_call, _, sc_f, _ = torch_style(tracegrad, name, opt, True, schedule=True)
            for _ in range(args.steps):
                sc_call()
            extra = {"traces": sc_f.stats["traces"], "eager_calls": sc_f.stats["eager_calls"],
                     "calls": sc_f.stats["calls"], "overhead_us": (ms["tc"] - ms["alone"]) * 1e3}
            te_call, _, _, _ = torch_style(tracegrad, name, opt, False)
            te_ms = time_calls(te_call, max(5, args.steps // 5), 2)[0]
            print(f"\n{name} + {opt}:")
            rows = [("jax+optax jit (donated)", ref_ms, ref_first),
                    ("  the same, returning its grads", ms_grads, grads_first),
                    ("tracegrad.compile", tc_ms, tc_first),
                    ("  a new batch tensor every call", ms["new"], None),
                    ("  the step returning loss.item()", ms["item"], None),
                    ("  zero_grad() after opt.step()", ms["end"], None),
                    ("  its program alone (no guards)", ms["alone"], None), ("tracegrad eager", te_ms, None)]
            where = "1 thread" if args.torch_device == "cpu" else args.torch_device
            for label, key in ((f"torch eager ({where})", "eager"), (f"torch.compile ({where})", "compile")):
                v = torch_rows.get(f"{name}/{opt}/{key}")
                if isinstance(v, list):
                    rows.append((label, v[0], v[1]))
                elif v:
                    rows.append((label + f" [{v}]", float("nan"), None))
            for label, t, first in rows:
                f = f"   first call {first:6.2f} s" if first is not None else ""
                print(f"  {label:<32} {t:9.3f} ms  x{t / ref_ms:6.2f}{f}")
            print(f"  tracegrad.compile / the JAX step returning its grads (the same observable result): "
                  f"x{tc_ms / ms_grads:.2f}")
            a = async_rows.get(f"{name}/{opt}")
            if a:
                print(f"  JAX async dispatch on, waiting once per 50 steps: jax+optax {a[0]:.3f} ms, returning "
                      f"its grads {a[1]:.3f} ms, tracegrad.compile {a[2]:.3f} ms per step: x{a[2] / a[0]:.2f} "
                      f"(x{a[2] / a[1]:.2f} of the one returning its grads)")
            print(f"  tracegrad.compile with an lr scheduler stepping every call: {extra['traces']} trace(s) "
                  f"over {extra['calls']} calls, {extra['eager_calls']} eager call(s); guards and argument "
                  f"signature ~{extra['overhead_us']:.0f} us per call; the step returning loss.item(): "
                  f"{item_f.stats['traces']} trace(s), {len(item_f.stats['graph_breaks'])} graph break(s)")


if __name__ == "__main__":
    main()
