"""A compiled function or module without a step inside (forward only) is differentiable from
outside: ``loss.backward()`` accumulates into ``.grad`` as eager, ``retain_graph=True`` and a
second backward, ``autograd.grad`` w.r.t. inputs, no graph under ``no_grad``, several compiled
calls inside one graph; ``tracegrad.compile(model)``, ``model.compile()`` and the decorator
with and without arguments."""
import numpy as np
import pytest

import tracegrad

from . import _harness
from ._harness import _arr, assert_same, check_compiled, check_torch, data, np_init, snapshot


def _model(mod):
    return np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Tanh(), mod.nn.Linear(4, 2)), mod)


def outer_program(kind="backward", opt=False):
    """``wrap`` compiles only the forward ``f(x, y) -> loss``; the backward (and optimizer
    step) run outside. ``kind`` picks what happens with the outputs."""
    def make(mod, wrap):
        model = _model(mod)
        sgd = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if opt else None
        stash = {}

        def forward(x, y):
            return mod.nn.functional.mse_loss(model(x), y)
        f = wrap(forward)

        def step(x, y):
            if sgd is not None:
                sgd.zero_grad()
            if kind == "backward":
                loss = f(x, y)
                loss.backward()
            elif kind == "retain_graph":
                loss = f(x, y)
                loss.backward(retain_graph=True)
                loss.backward()
            elif kind == "two_calls":
                loss = f(x, y) + 0.5 * f(x * 2, y)
                loss.backward()
            elif kind == "input_grad":
                x = x.detach().requires_grad_(True)
                loss = f(x, y)
                stash["gx"], = mod.autograd.grad(loss, [x])
            elif kind == "no_grad":
                with mod.no_grad():
                    loss = f(x, y)
            if sgd is not None:
                sgd.step()
            return loss
        step.compiled = f
        return step, {"model": model, "stash": stash, **({"opt": sgd} if sgd else {})}, \
            lambda i: (data(mod, i, 5, 3), data(mod, i, 5, 2, seed=300))
    return make


@pytest.mark.parametrize("kind", ["backward", "retain_graph", "two_calls", "input_grad", "no_grad"])
def test_forward_only_differentiable_from_outside(kind):
    run = check_compiled(outer_program(kind), calls=4)
    f = run.step.compiled
    assert f.stats["traces"] >= 1 and not f.stats["graph_breaks"]
    if kind == "no_grad":
        assert all(not s["out"]["requires_grad"] for s in run.snaps)


def test_forward_only_with_optimizer_outside_torch_parity():
    check_torch(outer_program("backward", opt=True), calls=4)


def test_result_has_one_compiled_node_and_second_backward_raises():
    model = _model(tracegrad)
    f = tracegrad.compile(lambda x: model(x).pow(2).sum())
    x = data(tracegrad, 0, 5, 3)
    for _ in range(3):
        loss = f(x)
    assert type(loss.grad_fn).__name__ == "CompiledFunctionBackward"
    assert loss.requires_grad and not loss.is_leaf
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_compile_module_state_dict_prefix_and_parity():
    torch = pytest.importorskip("torch")
    results = {}
    for mod in (torch, tracegrad):
        model = _model(mod)
        cm = mod.compile(model) if mod is tracegrad else model
        if mod is tracegrad:
            assert all(k.startswith("_orig_mod.") for k in cm.state_dict())
            assert [k[len("_orig_mod."):] for k in cm.state_dict()] == list(model.state_dict())
        for i in range(3):
            out = cm(data(mod, i, 5, 3))
            out.pow(2).mean().backward()
        results[mod.__name__] = snapshot({"out": out, "model": model})
    assert_same(results["torch"], results["tracegrad"], rtol=1e-4, atol=1e-5)


def test_module_compile_in_place_matches_eager():
    eager_model, comp_model = _model(tracegrad), _model(tracegrad)
    keys = list(comp_model.state_dict())
    assert comp_model.compile() is None
    assert list(comp_model.state_dict()) == keys        # in place: no prefix
    for i in range(4):
        x = data(tracegrad, i, 5, 3)
        e, c = eager_model(x), comp_model(x)
        e.sum().backward()
        c.sum().backward()
        assert_same(snapshot({"out": e, "m": eager_model}), snapshot({"out": c, "m": comp_model}))


