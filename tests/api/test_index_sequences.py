"""Python ``range`` objects as index elements and as ``tensor()`` data, as torch accepts them
(pytorch/examples' forward-forward: ``x_[range(x.shape[0]), y] = x.max()``)."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def test_range_in_getitem_setitem_and_tensor_as_torch():
    def run(T):
        x = T.arange(12.0).reshape(3, 4).requires_grad_(True)
        y = T.tensor([1, 0, 3])
        picked = x[range(3), y]
        (picked * T.tensor([1.0, 2.0, 3.0])).sum().backward()
        z = T.zeros(3, 4)
        z[range(3), y] = 5.0
        z[range(1, 3)] += 1.0
        r = T.tensor(range(4))
        return picked.detach().numpy(), x.grad.numpy(), z.numpy(), r.numpy(), str(r.dtype).split(".")[-1]
    for a, b in zip(run(tracegrad), run(torch)):
        if isinstance(a, str):
            assert a == b
        else:
            np.testing.assert_array_equal(a, b)


KEYS = {
    "range": lambda T: range(3),
    "range_step": lambda T: (range(0, 3, 2), 1),
    "empty_range": lambda T: range(0),
    "slice_then_range": lambda T: (slice(None), range(1, 3)),
    "tuple_inside_key": lambda T: (slice(None), (1, 2)),
    "np_int_array": lambda T: np.array([0, 2]),
    "np_int_2d": lambda T: np.array([[0, 1], [2, 2]]),
    "np_int_scalar": lambda T: np.int64(1),
    "np_bool_array": lambda T: np.array([True, False, True]),
    "np_bool_2d": lambda T: np.arange(12).reshape(3, 4) % 3 == 0,
    "np_arange_and_tensor": lambda T: (np.arange(3), T.tensor([1, 0, 3])),
    "list_of_np_ints": lambda T: [np.int64(0), np.int64(2)],
    # torch's legacy rule: a list holding sequences, tensors, slices, None or ... is a tuple
    "list_of_lists": lambda T: [[0, 1], [2, 2]],
    "list_of_ranges": lambda T: [range(2), range(2)],
    "list_with_slice": lambda T: [0, slice(None)],
    "list_with_none": lambda T: [None, 0],
    "list_with_ellipsis": lambda T: [0, Ellipsis],
    "list_of_tensors": lambda T: [T.tensor(0), T.tensor(2)],
    "list_of_bool_tensor": lambda T: [T.tensor([True, False, True])],
}


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("name", sorted(KEYS))
def test_sequence_index_getitem_and_setitem_as_torch(name):
    def run(T):
        x = T.arange(12.0).reshape(3, 4).requires_grad_(True)
        y = x[KEYS[name](T)]
        (y * (T.arange(float(y.numel())).reshape(y.shape) + 1)).sum().backward()
        z = T.zeros(3, 4)
        z[KEYS[name](T)] = 7.0
        return list(y.shape), y.detach().numpy(), x.grad.numpy(), z.numpy()
    got, want = run(tracegrad), run(torch)
    assert got[0] == want[0]
    for a, b in zip(got[1:], want[1:]):
        np.testing.assert_array_equal(a, b)


def test_list_index_read_as_a_tuple_warns_as_torch():
    for T in (tracegrad, torch):
        with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing"):
            T.zeros(3, 4)[[0, slice(None)]]


@pytest.mark.parametrize("data", [range(1, 8, 3), [range(2), range(2)], (1, 2), np.array([1, 2]), range(0)])
def test_tensor_of_ranges_and_sequences_as_torch(data):
    a, b = tracegrad.tensor(data), torch.tensor(data)
    assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
    assert a.tolist() == b.tolist() and list(a.shape) == list(b.shape)


class _Index:
    """An object with ``__index__`` (as torch's PyIndex_Check reads it: a Python int)."""

    def __init__(self, i):
        self.i = i

    def __index__(self):
        return self.i


def test_index_protocol_object_is_an_int_index_as_torch():
    # before: tracegrad raised IndexError "only integers, slices ... (got _Index)"
    def run(T):
        x = T.arange(6.0).reshape(2, 3).requires_grad_(True)
        picked = x[_Index(1)] * 2 + x[0, _Index(-1)] + x[:, _Index(0)].sum()
        picked.sum().backward()
        base = T.arange(6).reshape(2, 3)
        view = base[_Index(1)]          # a view, as x[1]
        view.add_(100)
        base[0, _Index(2)] = 7
        base[:, _Index(0)] += 1
        return picked.detach().numpy(), x.grad.numpy(), base.numpy()
    for a, b in zip(run(tracegrad), run(torch)):
        np.testing.assert_array_equal(a, b)
    for T in (tracegrad, torch):        # out of range: torch's IndexError
        with pytest.raises(IndexError):
            T.zeros(2, 3)[_Index(2)]


def test_jax_arrays_stay_index_tensors():
    # a JAX array has __index__ as well, but (any shape) indexes as the tensor it holds
    import jax.numpy as jnp
    x = tracegrad.arange(6.0).view(2, 3)
    np.testing.assert_array_equal(x[jnp.array([1, 0])].numpy(), x.numpy()[[1, 0]])
    np.testing.assert_array_equal(x[0, jnp.array([2, 0])].numpy(), x.numpy()[0, [2, 0]])
    np.testing.assert_array_equal(x[jnp.array(1)].numpy(), x.numpy()[1])
