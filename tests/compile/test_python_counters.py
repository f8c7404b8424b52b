"""Python counters bumped inside a compiled step (NOTE [Python counters] in
``tracegrad/_lowering/pystate.py``): ``self.global_step += 1`` on a trainer object keeps one
program, and each call adds to the counter what the eager call adds. Any other use of the
counter (a condition, a log line, a plain store, ``getattr``) keeps the old behaviour: the
value is guarded or the call runs eagerly, and compiled still equals eager every call."""
import pytest

import tracegrad
from . import _harness
from ._harness import check_compiled, small_batches, small_mlp


class Trainer:
    """A Lightning-style trainer whose step keeps a Python step count."""

    def __init__(self, mod, **counters):
        self.model = small_mlp(mod)
        self.opt = mod.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)
        self.F = mod.nn.functional
        self.global_step = 0
        self.__dict__.update({k: list(v) if type(v) is list else v for k, v in counters.items()})

    def step(self, x, y):
        self.opt.zero_grad()
        loss = self.F.cross_entropy(self.model(x), y)
        loss.backward()
        self.opt.step()
        self.global_step += 1
        return loss


def _trainer_program(cls, **counters):
    def make(mod, wrap):
        t = cls(mod, **counters)
        return wrap(t.step), {"model": t.model, "opt": t.opt, "trainer": t}, small_batches(mod)
    return make


def _counters(run):
    return {k: v for k, v in vars(run.state["trainer"]).items() if type(v) in (int, float)}


def _same_counters(run):
    assert _counters(run) == _counters(run.eager)


@pytest.fixture(autouse=True)
def _plain_objects_compared_by_counters(monkeypatch):
    # the harness compares what it can snapshot; a trainer object is compared by its numbers here
    snap = _harness.snapshot
    monkeypatch.setattr(_harness, "snapshot", lambda x: (
        {k: v for k, v in vars(x).items() if type(v) in (int, float)} if isinstance(x, Trainer) else snap(x)))


def test_trainer_step_count_keeps_one_program():
    run = check_compiled(_trainer_program(Trainer), calls=4, torch_too=True)
    assert run.state["trainer"].global_step == 4
    assert run.step.stats["traces"] == 1 and not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["eager_calls"] == 1      # the first call only (it runs eagerly by design)


def test_fullgraph_trainer_step_count():
    run = check_compiled(_trainer_program(Trainer), calls=3, fullgraph=True)
    # traced on the first call, and again once SGD has made its momentum buffers
    assert run.state["trainer"].global_step == 3 and run.step.stats["traces"] == 2


