"""Round 3 of PyTorch's own tests ported (issue 10): autograd hook ordering and grad-call edge
cases from test/test_autograd.py, grad-mode objects on generators, module hooks from
test/nn/test_module_hooks.py, DataLoader from test/test_dataloader.py and optimizers from
test/test_optim.py. Each test names its original; bodies run under torch and tracegrad (the
``T`` fixture), so torch 2.13 checks every expectation the port makes."""
import asyncio
import collections
import copy

import numpy as np
import pytest


def _np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


# ==== autograd: hook ordering ================================================================
def test_prehook_ordering(T):
    # TestAutograd.test_prehook_ordering: tensor hooks run before the grad_fn's pre-hooks, in
    # registration order within each kind; autograd.grad runs them on the AccumulateGrad node
    log = []

    def hook1(g):
        log.append(1)
        return g * 3

    def hook2(gs):
        log.append(2)
        return tuple(g * 2 for g in gs)

    a = T.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.grad_fn.register_prehook(hook2)
    b.register_hook(hook1)
    b.grad_fn.register_prehook(hook2)
    acc = b.grad_fn.next_functions[0][0]
    a.register_hook(hook1)
    acc.register_prehook(hook2)
    a.register_hook(hook1)

    b.sum().backward(retain_graph=True)
    assert log == [1, 2, 2, 1, 1, 2]
    log.clear()
    T.autograd.grad(b.sum(), inputs=(a,), retain_graph=True)
    assert log == [1, 2, 2, 1, 1]
    log.clear()
    b.retain_grad()
    b.sum().backward(inputs=(b,))
    assert log == [1, 2, 2]
    # the retained grad is the one after the tensor hooks, before the Node pre-hooks
    assert b.grad.item() == 3


def test_retains_grad_can_always_observe_tensor_prehook(T):
    # TestAutograd.test_retains_grad_can_always_observe_tensor_prehook: retain_grad sees every
    # tensor hook, the ones registered after it too
    a = T.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.register_hook(lambda g: g * 2)
    b.retain_grad()
    b.register_hook(lambda g: g * 2)
    b.clone().backward()
    assert b.grad.item() == 4

    a = T.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.retain_grad()
    b.register_hook(lambda g: g * 2)
    b.clone().backward()
    assert b.grad.item() == 2


def test_accumulate_grad_posthooks_can_observe_tensor_prehook(T):
    # TestAutograd.test_accumulate_grad_posthooks_can_observe_tensor_prehook
    a = T.tensor(1.0, requires_grad=True)
    seen = []
    b = a.clone()
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(lambda gI, gO: seen.append(("post", len(gI), _np(gO[0]).tolist())))
    acc.register_prehook(lambda gO: seen.append(("pre", len(gO), _np(gO[0]).tolist())))
    a.register_hook(lambda g: g * 2)
    b.backward()
    assert seen == [("pre", 1, 2.0), ("post", 0, 2.0)]
    assert a.grad.item() == 2.0


def test_accumulate_grad_posthooks_should_not_execute(T):
    # TestAutograd.test_accumulate_grad_posthooks_should_not_execute: with inputs=[b], neither
    # a's tensor hook nor the AccumulateGrad post-hook of another leaf runs
    def boom(*args):
        raise RuntimeError("must not run")

    a = T.tensor(1.0, requires_grad=True)
    a.register_hook(boom)
    b = T.tensor(1.0, requires_grad=True)
    c = a.clone()
    c.grad_fn.next_functions[0][0].register_hook(boom)
    (a + b + c).sum().backward(inputs=[b])
    assert b.grad.item() == 1.0 and a.grad is None


def test_hook_edge_case_when_called_with_grad(T):
    # TestAutograd.test_hook_edge_case_when_called_with_grad: autograd.grad runs the tensor
    # hooks of an input but not the pre/post hooks of nodes it does not execute
    counts = {"tensor": 0, "pre": 0, "post": 0}

    def bump(k):
        def f(*args):
            counts[k] += 1
        return f

    a = T.tensor(1.0, requires_grad=True)
    b = a * 2
    c = b * 2
    a.register_hook(bump("tensor"))
    b.register_hook(bump("tensor"))
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(bump("post"))
    acc.register_prehook(bump("pre"))
    b.grad_fn.register_hook(bump("post"))
    b.grad_fn.register_prehook(bump("pre"))

    def run(fn, expected):
        for k in counts:
            counts[k] = 0
        fn()
        assert counts == dict(zip(("tensor", "pre", "post"), expected))

    run(lambda: T.autograd.grad(c, inputs=(b,), retain_graph=True), (1, 0, 0))
    run(lambda: T.autograd.grad(c, inputs=(a, b), retain_graph=True), (2, 1, 1))
    run(lambda: c.backward(retain_graph=True), (2, 2, 2))
    run(lambda: c.backward(inputs=(a, b), retain_graph=True), (2, 2, 2))


def test_post_accumulate_grad_hook_multiple_hooks(T):
    # TestAutograd.test_post_accumulate_grad_hook_multiple_hooks: both run, in order
    t = T.rand(3, requires_grad=True)
    ref = _np(t)
    t.register_post_accumulate_grad_hook(lambda x: x.sub_(x.grad))
    t.register_post_accumulate_grad_hook(lambda x: x.mul_(4.0))
    t.sum().backward()
    np.testing.assert_allclose(_np(t), 4.0 * (ref - 1.0), rtol=1e-6)


