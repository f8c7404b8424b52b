"""``tracegrad.fft``: ``torch.fft``'s transforms, frequencies and shifts, same names and arguments.

Each transform is one op whose backward is JAX's VJP of ``jax.numpy.fft`` (``tracegrad.func.
jax_function``; grad_fn ``FftR2CBackward0`` / ``FftC2CBackward0`` / ``FftC2RBackward0``, torch's names
without the trailing 0). Dtypes as torch: float32 -> complex64, float64 -> complex128; integer
inputs compute in the default float dtype; ``irfft``/``hfft`` return the real dtype. ``norm`` is
``"backward"`` (default: no scaling forward, ``1/n`` inverse), ``"ortho"`` or ``"forward"``.

Complex numbers: a real input whose result reaches a real loss (``fft.rfft(x).abs().sum()``,
``fft.irfft(fft.rfft(x) * w)``) gets torch's gradient. A complex tensor that requires grad as a
leaf gets the conjugate of torch's ``.grad`` (tracegrad keeps JAX's convention there), and
``Tensor.real``/``.imag`` of complex tensors are not available yet; see README.

Errors as torch (the same classes, checked in torch's order): RuntimeError for an unknown
``norm``, a signal size below 1 (``n``/``s``, an empty dim, or ``irfft``'s default ``2 * (m - 1)``
of a length-1 input), a complex input to ``rfft``/``ihfft``, half/bfloat16 input (torch's CPU
kernels have none), repeated dims, ``s`` and ``dim`` of different lengths or ``s`` longer than
the input's rank, a real-to-complex n-dim transform over no dim; IndexError for a dim out of
range; TypeError for ``dim=None`` to the 2-d transforms.
"""
from __future__ import annotations

import functools
import math

import jax.numpy as jnp
import numpy as np

from ._ops.dtypes import get_default_dtype, to_complex, to_dtype
from ._tensor.factories import tensor as _tensor
from ._tensor.tensor import Tensor, _wrap_dim
from .func import jax_function
from ._tensor.out import accepts_out

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_KIND = {"fft": "C2C", "ifft": "C2C", "fftn": "C2C", "ifftn": "C2C", "rfft": "R2C", "ihfft": "R2C", "rfftn": "R2C",
         "irfft": "C2R", "hfft": "C2R", "irfftn": "C2R", "hfftn": "C2R", "ihfftn": "R2C"}
_REAL_ONLY = ("rfft", "ihfft", "rfftn", "rfft2", "ihfftn", "ihfft2")

# The n-dim Hermitian transforms JAX lacks: a Hermitian transform is the real one of the
# conjugate with the scaling of the opposite direction (norm "backward" <-> "forward").
_OPPOSITE = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _hfftn(a, s=None, axes=None, norm="backward"):
    return jnp.fft.irfftn(jnp.conj(a), s=s, axes=axes, norm=_OPPOSITE[norm])


def _ihfftn(a, s=None, axes=None, norm="backward"):
    return jnp.conj(jnp.fft.rfftn(a, s=s, axes=axes, norm=_OPPOSITE[norm]))


_HERMITIAN = {"hfftn": _hfftn, "ihfftn": _ihfftn}


@functools.lru_cache(maxsize=None)
def _op(jname):
    """One jax_function per ``jax.numpy.fft`` function (its static kwargs pick the variant)."""
    jfn = _HERMITIAN.get(jname) or getattr(jnp.fft, jname)
    return jax_function(lambda a, **kw: jfn(a, **kw), name=f"Fft{_KIND[jname]}")


