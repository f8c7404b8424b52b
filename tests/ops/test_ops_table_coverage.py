"""Every op in the op table must have a parity case (STYLE 11: a test walks the table).

The tracegrad side of every case table is run with the dispatcher recording which ops ran;
an op of the op-library modules that no case reaches fails the test, unless it is in
``EXCLUDED`` with a reason. Ops declared by other areas (``nn_ops``...) are checked by their
own test directories."""
import pytest

import tracegrad
from tracegrad._ops import OPS
from parity import record_ops, run

pytest.importorskip("torch")

from . import test_dtypes, test_ops_elementwise, test_ops_reduction, test_ops_shape, test_scatter_repeated  # noqa: E402
from tensor import test_factories, test_tensor  # noqa: E402  (tests/ is on sys.path)
from api import test_torch_names  # noqa: E402

MODULES = ("elementwise", "reduction", "shape", "indexing", "linalg", "strided")

EXCLUDED = {
    **{name: "own node of a composite (torch's grad_fn name): tests/conformance/test_semantics1.py"
       for name in ("addbmm", "addmv", "addr", "baddbmm", "deg2rad", "hypot", "logaddexp", "logaddexp2",
                    "nan_to_num", "rad2deg", "sinc", "vdot")},
    "silu": "nn.functional.silu: tests/nn",
    "mish": "nn.functional.mish: tests/nn",
    "pad": "nn.functional.pad: tests/nn",
    "pad_mode": "nn.functional.pad (reflect/replicate): tests/nn",
    "one_hot": "nn.functional.one_hot: tests/nn",
    "embedding": "nn.functional.embedding: tests/nn",
    "basic_index": "not dispatched by Tensor methods (kept for view-chain replays)",
    "alias": "view-chain step used by the core (detach/alias), no public op",
}

TABLES = (test_ops_elementwise.ALL + test_ops_reduction.REDUCE + test_ops_reduction.LINALG
          + test_ops_shape.SHAPE + test_ops_shape.INDEX_OPS + test_ops_shape.GETITEM + test_scatter_repeated.SCATTER + test_torch_names.HYPERBOLIC
          + test_tensor.META + test_tensor.SETITEM + test_tensor.INPLACE + test_tensor.VIEWS
          + test_dtypes.PROMOTION + test_dtypes.CASTS + test_factories.FACTORIES)


def _module(op):
    return getattr(op.fn, "__module__", "").rsplit(".", 1)[-1]


def test_every_op_has_a_parity_case():
    with record_ops() as rec:
        for case in TABLES:
            run(tracegrad, case, backward=False)
        for _, draw, _, _ in test_factories.RANDOM:
            draw(tracegrad, None)
    ours = {name for name, op in OPS.items() if _module(op) in MODULES}
    assert ours, "no ops found in the op-library modules"
    missing = sorted(ours - rec.names - set(EXCLUDED))
    assert not missing, f"ops without a parity case: {missing}"
    stale = sorted(set(EXCLUDED) - ours)
    assert not stale, f"EXCLUDED names that are not ops of the library: {stale}"


# error cases whose message must be torch's, word for word (first line); the others keep
# torch's class but add what to do (STYLE 8)
SAME_MESSAGE = {"add_bad_type", "mul_shape_mismatch", "add_shape_mismatch", "where_nonbool", "mean_int_raises",
                "matmul_dtype_mismatch", "gather_float_index", "masked_fill_int_mask", "set_shape_mismatch",
                "copy_bad_shape", "tensor_ragged_raises", "neg_bool_raises", "sub_bool_raises", "div_bad_mode",
                "cat_empty_list", "int_many_raises", "float_many_raises", "clamp_none", "topk_too_big",
                "expand_bad", "view_bad", "out_of_range", "zero_dim_int_raises", "numpy_requires_grad_raises"}


def test_error_messages_match_torch():
    import torch
    cases = {c.name: c for c in TABLES}
    assert SAME_MESSAGE <= set(cases), sorted(SAME_MESSAGE - set(cases))
    for name in sorted(SAME_MESSAGE):
        want, _ = run(torch, cases[name], backward=False)
        got, _ = run(tracegrad, cases[name], backward=False)
        assert want[0] == "raise" and got[0] == "raise", name
        w = str(want[1]).split("\n")[0].replace("torch.", "tracegrad.")
        g = str(got[1]).split("\n")[0]
        assert g == w, f"{name}: {g!r} != torch {w!r}"
