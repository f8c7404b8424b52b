"""The hook-based nn.utils.weight_norm / spectral_norm (and their remove_*) against torch:
state_dict keys, values, gradients, power iteration in training mode only, error classes."""
import numpy as np
import pytest

import tracegrad
import tracegrad.nn as nn

torch = pytest.importorskip("torch")


def _pair(seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    m, tm = nn.Linear(3, 4), torch.nn.Linear(3, 4)
    with tracegrad.no_grad():
        m.weight.copy_(tracegrad.tensor(w)); m.bias.copy_(tracegrad.tensor(b))
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(w)); tm.bias.copy_(torch.tensor(b))
    return m, tm


X = np.arange(6, dtype=np.float32).reshape(2, 3) / 5


def _check_same(m, tm, names):
    y, ty = m(tracegrad.tensor(X)), tm(torch.tensor(X))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    (y * y).sum().backward(); (ty * ty).sum().backward()
    for n in names:
        np.testing.assert_allclose(getattr(m, n).grad.numpy(), getattr(tm, n).grad.numpy(), rtol=1e-4, atol=1e-5)
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(m.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_hook(dim):
    m, tm = _pair()
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(m, dim=dim)
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(tm, dim=dim)
    assert list(m.state_dict()) == list(tm.state_dict())
    _check_same(m, tm, ["weight_g", "weight_v"])
    with pytest.raises(RuntimeError), pytest.warns(FutureWarning):
        nn.utils.weight_norm(m, dim=dim)
    with pytest.raises(RuntimeError), pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(tm, dim=dim)
    nn.utils.remove_weight_norm(m); torch.nn.utils.remove_weight_norm(tm)
    assert list(m.state_dict()) == list(tm.state_dict()) and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), rtol=1e-5)
    with pytest.raises(ValueError):
        nn.utils.remove_weight_norm(m)
    with pytest.raises(ValueError):
        torch.nn.utils.remove_weight_norm(tm)


@pytest.mark.parametrize("train", [True, False])
def test_spectral_norm_hook(train):
    m, tm = _pair(1)
    nn.utils.spectral_norm(m); torch.nn.utils.spectral_norm(tm)
    assert list(m.state_dict()) == list(tm.state_dict())
    with torch.no_grad():   # an unconverged u/v, so a missing or misordered power iteration fails
        tm.weight_u.copy_(torch.tensor([1.0, 0.0, 0.0, 0.0])); tm.weight_v.copy_(torch.tensor([0.0, 0.6, 0.8]))
    m.load_state_dict({k: tracegrad.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    m.train(train); tm.train(train)
    _check_same(m, tm, ["weight_orig"])
    with pytest.raises(RuntimeError):
        nn.utils.spectral_norm(m)
    nn.utils.remove_spectral_norm(m); torch.nn.utils.remove_spectral_norm(tm)
    assert list(m.state_dict()) == list(tm.state_dict())
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), rtol=1e-5)
    with pytest.raises(ValueError):
        nn.utils.remove_spectral_norm(m)
    with pytest.raises(ValueError):
        torch.nn.utils.remove_spectral_norm(tm)


def test_spectral_norm_hook_seeded():
    a, _ = _pair(2)
    b, _ = _pair(2)
    tracegrad.manual_seed(3); nn.utils.spectral_norm(a)
    tracegrad.manual_seed(3); nn.utils.spectral_norm(b)
    np.testing.assert_array_equal(a.weight_u.numpy(), b.weight_u.numpy())
    np.testing.assert_array_equal(a.weight_v.numpy(), b.weight_v.numpy())


def test_spectral_norm_loads_the_format_before_0_4_1():
    # a dict with ``weight`` and no ``weight_v`` (no version metadata): torch drops ``weight`` and
    # solves ``weight_v`` from it; the loaded module computes what torch's does
    m, tm = _pair(3)
    nn.utils.spectral_norm(m); torch.nn.utils.spectral_norm(tm)
    tm.train()
    tm(torch.ones(2, 3))     # one power iteration: u, v and the stored weight agree
    old = {k: v.clone() for k, v in tm.state_dict().items() if k != "weight_v"}
    old["weight"] = tm.weight.detach().clone()
    tref = torch.nn.utils.spectral_norm(torch.nn.utils.remove_spectral_norm(tm))
    tref.load_state_dict(old)
    m.load_state_dict({k: tracegrad.tensor(v.numpy()) for k, v in old.items()})
    np.testing.assert_allclose(m.weight_v.numpy(), tref.weight_v.numpy(), rtol=1e-4, atol=1e-5)
    x = np.ones((2, 3), np.float32)
    for train in (False, True):
        m.train(train); tref.train(train)
        with torch.no_grad(), tracegrad.no_grad():
            np.testing.assert_allclose(m(tracegrad.tensor(x)).numpy(), tref(torch.tensor(x)).numpy(),
                                       rtol=1e-4, atol=1e-5)
    # one of weight_orig / weight / weight_u missing: nothing converted, reported when strict
    part = {k: tracegrad.tensor(v.numpy()) for k, v in old.items() if k != "weight_u"}
    tpart = {k: v for k, v in old.items() if k != "weight_u"}
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(part)
    with pytest.raises(RuntimeError) as te:
        tref.load_state_dict(tpart)
    assert ("weight_u" in str(e.value)) == ("weight_u" in str(te.value))
    assert m.load_state_dict(part, strict=False).unexpected_keys == \
        tref.load_state_dict(tpart, strict=False).unexpected_keys
