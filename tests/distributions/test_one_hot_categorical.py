"""OneHotCategorical against torch: shapes, log_prob/entropy values and gradients, mean/mode/
variance, sample shape and frequencies, enumerate_support, kl, validation errors."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

LOGITS = [[0.1, 1.0, -0.5], [2.0, 0.0, 0.3]]


pytestmark = pytest.mark.usefixtures("torch_validate_args")


def _make(mod, logits=LOGITS):
    lg = mod.tensor(logits, requires_grad=True)
    return mod.distributions.OneHotCategorical(logits=lg), lg


def test_values_grads_shapes():
    res = []
    for mod in (tracegrad, torch):
        d, lg = _make(mod)
        v = mod.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
        lp, ent = d.log_prob(v), d.entropy()
        (lp.sum() * 2 + ent.sum() + d.variance.sum()).backward()
        res.append(dict(shapes=(tuple(d.batch_shape), tuple(d.event_shape), tuple(d.sample((4,)).shape),
                                tuple(d.enumerate_support().shape)),
                        vals=[lp.detach().numpy(), ent.detach().numpy(), d.mean.detach().numpy(),
                              d.mode.detach().numpy(), d.variance.detach().numpy(), lg.grad.numpy(),
                              d.enumerate_support().numpy()]))
    assert res[0]["shapes"] == res[1]["shapes"]
    for x, y in zip(res[0]["vals"], res[1]["vals"]):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_sample_frequencies_and_kl():
    d, _ = _make(tracegrad)
    tracegrad.manual_seed(0)
    s = d.sample((4000,))
    assert set(np.unique(s.numpy())) <= {0.0, 1.0} and np.all(s.numpy().sum(-1) == 1)
    np.testing.assert_allclose(s.mean(0).numpy(), d.probs.detach().numpy(), atol=0.04)
    res = []
    for mod in (tracegrad, torch):
        p, lg = _make(mod)
        q, _ = _make(mod, [[0.0, 0.0, 0.0], [1.0, -1.0, 0.5]])
        k = mod.distributions.kl_divergence(p, q)
        k.sum().backward()
        res.append((k.detach().numpy(), lg.grad.numpy()))
    for x, y in zip(*res):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_errors():
    for mod in (tracegrad, torch):
        d, _ = _make(mod)
        with pytest.raises(ValueError):
            d.log_prob(mod.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]))
        with pytest.raises(ValueError):
            mod.distributions.OneHotCategorical()
