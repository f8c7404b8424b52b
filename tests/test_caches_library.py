"""The process-wide caches of the tensor layer and the library (``_tensor``'s view-chain
programs, ``distributed._jax``'s mesh and collective programs) are registered with
``_state.register_cache`` (issue 7): they are measured by ``cache_sizes()``, emptied by
``clear_caches()``, and everything runs again after."""
import jax
import numpy as np

import tracegrad
from tracegrad import _state
from tracegrad.distributed import _jax as djax
from _fresh_process import fresh_process

TENSOR_CACHES = ["_tensor._chain_fwd", "_tensor._chain_write", "_tensor._chain_bound", "_tensor._positions",
                 "_tensor._layout_facts"]
DISTRIBUTED_CACHES = ["distributed._jax._constrain_op", "distributed._jax.process_mesh", "distributed._jax._program"]
MINE = TENSOR_CACHES + DISTRIBUTED_CACHES


def _views():
    """Reads and writes through view chains, and torch's stride facts that need positions."""
    base = tracegrad.arange(12.0).reshape(3, 4)
    v = base.t()[1:]
    v[0].fill_(-1.0)                              # a write through a chain
    contiguous = v.is_contiguous(), base[:, ::2].is_contiguous()
    # a complex part view's strides have no formula here: they are read off element positions
    part = (base * (1 + 1j)).t().real
    return base.tolist(), v.tolist(), contiguous, part.stride(), part.is_contiguous()


def _sharded():
    """One differentiable sharding op over a mesh of this process's CPU devices."""
    mesh = djax.make_mesh("cpu", (len(jax.devices("cpu")),), ("dp",))
    x = tracegrad.arange(8.0).reshape(8, 1).requires_grad_()
    y = djax.shard_tensor(x, djax.dim0_sharding(mesh, ("dp",), (8, 1)))
    (y * y).sum().backward()
    return y.grad_fn.name(), y.tolist(), x.grad.tolist()


def _collective():
    """A collective program over the (one-process) process mesh."""
    return [np.asarray(a).tolist() for a in djax.process_collective("reduce", [np.arange(3.0)], 0)]


def _run():
    return _views(), _sharded(), _collective()


def test_library_caches_are_registered():
    sizes = _state.cache_sizes()
    assert set(MINE) <= set(sizes), sorted(set(MINE) - set(sizes))
    assert _state._CACHES["distributed._jax._constrain_op"] is djax._constrain_op
    assert _state._CACHES["distributed._jax.process_mesh"] is djax.process_mesh


@fresh_process
def test_clearing_empties_them_and_everything_runs_again():
    first = _run()
    sizes = _state.cache_sizes()
    assert all(sizes[n] > 0 for n in MINE), {n: sizes[n] for n in MINE}
    op, mesh = djax._constrain_op(), djax.process_mesh()
    _state.clear_caches()
    sizes = _state.cache_sizes()
    assert all(sizes[n] == 0 for n in MINE), {n: sizes[n] for n in MINE}
    again = _run()
    assert again == first
    assert djax._constrain_op() is not op          # rebuilt on demand, with its own programs
    assert djax.process_mesh() == mesh
    sizes = _state.cache_sizes()
    assert all(sizes[n] > 0 for n in MINE), {n: sizes[n] for n in MINE}


@fresh_process
def test_clear_caches_between_calls_keeps_results():
    expected = _run()
    for _ in range(2):
        _state.clear_caches()
        assert _run() == expected
