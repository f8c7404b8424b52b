"""Ported from PyTorch's test/autograd/test_complex.py (TestAutogradComplex) and
test/test_complex.py, round 20, with the complex gradient checks that torch's OpInfo gradient
tests make for sgn / polar / complex / sqrt / pow / log (conjugate Wirtinger convention: a
complex leaf's ``.grad`` is ``conj(dL/dz)`` for a real loss ``L``). Round 14
(test_complex_autograd_ported_round14.py) has the view_as_real/complex in-place writes, abs /
angle / mul / div / exp gradients; this file adds the three ``view_func`` cases, the
multi-output-view refusal, ``as_identity``, and the in-place and comparison refusals of complex
tensors. Each test runs one program per theme with torch 2.13 (the oracle) and tracegrad
(``same_outcome``): equal values, dtypes and shapes, or the same builtin exception class.

Not ported: gradcheck itself (finite differences: a fixed real loss and torch's analytic
gradient stand in), CUDA / complex32 (tracegrad has no ComplexHalf storage)."""
import numpy as np
import pytest

from parity import same_outcome

pytest.importorskip("torch")

R = np.random.RandomState(0).standard_normal((2, 2, 2))


def c(T, *vals):
    return T.tensor(list(vals), dtype=T.complex128)


def grad_of(T, loss, *vals):
    """``loss(z)`` on a complex128 leaf and the leaf's gradient (conj view resolved)."""
    z = c(T, *vals).requires_grad_()
    y = loss(z)
    y.backward()
    return y.detach(), z.grad.resolve_conj()


def test_view_func_for_complex_views():
    # TestAutogradComplex.test_view_func_for_complex_views: an in-place write through a chain of
    # complex <-> real views differentiates as the out-of-place op (cases 1-3)
    def prog(T):
        out = []
        # case 1: both parent and child carry a view_func
        x, y = (T.tensor(R, dtype=T.float64, requires_grad=True) for _ in range(2))
        x2 = T.view_as_real(T.view_as_complex(x.clone()))
        x2.mul_(2)
        x2.sum().backward()
        y0 = y.clone()
        y0.mul_(2)
        y0.sum().backward()
        out += [x.grad, y.grad, x2.grad_fn is not None]
        # case 2: the parent has one, the child (a reshape) not
        x, y = (T.tensor(R, dtype=T.float64, requires_grad=True) for _ in range(2))
        w = T.tensor([1, 1j, 2, -1], dtype=T.complex128)
        b = T.view_as_complex(x.clone()).reshape(4)
        b.mul_(2 + 1j)
        (b * w).real.sum().backward()
        (T.view_as_complex(y.clone()).reshape(4).mul(2 + 1j) * w).real.sum().backward()
        out += [x.grad, y.grad, b._base is not None]
        # case 3: the parent (a reshape of a complex tensor) has none, the child has one
        vals = [1 + 2j, 3 - 1j, 0.5j, 2, 1j, -1, 3j, 1 + 1j, 2 - 2j, 4]
        x, y = (T.tensor(vals, dtype=T.complex128, requires_grad=True) for _ in range(2))
        k = T.arange(20, dtype=T.float64).reshape(5, 2, 2)
        b = T.view_as_real(x.clone().reshape(5, 2))
        b.mul_(2)
        (b * k).sum().backward()
        (T.view_as_real(y.clone().reshape(5, 2)).mul(2) * k).sum().backward()
        out += [x.grad.resolve_conj(), y.grad.resolve_conj()]
        return out
    got = same_outcome(prog)
    for i, j in ((0, 1), (3, 4), (6, 7)):   # in place through the views == out of place
        np.testing.assert_allclose(got[i][3], got[j][3], rtol=1e-12)


def test_view_with_multi_output_and_as_identity():
    # TestAutogradComplex.test_view_with_multi_output: a view of view_as_complex's output that
    # comes from a multi-output view op (unbind) may be taken, not written in place -- with
    # and without requires_grad on the base. TestAutogradComplex.as_identity: view_as_complex ->
    # select -> view_as_real differentiates as the select on the real tensor.
    def refused(T, rg):
        x = T.tensor(R, dtype=T.float64, requires_grad=rg)
        parts = T.view_as_complex(x).unbind(0)
        shapes = [tuple(p.shape) for p in parts]
        try:
            parts[0] += T.ones(2, dtype=T.complex128, requires_grad=True)
        except RuntimeError as e:
            return shapes, "output of a function that returns multiple views" in str(e)
        return shapes, "no error"

    def identity(T):
        w = T.tensor([[1., 2.], [3., 4.]], dtype=T.float64)
        z = T.tensor(np.arange(8.).reshape(2, 2, 2), dtype=T.float64, requires_grad=True)
        zc = T.view_as_complex(z)
        (T.view_as_real(T.select(zc, zc.dim() - 1, 0)) * w).sum().backward()
        z1 = z.detach().clone().requires_grad_()
        (T.select(z1, z1.dim() - 2, 0) * w).sum().backward()
        return z.grad, z1.grad, bool((z.grad == z1.grad).all())

    assert [r[1] for r in same_outcome(lambda T: [refused(T, False), refused(T, True)])] == [True, True]
    assert same_outcome(identity)[2] is True


def test_wirtinger_gradients_of_nonholomorphic_ops():
    # the OpInfo gradient checks of sgn / abs / angle / polar / complex on complex inputs, as
    # torch's conjugate Wirtinger gradients of real losses; sgn's gradient is nonzero off the
    # origin and 0 at it (it was 0 everywhere)
    w = [1 + 1j, 2 - 1j, 0.5j]
    pts = (0j, 3 + 4j, -1 + 2j)

    def prog(T):
        wt = c(T, *w)
        out = [grad_of(T, lambda z: (z.sgn() * wt).real.sum(), *pts),
               grad_of(T, lambda z: (z.sgn() * wt).imag.sum() + z.abs().sum(), *pts),
               grad_of(T, lambda z: (z.angle() * T.tensor([1., -2., 3.], dtype=T.float64)).sum(), *pts),
               grad_of(T, lambda z: (T.polar(z.abs(), z.angle()) * wt).real.sum(), 1 + 2j, -3 - 1j, 0.5j),
               grad_of(T, lambda z: (z.sqrt() * wt).abs().sum(), 1 + 2j, -3 - 1j, 0.5j),
               grad_of(T, lambda z: ((z ** 2.5) + z.log() * wt).imag.sum(), 1 + 2j, -3 - 1j, 0.5j)]
        # the real and imaginary parts of T.complex / T.polar get real gradients
        a = T.tensor([1., 2., 0.5], dtype=T.float64, requires_grad=True)   # polar: abs >= 0
        b = T.tensor([3., -1., 0.25], dtype=T.float64, requires_grad=True)
        (T.complex(a, b) * wt).abs().sum().backward()
        out += [a.grad.clone(), b.grad.clone()]
        a.grad = b.grad = None
        (T.polar(a, b) * wt).imag.sum().backward()
        out += [a.grad, b.grad]
        # a real sgn has no gradient; sgn's Node saves its input and result
        x = T.tensor([1., -2., 0.], dtype=T.float64, requires_grad=True)
        y = x.sgn()
        out += [T.autograd.grad((y * 3 + x).sum(), x)[0], type(y.grad_fn).__name__,
                T.allclose(c(T, 3 + 4j).requires_grad_().sgn().grad_fn._saved_result.detach(), c(T, 0.6 + 0.8j))]
        return out
    got = same_outcome(prog)
    sgn_grad = got[0][1][3]
    assert sgn_grad[0] == 0 and np.abs(sgn_grad[1:]).min() > 0.05   # 0 at the origin, nonzero off it


def test_complex_inplace_and_ordering_refusals():
    # an in-place op whose result is real (abs_) cannot write into a complex tensor; complex
    # values have no order (lt / max / sort / clamp), no floor division or remainder, and
    # view_as_real refuses an unresolved conjugate view
    cases = {
        "abs_": lambda T: c(T, 1 + 2j).abs_(),
        "absolute_": lambda T: c(T, 3 + 4j).absolute_(),
        "lt": lambda T: c(T, 1j) < c(T, 2j),
        "max": lambda T: c(T, 1j, 2).max(),
        "sort": lambda T: T.sort(c(T, 1j, 2)),
        "clamp": lambda T: T.clamp(c(T, 1j, 2), 0, 1),
        "floor_divide": lambda T: c(T, 1 + 2j) // 2,
        "remainder": lambda T: c(T, 1 + 2j) % 2,
        "sign": lambda T: T.sign(c(T, 3 + 4j)),
        "view_as_real_conj": lambda T: T.view_as_real(c(T, 1 + 2j).conj()),
        "view_as_real_real": lambda T: T.view_as_real(T.tensor([1., 2.])),
        "view_as_complex_last_dim_3": lambda T: T.view_as_complex(T.ones(2, 3)),
        "view_as_complex_int": lambda T: T.view_as_complex(T.ones(2, 2, dtype=T.int64)),
        "view_as_complex_strided": lambda T: T.view_as_complex(T.ones(2, 4)[:, ::2]),
        "imag_of_real": lambda T: T.tensor([1.]).imag,
        "matmul_mixed": lambda T: c(T, 1j, 2).reshape(1, 2) @ T.ones(2, 1, dtype=T.float64),
    }
    for name, fn in cases.items():
        got = same_outcome(fn)
        assert got[0] == "raised", name
    # ... while the out-of-place forms work and keep z unchanged
    got = same_outcome(lambda T: (lambda z: (z.abs(), T.abs(z).dtype, z.sgn(), z))(c(T, 3 + 4j, 0j)))
    assert got[1] == ("dtype", "float64")


def test_complex_values_and_conversions():
    # TestComplexTensor.test_exp / test_reciprocal / test_copy_real_imag_methods and the
    # dtype / value rules around them: complex construction, conj views, casts and reductions
    def prog(T):
        z = c(T, 1 + 2j, 3 - 1j, 0j)
        a = T.tensor(1j, dtype=T.complex64) * T.arange(18) / 3 * np.pi
        return [T.exp(a), T.exp(a.to(T.complex128)), T.reciprocal(c(T, 0j, 1j, 2 - 2j)),
                z.real.clone(), z.imag.clone(), z.real.stride(), z.real.is_contiguous(),
                T.complex(T.tensor([1., 2.]), T.tensor([3., 4.])), T.polar(T.tensor([1., 2.]), T.tensor([0.5, -1.])),
                z.conj().is_conj(), z.conj().resolve_conj().is_conj(), z.conj_physical().is_conj(),
                T.tensor([1.]).conj().is_conj(), z.conj().imag * 1, T.view_as_real(z.conj().resolve_conj()),
                z.to(T.float32), z.long(), (z == c(T, 1 + 2j, 3, 0)), z == 1 + 2j,
                T.isclose(c(T, 1 + 2j, 1e10j), c(T, 1 + 2.0000001j, 1.00001e10j)),
                z.sum(), z.mean(), z.prod(), z.var(), z.std(), z.var().dtype, z.cumsum(0), z.cumprod(0),
                T.linspace(0, 1 + 1j, 3), T.full((2,), 1 + 2j).dtype, z.nonzero(), bool(c(T, 1j)),
                T.count_nonzero(z), z.sum().item() == 4 + 1j, complex(z[0]) == 1 + 2j, z.tolist() == [1 + 2j, 3 - 1j, 0j],
                (T.tensor([1., 2.]) * 1j).dtype, (T.tensor([1, 2]) * 1j).dtype,
                T.cat([c(T, 1j), T.tensor([2.], dtype=T.float64), T.tensor([3])]),
                T.where(T.tensor([True, False]), c(T, 1j, 2), 0.5),
                c(T, 1 + 2j, 4j) / T.tensor([2, 0]), T.isreal(c(T, 1 + 0j, 1j)),
                T.nan_to_num(c(T, complex(float("nan"), float("inf")))), T.log(c(T, 0j)),
                c(T, 1 + 1j, 2j) ** 3, 2 ** c(T, 1j), T.vdot(z, c(T, 1j, 2, 1)), T.dot(z, c(T, 1j, 2, 1)),
                z.norm(), z.norm(1), T.dist(z, c(T, 1j, 0j, 1))]
    same_outcome(prog)
