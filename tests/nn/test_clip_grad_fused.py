"""Eager ``clip_grad_norm_``/``clip_grad_value_`` run as one cached program over every
gradient (``compiler.fused_inplace``): the same values, ``_version`` bumps and tensor identity
as the op-by-op path and torch; the op-by-op path where the program cannot stand in."""
import math

import numpy as np
import pytest

import tracegrad
from tracegrad._lowering import fused
from parity import get_torch


def _grads(mod, seed=0, shapes=((3, 4), (4,), (2, 3))):
    rs = np.random.RandomState(seed)
    ps = []
    for s in shapes:
        p = mod.tensor(rs.randn(*s).astype("float32"), requires_grad=True)
        p.grad = mod.tensor(rs.randn(*s).astype("float32"))
        ps.append(p)
    return ps


def _run(mod, fn, ps):
    ids, v0 = [id(p.grad) for p in ps], [p.grad._version for p in ps]
    out = fn(mod, ps)
    return (None if out is None else float(out),
            [p.grad.detach().numpy().copy() for p in ps],
            [p.grad._version - v for p, v in zip(ps, v0)],
            [id(p.grad) for p in ps] == ids)


CASES = {
    "norm2": lambda m, ps: m.nn.utils.clip_grad_norm_(ps, 0.5),
    "norm1": lambda m, ps: m.nn.utils.clip_grad_norm_(ps, 0.5, norm_type=1),
    "norm_inf": lambda m, ps: m.nn.utils.clip_grad_norm_(ps, 0.5, norm_type=math.inf),
    "norm_no_clip": lambda m, ps: m.nn.utils.clip_grad_norm_(ps, 100.0, norm_type=3.0),
    "value": lambda m, ps: m.nn.utils.clip_grad_value_(ps, 0.3),
}


@pytest.mark.parametrize("case", list(CASES))
def test_fused_clip_equals_torch_and_the_per_op_path(case, monkeypatch):
    torch = get_torch()
    before = fused.STATS["calls"]
    ours = _run(tracegrad, CASES[case], _grads(tracegrad))
    assert fused.STATS["calls"] == before + 1          # it ran as one program
    ref = _run(torch, CASES[case], _grads(torch))
    monkeypatch.setattr(tracegrad.compiler, "fused_inplace", lambda *a: None)
    per_op = _run(tracegrad, CASES[case], _grads(tracegrad))
    for other in (ref, per_op):
        if other[0] is not None:
            assert ours[0] == pytest.approx(other[0], rel=1e-6)
        for a, b in zip(ours[1], other[1]):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
        assert ours[2] == other[2] and ours[3] and other[3]


def test_one_program_per_shapes_and_options():
    ps = _grads(tracegrad, shapes=((5, 2), (2,)))
    tracegrad.nn.utils.clip_grad_norm_(ps, 0.25)
    traces = fused.STATS["traces"]
    for seed in (1, 2):
        for p, q in zip(ps, _grads(tracegrad, seed, shapes=((5, 2), (2,)))):
            p.grad = q.grad
        tracegrad.nn.utils.clip_grad_norm_(ps, 0.25)
    assert fused.STATS["traces"] == traces
    tracegrad.nn.utils.clip_grad_norm_(ps, 0.5)          # max_norm is part of the key
    assert fused.STATS["traces"] == traces + 1


def _shared(mod, ps):
    ps[1].grad = ps[0].grad[0]          # two gradients over one storage
    return ps


@pytest.mark.parametrize("setup", ["shared", "create_graph", "nonfinite"])
def test_per_op_where_one_program_cannot_stand_in(setup):
    torch = get_torch()
    outs = []
    for mod in (tracegrad, torch):
        ps = _grads(mod)
        if setup == "shared":
            ps = _shared(mod, ps)
        elif setup == "create_graph":
            w = mod.tensor([1.5], requires_grad=True)
            (ps[0] * w).sum().backward(create_graph=True)     # a .grad that requires grad
        elif setup == "nonfinite":
            ps[0].grad[0, 0] = float("inf")
        before = fused.STATS["calls"]
        if setup == "nonfinite":
            with pytest.raises(RuntimeError, match="non-finite"):
                mod.nn.utils.clip_grad_norm_(ps, 0.5, error_if_nonfinite=True)
        else:
            mod.nn.utils.clip_grad_norm_(ps, 0.5)
        if mod is tracegrad:
            assert fused.STATS["calls"] == before
        outs.append([p.grad.detach().numpy().copy() for p in ps])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_clip_inside_a_compiled_step_is_traced_per_op():
    def run(wrap):
        tracegrad.manual_seed(0)
        net = tracegrad.nn.Linear(3, 2)
        opt = tracegrad.optim.SGD(net.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            net(x).pow(2).sum().backward()
            total = tracegrad.nn.utils.clip_grad_norm_(net.parameters(), 0.1)
            tracegrad.nn.utils.clip_grad_value_(net.parameters(), 0.02)
            opt.step()
            return total
        f = wrap(step)
        totals = [float(f(tracegrad.ones(4, 3) * (i + 1))) for i in range(4)]
        return totals, [p.detach().numpy() for p in net.parameters()], f
    eager, compiled = run(lambda f: f), run(lambda f: tracegrad.compile(f, fullgraph=True))
    np.testing.assert_allclose(eager[0], compiled[0], rtol=1e-6)
    for a, b in zip(eager[1], compiled[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    # traced with no .grad yet, then once more with the state the first call made
    assert compiled[2].stats["traces"] == 2 and not compiled[2].stats["graph_breaks"]
