"""DeviceMesh and the wrappers on this process's one device (the 8-device runs are in
test_mesh.py): torch's names, errors, and a one-device mesh that leaves training unchanged."""
import numpy as np
import pytest

import tracegrad
from tracegrad.distributed.device_mesh import DeviceMesh, init_device_mesh
from tracegrad.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy, fully_shard

torch = pytest.importorskip("torch")
from torch.distributed.device_mesh import init_device_mesh as torch_init_device_mesh  # noqa: E402


@pytest.mark.parametrize("args, kw", [
    (("cpu", (1,)), dict(mesh_dim_names=("a", "a"))),
    (("cpu", (1,)), dict(mesh_dim_names=("a", "b"))),
    (("cuda:0", (1,)), {}),
])
def test_init_device_mesh_errors_as_torch(args, kw):
    with pytest.raises(Exception) as et:
        torch_init_device_mesh(*args, **kw)
    with pytest.raises(type(et.value)) as eg:
        init_device_mesh(*args, **kw)
    assert str(eg.value) == str(et.value)


def test_mesh_attributes_and_slicing():
    mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("replicate", "shard"))
    assert isinstance(mesh, DeviceMesh) and tracegrad.distributed.init_device_mesh is init_device_mesh
    assert (mesh.ndim, mesh.shape, mesh.size(), mesh.size("shard")) == (2, (1, 1), 1, 1)
    assert mesh.mesh_dim_names == ("replicate", "shard")
    assert mesh.jax_mesh.axis_names == ("replicate", "shard")
    assert mesh.mesh.tolist() == [[0]]
    sub = mesh["shard"]
    assert (sub.ndim, sub.mesh_dim_names, sub.jax_mesh.axis_names) == (1, ("shard",), ("shard",))
    assert mesh["shard", "replicate"].jax_mesh.axis_names == ("shard", "replicate")
    with pytest.raises(KeyError):
        mesh["tp"]
    with pytest.raises(RuntimeError, match="2 'cpu' devices|holds 2 devices"):
        init_device_mesh("cpu", (2,))


def _mlp():
    tracegrad.manual_seed(0)
    return tracegrad.nn.Sequential(tracegrad.nn.Linear(3, 4), tracegrad.nn.Tanh(),
                                   tracegrad.nn.Linear(4, 2))


@pytest.mark.parametrize("wrap", ["ddp", "fsdp", "fully_shard"])
def test_one_device_mesh_trains_as_plain_module(wrap):
    mesh = init_device_mesh("cpu", (1,), mesh_dim_names=("dp",))
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((3, 4, 3)).astype(np.float32)
    plain, inner = _mlp(), _mlp()
    model = {"ddp": lambda m: tracegrad.nn.parallel.DistributedDataParallel(m, device_mesh=mesh),
             "fsdp": lambda m: FullyShardedDataParallel(m, device_mesh=mesh),
             "fully_shard": lambda m: fully_shard(m, mesh=mesh)}[wrap](inner)
    for m in (plain, model):
        opt = tracegrad.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        for x in xs:
            opt.zero_grad()
            m(tracegrad.tensor(x)).pow(2).mean().backward()
            opt.step()
    for a, b in zip(plain.state_dict().values(), inner.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    if wrap == "fsdp":
        assert model.module is inner and list(model.state_dict()) == list(plain.state_dict())
        assert model.sharding_strategy is ShardingStrategy.FULL_SHARD
    if wrap == "fully_shard":
        from tracegrad.distributed.fsdp import FSDPModule
        assert model is inner and isinstance(model, FSDPModule)
        assert isinstance(model, tracegrad.nn.Sequential)


def test_fsdp_without_mesh_needs_a_process_group():
    # torch's FSDP refuses a CPU-only machine outright ("FSDP needs a non-CPU accelerator
    # device"); here it runs on any device and, like DDP, needs a process group or a mesh
    with pytest.raises(ValueError, match="init_process_group"):
        FullyShardedDataParallel(tracegrad.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="2-D device_mesh"):
        FullyShardedDataParallel(tracegrad.nn.Linear(2, 2),
                                 device_mesh=init_device_mesh("cpu", (1,)),
                                 sharding_strategy=ShardingStrategy.HYBRID_SHARD)
