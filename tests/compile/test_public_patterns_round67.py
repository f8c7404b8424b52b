"""Compile patterns of the sixty-seventh round of public programs
(tests/api/test_public_programs_round67.py; sources in tests/public_programs_round67_src.py): each
program's training step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` on the
same initial state (where a step draws from the library's own random stream, tracegrad eager and
compiled from one seed):

- YiHsiu7893/CPA-Project ViT: the script's loop body (``patchify``'s Python loops writing rows
  of ``torch.zeros`` in place, the per-sequence, per-head attention, the class token and the
  non-persistent positional buffer, ``CrossEntropyLoss`` over the ``Softmax`` head, Adam):
  one trace after the eager first call; its ``no_grad`` test loop compiled too.
- nadaselham/Hybrid-CNN-TCN: the forecaster's Adam step through dilated causal ``Conv1d``s and
  ``Chomp1d``'s ``.contiguous()`` slice: one trace; with ``Dropout(0.25)`` in training mode
  each compiled call draws fresh masks (the same ones as eager from one seed, never a frozen
  mask), and ``eval()`` between calls is a new trace with dropout off.
- albashawalid05-netizen/neural-ode-vs-resnet: ``train_one``'s loop body for ``ResNetStep`` and
  for ``NeuralODEModel`` through the tests' RK4 ``odeint`` (a new time grid on each call: the
  step sizes are inputs, not constants): one trace each; the models compiled under ``no_grad``
  after ``eval()``. ``evaluate`` compiled meets ``loss.item()``: one warning, then eager runs
  with eager's value on every call; ``fullgraph=True`` raises the graph break.
"""
import functools

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, close, compiled_parity, grads as _grads, state as _state

torch = pytest.importorskip("torch")

import api.test_public_programs_round67 as _api  # noqa: E402  (the stand-ins and the tiny sizes)
from compile.test_public_patterns_round66 import _one_trace  # noqa: E402

_parity = functools.partial(compiled_parity, torch, tracegrad)


# ---------------------------------------------------------------- ViT

