"""Buffers in steady state (issue 8): where donation pays (NOTE [donation on CPU] in
_lowering/program.py: off the CPU, or state of ``DONATE_MIN_BYTES_CPU`` and more) a compiled
training step overwrites state in place -- parameters, optimizer buffers and the new ``.grad``
reuse the buffers of the values they replace; small state on CPU is not donated; and a buffer
something else still holds (a tensor the user kept) is never overwritten."""
import numpy as np
import pytest

import tracegrad
from tracegrad._lowering import program as _program


@pytest.fixture
def donate_always(monkeypatch):
    monkeypatch.setattr(_program, "DONATE_MIN_BYTES_CPU", 0)

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


def test_state_and_new_grads_reuse_the_replaced_buffers(donate_always):
    model, opt, step = _step(tracegrad)
    for i in range(3):
        step(data(tracegrad, i, 5, 8))
    params = list(model.parameters())
    before = [(_ptr(p), _ptr(p.grad), _ptr(opt.state[p]["momentum_buffer"])) for p in params]
    step(data(tracegrad, 3, 5, 8))
    after = [(_ptr(p), _ptr(p.grad), _ptr(opt.state[p]["momentum_buffer"])) for p in params]
    # zero_grad() drops each old .grad inside the step: its buffer receives the new gradient
    assert after == before


def test_adamw_state_reuses_buffers(donate_always):
    model, opt, step = _step(tracegrad, tracegrad.optim.AdamW, lr=1e-2)
    for i in range(3):
        step(data(tracegrad, i, 5, 8))
    keys = ("exp_avg", "exp_avg_sq")
    ptrs = lambda: [(_ptr(p), _ptr(p.grad)) + tuple(_ptr(opt.state[p][k]) for k in keys) for p in model.parameters()]
    before = ptrs()
    step(data(tracegrad, 3, 5, 8))
    assert ptrs() == before


@pytest.mark.parametrize("donate", [True, False])
def test_a_kept_grad_keeps_its_values(donate, monkeypatch):
    """A ``.grad`` tensor the user still holds is not donated: after the next call (whose
    zero_grad() sets ``.grad`` to None, as eager) it still holds the old gradient."""
    if donate:
        monkeypatch.setattr(_program, "DONATE_MIN_BYTES_CPU", 0)
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


def test_small_state_on_cpu_is_not_donated():
    """Below the threshold the old parameter buffers stay valid (not donated) and the step
    still updates the parameters."""
    model, opt, step = _step(tracegrad)
    for i in range(3):
        step(data(tracegrad, i, 5, 8))
    if any(d.platform != "cpu" for p in model.parameters() for d in p._value.devices()):
        pytest.skip("donation is always on off the CPU")
    old = [p._value for p in model.parameters()]
    values = [np.asarray(a).copy() for a in old]
    step(data(tracegrad, 3, 5, 8))
    assert not any(a.is_deleted() for a in old)
    for a, v, p in zip(old, values, model.parameters()):
        np.testing.assert_array_equal(np.asarray(a), v)
        assert not np.array_equal(p.detach().numpy(), v)


def test_donation_threshold_counts_bytes():
    import jax.numpy as jnp
    small = [jnp.zeros((4, 4))]
    assert not _program.worth_donating([]) and not _program.worth_donating(small) or \
        small[0].devices().pop().platform != "cpu"
    big = [jnp.zeros((_program.DONATE_MIN_BYTES_CPU // 4,), dtype=jnp.float32)]
    assert _program.worth_donating(big)
