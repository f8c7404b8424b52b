"""Mirrors ``torch.nn.parallel.DistributedDataParallel`` at world size 1: with one rank the
averaged gradient is the rank's own gradient, so the wrapper calls the module unchanged."""
from __future__ import annotations

import contextlib

from ... import distributed as _dist
from ..modules.module import Module


class DistributedDataParallel(Module):
    """Mirrors ``torch.nn.parallel.DistributedDataParallel``: wraps ``module`` (``.module``;
    state_dict keys gain ``module.``), ``forward`` calls it, ``no_sync()`` is a context manager
    for gradient accumulation. Raises ValueError, as torch, when the default process group is
    not initialized; RuntimeError for a module with no parameter requiring grad; ValueError for
    ``device_ids`` with a CPU module. At world size 1 gradients equal the plain module's."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=None, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params=False, bucket_cap_mb_list=None,
                 batched_grad_copy=False, forward_sync_buffers=None):
        super().__init__()
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
        self.output_device, self.dim = output_device, dim
        self.broadcast_buffers = True if broadcast_buffers is None else broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Mirrors ``DistributedDataParallel.no_sync``: gradients accumulate locally inside; with
        one rank the synchronized and local gradients are the same."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous
