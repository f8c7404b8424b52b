"""A Python bool where torch's parser wants an int (a dim, a count, an offset, a size).

``True`` is an ``int`` to Python (``isinstance(True, int)``, ``operator.index(True) == 1``), so
tracegrad's plain-Python arguments took it as 1 (``x.transpose(True, 0)``, ``x.sum(True)``,
``x.split(True)``: silently the call with 1). torch's parser refuses a bool for an int with
TypeError; in an int list it reads only the first element's type to choose the overload, so a
bool there is TypeError while a later one is taken as its value (``x.view(True, 6)`` raises,
``x.view(2, True, 3)`` is a view to (2, 1, 3)). Each call runs under torch (the oracle) and
tracegrad: the same exception class (or none), no text of the layers below; ``_ok`` calls must
succeed in tracegrad with torch's result shape.
"""
import pytest

import tracegrad
from _bad_input_helpers import table_tests

torch = pytest.importorskip("torch")


def _x(T):
    return T.ones(2, 3)


CASES = {
    # a bool for an int argument: torch's TypeError
    "transpose_dim0": lambda T: _x(T).transpose(True, 0),
    "unsqueeze_dim": lambda T: _x(T).unsqueeze(True),
    "select_dim": lambda T: _x(T).select(True, 0),
    "narrow_start": lambda T: _x(T).narrow(0, True, 1),
    "flatten_start_dim": lambda T: _x(T).flatten(True),
    "softmax_dim": lambda T: _x(T).softmax(True),
    "cumsum_dim": lambda T: _x(T).cumsum(True),
    "sum_dim": lambda T: _x(T).sum(dim=True),
    "amax_dim_list_first": lambda T: _x(T).amax((True, 0)),
    "index_select_dim": lambda T: T.ones(3).index_select(True, T.tensor([0])),
    "stack_dim": lambda T: T.stack([_x(T)], True),
    "split_size": lambda T: T.ones(4).split(True),
    "roll_shifts": lambda T: _x(T).roll(True),
    "roll_shifts_list_first": lambda T: _x(T).roll((True,), (0,)),
    "diagonal_offset": lambda T: T.ones(2, 2).diagonal(True),
    "tril_diagonal": lambda T: _x(T).tril(True),
    "triu_diagonal": lambda T: _x(T).triu(True),
    "diag_diagonal": lambda T: T.ones(3).diag(True),
    "tile_dims": lambda T: _x(T).tile(True),
    "view_first": lambda T: _x(T).view(True, 6),
    "reshape_first": lambda T: _x(T).reshape(True, 6),
    "repeat_first": lambda T: T.ones(2).repeat(True),
    "pad_first": lambda T: T.nn.functional.pad(_x(T), (True, 0)),
    "ones_size": lambda T: T.ones(True),
    "topk_k": lambda T: T.ones(3).topk(True),
    "interpolate_size": lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4), size=True),
    "interpolate_size_list_first": lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4, 4), size=(True, 2)),
    # a bool after an int list's first element is its value, as torch's parser reads it
    "view_later_ok": lambda T: _x(T).view(2, True, 3),
    "reshape_later_ok": lambda T: _x(T).reshape((2, True, 3)),
    "permute_later_ok": lambda T: _x(T).permute(0, True),
    "flip_later_ok": lambda T: _x(T).flip((0, True)),
    "sum_later_ok": lambda T: _x(T).sum((0, True)),
    "repeat_later_ok": lambda T: _x(T).repeat(1, True),
    "split_sizes_later_ok": lambda T: T.ones(4).split([3, True]),
    "pad_later_ok": lambda T: T.nn.functional.pad(_x(T), (0, True)),
    "ones_later_ok": lambda T: T.ones(2, True),
    "interpolate_size_later_ok": lambda T: T.nn.functional.interpolate(T.ones(1, 1, 4, 4), size=(2, True)),
    # not an int parameter: a bool index, a Scalar end, a Python-level size
    "index_by_bool_ok": lambda T: _x(T)[True],
    "arange_end_ok": lambda T: T.arange(True),
    "linear_in_features_ok": lambda T: T.nn.Linear(True, 2),
    "var_unbiased_ok": lambda T: _x(T).var(True),
}
GIST = {"transpose_dim0": "bool", "stack_dim": "bool", "tril_diagonal": "diagonal", "split_size": "bool"}

test_same_class_as_torch, test_message_gist = table_tests(CASES, GIST, torch, tracegrad)


@pytest.mark.parametrize("name", [n for n in CASES if n.endswith("_ok") and "linear" not in n])
def test_accepted_calls_match_torch(name):
    def shapes(r):
        return [tuple(t.shape) for t in r] if isinstance(r, tuple) else tuple(r.shape)
    assert shapes(CASES[name](tracegrad)) == shapes(CASES[name](torch))