def test_decorator_with_and_without_arguments():
    model = _model(tracegrad)

    @tracegrad.compile
    def f1(x):
        return model(x).sum()

    @tracegrad.compile(fullgraph=True)
    def f2(x):
        return model(x).sum()
    x = data(tracegrad, 0, 5, 3)
    want = _arr(model(x).sum())
    for _ in range(3):
        np.testing.assert_allclose(_arr(f1(x)), want, rtol=1e-6)
        np.testing.assert_allclose(_arr(f2(x)), want, rtol=1e-6)
    assert f1.__name__ == "f1" and f2.fullgraph
    assert f1.stats["traces"] >= 1 and f2.stats["traces"] >= 1


def test_compiled_module_trained_with_outside_optimizer():
    def make(mod, wrap):
        model = _model(mod)
        cm = mod.compile(model) if wrap is not IDENTITY else model
        opt = mod.optim.Adam(model.parameters(), lr=0.05)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.mse_loss(cm(x), y)
            loss.backward()
            opt.step()
            return loss
        return step, {"model": model, "opt": opt}, lambda i: (data(mod, i, 5, 3), data(mod, i, 5, 2, seed=300))
    eager = _harness.run_program(make, tracegrad, IDENTITY, 4)
    comp = _harness.run_program(make, tracegrad, tracegrad.compile, 4)
    for e, c in zip(eager.snaps, comp.snaps):
        assert_same(e, c)


def IDENTITY(f):
    return f


def stateful_forward_program(mod, wrap):
    """A forward with BatchNorm (running stats written by the forward) and Dropout (mask drawn
    in the forward, used by the backward), two outputs of which the loss uses one; the raw
    activation is stashed without detach."""
    nn = mod.nn
    model = np_init(nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Dropout(0.4), nn.Linear(4, 2)), mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    stash = {}

    def forward(x):
        h = model[2](model[1](model[0](x)))
        stash["h"] = h
        return model[3](h), h.sum(1)
    f = wrap(forward)

    def step(x, y):
        opt.zero_grad()
        out, aux = f(x)
        mod.nn.functional.mse_loss(out, y).backward()
        opt.step()
        return out, aux
    step.compiled = f
    return step, {"model": model, "opt": opt, "stash": stash}, \
        lambda i: (data(mod, i, 5, 3), data(mod, i, 5, 2, seed=300))


def test_stateful_forward_only_with_two_outputs():
    check_compiled(stateful_forward_program, calls=4)


def test_unfrozen_layer_gets_optimizer_state_later():
    def make(mod, wrap):
        model = _model(mod)
        model[0].requires_grad_(False)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 5, 3), data(mod, i, 5, 2, seed=300))

    def between(state, i):
        if i == 1:
            state["model"][0].requires_grad_(True)
    check_compiled(make, calls=5, between=between)


def test_optimized_module_api():
    torch = pytest.importorskip("torch")
    for mod in (torch, tracegrad):
        model = _model(mod)
        cm = mod.compile(model)
        assert cm._orig_mod is model
        assert [id(p) for p in cm.parameters()] == [id(p) for p in model.parameters()]
        cm.eval()
        assert not model.training
        cm.train()
        assert model.training
        sd = {k: v.clone() * 0 for k, v in cm.state_dict().items()}
        cm.load_state_dict(sd)
        assert float(model[0].weight.abs().sum()) == 0.0


def _cut_no_grad(T, x, w):
    with T.no_grad():
        t = x * 2
    return t + x * 3 * w


def _cut_inplace_mul(T, x, w):
    y = x * w
    with T.no_grad():
        y.mul_(2)                 # unrecorded: y's history stays (the write passes the gradient)
    return y * x


def _cut_inplace_other(T, x, w):
    y = x * 1.0
    with T.no_grad():
        y.add_(w)                 # no gradient reaches w through this write
    return y * w


def _cut_detach_alias_written(T, x, w):
    y = x * w
    z = y.detach()
    z.mul_(3)                     # changes y's value, not its history
    return y + x


@pytest.mark.parametrize("fn", [_cut_no_grad, _cut_inplace_mul, _cut_inplace_other, _cut_detach_alias_written,
                                lambda T, x, w: x.data * w + x, lambda T, x, w: (x * 2).detach() + x * 3 * w])
def test_values_outside_the_graph_give_no_gradient_through_a_compiled_forward(fn):
    """Inside a compiled forward differentiated from outside, gradients follow torch's graph,
    not the data flow: a value made under no_grad, a detached value, ``.data``, and in-place
    writes that record nothing (NOTE [gradients in a differentiated trace]); against eager and
    torch, on every call."""
    torch = pytest.importorskip("torch")

    def grads(T, f):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        w = T.tensor([0.5, -1.0], requires_grad=True)
        f(x, w).sum().backward()
        return np.concatenate([x.grad.detach().numpy(), w.grad.detach().numpy()])
    expect = grads(torch, lambda x, w: fn(torch, x, w))
    cf = tracegrad.compile(lambda x, w: fn(tracegrad, x, w))
    for _ in range(3):
        np.testing.assert_allclose(grads(tracegrad, cf), expect, rtol=1e-6)
    assert cf.stats["traces"] == 1


