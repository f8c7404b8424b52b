"""Mirrors ``torch.nn.Unfold`` (im2col) and ``torch.nn.Fold`` (col2im)."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class Fold(Module):
    """Mirrors ``torch.nn.Fold``: ``(N, C*kh*kw, L) -> (N, C, *output_size)``, overlaps summed."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return ("output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, padding={padding}, "
                "stride={stride}".format(**self.__dict__))


class Unfold(Module):
    """Mirrors ``torch.nn.Unfold``: ``(N, C, H, W) -> (N, C*kh*kw, L)`` sliding blocks."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return "kernel_size={kernel_size}, dilation={dilation}, padding={padding}, stride={stride}".format(
            **self.__dict__)
