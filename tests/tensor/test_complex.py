"""Complex tensors against torch: creation, repr, arithmetic, real/imag/view_as_real/view_as_complex
as views (writes through them), conj, angle, and gradients in torch's convention (the conjugate
of JAX's cotangent) for every op, autograd.grad with complex grad_outputs, and tracegrad.func."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

Z = np.array([1 + 2j, -0.5 + 0.25j, 3 - 1j], dtype=np.complex64)
M = np.array([[1 + 1j, 2 - 1j], [0.5j, -1 + 0.5j]], dtype=np.complex64)
X = np.array([0.5, -1.0, 2.0, 0.25], dtype=np.float32)


def _np(t):
    return np.asarray(t.detach().resolve_conj().numpy())


def _close(a, b, tol=1e-5):
    a, b = _np(a), _np(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _both(fn, *arrays, grad=True):
    """Run ``fn(lib, *leaves)`` under both libraries; compare outputs and leaf gradients."""
    outs, grads = [], []
    for lib in (tracegrad, torch):
        leaves = [lib.tensor(a, requires_grad=grad) for a in arrays]
        out = fn(lib, *leaves)
        outs.append(out)
        if grad:
            out.backward()
            grads.append([leaf.grad for leaf in leaves])
    _close(outs[0], outs[1])
    for g0, g1 in zip(*grads) if grad else ():
        _close(g0, g1)


GRAD_CASES = {
    "abs": lambda t, z: z.abs().sum(),
    "abs_sq": lambda t, z: (z.abs() ** 2).sum(),
    "real": lambda t, z: (z.real * t.tensor([1.0, 2.0, 3.0]) * z.imag).sum(),
    "imag": lambda t, z: (z.imag ** 2).sum(),
    "conj": lambda t, z: (z.conj() * t.tensor([1 + 1j, 2, 1j])).real.sum(),
    "conj_physical": lambda t, z: (t.conj_physical(z) * t.tensor([1 + 1j, 2, 1j])).imag.sum(),
    "mul_const": lambda t, z: ((z * (2 - 3j)).real + (z * (0.5 + 1j)).imag).sum(),
    "exp": lambda t, z: (t.exp(z) * (1 - 2j)).real.sum(),
    "angle": lambda t, z: z.angle().sum(),
    "view_as_real": lambda t, z: (t.view_as_real(z) * t.arange(6.0).reshape(3, 2)).sum(),
    "mean_sum": lambda t, z: (z.mean() * (1 + 2j) + z.sum()).abs(),
    "complex_real_complex": lambda t, z: t.complex(z.real * 2, z.imag * z.real).pow(2).abs().sum(),
    "div_sq": lambda t, z: (z / (1.5 - 0.5j)).square().real.sum(),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_grad_matches_torch(name):
    _both(GRAD_CASES[name], Z)


def test_grad_matmul():
    _both(lambda t, a, b: (a @ b).abs().pow(2).sum(), M, M.T.copy())


def test_grad_fft_of_real_input():
    _both(lambda t, x: (t.fft.fft(x) * t.tensor([1, 1j, -1, 2 - 1j])).abs().sum(), X)


def test_grad_readme_example():
    z = tracegrad.tensor([1 + 1j], requires_grad=True)
    (z.abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [2 + 2j], rtol=1e-6)


def test_autograd_grad_complex_grad_outputs():
    res = []
    for lib in (tracegrad, torch):
        z = lib.tensor(Z, requires_grad=True)
        y = z * lib.tensor([2 - 1j, 1j, 0.5])
        g = lib.tensor(np.array([1 + 1j, 2, -1j], dtype=np.complex64))
        res.append(lib.autograd.grad(y.exp(), z, g)[0])
    _close(*res)


def test_func_grad_and_vjp():
    from torch import func as tfunc
    f = lambda lib: (lambda z: (z * lib.tensor([1 + 2j, 1, -1j])).abs().pow(2).sum())  # noqa: E731
    _close(tracegrad.func.grad(f(tracegrad))(tracegrad.tensor(Z)), tfunc.grad(f(torch))(torch.tensor(Z)))
    ct = np.array([1 - 1j, 0.5j, 2], dtype=np.complex64)
    g = lambda lib: (lambda z: z.exp() * lib.tensor([1j, 2, 1 - 1j]))  # noqa: E731
    _, vt = tracegrad.func.vjp(g(tracegrad), tracegrad.tensor(Z))
    _, vr = tfunc.vjp(g(torch), torch.tensor(Z))
    _close(vt(tracegrad.tensor(ct))[0], vr(torch.tensor(ct))[0])


def test_creation_and_dtypes():
    for lib in (tracegrad, torch):
        assert lib.tensor([1 + 2j]).dtype == lib.complex64
        assert lib.tensor([1.0], dtype=lib.complex128).dtype == lib.complex128
        assert lib.randn(2, 3, dtype=lib.complex64).dtype == lib.complex64
        assert (lib.tensor([1j]) + lib.ones(1, dtype=lib.float64)).dtype == lib.complex128
        assert (lib.tensor([1j]) + lib.ones(1)).dtype == lib.complex64
        assert lib.is_complex(lib.tensor([1j])) and not lib.is_complex(lib.ones(1))
        assert lib.tensor([1j]).is_complex() and not lib.ones(1).is_complex()
    r = tracegrad.randn(2000, dtype=tracegrad.complex64)
    assert abs(float(r.real.var()) - 0.5) < 0.1 and abs(float(r.imag.var()) - 0.5) < 0.1


def test_item_tolist_numpy():
    for lib in (tracegrad, torch):
        z = lib.tensor(Z)
        assert z[0].item() == 1 + 2j and isinstance(z[0].item(), complex)
        assert z.tolist() == torch.tensor(Z).tolist()
        assert z.numpy().dtype == np.complex64


@pytest.mark.parametrize("vals", [[1 + 2j, 3 - 1j], [1 + 2j, 1 + 10j], [0.5 + 0.25j, -1.5 - 2j], [1e-5 + 1j, 3j],
                                  [complex("nan+1j"), complex(1, float("inf"))], [1 + 2j, -3.25j],
                                  [[1 + 2j, 3 - 1j], [0.5j, -2]], 1 + 2j])
def test_repr(vals):
    assert repr(tracegrad.tensor(vals)) == repr(torch.tensor(vals))
    assert str(tracegrad.tensor(vals)) == str(torch.tensor(vals))


def test_repr_complex128_and_grad():
    r = repr(tracegrad.tensor([1j, 2], dtype=tracegrad.complex128))
    assert r == repr(torch.tensor([1j, 2], dtype=torch.complex128)).replace("torch.", "tracegrad.")
    assert repr(tracegrad.tensor([1j], requires_grad=True)) == repr(torch.tensor([1j], requires_grad=True))


def test_values():
    for fn in [lambda t, z: z.real, lambda t, z: z.imag, lambda t, z: z.conj(), lambda t, z: z.angle(),
               lambda t, z: t.view_as_real(z), lambda t, z: z.exp(), lambda t, z: z.sum(), lambda t, z: z.mean(),
               lambda t, z: z @ z, lambda t, z: t.fft.ifft(t.fft.fft(z)), lambda t, z: t.angle(t.tensor([-1.0, 2.0])),
               lambda t, z: t.angle(t.tensor([-1, 2])),
               lambda t, z: t.view_as_complex(t.arange(6.0).reshape(3, 2)),
               lambda t, z: t.complex(t.tensor([1.0, 2.0]), t.tensor([3.0])),
               lambda t, z: t.polar(t.tensor([1.0, 2.0]), t.tensor([0.5, -1.0])),
               lambda t, z: z.conj_physical(), lambda t, z: t.resolve_conj(z.conj())]:
        _close(fn(tracegrad, tracegrad.tensor(Z)), fn(torch, torch.tensor(Z)))


@pytest.mark.parametrize("write", [
    lambda t, z: z.real.mul_(2),
    lambda t, z: z.imag.zero_(),
    lambda t, z: z[1:].imag.add_(1),
    lambda t, z: z.imag[0].fill_(7),
    lambda t, z: t.view_as_real(z)[:, 0].neg_(),
    lambda t, z: t.view_as_real(z[::2]).mul_(3),
    lambda t, z: z.conj_physical_(),
])
def test_writes_through_views(write):
    res = []
    for lib in (tracegrad, torch):
        z = lib.tensor(Z)
        write(lib, z)
        res.append(z)
    _close(*res)


def test_view_as_complex_write_and_real_view_sees_base_writes():
    res = []
    for lib in (tracegrad, torch):
        x = lib.arange(6.0).reshape(3, 2)
        c = lib.view_as_complex(x)
        c.mul_(1j)
        z = lib.tensor(Z)
        r = z.real
        z.mul_(2)
        res.append((x, r, z.real._is_view() if lib is tracegrad else z.real._is_view()))
    _close(res[0][0], res[1][0])
    _close(res[0][1], res[1][1])
    assert res[0][2] and res[1][2]


def test_grad_through_inplace_on_real_view():
    res = []
    for lib in (tracegrad, torch):
        z = lib.tensor(Z, requires_grad=True)
        w = z * (1 + 1j)
        w.imag.mul_(3)
        (w.abs() ** 2).sum().backward()
        res.append(z.grad)
    _close(*res)


def test_conj_view_flags():
    res = []
    for lib in (tracegrad, torch):
        z = lib.tensor(Z)
        c = z.conj()
        flags = (c.is_conj(), c.conj().is_conj(), z.is_conj(), c[0].is_conj(), c.clone().is_conj(), (c * 1).is_conj(),
                 c.detach().is_conj(), lib.is_conj(c), c._is_view(), c._base is z, c.resolve_conj().is_conj(),
                 c.resolve_conj()._is_view(), z.resolve_conj() is z, lib.ones(2).conj().is_conj(), z.is_neg())
        res.append((flags, c.resolve_conj(), repr(c)))
    assert res[0][0] == res[1][0]
    _close(res[0][1], res[1][1])
    assert res[0][2] == res[1][2]
    x = tracegrad.ones(2)
    assert x.conj() is x and x.real is x


@pytest.mark.parametrize("write", [
    lambda t, z: z.conj().mul_(1j),
    lambda t, z: z.conj().imag.fill_(5),
    lambda t, z: z.conj()[1:].add_(1 + 1j),
])
def test_writes_through_conj_view(write):
    res = []
    for lib in (tracegrad, torch):
        z = lib.tensor(Z)
        write(lib, z)
        res.append(z)
    _close(*res)


def test_grad_inplace_on_conj_view():
    res = []
    for lib in (tracegrad, torch):
        w = lib.tensor(Z, requires_grad=True)
        y = w * (1 + 1j)
        y.conj().mul_(2 - 1j)
        (y.abs() ** 2).sum().backward()
        res.append(w.grad)
    _close(*res, tol=1e-4)


@pytest.mark.parametrize("call", [
    lambda t: t.ones(2).imag,
    lambda t: t.view_as_real(t.ones(2)),
    lambda t: t.view_as_complex(t.ones(3)),
    lambda t: t.view_as_complex(t.ones(2, dtype=t.int64)),
    lambda t: t.complex(t.ones(2), t.ones(2, dtype=t.float64)),
    lambda t: t.complex(t.ones(2, dtype=t.int64), t.ones(2, dtype=t.int64)),
    lambda t: t.tensor([1j]).backward(),
    lambda t: t.tensor([1j]).conj().numpy(),
    lambda t: t.view_as_real(t.tensor([1j]).conj()),
])
def test_errors_match_torch(call):
    with pytest.raises(Exception) as et:
        call(torch)
    with pytest.raises(et.type):
        call(tracegrad)


def _compiled_vs_eager(make):
    """``make(wrap) -> step(z)``: three calls (the first compiled call runs eagerly) of the eager
    and the compiled step on a complex leaf; outputs and accumulated grads agree, and eager
    agrees with torch."""
    res = []
    for lib, wrap in ((tracegrad, lambda f: f), (tracegrad, tracegrad.compile), (torch, lambda f: f)):
        z = lib.tensor(Z, requires_grad=True)
        step = make(wrap)
        outs = [step(z).detach() for _ in range(3)]
        res.append((outs, z.grad))
    for other in res[1:]:
        for a, b in zip(res[0][0], other[0]):
            _close(a, b)
        _close(res[0][1], other[1])


def test_compile_backward_inside():
    def make(wrap):
        def step(z):
            loss = (z * (1 + 2j)).abs().pow(2).sum() + z.angle().sum()
            loss.backward()
            return loss
        return wrap(step)
    _compiled_vs_eager(make)


def test_compile_backward_outside():
    def make(wrap):
        f = wrap(lambda z: (z * (0.5 - 1j)).exp())

        def step(z):
            y = f(z)
            (y.real * 2 + y.imag).sum().backward()
            return y
        return step
    _compiled_vs_eager(make)


def test_backward_through_func_transform_output():
    from torch import func as tfunc
    res = []
    for lib, vjp in ((tracegrad, tracegrad.func.vjp), (torch, tfunc.vjp)):
        z = lib.tensor(Z, requires_grad=True)
        out, _ = vjp(lambda z: (z * lib.tensor([1 + 2j, 1, -1j])).exp(), z)
        (out.real + 2 * out.imag).sum().backward()
        res.append(z.grad)
    _close(*res)


def test_part_setters_and_strides():
    res = []
    for lib in (tracegrad, torch):
        z = lib.tensor(M)
        z.imag = lib.tensor([5.0, 6.0])
        z[0].real = lib.tensor(-1.0)
        strides = [v.stride() for v in (z.real, z.imag, lib.view_as_real(z), z.T.real, z[:, 1].imag,
                                         lib.view_as_complex(lib.ones(3, 2)), lib.view_as_real(z)[..., 1])]
        contig = [v.is_contiguous() for v in (z.real, lib.view_as_real(z), lib.view_as_complex(lib.ones(3, 2)))]
        res.append((z, strides, contig, z.real.view(4)))
    _close(res[0][0], res[1][0])
    _close(res[0][3], res[1][3])
    assert res[0][1:3] == res[1][1:3]


@pytest.mark.parametrize("e", [2, 3, 0.5, -1, -2, 1.5])
def test_pow_complex_base(e):
    _both(lambda t, z: (z ** e * (1 - 1j)).real.sum(), Z)
    assert (tracegrad.tensor([1 + 1j]) ** 2).tolist() == (torch.tensor([1 + 1j]) ** 2).tolist() or e != 2


@pytest.mark.parametrize("e", [2, 0.5, 1.5])
def test_pow_complex_zero_base_grad(e):
    res = []
    for lib in (tracegrad, torch):
        z = lib.tensor([0j, 1 + 1j], requires_grad=True)
        (z ** e).abs().sum().backward()
        res.append(z.grad)
    _close(*res)


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobians_refuse_complex_inputs(name):
    from torch import func as tfunc
    with pytest.raises(RuntimeError):
        getattr(tfunc, name)(lambda z: z.abs())(torch.tensor(Z))
    with pytest.raises(RuntimeError, match="real"):
        getattr(tracegrad.func, name)(lambda z: z.abs())(tracegrad.tensor(Z))


def test_func_jvp_complex():
    from torch import func as tfunc
    c = np.array([1 + 1j, 2j, -1], dtype=np.complex64)
    t_out = tracegrad.func.jvp(lambda z: z * tracegrad.tensor(c), (tracegrad.tensor(Z),), (tracegrad.tensor(Z),))
    r_out = tfunc.jvp(lambda z: z * torch.tensor(c), (torch.tensor(Z),), (torch.tensor(Z),))
    for a, b in zip(t_out, r_out):
        _close(a, b)
