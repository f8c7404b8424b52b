"""Parity helpers for nn tests: build the same module with torch and tracegrad, copy torch's
initial parameters and buffers into tracegrad, run the same forward/backward, compare."""
import numpy as np
import pytest

import tracegrad

RTOL, ATOL = 1e-5, 1e-5


def get_torch():
    return pytest.importorskip("torch")


def both(program):
    """Run ``program(module, log)`` with torch and with tracegrad; the logs must be equal."""
    torch = get_torch()
    logs = []
    for mod in (torch, tracegrad):
        log = []
        program(mod, log)
        logs.append(log)
    assert logs[0] == logs[1]
    return logs[1]


def copy_state(tmod, gmod):
    """torch module -> tracegrad module (parameters and buffers, by name)."""
    tp = dict(tmod.named_parameters())
    gp = dict(gmod.named_parameters())
    assert list(tp) == list(gp)
    for n, p in gp.items():
        p.data = tracegrad.tensor(tp[n].detach().numpy())
    tb = dict(tmod.named_buffers())
    for n, b in gmod.named_buffers():
        with tracegrad.no_grad():
            b.copy_(tracegrad.tensor(tb[n].detach().numpy()))


def to_np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def close(a, b, rtol=RTOL, atol=ATOL):
    np.testing.assert_allclose(to_np(a), to_np(b), rtol=rtol, atol=atol)


def check_module(build, inputs, *, grad_inputs=None, loss=None, rtol=RTOL, atol=ATOL, train=True, call=None):
    """``build(nn) -> module``; ``inputs`` numpy arrays (float arrays get requires_grad unless
    ``grad_inputs`` says which). Compares output, grad_fn name, parameter grads, input grads and
    buffers after the step. Returns (torch module, tracegrad module)."""
    torch = get_torch()
    tm = build(torch.nn)
    gm = build(tracegrad.nn)
    copy_state(tm, gm)
    tm.train(train)
    gm.train(train)
    if grad_inputs is None:
        grad_inputs = [np.issubdtype(np.asarray(a).dtype, np.floating) for a in inputs]
    tin = [torch.tensor(a, requires_grad=g) for a, g in zip(inputs, grad_inputs)]
    gin = [tracegrad.tensor(a, requires_grad=g) for a, g in zip(inputs, grad_inputs)]
    call = call or (lambda m, *xs: m(*xs))
    tout = call(tm, *tin)
    gout = call(gm, *gin)
    close(gout, tout, rtol, atol)
    assert tuple(gout.shape) == tuple(tout.shape)
    if tout.grad_fn is not None:
        assert type(gout.grad_fn).__name__ == type(tout.grad_fn).__name__
        w = np.random.RandomState(1).randn(*tout.shape) if tout.ndim else np.array(1.0)
        tout.backward(torch.tensor(w, dtype=tout.dtype))
        gout.backward(tracegrad.tensor(w, dtype=gout.dtype))
        for (n, tp), (_, gp) in zip(tm.named_parameters(), gm.named_parameters()):
            if tp.grad is None:
                assert gp.grad is None, n
            else:
                close(gp.grad, tp.grad, rtol, atol)
        for a, b in zip(gin, tin):
            if b.requires_grad:
                close(a.grad, b.grad, rtol, atol)
    for (n, tb), (gn, gb) in zip(tm.named_buffers(), gm.named_buffers()):
        assert n == gn
        close(gb, tb, rtol, atol)
    return tm, gm
