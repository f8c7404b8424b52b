"""Bad-input parity, round 16 (missing and None arguments): a sweep over every Tensor method and
tracegrad function torch also has (~3,700 calls: no arguments, an explicit None, ``dim=1.5``,
``dtype='float32'``, an unknown keyword, an object) left these differences from torch 2.13, fixed
here: the factories and ``new_*`` methods without a size (``zeros()``, ``rand(dtype=...)``,
``x.new_ones()``) made a 0-d tensor where torch's size argument is required (TypeError), as
``tile()``, ``sum_to_size()`` and ``resize_()`` did; ``x.repeat_interleave()`` without repeats
(TypeError) ran the counts-only form, and that form of a float tensor
(``tracegrad.repeat_interleave(x)``) was RuntimeError (NotImplementedError); an explicit None
for ``squeeze``'s dim, ``to_sparse``'s sparse_dim and ``pinverse``'s rcond, and a positional
memory format to ``cpu``/``is_contiguous`` were accepted (TypeError); ``cholesky_inverse``,
``cholesky_solve`` and the deprecated ``cholesky`` of integer tensors computed a result or raised
RuntimeError (torch's kernels: NotImplementedError); ``get_autocast_dtype``/``is_autocast_enabled``
took any device type and ``is_neg`` any object. Each call runs under torch (the oracle) and
tracegrad: the same exception class (or none), no text of the layers below tracegrad; ``_ok``
calls are ones torch accepts, their values compared below."""
import pytest

import tracegrad

from _bad_input_helpers import assert_gist, assert_same_class

torch = pytest.importorskip("torch")


def _x(T):
    return T.ones(2, 2)


CASES = {
    # a size is required (() is the 0-d tensor)
    **{f"{f}()": (lambda f: lambda T: getattr(T, f)())(f) for f in ("empty", "zeros", "ones", "rand", "randn")},
    "zeros(dtype=float64)": lambda T: T.zeros(dtype=T.float64),
    "randn(requires_grad=True)": lambda T: T.randn(requires_grad=True),
    "zeros(())_ok": lambda T: T.zeros(()),
    "ones(size=[])_ok": lambda T: T.ones(size=[]),
    "rand_like(0-d)_ok": lambda T: T.rand_like(T.tensor(1.)).shape,
    **{f"x.{m}()": (lambda m: lambda T: getattr(_x(T), m)())(m)
       for m in ("new_empty", "new_zeros", "new_ones", "sum_to_size", "tile", "resize_")},
    "x.new_zeros(())_ok": lambda T: _x(T).new_zeros(()),
    "x.new_ones(size=(3,))_ok": lambda T: _x(T).new_ones(size=(3,)),
    "x.tile(())_ok": lambda T: _x(T).tile(()),
    "x.sum_to_size(())_ok": lambda T: _x(T).sum_to_size(()),
    "x.resize_(())_ok": lambda T: _x(T).resize_(()).shape,
    # repeat_interleave: the method needs repeats; the counts-only function takes integer counts
    "x.repeat_interleave()": lambda T: T.tensor([1, 2]).repeat_interleave(),
    "x.repeat_interleave(None)": lambda T: _x(T).repeat_interleave(None),
    "x.repeat_interleave(2)_ok": lambda T: T.tensor([1, 2]).repeat_interleave(2),
    "repeat_interleave(float counts)": lambda T: T.repeat_interleave(T.tensor([1., 2.])),
    "repeat_interleave(bool counts)": lambda T: T.repeat_interleave(T.tensor([True, False])),
    "repeat_interleave(2-D float)": lambda T: T.repeat_interleave(_x(T)),
    "repeat_interleave(2-D int)": lambda T: T.repeat_interleave(_x(T).long()),
    "repeat_interleave(counts)_ok": lambda T: T.repeat_interleave(T.tensor([1, 2])),
    # an explicit None where torch's parser has no None
    "x.squeeze(None)": lambda T: _x(T).squeeze(None),
    "x.squeeze(dim=None)": lambda T: _x(T).squeeze(dim=None),
    "x.squeeze_(None)": lambda T: _x(T).squeeze_(None),
    "x.count_nonzero(None)_ok": lambda T: _x(T).count_nonzero(None),
    "x.to_sparse(None)": lambda T: _x(T).to_sparse(None),
    "x.to_sparse(1)_ok": lambda T: _x(T).to_sparse(1).to_dense(),
    "x.pinverse(None)": lambda T: _x(T).pinverse(None),
    "x.cpu(None)": lambda T: _x(T).cpu(None),
    "x.is_contiguous(None)": lambda T: _x(T).is_contiguous(None),
    "x.is_contiguous(memory_format=channels_last)_ok": lambda T: _x(T).is_contiguous(memory_format=T.channels_last),
    # linalg kernels without integer versions
    "cholesky_inverse(int)": lambda T: T.cholesky_inverse(_x(T).int()),
    "cholesky_inverse(bool)": lambda T: _x(T).bool().cholesky_inverse(),
    "cholesky_solve(int)": lambda T: T.cholesky_solve(_x(T).int(), T.eye(2, dtype=T.int32)),
    "x.cholesky() int": lambda T: _x(T).int().cholesky(),
    "cholesky_inverse(eye)_ok": lambda T: T.cholesky_inverse(T.eye(2)),
    # autocast queries and is_neg check their argument
    "get_autocast_dtype('bogus')": lambda T: T.get_autocast_dtype("bogus"),
    "get_autocast_dtype(3)": lambda T: T.get_autocast_dtype(3),
    "is_autocast_enabled('bogus')": lambda T: T.is_autocast_enabled("bogus"),
    "is_autocast_enabled(None)": lambda T: T.is_autocast_enabled(None),
    "is_autocast_enabled()_ok": lambda T: T.is_autocast_enabled(),
    "get_autocast_dtype('cuda')_ok": lambda T: str(T.get_autocast_dtype("cuda")).split(".")[-1],
    "is_neg(3)": lambda T: T.is_neg(3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    assert_same_class(name, CASES[name], torch, tracegrad)


GIST = {
    "zeros()": "zeros() missing 1 required positional arguments: \"size\"",
    "x.new_ones()": "new_ones() missing 1 required positional arguments: \"size\"",
    "x.tile()": "tile() missing 1 required positional arguments: \"dims\"",
    "x.resize_()": "resize_() missing 1 required positional arguments: \"size\"",
    "repeat_interleave(float counts)": "\"repeat_interleave_cpu\" not implemented for 'Float'",
    "x.pinverse(None)": "argument 'rcond'",
    "cholesky_inverse(int)": "\"cholesky_inverse_out_cpu\" not implemented for 'Int'",
    "cholesky_solve(int)": "\"cholesky_solve_cpu\" not implemented for 'Int'",
    "x.cholesky() int": "\"cholesky_cpu\" not implemented for 'Int'",
    "get_autocast_dtype('bogus')": "device type at start of device string: bogus",
    "is_neg(3)": "argument 'input' (position 1) must be Tensor, not int",
}


@pytest.mark.parametrize("name", list(GIST))
def test_message_gist(name):
    assert_gist(name, CASES[name], GIST[name], torch, tracegrad)


@pytest.mark.parametrize("name", [n for n in CASES if n.endswith("_ok")])
def test_accepted_calls_give_torch_values(name):
    def plain(r):
        if hasattr(r, "tolist"):
            return r.tolist(), tuple(r.shape)
        return tuple(r) if isinstance(r, tuple) else r
    assert plain(CASES[name](tracegrad)) == plain(CASES[name](torch))
