"""Modules built, swapped and re-initialised between calls of a compiled step.

NOTE [objects no trace has seen] (tracegrad/_state.py): building a module no trace has run
beside (an evaluation model, a metric, the next experiment's network) leaves every compiled
program valid: building one used to bump the structure token, so every compiled step traced
again after it (the benchmark's "step returning loss.item()" traced twice: the next model built
in the same process) and reached its cache limit, then ran eagerly, in a loop building one per
epoch. That bump was also the only thing that noticed a module rebound at a place the step reads
it from (``model = Net()``): a module held at a place is now guarded by identity there
(guards._guard_held), which also fixes swapping between two modules that already existed
(``model = a if i % 2 else b`` ran ``b``'s calls with ``a``'s parameters, silently).
"""
import functools
import types

import pytest

import tracegrad
from ._harness import check_compiled, data, labels, np_init, traces


def _net(mod, seed):
    nn = mod.nn
    return np_init(nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)), mod, seed=seed)


def _train_step(mod, get_model, opt):
    F = mod.nn.functional

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(get_model()(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _batch(mod):
    return lambda i: (data(mod, i, 6, 4), labels(mod, i, 6, 3))


def _build_unrelated(mod, i):
    """Everything a program may do between two calls to a model no compiled step reads."""
    nn = mod.nn
    other = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.1))
    other.register_buffer("scale", mod.ones(4))
    other.extra = nn.Parameter(mod.zeros(2))
    handle = other.register_forward_hook(lambda m, a, o: o * 2)
    other[0].register_forward_pre_hook(lambda m, a: None)
    other(mod.ones(3, 4))
    handle.remove()
    del other[2]
    nn.CrossEntropyLoss()
    return other


@pytest.mark.parametrize("opt_name", ["SGD", "AdamW"])
def test_unrelated_modules_built_between_calls_keep_the_program(opt_name):
    def make(mod, wrap):
        model = _net(mod, 0)
        opt = getattr(mod.optim, opt_name)(model.parameters(), lr=0.1)
        state = {"model": model, "opt": opt, "change": lambda i: _build_unrelated(mod, i)}
        return wrap(_train_step(mod, lambda: model, opt)), state, _batch(mod)
    comp = check_compiled(make, calls=5, between=lambda s, i: s["change"](i))
    assert traces(comp.step) == 1


def test_a_new_model_and_optimizer_built_after_the_trace_keep_the_first_step():
    # the benchmark's pattern: the next experiment's model built in the same process
    model = _net(tracegrad, 0)
    opt = tracegrad.optim.SGD(model.parameters(), lr=0.1)
    step = tracegrad.compile(_train_step(tracegrad, lambda: model, opt))
    losses = [step(*_batch(tracegrad)(i)).item() for i in range(3)]
    other = _net(tracegrad, 1)
    tracegrad.optim.AdamW(other.parameters(), lr=0.1)
    losses += [step(*_batch(tracegrad)(i)).item() for i in range(3, 6)]
    assert traces(step) == 1

    ref = _net(tracegrad, 0)
    ref_step = _train_step(tracegrad, lambda: ref, tracegrad.optim.SGD(ref.parameters(), lr=0.1))
    assert losses == pytest.approx([ref_step(*_batch(tracegrad)(i)).item() for i in range(6)], rel=1e-5)


def test_a_module_built_per_epoch_never_sends_the_step_to_eager():
    model = _net(tracegrad, 0)
    opt = tracegrad.optim.SGD(model.parameters(), lr=0.1)
    step = tracegrad.compile(_train_step(tracegrad, lambda: model, opt))
    for epoch in range(12):          # more epochs than the cache limit
        step(*_batch(tracegrad)(epoch))
        tracegrad.nn.Linear(4, 2)    # say, a fresh probe or metric module each epoch
    assert traces(step) == 1 and step.stats["eager_calls"] == 1


# ---- a module rebound at the place the step reads it from: compiled equals eager -----------

class _Holder:
    pass


def _places(mod):
    """(name, setup) pairs: ``setup(models) -> (get, put)`` reading and rebinding the model at
    one kind of place."""
    def glob(models):
        g = {"model": models[0]}
        code = compile("def get():\n    return model\n", "<place>", "exec")
        exec(code, g)       # noqa: S102 -- a tiny function whose global is the place
        return g["get"], lambda m: g.__setitem__("model", m)

    def cell(models):
        m = models[0]

        def get():
            return m

        def put(new):
            nonlocal m
            m = new
        return get, put

    def entry(models):
        box = {"cfg": {"net": models[0]}}
        return (lambda: box["cfg"]["net"]), (lambda m: box["cfg"].__setitem__("net", m))

    def item(models):
        lst = [models[0]]
        return (lambda: lst[0]), (lambda m: lst.__setitem__(0, m))

    def attribute(models):
        h = _Holder()
        h.model = models[0]
        return (lambda: h.model), (lambda m: setattr(h, "model", m))

    def namespace(models):
        ns = types.SimpleNamespace(model=models[0])
        return (lambda: ns.model), (lambda m: setattr(ns, "model", m))

    def class_attribute(models):
        cls = type("Cfg", (), {"model": models[0]})
        return (lambda: cls.model), (lambda m: setattr(cls, "model", m))

    def submodule(models):
        outer = mod.nn.Module()
        outer.inner = models[0]
        return (lambda: outer.inner), (lambda m: setattr(outer, "inner", m))
    return [glob, cell, entry, item, attribute, namespace, class_attribute, submodule]


