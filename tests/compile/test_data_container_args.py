"""Plain objects passed to a compiled step: a batch object made anew for every call
(NOTE [data container arguments] in tracegrad/_lowering/region.py).

A dataclass, a slotted or frozen dataclass, a ``SimpleNamespace`` or a plain ``class Batch``
holding the batch's tensors, built by the data loop for every call, traced a program per call
until ``cache_size_limit`` made the step eager: the object was one opaque argument keyed by
identity. Once a call passes another instance of the class at the same place, the class's
instances are flattened (tensors fed as data, numbers keyed by value) and rebuilt for the
trace, so later calls reuse one program. Each test runs the program eagerly, compiled and (where
torch can run it) with torch, comparing every value after every call; the number of programs is
asserted where nothing the step reads changes.
"""
import dataclasses
import types
import warnings

import numpy as np
import pytest

import tracegrad
from . import _harness as _h
from ._harness import data, labels, snapshot
from ._harness import small_mlp


CALLS = 6


@dataclasses.dataclass
class Batch:
    x: object
    y: object
    weight: float = 1.0


@dataclasses.dataclass(frozen=True)
class FrozenBatch:
    x: object
    y: object
    weight: float = 1.0


@dataclasses.dataclass(slots=True)
class SlotBatch:
    x: object
    y: object
    weight: float = 1.0


class PlainBatch:
    def __init__(self, x, y, weight=1.0):
        self.x, self.y, self.weight = x, y, weight

    @property
    def n(self):
        return self.x.shape[0]


def _namespace(x, y, weight=1.0):
    return types.SimpleNamespace(x=x, y=y, weight=weight)


def _model(mod):
    model = small_mlp(mod)
    return model, mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


KINDS = {"dataclass": Batch, "frozen": FrozenBatch, "slots": SlotBatch, "plain": PlainBatch,
         "namespace": _namespace}


def _loss(mod, model, b):
    return mod.nn.functional.cross_entropy(model(b.x), b.y) * b.weight


def _train_run(make_batch, calls=CALLS, weights=(1.0,)):
    """A training step taking one batch object per call; returns the snapshots and (through
    ``wrap``) the compiled step."""
    def run(mod, wrap):
        model, opt = _model(mod)

        def step(b):
            opt.zero_grad()
            loss = _loss(mod, model, b)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        out = []
        for i in range(calls):
            b = make_batch(data(mod, i, 5, 4), labels(mod, i, 5, 3), weights[i % len(weights)])
            out.append(snapshot((f(b), dict(model.named_parameters()))))
        return out
    return run


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_new_batch_object_per_call_keeps_one_program(kind):
    made = _h.run_three_ways(_train_run(KINDS[kind]))
    st = made[0].stats
    # the first call runs eagerly; the second traces keyed by the object's identity, the third
    # by its attributes, and no later call traces again (it was a trace per call)
    assert st["traces"] == 2 and not st["graph_breaks"], st
    assert made[0].stats["eager_calls"] == 1


def test_number_attribute_keyed_by_value():
    # a Python float in the batch object is baked into the program as a number argument is:
    # one program per distinct value, each reused when it repeats
    made = _h.run_three_ways(_train_run(Batch, calls=8, weights=(1.0, 0.5)))
    assert made[0].stats["traces"] == 3


def test_changing_number_attribute_is_named_at_the_cache_limit():
    model, opt = _model(tracegrad)
    f = tracegrad.compile(lambda b: _loss(tracegrad, model, b))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(12):
            f(Batch(data(tracegrad, i, 5, 4), labels(tracegrad, i, 5, 3), weight=float(i)))
    msgs = [str(x.message) for x in w if "cache_size_limit" in str(x.message)]
    assert msgs and "args[0].weight" in msgs[0], msgs


def test_returned_batch_is_the_callers_object():
    model, _ = _model(tracegrad)
    f = tracegrad.compile(lambda b: (_loss(tracegrad, model, b), b))
    for i in range(CALLS):
        b = Batch(data(tracegrad, i, 5, 4), labels(tracegrad, i, 5, 3))
        loss, back = f(b)
        assert back is b and back.x is b.x
        np.testing.assert_allclose(loss.item(), _loss(tracegrad, model, b).item(), rtol=1e-6)
    assert f.stats["traces"] == 2


