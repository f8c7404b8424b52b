"""Behaviour checks ported from PyTorch's test/test_indexing.py (TestIndexing,
NumpyTests) and the index/gather/scatter parts of test/test_scatter_gather.py and
test/test_torch.py, restated in our own code as small programs run once with torch (the oracle)
and once with tracegrad: results (dtype, shape, values) must agree, or both must raise the same
exception class (``parity.same_outcome``); gradients through the indexing ops are compared with
``parity.check_parity``.

Not ported: device/CUDA, deterministic-algorithm switches, int64 overflow of huge tensors,
``torch.jit``, and what tests/tensor/test_indexing_dynamic.py, test_view_ops_ported.py and
test_eager_hunt.py already cover. Left out as accidents of torch's CPU kernels: the exception
class of an out-of-range ``index_select`` along dim 1 (RuntimeError there, IndexError on the
other dims; tracegrad raises IndexError always) and which of equal indices wins in a
non-accumulating ``index_put_`` (unspecified in torch)."""
import numpy as np
import pytest

from parity import C, F, check_parity, outcome_params, params, same_outcome

torch = pytest.importorskip("torch")


def _x3(T):
    return T.arange(24).reshape(2, 3, 4)


def _mask23(T):
    return T.tensor([[True, False, True], [False, True, True]])


def put(x, key, value):
    """``x[key] = value``, returning x."""
    x[key] = value
    return x


def call(x, name, *args, **kwargs):
    """``x.name_(*args)`` for an in-place method, returning x."""
    getattr(x, name)(*args, **kwargs)
    return x


