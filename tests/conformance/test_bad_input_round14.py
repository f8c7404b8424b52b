"""Bad-input parity, round 14 (tensor level): a probe over index kernels, the numpy bridge,
``Tensor.to``, Generators and ``generator=`` arguments, and save/load of files that are not
checkpoints. Fixed here: index tensors of int8/int16/uint8 (torch's index kernels take int32
or int64 only; XLA read them as positions), ``scatter_``/``scatter_add_`` with a src of
another dtype (silently cast before), and ``generator=0`` (a falsy non-Generator drew from the
default generator). Each call runs under torch (the oracle) and tracegrad: the same exception
class (or none), no text of the layers below tracegrad; the ``_ok`` calls are ones torch accepts."""
import io

import numpy as np
import pytest

import tracegrad

from _bad_input_helpers import assert_gist, assert_same_class, outcome

torch = pytest.importorskip("torch")


def _idx(T, dt):
    return T.tensor([0, 2], dtype=getattr(T, dt))


# every index kernel on one small index tensor of each width
_INDEX_OPS = {
    "index_select": lambda T, i: T.zeros(3).index_select(0, i),
    "gather": lambda T, i: T.zeros(3).gather(0, i),
    "scatter": lambda T, i: T.zeros(3).scatter(0, i, T.ones(2)),
    "scatter_": lambda T, i: T.zeros(3).scatter_(0, i, T.ones(2)),
    "scatter_(value)": lambda T, i: T.zeros(3).scatter_(0, i, 1.0),
    "scatter_add_": lambda T, i: T.zeros(3).scatter_add_(0, i, T.ones(2)),
    "scatter_reduce": lambda T, i: T.zeros(3).scatter_reduce(0, i, T.ones(2), "amax"),
    "index_add_": lambda T, i: T.zeros(3).index_add_(0, i, T.ones(2)),
    "index_reduce_": lambda T, i: T.zeros(3).index_reduce_(0, i, T.ones(2), "prod"),
}
CASES = {f"{op}(index {dt}){'_ok' if dt in ('int32', 'int64') else ''}": (lambda fn, dt: lambda T: fn(T, _idx(T, dt)))(fn, dt)
         for op, fn in _INDEX_OPS.items() for dt in ("int8", "int16", "uint8", "int32", "int64")}


def _f64(T, *shape):
    return T.ones(*shape, dtype=T.float64)


def _saved(T, obj):
    buf = io.BytesIO()
    T.save(obj, buf)
    return buf.getvalue()