def test_attribute_set_on_the_batch_reaches_the_callers_object():
    # eagerly the step writes the caller's object; a rebuilt copy's write would be lost, so
    # such a step runs eagerly (a clear graph break), equal to eager
    def run(mod, wrap):
        model, opt = _model(mod)

        def step(b):
            loss = _loss(mod, model, b)
            b.loss = loss.detach()
            return loss
        f = wrap(step)
        out = []
        for i in range(4):
            b = Batch(data(mod, i, 5, 4), labels(mod, i, 5, 3))
            f(b)
            out.append(snapshot(b.loss))
        return out
    made = _h.run_three_ways(run)
    assert made[0].stats["graph_breaks"]


def test_long_lived_holder_rebinding_an_attribute_keeps_its_program():
    # an object passed unchanged on every call whose attribute the step rebinds (a carried
    # hidden state) is keyed by identity: one program. A new holder later is flattened once,
    # found changed, and from then on holders are keyed by identity again.
    class Holder:
        pass

    def run(mod, wrap):
        mod.manual_seed(0)
        cell = _h.np_init(mod.nn.Linear(3, 3), mod)
        f = wrap(lambda h, x: _carry(mod, cell, h, x))
        out = []
        for epoch in range(3):
            h = Holder()
            h.state = mod.zeros(1, 3)
            for i in range(4):
                out.append(snapshot((f(h, data(mod, 10 * epoch + i, 1, 3)), h.state)))
        return out
    made = _h.run_three_ways(run)
    st = made[0].stats
    # epoch 0: one program for the holder; epoch 1's new holder: one call eager (flattened, its
    # attribute set found), then its own program; epoch 2's: its own program
    assert st["traces"] == 3 and st["eager_calls"] == 2, st


def _carry(mod, cell, h, x):
    h.state = mod.tanh(cell(x) + h.state).detach()
    return h.state.sum()


def test_gradient_of_a_tensor_inside_the_batch_reaches_the_callers_tensor():
    def run(mod, wrap):
        model, _ = _model(mod)

        def step(b):
            loss = _loss(mod, model, b)
            loss.backward()
            return loss
        f = wrap(step)
        out = []
        for i in range(4):
            x = data(mod, i, 5, 4).requires_grad_()
            f(Batch(x, labels(mod, i, 5, 3)))
            out.append(snapshot(x.grad))
        return out
    _h.run_three_ways(run)


@dataclasses.dataclass
class Inner:
    w: object


@dataclasses.dataclass
class Outer:
    x: object
    inner: Inner
    tags: list


def test_nested_objects_and_lists_inside_the_batch():
    def run(mod, wrap):
        f = wrap(lambda b: (b.x * b.inner.w).sum() * len(b.tags))
        return [snapshot(f(Outer(data(mod, i, 3), Inner(data(mod, i + 50, 3)), [0] * (1 + i % 2))))
                for i in range(8)]
    made = _h.run_three_ways(run)
    # the inner object is made anew with the batch: both classes are flattened from the third
    # call on (one program keyed by identity, then one per list length)
    assert made[0].stats["traces"] == 3 and not made[0].stats["graph_breaks"], made[0].stats


@pytest.mark.parametrize("cls", [Batch, FrozenBatch])
def test_one_object_passed_twice_keeps_identity(cls):
    # keyed by identity (each call a new program until the cache limit); a frozen dataclass's
    # key part compares by value, and its __eq__ compares tensors: comparing two calls' keys
    # raised "Boolean value of Tensor ... is ambiguous" from the compiled call
    def run(mod, wrap):
        def f(a, b):
            return a.x.sum() + (1.0 if a is b else 0.0)
        g = wrap(f)
        out = []
        for i in range(10):
            b = cls(data(mod, i, 3), None)
            out.append(snapshot((g(b, b), g(b, cls(data(mod, i + 9, 3), None)))))
        return out
    _h.run_three_ways(run)


def test_object_holding_itself():
    class Node:
        def __init__(self, v):
            self.v, self.nxt = v, self

    def run(mod, wrap):
        f = wrap(lambda n: n.v * (2.0 if n.nxt is n else 3.0))
        return [snapshot(f(Node(data(mod, i, 3)))) for i in range(4)]
    _h.run_three_ways(run)
