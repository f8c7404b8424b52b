"""Bad-input parity, round 20 (factories, indexing, shape ops, type promotion, nn layers, losses,
optimizers, autograd): a probe over ~1,500 wrong calls across those areas left these differences
from torch 2.13, fixed here:

- a list (or NumPy array) index of floats was refused (IndexError), where torch reads any sequence
  index that is not a bool/uint8 mask as int64: ``x[[1.7]]`` is ``x[[1]]``, for reads and writes
  (a float *tensor* index stays IndexError); a str in an index list was the tensor constructor's
  ValueError (torch: TypeError);
- ``Tensor.gather(..., sparse_grad=)``, ``Tensor.scatter_reduce(..., include_self=)`` and
  ``Tensor.index_reduce(..., include_self=)`` took any truthy value (torch's parser: a bool only,
  TypeError; the function forms already checked), and ``sort(descending=1)`` was taken;
- ``F.linear`` took a Python number as ``bias`` (added as a broadcast bias; torch: TypeError);
- the factories made by torch's generated bindings (zeros, ones, empty, full, arange, eye, rand*,
  randint, randperm, linspace, logspace, the windows, the ``*_like`` and ``new_*`` ones...) refused
  ``requires_grad=None`` and ``pin_memory=None``, which torch takes as False (its hand-written
  ``tensor``, ``new_tensor``, ``range``, ``frombuffer`` and sparse constructors refuse None: kept);
- ``randint_like(..., requires_grad=True)`` dropped the flag (torch: a float result requires grad);
- ``tril_indices``/``triu_indices`` had no ``requires_grad`` (torch takes it: True is its
  RuntimeError for an integer tensor) and ``normal`` no ``layout``/``pin_memory``; ``normal`` with a
  Tensor mean or std dropped ``requires_grad=True``, ``dtype=`` and ``device=`` (torch's tensor
  overloads take none of them: TypeError);
- ``arange`` with a complex dtype made a complex range (torch's kernel has no complex instance:
  NotImplementedError).

Found and left alone (``std``/``var(unbiased=None)``, taken then, is refused since: see
tests/ops/test_ops_reduction.py): ``normal(mean_tensor, std,
requires_grad=False)``/``pin_memory=False`` given explicitly is taken (torch: TypeError; the value
changes nothing); a complex NumPy array as an index warns with NumPy's ComplexWarning where torch
gives its own UserWarning. Each call runs under torch (the oracle) and tracegrad: the same exception
class (or none), no text of the layers below tracegrad; ``_ok`` calls are ones torch accepts.
"""
import numpy as np
import pytest

import tracegrad

from _bad_input_helpers import table_tests

torch = pytest.importorskip("torch")


def _x(T):
    return T.arange(6.).reshape(2, 3)


def _idx(T):
    return T.zeros(2, 3, dtype=T.int64)


def _leaf(T):
    return T.ones(2, requires_grad=True)


