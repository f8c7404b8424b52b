"""Independent against torch: shapes, log_prob/entropy values and gradients, rsample, kl,
errors."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

LOC = [[0.0, 1.0, -1.0], [0.5, 0.2, 2.0]]
SCALE = [[1.0, 0.5, 2.0], [0.3, 1.5, 0.7]]


def _make(mod, n, loc=LOC, scale=SCALE):
    lo, sc = mod.tensor(loc, requires_grad=True), mod.tensor(scale, requires_grad=True)
    return mod.distributions.Independent(mod.distributions.Normal(lo, sc), n), (lo, sc)


@pytest.mark.parametrize("n", [0, 1, 2])
def test_log_prob_entropy_shapes_grads(n):
    res = []
    for mod in (tracegrad, torch):
        d, args = _make(mod, n)
        v = mod.tensor([[0.1, 0.2, 0.3], [-1.0, 0.0, 1.0]])
        lp, ent = d.log_prob(v), d.entropy()
        (lp.sum() * 2 + ent.sum()).backward()
        res.append((tuple(d.batch_shape), tuple(d.event_shape), lp.detach().numpy(), ent.detach().numpy(),
                    [a.grad.numpy() for a in args], tuple(d.rsample((4,)).shape), d.has_rsample))
    a, b = res
    assert a[:2] == b[:2] and a[5:] == b[5:]
    for x, y in zip(a[2:4] + tuple(a[4]), b[2:4] + tuple(b[4])):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_kl_and_errors():
    res = []
    for mod in (tracegrad, torch):
        p, args = _make(mod, 1)
        q, _ = _make(mod, 1, loc=[[1.0, 0.0, 0.0]] * 2, scale=[[2.0, 1.0, 1.0]] * 2)
        k = mod.distributions.kl_divergence(p, q)
        k.sum().backward()
        res.append((k.detach().numpy(), [a.grad.numpy() for a in args]))
        with pytest.raises(ValueError):
            _make(mod, 3)
        q2, _ = _make(mod, 2)
        with pytest.raises(NotImplementedError):
            mod.distributions.kl_divergence(p, q2)
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-5)
    for x, y in zip(res[0][1], res[1][1]):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
