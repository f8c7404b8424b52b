"""``tracegrad.distributed``: mirrors ``torch.distributed``'s names for one process.

With world size 1 (the only size this build runs) ``init_process_group`` records the state and
the collectives behave as torch's single-process gloo group: they leave their tensors as they
are (or copy them into the outputs). Multi-process training would map onto ``jax.distributed``;
it is not available here, so a world size above 1 raises. Written without JAX (nothing here
needs a device program).
"""
from __future__ import annotations

import contextlib
import enum
import os
import warnings

from .. import no_grad

__all__ = ["Backend", "GroupMember", "ReduceOp", "Work", "ProcessGroup", "all_gather",
           "all_gather_object", "broadcast_object_list", "gather", "get_global_rank",
           "get_node_local_rank", "group", "is_gloo_available", "is_mpi_available",
           "is_nccl_available", "is_torchelastic_launched", "reduce", "scatter",
           "all_gather_into_tensor", "all_gather_single", "reduce_scatter",
           "reduce_scatter_single",
           "all_reduce", "barrier", "broadcast", "destroy_process_group", "get_backend",
           "get_rank", "get_world_size", "init_process_group", "is_available",
           "is_initialized", "new_group", "reduce_scatter_tensor"]

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
    """Mirrors ``torch.distributed.ProcessGroup`` for one process: ``rank()``, ``size()``."""

    def __init__(self, backend, ranks=(0,)):
        self._backend, self._ranks = backend, tuple(ranks)

    def rank(self):
        return 0

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
    """Mirrors ``torch.distributed.is_available``: True (the world-size-1 API is built)."""
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

    Raises ValueError when called twice or when a needed environment variable is missing, and
    RuntimeError for a world size above 1 (multi-process training maps onto
    ``jax.distributed`` and is not available in this build).
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
    else:
        # tcp:// and file:// carry the address; rank/world size come from the arguments or env
        rank = rank if rank != -1 else int(os.environ.get("RANK", 0))
        world_size = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", 1))
    if world_size != 1:
        raise RuntimeError(
            f"torch.distributed.init_process_group: world_size={world_size} needs several "
            "processes; multi-process training maps onto jax.distributed and is not available "
            "in this build. Run with WORLD_SIZE=1 (one process), or use a device mesh within "
            "one process.")
    if rank != 0:
        raise ValueError(f"torch.distributed.init_process_group: rank {rank} is out of range "
                         "for world_size 1 (expected rank 0).")
    # torch reports the backend it was asked for; with none it reports "undefined"
    _state.update(group=ProcessGroup(backend if backend is not None else "undefined"),
                  rank=0, world_size=1)
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
        _state.update(group=None, rank=None, world_size=None)
        GroupMember.WORLD = None


def get_rank(group=None):
    """Mirrors ``torch.distributed.get_rank``: 0. ValueError before ``init_process_group``."""
    _group()
    return 0


def get_world_size(group=None):
    """Mirrors ``torch.distributed.get_world_size``: 1. ValueError before init."""
    return (group or _group()).size()


def get_backend(group=None):
    """Mirrors ``torch.distributed.get_backend``: the backend name given at init."""
    return (group or _group()).name()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None,
              sort_ranks=True):
    """Mirrors ``torch.distributed.new_group``: a group of this one process."""
    default = _group()
    if ranks is not None and any(r != 0 for r in ranks):
        raise ValueError(f"torch.distributed.new_group: ranks {list(ranks)} are not all below "
                         "the world size 1.")
    return ProcessGroup(backend or default.name(), ranks or (0,))


