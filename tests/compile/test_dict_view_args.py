"""Dict views among a compiled function's arguments (``d.items()``, ``d.keys()``,
``d.values()``: ``DictViewArg`` in tracegrad/_lowering/call_tree.py): flattened like the dict
they show, so a view made anew for every call reuses one program (it was a new key by identity
per call, traced again until ``cache_size_limit``). Each program runs under torch, tracegrad
eager and tracegrad.compile (``compare_programs``)."""
import pytest

import tracegrad
from tests.compile._dynamo_port import compare, compare_programs, randn32

torch = pytest.importorskip("torch")

CALLS = 5


@pytest.mark.parametrize("view", ["items", "keys", "values"])
def test_a_new_view_every_call_is_one_program(view):
    def build(T, wrap):
        def f(x, v):
            if view == "items":
                return sum(t * len(k) for k, t in v) + x
            if view == "keys":
                return x * len(list(v)) + sum(len(k) for k in v)
            return x + sum(v)
        g = wrap(f)

        def run(i):
            d = {"a": randn32(T, i, 3), "bb": randn32(T, i + 10, 3)}
            return g(randn32(T, 100 + i, 3), getattr(d, view)())
        return run
    compare_programs(build, calls=CALLS, traces=1)


def test_views_of_numbers_key_by_value_and_order():
    # the dict's keys and numbers are part of the key: another order or value is another program
    def build(T, wrap):
        g = wrap(lambda x, items: [x * v for _, v in items])
        dicts = [{"a": 1.0, "b": 2.0}, {"a": 1.0, "b": 2.0}, {"b": 2.0, "a": 1.0}, {"a": 3.0, "b": 2.0}]
        return lambda i: g(randn32(T, i, 2), dicts[i % 4].items())
    compare(build, calls=8)


def test_a_returned_view_is_eagers():
    # the view is the caller's object eagerly: the call runs eagerly, with the caller's view
    x = tracegrad.ones(2)
    d = {"a": x}
    f = tracegrad.compile(lambda t, it: (t * 2, it))
    for _ in range(3):
        v = d.items()
        out, same = f(x, v)
        assert same is v
