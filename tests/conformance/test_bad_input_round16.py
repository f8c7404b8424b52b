"""Bad-input parity, round 16 (tensor level): a probe over ~1,900 calls (every Tensor method given
an unknown keyword, nine positionals or an object; the in-place random draws' keywords, bounds
and dtypes; Generator seeds and states; sparse COO constructors and accessors; autograd misuse
through 30 node kinds, which matched torch already) left these differences from torch 2.13, fixed
here: ``x.uniform_(to=3)`` drew from [0, 1) (the keyword was dropped) and ``from=`` was refused,
while unknown keywords of the in-place draws (``uniform_(from_=)``, ``random_(high=)``) were
accepted silently; uniform_ bounds outside the dtype (inf, nan, ``1e5`` for float16) overflowed
to inf or raised OverflowError; ``exponential_``/``random_``/``geometric_``/``bernoulli_``/
``log_normal_``/``cauchy_`` of complex (and bool, integer) tensors drew a result or raised
KeyError; the deprecated ``Tensor.resize``/``resize_as`` changed the element count; the
methods whose only argument is an int list (``squeeze``, ``squeeze_``, ``count_nonzero``,
``broadcast_to``, ``hsplit``/``vsplit``/``dsplit``) refused it unpacked (``x.squeeze(0, 2)``);
``to()`` with five positionals looked for an accelerator; ``size(0)``/``stride(0)`` of a 0-d
tensor said "tuple index out of range"; ``coalesce``/``indices``/``values``/``_nnz`` of a dense
tensor were AttributeErrors; ``manual_seed`` refused int subclasses (an IntEnum member); and
``fork_rng(devices=0)`` was accepted. Each call runs under torch (the oracle) and tracegrad:
the same exception class (or none), no text of the layers below tracegrad; ``_ok`` calls are
ones torch accepts, and the values they give are compared below."""
import enum

import pytest

import tracegrad

from _bad_input_helpers import assert_gist, assert_same_class

torch = pytest.importorskip("torch")

INF, NAN = float("inf"), float("nan")


def _x(T):
    return T.ones(1, 2, 1, 4)


def _z(T, dt="float32"):
    return T.zeros(4, dtype=getattr(T, dt))


