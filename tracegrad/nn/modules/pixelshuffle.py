"""Mirrors ``torch.nn.PixelShuffle`` and ``torch.nn.PixelUnshuffle``."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class PixelShuffle(Module):
    """Mirrors ``torch.nn.PixelShuffle``: ``(*, C*r*r, H, W) -> (*, C, H*r, W*r)``."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """Mirrors ``torch.nn.PixelUnshuffle``: ``(*, C, H*r, W*r) -> (*, C*r*r, H, W)``."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"
