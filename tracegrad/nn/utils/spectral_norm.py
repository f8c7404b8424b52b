"""``torch.nn.utils.spectral_norm`` as a module (``from torch.nn.utils.spectral_norm import
spectral_norm``): the hook-based spectral norm of ``_norm_hooks``; ``SpectralNorm`` is its hook."""
from ._norm_hooks import (SpectralNormLoadStateDictPreHook, SpectralNormStateDictHook,  # noqa: F401
                          _SpectralNormHook as SpectralNorm, remove_spectral_norm, spectral_norm)

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]
