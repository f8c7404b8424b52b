"""Gradients of a broad table of ops: tracegrad vs torch (same lambda, both modules) and vs
``jax.grad`` of the jax.numpy formula. Loss = sum(f(inputs) * fixed cotangent), float64."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tracegrad

from _ag import rnd

# the float64 oracle (or hand-written jax.jit) is this file's own JAX code: x64 on for it
pytestmark = pytest.mark.usefixtures("jax_x64")

POS = "pos"      # inputs mapped to [0.5, 2.5): log, sqrt, pow bases, division
UNIT = "unit"    # inputs mapped into (-0.9, 0.9): asin/acos/atanh

# name: (shapes, module fn (t, *xs), jax fn (*xs), domain)
CASES = {
    "add_broadcast": ([(3, 4), (4,)], lambda t, a, b: a + b, lambda a, b: a + b, None),
    "sub": ([(3, 4), (3, 1)], lambda t, a, b: a - b, lambda a, b: a - b, None),
    "mul_broadcast": ([(2, 1, 4), (3, 1)], lambda t, a, b: a * b, lambda a, b: a * b, None),
    "div": ([(3, 4), (3, 4)], lambda t, a, b: a / b, lambda a, b: a / b, POS),
    "pow_tensor": ([(3,), (3,)], lambda t, a, b: a ** b, lambda a, b: a ** b, POS),
    "pow_scalar": ([(3,)], lambda t, a: a ** 3, lambda a: a ** 3, None),
    "rpow": ([(3,)], lambda t, a: 2.0 ** a, lambda a: 2.0 ** a, None),
    "neg": ([(3,)], lambda t, a: -a, lambda a: -a, None),
    "exp": ([(3, 2)], lambda t, a: a.exp(), jnp.exp, None),
    "log": ([(3, 2)], lambda t, a: a.log(), jnp.log, POS),
    "log1p": ([(4,)], lambda t, a: a.log1p(), jnp.log1p, POS),
    "sqrt": ([(4,)], lambda t, a: a.sqrt(), jnp.sqrt, POS),
    "rsqrt": ([(4,)], lambda t, a: a.rsqrt(), lambda a: 1 / jnp.sqrt(a), POS),
    "sin": ([(4,)], lambda t, a: a.sin(), jnp.sin, None),
    "cos": ([(4,)], lambda t, a: a.cos(), jnp.cos, None),
    "tan": ([(4,)], lambda t, a: a.tan(), jnp.tan, UNIT),
    "asin": ([(4,)], lambda t, a: a.asin(), jnp.arcsin, UNIT),
    "atan": ([(4,)], lambda t, a: a.atan(), jnp.arctan, None),
    "tanh": ([(4,)], lambda t, a: a.tanh(), jnp.tanh, None),
    "sinh": ([(4,)], lambda t, a: a.sinh(), jnp.sinh, None),
    "sigmoid": ([(4,)], lambda t, a: a.sigmoid(), jax.nn.sigmoid, None),
    "relu": ([(6,)], lambda t, a: a.relu(), jax.nn.relu, None),
    "abs": ([(6,)], lambda t, a: a.abs(), jnp.abs, None),
    "reciprocal": ([(4,)], lambda t, a: a.reciprocal(), lambda a: 1 / a, POS),
    "square": ([(4,)], lambda t, a: a.square(), jnp.square, None),
    "clamp": ([(6,)], lambda t, a: a.clamp(-0.5, 0.5), lambda a: jnp.clip(a, -0.5, 0.5), None),
    "maximum": ([(5,), (5,)], lambda t, a, b: t.maximum(a, b), jnp.maximum, None),
    "minimum": ([(5,), (5,)], lambda t, a, b: t.minimum(a, b), jnp.minimum, None),
    "where": ([(5,), (5,)], lambda t, a, b: t.where(a > 0, a * 2, b), lambda a, b: jnp.where(a > 0, a * 2, b), None),
    "atan2": ([(4,), (4,)], lambda t, a, b: t.atan2(a, b), jnp.arctan2, None),
    "lerp": ([(4,), (4,)], lambda t, a, b: t.lerp(a, b, 0.3), lambda a, b: a + 0.3 * (b - a), None),
    "addcmul": ([(4,), (4,), (4,)], lambda t, a, b, c: t.addcmul(a, b, c, value=0.5),
                lambda a, b, c: a + 0.5 * b * c, None),
    "sum": ([(3, 4)], lambda t, a: a.sum(), jnp.sum, None),
    "sum_dim_keepdim": ([(3, 4)], lambda t, a: a.sum(1, keepdim=True), lambda a: a.sum(1, keepdims=True), None),
    "mean_dims": ([(2, 3, 4)], lambda t, a: a.mean((0, 2)), lambda a: a.mean((0, 2)), None),
    "prod": ([(4,)], lambda t, a: a.prod(), jnp.prod, None),
    "var": ([(3, 4)], lambda t, a: a.var(1), lambda a: a.var(1, ddof=1), None),
    "std": ([(3, 4)], lambda t, a: a.std(), lambda a: a.std(ddof=1), None),
    "amax": ([(3, 4)], lambda t, a: a.amax(0), lambda a: a.max(0), None),
    "amin": ([(3, 4)], lambda t, a: a.amin(1), lambda a: a.min(1), None),
    "max_dim": ([(3, 4)], lambda t, a: a.max(1).values, lambda a: a.max(1), None),
    "logsumexp": ([(3, 4)], lambda t, a: a.logsumexp(1), lambda a: jax.scipy.special.logsumexp(a, 1), None),
    "softmax": ([(3, 4)], lambda t, a: a.softmax(-1), lambda a: jax.nn.softmax(a, -1), None),
    "log_softmax": ([(3, 4)], lambda t, a: a.log_softmax(0), lambda a: jax.nn.log_softmax(a, 0), None),
    "norm": ([(3, 4)], lambda t, a: a.norm(), jnp.linalg.norm, None),
    "cumsum": ([(5,)], lambda t, a: a.cumsum(0), jnp.cumsum, None),
    "mm": ([(3, 4), (4, 2)], lambda t, a, b: a.mm(b), jnp.matmul, None),
    "matmul_batched": ([(2, 3, 4), (4, 5)], lambda t, a, b: a @ b, jnp.matmul, None),
    "matmul_vec": ([(3, 4), (4,)], lambda t, a, b: a @ b, jnp.matmul, None),
    "bmm": ([(2, 3, 4), (2, 4, 2)], lambda t, a, b: t.bmm(a, b), jnp.matmul, None),
    "dot": ([(4,), (4,)], lambda t, a, b: a.dot(b), jnp.dot, None),
    "einsum": ([(3, 4), (4, 5)], lambda t, a, b: t.einsum("ij,jk->ik", a, b),
               lambda a, b: jnp.einsum("ij,jk->ik", a, b), None),
    "transpose_view": ([(3, 4)], lambda t, a: a.t() * a.t(), lambda a: a.T * a.T, None),
    "permute": ([(2, 3, 4)], lambda t, a: a.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), None),
    "reshape": ([(3, 4)], lambda t, a: a.reshape(2, 6).exp(), lambda a: jnp.exp(a.reshape(2, 6)), None),
    "expand": ([(3, 1)], lambda t, a: a.expand(3, 4) * 2, lambda a: jnp.broadcast_to(a, (3, 4)) * 2, None),
    "slice_step": ([(6, 3)], lambda t, a: a[1::2, :2], lambda a: a[1::2, :2], None),
    "select_neg": ([(4, 3)], lambda t, a: a[-1], lambda a: a[-1], None),
    "index_tensor": ([(5, 2)], lambda t, a: a[t.tensor([0, 2, 2])], lambda a: a[jnp.array([0, 2, 2])], None),
    "mask_select": ([(5,)], lambda t, a: a[a > 0], None, None),
    "gather": ([(3, 4)], lambda t, a: a.gather(1, t.tensor([[0, 0], [1, 3], [2, 1]])),
               lambda a: jnp.take_along_axis(a, jnp.array([[0, 0], [1, 3], [2, 1]]), 1), None),
    "index_select": ([(4, 3)], lambda t, a: a.index_select(0, t.tensor([3, 0])), lambda a: a[jnp.array([3, 0])], None),
    "cat": ([(2, 3), (1, 3)], lambda t, a, b: t.cat([a, b, a]), lambda a, b: jnp.concatenate([a, b, a]), None),
    "stack": ([(2, 3), (2, 3)], lambda t, a, b: t.stack([a, b], 1), lambda a, b: jnp.stack([a, b], 1), None),
    "split": ([(5, 2)], lambda t, a: a.split(2)[1] * a.split(2)[2].sum(), lambda a: a[2:4] * a[4:].sum(), None),
    "unbind": ([(3, 2)], lambda t, a: a.unbind(0)[0] * a.unbind(0)[2], lambda a: a[0] * a[2], None),
    "flip": ([(3, 4)], lambda t, a: a.flip(0), lambda a: jnp.flip(a, 0), None),
    "roll": ([(5,)], lambda t, a: a.roll(2), lambda a: jnp.roll(a, 2), None),
    "repeat": ([(2, 3)], lambda t, a: a.repeat(2, 1), lambda a: jnp.tile(a, (2, 1)), None),
    "tril": ([(3, 3)], lambda t, a: a.tril(), jnp.tril, None),
    "diagonal": ([(3, 3)], lambda t, a: a.diagonal(), jnp.diagonal, None),
    "squeeze_unsqueeze": ([(3, 1)], lambda t, a: a.squeeze(1).unsqueeze(0) ** 2,
                          lambda a: jnp.expand_dims(a.squeeze(1), 0) ** 2, None),
    "masked_fill": ([(5,)], lambda t, a: a.masked_fill(a > 0, 0.0), lambda a: jnp.where(a > 0, 0.0, a), None),
    "softplus": ([(5,)], lambda t, a: t.nn.functional.softplus(a), jax.nn.softplus, None),
    "gelu": ([(5,)], lambda t, a: t.nn.functional.gelu(a), lambda a: jax.nn.gelu(a, approximate=False), None),
    "leaky_relu": ([(5,)], lambda t, a: t.nn.functional.leaky_relu(a, 0.1),
                   lambda a: jax.nn.leaky_relu(a, 0.1), None),
    "mse_loss": ([(4,), (4,)], lambda t, a, b: t.nn.functional.mse_loss(a, b), lambda a, b: ((a - b) ** 2).mean(), None),
    "layer_norm": ([(3, 4)], lambda t, a: t.nn.functional.layer_norm(a, (4,)),
                   lambda a: (a - a.mean(-1, keepdims=True)) / jnp.sqrt(a.var(-1, keepdims=True) + 1e-5), None),
    "cross_entropy": ([(3, 4)], lambda t, a: t.nn.functional.cross_entropy(a, t.tensor([0, 3, 1])),
                      lambda a: -jnp.take_along_axis(jax.nn.log_softmax(a, -1), jnp.array([[0], [3], [1]]), 1).mean(), None),
    "conv2d": ([(1, 2, 5, 5), (3, 2, 3, 3)], lambda t, a, w: t.nn.functional.conv2d(a, w, padding=1),
               lambda a, w: jax.lax.conv_general_dilated(a, w, (1, 1), ((1, 1), (1, 1))), None),
    "clone_inplace": ([(4,)], lambda t, a: a.clone().mul_(a).add_(1), lambda a: a * a + 1, None),
    "setitem": ([(4,), (2,)], lambda t, a, b: _setitem(a, b), lambda a, b: (a * 1).at[1:3].set(b * 2), None),
}


def _setitem(a, b):
    c = a * 1
    c[1:3] = b * 2
    return c


def _inputs(shapes, domain, seed):
    out = []
    for i, s in enumerate(shapes):
        x = rnd(s, seed + i)
        if domain == POS:
            x = np.abs(x) + 0.5
        elif domain == UNIT:
            x = np.tanh(x) * 0.9
        out.append(x)
    return out


def _grads(mod, fn, arrays, cot_seed):
    xs = [mod.tensor(a, dtype=mod.float64, requires_grad=True) for a in arrays]
    y = fn(mod, *xs)
    cot = mod.tensor(rnd(tuple(y.shape), cot_seed), dtype=mod.float64)
    (y * cot).sum().backward()
    return (np.asarray(y.detach().numpy()), type(y.grad_fn).__name__,
            [None if x.grad is None else np.asarray(x.grad.numpy()) for x in xs])


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_vs_torch_and_jax(name):
    shapes, fn, jfn, domain = CASES[name]
    arrays = _inputs(shapes, domain, 10)
    val, gname, grads = _grads(tracegrad, fn, arrays, 99)
    torch = pytest.importorskip("torch")
    tval, tname, tgrads = _grads(torch, fn, arrays, 99)
    np.testing.assert_allclose(val, tval, rtol=1e-9, atol=1e-12)
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(g, tg, rtol=1e-8, atol=1e-10)
    if jfn is not None:
        cot = rnd(tval.shape, 99)
        jg = jax.grad(lambda *a: jnp.sum(jfn(*a) * cot), argnums=tuple(range(len(arrays))))(
            *[jnp.asarray(a) for a in arrays])
        for g, j in zip(grads, jg):
            np.testing.assert_allclose(g, np.asarray(j), rtol=1e-8, atol=1e-10)
    assert gname == tname, f"grad_fn: torch {tname}, tracegrad {gname}"


SECOND_ORDER = ["mul_broadcast", "div", "pow_tensor", "exp", "log", "sqrt", "sin", "tanh",
                "sigmoid", "softmax", "log_softmax", "logsumexp", "mm", "matmul_batched",
                "norm", "var", "layer_norm", "gelu", "softplus", "cross_entropy", "prod",
                "transpose_view", "clone_inplace", "atan2"]


def _second(mod, fn, arrays):
    xs = [mod.tensor(a, dtype=mod.float64, requires_grad=True) for a in arrays]
    y = fn(mod, *xs)
    cot = mod.tensor(rnd(tuple(y.shape), 99), dtype=mod.float64)
    gs = mod.autograd.grad((y * cot).sum(), xs, create_graph=True)
    v = [mod.tensor(rnd(tuple(g.shape), 50 + i), dtype=mod.float64) for i, g in enumerate(gs)]
    hv = mod.autograd.grad(sum((g * w).sum() for g, w in zip(gs, v)), xs, allow_unused=True)
    return [None if h is None else np.asarray(h.detach().numpy()) for h in hv]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_vs_torch(name):
    """Hessian-vector products through create_graph=True match torch (and None-ness)."""
    shapes, fn, _, domain = CASES[name]
    arrays = _inputs(shapes, domain, 20)
    got = _second(tracegrad, fn, arrays)
    torch = pytest.importorskip("torch")
    ref = _second(torch, fn, arrays)
    for g, r in zip(got, ref):
        assert (g is None) == (r is None)
        if r is not None:
            np.testing.assert_allclose(g, r, rtol=1e-7, atol=1e-9)
