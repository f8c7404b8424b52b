"""Statistics against torch: nanmedian, nanquantile, cov, corrcoef, histogram and
cumulative_trapezoid (values, gradients, named results, dtypes) and their error classes."""
import numpy as np
import pytest

import tracegrad
from parity import A, C, D, F, I, check_parity, params

torch = pytest.importorskip("torch")

NAN = np.nan
WITH_NAN = np.array([[1.0, NAN, 3.0, 2.0, 0.5], [NAN, 4.0, NAN, 1.0, 1.0], [5.0, 5.0, 1.0, NAN, 2.0]], np.float32)
ALL_NAN_ROW = np.array([[1.0, NAN, 3.0, 2.0], [NAN, NAN, NAN, NAN]], np.float64)
Q = A(np.array([0.0, 0.25, 0.5, 0.9]), grad=False)
EDGES = A(np.array([-2.0, -0.5, 0.0, 0.3, 2.0], np.float32), grad=False)

CASES = [
    C("nanmedian_all", lambda m, x: m.nanmedian(x), [A(WITH_NAN)]),
    C("nanmedian_dim", lambda m, x: tuple(x.nanmedian(1)), [A(WITH_NAN)]),
    C("nanmedian_dim0_keepdim", lambda m, x: tuple(m.nanmedian(x, 0, keepdim=True)), [A(WITH_NAN)]),
    C("nanmedian_no_nan_even", lambda m, x: m.nanmedian(x, -1).values, [F(3, 4)]),
    # an all-NaN slice: NaN; which NaN element torch's selection picks (and gets the gradient) is
    # its sort's accident
    C("nanmedian_all_nan_row_value", lambda m, x: m.nanmedian(x, 1).values, [A(ALL_NAN_ROW)], grad=False),
    C("nanmedian_0d", lambda m, x: tuple(m.nanmedian(x, 0)), [F()]),
    C("nanquantile_scalar", lambda m, x: m.nanquantile(x, 0.3), [A(WITH_NAN)]),
    C("nanquantile_dim_vector_q", lambda m, x, q: x.nanquantile(q.to(x.dtype), dim=1), [A(WITH_NAN), Q]),
    C("nanquantile_all_nan_row", lambda m, x: m.nanquantile(x, 0.5, dim=1, keepdim=True), [A(ALL_NAN_ROW)],
      grad=False),
    C("nanquantile_keepdim_all", lambda m, x: m.nanquantile(x, 0.5, keepdim=True), [A(WITH_NAN)]),
    *[C(f"nanquantile_{mode}", lambda m, x, mode=mode: m.nanquantile(x, 0.4, dim=0, interpolation=mode), [A(WITH_NAN)])
      for mode in ("higher", "midpoint", "nearest")],
    C("quantile_bad_interpolation", lambda m, x: m.quantile(x, 0.5, interpolation="cubic"), [F(4)], raises=True),
    C("nanquantile_q_range", lambda m, x: m.nanquantile(x, 1.5), [F(4)], raises=True),
    C("nanquantile_int_raises", lambda m, x: m.nanquantile(x, 0.5), [I(4)], raises=True),
    C("cov", lambda m, x: m.cov(x), [D(3, 6)]),
    C("cov_1d", lambda m, x: x.cov(), [F(5)]),
    C("cov_correction0", lambda m, x: m.cov(x, correction=0), [F(2, 5)]),
    C("cov_fweights", lambda m, x, w: m.cov(x, fweights=w), [D(2, 4), A(np.array([1, 2, 1, 3]))]),
    C("cov_aweights", lambda m, x, w: m.cov(x, aweights=w), [D(2, 4), A(np.array([0.5, 1.0, 2.0, 1.5]))]),
    C("cov_both_weights", lambda m, x, f, w: m.cov(x, correction=2, fweights=f, aweights=w),
      [D(3, 4), A(np.array([1, 2, 1, 3])), A(np.array([0.5, 1.0, 2.0, 1.5]), grad=False)]),
    C("cov_int_input", lambda m, x: m.cov(x), [I(2, 5, hi=9)]),
    C("cov_complex", lambda m, x: m.cov(x * (1 + 0.5j)).abs(), [D(2, 4)]),
    C("cov_3d_raises", lambda m, x: m.cov(x), [F(2, 2, 2)], raises=True),
    C("cov_float_fweights_raise", lambda m, x, w: m.cov(x, fweights=w), [F(2, 3), F(3)], raises=True),
    C("cov_weights_len_raises", lambda m, x, w: m.cov(x, aweights=w), [F(2, 3), F(4)], raises=True),
    C("corrcoef", lambda m, x: m.corrcoef(x), [D(3, 6)]),
    C("corrcoef_method_1d", lambda m, x: x.corrcoef(), [F(5)]),
    C("corrcoef_int", lambda m, x: m.corrcoef(x), [A(np.array([[0, 1, 2], [2, 0, 7]]))]),
    C("histogram_bins", lambda m, x: tuple(m.histogram(x, 4)), [F(20)], grad=False),
    C("histogram_range_weight_density", lambda m, x, w: tuple(
        x.histogram(5, range=(-1.0, 1.5), weight=w, density=True)), [F(4, 5), F(4, 5, lo=0, hi=1)], grad=False),
    C("histogram_edges", lambda m, x, e: tuple(m.histogram(x, e)), [F(30), EDGES], grad=False),
    C("histogram_rounding_edges", lambda m, x: tuple(m.histogram(x, 3, range=(0.1, 0.7))),
      [A(np.array([0.1, 0.2, 0.3, 0.7], np.float32))], grad=False),
    C("histogram_one_value", lambda m, x: tuple(m.histogram(x, 2)), [A(np.array([2.0, 2.0]))], grad=False),
    C("histogram_f64", lambda m, x: tuple(m.histogram(x, 6)), [D(3, 7)], grad=False),
    C("histogram_int_raises", lambda m, x: m.histogram(x, 3), [I(5)], raises=True),
    C("histogram_zero_bins_raises", lambda m, x: m.histogram(x, 0), [F(5)], raises=True),
    C("histogram_bad_range_raises", lambda m, x: m.histogram(x, 3, range=(2.0, 1.0)), [F(5)], raises=True),
    C("cumulative_trapezoid", lambda m, y: m.cumulative_trapezoid(y), [F(3, 5)]),
    C("cumulative_trapezoid_dx_dim", lambda m, y: m.cumulative_trapezoid(y, dx=0.5, dim=0), [F(4, 3)]),
    C("cumulative_trapezoid_x", lambda m, y, x: m.cumulative_trapezoid(y, x), [F(2, 5), F(5)], no_grad_fn=True),
    C("cumulative_trapezoid_x_same_shape", lambda m, y, x: m.cumulative_trapezoid(y, x, dim=0), [F(4, 2), F(4, 2)],
      no_grad_fn=True),
    C("cumulative_trapezoid_int", lambda m, y: m.cumulative_trapezoid(y), [I(6)]),
    C("cumulative_trapezoid_x_len_raises", lambda m, y, x: m.cumulative_trapezoid(y, x), [F(5), F(4)], raises=True),
    # tracegrad names a division or product by a Python number DivBackward0/MulBackward0 (torch: ...1)
    C("trapezoid_still_matches", lambda m, y, x: m.trapezoid(y, x), [F(2, 5), F(5)], no_grad_fn=True),
    C("trapezoid_dx", lambda m, y: m.trapz(y, dx=0.3), [F(2, 5)], no_grad_fn=True),
]


@params(CASES)
def test_stats_parity(case):
    check_parity(case, torch)


def test_cov_warns_when_correction_eats_every_degree_of_freedom():
    for mod in (torch, tracegrad):
        with pytest.warns(UserWarning, match="degrees of freedom"):
            out = mod.cov(mod.tensor([[1.0, 2.0]]), correction=2)
        assert np.isinf(out.numpy()) or np.isnan(out.numpy())


def test_weighted_cov_compiled_equal_eager():
    x = tracegrad.tensor(np.random.RandomState(0).randn(3, 10))
    w = tracegrad.tensor(np.random.RandomState(1).rand(10))

    def f(x, w):
        return tracegrad.cov(x, correction=1, aweights=w)
    g = tracegrad.compile(f)
    g(x, w)
    np.testing.assert_allclose(g(x, w).numpy(), f(x, w).numpy(), rtol=1e-12)
