"""Compiled training steps equal eager ones for every optimizer in tracegrad.optim, with
gradient clipping inside, accumulation without zero_grad, zero_grad(set_to_none=False),
grads set to None outside, frozen/unused parameters and a new batch size."""
import numpy as np
import pytest

import tracegrad

from ._harness import check_compiled, check_torch, data, np_init

OPTIMIZERS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, dampening=0.0)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, amsgrad=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
    ("Adadelta", dict(lr=1.0)),
    ("Adamax", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05)),
    ("Rprop", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, t0=2)),
]


def mlp(mod, opt_name="SGD", opt_kw=None, clip=None, zero=True, set_to_none=True, bs=lambda i: 5):
    """A 3-4-2 tanh MLP trained on MSE; ``clip`` is None, "norm" or "value"."""
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Tanh(), mod.nn.Linear(4, 2)), mod)
        opt = getattr(mod.optim, opt_name)(model.parameters(), **(opt_kw or {"lr": 0.1}))

        def step(x, y):
            if zero:
                opt.zero_grad(set_to_none=set_to_none)
            loss = mod.nn.functional.mse_loss(model(x), y)
            loss.backward()
            if clip == "norm":
                mod.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            elif clip == "value":
                mod.nn.utils.clip_grad_value_(model.parameters(), 0.05)
            opt.step()
            return loss
        return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, bs(i), 3), data(mod, i, bs(i), 2, seed=300))
    return make


@pytest.mark.parametrize("name,kw", OPTIMIZERS, ids=[f"{n}-{'-'.join(k for k in kw if k != 'lr') or 'plain'}" for n, kw in OPTIMIZERS])
def test_optimizer_step(name, kw):
    run = check_compiled(mlp(tracegrad, name, kw), calls=4)
    assert run.step.stats["traces"] >= 1 and not run.step.stats["graph_breaks"]


@pytest.mark.parametrize("clip", ["norm", "value"])
def test_clip_inside_step(clip):
    run = check_compiled(mlp(tracegrad, "SGD", dict(lr=0.1, momentum=0.9), clip=clip), calls=4)
    assert not run.step.stats["graph_breaks"]


def test_torch_parity_adamw_clip():
    check_torch(mlp(None, "AdamW", dict(lr=0.05, amsgrad=True), clip="norm"), calls=4)


def test_grad_accumulates_without_zero_grad():
    check_compiled(mlp(tracegrad, "SGD", dict(lr=0.05), zero=False), calls=4)


def test_zero_grad_set_to_none_false():
    check_compiled(mlp(tracegrad, "Adam", dict(lr=0.05), set_to_none=False), calls=4)


def test_grad_set_to_none_outside_between_calls():
    def between(state, i):
        if i % 2 == 0:
            for p in state["model"].parameters():
                p.grad = None
    check_compiled(mlp(tracegrad, "SGD", dict(lr=0.05, momentum=0.9), zero=False), calls=5, between=between)


def test_new_batch_size_retraces_and_momentum_carries():
    run = check_compiled(mlp(tracegrad, "SGD", dict(lr=0.1, momentum=0.9), bs=lambda i: 5 if i < 3 else 7), calls=5)
    assert run.step.stats["traces"] >= 2


def test_frozen_and_unused_parameters():
    def make(mod, wrap):
        model = np_init(mod.nn.ModuleDict({"a": mod.nn.Linear(3, 2), "frozen": mod.nn.Linear(2, 2),
                                           "unused": mod.nn.Linear(2, 2)}), mod)
        model["frozen"].requires_grad_(False)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)

        def step(x):
            opt.zero_grad()
            loss = model["frozen"](model["a"](x)).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 4, 3),)
    run = check_compiled(make, calls=4, torch_too=True)
    opt = run.state["opt"]
    assert len(opt.state) == 2          # only a.weight and a.bias
    assert run.state["model"]["unused"].weight.grad is None


@pytest.mark.parametrize("name,kw", [("AdamW", dict(lr=0.05, amsgrad=True)), ("SGD", dict(lr=0.1, momentum=0.9))])
def test_compiled_optimizer_step_only(name, kw):
    """torch's compiled-optimizer pattern: forward/backward eager, ``tracegrad.compile(opt.step)``."""
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Tanh(), mod.nn.Linear(4, 2)), mod)
        opt = getattr(mod.optim, name)(model.parameters(), **kw)
        opt_step = wrap(opt.step)
        sched = mod.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt_step()
            sched.step()
            return loss
        step.compiled = opt_step
        return step, {"model": model, "opt": opt, "sched": sched}, \
            lambda i: (data(mod, i, 5, 3), data(mod, i, 5, 2, seed=300))
    run = check_compiled(make, calls=5)
    st = run.step.compiled.stats
    assert 1 <= st["traces"] <= 2 and not st["graph_breaks"], st


