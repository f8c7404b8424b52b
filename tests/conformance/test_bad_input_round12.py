"""Bad-input parity, round 12: a probe over ~1,240 wrong calls (keyword aliases and surplus
positionals, out= misuse and aliasing, index tensors of every dtype, empty tensors, dtype
arguments as strings or NumPy dtypes, device strings, Python conversions of multi-element
tensors, autograd misuse, nn layers fed the wrong input, the module containers, DataLoader and
samplers, torch.distributions with validate_args) left these differences from torch 2.13, fixed
here. Each call runs under torch (the oracle) and tracegrad: the same exception class (or none),
no text of the layers below tracegrad; the ``_ok`` calls are ones torch accepts."""
import numpy as np
import pytest

import tracegrad

from _bad_input_helpers import assert_same_class

torch = pytest.importorskip("torch")


def _set_grad(T, value):
    x = T.ones(2, 3, requires_grad=True)
    x.grad = value


def _with_grad(T):
    p = T.nn.Parameter(T.ones(2))
    p.grad = T.full((2,), 3.)
    return p


def _aliased(T, fn):
    x = T.ones(3)
    return fn(T, x)


CASES = {
    # a device index on the CPU is the CPU, as torch's single CPU device
    "to('cpu:1')_ok": lambda T: T.ones(2).to("cpu:1"),
    "to('cpu:7', float64)_ok": lambda T: T.ones(2).to("cpu:7", T.float64),
    # NumPy dtypes are not torch dtypes: TypeError from to()'s parser
    "to(np.float32)": lambda T: T.ones(2).to(np.float32),
    "to(np.dtype('float32'))": lambda T: T.ones(2).to(np.dtype("float32")),
    "to(dtype=np.float64)": lambda T: T.ones(2).to(dtype=np.float64),
    "to('cpu', np.float64)": lambda T: T.ones(2).to("cpu", np.float64),
    "to(float)_ok": lambda T: T.ones(2).to(float),
    # cat/stack refuse any overlap of out= with an input, a full one too
    "cat([x, x], out=x)": lambda T: _aliased(T, lambda T, x: T.cat([x, x], out=x)),
    "cat([x, y], out=x)": lambda T: _aliased(T, lambda T, x: T.cat([x, T.ones(3)], out=x)),
    "stack([x], out=x)": lambda T: _aliased(T, lambda T, x: T.stack([x], out=x)),
    "hstack([x, x], out=x)": lambda T: _aliased(T, lambda T, x: T.hstack([x, x], out=x)),
    "cat([x[:1]], out=x[1:])_ok": lambda T: _aliased(T, lambda T, x: T.cat([x[:1]], out=x[1:])),
    # elementwise kernels never resize an out= that is one of their inputs
    "add(x, y2d, out=x)": lambda T: _aliased(T, lambda T, x: T.add(x, T.ones(2, 3), out=x)),
    "add(y2d, x, out=x)": lambda T: _aliased(T, lambda T, x: T.add(T.ones(2, 3), x, out=x)),
    "mul(x, y2d, out=x)": lambda T: _aliased(T, lambda T, x: T.mul(x, T.ones(2, 3), out=x)),
    "clamp(x, min=y2d, out=x)": lambda T: _aliased(T, lambda T, x: T.clamp(x, min=T.zeros(2, 3), out=x)),
    "where(c, x, y2d, out=x)": lambda T: _aliased(
        T, lambda T, x: T.where(T.ones(2, 3, dtype=T.bool), x, T.ones(2, 3), out=x)),
    "add(x, x, out=x)_ok": lambda T: _aliased(T, lambda T, x: T.add(x, x, out=x)),
    "add(x, y2d, out=other)_ok": lambda T: _aliased(T, lambda T, x: T.add(x, T.ones(2, 3), out=T.ones(3))),
    "add(x, y2d, out=x.view(3))_ok": lambda T: _aliased(T, lambda T, x: T.add(x, T.ones(2, 3), out=x.view(3))),
    "mm(x, y, out=x)_ok": lambda T: (lambda x: T.mm(x, T.ones(3, 2), out=x))(T.ones(2, 3)),
    "sum(x, 0, out=x)_ok": lambda T: (lambda x: T.sum(x, 0, out=x))(T.ones(2, 3)),
    # .grad on another device type
    "grad = meta tensor": lambda T: _set_grad(T, T.ones(2, 3, device="meta")),
    "grad = cpu tensor_ok": lambda T: _set_grad(T, T.ones(2, 3)),
    # nll_loss / cross_entropy with a 0-d target against a batch
    "nll_loss((2,3), 0-d)": lambda T: T.nn.functional.nll_loss(T.ones(2, 3), T.tensor(1)),
    "cross_entropy((2,3), 0-d)": lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.tensor(1)),
    "nll_loss((0,3), 0-d)": lambda T: T.nn.functional.nll_loss(T.ones(0, 3), T.tensor(1)),
    "nll_loss((3,), 0-d)_ok": lambda T: T.nn.functional.nll_loss(T.ones(3), T.tensor(1)),
    # index tensors: long, int, byte (a mask) or bool only
    "x[int8 tensor]": lambda T: T.ones(3)[T.tensor([0, 1], dtype=T.int8)],
    "x[:, int16 tensor]": lambda T: T.ones(2, 3)[:, T.tensor([0, 1], dtype=T.int16)],
    "x[uint16 tensor] = 1": lambda T: T.ones(3).__setitem__(T.tensor([0, 1], dtype=T.uint16), 1.),
    "index_put_((int8,), v)": lambda T: T.ones(3).index_put_((T.tensor([0], dtype=T.int8),), T.tensor(1.)),
    "x[int32 tensor]_ok": lambda T: T.ones(3)[T.tensor([0, 1], dtype=T.int32)],
    "x[int8 0-d]_ok": lambda T: T.ones(3)[T.tensor(1, dtype=T.int8)],
    # one value through a uint8 mask goes to masked_fill_, which wants a bool mask
    "x[uint8 mask] = tensor(1.)": lambda T: T.ones(3).__setitem__(T.tensor([1, 0, 1], dtype=T.uint8), T.tensor(1.)),
    "x[uint8 mask] = tensor([1.])": lambda T: T.ones(3).__setitem__(T.tensor([1, 0, 1], dtype=T.uint8), T.tensor([1.])),
    "index_put_((uint8,), 0-d)": lambda T: T.ones(3).index_put_((T.tensor([1, 0, 1], dtype=T.uint8),), T.tensor(1.)),
    "index_put((uint8,), 0-d)": lambda T: T.ones(3).index_put((T.tensor([1, 0, 1], dtype=T.uint8),), T.tensor(1.)),
    "index_put_((uint8,), 2 values)_ok": lambda T: T.ones(3).index_put_(
        (T.tensor([1, 0, 1], dtype=T.uint8),), T.tensor([1., 2.])),
    "index_put_((uint8,), 0-d, accumulate)_ok": lambda T: T.ones(3).index_put_(
        (T.tensor([1, 0, 1], dtype=T.uint8),), T.tensor(1.), True),
    "x[uint8 mask] = tensor([1., 2.])_ok": lambda T: T.ones(3).__setitem__(
        T.tensor([1, 0, 1], dtype=T.uint8), T.tensor([1., 2.])),
    # clamp's bounds: both numbers or both tensors
    "clamp(x, tensor, 1)": lambda T: T.clamp(T.ones(3), T.zeros(3), 1),
    "x.clamp(min=tensor, max=1.)": lambda T: T.ones(3).clamp(min=T.zeros(3), max=1.),
    "clip(x, 0., tensor)": lambda T: T.clip(T.ones(3), 0., T.ones(3)),
    "x.clamp_(0, tensor)": lambda T: T.ones(3).clamp_(0, T.ones(3)),
    "x.clip_(min=tensor, max=2)": lambda T: T.ones(3).clip_(min=T.zeros(3), max=2),
    "clamp(x, tensor, None)_ok": lambda T: T.clamp(T.ones(3), T.zeros(3), None),
    "clamp(x, 0, 1.)_ok": lambda T: T.clamp(T.ones(3), 0, 1.),
    # a 0-d tensor beside a number is read as a number (torch's Scalar overload)
    "x.clamp(0-d tensor, 6)_ok": lambda T: T.tensor([1, 5, 9]).clamp(T.tensor(2, dtype=T.int8), 6),
    "clamp_(0., 0-d tensor)_ok": lambda T: T.ones(3).clamp_(0., T.tensor(0.5)),
    # reversed() is flip(0); a 0-d tensor comes back as it is
    "reversed(0-d)_ok": lambda T: reversed(T.tensor(2.)),
    # arrays in the other byte order
    "from_numpy(>f4)": lambda T: T.from_numpy(np.ones(2, dtype=">f4")),
    "as_tensor(>i8)": lambda T: T.as_tensor(np.ones(2, dtype=">i8")),
    "tensor(>f8)": lambda T: T.tensor(np.ones(2, dtype=">f8")),
    "from_numpy(>u1)_ok": lambda T: T.from_numpy(np.ones(2, dtype=">u1")),
    # nn.Module.to with a NumPy dtype: TypeError, the message naming it without its repr
    "Linear.to(np.float32)": lambda T: T.nn.Linear(2, 2).to(np.float32),
    "Linear.to(np.dtype('float32'))": lambda T: T.nn.Linear(2, 2).to(np.dtype("float32")),
    "Linear.to(dtype=np.float64)": lambda T: T.nn.Linear(2, 2).to(dtype=np.float64),
    # clip_grad_value_ with no gradient at all: torch's RuntimeError
    "clip_grad_value_(no grads)": lambda T: T.nn.utils.clip_grad_value_([T.nn.Parameter(T.ones(2))], 1.),
    "clip_grad_value_([])": lambda T: T.nn.utils.clip_grad_value_([], 1.),
    "clip_grad_value_(one grad)_ok": lambda T: T.nn.utils.clip_grad_value_(
        [T.nn.Parameter(T.ones(2)), _with_grad(T)], 1.),
    # outer/ger refuse an out= that overlaps an input at all
    "outer(x, x, out=x)": lambda T: _aliased(T, lambda T, x: T.outer(x, x, out=x)),
    "ger(x, x, out=x)": lambda T: _aliased(T, lambda T, x: T.ger(x, x, out=x)),
    "outer(x[:1], x[:1], out=x)": lambda T: _aliased(T, lambda T, x: T.outer(x[:1], x[:1], out=x)),
    "outer(x, x, out=other)_ok": lambda T: _aliased(T, lambda T, x: T.outer(x, x, out=T.ones(3, 3))),
    # max/min take the other tensor by keyword too, but not with dim/keepdim
    "x.min(other=y)_ok": lambda T: T.ones(2).min(other=T.zeros(2)),
    "max(input=x, other=y)_ok": lambda T: T.max(input=T.ones(2), other=T.zeros(2)),
    "x.max(other=y, dim=0)": lambda T: T.ones(2).max(other=T.zeros(2), dim=0),
    "x.min(other=y, keepdim=True)": lambda T: T.ones(2).min(other=T.zeros(2), keepdim=True),
    # an empty batch in training: batch_norm takes it (running stats untouched), native_batch_norm not
    "BatchNorm1d(ones(0, 3)) training_ok": lambda T: T.nn.BatchNorm1d(3)(T.ones(0, 3)),
    "F.batch_norm(ones(0, 3, 2), training)_ok": lambda T: T.nn.functional.batch_norm(
        T.ones(0, 3, 2), T.zeros(3), T.ones(3), training=True),
    "native_batch_norm(empty, training)": lambda T: T.native_batch_norm(
        T.ones(0, 3), None, None, T.zeros(3), T.ones(3), True, 0.1, 1e-5),
    "BatchNorm1d(ones(1, 3)) training": lambda T: T.nn.BatchNorm1d(3)(T.ones(1, 3)),
    # randint/randperm take out= (drawing in its dtype), with torch's out= refusals
    "randint(5, (3,), out=float)_ok": lambda T: T.randint(5, (3,), out=T.ones(3)),
    "randint(0, 2, (3,), out=bool)_ok": lambda T: T.randint(0, 2, (3,), out=T.ones(3, dtype=T.bool)),
    "randint(out=, dtype=other)": lambda T: T.randint(5, (3,), out=T.ones(3), dtype=T.long),
    "randint(out=requires_grad)": lambda T: T.randint(5, (3,), out=T.ones(3, requires_grad=True)),
    "randint(out=list)": lambda T: T.randint(5, (3,), out=[1]),
    "randperm(3, out=float)_ok": lambda T: T.randperm(3, out=T.ones(3)),
    "randperm(out=, dtype=other)": lambda T: T.randperm(3, out=T.ones(3), dtype=T.long),
    # type() with a legacy name: full names only; a CUDA one without a GPU is RuntimeError
    "x.type('FloatTensor')": lambda T: T.ones(2).type("FloatTensor"),
    "x.type('cuda.LongTensor')": lambda T: T.ones(2).type("cuda.LongTensor"),
    "x.type('torch.FloatTensor')_ok": lambda T: T.ones(2).type("torch.FloatTensor"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    assert_same_class(name, CASES[name], torch, tracegrad)


def test_cpu_index_lands_on_the_cpu():
    # torch keeps one CPU device: the index does not survive the move
    assert tracegrad.ones(2).to("cpu:1").device == tracegrad.device("cpu")


def test_reversed_is_flip_of_dim_0():
    x = [[1, 2, 3], [4, 5, 6]]
    got, want = reversed(tracegrad.tensor(x)), reversed(torch.tensor(x))
    assert isinstance(got, tracegrad.Tensor) and got.tolist() == want.tolist()
    assert reversed(tracegrad.tensor(2.)).tolist() == 2.0


def test_max_other_keyword_values():
    a, b = [1., 3.], [2., 2.]
    assert tracegrad.ones(1).new_tensor(a).max(other=tracegrad.tensor(b)).tolist() == \
        torch.tensor(a).max(other=torch.tensor(b)).tolist()


def test_empty_batch_leaves_running_stats():
    for T in (torch, tracegrad):
        m = T.nn.BatchNorm2d(3)
        assert tuple(m(T.ones(0, 3, 2, 2)).shape) == (0, 3, 2, 2)
        assert m.running_mean.tolist() == [0.0] * 3 and m.running_var.tolist() == [1.0] * 3


def test_gradcheck_mismatch_prints_tensors():
    # float32 input: the numerical Jacobian is off, so both raise; the message shows tensors as torch's
    for T in (torch, tracegrad):
        with pytest.raises(RuntimeError, match=r"numerical:tensor\(\[\[") as info:   # GradcheckError's base
            T.autograd.gradcheck(lambda a: a * 2, (T.ones(2, requires_grad=True),))
        assert "analytical:tensor([[" in str(info.value)


@pytest.mark.skipif(tracegrad.cuda.is_available() or torch.cuda.is_available(), reason="checks the no-GPU error")
def test_type_cuda_name_without_gpu():
    assert_same_class("x.type('torch.cuda.FloatTensor')", lambda T: T.ones(2).type("torch.cuda.FloatTensor"),
                      torch, tracegrad)
