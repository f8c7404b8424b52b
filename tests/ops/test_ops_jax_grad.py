"""Gradients of a subset of ops against a second oracle: ``jax.grad`` of the equivalent
``jax.numpy`` program (in float64, so the comparison is tight). Each line: the tracegrad
program, the jax.numpy program, the input shapes (and a value range)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tracegrad as tg

# the float64 oracle (or hand-written jax.jit) is this file's own JAX code: x64 on for it
pytestmark = pytest.mark.usefixtures("jax_x64")

POS = (0.2, 2.0)
UNIT = (-0.9, 0.9)

CASES = [
    # name, tracegrad fn, jnp fn, shapes, range
    ("exp", lambda x: x.exp(), jnp.exp, [(3, 4)], None),
    ("log", lambda x: x.log(), jnp.log, [(3, 4)], POS),
    ("sqrt", lambda x: x.sqrt(), jnp.sqrt, [(3, 4)], POS),
    ("rsqrt", lambda x: x.rsqrt(), lambda x: 1 / jnp.sqrt(x), [(3, 4)], POS),
    ("tanh", lambda x: x.tanh(), jnp.tanh, [(3, 4)], None),
    ("sigmoid", lambda x: x.sigmoid(), jax.nn.sigmoid, [(3, 4)], None),
    ("asin", lambda x: x.asin(), jnp.arcsin, [(3, 4)], UNIT),
    ("erfinv", lambda x: x.erfinv(), jax.scipy.special.erfinv, [(3, 4)], UNIT),
    ("reciprocal", lambda x: x.reciprocal(), lambda x: 1 / x, [(3, 4)], POS),
    ("mul_bcast", lambda x, y: x * y, jnp.multiply, [(3, 4), (4,)], None),
    ("div_bcast", lambda x, y: x / y, jnp.divide, [(3, 1), (1, 4)], POS),
    ("pow_tensor", lambda x, y: x ** y, jnp.power, [(3, 4), (3, 4)], POS),
    ("atan2", lambda x, y: tg.atan2(x, y), jnp.arctan2, [(3, 4), (3, 4)], POS),
    ("lerp", lambda x, y, w: tg.lerp(x, y, w), lambda x, y, w: x + w * (y - x), [(3, 4)] * 3, None),
    ("addcdiv", lambda s, a, b: tg.addcdiv(s, a, b, value=0.5), lambda s, a, b: s + 0.5 * a / b, [(3, 4)] * 3, POS),
    ("where", lambda x, y: tg.where(x > 1, x, y), lambda x, y: jnp.where(x > 1, x, y), [(3, 4), (3, 4)], POS),
    ("clamp_tensor", lambda x, lo: tg.clamp(x, lo), lambda x, lo: jnp.maximum(x, lo), [(3, 4), (3, 4)], None),
    ("sum_dim", lambda x: x.sum(1, keepdim=True), lambda x: x.sum(1, keepdims=True), [(3, 4)], None),
    ("mean", lambda x: x.mean(0), lambda x: x.mean(0), [(3, 4)], None),
    ("prod", lambda x: x.prod(1), lambda x: x.prod(1), [(3, 4)], POS),
    ("var", lambda x: x.var(1), lambda x: x.var(1, ddof=1), [(3, 4)], None),
    ("std", lambda x: x.std(), lambda x: x.std(ddof=1), [(3, 4)], None),
    ("logsumexp", lambda x: x.logsumexp(1), lambda x: jax.scipy.special.logsumexp(x, 1), [(3, 4)], None),
    ("softmax", lambda x: x.softmax(-1), lambda x: jax.nn.softmax(x, -1), [(3, 4)], None),
    ("log_softmax", lambda x: x.log_softmax(0), lambda x: jax.nn.log_softmax(x, 0), [(3, 4)], None),
    ("norm", lambda x: x.norm(dim=1), lambda x: jnp.linalg.norm(x, axis=1), [(3, 4)], None),
    ("cumsum", lambda x: x.cumsum(1), lambda x: jnp.cumsum(x, 1), [(3, 4)], None),
    ("cumprod", lambda x: x.cumprod(1), lambda x: jnp.cumprod(x, 1), [(3, 4)], POS),
    ("max_dim", lambda x: x.max(1).values, lambda x: x.max(1), [(3, 4)], None),
    ("matmul_batched", lambda a, b: a @ b, jnp.matmul, [(2, 3, 4), (4, 5)], None),
    ("addmm", lambda c, a, b: tg.addmm(c, a, b, beta=0.5, alpha=2.0), lambda c, a, b: 0.5 * c + 2.0 * a @ b,
     [(3, 2), (3, 4), (4, 2)], None),
    ("einsum", lambda a, b: tg.einsum("bij,jk->bik", a, b), lambda a, b: jnp.einsum("bij,jk->bik", a, b),
     [(2, 3, 4), (4, 2)], None),
    ("getitem_adv", lambda x: x[tg.tensor([0, 2, 2]), 1:], lambda x: x[jnp.array([0, 2, 2]), 1:], [(3, 4)], None),
    ("getitem_mask", lambda x: x[x > 1], lambda x: x[np.asarray(_last_mask)], [(3, 4)], POS),
    ("gather", lambda x: x.gather(1, tg.tensor([[0, 0], [1, 3], [2, 2]])),
     lambda x: jnp.take_along_axis(x, jnp.array([[0, 0], [1, 3], [2, 2]]), 1), [(3, 4)], None),
    ("scatter_add", lambda x, s: x.scatter_add(1, tg.tensor([[0, 0], [1, 3], [2, 2]]), s),
     lambda x, s: x.at[jnp.array([[0], [1], [2]]), jnp.array([[0, 0], [1, 3], [2, 2]])].add(s), [(3, 4), (3, 2)], None),
    ("cat_stack", lambda a, b: tg.stack([tg.cat([a, b]), tg.cat([b, a])]),
     lambda a, b: jnp.stack([jnp.concatenate([a, b]), jnp.concatenate([b, a])]), [(2, 3), (2, 3)], None),
    ("permute_reshape", lambda x: x.permute(2, 0, 1).reshape(4, 6), lambda x: jnp.transpose(x, (2, 0, 1)).reshape(4, 6),
     [(2, 3, 4)], None),
    ("setitem", lambda x, v: _setitem_tg(x, v), lambda x, v: (x * 1).at[1, 1:3].set(v * 2), [(3, 4), (2,)], None),
]

_last_mask = None


def _setitem_tg(x, v):
    y = x * 1
    y[1, 1:3] = v * 2
    return y


@pytest.mark.parametrize("name,tfn,jfn,shapes,rng", CASES, ids=[c[0] for c in CASES])
def test_grad_matches_jax(name, tfn, jfn, shapes, rng):
    global _last_mask
    rs = np.random.RandomState(7)
    xs = [rs.uniform(*rng, s) if rng else rs.standard_normal(s) for s in shapes]
    if name == "getitem_mask":
        _last_mask = xs[0] > 1
    ts = [tg.tensor(x, dtype=tg.float64, requires_grad=True) for x in xs]
    out = tfn(*ts)
    w = rs.standard_normal(tuple(out.shape))
    (out * tg.tensor(w)).sum().backward()

    def loss(*a):
        return jnp.sum(jfn(*a) * w)
    want = jax.grad(loss, argnums=tuple(range(len(xs))))(*[jnp.asarray(x) for x in xs])
    np.testing.assert_allclose(out.detach().numpy(), np.asarray(jfn(*[jnp.asarray(x) for x in xs])), rtol=1e-10, atol=1e-12)
    for t, g in zip(ts, want):
        np.testing.assert_allclose(t.grad.numpy(), np.asarray(g), rtol=1e-9, atol=1e-11, err_msg=name)
