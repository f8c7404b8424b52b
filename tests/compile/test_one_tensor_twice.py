"""One tensor passed as two arguments of a compiled function (NOTE [one tensor passed twice] in
``_lowering/region.py``): ``model(ids, labels=ids)``, ``f(x, x)``. One program runs such calls
(they ran eagerly), with eager's answers: ``a is b``, a write through one seen in the other and
counted once in the version counter, one ``.grad`` summing both uses, the argument returned as
itself; a call passing two different tensors gets a program of its own. torch, tracegrad eager
and ``tracegrad.compile`` run each program from the same state (``_dynamo_port.compare``)."""
import pytest

import tracegrad

from ._dynamo_port import compare, compare_programs
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def test_causal_lm_labels_are_the_inputs():
    """A tiny causal LM trained with ``model(ids, labels=ids)`` (targets shifted inside)."""
    def build(T, wrap):
        T.manual_seed(0)
        emb = T.nn.Embedding(7, 4)
        head = _linear(T, 4, 7)
        with T.no_grad():
            emb.weight.copy_(_rand(T, 99, 7, 4))
        opt = T.optim.SGD(list(emb.parameters()) + list(head.parameters()), lr=0.5)

        def model(ids, labels=None):
            logits = head(emb(ids).tanh())
            loss = T.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 7), labels[:, 1:].reshape(-1))
            return loss, logits

        def step(ids, labels):
            opt.zero_grad()
            loss, _ = model(ids, labels=labels)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)

        def run(i):
            ids = T.tensor([[(i + j) % 7 for j in range(5)], [(3 * i + j) % 7 for j in range(5)]])
            return f(ids, ids), head.weight, emb.weight
        return run
    compare_programs(build, calls=4, traces=1)


def test_identity_write_version_and_result():
    def build(T, wrap):
        net = _linear(T, 3, 3)

        def fn(a, b):
            same = a is b
            b.mul_(2)
            return (net(a) * b).sum(), same, a
        f = wrap(fn)

        def run(i):
            x = _rand(T, i, 2, 3)
            loss, same, back = f(x, x)
            return loss, same, back is x, x, x._version
        return run
    compare_programs(build, calls=4, traces=1)


def test_gradient_of_a_leaf_passed_twice():
    def build(T, wrap):
        f = wrap(lambda a, b: (a * b.sin()).sum())
        w = _rand(T, 5, 4).requires_grad_()

        def run(i):
            w.grad = None
            f(w, w).backward()
            return w.grad
        return run
    compare(build, calls=3)


def test_two_different_tensors_then_one_twice():
    """The same function called with two tensors and with one tensor twice: each its own program,
    each equal to eager."""
    def build(T, wrap):
        def fn(a, b):
            a.add_(1)
            return a + b
        f = wrap(fn)

        def run(i):
            x, y = _rand(T, i, 3), _rand(T, i + 7, 3)
            return f(x, y), f(x, x), x, y
        return run
    compare(build, calls=4)


def test_one_tensor_twice_traces_once_and_feeds_one_input():
    f = tracegrad.compile(lambda a, b: a * b)
    for i in range(4):
        x = tracegrad.full((3,), float(i))
        assert f(x, x).tolist() == [float(i * i)] * 3
    assert f.stats["traces"] == 1 and not f.stats["graph_breaks"], f.stats
    region = next(r for entries in f._cache.values() if isinstance(entries, list) for r in entries)
    assert region.arg_kinds == ("data", "same")
