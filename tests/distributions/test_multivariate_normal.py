"""MultivariateNormal against torch: log_prob/entropy values and gradients for each matrix
argument, moments, rsample shape and moments, validation errors."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

LOC = [[0.0, 1.0], [0.5, -1.0]]
COV = [[2.0, 0.5], [0.5, 1.0]]


pytestmark = pytest.mark.usefixtures("torch_validate_args")


def _mat(mod, kind):
    c = np.array(COV, dtype=np.float32)
    m = {"covariance_matrix": c, "precision_matrix": np.linalg.inv(c),
         "scale_tril": np.linalg.cholesky(c)}[kind]
    return mod.tensor(m.astype(np.float32), requires_grad=True)


@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_log_prob_entropy_grads(kind):
    res = []
    for mod in (tracegrad, torch):
        loc, mat = mod.tensor(LOC, requires_grad=True), _mat(mod, kind)
        d = mod.distributions.MultivariateNormal(loc, **{kind: mat})
        v = mod.tensor([[0.3, 0.2], [-1.0, 2.0]])
        lp, ent = d.log_prob(v), d.entropy()
        (lp.sum() + ent.sum() * 2).backward()
        res.append([tuple(d.batch_shape), tuple(d.event_shape), tuple(d.rsample((3,)).shape)] +
                   [x.detach().numpy() for x in (lp, ent, d.mean, d.variance, d.covariance_matrix, d.scale_tril,
                                                 loc.grad, mat.grad)])
    assert res[0][:3] == res[1][:3]
    for x, y in zip(res[0][3:], res[1][3:]):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)


def test_rsample_moments():
    loc, cov = tracegrad.tensor([1.0, -1.0]), tracegrad.tensor(COV)
    d = tracegrad.distributions.MultivariateNormal(loc, cov)
    tracegrad.manual_seed(0)
    s = d.rsample((20000,)).numpy()
    np.testing.assert_allclose(s.mean(0), [1.0, -1.0], atol=0.05)
    np.testing.assert_allclose(np.cov(s.T), COV, atol=0.08)


def test_errors():
    for mod in (tracegrad, torch):
        with pytest.raises(ValueError):
            mod.distributions.MultivariateNormal(mod.zeros(2))
        with pytest.raises(ValueError):
            mod.distributions.MultivariateNormal(mod.zeros(2), mod.eye(2), scale_tril=mod.eye(2))
        with pytest.raises(ValueError):
            mod.distributions.MultivariateNormal(mod.zeros(2), mod.tensor([[1.0, 2.0], [2.0, 1.0]]))
        with pytest.raises(ValueError):
            mod.distributions.MultivariateNormal(mod.zeros(2), scale_tril=mod.tensor([[1.0, 1.0], [0.0, 1.0]]))
