"""Windows (torch's top-level ``*_window`` and ``signal.windows``) and ``stft``/``istft``
against torch: values, shapes, dtypes, gradients through the transforms, and error classes."""
import warnings

import numpy as np
import pytest

import tracegrad
from parity import A, C, D, F, check_parity, params

torch = pytest.importorskip("torch")

TOP = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
SIGNAL = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "hamming", "hann", "kaiser", "nuttall"]


@pytest.mark.parametrize("name", TOP)
def test_top_level_windows(name):
    for n in (0, 1, 2, 7, 10):
        for periodic in (True, False):
            want = getattr(torch, name)(n, periodic, dtype=torch.float64)
            got = getattr(tracegrad, name)(n, periodic, dtype=tracegrad.float64)
            assert got.dtype is tracegrad.float64 and tuple(got.shape) == tuple(want.shape)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    got, want = getattr(tracegrad, name)(6, requires_grad=True), getattr(torch, name)(6, requires_grad=True)
    assert got.dtype is tracegrad.float32 and got.requires_grad and got.is_leaf
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_window_parameters_and_errors():
    np.testing.assert_allclose(tracegrad.hamming_window(9, True, 0.6, 0.3).numpy(),
                               torch.hamming_window(9, True, 0.6, 0.3).numpy(), atol=1e-6)
    np.testing.assert_allclose(tracegrad.kaiser_window(9, False, beta=5.0).numpy(),
                               torch.kaiser_window(9, False, beta=5.0).numpy(), atol=1e-6)
    for mod in (torch, tracegrad):
        with pytest.raises(RuntimeError, match="floating point"):
            mod.hann_window(5, dtype=mod.int64)
        with pytest.raises(RuntimeError, match="non-negative"):
            mod.blackman_window(-1)


@pytest.mark.parametrize("name", SIGNAL)
def test_signal_windows(name):
    for m in (0, 1, 2, 5, 8):
        for sym in (True, False):
            want = getattr(torch.signal.windows, name)(m, sym=sym, dtype=torch.float64)
            got = getattr(tracegrad.signal.windows, name)(m, sym=sym, dtype=tracegrad.float64)
            assert tuple(got.shape) == tuple(want.shape)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_signal_window_parameters_and_errors():
    W, V = torch.signal.windows, tracegrad.signal.windows
    pairs = [(lambda m: m.general_cosine(7, a=[0.4, 0.4, 0.2], sym=False)),
             (lambda m: m.general_hamming(6, alpha=0.7)), (lambda m: m.gaussian(7, std=2.5, sym=False)),
             (lambda m: m.exponential(7, tau=0.5, center=2.0, sym=False)), (lambda m: m.kaiser(6, beta=3.0))]
    for f in pairs:
        np.testing.assert_allclose(f(V).numpy(), f(W).numpy(), rtol=1e-6, atol=1e-6)
    bad = [lambda m: m.hann(-1), lambda m: m.hann(3, dtype=_mod(m).float16), lambda m: m.gaussian(3, std=0),
           lambda m: m.exponential(3, tau=-1.0), lambda m: m.exponential(3, center=1.0),
           lambda m: m.kaiser(3, beta=-1.0), lambda m: m.general_cosine(3, a=[])]
    for f in bad:
        with pytest.raises(ValueError):
            f(W)
        with pytest.raises(ValueError):
            f(V)
    for m in (W, V):
        with pytest.raises(TypeError):
            m.general_cosine(3, a=0.5)


def _mod(windows):
    return torch if windows is torch.signal.windows else tracegrad


def _stft(m, x, **kw):
    kw.setdefault("return_complex", True)
    if "window" in kw:
        kw["window"] = getattr(m, kw["window"][0])(kw["window"][1], dtype=x.dtype)
    return m.stft(x, **kw)


STFT = [
    ("default", dict(n_fft=8)),
    ("hann_hop", dict(n_fft=8, hop_length=3, window=("hann_window", 8))),
    ("short_window", dict(n_fft=8, win_length=5, window=("hamming_window", 5))),
    ("win_length_no_window", dict(n_fft=8, win_length=6)),
    ("no_center", dict(n_fft=6, hop_length=2, center=False)),
    ("constant_pad_normalized", dict(n_fft=8, pad_mode="constant", normalized=True, window=("hann_window", 8))),
    ("replicate_pad", dict(n_fft=8, hop_length=4, pad_mode="replicate")),
    ("two_sided", dict(n_fft=8, onesided=False, window=("blackman_window", 8))),
]


