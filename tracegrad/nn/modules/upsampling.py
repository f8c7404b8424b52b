"""Mirrors ``torch.nn.Upsample``, ``UpsamplingNearest2d`` and ``UpsamplingBilinear2d``."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class Upsample(Module):
    """Mirrors ``torch.nn.Upsample``: :func:`~tracegrad.nn.functional.interpolate` with fixed
    ``size`` or ``scale_factor``, ``mode`` and ``align_corners``."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        # as torch: a tuple holds one factor per dim; anything else is one number (a numpy
        # scalar, a 0-d tensor, even a numeric string) read with float()
        self.scale_factor = tuple(float(f) for f in scale_factor) if isinstance(scale_factor, tuple) else (
            float(scale_factor) if scale_factor else None)
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        # torch passes a zero scale_factor on as none given
        return F.interpolate(input, self.size, self.scale_factor if self.scale_factor else None, self.mode,
                             self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Mirrors ``torch.nn.UpsamplingNearest2d`` (``mode='nearest'``)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Mirrors ``torch.nn.UpsamplingBilinear2d`` (``mode='bilinear'``, ``align_corners=True``)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
