"""``tracegrad.signal.windows``: torch.signal.windows' sampled windows, same names and keyword
arguments: ``M`` points, symmetric by default (``sym=False``: the periodic form, for spectral
analysis), float32 or float64 (default dtype), leaf tensors (``requires_grad`` as asked).

Errors as torch: ValueError for a negative ``M``, a dtype other than float32/float64 and the
window's own parameter checks (``std``, ``tau``, ``beta``, ``center`` with ``sym``).
"""
from __future__ import annotations

import math

import numpy as np

from .._ops import dtypes as _dt
from .._spectral import cosine_sum, kaiser_shape, window_tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _dtype(api, M, dtype):
    d = _dt.get_default_dtype() if dtype is None else _dt.to_dtype(dtype)
    if M < 0:
        raise ValueError(f"{api} requires non-negative window length, got M={M}")
    if d not in (_dt.float32, _dt.float64):
        raise ValueError(f"{api} expects float32 or float64 dtypes, got: {d}")
    return d


def _span(M, sym):
    """The denominator that spaces ``M`` points: ``M - 1`` (symmetric) or ``M`` (periodic)."""
    return M - 1 if sym or M == 1 else M


def _window(api, M, sym, dtype, requires_grad, shape, short=True):
    d = _dtype(api, M, dtype)
    if M == 0 or (short and M == 1):
        return window_tensor(np.ones(M), d, requires_grad)
    return window_tensor(shape(_span(M, sym)), d, requires_grad)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.general_cosine``: ``sum_i (-1)^i a_i cos(2 pi i k / N)``.
    TypeError unless ``a`` is a list/tuple, ValueError when it is empty."""
    d = _dtype("general_cosine", M, dtype)
    if M <= 1:
        return window_tensor(np.ones(M), d, requires_grad)
    if not isinstance(a, (list, tuple)):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    return window_tensor(cosine_sum(M, a, _span(M, sym)), d, requires_grad)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.general_hamming``: ``alpha - (1 - alpha) cos(2 pi k / N)``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.hamming``: ``general_hamming`` with ``alpha=0.54``."""
    return general_hamming(M, sym=sym, dtype=dtype, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.hann``: ``general_hamming`` with ``alpha=0.5``."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.blackman``: cosine terms ``0.42, 0.5, 0.08``."""
    _dtype("blackman", M, dtype)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.nuttall``: the 4-term minimum Blackman-Harris cosine sum."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype,
                          requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.bartlett``: the triangle ``1 - |2k / N - 1|``."""
    return _window("bartlett", M, sym, dtype, requires_grad, lambda n: 1 - np.abs(np.arange(M) * (2 / n) - 1))


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.cosine``: ``sin(pi (k + 0.5) / N)`` (``N = M`` symmetric,
    ``M + 1`` periodic)."""
    return _window("cosine", M, sym, dtype, requires_grad,
                   lambda n: np.sin((np.arange(M) + 0.5) * (math.pi / (M + 1 if n == M else M))), short=False)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.exponential``: ``exp(-|k - center| / tau)``, ``center``
    default the middle. ValueError for ``tau <= 0`` or a ``center`` with ``sym=True``."""
    _dtype("exponential", M, dtype)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    c = center

    def shape(n):
        return np.exp(-np.abs(np.arange(M) - (n / 2.0 if c is None else c)) / tau)
    return _window("exponential", M, sym, dtype, requires_grad, shape, short=False)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.gaussian``: ``exp(-(k - N/2)^2 / (2 std^2))``.
    ValueError for ``std <= 0``."""
    _dtype("gaussian", M, dtype)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _window("gaussian", M, sym, dtype, requires_grad,
                   lambda n: np.exp(-((np.arange(M) - n / 2.0) ** 2) / (2 * std * std)), short=False)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """Mirrors ``torch.signal.windows.kaiser``: ``I0(beta sqrt(1 - ((k - N/2) / (N/2))^2)) /
    I0(beta)``. ValueError for a negative ``beta``."""
    _dtype("kaiser", M, dtype)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return _window("kaiser", M, sym, dtype, requires_grad, lambda n: kaiser_shape(M, beta, n))