CASES.update({
    # a src of another dtype (the out-of-place ones already refused it)
    "scatter_(src float64)": lambda T: T.zeros(3).scatter_(0, T.tensor([0]), _f64(T, 1)),
    "scatter_(src float64, reduce=add)": lambda T: T.zeros(3).scatter_(0, T.tensor([0]), _f64(T, 1), reduce="add"),
    "scatter_add_(src float64)": lambda T: T.zeros(3).scatter_add_(0, T.tensor([0]), _f64(T, 1)),
    "scatter_add(src float64)": lambda T: T.scatter_add(T.zeros(3), 0, T.tensor([0]), _f64(T, 1)),
    "scatter_reduce_(src float64)": lambda T: T.zeros(3).scatter_reduce_(0, T.tensor([0]), _f64(T, 1), "sum"),
    "index_copy_(src float64)": lambda T: T.zeros(3).index_copy_(0, T.tensor([0]), _f64(T, 1)),
    "index_put_(values float64)": lambda T: T.zeros(3).index_put_((T.tensor([0]),), _f64(T, 1)),
    "setitem(float64)_ok": lambda T: T.zeros(3).__setitem__(T.tensor([0]), _f64(T, 1)),
    # out-of-range and mismatched indices
    "index_put_(index 5 of 3)": lambda T: T.zeros(3).index_put_((T.tensor([5]),), T.tensor(1.)),
    "index_put_(index -4 of 3)": lambda T: T.zeros(3).index_put_((T.tensor([-4]),), T.tensor(1.)),
    "index_put_(accumulate, index 3 of 3)": lambda T: T.zeros(3).index_put_((T.tensor([3]),), T.ones(1), accumulate=True),
    "index_put_(two indices for 1-D)": lambda T: T.zeros(3).index_put_((T.tensor([0]), T.tensor([0])), T.ones(1)),
    "index_put_(mask of 2 for 3)": lambda T: T.zeros(3).index_put_((T.tensor([True, False]),), T.ones(1)),
    "index_put_(3 values for 2 places)": lambda T: T.zeros(3).index_put_((T.tensor([0, 1]),), T.ones(3)),
    "scatter_(index 3 of 3)": lambda T: T.zeros(3).scatter_(0, T.tensor([3]), T.ones(1)),
    "scatter_(index longer than src)": lambda T: T.zeros(3).scatter_(0, T.tensor([0, 1]), T.ones(1)),
    "scatter_(reduce='max')": lambda T: T.zeros(3).scatter_(0, T.tensor([0]), 1.0, reduce="max"),
    "put_(index 7 of 3)": lambda T: T.zeros(3).put_(T.tensor([7]), T.ones(1)),
    "masked_scatter_(too few)": lambda T: T.zeros(3).masked_scatter_(T.ones(3, dtype=T.bool), T.ones(2)),
    # generator= takes a Generator or None: 0 is not "the default generator"
    "randperm(generator=0)": lambda T: T.randperm(3, generator=0),
    "rand(generator=0)": lambda T: T.rand(2, generator=0),
    "randint(generator=0)": lambda T: T.randint(3, (2,), generator=0),
    "bernoulli(generator=0)": lambda T: T.bernoulli(T.ones(2) / 2, generator=0),
    "normal(generator=0)": lambda T: T.normal(T.zeros(2), T.ones(2), generator=0),
    "uniform_(generator=0)": lambda T: T.zeros(2).uniform_(generator=0),
    "exponential_(generator=0)": lambda T: T.zeros(2).exponential_(generator=0),
    "rand_like(generator=0)": lambda T: T.rand_like(T.ones(2), generator=0),
    "RandomSampler(generator=0)": lambda T: list(T.utils.data.RandomSampler(range(3), generator=0)),
    "random_split(generator=0)": lambda T: T.utils.data.random_split(range(4), [2, 2], generator=0),
    "randn(generator='a')": lambda T: T.randn(2, generator="a"),
    "rand(generator=Generator())_ok": lambda T: T.rand(2, generator=T.Generator()),
    "Generator('bogus')": lambda T: T.Generator("bogus"),
    "manual_seed(2**64)": lambda T: T.Generator().manual_seed(2 ** 64),
    "manual_seed(1.5)": lambda T: T.Generator().manual_seed(1.5),
    "manual_seed(-1)_ok": lambda T: T.Generator().manual_seed(-1),
    "set_state(float tensor)": lambda T: T.Generator().set_state(T.ones(2)),
    "set_state(list)": lambda T: T.Generator().set_state([1, 2]),
    # the numpy bridge
    "from_numpy(object array)": lambda T: T.from_numpy(np.array([1, "a"], dtype=object)),
    "from_numpy(str array)": lambda T: T.from_numpy(np.array(["a"])),
    "from_numpy(longdouble)": lambda T: T.from_numpy(np.ones(2, dtype=np.longdouble)),
    "from_numpy(datetime64)": lambda T: T.from_numpy(np.array(["2020-01-01"], dtype="datetime64[D]")),
    "from_numpy(structured)": lambda T: T.from_numpy(np.zeros(2, dtype=[("a", "f4")])),
    "from_numpy(list)": lambda T: T.from_numpy([1, 2]),
    "from_numpy(uint16)_ok": lambda T: T.from_numpy(np.ones(2, dtype=np.uint16)),
    "tensor(object array)": lambda T: T.tensor(np.array([1, "a"], dtype=object)),
    "numpy(requires grad)": lambda T: (T.ones(2, requires_grad=True) * 2).numpy(),
    "numpy(requires grad, force=True)_ok": lambda T: T.ones(2, requires_grad=True).numpy(force=True),
    "numpy(1)": lambda T: T.ones(2).numpy(1),
    "np.asarray(requires grad)": lambda T: np.asarray(T.ones(2, requires_grad=True)),
    "item(meta)": lambda T: T.ones(1, device="meta").item(),
    "float(2 elements)": lambda T: float(T.ones(2)),
    # Tensor.to
    "to('bogus')": lambda T: T.ones(2).to("bogus"),
    "to(3.5)": lambda T: T.ones(2).to(3.5),
    "to(dtype='float')": lambda T: T.ones(2).to(dtype="float"),
    "to(np.float32)": lambda T: T.ones(2).to(np.float32),
    "to(tensor, tensor)": lambda T: T.ones(2).to(T.ones(1), T.ones(1)),
    "to(float64, bogus=1)": lambda T: T.ones(2).to(T.float64, bogus=1),
    "to(cpu:-1)": lambda T: T.ones(2).to("cpu:-1"),
    "to(int)_ok": lambda T: T.ones(2).to(int),
    "type('bogus')": lambda T: T.ones(2).type("bogus"),
    # load of what is not a checkpoint
    "load(empty)": lambda T: T.load(io.BytesIO(b""), weights_only=True),
    "load(first half)": lambda T: T.load(io.BytesIO(_saved(T, {"a": T.ones(2)})[:200]), weights_only=True),
    "load(all but the last 10 bytes)": lambda T: T.load(io.BytesIO(_saved(T, {"a": T.ones(2)})[:-10]),
                                                        weights_only=True),
    "load(missing path)": lambda T: T.load("/nonexistent-dir/x.pt"),
    "load(3)": lambda T: T.load(3),
    "save(to 3)": lambda T: T.save(T.ones(2), 3),
})


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    assert_same_class(name, CASES[name], torch, tracegrad)


