"""tracegrad.distributions against torch.distributions: log_prob, entropy, moments and KL
values for fixed parameters, gradients of log_prob/entropy/KL w.r.t. the parameters, errors
(class and message), sample shapes and dtypes, and sample statistics over many draws (the
random streams differ from torch's, so draws are compared by distribution, not value)."""
import numpy as np
import pytest

import tracegrad
import tracegrad.distributions as tgd

torch = pytest.importorskip("torch")
import torch.distributions as td  # noqa: E402

LOC = [0.3, -1.0, 2.0]
SCALE = [0.5, 1.5, 2.0]
PROBS = [[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]
LOGITS = [[0.5, -1.0, 2.0], [0.0, 3.0, -2.0]]
BPROBS = [0.1, 0.5, 0.9]


def _params(*values):
    """The same float64 parameters as leaf tensors of each library."""
    return ([torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values],
            [tracegrad.tensor(v, dtype=tracegrad.float64, requires_grad=True) for v in values])


def _close(ours, theirs, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(ours.detach().numpy(), dtype=float),
                               np.asarray(theirs.detach().numpy(), dtype=float), rtol=rtol, atol=atol)


MAKERS = {
    "normal": (lambda lib, p: lib.Normal(*p), (LOC, SCALE), [[0.0, 1.0, -2.5], [1.0, 0.0, 3.0]]),
    "categorical_probs": (lambda lib, p: lib.Categorical(probs=p[0]), (PROBS,), [[0, 2], [1, 1]]),
    "categorical_logits": (lambda lib, p: lib.Categorical(logits=p[0]), (LOGITS,), [[0, 2], [2, 1]]),
    "bernoulli_probs": (lambda lib, p: lib.Bernoulli(probs=p[0]), (BPROBS,), [[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]),
    "bernoulli_logits": (lambda lib, p: lib.Bernoulli(logits=p[0]), ([-3.0, 0.2, 4.0],), [[0.0, 1.0, 1.0]]),
    "uniform": (lambda lib, p: lib.Uniform(*p), ([0.0, -2.0, 1.0], [1.0, 3.0, 1.5]), [[0.5, -1.0, 1.2]]),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_log_prob_entropy_moments_and_grads_match_torch(name):
    make, values, xs = MAKERS[name]
    tp, gp = _params(*values)
    dt, dg = make(td, tp), make(tgd, gp)
    assert tuple(dg.batch_shape) == tuple(dt.batch_shape) and tuple(dg.event_shape) == tuple(dt.event_shape)
    assert repr(dg).replace("tracegrad", "torch") == repr(dt)
    x_dtype = torch.int64 if "categorical" in name else torch.float64
    xt = torch.tensor(xs, dtype=x_dtype)
    xg = tracegrad.tensor(xs, dtype=tracegrad.int64 if "categorical" in name else tracegrad.float64)
    lt, lg = dt.log_prob(xt), dg.log_prob(xg)
    _close(lg, lt)
    et, eg = dt.entropy(), dg.entropy()
    _close(eg, et)
    for attr in ("mean", "variance", "stddev", "mode"):
        _close(getattr(dg, attr), getattr(dt, attr))
    (lt.sum() + et.sum()).backward()
    (lg.sum() + eg.sum()).backward()
    for a, b in zip(gp, tp):
        _close(a.grad, b.grad, rtol=1e-9)


@pytest.mark.parametrize("pair", ["normal", "categorical", "bernoulli", "uniform"])
def test_kl_divergence_matches_torch(pair):
    args = {
        "normal": (lambda lib, a, b: (lib.Normal(a, b), lib.Normal(b, a + 2)), LOC, SCALE),
        "categorical": (lambda lib, a, b: (lib.Categorical(probs=a), lib.Categorical(logits=b)), PROBS, LOGITS),
        "bernoulli": (lambda lib, a, b: (lib.Bernoulli(probs=a), lib.Bernoulli(logits=b)), BPROBS, [0.3, -2.0, 5.0]),
        "uniform": (lambda lib, a, b: (lib.Uniform(a, a + 1), lib.Uniform(b - 3, b + 3)), [0.0, 1.0], [0.5, 4.0]),
    }[pair]
    make, a, b = args
    tp, gp = _params(a, b)
    kt, kg = td.kl_divergence(*make(td, *tp)), tgd.kl_divergence(*make(tgd, *gp))
    _close(kg, kt)
    if bool(torch.isfinite(kt).all()):
        kt.sum().backward()
        kg.sum().backward()
        for x, y in zip(gp, tp):
            _close(x.grad, y.grad, rtol=1e-9)


def test_kl_special_values_and_unregistered_pair():
    p, q = [0.0, 0.5, 0.5], [0.5, 0.5, 0.0]
    for lib, t in ((td, torch), (tgd, tracegrad)):
        kl = lib.kl_divergence(lib.Categorical(probs=t.tensor(p)), lib.Categorical(probs=t.tensor(q)))
        assert float(kl) == float("inf")
        kl = lib.kl_divergence(lib.Categorical(probs=t.tensor(q)), lib.Categorical(probs=t.tensor([0.25, 0.5, 0.25])))
        assert np.isclose(float(kl), 0.5 * np.log(2))
        with pytest.raises(NotImplementedError):
            lib.kl_divergence(lib.Normal(0.0, 1.0), lib.Bernoulli(0.3))


ERRORS = [
    lambda lib, t: lib.Normal(0.0, -1.0),
    lambda lib, t: lib.Normal(t.zeros(2), -t.ones(2)),
    lambda lib, t: lib.Normal(0.0, 1.0).log_prob(t.tensor([float("nan")])),
    lambda lib, t: lib.Bernoulli(t.tensor([0.3, 0.5])).log_prob(t.tensor([0.5, 1.0])),
    lambda lib, t: lib.Bernoulli(1.5),
    lambda lib, t: lib.Bernoulli(),
    lambda lib, t: lib.Categorical(t.tensor([0.3, 0.5])).log_prob(t.tensor(3)),
    lambda lib, t: lib.Categorical(t.tensor([-0.3, 0.5])),
    lambda lib, t: lib.Categorical(t.tensor([0.3, 0.5]), logits=t.tensor([0.3, 0.5])),
    lambda lib, t: lib.Categorical(t.tensor(0.3)),
    lambda lib, t: lib.Uniform(1.0, 0.0),
    lambda lib, t: lib.Uniform(0.0, 1.0).log_prob(t.tensor(2.0)),
    lambda lib, t: lib.Normal(t.zeros(3), 1.0).log_prob(t.zeros(2)),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_validation_errors_as_torch(i):
    # torch.compile (run by earlier tests in this process) turns torch's default validation off
    was = td.Distribution._validate_args
    td.Distribution.set_default_validate_args(True)
    try:
        with pytest.raises(ValueError) as theirs:
            ERRORS[i](td, torch)
    finally:
        td.Distribution.set_default_validate_args(was)
    with pytest.raises(ValueError) as ours:
        ERRORS[i](tgd, tracegrad)
    assert str(ours.value) == str(theirs.value)


def test_validation_can_be_turned_off():
    assert tgd.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    tgd.Distribution.set_default_validate_args(False)
    try:
        tgd.Bernoulli(1.5)
    finally:
        tgd.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        tgd.Bernoulli(1.5)


def test_sample_shapes_dtypes_and_statistics():
    tracegrad.manual_seed(0)
    n = tgd.Normal(tracegrad.tensor([0.0, 3.0]), tracegrad.tensor([1.0, 0.5]))
    s = n.sample((20000,))
    assert s.shape == (20000, 2) and s.dtype is tracegrad.float32 and not s.requires_grad
    np.testing.assert_allclose(s.mean(0).numpy(), [0.0, 3.0], atol=0.03)
    np.testing.assert_allclose(s.std(0).numpy(), [1.0, 0.5], rtol=0.03)
    c = tgd.Categorical(probs=tracegrad.tensor([[0.2, 0.5, 0.3], [0.7, 0.1, 0.2]]))
    cs = c.sample((6000,))
    assert cs.shape == (6000, 2) and cs.dtype is tracegrad.int64 and c.sample().shape == (2,)
    freq = np.stack([np.bincount(cs[:, j].numpy(), minlength=3) / 6000 for j in range(2)])
    np.testing.assert_allclose(freq, [[0.2, 0.5, 0.3], [0.7, 0.1, 0.2]], atol=0.03)
    b = tgd.Bernoulli(logits=tracegrad.tensor([-1.0, 2.0]))
    bs = b.sample((8000,))
    assert bs.shape == (8000, 2) and bs.dtype is tracegrad.float32 and set(np.unique(bs.numpy())) <= {0.0, 1.0}
    np.testing.assert_allclose(bs.mean(0).numpy(), torch.sigmoid(torch.tensor([-1.0, 2.0])).numpy(), atol=0.03)
    u = tgd.Uniform(-1.0, 3.0).sample((10000,))
    assert u.shape == (10000,) and float(u.min()) >= -1 and float(u.max()) < 3
    assert abs(float(u.mean()) - 1.0) < 0.05 and abs(float(u.var()) - 16 / 12) < 0.06
    assert tgd.Normal(0.0, 1.0).sample().shape == () and tgd.Normal(0.0, 1.0).sample((2, 3)).shape == (2, 3)


def test_sampling_is_reproducible_under_manual_seed():
    c = tgd.Categorical(logits=tracegrad.zeros(5))
    tracegrad.manual_seed(7)
    a = (c.sample((10,)).tolist(), tgd.Normal(0.0, 1.0).rsample((3,)).tolist())
    tracegrad.manual_seed(7)
    assert a == (c.sample((10,)).tolist(), tgd.Normal(0.0, 1.0).rsample((3,)).tolist())


def test_rsample_gradients_are_reparameterised():
    loc = tracegrad.tensor([0.5, -1.0], requires_grad=True)
    scale = tracegrad.tensor([2.0, 0.3], requires_grad=True)
    x = tgd.Normal(loc, scale).rsample((50,))
    assert x.requires_grad
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [50.0, 50.0])
    eps = ((x.detach() - loc.detach()) / scale.detach()).sum(0)    # d(loc + eps * scale)/d(scale) = eps
    np.testing.assert_allclose(scale.grad.numpy(), eps.numpy(), rtol=1e-5, atol=1e-5)
    low, high = tracegrad.tensor(1.0, requires_grad=True), tracegrad.tensor(4.0, requires_grad=True)
    u = tgd.Uniform(low, high).rsample((100,))
    u.sum().backward()
    frac = ((u.detach() - 1.0) / 3.0).sum()
    assert np.isclose(float(high.grad), float(frac), rtol=1e-5) and np.isclose(float(low.grad), 100 - float(frac), rtol=1e-5)
    assert not tgd.Categorical(logits=tracegrad.zeros(3)).has_rsample
    with pytest.raises(NotImplementedError):
        tgd.Categorical(logits=tracegrad.zeros(3)).rsample()


def test_reinforce_program_runs_on_both():
    """The policy-gradient idiom: ``m = Categorical(probs); a = m.sample(); -m.log_prob(a) * R``."""
    def program(t, dist):
        t.manual_seed(0)
        w = t.zeros(4, 3, requires_grad=True)
        state = t.ones(2, 4)
        m = dist.Categorical(t.softmax(state @ w, -1))
        a = m.sample()
        loss = (-m.log_prob(a) * t.tensor([1.0, -0.5])).sum() - 0.01 * m.entropy().sum()
        loss.backward()
        return a.shape, w.grad.shape, float(w.grad.abs().sum()) > 0
    assert program(tracegrad, tgd) == program(torch, td)


def test_expand_and_enumerate_support():
    for lib, t in ((td, torch), (tgd, tracegrad)):
        e = lib.Normal(t.tensor([0.0, 1.0]), 1.0).expand((3, 2))
        assert tuple(e.batch_shape) == (3, 2) and tuple(e.sample().shape) == (3, 2)
        c = lib.Categorical(logits=t.zeros(2, 4))
        assert tuple(c.expand((5, 2)).sample().shape) == (5, 2)
        assert c.enumerate_support().tolist() == [[0, 0], [1, 1], [2, 2], [3, 3]]
