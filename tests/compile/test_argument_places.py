"""A compiled function that binds one of its tensor arguments to a Python place (``self.X = X``,
a dict entry, a closure variable, an item of a new tuple): eagerly the place holds the caller's
tensor object after the call, so later in-place writes through either are seen by the other
(``argument_places`` in tracegrad/_lowering/carry.py). Each program runs under torch,
tracegrad eager and tracegrad.compile (``compare``); the compiled run keeps one program unless
the place's previous tensor is read (then it must break to eager, with eager's values)."""
import pytest

import tracegrad
from tests.compile._dynamo_port import compare, randn32, seeded_linear

torch = pytest.importorskip("torch")

CALLS = 4


@pytest.mark.parametrize("where", ["module", "dict", "closure", "tuple", "twice"])
def test_argument_bound_to_a_place_is_the_callers_tensor(where):
    def build(T, wrap):
        net = seeded_linear(T)
        store = {}
        cell = [None]

        def f(x, y):
            nonlocal_cell = cell
            if where == "module":
                net.last_input = x
            elif where == "dict":
                store["x"] = x
            elif where == "closure":
                nonlocal_cell[0] = x
            elif where == "tuple":
                net.io = (x, y * 2)
            else:
                net.last_input = x
                store["again"] = x
            return (net(x) * y.sum()).sum()
        f = wrap(f)

        def run(i):
            x, y = randn32(T, i, 4, 3), randn32(T, i + 9, 2)
            out = f(x, y)
            place = {"module": lambda: net.last_input, "dict": lambda: store["x"], "closure": lambda: cell[0],
                     "tuple": lambda: net.io[0], "twice": lambda: store["again"]}[where]()
            is_x = place is x
            with T.no_grad():
                x.add_(1.0)          # the caller's write is seen through the place (same tensor)
            extra = [net.io[1]] if where == "tuple" else []
            return out, is_x, place, extra
        run.f = f
        return run
    compiled = compare(build, calls=CALLS)
    assert not compiled.f.stats["graph_breaks"], compiled.f.stats
    # the eager twin run in this process sets a tensor attribute of a module in eager code
    # (``net.last_input = x``), which makes every compiled function re-check module layouts (a
    # new trace); one compiled run alone keeps one program (test_public_patterns_round23.py)
    if where not in ("module", "twice"):
        assert compiled.f.stats["traces"] == 1, compiled.f.stats


def test_argument_requiring_grad_bound_then_backward_outside():
    def build(T, wrap):
        net = seeded_linear(T)

        def f(x):
            net.last_input = x
            return net(x).pow(2).sum()
        f = wrap(f)

        def run(i):
            x = randn32(T, i, 4, 3).requires_grad_()
            loss = f(x)
            loss.backward()
            grads = [p.grad.clone() for p in net.parameters()]
            for p in net.parameters():
                p.grad = None
            return loss, net.last_input is x, net.last_input.grad, grads
        return run
    compare(build, calls=CALLS)


def test_place_whose_previous_tensor_is_read_breaks_to_eager():
    # the function reads the argument the previous call stored: the program could not read
    # this call's stored tensor, so the call runs eagerly (with eager's values)
    def build(T, wrap):
        net = seeded_linear(T)
        net.prev = T.zeros(4, 3)

        def f(x):
            out = net(x + net.prev).sum()
            net.prev = x
            return out
        f = wrap(f)

        def run(i):
            x = randn32(T, i, 4, 3)
            return f(x), net.prev is x
        run.f = f
        return run
    compiled = compare(build, calls=CALLS)
    breaks = compiled.f.stats["graph_breaks"]
    assert breaks and "binds its tensor argument 0" in breaks[0][0], compiled.f.stats


def test_argument_bound_in_a_step_with_an_optimizer():
    # a training step that also keeps its batch on the model (``self.X = X``), as a GP's fit
    def build(T, wrap):
        net = seeded_linear(T)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            net.batch = (x, y)
            loss = (net(x) - y).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        step = wrap(step)

        def run(i):
            x, y = randn32(T, i, 4, 3), randn32(T, i + 5, 4, 2)
            loss = step(x, y)
            return loss, net.batch[0] is x, net.batch[1] is y, net.weight, net.bias
        run.f = step
        return run
    compiled = compare(build, calls=CALLS)
    assert compiled.f.stats["traces"] == 1 and not compiled.f.stats["graph_breaks"], compiled.f.stats


def test_fullgraph_binding_an_argument_traces():
    lin = tracegrad.nn.Linear(3, 2)

    @tracegrad.compile(fullgraph=True)
    def f(x):
        lin.seen = x
        return lin(x)
    for i in range(3):
        x = tracegrad.ones(2, 3) * i
        out = f(x)
        assert lin.seen is x
        assert tracegrad.allclose(out, lin(x))
