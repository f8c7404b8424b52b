"""Python-side effects and structure around compiled steps: tensors appended to a Python list
inside the step, a Python counter that decides when to step (gradient accumulation), a new
param group added between calls, inputs that require grad, compiled functions nested and
used as methods, an evaluation function under no_grad."""
import numpy as np
import pytest

import tracegrad

from ._harness import _arr, check_compiled, data, np_init


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


# ---- Python attributes changed by the step (NOTE [object attributes] in _lowering/pystate.py) ----
class _Counted:
    """An nn.Module whose forward counts its calls in a Python attribute (built per library)."""

    @staticmethod
    def build(mod):
        class Counted(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = mod.nn.Linear(3, 2)
                self.calls = 0

            def forward(self, x):
                self.calls += 1
                return self.lin(x)
        return np_init(Counted(), mod)


def _counted_program(mod, wrap):
    model = _Counted.build(mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = mod.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt, "calls": lambda: model.calls}, batch(mod)


def test_module_attribute_set_in_forward_happens_every_call():
    """``self.calls += 1`` in a forward is a counter each run of the program bumps again (NOTE
    [Python counters]): one program, and the count matches eager; with fullgraph too."""
    run = check_compiled(_counted_program, calls=4)
    assert run.state["calls"]() == run.eager.state["calls"]() == 4
    assert not run.step.stats["graph_breaks"] and run.step.stats["traces"] == 1
    step, state, batch_of = _counted_program(tracegrad, lambda f: tracegrad.compile(f, fullgraph=True))
    for i in range(3):
        step(*batch_of(i))
    assert state["calls"]() == 3


def test_module_attribute_set_in_forward_to_a_new_value_runs_eagerly():
    """``self.mode = ...`` (not a counter) in a forward: a side effect a program would do once:
    the call runs eagerly (a graph break naming the attribute); fullgraph raises."""
    def make(mod, wrap):
        model = _Counted.build(mod)
        model.mode = 0

        def fwd(x):
            model.mode = model.mode * 2 + 1
            return model.lin(x)
        return wrap(fwd), {"model": model, "mode": lambda: model.mode}, lambda i: (data(mod, i, 5, 3),)
    run = check_compiled(make, calls=3)
    assert run.state["mode"]() == run.eager.state["mode"]() == 7
    reasons = [r for r, _ in run.step.stats["graph_breaks"]]
    assert reasons and "attribute 'mode' of Counted" in reasons[0]
    step, _, batch_of = make(tracegrad, lambda f: tracegrad.compile(f, fullgraph=True))
    with pytest.raises(tracegrad.compiler.GraphBreak, match="attribute 'mode'.*test_python_state.py:"):
        step(*batch_of(0))


def test_module_attribute_set_to_same_value_is_not_a_side_effect():
    def make(mod, wrap):
        model = mlp(mod)
        model.mode = "fast"

        def fwd(x):
            model.mode = "fast"        # unchanged: nothing to repeat
            return model(x)
        return wrap(fwd), {"model": model}, lambda i: (data(mod, i, 5, 3),)
    run = check_compiled(make, calls=3)
    assert not run.step.stats["graph_breaks"] and run.step.stats["traces"] == 1


def test_attributes_of_closure_objects_and_bound_self_change_every_call():
    """A counter on a plain object the step closes over, and on the object a compiled method
    is bound to: as many increments as calls, as eagerly, from one program (NOTE [Python
    counters]: each run adds the traced increment)."""
    class Meter:
        def __init__(self):
            self.n, self.total = 0, 0.0

    class Trainer:
        def __init__(self, mod):
            self.model = mlp(mod)
            self.opt = mod.optim.SGD(self.model.parameters(), lr=0.1)
            self.steps = 0

        def step(self, x, y):
            self.opt.zero_grad()
            loss = tracegrad.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.opt.step()
            self.steps += 1
            return loss
    meter = Meter()

    def counted(x):
        meter.n += 1
        return x * 2
    f = tracegrad.compile(counted)
    for i in range(4):
        f(data(tracegrad, i, 2, 3))
    assert meter.n == 4 and not f.stats["graph_breaks"] and f.stats["traces"] == 1

    tracegrad.manual_seed(0)
    eager, comp = Trainer(tracegrad), Trainer(tracegrad)
    comp.step = tracegrad.compile(comp.step)
    for i in range(4):
        le, lc = eager.step(*batch(tracegrad)(i)), comp.step(*batch(tracegrad)(i))
        assert float(le) == pytest.approx(float(lc), rel=1e-6)
    assert eager.steps == comp.steps == 4
    assert not comp.step.stats["graph_breaks"] and comp.step.stats["traces"] == 1


def test_abandoned_trace_puts_object_attributes_back():
    """A trace that breaks after writing traced tensors into an object's dict and attributes
    leaves the object as it was: the eager rerun finds no traced value (this is what a
    GradScaler's per-optimizer state needs)."""
    class Book:
        def __init__(self):
            self.notes, self.seen = {}, []
            self.last = None

    def make(mod, wrap):
        model, book = mlp(mod), Book()

        def fwd(x):
            out = model(x)
            book.notes["out"] = out.detach()
            book.seen.append(out.detach())
            book.last = out.sum()
            if book.last.item() > -1e9:           # reads a value: graph break
                return out
            return -out
        state = {"model": model, "book": lambda: book}
        return wrap(fwd), state, lambda i: (data(mod, i, 5, 3),)
    run = check_compiled(make, calls=3)
    book = run.state["book"]()
    assert run.step.stats["graph_breaks"] and sorted(book.notes) == ["out"]
    assert len(book.seen) == 3               # no fourth entry left by the abandoned trace
    for t in book.seen:
        _arr(t)                              # concrete values, no tracer
    np.testing.assert_allclose(_arr(book.last), float(book.notes["out"].sum()), rtol=1e-6)


def grad_scaler_program(mod, wrap):
    model = mlp(mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = mod.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=2)

    def step(x, y):
        opt.zero_grad()
        loss = mod.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss
    return wrap(step), {"model": model, "opt": opt, "scaler": scaler}, batch(mod)


def test_grad_scaler_step_in_compiled_function():
    """GradScaler.step's skip decision stays in the program (NOTE [skipped steps in a trace];
    eagerly it reads found_inf with .item()): one program, eager's results, scaler state
    included (the scale grows every second call), on every call."""
    run = check_compiled(grad_scaler_program, calls=5, torch_too=True)
    stats = run.step.stats
    assert (stats["traces"], stats["eager_calls"], stats["graph_breaks"]) == (1, 1, []), stats


@pytest.mark.parametrize("how", ["by_hand", "scheduler"])
def test_lr_changed_inside_the_step_changes_every_call(how):
    """An lr decayed inside the compiled function (a scheduler stepping there, or by hand) is a
    Python side effect: each call decays it once, as eagerly, and the steps use those lrs."""
    def make(mod, wrap):
        model = mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.2, momentum=0.5)
        sched = mod.optim.lr_scheduler.ExponentialLR(opt, 0.5)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            if how == "scheduler":
                sched.step()
            else:
                opt.param_groups[0]["lr"] *= 0.5
            return loss
        return wrap(step), {"model": model, "opt": opt, "lr": lambda: opt.param_groups[0]["lr"]}, batch(mod)
    run = check_compiled(make, calls=4, torch_too=True)
    assert run.state["lr"]() == pytest.approx(0.2 * 0.5 ** 4)
    if how == "scheduler":     # NOTE [deferred scheduler step]: run after the program, no break
        assert run.step.stats["traces"] == 1 and not run.step.stats["graph_breaks"], run.step.stats
    else:
        assert run.step.stats["graph_breaks"]


