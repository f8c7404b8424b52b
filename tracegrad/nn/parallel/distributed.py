"""Mirrors ``torch.nn.parallel.DistributedDataParallel`` on JAX's sharding (DESIGN 2.8).

Three settings, chosen by what is there:

* ``device_mesh=`` a 1-d ``DeviceMesh`` of more than one device in this process: the module's
  parameters and buffers are placed replicated on the mesh (in place) and ``forward`` splits
  the batch dim of its tensor inputs over the mesh; every op then runs as one SPMD program on
  all devices and XLA inserts the gradient all-reduce (eagerly in each backward op, or inside
  the one program of a ``tracegrad.compile``-d step). The gradient is the mean over the global
  batch when the loss is a mean: torch's DDP average of the ranks' gradients.
* several processes (``init_process_group`` with ``WORLD_SIZE`` > 1, ``jax.distributed``): as
  torch, rank 0's parameters and buffers are broadcast at wrap time, each process runs its
  own batch, and each gradient is averaged over the processes right after it is accumulated.
* one process and one device (world size 1): the module is called unchanged.
"""
from __future__ import annotations

import contextlib

from ... import distributed as _dist
from ...distributed import _parallel
from ..modules.module import Module


class DistributedDataParallel(Module):
    """Mirrors ``torch.nn.parallel.DistributedDataParallel``: wraps ``module`` (``.module``;
    state_dict keys gain ``module.``); ``forward`` calls it; ``no_sync()`` is a context manager
    for gradient accumulation; gradients are averaged over the replicas as torch's.

    Args: ``module``; ``device_ids`` (accepted for accelerator modules, ValueError with a CPU
    module as torch); ``device_mesh`` (a 1-d ``DeviceMesh``: data parallel over its devices in
    this process, see the module docstring); ``init_sync`` (broadcast rank 0's state across
    processes); ``broadcast_buffers`` (across processes, before every forward); the other
    arguments of torch's constructor are accepted (bucketing is XLA's business).

    Raises ValueError, as torch, when the default process group is not initialized and no
    ``device_mesh`` is given; RuntimeError for a module with no parameter requiring grad, and
    for a ``device_mesh`` of more than one dimension (torch: "Only 1D device mesh is
    supported").

    Differs from torch: with a mesh in one process, the user's batch is the global batch (all
    replicas' samples) and the replicas are devices, so inside ``no_sync()`` the accumulated
    gradient is already the global one (torch keeps per-rank gradients until the next synced
    backward; the values after that backward are the same)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=None, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params=False, bucket_cap_mb_list=None,
                 batched_grad_copy=False, forward_sync_buffers=None):
        super().__init__()
        if device_mesh is not None and process_group is not None:
            raise RuntimeError("Cannot specify both process_group and device_mesh arguments.")
        if device_mesh is not None:
            if device_mesh.ndim != 1:
                raise RuntimeError(f"Only 1D device mesh is supported, but got {device_mesh}.")
            self.process_group = _dist.GroupMember.WORLD
        else:
            self.process_group = process_group if process_group is not None else _dist._group()
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        devices = {p.device for p in module.parameters()}
        if device_ids and all(d.type == "cpu" for d in devices):
            # torch: device_ids name accelerator devices; a CPU module takes none
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with "
                "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                f"{list(device_ids)}, output_device {output_device}, and module parameters "
                f"{devices}.")
        self.module = module
        self.device_ids = list(device_ids) if device_ids else None
        self.device_mesh = device_mesh
        self.output_device, self.dim = output_device, dim
        self.broadcast_buffers = True if broadcast_buffers is None else broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self._placement = self._averaging = None
        if _dist._jax_process_count() > 1:
            self._averaging = _parallel.ProcessAveraging(self, module, init_sync)
        elif device_mesh is not None and device_mesh.size() > 1:
            self._placement = _parallel.MeshPlacement(device_mesh)
            self._placement.place_module(module)

    def forward(self, *inputs, **kwargs):
        if self._placement is not None:
            inputs, kwargs = self._placement.shard_inputs((inputs, kwargs))
        elif self._averaging is not None and self.broadcast_buffers:
            self._averaging.broadcast(list(self.module.buffers()))
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Mirrors ``DistributedDataParallel.no_sync``: gradients of backward passes inside
        accumulate without being averaged across processes; the first backward after the block
        averages the accumulated sum. (On a mesh in one process every gradient is global.)"""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous
