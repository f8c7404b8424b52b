"""The attributes guarded on a plain object held by another one (``trainer.optim_schedule``).

A compiled step reads a plain object's attributes through the methods it calls; the guards
cover the names the step's code loads and, on an object held by an attribute of another, what
the methods those names reach load (``pystate._object_names``) -- no longer what every method
of its class loads. A schedule wrapper whose counter only its ``_update_learning_rate`` reads
(called outside the step: codertimo/BERT-pytorch's ScheduledOptim) moved between calls and sent
every call back to tracing. Each test here: compiled equals eager on every call, and an
attribute the step does read (directly, through a method, a property, ``__call__``, a nested
method, ``getattr``) changed between calls is followed.
"""
import pytest

from ._harness import check_compiled, data, np_init, traces


class Wrapper:
    """ScheduledOptim's shape: a counter only ``update`` reads, a method the step calls."""

    def __init__(self, opt, k=2.0):
        self.opt = opt
        self.n_steps = 0
        self.k = k

    def zero_grad(self):
        self.opt.zero_grad()

    def update(self):
        self.n_steps += 1
        for g in self.opt.param_groups:
            g["lr"] = 0.1 / self.n_steps

    def scale(self):
        return self.k * self._inner()

    def _inner(self):
        return self.k + 1.0

    @property
    def doubled(self):
        return self.k * 2.0

    def __call__(self, t):
        return t * self.k


class Trainer:
    pass


def _program(body, change):
    """A training step over ``trainer.wrap`` (a ``Wrapper``) whose loss is ``body(trainer, out)``;
    ``change(trainer, i)`` runs between calls."""
    def make(mod, wrap):
        model = np_init(mod.nn.Linear(4, 2), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        trainer = Trainer()
        trainer.model, trainer.wrap = model, Wrapper(opt)

        def step(x):
            trainer.wrap.zero_grad()
            loss = body(trainer, trainer.model(x))
            loss.backward()
            trainer.wrap.opt.step()
            return loss
        state = {"model": model, "opt": opt, "change": lambda i: change(trainer, i)}
        return wrap(step), state, lambda i: (data(mod, i, 3, 4),)
    return make


def _between(state, i):
    state["change"](i)


def test_a_counter_only_an_uncalled_method_reads_keeps_one_program():
    comp = check_compiled(_program(lambda tr, out: out.pow(2).sum(), lambda tr, i: tr.wrap.update()),
                          calls=5, between=_between, torch_too=True)
    assert traces(comp.step) == 1


@pytest.mark.parametrize("read", [
    pytest.param(lambda tr, out: out.sum() * tr.wrap.k, id="attribute"),
    pytest.param(lambda tr, out: out.sum() * tr.wrap.scale(), id="method_and_the_method_it_calls"),
    pytest.param(lambda tr, out: out.sum() * tr.wrap.doubled, id="property"),
    pytest.param(lambda tr, out: tr.wrap(out).sum(), id="__call__"),
    pytest.param(lambda tr, out: out.sum() * getattr(tr.wrap, "sc" + "ale")(), id="getattr"),
])
def test_an_attribute_the_step_reads_changed_between_calls_is_followed(read):
    def change(tr, i):
        tr.wrap.update()
        tr.wrap.k = 2.0 + i
    check_compiled(_program(read, change), calls=4, between=_between, torch_too=True)


def test_a_bound_method_kept_on_the_trainer():
    def body(tr, out):
        return out.sum() * tr.scale_fn()

    def change(tr, i):
        tr.wrap.k = 3.0 + i

    def build(mod, wrap):
        model = np_init(mod.nn.Linear(4, 2), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        trainer = Trainer()
        trainer.model, trainer.wrap = model, Wrapper(opt)
        trainer.scale_fn = trainer.wrap.scale

        def step(x):
            trainer.wrap.zero_grad()
            loss = body(trainer, trainer.model(x))
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": model, "opt": opt, "change": lambda i: change(trainer, i)}, \
            lambda i: (data(mod, i, 3, 4),)
    check_compiled(build, calls=4, between=_between, torch_too=True)


def test_a_method_called_through_another_held_object():
    # trainer.logic.run() calls self.wrap.scale(): the names reached go through both objects
    class Logic:
        def __init__(self, wrap):
            self.wrap = wrap

        def run(self, out):
            return out.sum() * self.wrap.scale()

    def make(mod, wrap):
        model = np_init(mod.nn.Linear(4, 2), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        trainer = Trainer()
        trainer.model, trainer.logic = model, Logic(Wrapper(opt))

        def step(x):
            opt.zero_grad()
            loss = trainer.logic.run(trainer.model(x))
            loss.backward()
            opt.step()
            return loss

        def change(i):
            trainer.logic.wrap.k = 1.5 + i
            trainer.logic.wrap.update()
        return wrap(step), {"model": model, "opt": opt, "change": change}, lambda i: (data(mod, i, 3, 4),)
    check_compiled(make, calls=4, between=_between, torch_too=True)


def test_the_schedule_wrapper_stepping_inside_the_step():
    # the counter read and written inside the step: each call steps it once, as eagerly
    def make(mod, wrap):
        model = np_init(mod.nn.Linear(4, 2), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        trainer = Trainer()
        trainer.wrap = Wrapper(opt)

        def step(x):
            trainer.wrap.zero_grad()
            loss = model(x).pow(2).sum()
            loss.backward()
            trainer.wrap.update()
            opt.step()
            return loss
        return wrap(step), {"model": model, "opt": opt, "wrap": trainer.wrap,
                            "n_steps": lambda: trainer.wrap.n_steps}, lambda i: (data(mod, i, 3, 4),)
    comp = check_compiled(make, calls=4, torch_too=True)
    assert comp.state["n_steps"]() == comp.eager.state["n_steps"]() == 4