def _vit(T, compiled):
    ns = _api.vit_program(T)
    model = _api.vit_model(T, ns)
    optimizer, loss_func = T.optim.Adam(model.parameters(), lr=0.005), T.nn.CrossEntropyLoss()

    def step(x, y):                     # Vit.py's training loop body
        y_hat = model(x)
        loss = loss_func(y_hat, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.detach()

    def evaluate(x, y):                 # its test loop body
        with T.no_grad():
            y_hat = model(x)
            return loss_func(y_hat, y), T.sum(T.argmax(y_hat, dim=1) == y)

    f, g = (T.compile(step), T.compile(evaluate)) if compiled else (step, evaluate)
    rs, out = np.random.RandomState(1), []
    for _ in range(3):
        out += _arr(f(*_api._images(T, rs)))
    out += _arr(*g(*_api._images(T, rs)))
    # the key biases move the scores of a row by one constant, which softmax removes: their
    # gradient is float noise (1e-10) that Adam scales into lr-sized steps, different on each
    # CPU and library, so they are left out of the comparison (they change no output)
    kept = {k: v for k, v in model.state_dict().items() if "k_mappings" not in k or not k.endswith("bias")}
    assert len(kept) == 25 - 2
    return out + [g for (k, _), g in zip(sorted(model.named_parameters()), _grads(model))
                  if "k_mappings" not in k or not k.endswith("bias")] \
        + _arr(*[v for _, v in sorted(kept.items())]) + _arr(model.positional_embeddings), f


def test_vit_step_compiled():
    _one_trace(_parity(_vit), 3)


# ---------------------------------------------------------------- TCN

def _tcn(T, compiled):
    fc = _api.Forecaster(T, _api.tcn_program(T))
    f = T.compile(fc.step) if compiled else fc.step
    rs, out = np.random.RandomState(4), []
    for _ in range(3):
        x = _api._series(T, rs, n=3)
        out += _arr(f(x, T.tensor(rs.randn(3, 1).astype(np.float32))))
    return out + _grads(fc.tcn) + _state(fc.tcn) + _state(fc.head), f


def test_tcn_step_compiled():
    _one_trace(_parity(_tcn), 3)


def _tcn_dropout(compiled, calls=3):
    T = tracegrad
    fc = _api.Forecaster(T, _api.tcn_program(T), dropout=0.25)
    f = T.compile(fc.step) if compiled else fc.step
    rs, out = np.random.RandomState(4), []
    T.manual_seed(0)
    for i in range(calls):
        if i == calls - 1:
            fc.tcn.eval()
        x = _api._series(T, rs, n=3)
        out += _arr(f(x, T.tensor(rs.randn(3, 1).astype(np.float32))))
    return out + _state(fc.tcn) + _state(fc.head), f


def test_tcn_dropout_compiled_draws_like_eager():
    eager, (comp, f) = _tcn_dropout(False)[0], _tcn_dropout(True)
    close(eager, comp, 1e-5)
    # a frozen mask would repeat the first call's loss pattern; eval() is a new trace
    assert f.stats["traces"] == 2 and f.stats["graph_breaks"] == [], f.stats


# ---------------------------------------------------------------- neural ODE vs ResNet step

def _node(T, compiled, kind):
    ns = _api.node_program(T)
    model = ns.ResNetStep(hidden_dim=5) if kind == "resnet" else ns.NeuralODEModel(hidden_dim=5)
    opt = T.optim.Adam(model.parameters(), lr=1e-2)

    def step(x, m, t):                  # train_one's loop body
        x0 = x[:, 0, :]
        if isinstance(model, ns.NeuralODEModel):
            pred = model(x0, t)
        else:
            pred = T.cat([x0.unsqueeze(1), model(x0, x.shape[1] - 1)], dim=1)
        loss = ns.masked_mse(pred, x, m)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()

    f = T.compile(step) if compiled else step
    rs, out = np.random.RandomState(9), []
    for i in range(3):
        # new time grids each call: the RK4 step sizes are inputs, never constants
        out += _arr(f(*_api._trajectories(T, rs), T.linspace(0.0, 0.5 + 0.1 * i, 4)))
    model.eval()
    with T.no_grad():
        g = T.compile(model) if compiled else model
        x, _ = _api._trajectories(T, rs)
        out += _arr(g(x[:, 0, :], T.linspace(0.0, 0.6, 4)) if kind == "neuralode" else g(x[:, 0, :], 3))
    return out + _grads(model) + _state(model), f


@pytest.mark.parametrize("kind", ["resnet", "neuralode"])
def test_node_train_step_compiled(kind):
    _one_trace(_parity(functools.partial(_node, kind=kind)), 3)


def test_node_evaluate_compiled_runs_eagerly_at_item():
    # ``evaluate``'s ``losses.append(loss.item())`` is a value taken out of the program: the
    # compiled function says so once and runs eagerly on every call, with eager's result;
    # ``fullgraph=True`` raises instead
    def setup(T):
        ns = _api.node_program(T)
        return ns, ns.NeuralODEModel(hidden_dim=5), _api._loaders(T, 7)[1], T.linspace(0.0, 0.6, 4)

    tns, tmodel, tval, tt = setup(torch)
    T = tracegrad
    ns, model, val, t = setup(T)
    ref = ns.evaluate(model, val, t, T.device("cpu"))
    np.testing.assert_allclose(ref, tns.evaluate(tmodel, tval, tt, torch.device("cpu")), rtol=1e-5)
    f = T.compile(ns.evaluate)
    with pytest.warns(UserWarning, match=r"running evaluate eagerly: item\(\)") as rec:
        got = [f(model, val, t, T.device("cpu")) for _ in range(3)]
    assert got == [ref] * 3 and len(rec) == 1
    assert f.stats["traces"] == 0 and f.stats["eager_calls"] == 3, f.stats
    with pytest.raises(RuntimeError, match=r"cannot capture this function as one program: item\(\)"):
        T.compile(ns.evaluate, fullgraph=True)(model, val, t, T.device("cpu"))