def test_create_graph_through_a_compiled_forward_gives_gradients_and_refuses_double_backward():
    """As torch.compile: ``autograd.grad(..., create_graph=True)`` through a compiled forward
    returns the gradients (requiring grad); a backward through them raises RuntimeError."""
    def run(compiled):
        tracegrad.manual_seed(0)
        m = tracegrad.nn.Sequential(tracegrad.nn.Linear(4, 6), tracegrad.nn.Tanh(), tracegrad.nn.Linear(6, 2))
        f = tracegrad.compile(m) if compiled else m
        outs = []
        for i in range(3):
            x = (tracegrad.arange(12.0).reshape(3, 4) * (0.1 * i - 0.2)).requires_grad_()
            g, = tracegrad.autograd.grad(f(x).sum(), x, create_graph=True)
            outs.append((g.detach().numpy(), g.requires_grad))
        return outs, g
    eager, _ = run(False)
    compiled, g = run(True)
    for (a, ra), (b, rb) in zip(compiled, eager):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        assert ra and rb
    with pytest.raises(RuntimeError, match="double backward"):
        g.pow(2).sum().backward()


class _KeepsLoss:
    """A model whose forward stores its loss on itself and returns the logits (llama2.c's
    ``self.last_loss``), for both libraries."""

    @staticmethod
    def build(mod):
        class Net(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = mod.nn.Linear(3, 4)
                self.last_loss = None

            def forward(self, x, y=None):
                logits = self.fc(x).tanh()
                if y is not None:
                    self.last_loss = mod.nn.functional.cross_entropy(logits, y)
                return logits
        return np_init(Net(), mod, 3)


def test_loss_stored_by_a_compiled_forward_backpropagates():
    # NOTE [kept graphs]: the stored loss is an output of the region's VJP, as eagerly
    torch = pytest.importorskip("torch")
    runs = {}
    for mod, compiled in ((tracegrad, False), (tracegrad, True), (torch, False)):
        model = _KeepsLoss.build(mod)
        f = tracegrad.compile(model) if compiled else model
        opt = mod.optim.SGD(model.parameters(), lr=0.5)
        logs = []
        for i in range(4):
            x = mod.tensor(np.random.RandomState(i).randn(5, 3).astype(np.float32))
            y = mod.tensor(np.arange(5) % 4)
            logits = f(x, y)
            loss = model.last_loss
            (loss + 0.1 * logits.square().mean()).backward()     # both outputs reach the weights
            logs.append((loss.item(), loss.requires_grad, model.fc.weight.grad.numpy().copy()))
            opt.step()
            opt.zero_grad()
        runs[(mod.__name__, compiled)] = logs
    for key in (("tracegrad", True), ("torch", False)):
        for a, b in zip(runs[("tracegrad", False)], runs[key]):
            assert a[1] == b[1] is True
            np.testing.assert_allclose(a[0], b[0], rtol=1e-5)
            np.testing.assert_allclose(a[2], b[2], rtol=1e-4, atol=1e-6)


def test_loss_stored_by_a_compiled_function_without_differentiable_results_backpropagates():
    torch = pytest.importorskip("torch")
    grads = {}
    for mod, compiled in ((torch, False), (tracegrad, True)):
        model = _KeepsLoss.build(mod)
        step = lambda x, y: (model(x, y).detach(), None)[1]
        f = tracegrad.compile(step) if compiled else step
        x, y = mod.tensor(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)), mod.tensor(np.arange(5) % 4)
        for _ in range(3):
            f(x, y)
            model.last_loss.backward()
        grads[mod.__name__] = model.fc.weight.grad.numpy()
    np.testing.assert_allclose(grads["tracegrad"], grads["torch"], rtol=1e-4, atol=1e-6)


def test_loss_stored_by_a_step_that_ran_backward_cannot_backward_again():
    # the step's backward() consumed the stored loss's graph: a second backward raises, as eagerly
    model = _KeepsLoss.build(tracegrad)

    def step(x, y):
        model(x, y)
        model.last_loss.backward()
    f = tracegrad.compile(step)
    x, y = tracegrad.randn(5, 3), tracegrad.tensor(np.arange(5) % 4)
    for _ in range(3):
        f(x, y)
        with pytest.raises(RuntimeError):
            model.last_loss.backward()
