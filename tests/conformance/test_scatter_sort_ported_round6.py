"""Round 6 of PyTorch's own tests, ported: test/test_scatter_gather.py (TestScatterGather) and
test/test_sort_and_select.py (TestSortAndSelect), device 'cpu', float32/float64 and the integer
dtypes the originals loop over. Each case is one small program run with torch (the oracle) and
with tracegrad (``parity.same_outcome``): equal dtypes, shapes and values (gradients included
where the program returns them), or the same builtin exception class. The originals draw random
inputs and compare against a loop or numpy; here the inputs are fixed and torch is the oracle.
Cases earlier rounds have (test_indexing_ported.py, test_sort_reduce_ported.py) are not repeated."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")

nan, inf = float("nan"), float("inf")
RS = np.random.RandomState(6)
SRC = RS.standard_normal((3, 4)).round(3)
SRC3 = RS.standard_normal((2, 3, 4)).round(3)
IDX = np.array([[0, 2, 1, 0], [2, 2, 0, 1]])          # (2, 4) rows into a (3, 4) target, dim 0
IDX1 = np.array([[3, 0, 3], [1, 1, 2], [0, 2, 2]])    # (3, 3) columns into a (3, 4) target, dim 1


def t(T, a, dt=None):
    return T.tensor(np.asarray(a), dtype=dt or T.float64)


def ix(T, a):
    return T.tensor(np.asarray(a), dtype=T.int64)


def grads(T, fn, *vals):
    """(fn's result, the gradient of sum(result * w) for each float64 leaf built from vals)."""
    xs = [t(T, v).requires_grad_() for v in vals]
    out = fn(*xs)
    w = T.arange(out.numel(), dtype=out.dtype).reshape(out.shape) / 7 + 0.5
    (out * w).sum().backward()
    return [out.detach()] + [x.grad for x in xs]


# ---- TestScatterGather ------------------------------------------------------------------------------
def _reduce(T, reduce, include_self, dtype=None, dim=0, index=IDX):
    dtype = dtype or T.float64
    base = T.tensor([[1., 2., 3., 4.], [5., 6., 7., 8.], [9., 10., 11., 12.]]).to(dtype)
    src = T.tensor([[2., 3., 4., 5.], [6., 7., 8., 9.]]).to(dtype)
    return base.scatter_reduce(dim, ix(T, index), src, reduce, include_self=include_self)


SCATTER = {
    # test_gather (dims 0, 1, 2 of a 3-d source; negative dim), test_gather_bool
    "gather_dim0": lambda T: T.gather(t(T, SRC), 0, ix(T, IDX)),
    "gather_dim1": lambda T: T.gather(t(T, SRC), 1, ix(T, IDX1)),
    "gather_3d_dim2": lambda T: T.gather(t(T, SRC3), 2, ix(T, [[[3, 0], [1, 1], [2, 0]]])),
    "gather_3d_negative_dim": lambda T: T.gather(t(T, SRC3), -2, ix(T, [[[0, 2, 1, 0]], [[2, 2, 2, 1]]])),
    "gather_bool": lambda T: T.gather(T.tensor([[False, True], [True, True]]), 1, ix(T, [[0, 0], [1, 0]])),
    "gather_int32_index_refused": lambda T: T.gather(t(T, SRC), 0, T.tensor([[0]], dtype=T.int32)),
    "gather_index_out_of_range": lambda T: T.gather(t(T, SRC), 1, ix(T, [[4]])),
    "gather_index_rank_mismatch": lambda T: T.gather(t(T, SRC), 1, ix(T, [0, 1])),
    "gather_index_bigger_than_input": lambda T: T.gather(t(T, SRC), 1, ix(T, [[0]] * 4)),
    "gather_sparse_grad_flag": lambda T: T.gather(t(T, SRC), 1, ix(T, IDX1), sparse_grad=False),
    # test_gather_backward_with_empty_index_tensor
    "gather_backward_empty_index": lambda T: grads(T, lambda x: T.gather(x, 1, T.zeros(2, 0, dtype=T.int64)) * 1,
                                                   [[1., 2.], [3., 4.]])[1],
    "gather_backward_duplicates": lambda T: grads(T, lambda x: T.gather(x, 1, ix(T, IDX1)), SRC),
    # test_gather_expanded_index / test_scatter_expanded_index
    "gather_expanded_index": lambda T: T.gather(t(T, SRC), 1, ix(T, [[2], [0], [3]]).expand(3, 5)),
    "scatter_add_expanded_index": lambda T: T.zeros(3, 4, dtype=T.float64).scatter_add(
        0, ix(T, [[2, 0, 1, 2]]).expand(2, 4), t(T, SRC[:2])),
    "scatter_expanded_index_unique": lambda T: T.zeros(3, 4, dtype=T.float64).scatter(
        1, ix(T, [[3], [1], [0]]).expand(3, 1), t(T, SRC[:, :1])),
    # test_scatter_ (src and scalar value; dims 0 and 1; index smaller than src)
    "scatter_src_dim0": lambda T: T.zeros(3, 4, dtype=T.float64).scatter(0, ix(T, [[0, 1, 2, 0]]), t(T, SRC)),
    "scatter_src_dim1": lambda T: T.zeros(3, 4, dtype=T.float64).scatter(1, ix(T, [[3, 0], [1, 2], [0, 3]]), t(T, SRC)),
    "scatter_value": lambda T: T.zeros(3, 4).scatter(1, ix(T, [[3, 0], [1, 2], [0, 3]]), 2.5),
    "scatter_value_int_target": lambda T: T.zeros(3, 4, dtype=T.int64).scatter(0, ix(T, [[2, 1, 0, 2]]), 7),
    "scatter_inplace_value": lambda T: T.ones(2, 3).scatter_(1, ix(T, [[2], [0]]), -1.),
    "scatter_negative_dim": lambda T: T.zeros(3, 4, dtype=T.float64).scatter(-1, ix(T, [[3, 0], [1, 2], [0, 3]]), t(T, SRC)),
    "scatter_bool": lambda T: T.zeros(2, 3, dtype=T.bool).scatter(1, ix(T, [[2], [0]]), True),
    # test_scatter__reductions: scatter_ with reduce='add' / 'multiply', src and scalar
    "scatter_reduce_add_src": lambda T: T.ones(3, 4, dtype=T.float64).scatter(
        0, ix(T, IDX), t(T, SRC[:2]), reduce="add"),
    "scatter_reduce_multiply_src": lambda T: T.full((3, 4), 2., dtype=T.float64).scatter(
        0, ix(T, IDX), t(T, SRC[:2]), reduce="multiply"),
    "scatter_reduce_multiply_value": lambda T: T.full((3, 4), 2.).scatter(0, ix(T, IDX), 3., reduce="multiply"),
    "scatter_reduce_add_int": lambda T: T.ones(3, 4, dtype=T.int64).scatter(0, ix(T, IDX), ix(T, IDX), reduce="add"),
    "scatter_reduce_bad_name": lambda T: T.ones(3, 4).scatter(0, ix(T, IDX), 3., reduce="max"),
    # test_scatter_add_ / test_scatter_add_mult_index_base / test_scatter_add_non_unique_index
    "scatter_add_dim1": lambda T: T.zeros(3, 4, dtype=T.float64).scatter_add(1, ix(T, IDX1), t(T, SRC)),
    "scatter_add_mult_index_base": lambda T: T.zeros(5, 2).scatter_add(0, T.zeros(10, 2, dtype=T.int64), T.ones(10, 2)),
    "scatter_add_non_unique_index": lambda T: T.ones(3, 2).scatter_add(0, ix(T, [[0, 0], [0, 0], [1, 1]]), T.full((3, 2), 2.)),
    "scatter_add_int": lambda T: T.zeros(4, dtype=T.int64).scatter_add(0, ix(T, [3, 3, 0, 1, 3]), ix(T, [1, 2, 3, 4, 5])),
    "scatter_add_inplace_chain": lambda T: T.zeros(4).scatter_add_(0, ix(T, [1, 1]), T.ones(2)).scatter_add_(0, ix(T, [0]), T.ones(1)),
    "scatter_add_dtype_mismatch": lambda T: T.zeros(4).scatter_add(0, ix(T, [1]), T.ones(1, dtype=T.float64)),
    # test_scatter_to_large_input
    "scatter_to_large_input": lambda T: T.zeros(4, 4).scatter_(0, ix(T, [[1], [2]]), T.ones(2, 2)),
    # test_scatter_zero_size_index
    "scatter_zero_size_index": lambda T: T.ones(2, 3).scatter_(1, T.zeros(2, 0, dtype=T.int64), T.ones(2, 3)),
    "scatter_add_zero_size_index": lambda T: T.ones(2, 3).scatter_add(0, T.zeros(0, 3, dtype=T.int64), T.ones(2, 3)),
    # test_scatter_reduce_{sum,prod,mean,amax,amin}, include_self True and False
    **{f"scatter_reduce_{r}_{'self' if s else 'noself'}": (lambda r, s: lambda T: _reduce(T, r, s))(r, s)
       for r in ("sum", "prod", "mean", "amax", "amin") for s in (True, False)},
    "scatter_reduce_mean_int_floor": lambda T: _reduce(T, "mean", True, T.int64),
    "scatter_reduce_prod_int_noself": lambda T: _reduce(T, "prod", False, T.int32),
    "scatter_reduce_amax_float32_dim1": lambda T: _reduce(T, "amax", False, T.float32, dim=1, index=[[3, 0, 0, 3], [1, 1, 1, 1]]),
    # test_scatter_reduce_non_unique_index (every value goes to one slot)
    "scatter_reduce_non_unique_sum": lambda T: T.tensor([1., 2., 3.]).scatter_reduce(0, ix(T, [0, 0, 0]), T.tensor([4., 5., 6.]), "sum"),
    "scatter_reduce_non_unique_prod_noself": lambda T: T.tensor([1., 2., 3.]).scatter_reduce(
        0, ix(T, [2, 2, 2]), T.tensor([4., 5., 6.]), "prod", include_self=False),
    "scatter_reduce_inplace_amin": lambda T: T.tensor([1., 2., 3.]).scatter_reduce_(0, ix(T, [1, 1, 0]), T.tensor([4., -5., 0.]), "amin"),
    # test_scatter_reduce grads (torch's formulas: sum, mean, amax with ties split evenly, prod)
    "scatter_reduce_sum_grad": lambda T: grads(T, lambda x, s: x.scatter_reduce(0, ix(T, IDX), s, "sum"), SRC, SRC[:2] + 1),
    "scatter_reduce_mean_grad": lambda T: grads(T, lambda x, s: x.scatter_reduce(0, ix(T, IDX), s, "mean"), SRC, SRC[:2] + 1),
    "scatter_reduce_mean_noself_grad": lambda T: grads(T, lambda x, s: x.scatter_reduce(
        0, ix(T, IDX), s, "mean", include_self=False), SRC, SRC[:2] + 1),
    "scatter_reduce_amax_ties_grad": lambda T: grads(T, lambda x, s: x.scatter_reduce(0, ix(T, [0, 0, 1]), s, "amax"),
                                                     [2., 0.], [2., 2., 1.]),
    "scatter_reduce_amin_noself_grad": lambda T: grads(T, lambda x, s: x.scatter_reduce(
        0, ix(T, [0, 0, 1]), s, "amin", include_self=False), [2., 0.], [1., 1., 3.]),
    "scatter_reduce_prod_grad": lambda T: grads(T, lambda x, s: x.scatter_reduce(0, ix(T, [0, 0, 1]), s, "prod"),
                                                [2., 3.], [4., 5., 6.]),
    "scatter_src_grad": lambda T: grads(T, lambda x, s: x.scatter(1, ix(T, [[3, 0], [1, 2], [0, 3]]), s), SRC, SRC[:, :2]),
    "scatter_add_grad": lambda T: grads(T, lambda x, s: x.scatter_add(0, ix(T, IDX), s), SRC, SRC[:2]),
    # test_scatter_reduce_multiply_unsupported_dtypes / bad reduction argument
    "scatter_reduce_bool_sum": lambda T: T.zeros(3, dtype=T.bool).scatter_reduce(0, ix(T, [0, 1]), T.ones(2, dtype=T.bool), "sum"),
    "scatter_reduce_index_out_of_range": lambda T: T.zeros(3).scatter_reduce(0, ix(T, [3]), T.ones(1), "sum"),
    "scatter_reduce_src_rank_mismatch": lambda T: T.zeros(3, 2).scatter_reduce(0, ix(T, [[0]]), T.ones(1), "sum"),
}


@pytest.mark.parametrize("fn", outcome_params(SCATTER))
def test_scatter_gather(fn):
    same_outcome(fn)


# ---- TestSortAndSelect -------------------------------------------------------------------------------
ROWS = np.array([[5., 1., 4., 1.], [2., 8., 2., 0.], [3., 3., 3., 3.]])
UNQ = np.array([[[1., 1.], [0., 1.], [2., 1.], [0., 1.]], [[1., 1.], [0., 1.], [2., 1.], [0., 1.]]])

SORT = {
    # test_sort: values/indices with dim, descending, argsort agreeing with sort, NaN placement
    "sort_rows_stable": lambda T: T.sort(t(T, ROWS), stable=True),
    "sort_rows_descending_stable": lambda T: T.sort(t(T, ROWS), 1, True, stable=True),
    "sort_dim0_stable": lambda T: T.sort(t(T, ROWS), dim=0, stable=True),
    "argsort_matches_sort_indices": lambda T: bool((T.argsort(t(T, [5., 3., 9., 1.])) == T.sort(t(T, [5., 3., 9., 1.]))[1]).all()),
    "sort_nan_rows": lambda T: T.sort(t(T, [[0.5, nan, 0.1], [nan, 0.3, -1.]])),
    "sort_nan_rows_descending": lambda T: T.sort(t(T, [[0.5, nan, 0.1], [nan, 0.3, -1.]]), descending=True),
    "sort_simple_int": lambda T: T.sort(T.tensor((50, 40, 30, 20, 10)))[0],
    "sort_simple_descending": lambda T: T.sort(T.tensor((10, 20, 30, 40, 50)), 0, True)[0],
    # test_sort_out / test_sort_restride: out= tensors resized to the result
    "sort_out_resized": lambda T: (lambda v, i: (T.sort(t(T, ROWS), out=(v, i)), v, i)[1:])(
        T.tensor((), dtype=T.float64), T.tensor((), dtype=T.int64)),
    "sort_out_restride": lambda T: (lambda v, i: (T.sort(t(T, [3., 1., 2.]), out=(v, i)), v.stride(), i.stride())[1:])(
        T.zeros(3, 2, dtype=T.float64)[:, 0], T.zeros(3, dtype=T.int64)),
    # test_stable_sort over the dtypes (binary strings keep the original order of equal keys)
    **{f"stable_sort_binary_{d}": (lambda d: lambda T: T.tensor([0, 1] * 20, dtype=getattr(T, d)).sort(stable=True)[1])(d)
       for d in ("float32", "float64", "int8", "int16", "int32", "uint8")},
    # test_stable_sort_against_numpy with inf/-inf/nan filled rows
    "stable_sort_nonfinite_rows": lambda T: T.sort(t(T, [[inf, 1., -inf, nan, 1.], [nan, nan, 0., -inf, inf]]), dim=1, stable=True),
    "stable_sort_int_extremes": lambda T: T.sort(T.tensor([127, -128, 0, 127, -128], dtype=T.int8), stable=True),
    # test_sort_discontiguous / test_sort_1d_output_discontiguous / test_sort_expanded_tensor
    "sort_permuted": lambda T: T.sort(t(T, SRC3).permute(2, 0, 1), dim=1),
    "sort_transposed_equals_contiguous": lambda T: [a.equal(b) for a, b in zip(
        T.sort(t(T, SRC3).transpose(0, 2), dim=1), T.sort(t(T, SRC3).transpose(0, 2).contiguous(), dim=1))],
    "sort_1d_output_discontiguous": lambda T: (lambda v, i: (T.sort(t(T, [3., 1., 2., 0.]), out=(v, i)), v, i)[1:])(
        T.zeros(8, dtype=T.float64)[::2], T.zeros(8, dtype=T.int64)[::2]),
    "sort_expanded_tensor": lambda T: T.sort(T.tensor(3.).expand(4), stable=True),
    "sort_expanded_row": lambda T: T.sort(t(T, [2., 1., 3.]).expand(2, 3), dim=1),
    # test_msort
    "msort_int": lambda T: T.msort(T.tensor([[3, -1], [0, 7], [-9, 2]])),
    "msort_1d": lambda T: T.msort(t(T, [3., -1., 2.])),
    "msort_0d": lambda T: T.msort(T.tensor(2.)),
    "msort_empty": lambda T: T.msort(T.zeros(0)),
    # test_topk (agrees with sort), test_topk_arguments, test_topk_integral, test_topk_4d
    "topk_via_sort_dim1": lambda T: T.topk(t(T, [[5., 1., 4.], [2., 8., 0.]]), 2, 1, True, True),
    "topk_smallest_dim0": lambda T: T.topk(t(T, [[5., 1., 4.], [2., 8., 0.], [7., 6., 3.]]), 2, 0, False, True),
    "topk_transposed": lambda T: T.topk(t(T, [[5., 1., 4.], [2., 8., 0.]]).t(), 1, 0),
    "topk_arguments_bool_as_dim": lambda T: T.topk(t(T, SRC3), 1, True),
    "topk_integral_int16": lambda T: T.topk(T.tensor([-300, 1000, 7, -2], dtype=T.int16), 2),
    "topk_integral_uint8_smallest": lambda T: T.topk(T.tensor([200, 3, 77, 5], dtype=T.uint8), 2, largest=False),
    "topk_k_equals_size": lambda T: T.topk(t(T, [3., 1., 2.]), 3),
    "topk_grad": lambda T: grads(T, lambda x: T.topk(x, 2, 1)[0], [[5., 1., 4.], [2., 8., 0.]]),
    # test_kthvalue
    "kthvalue_dim0": lambda T: T.kthvalue(t(T, [[5., 1., 4.], [2., 8., 0.], [7., 6., 3.]]), 2, 0),
    "kthvalue_negative_dim": lambda T: T.kthvalue(t(T, [[5., 1., 4.], [2., 8., 0.]]), 3, -1),
    "kthvalue_noncontiguous": lambda T: T.kthvalue(t(T, [[5., 1., 4.], [2., 8., 0.]]).t(), 1, 1),
    "kthvalue_int": lambda T: T.kthvalue(T.tensor([[9, -3, 4], [0, 2, 1]]), 2),
    "kthvalue_grad": lambda T: grads(T, lambda x: T.kthvalue(x, 2, 1)[0], [[5., 1., 4.], [2., 8., 0.]]),
    "kthvalue_scalar": lambda T: T.kthvalue(T.tensor(2.), 1, 0, keepdim=True),
    # test_isin: elements, test_elements as a scalar, assume_unique, invert, dtypes, empty
    "isin_basic": lambda T: T.isin(T.tensor([[1, 2], [3, 4]]), T.tensor([2, 3, 9])),
    "isin_invert": lambda T: T.isin(T.tensor([[1, 2], [3, 4]]), T.tensor([2, 3]), invert=True),
    "isin_assume_unique": lambda T: T.isin(T.tensor([1, 5, 3]), T.tensor([3, 1]), assume_unique=True),
    "isin_scalar_elements": lambda T: T.isin(2, T.tensor([1, 2])),
    "isin_scalar_test_elements": lambda T: T.isin(T.tensor([1, 2, 2]), 2),
    "isin_float_nan": lambda T: T.isin(t(T, [nan, 1., 2.]), t(T, [nan, 2.])),
    "isin_empty_elements": lambda T: T.isin(T.zeros(0, dtype=T.int64), T.tensor([1])),
    "isin_empty_test_elements": lambda T: T.isin(T.tensor([1, 2]), T.zeros(0, dtype=T.int64)),
    "isin_different_dtypes": lambda T: T.isin(T.tensor([1, 2, 3], dtype=T.int8), t(T, [2., 3.5])),
    "isin_bool": lambda T: T.isin(T.tensor([True, False]), T.tensor([False])),
    "isin_complex_refused": lambda T: T.isin(T.tensor([1j]), T.tensor([1j])),
    "isin_float16_int": lambda T: T.isin(T.tensor([1., 2.], dtype=T.float16), T.tensor([2])),
    # test_unique_dim: dims 0/1/2 with inverse and counts, empty and ill-formed empty inputs
    "unique_dim0": lambda T: T.unique(t(T, UNQ), dim=0, return_inverse=True, return_counts=True),
    "unique_dim1": lambda T: T.unique(t(T, UNQ), dim=1, return_inverse=True, return_counts=True),
    "unique_dim2": lambda T: T.unique(t(T, UNQ), dim=2, return_inverse=True, return_counts=True),
    "unique_dim_int": lambda T: T.unique(T.tensor([[2, 1], [0, 3], [2, 1]]), dim=0, return_counts=True),
    "unique_dim_bool": lambda T: T.unique(T.tensor([[True, False], [True, False], [False, False]]), dim=0),
    "unique_dim_empty": lambda T: T.unique(T.zeros(5, 0), dim=1, return_inverse=True, return_counts=True),
    "unique_dim_ill_formed_empty": lambda T: T.unique(T.zeros(5, 0, 0), dim=1),
    "unique_dim_ill_formed_empty_nonzero": lambda T: T.unique(T.zeros(5, 0, 5), dim=0),
    "unique_dim_negative": lambda T: T.unique(t(T, UNQ), dim=-1),
    "unique_dim_out_of_range": lambda T: T.unique(t(T, UNQ), dim=3),
    "unique_dim_unsorted_flag": lambda T: T.unique(t(T, UNQ), sorted=False, dim=1),
    # test_unique_consecutive with dim, inverse and counts
    "unique_consecutive_dim0": lambda T: T.unique_consecutive(T.tensor([[1, 2], [1, 2], [3, 4], [1, 2]]), dim=0,
                                                              return_inverse=True, return_counts=True),
    "unique_consecutive_dim1": lambda T: T.unique_consecutive(T.tensor([[1, 1, 2], [3, 3, 4]]), dim=1, return_counts=True),
    "unique_consecutive_flat_2d": lambda T: T.unique_consecutive(T.tensor([[1, 1], [1, 2]]), return_inverse=True),
    "unique_consecutive_float_nan": lambda T: T.unique_consecutive(t(T, [1., 1., nan, nan, 2.]), return_counts=True),
    "unique_consecutive_empty": lambda T: T.unique_consecutive(T.zeros(0), return_inverse=True, return_counts=True),
    # test_unique (flat): sorted, inverse shape follows the input, counts, bool and int8
    "unique_inverse_2d": lambda T: T.unique(T.tensor([[3, 1], [1, 2]]), return_inverse=True, return_counts=True),
    "unique_bool_counts": lambda T: T.unique(T.tensor([True, False, True, True]), return_counts=True),
    "unique_int8_negative": lambda T: T.unique(T.tensor([-128, 127, -128, 0], dtype=T.int8)),
    "unique_nan_each": lambda T: T.unique(t(T, [nan, 1., nan])).shape,
}


@pytest.mark.parametrize("fn", outcome_params(SORT))
def test_sort_and_select(fn):
    same_outcome(fn)
