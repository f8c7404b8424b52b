"""tracegrad.special against torch.special: values (float32 and float64, with the edge values
0, -0, negatives, NaN), dtypes, shapes, gradients, and the errors torch raises."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

EDGES = np.array([-2.5, -1.0, -0.0, 0.0, 0.25, 0.5, 1.0, 3.0, np.nan])
SMOOTH = np.array([0.3, 0.7, 1.4, 2.2, 3.1, 5.0])           # inside every function's domain
PROB = np.array([0.05, 0.2, 0.5, 0.7, 0.95])                  # for logit / ndtri

UNARY = ["expit", "logit", "erf", "erfc", "erfinv", "exp2", "expm1", "log1p", "gammaln", "digamma", "psi",
         "entr", "sinc", "i0", "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr", "round"]


def _values(x):
    return x.detach().numpy(), str(x.dtype).split(".")[-1], tuple(x.shape)


def _tol(dtype):
    return dict(rtol=2e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_values_at_edges(name, dtype):
    x = (EDGES if name not in ("erfinv",) else np.append(EDGES, [0.9, -0.99])).astype(dtype)
    (rv, rd, rs), (gv, gd, gs) = (_values(getattr(m.special, name)(m.tensor(x))) for m in (torch, tracegrad))
    assert (gd, gs) == (rd, rs)
    np.testing.assert_allclose(gv, rv, equal_nan=True, err_msg=name, **_tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", [n for n in UNARY if n != "round"])
def test_unary_gradients(name, dtype):
    x = (PROB if name in ("logit", "ndtri", "erfinv") else SMOOTH).astype(dtype)
    grads = []
    for m in (torch, tracegrad):
        t = m.tensor(x, requires_grad=True)
        getattr(m.special, name)(t).backward(m.tensor(np.linspace(0.5, 1.5, x.size), dtype=t.dtype))
        grads.append(t.grad.numpy())
    # float64: JAX's polygamma(1, x) (digamma's derivative) is accurate to ~5e-10 relative
    tol = _tol(dtype) if dtype == np.float32 else dict(rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(grads[1], grads[0], err_msg=name, **tol)


@pytest.mark.parametrize("name", [n for n in UNARY if n not in ("round",)])
def test_integer_inputs_give_the_default_float(name):
    x = np.array([0, 1, 2, 3])
    (rv, rd, rs), (gv, gd, gs) = (_values(getattr(m.special, name)(m.tensor(x))) for m in (torch, tracegrad))
    assert (gd, gs) == (rd, rs)
    np.testing.assert_allclose(gv, rv, equal_nan=True, rtol=2e-5, atol=1e-6)


CASES = [
    ("polygamma", lambda m, x: m.special.polygamma(3, x), SMOOTH),
    ("multigammaln", lambda m, x: m.special.multigammaln(x + 2, 4), SMOOTH),
    ("xlogy", lambda m, x: m.special.xlogy(x - 1, x), SMOOTH),
    ("xlog1py", lambda m, x: m.special.xlog1py(x.reshape(2, 3), x[:3]), SMOOTH),
    ("logsumexp", lambda m, x: m.special.logsumexp(x.reshape(2, 3), 1, keepdim=True), SMOOTH),
    ("softmax", lambda m, x: m.special.softmax(x.reshape(2, 3), 0), SMOOTH),
    ("log_softmax", lambda m, x: m.special.log_softmax(x.reshape(3, 2), -1), SMOOTH),
    ("logit_eps", lambda m, x: m.special.logit(x * 0.3 - 0.2, eps=0.1), SMOOTH),
    ("round_decimals", lambda m, x: m.special.round(x * 1.2345, decimals=2), SMOOTH),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name,fn,x", CASES, ids=[c[0] for c in CASES])
def test_functions_with_arguments(name, fn, x, dtype):
    x = x.astype(dtype)
    outs, grads = [], []
    for m in (torch, tracegrad):
        t = m.tensor(x, requires_grad=True)
        out = fn(m, t)
        outs.append(_values(out))
        if name != "round_decimals":
            (out * m.tensor(np.arange(out.numel()).reshape(tuple(out.shape)) + 1.0, dtype=out.dtype)).sum().backward()
            grads.append(t.grad.numpy())
    assert outs[0][1:] == outs[1][1:], name
    np.testing.assert_allclose(outs[1][0], outs[0][0], err_msg=name, **_tol(dtype))
    if grads:
        np.testing.assert_allclose(grads[1], grads[0], err_msg=name + " grad", **_tol(dtype))


def test_xlog1py_zero_and_nan_and_scalars():
    y = np.array([0.0, 1.0, 0.0, 2.0], np.float32)
    z = np.array([-1.0, 2.0, np.nan, -0.5], np.float32)
    for f in (lambda m: m.special.xlog1py(m.tensor(y), m.tensor(z)), lambda m: m.special.xlog1py(2.0, m.tensor(z)),
              lambda m: m.special.xlog1py(m.tensor(y), 3)):
        (rv, rd, rs), (gv, gd, gs) = _values(f(torch)), _values(f(tracegrad))
        assert (gd, gs) == (rd, rs)
        np.testing.assert_allclose(gv, rv, equal_nan=True, rtol=1e-6)


def test_grad_fn_names_as_torch():
    x = SMOOTH.astype(np.float32)
    for name in ("i0e", "i1", "i1e", "log_ndtr", "entr"):
        names = [getattr(m.special, name)(m.tensor(x, requires_grad=True)).grad_fn.name() for m in (torch, tracegrad)]
        assert names[0] == names[1], name


def test_aliases_are_tracegrad_functions():
    assert tracegrad.special.expit is tracegrad.sigmoid and tracegrad.special.gammaln is tracegrad.lgamma
    assert tracegrad.special.psi is tracegrad.digamma and tracegrad.special.multigammaln is tracegrad.mvlgamma


def test_bad_inputs_raise_as_torch():
    for m in (torch, tracegrad):
        for name in ("i0e", "ndtr", "entr", "log_ndtr"):
            with pytest.raises(TypeError):
                getattr(m.special, name)(1.0)
        with pytest.raises(RuntimeError):
            m.special.polygamma(-1, m.ones(2))
        with pytest.raises(RuntimeError):
            m.special.multigammaln(m.ones(2), 0)
    with pytest.raises(TypeError, match="must be Tensor"):
        tracegrad.special.i1(2.0)


_XS = [0., 0., 0., 0., 0., 0., 0., 1., 2., -1., np.nan, 1., 0.]
_YS = [0., -1., 2., np.nan, np.inf, -2., -0.5, 0., -1., 0.5, 1., np.inf, -np.inf]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["xlogy", "special.xlogy", "special.xlog1py"])
def test_xlogy_family_gradients_at_zero_as_torch(name, dtype):
    # torch's derivatives.yaml formulas: d/dx 0 where x == 0 and y <= pole, log(y) otherwise (NaN y
    # included); d/dy x / y; a number y masks every x == 0 unless y > pole (NaN included)
    def run(m):
        f = m.xlogy if name == "xlogy" else getattr(m.special, name.split(".")[1])
        dt = getattr(m, dtype)
        x, y = (m.tensor(v, dtype=dt, requires_grad=True) for v in (_XS, _YS))
        r = f(x, y)
        r.backward(m.full_like(r, 0.5))
        got = [r, x.grad, y.grad, type(r.grad_fn).__name__]
        for s in (0., 2., -1., -0.5, float("nan")):
            x, y = (m.tensor(v, dtype=dt, requires_grad=True) for v in (_XS, _YS))
            a, b = f(x, s), f(s, y)
            (a.sum() + b.sum()).backward()
            got += [a, x.grad, b, y.grad, type(a.grad_fn).__name__, type(b.grad_fn).__name__]
        return [v if isinstance(v, str) else v.detach().numpy() for v in got]
    for g, t in zip(run(tracegrad), run(torch)):
        if isinstance(t, str):
            assert g == t
        else:
            np.testing.assert_allclose(g, t, rtol=1e-6, atol=1e-7, equal_nan=True)


def _not_implemented_derivatives(lib):
    """igamma/igammac's ``input`` and zeta's ``self`` have torch's ``not_implemented``
    derivative: the edge is kept, a backward reaching it raises, a gradient with respect to
    ``other`` alone works (also when ``input`` requires grad), and forward AD is refused."""
    out = []

    def rec(name, f):
        try:
            out.append((name, [np.asarray(t.detach()).round(5).tolist() for t in f()]))
        except (NotImplementedError, RuntimeError) as e:
            out.append((name, type(e).__name__, str(e).split("\n")[0][:60]))

    fw = lib.autograd.forward_ad
    for name, f in (("igamma", lib.igamma), ("igammac", lib.igammac), ("zeta", lib.special.zeta)):
        for ra, rb in ((True, False), (False, True), (True, True)):
            a, b = lib.tensor([2.0, 3.0], requires_grad=ra), lib.tensor([1.0, 1.5], requires_grad=rb)
            y = f(a, b)
            out.append((name, ra, rb, type(y.grad_fn).__name__, [n is None for n, _ in y.grad_fn.next_functions]))
            rec(f"{name} backward {ra} {rb}", lambda: lib.autograd.grad(y.sum(), [t for t in (a, b) if t.requires_grad]))
            if ra and rb:
                rec(f"{name} grad wrt other only", lambda: lib.autograd.grad(f(a, b).sum(), b))
                rec(f"{name} double", lambda: lib.autograd.grad(
                    lib.autograd.grad(f(a.detach(), b).sum(), b, create_graph=True)[0].sum(), b))
        for which in (0, 1):
            def dual():
                with fw.dual_level():
                    d = fw.make_dual(lib.tensor([2.0, 3.0]), lib.ones(2))
                    r = f(d, lib.tensor([1.0, 1.5])) if which == 0 else f(lib.tensor([2.0, 3.0]), d)
                    return (fw.unpack_dual(r).tangent,)
            rec(f"{name} forward AD {which}", dual)
    return out


def test_not_implemented_derivatives_as_torch():
    assert _not_implemented_derivatives(tracegrad) == _not_implemented_derivatives(torch)


def test_nextafter_gradient_when_other_broadcasts_input_as_torch():
    # torch's gradient is 1 for input (summed over the broadcast dims) and 0 for other
    grads = []
    for lib in (torch, tracegrad):
        a = lib.tensor([[1.0], [2.0]], requires_grad=True)
        b = lib.tensor([0.0, 3.0, 5.0], requires_grad=True)
        lib.nextafter(a, b).sum().backward()
        grads.append((a.grad.tolist(), b.grad.tolist()))
    assert grads[0] == grads[1]