CASES = {
    # factories
    "full(non-broadcast fill)": lambda T: T.full((2, 3), T.ones(2)),
    "arange(step 0)": lambda T: T.arange(0, 5, 0),
    "arange(step of the wrong sign)": lambda T: T.arange(0, 5, -1),
    "arange(dtype=complex64)": lambda T: T.arange(3, dtype=T.complex64),
    "arange(out=complex128)": lambda T: T.arange(3, out=T.zeros(3, dtype=T.complex128)),
    "linspace(steps<0)": lambda T: T.linspace(0, 1, -1),
    "eye(-1)": lambda T: T.eye(-1),
    "empty(-1)": lambda T: T.empty(2, -3),
    "tensor(ragged)": lambda T: T.tensor([[1, 2], [3]]),
    "zeros(requires_grad=None)_ok": lambda T: T.zeros(2, requires_grad=None),
    "full(requires_grad=None)_ok": lambda T: T.full((2,), 1., requires_grad=None),
    "arange(pin_memory=None)_ok": lambda T: T.arange(3, pin_memory=None),
    "randn_like(requires_grad=None)_ok": lambda T: T.randn_like(T.ones(2), requires_grad=None),
    "new_zeros(requires_grad=None)_ok": lambda T: T.ones(2).new_zeros(2, requires_grad=None),
    "hann_window(pin_memory=None)_ok": lambda T: T.hann_window(3, pin_memory=None),
    "zeros(requires_grad='yes')": lambda T: T.zeros(2, requires_grad="yes"),
    "ones(pin_memory=1)": lambda T: T.ones(2, pin_memory=1),
    "tensor(requires_grad=None)": lambda T: T.tensor([1.], requires_grad=None),
    "new_tensor(requires_grad=None)": lambda T: T.ones(2).new_tensor([1.], requires_grad=None),
    "range(requires_grad=None)": lambda T: T.range(0, 1, requires_grad=None),
    "tril_indices(requires_grad=False)_ok": lambda T: T.tril_indices(2, 2, requires_grad=False),
    "triu_indices(requires_grad=True)": lambda T: T.triu_indices(2, 2, requires_grad=True),
    "normal(tensors, requires_grad=True)": lambda T: T.normal(T.zeros(2), T.ones(2), requires_grad=True),
    "normal(tensor, float, dtype=)": lambda T: T.normal(T.zeros(2), 1., dtype=T.float64),
    "normal(floats, layout=strided)_ok": lambda T: T.normal(0., 1., (2,), layout=T.strided),
    "normal(floats, layout=sparse_coo)": lambda T: T.normal(0., 1., (2,), layout=T.sparse_coo),
    "normal(floats, pin_memory=True)": lambda T: T.normal(0., 1., (2,), pin_memory=True),
    # indexing
    "x[2] out of range": lambda T: _x(T)[2],
    "x[float tensor]": lambda T: _x(T)[T.tensor([0.])],
    "x[bool mask of the wrong shape]": lambda T: _x(T)[T.tensor([True, False, True])],
    "x[[1.7]]_ok": lambda T: _x(T)[[1.7]],
    "x[np.array([1.7])]_ok": lambda T: _x(T)[np.array([1.7])],
    "x[[2.5]] out of range": lambda T: _x(T)[[2.5]],
    "x[[nan]]": lambda T: _x(T)[[float("nan")]],
    "x[[1j]]": lambda T: _x(T)[[1j]],
    "x[['a']]": lambda T: _x(T)[["a"]],
    "x[[0.5]] = 7_ok": lambda T: _x(T).__setitem__([0.5], 7.),
    "index_select(2-D index)": lambda T: _x(T).index_select(0, T.tensor([[0]])),
    "gather(dim 2)": lambda T: _x(T).gather(2, _idx(T)),
    "gather(float index)": lambda T: _x(T).gather(1, T.zeros(2, 3)),
    "Tensor.gather(sparse_grad='a')": lambda T: _x(T).gather(1, _idx(T), sparse_grad="a"),
    "Tensor.gather(sparse_grad=None)": lambda T: _x(T).gather(1, _idx(T), sparse_grad=None),
    "Tensor.scatter_reduce(include_self=1)": lambda T: _x(T).scatter_reduce(1, _idx(T), _x(T), "sum", include_self=1),
    "Tensor.scatter_reduce_(include_self='no')": lambda T: _x(T).scatter_reduce_(1, _idx(T), _x(T), "sum",
                                                                                include_self="no"),
    "Tensor.index_reduce(include_self=None)": lambda T: _x(T).index_reduce(0, T.tensor([0]), T.ones(1, 3), "prod",
                                                                           include_self=None),
    "scatter(dim 2)": lambda T: _x(T).scatter(2, _idx(T), 1.),
    # shape ops
    "view(two -1)": lambda T: _x(T).view(-1, -1),
    "view(incompatible)": lambda T: _x(T).view(4, 2),
    "permute(repeated dim)": lambda T: _x(T).permute(0, 0),
    "expand(smaller)": lambda T: _x(T).expand(2, 2),
    "unsqueeze(3)": lambda T: _x(T).unsqueeze(3),
    "cat([])": lambda T: T.cat([]),
    "stack(different shapes)": lambda T: T.stack([T.ones(2), T.ones(3)]),
    "split(sizes not summing)": lambda T: T.ones(5).split([2, 2]),
    "sort(descending=1)": lambda T: _x(T).sort(1, descending=1),
    "sort(dim, 0) positional": lambda T: T.sort(_x(T), 1, 0),
    # type promotion
    "int.add_(float tensor)": lambda T: T.ones(2, dtype=T.int64).add_(T.ones(2)),
    "add(out=int64) of floats": lambda T: T.add(T.ones(2), T.ones(2), out=T.zeros(2, dtype=T.int64)),
    # nn layers
    "Conv2d(3-D unbatched)_ok": lambda T: T.nn.Conv2d(2, 3, 3)(T.ones(2, 5, 5)),
    "Conv2d(5-D)": lambda T: T.nn.Conv2d(2, 3, 3)(T.ones(1, 1, 2, 5, 5)),
    "Linear(wrong in_features)": lambda T: T.nn.Linear(3, 2)(T.ones(2, 4)),
    "F.linear(bias=1)": lambda T: T.nn.functional.linear(T.ones(2, 3), T.ones(2, 3), 1),
    "F.linear(bias=0.5)": lambda T: T.nn.functional.linear(T.ones(2, 3), T.ones(2, 3), 0.5),
    "F.linear(bias=None)_ok": lambda T: T.nn.functional.linear(T.ones(2, 3), T.ones(2, 3), None),
    "Embedding(float indices)": lambda T: T.nn.Embedding(5, 2)(T.tensor([1.])),
    "Embedding(index 5 of 5)": lambda T: T.nn.Embedding(5, 2)(T.tensor([5])),
    "BatchNorm1d(wrong channels)": lambda T: T.nn.BatchNorm1d(3)(T.ones(2, 4)),
    "LSTM(wrong input_size)": lambda T: T.nn.LSTM(3, 4)(T.ones(5, 2, 2)),
    # losses
    "cross_entropy(float target of the wrong shape)": lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.ones(2, 2)),
    "nll_loss(target 3 of 3 classes)": lambda T: T.nn.functional.nll_loss(T.ones(2, 3), T.tensor([0, 3])),
    "binary_cross_entropy(target 2)": lambda T: T.nn.functional.binary_cross_entropy(T.full((2,), 0.5), T.tensor([0., 2.])),
    # optimizers
    "SGD(lr<0)": lambda T: T.optim.SGD([T.nn.Parameter(T.ones(1))], lr=-0.1),
    "Adam(betas[0]=1.5)": lambda T: T.optim.Adam([T.nn.Parameter(T.ones(1))], betas=(1.5, 0.9)),
    "SGD(params=[1, 2])": lambda T: T.optim.SGD([1, 2], lr=0.1),
    "SGD(duplicate params)": lambda T: (lambda p: T.optim.SGD([p, p], lr=0.1))(T.nn.Parameter(T.ones(1))),
    # autograd
    "backward() of a non-scalar": lambda T: (_leaf(T) * 2).backward(),
    "grad of a tensor that does not require grad": lambda T: T.autograd.grad(T.ones(2).sum(), T.ones(2)),
    "second backward without retain_graph": lambda T: (lambda y: (y.backward(), y.backward()))(_leaf(T).exp().sum()),
    "grad(allow_unused=False) of an unused input": lambda T: (lambda a, b: T.autograd.grad((a * 2).sum(), [a, b]))(
        _leaf(T), _leaf(T)),
}

