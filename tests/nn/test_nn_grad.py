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
