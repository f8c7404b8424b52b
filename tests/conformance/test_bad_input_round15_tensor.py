"""Bad-input parity, round 15 (tensor level): a probe over ~500 wrong calls (creation, devices,
shape ops, cat/stack, in-place casts, out=, Python scalars, reductions) left these differences
from torch 2.13, fixed here. Silent wrong results before: a complex ``alpha``/``value``/
``weight``/``beta`` on real tensors (the imaginary part was dropped, with a warning of the layer
below; also masked_fill_/scatter/index_add_ values, a complex 0-d lerp_ weight, pad and
nan_to_num fill values, linspace/logspace complex endpoints with a real dtype) and
``add_``/``sub_`` with a float alpha on integer tensors or a bool alpha on float ones
(torch refuses; tracegrad truncated). Also: a generator, iterator or set given to cat/stack/
hstack (torch's parser TypeError), index_copy's source of another slice shape (RuntimeError,
was IndexError), ``transpose(0, -1)`` of a 0-d tensor (torch allows it), device strings with a
zero-padded ordinal or an index given twice (RuntimeError) and ``abs`` of a complex tensor into a
complex or wider real ``out=`` (torch allows it); ``+`` of a bool tensor, bool einsum
contractions (torch's bmm has no bool kernel) and bool ``linalg.cross`` (NotImplementedError,
the last one was a TypeError in the words of the layer below), float16/bfloat16 inputs to
special.erfcx/log_ndtr/zeta, cdist and quantile (torch has no such CPU kernel; a result before), and a one-operand bool einsum
that sums (torch counts in int64; tracegrad gave a bool). Last, ``out=`` of another shape:
torch's factories and random draws resize it without the deprecation warning tracegrad gave
(and linspace/logspace keep its shape for the same element count). Each call runs under torch (the oracle) and
tracegrad: the same exception class (or none), no text of the layers below tracegrad; the
``_ok`` calls are ones torch accepts."""
import warnings

import pytest

import tracegrad

from _bad_input_helpers import assert_gist, assert_same_class

torch = pytest.importorskip("torch")


def _f(T, *shape):
    return T.ones(*(shape or (2,)))


def _l(T):
    return T.ones(2, dtype=T.long)


def _c(T):
    return T.ones(2, dtype=T.complex64)


def _m(T, *shape):
    return T.ones(*(shape or (2, 2)))


def _abs_out(T, dt, fn="abs", x="complex64"):
    return getattr(T, fn)(T.tensor([3 + 4j], dtype=getattr(T, x)), out=T.empty(1, dtype=getattr(T, dt)))


