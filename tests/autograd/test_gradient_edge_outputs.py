"""A GradientEdge as an output of ``autograd.backward``/``grad`` (torch 2.13): the gradient is
seeded at that place in the graph, implicitly (ones, for a one-element tensor's edge) or from
``grad_outputs``; the edge keeps its node alive after the tensor is gone."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("T", [torch, tracegrad], ids=["torch", "tracegrad"])
def test_grad_of_an_edge_with_grad_outputs(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * x
    edge = T.autograd.graph.get_gradient_edge(h)
    y = h.sum()
    del h
    g, = T.autograd.grad(edge, x, grad_outputs=T.tensor([1.0, 0.5, 0.25]), retain_graph=True)
    np.testing.assert_allclose(g.numpy(), [2.0, 2.0, 1.5])
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        T.autograd.grad(edge, x)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


@pytest.mark.parametrize("T", [torch, tracegrad], ids=["torch", "tracegrad"])
def test_backward_of_a_scalar_edge_is_seeded_with_one(T):
    w = T.tensor(3.0, requires_grad=True)
    out = (w * 2).exp()
    edge = T.autograd.graph.get_gradient_edge(out)
    T.autograd.backward(edge, retain_graph=True)
    del out
    T.autograd.backward([edge], grad_tensors=[T.tensor(2.0)])
    assert w.grad.item() == pytest.approx(3 * 2 * np.exp(6.0), rel=1e-5)   # seeds 1, then 2


def test_a_hand_built_edge_needs_its_gradient():
    x = tracegrad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    edge = tracegrad.autograd.graph.GradientEdge(h.grad_fn, 0)
    g, = tracegrad.autograd.grad(edge, x, grad_outputs=tracegrad.ones(2), retain_graph=True)
    assert g.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="GradientEdge built by hand"):
        tracegrad.autograd.grad(edge, x)
