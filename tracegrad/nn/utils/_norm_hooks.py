"""The older hook-based ``torch.nn.utils.weight_norm`` / ``remove_weight_norm`` and
``torch.nn.utils.spectral_norm`` / ``remove_spectral_norm``: the weight is recomputed by a
forward pre-hook from ``<name>_g``/``<name>_v`` parameters (weight norm) or from the parameter
``<name>_orig`` and the buffers ``<name>_u``/``<name>_v`` (spectral norm), with torch's
state_dict keys."""
import operator

import tracegrad

from ..parameter import Parameter, is_lazy
from ..._ops.warn import warn as _warn

__all__ = ["weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm"]


def _normalize(x, eps):
    import tracegrad.nn.functional as F
    return F.normalize(x, dim=0, eps=eps)


def _norm_except_dim(v, dim):
    """weight norm's ``g``: the 2-norm of ``v`` over every dim but ``dim`` (size 1 there), the
    whole tensor's for ``dim == -1``. A 1-D ``v`` with ``dim=0`` has no other dim: its norm is
    ``|v|``, as torch's ``norm_except_dim`` (``sum(dim=[])`` would sum over every dim instead,
    giving a ``g`` of shape (1,) that the weight norm then refused: weight_norm of a bias)."""
    if dim == -1:
        return v.norm(2)
    dims = [d for d in range(v.dim()) if d != dim]
    if not dims:
        return v.abs()
    return (v * v).sum(dim=dims, keepdim=True).sqrt()


def check_weight_norm_dim(weight, dim):
    """IndexError, as torch, for a weight_norm ``dim`` outside ``[-weight.dim(), weight.dim() - 1]``
    (-1 and None mean the whole tensor and are always accepted); TypeError, as torch's
    ``norm_except_dim`` parser, for a dim that is no integer (a float, a bool, a str). Returns the
    dim as a Python int."""
    if isinstance(dim, bool) or not hasattr(dim, "__index__"):
        raise TypeError(f"norm_except_dim(): argument 'dim' (position 3) must be int, not {type(dim).__name__}")
    dim = operator.index(dim)
    n = weight.dim()
    if dim != -1 and not -n <= dim < n:
        raise IndexError(f"weight_norm: Dimension out of range (expected to be in range of [{-n}, {n - 1}], but "
                         f"got {dim}); pass the dim that indexes the output features, or None for the whole tensor")
    return dim


def _check_initialized(module, what):
    if any(is_lazy(p) for p in module.parameters()):
        raise ValueError(f"The module passed to `{what}` can't have uninitialized parameters. Make sure to run the "
                         "dummy forward before applying weight normalization")


def _hooks(module, kind, name):
    for hid, fn in list(module._forward_pre_hooks.items()):
        if isinstance(fn, kind) and fn.name == name:
            yield hid, fn


class _WeightNormHook:
    # tensor math only, inside a compiled function too: the module.<name> it sets is carried
    # state that every compiled call binds again (NOTE [carried state])
    _tracegrad_traceable = True

    def __init__(self, name, dim):
        self.name, self.dim = name, dim

    def compute_weight(self, module):
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        # torch's ``_weight_norm``: the fused node (WeightNormInterfaceBackward0) for dim 0 or last
        return tracegrad._weight_norm(v, g, self.dim)

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Mirrors ``torch.nn.utils.weight_norm`` (the hook version): replaces parameter ``name`` by
    ``name_g`` (norm over every dim but ``dim``; the whole tensor when ``dim=None``) and
    ``name_v``, recomputing ``module.<name>`` before each forward. Raises RuntimeError when
    ``name`` already has a weight_norm hook, ValueError for a lazy module not run yet, IndexError
    for a ``dim`` the weight does not have, TypeError when ``module.<name>`` is None."""
    _warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
          "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning)
    _check_initialized(module, "WeightNorm")
    for _ in _hooks(module, _WeightNormHook, name):
        raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    if dim is None:
        dim = -1
    weight = getattr(module, name)
    if not isinstance(weight, tracegrad.Tensor):
        # a slot registered as None (Linear(bias=False).bias): torch's norm_except_dim parser
        raise TypeError(f"weight_norm: norm_except_dim(): argument 'v' (position 1) must be Tensor, not "
                        f"{type(weight).__name__} ({type(module).__name__}.{name}); apply weight_norm to a "
                        "tensor the module has")
    dim = check_weight_norm_dim(weight, dim)
    if dim < -1:
        dim += weight.dim()
    fn = _WeightNormHook(name, dim)
    del module._parameters[name]
    with tracegrad.no_grad():
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, dim).detach().clone()))
        module.register_parameter(name + "_v", Parameter(weight.detach().clone()))
    setattr(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_weight_norm(module, name="weight"):
    """Mirrors ``torch.nn.utils.remove_weight_norm``: folds ``name_g``/``name_v`` back into one
    parameter ``name``. Raises ValueError when ``module`` has no weight_norm on ``name``."""
    for hid, fn in _hooks(module, _WeightNormHook, name):
        weight = fn.compute_weight(module)
        if name in module.__dict__:
            delattr(module, name)
        del module._parameters[name + "_g"]
        del module._parameters[name + "_v"]
        setattr(module, name, Parameter(weight.detach().clone()))
        del module._forward_pre_hooks[hid]
        return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")


def _to_matrix(weight, dim):
    """``weight`` as the matrix spectral norm works on: ``dim`` first, the rest flattened (a 1-D
    weight is a column; a 0-d one is torch's IndexError from ``size(0)``)."""
    if dim != 0:
        weight = weight.permute(dim, *[d for d in range(weight.dim()) if d != dim])
    return weight.reshape(weight.size(0), -1)


class _SpectralNormHook:
    _tracegrad_traceable = True     # as _WeightNormHook's; the power iteration writes buffers

    def __init__(self, name, n_power_iterations, dim, eps):
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        w = _to_matrix(weight, self.dim)
        if do_power_iteration:
            with tracegrad.no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(_normalize(w.t().mv(u), self.eps))
                    u.copy_(_normalize(w.mv(v), self.eps))
        u, v = u.clone(), v.clone()
        sigma = (u * w.mv(v)).sum()
        return weight / sigma

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))


