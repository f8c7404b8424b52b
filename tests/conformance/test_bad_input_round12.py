"""Bad-input parity, round 12: a probe over ~510 wrong calls (keyword aliases and surplus
positionals, out= misuse and aliasing, dtype arguments as strings or NumPy dtypes, device strings,
Python conversions of multi-element tensors, autograd misuse, nn layers fed the wrong input, the
module containers, DataLoader and samplers, torch.distributions with validate_args) left these
differences from torch 2.13, fixed here. Each call runs under torch (the oracle) and tracegrad:
the same exception class (or none), no text of the layers below tracegrad; the ``_ok`` calls are
ones torch accepts."""
import numpy as np
import pytest

import tracegrad

from _bad_input_helpers import assert_same_class

torch = pytest.importorskip("torch")


def _set_grad(T, value):
    x = T.ones(2, 3, requires_grad=True)
    x.grad = value


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
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    assert_same_class(name, CASES[name], torch, tracegrad)


def test_cpu_index_lands_on_the_cpu():
    # torch keeps one CPU device: the index does not survive the move
    assert tracegrad.ones(2).to("cpu:1").device == tracegrad.device("cpu")