class LoopTrainer(Trainer):
    """Two counters: one bumped once per layer (a loop), one counted down by two."""

    def step(self, x, y):
        h = x
        for layer in self.model:
            h = layer(h)
            self.layers_run += 1
        loss = self.F.cross_entropy(h, y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.budget -= 2
        return loss


def test_counters_bumped_in_a_loop_and_counted_down():
    run = check_compiled(_trainer_program(LoopTrainer, layers_run=0, budget=100), calls=4)
    _same_counters(run)
    assert run.state["trainer"].layers_run == 12 and run.state["trainer"].budget == 92
    assert run.step.stats["traces"] == 1 and not run.step.stats["graph_breaks"]


class Meter:
    def __init__(self):
        self.count = 0


def _bump(meter):
    meter.count += 1


class HelperTrainer(Trainer):
    """The count is kept on a nested object and bumped by a helper function."""

    def step(self, x, y):
        loss = Trainer.step(self, x, y)
        _bump(self.meter)
        self.meter.count += 10
        return loss


def test_counter_on_a_nested_object_bumped_by_a_helper():
    def make(mod, wrap):
        t = HelperTrainer(mod)
        t.meter = Meter()
        return wrap(t.step), {"model": t.model, "opt": t.opt, "trainer": t}, small_batches(mod)
    run = check_compiled(make, calls=4)
    assert run.state["trainer"].meter.count == run.eager.state["trainer"].meter.count == 44
    assert run.state["trainer"].global_step == 4
    assert run.step.stats["traces"] == 1 and not run.step.stats["graph_breaks"]


class ReadingTrainer(Trainer):
    """The count decides the loss (every other step doubles it): a value the trace reads."""

    def step(self, x, y):
        loss = self.F.cross_entropy(self.model(x), y)
        if self.global_step % 2 == 0:
            loss = loss * 2
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.global_step += 1
        return loss


class LoggingTrainer(Trainer):
    def step(self, x, y):
        loss = Trainer.step(self, x, y)
        self.log.append(f"step {self.global_step}")
        return loss


class ResettingTrainer(Trainer):
    """A plain store of the counter in the step: the change is no longer a fixed difference."""

    def step(self, x, y):
        loss = Trainer.step(self, x, y)
        if self.reset_every:
            self.global_step = 0
        return loss


class AssignTrainer(Trainer):
    def step(self, x, y):
        self.opt.zero_grad()
        loss = self.F.cross_entropy(self.model(x), y)
        loss.backward()
        self.opt.step()
        self.global_step = self.global_step + 1
        return loss


class GetattrTrainer(Trainer):
    def step(self, x, y):
        loss = Trainer.step(self, x, y)
        return loss * getattr(self, "global_step")


class SetattrTrainer(Trainer):
    """A class with its own ``__setattr__``: the increment runs user code."""

    def __setattr__(self, k, v):
        object.__setattr__(self, k, v * 3 if k == "global_step" else v)


@pytest.mark.parametrize("cls, counters", [
    (ReadingTrainer, {}), (LoggingTrainer, {"log": []}), (ResettingTrainer, {"reset_every": True}),
    (AssignTrainer, {}), (GetattrTrainer, {}), (SetattrTrainer, {})])
def test_a_counter_used_otherwise_stays_equal_to_eager(cls, counters):
    run = check_compiled(_trainer_program(cls, **counters), calls=4)
    _same_counters(run)
    if cls is LoggingTrainer:
        assert run.state["trainer"].log == run.eager.state["trainer"].log == [f"step {i}" for i in range(1, 5)]


def test_counter_changed_between_calls_continues_from_the_new_value():
    def between(state, i):
        t = state["trainer"]
        t.global_step = {0: 100, 1: t.global_step, 2: 7.5}.get(i, t.global_step)     # a float: eager adds 1 to it too
    run = check_compiled(_trainer_program(Trainer), calls=4, between=between)
    _same_counters(run)
    assert run.state["trainer"].global_step == 8.5


def test_counter_deleted_between_calls_raises_as_eager():
    def make_runs(wrap):
        tracegrad.manual_seed(0)
        t = Trainer(tracegrad)
        f = wrap(t.step)
        batch = small_batches(tracegrad)
        for i in range(3):
            f(*batch(i))
        del t.global_step
        with pytest.raises(AttributeError, match="global_step"):
            f(*batch(3))
        return [p.detach().numpy().copy() for p in t.model.parameters()]
    eager = make_runs(lambda f: f)
    comp = make_runs(tracegrad.compile)
    for a, b in zip(eager, comp):
        assert (a == b).all() or abs(a - b).max() < 1e-6


class RepeatTrainer(Trainer):
    """How many times the count is bumped depends on another attribute the trace reads."""

    def step(self, x, y):
        loss = Trainer.step(self, x, y)
        for _ in range(self.repeats):
            self.global_step += 1
        return loss


def test_the_number_of_bumps_follows_the_guarded_values():
    def between(state, i):
        state["trainer"].repeats = i + 2
    run = check_compiled(_trainer_program(RepeatTrainer, repeats=1), calls=4, between=between)
    _same_counters(run)
    assert run.state["trainer"].global_step == 4 + 1 + 2 + 3 + 4


def test_counter_names_are_not_guarded_but_other_reads_are():
    from tracegrad._lowering import pycode, pystate

    def f(self):
        self.a += 1
        self.b -= 2
        self.c += 1
        print(self.c)
        self.d += 1.5       # not an int literal
        self.e = self.e + 1
        return getattr(self, "g")
    uses = pycode.counter_uses(f.__code__)
    assert uses.counters == uses.unread == {"a", "b"} and uses.stored == {"d", "e"}
    names = pystate._code_names(f.__code__, set())
    assert {"a", "b"}.isdisjoint(names) and {"c", "d", "e", "g"} <= names

    def init(self):
        self.a = 0          # stored only: not read, and an __init__'s stores are not a step's
        self.b += 1
    init.__code__ = init.__code__.replace(co_name="__init__")
    uses = pycode.counter_uses(init.__code__)
    assert uses.unread == {"a", "b"} and uses.counters == {"b"} and uses.stored == set()

    def reset(self):
        self.a = 0
    assert pycode.counter_uses(reset.__code__).stored == {"a"}


def _module_program(counted):
    def make(mod, wrap):
        class Counted(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.body = small_mlp(mod)
                self.calls = 0
                self.seen = 0

            def forward(self, x):
                counted(self)
                self.seen += 5
                return self.body(x)
        m = Counted()
        opt = mod.optim.Adam(m.parameters(), lr=0.01)
        f = mod.nn.functional

        def step(x, y):
            opt.zero_grad()
            loss = f.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": m, "opt": opt, "counts": m.__dict__}, small_batches(mod)
    return make


def _bump_calls(self):
    self.calls += 1


def _bump_calls_reading(self):
    self.calls += 1
    if self.calls > 2:
        self.calls -= 1


def _bump_calls_assigning(self):
    self.calls = self.calls + 1


@pytest.fixture
def _module_counts(monkeypatch):
    from . import _harness
    snap = _harness.snapshot
    monkeypatch.setattr(_harness, "snapshot", lambda x: (
        {k: x[k] for k in ("calls", "seen")} if isinstance(x, dict) and "calls" in x else snap(x)))


@pytest.mark.parametrize("counted, one_program", [
    (_bump_calls, True), (_bump_calls_reading, False), (_bump_calls_assigning, False)])
def test_module_counter_in_forward(_module_counts, counted, one_program):
    run = check_compiled(_module_program(counted), calls=4, torch_too=True)
    counts = run.state["counts"]
    assert (counts["seen"], counts["calls"]) == (20, {_bump_calls: 4, _bump_calls_reading: 2,
                                                      _bump_calls_assigning: 4}[counted])
    assert (run.step.stats["traces"] == 1 and not run.step.stats["graph_breaks"]) == one_program, run.step.stats


def test_compiled_module_counter_and_its_abandoned_trace():
    """``compile(model)`` whose forward counts its calls; a trace abandoned after the bump (a
    graph break later in the forward) leaves the count as eager does."""
    class Net(tracegrad.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = tracegrad.nn.Linear(3, 2)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            y = self.lin(x)
            if self.calls > 100:       # a read of the count: its value is guarded, not replayed
                y = y * 0
            return y
    net = Net()
    m = tracegrad.compile(net)
    for i in range(4):
        m(tracegrad.ones(2, 3) * i)
    assert net.calls == 4
    class Net2(Net):
        def forward(self, x):
            self.calls += 1
            y = self.lin(x)
            print(y.sum().item() > 0)      # a tensor value decides Python: the trace is abandoned
            return y
    net2 = Net2()
    m2 = tracegrad.compile(net2)
    for i in range(3):
        m2(tracegrad.ones(2, 3) * i)
    assert net2.calls == 3


class ScheduledTrainer(Trainer):
    """A LambdaLR whose lambda reads the trainer's count: its deferred step must see the count
    the eager step had when it called ``sched.step()``."""

    def __init__(self, mod, order):
        super().__init__(mod)
        self.order = order
        self.sched = mod.optim.lr_scheduler.LambdaLR(self.opt, lambda _: 1.0 / (1 + self.global_step))

    def step(self, x, y):
        self.opt.zero_grad()
        loss = self.F.cross_entropy(self.model(x), y)
        loss.backward()
        self.opt.step()
        if self.order == "before":
            self.global_step += 1
        self.sched.step()
        if self.order == "after":
            self.global_step += 1
        if self.order == "both":
            self.global_step += 1
            self.sched.step()
            self.global_step += 1
        return loss


@pytest.mark.parametrize("order", ["before", "after", "both"])
def test_counter_read_by_a_deferred_scheduler_step(order):
    def make(mod, wrap):
        t = ScheduledTrainer(mod, order)
        return wrap(t.step), {"model": t.model, "opt": t.opt, "sched": t.sched, "trainer": t}, small_batches(mod)
    run = check_compiled(make, calls=4, torch_too=True)
    _same_counters(run)
    st = run.step.stats
    if order == "both":      # bumped on both sides of the deferred step: the call runs eagerly
        assert st["traces"] == 0 and "both before and after" in st["graph_breaks"][0][0]
    else:
        assert st["traces"] == 1 and not st["graph_breaks"], st


class ValueKey:
    """Equal (and hashing equal) whatever its count: two of them are one argument key."""

    def __init__(self):
        self.n = 0

    def __eq__(self, other):
        return isinstance(other, ValueKey)

    def __hash__(self):
        return 1


def test_counter_on_an_argument_compared_by_value_is_bumped_on_the_object_passed():
    w = tracegrad.ones(3, requires_grad=True)

    def f(k, x):
        k.n += 1
        return (w * x).sum()
    g = tracegrad.compile(f)
    a, b = ValueKey(), ValueKey()
    for i in range(3):
        g(a, tracegrad.ones(3))
        g(b, tracegrad.ones(3))
    assert (a.n, b.n) == (3, 3)


def test_counter_bumped_in_a_checkpointed_block_counts_the_recomputation():
    """Eagerly a non-reentrant checkpoint runs its function again in backward: two bumps a step."""
    def make(mod, wrap):
        t = Trainer(mod)
        ckpt = __import__(mod.__name__ + ".utils.checkpoint", fromlist=["checkpoint"]).checkpoint

        def block(h):
            t.global_step += 1
            return t.model(h)

        def step(x, y):
            t.opt.zero_grad()
            loss = t.F.cross_entropy(ckpt(block, x, use_reentrant=False), y)
            loss.backward()
            t.opt.step()
            return loss
        return wrap(step), {"model": t.model, "opt": t.opt, "trainer": t}, small_batches(mod)
    run = check_compiled(make, calls=3, torch_too=True)
    _same_counters(run)


class LrReadingTrainer(ScheduledTrainer):
    """Reads the scheduler's last lr before its deferred step: a value the program bakes."""

    def step(self, x, y):
        lr = self.sched.get_last_lr()[0]
        return ScheduledTrainer.step(self, x, y) * lr


@pytest.mark.parametrize("cls", [ScheduledTrainer, LrReadingTrainer])
def test_scheduler_held_by_the_trainer_and_stepped_in_the_step(cls):
    """``self.sched.step()`` in a trainer's step is deferred; the scheduler's own counters
    moving every call are not values the program read (one program), unless the step reads
    what they give (``get_last_lr()``): then a new trace per lr, equal to eager."""
    def make(mod, wrap):
        t = cls(mod, "none")
        return wrap(t.step), {"model": t.model, "opt": t.opt, "sched": t.sched, "trainer": t}, small_batches(mod)
    run = check_compiled(make, calls=4, torch_too=True)
    assert not run.step.stats["graph_breaks"]
    assert run.step.stats["traces"] == (1 if cls is ScheduledTrainer else 3), run.step.stats


STEPS = 0
READ_STEPS = 0


def _scaled_by_steps(loss):
    return loss * (1 + READ_STEPS % 2)


def _closure_program(kind):
    """The step bumps a closure cell (``nonlocal``) or a global, and maybe reads it too."""
    def make(mod, wrap):
        global STEPS, READ_STEPS
        STEPS = READ_STEPS = 0
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        f = mod.nn.functional
        count = read_count = float_count = 0

        def finish(loss):
            loss.backward()
            opt.step()
            return loss

        def step(x, y):
            # each counter in a variable of its own: the code is looked at as a whole
            nonlocal count, read_count, float_count
            global STEPS, READ_STEPS
            opt.zero_grad()
            loss = f.cross_entropy(model(x), y)
            if kind == "nonlocal":
                count += 1
            elif kind == "nonlocal read":
                read_count += 2
                loss = loss * (1 + read_count % 3)
            elif kind == "global":
                STEPS += 1
                STEPS -= 3
            elif kind == "global read by a helper":
                READ_STEPS += 1
                loss = _scaled_by_steps(loss)
            elif kind == "nonlocal float":
                float_count += 0.5
            return finish(loss)
        counts = {"count": lambda: count, "read": lambda: read_count, "float": lambda: float_count,
                  "steps": lambda: STEPS, "read_steps": lambda: READ_STEPS}
        return wrap(step), {"model": model, "opt": opt}, small_batches(mod), counts
    return make


@pytest.mark.parametrize("kind, one_program", [
    ("nonlocal", True), ("global", True), ("nonlocal read", False), ("global read by a helper", False),
    ("nonlocal float", False)])
def test_closure_and_global_counters(kind, one_program):
    make = _closure_program(kind)
    seen = {}

    def run(wrap):
        step, state, batch, counts = make(tracegrad, wrap)
        out = [float(step(*batch(i))) for i in range(4)]
        seen[wrap is not None] = step
        return out, [p.detach().numpy().copy() for p in state["model"].parameters()], \
            {k: c() for k, c in counts.items()}
    eager = run(lambda f: f)
    comp = run(tracegrad.compile)
    assert comp[2] == eager[2]
    assert comp[0] == pytest.approx(eager[0], rel=1e-6)
    for a, b in zip(eager[1], comp[1]):
        assert abs(a - b).max() < 1e-6
    st = seen[True].stats
    assert (st["traces"] == 1 and not st["graph_breaks"]) == one_program, st


def test_global_counter_set_between_calls_continues_from_the_new_value():
    def step(x):
        global STEPS
        STEPS += 2
        return x * 2
    global STEPS
    STEPS = 0
    f = tracegrad.compile(step)
    for i in range(3):
        f(tracegrad.ones(2))
    STEPS = 100
    f(tracegrad.ones(2))
    assert STEPS == 102 and f.stats["traces"] == 1
    STEPS = 1.5             # a float: the guard sees it, and eager adds 2 to it too
    f(tracegrad.ones(2))
    assert STEPS == 3.5


def test_module_counter_bumped_by_a_forward_hook():
    def make(mod, wrap):
        m = small_mlp(mod)
        m.hook_calls = 0

        def hook(module, inp, out):
            module.hook_calls += 1
        m[0].register_forward_hook(lambda mm, i, o: hook(m, i, o))
        opt = mod.optim.SGD(m.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": m, "opt": opt, "calls": lambda: m.hook_calls}, small_batches(mod)
    run = check_compiled(make, calls=4, torch_too=True)
    assert run.state["calls"]() == run.eager.state["calls"]() == 4
    assert run.step.stats["traces"] == 1 and not run.step.stats["graph_breaks"], run.step.stats
