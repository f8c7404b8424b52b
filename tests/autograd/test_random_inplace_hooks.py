"""Property: random in-place writes through views of a non-leaf, plus tensor/Node hooks on
random intermediates. torch and tracegrad must agree on the hook firing order, on whether
backward raises (and its class), and on every leaf gradient."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracegrad

torch = pytest.importorskip("torch")

VIEWS = {
    "row0": lambda b: b[0], "col1": lambda b: b[:, 1], "t": lambda b: b.t(),
    "slice": lambda b: b[1:, ::2], "flat": lambda b: b.view(-1), "all": lambda b: b,
}
WRITES = ["mul_const", "add_leaf", "setitem_leaf", "sin_", "mul_self_leaf", "zero_"]


def _run(m, prog, arrays):
    try:
        return _program(m, prog, arrays)
    except RuntimeError as e:     # a forward error (e.g. a write to a view of a leaf) is an observation
        return [], "forward " + type(e).__name__, None, None


def _program(m, prog, arrays):
    events = []
    a = m.tensor(arrays[0], requires_grad=True)
    w = m.tensor(arrays[1], requires_grad=True)   # (12,): w[:n] fits any view's last dim
    c = m.tensor(arrays[2])
    b = a * 1.5
    made = [b]
    for k, (view, write, hook) in enumerate(prog):
        v = VIEWS[view](b)
        n = v.shape[-1]
        if write == "mul_const":
            v.mul_(c.reshape(-1)[:n])
        elif write == "add_leaf":
            v.add_(w[:n])
        elif write == "setitem_leaf":
            v[...] = w[:n].tanh() * 0.5 if v.dim() == 1 else w[:n].tanh().expand(v.shape)
        elif write == "sin_":
            v.sin_()
        elif write == "mul_self_leaf":
            v.mul_(w[:n].exp())
        else:
            v.zero_()
        if hook == "tensor":
            b.register_hook(lambda g, k=k: events.append(("tensor", k, round(float(g.sum()), 6))))
        elif hook == "node":
            b.grad_fn.register_hook(lambda gi, go, k=k: events.append(("node", k)))
        elif hook == "pre":
            b.grad_fn.register_prehook(lambda go, k=k: events.append(("pre", k)))
        b = b * 1 if k % 2 else b     # sometimes continue on a fresh non-leaf
        made.append(b)
    loss = (b * m.tensor(arrays[3])).sum() + (a * a).sum()
    try:
        loss.backward()
        status = "ok"
    except RuntimeError as e:
        status = type(e).__name__
    return events, status, a.grad, w.grad


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(sorted(VIEWS)), st.sampled_from(WRITES),
                          st.sampled_from(["none", "tensor", "node", "pre"])), min_size=1, max_size=6),
       st.integers(0, 1000))
def test_random_inplace_views_and_hooks(prog, seed):
    rs = np.random.RandomState(seed)
    arrays = [rs.standard_normal((3, 4)), rs.standard_normal(12), rs.standard_normal(12),
              rs.standard_normal((3, 4))]
    ref = _run(torch, prog, arrays)
    got = _run(tracegrad, prog, arrays)
    assert got[0] == ref[0], f"hook events differ for {prog}:\ntorch    {ref[0]}\ntracegrad {got[0]}"
    assert got[1] == ref[1], f"backward status differs for {prog}: torch {ref[1]}, tracegrad {got[1]}"
    for r, g, name in ((ref[2], got[2], "a"), (ref[3], got[3], "w")):
        assert (r is None) == (g is None), f"{name}.grad None-ness differs for {prog}"
        if r is not None:
            np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-8, atol=1e-10,
                                       err_msg=f"{name}.grad for {prog}")
