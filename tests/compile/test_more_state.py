"""More state seen across compiled calls: Adam betas and maximize changed, Python keyword
arguments, a new .grad tensor set outside, a Parameter rebound on the module, a counter
buffer written in forward, clip_grad_norm_'s returned norm, activation checkpointing."""
import pytest

import tracegrad

from ._harness import check_compiled, data, np_init


def mlp(mod):
    return np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Tanh(), mod.nn.Linear(4, 2)), mod)


def batch(mod, rows=5):
    return lambda i: (data(mod, i, rows, 3), data(mod, i, rows, 2, seed=300))


def adam_program(mod, wrap):
    model = mlp(mod)
    opt = mod.optim.Adam(model.parameters(), lr=0.05)

    def step(x, y, alpha=1.0):
        opt.zero_grad()
        loss = mod.nn.functional.mse_loss(model(x), y) * alpha
        loss.backward()
        norm = mod.nn.utils.clip_grad_norm_(model.parameters(), 0.3)
        opt.step()
        return loss, norm
    return wrap(step), {"model": model, "opt": opt}, batch(mod)


def test_adam_options_changed_between_calls():
    changes = {1: ("betas", (0.5, 0.9)), 2: ("maximize", True), 3: ("eps", 1e-3)}

    def between(state, i):
        if i in changes:
            key, value = changes[i]
            state["opt"].param_groups[0][key] = value
    check_compiled(adam_program, calls=5, between=between)


def test_python_keyword_argument_changes():
    def make(mod, wrap):
        step, state, b = adam_program(mod, wrap)
        return step, state, lambda i: b(i)

    def call_make(mod, wrap):
        step, state, b = make(mod, wrap)
        n = [0]

        def call(x, y):
            n[0] += 1
            return step(x, y, alpha=0.5 * n[0])
        return call, state, b
    check_compiled(call_make, calls=4)


def test_new_grad_tensor_set_outside():
    def make(mod, wrap):
        model = mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            mod.nn.functional.mse_loss(model(x), y).backward()     # accumulates into .grad
            opt.step()
            return model[0].weight.grad.sum()
        return wrap(step), {"model": model, "opt": opt}, batch(mod)

    def between(state, i):
        for p in state["model"].parameters():
            p.grad = tracegrad.full_like(p, 0.01 * i)
    check_compiled(make, calls=4, between=between)


def test_parameter_rebound_on_module():
    def between(state, i):
        if i == 1:
            m = state["model"][2]
            m.weight = tracegrad.nn.Parameter(m.weight.detach() * 2)
    check_compiled(adam_program, calls=4, between=between)


def test_counter_buffer_written_in_forward():
    def make(mod, wrap):
        class Counting(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = mod.nn.Linear(3, 2)
                self.register_buffer("seen", mod.zeros((), dtype=mod.int64))
                self.register_buffer("avg", mod.zeros(2))

            def forward(self, x):
                self.seen.add_(x.shape[0])
                out = self.lin(x)
                with mod.no_grad():
                    self.avg.mul_(0.9).add_(out.mean(0), alpha=0.1)
                return out
        model = np_init(Counting(), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": model, "opt": opt}, batch(mod)
    check_compiled(make, calls=4)


@pytest.mark.parametrize("reentrant", [False, True])
def test_activation_checkpoint_inside_step(reentrant):
    def make(mod, wrap):
        model = mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            h = mod.utils.checkpoint.checkpoint(lambda t: model[1](model[0](t)), x, use_reentrant=reentrant)
            loss = mod.nn.functional.mse_loss(model[2](h), y)
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": model, "opt": opt}, \
            lambda i: (data(mod, i, 5, 3).requires_grad_(reentrant), data(mod, i, 5, 2, seed=300))
    check_compiled(make, calls=4)


def test_autocast_around_and_inside_compiled_step():
    """A program traced outside autocast is not reused inside it, and autocast entered inside
    the step is traced as eagerly."""
    def make(mod, wrap):
        model = mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y, inner):
            opt.zero_grad()
            if inner:
                with mod.autocast("cpu", dtype=mod.bfloat16):
                    out = model(x)
            else:
                out = model(x)
            loss = mod.nn.functional.mse_loss(out.float(), y)
            loss.backward()
            opt.step()
            return loss, out.dtype == mod.bfloat16
        n = [0]

        def call(x, y):
            n[0] += 1
            if n[0] in (3, 4):
                with mod.autocast("cpu", dtype=mod.bfloat16):
                    return step(x, y, False)
            return step(x, y, n[0] >= 5)
        call.compiled = step
        return call, {"model": model, "opt": opt}, batch(mod)
    run = check_compiled(make, calls=6, rtol=1e-2, atol=1e-3)
    assert [s["out"][1] for s in run.snaps] == [False, False, True, True, True, True]