class SpectralNormStateDictHook:
    """Mirrors ``torch.nn.utils.spectral_norm.SpectralNormStateDictHook``: records the format
    version of each spectral-normed parameter in the state dict's metadata
    (``_metadata[prefix]["spectral_norm"]["weight.version"] = 1``), as torch's dicts carry it."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        versions = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in versions:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        versions[key] = 1


class SpectralNormLoadStateDictPreHook:
    """Mirrors ``torch.nn.utils.spectral_norm.SpectralNormLoadStateDictPreHook``: a dict in the
    current format (``<name>_orig``, ``_u``, ``_v``) loads as it is, with or without the version
    metadata. A dict in the format of torch before 0.4.1 (``<name>_orig``, ``<name>``, ``_u``; no
    version) is converted as torch converts it: ``<name>`` is dropped and ``_v`` solved from it so
    that ``u = normalize(W v)`` and ``u . W v = sigma``. With one of those three keys missing
    nothing is converted (they are reported missing when ``strict``)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        key = prefix + self.fn.name
        version = local_metadata.get("spectral_norm", {}).get(self.fn.name + ".version")
        if version is not None and version >= 1:
            return
        if version is None and key not in state_dict \
                and all(key + s in state_dict for s in ("_orig", "_u", "_v")):
            return      # the current format whose metadata was dropped (a hand-made dict)
        absent = [key + s for s in ("_orig", "", "_u") if key + s not in state_dict]
        if absent:
            if strict:
                missing_keys.extend(absent)
            return
        with tracegrad.no_grad():
            weight_orig = state_dict[key + "_orig"]
            sigma = (weight_orig / state_dict.pop(key)).mean()
            w = _to_matrix(weight_orig, self.fn.dim)
            u = state_dict[key + "_u"]
            # least squares through the pseudo-inverse, as torch (W^T W may be singular)
            v = w.t().mm(w).pinverse().mm(w.t()).mm(u.unsqueeze(1)).squeeze(1)
            state_dict[key + "_v"] = v.mul_(sigma / u.dot(w.mv(v)))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Mirrors ``torch.nn.utils.spectral_norm`` (the hook version): parameter ``name`` moves to
    ``name_orig``; buffers ``name_u``/``name_v`` (drawn with tracegrad's generator, so
    ``manual_seed`` reproduces them; torch's own draw differs) feed one power iteration per
    forward in training mode; ``module.<name>`` is ``name_orig / sigma``. ``dim`` defaults to 1
    for ConvTranspose modules, else 0. Raises RuntimeError when ``name`` already has the hook,
    ValueError when ``n_power_iterations <= 0``, when the parameter is None, or for a lazy module not
    run yet."""
    _check_initialized(module, "SpectralNorm")
    for _ in _hooks(module, _SpectralNormHook, name):
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    if n_power_iterations <= 0:
        raise ValueError("spectral_norm: expected n_power_iterations to be positive, but got "
                         f"n_power_iterations={n_power_iterations}")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    weight = module._parameters[name]
    if weight is None:
        raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None; apply spectral_norm "
                         f"to a parameter {type(module).__name__} has")
    fn = _SpectralNormHook(name, n_power_iterations, dim, eps)
    with tracegrad.no_grad():
        w = _to_matrix(weight, dim)
        h, wd = w.shape
        u = _normalize(tracegrad.randn(h, dtype=weight.dtype), eps)
        v = _normalize(tracegrad.randn(wd, dtype=weight.dtype), eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    module._register_state_dict_hook(SpectralNormStateDictHook(fn))
    module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
    return module


def remove_spectral_norm(module, name="weight"):
    """Mirrors ``torch.nn.utils.remove_spectral_norm``: puts back one parameter ``name`` equal
    to the current normalized weight (no power iteration). Raises ValueError when ``module``
    has no spectral_norm on ``name``."""
    for hid, fn in _hooks(module, _SpectralNormHook, name):
        with tracegrad.no_grad():
            weight = fn.compute_weight(module, do_power_iteration=False)
        if name in module.__dict__:
            delattr(module, name)
        delattr(module, name + "_u")
        delattr(module, name + "_v")
        delattr(module, name + "_orig")
        module.register_parameter(name, Parameter(weight.detach().clone()))
        del module._forward_pre_hooks[hid]
        for hooks, kind in ((module._state_dict_hooks, SpectralNormStateDictHook),
                            (module._load_state_dict_pre_hooks, SpectralNormLoadStateDictPreHook)):
            for k, h in list(hooks.items()):     # each held in the module's hook record (``.fn``)
                if isinstance(h.fn, kind) and h.fn.fn is fn:
                    del hooks[k]
        return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
