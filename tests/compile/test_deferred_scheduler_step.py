"""NOTE [deferred scheduler step] (tracegrad/_lowering/deferred_step.py): ``sched.step()``
inside a compiled training step runs after the program on every call: one trace, no graph
break, the lrs (and OneCycleLR's momentum) stepping as eagerly. Anything in the rest of the
function that would see the difference (the scheduler read after its step, the optimizer's
param groups read or the optimizer stepped after it) is a graph break: that call runs
eagerly, with eager's results.
"""
import pytest

import tracegrad

from ._harness import break_lines, check_compiled, data, np_init

SCHEDULES = {
    # (optimizer, scheduler) builders; each scheduler moves every call
    "onecycle_sgd": (lambda mod, ps: mod.optim.SGD(ps, lr=0.1, momentum=0.9),
                     lambda mod, opt: mod.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=20)),
    "lambda_adamw": (lambda mod, ps: mod.optim.AdamW(ps, lr=0.01),
                     lambda mod, opt: mod.optim.lr_scheduler.LambdaLR(opt, lambda k: 1.0 / (1 + k))),
    "warm_restarts_adam": (lambda mod, ps: mod.optim.Adam(ps, lr=0.05),
                           lambda mod, opt: mod.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2,
                                                                                              T_mult=2)),
    "step_lr_twice": (lambda mod, ps: mod.optim.SGD(ps, lr=0.1),
                      lambda mod, opt: mod.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)),
}


def _program(schedule, tail=None, before=False, fullgraph_calls=1):
    """A regression step ending in ``sched.step()`` (twice for ``step_lr_twice``); ``tail``
    runs after it and gives the result; ``before``: the scheduler steps before the optimizer."""
    make_opt, make_sched = SCHEDULES[schedule]

    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Tanh(), mod.nn.Linear(4, 2)), mod)
        opt = make_opt(mod, model.parameters())
        sched = make_sched(mod, opt)

        def step(x):
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            if before:
                sched.step()
            opt.step()
            if not before:
                sched.step()
                if schedule == "step_lr_twice":
                    sched.step()
            return loss.detach() if tail is None else tail(loss, opt, sched)
        return wrap(step), {"model": model, "opt": opt, "sched": sched}, lambda i: (data(mod, i, 5, 3),)
    return make


@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_scheduler_step_runs_after_the_program_every_call(schedule):
    comp = check_compiled(_program(schedule), calls=5, torch_too=True)
    st = comp.step.stats
    assert st["traces"] == 1 and st["eager_calls"] == 1 and st["graph_breaks"] == [], st
    # the schedule moved on every call, compiled as eagerly
    lrs = [s["state"]["opt"]["param_groups"][0]["lr"] for s in comp.snaps]
    assert all(a != b for a, b in zip(lrs, lrs[1:])), lrs


def test_fullgraph_takes_the_step_too():
    comp = check_compiled(_program("onecycle_sgd"), calls=4, fullgraph=True)
    # fullgraph traces its first call too; the momentum buffers it creates trace a second time
    assert comp.step.stats["traces"] == 2 and comp.step.stats["eager_calls"] == 0
    assert comp.step.stats["graph_breaks"] == []


@pytest.mark.parametrize("tail, line", [
    (lambda loss, opt, sched: (loss.detach(), sched.get_last_lr()[0]), "get_last_lr"),
    (lambda loss, opt, sched: (loss.detach(), sched.last_epoch), "last_epoch"),
    (lambda loss, opt, sched: (loss.detach(), opt.param_groups[0]["lr"]), "param_groups"),
], ids=["get_last_lr", "attribute", "param_group"])
def test_reading_what_the_step_changed_breaks_and_equals_eager(tail, line):
    comp = check_compiled(_program("lambda_adamw", tail=tail), calls=4, torch_too=True)
    st = comp.step.stats
    assert st["traces"] == 0 and st["eager_calls"] == 4, st
    assert st["graph_breaks"] and all("after calling" in r for r, _ in st["graph_breaks"]), st
    assert all(line in text for text in break_lines(st)), break_lines(st)


def test_optimizer_step_after_the_scheduler_breaks_and_equals_eager():
    comp = check_compiled(_program("lambda_adamw", before=True), calls=4, torch_too=True)
    st = comp.step.stats
    assert st["traces"] == 0 and st["eager_calls"] == 4, st
    assert "optimizer.step() after lr_scheduler.step()" in st["graph_breaks"][0][0]


def test_fullgraph_raises_on_a_read_after_the_step():
    make = _program("lambda_adamw", tail=lambda loss, opt, sched: sched.get_last_lr())
    step, _, batch = make(tracegrad, lambda f: tracegrad.compile(f, fullgraph=True))
    with pytest.raises(tracegrad.compiler.GraphBreak, match="get_last_lr"):
        step(*batch(0))


def test_scheduler_python_side_effects_happen_every_call():
    """A LambdaLR whose lambda records each epoch it is asked for: the record grows by one per
    call, compiled as eagerly; the scheduler keeps its own class afterwards."""
    seen = {}
    for compiled in (False, True):
        tracegrad.manual_seed(0)
        lin = tracegrad.nn.Linear(2, 1)
        opt = tracegrad.optim.SGD(lin.parameters(), lr=0.1)
        asked = seen[compiled] = []
        sched = tracegrad.optim.lr_scheduler.LambdaLR(opt, lambda k: (asked.append(k), 0.9 ** k)[1])

        def step(x):
            opt.zero_grad()
            lin(x).sum().backward()
            opt.step()
            sched.step()
        f = tracegrad.compile(step) if compiled else step
        for i in range(4):
            f(tracegrad.ones(3, 2) * i)
        assert type(sched) is tracegrad.optim.lr_scheduler.LambdaLR
        if compiled:
            assert f.stats["traces"] == 1 and not f.stats["graph_breaks"], f.stats
    assert seen[True] == seen[False] == [0, 1, 2, 3, 4]


def test_a_new_scheduler_bound_between_calls_is_the_one_stepped():
    holder = {}
    lin = tracegrad.nn.Linear(2, 1)
    opt = tracegrad.optim.SGD(lin.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        lin(x).sum().backward()
        opt.step()
        holder["sched"].step()
    f = tracegrad.compile(step)
    holder["sched"] = first = tracegrad.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        f(tracegrad.ones(1, 2))
    assert first.last_epoch == 3
    holder["sched"] = second = tracegrad.optim.lr_scheduler.ExponentialLR(opt, gamma=0.1)
    f(tracegrad.ones(1, 2))
    assert first.last_epoch == 3 and second.last_epoch == 1
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.5 ** 3 * 0.1)


def test_an_exception_after_the_step_leaves_the_scheduler_unstepped_and_unsealed():
    lin = tracegrad.nn.Linear(2, 1)
    opt = tracegrad.optim.SGD(lin.parameters(), lr=0.1)
    sched = tracegrad.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

    def step(x, fail):
        opt.zero_grad()
        lin(x).sum().backward()
        opt.step()
        sched.step()
        if fail:
            raise KeyError("user error")
    f = tracegrad.compile(step)
    f(tracegrad.ones(1, 2), False)
    f(tracegrad.ones(1, 2), False)
    assert sched.last_epoch == 2
    with pytest.raises(KeyError):
        f(tracegrad.ones(1, 2), True)
    # eagerly the step ran before the raise; so it does here (the call that raised ran eagerly)
    assert sched.last_epoch == 3 and type(sched) is tracegrad.optim.lr_scheduler.StepLR
    f(tracegrad.ones(1, 2), False)
    assert sched.last_epoch == 4 and opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.5 ** 4)
