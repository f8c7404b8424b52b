"""Eager semantics found by a differential fuzzer (random small programs run on torch 2.13 and
tracegrad), each compared with torch on the same inputs:
- a bool tensor cast to a float inside an op (``mask * x``, ``mask / 0``) or by ``.float()``
  before a mul in a compiled program keeps IEEE's ``0 * inf = nan`` (XLA folded the cast into a
  select that gave 0);
- ``angle`` of a 0-d float32/float16 (or integer) tensor keeps its float dtype (was float64);
"""
import numpy as np
import pytest

import tracegrad
from tests.parity import same_outcome

torch = pytest.importorskip("torch")

_SPECIAL = [float("inf"), float("-inf"), float("nan"), 0.0, -2.5]


@pytest.mark.parametrize("call", [
    lambda T, m, x: m * x, lambda T, m, x: x * m, lambda T, m, x: m / 0, lambda T, m, x: m * float("inf"),
    lambda T, m, x: T.mul(m, float("nan")), lambda T, m, x: m.float() * x, lambda T, m, x: m.to(T.float64) / x,
    lambda T, m, x: T.true_divide(m, T.zeros(())), lambda T, m, x: T.addcmul(x, m, x),
], ids=["mask_mul", "mul_mask", "div0", "mul_inf", "mul_nan", "float_mul", "to_div", "true_divide", "addcmul"])
def test_bool_cast_keeps_ieee_products(call):
    def fn(T):
        m = T.tensor([False, True, False, True, False])
        return call(T, m, T.tensor(_SPECIAL))
    same_outcome(fn)


def test_bool_cast_keeps_ieee_products_compiled():
    """The same cast fused into one compiled program (``mask.float() * x``)."""
    def f(m, x):
        return m.float() * x, x / m.to(x.dtype), m * x
    m = tracegrad.tensor([False, True, False, True, False])
    x = tracegrad.tensor(_SPECIAL)
    eager = f(m, x)
    compiled = tracegrad.compile(f)
    want = f(torch.tensor(m.numpy()), torch.tensor(x.numpy()))
    for _ in range(2):   # the first call runs eagerly, the second the compiled program
        for g, e, w in zip(compiled(m, x), eager, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
            np.testing.assert_array_equal(e.numpy(), w.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "bool"])
@pytest.mark.parametrize("shape", [(), (3,)], ids=["0d", "1d"])
def test_angle_dtype(dtype, shape):
    def fn(T):
        y = T.tensor(np.full(shape, -3.0)).to(getattr(T, dtype)).angle()
        return [y.dtype, y.float()]   # numpy has no bfloat16: the values compare as float32
    same_outcome(fn)
