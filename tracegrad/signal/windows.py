"""``tracegrad.signal.windows``: torch.signal.windows' sampled windows, same names and keyword
arguments: ``M`` points, symmetric by default (``sym=False``: the periodic form, for spectral
analysis), float32 or float64 (default dtype), on ``device``. Differs from torch: the result is a
leaf (torch's windows with ``requires_grad=True`` of two or more points carry the history of
their own arithmetic).

Errors as torch: ValueError for a negative ``M``, a layout other than ``tracegrad.strided``, a
dtype other than float32/float64 (a name or a Python type too) and the window's own parameter
checks (``std``, ``tau``, ``beta``, ``center`` with ``sym``); TypeError for an ``M`` that is not
an int where points are computed (a float, a bool, a 1-D tensor: torch's ``linspace(steps=M)``
refuses it; ``M`` equal to 0, or to 1 for the windows that special-case it, gives the empty or
one-point window first) and for a ``requires_grad`` that is not a bool; a bad ``device`` is
RuntimeError.
"""
from __future__ import annotations

import collections.abc
import math

import numpy as np

from .._ops import dtypes as _dt
from .._spectral import kaiser_shape
from .._tensor.factories import tensor as _tensor
from .._tensor.layout import strided as _strided
from .._tensor.tensor import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _dtype(api, M, dtype, layout=_strided):
    """torch's window checks, in its order: ``M``, then ``layout``, then ``dtype`` (the dtype,
    default the default dtype)."""
    d = _dt.get_default_dtype() if dtype is None else dtype
    if M < 0:
        raise ValueError(f"{api} requires non-negative window length, got M={M}")
    if layout is not _strided:
        raise ValueError(f"{api} is implemented for strided tensors only, got: {layout}; pass "
                         f"layout=tracegrad.strided (or leave it out)")
    if d is not _dt.float32 and d is not _dt.float64:
        raise ValueError(f"{api} expects float32 or float64 dtypes, got: {d}; pass dtype=tracegrad.float32 "
                         f"or tracegrad.float64")
    return d


def _points(api, M):
    """``M`` as the int torch's ``linspace(steps=M)`` takes: a Python or NumPy int, or a 0-d
    integer tensor; TypeError for a bool, a float or a tensor of another kind (a bool tensor
    fails first in torch's ``M - 1``: RuntimeError)."""
    if isinstance(M, Tensor):
        M - 1   # noqa: B018 -- a bool tensor raises torch's RuntimeError here, as in torch's arithmetic
        ok = M.dim() == 0 and not (M.is_floating_point() or M.is_complex())
    else:
        ok = isinstance(M, (int, np.integer)) and not isinstance(M, bool)
    if not ok:
        kind = f"Tensor of shape {tuple(M.shape)} and dtype {M.dtype}" if isinstance(M, Tensor) else type(M).__name__
        raise TypeError(f"{api}(): the window length M must be an int, not {kind} (torch's linspace() received an "
                        f"invalid combination of arguments: steps={kind}); pass M as an int")
    return int(M)


def _requires_grad(api, requires_grad, none_ok=True):
    if (requires_grad is None and not none_ok) or (requires_grad is not None and type(requires_grad) is not bool):
        raise TypeError(f"{api}(): argument 'requires_grad' must be bool, not {type(requires_grad).__name__}; "
                        f"pass True or False")
    return bool(requires_grad)


def _make(api, values, d, device, requires_grad):
    """A window's float64 host values as a leaf tensor of ``d`` on ``device``."""
    return _tensor(np.asarray(values, np.float64), dtype=d, device=device,
                   requires_grad=_requires_grad(api, requires_grad))


def _span(M, sym):
    """The denominator that spaces ``M`` points: ``M - 1`` (symmetric) or ``M`` (periodic)."""
    return M - 1 if sym or M == 1 else M


def _window(api, M, sym, dtype, layout, device, requires_grad, shape, short=True):
    """The checks, then: ``M == 0`` the empty window, ``M == 1`` (``short``) the one-point window,
    else ``shape(M as an int, span)`` computed on the host."""
    d = _dtype(api, M, dtype, layout)
    if M == 0 or (short and M == 1):
        return _make(api, np.ones(1 if M else 0), d, device, requires_grad)
    n = _points(api, M)
    return _make(api, shape(n, _span(n, sym)), d, device, requires_grad)