def _check_input(input, api):
    if not isinstance(input, Tensor):
        raise TypeError(f"fft_{api}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.is_complex() and api in _REAL_ONLY:
        name = "ComplexFloat" if input.dtype.name == "complex64" else "ComplexDouble"
        raise RuntimeError(f"{api} expects a real input tensor, but got {name}; pass a real tensor "
                           "(or use the complex transform)")


def _prepare(input, api):
    """The input as the dtype the transform computes in: integers and bool in the default float
    dtype; half and bfloat16 are refused, as torch's CPU kernels do."""
    _check_input(input, api)
    if input.dtype.name in ("float16", "bfloat16"):
        raise RuntimeError(f"Unsupported dtype {'Half' if input.dtype.name == 'float16' else 'BFloat16'}; "
                           f"fft.{api} runs in float32/float64: convert the input with .float()")
    if input.is_complex() or input.is_floating_point():
        return input
    return input.to(get_default_dtype())


def _points(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified; pass sizes >= 1")
    return n


def _fft_dim(dim, ndim):
    """A transform dim; unlike reductions, a 0-d tensor has none to transform over."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions; an FFT needs a "
                         "tensor with at least one dimension")
    return _wrap_dim(dim, ndim)


def _norm(norm, api):
    if norm is not None and not isinstance(norm, str):   # torch's parser: norm is a str
        raise TypeError(f"fft_{api}(): argument 'norm' must be str, not {type(norm).__name__}; pass \"backward\", "
                        "\"ortho\" or \"forward\"")
    if norm not in (None, "backward", "ortho", "forward"):
        raise RuntimeError(f'Invalid normalization mode: "{norm}"; use "backward", "ortho" or "forward"')
    return norm or "backward"


def _c2r_out(api, jname, g):
    """``g`` (an out=-taking transform) refusing a complex ``out=`` when it is a complex-to-real one:
    torch's C2R transforms write real results only (the generic out= rule would cast them into
    it silently)."""
    if _KIND[jname] != "C2R":
        return g

    @functools.wraps(g)
    def h(*args, out=None, **kwargs):
        if isinstance(out, Tensor) and out.dtype.is_complex:
            raise RuntimeError(f"{api} expects a floating point output tensor, but got {out.dtype}; pass a real "
                               "out= (or none)")
        return g(*args, **kwargs) if out is None else g(*args, out=out, **kwargs)
    return h


def _one_dim(api, jname):
    @accepts_out(api)
    def f(input, n=None, dim=-1, norm=None, *, out=None):
        # torch's parser reads n, dim and norm before the input's dtype or rank is looked at
        if n is not None and (isinstance(n, bool) or not isinstance(n, int)):
            raise TypeError(f"fft_{api}(): argument 'n' must be int, not {type(n).__name__}")
        if isinstance(dim, bool) or not hasattr(type(dim), "__index__"):
            raise TypeError(f"fft_{api}(): argument 'dim' must be int, not {type(dim).__name__}")
        if not isinstance(norm, (str, type(None))):
            _norm(norm, api)   # its TypeError; the mode's name is checked after the dim
        x = _prepare(input, api)
        d = _fft_dim(dim, x.dim())
        # the signal size: n, else the input's (a C2R output defaults to 2 * (m - 1) points)
        _points(n if n is not None else 2 * (x.shape[d] - 1) if _KIND[jname] == "C2R" else x.shape[d])
        return _op(jname)(x, n=n, axis=d, norm=_norm(norm, api))
    f.__name__ = api
    kind = {"C2C": "complex -> complex", "R2C": "real -> complex (the n//2 + 1 non-negative frequencies)",
            "C2R": "Hermitian half -> real (length n, default 2 * (m - 1))"}[_KIND[jname]]
    f.__doc__ = (f"Mirrors ``torch.fft.{api}(input, n=None, dim=-1, norm=None)``: the 1-d "
                 f"{'inverse ' if api.startswith('i') else ''}discrete Fourier transform along ``dim``, {kind}; "
                 "``n`` zero-pads or trims the input along ``dim`` first. Autograd: JAX's VJP. Raises "
                 "RuntimeError for a bad ``norm``/``n`` (or a complex input where a real one is needed), "
                 "IndexError for a bad ``dim``.")
    return _c2r_out(api, jname, f)


fft = _one_dim("fft", "fft")
ifft = _one_dim("ifft", "ifft")
rfft = _one_dim("rfft", "rfft")
irfft = _one_dim("irfft", "irfft")
hfft = _one_dim("hfft", "hfft")
ihfft = _one_dim("ihfft", "ihfft")


def _shape_and_dims(x, s, dim, api="fftn"):
    """torch's resolution of an n-dim transform's ``s`` and ``dim``: ``(sizes, axes)``, both
    tuples; the last ``len(s)`` dims when only ``s`` is given, every dim when neither is."""
    nd = x.dim()
    axes = None
    # torch's parser checks s's type before any dim is wrapped (a str s with a 1-d input's default dims)
    if s is not None and not isinstance(s, int) and not all(isinstance(v, int) and not isinstance(v, bool) for v in s):
        raise TypeError(f"fft_{api}(): argument 's' must be tuple of ints, not {type(s).__name__} holding "
                        f"{', '.join(sorted({type(v).__name__ for v in s}))}")
    if dim is not None:
        first = dim if isinstance(dim, int) else next(iter(dim), None)
        if nd == 0 and first is not None:   # torch wraps each dim before the duplicates check; 0-d has none
            _fft_dim(first, 0)
        axes = tuple(_wrap_dim(d, nd) for d in ((dim,) if isinstance(dim, int) else dim))
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"FFT dims must be unique; got dim={tuple(dim)}")
    if s is None:
        axes = tuple(range(nd)) if axes is None else axes
        return tuple(_points(x.shape[a]) for a in axes), axes
    s = (s,) if isinstance(s, int) else tuple(s)
    if axes is not None and len(s) != len(axes):
        raise RuntimeError(f"When given, dim and shape arguments must have the same length; got {len(axes)} dims "
                           f"and {len(s)} sizes")
    if len(s) > nd:
        raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} dimensions.")
    axes = tuple(range(nd - len(s), nd)) if axes is None else axes
    return tuple(_points(x.shape[a] if v == -1 else v) for v, a in zip(s, axes)), axes


def _n_dim(api, jname, default_dim=None):
    @accepts_out(api)
    def f(input, s=None, dim=default_dim, norm=None, *, out=None):
        if default_dim is not None and dim is None:     # torch's 2-d transforms take no dim=None
            raise TypeError(f"fft_{api}(): argument 'dim' must be tuple of ints, not NoneType")
        if jname == "rfftn" or not isinstance(input, Tensor):   # rfftn checks the dtype before the dims
            _check_input(input, api)
        sizes, axes = _shape_and_dims(input, s, dim, api)
        if _KIND[jname] != "C2C" and not axes:
            raise RuntimeError(f"{jname} must transform at least one axis; pass a non-empty dim")
        x = _prepare(input, api)
        if _KIND[jname] == "C2R":    # the last output size: s[-1], else 2 * (m - 1)
            given = None if s is None else ((s,) if isinstance(s, int) else tuple(s))[-1]
            sizes = sizes[:-1] + (_points(2 * (x.shape[axes[-1]] - 1) if given in (None, -1) else given),)
        norm = _norm(norm, api)
        if not axes:                 # torch's no-op transform: the input as complex
            return x.clone() if x.is_complex() else x.to(to_complex(x.dtype))
        return _op(jname)(x, s=sizes, axes=axes, norm=norm)
    f.__name__ = api
    f.__doc__ = (f"Mirrors ``torch.fft.{api}(input, s=None, dim={default_dim}, norm=None)``: the "
                 f"{'inverse ' if jname.startswith('i') else ''}discrete Fourier transform over the dims ``dim`` "
                 "(all dims when None, or the last ``len(s)`` when only ``s`` is given); ``s`` gives the signal "
                 "size per dim (-1: unchanged). Same dtypes, autograd and errors as the 1-d transform.")
    return _c2r_out(api, jname, f)


fft2 = _n_dim("fft2", "fftn", (-2, -1))
ifft2 = _n_dim("ifft2", "ifftn", (-2, -1))
rfft2 = _n_dim("rfft2", "rfftn", (-2, -1))
irfft2 = _n_dim("irfft2", "irfftn", (-2, -1))
fftn = _n_dim("fftn", "fftn")
ifftn = _n_dim("ifftn", "ifftn")
rfftn = _n_dim("rfftn", "rfftn")
irfftn = _n_dim("irfftn", "irfftn")
hfft2 = _n_dim("hfft2", "hfftn", (-2, -1))
ihfft2 = _n_dim("ihfft2", "ihfftn", (-2, -1))
hfftn = _n_dim("hfftn", "hfftn")
ihfftn = _n_dim("ihfftn", "ihfftn")


def _freq_n(api, n):
    """torch's parser: ``n`` is an int (a one-element integer tensor too), not a bool or a float."""
    if isinstance(n, Tensor) and n.numel() == 1 and not (n.is_floating_point() or n.is_complex()) \
            and n.dtype.name != "bool":
        return int(n)
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"fft_{api}(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    return n


def _freq(api, values, n, d, dtype, requires_grad):
    dt = get_default_dtype() if dtype is None else to_dtype(dtype)
    if dt.is_complex:
        raise NotImplementedError(f"fft.{api}: \"arange_cpu\" not implemented for '{dt}'; pass a real floating dtype")
    if not dt.is_floating_point:
        raise RuntimeError(f"{api} requires a floating point or complex dtype; got {dt}")
    if n < 0 and api == "fftfreq":
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]; pass n >= 0")
    # torch scales the arange by 1 / (n * d) in the result's dtype; d = 0 gives inf/nan, as torch
    scale = 1.0 / (n * d) if n * d else math.copysign(math.inf, n * d)
    out = _tensor(np.asarray(values, np.float64), dtype=dt) * scale
    return out._set_requires_grad(True) if requires_grad else out


