"""NOTE [double-backward edges]: a gradient computed with create_graph=True has graph edges only
to the tensors its formula reads, as in torch: differentiating it again gives None (not zeros)
for an input it does not read, zeros where it reads one through a mask, and the same values
as torch everywhere. Each program runs under torch and tracegrad and is compared."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _np(t):
    return None if t is None else t.detach().numpy()


def _same(a, b):
    """Tuples of gradients from torch (a) and tracegrad (b): None in the same places, equal values."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x is None) == (y is None), (a, b)
        if x is not None:
            np.testing.assert_allclose(_np(y), _np(x), rtol=1e-5, atol=1e-6)
            assert x.requires_grad == y.requires_grad


def _both(program):
    return program(torch), program(tracegrad)


def _inputs(T, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [T.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in shapes]


def p_mul(T):
    x, a = _inputs(T, (3,), (3,))
    gx, = T.autograd.grad((x * a).sum(), x, create_graph=True)
    return T.autograd.grad(gx.sum(), (x, a), allow_unused=True)


def p_linear(T):
    x, w, b = _inputs(T, (2, 4), (3, 4), (3,))
    gx, = T.autograd.grad(T.nn.functional.linear(x, w, b).pow(2).sum(), x, create_graph=True)
    return T.autograd.grad(gx.sum(), (x, w, b), allow_unused=True)


def p_linear_first_power(T):
    # d(x @ w.T + b)/dx = w: its gradient reads neither x nor b
    x, w, b = _inputs(T, (2, 4), (3, 4), (3,))
    gx, = T.autograd.grad(T.nn.functional.linear(x, w, b).sum(), x, create_graph=True)
    return T.autograd.grad(gx.sum(), (x, w, b), allow_unused=True)


def p_relu(T):
    # relu's gradient reads x through its mask: zeros, not None
    x, = _inputs(T, (5,))
    gx, = T.autograd.grad(T.relu(x).sum(), x, create_graph=True)
    return T.autograd.grad(gx.sum(), x, allow_unused=True)


def p_tanh_mlp_hvp(T):
    x, w1, w2 = _inputs(T, (4, 3), (5, 3), (1, 5))
    y = T.tanh(x @ w1.T) @ w2.T
    g = T.autograd.grad(y.sum(), (x, w1, w2), create_graph=True)
    v = sum((gi * gi).sum() for gi in g)
    return T.autograd.grad(v, (x, w1, w2), allow_unused=True)


def p_gradient_penalty(T):
    # WGAN-GP: the penalty on the critic's input gradient, differentiated w.r.t. the weights
    x, w1, w2 = _inputs(T, (4, 3), (6, 3), (1, 6))
    out = T.nn.functional.leaky_relu(x @ w1.T, 0.2) @ w2.T
    gx, = T.autograd.grad(out.sum(), x, create_graph=True)
    penalty = ((gx.norm(2, dim=1) - 1) ** 2).mean()
    return T.autograd.grad(penalty, (w1, w2, x), allow_unused=True)


def p_third_order(T):
    x, = _inputs(T, (3,))
    g1, = T.autograd.grad((x ** 3).sum(), x, create_graph=True)
    g2, = T.autograd.grad(g1.sum(), x, create_graph=True)
    return T.autograd.grad(g2.sum(), x, allow_unused=True)


def p_create_graph_twice(T):
    # the second gradient is itself recorded: its requires_grad follows what it reads
    x, a = _inputs(T, (3,), (3,))
    gx, = T.autograd.grad((x * x * a).sum(), x, create_graph=True)
    return T.autograd.grad(gx.sum(), (x, a), create_graph=True, allow_unused=True)


@pytest.mark.parametrize("program", [p_mul, p_linear, p_linear_first_power, p_relu, p_tanh_mlp_hvp,
                                     p_gradient_penalty, p_third_order, p_create_graph_twice],
                         ids=lambda p: p.__name__)
def test_matches_torch(program):
    _same(*_both(program))


def test_unread_input_is_unused_error():
    # without allow_unused, an input the gradient does not read is torch's RuntimeError
    for T in (torch, tracegrad):
        x, a = _inputs(T, (3,), (3,))
        gx, = T.autograd.grad((x * a).sum(), x, create_graph=True)
        with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
            T.autograd.grad(gx.sum(), x)


def test_constant_gradient_does_not_require_grad():
    # the gradient of a linear map in its cotangent (autograd.functional.jvp's trick) reads no
    # tensor that requires grad, so it is a constant, as torch's
    for T in (torch, tracegrad):
        x, = _inputs(T, (3,))
        u = T.zeros(3, requires_grad=True)
        gx, = T.autograd.grad(x.clone(), x, u, create_graph=True)
        r, = T.autograd.grad(gx, u, T.ones(3), create_graph=True)
        assert not r.requires_grad


# ---- the node a create_graph gradient carries (NOTE [double-backward names] and
# NOTE [non-differentiable backwards]): torch's name, or no node at all where torch's formula
# uses the saved tensors only through masks/indices (max, sort, clamp...)
_NODE_CASES = {
    "sum": lambda T, x: x.sum(), "acos": lambda T, x: x.acos(), "atanh": lambda T, x: x.atanh(),
    "lgamma": lambda T, x: x.lgamma(), "elu": lambda T, x: T.nn.functional.elu(x),
    "softplus": lambda T, x: T.nn.functional.softplus(x), "leaky_relu": lambda T, x: T.nn.functional.leaky_relu(x),
    "hardtanh": lambda T, x: T.nn.functional.hardtanh(x), "bce": lambda T, x: T.nn.functional.binary_cross_entropy(x, x.detach().flip(0)),
    "layer_norm": lambda T, x: T.nn.functional.layer_norm(x, (4,)), "prod": lambda T, x: x.prod(1),
    "cumprod": lambda T, x: x.cumprod(1), "neg": lambda T, x: -x, "unsqueeze": lambda T, x: x.unsqueeze(0),
    "amax": lambda T, x: x.amax(1), "max": lambda T, x: x.max(), "max_dim": lambda T, x: x.max(1)[0],
    "min": lambda T, x: x.min(), "median": lambda T, x: x.median(), "nansum": lambda T, x: x.nansum(1),
    "cummax": lambda T, x: x.cummax(1)[0], "sort": lambda T, x: x.sort(1)[0], "topk": lambda T, x: x.topk(2)[0],
    "kthvalue": lambda T, x: x.kthvalue(2)[0], "clamp": lambda T, x: x.clamp(0.2, 0.6),
    "clamp_min": lambda T, x: x.clamp(min=0.3), "maximum": lambda T, x: T.maximum(x, x.flip(0)),
    "fmin": lambda T, x: T.fmin(x, x.flip(0)), "angle": lambda T, x: x.angle(),
    "prelu_constant_weight": lambda T, x: T.nn.functional.prelu(x, T.tensor([0.25])),
    "glu": lambda T, x: T.nn.functional.glu(x, 1),
}


@pytest.mark.parametrize("name", sorted(_NODE_CASES))
def test_create_graph_gradient_node_matches_torch(name):
    def program(T):
        x = T.tensor([[0.3, 0.7, 0.2, 0.45], [0.15, 0.55, 0.35, 0.65]], requires_grad=True)
        y = _NODE_CASES[name](T, x)
        g, = T.autograd.grad(y.sum(), x, create_graph=True)
        node = None if g.grad_fn is None else type(g.grad_fn).__name__
        if g.requires_grad:   # differentiating it again: same values as torch
            return node, g.requires_grad, T.autograd.grad(g.square().sum(), x, allow_unused=True)
        with pytest.raises(RuntimeError):   # torch: it does not require grad
            T.autograd.grad(g.sum(), x)
        return node, g.requires_grad, ()
    (na, ra, ga), (nb, rb, gb) = _both(program)
    assert (nb, rb) == (na, ra)
    _same(ga, gb)


# ---- NOTE [shape edges]: torch's backward ops that take the input for its shape only (pools,
# pads, nll_loss: zeros when differentiated again; convolution, eval batch_norm, grid_sample
# without the other input's gradient: an undefined gradient) keep the first derivative's edge to
# it, so that derivative requires grad whenever the input does
_SHAPE_EDGE_CASES = {
    "avg_pool1d": lambda F, T, x: F.avg_pool1d(x.reshape(1, 2, 8), 2),
    "avg_pool2d": lambda F, T, x: F.avg_pool2d(x.reshape(1, 1, 4, 4), 2, ceil_mode=True, padding=1),
    "avg_pool3d": lambda F, T, x: F.avg_pool3d(x.reshape(1, 1, 2, 2, 4), 2),
    "adaptive_avg_pool1d": lambda F, T, x: F.adaptive_avg_pool1d(x.reshape(1, 2, 8), 3),
    "adaptive_avg_pool2d": lambda F, T, x: F.adaptive_avg_pool2d(x.reshape(1, 1, 4, 4), 3),
    "adaptive_avg_pool3d": lambda F, T, x: F.adaptive_avg_pool3d(x.reshape(1, 1, 2, 2, 4), 2),
    "interpolate_area": lambda F, T, x: F.interpolate(x.reshape(1, 1, 4, 4), size=(3, 3), mode="area"),
    "nll_loss": lambda F, T, x: F.nll_loss(x.reshape(2, 8), T.tensor([0, 2])),
    "nll_loss2d": lambda F, T, x: F.nll_loss(x.reshape(1, 4, 2, 2), T.tensor([[[0, 2], [3, 1]]])),
    "reflection_pad1d": lambda F, T, x: F.pad(x.reshape(1, 2, 8), (2, 1), mode="reflect"),
    "replication_pad2d": lambda F, T, x: F.pad(x.reshape(1, 1, 4, 4), (1, 2, 0, 1), mode="replicate"),
    "conv2d_constant_weight": lambda F, T, x: F.conv2d(x.reshape(1, 1, 4, 4), T.ones(2, 1, 2, 2)),
    "conv1d_constant_input": lambda F, T, x: F.conv1d(T.ones(1, 2, 5), x[:12].reshape(2, 2, 3)),
    "conv_transpose2d": lambda F, T, x: F.conv_transpose2d(x.reshape(1, 1, 4, 4), T.ones(1, 2, 2, 2)),
    "batch_norm_eval": lambda F, T, x: F.batch_norm(x.reshape(2, 8), T.zeros(8), T.ones(8)),
    "grid_sample": lambda F, T, x: F.grid_sample(x.reshape(1, 1, 4, 4), T.zeros(1, 2, 2, 2), align_corners=False),
}


@pytest.mark.parametrize("name", sorted(_SHAPE_EDGE_CASES))
def test_shape_edges_match_torch(name):
    def program(T):
        x, = _inputs(T, (16,))
        y = _SHAPE_EDGE_CASES[name](T.nn.functional, T, x)
        g, = T.autograd.grad(y.sum(), x, create_graph=True)
        return (g.requires_grad,) + T.autograd.grad(g.square().sum(), x, allow_unused=True)
    a, b = _both(program)
    assert a[0] is b[0] is True
    _same(a[1:], b[1:])
