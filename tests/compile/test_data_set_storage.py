"""``t.data = new`` inside a compiled function (NOTE [.data set in a trace] in
tracegrad/_lowering/region.py): eagerly ``t`` is on a new storage after every call, so a tensor
kept from an earlier call (``t.detach()``, ``t.data``, a view) keeps that call's values, a ``t``
the caller moved between calls still gets the call's value, and ``data_ptr()`` of the kept
tensor never changes. Each program runs under torch, tracegrad eager and tracegrad.compile
(``compare``), and the compiled run must keep one program."""
import pytest

import tracegrad
from tests.compile._dynamo_port import compare, randn32, seeded_linear
from _fresh_process import fresh_process

torch = pytest.importorskip("torch")

CALLS = 5


def _kept(T, net, kind):
    w = net.weight
    return {"detach": w.detach, "data": lambda: w.data, "view": lambda: w.detach()[0],
            "storage": lambda: T.Tensor(0)}[kind]()


@pytest.mark.parametrize("decay", [False, True], ids=["new_value", "decayed"])
@pytest.mark.parametrize("kind", ["detach", "data", "view"])
def test_tensor_kept_from_an_earlier_call_keeps_its_values(kind, decay):
    # ``decayed``: the program reads the storage it writes (``p.data = p.data * 0.5``, the
    # carried-over case); ``new_value``: it only writes it
    def build(T, wrap):
        net = seeded_linear(T)
        kept = {}

        def f(x, w):
            with T.no_grad():
                net.weight.data = (net.weight.data * 0.5 + w) if decay else w * 2
            return net(x)
        f = wrap(f)

        def run(i):
            out = f(randn32(T, i, 4, 3), randn32(T, i + 7, 2, 3))
            if i == 1:
                kept["t"] = _kept(T, net, kind)
            return out, net.weight, kept.get("t")
        run.f = f
        return run
    compiled = compare(build, calls=CALLS)
    assert compiled.f.stats["traces"] == 1, compiled.f.stats


# The decayed case's third call now and then differed from torch (CI, stop 49 and later): the
# zeros' new storage took the id of a storage the plan had lifted and that had died since, so the
# plan took it for known, the trace left it out of the inputs and the program kept the zeros it
# read as a constant. About one run in ten repeated in one process; ``test_plan_entry_of_a_dead_
# storage_is_no_entry`` below reproduces it by hand.
@pytest.mark.parametrize("decay", [False, True], ids=["new_value", "decayed"])
@fresh_process
def test_caller_moves_the_tensor_between_calls(decay):
    def build(T, wrap):
        net = seeded_linear(T)

        def f(x, w):
            with T.no_grad():
                net.weight.data = (net.weight.data * 0.5 + w) if decay else w * 2
            return net(x)
        f = wrap(f)

        def run(i):
            out = f(randn32(T, i, 4, 3), randn32(T, i + 7, 2, 3))
            if i in (1, 3):
                zeros = T.zeros(2, 3)
                net.weight.data = zeros
                run.zeros.append(zeros)
            return out, net.weight, list(run.zeros)
        run.zeros = []
        return run
    compare(build, calls=CALLS)


# In its own process: the in-place write is an optimization whose precondition is that nothing
# else refers to the storage and the one program runs on every call. Late in a long CI worker
# this test once saw the parameter on a new storage (a legitimate result of an eager call or a
# retrace; not reproduced alone or in a run of tests/compile with the region's reference counts
# checked after every call), so the stats are asserted first to name such a cause.
@fresh_process
def test_storage_written_in_place_while_nothing_else_shares_it():
    # no tensor but the parameter refers to the storage: the program writes into it (its
    # address stays), as no Python object can tell a new storage from the old one
    net = seeded_linear(tracegrad)

    @tracegrad.compile
    def f(x):
        with tracegrad.no_grad():
            net.weight.data = net.weight.data * 0.5
        return net(x)
    x = randn32(tracegrad, 0, 4, 3)
    for _ in range(3):
        f(x)
    ptr = net.weight.data_ptr()
    for _ in range(3):
        f(x)
    assert (f.stats["traces"], f.stats["eager_calls"], f.stats["graph_breaks"]) == (1, 1, []), f.stats
    assert net.weight.data_ptr() == ptr
    assert f.stats["traces"] == 1, f.stats
    # a kept alias: the next call moves the parameter to a new storage, the alias keeps its values
    kept = net.weight.detach()
    before = kept.clone()
    f(x)
    assert net.weight.data_ptr() != kept.data_ptr()
    assert tracegrad.equal(kept, before)
    assert tracegrad.allclose(net.weight, before * 0.5)
    f(x)
    assert tracegrad.allclose(net.weight, before * 0.25)
    assert f.stats["traces"] == 1, f.stats


def test_second_compiled_function_reads_the_moved_parameter():
    # a compiled eval function reads the parameter the compiled step keeps moving (a kept alias
    # forces new storages): it must read each call's value
    def build(T, wrap):
        net = seeded_linear(T)

        def step(w):
            with T.no_grad():
                net.weight.data = net.weight.data * 0.5 + w

        def evaluate(x):
            with T.no_grad():
                return net(x)
        step, evaluate = wrap(step), wrap(evaluate)
        kept = []

        def run(i):
            step(randn32(T, i + 7, 2, 3))
            kept.append(net.weight.detach())
            return evaluate(randn32(T, 0, 4, 3)), net.weight, list(kept)
        return run
    compare(build, calls=CALLS)


@pytest.mark.parametrize("how", ["data", "set_"])
def test_parameter_moved_outside_while_an_alias_keeps_the_old_storage(how):
    # NOTE [tensors moved off their storage]: the alias keeps the old storage alive, so only a
    # check of the parameter itself tells the program to read its new storage (followed: no
    # new trace)
    def build(T, wrap):
        net = seeded_linear(T)
        f = wrap(lambda x: net(x).sum(-1))
        kept = []

        def run(i):
            out = f(randn32(T, 0, 4, 3))
            if i in (1, 2):
                kept.append(net.weight.detach())
                new = randn32(T, 10 + i, 2, 3)
                with T.no_grad():
                    if how == "data":
                        net.weight.data = new
                    else:
                        net.weight.set_(new)
            return out, net.weight, list(kept)
        run.f = f
        return run
    compiled = compare(build, calls=CALLS)
    assert compiled.f.stats["traces"] == 1, compiled.f.stats


def test_returned_detached_parameter_follows_the_moved_parameter():
    # a compiled function returning ``p.detach()`` (an alias of the parameter's storage, as
    # eager's) after the caller moved ``p`` while an older alias keeps the old storage
    def build(T, wrap):
        net = seeded_linear(T)
        f = wrap(lambda x: (net(x).sum(), net.weight.detach()))
        kept = []

        def run(i):
            loss, w = f(randn32(T, 0, 4, 3))
            kept.append(w)
            with T.no_grad():
                w.add_(1.0)           # through the alias: reaches the parameter, as eagerly
            if i == 1:
                net.weight.data = randn32(T, 11, 2, 3)
            return loss, net.weight, list(kept)
        return run
    compare(build, calls=CALLS)


def test_plan_entry_of_a_dead_storage_is_no_entry():
    # ids are reused: a plan entry (id -> weakref) whose storage died must not stand for a new
    # storage that happens to get its id, or the trace reads that one as a constant
    import types
    import weakref

    from tracegrad._lowering.trace import Plan
    from tracegrad._tensor.storage import Storage
    t = tracegrad.zeros(2, 3)
    dead = Storage(t._st.array)
    plan = Plan()
    plan.storages[id(t._st)] = (weakref.ref(dead), weakref.ref(t))
    del dead                                      # its entry now names nothing
    cap = types.SimpleNamespace(grad_owners={}, found={id(t._st): (t, t._st.array, t._st)},
                                found_generators=[], optimizers=[], data_leaves={})
    assert plan.absorb(cap)
    assert plan.storages[id(t._st)][0]() is t._st


def test_moved_parameter_read_again_after_many_programs():
    # the reuse above in a real loop: a fresh model per round, the caller moving the weight
    # onto new zeros twice; compiled must equal eager in every round
    import numpy as np

    def build(wrap):
        net = seeded_linear(tracegrad)

        def f(x, w):
            with tracegrad.no_grad():
                net.weight.data = net.weight.data * 0.5 + w
            return net(x)
        f = wrap(f)
        kept = []

        def run(i):
            out = f(randn32(tracegrad, i, 4, 3), randn32(tracegrad, i + 7, 2, 3))
            if i in (1, 3):
                z = tracegrad.zeros(2, 3)
                net.weight.data = z
                kept.append(z)
            return out.detach().numpy().copy(), net.weight.detach().numpy().copy()
        return run
    for _ in range(12):
        eager, compiled = build(lambda f: f), build(tracegrad.compile)
        for i in range(CALLS):
            a, b = eager(i), compiled(i)
            np.testing.assert_allclose(b[0], a[0], rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(b[1], a[1], rtol=1e-6, atol=1e-6)
