"""Short-time Fourier transforms and windows: ``stft``/``istft`` (composites of
``tracegrad.fft``, ``unfold``, ``pad`` and ``index_add``: differentiable through them), torch's
top-level windows (``hann_window``, ``hamming_window``, ``blackman_window``,
``bartlett_window``, ``kaiser_window``) and the sampled window shapes that
``tracegrad.signal.windows`` builds on. Bound as ``tracegrad.<name>`` in
``tracegrad/__init__.py``; ``Tensor.stft``/``Tensor.istft`` are set here (this module is above
the API layer's registry, as ``_linalg_functions.py``)."""
from __future__ import annotations

import math
import operator

import numpy as np

from . import fft as _fft
from ._api.argcheck import require_bool, require_float, require_int
from ._api.complex_api import view_as_real
from ._ops import dtypes as _dt
from ._ops.warn import warn_once as _warn_once
from ._tensor.factories import arange as _arange, check_pin_memory, ones as _ones, tensor as _tensor, zeros as _zeros
from ._tensor.layout import layout as _layout, strided as _strided
from ._tensor.tensor import Tensor, _JaxTracer
from .nn import functional as _F

__all__ = ["stft", "istft", "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


# ---- windows -------------------------------------------------------------------------------
def window_tensor(values, dtype, requires_grad, device=None):
    """A window computed in float64 on the host as a tensor of ``dtype`` on ``device`` (a leaf;
    RuntimeError for a device torch does not know)."""
    return _tensor(np.asarray(values, np.float64), dtype=dtype, device=device, requires_grad=requires_grad)


def cosine_sum(n, coeffs, denom):
    """``sum_i (-1)^i a_i cos(2 pi i k / denom)`` for ``k = 0..n-1`` (float64 numpy)."""
    k = np.arange(n) * (2 * math.pi / denom)
    return sum((-1) ** i * a * np.cos(i * k) for i, a in enumerate(coeffs))


def _window_dtype(api, dtype):
    d = _dt.get_default_dtype() if dtype is None else _dt.to_dtype(dtype)
    if d.is_complex:   # torch's kernel has no complex instance: NotImplementedError, not its dtype check
        raise NotImplementedError(f"{api} is not implemented for complex dtypes, got: {d}; pass a floating "
                                  f"dtype (tracegrad.float32) and convert the window after")
    if not d.is_floating_point:
        raise RuntimeError(f"{api} expects floating point dtypes, got: {d}; pass dtype=tracegrad.float32")
    return d


def _aten_window(api, window_length, periodic, dtype, requires_grad, shape, layout=None, device=None,
                 pin_memory=False):
    """torch's top-level window convention: length 0 is empty, 1 is ``[1]``; ``periodic``
    computes ``window_length + 1`` symmetric points and drops the last. ``shape(n)`` gives
    ``n`` symmetric points (``n >= 2``). Checked in torch's order: a sparse ``layout``
    (RuntimeError; not a layout at all: TypeError), the dtype, the length, the device, then
    ``pin_memory`` (RuntimeError without an accelerator). ``periodic`` must be a bool (torch's
    parser: TypeError for 1, None, a str or a tensor, where a truth test would read them); a 0-d
    integer tensor ``window_length`` is read as its int (the guard refused other kinds before)."""
    if periodic is not True and periodic is not False:
        require_bool(api, "periodic", periodic)
    if type(window_length) is not int:
        window_length = operator.index(window_length)
    if layout is not None and layout is not _strided:
        if not isinstance(layout, _layout):
            raise TypeError(f"{api}(): argument 'layout' must be torch.layout, not {type(layout).__name__}; "
                            "pass tracegrad.strided (or leave it out)")
        raise RuntimeError(f"{api} is not implemented for sparse types, got: layout={layout}; build the dense "
                           f"window (layout=tracegrad.strided) and call .to_sparse() on it")
    d = _window_dtype(api, dtype)
    if window_length < 0:
        raise RuntimeError(f"{api} requires non-negative window_length, got window_length={window_length}")
    if window_length <= 1:
        values = np.ones(window_length)
    else:
        n = window_length + 1 if periodic else window_length
        values = shape(n)[:window_length]
    t = window_tensor(values, d, requires_grad, device)   # the device checked first, as torch
    check_pin_memory(pin_memory, device)
    return t


_LEFT_OUT = object()   # an argument left out (torch's overloads tell it from any default value)


def _overload_order(api, given):
    """torch's windows take their optional positional parameters as nested overloads (``periodic``,
    then ``alpha``, then ``beta``): one given without the one before it is its TypeError."""
    for i in range(1, len(given)):
        if given[i][1] is not _LEFT_OUT and given[i - 1][1] is _LEFT_OUT:
            wanted = ", ".join(n for n, _ in given[:i + 1])
            raise TypeError(f"{api}() received an invalid combination of arguments: {given[i][0]} needs "
                            f"{given[i - 1][0]} too; call {api}(window_length, {wanted})")


def hamming_window(window_length, periodic=_LEFT_OUT, alpha=_LEFT_OUT, beta=_LEFT_OUT, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    """Mirrors ``torch.hamming_window``: ``alpha - beta cos(2 pi k / (N - 1))`` (periodic: of
    ``N + 1`` points, the last dropped; by default periodic, ``alpha=0.54``, ``beta=0.46``). 1-d,
    default float dtype. RuntimeError for a negative length or a non-floating dtype
    (NotImplementedError for a complex one); TypeError, as torch's overloads, for ``alpha``
    without ``periodic``, ``beta`` without ``alpha``, or either not a real number (a 0-d tensor
    without grad is read as its number)."""
    _overload_order("hamming_window", (("periodic", periodic), ("alpha", alpha), ("beta", beta)))
    periodic = True if periodic is _LEFT_OUT else periodic
    alpha = 0.54 if alpha is _LEFT_OUT else float(require_float("hamming_window", "alpha", alpha, 3))
    beta = 0.46 if beta is _LEFT_OUT else float(require_float("hamming_window", "beta", beta, 4))
    return _aten_window("hamming_window", window_length, periodic, dtype, requires_grad,
                        lambda n: alpha - beta * np.cos(np.arange(n) * (2 * math.pi / (n - 1))),
                        layout=layout, device=device, pin_memory=pin_memory)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False):
    """Mirrors ``torch.hann_window``: ``0.5 - 0.5 cos(2 pi k / (N - 1))`` (periodic by default).
    RuntimeError for a negative length or a non-floating dtype."""
    return _aten_window("hann_window", window_length, periodic, dtype, requires_grad,
                        lambda n: cosine_sum(n, (0.5, 0.5), n - 1),
                        layout=layout, device=device, pin_memory=pin_memory)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """Mirrors ``torch.blackman_window``: ``0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k /
    (N - 1))``. RuntimeError for a negative length or a non-floating dtype."""
    return _aten_window("blackman_window", window_length, periodic, dtype, requires_grad,
                        lambda n: cosine_sum(n, (0.42, 0.5, 0.08), n - 1),
                        layout=layout, device=device, pin_memory=pin_memory)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """Mirrors ``torch.bartlett_window``: the triangle ``1 - |2k / (N - 1) - 1|``.
    RuntimeError for a negative length or a non-floating dtype."""
    return _aten_window("bartlett_window", window_length, periodic, dtype, requires_grad,
                        lambda n: 1 - np.abs(np.arange(n) * (2 / (n - 1)) - 1),
                        layout=layout, device=device, pin_memory=pin_memory)


def kaiser_shape(n, beta, denom):
    """``I0(beta sqrt(1 - ((k - c) / c)^2)) / I0(beta)`` over ``n`` points, ``c = denom / 2``."""
    c = denom / 2
    r = (np.arange(n) - c) / c
    return np.i0(beta * np.sqrt(np.clip(1 - r * r, 0, None))) / np.i0(beta)


def kaiser_window(window_length, periodic=_LEFT_OUT, beta=_LEFT_OUT, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    """Mirrors ``torch.kaiser_window``: the Kaiser window of shape parameter ``beta`` (12.0 by
    default; ``I0`` is the modified Bessel function of order 0). RuntimeError for a negative
    length or a non-floating dtype (NotImplementedError for a complex one); TypeError for a
    ``beta`` that is not a real number (a 0-d tensor without grad is read as its number), and,
    as torch's overloads, for a ``beta`` given without ``periodic``."""
    _overload_order("kaiser_window", (("periodic", periodic), ("beta", beta)))
    periodic = True if periodic is _LEFT_OUT else periodic
    # a float, an int, a bool or a 0-d tensor without grad (torch's parser), read as its number
    beta = 12.0 if beta is _LEFT_OUT else float(require_float("kaiser_window", "beta", beta, 3))
    return _aten_window("kaiser_window", window_length, periodic, dtype, requires_grad,
                        lambda n: kaiser_shape(n, beta, n - 1),
                        layout=layout, device=device, pin_memory=pin_memory)


# ---- stft / istft ----------------------------------------------------------------------------
def _describe(api, input, n_fft, hop_length, win_length, window):
    w = "None" if window is None else f"tensor{list(window.shape)}"
    return (f"{api}(tensor{list(input.shape)}, n_fft={n_fft}, hop_length={hop_length}, win_length={win_length}, "
            f"window={w})")


def _frame_window(api, input, n_fft, hop_length, win_length, window):
    """Defaults and checks shared by stft and istft: ``(hop, full window of n_fft or None)``."""
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    where = _describe(api, input, n_fft, hop, win, window)
    if n_fft <= 0:
        raise RuntimeError(f"{where}: expected 0 < n_fft, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{where}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{where}: expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise RuntimeError(f"{where}: expected a 1D window tensor of size equal to win_length={win}, but got "
                           f"window with size {list(window.shape)}")
    if window is None:       # torch: once per process for each of stft and istft (TORCH_WARN_ONCE)
        _warn_once("A window was not provided. A rectangular window is used, " + (
            "which leaks spectrally; pass window=torch.hann_window(n_fft) (or another window), or "
            "window=torch.ones(n_fft) to keep the rectangular one and silence this warning." if api == "stft" else
            "the inverse is exact only with the window stft used; pass that window, or window=torch.ones(n_fft)"
            " to keep the rectangular one and silence this warning."), UserWarning, key=("window", api))
    if window is not None and win < n_fft:      # centre the window in n_fft samples
        left = (n_fft - win) // 2
        window = _F.pad(window, (left, n_fft - win - left))
    elif window is None and win < n_fft:
        left = (n_fft - win) // 2
        window = _F.pad(_ones(win, dtype=input.real.dtype if input.is_complex() else input.dtype),
                        (left, n_fft - win - left))
    return hop, window


def _check_n_fft(api, n_fft):
    """torch's parser TypeError for an ``n_fft`` that is not an int (None, a float, a tensor)."""
    if type(n_fft) is not int and not (hasattr(n_fft, "__index__") and not isinstance(n_fft, Tensor)):
        raise TypeError(f"{api}(): argument 'n_fft' (position 2) must be int, not {type(n_fft).__name__}")


def _check_flags(api, flags, optional=()):
    """torch's parser TypeError for a flag of ``api`` that is not a bool (1, a str, a tensor, and None
    unless the name is in ``optional``), which a truth test here would have read; two identity
    tests per flag when they are bools."""
    for name, v in flags.items():
        if v is not True and v is not False and not (v is None and name in optional):
            require_bool(api, name, v)


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """Mirrors ``torch.stft``: the short-time Fourier transform of ``input`` ``(L,)`` or
    ``(B, L)``: frames of ``n_fft`` samples every ``hop_length`` (default ``n_fft // 4``), each
    times ``window`` (``win_length`` samples, default all ones, centred in ``n_fft``), then
    ``fft``. ``center`` pads ``n_fft // 2`` samples each side with ``pad_mode`` ('reflect',
    'constant', 'replicate', 'circular'). Returns complex ``(B?, n_fft // 2 + 1, n_frames)``
    (``n_fft`` rows when ``onesided=False``, the default for complex input or window);
    ``normalized`` scales by ``n_fft ** -0.5``. ``return_complex=False`` (deprecated in torch,
    which warns the same) gives the real view ``(..., 2)``. ``align_to_window=True`` (only with
    ``center=False``) starts each frame's window at ``m * hop_length`` instead of centring it
    in the ``n_fft`` samples. Differentiable.
    RuntimeError: ``return_complex`` not given for a real input, bad sizes, ``align_to_window``
    with ``center=True`` (as torch); NotImplementedError for an unknown ``pad_mode``; TypeError for
    an ``n_fft`` that is not an int, or a ``normalized`` that is not a bool (``onesided``,
    ``return_complex``: a bool or None).
    Differs from torch: a str ``onesided`` is the TypeError here, where torch's overload
    resolution reads it as another overload's ``pad_mode`` and fails later (RuntimeError)."""
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false; pass center=False")
    _check_n_fft("stft", n_fft)   # after torch's Python reads ``center``
    _check_flags("stft", {"normalized": normalized, "onesided": onesided, "return_complex": return_complex},
                 optional=("onesided", "return_complex"))
    if return_complex is None:
        if not (input.is_complex() or (window is not None and window.is_complex())):
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs; pass "
                               "return_complex=True")
        return_complex = True
    if not return_complex:
        # once per process (torch's TORCH_WARN_ONCE)
        _warn_once("stft with return_complex=False is deprecated. In a future release stft returns complex "
                   "tensors for all inputs; pass return_complex=True and call tracegrad.view_as_real on the "
                   "result for the old format.", UserWarning)
    if input.dim() not in (1, 2):
        raise RuntimeError(f"{_describe('stft', input, n_fft, hop_length, win_length, window)}: expected a 1D or "
                           f"2D tensor, got {input.dim()}D")
    if center and input.dtype.name == "bool" and pad_mode in ("reflect", "replicate"):
        # torch pads before it checks the dtype, and its padding kernels have no bool version
        kernel = "reflection_pad1d" if pad_mode == "reflect" else "replication_pad1d"
        raise NotImplementedError(f"stft: \"{kernel}\" not implemented for 'Bool'; convert the input with .float()")
    if not (input.is_floating_point() or input.is_complex()):
        raise RuntimeError(f"{_describe('stft', input, n_fft, hop_length, win_length, window)}: expected a tensor of "
                           "floating point or complex values; convert the input with .float()")
    x = input.unsqueeze(0) if input.dim() == 1 else input
    if center:
        if pad_mode not in ("reflect", "constant", "replicate", "circular"):
            raise NotImplementedError(f"stft: pad_mode must be 'reflect', 'constant', 'replicate' or 'circular', got "
                               f"{pad_mode!r}")
        p = n_fft // 2
        x = _F.pad(x.unsqueeze(1), (p, p), mode=pad_mode).squeeze(1)
    win = n_fft if win_length is None else win_length
    if align_to_window and 0 < win < n_fft:    # the window's start on the frame's: shift the signal
        left = (n_fft - win) // 2
        x = _F.pad(x, (left, n_fft - win - left))
    hop, w = _frame_window("stft", x if input.dim() == 2 else x[0], n_fft, hop_length, win_length, window)
    if x.shape[-1] < n_fft:
        raise RuntimeError(f"{_describe('stft', input, n_fft, hop, win_length, window)}: expected 0 < n_fft <= "
                           f"{x.shape[-1]}, but got n_fft={n_fft}")
    frames = x.unfold(-1, n_fft, hop)                     # (B, n_frames, n_fft)
    if w is not None:
        frames = frames * w
    if onesided is None:
        onesided = not (frames.is_complex())
    if onesided and frames.is_complex():
        raise RuntimeError("Cannot have onesided output if window or input is complex; pass onesided=False")
    norm = "ortho" if normalized else "backward"
    spec = _fft.rfft(frames, dim=-1, norm=norm) if onesided else _fft.fft(frames, dim=-1, norm=norm)
    spec = spec.transpose(-1, -2)
    if input.dim() == 1:
        spec = spec.squeeze(0)
    return spec if return_complex else view_as_real(spec)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """Mirrors ``torch.istft``: the inverse of ``stft`` by windowed overlap-add, divided by the
    summed squared window (which must not vanish anywhere in the kept range: RuntimeError, as
    torch's NOLA check). ``input`` complex ``(B?, freq, n_frames)``; ``onesided`` (default: when
    ``freq != n_fft``) inverts with ``irfft``; ``center`` trims ``n_fft // 2`` samples each side;
    ``length`` trims or zero-pads the end. Real output unless ``return_complex``.
    Differentiable. RuntimeError for a real input, mismatched sizes or a ``length`` below 1;
    TypeError for a ``center``, ``normalized`` or ``return_complex`` that is not a bool
    (``onesided``: a bool or None) or a ``length`` that is not an int."""
    _check_n_fft("istft", n_fft)
    _check_flags("istft", {"center": center, "normalized": normalized, "onesided": onesided,
                           "return_complex": return_complex}, optional=("onesided",))
    if length is not None and type(length) is not int:
        length = operator.index(require_int("istft", "length", length))
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if input.dim() < 2:          # torch reads the frequency dim (-2) of a batch first
        raise IndexError(f"istft: Dimension out of range (expected a (batch of) 2-D spectrograms, got "
                         f"{input.dim()}D input)")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex dtype, got {input.dim()}D")
    spec = input.unsqueeze(0) if input.dim() == 2 else input
    hop, w = _frame_window("istft", input, n_fft, hop_length, win_length, window)
    n_freq, n_frames = spec.shape[-2], spec.shape[-1]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided and n_freq != n_fft // 2 + 1:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft / 2 + 1 when onesided=True, but got {n_freq}")
    if not onesided and n_freq != n_fft:
        raise RuntimeError(f"istft: expected the frequency dimension of the input tensor to match n_fft when "
                           f"onesided=False, but got {n_freq}")
    if onesided and return_complex:
        raise RuntimeError("istft: cannot have onesided output if the output is complex; pass onesided=False")
    norm = "ortho" if normalized else "backward"
    frames = spec.transpose(-1, -2)                        # (B, n_frames, freq)
    frames = _fft.irfft(frames, n=n_fft, dim=-1, norm=norm) if onesided else _fft.ifft(frames, dim=-1, norm=norm)
    if not return_complex and frames.is_complex():
        frames = frames.real
    real_dt = frames.real.dtype if frames.is_complex() else frames.dtype
    if w is None:
        w = _ones(n_fft, dtype=real_dt)
    frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    pos = (_arange(n_frames).unsqueeze(1) * hop + _arange(n_fft)).reshape(-1)
    y = _zeros(spec.shape[0], total, dtype=frames.dtype).index_add(1, pos, frames.reshape(spec.shape[0], -1))
    sq = (w * w).detach()          # torch squares a complex window too (no conjugate)
    env = _zeros(total, dtype=sq.dtype).index_add(0, pos, sq.repeat(n_frames))
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0) if length is None else min(start + length, total)
    env = env[start:end]
    if length is not None and length <= 0:   # torch's NOLA check fails on the empty envelope
        raise RuntimeError(f"istft: length must be positive, got length={length}; pass the signal's length "
                           "(or None for the full overlap-add)")
    if not isinstance(env._value, _JaxTracer) and bool((env.abs() < 1e-11).any()):   # eager only
        raise RuntimeError(f"{_describe('istft', input, n_fft, hop, win_length, window)}: window overlap add min: "
                           f"{float(env.abs().min()):g}; pass a window and hop_length whose squared overlap-add "
                           "is nonzero (NOLA)")
    y = y[:, start:end] / env
    if length is not None and y.shape[-1] < length:
        y = _F.pad(y, (0, length - y.shape[-1]))
    return y.squeeze(0) if input.dim() == 2 else y


def _stft_method(self, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
                 normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """Mirrors ``Tensor.stft``: see ``tracegrad.stft``."""
    return stft(self, n_fft, hop_length, win_length, window, center, pad_mode, normalized, onesided, return_complex,
                align_to_window)


def _istft_method(self, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
                  onesided=None, length=None, return_complex=False):
    """Mirrors ``Tensor.istft``: see ``tracegrad.istft``."""
    return istft(self, n_fft, hop_length, win_length, window, center, normalized, onesided, length, return_complex)


# Tensor methods of the same meaning (ATTACHED_ELSEWHERE in tests/api/test_registration.py)
Tensor.stft = _stft_method
Tensor.istft = _istft_method
