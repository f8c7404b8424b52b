"""``tracegrad.nn.grad`` (torch.nn.grad: a convolution's gradient with respect to its input or
weight, used by hand-written conv backwards such as the tutorials' fused conv + batch norm),
compared with torch, double backward included."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("nd,stride,padding,groups", [(1, 2, 1, 1), (2, 1, 0, 1), (2, 2, 1, 2), (3, 1, 1, 1)])
def test_nn_grad_conv_input_and_weight_against_torch(nd, stride, padding, groups):
    """``torch.nn.grad.conv{n}d_input/_weight``: values and their own gradients (double backward)."""
    rs = np.random.RandomState(nd)
    x = rs.randn(2, 4, *([6] * nd))
    w = rs.randn(2, 4 // groups, *([3] * nd))
    res = {}
    for m in (torch, tracegrad):
        conv = getattr(m.nn.functional, f"conv{nd}d")
        X, W = m.tensor(x), m.tensor(w, requires_grad=True)
        g = m.tensor(rs.randn(*conv(X, W.detach(), None, stride, padding, 1, groups).shape) if m is torch else res["g"],
                     requires_grad=True)
        res.setdefault("g", g.detach().numpy())
        gi = getattr(m.nn.grad, f"conv{nd}d_input")(X.shape, W, g, stride, padding, 1, groups)
        gw = getattr(m.nn.grad, f"conv{nd}d_weight")(X, W.shape, g, stride, padding, 1, groups)
        (gi.pow(2).sum() + gw.pow(2).sum()).backward()
        res[m] = [t.detach().numpy() for t in (gi, gw, W.grad, g.grad)]
    for a, b in zip(res[torch], res[tracegrad]):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-10)
    with pytest.raises(RuntimeError, match="grad_output has shape"):
        tracegrad.nn.grad.conv2d_input((1, 1, 5, 5), tracegrad.ones(1, 1, 3, 3), tracegrad.ones(1, 1, 2, 2))


@pytest.mark.parametrize("transposed,groups,stride", [(False, 2, 2), (True, 1, 2)])
def test_aten_convolution_backward_and_double_backward_against_torch(transposed, groups, stride):
    """``torch.ops.aten.convolution_backward`` / ``_convolution_double_backward`` (ops torch has
    only under ``ops.aten``; test/nn/test_convolution.py calls the second): values, and None
    where torch's result is undefined (masked out, or no ggI/ggW given)."""
    rs = np.random.RandomState(3)
    x = rs.randn(2, 4, 5, 6)
    w = rs.randn(4, 2, 3, 3)
    cout = 2 * groups if transposed else 4
    b, ggi, ggw, ggb = rs.randn(cout), rs.randn(*x.shape), rs.randn(*w.shape), rs.randn(cout)
    res = {}
    for m in (torch, tracegrad):
        conv = (m.tensor(x), m.tensor(w), m.tensor(b), (stride,) * 2, (1, 1), (1, 1), transposed, (0, 0), groups)
        out = m.ops.aten.convolution(*conv)
        go = m.tensor(rs.randn(*out.shape) if m is torch else res["go"])
        res.setdefault("go", go.numpy())
        rest = conv[3:]
        got = list(m.ops.aten.convolution_backward(go, conv[0], conv[1], [cout], *rest, [True, True, True]))
        got += m.ops.aten.convolution_backward(go, conv[0], conv[1], None, *rest, [False, True, False])
        got += m.ops.aten._convolution_double_backward(m.tensor(ggi), m.tensor(ggw), m.tensor(ggb), go, conv[1],
                                                       conv[0], *rest, [True, True, True])
        got += m.ops.aten._convolution_double_backward(None, m.tensor(ggw), None, go, conv[1], conv[0], *rest,
                                                       [True, True, True])
        res[m] = [None if t is None else t.numpy() for t in got]
    for a, b_ in zip(res[torch], res[tracegrad]):
        assert (a is None) == (b_ is None)
        if a is not None:
            np.testing.assert_allclose(b_, a, rtol=1e-10, atol=1e-10)
