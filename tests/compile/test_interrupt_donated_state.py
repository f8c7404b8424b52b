"""A Ctrl-C (SIGINT: Jupyter's interrupt button) that arrives while a compiled step's program or
the fused eager optimizer step runs is raised after the new state is written back (NOTE
[interrupts and donated state] in tracegrad/_lowering/interrupt.py). Before, the
``KeyboardInterrupt`` came right after the program returned, its outputs were dropped and the
parameters kept the donated (deleted) buffers: the trained model was lost. torch finishes the
kernel it is in; the interrupted step is whole, as in torch. The SIGINT is sent from inside the
program's call here (deterministic); tests/notebooks/test_notebook_exploration.py interrupts a
real kernel."""
import signal
import threading

import numpy as np
import pytest

import tracegrad
from tracegrad._lowering import interrupt, program


def _data(lib):
    x = lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    y = lib.tensor(np.array([[1.0], [0.0], [-1.0], [0.5]], dtype=np.float32))
    return x, y


def _model(lib):
    m = lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.Tanh(), lib.nn.Linear(5, 1))
    with lib.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(lib.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (i + 1) / 4)
    return m, lib.optim.Adam(m.parameters(), lr=0.05)


def _step(m, opt):
    def step(x, y):
        opt.zero_grad()
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    return step


@pytest.fixture
def sigint_in_program(monkeypatch):
    """Program runs send SIGINT to this process just before they return (while ``armed``)."""
    armed = [0]
    original = program.Program.__call__

    def call(self, flat, donate=True):
        out = original(self, flat, donate)
        if armed[0]:
            armed[0] -= 1
            signal.raise_signal(signal.SIGINT)
        return out
    monkeypatch.setattr(program.Program, "__call__", call)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    return armed


def _torch_after(steps):
    torch = pytest.importorskip("torch")
    m, opt = _model(torch)
    x, y = _data(torch)
    for _ in range(steps):
        _step(m, opt)(x, y)
    return [p.detach().numpy() for p in m.parameters()]


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "eager_fused_optimizer"])
def test_interrupt_raises_after_a_whole_step(sigint_in_program, compiled):
    m, opt = _model(tracegrad)
    x, y = _data(tracegrad)
    step = _step(m, opt)
    if compiled:
        step = tracegrad.compile(step)
    step(x, y), step(x, y)            # compiled: the eager first call and the trace
    sigint_in_program[0] = 1
    with pytest.raises(KeyboardInterrupt):
        step(x, y)
    assert sigint_in_program[0] == 0  # the signal was sent from a program run
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert {opt.state[p]["step"].item() for p in m.parameters()} == {3.0}
    for ours, theirs in zip(m.parameters(), _torch_after(3)):
        np.testing.assert_allclose(ours.detach().numpy(), theirs, rtol=1e-5, atol=1e-6)
    step(x, y)                        # the next call works on the written-back state
    for ours, theirs in zip(m.parameters(), _torch_after(4)):
        np.testing.assert_allclose(ours.detach().numpy(), theirs, rtol=1e-5, atol=1e-6)


def test_hold_changes_nothing_where_it_need_not():
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    outer = interrupt.hold()
    try:
        assert interrupt.hold() is None              # nested: the outer one delivers
    finally:
        interrupt.release(outer)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    got = []
    t = threading.Thread(target=lambda: got.append(interrupt.hold()))
    t.start(), t.join()
    assert got == [None]                             # only the main thread gets Python's SIGINT
    prev = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert interrupt.hold() is None              # ignored: nothing to defer
    finally:
        signal.signal(signal.SIGINT, prev)