@pytest.mark.parametrize("source", ["random", "numpy_global", "numpy_generator"])
def test_python_random_numbers_inside_are_drawn_every_call(source):
    """NOTE [Python random numbers]: a flip decided by Python's or NumPy's generator inside the
    compiled function is drawn on every call, as eagerly (the same draws for the same seed)."""
    import random

    def run(wrap):
        random.seed(0)
        np.random.seed(0)
        rng = np.random.default_rng(0)

        def augment(x):
            u = {"random": random.random, "numpy_global": np.random.rand,
                 "numpy_generator": rng.random}[source]()
            return x.flip(-1) * float(u) if u < 0.5 else x * float(u)
        f = wrap(augment)
        x = tracegrad.arange(6.0).reshape(2, 3)
        return [f(x).tolist() for _ in range(8)], f
    eager, _ = run(lambda f: f)
    comp, f = run(tracegrad.compile)
    assert comp == eager
    assert f.stats["graph_breaks"] and "generator" in f.stats["graph_breaks"][0][0] or "'rng'" in f.stats["graph_breaks"][0][0]


def test_counters_inside_dicts_and_object_dicts_count_every_call():
    class Logger:
        def __init__(self):
            self.counts = {"steps": 0}
    stats, lg = {"calls": 0, "last": None}, Logger()

    def step(x):
        stats["calls"] += 1
        stats["last"] = x.sum()               # a tensor stored: carried state, not a side effect
        lg.counts["steps"] += 1
        return x * 2
    f = tracegrad.compile(step)
    for i in range(4):
        f(data(tracegrad, i, 2, 3))
    assert stats["calls"] == 4 and lg.counts["steps"] == 4
    assert float(stats["last"]) == pytest.approx(float(data(tracegrad, 3, 2, 3).sum()))
    assert "'lg.counts'" in f.stats["graph_breaks"][0][0]
    del lg.counts                                          # only the dict counter left
    g = tracegrad.compile(lambda x: _bump(stats, x))
    g(tracegrad.ones(2)), g(tracegrad.ones(2))
    assert stats["calls"] == 6 and "stats['calls']" in g.stats["graph_breaks"][0][0]


