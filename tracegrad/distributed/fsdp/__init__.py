"""Mirrors ``torch.distributed.fsdp``: ``FullyShardedDataParallel`` (FSDP1's wrapper) and
``fully_shard`` (FSDP2's in-place form), on JAX's sharding (DESIGN 2.8).

On a ``DeviceMesh`` of several devices in one process, each parameter is split along dim 0
over the mesh (replicated when dim 0 does not divide by the number of devices), its gradient
is laid out the same way (a post-accumulate-grad hook, traced into compiled steps) and so is
the optimizer state built from it; the batch dim of the inputs is split over the mesh. XLA's
partitioner gathers what each op needs and reduce-scatters the gradients: per device, the
parameters, gradients and optimizer state take about 1/N of their size. Written-back state of
a ``tracegrad.compile``-d step keeps its sharding.

Differs from torch: there are no flat parameters (``use_orig_params`` is always in effect:
``parameters()`` are the module's own, whole-valued tensors whose arrays are sharded), no
``summon_full_params`` (a parameter's value is always the whole tensor), and across several
processes the parameters are not sharded (each process holds all of them and gradients are
averaged as ``DistributedDataParallel`` does).
"""
from __future__ import annotations

import contextlib
import enum

from ... import distributed as _dist
from ...compiler import allow_in_graph
from ...nn.modules.module import Module
from ...nn.utils import clip_grad_norm_
from .. import _parallel

__all__ = ["FullyShardedDataParallel", "ShardingStrategy", "BackwardPrefetch", "CPUOffload",
           "MixedPrecision", "StateDictType", "fully_shard", "FSDPModule"]


class ShardingStrategy(enum.Enum):
    """Mirrors ``torch.distributed.fsdp.ShardingStrategy``. ``FULL_SHARD`` and
    ``SHARD_GRAD_OP``: parameters, gradients and optimizer state split over the mesh (XLA
    decides when to gather); ``NO_SHARD``: replicated (data parallel); ``HYBRID_SHARD``
    (2-d mesh): replicated over mesh dim 0, split over mesh dim 1."""
    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4
    _HYBRID_SHARD_ZERO2 = 5


class BackwardPrefetch(enum.Enum):
    """Mirrors ``torch.distributed.fsdp.BackwardPrefetch`` (accepted; XLA schedules)."""
    BACKWARD_PRE = 1
    BACKWARD_POST = 2


class StateDictType(enum.Enum):
    """Mirrors ``torch.distributed.fsdp.StateDictType``."""
    FULL_STATE_DICT = 1
    LOCAL_STATE_DICT = 2
    SHARDED_STATE_DICT = 3


class CPUOffload:
    """Mirrors ``torch.distributed.fsdp.CPUOffload`` (accepted; parameters stay on device)."""

    def __init__(self, offload_params=False):
        self.offload_params = offload_params


class MixedPrecision:
    """Mirrors ``torch.distributed.fsdp.MixedPrecision`` (accepted; not applied: use
    ``tracegrad.autocast``)."""

    def __init__(self, param_dtype=None, reduce_dtype=None, buffer_dtype=None,
                 keep_low_precision_grads=False, cast_forward_inputs=False,
                 cast_root_forward_inputs=True, _module_classes_to_ignore=()):
        self.param_dtype, self.reduce_dtype, self.buffer_dtype = param_dtype, reduce_dtype, buffer_dtype


def _shard_axes(mesh, strategy):
    names = mesh.jax_mesh.axis_names
    if strategy is ShardingStrategy.NO_SHARD:
        return ()
    if strategy in (ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2):
        if mesh.ndim != 2:
            raise ValueError(f"FullyShardedDataParallel: {strategy.name} needs a 2-D device_mesh "
                             f"(replicate, shard), got {mesh}")
        return (names[1],)
    if mesh.ndim != 1:
        raise ValueError(f"FullyShardedDataParallel: {strategy.name} needs a 1-D device_mesh; "
                         f"use ShardingStrategy.HYBRID_SHARD for {mesh}")
    return tuple(names)


