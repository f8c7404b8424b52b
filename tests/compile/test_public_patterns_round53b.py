"""Compile patterns of the second set of round-53 public programs
(tests/api/test_public_programs_round53b.py, sources in tests/public_programs_round53b_src.py):
each repository's training step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile``
over 3 calls on the same initial state:

- zhykoties/TimeSeries (DeepAR): ``train.py``'s step with ``Net`` and ``loss_fn`` (the LSTM
  stepped per time step, the boolean-masked ``Normal`` log-likelihood, ``loss.item()`` at the end).
- hmf17/snn_starter: the ``ActFun`` autograd Function's spiking MLP step (SGD with momentum).
- rory-bedford/connectome-snns: ``SurrGradSpike`` (masked assignment in a Function's forward,
  ``ctx.scale``) in a leaky integrate-and-fire step (Adam).
Graph breaks are asserted as found (empty list: one trace).
"""
import types

import numpy as np
import pytest

import tracegrad
from public_programs_round53b_src import DEEPAR, SNN_STARTER, SURR_GRAD, program

torch = pytest.importorskip("torch")


def _init(T, module, seed, scale=0.3):
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for _, p in module.named_parameters():
            p.copy_(T.tensor(rs.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
    return module


def _arr(*ts):
    return [np.array(t.detach().numpy(), copy=True) for t in ts]


def _close(a, b, tol):
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        np.testing.assert_allclose(y, x, rtol=tol, atol=tol, err_msg=f"output {i}")


def _check(runner, ref_tol=2e-5, comp_tol=1e-5):
    ref, eager, comp = runner(torch, False), runner(tracegrad, False), runner(tracegrad, True)
    _close(ref[0], eager[0], ref_tol)
    _close(eager[0], comp[0], comp_tol)
    return comp[1].stats


def _deepar_runs(T, compiled):
    params = types.SimpleNamespace(num_class=3, embedding_dim=4, cov_dim=2, lstm_hidden_dim=5,
                                   lstm_layers=2, lstm_dropout=0.0, train_window=4,
                                   device=T.device("cpu"))
    P = program(T, DEEPAR)
    model = _init(T, P.Net(params), 3)
    opt = T.optim.Adam(model.parameters(), lr=1e-2)

    def step(tb, idx, labels):
        return P.train_step(model, opt, P.loss_fn, tb, idx, labels, params)

    if compiled:
        step = T.compile(step)
    out = []
    for i in range(3):
        rs = np.random.RandomState(20 + i)
        tb = rs.uniform(0.5, 2, (3, 4, 3)).astype(np.float32)
        labels = np.concatenate([tb[:, 1:, 0], rs.uniform(0.5, 2, (3, 1))], 1).astype(np.float32)
        tb[0, 2, 0] = tb[2, 1, 0] = 0.
        labels[0, 1] = labels[2, 0] = 0.
        out.append(np.array(step(T.tensor(tb), T.tensor(rs.randint(0, 3, 3)), T.tensor(labels))))
    out += _arr(*[t for _, t in sorted(model.state_dict().items())])
    return out, step


def test_deepar_train_step_compiled():
    st = _check(_deepar_runs)
    # loss_fn's mu[labels != 0] has a data-dependent shape: the step runs eagerly (as torch's
    # own compile breaks there without dynamic output shapes), with eager's values
    assert st["traces"] == 0 and st["eager_calls"] == 3, st
    assert [b[0].split(" ")[0] for b in st["graph_breaks"]] == ["nonzero()"], st


def _deepar_window_runs(T, compiled):
    # Net's forward over the window and the Normal log-likelihood without the boolean mask
    # (every label observed) and with validate_args=False (the value checks are a graph break,
    # as tracegrad.compile says), so the whole step is one program
    params = types.SimpleNamespace(num_class=3, embedding_dim=4, cov_dim=2, lstm_hidden_dim=5,
                                   lstm_layers=2, lstm_dropout=0.0, train_window=4,
                                   device=T.device("cpu"))
    P = program(T, DEEPAR)
    model = _init(T, P.Net(params), 3)
    opt = T.optim.Adam(model.parameters(), lr=1e-2)

    def step(tb, idx, labels):
        opt.zero_grad()
        tb, labels, idx = tb.permute(1, 0, 2), labels.permute(1, 0), idx.unsqueeze(0)
        loss = T.zeros(1)
        hidden, cell = model.init_hidden(tb.shape[1]), model.init_cell(tb.shape[1])
        for t in range(params.train_window):
            mu, sigma, hidden, cell = model(tb[t].unsqueeze_(0).clone(), idx, hidden, cell)
            loss += -T.distributions.normal.Normal(mu, sigma, validate_args=False).log_prob(
                labels[t]).mean()
        loss.backward()
        opt.step()
        return loss, mu, sigma

    if compiled:
        step = T.compile(step)
    out = []
    for i in range(3):
        rs = np.random.RandomState(20 + i)
        tb = rs.uniform(0.5, 2, (3, 4, 3)).astype(np.float32)
        labels = np.concatenate([tb[:, 1:, 0], rs.uniform(0.5, 2, (3, 1))], 1).astype(np.float32)
        out += _arr(*step(T.tensor(tb), T.tensor(rs.randint(0, 3, 3)), T.tensor(labels)))
    out += _arr(*[t for _, t in sorted(model.state_dict().items())])
    return out, step


def test_deepar_window_step_compiled():
    st = _check(_deepar_window_runs)
    assert st["traces"] == 1 and not st["graph_breaks"], st


def _snn_runs(T, compiled):
    P = program(T, SNN_STARTER)
    fc1, fc2 = _init(T, T.nn.Linear(6, 8), 1, 0.6), _init(T, T.nn.Linear(8, 3), 2, 1.0)
    params = list(fc1.parameters()) + list(fc2.parameters())
    opt = T.optim.SGD(params, lr=0.1, momentum=0.9)

    def step(x, noise, target):
        m1 = s1 = T.zeros(4, 8)
        m2 = s2 = T.zeros(4, 3)
        sumspike = T.zeros(4, 3)
        for t in range(noise.shape[0]):
            m1, s1 = P.mem_update(fc1, (x > noise[t]).float(), m1, s1)
            m2, s2 = P.mem_update(fc2, s1, m2, s2)
            sumspike = sumspike + s2
        loss = T.nn.functional.mse_loss(sumspike / 5 + m2, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss, sumspike

    if compiled:
        step = T.compile(step)
    out = []
    for i in range(3):
        rs = np.random.RandomState(5 + i)
        x = T.tensor(rs.uniform(0, 1, (4, 6)).astype(np.float32))
        noise = T.tensor(rs.uniform(0, 1, (5, 4, 6)).astype(np.float32))
        y = T.nn.functional.one_hot(T.tensor(rs.randint(0, 3, 4)), 3).float()
        out += _arr(*step(x, noise, y))
    return out + _arr(*params), step


def test_snn_starter_step_compiled():
    st = _check(_snn_runs, ref_tol=1e-5, comp_tol=1e-5)
    assert st["traces"] == 1 and not st["graph_breaks"], st


def _surr_runs(T, compiled):
    P = program(T, SURR_GRAD)
    w_in = T.nn.Parameter(T.tensor(np.random.RandomState(1).normal(0, .8, (5, 7)).astype(np.float32)))
    w_rec = T.nn.Parameter(T.tensor(np.random.RandomState(2).normal(0, .3, (7, 7)).astype(np.float32)))
    readout = _init(T, T.nn.Linear(7, 2), 3, 0.5)
    opt = T.optim.Adam([w_in, w_rec] + list(readout.parameters()), lr=5e-3)

    def step(x, y):
        v = T.zeros(3, 7)
        s = T.zeros(3, 7)
        rec = []
        for t in range(x.shape[0]):
            v = 0.8 * v * (1 - s) + x[t] @ w_in + s @ w_rec
            s = P.SurrGradSpike.apply(v - 1.0, 10.0)
            rec.append(s)
        spikes = T.stack(rec)
        loss = T.nn.functional.cross_entropy(readout(spikes.mean(0)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss, spikes

    if compiled:
        step = T.compile(step)
    out = []
    for i in range(3):
        rs = np.random.RandomState(30 + i)
        x = T.tensor(rs.uniform(0, 1, (6, 3, 5)).astype(np.float32))
        out += _arr(*step(x, T.tensor(rs.randint(0, 2, 3))))
    return out + _arr(w_in, w_rec, readout.weight), step


def test_connectome_surrogate_spike_step_compiled():
    st = _check(_surr_runs, ref_tol=1e-5, comp_tol=1e-5)
    assert st["traces"] == 1 and not st["graph_breaks"], st
