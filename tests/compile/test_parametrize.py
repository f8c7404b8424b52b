"""Parametrized modules in a compiled training step: ``parametrizations.weight_norm`` /
``spectral_norm``, a user parametrization, and the older hook-based ``weight_norm`` /
``spectral_norm`` (a forward pre-hook that recomputes ``module.weight``, and for spectral norm
writes its ``u``/``v`` buffers by power iteration in training mode). Compiled equals eager on
every call: losses, parameters and buffers (state_dict), the recomputed weight, eval outputs;
no graph break."""
import warnings

import numpy as np
import pytest

import tracegrad

from ._harness import np_init

KINDS = ["weight_norm", "spectral_norm", "user", "hook_weight_norm", "hook_spectral_norm"]


def _model(mod, kind):
    mod.manual_seed(0)
    m = np_init(mod.nn.Sequential(mod.nn.Linear(4, 5), mod.nn.Tanh(), mod.nn.Linear(5, 5)), mod)
    P, U = mod.nn.utils.parametrizations, mod.nn.utils
    if kind == "weight_norm":
        P.weight_norm(m[0])
    elif kind == "spectral_norm":
        P.spectral_norm(m[0])
    elif kind == "hook_spectral_norm":
        U.spectral_norm(m[0])
    elif kind == "hook_weight_norm":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            U.weight_norm(m[0])
    else:
        class Symmetric(mod.nn.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).transpose(-1, -2)
        mod.nn.utils.parametrize.register_parametrization(m[2], "weight", Symmetric())
    return m


def _run(kind, compiled):
    m = _model(tracegrad, kind)
    opt = tracegrad.optim.Adam(m.parameters(), lr=0.05)

    def step(x):
        opt.zero_grad()
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    f = tracegrad.compile(step) if compiled else step
    losses, weights = [], []
    for i in range(5):
        if i == 3:
            m.eval()            # no power iteration, another program
        x = tracegrad.tensor(np.random.RandomState(i).randn(6, 4).astype("float32"))
        losses.append(float(f(x)))
        weights.append(m[0].weight.detach().numpy().copy())
    sd = {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
    return losses, weights, sd, f


@pytest.mark.parametrize("kind", KINDS)
def test_parametrized_module_in_a_compiled_step_equals_eager(kind):
    e_loss, e_w, e_sd, _ = _run(kind, False)
    c_loss, c_w, c_sd, f = _run(kind, True)
    assert f.stats["graph_breaks"] == [] and f.stats["eager_calls"] == 1, f.stats
    np.testing.assert_allclose(c_loss, e_loss, rtol=1e-5, atol=1e-6)
    for a, b in zip(c_w, e_w):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert c_sd.keys() == e_sd.keys()
    for k in e_sd:
        np.testing.assert_allclose(c_sd[k], e_sd[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_weight_norm_step_matches_torch():
    torch = pytest.importorskip("torch")
    c_loss, _, c_sd, _ = _run("weight_norm", True)
    m = _model(torch, "weight_norm")
    opt = torch.optim.Adam(m.parameters(), lr=0.05)
    t_loss = []
    for i in range(5):
        if i == 3:
            m.eval()
        x = torch.tensor(np.random.RandomState(i).randn(6, 4).astype("float32"))
        opt.zero_grad()
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        t_loss.append(float(loss))
    np.testing.assert_allclose(c_loss, t_loss, rtol=1e-5, atol=1e-6)
    for k, v in m.state_dict().items():
        np.testing.assert_allclose(c_sd[k], v.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