# ---- getitem (test_bool_indices, test_byte_mask, test_none_ellipsis, test_advancedindex) -------
GET = {
    "reverse_slice": lambda T: T.arange(6)[::-1],
    "zero_step": lambda T: T.arange(6)[::0],
    "byte_mask_is_bool_mask": lambda T: T.arange(6)[T.tensor([1, 0, 1, 0, 1, 0], dtype=T.uint8)],
    "byte_mask_wrong_length": lambda T: T.arange(6)[T.tensor([1], dtype=T.uint8)],
    "byte_mask_2d": lambda T: T.arange(6).reshape(2, 3)[T.tensor([[1, 0, 1], [0, 1, 1]], dtype=T.uint8)],
    "bool_list_mask": lambda T: T.zeros(3)[[True, False, True]],
    "bool_mask_wrong_length": lambda T: T.arange(6)[T.tensor([True, False])],
    "mask_slice_none": lambda T: _x3(T)[T.tensor([True, False]), 1:, None],
    "ellipsis_mask": lambda T: _x3(T)[..., T.tensor([True, False, True, False])],
    "none_ellipsis_index": lambda T: _x3(T)[None, ..., T.tensor([0, 2])],
    "split_advanced_indices": lambda T: _x3(T)[T.tensor([0, 1]), :, T.tensor([1, 2])],
    "adjacent_advanced_after_none": lambda T: _x3(T)[:, T.tensor([0, 1]), None, T.tensor([1, 2])],
    "2d_mask": lambda T: _x3(T)[_mask23(T)],
    "2d_mask_then_slice": lambda T: _x3(T)[_mask23(T), 1:3],
    "int_mask_step": lambda T: _x3(T)[1, T.tensor([True, False, True]), ::2],
    "true_scalar": lambda T: _x3(T)[T.tensor(True)],
    "false_scalar": lambda T: _x3(T)[T.tensor(False)],
    "python_bools_and_none": lambda T: _x3(T)[None, True, ..., None],
    "index_ellipsis_index": lambda T: _x3(T)[T.tensor([0, 1]), ..., T.tensor([1])],
    "broadcast_index_arrays": lambda T: _x3(T)[..., None, T.tensor([[0], [1]]), T.tensor([1, 2])],
    "mask_none_index": lambda T: T.arange(12.).reshape(3, 4)[None, T.tensor([True, False, True]), T.tensor([0, 3])],
    "index_none_index": lambda T: T.arange(12.).reshape(3, 4)[T.tensor([0, 2]), None, T.tensor([[0], [3]])],
    "int_between_lists": lambda T: _x3(T)[[0, 1], 1, [1, 3]],
    "int_then_list": lambda T: _x3(T)[1, :, [1, 3]],
    "nones_around_int": lambda T: _x3(T)[None, [1], None, 0, [2]],
    "list_of_lists": lambda T: _x3(T)[[[0, 1]]],
    "sequence_with_slice": lambda T: _x3(T)[[0, slice(None)]],
    "index_out_of_range": lambda T: T.arange(6)[T.tensor([6])],
    "negative_index_out_of_range": lambda T: T.arange(6)[T.tensor([-7])],
    "negative_index_in_range": lambda T: T.arange(6)[T.tensor([-6])],
    "int_out_of_range": lambda T: T.arange(6)[-7],
    "float_index": lambda T: T.arange(6)[T.tensor([1.])],
    "float_0d_index": lambda T: T.zeros(3)[T.tensor(1.)],
    "int32_index": lambda T: T.arange(6)[T.tensor([1], dtype=T.int32)],
    "python_float_index": lambda T: T.arange(6)[1.5],
    "string_index": lambda T: T.arange(6)["a"],
    "too_many_indices": lambda T: T.arange(6)[0, 0],
    "empty_list_index": lambda T: T.arange(6)[[]],
    "empty_index_with_int": lambda T: T.arange(6).reshape(2, 3)[[], 0],
    "slice_past_end": lambda T: T.arange(6)[10:],
    "0d_none": lambda T: T.tensor(5)[None],
    "0d_int": lambda T: T.tensor(5)[0],
    "0d_true": lambda T: T.tensor(5)[True],
    "0d_empty_tuple": lambda T: T.tensor(5)[()],
    "empty_bool_mask": lambda T: T.arange(0)[T.tensor([], dtype=T.bool)],
    "2d_index_tensor": lambda T: T.arange(10)[T.tensor([[0, 1], [2, 3]])],
    "broadcast_column_row_indices": lambda T: _x3(T)[T.tensor([[0], [1]]), T.tensor([[0, 2]])],
    "ellipsis_then_broadcast_indices": lambda T: _x3(T)[..., T.tensor([[0], [1]]), T.tensor([[0, 2]])],
    "float_int_index": lambda T: T.arange(6).reshape(2, 3)[1.0],
    "float_slice_bound": lambda T: T.arange(6).reshape(2, 3)[1.0:2],
    "empty_list_second_dim": lambda T: T.arange(6).reshape(2, 3)[:, []],
    "two_empty_lists": lambda T: T.arange(6).reshape(2, 3)[[], []],
    "empty_mask_of_empty": lambda T: T.zeros(0, 3)[T.tensor([], dtype=T.bool)],
    "empty_index_zero_dim": lambda T: T.zeros(2, 0, 3)[:, T.tensor([], dtype=T.int64)],
    "indices_not_broadcasting": lambda T: T.zeros(2, 0, 3)[T.tensor([0, 1]), :, T.tensor([], dtype=T.int64)],
    "indices_not_broadcasting_2": lambda T: T.arange(6).reshape(2, 3)[T.tensor([0, 1]), T.tensor([0, 1, 2])],
    "mask_of_zero_width": lambda T: T.zeros(3, 0)[T.tensor([True, False, True])],
    "mask_then_none": lambda T: T.arange(6).reshape(2, 3)[_mask23(T), None],
    "ellipsis_true_scalar": lambda T: T.arange(6).reshape(2, 3)[..., T.tensor(True)],
    "true_ellipsis_false": lambda T: T.arange(6).reshape(2, 3)[T.tensor(True), ..., T.tensor(False)],
    "two_python_trues": lambda T: T.arange(6).reshape(2, 3)[True, True],
    "bool_list_pair": lambda T: T.arange(6).reshape(2, 3)[[True, False], [True, False, True]],
    "bool_list_too_long": lambda T: T.arange(3)[[True, False, True, True]],
    "numpy_index_array": lambda T: T.arange(6)[np.array([1, 2])],
    "numpy_scalar_index": lambda T: T.arange(6)[np.int64(2)],
    "tensor_slice_bounds": lambda T: T.arange(6)[T.tensor(1):T.tensor(4):T.tensor(2)],
}


@pytest.mark.parametrize("fn", outcome_params(GET))
def test_getitem(fn):
    same_outcome(fn)


