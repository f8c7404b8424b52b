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
