"""Eager value checks (NOTE [eager value checks], tracegrad/_nn_functions.py) must not become
graph breaks: inside tracegrad.compile the index values are traced, nothing is read, and the
program does what XLA does (README known differences). Eager still raises torch's errors."""
import pytest

import tracegrad

F = tracegrad.nn.functional


def test_embedding_one_hot_checks_eager_only():
    w = tracegrad.randn(5, 3, requires_grad=True)

    @tracegrad.compile(fullgraph=True)    # a value read while tracing would raise GraphBreak
    def f(ids):
        return F.embedding(ids, w).sum() + F.one_hot(ids, 5).sum()

    ids = tracegrad.tensor([0, 4, 2])
    want = float(w[ids].sum()) + 3.0
    for _ in range(3):   # the first call runs eagerly, the second traces, the third replays
        assert abs(float(f(ids)) - want) < 1e-5
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(tracegrad.tensor([7]), w)
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(tracegrad.tensor([7]), 5)


def test_random_argument_checks_inside_compile():
    @tracegrad.compile(fullgraph=True)
    def g(p):
        return tracegrad.bernoulli(p).sum() + tracegrad.normal(tracegrad.zeros(2), p[:2]).sum() * 0

    p = tracegrad.full((4,), 0.5)
    for _ in range(3):
        v = float(g(p))
        assert 0.0 <= v <= 4.0 and v == int(v)
    with pytest.raises(RuntimeError, match=r"\[0, 1\]"):
        tracegrad.bernoulli(tracegrad.full((2,), 1.5))