# ---- setitem: broadcasting and casting (test_setitem_*, test_index_put_*_dtype) -------------------
SET = {
    "column_from_vector": lambda T: put(T.zeros(2, 3), (slice(None), 1), T.tensor([5., 6.])),
    "int_values_into_float_row": lambda T: put(T.zeros(2, 3), 0, T.tensor([1, 2, 3])),
    "float_into_int_truncates": lambda T: put(T.zeros(2, 3, dtype=T.int64), 0, 2.7),
    "float_tensor_into_int_row": lambda T: put(T.zeros(2, 3, dtype=T.int64), 0, T.tensor([1.5, 2.5, -3.7])),
    "int_into_bool": lambda T: put(T.zeros(2, 3, dtype=T.bool), 0, 2),
    "float_tensor_into_bool": lambda T: put(T.zeros(2, 3, dtype=T.bool), 0, T.tensor([0., 2., 0.])),
    "negative_into_uint8_wraps": lambda T: put(T.zeros(2, 3, dtype=T.uint8), 0, -1),
    "nan_fill": lambda T: put(T.zeros(2, 3), 0, float("nan")),
    "complex_number_into_float": lambda T: put(T.zeros(2, 3), 0, 1j),
    "complex_number_into_complex": lambda T: put(T.zeros(2, 3, dtype=T.complex64), 0, 1j),
    "leading_ones_dropped": lambda T: put(T.zeros(2, 3), 0, T.ones(1, 1, 3)),
    "leading_ones_dropped_for_mask": lambda T: put(T.zeros(2, 3), T.tensor([True, False]), T.tensor([[[1., 2., 3.]]])),
    "leading_ones_dropped_full": lambda T: put(T.zeros(2, 3), Ellipsis, T.tensor([[[1., 2., 3.]]])),
    "leading_ones_dropped_advanced": lambda T: put(T.zeros(2, 3), (0, [1, 2]), T.tensor([[[1.], [2.]]])),
    "value_too_big": lambda T: put(T.zeros(2, 3), 0, T.ones(2, 3)),
    "mask_row_broadcast": lambda T: put(T.zeros(2, 3), T.tensor([True, False]), T.tensor([[1., 2., 3.]])),
    "mask_wrong_value_length": lambda T: put(T.zeros(2, 3), T.tensor([True, False]), T.tensor([1., 2.])),
    "2d_mask_values": lambda T: put(T.zeros(2, 3), _mask23(T), T.tensor([1., 2., 3., 4.])),
    "2d_mask_wrong_count": lambda T: put(T.zeros(2, 3), _mask23(T), T.tensor([1., 2.])),
    "2d_mask_scalar": lambda T: put(T.zeros(2, 3), _mask23(T), 7),
    "byte_mask_setitem_number": lambda T: put(T.zeros(4), T.tensor([1, 0, 0, 1], dtype=T.uint8), 2.),
    "byte_mask_setitem_tensor": lambda T: put(T.zeros(4), T.tensor([1, 0, 0, 1], dtype=T.uint8), T.tensor([1., 2.])),
    "duplicate_index_pairs": lambda T: put(T.zeros(2, 3), (T.tensor([0, 0]), T.tensor([1, 1])), T.tensor([3., 3.])),
    "index_then_slice_broadcast": lambda T: put(T.zeros(2, 3), (T.tensor([0, 1]), slice(None)), T.tensor([[1.], [2.]])),
    "index_then_slice_bad_shape": lambda T: put(T.zeros(2, 3), (T.tensor([0, 1]), slice(None)), T.tensor([1., 2.])),
    "none_then_int": lambda T: put(T.zeros(2, 3), (None, 1), T.tensor([4., 5., 6.])),
    "index_out_of_range": lambda T: put(T.zeros(2, 3), T.tensor([3]), 1.),
    "step_slice": lambda T: put(T.zeros(4), slice(None, None, 2), T.tensor([1., 2.])),
    "negative_step_slice": lambda T: put(T.zeros(4), slice(None, None, -1), 1.),
    "true_scalar_key": lambda T: put(T.zeros(2, 3), T.tensor(True), 1.),
    "false_scalar_key": lambda T: put(T.zeros(2, 3), T.tensor(False), 1.),
    "mask_slice_none": lambda T: put(T.zeros(2, 3, 4), (T.tensor([True, False]), slice(1, None), None),
                                     T.tensor([1., 2., 3., 4.])),
    "ellipsis_mask_column": lambda T: put(T.zeros(2, 3, 4), (Ellipsis, T.tensor([True, False, True, False])),
                                          T.tensor([[1.], [2.], [3.]])),
    "split_indices_broadcast": lambda T: put(T.zeros(2, 3, 4), (T.tensor([0, 1]), slice(None), T.tensor([1, 2])),
                                             T.tensor([[1.], [2.]])),
    "2d_mask_slice": lambda T: put(T.zeros(2, 3, 4), (_mask23(T), slice(1, 3)), T.tensor([1., 2.])),
    "int_mask_step": lambda T: put(T.zeros(2, 3, 4), (1, T.tensor([True, False, True]), slice(None, None, 2)),
                                   T.tensor([[1., 2.], [3., 4.]])),
    "int_dtype_advanced_float_number": lambda T: put(T.zeros(2, 3, dtype=T.int32), (slice(None), T.tensor([0, 2])), 2.9),
    "int_dtype_advanced_float_tensor": lambda T: put(T.zeros(2, 3, dtype=T.int32), (slice(None), T.tensor([0, 2])),
                                                     T.tensor([2.9, 1.1])),
    "int_dtype_mask_float_0d": lambda T: put(T.zeros(2, 3, dtype=T.int32), T.tensor([True, False]), T.tensor(2.9)),
    "float64_advanced_from_int": lambda T: put(T.zeros(2, 3, dtype=T.float64), (slice(None), [0]), T.tensor([[1], [2]])),
    "mask_values_too_many": lambda T: put(T.zeros(3), T.tensor([True, False, True]), T.tensor([1., 2., 3.])),
    "mask_values_leading_one": lambda T: put(T.zeros(3), T.tensor([True, False, True]), T.tensor([[1., 2.]])),
    "index_none_column": lambda T: put(T.zeros(3, 3), (T.tensor([0, 2]), None), T.tensor([[1.], [2.]])),
    "element_from_1_element_tensor": lambda T: put(T.zeros(3, 3), (1, 1), T.tensor([5.])),
    "element_from_2_element_tensor": lambda T: put(T.zeros(3, 3), (1, 1), T.tensor([5., 6.])),
    "advanced_int_from_float_0d": lambda T: put(T.zeros(3, dtype=T.int64), T.tensor([0, 1]), T.tensor(2.5)),
    "slice_int_from_float_0d": lambda T: put(T.zeros(3, dtype=T.int64), slice(0, 2), T.tensor(2.5)),
    "advanced_float_from_int_tensor": lambda T: put(T.zeros(3), T.tensor([0, 1]), T.tensor([2, 3])),
    "advanced_float_from_double": lambda T: put(T.zeros(3), T.tensor([0, 1]), T.tensor([2., 3.], dtype=T.float64)),
    "broadcast_index_pair": lambda T: put(T.zeros(2, 2), (T.tensor([0, 1]), T.tensor([[0], [1]])), 3.),
    "mask_int32_0d_value": lambda T: put(T.zeros(2, 3), T.tensor([True, False]), T.tensor(3, dtype=T.int32)),
    "int_mask_float_0d_value": lambda T: put(T.zeros(2, 3, dtype=T.int32), T.tensor([True, False]), T.tensor(3.7)),
    "bool_list_key": lambda T: put(T.zeros(2, 3), [True, False], 3.),
}


@pytest.mark.parametrize("fn", outcome_params(SET))
def test_setitem(fn):
    same_outcome(fn)


# ---- index_put_ / index_add_ / index_copy_ / index_fill_ / put_ (test_index_put_accumulate*) -----
PUT = {
    "accumulate_duplicates": lambda T: call(T.zeros(5), "index_put_", (T.tensor([0, 0, 1]),), T.tensor([1., 2., 3.]),
                                            accumulate=True),
    "accumulate_scalar_value": lambda T: call(T.zeros(5), "index_put_", (T.tensor([0, 0, 1]),), T.tensor(1.),
                                              accumulate=True),
    "accumulate_pairs": lambda T: call(T.zeros(2, 3), "index_put_", (T.tensor([0, 0]), T.tensor([1, 1])),
                                       T.tensor([1., 2.]), accumulate=True),
    "accumulate_rows": lambda T: call(T.zeros(2, 3), "index_put_", (T.tensor([0, 0]),), T.tensor([1., 2., 3.]),
                                      accumulate=True),
    "accumulate_mask": lambda T: call(T.zeros(2, 3), "index_put_", (T.tensor([[True, False, True], [True, True, False]]),),
                                      T.tensor([1., 2., 3., 4.]), accumulate=True),
    "accumulate_int": lambda T: call(T.zeros(5, dtype=T.int64), "index_put_", (T.tensor([0, 0, 4]),),
                                     T.tensor([1, 2, 3]), accumulate=True),
    "accumulate_out_of_range": lambda T: call(T.zeros(2, 3), "index_put_", (T.tensor([5]),), T.tensor([1.]),
                                              accumulate=True),
    "dtype_mismatch": lambda T: call(T.zeros(5, dtype=T.int64), "index_put_", (T.tensor([0]),), T.tensor([1.]),
                                     accumulate=True),
    "float_indices": lambda T: call(T.zeros(5), "index_put_", (T.tensor([0, 0, 4.]),), T.tensor([1., 2, 3])),
    "none_in_indices": lambda T: call(T.zeros(2, 3), "index_put_", (None, T.tensor([0, 2])), T.tensor([1., 2])),
    "too_many_indices": lambda T: call(T.zeros(2, 3), "index_put_", (T.tensor([0]), T.tensor([0]), T.tensor([0])),
                                       T.tensor([1.])),
    "out_of_place_accumulate": lambda T: T.index_put(T.zeros(5), (T.tensor([0, 0, 4]),), T.tensor([1., 2, 3]), True),
    "index_add_duplicates": lambda T: call(T.zeros(2, 3), "index_add_", 1, T.tensor([0, 0]), T.ones(2, 2)),
    "index_add_alpha": lambda T: call(T.zeros(2, 3), "index_add_", 0, T.tensor([1, 1]), T.ones(2, 3), alpha=2),
    "index_add_out_of_range_2d": lambda T: call(T.zeros(2, 3), "index_add_", 1, T.tensor([0, 3]), T.ones(2, 2)),
    "index_add_out_of_range_1d": lambda T: call(T.zeros(3), "index_add_", 0, T.tensor([3]), T.ones(1)),
    "index_add_negative_1d": lambda T: call(T.zeros(3), "index_add_", 0, T.tensor([-1]), T.ones(1)),
    "index_add_out_of_place_2d": lambda T: T.index_add(T.zeros(2, 3), 0, T.tensor([2]), T.ones(1, 3)),
    "index_copy_out_of_range": lambda T: call(T.zeros(2, 3), "index_copy_", 1, T.tensor([0, 5]), T.ones(2, 2)),
    "index_copy_negative": lambda T: call(T.zeros(2, 3), "index_copy_", 1, T.tensor([-1]), T.ones(2, 1)),
    "index_fill_out_of_range": lambda T: call(T.zeros(2, 3), "index_fill_", 1, T.tensor([3]), 5.),
    "index_fill_negative": lambda T: call(T.zeros(2, 3), "index_fill_", 1, T.tensor([-1, -3]), 5.),
    "index_fill_negative_out_of_range": lambda T: call(T.zeros(2, 3), "index_fill_", 1, T.tensor([-4]), 5.),
    "put_accumulate": lambda T: call(T.zeros(2, 3), "put_", T.tensor([0, 0]), T.tensor([1., 2.]), accumulate=True),
    "put_negative": lambda T: call(T.zeros(2, 3), "put_", T.tensor([-1, -6]), T.tensor([1., 2.])),
    "put_out_of_range": lambda T: call(T.zeros(2, 3), "put_", T.tensor([0, 6]), T.tensor([1., 2.])),
    "put_count_mismatch": lambda T: call(T.zeros(2, 3), "put_", T.tensor([0, 1]), T.tensor([1.])),
    "put_out_of_place_count_mismatch": lambda T: T.zeros(2, 3).put(T.tensor([0, 1]), T.tensor([1.])),
    "masked_fill_byte_mask": lambda T: call(T.zeros(2, 3), "masked_fill_", T.tensor([1, 0, 1]), 2.),
    "byte_mask_index_put": lambda T: call(T.zeros(5), "index_put_", (T.tensor([1, 0, 1, 0, 0], dtype=T.uint8),),
                                          T.tensor([1., 2.])),
    "mask_accumulate": lambda T: call(T.zeros(5), "index_put_", (T.tensor([True, False, True, False, False]),),
                                      T.tensor([1., 2.]), accumulate=True),
    "mask_wrong_shape": lambda T: call(T.zeros(5), "index_put_", (T.tensor([True, False]),), T.tensor([1.])),
    "int32_values_into_int64": lambda T: call(T.zeros(5, dtype=T.int64), "index_put_", (T.tensor([0]),),
                                              T.tensor([1], dtype=T.int32)),
    "number_values": lambda T: call(T.zeros(5), "index_put_", (T.tensor([0]),), 1.),
    "accumulate_broadcast_indices": lambda T: call(T.zeros(2, 3), "index_put_", (T.tensor([[0], [1]]), T.tensor([0, 1])),
                                                   T.tensor([[1., 2.], [3., 4.]]), accumulate=True),
    "unravel_index_out_of_range": lambda T: T.unravel_index(T.tensor([7]), (2, 3)),
    "unravel_index_float": lambda T: T.unravel_index(T.tensor([1.]), (2, 3)),
    "unravel_index_negative_shape": lambda T: T.unravel_index(T.tensor([1]), (2, -3)),
    "masked_scatter_too_few": lambda T: call(T.zeros(2, 3), "masked_scatter_", T.tensor([True, False, True]), T.arange(3.)),
}


