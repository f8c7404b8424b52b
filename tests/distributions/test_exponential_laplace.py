"""Exponential and Laplace against torch: log_prob/cdf/icdf/entropy/mean/variance values and
gradients, rsample shape and moments, kl_divergence pairs, validation error classes."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


pytestmark = pytest.mark.usefixtures("torch_validate_args")


PARAMS = {"Exponential": dict(rate=[0.5, 2.0, 3.0]), "Laplace": dict(loc=[0.0, -1.0, 2.0], scale=[0.5, 1.0, 2.0])}
VALUES = {"Exponential": [0.3, 1.0, 0.1], "Laplace": [0.4, -2.0, 2.5]}


def _make(mod, name):
    args = {k: mod.tensor(v, requires_grad=True) for k, v in PARAMS[name].items()}
    return getattr(mod.distributions, name)(**args), args


@pytest.mark.parametrize("name", list(PARAMS))
@pytest.mark.parametrize("what", ["log_prob", "cdf", "entropy", "mean", "variance", "stddev", "mode"])
def test_values_and_grads(name, what):
    out = {}
    for mod in (tracegrad, torch):
        d, args = _make(mod, name)
        v = mod.tensor(VALUES[name])
        r = getattr(d, what)
        r = r(v) if what in ("log_prob", "cdf") else (r() if what == "entropy" else r)
        if what == "mode":
            out[mod.__name__] = (r.detach().numpy(), [])
            continue
        (r * mod.tensor([1.0, 2.0, 3.0])).sum().backward()
        out[mod.__name__] = (r.detach().numpy(), [None if a.grad is None else a.grad.numpy() for a in args.values()])
    (a, ga), (b, gb) = out["tracegrad"], out["torch"]
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for x, y in zip(ga, gb):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(PARAMS))
def test_icdf_and_rsample(name):
    d, args = _make(tracegrad, name)
    td, _ = _make(torch, name)
    q = [0.2, 0.5, 0.9]
    np.testing.assert_allclose(d.icdf(tracegrad.tensor(q)).detach().numpy(),
                               td.icdf(torch.tensor(q)).detach().numpy(), rtol=1e-5, atol=1e-6)
    tracegrad.manual_seed(0)
    s = d.rsample((20000,))
    assert tuple(s.shape) == (20000, 3) and d.has_rsample
    np.testing.assert_allclose(s.mean(0).detach().numpy(), td.mean.detach().numpy(), rtol=0.05, atol=0.05)
    np.testing.assert_allclose(s.var(0).detach().numpy(), td.variance.detach().numpy(), rtol=0.1)
    s.sum().backward()
    assert all(a.grad is not None for a in args.values())


@pytest.mark.parametrize("name,other", [("Exponential", dict(rate=[1.0, 1.0, 0.2])),
                                        ("Laplace", dict(loc=[1.0, 0.0, 0.0], scale=[1.0, 3.0, 0.7]))])
def test_kl(name, other):
    res = []
    for mod in (tracegrad, torch):
        p, args = _make(mod, name)
        q = getattr(mod.distributions, name)(**{k: mod.tensor(v) for k, v in other.items()})
        k = mod.distributions.kl_divergence(p, q)
        k.sum().backward()
        res.append((k.detach().numpy(), [a.grad.numpy() for a in args.values()]))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-5, atol=1e-6)
    for x, y in zip(res[0][1], res[1][1]):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_validation_errors():
    for mod in (tracegrad, torch):
        with pytest.raises(ValueError):
            mod.distributions.Exponential(mod.tensor([-1.0]))
        with pytest.raises(ValueError):
            mod.distributions.Laplace(mod.tensor([0.0]), mod.tensor([0.0]))
        with pytest.raises(ValueError):
            mod.distributions.Exponential(mod.tensor([1.0])).log_prob(mod.tensor([-1.0]))