def _done(async_op):
    return Work() if async_op else None


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Mirrors ``torch.distributed.barrier``: one process has nothing to wait for."""
    _group()
    return _done(async_op)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Mirrors ``torch.distributed.all_reduce``: any reduction over one rank leaves ``tensor``
    unchanged (in place). Returns None, or a completed ``Work`` with ``async_op=True``."""
    _group()
    return _done(async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Mirrors ``torch.distributed.broadcast``: from rank 0 to itself, ``tensor`` is unchanged.
    RuntimeError for a source rank other than 0, as torch's gloo group."""
    _group()
    _check_root(src if src is not None else (group_src or 0), "broadcast")
    return _done(async_op)


def _copy_into(out, tensor, api):
    if tuple(out.shape) != tuple(tensor.shape):
        raise RuntimeError(f"torch.distributed.{api}: invalid tensor size (expected "
                           f"{tuple(tensor.shape)} at world size 1, got {tuple(out.shape)})")
    with no_grad():
        out.copy_(tensor)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Mirrors ``torch.distributed.all_gather``: copies ``tensor`` into ``tensor_list[0]``;
    RuntimeError when the list's length is not the world size (1)."""
    _group()
    if len(tensor_list) != 1:
        raise RuntimeError("torch.distributed.all_gather: invalid output tensor list at index 0 "
                           f"(expected length 1, got {len(tensor_list)})")
    _copy_into(tensor_list[0], tensor, "all_gather")
    return _done(async_op)


def all_gather_single(output_tensor, input_tensor, group=None, async_op=False):
    """Mirrors ``torch.distributed.all_gather_single``: copies the input into the output (same
    shape at world size 1); RuntimeError for another shape."""
    _group()
    _copy_into(output_tensor, input_tensor, "all_gather_single")
    return _done(async_op)


def reduce_scatter_single(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Mirrors ``torch.distributed.reduce_scatter_single``: copies the input into the output
    (one rank's share is everything)."""
    _group()
    _copy_into(output, input, "reduce_scatter_single")
    return _done(async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Mirrors ``torch.distributed.reduce_scatter``: copies ``input_list[0]`` into ``output``."""
    _group()
    if len(input_list) != 1:
        raise RuntimeError("torch.distributed.reduce_scatter: input_list must hold one tensor "
                           f"per rank (1), got {len(input_list)}.")
    _copy_into(output, input_list[0], "reduce_scatter")
    return _done(async_op)


def _deprecated(name, replacement):
    # torch 2.13 warns on the *_tensor spellings and runs the *_single collective
    def call(*args, **kwargs):
        warnings.warn(f"`torch.distributed.{name}` is deprecated. Please use "
                      f"`torch.distributed.{replacement.__name__}` instead.", FutureWarning,
                      stacklevel=2)
        return replacement(*args, **kwargs)
    call.__name__ = name
    call.__doc__ = (f"Mirrors ``torch.distributed.{name}`` (deprecated in torch 2.13): warns "
                    f"FutureWarning and calls ``{replacement.__name__}``.")
    return call


all_gather_into_tensor = _deprecated("all_gather_into_tensor", all_gather_single)
reduce_scatter_tensor = _deprecated("reduce_scatter_tensor", reduce_scatter_single)


def get_global_rank(group, group_rank):
    """Mirrors ``torch.distributed.get_global_rank``: rank ``group_rank`` of ``group`` in the
    default group (0 in a one-process world)."""
    _group()
    if group_rank != 0:
        raise ValueError(f"torch.distributed.get_global_rank: group rank {group_rank} is not "
                         "part of a one-process group.")
    return 0


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
    if root != 0:
        raise RuntimeError(f"torch.distributed.{api}: invalid root rank: {root} (the world "
                           "size is 1, so it must be rank 0)")


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Mirrors ``torch.distributed.reduce``: one rank's reduction leaves ``tensor`` unchanged."""
    _group()
    _check_root(dst if dst is not None else (group_dst or 0), "reduce")
    return _done(async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Mirrors ``torch.distributed.gather``: copies ``tensor`` into ``gather_list[0]``."""
    _group()
    _check_root(dst if dst is not None else (group_dst or 0), "gather")
    if gather_list is None or len(gather_list) != 1:
        raise ValueError("torch.distributed.gather: gather_list on the destination rank must "
                         "hold one tensor per rank (1).")
    _copy_into(gather_list[0], tensor, "gather")
    return _done(async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Mirrors ``torch.distributed.scatter``: copies ``scatter_list[0]`` into ``tensor``."""
    _group()
    _check_root(src if src is not None else (group_src or 0), "scatter")
    if scatter_list is None or len(scatter_list) != 1:
        raise ValueError("torch.distributed.scatter: scatter_list on the source rank must "
                         "hold one tensor per rank (1).")
    _copy_into(tensor, scatter_list[0], "scatter")
    return _done(async_op)


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Mirrors ``torch.distributed.broadcast_object_list``: the list is left as it is."""
    _group()
    _check_root(src if src is not None else (group_src or 0), "broadcast_object_list")


def all_gather_object(object_list, obj, group=None):
    """Mirrors ``torch.distributed.all_gather_object``: ``object_list[0] = obj``."""
    _group()
    if len(object_list) != 1:
        raise RuntimeError("torch.distributed.all_gather_object: object_list must have one "
                           f"entry per rank (1), got {len(object_list)}.")
    object_list[0] = obj
