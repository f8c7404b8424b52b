"""Round-14 ports (fourth file) of PyTorch's test/dynamo/test_misc.py and test_functions.py
cases about tensors as Python objects and in-place writes to inputs, as compiled-vs-eager
checks: iterating and unpacking a tensor, tensors as dict keys, attributes set on a tensor,
masked in-place assignment, ``out=`` variants, ``.data`` and ``requires_grad_`` on inputs,
``detach_``, is_compiling. torch eager, tracegrad eager and ``tracegrad.compile`` must agree
after every call (inputs included: their values after the call are compared too)."""
import numpy as np
import pytest

import tracegrad
from ._dynamo_port import CALLS, compare, randn32 as _rand, same

torch = pytest.importorskip("torch")






def _simple(fn, make_args):
    """``fn(T)`` -> the function; ``make_args(T, i)`` -> its arguments. Observables: the result
    and every argument after the call."""
    def build(T, wrap):
        f = wrap(fn(T))

        def run(i):
            args = make_args(T, i)
            return f(*args), list(args)
        return run
    return build


# MiscTests.test_tensor_iter / test_unpack_tensor / FunctionTests.test_enumerate / test_zip
def test_iterate_and_unpack_a_tensor():
    def fn(T):
        def f(x, y):
            a, b, c = x                     # unpack rows
            acc = [r * k for k, r in enumerate(y)]
            return a + b * c, T.stack(acc), [p * q for p, q in zip(x, y)]
        return f
    compare(_simple(fn, lambda T, i: (_rand(T, i, 3, 2), _rand(T, i + 1, 3, 2))))


# MiscTests.test_tensor_dict_keys / test_id_of_tensor_as_key: tensors as dict keys
def test_tensors_as_dict_keys():
    def fn(T):
        def f(x, y):
            d = {x: 1.0, y: 2.0}
            ids = {id(x): "x", id(y): "y"}
            return sum(t * w for t, w in d.items()), ids[id(y)], x in d
        return f
    compare(_simple(fn, lambda T, i: (_rand(T, i, 2), _rand(T, i + 1, 2))))


# MiscTests.test_tensor_setattr / test_tensor_attribute_persisted: a Python attribute set on a
# tensor argument inside the function is there after every call, updated every call
def test_python_attribute_set_on_a_tensor_argument():
    def build(T, wrap):
        x = T.ones(2)
        x.counter = 0

        def fn(t):
            t.counter += 1
            t.tag = f"seen{t.counter}"
            return t * t.counter
        f = wrap(fn)

        def run(i):
            return f(x), x.counter, x.tag
        return run
    compare(build)


# MiscTests.test_boolean_mask_setitem / test_index_put_inplace: masked assignment into an input
def test_masked_assignment_into_an_input():
    def fn(T):
        def f(x, v):
            x[x < 0] = 0
            x[:, 0] += v
            return x.sum()
        return f
    compare(_simple(fn, lambda T, i: (_rand(T, i, 3, 2), float(i))))


# MiscTests.test_out_variants / test_out_param: out= into an argument (resized when needed)
def test_out_variants_into_arguments():
    def fn(T):
        def f(a, b, out1, out2):
            T.add(a, b, out=out1)
            T.mul(a, b.sum(), out=out2)
            return out1 * 2
        return f
    compare(_simple(fn, lambda T, i: (_rand(T, i, 2, 2), _rand(T, i + 1, 2, 2), T.zeros(2, 2), T.zeros(2, 2))))


# MiscTests.test_tensor_data_mutation / test_set_data_on_input: ``.data`` of an input replaced
def test_data_of_an_input_replaced():
    def fn(T):
        def f(p, x):
            y = (p * x).sum()
            p.data = p.data * 0.5 + x.detach()
            return y, p * 1
        return f
    compare(_simple(fn, lambda T, i: (T.nn.Parameter(_rand(T, i, 3)), _rand(T, i + 1, 3))))


# MiscTests.test_requires_grad_on_input / test_detach_inplace: requires_grad_ turned on for an
# argument and detach_ on an intermediate inside the function
def test_requires_grad_on_an_input_and_detach_in_place():
    def build(T, wrap):
        def fn(x, w):
            x.requires_grad_()
            h = x * w
            k = h * 2
            k.detach_()
            return (h + k).sum(), k.requires_grad, x.requires_grad
        f = wrap(fn)

        def run(i):
            x, w = _rand(T, i, 3), _rand(T, i + 1, 3)
            out = f(x, w)
            out[0].backward()
            return out, x.grad
        return run
    compare(build)


# MiscTests.test_is_compiling: what the function sees, on every call. torch.compile answers
# True inside on every call (not run here: torch.compile changes torch's process-wide
# defaults); tracegrad's first call runs eagerly but must answer as compiled too
def test_is_compiling_seen_inside():
    f = tracegrad.compile(lambda x: x + 1 if tracegrad.compiler.is_compiling() else x - 1)
    for i in range(CALLS):
        assert f(tracegrad.full((1,), float(i))).tolist() == [i + 1.0]
        assert tracegrad.compiler.is_compiling() is False
    eager = lambda x: x + 1 if torch.compiler.is_compiling() else x - 1  # noqa: E731
    assert eager(torch.zeros(1)).tolist() == [-1.0]


# FunctionTests.test_inplace_view_on_input / MiscTests.test_view_of_input_mutated: a view of
# an argument written in place, the argument's other views seen by the caller
def test_view_of_an_input_written_in_place():
    def build(T, wrap):
        base = T.zeros(4, 3)
        rows = base[1:3]

        def fn(v, x):
            v.add_(x)
            v.t()[0].mul_(2)
            return v.sum()
        f = wrap(fn)

        def run(i):
            return f(rows, _rand(T, i, 2, 3)), base.clone(), rows.clone()
        return run
    compare(build)
