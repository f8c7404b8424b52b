"""torch.distributed names at world size 1: tracegrad against torch's single-process gloo group
(process group functions, collectives, DistributedDataParallel, DistributedSampler)."""
import socket

import numpy as np
import pytest

import tracegrad
import tracegrad.distributed as tdist
from tracegrad.nn.parallel import DistributedDataParallel as TDDP
from tracegrad.utils.data.distributed import DistributedSampler as TSampler

torch = pytest.importorskip("torch")
dist = torch.distributed
from torch.utils.data.distributed import DistributedSampler  # noqa: E402

_ENV = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    yield
    for lib in (dist, tdist):
        if lib.is_initialized():
            lib.destroy_process_group()


@pytest.fixture
def both():
    """Both libraries initialized with one rank (torch: gloo over a free localhost port)."""
    dist.init_process_group("gloo", rank=0, world_size=1,
                            init_method=f"tcp://127.0.0.1:{_free_port()}")
    tdist.init_process_group("gloo", rank=0, world_size=1,
                             init_method=f"tcp://127.0.0.1:{_free_port()}")
    return dist, tdist


def _raises(fn_torch, fn_tg):
    with pytest.raises(Exception) as et:
        fn_torch()
    with pytest.raises(type(et.value)) as eg:
        fn_tg()
    return str(et.value), str(eg.value)


def test_available_and_not_initialized():
    assert tdist.is_available() is dist.is_available() is True
    assert tdist.is_initialized() is dist.is_initialized() is False


@pytest.mark.parametrize("call", [
    lambda d: d.get_rank(), lambda d: d.get_world_size(), lambda d: d.barrier(),
    lambda d: d.get_backend(), lambda d: d.new_group(),
    lambda d: d.all_reduce(d._t), lambda d: d.broadcast(d._t, 0),
    lambda d: d.all_gather([d._z], d._t),
])
def test_collectives_before_init_raise_as_torch(call):
    dist._t, dist._z = torch.ones(2), torch.zeros(2)
    tdist._t, tdist._z = tracegrad.ones(2), tracegrad.zeros(2)
    try:
        msg_t, msg_g = _raises(lambda: call(dist), lambda: call(tdist))
    finally:
        del dist._t, dist._z, tdist._t, tdist._z
    assert msg_g == msg_t


def test_destroy_without_group_raises_as_torch():
    _raises(dist.destroy_process_group, tdist.destroy_process_group)


def test_ddp_before_init_raises_as_torch():
    msg_t, msg_g = _raises(lambda: torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2)),
                           lambda: TDDP(tracegrad.nn.Linear(2, 2)))
    assert msg_g == msg_t


def test_init_records_state_and_destroy(both):
    for d in both:
        assert d.is_initialized()
        assert (d.get_rank(), d.get_world_size(), d.get_backend()) == (0, 1, "gloo")
        assert d.new_group().size() == 1 and d.new_group([0]).size() == 1
    _raises(lambda: dist.init_process_group("gloo", rank=0, world_size=1),
            lambda: tdist.init_process_group("gloo", rank=0, world_size=1))
    for d in both:
        d.destroy_process_group()
        assert not d.is_initialized()


def test_init_from_environment(monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(_free_port()))
    for d in (dist, tdist):
        d.init_process_group("gloo")
        assert (d.get_rank(), d.get_world_size()) == (0, 1)
    monkeypatch.delenv("RANK")
    for d in (dist, tdist):
        d.destroy_process_group()
    msg_t, msg_g = _raises(lambda: dist.init_process_group("gloo"),
                           lambda: tdist.init_process_group("gloo"))
    assert "RANK" in msg_g and msg_g == msg_t


def test_world_size_above_one_raises_clearly(monkeypatch):
    (tracegrad.ones(1) + 1).numpy()          # JAX has started its devices in this process
    with pytest.raises(RuntimeError, match="before making tensors"):
        tdist.init_process_group("gloo", rank=0, world_size=2, init_method="tcp://127.0.0.1:1")
    with pytest.raises(RuntimeError, match="host:port"):
        tdist.init_process_group("gloo", rank=0, world_size=2, init_method="file:///tmp/x")
    monkeypatch.setenv("RANK", "4")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    with pytest.raises(ValueError, match="out of range"):
        tdist.init_process_group()
    monkeypatch.setenv("RANK", "1")
    with pytest.raises(RuntimeError, match="before making tensors"):
        tdist.init_process_group()
    assert not tdist.is_initialized()