@pytest.mark.parametrize("fn", outcome_params(PUT))
def test_index_put_family(fn):
    same_outcome(fn)


# ---- gather / take / take_along_dim / scatter / index_select (test_scatter_gather, test_take*) ----
def _m(T):
    return T.arange(6.).reshape(2, 3)


GATHER = {
    "gather_index_smaller_than_input": lambda T: T.gather(_m(T), 1, T.tensor([[0, 1, 2, 0]])),
    "gather_int32_index": lambda T: T.gather(_m(T), 1, T.tensor([[0]], dtype=T.int32)),
    "gather_index_larger_than_input": lambda T: T.gather(_m(T), 1, T.tensor([[0, 1], [1, 2], [2, 0]])),
    "gather_rows": lambda T: T.gather(_m(T), 0, T.tensor([[1], [0]])),
    "gather_0d": lambda T: T.gather(T.tensor(5.), 0, T.tensor(0)),
    "gather_0d_input_1d_index": lambda T: T.gather(T.tensor(5.), 0, T.tensor([0, 0])),
    "gather_1d_input_0d_index": lambda T: T.gather(T.arange(3.), 0, T.tensor(2)),
    "gather_0d_out_of_range": lambda T: T.gather(T.tensor(5.), 0, T.tensor([1])),
    "gather_out_of_range": lambda T: T.gather(_m(T), 1, T.tensor([[0], [3]])),
    "gather_negative": lambda T: T.gather(_m(T), 1, T.tensor([[-1], [0]])),
    "gather_rank_mismatch": lambda T: T.gather(_m(T), 1, T.tensor([0, 1])),
    "gather_float_index": lambda T: T.gather(_m(T), 1, T.tensor([[0.]])),
    "gather_dim_out_of_range": lambda T: T.gather(_m(T), 2, T.tensor([[0]])),
    "gather_empty_index": lambda T: T.gather(_m(T), 1, T.zeros(2, 0, dtype=T.int64)),
    "take_out_of_range": lambda T: T.take(T.arange(6.), T.tensor([6])),
    "take_negative": lambda T: T.take(T.arange(6.), T.tensor([-6])),
    "take_negative_out_of_range": lambda T: T.take(T.arange(6.), T.tensor([-7])),
    "take_2d": lambda T: T.take(_m(T), T.tensor([[0, 5], [-1, 2]])),
    "take_float_index": lambda T: T.take(T.arange(6.), T.tensor([1.])),
    "take_along_dim": lambda T: T.take_along_dim(_m(T), T.tensor([[0], [2]]), 1),
    "take_along_dim_broadcasts_index": lambda T: T.take_along_dim(_m(T), T.tensor([[1, 0, 1]]), 0),
    "take_along_dim_broadcasts_input": lambda T: T.take_along_dim(T.arange(6.).reshape(2, 1, 3),
                                                                  T.tensor([[[0], [1], [0]]]), 2),
    "take_along_dim_negative_wraps": lambda T: T.take_along_dim(_m(T), T.tensor([[-1]]), 1),
    "take_along_dim_past_end_wraps": lambda T: T.take_along_dim(_m(T), T.tensor([[3], [100]]), 1),
    "take_along_dim_far_negative_wraps": lambda T: T.take_along_dim(_m(T), T.tensor([[-4]]), 1),
    "take_along_dim_flat": lambda T: T.take_along_dim(_m(T), T.tensor([[0, 5]])),
    "take_along_dim_flat_out_of_range": lambda T: T.take_along_dim(_m(T), T.tensor([[0, 6]])),
    "take_along_dim_bad_broadcast": lambda T: T.take_along_dim(_m(T), T.tensor([[0], [1], [0]]), 1),
    "take_along_dim_rank_mismatch": lambda T: T.take_along_dim(_m(T), T.tensor([0, 1]), 1),
    "take_along_dim_int32": lambda T: T.take_along_dim(_m(T), T.tensor([[0]], dtype=T.int32), 1),
    "take_along_dim_float": lambda T: T.take_along_dim(_m(T), T.tensor([[0.]]), 1),
    "take_along_dim_dim_out_of_range": lambda T: T.take_along_dim(_m(T), T.tensor([[0]]), 2),
    "scatter_out_of_range": lambda T: T.scatter(T.zeros(2, 3), 1, T.tensor([[0], [3]]), 1.),
    "scatter_negative": lambda T: T.scatter(T.zeros(2, 3), 1, T.tensor([[0], [-1]]), 1.),
    "scatter_reduce_add_duplicates": lambda T: T.scatter(T.zeros(2, 3), 1, T.tensor([[0, 0]]), T.tensor([[1., 2.]]),
                                                         reduce="add"),
    "scatter_reduce_multiply": lambda T: T.scatter(T.ones(2, 3), 1, T.tensor([[0, 0]]), T.tensor([[3., 2.]]),
                                                   reduce="multiply"),
    "scatter_value_reduce_add": lambda T: T.scatter(T.zeros(2, 3), 1, T.tensor([[0, 0]]), 2., reduce="add"),
    "scatter_reduce_sum_rejected": lambda T: T.scatter(T.zeros(2, 3), 1, T.tensor([[0, 0]]), T.tensor([[1., 2.]]),
                                                       reduce="sum"),
    "scatter_reduce_max_rejected": lambda T: T.scatter(T.zeros(2, 3), 1, T.tensor([[0]]), T.tensor([[1.]]),
                                                       reduce="max"),
    "scatter_inplace_reduce_mean_rejected": lambda T: T.zeros(2, 3).scatter_(1, T.tensor([[0]]), T.tensor([[1.]]),
                                                                             reduce="mean"),
    "scatter_inplace_add_duplicates": lambda T: T.zeros(3).scatter_(0, T.tensor([0, 0, 1]), T.tensor([1., 2., 3.]),
                                                                    reduce="add"),
    "scatter_add_out_of_range": lambda T: T.scatter_add(T.zeros(2, 3), 1, T.tensor([[0, 3]]), T.tensor([[1., 2.]])),
    "scatter_dtype_mismatch": lambda T: T.scatter(T.zeros(2, 3), 1, T.tensor([[0, 0]]), T.tensor([[1, 2]])),
    "scatter_index_bigger_than_src": lambda T: T.scatter(T.zeros(2, 3), 1, T.tensor([[0, 0, 0, 0]]), T.tensor([[1., 2.]])),
    "scatter_src_bigger_than_index": lambda T: T.scatter(T.zeros(2, 3), 1, T.tensor([[1, 0]]),
                                                         T.arange(8.).reshape(2, 4)),
    "scatter_reduce_mean_exclude_self": lambda T: T.scatter_reduce(T.zeros(2, 3), 1, T.tensor([[0, 0]]),
                                                                   T.tensor([[1., 2.]]), "mean", include_self=False),
    "scatter_reduce_amax_nan": lambda T: T.scatter_reduce(T.zeros(2, 3), 1, T.tensor([[0, 0]]),
                                                          T.tensor([[float("nan"), 2.]]), "amax"),
    "scatter_reduce_int_mean": lambda T: T.scatter_reduce(T.zeros(2, 3, dtype=T.int64), 1, T.tensor([[0, 0]]),
                                                          T.tensor([[1, 4]]), "mean"),
    "scatter_reduce_unknown": lambda T: T.scatter_reduce(T.zeros(2, 3), 1, T.tensor([[0, 0]]), T.tensor([[1., 2.]]),
                                                         "foo"),
    "index_select_0d_index": lambda T: _m(T).index_select(1, T.tensor(1)),
    "index_select_0d_input": lambda T: T.tensor(5.).index_select(0, T.tensor(0)),
    "index_select_2d_index": lambda T: _m(T).index_select(1, T.tensor([[0]])),
    "index_select_float_index": lambda T: _m(T).index_select(1, T.tensor([1.])),
    "index_select_out_of_range_dim0": lambda T: _m(T).index_select(0, T.tensor([2])),
    "index_select_out_of_range_1d": lambda T: T.arange(6.).index_select(0, T.tensor([7])),
    "index_select_repeated": lambda T: _m(T).index_select(1, T.tensor([2, 0, 2])),
}


