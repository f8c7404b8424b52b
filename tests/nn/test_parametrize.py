"""nn.utils.parametrize / parametrizations.weight_norm against torch: values, gradients,
state_dict keys, removal and error classes."""
import numpy as np
import pytest

import tracegrad
import tracegrad.nn as nn
from tracegrad.nn.utils import parametrize, parametrizations

torch = pytest.importorskip("torch")


class Sym(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(0, 1)


class TSym(torch.nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(0, 1)


class Scale(nn.Module):
    def forward(self, x):
        return x * 2.0

    def right_inverse(self, x):
        return x / 2.0


class TScale(torch.nn.Module):
    def forward(self, x):
        return x * 2.0

    def right_inverse(self, x):
        return x / 2.0


def _pair(seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((3, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    m, tm = nn.Linear(3, 3), torch.nn.Linear(3, 3)
    with tracegrad.no_grad():
        m.weight.copy_(tracegrad.tensor(w)); m.bias.copy_(tracegrad.tensor(b))
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(w)); tm.bias.copy_(torch.tensor(b))
    return m, tm


def test_register_values_grads_state_dict_and_remove():
    m, tm = _pair()
    parametrize.register_parametrization(m, "weight", Sym())
    parametrize.register_parametrization(m, "weight", Scale())
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", TSym())
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", TScale())
    assert type(m).__name__ == type(tm).__name__ == "ParametrizedLinear"
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    assert list(m.state_dict()) == list(tm.state_dict())
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), rtol=1e-6)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    m(tracegrad.tensor(x)).sum().backward(); tm(torch.tensor(x)).sum().backward()
    og, tog = m.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad
    np.testing.assert_allclose(og.numpy(), tog.numpy(), rtol=1e-5)
    # setter goes through right_inverse; Sym has none: torch raises RuntimeError
    v = np.eye(3, dtype=np.float32)
    with pytest.raises(RuntimeError):
        m.weight = tracegrad.tensor(v)
    with pytest.raises(RuntimeError):
        tm.weight = torch.tensor(v)
    parametrize.register_parametrization(m, "bias", Scale())
    torch.nn.utils.parametrize.register_parametrization(tm, "bias", TScale())
    m.bias = tracegrad.tensor(v[0]); tm.bias = torch.tensor(v[0])
    np.testing.assert_allclose(m.parametrizations.bias.original.detach().numpy(),
                               tm.parametrizations.bias.original.detach().numpy())
    assert list(m.state_dict()) == list(tm.state_dict())
    parametrize.remove_parametrizations(m, "bias", leave_parametrized=False)
    torch.nn.utils.parametrize.remove_parametrizations(tm, "bias", leave_parametrized=False)
    np.testing.assert_allclose(m.bias.detach().numpy(), tm.bias.detach().numpy())
    with parametrize.cached():
        assert m.weight is m.weight
    assert m.weight is not m.weight
    parametrize.remove_parametrizations(m, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    assert list(m.state_dict()) == list(tm.state_dict())
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy())


def test_errors_match_torch():
    m, tm = _pair()
    for mod, p, bad in ((parametrize, m, Sym), (torch.nn.utils.parametrize, tm, TSym)):
        with pytest.raises(ValueError):
            mod.register_parametrization(p, "nothing", bad())
        with pytest.raises(ValueError):
            mod.remove_parametrizations(p, "weight")


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization(dim):
    m, tm = _pair(1)
    parametrizations.weight_norm(m, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(tm, dim=dim)
    assert list(m.state_dict()) == list(tm.state_dict())
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(m.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y, ty = m(tracegrad.tensor(x)), tm(torch.tensor(x))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    (y * y).sum().backward(); (ty * ty).sum().backward()
    for i in range(2):
        a = getattr(m.parametrizations.weight, f"original{i}").grad.numpy()
        b = getattr(tm.parametrizations.weight, f"original{i}").grad.numpy()
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError):
        parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    parametrize.remove_parametrizations(m, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
    np.testing.assert_allclose(m.weight.detach().numpy(), tm.weight.detach().numpy(), rtol=1e-5)


def _copy_sd(m, tm):
    sd = {k: tracegrad.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()}
    m.load_state_dict(sd)


@pytest.mark.parametrize("train", [True, False])
def test_spectral_norm_parametrization(train):
    m, tm = _pair(2)
    tracegrad.manual_seed(0)
    parametrizations.spectral_norm(m)
    torch.nn.utils.parametrizations.spectral_norm(tm)
    assert list(m.state_dict()) == list(tm.state_dict())
    with torch.no_grad():   # an unconverged u/v, so one power iteration changes the result
        tm.parametrizations.weight[0]._u.copy_(torch.tensor([1.0, 0.0, 0.0]))
        tm.parametrizations.weight[0]._v.copy_(torch.tensor([0.0, 0.6, 0.8]))
    _copy_sd(m, tm)   # torch's random u/v differ: copy them across
    m.train(train); tm.train(train)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y, ty = m(tracegrad.tensor(x)), tm(torch.tensor(x))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    (y * y).sum().backward(); (ty * ty).sum().backward()
    np.testing.assert_allclose(m.parametrizations.weight.original.grad.numpy(),
                               tm.parametrizations.weight.original.grad.numpy(), rtol=1e-4, atol=1e-5)
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(m.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("train", [True, False])
def test_spectral_norm_complex_weight(train):
    # complex weights: the power iteration uses W^H and sigma = u^H W v (torch's vdot), so the
    # normalized weight keeps W's phase (a plain transpose/product rotated it)
    w = np.array([[0.5 + 0.2j, -0.1j], [0.3, -0.4 + 0.1j]], np.complex64)
    u, v = np.array([1.0, 0.5j], np.complex64), np.array([0.6, 0.8j], np.complex64)
    outs = []
    for lib in (tracegrad, torch):
        m = lib.nn.Linear(2, 2, bias=False, dtype=lib.complex64)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
        lib.nn.utils.parametrizations.spectral_norm(m)
        sn = m.parametrizations.weight[0]
        with lib.no_grad():   # an unconverged u/v, the same for both, so each iteration shows
            sn._u.copy_(lib.tensor(u))
            sn._v.copy_(lib.tensor(v))
        m.train(train)
        y = m(lib.tensor(np.array([[1.0, 2.0j]], np.complex64)))
        (y.abs() ** 2).sum().backward()
        outs.append([t.detach().numpy() for t in (y, m.parametrizations.weight.original.grad, sn._u, sn._v)])
    for ours, theirs in zip(*outs):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_spectral_norm_seeded_and_errors():
    a, _ = _pair(3)
    b, _ = _pair(3)
    tracegrad.manual_seed(5); parametrizations.spectral_norm(a)
    tracegrad.manual_seed(5); parametrizations.spectral_norm(b)
    np.testing.assert_array_equal(a.parametrizations.weight[0]._u.numpy(), b.parametrizations.weight[0]._u.numpy())
    for mod, lin in ((parametrizations, nn.Linear(2, 2)), (torch.nn.utils.parametrizations, torch.nn.Linear(2, 2))):
        with pytest.raises(ValueError):
            mod.spectral_norm(lin, n_power_iterations=0)
        with pytest.raises(IndexError):
            mod.spectral_norm(lin, dim=3)


def test_pickle_raises_deepcopy_works():
    import copy
    import pickle
    for mod, P in ((nn, parametrizations), (torch.nn, torch.nn.utils.parametrizations)):
        m = P.weight_norm(mod.Linear(3, 2))
        with pytest.raises(RuntimeError):
            pickle.dumps(m)
        c = copy.deepcopy(m)
        assert type(c) is type(m) and list(c.state_dict()) == list(m.state_dict())


def _orthogonal_run(m, shape, orthogonal_map, triv, seed=0):
    rng = np.random.default_rng(seed)
    lin = m.nn.Linear(shape[1], shape[0]).double()
    with m.no_grad():
        lin.weight.copy_(m.tensor(rng.standard_normal(shape)))
        lin.bias.zero_()   # the libraries' random inits differ
    m.nn.utils.parametrizations.orthogonal(lin, orthogonal_map=orthogonal_map, use_trivialization=triv)
    (lin(m.tensor(rng.standard_normal((2, shape[1])))) ** 2).sum().backward()
    grad = lin.parametrizations.weight.original.grad
    return lin, lin.weight.detach().numpy(), grad.numpy(), sorted(lin.state_dict())


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("orthogonal_map", [None, "matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("triv", [True, False])
def test_orthogonal_as_torch(shape, orthogonal_map, triv):
    # the weight is the Q of its QR (deterministic given the weight); the gradient too, except
    # that a non-square base is completed with random columns (torch's randn): checked as a property
    (_, qt, gt, kt), (_, qg, gg, kg) = (_orthogonal_run(m, shape, orthogonal_map, triv) for m in (torch, tracegrad))
    np.testing.assert_allclose(qg, qt, atol=1e-12)
    gram = qg.T @ qg if shape[0] >= shape[1] else qg @ qg.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-12)
    assert kg == kt
    if shape[0] == shape[1] or not triv:
        np.testing.assert_allclose(gg, gt, atol=1e-10)


def test_orthogonal_assignment_and_errors_as_torch():
    def program(m):
        out = []
        for triv, omap in ((True, "matrix_exp"), (False, "householder"), (False, "cayley")):
            lin, *_ = _orthogonal_run(m, (3, 3), omap, triv, seed=1)
            target = m.linalg.qr(m.tensor(np.random.default_rng(2).standard_normal((3, 3))))[0]
            try:
                with m.no_grad():
                    lin.weight = target
                out.append(np.abs(lin.weight.detach().numpy() - target.numpy()).max() < 1e-12)
            except NotImplementedError:
                out.append("NotImplementedError")
        for bad in (lambda: m.nn.utils.parametrizations.orthogonal(m.nn.Linear(2, 2), "bias"),
                    lambda: m.nn.utils.parametrizations.orthogonal(m.nn.Linear(2, 2), orthogonal_map="qr"),
                    lambda: m.nn.utils.parametrizations.orthogonal(m.nn.Linear(2, 2), "nope")):
            with pytest.raises(ValueError):
                bad()
            out.append("ValueError")
        a, tau = m.geqrf(m.tensor(np.random.default_rng(3).standard_normal((2, 4, 3))))
        out.append(np.round(np.concatenate([a.numpy().ravel(), tau.numpy().ravel()]), 10).tolist())
        return out
    assert program(tracegrad) == program(torch)
