"""The JAX side of ``tracegrad.distributed`` (DESIGN 2.8): meshes, placing tensors on a mesh,
and collectives between processes. No home-made collectives: within one process a mesh's
devices are driven by XLA's SPMD partitioner (a jitted op over sharded arrays runs on every
device, with the collectives XLA inserts); across processes ``jax.distributed`` connects them
and each collective here is one jitted XLA program over a mesh of one device per process.

Two ways to train on more than one device, both with torch's names:

* one process, a mesh of its devices (``init_device_mesh``): parameters are placed replicated
  (data parallel) or split along dim 0 (fully sharded), the batch is split along dim 0; every
  eager op and every compiled step is then one SPMD program over the mesh;
* several processes (``init_process_group`` with ``WORLD_SIZE`` > 1, one device each): each
  process computes on its own batch and ``DistributedDataParallel`` averages the gradients
  with ``all_reduce`` after each parameter's gradient is accumulated, as torch's DDP does.
"""
from __future__ import annotations

import functools
import pickle

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import xla_bridge  # private: whether JAX has started its backends
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .. import _state
from .._tensor.tensor import Tensor
from .._x64 import x64_scope
from ..func import jax_function

_Tracer = jax.core.Tracer


# ---- meshes --------------------------------------------------------------------------------
def platform_of(device_type: str) -> str:
    """torch's device type ("cpu", "cuda") as JAX's platform name."""
    return {"cuda": "gpu", "gpu": "gpu", "cpu": "cpu", "tpu": "tpu"}.get(device_type, device_type)


def devices(device_type: str):
    """Every device of ``device_type`` in the job (all processes), or RuntimeError."""
    try:
        return jax.devices(platform_of(device_type))
    except RuntimeError as e:
        raise RuntimeError(f"torch.distributed.device_mesh.init_device_mesh: no '{device_type}' "
                           f"devices here ({e})") from None


def make_mesh(device_type, shape, names):
    devs = devices(device_type)
    n = int(np.prod(shape))
    if n != len(devs):
        raise RuntimeError(f"torch.distributed.device_mesh.init_device_mesh: mesh_shape "
                           f"{tuple(shape)} holds {n} devices, but there are {len(devs)} "
                           f"'{device_type}' devices (jax.devices()); on CPU, simulate more with "
                           "XLA_FLAGS=--xla_force_host_platform_device_count=N set before JAX starts")
    return Mesh(np.array(devs, dtype=object).reshape(shape), tuple(names))


def mesh_devices(mesh):
    return list(mesh.devices.flat)


# ---- placing tensors -----------------------------------------------------------------------
def replicated(mesh):
    return NamedSharding(mesh, PartitionSpec())


def split_dim0(mesh, axes):
    """A sharding splitting dim 0 over ``axes`` (a tuple of mesh axis names)."""
    return NamedSharding(mesh, PartitionSpec(axes if len(axes) > 1 else axes[0]))


def axes_size(mesh, axes):
    return int(np.prod([mesh.shape[a] for a in axes]))


def dim0_sharding(mesh, axes, shape):
    """Split dim 0 over ``axes`` when it divides evenly, else replicated."""
    if len(shape) >= 1 and shape[0] % axes_size(mesh, axes) == 0 and shape[0] > 0:
        return split_dim0(mesh, axes)
    return replicated(mesh)


def sharding_of(t: Tensor):
    """The ``jax.sharding.Sharding`` of the array a tensor holds (None inside a trace)."""
    a = t._st.array
    return None if isinstance(a, _Tracer) else a.sharding


def _put(array, sharding):
    if isinstance(array, _Tracer):
        return jax.lax.with_sharding_constraint(array, sharding)
    with x64_scope():
        return jax.device_put(array, sharding)


def place_(t: Tensor, sharding):
    """Move the array ``t`` holds (a parameter, buffer or ``.grad``; not a view) onto
    ``sharding`` in place: same values, same storage object, a new layout. Inside a compiled
    step's trace this is a sharding constraint on the traced value."""
    if t._chain:
        return t
    t._st.array = _put(t._st.array, sharding)
    return t


def place_global_(t: Tensor, sharding):
    """``place_`` for a sharding spanning several processes: each process holds the same value
    (after a broadcast), every device takes its part of it."""
    a = np.asarray(t._st.array)
    with x64_scope():
        t._st.array = jax.make_array_from_callback(a.shape, sharding, lambda idx: a[idx])
    return t


def _constrain(a, *, sharding):
    return jax.lax.with_sharding_constraint(a, sharding)


@functools.lru_cache(maxsize=None)
def _constrain_op():
    # one jax_function: its own per-(shapes, sharding) program dict goes with it when cleared
    return jax_function(_constrain, name="ShardBatch")


_state.register_cache("distributed._jax._constrain_op", _constrain_op)


def shard_tensor(t: Tensor, sharding):
    """A tensor with ``t``'s values laid out as ``sharding``: one differentiable op (its
    backward lays the gradient out the same way). Eager: a jitted constraint, i.e. a copy to
    the devices; in a compiled step a sharding constraint the partitioner follows."""
    return _constrain_op()(t, sharding=sharding)


