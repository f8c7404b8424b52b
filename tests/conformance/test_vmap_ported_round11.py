"""Ported from PyTorch's test/functorch/test_vmap.py, round 11: TestVmapAPI and
TestVmapOperators cases not ported in rounds 7-9 (output structure errors, nested in/out dims,
chunk_size, in-place fallbacks, views, return types, ops under vmap). Each case is one program
run with ``torch.vmap`` (the oracle) and ``tracegrad.vmap`` (``parity.same_outcome``): equal
results or the same builtin exception class. Inputs are fixed numpy draws, small shapes."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")


def r(T, *shape, seed=0, dtype="float64"):
    return T.tensor(np.random.RandomState(seed).uniform(-1, 1, shape), dtype=getattr(T, dtype))


CASES = {
    # TestVmapAPI.test_multiple_outputs_error_cases: outputs must be tensors (or pytrees of them)
    "multiple_outputs_error_none": lambda T: T.vmap(lambda x: (x, None))(r(T, 2, 3)),
    "multiple_outputs_error_int": lambda T: T.vmap(lambda x: (x, 3))(r(T, 2, 3)),
    "multiple_outputs_error_list_of_int": lambda T: T.vmap(lambda x: [x, [1]])(r(T, 2, 3)),
    # TestVmapAPI.test_nested_non_default_in_dims_out_dims
    "nested_non_default_in_dims_out_dims": lambda T: T.vmap(T.vmap(T.mul, in_dims=(1, 0), out_dims=1), in_dims=(0, 2), out_dims=2)(
        r(T, 2, 3, 4), r(T, 2, 4, 3, seed=1)),
    # TestVmapAPI.test_non_tensor_out_dims / out_dims a list / a nested pytree of dims
    "out_dims_float_raises": lambda T: T.vmap(lambda x: x, out_dims=1.)(r(T, 2, 3)),
    "out_dims_pytree": lambda T: [o.shape for o in T.vmap(lambda x: (x, x * 2), out_dims=(1, 0))(r(T, 2, 3))],
    "out_dims_list_raises_mismatch": lambda T: T.vmap(lambda x: (x, x), out_dims=(0, 0, 0))(r(T, 2, 3)),
    # TestVmapAPI.test_in_dims_as_list: a list of in_dims is refused (only tuples), as torch
    "in_dims_as_list": lambda T: T.vmap(T.mul, in_dims=[0, 0])(r(T, 2, 3), r(T, 2, 3, seed=1)),
    "in_dims_tuple_of_nested": lambda T: T.vmap(lambda p: p[0] + p[1], in_dims=((0, 1),))((r(T, 2, 3), r(T, 3, 2, seed=1))),
    "in_dims_dict": lambda T: T.vmap(lambda p: p["a"] * p["b"], in_dims=({"a": 0, "b": None},))(
        {"a": r(T, 2, 3), "b": r(T, 3, seed=1)}),
    # TestVmapAPI.test_chunk_vmap / test_vmap_chunksize: chunk_size does not change values
    "chunk_size_values": lambda T: [T.vmap(lambda x: x.sin().sum(), chunk_size=c)(r(T, 5, 3)) for c in (1, 2, 5, None)],
    "chunk_size_multiple_outputs": lambda T: T.vmap(lambda x, y: (x * y, x - y), in_dims=(0, None), chunk_size=2)(
        r(T, 5, 3), r(T, 3, seed=1)),
    "chunk_size_zero_raises": lambda T: T.vmap(lambda x: x, chunk_size=0)(r(T, 2, 3)),
    "chunk_size_negative_raises": lambda T: T.vmap(lambda x: x, chunk_size=-1)(r(T, 2, 3)),
    # TestVmapAPI.test_data_attribute: .data inside vmap is refused
    "data_attribute_raises": lambda T: T.vmap(lambda x: x.data)(r(T, 2, 3)),
    # TestVmapAPI.test_inplace_manyview: in-place through several views of a batched tensor
    "inplace_manyview": lambda T: (lambda x: (T.vmap(lambda t: t.t().diagonal().add_(1))(x), x)[1])(r(T, 2, 3, 3)),
    "inplace_on_view_batched": lambda T: (lambda x: (T.vmap(lambda t: t[1:].mul_(2))(x), x)[1])(r(T, 2, 3)),
    # TestVmapAPI.test_inplace_fallback_nary_different_levels: in-place with a more batched other
    "inplace_unbatched_self_batched_other_raises": lambda T: T.vmap(lambda o: r(T, 3).add_(o))(r(T, 2, 3)),
    "inplace_batched_self_unbatched_other": lambda T: (lambda x: (T.vmap(lambda t: t.add_(r(T, 3, seed=1)))(x), x)[1])(r(T, 2, 3)),
    "inplace_nested_different_levels": lambda T: (lambda x, y: (T.vmap(T.vmap(lambda a, b: a.mul_(b), in_dims=(0, None)),
                                                                        in_dims=(0, 0))(x, y), x)[1])(r(T, 2, 3, 4), r(T, 2, 4, seed=1)),
    # TestVmapAPI.test_vmap_returns_torch_return_types
    "returns_return_types": lambda T: (lambda res: (type(res).__name__, res.values, res.indices))(
        T.vmap(lambda x: x.max(0))(r(T, 2, 3, 4))),
    "returns_return_types_sort": lambda T: (lambda res: (type(res).__name__, res[0], res[1]))(T.vmap(T.sort)(r(T, 2, 4))),
    # TestVmapAPI.test_fill_and_zero_inplace
    "fill_and_zero_inplace": lambda T: (lambda x: (T.vmap(lambda t: t.fill_(0.5))(x), x.clone(), T.vmap(lambda t: t.zero_())(x), x)[1:])(
        r(T, 2, 3)),
    "fill_batched_value": lambda T: (lambda x, v: (T.vmap(lambda t, s: t.fill_(s))(x, v), x)[1])(r(T, 2, 3), r(T, 2, seed=2)),
    # TestVmapAPI.test_unwrap_batched-like: nested vmap with a captured (unbatched) tensor
    "captured_tensor_inside": lambda T: (lambda c: T.vmap(lambda x: x * c + c.sum())(r(T, 2, 3)))(r(T, 3, seed=3)),
    # TestVmapAPI.test_backward_unsupported_interaction: .backward() inside vmap is refused
    "backward_inside_vmap_raises": lambda T: (lambda w: T.vmap(lambda x: (x * w).sum().backward())(r(T, 2, 3)))(
        r(T, 3).requires_grad_()),
    # TestVmapOperators.test_conj / test_clone / test_view_as / test_vmap_multi_dot
    "conj_complex": lambda T: T.vmap(T.conj)(T.tensor(np.arange(6.).reshape(2, 3) + 1j, dtype=T.complex128)).resolve_conj(),
    "conj_real_is_identity": lambda T: T.vmap(T.conj)(r(T, 2, 3)),
    "clone_memory_format": lambda T: T.vmap(lambda t: t.clone(memory_format=T.contiguous_format))(r(T, 3, 2).t()),
    "clone_is_copy": lambda T: (lambda x: (lambda y: (y.add_(1), x)[1])(T.vmap(T.clone)(x)))(r(T, 2, 3)),
    "view_as": lambda T: T.vmap(lambda a, b: a.view_as(b))(r(T, 2, 6), r(T, 2, 3, 2, seed=1)),
    "view_as_unbatched_other": lambda T: T.vmap(lambda a: a.view_as(T.zeros(2, 3, dtype=T.float64)))(r(T, 2, 6)),
    "multi_dot": lambda T: T.vmap(lambda a, b, c: T.linalg.multi_dot([a, b, c]))(r(T, 2, 2, 3), r(T, 2, 3, 4, seed=1), r(T, 2, 4, 2, seed=2)),
    "multi_dot_mixed_batching": lambda T: T.vmap(lambda a, b: T.linalg.multi_dot([a, b, a.t()]), in_dims=(0, None))(
        r(T, 2, 2, 3), r(T, 3, 3, seed=1)),
    # TestVmapOperators.test_log_softmax / test_softmax / binary_cross_entropy / index_put
    "log_softmax": lambda T: T.vmap(lambda t: T.log_softmax(t, -1))(r(T, 2, 3, 4)),
    "log_softmax_dim0": lambda T: T.vmap(lambda t: T.nn.functional.log_softmax(t, 0), in_dims=1)(r(T, 3, 2, 4)),
    "binary_cross_entropy": lambda T: T.vmap(T.nn.functional.binary_cross_entropy)(
        T.sigmoid(r(T, 2, 3)), T.sigmoid(r(T, 2, 3, seed=1))),
    "binary_cross_entropy_none_weight": lambda T: T.vmap(lambda a, b, w: T.nn.functional.binary_cross_entropy(a, b, w, reduction="none"),
                                                         in_dims=(0, 0, None))(T.sigmoid(r(T, 2, 3)), T.sigmoid(r(T, 2, 3, seed=1)), r(T, 3, seed=2).abs()),
    "index_put": lambda T: T.vmap(lambda t, v: t.index_put((T.tensor([0, 2]),), v))(r(T, 2, 4), r(T, 2, 2, seed=1)),
    "index_put_accumulate": lambda T: T.vmap(lambda t, v: t.index_put((T.tensor([1, 1]),), v, accumulate=True))(r(T, 2, 4), r(T, 2, 2, seed=1)),
    "index_select_batched_index": lambda T: T.vmap(lambda t, i: t.index_select(0, i))(r(T, 2, 4), T.tensor([[0, 3], [1, 1]])),
    # vjp/jvp inside vmap (test_vmap_jvp_vjp-like): per-example gradients
    "vmap_of_vjp": lambda T: T.vmap(lambda x: T.func.vjp(T.sin, x)[1](T.ones(3, dtype=T.float64))[0])(r(T, 2, 3)),
    "vmap_of_jvp": lambda T: T.vmap(lambda x, t: T.func.jvp(T.exp, (x,), (t,)))(r(T, 2, 3), r(T, 2, 3, seed=1)),
    "vmap_of_grad_per_example": lambda T: (lambda w: T.vmap(T.func.grad(lambda w, x: ((x @ w) ** 2).sum()), in_dims=(None, 0))(w, r(T, 4, 3, seed=1)))(
        r(T, 3, 2)),
}


@pytest.mark.parametrize("fn", outcome_params(CASES))
def test_vmap_round11(fn):
    same_outcome(fn)
