"""Ported from PyTorch's test/nn/test_module_hooks.py and test/test_optim.py (differentiable
optimizers); each body runs under torch and tracegrad (the ``T`` fixture)."""
import numpy as np
import pytest


def _np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


def test_module_hook_order(T):
    # TestModuleHooks.test_forward_hooks / test_full_backward_pre_hooks: firing order
    log = []
    m = T.nn.Linear(2, 2)
    m.register_forward_pre_hook(lambda mod, a: log.append("pre"))
    m.register_forward_hook(lambda mod, a, o: log.append("fwd"))
    m.register_full_backward_pre_hook(lambda mod, go: log.append("bpre"))
    m.register_full_backward_hook(lambda mod, gi, go: log.append("bwd"))
    m(T.ones(1, 2, requires_grad=True)).sum().backward()
    assert log == ["pre", "fwd", "bpre", "bwd"]


def test_forward_hooks_prepend_and_always_call(T):
    # TestModuleHooks.test_forward_hooks (prepend) / test_always_called_forward_hooks
    log = []
    m = T.nn.Linear(2, 2)
    m.register_forward_hook(lambda *a: log.append(1))
    m.register_forward_hook(lambda *a: log.append(2), prepend=True)
    m(T.ones(1, 2))
    assert log == [2, 1]
    log.clear()
    m.register_forward_pre_hook(lambda *a: 1 / 0)
    m.register_forward_hook(lambda *a: log.append("always"), always_call=True)
    with pytest.raises(ZeroDivisionError):
        m(T.ones(1, 2))
    assert log == ["always"]


def test_forward_hooks_with_kwargs_replace_output(T):
    # TestModuleHooks.test_forward_hooks with_kwargs=True: a returned value replaces the output
    m = T.nn.Linear(2, 2)
    m.register_forward_pre_hook(lambda mod, a, k: (a, k), with_kwargs=True)
    m.register_forward_hook(lambda mod, a, k, o: o * 0, with_kwargs=True)
    assert _np(m(T.ones(1, 2))).tolist() == [[0.0, 0.0]]


def test_full_backward_hook_replaces_grad_input(T):
    # TestModuleHooks.test_full_backward_hooks: the hook's return replaces grad_input
    m = T.nn.Linear(2, 2)
    x = T.ones(1, 2, requires_grad=True)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0 + 5,))
    m(x).sum().backward()
    assert _np(x.grad).tolist() == [[5.0, 5.0]]


def test_hook_handle_remove(T):
    # TestModuleHooks.test_remove_hooks-style
    log = []
    m = T.nn.Linear(2, 2)
    h = m.register_forward_hook(lambda *a: log.append(1))
    h.remove()
    m(T.ones(1, 2))
    assert log == []


def _through_step(T, name, kw, steps=2):
    p = T.tensor([1.0, 2.0], requires_grad=True)
    w = p.clone()
    opt = getattr(T.optim, name)([w], lr=0.1, differentiable=True, **kw)
    for _ in range(steps):
        w.grad = w * 2
        opt.step()
    w.sum().backward()
    return _np(p.grad)


@pytest.mark.parametrize("name,kw", [("SGD", {}), ("SGD", {"momentum": 0.9}), ("Adam", {}),
                                     ("AdamW", {"weight_decay": 0.1})])
def test_differentiable_optimizer_step(name, kw):
    # test_optim: TestOptimRenewed.test_differentiable (gradcheck of step w.r.t. params/grads):
    # gradients flow through step() into what the parameter and its .grad were computed from
    import torch
    import tracegrad
    np.testing.assert_allclose(_through_step(tracegrad, name, kw), _through_step(torch, name, kw), rtol=1e-5)


def test_differentiable_amsgrad_second_step_raises_as_torch():
    # torch 2.13 too: maximum() saves exp_avg_sq, which the next step's mul_ writes in place
    import torch
    import tracegrad
    for T in (torch, tracegrad):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            _through_step(T, "Adam", {"amsgrad": True})
        _through_step(T, "Adam", {"amsgrad": True}, 1)


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_differentiable_adam_one_step(name):
    # the single-step half of TestOptimRenewed.test_differentiable for Adam/AdamW
    import torch
    import tracegrad
    np.testing.assert_allclose(_through_step(tracegrad, name, {}, 1), _through_step(torch, name, {}, 1), rtol=1e-5)
