"""Gradients at kinks and ties, where the derivative is a convention: torch's choices
(abs'(0) = 0, relu'(0) = 0, maximum ties split 0.5/0.5, amax ties shared, clamp at the
bound passes the gradient, norm of a zero vector has grad 0, ...) must be kept."""
import numpy as np
import pytest

from _ag import run_table, table_cases

Z = [0.0, 1.0, -1.0, 0.0]


def _g(fn, arrays):
    def case(t):
        xs = [t.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
        fn(t, *xs).sum().backward()
        return [x.grad for x in xs]
    return case


CASES = {
    "abs at 0": _g(lambda t, x: x.abs(), [Z]),
    "relu at 0": _g(lambda t, x: x.relu(), [Z]),
    "sign": _g(lambda t, x: x.sign() * x, [Z]),
    "clamp at bounds": _g(lambda t, x: x.clamp(-1.0, 1.0), [[-1.0, 1.0, 0.5, 2.0]]),
    "clamp_min at bound": _g(lambda t, x: x.clamp(min=0.0), [Z]),
    "maximum tie": _g(lambda t, a, b: t.maximum(a, b), [[1.0, 2.0], [1.0, 3.0]]),
    "minimum tie": _g(lambda t, a, b: t.minimum(a, b), [[1.0, 2.0], [1.0, 3.0]]),
    "amax ties": _g(lambda t, x: x.amax(), [[2.0, 1.0, 2.0, 2.0]]),
    "max() ties": _g(lambda t, x: x.max(), [[2.0, 1.0, 2.0]]),
    "max(dim) ties": _g(lambda t, x: x.max(0).values, [[[2.0, 1.0], [2.0, 3.0]]]),
    "min() ties": _g(lambda t, x: x.min(), [[1.0, 1.0, 2.0]]),
    "median": _g(lambda t, x: x.median(), [[3.0, 1.0, 2.0, 2.0]]),
    "norm of zeros": _g(lambda t, x: x.norm(), [[0.0, 0.0]]),
    "sqrt at 0": _g(lambda t, x: x.sqrt(), [[0.0, 4.0]]),
    "pow 0 ** 0.5": _g(lambda t, x: x ** 0.5, [[0.0, 4.0]]),
    "pow 0 ** 2": _g(lambda t, x: x ** 2, [[0.0, 4.0]]),
    "pow 0 ** 0": _g(lambda t, x: x ** 0, [[0.0, 4.0]]),
    "hardtanh at bounds": _g(lambda t, x: t.nn.functional.hardtanh(x), [[-1.0, 1.0, 0.0]]),
    "leaky_relu at 0": _g(lambda t, x: t.nn.functional.leaky_relu(x, 0.1), [Z]),
    "where both": _g(lambda t, x: t.where(x > 0, x, x * 2), [Z]),
    "floor/round": _g(lambda t, x: x.floor() + x.round() + x.ceil(), [[0.5, 1.5]]),
    "fmod": _g(lambda t, x: t.fmod(x, 1.5), [[2.0, -2.0]]),
    "remainder": _g(lambda t, x: t.remainder(x, 1.5), [[2.0, -2.0]]),
    "sort ties": _g(lambda t, x: x.sort().values * t.tensor([1.0, 2.0, 3.0], dtype=t.float64), [[2.0, 2.0, 1.0]]),
    "topk ties": _g(lambda t, x: x.topk(2).values * t.tensor([1.0, 5.0], dtype=t.float64), [[2.0, 2.0, 1.0]]),
    "log(0)*0": _g(lambda t, x: x * 0 + (x.abs() + 1).log(), [Z]),
    "x/x at 1": _g(lambda t, x: x / x, [[1.0, 2.0]]),
}


# known core bugs: case name -> root cause (all fixed by c4d5cb8)
XFAIL = {}


@pytest.mark.parametrize("case", table_cases(CASES, XFAIL))
def test_kink_and_tie_gradients(case):
    pytest.importorskip("torch")
    run_table(dict([case]))
