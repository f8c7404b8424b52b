"""``torch.nn.utils.weight_norm`` as a module (``from torch.nn.utils.weight_norm import
weight_norm``): the hook-based weight norm of ``_norm_hooks``; ``WeightNorm`` is its hook."""
from ._norm_hooks import _WeightNormHook as WeightNorm, remove_weight_norm, weight_norm  # noqa: F401

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]
