"""NOTE [plans of other sizes] (compiler.py): a call whose tensors differ from a traced call's only
in their sizes starts its trace from that call's plan (the outside state to lift, whether the
results stay differentiable), and a key's first trace that grows its plan guesses ``vjp`` when
it returns tensors with history. Counted: how often the function is traced (discovery traces
included); checked: every guess that does not hold is dropped, so the results, gradients and
errors stay eager's (a result differentiable at one size only, a reentrant checkpoint under
``autograd.grad``)."""
import numpy as np
import pytest

import tracegrad
import tracegrad.compiler as compiler_mod

from ._harness import _arr, data, np_init


@pytest.fixture
def trace_count(monkeypatch):
    n = [0]
    real = compiler_mod.trace_region

    def counting(*a, **k):
        n[0] += 1
        return real(*a, **k)
    monkeypatch.setattr(compiler_mod, "trace_region", counting)
    return n


def _model(mod):
    return np_init(mod.nn.Sequential(mod.nn.Linear(4, 8), mod.nn.Tanh(), mod.nn.Linear(8, 2)), mod)


def _counts(f, sizes, call, trace_count):
    out = []
    for bs in sizes:
        trace_count[0] = 0
        call(f, bs)
        out.append(trace_count[0])
    return out


def test_forward_compiled_alone_traces_twice_then_once_per_new_size(trace_count):
    model = _model(tracegrad)
    ref = _model(tracegrad)
    f = tracegrad.compile(lambda x: model(x))
    got = []

    def call(g, bs):
        x = data(tracegrad, bs, bs, 4)
        for m, fn in ((model, g), (ref, ref)):
            m.zero_grad()
            out = fn(x)
            (out * out).sum().backward()
        got.append([(_arr(p.grad), _arr(q.grad)) for p, q in zip(model.parameters(), ref.parameters())])
        assert out.requires_grad
    counts = _counts(f, [5, 5, 5, 3, 3, 7, 5], call, trace_count)
    # the first call runs eagerly; the first size: discovery (state + guessed vjp), then the program
    assert counts == [0, 2, 0, 1, 0, 1, 0], counts
    assert f.stats["traces"] == 3
    for per_call in got:
        for a, b in per_call:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_training_step_traces_once_per_new_size(trace_count):
    model = _model(tracegrad)
    opt = tracegrad.optim.Adam(model.parameters(), lr=0.01)

    def step(x):
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()
    f = tracegrad.compile(step)
    counts = _counts(f, [6, 6, 6, 2, 2, 9], lambda g, bs: g(data(tracegrad, bs, bs, 4)), trace_count)
    assert counts == [0, 2, 0, 1, 0, 1], counts


def _size_dependent(mod):
    lin = np_init(mod.nn.Linear(3, 2), mod)

    def f(x):
        y = lin(x)
        return y if x.shape[0] > 4 else y.detach() * 2
    return f, lin


def test_a_guess_that_does_not_hold_is_dropped():
    """Differentiable at 6 rows, detached at 2: the size-2 trace starts from the 6-row plan
    (vjp) and must drop it -- its result is eager's, requires_grad False."""
    f, lin = _size_dependent(tracegrad)
    g = tracegrad.compile(f)
    for bs in (6, 6, 6, 2, 2, 6, 2):
        x = data(tracegrad, bs, bs, 3)
        want = f(x)
        got = g(x)
        assert got.requires_grad == want.requires_grad == (bs > 4)
        np.testing.assert_allclose(_arr(got), _arr(want), rtol=1e-6, atol=1e-6)
        if got.requires_grad:
            lin.zero_grad()
            got.sum().backward()
            gw = _arr(lin.weight.grad)
            lin.zero_grad()
            want.sum().backward()
            np.testing.assert_allclose(gw, _arr(lin.weight.grad), rtol=1e-6, atol=1e-6)
    assert not g.stats["graph_breaks"], g.stats


def test_reentrant_checkpoint_under_autograd_grad_still_raises_at_a_new_size():
    """``vjp`` changes what a trace does inside (a reentrant checkpoint under autograd.grad
    raises only without it): a copied plan's guess must not hide the error."""
    from tracegrad.utils.checkpoint import checkpoint
    w = tracegrad.ones(1, requires_grad=True)

    def step(x):
        out = checkpoint(lambda t: t * w, x, use_reentrant=True).sum()
        return tracegrad.autograd.grad(out, [x])
    g = tracegrad.compile(step)
    for n in (2, 2, 3, 3):
        with pytest.raises(RuntimeError, match="incompatible with .grad"):
            g(tracegrad.ones(n, requires_grad=True))
