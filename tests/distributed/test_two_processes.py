"""Two processes on localhost, as ``torchrun --nproc_per_node=2`` would start them (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT): ``init_process_group`` joins them with
``jax.distributed`` (JAX's CPU collectives are gloo), DistributedDataParallel averages the
gradients, and the trained parameters equal one process trained on the global batch."""
import json
import os
import pathlib
import socket
import subprocess
import sys

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")
HERE = pathlib.Path(__file__).resolve().parent


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _reference(init, X, Y):
    """torch, one process, the global batch: what DDP over two ranks must reproduce."""
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    model.load_state_dict({k: torch.tensor(v) for k, v in init.items()})
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for x, y in zip(X, Y):
        opt.zero_grad()
        ((model(torch.tensor(x)) - torch.tensor(y)) ** 2).mean().backward()
        opt.step()
    return {k: v.detach().numpy() for k, v in model.state_dict().items()}


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("two_processes")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 16, 3)).astype(np.float32)
    Y = rng.standard_normal((3, 16, 1)).astype(np.float32)
    np.savez(tmp / "data.npz", x=X, y=Y)
    init = {k: v.detach().numpy() for k, v in tracegrad.nn.Sequential(
        tracegrad.nn.Linear(3, 8), tracegrad.nn.Tanh(), tracegrad.nn.Linear(8, 1)).state_dict().items()}
    np.savez(tmp / "init.npz", **init)
    port = _free_port()
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   PYTHONPATH=os.pathsep.join([str(HERE.parents[1])] + sys.path))
        env.pop("XLA_FLAGS", None)
        procs.append(subprocess.Popen([sys.executable, str(HERE / "_two_process_worker.py"),
                                       str(tmp / "data.npz"), str(tmp / "init.npz")], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        try:
            stdout, stderr = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("the two ranks did not finish in 240 s")
        assert p.returncode == 0, stderr[-4000:]
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    return outs, _reference(init, X, Y)


def test_ranks_and_world(ranks):
    outs, _ = ranks
    assert [(o["rank"], o["world"], o["env_rank"]) for o in outs] == [(0, 2, 0), (1, 2, 1)]


def test_ddp_two_processes_equal_one_process_on_global_batch(ranks):
    outs, want = ranks
    for o in outs:
        for k, v in want.items():
            np.testing.assert_allclose(o["state"][k], v, rtol=1e-5, atol=1e-6)
    # the ranks saw different halves (different local losses) and ended identical
    assert outs[0]["losses"] != outs[1]["losses"]


def test_compiled_step_across_processes_runs_eagerly_with_reason(ranks):
    outs, _ = ranks
    for o in outs:
        assert o["compiled"]["breaks"] and "across processes" in o["compiled"]["breaks"][0]
    for k in outs[0]["compiled"]["state"]:
        np.testing.assert_array_equal(outs[0]["compiled"]["state"][k], outs[1]["compiled"]["state"][k])
        assert not np.array_equal(outs[0]["compiled"]["state"][k], outs[0]["state"][k])


def test_no_sync_then_synced_backward(ranks):
    outs, _ = ranks
    local = [np.array(o["no_sync"]["local"]) for o in outs]
    assert not np.allclose(local[0], local[1])          # not averaged inside no_sync
    avg = (2 * local[0] + 2 * local[1]) / 2             # the accumulated sums, averaged
    for o in outs:
        np.testing.assert_allclose(o["no_sync"]["synced"], avg, rtol=1e-5, atol=1e-6)


def test_collectives(ranks):
    outs, _ = ranks
    for o in outs:
        assert o["all_reduce_sum"] == [3.0, 6.0]
        assert o["all_reduce_max"] == [2.0]
        assert o["broadcast"] == [6.0]
        assert o["all_gather"] == [[0, 0], [1, 10]]
        assert o["all_gather_object"] == [{"rank": 0}, {"rank": 1}]
        assert o["broadcast_object_list"] == ["from 0"]


def test_sampler_defaults_from_the_group_split_as_torch(ranks):
    from torch.utils.data.distributed import DistributedSampler
    outs, _ = ranks
    for o in outs:
        want = DistributedSampler(range(7), num_replicas=2, rank=o["rank"], shuffle=False)
        assert o["sampler"] == {"num_replicas": 2, "rank": o["rank"], "indices": list(want)}