def test_post_accumulate_grad_hook_multiple_tensors(T):
    # TestAutograd.test_post_accumulate_grad_hook_multiple_tensors
    t1, t2 = T.rand(3, requires_grad=True), T.rand(5, requires_grad=True)
    r1, r2 = _np(t1), _np(t2)
    for t in (t1, t2):
        t.register_post_accumulate_grad_hook(lambda x: x.sub_(x.grad))
    t1.sum().backward()
    t2.sum().backward()
    np.testing.assert_allclose(_np(t1), r1 - 1.0, rtol=1e-6)
    np.testing.assert_allclose(_np(t2), r2 - 1.0, rtol=1e-6)


def test_post_accumulate_grad_hook_returns_grad_is_error(T):
    # TestAutograd.test_post_accumulate_grad_hook_returns_not_None (returning tensor.grad)
    t = T.rand(2, 3, requires_grad=True)
    t.register_post_accumulate_grad_hook(lambda x: x.grad)
    with pytest.raises(RuntimeError, match="hooks should return None"):
        t.sum().backward()


def test_post_accumulate_grad_hook_e2e(T):
    # TestAutograd.test_post_accumulate_grad_hook_e2e: an optimizer step per parameter from the
    # hook matches stepping after backward; removing the handles stops the updates
    T.manual_seed(0)
    model = T.nn.Linear(3, 2)
    x = T.rand(2, 3)
    model_copy = copy.deepcopy(model)
    optims = {p: T.optim.Adam([p]) for p in model.parameters()}

    def step_hook(p):
        optims[p].step()
        optims[p].zero_grad()

    handles = [p.register_post_accumulate_grad_hook(step_hook) for p in model.parameters()]
    opt_copy = T.optim.Adam(model_copy.parameters())

    def both():
        model(x).sum().backward()
        model_copy(x).sum().backward()
        opt_copy.step()
        opt_copy.zero_grad()

    for _ in range(3):
        both()
    frozen = []
    for pr, p in zip(model_copy.parameters(), model.parameters()):
        np.testing.assert_allclose(_np(p), _np(pr), rtol=1e-5, atol=1e-6)
        frozen.append(_np(pr))
    for h in handles:
        h.remove()
    for _ in range(3):
        both()
    for f, pr, p in zip(frozen, model_copy.parameters(), model.parameters()):
        np.testing.assert_array_equal(_np(p), f)
        assert not np.allclose(_np(pr), f)


def test_hook_with_no_name(T):
    # TestAutograd.test_hook_with_no_name: a callable object without __name__ works as a hook
    class Hook:
        def __call__(self, grad):
            return grad.clone()

    x = T.randn(5, requires_grad=True)
    y = x.clone()
    y.register_hook(Hook())
    y.sum().backward()
    assert _np(x.grad).tolist() == [1.0] * 5


def test_backward_and_grad_badcalls(T):
    # TestAutograd.test_backward_badcalls / test_grad_badcalls
    x = T.ones(1)
    with pytest.raises(RuntimeError, match="does not require grad"):
        x.backward()
    y = x ** 2
    with pytest.raises(RuntimeError, match="does not require grad"):
        T.autograd.grad(x, y)
    with pytest.raises(RuntimeError, match="does not require grad"):
        T.autograd.grad(y, x)
    x = T.ones(1, requires_grad=True)
    assert _np(T.autograd.grad(x ** 2, x)[0]).tolist() == [2.0]


def test_grad_unreachable_discovery(T):
    # TestAutograd.test_grad_unreachable_discovery: a node that cannot reach the inputs is
    # not executed
    class MyFunc(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("this node must not run")

    x = MyFunc.apply(T.randn(1, requires_grad=True) * 2)
    y = T.randn(1, requires_grad=True)
    (gy,) = T.autograd.grad(x, (y,), allow_unused=True)
    assert gy is None
    x = MyFunc.apply(T.randn(1, requires_grad=True) * 2)
    z = T.randn(1, requires_grad=True)
    gy, gz = T.autograd.grad(x + z, (y, z), allow_unused=True)
    assert gy is None and gz is not None
    x = MyFunc.apply(T.randn(1, requires_grad=True) * 2)
    T.autograd.backward(x, inputs=(y,))
    assert y.grad is None


def test_sharded_grad(T):
    # TestAutograd.test_sharded_grad: grads of intermediates in chunks, then backward from them
    leaves = [T.zeros(5, 5, requires_grad=True) for _ in range(6)]
    inter = [leaf * i + leaf * leaf for i, leaf in enumerate(leaves)]
    loss = sum(v * i for i, v in enumerate(inter)).sum()
    d = [g for k in range(0, len(inter), 2) for g in T.autograd.grad(loss, inter[k:k + 2])]
    T.autograd.backward(inter, d)
    for i, leaf in enumerate(leaves):
        np.testing.assert_allclose(_np(leaf.grad), i * i * (1 + _np(leaf)))
