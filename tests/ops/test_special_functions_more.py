"""torch.special's Bessel, Airy and orthogonal-polynomial functions against torch on the same
inputs (float64 and float32, zero, negatives, large |x|, nan/inf), plus the true values (mpmath,
when importable) where torch's own kernels are less accurate; no gradient, dtypes, errors."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

X = np.concatenate([np.linspace(-30, 30, 241), [0.0, -0.0, 1e-12, 1e-300, 2.0, 2.09, -2.09, 5.0, 8.0, 8.000001,
                                                50.0, 103.0, 104.0, 1e3, 1e4, 1e6, -1e3, -1e5,
                                                np.inf, -np.inf, np.nan]])
UNARY = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
         "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
         "spherical_bessel_j0"]
# torch's kernels for these are off by up to a few 1e-6 (airy_ai in (-3.7, -2.09)) / 1e-7 (J, Y in (3.5, 11))
LOOSE = {"airy_ai": 5e-6, "bessel_j0": 1e-6, "bessel_j1": 1e-6, "bessel_y0": 1e-6, "bessel_y1": 2e-6}
POLYS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
         "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
         "legendre_polynomial_p"]


def _close(ours, ref, rtol, atol):
    ours, ref = ours.numpy().astype(np.float64), ref.numpy().astype(np.float64)
    np.testing.assert_allclose(ours, ref, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_unary_matches_torch(name, dtype):
    # float32 beyond |x| = 100: torch's float32 phase (x - pi/4, 2/3 |x|**1.5) has lost its digits; ours
    # is computed in float64, so the oscillating functions are compared up to there
    x = (X if dtype == "float64" else X[~(np.abs(X) > 100) | np.isinf(X)]).astype(dtype)
    ours = getattr(tracegrad.special, name)(tracegrad.tensor(x))
    ref = getattr(torch.special, name)(torch.tensor(x))
    assert str(ours.dtype) == str(ref.dtype).replace("torch", "tracegrad")
    # relative for the exponentially large/small ones; absolute (on O(1) values) elsewhere
    rtol = 1e-12 if dtype == "float64" else 2e-6
    atol = LOOSE.get(name, 1e-13 if dtype == "float64" else 1e-6)
    _close(ours, ref, rtol, atol)


def test_unary_true_values():
    """Where torch is off by 1e-7..1e-6, ours is within 1e-13 of mpmath's 30-digit values."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    xs = np.array([-2.1, -2.5, -3.3, -7.3, 0.7, 2.5, 3.8, 5.02, 9.7, 17.3, 24.9, 40.0])
    refs = {"airy_ai": mp.airyai, "bessel_j0": lambda v: mp.besselj(0, v), "bessel_j1": lambda v: mp.besselj(1, v),
            "bessel_y0": lambda v: mp.bessely(0, v), "bessel_y1": lambda v: mp.bessely(1, v),
            "modified_bessel_k1": lambda v: mp.besselk(1, v)}
    for name, f in refs.items():
        pts = xs if name == "airy_ai" else np.abs(xs)
        ours = getattr(tracegrad.special, name)(tracegrad.tensor(pts, dtype=tracegrad.float64)).numpy()
        np.testing.assert_allclose(ours, [float(f(mp.mpf(float(v)))) for v in pts], rtol=1e-12, atol=1e-14)


XP = np.concatenate([np.linspace(-2.5, 2.5, 21), [-1.0, 1.0, 0.0, 0.5, 0.999999, 1.0001, np.inf, -np.inf]])
NP = np.array([-3, -1, 0, 1, 2, 3, 5, 7, 9, 10, 16, 40, 129, 600, 2.5, -0.5, np.nan, np.inf, 1e30])


F32_CHECKED = ("chebyshev_polynomial_u", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "legendre_polynomial_p")


@pytest.mark.parametrize("name", POLYS)
def test_polynomial_matches_torch(name):
    xg, ng = np.meshgrid(XP, NP)
    ours = getattr(tracegrad.special, name)(tracegrad.tensor(xg), tracegrad.tensor(ng))
    ref = getattr(torch.special, name)(torch.tensor(xg), torch.tensor(ng))
    _close(ours, ref, 1e-9, 1e-9)
    if name not in F32_CHECKED:
        return
    # float32 in float32 (torch's own rounding), on moderate degrees
    small = (np.abs(ng) <= 16) | ~np.isfinite(ng)
    x32, n32 = xg[small].astype(np.float32), ng[small].astype(np.float32)
    _close(getattr(tracegrad.special, name)(tracegrad.tensor(x32), tracegrad.tensor(n32)),
           getattr(torch.special, name)(torch.tensor(x32), torch.tensor(n32)), 1e-4, 1e-4)


@pytest.mark.parametrize("x, n", [(0.3, 3), (2, 4), (0.5, tracegrad.tensor([2.5, -1.0, 3.0]))])
def test_polynomial_number_operands_and_dtypes(x, n):
    for name in ("chebyshev_polynomial_t", "hermite_polynomial_he"):
        tx = tracegrad.tensor([0.25, 1.5, -2.0]) if not isinstance(n, tracegrad.Tensor) else x
        ours = getattr(tracegrad.special, name)(tx, n)
        cx = torch.tensor(tx.numpy()) if isinstance(tx, tracegrad.Tensor) else tx
        cn = torch.tensor(n.numpy()) if isinstance(n, tracegrad.Tensor) else n
        ref = getattr(torch.special, name)(cx, cn)
        assert str(ours.dtype) == str(ref.dtype).replace("torch", "tracegrad")
        _close(ours, ref, 1e-6, 1e-6)
    # integer x and n compute in the default float dtype; n's dtype promotes with x's
    ours = tracegrad.special.chebyshev_polynomial_u(tracegrad.tensor([1, 2]), tracegrad.tensor([3]))
    assert ours.dtype == tracegrad.float32 and ours.tolist() == [4.0, 56.0]
    f64 = tracegrad.special.laguerre_polynomial_l(tracegrad.tensor([1.0]), tracegrad.tensor([3.0], dtype=tracegrad.float64))
    assert f64.dtype == tracegrad.float64


def test_no_gradient_and_out():
    x = tracegrad.tensor([0.5, 1.5], requires_grad=True)
    for y in (tracegrad.special.bessel_j0(x), tracegrad.special.chebyshev_polynomial_t(x, 3)):
        assert not y.requires_grad and y.grad_fn is None
        with pytest.raises(RuntimeError, match="does not require grad"):
            y.sum().backward()
    out = tracegrad.empty(2)
    r = tracegrad.special.legendre_polynomial_p(tracegrad.tensor([0.3, 2.0]), 4, out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), torch.special.legendre_polynomial_p(torch.tensor([0.3, 2.0]), 4).numpy())
    out = tracegrad.empty(2, dtype=tracegrad.float64)
    tracegrad.special.modified_bessel_k0(tracegrad.tensor([0.5, 3.0]), out=out)
    np.testing.assert_allclose(out.numpy(), torch.special.modified_bessel_k0(torch.tensor([0.5, 3.0])).double().numpy(),
                               rtol=1e-6)


def test_errors():
    with pytest.raises(TypeError):
        tracegrad.special.bessel_j0(2.0)
    with pytest.raises(TypeError):
        tracegrad.special.chebyshev_polynomial_t(2.0, 3)
    with pytest.raises(NotImplementedError, match="Half"):
        tracegrad.special.bessel_j1(tracegrad.tensor([1.0], dtype=tracegrad.float16))
    with pytest.raises(NotImplementedError, match="ComplexFloat"):
        tracegrad.special.hermite_polynomial_h(tracegrad.tensor([1j]), 2)
