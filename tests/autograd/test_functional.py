"""``tracegrad.autograd.functional`` against ``torch.autograd.functional``: the same call on
both modules gives the same structure (tuple nesting), values, ``requires_grad`` facts and
error classes."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]])
Y = np.array([0.2, -0.4, 1.1])


def _inputs(mod, tuple_in):
    x = mod.tensor(X, dtype=mod.float64)
    y = mod.tensor(Y, dtype=mod.float64)
    return (x, y) if tuple_in else x


def _fns(mod):
    return {
        "single": lambda x: (x.sin() * x).sum(1),
        "tuple_out": lambda x: ((x ** 3).sum(), x.exp()),
        "two_in": lambda x, y: (x * y).tanh().sum(0),
        "two_in_two_out": lambda x, y: ((x * y).sum(), (x.cos() + y).mean(0)),
        "scalar": lambda x: (x ** 3).sum() + x.prod(),
        "scalar2": lambda x, y: (x ** 2 * y).sum() * y.sin().sum(),
    }


def _flatten(res):
    """A nested result as a structure string plus a list of tensors."""
    if isinstance(res, (tuple, list)):
        parts = [_flatten(r) for r in res]
        brackets = "()" if isinstance(res, tuple) else "[]"
        return brackets[0] + ",".join(p[0] for p in parts) + brackets[1], [t for p in parts for t in p[1]]
    return "T", [res]


def _compare(got, want):
    gs, gt = _flatten(got)
    ws, wt = _flatten(want)
    assert gs == ws
    for g, w in zip(gt, wt):
        assert tuple(g.shape) == tuple(w.shape)
        assert g.requires_grad == w.requires_grad
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-10, atol=1e-12)


def _both(call):
    want = call(torch, torch.autograd.functional)
    got = call(tracegrad, tracegrad.autograd.functional)
    _compare(got, want)
    return got, want


JAC_CASES = [("single", False), ("tuple_out", False), ("two_in", True), ("two_in_two_out", True)]


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("name,tuple_in", JAC_CASES)
def test_jacobian(name, tuple_in, vectorize):
    _both(lambda m, F: F.jacobian(_fns(m)[name], _inputs(m, tuple_in), vectorize=vectorize))


def test_jacobian_create_graph_is_differentiable():
    def call(m, F):
        x = _inputs(m, False).requires_grad_()
        j = F.jacobian(_fns(m)["single"], x, create_graph=True)
        (g,) = m.autograd.grad(j.sum(), x)
        return j, g
    _both(call)


def test_jacobian_forward_mode_strategy():
    _both(lambda m, F: F.jacobian(_fns(m)["two_in"], _inputs(m, True), vectorize=True, strategy="forward-mode"))


@pytest.mark.parametrize("name,tuple_in", [("scalar", False), ("scalar2", True)])
@pytest.mark.parametrize("vectorize", [False, True])
def test_hessian(name, tuple_in, vectorize):
    _both(lambda m, F: F.hessian(_fns(m)[name], _inputs(m, tuple_in), vectorize=vectorize))


@pytest.mark.parametrize("api", ["hvp", "vhp"])
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name,tuple_in", [("scalar", False), ("scalar2", True)])
def test_hvp_vhp(api, create_graph, name, tuple_in):
    def call(m, F):
        inp = _inputs(m, tuple_in)
        v = tuple(m.ones_like(t) * 0.5 for t in inp) if tuple_in else m.ones_like(inp) * 0.5
        return getattr(F, api)(_fns(m)[name], inp, v, create_graph=create_graph)
    _both(call)


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name,tuple_in", JAC_CASES)
def test_vjp_jvp(name, tuple_in, create_graph):
    def vjp(m, F):
        inp = _inputs(m, tuple_in)
        out = _fns(m)[name](*(inp if tuple_in else (inp,)))
        v = tuple(m.ones_like(o) for o in out) if isinstance(out, tuple) else m.ones_like(out)
        return F.vjp(_fns(m)[name], inp, v, create_graph=create_graph)

    def jvp(m, F):
        inp = _inputs(m, tuple_in)
        v = tuple(m.full_like(t, 0.3) for t in inp) if tuple_in else m.full_like(inp, 0.3)
        return F.jvp(_fns(m)[name], inp, v, create_graph=create_graph)
    _both(vjp)
    _both(jvp)


def test_vjp_default_v_for_scalar_output():
    _both(lambda m, F: F.vjp(lambda x: (x ** 2).sum(), _inputs(m, False)))


def test_results_match_jax_grad(jax_x64):
    jax = pytest.importorskip("jax")
    f = lambda x: (x ** 3).sum() + x.prod()  # noqa: E731
    x = tracegrad.tensor(X, dtype=tracegrad.float64)
    h = tracegrad.autograd.functional.hessian(f, x)
    np.testing.assert_allclose(h.numpy(), np.asarray(jax.hessian(lambda a: (a ** 3).sum() + a.prod())(X)), rtol=1e-10)


def _raises_both(call):
    with pytest.raises(Exception) as want:
        call(torch, torch.autograd.functional)
    with pytest.raises(type(want.value)) as got:
        call(tracegrad, tracegrad.autograd.functional)
    return str(got.value), str(want.value)


ERROR_CASES = {
    "strict_independent_output": lambda m, F: F.vjp(lambda x, y: x.sum() * 2, _inputs(m, True),
                                                    m.tensor(1.0, dtype=m.float64), strict=True),
    "strict_constant_output": lambda m, F: F.jacobian(lambda x: m.ones(2), _inputs(m, False), strict=True),
    "strict_jacobian_independent": lambda m, F: F.jacobian(lambda x, y: x.sum(1), _inputs(m, True), strict=True),
    "strict_linear_hessian": lambda m, F: F.hessian(lambda x: x.sum() * 3, _inputs(m, False), strict=True),
    "strict_vectorize": lambda m, F: F.jacobian(lambda x: x * 2, _inputs(m, False), strict=True, vectorize=True),
    "strict_jvp": lambda m, F: F.jvp(lambda x, y: x * 2, _inputs(m, True),
                                     (m.ones(2, 3, dtype=m.float64), m.ones(3, dtype=m.float64)), strict=True),
    "not_tensor": lambda m, F: F.jacobian(lambda x: x, [1.0, 2.0]),
    "output_not_tensor": lambda m, F: F.vjp(lambda x: 3.0, _inputs(m, False)),
    "v_bad_size": lambda m, F: F.vjp(lambda x: x * 2, _inputs(m, False), m.ones(3)),
    "v_bad_length": lambda m, F: F.jvp(lambda x, y: x * y, _inputs(m, True), (m.ones(2, 3),)),
    "v_none_non_scalar": lambda m, F: F.vjp(lambda x: x * 2, _inputs(m, False)),
    "hessian_tuple_output": lambda m, F: F.hessian(lambda x: (x.sum(), x.sum()), _inputs(m, False)),
    "hessian_not_scalar": lambda m, F: F.hessian(lambda x: x * 2, _inputs(m, False)),
    "hvp_not_scalar": lambda m, F: F.hvp(lambda x: x ** 2, _inputs(m, False), m.ones(2, 3, dtype=m.float64)),
    "forward_mode_create_graph": lambda m, F: F.jacobian(lambda x: x * 2, _inputs(m, False), create_graph=True,
                                                         strategy="forward-mode"),
    "forward_mode_not_vectorized": lambda m, F: F.jacobian(lambda x: x * 2, _inputs(m, False),
                                                           strategy="forward-mode"),
    "bad_strategy": lambda m, F: F.jacobian(lambda x: x * 2, _inputs(m, False), strategy="sideways"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_errors_match_torch(case):
    got, want = _raises_both(ERROR_CASES[case])
    if "strict" in case or "v_" in case:
        # torch's wording, with torch's positions and sizes
        assert got.replace("tracegrad", "torch") == want


def test_non_strict_independent_gives_zeros():
    _both(lambda m, F: F.jacobian(lambda x, y: x.sum(1), _inputs(m, True)))
    _both(lambda m, F: F.vjp(lambda x, y: x.sum() * 2, _inputs(m, True), m.tensor(1.0, dtype=m.float64)))


@pytest.mark.parametrize("vectorize", [False, True])
def test_hessian_and_jacobian_create_graph_then_backward(vectorize):
    def call(m, F):
        x = _inputs(m, False).requires_grad_()
        h = F.hessian(_fns(m)["scalar"], x, create_graph=True, vectorize=vectorize)
        j = F.jacobian(_fns(m)["single"], x, create_graph=True, vectorize=vectorize)
        (g,) = m.autograd.grad(h.sum() + j.pow(2).sum(), x)
        return h, j, g
    _both(call)


def test_hvp_default_v_for_single_element_input():
    _both(lambda m, F: F.hvp(lambda x: (x ** 4).sum(), m.tensor([1.5], dtype=m.float64)))
    _both(lambda m, F: F.jvp(lambda x: x.exp() * 2, m.tensor([0.5], dtype=m.float64)))


def test_grad_mode_off_outside_is_kept():
    def call(m, F):
        with m.no_grad():
            out, res = F.vjp(lambda x: (x ** 2).sum(), _inputs(m, False))
        return out, res, m.is_grad_enabled()
    got = call(tracegrad, tracegrad.autograd.functional)
    want = call(torch, torch.autograd.functional)
    _compare(got[:2], want[:2])
    assert got[2] == want[2]
