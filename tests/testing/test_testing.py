"""tracegrad.testing.assert_close and make_tensor against torch.testing: the same calls on both,
the same outcome (pass, or the same exception class and message up to the module's name)."""
import math

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _outcome(t, make):
    try:
        t.testing.assert_close(*make(t)[:2], **(make(t)[2] if len(make(t)) > 2 else {}))
    except Exception as e:   # noqa: BLE001  (the class is what we compare)
        return type(e), str(e).replace("tracegrad.", "torch.")
    return None


CASES = {
    "close": lambda t: (t.tensor([1.0, 2.0]), t.tensor([1.0, 2.0 + 1e-6])),
    "float32_mismatch": lambda t: (t.tensor([1.0, 2.0, 3.0]), t.tensor([1.0, 2.5, 3.0])),
    "2d_index": lambda t: (t.tensor([[1.0, 2.0], [3.0, 4.0]]), t.tensor([[1.0, 2.0], [3.0, 5.0]])),
    "shape": lambda t: (t.ones(3), t.ones(4)),
    "dtype": lambda t: (t.ones(2), t.ones(2, dtype=t.float64)),
    "dtype_unchecked": lambda t: (t.ones(2), t.ones(2, dtype=t.float64), {"check_dtype": False}),
    "dtype_unchecked_tol": lambda t: (t.tensor([1.0]), t.tensor([1.0 + 1e-6], dtype=t.float64), {"check_dtype": False}),
    "int": lambda t: (t.tensor([1, 2]), t.tensor([1, 3])),
    "bool": lambda t: (t.tensor([True, False]), t.tensor([False, False])),
    "nan": lambda t: (t.tensor([math.nan, 1.0]), t.tensor([math.nan, 1.0])),
    "nan_equal": lambda t: (t.tensor([math.nan]), t.tensor([math.nan]), {"equal_nan": True}),
    "inf": lambda t: (t.tensor([math.inf]), t.tensor([math.inf])),
    "inf_vs_big": lambda t: (t.tensor([math.inf]), t.tensor([3e38])),
    "explicit_tol": lambda t: (t.tensor([1.0]), t.tensor([1.05]), {"rtol": 0.1, "atol": 0.0}),
    "only_rtol": lambda t: (t.tensor([1.0]), t.tensor([2.0]), {"rtol": 0.1}),
    "only_atol": lambda t: (t.tensor([1.0]), t.tensor([2.0]), {"atol": 0.1}),
    "custom_msg": lambda t: (t.tensor([1.0]), t.tensor([2.0]), {"msg": "custom"}),
    "callable_msg": lambda t: (t.tensor([1.0]), t.tensor([2.0]), {"msg": lambda m: "wrapped: " + m.splitlines()[0]}),
    "zero_dim": lambda t: (t.tensor(1.0), t.tensor(1.5)),
    "float16": lambda t: (t.tensor([1.0], dtype=t.float16), t.tensor([1.0005], dtype=t.float16)),
    "bfloat16": lambda t: (t.tensor([1.0], dtype=t.bfloat16), t.tensor([1.01], dtype=t.bfloat16)),
    "requires_grad": lambda t: (t.ones(2, requires_grad=True) * 1, t.ones(2)),
    "tensor_vs_float": lambda t: (t.tensor(1.0), 1.0),
    "tensor_vs_list": lambda t: (t.tensor([1.0]), [1.0]),
    "strings": lambda t: ("a", "a"),
    "floats": lambda t: (1.0, 1.5),
    "ints": lambda t: (1, 2),
    "int_vs_float": lambda t: (1, 1.0),
    "int_vs_float_unchecked": lambda t: (1, 1.0, {"check_dtype": False}),
    "bools": lambda t: (True, False),
    "none": lambda t: (None, None),
    "tuple_vs_list": lambda t: ((1, 2), [1, 2]),
    "seq_item": lambda t: ([t.tensor(1.0), t.tensor(2.0)], [t.tensor(1.0), t.tensor(3.0)]),
    "seq_len": lambda t: ([t.tensor(1.0)], [t.tensor(1.0), t.tensor(3.0)]),
    "nested": lambda t: ({"a": [t.ones(2), t.zeros(2)]}, {"a": [t.ones(2), t.ones(2)]}),
    "map_keys": lambda t: ({"a": t.tensor(1.0)}, {"b": t.tensor(2.0)}),
    "numpy": lambda t: (np.array([1.0]), np.array([1.0])),
    "numpy_mismatch": lambda t: (np.array([1.0, 2.0]), np.array([1.0, 2.1])),
    "complex": lambda t: (t.tensor([1 + 1j]), t.tensor([1 + 2j])),
    # sparse COO: compared coalesced (an uncoalesced duplicate equals its sum), layouts checked
    "sparse_equal": lambda t: (t.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse(),
                               t.sparse_coo_tensor([[0, 0, 1], [1, 1, 0]], [0.5, 0.5, 2.0], (2, 2))),
    "sparse_values": lambda t: (t.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse(),
                                t.tensor([[0.0, 1.0], [3.0, 0.0]]).to_sparse()),
    "sparse_nnz": lambda t: (t.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse(), t.tensor([[0.0, 1.0], [0.0, 0.0]]).to_sparse()),
    "sparse_vs_dense": lambda t: (t.tensor([[0.0, 1.0]]).to_sparse(), t.tensor([[0.0, 1.0]])),
    "sparse_t": lambda t: (t.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse().t(), t.tensor([[0.0, 2.0], [1.0, 0.0]]).to_sparse()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_assert_close_as_torch(name):
    theirs, ours = _outcome(torch, CASES[name]), _outcome(tracegrad, CASES[name])
    assert ours == theirs


def _sparse(t, idx, vals):
    return t.sparse_coo_tensor(t.tensor(idx), t.tensor(vals), (6, 3))


SPARSE_CASES = {
    # the same values, one side coalesced: torch coalesces neither, so the nnz differ
    "sparse_coalesced_vs_not": lambda t: (_sparse(t, [[0, 3, 3], [1, 2, 2]], [1.0, 2.0, 3.0]),
                               _sparse(t, [[0, 3], [1, 2]], [1.0, 5.0]).coalesce()),
    "sparse_equal_uncoalesced": lambda t: (_sparse(t, [[3, 0], [2, 1]], [5.0, 1.0]),
                                           _sparse(t, [[3, 0], [2, 1]], [5.0, 1.0])),
    # neither is coalesced: the specified elements compare as they are, so these differ
    "sparse_uncoalesced_nnz": lambda t: (_sparse(t, [[0, 3, 3], [1, 2, 2]], [1.0, 2.0, 3.0]),
                                         _sparse(t, [[0, 3], [1, 2]], [1.0, 5.0])),
    "sparse_vs_dense": lambda t: (_sparse(t, [[0, 3], [1, 2]], [1.0, 5.0]),
                                  _sparse(t, [[0, 3], [1, 2]], [1.0, 5.0]).to_dense()),
    "sparse_values_differ": lambda t: (_sparse(t, [[0, 3], [1, 2]], [1.0, 5.0]),
                                       _sparse(t, [[0, 3], [1, 2]], [1.0, 5.5])),
    "sparse_indices_differ": lambda t: (_sparse(t, [[0, 3], [1, 2]], [1.0, 5.0]),
                                        _sparse(t, [[0, 4], [1, 2]], [1.0, 5.0])),
    "sparse_nnz_differ": lambda t: (_sparse(t, [[0, 3], [1, 2]], [1.0, 5.0]), _sparse(t, [[0], [1]], [1.0])),
}


def _assert_equal_outcome(cu, make):
    class _T(cu.TestCase):
        def runTest(self):
            pass
    try:
        _T().assertEqual(*make())
    except Exception as e:   # noqa: BLE001  (the class is what we compare)
        return type(e)
    return None


@pytest.mark.parametrize("name", sorted(SPARSE_CASES))
def test_harness_assert_equal_compares_sparse_coo_as_torch(name):
    # TestCase.assertEqual compares sparse COO tensors by nnz, indices and values as they are
    # (against a dense tensor, dense), as torch's (a sparse
    # x.grad in TestAutogradDeviceType.test_sparse_backward): the outcome's class matches torch's
    from tracegrad.testing._internal import common_utils as tg_cu
    torch_cu = pytest.importorskip("torch.testing._internal.common_utils")
    theirs = _assert_equal_outcome(torch_cu, lambda: SPARSE_CASES[name](torch))
    ours = _assert_equal_outcome(tg_cu, lambda: SPARSE_CASES[name](tracegrad))
    assert ours == (theirs and AssertionError)


def test_assert_close_can_fail_on_a_tiny_difference():
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 2"):
        tracegrad.testing.assert_close(tracegrad.tensor([1.0, 2.0]), tracegrad.tensor([1.0, 2.001]))


def test_make_tensor_shape_dtype_range():
    mt = tracegrad.testing.make_tensor
    x = mt(3, 4, dtype=tracegrad.float32, device="cpu")
    assert x.shape == (3, 4) and x.dtype is tracegrad.float32 and not x.requires_grad
    assert -9 <= float(x.min()) and float(x.max()) < 9
    y = mt((200,), dtype=tracegrad.int64, device="cpu", low=-2, high=3)
    assert set(y.tolist()) == {-2, -1, 0, 1, 2}
    assert set(mt(300, dtype=tracegrad.uint8, device="cpu").tolist()) == set(range(10))
    assert set(mt(50, dtype=tracegrad.bool, device="cpu").tolist()) == {False, True}
    z = mt(2, 3, dtype=tracegrad.float64, device="cpu", low=0.5, high=0.75, requires_grad=True)
    assert z.requires_grad and z.is_leaf and 0.5 <= float(z.min()) and float(z.max()) < 0.75
    nz = mt(400, dtype=tracegrad.int8, device="cpu", low=-1, high=2, exclude_zero=True)
    assert 0 not in nz.tolist()
    nc = mt(3, 4, dtype=tracegrad.float32, device="cpu", noncontiguous=True)
    assert nc.shape == (3, 4) and not nc.is_contiguous()
    c = mt(5, dtype=tracegrad.complex64, device="cpu")
    assert c.dtype is tracegrad.complex64


@pytest.mark.parametrize("kw", [dict(dtype="int64", low=3, high=1), dict(dtype="float32", low=math.nan),
                                dict(dtype="int64", requires_grad=True), dict(dtype="uint8", low=-20, high=-10)])
def test_make_tensor_errors_as_torch(kw):
    for t in (torch, tracegrad):
        with pytest.raises(ValueError):
            t.testing.make_tensor(2, device="cpu", **{**kw, "dtype": getattr(t, kw["dtype"])})
