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
"""
import functools

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, close, compiled_parity, grads as _grads, state as _state

torch = pytest.importorskip("torch")

import api.test_public_programs_round67 as _api  # noqa: E402  (the stand-ins and the tiny sizes)

_parity = functools.partial(compiled_parity, torch, tracegrad)


def _one_trace(stats, calls):
    assert stats == {"calls": calls, "traces": 1, "eager_calls": 1, "graph_breaks": []}, stats


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