# ---- several processes ---------------------------------------------------------------------
def initialize(coordinator, world_size, rank, local_device=None, timeout_s=None):
    """``jax.distributed.initialize`` for torch's rendezvous values. RuntimeError when JAX has
    already started its backends (it must be told about the other processes first)."""
    if jax.distributed.is_initialized():      # the user's own jax.distributed.initialize
        if jax.process_count() != world_size or jax.process_index() != rank:
            raise RuntimeError(
                f"torch.distributed.init_process_group: jax.distributed already runs with "
                f"{jax.process_count()} processes (this one is {jax.process_index()}), not "
                f"world_size={world_size}, rank={rank}")
        return
    if xla_bridge.backends_are_initialized():
        raise RuntimeError(
            "torch.distributed.init_process_group: JAX has already started its devices in this "
            "process (a tensor was made before init_process_group), so jax.distributed cannot "
            "join the other processes any more. Call init_process_group before making tensors "
            "or models.")
    kw = {}
    if local_device is not None:
        kw["local_device_ids"] = [int(local_device)]
    if timeout_s is not None:
        kw["initialization_timeout"] = int(timeout_s)
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=world_size,
                               process_id=rank, **kw)
    _STARTED[0] = True


_STARTED = [False]      # init_process_group started jax.distributed (not the user)


def shutdown():
    """``jax.distributed.shutdown`` when ``initialize`` started it."""
    if _STARTED[0]:
        _STARTED[0] = False
        jax.distributed.shutdown()


def process_count():
    return jax.process_count()


def process_index():
    return jax.process_index()


@functools.lru_cache(maxsize=None)
def process_mesh():
    """A 1-D mesh ``("rank",)`` of each process's first local device, in process order."""
    first = {}
    for d in jax.devices():
        first.setdefault(d.process_index, d)
    return Mesh(np.array([first[i] for i in sorted(first)], dtype=object), ("rank",))


_state.register_cache("distributed._jax.process_mesh", process_mesh)


_REDUCE = {0: lambda a: a.sum(0), 1: lambda a: a.mean(0) if jnp.issubdtype(a.dtype, jnp.inexact)
           else a.sum(0) // a.shape[0], 2: lambda a: a.prod(0), 3: lambda a: a.min(0),
           4: lambda a: a.max(0)}


@functools.lru_cache(maxsize=None)
def _program(kind, arg):
    mesh = process_mesh()
    out = NamedSharding(mesh, PartitionSpec())
    if kind == "reduce":
        fn = _REDUCE[arg]
    elif kind == "pick":
        def fn(a):
            return a[arg]
    else:
        def fn(a):
            return a
    return jax.jit(lambda arrays: [fn(a) for a in arrays], out_shardings=out)


_state.register_cache("distributed._jax._program", _program)


def _stack_over_processes(arrays):
    mesh = process_mesh()
    sharding = NamedSharding(mesh, PartitionSpec("rank"))
    mine = mesh_devices(mesh)[jax.process_index()]
    n = len(mesh_devices(mesh))
    out = []
    for a in arrays:
        local = jax.device_put(jnp.asarray(a)[None], mine)
        out.append(jax.make_array_from_single_device_arrays((n,) + tuple(a.shape), sharding, [local]))
    return out


def process_collective(kind, arrays, arg=None):
    """One jitted XLA program over the process mesh for a list of this process's arrays:
    ``reduce`` (``arg`` a ReduceOp value), ``pick`` (rank ``arg``'s arrays: broadcast) or
    ``gather`` (each result has a leading world-size dim). Returns local arrays."""
    with x64_scope():
        stacked = _stack_over_processes(arrays)
        results = _program(kind, arg)(stacked)
        local = jax.local_devices()[0]
        return [jax.device_put(r.addressable_data(0), local) for r in results]


def barrier(name="tracegrad_barrier"):
    from jax.experimental import multihost_utils   # local: only multi-process runs load it
    multihost_utils.sync_global_devices(name)


def broadcast_objects(objs, src):
    """Pickle ``objs`` on every process and return rank ``src``'s (padded bytes, one collective
    for the lengths and one for the bytes)."""
    data = np.frombuffer(pickle.dumps(objs), np.uint8)
    n = int(process_collective("reduce", [np.array(len(data), np.int64)], 4)[0])
    buf = np.zeros(n, np.uint8)
    buf[:len(data)] = data
    lens = process_collective("pick", [np.array(len(data), np.int64)], src)[0]
    got = np.asarray(process_collective("pick", [buf], src)[0])
    return pickle.loads(got[:int(lens)].tobytes())


def gather_objects(obj):
    data = np.frombuffer(pickle.dumps(obj), np.uint8)
    lens = np.asarray(process_collective("gather", [np.array(len(data), np.int64)])[0])
    buf = np.zeros(int(lens.max()), np.uint8)
    buf[:len(data)] = data
    got = np.asarray(process_collective("gather", [buf])[0])
    return [pickle.loads(got[i, :int(lens[i])].tobytes()) for i in range(len(lens))]
