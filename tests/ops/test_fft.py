"""tracegrad.fft against torch.fft: values (float32 and float64 inputs), dtypes, shapes, and the
gradient of a real input through a real loss (``|y|`` weighted for complex results), plus the
frequencies, the shifts and the errors torch raises."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

X = np.random.RandomState(0).randn(3, 4, 6)

# name, fn(mod, real tensor); complex inputs are made from the real one inside fn
CASES = [
    ("fft", lambda m, a: m.fft.fft(a)),
    ("fft_n_dim_ortho", lambda m, a: m.fft.fft(a, n=8, dim=1, norm="ortho")),
    ("fft_trim", lambda m, a: m.fft.fft(a, n=4)),
    ("ifft_complex_forward", lambda m, a: m.fft.ifft(a * (1 + 0.5j), norm="forward")),
    ("rfft", lambda m, a: m.fft.rfft(a, 5)),
    ("irfft_roundtrip", lambda m, a: m.fft.irfft(m.fft.rfft(a) * (1 + 1j))),
    ("irfft_real_input_n", lambda m, a: m.fft.irfft(a, n=9, dim=0)),
    ("hfft", lambda m, a: m.fft.hfft(a * (1 - 2j), norm="ortho")),
    ("ihfft", lambda m, a: m.fft.ihfft(a, dim=1)),
    ("fft2", lambda m, a: m.fft.fft2(a)),
    ("ifft2_s", lambda m, a: m.fft.ifft2(a, s=(3, 5))),
    ("rfft2", lambda m, a: m.fft.rfft2(a, norm="forward")),
    ("irfft2", lambda m, a: m.fft.irfft2(a)),
    ("fftn_dims", lambda m, a: m.fft.fftn(a, dim=(0, 2))),
    ("ifftn_s_only", lambda m, a: m.fft.ifftn(a, s=(2, -1))),
    ("rfftn", lambda m, a: m.fft.rfftn(a)),
    ("irfftn_s", lambda m, a: m.fft.irfftn(a, s=(4, 4, 4))),
    ("fftshift_dims", lambda m, a: m.fft.fftshift(a, dim=(0, 2))),
    ("ifftshift_all", lambda m, a: m.fft.ifftshift(a)),
    ("shift_of_fft", lambda m, a: m.fft.fftshift(m.fft.fft(a), dim=-1)),
    ("hfft2", lambda m, a: m.fft.hfft2(a * (1 + 0.5j))),
    ("hfftn_s_forward", lambda m, a: m.fft.hfftn(a, s=(3, 4, 5), norm="forward")),
    ("ihfft2_ortho", lambda m, a: m.fft.ihfft2(a, norm="ortho")),
    ("ihfftn_dims", lambda m, a: m.fft.ihfftn(a, dim=(0, 2))),
]


def _run(mod, fn, x):
    a = mod.tensor(x, requires_grad=True)
    y = fn(mod, a)
    w = mod.tensor(np.random.RandomState(1).rand(*tuple(y.shape)), dtype=y.abs().dtype)
    ((y.abs() if y.is_complex() else y) * w).sum().backward()
    y = y.detach()
    if mod is torch:
        y = y.resolve_conj()
    return y.numpy(), str(y.dtype).split(".")[-1], tuple(y.shape), a.grad.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_transform_matches_torch(name, fn, dtype):
    (rv, rd, rs, rg), (gv, gd, gs, gg) = (_run(m, fn, X.astype(dtype)) for m in (torch, tracegrad))
    assert (gd, gs) == (rd, rs), name
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gv, rv, err_msg=name, **tol)
    np.testing.assert_allclose(gg, rg, err_msg=name + " grad", **tol)


def test_integer_input_gives_complex64():
    for f in (lambda m: m.fft.fft(m.tensor([1, 2, 3])), lambda m: m.fft.rfft(m.tensor([1, 2, 3, 4]))):
        r, g = f(torch), f(tracegrad)
        assert str(g.dtype).split(".")[-1] == str(r.dtype).split(".")[-1] == "complex64"
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda m: m.fft.fftfreq(5), lambda m: m.fft.fftfreq(6, d=0.1), lambda m: m.fft.rfftfreq(7, 0.5),
    lambda m: m.fft.rfftfreq(4, dtype=m.float64), lambda m: m.fft.fftfreq(1)])
def test_frequencies(call):
    r, g = call(torch), call(tracegrad)
    assert (str(g.dtype).split(".")[-1], tuple(g.shape)) == (str(r.dtype).split(".")[-1], tuple(r.shape))
    np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-6)


BAD = [
    (lambda m: m.fft.fft(m.ones(4), norm="bad"), RuntimeError),
    (lambda m: m.fft.fft(m.ones(4), n=0), RuntimeError),
    (lambda m: m.fft.rfft(m.ones(4, dtype=m.complex64)), RuntimeError),
    (lambda m: m.fft.ihfft(m.ones(4, dtype=m.complex64)), RuntimeError),
    (lambda m: m.fft.ihfftn(m.ones(2, 4, dtype=m.complex64)), RuntimeError),
    (lambda m: m.fft.fft(m.ones(4), dim=1), IndexError),
    (lambda m: m.fft.fft2(m.ones(4)), IndexError),
    (lambda m: m.fft.fftshift(m.ones(4), dim=2), IndexError),
]


@pytest.mark.parametrize("call,cls", BAD)
def test_bad_input_raises_as_torch(call, cls):
    for m in (torch, tracegrad):
        with pytest.raises(cls):
            call(m)
    with pytest.raises(RuntimeError, match="normalization"):
        tracegrad.fft.fft(tracegrad.ones(4), norm="bad")
