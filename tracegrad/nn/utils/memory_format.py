"""Mirrors ``torch.nn.utils.memory_format``: a model's convolution weights in a given memory
format (channels_last for 2-d, channels_last_3d for 3-d), for speed on backends that prefer it.
Values and gradients do not depend on the format."""
from __future__ import annotations

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, kinds):
    # classes named, not imported: nn.modules imports nn.utils (rnn packing) at its import time
    if any(c.__name__ in kinds and c.__module__ == "tracegrad.nn.modules.conv" for c in type(module).__mro__):
        module.weight.data = module.weight.detach().clone().contiguous(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Mirrors ``torch.nn.utils.convert_conv2d_weight_memory_format(module, memory_format)``:
    each ``Conv2d``/``ConvTranspose2d`` under ``module`` gets its weight in ``memory_format``
    (its ``.data``: the Parameter object stays). Returns ``module``."""
    return _convert(module, memory_format, ("Conv2d", "ConvTranspose2d"))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Mirrors ``torch.nn.utils.convert_conv3d_weight_memory_format(module, memory_format)``:
    as the 2-d form, for ``Conv3d``/``ConvTranspose3d``. Returns ``module``."""
    return _convert(module, memory_format, ("Conv3d", "ConvTranspose3d"))
