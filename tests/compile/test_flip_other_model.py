"""Freezing a layer of one model (``requires_grad_(False)``) leaves another model's compiled step
alone: no retrace, as in torch, where a guard covers only the tensors a frame reads. Before, a
flip of any tensor some compiled program read sent every compiled function back to tracing
(NOTE [requires_grad flips between calls] in tracegrad/_state.py): in a notebook, every later
experiment's freeze retraced the earlier steps."""
import numpy as np
import pytest

import tracegrad

from .test_interrupt_donated_state import _step     # the same training step


def _setup(lib):
    def net():
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1))
        with lib.no_grad():
            for i, p in enumerate(m.parameters()):
                p.copy_(lib.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (i + 1) / 4)
        return m, lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    def make_step(m, opt):
        return lib.compile(_step(m, opt), backend="aot_eager")
    (a, a_opt), (b, b_opt) = net(), net()
    x = lib.tensor(np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3))
    y = lib.tensor(np.array([[1.0], [0.0], [-1.0]], dtype=np.float32))
    return a, make_step(a, a_opt), b, make_step(b, b_opt), x, y


def _run(lib):
    counters = lib._dynamo.utils.counters
    a, step_a, b, step_b, x, y = _setup(lib)
    losses = [step_a(x, y).item() for _ in range(3)] + [step_b(x, y).item() for _ in range(3)]
    b[0].requires_grad_(False)           # freeze the other model's first layer
    losses += [step_b(x, y).item() for _ in range(2)]
    graphs = counters["stats"]["unique_graphs"]
    losses += [step_a(x, y).item() for _ in range(3)]
    return losses, counters["stats"]["unique_graphs"] - graphs, [p.detach().numpy() for p in a.parameters()]


def test_freezing_another_model_does_not_retrace():
    torch = pytest.importorskip("torch")
    ours, theirs = _run(tracegrad), _run(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-6)
    for p, q in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)
    assert theirs[1] == 0
    assert ours[1] == 0