def _abs(t):
    return t.abs()


CASES = [
    C(f"stft_{name}", lambda m, x, kw=kw: _abs(_stft(m, x, **kw)), [F(2, 30)], no_grad_fn=True)
    for name, kw in STFT
] + [
    C("stft_1d_real_imag", lambda m, x: m.view_as_real(x.stft(8, hop_length=2, return_complex=True)), [D(25)],
      no_grad_fn=True),
    C("stft_complex_input", lambda m, x: _abs(m.stft(x * (1 + 0.5j), 8, hop_length=2)), [D(20)], no_grad_fn=True),
    C("istft_roundtrip", lambda m, x: m.istft(m.stft(x, 8, 2, window=m.hann_window(8, dtype=x.dtype),
                                                    return_complex=True), 8, 2, window=m.hann_window(8, dtype=x.dtype)),
      [D(2, 24)], no_grad_fn=True),
    C("istft_length_pad", lambda m, x: m.istft(m.stft(x, 8, 4, return_complex=True), 8, 4, length=30),
      [D(24)], no_grad_fn=True),
    C("istft_length_trim_normalized", lambda m, x: m.istft(
        m.stft(x, 8, 2, normalized=True, return_complex=True), 8, 2, normalized=True, length=17), [D(24)],
      no_grad_fn=True),
    C("istft_no_center_short_window", lambda m, x: m.istft(
        m.stft(x, 8, 2, win_length=6, window=m.hann_window(6, dtype=x.dtype), center=False, return_complex=True),
        8, 2, win_length=6, window=m.hann_window(6, dtype=x.dtype), center=False), [D(26)], no_grad_fn=True),
    C("istft_two_sided_complex_out", lambda m, x: m.istft(
        m.stft(x * (1 - 1j), 8, 2, return_complex=True), 8, 2, onesided=False, return_complex=True).abs(), [D(20)],
      no_grad_fn=True),
    # errors
    C("stft_needs_return_complex", lambda m, x: m.stft(x, 8), [F(20)], raises=True),
    C("stft_win_length_too_long", lambda m, x: m.stft(x, 8, win_length=9, return_complex=True), [F(20)],
      raises=True),
    C("stft_zero_hop", lambda m, x: m.stft(x, 8, hop_length=0, return_complex=True), [F(20)], raises=True),
    C("stft_too_short", lambda m, x: m.stft(x, 8, center=False, return_complex=True), [F(5)], raises=True),
    C("stft_3d", lambda m, x: m.stft(x, 8, return_complex=True), [F(2, 2, 20)], raises=True),
    C("stft_window_size", lambda m, x, w: m.stft(x, 8, window=w, return_complex=True), [F(20), F(5)], raises=True),
    C("istft_real_input", lambda m, x: m.istft(x, 8), [F(5, 3)], raises=True),
    C("istft_zero_window", lambda m, x, w: m.istft(m.stft(x, 8, 2, return_complex=True), 8, 2, window=w),
      [F(20), A(np.zeros(8, np.float32), grad=False)], raises=True),
    C("istft_freq_mismatch", lambda m, x: m.istft(m.stft(x, 8, 2, return_complex=True), 10, 2), [F(20)],
      raises=True),
]


@params(CASES)
def test_stft_parity(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # torch warns about a missing window
        check_parity(case, torch)


def test_stft_return_complex_false_warns_and_gives_the_real_view(fresh_warn_once):
    x = np.random.RandomState(0).randn(20).astype(np.float32)
    with pytest.warns(UserWarning, match="deprecated"):
        got = tracegrad.stft(tracegrad.tensor(x), 8, return_complex=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.stft(torch.tensor(x), 8, return_complex=False)
    assert got.dtype is tracegrad.float32 and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_stft_istft_compiled_equal_eager():
    w = tracegrad.hann_window(8, dtype=tracegrad.float64)

    def roundtrip(x):
        return tracegrad.istft(tracegrad.stft(x, 8, 2, window=w, return_complex=True), 8, 2, window=w)
    x = tracegrad.tensor(np.random.RandomState(0).randn(2, 24))
    f = tracegrad.compile(roundtrip)
    f(x)
    np.testing.assert_allclose(f(x).numpy(), roundtrip(x).numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(f(x).numpy(), x.numpy(), rtol=1e-10, atol=1e-12)
