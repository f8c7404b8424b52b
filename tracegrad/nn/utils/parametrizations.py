"""``tracegrad.nn.utils.parametrizations``: mirrors ``torch.nn.utils.parametrizations``
(``weight_norm`` as a parametrization; state_dict keys ``parametrizations.weight.original0``
(g) and ``original1`` (v), as torch)."""
import tracegrad

from ..modules.module import Module
from . import parametrize

__all__ = ["weight_norm"]


def _norm_except_dim(v, dim):
    if dim == -1:
        return v.norm(2)
    dims = [d for d in range(v.dim()) if d != dim]
    return (v * v).sum(dim=dims, keepdim=True).sqrt()


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Mirrors ``torch.nn.utils.parametrizations.weight_norm``: ``module.<name>`` becomes
    ``g * v / ||v||`` (norm over every dim but ``dim``; the whole tensor when ``dim=None``), with
    g at ``parametrizations.<name>.original0`` and v at ``original1``. Raises ValueError when the
    module has no tensor ``name``."""
    if dim is not None and dim < -1:
        dim = dim + getattr(module, name).dim()
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module
