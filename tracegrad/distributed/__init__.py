"""``tracegrad.distributed``: mirrors ``torch.distributed`` on ``jax.distributed`` (DESIGN 2.8).

One process (world size 1): ``init_process_group`` records the state and the collectives behave
as torch's single-process gloo group (they leave their tensors as they are, or copy them into
the outputs). Training over several devices of one process uses a ``DeviceMesh``
(``tracegrad.distributed.device_mesh.init_device_mesh``) with ``DistributedDataParallel`` or
``fsdp.FullyShardedDataParallel``.

Several processes (``WORLD_SIZE`` > 1, e.g. under ``torchrun``): ``init_process_group`` calls
``jax.distributed.initialize`` with torch's rendezvous values (``MASTER_ADDR:MASTER_PORT`` or a
``tcp://`` address, ``RANK``, ``WORLD_SIZE``; with the ``nccl`` backend ``LOCAL_RANK`` picks the
process's GPU). It must run before the process makes any tensor (JAX must know about the
other processes before it starts its devices). The collectives (``all_reduce``, ``broadcast``,
``all_gather``, ``reduce``, ``gather``, ``scatter``, ``reduce_scatter``, ``barrier``, the
``*_object`` ones) are then each one jitted XLA program over a mesh of one device per process
(JAX's CPU collectives are gloo). JAX calls live in ``_jax.py``.
"""
from __future__ import annotations

import contextlib
import enum
import importlib
import os

import tracegrad

from .. import no_grad
from .._tensor.tensor import Tensor
from . import _jax
from .._ops.warn import warn as _warn

__all__ = ["Backend", "GroupMember", "ReduceOp", "Work", "ProcessGroup", "all_gather",
           "all_gather_object", "broadcast_object_list", "gather", "get_global_rank",
           "get_node_local_rank", "group", "is_gloo_available", "is_mpi_available",
           "is_nccl_available", "is_torchelastic_launched", "reduce", "scatter",
           "all_gather_into_tensor", "all_gather_single", "reduce_scatter",
           "reduce_scatter_single",
           "all_reduce", "barrier", "broadcast", "destroy_process_group", "get_backend",
           "get_rank", "get_world_size", "init_process_group", "is_available",
           "is_initialized", "new_group", "reduce_scatter_tensor", "device_mesh", "fsdp",
           "init_device_mesh", "DeviceMesh"]


