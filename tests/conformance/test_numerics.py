"""Numerics at the edges, as torch computes them (values and gradients compared with torch):
BCE at probabilities 0/1, std/var of constants, cross_entropy/nll_loss with every target
ignored, median with NaN, integer pow with negative exponents. Ported cases name their
origin in test/test_autograd.py / test/nn/test_loss*.py where one exists."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _run(fn, T):
    out = fn(T)
    return [np.asarray(o.detach().tolist(), dtype=np.float64) if o is not None else None for o in out]


def _same(fn):
    want, got = _run(fn, torch), _run(fn, tracegrad)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)


def _bce_edges(T):
    # test/nn: BCE "clamps its log function outputs to be greater than or equal to -100"
    p = T.tensor([0.0, 1.0, 0.5, 1.0, 0.0], requires_grad=True)
    t = T.tensor([1.0, 0.0, 1.0, 1.0, 0.0])
    loss = T.nn.functional.binary_cross_entropy(p, t)
    loss.backward()
    return loss, p.grad


@pytest.mark.parametrize("case", ["bce_edges", "std_const", "var_const", "std_dim_const", "ce_ignored",
                                  "nll_ignored_sum", "ce_ignored_none", "median_nan", "median_dim_nan",
                                  "int_pow_neg", "pow_zero_base"])
def test_numerics_match_torch(case):
    fns = {
        "bce_edges": _bce_edges,
        "std_const": lambda T: _grad_of(T, lambda x: x.std(), T.ones(4)),
        "var_const": lambda T: _grad_of(T, lambda x: x.var(), T.ones(4)),
        "std_dim_const": lambda T: _grad_of(T, lambda x: x.std(1).sum(), T.tensor([[1.0, 1.0], [1.0, 2.0]])),
        "ce_ignored": lambda T: _grad_of(T, lambda x: T.nn.functional.cross_entropy(x, T.tensor([-100, -100])),
                                         T.ones(2, 3)),
        "nll_ignored_sum": lambda T: _grad_of(T, lambda x: T.nn.functional.nll_loss(
            x, T.tensor([-100, -100]), reduction="sum"), T.ones(2, 3)),
        "ce_ignored_none": lambda T: _grad_of(T, lambda x: T.nn.functional.cross_entropy(
            x, T.tensor([1, -100]), reduction="none").sum(), T.ones(2, 3)),
        "median_nan": lambda T: (T.tensor([1.0, float("nan"), 2.0]).median(),
                                 T.tensor([3.0, 1.0, 2.0]).median()),
        "median_dim_nan": lambda T: tuple(T.tensor([[1.0, float("nan"), 2.0], [3.0, 1.0, 2.0]]).median(1)),
        "int_pow_neg": lambda T: (T.tensor([2, 1, -1, -1, 0, 5]) ** T.tensor([-1, -3, -3, -2, 2, 0]),),
        "pow_zero_base": lambda T: _grad_of(T, lambda x: (x ** x).sum() + (x ** T.zeros(2)).sum(),
                                            T.tensor([0.0, 2.0])),
    }
    _same(fns[case])


def _grad_of(T, f, x):
    x = x.clone().requires_grad_()
    y = f(x)
    y.backward()
    return y, x.grad


@pytest.mark.parametrize("op", ["floordiv", "mod", "fmod"])
def test_integer_division_by_zero_raises(op):
    # torch: RuntimeError "ZeroDivisionError" for integer division/remainder by zero
    for T in (torch, tracegrad):
        f = {"floordiv": lambda: T.tensor([1, 2]) // T.tensor([1, 0]),
             "mod": lambda: T.tensor([1, 2]) % 0, "fmod": lambda: T.fmod(T.tensor([3]), 0)}[op]
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            f()
