"""Round 53, second set, of public programs run unchanged on tracegrad and on torch (the oracle).
Sources are in tests/public_programs_round53b_src.py, executed with ``torch`` bound to either
module (the first set is tests/api/test_public_programs_round53.py):

- zhykoties/TimeSeries (DeepAR), ``model/net.py`` (``Net``, ``loss_fn``) and ``train.py``'s
  per-batch training step: the LSTM forget-gate biases set through ``lstm._all_weights`` and
  ``bias.data[start:end].fill_``, ``Embedding`` + ``cat`` + a 2-layer LSTM stepped one time step
  at a time with its ``(hidden, cell)``, ``permute(1, 2, 0).contiguous().view``, ``Softplus``
  sigma, a ``Normal`` log-likelihood over the entries picked by a boolean mask, missing inputs
  (zeros) replaced in place by the last ``mu`` through a boolean mask (``train_batch[t,
  zero_index, 0] = mu[zero_index]``), ``unsqueeze_`` on a view of the batch, ``loss += ...`` into
  ``torch.zeros(1)``, Adam.
- hmf17/snn_starter, ``SpikingModel.py``: a spiking MLP's ``mem_update`` through the
  ``ActFun`` autograd Function (threshold forward, rectangular surrogate gradient with the
  built-in ``abs`` of a tensor), unrolled over time steps; SGD with momentum.
- rory-bedford/connectome-snns, ``src/optimisation/surrogate_gradients.py``: ``SurrGradSpike``
  (``out[input > 0] = 1.0`` in the forward, a non-tensor ``scale`` kept on ``ctx``, ``None``
  returned as its gradient) driving a leaky integrate-and-fire recurrence; Adam.
Changes, the same on both sides: tiny sizes, parameters overwritten from seeded NumPy streams,
synthetic data, the LSTM dropout 0 (two libraries' random streams differ), snn_starter's
``torch.autograd.function`` base (a module; torch itself raises TypeError) read as the class
``torch.autograd.Function``; the spiking-network harnesses around the repos' Functions are ours.
Found: no differences (values, gradients, parameters after 3 steps agree with torch); no
tracegrad fixes. Compile counterparts: tests/compile/test_public_patterns_round53b.py.
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


def _state(net):
    return _arr(*[t for _, t in sorted(net.state_dict().items())])


def _grads(net):
    return [np.array(p.grad is None) if p.grad is None else _arr(p.grad)[0]
            for _, p in sorted(net.named_parameters())]


def _compare(run, tol=1e-5):
    ref, got = run(torch), run(tracegrad)
    assert len(ref) == len(got)
    for i, (a, b) in enumerate(zip(ref, got)):
        np.testing.assert_allclose(b, a, rtol=tol, atol=tol, err_msg=f"output {i}")


def _params(T):
    return types.SimpleNamespace(num_class=3, embedding_dim=4, cov_dim=2, lstm_hidden_dim=5,
                                 lstm_layers=2, lstm_dropout=0.0, train_window=4,
                                 device=T.device("cpu"))


def _deepar_batch(T, seed, zeros):
    rs = np.random.RandomState(seed)
    tb = rs.uniform(0.5, 2, (3, 4, 3)).astype(np.float32)   # [batch, window, 1 + cov_dim]
    labels = np.concatenate([tb[:, 1:, 0], rs.uniform(0.5, 2, (3, 1))], 1).astype(np.float32)
    if zeros:   # missing observations: zeros in z_{t-1} and in the labels
        tb[0, 2, 0] = tb[2, 1, 0] = 0.
        labels[0, 1] = labels[2, 0] = 0.
    return T.tensor(tb), T.tensor(rs.randint(0, 3, 3)), T.tensor(labels)


def _deepar_run(T, zeros):
    params = _params(T)
    P = program(T, DEEPAR)
    model = P.Net(params)
    forget = [np.array(getattr(model.lstm, n).detach().numpy()[5:10]) for n in
              ("bias_ih_l0", "bias_hh_l1")]
    _init(T, model, 3)
    opt = T.optim.Adam(model.parameters(), lr=1e-2)
    out = forget
    for step in range(3):
        tb, idx, labels = _deepar_batch(T, 20 + step, zeros)
        out.append(np.array(P.train_step(model, opt, P.loss_fn, tb, idx, labels, params)))
        if step == 0:
            out += _grads(model)
    out += _state(model)
    # one forward step and the masked loss on their own
    h, c = model.init_hidden(3), model.init_cell(3)
    tb, idx, labels = _deepar_batch(T, 40, zeros)
    mu, sigma, h, c = model(tb.permute(1, 0, 2)[:1], idx.unsqueeze(0), h, c)
    return out + _arr(mu, sigma, h, c, P.loss_fn(mu, sigma, labels[:, 0]))


@pytest.mark.parametrize("zeros", [False, True])
def test_deepar_training_steps(zeros):
    _compare(lambda T: _deepar_run(T, zeros), tol=2e-5)


def _snn_starter_run(T):
    P = program(T, SNN_STARTER)
    fc1, fc2 = _init(T, T.nn.Linear(6, 8), 1, 0.6), _init(T, T.nn.Linear(8, 3), 2, 1.0)
    params = list(fc1.parameters()) + list(fc2.parameters())
    opt = T.optim.SGD(params, lr=0.1, momentum=0.9)
    out = []
    for step in range(3):
        rs = np.random.RandomState(5 + step)
        x = T.tensor(rs.uniform(0, 1, (4, 6)).astype(np.float32))
        y = T.tensor(rs.randint(0, 3, 4))
        m1 = s1 = T.zeros(4, 8)
        m2 = s2 = T.zeros(4, 3)
        sumspike = T.zeros(4, 3)
        for t in range(5):
            inp = x > T.tensor(rs.uniform(0, 1, (4, 6)).astype(np.float32))
            m1, s1 = P.mem_update(fc1, inp.float(), m1, s1)
            m2, s2 = P.mem_update(fc2, s1, m2, s2)
            sumspike = sumspike + s2
        loss = T.nn.functional.mse_loss(sumspike / 5 + m2, T.nn.functional.one_hot(y, 3).float())
        opt.zero_grad()
        loss.backward()
        out += _arr(loss, sumspike, fc1.weight.grad, fc2.bias.grad)
        opt.step()
    return out + _arr(*params)


def test_snn_starter_act_fun_training():
    _compare(_snn_starter_run)


def _surr_grad_run(T):
    P = program(T, SURR_GRAD)
    spike_fn = P.SurrGradSpike.apply
    w_in = T.nn.Parameter(T.tensor(np.random.RandomState(1).normal(0, .8, (5, 7)).astype(np.float32)))
    w_rec = T.nn.Parameter(T.tensor(np.random.RandomState(2).normal(0, .3, (7, 7)).astype(np.float32)))
    readout = _init(T, T.nn.Linear(7, 2), 3, 0.5)
    opt = T.optim.Adam([w_in, w_rec] + list(readout.parameters()), lr=5e-3)
    out = []
    for step in range(3):
        rs = np.random.RandomState(30 + step)
        x = T.tensor(rs.uniform(0, 1, (6, 3, 5)).astype(np.float32))   # [time, batch, in]
        v = T.zeros(3, 7)
        s = T.zeros(3, 7)
        rec = []
        for t in range(x.shape[0]):
            v = 0.8 * v * (1 - s) + x[t] @ w_in + s @ w_rec
            s = spike_fn(v - 1.0, 10.0)
            rec.append(s)
        spikes = T.stack(rec)
        logits = readout(spikes.mean(0))
        loss = T.nn.functional.cross_entropy(logits, T.tensor(rs.randint(0, 2, 3)))
        opt.zero_grad()
        loss.backward()
        out += _arr(loss, spikes, w_in.grad, w_rec.grad)
        opt.step()
    return out + _arr(w_in, w_rec, readout.weight)


def test_connectome_surrogate_spike_training():
    _compare(_surr_grad_run)


def test_surrogate_spike_gradient_of_scale_is_none():
    def run(T):
        P = program(T, SURR_GRAD)
        x = T.tensor(np.linspace(-1, 1, 7).astype(np.float32), requires_grad=True)
        scale = T.tensor(3.0, requires_grad=True)
        y = P.SurrGradSpike.apply(x, scale)
        (y * T.arange(7.)).sum().backward()
        return _arr(y, x.grad) + [np.array(scale.grad is None)]
    _compare(run)
