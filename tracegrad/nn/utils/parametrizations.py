"""``tracegrad.nn.utils.parametrizations``: mirrors ``torch.nn.utils.parametrizations``
(``weight_norm`` as a parametrization; state_dict keys ``parametrizations.weight.original0``
(g) and ``original1`` (v), as torch)."""
import tracegrad

from ..modules.module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm"]


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


def _to_matrix(weight, dim):
    if dim != 0:
        weight = weight.permute(dim, *[d for d in range(weight.dim()) if d != dim])
    return weight.flatten(1)


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            w = _to_matrix(weight, self.dim)
            h, wd = w.shape
            import tracegrad.nn.functional as F
            u = F.normalize(tracegrad.randn(h, dtype=weight.dtype), dim=0, eps=self.eps)
            v = F.normalize(tracegrad.randn(wd, dtype=weight.dtype), dim=0, eps=self.eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(w, 15)

    def _power_method(self, w, n):
        import tracegrad.nn.functional as F
        with tracegrad.no_grad():
            for _ in range(n):
                self._u.copy_(F.normalize(w.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(w.t().mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        import tracegrad.nn.functional as F
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        w = _to_matrix(weight, self.dim)
        if self.training:
            self._power_method(w, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * w.mv(v)).sum()
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Mirrors ``torch.nn.utils.parametrizations.spectral_norm``: ``module.<name>`` becomes
    ``W / sigma(W)`` with sigma estimated by power iteration (run in training mode only; 15
    iterations at registration). Buffers ``parametrizations.<name>.0._u`` / ``_v`` are drawn with
    tracegrad's generator (``manual_seed`` reproduces them; torch's own draw differs). ``dim``
    defaults to 1 for ConvTranspose modules, else 0. Raises ValueError for a missing tensor or
    ``n_power_iterations <= 0``, IndexError for a bad ``dim``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, tracegrad.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