def __getattr__(name):
    # torch.distributed.device_mesh / .fsdp: imported on first use (fsdp needs nn, which is
    # imported after this package)
    if name in ("device_mesh", "fsdp"):
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("init_device_mesh", "DeviceMesh"):
        return getattr(importlib.import_module(f"{__name__}.device_mesh"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


class ReduceOp(enum.IntEnum):
    """Mirrors ``torch.distributed.ReduceOp``'s members used by programs (at world size 1 every
    reduction of one tensor is that tensor)."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4


class ProcessGroup:
    """Mirrors ``torch.distributed.ProcessGroup``: ``rank()`` (this process's position in the
    group), ``size()``, ``name()`` (the backend)."""

    def __init__(self, backend, ranks=(0,)):
        self._backend, self._ranks = backend, tuple(ranks)

    def rank(self):
        me = _state["rank"] or 0
        return self._ranks.index(me) if me in self._ranks else GroupMember.NON_GROUP_MEMBER

    def size(self):
        return len(self._ranks)

    def name(self):
        return self._backend


class Work:
    """Mirrors ``torch.distributed.Work`` returned by collectives called with ``async_op=True``:
    the work is already done, so ``wait()`` returns True at once."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True


_state = {"group": None, "rank": None, "world_size": None}


class Backend(str):
    """Mirrors ``torch.distributed.Backend``: backend names (lower-case strings)."""
    UNDEFINED, GLOO, NCCL, MPI, UCC, XCCL = "undefined", "gloo", "nccl", "mpi", "ucc", "xccl"

    def __new__(cls, name):
        return super().__new__(cls, name.lower())


class GroupMember:
    """Mirrors ``torch.distributed.GroupMember``/``group``: ``WORLD`` is the default group
    (None before ``init_process_group``)."""
    WORLD = None
    NON_GROUP_MEMBER = -100


group = GroupMember


def is_gloo_available():
    """Mirrors ``torch.distributed.is_gloo_available``: True (the one-process group stands in
    for gloo)."""
    return True


def is_nccl_available():
    """Mirrors ``torch.distributed.is_nccl_available``: False (no NCCL in this build)."""
    return False


def is_mpi_available():
    """Mirrors ``torch.distributed.is_mpi_available``: False."""
    return False


def is_torchelastic_launched():
    """Mirrors ``torch.distributed.is_torchelastic_launched``: whether ``TORCHELASTIC_RUN_ID``
    is set (torchrun sets it)."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_available():
    """Mirrors ``torch.distributed.is_available``: True."""
    return True


def is_initialized():
    """Mirrors ``torch.distributed.is_initialized``: whether the default group exists."""
    return _state["group"] is not None


def _env_int(name, method):
    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"Error initializing torch.distributed using {method} rendezvous: "
                         f"environment variable {name} expected, but not set")
    return int(value)


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Mirrors ``torch.distributed.init_process_group``. ``rank``/``world_size`` not given (-1)
    are read, as torch's ``env://`` rendezvous does, from ``RANK``/``WORLD_SIZE`` (and
    ``MASTER_ADDR``/``MASTER_PORT`` must be set for ``env://``); a ``tcp://``/``file://``
    ``init_method`` or a ``store`` supplies the address instead. World size 1 records the state.
    A world size above 1 calls ``jax.distributed.initialize`` with the coordinator at
    ``MASTER_ADDR:MASTER_PORT`` (or the ``tcp://`` address), ``num_processes=world_size``,
    ``process_id=rank`` (and, for ``backend="nccl"``, the GPU ``LOCAL_RANK``/``device_id``);
    ``timeout`` (a ``timedelta``) bounds the wait for the other processes.

    Raises ValueError when called twice, when a needed environment variable is missing or for a
    rank outside ``[0, world_size)``; RuntimeError for a world size above 1 with a ``file://``
    address or a ``store`` (JAX's coordinator needs host:port), or when JAX already started
    its devices in this process (call it before making any tensor).
    """
    if _state["group"] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None and (rank == -1 or world_size == -1):
        raise ValueError("torch.distributed.init_process_group: world_size and rank must be "
                         "given with a store.")
    method = init_method if init_method is not None else ("store" if store else "env://")
    if method == "env://" or str(method).startswith("env://"):
        if rank == -1:
            rank = _env_int("RANK", "env://")
        if world_size == -1:
            world_size = _env_int("WORLD_SIZE", "env://")
        _env_int("MASTER_PORT", "env://")
        if "MASTER_ADDR" not in os.environ:
            raise ValueError("Error initializing torch.distributed using env:// rendezvous: "
                             "environment variable MASTER_ADDR expected, but not set")
        address = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    else:
        # tcp:// and file:// carry the address; rank/world size come from the arguments or env
        rank = rank if rank != -1 else int(os.environ.get("RANK", 0))
        world_size = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", 1))
        address = str(method)[len("tcp://"):].split("?")[0] if str(method).startswith("tcp://") \
            else None
    if not 0 <= rank < world_size:
        raise ValueError(f"torch.distributed.init_process_group: rank {rank} is out of range "
                         f"for world_size {world_size} (expected 0 <= rank < {world_size}).")
    backend_name = backend if backend is not None else "undefined"
    if world_size > 1:
        if address is None:
            raise RuntimeError(
                f"torch.distributed.init_process_group: init_method={method!r} cannot start "
                "jax.distributed, whose coordinator is a host:port; use env:// (MASTER_ADDR, "
                "MASTER_PORT) or tcp://host:port.")
        local = device_id.index if hasattr(device_id, "index") else device_id
        if local is None and str(backend).lower() == "nccl":
            local = int(os.environ.get("LOCAL_RANK", 0))
        _jax.initialize(address, world_size, rank, local,
                        timeout.total_seconds() if timeout is not None else None)
    # torch reports the backend it was asked for; with none it reports "undefined"
    _state.update(group=ProcessGroup(backend_name, range(world_size)), rank=rank,
                  world_size=world_size)
    GroupMember.WORLD = _state["group"]


def _group():
    if _state["group"] is None:
        raise ValueError(_NOT_INITIALIZED)
    return _state["group"]


def destroy_process_group(group=None):
    """Mirrors ``torch.distributed.destroy_process_group``; AssertionError when none exists,
    as torch."""
    if _state["group"] is None:
        raise AssertionError("Process group cannot be None")
    if group is None or group is _state["group"]:
        if _multi():
                _jax.shutdown()
        _state.update(group=None, rank=None, world_size=None)
        GroupMember.WORLD = None


def _multi():
    return (_state["world_size"] or 1) > 1


def _jax_process_count():
    """Processes in the job (1 before ``init_process_group``)."""
    return _state["world_size"] or 1


def get_rank(group=None):
    """Mirrors ``torch.distributed.get_rank``: this process's rank (``RANK``), in ``group``
    when given. ValueError before ``init_process_group``."""
    return (group or _group()).rank()


def get_world_size(group=None):
    """Mirrors ``torch.distributed.get_world_size``: the number of processes. ValueError
    before init."""
    return (group or _group()).size()


def get_backend(group=None):
    """Mirrors ``torch.distributed.get_backend``: the backend name given at init."""
    return (group or _group()).name()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None,
              sort_ranks=True):
    """Mirrors ``torch.distributed.new_group``: a group of this one process."""
    default = _group()
    world = default.size()
    if ranks is not None and any(not 0 <= r < world for r in ranks):
        raise ValueError(f"torch.distributed.new_group: ranks {list(ranks)} are not all below "
                         f"the world size {world}.")
    if ranks is not None and world > 1 and sorted(ranks) != list(range(world)):
        raise NotImplementedError("tracegrad.distributed.new_group: a group of some of the "
                                  "processes is not supported (collectives span all of them).")
    return ProcessGroup(backend or default.name(), ranks or range(world))


def _done(async_op):
    return Work() if async_op else None


def _collective(kind, tensors, arg=None):
    return _jax.process_collective(kind, [t._value for t in tensors], arg)


def _set(out, array, api):
    if tuple(out.shape) != tuple(array.shape):
        raise RuntimeError(f"torch.distributed.{api}: invalid tensor size (expected "
                           f"{tuple(array.shape)}, got {tuple(out.shape)})")
    with no_grad():
        out.copy_(Tensor._make(array))


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Mirrors ``torch.distributed.barrier``: waits until every process reaches it (one
    process has nothing to wait for)."""
    _group()
    if _multi():
        _jax.barrier()
    return _done(async_op)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Mirrors ``torch.distributed.all_reduce``: ``tensor`` becomes, in place on every process,
    the reduction (``ReduceOp.SUM``, ``AVG``, ``PRODUCT``, ``MIN``, ``MAX``) of all processes'
    values (unchanged with one process). Returns None, or a completed ``Work`` with
    ``async_op=True`` (the collective has run when the call returns)."""
    _group()
    if _multi():
        _set(tensor, _collective("reduce", [tensor], int(op))[0], "all_reduce")
    return _done(async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Mirrors ``torch.distributed.broadcast``: ``tensor`` takes rank ``src``'s value on every
    process. RuntimeError for a source rank outside the world, as torch's gloo group."""
    _group()
    root = src if src is not None else (group_src or 0)
    _check_root(root, "broadcast")
    if _multi():
        _set(tensor, _collective("pick", [tensor], root)[0], "broadcast")
    return _done(async_op)


def _copy_into(out, tensor, api):
    if tuple(out.shape) != tuple(tensor.shape):
        raise RuntimeError(f"torch.distributed.{api}: invalid tensor size (expected "
                           f"{tuple(tensor.shape)} at world size 1, got {tuple(out.shape)})")
    with no_grad():
        out.copy_(tensor)


def _gathered(tensor):
    """(world, *shape) array of every process's ``tensor``."""
    return _collective("gather", [tensor])[0]


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Mirrors ``torch.distributed.all_gather``: ``tensor_list[r]`` receives rank ``r``'s
    ``tensor``; RuntimeError when the list's length is not the world size."""
    _group()
    world = get_world_size()
    if len(tensor_list) != world:
        raise RuntimeError("torch.distributed.all_gather: invalid output tensor list at index 0 "
                           f"(expected length {world}, got {len(tensor_list)})")
    if not _multi():
        _copy_into(tensor_list[0], tensor, "all_gather")
        return _done(async_op)
    got = _gathered(tensor)
    for r, out in enumerate(tensor_list):
        _set(out, got[r], "all_gather")
    return _done(async_op)


def all_gather_single(output_tensor, input_tensor, group=None, async_op=False):
    """Mirrors ``torch.distributed.all_gather_single``: the output (world size times the input's
    dim 0) receives every rank's input, concatenated in rank order; RuntimeError for another
    shape."""
    _group()
    if not _multi():
        _copy_into(output_tensor, input_tensor, "all_gather_single")
        return _done(async_op)
    got = _gathered(input_tensor)
    _set(output_tensor, got.reshape((-1,) + got.shape[2:]) if got.ndim > 1 else got,
         "all_gather_single")
    return _done(async_op)


def reduce_scatter_single(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Mirrors ``torch.distributed.reduce_scatter_single``: the input (world size times the
    output's dim 0) is reduced over the ranks and rank ``r`` keeps chunk ``r``."""
    _group()
    if not _multi():
        _copy_into(output, input, "reduce_scatter_single")
        return _done(async_op)
    red = _collective("reduce", [input], int(op))[0]
    n = red.shape[0] // get_world_size()
    _set(output, red[get_rank() * n:(get_rank() + 1) * n], "reduce_scatter_single")
    return _done(async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Mirrors ``torch.distributed.reduce_scatter``: rank ``r``'s ``output`` is the reduction
    over the ranks of their ``input_list[r]``."""
    _group()
    world = get_world_size()
    if len(input_list) != world:
        raise RuntimeError("torch.distributed.reduce_scatter: input_list must hold one tensor "
                           f"per rank ({world}), got {len(input_list)}.")
    if not _multi():
        _copy_into(output, input_list[0], "reduce_scatter")
        return _done(async_op)
    red = _collective("reduce", [tracegrad.stack(list(input_list))], int(op))[0]
    _set(output, red[get_rank()], "reduce_scatter")
    return _done(async_op)


def _deprecated(name, replacement):
    # torch 2.13 warns on the *_tensor spellings and runs the *_single collective
    def call(*args, **kwargs):
        _warn(f"`torch.distributed.{name}` is deprecated. Please use "
              f"`torch.distributed.{replacement.__name__}` instead.", FutureWarning)
        return replacement(*args, **kwargs)
    call.__name__ = name
    call.__doc__ = (f"Mirrors ``torch.distributed.{name}`` (deprecated in torch 2.13): warns "
                    f"FutureWarning and calls ``{replacement.__name__}``.")
    return call


all_gather_into_tensor = _deprecated("all_gather_into_tensor", all_gather_single)
reduce_scatter_tensor = _deprecated("reduce_scatter_tensor", reduce_scatter_single)


def get_global_rank(group, group_rank):
    """Mirrors ``torch.distributed.get_global_rank``: rank ``group_rank`` of ``group`` in the
    default group."""
    _group()
    ranks = group._ranks if group is not None else (0,)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"torch.distributed.get_global_rank: group rank {group_rank} is not "
                         f"part of a {len(ranks)}-process group.")
    return ranks[group_rank]


def get_node_local_rank(fallback_rank=None):
    """Mirrors ``torch.distributed.get_node_local_rank``: ``LOCAL_RANK`` from the environment,
    else ``fallback_rank``; RuntimeError when neither is there."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("torch.distributed.get_node_local_rank: LOCAL_RANK is not in the "
                       "environment; pass fallback_rank to run in one process.")


def _check_root(root, api):
    world = _state["world_size"] or 1
    if not 0 <= root < world:
        raise RuntimeError(f"torch.distributed.{api}: invalid root rank: {root} (the world "
                           f"size is {world}, so it must be in [0, {world}))")


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Mirrors ``torch.distributed.reduce``: rank ``dst``'s ``tensor`` becomes the reduction
    over all ranks (here every rank receives it, as ``all_reduce``)."""
    _group()
    _check_root(dst if dst is not None else (group_dst or 0), "reduce")
    if _multi():
        _set(tensor, _collective("reduce", [tensor], int(op))[0], "reduce")
    return _done(async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Mirrors ``torch.distributed.gather``: on rank ``dst``, ``gather_list[r]`` receives rank
    ``r``'s ``tensor`` (other ranks pass ``gather_list=None``)."""
    _group()
    root = dst if dst is not None else (group_dst or 0)
    _check_root(root, "gather")
    world, me = get_world_size(), get_rank()
    if me == root and (gather_list is None or len(gather_list) != world):
        raise ValueError("torch.distributed.gather: gather_list on the destination rank must "
                         f"hold one tensor per rank ({world}).")
    if not _multi():
        _copy_into(gather_list[0], tensor, "gather")
        return _done(async_op)
    got = _gathered(tensor)
    if me == root:
        for r, out in enumerate(gather_list):
            _set(out, got[r], "gather")
    return _done(async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Mirrors ``torch.distributed.scatter``: rank ``r``'s ``tensor`` receives rank ``src``'s
    ``scatter_list[r]`` (other ranks pass ``scatter_list=None``)."""
    _group()
    root = src if src is not None else (group_src or 0)
    _check_root(root, "scatter")
    world, me = get_world_size(), get_rank()
    if me == root and (scatter_list is None or len(scatter_list) != world):
        raise ValueError("torch.distributed.scatter: scatter_list on the source rank must "
                         f"hold one tensor per rank ({world}).")
    if not _multi():
        _copy_into(tensor, scatter_list[0], "scatter")
        return _done(async_op)
    mine = tracegrad.stack(list(scatter_list)) if me == root else \
        tracegrad.zeros((world,) + tuple(tensor.shape), dtype=tensor.dtype)
    _set(tensor, _collective("pick", [mine], root)[0][me], "scatter")
    return _done(async_op)


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Mirrors ``torch.distributed.broadcast_object_list``: every process's list takes rank
    ``src``'s (picklable) objects, in place."""
    _group()
    root = src if src is not None else (group_src or 0)
    _check_root(root, "broadcast_object_list")
    if _multi():
        object_list[:] = _jax.broadcast_objects(list(object_list), root)


def all_gather_object(object_list, obj, group=None):
    """Mirrors ``torch.distributed.all_gather_object``: ``object_list[r]`` becomes rank
    ``r``'s (picklable) ``obj``."""
    _group()
    world = get_world_size()
    if len(object_list) != world:
        raise RuntimeError("torch.distributed.all_gather_object: object_list must have one "
                           f"entry per rank ({world}), got {len(object_list)}.")
    if not _multi():
        object_list[0] = obj
        return
    object_list[:] = _jax.gather_objects(obj)