def _bump(stats, x):
    stats["calls"] += 1
    return x + 1


def test_counters_in_nested_containers_count_every_call():
    """A counter in a dict inside a dict, an append to a list inside a dict, a counter in a list
    of lists: a side effect the program would not repeat, so the function runs eagerly and
    every call counts; an abandoned trace puts the nested values back (no double count)."""
    stats, hist, grid = {"train": {"n": 0}}, {"loss": []}, [[0]]

    def step(x):
        stats["train"]["n"] += 1
        hist["loss"].append(1)
        grid[0][0] += 1
        return x * 2
    f = tracegrad.compile(step)
    for _ in range(4):
        f(tracegrad.ones(2))
    assert stats == {"train": {"n": 4}} and hist == {"loss": [1] * 4} and grid == [[4]]
    assert "changes the Python value" in f.stats["graph_breaks"][0][0]


def test_abandoned_trace_puts_nested_containers_back():
    """A trace that bumps a nested counter and then meets a graph break (``.item()``) is
    abandoned: the eager rerun starts from the counter as it was, so each call counts once."""
    log = {"steps": {"n": 0}, "seen": [[]]}

    def step(x):
        log["steps"]["n"] += 1
        log["seen"][0].append(len(log["seen"][0]))
        return x * float((x * 0).sum().item() + 1)
    f = tracegrad.compile(step)
    for _ in range(3):
        f(tracegrad.ones(2))
    assert log == {"steps": {"n": 3}, "seen": [[0, 1, 2]]}


HELPER_CALLS = {"n": 0}


def _counting_helper(t):
    HELPER_CALLS["n"] += 1
    return t * 2


class _CountingCallable:
    def __init__(self):
        self.calls = 0

    def __call__(self, t):
        self.calls += 1
        return t + 1


