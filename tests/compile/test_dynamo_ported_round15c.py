"""Round-15 ports (third file) of PyTorch's test/dynamo/test_repros.py cases, as
compiled-vs-eager checks: duplicated return values keep storages of their own, a compiled
function called from a compiled function, a module whose ``_parameters`` is an OrderedDict
subclass, a TypedDict built and rewritten inside, a submodule holding its parent's bound method
(the attribute it reads changed between calls), ``copy_`` from a Python int, ``out=`` factories
resizing their output, a dataclass field read into ``tensor()``, a Categorical subclass.
torch eager, tracegrad eager and ``tracegrad.compile`` must agree after every call."""
import collections
import dataclasses
from typing import TypedDict

import pytest

import tracegrad
from ._dynamo_port import compare, randn32 as _rand

torch = pytest.importorskip("torch")


def _init(T, mod, seed=0):
    with T.no_grad():
        for k, p in enumerate(mod.parameters()):
            p.copy_(_rand(T, seed + k, *p.shape) * 0.5)
    return mod


# ReproTests.test_return_value_duplication_scalar: two equal results from two expressions are
# distinct tensors with storages of their own; writing one leaves the other
def test_duplicated_results_have_storages_of_their_own():
    def build(T, wrap):
        def fn(v):
            a, b = v * 2, v * 2
            return a[0], b[0]
        f = wrap(fn)

        def run(i):
            v = _rand(T, i, 2).requires_grad_()
            a, b = f(v)
            distinct = a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
            a2 = a.detach()
            a2.add_(1)
            return distinct, a.detach(), b.detach()
        return run
    compare(build)


# ReproTests.test_torch_compile_in_compile_frame: compile() called inside a compiled function
def test_compile_called_inside_a_compiled_function():
    def build(T, wrap):
        def inner(x, c=None):
            return (2 if c is None else c) * x

        def outer(x, c):
            g = T.compile(inner) if T is tracegrad else inner
            return g(x) + g(x, c)
        f = wrap(outer)

        def run(i):
            return f(_rand(T, i, 4), float(i))
        return run
    compare(build)


# ReproTests.test_overwriting_params: every module's _parameters replaced by an OrderedDict
# subclass (as ZeRO does); a compiled forward and a compiled step still see the parameters
def test_parameters_dict_replaced_by_an_ordereddict_subclass():
    class Tracking(collections.OrderedDict):
        def __init__(self, owner=None):
            super().__init__()
            self.owner = owner

        def __getitem__(self, key):
            return super().__getitem__(key)

    def build(T, wrap):
        model = _init(T, T.nn.Sequential(T.nn.Linear(2, 3), T.nn.Tanh(), T.nn.Linear(3, 2)))
        for m in model.modules():
            d = Tracking(m)
            for k, p in m._parameters.items():
                d[k] = p
            m._parameters = d
        opt = T.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = model(x).pow(2).sum()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)

        def run(i):
            return f(_rand(T, i, 4, 2)), model[0].weight, model[2].bias
        return run
    compare(build)


class _Inputs(TypedDict):
    kind: str
    data: object


# ReproTests.test_typed_dict: a TypedDict built inside, read, then an item rebound
def test_typed_dict_built_and_rewritten_inside():
    def build(T, wrap):
        def fn(x, y):
            obj = _Inputs(kind="pixels", data=y)
            out = x * obj["data"]
            obj["data"] = 3
            return out * obj["data"], obj["kind"]
        f = wrap(fn)

        def run(i):
            return f(_rand(T, i, 4), _rand(T, i + 1, 4))
        return run
    compare(build)


# ReproTests.test_method_overriding: a submodule holds its parent's bound method, which reads
# an attribute of the parent that changes between calls
def test_submodule_holding_a_parent_bound_method():
    def build(T, wrap):
        class Child(T.nn.Module):
            def __init__(self, scale_fn):
                super().__init__()
                self.scale_fn = scale_fn

            def forward(self, x):
                return self.scale_fn() * T.sin(x)

        class Parent(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.child = Child(self.scale)
                self.a = 4

            def scale(self):
                return self.a

            def forward(self, x):
                return self.child(x)

        m = Parent()
        f = wrap(m)

        def run(i):
            if i == 2:
                m.a = -1.5
            return f(_rand(T, i, 4))
        return run
    compare(build)


# ReproTests.test_compile_copy__int_overload and test_ones_out_dynamic / test_zeros_out_dynamic:
# copy_ from a Python number, and out= factories resizing their output between calls
def test_copy_from_an_int_and_out_factories_resizing():
    def build(T, wrap):
        def fn(x, size, out):
            a = x.copy_(1)
            b = T.ones(size, out=out)
            return a, b, out.shape
        f = wrap(fn)
        sizes = [(2, 3), (2, 3), (3, 4), (3, 4)]

        def run(i):
            x, out = T.zeros(2), T.empty(2, 3)
            res = f(x, sizes[i], out)
            return res, x, out
        return run
    compare(build)


# ReproTests.test_dataclass_in_module: a dataclass field read into tensor() in the forward,
# changed between calls
def test_dataclass_field_read_into_a_tensor():
    @dataclasses.dataclass
    class Data:
        value: float

    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.data = Data(3.25)

            def forward(self, x):
                return x + T.tensor(self.data.value)

        m = M()
        f = wrap(m)

        def run(i):
            if i == 2:
                m.data.value = -0.5
            return f(_rand(T, i, 2, 2))
        return run
    compare(build)


# ReproTests.test_distributions_subclass: a Categorical subclass built inside; log_prob of given
# values, probs and logits (the sampling itself is compared compiled vs eager elsewhere)
def test_categorical_subclass_built_inside():
    def build(T, wrap):
        class Sub(T.distributions.Categorical):
            pass

        def fn(t, v):
            d = Sub(logits=t, validate_args=True)
            return d.log_prob(v) + d.probs[v] + d.logits[v], d.entropy()
        f = wrap(fn)

        def run(i):
            return f(_rand(T, i, 10), T.tensor(i % 10))
        return run
    compare(build)
