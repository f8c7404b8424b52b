"""``x[i]`` with ``i`` a 0-d integer tensor inside ``tracegrad.compile``: eagerly torch reads
the index's value (``select``); compiled, the key indexes by the tensor without reading it, so
the step stays one program (no graph break), with eager's values and gradients on every call,
and an index out of range still raises eager's IndexError."""
import numpy as np
import pytest

import tracegrad


def _step(x, w, i):
    y = x[i] * w + x[i, 1:].sum() + x[1:, i % 3].sum() + x[None, i, ..., :2].sum()
    y.sum().backward()
    return y


def _run(compiled):
    x = tracegrad.arange(12.0).view(4, 3)
    w = tracegrad.ones(3, requires_grad=True)
    f = tracegrad.compile(_step) if compiled else _step
    outs = []
    for k in (0, 2, 3, -1):
        y = f(x, w, tracegrad.tensor(k))
        outs.append((y.detach().numpy().copy(), w.grad.numpy().copy()))
    return outs, f


def test_compiled_equals_eager_without_a_graph_break():
    tracegrad.compiler.reset()
    eager, _ = _run(False)
    compiled, f = _run(True)
    for (ye, ge), (yc, gc) in zip(eager, compiled):
        np.testing.assert_allclose(yc, ye)
        np.testing.assert_allclose(gc, ge)
    stats = tracegrad.compiler.stats()["_step"]
    assert stats["graph_breaks"] == [] and stats["traces"] == 1


@pytest.mark.parametrize("bad", [4, -5])
def test_out_of_range_raises_eagers_index_error(bad):
    x = tracegrad.arange(12.0).view(4, 3)
    f = tracegrad.compile(lambda x, i: x[i] * 2)
    np.testing.assert_allclose(f(x, tracegrad.tensor(1)).numpy(), [6.0, 8.0, 10.0])
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 4"):
        f(x, tracegrad.tensor(bad))


def test_grad_dtype_changed_between_compiled_calls_is_seen():
    """``p.grad_dtype`` set between compiled calls: the next call's ``.grad`` has the new dtype
    and eager's values (the traced cast is not kept)."""
    def run(compiled):
        w = tracegrad.ones(3, requires_grad=True)

        def step(x):
            w.grad = None
            (w * x).sum().backward()
            return w.grad

        f = tracegrad.compile(step) if compiled else step
        got = []
        w.grad_dtype = tracegrad.float64
        for k in range(6):
            if k == 3:    # a float64 .grad is there: only None (any dtype) can be set now
                w.grad_dtype = None
            g = f(tracegrad.tensor([1.0, 2.0, 3.0]) * (k + 1))
            got.append((g.dtype, g.numpy().tolist()))
        return got
    eager = run(False)
    assert [d for d, _ in eager] == [tracegrad.float64] * 3 + [tracegrad.float32] * 3
    assert run(True) == eager
