"""Buffers in steady state (issue 8, NOTE [donation on CPU] in _lowering/program.py): a
compiled training step overwrites state in place -- parameters, optimizer buffers and the new
``.grad`` reuse the buffers of the values they replace -- and a buffer something else still
holds (a tensor the user kept) is never overwritten."""
import numpy as np
import pytest

import tracegrad
from tracegrad._lowering import program as _program


from ._harness import data, np_init


def _step(mod, opt_cls=None, **opt_kw):
    model = np_init(mod.nn.Sequential(mod.nn.Linear(8, 16), mod.nn.ReLU(), mod.nn.Linear(16, 4)), mod)
    opt = (opt_cls or mod.optim.SGD)(model.parameters(), **(opt_kw or {"lr": 0.1, "momentum": 0.9}))

    @tracegrad.compile
    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    return model, opt, step


def _ptr(t):
    return t._value.unsafe_buffer_pointer()


def test_state_and_new_grads_reuse_the_replaced_buffers():
    model, opt, step = _step(tracegrad)
    for i in range(3):
        step(data(tracegrad, i, 5, 8))
    params = list(model.parameters())
    before = [(_ptr(p), _ptr(p.grad), _ptr(opt.state[p]["momentum_buffer"])) for p in params]
    step(data(tracegrad, 3, 5, 8))
    after = [(_ptr(p), _ptr(p.grad), _ptr(opt.state[p]["momentum_buffer"])) for p in params]
    # zero_grad() drops each old .grad inside the step: its buffer receives the new gradient
    assert after == before


def test_adamw_state_reuses_buffers():
    model, opt, step = _step(tracegrad, tracegrad.optim.AdamW, lr=1e-2)
    for i in range(3):
        step(data(tracegrad, i, 5, 8))
    keys = ("exp_avg", "exp_avg_sq")
    ptrs = lambda: [(_ptr(p), _ptr(p.grad)) + tuple(_ptr(opt.state[p][k]) for k in keys) for p in model.parameters()]
    before = ptrs()
    step(data(tracegrad, 3, 5, 8))
    assert ptrs() == before


def test_a_kept_grad_keeps_its_values():
    """A ``.grad`` tensor the user still holds is not donated: after the next call (whose
    zero_grad() sets ``.grad`` to None, as eager) it still holds the old gradient."""
    model, opt, step = _step(tracegrad)
    for i in range(3):
        step(data(tracegrad, i, 5, 8))
    kept = [p.grad for p in model.parameters()]
    values = [g.numpy().copy() for g in kept]
    step(data(tracegrad, 3, 5, 8))
    for g, v, p in zip(kept, values, model.parameters()):
        np.testing.assert_array_equal(g.numpy(), v)
        assert p.grad is not g
    # and the call after that (nothing kept) is back on the donating path with eager's values
    step(data(tracegrad, 4, 5, 8))
    assert all(np.isfinite(p.grad.numpy()).all() for p in model.parameters())


def test_retraces_keep_no_copy_of_the_state():
    """NOTE [abandoned traces] in _lowering/program.py: every new batch size traces again (a
    discovery trace that is abandoned, then the real one); neither may keep the state arrays it
    read alive, so live memory stays flat across retraces."""
    import gc

    import jax
    nn = tracegrad.nn
    model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 4))
    opt = tracegrad.optim.SGD(model.parameters(), lr=0.1)

    @tracegrad.compile
    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def live_bytes():
        gc.collect()
        return sum(a.nbytes for a in jax.live_arrays())
    sizes = []
    # two retraces after the first size suffice: a trace that kept the state alive would add a
    # whole copy of the parameters (4x the bound below) per retrace; each size costs compiles
    for bs in (4, 6, 8):
        for i in range(3):
            step(data(tracegrad, i, bs, 64), tracegrad.zeros(bs, dtype=tracegrad.int64))
        sizes.append(live_bytes())
    params = sum(p.numel() * 4 for p in model.parameters())
    assert sizes[-1] - sizes[0] < params // 4, (sizes, params)