CASES = {
    # the one int-list argument of a method, unpacked (the function forms keep one argument)
    "squeeze(0, 2)_ok": lambda T: _x(T).squeeze(0, 2),
    "squeeze_(0, 2)_ok": lambda T: _x(T).squeeze_(0, 2),
    "count_nonzero(0, 1)_ok": lambda T: _x(T).count_nonzero(0, 1),
    "broadcast_to(2, 1, 2, 1, 4)_ok": lambda T: _x(T).broadcast_to(2, 1, 2, 1, 4),
    "hsplit(1, 1)_ok": lambda T: _x(T).hsplit(1, 1),
    "dsplit(1, 3)_ok": lambda T: _x(T).dsplit(1, 3),
    "vsplit(1, 1)_ok": lambda T: _x(T).vsplit(1, 1),
    "tracegrad.squeeze(x, 0, 2)": lambda T: T.squeeze(_x(T), 0, 2),
    "tracegrad.count_nonzero(x, 0, 1)": lambda T: T.count_nonzero(_x(T), 0, 1),
    "squeeze(0, dim=2)": lambda T: _x(T).squeeze(0, dim=2),
    # the deprecated out-of-place resize keeps the element count
    "resize(3)": lambda T: _x(T).resize(3),
    "resize_as(ones(3))": lambda T: _x(T).resize_as(T.ones(3)),
    "resize(2, 4)_ok": lambda T: _x(T).resize(2, 4),
    "to(five positionals)": lambda T: T.ones(2).to(1, 1, 1, 1, 1),
    "to('cpu', float64, False, False)_ok": lambda T: T.ones(2).to("cpu", T.float64, False, False),
    # one dim of a 0-d tensor
    "size(0) of 0-d": lambda T: T.tensor(2.).size(0),
    "size(1) of 0-d": lambda T: T.tensor(2.).size(1),
    "stride(-1) of 0-d": lambda T: T.tensor(2.).stride(-1),
    "size('a') of 0-d": lambda T: T.tensor(2.).size("a"),
    # sparse accessors of a dense tensor
    "coalesce(dense)": lambda T: T.ones(2).coalesce(),
    "is_coalesced(dense)": lambda T: T.ones(2).is_coalesced(),
    "indices(dense)": lambda T: T.ones(2).indices(),
    "values(dense)": lambda T: T.ones(2).values(),
    "_indices(dense)": lambda T: T.ones(2)._indices(),
    "_values(dense)": lambda T: T.ones(2)._values(),
    "_nnz(dense)": lambda T: T.ones(2)._nnz(),
    "values(sparse)_ok": lambda T: T.tensor([0., 2.]).to_sparse().values(),
    # the in-place draws' keywords are torch's names only
    "uniform_(from_=2)": lambda T: _z(T).uniform_(from_=2.),
    "uniform_(a=2)": lambda T: _z(T).uniform_(a=2.),
    "uniform_(1, from=0)": lambda T: _z(T).uniform_(1., **{"from": 0.}),
    "uniform_(0, 1, 2)": lambda T: _z(T).uniform_(0., 1., 2.),
    "random_(high=5)": lambda T: _z(T).random_(high=5),
    "random_(to=None)": lambda T: _z(T).random_(to=None),
    "normal_(loc=1)": lambda T: _z(T).normal_(loc=1.),
    "exponential_(rate=2)": lambda T: _z(T).exponential_(rate=2.),
    "cauchy_(scale=1)": lambda T: _z(T).cauchy_(scale=1.),
    # uniform_ bounds: finite values of the dtype, a range no wider than its largest value
    "uniform_(0, inf)": lambda T: _z(T).uniform_(0., INF),
    "uniform_(nan, 1)": lambda T: _z(T).uniform_(NAN, 1.),
    "uniform_(-inf, 0) float64": lambda T: _z(T, "float64").uniform_(-INF, 0.),
    "uniform_(0, 1e5) float16": lambda T: _z(T, "float16").uniform_(0., 1e5),
    "uniform_(0, inf) bfloat16": lambda T: _z(T, "bfloat16").uniform_(0., INF),
    "uniform_(0, nan) complex64": lambda T: _z(T, "complex64").uniform_(0., NAN),
    "uniform_(-3e38, 3e38)": lambda T: _z(T).uniform_(-3e38, 3e38),
    "uniform_(-3e38, 3e38) float64_ok": lambda T: _z(T, "float64").uniform_(-3e38, 3e38).shape,
    "nn.init.uniform_(b=inf)": lambda T: T.nn.init.uniform_(_z(T), a=0., b=INF),
    # draws whose torch kernel takes real (floating) tensors only
    "exponential_(int64)": lambda T: _z(T, "int64").exponential_(),
    "exponential_(bool)": lambda T: _z(T, "bool").exponential_(),
    "exponential_(complex64)": lambda T: _z(T, "complex64").exponential_(),
    "random_(complex64)": lambda T: _z(T, "complex64").random_(),
    "random_(3) complex64": lambda T: _z(T, "complex64").random_(3),
    "geometric_(complex64)": lambda T: _z(T, "complex64").geometric_(0.5),
    "geometric_(bool)": lambda T: _z(T, "bool").geometric_(0.5),
    "bernoulli_(complex64)": lambda T: _z(T, "complex64").bernoulli_(0.5),
    "bernoulli_(tensor p) complex64": lambda T: _z(T, "complex64").bernoulli_(T.full((4,), 0.5)),
    "log_normal_(complex64)": lambda T: _z(T, "complex64").log_normal_(),
    "cauchy_(complex64)": lambda T: _z(T, "complex64").cauchy_(),
    "exponential_(float16)_ok": lambda T: str(_z(T, "float16").exponential_().dtype)[-7:],
    "geometric_(int64)_ok": lambda T: str(_z(T, "int64").geometric_(0.5).dtype)[-5:],
    # seeds: ints and their subclasses; numpy integers are torch's TypeError, others RuntimeError
    "Generator.manual_seed(IntEnum)_ok": lambda T: T.Generator().manual_seed(enum.IntEnum("E", "A B").B).initial_seed(),
    "Generator.manual_seed(bool)": lambda T: T.Generator().manual_seed(True),
    "fork_rng(devices=0)": lambda T: T.random.fork_rng(devices=0).__enter__(),
    "fork_rng(devices=[])_ok": lambda T: T.random.fork_rng(devices=[]).__enter__(),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    assert_same_class(name, CASES[name], torch, tracegrad)


GIST = {
    "resize(3)": "autograd's resize can only change the shape of a given tensor, while preserving the number of "
                 "elements",
    "to(five positionals)": "to() takes from 0 to 4 positional arguments but 5 were given",
    "size(0) of 0-d": "Dimension specified as 0 but tensor has no dimensions",
    "stride(-1) of 0-d": "Dimension specified as -1 but tensor has no dimensions",
    "coalesce(dense)": "coalesce expected sparse coordinate tensor layout but got Strided",
    "values(dense)": "values expected sparse tensor layout but got Strided",
    "_nnz(dense)": "Could not run 'aten::_nnz' with arguments from the 'CPU' backend",
    "uniform_(from_=2)": "unexpected keyword argument 'from_'",
    "uniform_(0, inf)": "to is out of bounds for float",
    "uniform_(nan, 1)": "from is out of bounds for float",
    "uniform_(-inf, 0) float64": "from is out of bounds for double",
    "uniform_(0, 1e5) float16": "to is out of bounds for c10::Half",
    "uniform_(-3e38, 3e38)": "uniform_ expects to-from <= std::numeric_limits<Float>::max()",
    "exponential_(int64)": "Exponential distribution is a continuous probability distribution. dtype must be a "
                           "floating point but you specified Long",
    "random_(complex64)": "\"random_kernel_cpu\" not implemented for 'ComplexFloat'",
    "random_(3) complex64": "check_random_bounds handles only integral, floating-point and boolean types",
    "geometric_(bool)": "\"geometric_cpu\" not implemented for 'Bool'",
    "bernoulli_(tensor p) complex64": "\"bernoulli_tensor_cpu_self_\" not implemented for 'ComplexFloat'",
    "log_normal_(complex64)": "\"log_normal_cpu\" not implemented for 'ComplexFloat'",
}


@pytest.mark.parametrize("name", list(GIST))
def test_message_gist(name):
    assert_gist(name, CASES[name], GIST[name], torch, tracegrad)


def _both(fn):
    """``fn(torch)`` and ``fn(tracegrad)``, each result as nested Python lists."""
    def plain(r):
        return [plain(v) for v in r] if isinstance(r, (tuple, list)) else r.tolist()
    return plain(fn(torch)), plain(fn(tracegrad))


def test_unpacked_int_lists_and_resize_give_torch_values():
    x = [[[[1., 0., 2., 0.]], [[0., 3., 0., 4.]]]]          # shape (1, 2, 1, 4)
    for fn in (lambda T: T.tensor(x).squeeze(0, 2), lambda T: T.tensor(x).squeeze_(2, 0),
               lambda T: T.tensor(x).count_nonzero(0, 3), lambda T: T.tensor(x).broadcast_to(2, 1, 2, 1, 4),
               lambda T: T.tensor(x).hsplit(1, 1), lambda T: T.tensor(x).dsplit(1, 3),
               lambda T: T.tensor(x).resize(2, 4), lambda T: T.tensor(x).resize_as(T.ones(4, 2))):
        want, got = _both(fn)
        assert got == want
    # the shape of each piece too (an empty middle piece of hsplit)
    assert [tuple(p.shape) for p in tracegrad.tensor(x).hsplit(1, 1)] == [(1, 1, 1, 4), (1, 0, 1, 4), (1, 1, 1, 4)]


def test_draw_keywords_and_seeds_are_honoured():
    # uniform_(to=...) and uniform_(from=..., to=...) draw in torch's range (to= was dropped before)
    tracegrad.manual_seed(0)
    a = tracegrad.zeros(64).uniform_(to=3.)
    b = tracegrad.zeros(64).uniform_(**{"from": -3., "to": -2.})
    assert 0 <= a.min().item() and a.max().item() < 3 and a.max().item() > 1
    assert -3 <= b.min().item() and b.max().item() < -2
    c = tracegrad.zeros(64).random_(3, to=5)
    assert set(c.tolist()) == {3., 4.}
    # an IntEnum seed is its int: the same stream as the plain int
    g1, g2 = tracegrad.Generator().manual_seed(enum.IntEnum("E", "A B").B), tracegrad.Generator().manual_seed(2)
    assert g1.initial_seed() == 2
    assert tracegrad.rand(3, generator=g1).tolist() == tracegrad.rand(3, generator=g2).tolist()
    # the refused calls leave the tensor as it was
    z = tracegrad.zeros(2)
    with pytest.raises(TypeError):
        z.uniform_(from_=2.)
    with pytest.raises(RuntimeError):
        z.uniform_(0., INF)
    assert z.tolist() == [0., 0.]