def _cosine_terms(api, a, n, denom, d):
    """torch's general cosine sum ``sum_i (-1)^i a_i cos(2 pi i k / denom)`` over ``n`` points,
    the coefficients read as torch reads them (any iterable of numbers or one-element tensors;
    ValueError for a string, TypeError for a complex number)."""
    coeffs = _tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=d).numpy().astype(np.float64)
    if coeffs.ndim == 0:
        raise TypeError(f"{api}(): the coefficients a must be a sequence of numbers, got a 0-d tensor")
    k = np.arange(n) * (2 * math.pi / denom)
    i = np.arange(coeffs.shape[0], dtype=np.float64)
    return (coeffs[..., None] * np.cos(i[:, None] * k)).sum(0)


def general_cosine(M, *, a, sym=True, dtype=None, layout=_strided, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.general_cosine``: ``sum_i (-1)^i a_i cos(2 pi i k / N)``.
    TypeError unless ``a`` is iterable, ValueError when it is empty (both only past ``M <= 1``,
    whose windows need no coefficients, as torch)."""
    d = _dtype("general_cosine", M, dtype, layout)
    if M == 0 or M == 1:
        return _make("general_cosine", np.ones(1 if M else 0), d, device, requires_grad)
    if not isinstance(a, collections.abc.Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    n = _points("general_cosine", M)
    # torch builds the coefficients with requires_grad as given: a None there is its TypeError
    _requires_grad("general_cosine", requires_grad, none_ok=False)
    return _make("general_cosine", _cosine_terms("general_cosine", a, n, _span(n, sym), d), d, device,
                 requires_grad)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=_strided, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.general_hamming``: ``alpha - (1 - alpha) cos(2 pi k / N)``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=_strided, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.hamming``: ``general_hamming`` with ``alpha=0.54``."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=_strided, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.hann``: ``general_hamming`` with ``alpha=0.5``."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=_strided, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.blackman``: cosine terms ``0.42, 0.5, 0.08``."""
    _dtype("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=_strided, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.nuttall``: the 4-term minimum Blackman-Harris cosine sum."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype,
                          layout=layout, device=device, requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=_strided, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.bartlett``: the triangle ``1 - |2k / N - 1|``."""
    return _window("bartlett", M, sym, dtype, layout, device, requires_grad,
                   lambda n, span: 1 - np.abs(np.arange(n) * (2 / span) - 1))


def cosine(M, *, sym=True, dtype=None, layout=_strided, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.cosine``: ``sin(pi (k + 0.5) / N)`` (``N = M`` symmetric,
    ``M + 1`` periodic)."""
    return _window("cosine", M, sym, dtype, layout, device, requires_grad,
                   lambda n, span: np.sin((np.arange(n) + 0.5) * (math.pi / (n + 1 if span == n else n))),
                   short=False)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=_strided, device=None,
                requires_grad=False):
    """Mirrors ``torch.signal.windows.exponential``: ``exp(-|k - center| / tau)``, ``center``
    default the middle. ValueError for ``tau <= 0`` or a ``center`` with ``sym=True``."""
    _dtype("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")

    def shape(n, span):
        return np.exp(-np.abs(np.arange(n) - (span / 2.0 if center is None else center)) / tau)
    return _window("exponential", M, sym, dtype, layout, device, requires_grad, shape, short=False)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=_strided, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.gaussian``: ``exp(-(k - N/2)^2 / (2 std^2))``.
    ValueError for ``std <= 0``."""
    _dtype("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _window("gaussian", M, sym, dtype, layout, device, requires_grad,
                   lambda n, span: np.exp(-((np.arange(n) - span / 2.0) ** 2) / (2 * std * std)), short=False)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=_strided, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.kaiser``: ``I0(beta sqrt(1 - ((k - N/2) / (N/2))^2)) /
    I0(beta)``. ValueError for a negative ``beta``."""
    _dtype("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return _window("kaiser", M, sym, dtype, layout, device, requires_grad,
                   lambda n, span: kaiser_shape(n, beta, span))
