"""One rank of tests/distributed/test_two_processes.py: torch's environment (RANK, WORLD_SIZE=2,
MASTER_ADDR, MASTER_PORT) -> ``init_process_group("gloo")`` (``jax.distributed``), then
DistributedDataParallel training on this rank's half of the global batch, collectives and the
DistributedSampler's defaults. Prints one JSON object; the parent test asserts."""
import json
import os
import sys

import numpy as np

import tracegrad as torch
import tracegrad.distributed as dist
import tracegrad.nn as nn
from tracegrad.nn.parallel import DistributedDataParallel as DDP
from tracegrad.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")          # before any tensor: JAX must know the other process
rank, world = dist.get_rank(), dist.get_world_size()
out = {"rank": rank, "world": world, "env_rank": int(os.environ["RANK"])}

data = np.load(sys.argv[1])
X, Y = data["x"], data["y"]              # the global batches, (steps, 16, 3) and (steps, 16, 1)
torch.manual_seed(rank)                  # different initial values: DDP broadcasts rank 0's
model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
if rank == 0:
    model.load_state_dict({k: torch.tensor(v) for k, v in np.load(sys.argv[2]).items()})
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
half = X.shape[1] // world
losses = []
for x, y in zip(X, Y):
    xs, ys = x[rank * half:(rank + 1) * half], y[rank * half:(rank + 1) * half]
    opt.zero_grad()
    loss = ((ddp(torch.tensor(xs)) - torch.tensor(ys)) ** 2).mean()
    loss.backward()
    opt.step()
    losses.append(loss.item())
out["losses"] = losses
out["state"] = {k: v.numpy().tolist() for k, v in model.state_dict().items()}

# a compiled step across processes runs eagerly (a graph break with its reason), same values
import warnings  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")

    @torch.compile
    def step(x, y):
        opt.zero_grad()
        loss = ((ddp(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    for _ in range(2):
        step(torch.tensor(X[0][rank * half:(rank + 1) * half]), torch.tensor(Y[0][rank * half:(rank + 1) * half]))
out["compiled"] = {"breaks": [r for r, _ in step.stats["graph_breaks"]],
                   "state": {k: v.numpy().tolist() for k, v in model.state_dict().items()}}

# no_sync: two local backward passes accumulate, the next synced one averages the sum
ddp.zero_grad()
xs = torch.tensor(X[0][rank * half:(rank + 1) * half])
with ddp.no_sync():
    ddp(xs).sum().backward()
local = model[0].bias.grad.numpy().tolist()
ddp(xs).sum().backward()
out["no_sync"] = {"local": local, "synced": model[0].bias.grad.numpy().tolist()}

# collectives
t = torch.tensor([1.0, 2.0]) * (rank + 1)
dist.all_reduce(t)
out["all_reduce_sum"] = t.tolist()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t, op=dist.ReduceOp.MAX)
out["all_reduce_max"] = t.tolist()
t = torch.tensor([float(rank) + 5])
dist.broadcast(t, src=1)
out["broadcast"] = t.tolist()
parts = [torch.zeros(2, dtype=torch.int64) for _ in range(world)]
dist.all_gather(parts, torch.tensor([rank, 10 * rank]))
out["all_gather"] = [p.tolist() for p in parts]
objs = [None] * world
dist.all_gather_object(objs, {"rank": rank})
out["all_gather_object"] = objs
lst = [f"from {rank}"]
dist.broadcast_object_list(lst, src=0)
out["broadcast_object_list"] = lst
dist.barrier()
sampler = DistributedSampler(range(7), shuffle=False)
out["sampler"] = {"num_replicas": sampler.num_replicas, "rank": sampler.rank, "indices": list(sampler)}
dist.destroy_process_group()
print(json.dumps(out))
