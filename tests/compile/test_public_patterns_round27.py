"""Round-26 public programs (``tests/api/test_public_programs_round26.py`` runs them whole and
eagerly against torch), condensed to their model, loss, optimizer and training step and run
compiled == eager == torch with the harness (tiny sizes, numpy data):

- johnma2006/mamba-minimal (its only run against torch: the eager file defines it but leaves the
  step to this test): a language-model step through ``Mamba`` (tied embedding/LM head,
  ``RMSNorm``, the depthwise causal ``Conv1d`` sliced to the sequence length, the ``split``s, the
  Python-loop selective scan unrolled over the sequence, ``einsum`` discretisation),
  ``cross_entropy`` and SGD with momentum (the repository has no training script; SGD keeps the
  traced program small): one trace, no break, the trace reused on new tokens;
- dfdazac/wassdistance: an SGD step on a point cloud through ``SinkhornDistance``, whose loop
  stops on ``err.item() < thresh``: the value read back is a graph break that names ``item``,
  and the step still equals eager and torch; with ``fullgraph=True`` the same read is an
  ``Unsupported`` error raised before anything is updated.
"""
import linecache

import numpy as np
import pytest

import tracegrad
from tests.api.test_public_programs_round26 import (
    _mamba_init,
    _mamba_module,
    _sinkhorn_module,
)

from ._harness import check_compiled, data


def _tokens(mod, i):
    return mod.tensor(np.random.RandomState(50 + i).randint(0, 11, (2, 4)))


# ---- johnma2006/mamba-minimal model.py (as the eager round-26 test defines it; d_model 8,
# one layer (a second doubles the traced program's XLA compile), vocab 11 -> 16, d_state 4,
# 2 sequences of 4 tokens), next-token cross_entropy and SGD with momentum ---------------------
def _mamba_program(mod, wrap):
    m = _mamba_module(mod)
    F = mod.nn.functional
    model = _mamba_init(mod, m["Mamba"](m["ModelArgs"](d_model=8, n_layer=1, vocab_size=11, d_state=4)), 3)
    opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(tokens):
        inp, tgt = tokens[:, :-1], tokens[:, 1:]
        logits = model(inp)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss, logits

    return wrap(step), {"model": model, "opt": opt}, lambda i: (_tokens(mod, i),)


def test_mamba_minimal_train_step_compiled():
    # call 0 runs eagerly, call 1 traces, call 2 (new tokens) reuses the program
    run = check_compiled(_mamba_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1 and run.step.stats["eager_calls"] == 1, run.step.stats
    loss, logits = run.step(_tokens(tracegrad, 7))
    assert run.step.stats["traces"] == 1, run.step.stats
    assert loss.dim() == 0 and tuple(logits.shape) == (2, 3, 16)
    # the tied weight is one parameter: the LM head still shares the embedding's tensor after
    # the compiled optimizer steps wrote it back
    model = run.state["model"]
    assert model.lm_head.weight is model.embedding.weight
    assert [n for n, _ in model.named_parameters()][:1] == ["embedding.weight"]
    assert "lm_head.weight" not in dict(model.named_parameters())
    # the program's own A_log init (log of 1..d_state per channel), trained 3 steps from there
    assert np.allclose(run.eager.state["model"].layers[0].mixer.A_log.detach().numpy()[:, :1], 0, atol=0.05)
    # the scan is causal: changing the last token changes only the last position's logits
    with tracegrad.no_grad():
        inp = _tokens(tracegrad, 0)[:, :-1]
        changed = inp.clone()
        changed[:, -1] = (changed[:, -1] + 1) % 11
        a, b = model(inp), model(changed)
    assert tracegrad.allclose(a[:, :-1], b[:, :-1]) and (a[:, -1] - b[:, -1]).abs().max() > 0


# ---- dfdazac/wassdistance layers.py SinkhornDistance (eps 0.1, max_iter 100, reduction 'mean'),
# a batch of 2 clouds of 5 points in 2-D, SGD on the moving cloud ------------------------------------
def _sinkhorn_program(mod, wrap):
    sinkhorn = _sinkhorn_module(mod)(eps=0.1, max_iter=100, reduction='mean')
    x = mod.tensor(np.random.RandomState(21).uniform(0, 1, (2, 5, 2)).astype(np.float32), requires_grad=True)
    opt = mod.optim.SGD([x], lr=0.5)

    def step(y):
        cost, pi, _C = sinkhorn(x, y)
        opt.zero_grad()
        cost.backward()
        opt.step()
        return cost, pi, x

    return wrap(step), {"x": x}, lambda i: (data(mod, i, 2, 5, 2) * 0.3 + 1.0,)


def _file_line(where):
    path, line = where.rsplit(":", 1)
    return path, int(line)


def test_wassdistance_sinkhorn_step_item_break():
    run = check_compiled(_sinkhorn_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    # the early stop reads err back with item(): a graph break at that line, every call eager
    stats = run.step.stats
    assert stats["traces"] == 0 and stats["eager_calls"] == 3, stats
    assert stats["graph_breaks"] and all(
        "item()" in r and "if err.item() < thresh:" in linecache.getline(*_file_line(where))
        for r, where in stats["graph_breaks"]), stats
    _, pi, _ = run.step(data(tracegrad, 0, 2, 5, 2) * 0.3 + 1.0)
    # v is updated last: the plan's column sums are the uniform weights
    assert np.allclose(pi.sum(-2).detach().numpy(), 0.2, atol=1e-4), pi


def test_wassdistance_sinkhorn_fullgraph_raises_before_any_update():
    # fullgraph=True: the item() is an error naming the line (torch.compile raises its
    # Unsupported there too), and the point cloud is neither stepped nor given a gradient
    step, state, batch = _sinkhorn_program(tracegrad, lambda f: tracegrad.compile(f, fullgraph=True))
    before = state["x"].detach().numpy().copy()
    with pytest.raises(RuntimeError, match=r"item\(\).*test_public_programs_round26\.py:\d+") as info:
        step(*batch(0))
    assert isinstance(info.value, tracegrad._dynamo.exc.Unsupported), type(info.value).__mro__
    assert state["x"].grad is None and np.array_equal(state["x"].detach().numpy(), before)
