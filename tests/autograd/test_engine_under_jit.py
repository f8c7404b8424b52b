"""The engine is plain Python over Tensors: the same forward + backward() + SGD update run
inside a hand-written ``jax.jit`` (tensors holding tracers) gives eager's values and grads."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tracegrad

from _ag import rnd

# the float64 oracle (or hand-written jax.jit) is this file's own JAX code: x64 on for it
pytestmark = pytest.mark.usefixtures("jax_x64")

LR = 0.1


def _step(w1, b1, w2, x, y):
    """One MLP training step on tracegrad tensors; returns (loss, grads) and updates in place."""
    h = (x @ w1 + b1).tanh()
    out = h @ w2
    loss = ((out - y) ** 2).mean()
    loss.backward()
    grads = (w1.grad.clone(), b1.grad.clone(), w2.grad.clone())
    with tracegrad.no_grad():
        for p in (w1, b1, w2):
            p -= LR * p.grad
    return loss, grads


def _data():
    return (rnd((3, 4), 1) * 0.5, rnd((4,), 2) * 0.1, rnd((4, 1), 3) * 0.5,
            rnd((5, 3), 4), rnd((5, 1), 5))


def _eager(arrays):
    w1, b1, w2, x, y = [tracegrad.tensor(a, dtype=tracegrad.float64) for a in arrays]
    for p in (w1, b1, w2):
        p.requires_grad_()
    loss, grads = _step(w1, b1, w2, x, y)
    return [loss.detach().numpy()] + [g.numpy() for g in grads] + [p.detach().numpy() for p in (w1, b1, w2)]


@jax.jit
def _jitted(w1a, b1a, w2a, xa, ya):
    w1, b1, w2 = (tracegrad.Tensor._make(a).requires_grad_() for a in (w1a, b1a, w2a))
    x, y = tracegrad.Tensor._make(xa), tracegrad.Tensor._make(ya)
    loss, grads = _step(w1, b1, w2, x, y)
    return [loss._value] + [g._value for g in grads] + [p._value for p in (w1, b1, w2)]


def test_sgd_step_under_jit_matches_eager():
    arrays = _data()
    ref = _eager(arrays)
    got = _jitted(*[jnp.asarray(a) for a in arrays])
    assert len(ref) == len(got)
    for r, g in zip(ref, got):
        np.testing.assert_allclose(np.asarray(g), r, rtol=1e-10, atol=1e-12)
    # the parameters moved, by exactly -LR * grad
    np.testing.assert_allclose(np.asarray(got[4]), arrays[0] - LR * ref[1], rtol=1e-10)


def test_sgd_loop_under_jit_matches_torch():
    torch = __import__("pytest").importorskip("torch")
    arrays = _data()
    w1, b1, w2 = (torch.tensor(a, requires_grad=True) for a in arrays[:3])
    x, y = torch.tensor(arrays[3]), torch.tensor(arrays[4])
    params = [jnp.asarray(a) for a in arrays[:3]]
    for _ in range(3):
        h = (x @ w1 + b1).tanh()
        loss = ((h @ w2 - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in (w1, b1, w2):
                p -= LR * p.grad
                p.grad = None
        out = _jitted(*params, jnp.asarray(arrays[3]), jnp.asarray(arrays[4]))
        np.testing.assert_allclose(np.asarray(out[0]), loss.item(), rtol=1e-10)
        params = out[4:]
    for p, t in zip(params, (w1, b1, w2)):
        np.testing.assert_allclose(np.asarray(p), t.detach().numpy(), rtol=1e-10)


def test_hooks_and_grad_under_jit():
    """Tensor hooks, retain_grad and autograd.grad(create_graph) also run on tracers."""
    def body(xa):
        x = tracegrad.Tensor._make(xa).requires_grad_()
        y = x.sin()
        y.retain_grad()
        y.register_hook(lambda g: g * 2)
        (y * y).sum().backward(retain_graph=True)
        (g,) = tracegrad.autograd.grad((x ** 3).sum(), x, create_graph=True)
        (gg,) = tracegrad.autograd.grad(g.sum(), x)
        return x.grad._value, y.grad._value, gg._value

    xa = jnp.asarray(rnd((4,), 7))
    eager = body(xa)
    jitted = jax.jit(body)(xa)
    for e, j in zip(eager, jitted):
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(eager[0]), 2 * 2 * np.sin(xa) * np.cos(xa), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(eager[2]), 6 * np.asarray(xa), rtol=1e-10)


class _Sq(tracegrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def test_function_copyslices_and_pack_hooks_under_jit():
    """Custom Function, a CopySlices write and saved_tensors_hooks inside jax.jit == eager."""
    def body(xa):
        x = tracegrad.Tensor._make(xa).requires_grad_()
        y = _Sq.apply(x).sin()
        b = x.clone()
        b[1:] = y[1:] * 2
        with tracegrad.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
            z = (b * b).sum()
        z.backward()
        return x.grad._value

    xa = jnp.asarray(rnd((3,), 11))
    eager = np.asarray(body(xa))
    np.testing.assert_allclose(np.asarray(jax.jit(body)(xa)), eager, rtol=1e-10)
    x = np.asarray(xa)
    expect = 2 * x.copy()
    expect[1:] = 2 * (2 * 2 * np.sin(x[1:] ** 2)) * np.cos(x[1:] ** 2) * 2 * x[1:]
    np.testing.assert_allclose(eager, expect, rtol=1e-10)
