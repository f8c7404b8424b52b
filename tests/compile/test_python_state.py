"""Python-side effects and structure around compiled steps: tensors appended to a Python list
inside the step, a Python counter that decides when to step (gradient accumulation), a new
param group added between calls, inputs that require grad, compiled functions nested and
used as methods, an evaluation function under no_grad."""
import pytest

import tracegrad

from ._harness import check_compiled, data, np_init


def mlp(mod):
    return np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Tanh(), mod.nn.Linear(4, 2)), mod)


def batch(mod, rows=5):
    return lambda i: (data(mod, i, rows, 3), data(mod, i, rows, 2, seed=300))


def history_program(mod, wrap):
    model, history = mlp(mod), []
    opt = mod.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = mod.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        history.append(loss.detach())          # a list of this run's losses
        return loss
    return wrap(step), {"model": model, "opt": opt, "history": history}, batch(mod)


def accumulate_program(mod, wrap):
    model, it = mlp(mod), [0]
    opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x, y):
        (mod.nn.functional.mse_loss(model(x), y) / 2).backward()
        it[0] += 1
        if it[0] % 2 == 0:                      # step every second call
            opt.step()
            opt.zero_grad()
        return it[0]
    return wrap(step), {"model": model, "opt": opt, "it": it}, batch(mod)


def test_tensors_appended_to_python_list_every_call():
    check_compiled(history_program, calls=4)


def test_python_counter_decides_optimizer_step():
    check_compiled(accumulate_program, calls=5)


def test_add_param_group_between_calls():
    extra = {}

    def make(mod, wrap):
        model = mlp(mod)
        opt = mod.optim.Adam(model[0].parameters(), lr=0.05)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": model, "opt": opt}, batch(mod)

    def between(state, i):
        if i == 1:
            state["opt"].add_param_group({"params": list(state["model"][2].parameters()), "lr": 0.01})
    check_compiled(make, calls=4, between=between)


def test_inputs_requiring_grad():
    def make(mod, wrap):
        model = mlp(mod)
        got = {}

        def step(x, y):
            loss = mod.nn.functional.mse_loss(model(x), y)
            loss.backward()
            got["x"] = x
            return loss

        def mk(i):
            x, y = batch(mod)(i)
            return x.requires_grad_(True), y
        return wrap(step), {"model": model, "got": got}, mk
    check_compiled(make, calls=4)


def test_nested_compiled_function_and_method():
    class Trainer:
        def __init__(self, mod):
            self.mod, self.model = mod, mlp(mod)
            self.opt = mod.optim.SGD(self.model.parameters(), lr=0.1)
            self.fwd = tracegrad.compile(lambda x, y: mod.nn.functional.mse_loss(self.model(x), y))

        @tracegrad.compile
        def step(self, x, y):
            self.opt.zero_grad()
            loss = self.fwd(x, y)
            loss.backward()
            self.opt.step()
            return loss

    def make(mod, wrap):
        t = Trainer(mod)
        step = t.step if wrap is not IDENTITY else (lambda x, y: Trainer.step.__wrapped__(t, x, y))
        return step, {"model": t.model, "opt": t.opt}, batch(mod)
    from . import _harness
    eager = _harness.run_program(make, tracegrad, IDENTITY, 4)
    comp = _harness.run_program(make, tracegrad, tracegrad.compile, 4)
    for e, c in zip(eager.snaps, comp.snaps):
        _harness.assert_same(e, c)
    assert Trainer.step.stats["traces"] >= 1


def test_evaluate_under_no_grad():
    def make(mod, wrap):
        model = mlp(mod)

        @mod.no_grad()
        def evaluate(x, y):
            out = model(x)
            return (out.argmax(1) == y.argmax(1)).float().mean(), mod.nn.functional.mse_loss(out, y)
        return wrap(evaluate), {"model": model}, batch(mod)
    run = check_compiled(make, calls=3)
    assert not run.snaps[-1]["out"][1]["requires_grad"]


def IDENTITY(f):
    return f