CASES = {
    # alpha: no complex one for real tensors, no float one for integer ones, in place too
    "add(alpha 1j)": lambda T: T.add(_f(T), _f(T), alpha=1j),
    "add(alpha 1+0j)": lambda T: T.add(_f(T), _f(T), alpha=1 + 0j),
    "add(number other, alpha 1j)": lambda T: T.add(_f(T), 1, alpha=1j),
    "sub(alpha 1j)": lambda T: T.sub(_f(T), _f(T), alpha=1j),
    "rsub(alpha 1j)": lambda T: T.rsub(_f(T), _f(T), alpha=1j),
    "Tensor.add_(alpha 1j)": lambda T: _f(T).add_(_f(T), alpha=1j),
    "Tensor.sub_(alpha 2j)": lambda T: _f(T).sub_(_f(T), alpha=2j),
    "long.add_(alpha 0.5)": lambda T: _l(T).add_(_l(T), alpha=0.5),
    "long.sub_(alpha 1.5)": lambda T: _l(T).sub_(1, alpha=1.5),
    "float.add_(alpha True)": lambda T: _f(T).add_(_f(T), alpha=True),
    "long.add_(alpha 1j)": lambda T: _l(T).add_(_l(T), alpha=1j),
    "add(complex, alpha 1j)_ok": lambda T: T.add(_c(T), _f(T), alpha=1j),
    "add(float, 1j, alpha 1j)_ok": lambda T: T.add(_f(T), 1j, alpha=1j),
    "long.add_(alpha 2)_ok": lambda T: _l(T).add_(_l(T), alpha=2),
    "float.add_(alpha 0.5)_ok": lambda T: _f(T).add_(_l(T), alpha=0.5),
    "bool.add_(alpha True)_ok": lambda T: T.ones(2, dtype=T.bool).add_(T.ones(2, dtype=T.bool), alpha=True),
    # the Scalar value/weight/beta arguments: an imaginary part needs complex tensors
    "addcmul(value 1j)": lambda T: T.addcmul(_f(T), _f(T), _f(T), value=1j),
    "addcdiv(value 1j)": lambda T: T.addcdiv(_f(T), _f(T), _f(T), value=1j),
    "long.addcmul(value 1j)": lambda T: T.addcmul(_l(T), _l(T), _l(T), value=1j),
    "Tensor.addcmul_(value 1j)": lambda T: _f(T).addcmul_(_f(T), _f(T), value=1j),
    "Tensor.addcdiv_(value 1j)": lambda T: _f(T).addcdiv_(_f(T), _f(T), value=1j),
    "lerp(weight 1j)": lambda T: T.lerp(_f(T), _f(T), 1j),
    "Tensor.lerp_(weight 1j)": lambda T: _f(T).lerp_(_f(T), 1j),
    "addmm(beta 1j)": lambda T: T.addmm(_m(T), _m(T), _m(T), beta=1j),
    "addmm(alpha 1j)": lambda T: T.addmm(_m(T), _m(T), _m(T), alpha=1j),
    "Tensor.addmm_(alpha 1j)": lambda T: _m(T).addmm_(_m(T), _m(T), alpha=1j),
    "addmv(alpha 1j)": lambda T: T.addmv(_f(T), _m(T), _f(T), alpha=1j),
    "addr(beta 1j)": lambda T: T.addr(_m(T), _f(T), _f(T), beta=1j),
    "addbmm(alpha 1j)": lambda T: T.addbmm(_m(T), _m(T, 1, 2, 2), _m(T, 1, 2, 2), alpha=1j),
    "baddbmm(alpha 1j)": lambda T: T.baddbmm(_m(T, 1, 2, 2), _m(T, 1, 2, 2), _m(T, 1, 2, 2), alpha=1j),
    "lerp(weight 1+0j)_ok": lambda T: T.lerp(_f(T), _f(T), 1 + 0j),
    "addcmul(value 1+0j)_ok": lambda T: T.addcmul(_f(T), _f(T), _f(T), value=1 + 0j),
    "addcmul(complex, value 1j)_ok": lambda T: T.addcmul(_c(T), _f(T), _f(T), value=1j),
    "addmm(complex, alpha 1j)_ok": lambda T: T.addmm(*(T.ones(2, 2, dtype=T.complex64),) * 3, alpha=1j),
    "long.addcmul(value 0.5)_ok": lambda T: T.addcmul(_l(T), _l(T), _l(T), value=0.5),
    "masked_fill_(value 1j)": lambda T: _f(T).masked_fill_(T.ones(2, dtype=T.bool), 1j),
    "scatter_(value 1j)": lambda T: _f(T).scatter_(0, T.tensor([0]), 1j),
    "scatter(value 1j)": lambda T: T.scatter(_f(T), 0, T.tensor([0]), value=1j),
    "index_add_(alpha 1j)": lambda T: _f(T).index_add_(0, T.tensor([0]), T.ones(1), alpha=1j),
    "lerp_(complex 0-d weight)": lambda T: _f(T).lerp_(_f(T), T.tensor(1j)),
    "F.pad(value 1j)": lambda T: T.nn.functional.pad(_f(T), (1, 1), value=1j),
    "nan_to_num(nan 1j)": lambda T: T.nan_to_num(_f(T), nan=1j),
    "nan_to_num(posinf 1j)": lambda T: T.nan_to_num(_f(T), posinf=1j),
    "linspace(0, 1j, dtype float32)": lambda T: T.linspace(0, 1j, 3, dtype=T.float32),
    "logspace(1j, 1, dtype float64)": lambda T: T.logspace(1j, 1, 3, dtype=T.float64),
    "masked_fill_(complex, 1j)_ok": lambda T: _c(T).masked_fill_(T.ones(2, dtype=T.bool), 1j),
    "scatter_(complex, value 1j)_ok": lambda T: _c(T).scatter_(0, T.tensor([0]), 1j),
    "linspace(0, 1j)_ok": lambda T: T.linspace(0, 1j, 3),
    "linspace(0, 1j, complex128)_ok": lambda T: T.linspace(0, 1j, 3, dtype=T.complex128),
    # abs of a complex tensor: a real out= casts, a complex one must have the input's dtype
    "abs(complex64, out complex64)_ok": lambda T: _abs_out(T, "complex64"),
    "absolute(complex64, out complex64)_ok": lambda T: _abs_out(T, "complex64", "absolute"),
    "abs(complex64, out float64)_ok": lambda T: _abs_out(T, "float64"),
    "abs(complex64, out float16)_ok": lambda T: _abs_out(T, "float16"),
    "abs(complex128, out complex128)_ok": lambda T: _abs_out(T, "complex128", x="complex128"),
    "abs(complex64, out complex128)": lambda T: _abs_out(T, "complex128"),
    "abs(complex128, out complex64)": lambda T: _abs_out(T, "complex64", x="complex128"),
    "abs(complex64, out int64)": lambda T: _abs_out(T, "int64"),
    "abs(float32, out complex64)": lambda T: _abs_out(T, "complex64", x="float32"),
    "abs(float32, out float64)": lambda T: _abs_out(T, "float64", x="float32"),
    # cat/stack take a sequence: a generator, iterator, set or dict is the parser's TypeError
    "cat(generator)": lambda T: T.cat(t for t in [_f(T)]),
    "cat(list_iterator)": lambda T: T.cat(iter([_f(T), _f(T)])),
    "cat(set)": lambda T: T.cat({_f(T)}),
    "concat(dict)": lambda T: T.concat({"a": _f(T)}),
    "stack(generator)": lambda T: T.stack(t for t in [_f(T)]),
    "hstack(generator)": lambda T: T.hstack(t for t in [_f(T)]),
    "vstack(map)": lambda T: T.vstack(map(lambda t: t, [_f(T)])),
    "cat(tuple)_ok": lambda T: T.cat((_f(T), _f(T))),
    "stack(unbind result)_ok": lambda T: T.stack(_m(T).unbind(0)),
    # index_copy: slices of another shape are RuntimeError, counts and ranks IndexError
    "index_copy(source slice 3 for 2)": lambda T: _m(T).index_copy(0, T.tensor([0]), _m(T, 1, 3)),
    "index_copy_(dim 1, source slice 3 for 2)": lambda T: _m(T).index_copy_(1, T.tensor([0]), _m(T, 3, 1)),
    "index_copy(2 sources for 1 index)": lambda T: _m(T).index_copy(0, T.tensor([0]), _m(T, 2, 2)),
    "index_copy(source of rank 1)": lambda T: _m(T).index_copy(0, T.tensor([0]), _f(T)),
    "index_copy(source 1x2)_ok": lambda T: _m(T).index_copy(0, T.tensor([1]), _m(T, 1, 2)),
    # a 0-d tensor's one implicit dim is 0 or -1
    "0-d.transpose(0, -1)_ok": lambda T: T.tensor(1.).transpose(0, -1),
    "0-d.swapaxes(0, 0)_ok": lambda T: T.tensor(1.).swapaxes(0, 0),
    "0-d.swapdims(-1, 0)_ok": lambda T: T.tensor(1.).swapdims(-1, 0),
    "0-d.transpose_(0, -1)_ok": lambda T: T.tensor(1.).transpose_(0, -1),
    "transpose(0-d, 0, 0)_ok": lambda T: T.transpose(T.tensor(1.), 0, 0),
    "0-d.transpose(1, 0)": lambda T: T.tensor(1.).transpose(1, 0),
    "0-d.transpose(0, -2)": lambda T: T.tensor(1.).transpose(0, -2),
    # device strings: plain decimal ordinals, one index only
    "device('cuda:01')": lambda T: T.device("cuda:01"),
    "device('cpu:00')": lambda T: T.device("cpu:00"),
    "device('cpu:+1')": lambda T: T.device("cpu:+1"),
    "device('cpu:1 ')": lambda T: T.device("cpu:1 "),
    "device('cpu:0', 0)": lambda T: T.device("cpu:0", 0),
    "device('cpu:0', None)": lambda T: T.device("cpu:0", None),
    "zeros(device='cpu:01')": lambda T: T.zeros(1, device="cpu:01"),
    "Tensor.to('cpu:00')": lambda T: _f(T).to("cpu:00"),
    "device('cpu', 0)_ok": lambda T: T.device("cpu", 0),
    "device('cpu:10')_ok": lambda T: T.device("cpu:10"),
    "device('cpu', None)_ok": lambda T: T.device("cpu", None),
    # bool tensors: no unary +, no bmm (einsum's contractions), no cross kernel
    "+bool": lambda T: +T.ones(2, dtype=T.bool),
    "+long_ok": lambda T: +_l(T),
    "einsum('i,i->', bool)": lambda T: T.einsum("i,i->", *(T.ones(2, dtype=T.bool),) * 2),
    "einsum('ij,jk', bool)": lambda T: T.einsum("ij,jk", *(T.ones(2, 2, dtype=T.bool),) * 2),
    "einsum('i,j->ij', bool)_ok": lambda T: T.einsum("i,j->ij", *(T.ones(2, dtype=T.bool),) * 2),
    "einsum('ij->', bool)_ok": lambda T: T.einsum("ij->", T.ones(2, 2, dtype=T.bool)),
    "linalg.cross(bool)": lambda T: T.linalg.cross(*(T.ones(3, dtype=T.bool),) * 2),
    # float16/bfloat16: kernels torch's CPU build does not have
    "special.erfcx(float16)": lambda T: T.special.erfcx(T.ones(2, dtype=T.float16)),
    "special.log_ndtr(bfloat16)": lambda T: T.special.log_ndtr(T.ones(2, dtype=T.bfloat16)),
    "special.zeta(float16, 2.)": lambda T: T.special.zeta(T.ones(2, dtype=T.float16), 2.),
    "quantile(float16)": lambda T: T.quantile(T.ones(2, dtype=T.float16), 0.5),
    "nanquantile(bfloat16)": lambda T: T.nanquantile(T.ones(2, dtype=T.bfloat16), 0.5),
    "cdist(float16)": lambda T: T.cdist(*(T.ones(2, 2, dtype=T.float16),) * 2),
    "special.erfcx(float64)_ok": lambda T: T.special.erfcx(T.ones(2, dtype=T.float64)),
    "special.erfcx(int64)_ok": lambda T: T.special.erfcx(_l(T)),
    "stft(bool)": lambda T: T.stft(T.ones(8, dtype=T.bool), 4, return_complex=True),
    "stft(bool, replicate)": lambda T: T.stft(T.ones(8, dtype=T.bool), 4, return_complex=True, pad_mode="replicate"),
    "stft(bool, center=False)": lambda T: T.stft(T.ones(8, dtype=T.bool), 4, return_complex=True, center=False),
    "stft(int64)": lambda T: T.stft(T.ones(8, dtype=T.long), 4, return_complex=True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    assert_same_class(name, CASES[name], torch, tracegrad)


GIST = {
    "add(alpha 1j)": "For non-complex input tensors, argument alpha must not be a complex number",
    "Tensor.sub_(alpha 2j)": "For non-complex input tensors, argument alpha must not be a complex number",
    "long.add_(alpha 0.5)": "For integral input tensors, argument alpha must not be a floating point number",
    "float.add_(alpha True)": "Boolean alpha only supported for Boolean results",
    "addcmul(value 1j)": "value cannot be converted to type float without overflow",
    "lerp(weight 1j)": "value cannot be converted to type float without overflow",
    "baddbmm(alpha 1j)": "value cannot be converted to type float without overflow",
    "long.addcmul(value 1j)": "value cannot be converted to type int64_t without overflow",
    "scatter_(value 1j)": "value cannot be converted to type float without overflow",
    "special.erfcx(float16)": "\"erfcx_cpu\" not implemented for 'Half'",
    "quantile(float16)": "input tensor must be either float or double dtype",
    "F.pad(value 1j)": "must be float, not complex",
    "linspace(0, 1j, dtype float32)": "can't be safely cast to passed dtype Float",
    "abs(complex64, out complex128)": "Found dtype ComplexDouble but expected ComplexFloat",
    "abs(complex64, out int64)": "result type Float can't be cast to the desired output type Long",
    "cat(generator)": "must be tuple of Tensors, not generator",
    "index_copy(source slice 3 for 2)": "Source/destination tensor must have same slice shapes",
    "device('cuda:01')": "Invalid device string: 'cuda:01'",
    "device('cpu:0', 0)": "must not include an index because index was passed explicitly",
}


@pytest.mark.parametrize("name", list(GIST))
def test_message_gist(name):
    assert_gist(name, CASES[name], GIST[name], torch, tracegrad)


def test_accepted_calls_keep_torchs_values():
    got = {}
    for T in (torch, tracegrad):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = got[T] = []
            r.append(T.abs(T.tensor([3 + 4j, -1j]), out=T.empty(2, dtype=T.complex64)).tolist())
            r.append(T.abs(T.tensor([3 + 4j]), out=T.empty(1, dtype=T.float64)).dtype is T.float64)
            x = T.tensor([1, 2])
            r.append(x.add_(T.tensor([3, 4]), alpha=2).tolist())
            r.append(T.tensor([1., 2.]).sub_(T.tensor([1, 1]), alpha=0.5).tolist())
            r.append(T.add(T.tensor([1 + 1j]), T.tensor([2.]), alpha=1j).tolist())
            r.append(T.lerp(T.tensor([0., 2.]), T.tensor([4., 4.]), 0.5 + 0j).tolist())
            r.append(T.cat((T.tensor([1.]), T.tensor([2, 3]))).tolist())
            r.append(T.ones(2, 2).index_copy(0, T.tensor([1]), T.tensor([[5., 6.]])).tolist())
            a = T.tensor(2., requires_grad=True)
            b = a.transpose(0, -1)
            (b * 3).backward()
            r.append((tuple(b.shape), b._base is a, a.grad.item()))
            r.append(str(T.device("cpu", 0)))
            b = T.tensor([[True, False], [True, True]])
            for eq in ("ij->", "ii", "ij->i", "ii->i"):      # a bool operand summed counts, in int64
                e = T.einsum(eq, b)
                r.append((eq, str(e.dtype).split(".")[-1], e.tolist()))
    assert got[tracegrad] == got[torch]


# out= of another shape: torch's factories and random draws resize it silently (linspace and
# logspace keep its shape when the element count matches, as arange/range); the other ops
# resize with the deprecation warning
_OUT_RESIZE = {
    "zeros": lambda T: T.zeros(3, out=T.empty(5)),
    "full(same count)": lambda T: T.full((2, 2), 1., out=T.empty(4)),
    "eye": lambda T: T.eye(2, out=T.empty(5)),
    "rand(same count)": lambda T: T.rand(2, 2, out=T.empty(4)),
    "randint": lambda T: T.randint(3, (3,), out=T.empty(5, dtype=T.long)),
    "randperm": lambda T: T.randperm(3, out=T.empty(5, dtype=T.long)),
    "normal(size)": lambda T: T.normal(0., 1., (3,), out=T.empty(5)),
    "bernoulli": lambda T: T.bernoulli(T.ones(2, 2) / 2, out=T.empty(4)),
    "multinomial": lambda T: T.multinomial(T.ones(2), 1, out=T.empty(3, dtype=T.long)),
    "linspace(same count)": lambda T: T.linspace(0, 1, 4, out=T.empty(2, 2)),
    "logspace(other count)": lambda T: T.logspace(0, 1, 3, out=T.empty(5)),
    "normal(tensors)": lambda T: T.normal(T.zeros(2), T.ones(2), out=T.empty(3)),
    "add": lambda T: T.add(T.ones(2), T.ones(2), out=T.empty(3)),
    "cat(empty out)": lambda T: T.cat([T.ones(2)], out=T.empty(0)),
}


@pytest.mark.parametrize("name", list(_OUT_RESIZE))
def test_out_resize_warns_as_torch(name):
    seen = {}
    for T in (torch, tracegrad):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            r = _OUT_RESIZE[name](T)
        seen[T] = (tuple(r.shape), [("resized" in str(w.message)) for w in rec])
    assert seen[tracegrad] == seen[torch]
