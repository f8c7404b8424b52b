"""``tracegrad.nn.init``: mirrors ``torch.nn.init``. Every function fills its tensor in place
under ``no_grad`` (so it works on Parameters) and returns it. Draws use tracegrad's RNG
stream (values differ from torch's; distributions match)."""
from __future__ import annotations

import math

import numpy as np

import tracegrad
from .._ops.warn import warn as _warn

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_"]


def calculate_gain(nonlinearity, param=None):
    """Mirrors ``torch.nn.init.calculate_gain``: 1 for linear/conv/sigmoid, 5/3 tanh, sqrt(2) relu,
    sqrt(2/(1+slope^2)) leaky_relu, 3/4 selu. ValueError for anything else."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif (not isinstance(param, bool) and isinstance(param, int)) or isinstance(param, float):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.size(1) * receptive, tensor.size(0) * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Mirrors ``torch.nn.init.uniform_``: U(a, b) in place."""
    with tracegrad.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Mirrors ``torch.nn.init.normal_``: N(mean, std^2) in place."""
    with tracegrad.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Mirrors ``torch.nn.init.trunc_normal_``: N(mean, std^2) truncated to [a, b] (inverse CDF;
    a negative std reads as its absolute value, as torch's sampler). RuntimeError, with torch's
    words, when ``a > b``; ZeroDivisionError for ``std=0``."""
    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0
    if a > b:   # torch 2.13 draws uniform_(a, b) there, which refuses the empty range
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}; "
                           "trunc_normal_ needs a <= b")
    if mean < a - 2 * std or mean > b + 2 * std:
        _warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
              "may be incorrect.")
    # a negative std draws as its absolute value (torch's sampler reads std only squared)
    scale = abs(std) if std else std   # (a zero std is torch's ZeroDivisionError, below)
    with tracegrad.no_grad():
        lo, hi = norm_cdf((a - mean) / scale), norm_cdf((b - mean) / scale)
        # float16/bfloat16 draw in float32: a uniform drawn in bfloat16 lands on +-1 often enough that
        # erfinv gives +-inf and the clamp piles values on a or b, which torch (rejection sampling at
        # the tensor's precision) never does
        low_precision = tensor.dtype in (tracegrad.float16, tracegrad.bfloat16)
        draw = tensor.float() if low_precision else tensor
        draw.uniform_(2 * lo - 1, 2 * hi - 1, generator=generator)
        draw.erfinv_()
        draw.mul_(scale * math.sqrt(2.0))
        draw.add_(mean)
        draw.clamp_(min=a, max=b)
        if low_precision:
            tensor.copy_(draw)
        return tensor


def constant_(tensor, val):
    """Mirrors ``torch.nn.init.constant_``."""
    with tracegrad.no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Mirrors ``torch.nn.init.ones_``."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Mirrors ``torch.nn.init.zeros_``."""
    with tracegrad.no_grad():
        return tensor.zero_()


def eye_(tensor):
    """Mirrors ``torch.nn.init.eye_``: identity in a 2-D tensor. ValueError otherwise."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with tracegrad.no_grad():
        return tensor.copy_(tracegrad.eye(*tensor.shape, dtype=tensor.dtype))


def dirac_(tensor, groups=1):
    """Mirrors ``torch.nn.init.dirac_`` for 3-5-D tensors: identity-preserving conv weights."""
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per = sizes[0] // groups
    w = np.zeros(tuple(sizes), dtype=np.float64)
    for g in range(groups):
        for d in range(min(out_per, sizes[1])):
            idx = (g * out_per + d, d) + tuple(s // 2 for s in sizes[2:])
            w[idx] = 1
    with tracegrad.no_grad():
        return tensor.copy_(tracegrad.tensor(w, dtype=tensor.dtype))


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Mirrors ``torch.nn.init.xavier_uniform_``: U(-a, a), a = gain*sqrt(6/(fan_in+fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Mirrors ``torch.nn.init.xavier_normal_``: N(0, std^2), std = gain*sqrt(2/(fan_in+fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """Mirrors ``torch.nn.init.kaiming_uniform_``: U(-b, b), b = gain(nonlinearity, a)*sqrt(3/fan).
    ValueError for a bad mode or nonlinearity."""
    if 0 in tensor.shape:
        _warn("Initializing zero-element tensors is a no-op")   # the caller's line, as torch
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """Mirrors ``torch.nn.init.kaiming_normal_``: N(0, std^2), std = gain/sqrt(fan)."""
    if 0 in tensor.shape:
        _warn("Initializing zero-element tensors is a no-op")   # the caller's line, as torch
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """Mirrors ``torch.nn.init.orthogonal_``: a (semi-)orthogonal matrix from the QR of a
    normal draw (tracegrad's RNG), reshaped to the tensor. ValueError below 2 dims;
    NotImplementedError for an integer, float16 or bfloat16 tensor (as torch)."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    if not tensor.is_floating_point():   # torch draws the normal matrix in the tensor's dtype
        raise NotImplementedError(f"orthogonal_: \"normal_kernel_cpu\" not implemented for {tensor.dtype}; "
                                  "initialize a floating point tensor")
    if tensor.dtype in (tracegrad.float16, tracegrad.bfloat16):   # torch's QR (geqrf) has no half kernels
        name = "Half" if tensor.dtype is tracegrad.float16 else "BFloat16"
        raise NotImplementedError(f"orthogonal_: \"geqrf_cpu\" not implemented for '{name}'; initialize a float32 "
                                  "tensor and convert it")
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    flat = np.asarray(tracegrad.randn(rows, cols, generator=generator, dtype=tracegrad.float64).numpy())
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with tracegrad.no_grad():   # the gain scales the tensor as torch's mul_ does (its TypeError for a str)
        return tensor.copy_(tracegrad.tensor(q.reshape(tuple(tensor.shape)), dtype=tensor.dtype)).mul_(gain)


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Mirrors ``torch.nn.init.sparse_``: N(0, std^2) in a 2-D ``tensor``, then in every column
    ``ceil(sparsity * rows)`` entries at random rows set to zero (tracegrad's RNG).
    ValueError for a tensor that is not 2-D."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with tracegrad.no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            zero_rows = tracegrad.randperm(rows, generator=generator)[:num_zeros]
            tensor[zero_rows, col] = 0
    return tensor


def _deprecated(fn):
    """torch's deprecated non-underscore alias of an initializer: the same call, with its FutureWarning."""
    old = fn.__name__[:-1]

    def alias(*args, **kwargs):
        _warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{fn.__name__}`.", FutureWarning)
        return fn(*args, **kwargs)
    alias.__name__, alias.__doc__ = old, f"Deprecated alias of :func:`{fn.__name__}` (FutureWarning, as torch)."
    return alias


(uniform, normal, constant, xavier_uniform, xavier_normal, kaiming_uniform, kaiming_normal, orthogonal, eye, dirac,
 sparse) = map(_deprecated, (uniform_, normal_, constant_, xavier_uniform_, xavier_normal_, kaiming_uniform_,
                             kaiming_normal_, orthogonal_, eye_, dirac_, sparse_))