_PLACE_NAMES = ["global", "cell", "dict_entry", "list_item", "attribute", "namespace", "class_attribute",
                "submodule"]


def _swap_program(place_index, fresh):
    """Forward and backward through the module at a place; between calls the place gets a new
    module (``fresh``) or alternates between two built before the first call."""
    def make(mod, wrap):
        models = [_net(mod, 0), _net(mod, 1)]
        get, put = _places(mod)[place_index](models)
        F = mod.nn.functional
        built = []

        def step(x, y):
            model = get()
            model.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss, [p.grad for p in model.parameters()]

        def change(i):
            if fresh:
                built.append(_net(mod, 2 + i))
                put(built[-1])
            else:
                put(models[(i + 1) % 2])
        return wrap(step), {"models": models, "built": built, "change": change}, _batch(mod)
    return make


@pytest.mark.parametrize("where", range(8), ids=_PLACE_NAMES)
def test_a_module_rebound_to_a_new_one_runs_the_new_one(where):
    comp = check_compiled(_swap_program(where, fresh=True), calls=4, between=lambda s, i: s["change"](i))
    assert traces(comp.step) == 3       # the first call eager, then one program per module


@pytest.mark.parametrize("where", range(8), ids=_PLACE_NAMES)
def test_two_modules_alternating_at_a_place_each_run_their_own(where):
    comp = check_compiled(_swap_program(where, fresh=False), calls=6, between=lambda s, i: s["change"](i))
    if _PLACE_NAMES[where] != "submodule":
        # the first call eager (``a``); ``b`` without .grads, ``a`` and ``b`` with them: each kept.
        # (Rebinding a submodule still bumps the structure token: a trace per call, correct.)
        assert traces(comp.step) == 3


def test_a_module_bound_as_a_default_argument_swapped():
    def make(mod, wrap):
        a, b = _net(mod, 0), _net(mod, 1)
        F = mod.nn.functional

        def step(x, y, model=a):
            return F.cross_entropy(model(x), y)

        def change(i):
            step.__defaults__ = ((b, a)[i % 2],)
        f = wrap(step)
        return f, {"a": a, "b": b, "change": change}, _batch(mod)
    check_compiled(make, calls=5, between=lambda s, i: s["change"](i))


def test_a_traced_module_initialised_again_runs_its_new_parameters():
    def make(mod, wrap):
        lin = mod.nn.Linear(4, 3)
        np_init(lin, mod)

        def change(i):
            if i == 1:
                lin.__init__(4, 3)
                np_init(lin, mod, seed=7)
        return wrap(lambda x: lin(x).sum()), {"lin": lin, "change": change}, lambda i: (data(mod, i, 2, 4),)
    check_compiled(make, calls=4, between=lambda s, i: s["change"](i))


def test_a_hook_registered_on_a_new_module_before_it_joins_a_traced_one():
    def make(mod, wrap):
        nn = mod.nn
        net = np_init(nn.Sequential(nn.Linear(4, 3)), mod)

        def change(i):
            if i == 1:
                sub = np_init(nn.Linear(3, 3), mod, seed=3)
                sub.register_forward_hook(lambda m, a, o: o * 10)
                net.append(sub)
        return wrap(lambda x: net(x).sum()), {"net": net, "change": change}, lambda i: (data(mod, i, 2, 4),)
    check_compiled(make, calls=4, between=lambda s, i: s["change"](i))


def test_a_hook_registered_while_the_module_was_new_then_removed_after_a_trace():
    def make(mod, wrap):
        nn = mod.nn
        net = np_init(nn.Linear(4, 3), mod)
        handle = net.register_forward_hook(lambda m, a, o: o * 10)     # before any trace

        def change(i):
            if i == 2:
                handle.remove()
        return wrap(lambda x: net(x).sum()), {"net": net, "change": change}, lambda i: (data(mod, i, 2, 4),)
    check_compiled(make, calls=5, between=lambda s, i: s["change"](i))


def test_a_new_module_passed_as_an_argument():
    def make(mod, wrap):
        nets = []
        F = mod.nn.functional

        def step(net, x, y):
            return F.cross_entropy(net(x), y)

        def batch(i):
            nets.append(_net(mod, i))
            return (nets[-1],) + _batch(mod)(i)
        return wrap(step), {"nets": nets}, batch
    check_compiled(make, calls=4)


def test_a_partial_over_a_new_module_swapped_in():
    def make(mod, wrap):
        F = mod.nn.functional

        def loss_of(model, x, y):
            return F.cross_entropy(model(x), y)
        box = [functools.partial(loss_of, _net(mod, 0))]

        def change(i):
            box[0] = functools.partial(loss_of, _net(mod, 5 + i))
        return wrap(lambda x, y: box[0](x, y)), {"change": change}, _batch(mod)
    check_compiled(make, calls=4, between=lambda s, i: s["change"](i))


def test_a_module_built_then_changed_before_its_first_compiled_call():
    # built and changed with no trace in between: all of it is before the program exists
    def make(mod, wrap):
        net = _net(mod, 0)
        net[0] = np_init(mod.nn.Linear(4, 5), mod, seed=9)
        net.register_buffer("shift", mod.full((3,), 0.5))

        def step(x):
            return (net(x) + net.shift).sum()
        return wrap(step), {"net": net}, lambda i: (data(mod, i, 2, 4),)
    check_compiled(make, calls=3, torch_too=True)
