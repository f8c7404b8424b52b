"""torch.arange / torch.range / torch.linspace of floating dtypes equal torch's CPU values bit for
bit (``_tensor/range_values.py``: torch fills arange two 256-bit vectors at a time with fused
multiply-adds, so the plain ``start + i * step`` is one ulp off in about a fifth of the elements),
and the exact fused multiply-add the emulation rests on, checked against exact rational arithmetic."""
import warnings
from fractions import Fraction

import numpy as np
import pytest

import tracegrad
from tracegrad._tensor.range_values import _fma

DTYPES = ["float32", "float64", "float16", "bfloat16"]


def _cases(seed, count):
    rs = np.random.RandomState(seed)
    for _ in range(count):
        start = round(rs.uniform(-50, 50), rs.randint(0, 5))
        step = round(rs.uniform(0.001, 3), rs.randint(1, 5)) or 0.5
        if rs.rand() < 0.3:
            step = -step
        yield start, start + step * rs.randint(0, 400), step


@pytest.mark.parametrize("dtype", DTYPES)
def test_arange_values_are_torchs(dtype):
    torch = pytest.importorskip("torch")
    cases = list(_cases(3, 40)) + [(0, 1, 0.05), (-1, 1, 0.01), (0, 100, 0.1), (0.001, 1, 0.001), (0, 6.3, 0.1)]
    for start, end, step in cases:
        want = torch.arange(start, end, step, dtype=getattr(torch, dtype)).float().numpy()
        got = tracegrad.arange(start, end, step, dtype=getattr(tracegrad, dtype)).float().numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"arange({start}, {end}, {step}, dtype={dtype})")


@pytest.mark.parametrize("dtype", DTYPES)
def test_range_and_linspace_values_are_torchs(dtype):
    torch = pytest.importorskip("torch")
    for start, end, step in _cases(4, 25):
        if step < 0:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = torch.range(start, end, step, dtype=getattr(torch, dtype)).float().numpy()
            got = tracegrad.range(start, end, step, dtype=getattr(tracegrad, dtype)).float().numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"range({start}, {end}, {step}, dtype={dtype})")
        n = int(abs(end - start) / abs(step)) % 200
        want = torch.linspace(start, end, n, dtype=getattr(torch, dtype)).float().numpy()
        got = tracegrad.linspace(start, end, n, dtype=getattr(tracegrad, dtype)).float().numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"linspace({start}, {end}, {n}, dtype={dtype})")


def test_exact_fma_rounds_once():
    rs = np.random.RandomState(0)
    a = rs.standard_normal(2000) * 10.0 ** rs.randint(-5, 6, 2000)
    b = rs.standard_normal(2000) * 10.0 ** rs.randint(-5, 6, 2000)
    c = rs.standard_normal(2000) * 10.0 ** rs.randint(-5, 6, 2000)
    got = _fma(a, b, c)
    want = np.array([float(Fraction(x) * Fraction(y) + Fraction(z)) for x, y, z in zip(a, b, c)])
    np.testing.assert_array_equal(got, want)
    # and it is not the twice-rounded a * b + c
    assert np.any(got != a * b + c)
