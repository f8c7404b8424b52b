"""Dropout layers: mirror ``torch.nn.Dropout`` (tracegrad's RNG; identity in eval mode)."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class _DropoutNd(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Mirrors ``torch.nn.Dropout``: in training zeroes elements with probability ``p`` and scales
    the rest by ``1/(1-p)``; identity after ``eval()``. ValueError for p outside [0, 1].
    Differs from torch: the random mask (JAX PRNG stream)."""

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)
