"""Mirrors ``torch.nn.PairwiseDistance`` and ``torch.nn.CosineSimilarity``."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class PairwiseDistance(Module):
    """Mirrors ``torch.nn.PairwiseDistance``: ``||x1 - x2 + eps||_p`` over the last dim."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """Mirrors ``torch.nn.CosineSimilarity`` along ``dim``."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