@pytest.mark.parametrize("op", ["SUM", "AVG", "MAX", "MIN", "PRODUCT"])
def test_all_reduce_is_identity(both, op):
    x = np.array([3.0, -2.0, 0.5], np.float32)
    t, g = torch.tensor(x), tracegrad.tensor(x)
    assert dist.all_reduce(t, op=getattr(dist.ReduceOp, op)) is None
    assert tdist.all_reduce(g, op=getattr(tdist.ReduceOp, op)) is None
    np.testing.assert_array_equal(g.numpy(), t.numpy())
    work = tdist.all_reduce(g, op=getattr(tdist.ReduceOp, op), async_op=True)
    assert work.wait() is dist.all_reduce(t, async_op=True).wait() is True


def test_broadcast_and_gathers_copy(both):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    g = tracegrad.tensor(x)
    assert tdist.broadcast(g, 0) is None
    np.testing.assert_array_equal(g.numpy(), x)
    _raises(lambda: dist.broadcast(torch.tensor(x), 1), lambda: tdist.broadcast(g, 1))
    out = [tracegrad.zeros(2, 3)]
    assert tdist.all_gather(out, g) is None
    assert out[0] is not g
    np.testing.assert_array_equal(out[0].numpy(), x)
    _raises(lambda: dist.all_gather([torch.zeros(2, 3)] * 2, torch.tensor(x)),
            lambda: tdist.all_gather([tracegrad.zeros(2, 3)] * 2, g))
    for name in ("all_gather_single", "reduce_scatter_single"):
        o = tracegrad.zeros(2, 3)
        assert getattr(tdist, name)(o, g) is None
        np.testing.assert_array_equal(o.numpy(), x)
    o = tracegrad.zeros(2, 3)
    assert tdist.reduce_scatter(o, [g]) is None
    np.testing.assert_array_equal(o.numpy(), x)
    for name in ("all_gather_into_tensor", "reduce_scatter_tensor"):
        o = tracegrad.zeros(2, 3)
        with pytest.warns(FutureWarning) as wt:
            getattr(dist, name)(torch.zeros(2, 3), torch.tensor(x))
        with pytest.warns(FutureWarning) as wg:
            assert getattr(tdist, name)(o, g) is None
        assert str(wg[0].message) == str(wt[0].message)
        np.testing.assert_array_equal(o.numpy(), x)
    assert tdist.barrier() is None


def _linear_pair():
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    gm = tracegrad.nn.Sequential(tracegrad.nn.Linear(3, 4), tracegrad.nn.Tanh(),
                                 tracegrad.nn.Linear(4, 1))
    gm.load_state_dict({k: tracegrad.tensor(v.detach().numpy())
                        for k, v in tm.state_dict().items()})
    return tm, gm


def _train(model, lib, xs, ys):
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    for x, y in zip(xs, ys):
        opt.zero_grad()
        loss = ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean()
        loss.backward()
        opt.step()
    return {k: v.detach().numpy() for k, v in model.state_dict().items()}


def test_ddp_training_equals_plain_and_torch(both):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((3, 5, 3)).astype(np.float32)
    ys = rng.standard_normal((3, 5, 1)).astype(np.float32)
    tm, gm = _linear_pair()
    _, plain = _linear_pair()
    plain.load_state_dict(gm.state_dict())
    tddp, gddp = torch.nn.parallel.DistributedDataParallel(tm), TDDP(gm)
    assert gddp.module is gm and list(gddp.state_dict()) == list(tddp.state_dict())
    assert all(k.startswith("module.") for k in gddp.state_dict())
    got, want = _train(gddp, tracegrad, xs, ys), _train(tddp, torch, xs, ys)
    base = _train(plain, tracegrad, xs, ys)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[k], base[k[len("module."):]], rtol=1e-6)


def test_no_sync_accumulates(both):
    _, gm = _linear_pair()
    model = TDDP(gm)
    x = tracegrad.tensor(np.ones((2, 3), np.float32))
    model(x).sum().backward()
    once = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    with model.no_sync():
        assert model.require_backward_grad_sync is False
        model(x).sum().backward()
    assert model.require_backward_grad_sync is True
    model(x).sum().backward()
    for p, g1 in zip(model.parameters(), once):
        np.testing.assert_allclose(p.grad.numpy(), 2 * g1, rtol=1e-6)


def test_data_parallel_delegates():
    tm, gm = _linear_pair()
    tdp, gdp = torch.nn.DataParallel(tm), tracegrad.nn.DataParallel(gm)
    assert gdp.module is gm and list(gdp.state_dict()) == list(tdp.state_dict())
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(gdp(tracegrad.tensor(x)).detach().numpy(),
                               tdp(torch.tensor(x)).detach().numpy(), rtol=1e-5)


