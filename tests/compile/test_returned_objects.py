"""Plain objects a compiled function returns (NOTE [returned objects] in
``_lowering/result_objects.py``): a ``SimpleNamespace``, a dataclass or a dict-subclass dataclass
(Hugging Face's ``ModelOutput`` pattern) that the call made is a new object per call, over that
call's tensors and graph, as eagerly; one an outside place holds is returned as itself. torch,
tracegrad eager and ``tracegrad.compile`` run each program from the same state and must agree
after every call (``_dynamo_port.compare``)."""
import collections
import dataclasses
import types
from typing import Optional

import pytest

import tracegrad

from ._dynamo_port import compare, compare_programs
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


@dataclasses.dataclass
class Out:
    loss: object
    h: object
    tag: str = "out"


@dataclasses.dataclass(frozen=True)
class FrozenOut:
    loss: object
    h: object


@dataclasses.dataclass
class DictOut(collections.OrderedDict):
    """The ``ModelOutput`` pattern: a dataclass that is also a dict of its non-None fields."""
    logits: object = None
    hidden: Optional[tuple] = None
    loss: object = None

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                self[f.name] = v

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


def _kept_run(make):
    """``build`` for a step returning ``make(T, net, x)``: the caller keeps every call's object
    and reports all their tensors, how many distinct objects it holds, and the layer's gradient
    from a backward through the newest object."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        f = wrap(lambda x: make(T, net, x))
        kept = []

        def run(i):
            kept.append(f(_rand(T, i, 2, 3)))
            net.zero_grad()
            new = kept[-1]
            (new["loss"] if isinstance(new, dict) else new.loss).backward()
            hs = [k["hidden"][0] if isinstance(k, dict) else k.h for k in kept]
            return hs, len({id(k) for k in kept}), net.weight.grad, [type(k).__name__ for k in kept]
        return run
    return build


@pytest.mark.parametrize("make", [
    lambda T, net, x: types.SimpleNamespace(loss=net(x).sum(), h=net(x).tanh()),
    lambda T, net, x: Out(net(x).sum(), net(x).tanh()),
    lambda T, net, x: FrozenOut(net(x).sum(), net(x).tanh()),
    lambda T, net, x: DictOut(logits=net(x), hidden=(net(x).tanh(),), loss=net(x).pow(2).mean()),
], ids=["namespace", "dataclass", "frozen", "model_output"])
def test_an_object_the_call_made_is_new_per_call(make):
    compare_programs(_kept_run(make), calls=4, traces=1)


def test_model_output_reads_as_dict_and_attributes_under_fullgraph():
    """``out.logits``, ``out["logits"]``, ``out.to_tuple()`` and its keys (None fields left out)
    after every call, with ``fullgraph=True`` (no graph break)."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        f = wrap(lambda x: DictOut(logits=net(x), loss=net(x).sum()))

        def run(i):
            out = f(_rand(T, i, 2, 3))
            return out.logits, out["logits"], out.logits is out["logits"], list(out.keys()), out.to_tuple(), \
                out.hidden is None
        return run
    compare(build, calls=3, fullgraph=True)


def test_nested_objects_inside_containers():
    def build(T, wrap):
        net = _linear(T, 3, 2)
        f = wrap(lambda x: {"a": (types.SimpleNamespace(y=net(x), inner=Out(net(x).sum(), net(x) * 2, "t")),)})
        kept = []

        def run(i):
            kept.append(f(_rand(T, i, 2, 3)))
            return [(k["a"][0].y, k["a"][0].inner.h, k["a"][0].inner.tag) for k in kept], \
                len({id(k["a"][0].inner) for k in kept})
        return run
    compare_programs(build, calls=3, traces=1)


def test_an_outside_object_the_call_fills_is_returned_as_itself():
    """A namespace from before the call (a closure), filled and returned by the step: eagerly the
    same object every call, holding the latest call's tensors."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        ns = types.SimpleNamespace(h=None)

        def step(x):
            ns.h = net(x).tanh()
            return ns
        f = wrap(step)

        def run(i):
            out = f(_rand(T, i, 2, 3))
            return out is ns, out.h, ns.h
        return run
    compare(build, calls=4)


def test_an_object_the_call_made_and_stored_on_the_module_is_that_object():
    """Made by the call and also bound to a module attribute: the returned object and
    ``net.last`` are one object after every call, as eagerly."""
    def build(T, wrap):
        net = _linear(T, 3, 2)

        def step(x):
            out = Out(net(x).sum(), net(x).tanh())
            net.last = out
            return out
        f = wrap(step)

        def run(i):
            out = f(_rand(T, i, 2, 3))
            return out is net.last, out.h, net.last.loss
        return run
    compare(build, calls=4)


def test_an_object_holding_an_outside_list_keeps_that_list():
    """A namespace made by the call holding a list from outside (a log the step appends to):
    the list in every returned object is the caller's list, as eagerly."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        log = []

        def step(x):
            y = net(x)
            return types.SimpleNamespace(y=y, log=log)
        f = wrap(step)

        def run(i):
            out = f(_rand(T, i, 2, 3))
            log.append(i)
            return out.log is log, list(out.log), out.y
        return run
    compare(build, calls=4)


def test_returned_object_backward_reaches_parameters_through_old_objects():
    """Two calls' objects kept; a backward through the older one's tensor after the newer call
    gives that older call's gradient (its own graph), as eagerly."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        f = wrap(lambda x: types.SimpleNamespace(out=net(x).pow(2).sum()))

        def run(i):
            a = f(_rand(T, i, 2, 3))
            f(_rand(T, i + 10, 2, 3))
            net.zero_grad()
            a.out.backward()
            return a.out, net.weight.grad
        return run
    compare(build, calls=3)


def test_compiled_object_results_trace_once():
    f = tracegrad.compile(lambda x: types.SimpleNamespace(y=x * 2))
    outs = [f(tracegrad.full((2,), float(i))) for i in range(4)]
    assert [o.y.tolist() for o in outs] == [[0.0, 0.0], [2.0, 2.0], [4.0, 4.0], [6.0, 6.0]]
    assert len({id(o) for o in outs}) == 4
    assert f.stats["traces"] == 1 and not f.stats["graph_breaks"], f.stats
