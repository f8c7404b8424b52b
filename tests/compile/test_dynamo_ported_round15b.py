"""Round-15 ports (second file) of PyTorch's test/dynamo/test_subclasses.py ideas as
compiled-vs-eager checks: Tensor subclasses passed to, made in and returned by a compiled
function (the result type, ``__torch_function__`` changing results, a class attribute it reads
changed between calls, ``as_subclass``), and a Parameter subclass trained by a compiled step.
torch eager, tracegrad eager and ``tracegrad.compile`` must agree after every call, result
types included."""
import pytest

import tracegrad
from ._dynamo_port import CALLS, compare, randn32 as _rand

torch = pytest.importorskip("torch")


def _plain(T, x):
    return x.as_subclass(T.Tensor)


# SubclassTests.test_torch_function_state_graph_break / test_return_subclass: the default
# __torch_function__ keeps the subclass type through ops; a result's type is observable
def test_subclass_type_kept_through_ops():
    def build(T, wrap):
        class Tagged(T.Tensor):
            pass

        def fn(x, y):
            z = x * 2 + y
            return type(z).__name__, type(y * 3).__name__, _plain(T, z), z.sum().item()
        f = wrap(fn)

        def run(i):
            return f(_rand(T, i, 3).as_subclass(Tagged), _rand(T, i + 1, 3))
        return run
    compare(build)


# SubclassTests.test_torch_function_call_on_method / _override: __torch_function__ changes the
# result of one op (add) and reads a class attribute the program changes between calls
def test_torch_function_changing_results_with_a_class_attribute_changed_between_calls():
    def build(T, wrap):
        class Shifted(T.Tensor):
            shift = 1.0

            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                out = super().__torch_function__(func, types, args, kwargs or {})
                if getattr(func, "__name__", "") in ("add", "__add__"):
                    with T._C.DisableTorchFunctionSubclass():
                        out = out + cls.shift
                return out

        def fn(x, y):
            return _plain(T, x + y), _plain(T, x * y)
        f = wrap(fn)

        def run(i):
            if i == 2:
                Shifted.shift = -3.0
            return f(_rand(T, i, 3).as_subclass(Shifted), _rand(T, i + 1, 3))
        return run
    compare(build)


# SubclassTests.test_as_subclass inside the function, and isinstance on it
def test_as_subclass_inside_the_function():
    def build(T, wrap):
        class Marked(T.Tensor):
            pass

        def fn(x):
            m = (x + 1).as_subclass(Marked)
            n = m * m
            return isinstance(n, Marked), _plain(T, n), type(_plain(T, n)).__name__
        f = wrap(fn)

        def run(i):
            return f(_rand(T, i, 4))
        return run
    compare(build)


# a subclass input that requires grad: backward through a compiled function gives the leaf's grad
def test_subclass_leaf_backward():
    def build(T, wrap):
        class Leafy(T.Tensor):
            pass

        def fn(x):
            return (x.sin() * x).sum()
        f = wrap(fn)

        def run(i):
            x = _rand(T, i, 5).as_subclass(Leafy).requires_grad_()
            out = f(x)
            out.backward()
            return _plain(T, out.detach()), _plain(T, x.grad), type(x.grad).__name__
        return run
    compare(build)


# a Parameter subclass (with an extra attribute) trained by a compiled step
def test_parameter_subclass_trained_by_a_compiled_step():
    def build(T, wrap):
        class Tagged(T.nn.Parameter):
            pass

        lin = T.nn.Linear(3, 2)
        with T.no_grad():
            lin.weight.copy_(_rand(T, 0, 2, 3))
            lin.bias.zero_()
        lin.weight = Tagged(lin.weight.detach().clone())
        lin.weight.note = "tagged"
        opt = T.optim.Adam(lin.parameters(), lr=0.05)

        def step(x):
            opt.zero_grad()
            loss = lin(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)

        def run(i):
            loss = f(_rand(T, i, 4, 3))
            return loss, _plain(T, lin.weight.detach()), type(lin.weight).__name__, lin.weight.note
        return run
    compare(build)