@accepts_out()
def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Mirrors ``torch.fft.fftfreq``: the sample frequencies ``[0, 1, ..., -(n//2), ..., -1] / (d*n)``
    of an ``n``-point transform (1-d, the default float dtype or ``dtype``). TypeError for an ``n``
    that is not an int."""
    n = _freq_n("fftfreq", n)
    k = np.concatenate([np.arange(0, (n + 1) // 2), np.arange(-(n // 2), 0)])
    return _freq("fftfreq", k, n, d, dtype, requires_grad)


@accepts_out()
def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Mirrors ``torch.fft.rfftfreq``: the ``n//2 + 1`` non-negative frequencies ``[0, ..., n//2] / (d*n)``.
    TypeError for an ``n`` that is not an int."""
    n = _freq_n("rfftfreq", n)
    count = int(n / 2) + 1       # C++'s n / 2 truncates toward zero
    if count < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {count}: [{count}]; pass n >= 0")
    return _freq("rfftfreq", np.arange(count), n, d, dtype, requires_grad)


def _shift(input, dim, sign, api):
    if not isinstance(input, Tensor):
        raise TypeError(f"fft_{api}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    dims = tuple(range(input.dim())) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    dims = tuple(_wrap_dim(d, input.dim()) for d in dims)
    if not dims and dim is None:
        raise RuntimeError("`shifts` required: fftshift of a 0-d tensor has no dim to shift; pass a tensor with dims")
    if not dims:
        return input.clone()
    shifts = tuple(sign * (input.shape[d] // 2) for d in dims)
    return input.roll(shifts, dims)


def fftshift(input, dim=None):
    """Mirrors ``torch.fft.fftshift``: rolls each of ``dim`` (all when None) by ``size // 2`` so the
    zero frequency is in the middle. Gradient through ``roll``. IndexError for a bad dim."""
    return _shift(input, dim, 1, "fftshift")


def ifftshift(input, dim=None):
    """Mirrors ``torch.fft.ifftshift``: the inverse of ``fftshift`` (rolls by ``-(size // 2)``)."""
    return _shift(input, dim, -1, "ifftshift")
