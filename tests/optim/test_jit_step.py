"""optimizer.step() is traceable: forward + backward + step inside one hand-written
``jax.jit`` function (storages of parameters and optimizer state swapped for traced arrays)
gives the same parameters and state as eager tracegrad, step after step. No tensor value is
read in Python during ``step`` (a ``.item()``/``float()``/``bool()`` would raise under trace).
"""
import jax
import numpy as np
import pytest

import tracegrad
from parity import inputs, loss_fn, make_params, to_np

# the float64 oracle (or hand-written jax.jit) is this file's own JAX code: x64 on for it
pytestmark = pytest.mark.usefixtures("jax_x64")

CONFIGS = [
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.1)),
    ("Adam", dict(lr=0.02, amsgrad=True, weight_decay=0.05)),
    ("AdamW", dict(lr=0.02)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05)),
    ("Adadelta", dict(lr=0.5)),
    ("Adamax", dict(lr=0.02, weight_decay=0.01)),
    ("NAdam", dict(lr=0.02)),
    ("RAdam", dict(lr=0.02, betas=(0.8, 0.9))),   # rho_t crosses 5 within the 8 steps
]


def _state_arrays(opt, params):
    return [{k: v._st.array for k, v in opt.state[p].items() if isinstance(v, tracegrad.Tensor)}
            if p in opt.state else {} for p in params]


def _jit_train(name, kw, steps):
    params = make_params(tracegrad)
    x, y = inputs(tracegrad)
    opt = getattr(tracegrad.optim, name)(params, **kw)
    traces = []

    def train_step(p_arrays, s_arrays, x_arr, y_arr):
        traces.append(1)
        for p, a in zip(params, p_arrays):
            p._st.array = a
        for p, sd in zip(params, s_arrays):
            for k, a in sd.items():
                opt.state[p][k]._st.array = a
        opt.zero_grad()
        loss = loss_fn(tracegrad, params, tracegrad.Tensor._make(x_arr), tracegrad.Tensor._make(y_arr))
        loss.backward()
        opt.step()
        return [p._st.array for p in params], _state_arrays(opt, params), loss._value

    step = jax.jit(train_step)
    losses = []
    for _ in range(steps):
        p_out, s_out, loss = step([p._st.array for p in params], _state_arrays(opt, params),
                                  x._value, y._value)
        # write the results back into the same tensors (what tracegrad.compile will automate)
        for p, a in zip(params, p_out):
            p._st.array = a
            p.grad = None
        for p, sd in zip(params, s_out):
            for k, a in sd.items():
                opt.state[p][k]._st.array = a
        losses.append(float(loss))
    return params, opt, losses, len(traces)


def _eager_train(name, kw, steps):
    params = make_params(tracegrad)
    x, y = inputs(tracegrad)
    opt = getattr(tracegrad.optim, name)(params, **kw)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(tracegrad, params, x, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return params, opt, losses


@pytest.mark.parametrize("name,kw", CONFIGS, ids=[c[0] + str(i) for i, c in enumerate(CONFIGS)])
def test_jitted_train_step_equals_eager(name, kw):
    steps = 8
    pj, oj, lj, ntrace = _jit_train(name, kw, steps)
    pe, oe, le = _eager_train(name, kw, steps)
    # first call traces with empty lazily-created state, the second with state: no more
    assert ntrace <= 2
    np.testing.assert_allclose(lj, le, rtol=1e-5, atol=1e-6)
    for a, b in zip(pj, pe):
        np.testing.assert_allclose(to_np(a), to_np(b), rtol=1e-5, atol=1e-6)
    for a, b in zip(pj, pe):
        sj, se = oj.state.get(a, {}), oe.state.get(b, {})
        assert sorted(sj) == sorted(se)
        for k in se:
            assert sj[k].dtype is se[k].dtype
            np.testing.assert_allclose(to_np(sj[k]), to_np(se[k]), rtol=1e-5, atol=1e-6, err_msg=k)
    if "step" in oj.state.get(pj[0], {}):
        assert oj.state[pj[0]]["step"].item() == steps


def test_step_reads_no_tensor_value_under_trace():
    # a tensor holding a traced array refuses item()/bool(): step() must not call them
    p = tracegrad.tensor([1.0, -2.0], requires_grad=True)
    opt = tracegrad.optim.Adam([p], lr=0.1, amsgrad=True)

    def f(a, g):
        p._st.array = a
        p.grad = tracegrad.Tensor._make(g)
        opt.step()
        return p._st.array
    out = jax.jit(f)(p._st.array, np.array([0.5, 0.5], np.float32))
    assert out.shape == (2,)
    with pytest.raises(RuntimeError, match="concrete value"):
        jax.jit(lambda a: bool(tracegrad.Tensor._make(a).sum() > 0))(np.ones(2, np.float32))


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "NAdam"])
def test_tensor_lr_is_a_traced_input_no_retrace(name):
    """A Tensor lr (how a compiled step can lift a hyperparameter) flows into the traced step:
    changing it between calls changes the update without retracing."""
    p = tracegrad.tensor([1.0, -2.0, 0.5], requires_grad=True)
    lr = tracegrad.tensor(0.1)
    opt = getattr(tracegrad.optim, name)([p], lr=lr)
    p.grad = tracegrad.tensor([0.3, -0.2, 0.1])
    opt.step()                       # eager first step creates the state
    keys = sorted(opt.state[p])
    traces = []

    def f(p_arr, lr_arr, state):
        traces.append(1)
        p._st.array = p_arr
        lr._st.array = lr_arr
        for k in keys:
            opt.state[p][k]._st.array = state[k]
        p.grad = tracegrad.Tensor._make(p_arr * 0 + 0.25)
        opt.step()
        return p._st.array, {k: opt.state[p][k]._st.array for k in keys}

    jf = jax.jit(f)
    # eager twin for comparison
    q = tracegrad.tensor([1.0, -2.0, 0.5], requires_grad=True)
    lr_q = tracegrad.tensor(0.1)
    opt_q = getattr(tracegrad.optim, name)([q], lr=lr_q)
    q.grad = tracegrad.tensor([0.3, -0.2, 0.1])
    opt_q.step()
    p_arr, st = p._st.array, {k: opt.state[p][k]._st.array for k in keys}
    for value in (0.1, 0.01, 0.5):
        p_arr, st = jf(p_arr, np.float32(value), st)
        lr_q.fill_(value)
        q.grad = tracegrad.full_like(q, 0.25)
        opt_q.step()
        np.testing.assert_allclose(np.asarray(p_arr), to_np(q), rtol=1e-6, atol=1e-7)
    assert len(traces) == 1
