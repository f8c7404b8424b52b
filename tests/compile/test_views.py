"""View bookkeeping inside a trace: reshape of a non-contiguous view asks for strides (host
metadata computed from the view chain), which must not be staged into the program."""
import numpy as np
import pytest

import tracegrad


def _make(compiled):
    tracegrad.manual_seed(0)
    lin = tracegrad.nn.Linear(8, 8)
    opt = tracegrad.optim.SGD(lin.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        a = lin(x).view(2, 3, 2, 4).transpose(1, 2)          # non-contiguous view
        y = a.reshape(2, 2, 12).contiguous().view(2, 24)     # reshape must copy, as torch
        loss = (y ** 2).mean()
        loss.backward()
        opt.step()
        return loss, a.is_contiguous(), tuple(a.stride())
    return lin, (tracegrad.compile(step, fullgraph=True) if compiled else step)


def test_reshape_of_transposed_view_inside_compiled_step():
    x = tracegrad.tensor(np.random.RandomState(0).randn(2, 3, 8).astype("float32"))
    lin_e, eager = _make(False)
    lin_c, comp = _make(True)
    for _ in range(3):
        le, ce, se = eager(x)
        lc, cc, sc = comp(x)
        np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-6)
        assert (cc, sc) == (ce, se) == (False, (24, 4, 8, 1))   # torch: view(2,3,2,4).transpose(1,2)
    np.testing.assert_allclose(lin_c.weight.detach().numpy(), lin_e.weight.detach().numpy(), rtol=1e-6)
    assert comp.stats["graph_breaks"] == []


def test_unbind_views_returned_by_every_call_keep_their_history():
    """A compiled function returning ``unbind``'s views: each call's views get their grad_fn
    (nothing wrote their storage since they were made), gradients as eagerly. The check that
    refuses a multi-output view whose base was written in place must not fire for them."""
    a = tracegrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    f = tracegrad.compile(lambda t: t.unbind(0))
    for _ in range(3):
        u = f(a)
        assert all(v.grad_fn is not None for v in u)
        (u[0] * 2 + u[1]).sum().backward()
    assert a.grad.tolist() == [[6.0, 6.0], [3.0, 3.0]]
    v = a.unbind(0)[0]
    with tracegrad.no_grad():
        a.add_(1.0)
    with pytest.raises(RuntimeError, match="multiple views"):
        v.grad_fn