GIST = {
    "index_select(index int16)": "index_select(): Expected dtype int32 or int64 for index",
    "gather(index uint8)": "gather(): Expected dtype int32/int64 for index",
    "scatter_add_(index int8)": "scatter(): Expected dtype int32/int64 for index",
    "index_add_(index int16)": "index_add_(): Expected dtype int32/int64 for index but got: Short",
    "index_reduce_(index uint8)": "index_reduce_(): Expected dtype int32/int64 for index but got: Byte",
    "scatter_(src float64)": "Expected self.dtype to be equal to src.dtype",
    "scatter_add_(src float64)": "Expected self.dtype to be equal to src.dtype",
    "randperm(generator=0)": "generator=int",
}


@pytest.mark.parametrize("name", list(GIST))
def test_message_gist(name):
    assert_gist(name, CASES[name], GIST[name], torch, tracegrad)


# torch's own messages here name numpy (the foreign-text check does not apply): class and gist
_NUMPY_WORDS = {
    "from_numpy(negative stride)": (lambda T: T.from_numpy(np.arange(4.)[::-1]), "negative"),
    "numpy(meta)": (lambda T: T.ones(2, device="meta").numpy(), "meta"),
    "np.array(meta)": (lambda T: np.array(T.ones(2, device="meta")), "meta"),
}


@pytest.mark.parametrize("name", list(_NUMPY_WORDS))
def test_numpy_bridge_refusals_in_torchs_words(name):
    fn, word = _NUMPY_WORDS[name]
    want, _ = outcome(fn, torch)
    got, msg = outcome(fn, tracegrad)
    assert want is not None and got is want, f"{name}: torch {want}, tracegrad {got}: {msg[:200]}"
    assert word in msg and "jax" not in msg.lower(), msg


def test_accepted_indices_and_generators_keep_their_values():
    # the index checks leave int32 indices working, with torch's values
    idx = [2, 0, 2]
    for T in (torch, tracegrad):
        i = T.tensor(idx, dtype=T.int32)
        x = T.tensor([1., 2., 3.])
        got = [x.index_select(0, i).tolist(), x.gather(0, i).tolist(),
               T.zeros(3).scatter_add_(0, i, x).tolist(), T.zeros(3).index_add_(0, i, x).tolist()]
        if T is torch:
            want = got
    assert got == want
    # a Generator passed explicitly still drives the draw: same seed, same numbers
    g1, g2 = tracegrad.Generator().manual_seed(3), tracegrad.Generator().manual_seed(3)
    assert tracegrad.randperm(5, generator=g1).tolist() == tracegrad.randperm(5, generator=g2).tolist()
    assert sorted(tracegrad.randperm(5, generator=g1).tolist()) == [0, 1, 2, 3, 4]