class FullyShardedDataParallel(Module):
    """Mirrors ``torch.distributed.fsdp.FullyShardedDataParallel``: wraps ``module``
    (``.module``, stored as ``_fsdp_wrapped_module``; ``state_dict()`` keys are the module's
    own, as torch's full state dict) and shards it over ``device_mesh`` (a ``DeviceMesh``) per
    ``sharding_strategy`` (default ``FULL_SHARD``); ``forward`` splits the batch dim of tensor
    inputs over the mesh. See the package docstring for what is sharded and how.

    The other arguments of torch's constructor are accepted (``auto_wrap_policy``: the whole
    module is one unit; prefetching and limits are XLA's schedule).

    Raises ValueError, as torch, when no ``device_mesh`` is given and the default process group
    is not initialized; ValueError for a mesh that does not fit the strategy."""

    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None,
                 auto_wrap_policy=None, backward_prefetch=BackwardPrefetch.BACKWARD_PRE,
                 mixed_precision=None, ignored_modules=None, param_init_fn=None, device_id=None,
                 sync_module_states=False, forward_prefetch=False, limit_all_gathers=True,
                 use_orig_params=False, ignored_states=None, device_mesh=None):
        super().__init__()
        if device_mesh is None:
            self.process_group = process_group if process_group is not None else _dist._group()
        else:
            self.process_group = _dist.GroupMember.WORLD
        self.sharding_strategy = sharding_strategy or ShardingStrategy.FULL_SHARD
        self._fsdp_wrapped_module = module
        self.device_mesh = device_mesh
        self.require_backward_grad_sync = True
        self._placement = self._averaging = None
        axes = _shard_axes(device_mesh, self.sharding_strategy) if device_mesh is not None else ()
        if _dist._jax_process_count() > 1:
            self._averaging = _parallel.ProcessAveraging(self, module, sync_module_states)
        elif device_mesh is not None and device_mesh.size() > 1:
            self._placement = _parallel.MeshPlacement(device_mesh, axes)
            self._placement.place_module(module)

    @property
    def module(self):
        """The wrapped module (torch: ``FullyShardedDataParallel.module``)."""
        return self._fsdp_wrapped_module

    def forward(self, *args, **kwargs):
        if self._placement is not None:
            args, kwargs = self._placement.shard_inputs((args, kwargs))
        return self._fsdp_wrapped_module(*args, **kwargs)

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """The wrapped module's state dict (torch's ``FULL_STATE_DICT``: unprefixed keys, whole
        tensors)."""
        return self._fsdp_wrapped_module.state_dict(*args, destination=destination,
                                                    prefix=prefix, keep_vars=keep_vars)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Loads a full (unprefixed) state dict into the wrapped module and lays the
        parameters out on the mesh again."""
        out = self._fsdp_wrapped_module.load_state_dict(state_dict, strict=strict, assign=assign)
        if self._placement is not None:
            self._placement.place_module(self._fsdp_wrapped_module, hooks=False)
        return out

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Mirrors ``FullyShardedDataParallel.clip_grad_norm_``: clips the gradients of all
        parameters by their total norm (computed over the whole, sharded gradients)."""
        return clip_grad_norm_(self.parameters(), max_norm, norm_type)

    @contextlib.contextmanager
    def no_sync(self):
        """Mirrors ``FullyShardedDataParallel.no_sync``: gradients of backward passes inside
        accumulate (on a mesh in one process they are always the global ones)."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous


class FSDPModule:
    """Marker for modules ``fully_shard`` has sharded (torch: ``FSDPModule``, a class the module
    becomes an instance of). ``isinstance(m, FSDPModule)`` is True after ``fully_shard(m)``."""


def fully_shard(module, *, mesh=None, reshard_after_forward=None, shard_placement_fn=None,
                mp_policy=None, offload_policy=None, ignored_params=None):
    """Mirrors ``torch.distributed.fsdp.fully_shard`` (FSDP2): shards ``module``'s parameters
    in place along dim 0 over ``mesh`` (a 1-d ``DeviceMesh``; a 2-d one replicates over its
    first dim and shards over its second, as torch's HSDP), lays their gradients out the same
    way, and splits the batch dim of the module's tensor inputs over the mesh (a forward
    pre-hook, traced into compiled steps). Returns ``module``, whose class becomes a subclass of
    ``FSDPModule`` and its own, as torch's. Without a mesh of several devices, and with one
    process, nothing is sharded. Raises ValueError for a mesh of more than two dimensions."""
    if mesh is not None and mesh.size() > 1 and _dist._jax_process_count() == 1:
        if mesh.ndim > 2:
            raise ValueError(f"fully_shard expects a 1D or 2D DeviceMesh but got {mesh}")
        axes = (mesh.jax_mesh.axis_names[-1],)
        placement = _parallel.MeshPlacement(mesh, axes)
        placement.place_module(module)

        def shard_inputs(mod, args, kwargs):
            return placement.shard_inputs((args, kwargs))
        module.register_forward_pre_hook(allow_in_graph(shard_inputs), with_kwargs=True)
    cls = module.__class__
    if not isinstance(module, FSDPModule):
        module.__class__ = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    return module
