"""Eager semantics parity with torch, round 3: a tensor given where an int dim goes.

torch's argument parser takes a tensor for a plain ``int`` parameter only when it is a 0-d
integer tensor (not bool); an ``int[1]`` parameter (``sum``'s dims, ``squeeze``'s list
overload) takes any one-element integer or bool tensor; symbolic ints (``topk``'s k, ``narrow``'s
start) any one-element integer tensor. torch 2.13 is the oracle for which calls are accepted.
"""
import pytest

import tracegrad

torch = pytest.importorskip("torch")

_DIMS = {"bool0d": lambda m: m.tensor(True), "int1d": lambda m: m.tensor([1]),
         "int0d": lambda m: m.tensor(1), "bool1d": lambda m: m.tensor([True])}
_CALLS = {
    "prod": lambda m, x, d: m.prod(x, d), "all": lambda m, x, d: m.all(x, d), "any": lambda m, x, d: m.any(x, d),
    "prod_method": lambda m, x, d: x.prod(d), "sum": lambda m, x, d: x.sum(d), "amax": lambda m, x, d: x.amax(d),
    "squeeze": lambda m, x, d: x[:, :1].squeeze(d), "unsqueeze": lambda m, x, d: x.unsqueeze(d),
    "cumsum": lambda m, x, d: x.cumsum(d), "argmax": lambda m, x, d: x.argmax(d),
    "softmax": lambda m, x, d: x.softmax(d), "median": lambda m, x, d: x.median(d),
    "topk": lambda m, x, d: x.topk(d), "narrow": lambda m, x, d: x.narrow(1, d, 1),
    "transpose": lambda m, x, d: x.transpose(d, 0), "chunk": lambda m, x, d: x.chunk(d),
}


def _outcome(m, call, dim):
    x = m.arange(6.0).reshape(2, 3)
    try:
        out = _CALLS[call](m, x, _DIMS[dim](m))
    except (TypeError, RuntimeError) as e:   # symbolic ints refuse a bool tensor with RuntimeError
        return type(e).__name__, None
    first = out[0] if isinstance(out, (tuple, list)) else out
    return "ok", tuple(first.shape)


@pytest.mark.parametrize("dim", sorted(_DIMS))
@pytest.mark.parametrize("call", sorted(_CALLS))
def test_tensor_as_int_dim_matches_torch(call, dim):
    assert _outcome(tracegrad, call, dim) == _outcome(torch, call, dim)


def test_refusal_names_the_api():
    with pytest.raises(TypeError, match="prod"):
        tracegrad.prod(tracegrad.ones(2, 3), tracegrad.tensor(True))
    with pytest.raises(TypeError, match="unsqueeze"):
        tracegrad.ones(2, 3).unsqueeze(tracegrad.tensor([1]))


def test_squeeze_bool_tensor_dim_gradient():
    # torch reads tensor(True) as the one-element dim list [1]: same values, same gradient
    grads = []
    for m in (torch, tracegrad):
        x = m.arange(2.0).reshape(2, 1).requires_grad_()
        y = x.squeeze(m.tensor(True))
        (y * m.tensor([3.0, 5.0])).sum().backward()
        grads.append((tuple(y.shape), x.grad.tolist()))
    assert grads[0] == grads[1]
