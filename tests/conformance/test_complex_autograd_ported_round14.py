"""Ported from PyTorch's test/autograd/test_complex.py and the complex sections of
test/test_autograd.py, round 14: gradients flowing through complex views (view_as_real /
view_as_complex, real / imag, conj) with in-place writes, and the conjugate Wirtinger gradients
of abs / angle / mul / div / exp / sum of complex leaves, plus the errors for backward from a
complex output. Each case is a ``same_outcome`` program: torch 2.13 is the oracle; tracegrad
must return equal values or raise the same builtin exception class."""
import pytest

from parity import outcome_params, same_outcome

pytest.importorskip("torch")


def leaf(T, *vals, dtype=None):
    return T.tensor(list(vals), dtype=dtype or T.complex64, requires_grad=True)


def view_as_real_inplace(T):
    x = leaf(T, 1 + 2j, -0.5 + 1j)
    y = x.clone()
    r = T.view_as_real(y)
    r.mul_(2)
    (y.abs() ** 2).sum().backward()
    return x.grad, y
def view_as_real_inplace_grad_fn(T):
    y = leaf(T, 1 + 2j).clone()
    r = T.view_as_real(y)
    r.mul_(2)
    return r.grad_fn.name()
def view_as_complex_inplace(T):
    a = T.tensor([[1.0, 2.0], [3.0, -1.0]], requires_grad=True)
    b = a.clone()
    c = T.view_as_complex(b)
    c.mul_(1j)
    b.pow(2).sum().backward()
    return a.grad, c
def view_as_complex_inplace_grad_fn(T):
    b = T.tensor([[1.0, 2.0]], requires_grad=True).clone()
    c = T.view_as_complex(b)
    c.mul_(1j)
    return c.grad_fn.name()
def real_imag_inplace(T):
    x = leaf(T, 1 + 2j, 3 - 1j)
    y = x * 1
    y.real.mul_(3)
    y.imag.add_(1)
    (y * y.conj()).real.sum().backward()
    return x.grad, y
def real_imag_grads(T):
    x = leaf(T, 1 + 2j, 3 - 1j)
    (x.real * 2 + x.imag * 5).sum().backward()
    return x.grad
def abs_angle_grads(T):
    x = leaf(T, 3 + 4j, -1 + 0j, 0j)
    x.abs().sum().backward()
    g1 = x.grad.clone()
    x.grad = None
    x.angle().sum().backward()
    return g1, x.grad
def angle_grad_at_zero(T):
    a = T.tensor([0.0, -0.0, -1.0, 2.0, float("nan")], requires_grad=True)
    a.angle().sum().backward()
    z = leaf(T, 0j, complex(-0.0, -0.0), 1 + 1j, dtype=T.complex128)
    z.angle().sum().backward()
    return a.grad, z.grad, T.angle(T.tensor([0j, complex(-0.0, -0.0), complex(-1.0, -0.0)]))
def mul_div_exp_grads(T):
    x = leaf(T, 1 + 1j, 2 - 0.5j)
    w = T.tensor([0.5 - 1j, 2j])
    ((x * w) / (x + 3)).exp().abs().sum().backward()
    return x.grad
def conj_grads(T):
    x = leaf(T, 1 + 1j, 2 - 3j)
    (x.conj() * T.tensor([1j, 2.0])).real.sum().backward()
    return x.grad.resolve_conj()   # torch's carries the conj bit, which .numpy() refuses
def conj_view_inplace_grad(T):
    x = leaf(T, 1 + 1j, 2 - 3j)
    y = x.clone()
    z = y.conj()
    z.mul_(2j)
    y.abs().sum().backward()
    return x.grad, y
def real_to_complex_grad(T):
    a = T.tensor([1.0, -2.0], requires_grad=True)
    (T.complex(a, a * 2) * (1 - 1j)).abs().sum().backward()
    b = T.tensor([0.5, 2.0], requires_grad=True)
    T.polar(b, b).real.sum().backward()
    return a.grad, b.grad
def complex_sum_backward_error(T):
    x = leaf(T, 1 + 1j)
    (x * 2).sum().backward()
def complex_backward_with_grad_output(T):
    x = leaf(T, 1 + 1j, 2j)
    y = x * (1 + 2j)
    y.backward(T.tensor([1 + 0j, 0.5j]))
    return x.grad
def complex_autograd_grad(T):
    x = leaf(T, 1 + 1j, 2j, dtype=T.complex128)
    y = (x * x.conj()).real.sum()
    g, = T.autograd.grad(y, x, create_graph=True)
    g2, = T.autograd.grad(g.abs().sum(), x)
    return g, g2
def to_real_dtype_grad(T):
    x = leaf(T, 1 + 1j, 2 - 2j)
    y = x.real.to(T.float64)
    (y * 3).sum().backward()
    return x.grad, x.grad.dtype
def complex_leaf_grad_dtype(T):
    x = leaf(T, 1 + 1j, dtype=T.complex128)
    x.abs().sum().backward()
    return x.grad.dtype
def real_leaf_complex_op_grad_real(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    (a * (1 + 1j)).abs().sum().backward()
    return a.grad, a.grad.dtype


CASES = {k: v for k, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
         and not k.startswith("_") and k not in ("leaf", "same_outcome", "outcome_params")}


_REGEN = ("after an in-place op a view's grad_fn is regenerated as AsStridedBackward0 (the autograd engine's "
          "view replay); torch regenerates it as the view op's own backward")
XFAIL = {"view_as_real_inplace_grad_fn": _REGEN, "view_as_complex_inplace_grad_fn": _REGEN}


@pytest.mark.parametrize("fn", outcome_params(CASES, XFAIL))
def test_complex_autograd(fn):
    same_outcome(fn)