# both libraries' messages hold these words (the API or the argument)
GIST = {
    "arange(dtype=complex64)": "arange",
    "Tensor.gather(sparse_grad='a')": "sparse_grad",
    "Tensor.scatter_reduce(include_self=1)": "include_self",
    "Tensor.index_reduce(include_self=None)": "include_self",
    "F.linear(bias=1)": "bias",
    "zeros(requires_grad='yes')": "requires_grad",
    "tensor(requires_grad=None)": "requires_grad",
    "triu_indices(requires_grad=True)": "require gradients",
    "normal(tensors, requires_grad=True)": "normal()",
    "sort(descending=1)": "descending",
}

test_same_class_as_torch, test_message_gist = table_tests(CASES, GIST, torch, tracegrad)


@pytest.mark.parametrize("key", [[1.7], [-0.5], [True, 0.5], [[1.5, 0.2]], np.array([1.9, 0.1]),
                                 ([0.5], [2.9]), ([1.2], slice(None))], ids=repr)
def test_float_sequence_index_reads_as_int64(key):
    """A float list/array index picks (and writes) the rows torch's int64 reading picks."""
    want = _x(torch)[key]
    got = _x(tracegrad)[key]
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    t, g = _x(torch), _x(tracegrad)
    t[key] = -1.
    g[key] = -1.
    np.testing.assert_array_equal(g.numpy(), t.numpy())


def test_none_flags_are_false():
    """``requires_grad=None``/``pin_memory=None`` of a generated factory: a plain tensor, as torch's."""
    for T in (torch, tracegrad):
        for t in (T.zeros(2, requires_grad=None, pin_memory=None), T.ones_like(T.ones(2), requires_grad=None)):
            assert t.requires_grad is False and t.grad_fn is None


def test_randint_like_keeps_requires_grad():
    got = tracegrad.randint_like(tracegrad.ones(2), 3, requires_grad=True)
    want = torch.randint_like(torch.ones(2), 3, requires_grad=True)
    assert got.requires_grad == want.requires_grad is True and got.dtype == tracegrad.float32
    with pytest.raises(RuntimeError):   # an integer result cannot require grad, as torch
        tracegrad.randint_like(tracegrad.ones(2, dtype=tracegrad.int64), 3, requires_grad=True)
    with pytest.raises(RuntimeError):
        torch.randint_like(torch.ones(2, dtype=torch.int64), 3, requires_grad=True)


def test_linear_bias_tensor_still_added():
    """The bias check leaves a Tensor bias as it was: the result matches torch."""
    w, b, x = np.arange(6.).reshape(2, 3) / 4, np.array([0.5, -1.]), np.ones((2, 3))
    got = tracegrad.nn.functional.linear(*(tracegrad.tensor(a, dtype=tracegrad.float32) for a in (x, w, b)))
    want = torch.nn.functional.linear(*(torch.tensor(a, dtype=torch.float32) for a in (x, w, b)))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