@pytest.mark.parametrize("fn", outcome_params(GATHER))
def test_gather_scatter(fn):
    same_outcome(fn)


# ---- gradients through indexing (test_index_put_accumulate_*, test_gather_backward, ...) --------
def _setitem_grad(T, x, v):
    y = x * 1
    y[T.tensor([0, 0, 2])] = v
    return y


def _mask_setitem_grad(T, x, v):
    y = x.clone()
    y[T.tensor([True, False, True])] = v
    return y


GRADS = [
    C("index_put_accumulate_duplicates", lambda T, x, v: x.index_put((T.tensor([0, 0, 2]),), v, accumulate=True),
      [F(4, 2), F(3, 2)]),
    C("index_put_overwrite_distinct", lambda T, x, v: x.index_put((T.tensor([3, 0]),), v), [F(4, 2), F(2, 2)]),
    C("setitem_advanced_broadcast", _setitem_grad, [F(4, 2), F(2)]),
    C("setitem_mask_broadcast", _mask_setitem_grad, [F(3, 2), F(1, 2)]),
    C("getitem_mask_slice_none", lambda T, x: x[T.tensor([True, False, True]), 1:, None], [F(3, 3, 2)]),
    C("getitem_split_indices", lambda T, x: x[T.tensor([0, 2, 0]), :, T.tensor([1, 0, 1])], [F(3, 2, 2)]),
    C("gather_index_smaller", lambda T, x: x.gather(1, T.tensor([[2, 2, 0, 1]])), [F(2, 3)]),
    C("take_along_dim_broadcast_wrap", lambda T, x: T.take_along_dim(x, T.tensor([[-1], [4]]), 1), [F(2, 3)]),
    C("scatter_add_duplicates", lambda T, x, s: x.scatter_add(0, T.tensor([[1, 1, 0]]), s), [F(2, 3), F(1, 3)]),
    C("index_add_duplicates", lambda T, x, s: x.index_add(1, T.tensor([2, 2]), s), [F(2, 3), F(2, 2)]),
    # tracegrad's put is a composite (index_put on the flattened tensor): its grad_fn is the
    # final view's, not torch's PutBackward0; the gradients agree
    C("put_accumulate", lambda T, x, s: x.put(T.tensor([0, 5, 0]), s, accumulate=True), [F(2, 3), F(3)],
      no_grad_fn=True),
    C("index_select_repeated", lambda T, x: x.index_select(0, T.tensor([1, 1, 0])), [F(2, 3)]),
    C("masked_select_broadcast", lambda T, x: x.masked_select(T.tensor([True, False, True])), [F(2, 3)]),
]


@params(GRADS)
def test_indexing_gradients(case):
    check_parity(case, torch)


def test_byte_mask_warns():
    """torch deprecates uint8 masks with a UserWarning (test_byte_mask_deprecated)."""
    import tracegrad
    x = tracegrad.arange(4)
    with pytest.warns(UserWarning, match="uint8"):
        out = x[tracegrad.tensor([1, 0, 0, 1], dtype=tracegrad.uint8)]
    np.testing.assert_array_equal(out.numpy(), [0, 3])
