"""Gamma, Beta and Dirichlet against torch: log_prob/entropy/mean/variance/mode values and
parameter gradients, shapes, validation error classes, and the reparameterized gradient of
rsample-based expectations against the analytic one (Monte Carlo tolerance)."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


pytestmark = pytest.mark.usefixtures("torch_validate_args")


PARAMS = {
    "Gamma": dict(concentration=[[0.5, 2.0, 3.5], [1.0, 0.8, 7.0]], rate=[[1.5, 0.5, 2.0], [1.0, 3.0, 0.7]]),
    "Beta": dict(concentration1=[[0.5, 2.0, 3.5], [1.0, 0.8, 7.0]], concentration0=[[1.5, 0.5, 2.0], [1.0, 3.0, 0.7]]),
    "Dirichlet": dict(concentration=[[0.5, 2.0, 3.5], [1.0, 0.8, 7.0]]),
}
VALUES = {
    "Gamma": [[0.3, 2.0, 1.1], [0.05, 4.0, 9.0]],
    "Beta": [[0.3, 0.9, 0.5], [0.05, 0.6, 0.99]],
    "Dirichlet": [[0.2, 0.3, 0.5], [0.05, 0.15, 0.8]],
}


def _make(mod, name):
    args = {k: mod.tensor(v, dtype=mod.float64, requires_grad=True) for k, v in PARAMS[name].items()}
    return getattr(mod.distributions, name)(**args), args


@pytest.mark.parametrize("name", list(PARAMS))
@pytest.mark.parametrize("what", ["log_prob", "entropy", "mean", "variance", "mode"])
def test_values_and_grads(name, what):
    out = {}
    for mod in (tracegrad, torch):
        d, args = _make(mod, name)
        r = getattr(d, what)
        r = r(mod.tensor(VALUES[name], dtype=mod.float64)) if what == "log_prob" else (r() if what == "entropy" else r)
        w = mod.arange(1.0, 1.0 + r.numel(), dtype=mod.float64).reshape(r.shape)
        if what == "mode":
            out[mod.__name__] = (r.detach().numpy(), [])
            continue
        (r * w).sum().backward()
        out[mod.__name__] = (r.detach().numpy(), [a.grad.numpy() for a in args.values()])
    got, want = out["tracegrad"], out["torch"]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10, atol=1e-12)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-12)   # digamma' (trigamma) differs in the 10th digit


@pytest.mark.parametrize("name", list(PARAMS))
def test_shapes_sample_and_expand(name):
    for mod in (tracegrad, torch):
        d, _ = _make(mod, name)
        ev = (3,) if name == "Dirichlet" else ()
        batch = (2,) if name == "Dirichlet" else (2, 3)
        assert tuple(d.batch_shape) == batch and tuple(d.event_shape) == ev
        s = d.rsample((4,))
        assert tuple(s.shape) == (4,) + batch + ev and s.requires_grad
        assert not d.sample((5,)).requires_grad
        e = d.expand((7,) + batch)
        assert tuple(e.sample().shape) == (7,) + batch + ev
    assert tuple(tracegrad.distributions.Beta(2.0, 3.0).batch_shape) == ()
    assert tuple(tracegrad.distributions.Gamma(2.0, 3.0).rsample((6,)).shape) == (6,)


@pytest.mark.parametrize("build", [
    lambda m: m.distributions.Gamma(m.tensor([1.0, -1.0]), 1.0),
    lambda m: m.distributions.Gamma(1.0, 0.0),
    lambda m: m.distributions.Beta(0.0, 1.0),
    lambda m: m.distributions.Beta(m.tensor([1.0]), m.tensor([-2.0])),
    lambda m: m.distributions.Dirichlet(m.tensor(1.0)),
    lambda m: m.distributions.Dirichlet(m.tensor([1.0, 0.0])),
    lambda m: m.distributions.Gamma(2.0, 1.0).log_prob(m.tensor(-1.0)),
    lambda m: m.distributions.Beta(2.0, 1.0).log_prob(m.tensor(1.5)),
    lambda m: m.distributions.Dirichlet(m.tensor([1.0, 2.0])).log_prob(m.tensor([0.5, 0.6])),
])
def test_validation_errors_are_value_errors(build):
    with pytest.raises(ValueError):
        build(torch)
    with pytest.raises(ValueError):
        build(tracegrad)


def test_standard_gamma_grad_fn_and_moments():
    tracegrad.manual_seed(0)
    c = tracegrad.tensor([0.3, 1.0, 4.0], dtype=tracegrad.float64, requires_grad=True)
    from tracegrad._api.random_draws import standard_gamma
    x = standard_gamma(c.expand(40000, 3))
    assert type(x.grad_fn).__name__ == type(torch._standard_gamma(torch.ones(1, requires_grad=True)).grad_fn).__name__
    assert bool((x > 0).all())
    np.testing.assert_allclose(x.mean(0).detach().numpy(), [0.3, 1.0, 4.0], rtol=0.05)
    np.testing.assert_allclose(x.var(0).detach().numpy(), [0.3, 1.0, 4.0], rtol=0.08)


N = 40000


def _mc_grad(make, stat, params):
    """The gradient of ``E[stat(x)]`` with respect to ``params`` from N reparameterized draws."""
    tracegrad.manual_seed(1)
    ps = [tracegrad.tensor(p, dtype=tracegrad.float64, requires_grad=True) for p in params]
    stat(make(*ps).rsample((N,))).mean(0).sum().backward()
    return [p.grad.numpy() for p in ps]


def test_gamma_rsample_gradient():
    c, r = np.array([0.4, 1.5, 5.0]), np.array([2.0, 0.5, 1.0])
    g = _mc_grad(tracegrad.distributions.Gamma, lambda x: x, [c, r])
    np.testing.assert_allclose(g[0], 1 / r, rtol=0.05)                  # d/dc E[x] = 1/r
    np.testing.assert_allclose(g[1], -c / r ** 2, rtol=0.05)            # d/dr E[x] = -c/r^2
    g = _mc_grad(tracegrad.distributions.Gamma, lambda x: x * x, [c, r])
    np.testing.assert_allclose(g[0], (2 * c + 1) / r ** 2, rtol=0.08)   # E[x^2] = c(c+1)/r^2


def test_beta_rsample_gradient():
    a, b = np.array([0.5, 2.0, 6.0]), np.array([1.5, 2.0, 0.7])
    g = _mc_grad(tracegrad.distributions.Beta, lambda x: x, [a, b])
    np.testing.assert_allclose(g[0], b / (a + b) ** 2, rtol=0.06)
    np.testing.assert_allclose(g[1], -a / (a + b) ** 2, rtol=0.06)


def test_dirichlet_rsample_gradient():
    c = np.array([0.7, 2.0, 4.0])
    g = _mc_grad(tracegrad.distributions.Dirichlet, lambda x: x[..., :1], [c])[0]   # E[x_0] = c_0 / sum(c)
    s = c.sum()
    np.testing.assert_allclose(g, [(s - c[0]) / s ** 2, -c[0] / s ** 2, -c[0] / s ** 2], rtol=0.06)


def test_rsample_inside_compile_equals_eager():
    def step(c):
        loss = tracegrad.distributions.Gamma(c, 2.0).rsample((8,)).sum()
        loss.backward()
        return loss.detach()
    compiled = tracegrad.compile(step)
    got = []
    for f in (step, compiled, compiled):
        tracegrad.manual_seed(3)
        c = tracegrad.tensor([0.5, 3.0], dtype=tracegrad.float64, requires_grad=True)
        got.append((f(c).item(), c.grad.numpy().copy()))
    for value, grad in got[1:]:
        np.testing.assert_allclose(value, got[0][0], rtol=1e-12)
        np.testing.assert_allclose(grad, got[0][1], rtol=1e-9)
