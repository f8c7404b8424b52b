"""Eager semantics found by a differential fuzzer (random small programs run on torch 2.13 and
tracegrad), each compared with torch on the same inputs:
- a bool tensor cast to a float inside an op (``mask * x``, ``mask / 0``) or by ``.float()``
  before a mul in a compiled program keeps IEEE's ``0 * inf = nan`` (XLA folded the cast into a
  select that gave 0);
- ``angle`` of a 0-d float32/float16 (or integer) tensor keeps its float dtype (was float64);
- ``cumsum``/``cumprod``/``logcumsumexp`` of float16/bfloat16 accumulate in float32 and round each
  output once, as torch's CPU kernels (a 16-bit running sum drifted by many ulps), cumsum's gradient too;
- a grad-requiring float written into an integer tensor or a view of one (``ints[0] = x.round()``,
  ``ints.copy_(x)``) changes its values and gives it no history, as torch's copy_ (the view case
  raised AttributeError, the whole-tensor copy_ made an int tensor require grad);
- an in-place op given its own self as another operand (``x.mul_(x)``, ``x.addcmul_(x, x)``,
  ``x.lerp_(end, x)``) keeps that operand saved as itself, so backward raises torch's "modified by
  an inplace operation" error (the self-clone was substituted for it too and backward ran); and
  addcmul/addcdiv save tensor1/tensor2 only for the other's gradient, as torch
  (``x.addcdiv_(x, ones)`` runs backward);
- ``xlogy``/``special.xlog1py`` of a complex tensor and a number raise torch's NotImplementedError
  (they computed a value; two complex tensors already raised);
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


def _scan16(T, name, dtype):
    rs = np.random.RandomState(0)
    x = (1 + 0.05 * rs.standard_normal((2, 300)) if name == "cumprod" else 3 * rs.standard_normal((2, 300)))
    z = T.tensor(x.astype(np.float32), dtype=getattr(T, dtype), requires_grad=True)
    w = T.tensor(np.cos(np.arange(600)).reshape(2, 300).astype(np.float32), dtype=getattr(T, dtype))
    y = getattr(z, name)(1)
    (y * w).sum().backward()
    return str(y.dtype).split(".")[-1], y.detach().float().numpy(), z.grad.float().numpy()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "logcumsumexp"])
def test_scans_accumulate_16bit_floats_in_float32(name, dtype):
    want, got = _scan16(torch, name, dtype), _scan16(tracegrad, name, dtype)
    assert got[0] == want[0]
    ulp = 2.0 ** (-10 if dtype == "float16" else -7)
    # values: one rounding of the 16-bit dtype apart at most (cumsum: the same float32 sums,
    # equal); gradients: cumsum's is the reversed float32 cumsum, as torch's (cumprod's and
    # logcumsumexp's backward formulas are torch's own 16-bit arithmetic, not compared)
    assert (np.abs(got[1] - want[1]) / np.maximum(np.abs(want[1]), 1e-3)).max() <= (0 if name == "cumsum" else 1.01 * ulp)
    if name == "cumsum":
        np.testing.assert_array_equal(got[2], want[2])


@pytest.mark.parametrize("call", [
    lambda T: T.xlogy(T.tensor([1j, 2]), 2), lambda T: T.xlogy(2, T.tensor([1j, 2])),
    lambda T: T.xlogy(T.tensor([1j]), 0), lambda T: T.special.xlog1py(T.tensor([1j]), 2.5),
    lambda T: T.special.xlog1py(3, T.tensor([1j])), lambda T: T.xlogy(T.tensor([1j]), T.tensor([2j])),
], ids=["tensor_number", "number_tensor", "zero", "xlog1py_tensor_number", "xlog1py_number_tensor", "tensors"])
def test_xlogy_refuses_complex(call):
    assert same_outcome(call) == ("raised", "NotImplementedError")


@pytest.mark.parametrize("write", [
    lambda T, y, x: y.copy_(x), lambda T, y, x: y[0].copy_(x[0]), lambda T, y, x: y.__setitem__(0, x[0].round()),
    lambda T, y, x: y.__setitem__((slice(None), 0), x[:, 0]), lambda T, y, x: y.view(2)[1].copy_(x[0, 0]),
    lambda T, y, x: y.t()[0].copy_(x[:, 0]), lambda T, y, x: y.fill_(x[1, 0]),
    lambda T, y, x: y.masked_fill_(T.tensor([[True], [False]]), x[1, 0]),
], ids=["copy", "view_copy", "setitem_row", "setitem_column", "view_of_view", "transposed_view", "fill", "masked_fill"])
def test_grad_requiring_float_into_int_tensor(write):
    def fn(T):
        x = T.tensor([[1.4], [2.6]], dtype=T.float64, requires_grad=True)
        y = T.tensor([[7], [5]])
        write(T, y, x)
        return [y, y.requires_grad, None if y.grad_fn is None else y.grad_fn.name(), y._version]
    same_outcome(fn)


_SELF_OPERAND = {
    "mul": lambda T, x: x.mul_(x), "imul": lambda T, x: x.__imul__(x), "div": lambda T, x: x.div_(x),
    "pow": lambda T, x: x.pow_(x), "lerp_weight": lambda T, x: x.lerp_(T.ones(3), x),
    "addcmul_both": lambda T, x: x.addcmul_(x, x), "addcmul_one": lambda T, x: x.addcmul_(x, T.ones(3)),
    "addcdiv_tensor1": lambda T, x: x.addcdiv_(x, T.ones(3)), "addcdiv_tensor2": lambda T, x: x.addcdiv_(T.ones(3), x),
    "add": lambda T, x: x.add_(x), "sub": lambda T, x: x.sub_(x), "lerp_end": lambda T, x: x.lerp_(x, 0.5),
    "view": lambda T, x: x.view(3).mul_(x.view(3)), "clamp": lambda T, x: x.clamp_(x, x),
}


@pytest.mark.parametrize("write", list(_SELF_OPERAND.values()), ids=list(_SELF_OPERAND))
def test_inplace_with_self_as_operand(write):
    def fn(T):
        leaf = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x = leaf * 1
        write(T, x)
        (x * T.tensor([1.0, -2.0, 0.5])).sum().backward()
        return leaf.grad
    same_outcome(fn)


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("rg", [(True, False), (False, True), (True, True)], ids=["t1", "t2", "both"])
def test_addc_saved_set(name, rg):
    def fn(T):
        s = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        t1 = T.tensor([2.0, 3.0, 4.0], requires_grad=rg[0])
        t2 = T.tensor([1.5, 2.0, -1.0], requires_grad=rg[1])
        y = getattr(T, name)(s, t1, t2, value=0.5)
        saved = [getattr(y.grad_fn, a) is None for a in ("_saved_tensor1", "_saved_tensor2")]
        (y * T.tensor([1.0, -2.0, 3.0])).sum().backward()
        return [saved, [t.grad for t in (s, t1, t2)]]
    same_outcome(fn)
