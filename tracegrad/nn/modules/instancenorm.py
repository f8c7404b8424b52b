"""Mirrors ``torch.nn.InstanceNorm1d/2d/3d``: per-(sample, channel) normalisation over the
spatial dims; optional affine parameters and running statistics (``track_running_stats``)."""
from __future__ import annotations

from .. import functional as F
from .normalization import _NormBase
from . import _elsewhere
from ..._ops.warn import warn as _warn


class _InstanceNorm(_NormBase):
    _nd = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _get_no_batch_dim(self):
        """torch's ``_InstanceNorm._get_no_batch_dim``: the ndim of an unbatched input (C + spatial)."""
        return self._nd + 1

    def forward(self, input):
        batched = self._nd + 2
        if input.ndim not in (batched, batched - 1):
            raise ValueError(f"expected {batched - 1}D or {batched}D input (got {input.ndim}D input)")
        cdim = input.ndim - self._nd - 1
        if input.shape[cdim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={cdim} to match num_features ({self.num_features}), "
                                 f"but got: {input.shape[cdim]}.")
            _warn(f"input's size at dim={cdim} does not match num_features. You can silence this warning "
                  f"by not passing in num_features, which is not used because affine=False")
        x = input if input.ndim == batched else input.unsqueeze(0)
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats, self.momentum if self.momentum
                              is not None else 0.0, self.eps)
        return out if input.ndim == batched else out.squeeze(0)


class InstanceNorm1d(_InstanceNorm):
    """Mirrors ``torch.nn.InstanceNorm1d``: input ``(N, C, L)`` or ``(C, L)``."""
    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    """Mirrors ``torch.nn.InstanceNorm2d``: input ``(N, C, H, W)`` or ``(C, H, W)``."""
    _nd = 2


class InstanceNorm3d(_InstanceNorm):
    """Mirrors ``torch.nn.InstanceNorm3d``: input ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""
    _nd = 3


__getattr__ = _elsewhere.module_getattr(__name__)   # torch's names of this file defined elsewhere here
