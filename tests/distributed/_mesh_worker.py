"""Run by tests/distributed/test_mesh.py in a subprocess with 8 simulated CPU devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=8``, set before JAX starts): trains the
same tiny MLP on one device and on a mesh (DistributedDataParallel, FullyShardedDataParallel,
fully_shard; eager and compiled; SGD with momentum and AdamW) and prints one JSON object of
measurements for the parent test to assert on. Nothing here asserts: the parent does."""
import json
import os
import sys

assert "xla_force_host_platform_device_count=8" in os.environ.get("XLA_FLAGS", "")

import numpy as np  # noqa: E402

import tracegrad as torch  # noqa: E402
import tracegrad.nn as nn  # noqa: E402
import tracegrad.nn.functional as F  # noqa: E402
from tracegrad.distributed.device_mesh import init_device_mesh  # noqa: E402
from tracegrad.distributed.fsdp import FullyShardedDataParallel as FSDP  # noqa: E402
from tracegrad.distributed.fsdp import ShardingStrategy, fully_shard  # noqa: E402
from tracegrad.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

STEPS = 3
rng = np.random.default_rng(0)
X = rng.standard_normal((STEPS + 2, 16, 8)).astype(np.float32)
Y = rng.integers(0, 8, (STEPS + 2, 16))
out = {"devices": None}
mesh = init_device_mesh("cpu", (8,), mesh_dim_names=("dp",))
mesh2 = init_device_mesh("cpu", (2, 4), mesh_dim_names=("replicate", "shard"))
out["devices"] = mesh.size()


def make():
    # every dim 0 divides by 8: FSDP shards every parameter (per-device bytes exactly 1/8)
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 8))


def spec(t):
    s = t._st.array.sharding
    return [list(p) if isinstance(p, tuple) else p for p in s.spec] if hasattr(s, "spec") else "single"


def run(wrap, optname, compiled):
    m = make()
    model = wrap(m) if wrap else m
    params = list(model.parameters())
    opt = (torch.optim.SGD(params, lr=0.1, momentum=0.9) if optname == "sgd"
           else torch.optim.AdamW(params, lr=0.01, weight_decay=0.1))

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    if compiled:
        step = torch.compile(step)
    losses = [step(torch.tensor(x), torch.tensor(y)).item() for x, y in zip(X[:STEPS], Y[:STEPS])]
    state = {k: v.numpy().tolist() for k, v in m.state_dict().items()}
    info = {"losses": losses, "state": state,
            "param_specs": [spec(p) for p in m.parameters()],
            "grad_specs": [spec(p.grad) for p in m.parameters()],
            "opt_specs": [spec(v) for p in m.parameters() for k, v in opt.state[p].items()
                          if k != "step"],
            "param_bytes_per_device": sum(p._st.array.addressable_shards[0].data.nbytes
                                          for p in m.parameters()),
            "param_bytes": sum(p._st.array.nbytes for p in m.parameters()),
            "stats": {k: v for k, v in step.stats.items() if k != "graph_breaks"} if compiled else None,
            "graph_breaks": [r for r, _ in step.stats["graph_breaks"]] if compiled else []}
    if wrap:
        y = model(torch.tensor(X[STEPS]))
        info["output_spec"] = spec(y)
    return info


results = {}
for optname in ("sgd", "adamw"):
    results[f"single/{optname}"] = run(None, optname, False)
    for compiled in (False, True):
        tag = "compiled" if compiled else "eager"
        results[f"ddp/{optname}/{tag}"] = run(lambda m: DDP(m, device_mesh=mesh), optname, compiled)
        results[f"fsdp/{optname}/{tag}"] = run(lambda m: FSDP(m, device_mesh=mesh), optname, compiled)
results["hsdp/adamw/compiled"] = run(
    lambda m: FSDP(m, device_mesh=mesh2, sharding_strategy=ShardingStrategy.HYBRID_SHARD), "adamw", True)
results["fully_shard/sgd/compiled"] = run(lambda m: fully_shard(m, mesh=mesh), "sgd", True)
out["runs"] = results

# no_sync: two backward passes inside no_sync and one after it accumulate the three gradients
m = make()
ddp = DDP(m, device_mesh=mesh)
batches = [(torch.tensor(x), torch.tensor(y)) for x, y in zip(X[:3], Y[:3])]
with ddp.no_sync():
    for x, y in batches[:2]:
        F.cross_entropy(ddp(x), y).backward()
    inside = ddp.require_backward_grad_sync
F.cross_entropy(ddp(batches[2][0]), batches[2][1]).backward()
ref = make()
for x, y in batches:
    F.cross_entropy(ref(x), y).backward()
out["no_sync"] = {"inside_flag": inside, "after_flag": ddp.require_backward_grad_sync,
                  "max_err": max(float(np.abs(a.grad.numpy() - b.grad.numpy()).max())
                                 for a, b in zip(m.parameters(), ref.parameters())),
                  "grad_scale": max(float(np.abs(b.grad.numpy()).max()) for b in ref.parameters())}

# a sharded tensor used eagerly: the same values as the unsharded one, through a few ops
from tracegrad.distributed import _jax  # noqa: E402

a_np = rng.standard_normal((16, 8)).astype(np.float32)
w_np = rng.standard_normal((8, 8)).astype(np.float32)


def ops(a, w):
    h = (a @ w).relu() + a[:, :1]
    h = h.softmax(-1) * 2
    h[::2] = h[::2] * 0.5          # an in-place write through a view
    s = h.sum(0)
    return [h, s, h.max(dim=1).values, h.t().contiguous().view(-1)]


plain = [t.numpy() for t in ops(torch.tensor(a_np), torch.tensor(w_np))]
a_sh = _jax.shard_tensor(torch.tensor(a_np), _jax.split_dim0(mesh.jax_mesh, ("dp",)))
got = ops(a_sh, torch.tensor(w_np))
out["eager_sharded"] = {"input_spec": spec(a_sh), "first_spec": spec(got[0]),
                        "max_err": max(float(np.abs(g.numpy() - p).max()) for g, p in zip(got, plain))}

# argument errors
errors = {}
try:
    DDP(make(), device_mesh=mesh2)
except Exception as e:  # noqa: BLE001
    errors["ddp_2d"] = type(e).__name__
try:
    init_device_mesh("cpu", (3,))
except Exception as e:  # noqa: BLE001
    errors["bad_shape"] = type(e).__name__
out["errors"] = errors
json.dump(out, sys.stdout)
