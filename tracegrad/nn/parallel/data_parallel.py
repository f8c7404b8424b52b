"""Mirrors ``torch.nn.DataParallel`` on one device: with no second device to scatter to, torch's
DataParallel calls the wrapped module directly; so does tracegrad (every device)."""
from __future__ import annotations

from ... import cuda
from ..modules.module import Module


class DataParallel(Module):
    """Mirrors ``torch.nn.DataParallel``: wraps ``module`` (state_dict keys gain ``module.``) and
    calls it unchanged. Without a GPU, as torch: ``device_ids`` is ``[]`` whatever was passed and
    ``output_device``/``dim`` are not set (torch returns from ``__init__`` before them). With
    GPUs: ``device_ids`` defaults to all of them and ``output_device`` to the first. Differs
    from torch: never splits the batch across devices."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        if not cuda.is_available():
            # (DeepSDF's ``DataParallel(decoder)`` and BERT-pytorch's ``device_ids=cuda_devices``
            # on a CPU machine: torch keeps no device ids, even ones passed)
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        self.device_ids = [d if isinstance(d, int) else d.index for d in device_ids]
        self.output_device = self.device_ids[0] if output_device is None and self.device_ids else output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