def test_side_effects_in_helper_functions_happen_every_call():
    """A counter bumped by a helper function (in a global dict, in a nonlocal of a closure) and
    by a callable object passed as an argument: each is a side effect the program would not
    repeat, so every call counts, as eagerly."""
    HELPER_CALLS["n"] = 0
    n = 0

    def bump(t):
        nonlocal n
        n += 1
        return t - 1
    counter = _CountingCallable()
    f = tracegrad.compile(lambda x, g: bump(_counting_helper(g(x))))
    for _ in range(4):
        f(tracegrad.ones(2), counter)
    assert (HELPER_CALLS["n"], n, counter.calls) == (4, 4, 4)
    assert f.stats["graph_breaks"]


def _note_forward():
    HELPER_CALLS["forward"] += 1


class _NotingModel(tracegrad.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = tracegrad.nn.Linear(3, 2)

    def forward(self, x):
        _note_forward()
        return self.lin(x)


def test_side_effect_in_a_helper_a_module_calls_happens_every_call():
    """A model whose forward calls a helper that bumps a global counter, inside a compiled
    training step: every call counts (the step runs eagerly, with the reason in stats)."""
    HELPER_CALLS["forward"] = 0
    tracegrad.manual_seed(0)
    model = _NotingModel()
    opt = tracegrad.optim.SGD(model.parameters(), lr=0.1)

    @tracegrad.compile
    def step(x):
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        return loss
    for _ in range(4):
        step(tracegrad.ones(2, 3))
    assert HELPER_CALLS["forward"] == 4 and step.stats["graph_breaks"]


def test_param_group_lr_set_inside_the_step_to_its_current_value_is_a_side_effect():
    """``group["lr"] = lr`` inside a compiled step, traced on a call that stores the lr the
    group already holds: the write is still a side effect (the program reads the group's lr
    as an input and would not repeat the assignment), so calls with other lrs equal eager."""
    def run(wrap):
        w = tracegrad.nn.Parameter(tracegrad.zeros(1))
        opt = tracegrad.optim.SGD([w], lr=1.0)

        def step(lr):
            opt.param_groups[0]["lr"] = lr
            opt.zero_grad()
            (w * 1.0).sum().backward()
            opt.step()
        f = wrap(step)
        out = []
        for lr in [1.0, 1.0, 1.0, 2.0, 1.0, 3.0, 1.0]:
            f(lr)
            out.append((float(w), opt.param_groups[0]["lr"]))
        return out
    assert run(tracegrad.compile) == run(lambda f: f)


@pytest.mark.parametrize("source", ["count", "generator", "list_iterator", "dataloader_iterator",
                                    "iterator_attribute", "iterator_argument"])
def test_iterators_inside_advance_every_call(source, tmp_path):
    """NOTE [iterators and files]: ``next(it)`` inside a compiled function gives the next item on
    every call, as eagerly (never the item the trace read, never an item skipped by an abandoned
    trace), and the reason is in the stats; with fullgraph=True it is an error."""
    import itertools

    def make():
        if source == "count":
            return itertools.count(1)
        if source == "generator":
            return (float(i) for i in range(1, 100))
        if source == "list_iterator":
            return iter([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        ds = tracegrad.utils.data.TensorDataset(tracegrad.arange(1.0, 7.0))
        return iter(tracegrad.utils.data.DataLoader(ds, batch_size=1))

    def run(wrap):
        it = make()

        class Trainer:
            def __init__(self):
                self.it = it

            def step(self, x):
                return x * next(self.it)[0]

        if source == "iterator_attribute":
            f = wrap(Trainer().step)
            return [f(tracegrad.ones(2)).tolist() for _ in range(4)], f
        if source == "iterator_argument":
            f = wrap(lambda x, src: x * next(src)[0])
            return [f(tracegrad.ones(2), it).tolist() for _ in range(4)], f

        def step(x):
            v = next(it)
            return x * (v[0] if isinstance(v, list) else v)
        f = wrap(step)
        return [f(tracegrad.ones(2)).tolist() for _ in range(4)], f
    eager, _ = run(lambda f: f)
    assert eager == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]]
    comp, f = run(tracegrad.compile)
    assert comp == eager
    assert "position moves on every eager call" in f.stats["graph_breaks"][0][0]
    with pytest.raises(tracegrad.compiler.GraphBreak, match="position moves"):
        run(lambda fn: tracegrad.compile(fn, fullgraph=True))


def test_file_written_inside_is_written_every_call(tmp_path):
    """NOTE [iterators and files]: a line written to a file inside a compiled function is
    written once per call (no line lost to the program, none doubled by an abandoned trace)."""
    path = tmp_path / "log.txt"
    with open(path, "w") as fh:
        def step(x):
            y = x * 2
            fh.write("step\n")
            return y
        f = tracegrad.compile(step)
        outs = [f(tracegrad.ones(2)).tolist() for _ in range(4)]
    assert outs == [[2.0, 2.0]] * 4
    assert path.read_text().splitlines() == ["step"] * 4
    assert "the file 'fh'" in f.stats["graph_breaks"][0][0]


def test_closed_file_is_no_graph_break(tmp_path):
    """NOTE [iterators and files]: a closed file has no position to move. A script's ``with
    open(...) as f:`` leaves the closed ``f`` among its globals (nanoGPT's train.py, round 73):
    a function whose code names it traces once; reading it raises ValueError as eagerly."""
    import types
    path = tmp_path / "meta.txt"
    path.write_text("3")
    with open(path) as f:
        scale = float(f.read())
    ns = types.SimpleNamespace(f=f, scale=scale)

    def step(x):
        return x * ns.scale if ns.f.closed else x
    g = tracegrad.compile(step)
    assert [g(tracegrad.full((2,), float(i))).tolist() for i in range(3)] == [[0.0, 0.0], [3.0, 3.0], [6.0, 6.0]]
    assert g.stats["traces"] == 1 and g.stats["graph_breaks"] == [], g.stats

    def read(x):
        return x * float(ns.f.read())
    with pytest.raises(ValueError, match="closed file"):
        tracegrad.compile(read)(tracegrad.ones(2))


def test_deque_appended_inside_grows_every_call():
    import collections
    window = collections.deque(maxlen=3)

    def step(x):
        y = x * 2
        window.append(y.detach())
        return y
    f = tracegrad.compile(step)
    for i in range(5):
        f(tracegrad.full((2,), float(i)))
    assert [t.tolist() for t in window] == [[4.0, 4.0], [6.0, 6.0], [8.0, 8.0]]


@pytest.mark.parametrize("holder", ["numpy", "array", "bytearray", "slots", "dataclass_slots"])
def test_counters_in_buffers_and_slot_objects_count_every_call(holder):
    """A count kept in a NumPy array, an ``array.array``, a bytearray or on an object with
    ``__slots__`` is Python state like a list entry: the compiled function bumps it on every
    call (graph break), and an abandoned trace leaves no extra bump behind."""
    import array
    import dataclasses

    class Slots:
        __slots__ = ("n",)

        def __init__(self):
            self.n = 0

    @dataclasses.dataclass(slots=True)
    class Counter:
        n: int = 0

    def run(wrap):
        box = {"numpy": np.zeros(2), "array": array.array("d", [0.0]), "bytearray": bytearray(1),
               "slots": Slots(), "dataclass_slots": Counter()}[holder]

        def step(x):
            if holder in ("slots", "dataclass_slots"):
                box.n += 1
            else:
                box[0] += 1
            return x * 2
        f = wrap(step)
        outs = [f(tracegrad.ones(2)).tolist() for _ in range(4)]
        return outs, (box.n if holder in ("slots", "dataclass_slots") else box[0]), f
    eager, n_eager, _ = run(lambda f: f)
    comp, n_comp, f = run(tracegrad.compile)
    assert comp == eager and n_eager == n_comp == 4
    assert f.stats["graph_breaks"]


def test_class_attribute_counter_counts_every_call_in_one_program():
    """A count kept on a class (``Stats.steps += 1``, a global step on a config class) is a
    counter like an object's attribute (NOTE [Python counters]): put back after the trace and
    bumped by every run of the one program (it made every call eager); a class attribute the
    step also reads (a branch on it) still runs eagerly, equal."""
    class Stats:
        steps = 0
        scale = 2

    class Parity:
        n = 0

    def run(wrap):
        Stats.steps = Parity.n = 0
        g = wrap(_bump_steps(Stats))
        h = wrap(_bump_and_read(Parity))
        outs = [(g(tracegrad.full((2,), float(i))).tolist(), h(tracegrad.ones(2)).tolist(), Stats.steps,
                 Parity.n) for i in range(5)]
        return outs, g, h
    eager, _, _ = run(lambda f: f)
    comp, g, h = run(tracegrad.compile)
    assert comp == eager and eager[-1][2:] == (5, 5)
    assert g.stats["traces"] == 1 and not g.stats["graph_breaks"], g.stats
    assert h.stats["graph_breaks"]


def _bump_steps(cls):
    def step(x):
        cls.steps += 1
        return x * cls.scale
    return step


def _bump_and_read(cls):
    def step(x):
        cls.n += 1
        return x * (2.0 if cls.n % 2 else 1.0)
    return step


def test_list_argument_appended_inside_grows_every_call():
    """A list passed as an argument reaches the function as a rebuilt copy inside the trace:
    an append to it is a graph break, so the caller's list grows on every call, as eagerly."""
    def run(wrap):
        acc, cfg = [], {"s": 2.0}
        f = wrap(lambda x, acc, cfg: (acc.append(1), x * cfg["s"])[1])
        outs = []
        for i in range(4):
            cfg["s"] = float(i)
            outs.append(f(tracegrad.ones(1), acc, cfg).tolist())
        return outs, len(acc), f
    eager, n, _ = run(lambda f: f)
    comp, m, f = run(tracegrad.compile)
    assert comp == eager and n == m == 4
    assert "list or dict it was passed" in f.stats["graph_breaks"][0][0]


def test_loss_module_made_inside_the_step_is_no_graph_break():
    """``torch.nn.CrossEntropyLoss()(pred, y)`` inside the step (the torch.compile tutorial's
    train step): the module is new on every call, so its ``__init__`` setting ``reduction`` is
    no Python side effect; the step is one program."""
    def make(mod, wrap):
        model = mlp(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad(True)
            loss = mod.nn.CrossEntropyLoss(label_smoothing=0.1)(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": model, "opt": opt}, \
            lambda i: (data(mod, i, 5, 3), mod.tensor(np.random.RandomState(i).randint(0, 2, 5)))
    run = check_compiled(make, calls=4, torch_too=True)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1


def test_weakref_cache_rebound_each_call_is_no_graph_break():
    # torch.distributions' Transform.inv caches its inverse through a weakref that dies after
    # each use, so TransformedDistribution.log_prob rebinds ``_inv`` on every call (NICE's
    # logistic prior): a cache, not state the compiled program must repeat
    import weakref

    def make(mod, wrap):
        D = mod.distributions
        model = mlp(mod)
        prior = D.TransformedDistribution(D.Uniform(mod.tensor(0.), mod.tensor(1.), validate_args=False),
                                          [D.transforms.SigmoidTransform().inv,
                                           D.transforms.AffineTransform(loc=0., scale=1.)],
                                          validate_args=False)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        class Memo:
            pass
        memo = Memo()
        memo.last = None

        def step(x, y):
            opt.zero_grad()
            z = model(x)
            memo.last = weakref.ref(z)              # a user's own weakref cache, rebound per call
            loss = -prior.log_prob(z).sum(1).mean() + mod.nn.functional.mse_loss(z, y)
            loss.backward()
            opt.step()
            return loss.detach()
        return wrap(step), {"model": model}, batch(mod)

    run = check_compiled(make, calls=3, torch_too=True)
    stats = run.step.stats
    assert (stats["traces"], stats["eager_calls"], stats["graph_breaks"]) == (1, 1, []), stats
