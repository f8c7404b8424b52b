"""Bad-input parity, round 18 (out= that aliases an input): torch's gathering kernels
(``index_select``, ``gather``, ``take``, ``take_along_dim``, ``masked_select``) and ``cross`` and
``scatter`` refuse an ``out`` that shares any element with an input, even the whole input
(``index_select(x, 0, i, out=x)``: RuntimeError "unsupported operation: some elements of the
input tensor and the written-to tensor refer to a single memory location"); tracegrad computed
a result there. ``gather`` and ``take_along_dim`` may write into their own index, as torch.
Also fixed: ``where(cond, x, 0., out=t)``, whose out= overload takes tensors only (torch's parser:
TypeError; tracegrad wrote the result). Each call runs under torch (the oracle) and tracegrad: the
same exception class (or none), no text of the layers below tracegrad; ``_ok`` calls are ones
torch accepts."""
import pytest

import tracegrad

from _bad_input_helpers import assert_gist, assert_same_class, outcome

torch = pytest.importorskip("torch")


def _sq(T):
    return T.tensor([[1., 2.], [3., 4.]])


def _ix(T):
    return T.tensor([[1, 0], [0, 1]])


def _on(x, f):
    """``f(x)``: a call whose out= is ``x`` or a view of it."""
    return f(x)


CASES = {
    # the whole input as out=
    "index_select(out=self)": lambda T: _on(_sq(T), lambda x: T.index_select(x, 0, T.tensor([1, 0]), out=x)),
    "gather(out=self)": lambda T: _on(_sq(T), lambda x: T.gather(x, 0, _ix(T), out=x)),
    "take(out=self)": lambda T: _on(_sq(T), lambda x: T.take(x, _ix(T), out=x)),
    "take_along_dim(out=self)": lambda T: _on(_sq(T), lambda x: T.take_along_dim(x, _ix(T), 0, out=x)),
    "masked_select(out=self)": lambda T: _on(_sq(T).reshape(-1), lambda x: T.masked_select(x, x > 0, out=x)),
    "cross(out=other)": lambda T: _on(T.ones(3), lambda x: T.cross(T.arange(3.), x, dim=0, out=x)),
    "scatter(out=src)": lambda T: _on(_sq(T), lambda s: T.scatter(T.zeros(2, 2), 0, T.tensor([[0]]), s, out=s)),
    # the index as out=: refused by index_select, take and scatter, allowed by gather/take_along_dim
    "index_select(out=index)": lambda T: _on(T.tensor([0, 1]), lambda i: T.index_select(T.arange(3), 0, i, out=i)),
    "take(out=index)": lambda T: _on(T.tensor([0, 1]), lambda i: T.take(T.arange(3), i, out=i)),
    "scatter(out=index)": lambda T: _on(_ix(T), lambda i: T.scatter(T.zeros(2, 2, dtype=T.int64), 0, i,
                                                                   T.zeros(2, 2, dtype=T.int64), out=i)),
    "gather(out=index)_ok": lambda T: _on(T.tensor([2, 0]), lambda i: T.gather(T.arange(3), 0, i, out=i)),
    "take_along_dim(out=index)_ok": lambda T: _on(T.tensor([2, 0]), lambda i: T.take_along_dim(T.arange(3), i, 0, out=i)),
    # disjoint parts of one storage are fine
    "index_select(out=other row)_ok": lambda T: _on(_sq(T), lambda x: T.index_select(x[0], 0, T.tensor([1, 0]), out=x[1])),
    "gather(out=other row)_ok": lambda T: _on(_sq(T), lambda x: T.gather(x[0], 0, T.tensor([1, 0]), out=x[1])),
    "cross(out=other row)_ok": lambda T: _on(T.ones(3, 3), lambda x: T.cross(x[0], x[1], dim=0, out=x[2])),
    # elementwise kernels and matmul take out= == an input, as torch
    "mul(out=self)_ok": lambda T: _on(_sq(T), lambda x: T.mul(x, x, out=x)),
    "mm(out=self)_ok": lambda T: _on(_sq(T), lambda x: T.mm(x, x, out=x)),
    # where's out= overload: tensors only
    "where(x, 0., out=)": lambda T: T.where(T.tensor([True, False]), T.ones(2), 0., out=T.empty(2)),
    "where(0., x, out=)": lambda T: T.where(T.tensor([True, False]), 0., T.ones(2), out=T.empty(2)),
    "where(1, 0, out=)": lambda T: T.where(T.tensor([True, False]), 1, 0, out=T.empty(2, dtype=T.int64)),
    "where(input=x, other=0., out=)": lambda T: T.where(T.tensor([True]), input=T.ones(1), other=0., out=T.empty(1)),
    "where(x, 0-d tensor, out=)_ok": lambda T: T.where(T.tensor([True, False]), T.ones(2), T.tensor(0.), out=T.empty(2)),
    "where(x, 0.) no out_ok": lambda T: T.where(T.tensor([True, False]), T.ones(2), 0.),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    assert_same_class(name, CASES[name], torch, tracegrad)
    if name.endswith("_ok"):
        assert outcome(CASES[name], tracegrad)[0] is None


GIST = {
    "index_select(out=self)": "some elements of the input tensor and the written-to tensor refer to a single memory",
    "take(out=index)": "some elements of the input tensor and the written-to tensor refer to a single memory",
    "cross(out=other)": "some elements of the input tensor and the written-to tensor refer to a single memory",
    "where(x, 0., out=)": "argument 'other' (position 3) must be Tensor, not float",
    "where(0., x, out=)": "argument 'input' (position 2) must be Tensor, not float",
    "where(input=x, other=0., out=)": "argument 'other' must be Tensor, not float",
}


@pytest.mark.parametrize("name", list(GIST))
def test_message_gist(name):
    assert_gist(name, CASES[name], GIST[name], torch, tracegrad)


def test_refused_out_is_not_written_and_accepted_out_matches_torch():
    for T in (torch, tracegrad):
        x = _sq(T)
        with pytest.raises(RuntimeError):
            T.index_select(x, 0, T.tensor([1, 0]), out=x)
        assert x.tolist() == [[1., 2.], [3., 4.]]
        t = T.full((2,), 7.)
        with pytest.raises(TypeError):
            T.where(T.tensor([True, False]), T.ones(2), 0., out=t)
        assert t.tolist() == [7., 7.]
        i = T.tensor([2, 0])
        assert T.gather(T.arange(3) * 10, 0, i, out=i) is i and i.tolist() == [20, 0]
        y = _sq(T)
        T.index_select(y[0], 0, T.tensor([1, 0]), out=y[1])
        assert y.tolist() == [[1., 2.], [2., 1.]]
        z = T.ones(3, 3)
        z[1, 0] = 0.
        T.cross(z[0], z[1], dim=0, out=z[2])
        assert z[2].tolist() == [0., -1., 1.]