@pytest.mark.parametrize("n", [1, 7, 10, 12])
@pytest.mark.parametrize("replicas", [1, 2, 3, 5])
@pytest.mark.parametrize("drop_last", [False, True])
def test_sampler_split_matches_torch(n, replicas, drop_last):
    for rank in range(replicas):
        kw = dict(num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        t, g = DistributedSampler(range(n), **kw), TSampler(range(n), **kw)
        assert len(g) == len(t)
        assert list(g) == list(t)


def test_sampler_errors_and_defaults(both):
    msg_t, msg_g = _raises(lambda: DistributedSampler(range(4), num_replicas=2, rank=2),
                           lambda: TSampler(range(4), num_replicas=2, rank=2))
    assert msg_g == msg_t
    s = TSampler(range(5), shuffle=False)
    assert (s.num_replicas, s.rank, list(s)) == (1, 0, list(range(5)))
    assert tracegrad.utils.data.DistributedSampler is TSampler


def test_sampler_defaults_need_a_group():
    _raises(lambda: DistributedSampler(range(4)), lambda: TSampler(range(4)))


def test_sampler_shuffle_properties():
    n, replicas = 11, 3
    samplers = [TSampler(range(n), num_replicas=replicas, rank=r, seed=3) for r in range(replicas)]
    first = [list(s) for s in samplers]
    assert first == [list(s) for s in samplers]  # deterministic within an epoch
    flat = [i for share in first for i in share]
    assert sorted(set(flat)) == list(range(n)) and len(flat) == 12  # covering, one pad
    order = [first[i % replicas][i // replicas] for i in range(n)]
    assert sorted(order) == list(range(n))  # disjoint before the padding
    for s in samplers:
        s.set_epoch(1)
    assert [list(s) for s in samplers] != first
    dropped = [list(TSampler(range(n), num_replicas=replicas, rank=r, seed=3, drop_last=True))
               for r in range(replicas)]
    flat = [i for share in dropped for i in share]
    assert len(flat) == len(set(flat)) == 9


def test_more_collectives_and_helpers(both, monkeypatch):
    x = np.array([3.0, 2.0], np.float32)
    g = tracegrad.tensor(x)
    assert dist.group.WORLD is not None and tdist.group.WORLD is tdist.GroupMember.WORLD
    assert tdist.get_global_rank(tdist.group.WORLD, 0) == dist.get_global_rank(dist.group.WORLD, 0)
    assert tdist.get_backend() == tdist.Backend.GLOO == dist.Backend.GLOO
    for name in ("gloo", "nccl", "mpi"):
        assert getattr(tdist, f"is_{name}_available")() == getattr(dist, f"is_{name}_available")()
    assert tdist.is_torchelastic_launched() is dist.is_torchelastic_launched()
    assert tdist.get_node_local_rank(fallback_rank=0) == 0
    _raises(dist.get_node_local_rank, tdist.get_node_local_rank)
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert tdist.get_node_local_rank() == dist.get_node_local_rank() == 0
    assert tdist.reduce(g, 0) is None
    np.testing.assert_array_equal(g.numpy(), x)
    out = [tracegrad.zeros(2)]
    assert tdist.gather(g, out, dst=0) is None
    np.testing.assert_array_equal(out[0].numpy(), x)
    o = tracegrad.zeros(2)
    assert tdist.scatter(o, [g], src=0) is None
    np.testing.assert_array_equal(o.numpy(), x)
    objs = [None]
    tdist.all_gather_object(objs, {"a": 1})
    assert objs == [{"a": 1}]
    _raises(lambda: dist.all_gather_single(torch.zeros(3), torch.tensor(x)),
            lambda: tdist.all_gather_single(tracegrad.zeros(3), g))
    tdist.destroy_process_group()
    assert tdist.group.WORLD is None


@pytest.mark.parametrize("make", [
    lambda nn: nn.Linear(2, 2).requires_grad_(False),
    lambda nn: nn.ReLU(),
    lambda nn: (nn.Linear(2, 2), [0]),
])
def test_ddp_argument_errors_as_torch(both, make):
    def build(lib):
        made = make(lib.nn)
        module, ids = made if isinstance(made, tuple) else (made, None)
        return lib.nn.parallel.DistributedDataParallel(module, device_ids=ids)
    msg_t, msg_g = _raises(lambda: build(torch), lambda: build(tracegrad))
    assert msg_g == msg_t
