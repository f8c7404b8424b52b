"""What a compiled function looks like (a notebook cell ending in it displays its repr): torch's
``torch.compile(fn)`` is a function wrapping ``fn``, shown as ``<function name at 0x...>``."""
import re

import pytest

import tracegrad as tg


def _step(x):
    return x * 2


class _Holder:
    def method(self, x):
        return x + 1


def _blank(text):
    return re.sub(r"0x[0-9a-f]+", "0x", text)


@pytest.mark.parametrize("make", [lambda: _step, lambda: (lambda x: x), lambda: _Holder().method],
                         ids=["function", "lambda", "bound_method"])
def test_repr_of_compiled_function_matches_torch(make):
    torch = pytest.importorskip("torch")
    ours, theirs = tg.compile(make()), torch.compile(make())
    assert _blank(repr(ours)) == _blank(repr(theirs))
    assert _blank(str(ours)) == _blank(str(theirs))
    assert f"{id(ours):#x}" in repr(ours)      # this object's address, as a function's repr
    assert ours(tg.ones(2)).tolist() == theirs(torch.ones(2)).tolist()


def test_repr_of_compiled_decorated_function():
    @tg.compile(backend="aot_eager")
    def train_step(x):
        return x.sum()
    assert re.fullmatch(r"<function test_repr_of_compiled_decorated_function\.<locals>\.train_step at 0x[0-9a-f]+>",
                        repr(train_step))


@pytest.mark.parametrize("make", [lambda: _step, lambda: (lambda x, y=2: x), lambda: _Holder().method],
                         ids=["function", "lambda", "bound_method"])
def test_ipython_display_of_compiled_function_matches_torch(make):
    """IPython prints functions as ``<function module.name(signature)>``: torch's compiled
    function is one; tracegrad's object says the same."""
    torch = pytest.importorskip("torch")
    pretty = pytest.importorskip("IPython.lib.pretty").pretty
    assert pretty(tg.compile(make())) == pretty(torch.compile(make()))
