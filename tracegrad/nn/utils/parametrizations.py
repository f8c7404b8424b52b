"""``tracegrad.nn.utils.parametrizations``: mirrors ``torch.nn.utils.parametrizations``
(``weight_norm`` as a parametrization; state_dict keys ``parametrizations.weight.original0``
(g) and ``original1`` (v), as torch)."""
import tracegrad

from ..modules.module import Module
from . import parametrize
from ._norm_hooks import _norm_except_dim, check_weight_norm_dim

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        # torch's ``_weight_norm``: the fused node (WeightNormInterfaceBackward0) for dim 0 or last
        return tracegrad._weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Mirrors ``torch.nn.utils.parametrizations.weight_norm``: ``module.<name>`` becomes
    ``g * v / ||v||`` (norm over every dim but ``dim``; the whole tensor when ``dim=None``), with
    g at ``parametrizations.<name>.original0`` and v at ``original1``. Raises ValueError when the
    module has no tensor ``name``, IndexError for a ``dim`` it does not have."""
    if dim is not None and isinstance(getattr(module, name, None), tracegrad.Tensor):
        dim = check_weight_norm_dim(getattr(module, name), dim)
    if dim is not None and dim < -1:
        dim = dim + getattr(module, name).dim()
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _old_weight_norm_keys(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        # a state_dict saved by the older nn.utils.weight_norm holds <name>_g / <name>_v: load them as g and v
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)
    module._register_load_state_dict_pre_hook(_old_weight_norm_keys)
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
                # the conjugate transpose (torch's ``weight_mat.H``): .t() is wrong for complex weights
                self._v.copy_(F.normalize(w.mH.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        import tracegrad.nn.functional as F
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        w = _to_matrix(weight, self.dim)
        if self.training:
            self._power_method(w, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = tracegrad.vdot(u, w.mv(v))   # u^H W v (torch's vdot: conjugates u for complex weights)
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


# ---- orthogonal ------------------------------------------------------------------------------
_ORTH_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(Q):
    """Whether ``Q^H Q`` is the identity to ``10 n eps`` (torch's test before re-orthogonalising)."""
    n, k = Q.shape[-2:]
    eps = 10 * n * tracegrad.finfo(Q.dtype).eps
    return tracegrad.allclose(Q.mH @ Q, tracegrad.eye(k, dtype=Q.dtype), atol=eps)


def _make_orthogonal(A):
    """The Q of ``A``'s QR decomposition with R's diagonal made positive (unique for full rank)."""
    a, tau = tracegrad.geqrf(A)
    return tracegrad.linalg.householder_product(a, tau) * a.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _Orthogonal(Module):
    """The parametrization ``orthogonal`` registers (torch's ``_Orthogonal``): maps an unconstrained
    ``(*, n, k)`` tensor to one with orthonormal columns (rows when ``n < k``). With
    ``use_trivialization`` the map is applied around the buffer ``base`` (``base @ map(X)``), set
    by ``right_inverse``; without it, ``right_inverse`` exists only for ``householder``."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:   # a square skew-symmetric matrix from the n x k lower triangle
                X = tracegrad.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == "matrix_exp":
                Q = tracegrad.linalg.matrix_exp(A)
            else:        # (I - A/2)^-1 (I + A/2)
                Id = tracegrad.eye(n, dtype=A.dtype)
                Q = tracegrad.linalg.solve(Id - A / 2, Id + A / 2)
            if n != k:
                Q = Q[..., :k]
        else:            # the reflectors below the diagonal, signs from the diagonal
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = tracegrad.linalg.householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if getattr(self, "base", None) is not None:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    @tracegrad.no_grad()
    def right_inverse(self, Q):
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in ("matrix_exp", "cayley"):
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            # householder: the reflectors of Q's QR, with diag(R) > 0 read off the diagonal's signs
            A, tau = tracegrad.geqrf(Q)
            A.diagonal(dim1=-2, dim2=-1).sign_()
            A.diagonal(dim1=-2, dim2=-1)[tau == 0.0] *= -1   # LAPACK's tau = 0: no reflection there
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:            # completed to an n x n orthogonal matrix with random columns, as torch
            N = tracegrad.randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype)
            Q = _make_orthogonal(tracegrad.cat([Q, N], dim=-1))
        self.base = Q
        # -I, so that the householder map of zeros is the identity and base is the weight
        neg_Id = tracegrad.zeros_like(Q_init)
        neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_Id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Mirrors ``torch.nn.utils.parametrizations.orthogonal``: ``module.<name>`` (``(*, n, k)``)
    becomes an orthogonal matrix (orthonormal columns, or rows when ``n < k``) of a free
    parameter. ``orthogonal_map``: ``"matrix_exp"`` (default for square or complex), ``"cayley"``,
    ``"householder"`` (default otherwise; real only). With ``use_trivialization`` (default) the
    map acts around a ``base`` buffer set from the current weight (its QR's Q, so the weight is
    unchanged where it was orthogonal, and deterministic for a square one; a non-square one is
    completed with random columns, as torch's ``randn``). Returns ``module``.
    Raises ValueError for a missing ``name``, fewer than 2 dims, an unknown map or householder
    with complex weights; NotImplementedError when assigning to matrix_exp/cayley without
    trivialization. Differs from torch: the random completion draws from tracegrad's generator."""
    weight = getattr(module, name, None)
    if not isinstance(weight, tracegrad.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.size(-2) == weight.size(-1) or weight.is_complex()
                          else "householder")
    if orthogonal_map not in _ORTH_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
