"""NOTE [methods reached by name] (tracegrad/_lowering/pystate.py): a trainer object's methods
are scanned for the Python state they read and change only where the compiled code can call
them. A ``summary()`` that reads ``self.losses`` no longer makes the step's
``self.losses.append(loss.item())`` a read list (the whole step ran eagerly on every call); a
method the step does reach (directly, through another method, ``getattr`` with a computed name,
a partial) is still scanned: its side effects happen on every call, as eagerly.
"""
import functools

import pytest

from ._harness import check_compiled, data, np_init, traces

COUNT = [0]


class Trainer:
    def __init__(self, mod):
        self.model = np_init(mod.nn.Linear(4, 2), mod)
        self.opt = mod.optim.SGD(self.model.parameters(), lr=0.1)
        self.losses = []
        self.notes = []

    def step(self, x):
        self.opt.zero_grad()
        loss = self.model(x).pow(2).mean()
        loss.backward()
        self.opt.step()
        self.losses.append(loss.item())
        return loss

    def summary(self):               # never called by the step: reads the appended list
        return sum(self.losses) / len(self.losses), self.losses[-1]

    def logged_step(self, x):
        loss = self.step(x)
        self._log(loss)
        return loss

    def _log(self, loss):            # reached through logged_step: its side effects are real
        COUNT[0] += 1
        self.notes.append(len(self.losses))

    def by_name(self, x, which):
        return getattr(self, which + "_step")(x)


def _make(call, calls_summary=False):
    def make(mod, wrap):
        t = Trainer(mod)
        COUNT[0] = 0
        f = wrap(call(t))
        state = {"model": t.model, "opt": t.opt, "losses": t.losses, "notes": t.notes, "count": COUNT}

        def step(x):
            out = f(x)
            return (out, t.summary()) if calls_summary else out
        return step, state, lambda i: (data(mod, i, 3, 4),)
    return make


def test_a_bound_step_appending_while_another_method_reads_the_list():
    comp = check_compiled(_make(lambda t: t.step, calls_summary=True), calls=5, torch_too=True)
    assert traces(_compiled(comp)) == 1
    assert len(comp.state["losses"]) == 5


def test_a_step_reaching_the_trainer_through_a_global_name():
    def call(t):
        global TRAINER
        TRAINER = t
        return lambda x: TRAINER.step(x)
    comp = check_compiled(_make(call, calls_summary=True), calls=4, torch_too=True)
    assert traces(_compiled(comp)) == 1


def test_a_method_reached_through_another_keeps_its_side_effects():
    comp = check_compiled(_make(lambda t: t.logged_step), calls=4, torch_too=True)
    # (the compiled run's, last; ``len(self.losses)`` reads the list: those calls run eagerly)
    assert COUNT[0] == 4 and comp.state["notes"] == [1, 2, 3, 4]


def test_a_method_called_by_a_computed_name_is_scanned():
    check_compiled(_make(lambda t: functools.partial(Trainer.by_name, t, which="logged")), calls=4, torch_too=True)


def test_a_trainer_handed_to_a_partial():
    # the trainer bound in the partial is state like a bound method's self: the trace that
    # found ``len(self.losses)`` reading the list it appended to left its DeferredItem there
    def run(trainer, x):
        return trainer.logged_step(x)
    check_compiled(_make(lambda t: functools.partial(run, t)), calls=4, torch_too=True)


def _compiled(comp):
    """The compiled function inside the ``step`` wrapper ``_make`` returns."""
    return next(c.cell_contents for c in comp.step.__closure__ if hasattr(c.cell_contents, "stats"))


class Store:
    """Written through ``store[k] = v``: Python calls ``__setitem__`` without the code naming it."""

    def __init__(self):
        self.writes = 0

    def __setitem__(self, k, v):
        COUNT[0] += 1
        self.writes += 1


def test_a_method_python_calls_implicitly_keeps_its_side_effects():
    def make(mod, wrap):
        model = np_init(mod.nn.Linear(4, 2), mod)
        store = Store()
        COUNT[0] = 0

        def step(x):
            out = model(x).sum()
            store["last"] = 1.0
            return out
        return wrap(step), {"model": model, "count": COUNT, "writes": lambda: store.writes}, \
            lambda i: (data(mod, i, 3, 4),)
    comp = check_compiled(make, calls=4)
    assert COUNT[0] == 4 and comp.state["writes"]() == 4


def bump():
    COUNT[0] += 1


HOOKS = [bump]
REGISTRY = {"bump": bump}


class WithCallbacks:
    def __init__(self, mod):
        self.model = np_init(mod.nn.Linear(4, 2), mod)
        self.callbacks = [self.on_step]      # a bound method no name in the step's code reaches
        self.seen = 0

    def on_step(self):
        COUNT[0] += 1
        self.seen += 1

    def step(self, x):
        out = self.model(x).sum()
        for cb in self.callbacks:
            cb()
        return out


@pytest.mark.parametrize("where", ["bound_method_callbacks", "global_list_and_dict"])
def test_functions_held_in_containers_keep_their_side_effects(where):
    def make(mod, wrap):
        COUNT[0] = 0
        if where == "bound_method_callbacks":
            t = WithCallbacks(mod)
            return wrap(t.step), {"model": t.model, "count": COUNT}, lambda i: (data(mod, i, 3, 4),)
        model = np_init(mod.nn.Linear(4, 2), mod)

        def step(x):
            out = model(x).sum()
            for h in HOOKS:
                h()
            REGISTRY["bump"]()
            return out
        return wrap(step), {"model": model, "count": COUNT}, lambda i: (data(mod, i, 3, 4),)
    check_compiled(make, calls=4)