def _hand_written_sgd_program(mod, wrap):
    """A hand-written Optimizer whose update passes the group's lr as ``alpha`` (LARS, the
    PyTorch tutorials' custom SGD): ``p.add_(buf, alpha=-group['lr'])``, ``p.sub_(.., alpha=)``
    and the out-of-place ``add``; the lr comes from a NumPy schedule (np.float64) changed
    between calls."""
    class HandSGD(mod.optim.Optimizer):
        def __init__(self, params, lr, momentum):
            super().__init__(params, dict(lr=lr, momentum=momentum))

        @mod.no_grad()
        def step(self):
            for g in self.param_groups:
                for p in g['params']:
                    st = self.state[p]
                    if 'buf' not in st:
                        st['buf'] = mod.zeros_like(p)
                    st['buf'].mul_(g['momentum']).add_(p.grad, alpha=1 - g['momentum'])
                    p.add_(st['buf'], alpha=-g['lr'])
                    p.sub_(p.grad.add(p, alpha=0.01), alpha=g['lr'] / 2)

    model = np_init(mod.nn.Linear(3, 2), mod)
    opt = HandSGD(model.parameters(), lr=np.float64(0.1), momentum=0.9)
    schedule = np.linspace(0.1, 0.02, 4)

    def step(x):
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    def between(state, i):
        state["opt"].param_groups[0]["lr"] = schedule[i + 1]
    return wrap(step), {"model": model, "opt": opt, "between": between}, lambda i: (data(mod, i, 4, 3),)


def test_hand_written_optimizer_lr_as_alpha():
    # the lr is a traced input inside the step: alpha=-lr must not read its value (no graph
    # break), and a NumPy lr must not break the guard on its sign
    run = check_compiled(_hand_written_sgd_program, calls=3, between=lambda s, i: s["between"](s, i),
                         torch_too=True)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1, run.step.stats


def _python_counter_program(mod, wrap, where):
    """A hand-written optimizer whose update reads a Python int it increments every step: on
    itself (``self.t``), in a parameter's state (``state['t']``) or under a key of its own in
    ``self.state``."""
    class CountingSGD(mod.optim.Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, dict(lr=lr))
            self.t = 0
            self.history = []

        @mod.no_grad()
        def step(self):
            if where == "attribute":
                self.t += 1
            if where == "list":           # a list it keeps, grown every step
                self.history.append(len(self.history) + 1)
            if where == "state_key":      # a state entry of its own, not a parameter's dict
                self.state['t'] = self.state['t'] + 1 if 't' in self.state else 1
            for g in self.param_groups:
                for p in g['params']:
                    st = self.state[p]
                    if where == "state":
                        st['t'] = st.get('t', 0) + 1
                    t = {"attribute": self.t, "state": st.get('t'), "list": len(self.history),
                         "state_key": self.state.get('t')}[where]
                    p.add_(p.grad, alpha=-g['lr'] * t)

    model = np_init(mod.nn.Linear(3, 2), mod)
    opt = CountingSGD(model.parameters(), lr=0.01)

    def step(x):
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt, "t": lambda: opt.t}, lambda i: (data(mod, i, 4, 3),)


@pytest.mark.parametrize("where", ["attribute", "state", "state_key", "list"])
def test_optimizer_python_counter_breaks(where):
    # a program would bake the traced count in (later calls stepping with a stale count, the
    # counter left behind): the step runs eagerly instead, with the counter advanced once a call
    run = check_compiled(lambda mod, wrap: _python_counter_program(mod, wrap, where), calls=4, torch_too=True)
    reasons = [r for r, _ in run.step.stats["graph_breaks"]]
    want = "changing the list in its attribute 'history'" if where == "list" else "to a Python int"
    assert len(reasons) == 1 and want in reasons[0], run.step.stats
    assert run.state["opt"].t == (4 if where == "attribute" else 0)
    assert len(run.state["opt"].history) == (4 if where == "list" else 0)
    if where == "state_key":
        assert run.state["opt"].state['t'] == 4
