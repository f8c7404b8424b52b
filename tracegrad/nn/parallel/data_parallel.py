"""Mirrors ``torch.nn.DataParallel`` on one device: with no second device to scatter to, torch's
DataParallel calls the wrapped module directly; so does tracegrad (every device)."""
from __future__ import annotations

from ..modules.module import Module


class DataParallel(Module):
    """Mirrors ``torch.nn.DataParallel``: wraps ``module`` (state_dict keys gain ``module.``) and
    calls it unchanged. Differs from torch: never splits the batch across devices."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = list(device_ids) if device_ids else []
        self.output_device, self.dim = output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
