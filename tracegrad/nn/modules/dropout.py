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


class Dropout1d(_DropoutNd):
    """Mirrors ``torch.nn.Dropout1d``: zeroes whole channels of ``(N, C, L)`` / ``(C, L)`` input
    with probability ``p`` in training (``F.dropout1d``); identity after ``eval()``."""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Mirrors ``torch.nn.Dropout2d``: zeroes whole channels of ``(N, C, H, W)`` input
    (``F.dropout2d``: 3-D input is read as ``(N, C, L)`` with a warning, as torch)."""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Mirrors ``torch.nn.Dropout3d``: zeroes whole channels of ``(N, C, D, H, W)`` /
    ``(C, D, H, W)`` input (``F.dropout3d``)."""

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Mirrors ``torch.nn.AlphaDropout``: dropout for SELU networks that keeps zero mean and unit
    variance (``F.alpha_dropout``) in training; identity after ``eval()``."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Mirrors ``torch.nn.FeatureAlphaDropout``: alpha dropout of whole channels."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
