"""NOTE [eager compile options]: per-op programs compile with their own XLA options, which JAX
refuses on a jit staged inside another trace; such calls are traced through instead."""
import jax
import jax.numpy as jnp
import numpy as np

import tracegrad
from tracegrad._ops import xla_options
from tracegrad._ops.registry import OPS


def _options(jitted, *args):
    return dict(jitted.lower(*args)._lowering._compiler_options_kvs)


def test_eager_programs_carry_the_options_and_user_jits_do_not():
    opts = xla_options.eager_compiler_options()
    assert opts in ({}, {"xla_cpu_use_fusion_emitters": False})
    x = tracegrad.randn(5, 3)
    y = (x * 2).tanh().sum(0)
    np.testing.assert_allclose(y.numpy(), np.tanh(x.numpy() * 2).sum(0), rtol=1e-6)
    tanh = OPS["tanh"].forward(())
    assert _options(tanh, jnp.ones(3)) == opts
    # a user's own jit is untouched: importing tracegrad sets no XLA options for it
    assert _options(jax.jit(lambda v: v + 1), jnp.ones(3)) == {}


def test_concrete_tensor_ops_inside_a_user_jit_are_traced_through():
    const = tracegrad.arange(6.0).reshape(2, 3)

    @jax.jit
    def f(v):
        c = (const.t() * 2)[1:].exp()          # concrete tensors: eager programs met in a trace
        return c.jax() + v
    out = f(jnp.ones((2, 2)))
    ref = np.exp(np.arange(6.0).reshape(2, 3).T * 2)[1:] + 1
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-6)


def test_concrete_views_inside_a_compiled_step_equal_eager():
    w = tracegrad.randn(4, 3, requires_grad=True)
    table = tracegrad.randn(6, 4)              # a concrete constant the step slices and views

    def step(i):
        rows = table[1:5].t()[:, ::2]
        return (rows.sum() * w).sum() + i
    comp = tracegrad.compile(step)
    for i in range(3):
        np.testing.assert_allclose(comp(tracegrad.tensor(float(i))).detach().numpy(),
                                   step(tracegrad.tensor(float(i))).detach().numpy(), rtol=1e-6)


def test_meta_views_with_positions_give_shapes():
    x = tracegrad.empty(2, 3, 1, device="meta")
    assert x[:, 1:2].shape == (2, 1, 1)
    assert x.narrow(1, 1, 0).shape == (2, 0, 1)
    assert x.transpose(0, 2)[:, ::2].shape == (1, 2, 2)


def test_fused_updates_keep_xla_defaults_only_where_they_reduce_rank_3_arrays():
    """NOTE [reductions compile with the fusion emitters] holds for the fused in-place updates
    too (``_lowering/fused.py``): ``clip_grad_norm_`` over conv weights' gradients (norms of
    4-D arrays) compiles with XLA's defaults (with the eager options DARTS's ~400 gradients
    took 19 s), an elementwise optimizer update and a clip of 1-D/2-D gradients with the eager
    options; the values are torch's either way."""
    from tracegrad._lowering import fused
    torch = __import__("pytest").importorskip("torch")
    opts = xla_options.eager_compiler_options()
    rs = np.random.RandomState(0)

    def clip(shapes):
        grads = [rs.standard_normal(s).astype(np.float32) for s in shapes]
        ours = [tracegrad.nn.Parameter(tracegrad.zeros(*s)) for s in shapes]
        theirs = [torch.nn.Parameter(torch.zeros(*s)) for s in shapes]
        for p, q, g in zip(ours, theirs, grads):
            p.grad, q.grad = tracegrad.tensor(g), torch.tensor(g)
        before = set(fused._CACHE)
        total = tracegrad.nn.utils.clip_grad_norm_(ours, 0.5)
        want = torch.nn.utils.clip_grad_norm_(theirs, 0.5)
        np.testing.assert_allclose(total.item(), want.item(), rtol=1e-6)
        for p, q in zip(ours, theirs):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-7)
        (key,) = set(fused._CACHE) - before
        return fused._CACHE[key].program.options["compiler_options"]

    conv = clip([(3, 2, 3, 3), (3,), (4, 3, 1, 1)])
    assert not set(opts) & set(conv), conv           # XLA's defaults (besides exact precision)
    flat = clip([(5, 4), (5,)])
    assert all(flat.get(k) == v for k, v in opts.items()), flat


def test_transposing_programs_keep_xla_defaults_and_the_same_bits():
    """NOTE [transposes run with the fusion emitters]: ``t()``, a Linear layer's backward (a
    transposed weight and gradient) compile with XLA's defaults, an elementwise op with the
    eager options; the values are those of the same program under the other emitters, bit for
    bit, and torch's."""
    torch = __import__("pytest").importorskip("torch")
    opts = xla_options.eager_compiler_options()
    rs = np.random.RandomState(1)
    w = rs.standard_normal((48, 40)).astype(np.float32)
    x = rs.standard_normal((6, 40)).astype(np.float32)
    g = rs.standard_normal((6, 48)).astype(np.float32)
    for _ in range(20):            # past the first calls a data move runs on the host
        wt = tracegrad.tensor(w).t()
    assert _options(OPS["t"].forward(()), jnp.asarray(w)) == {}
    assert _options(OPS["tanh"].forward(()), jnp.asarray(w)) == opts
    np.testing.assert_array_equal(wt.numpy(), w.T)
    # a whole Linear forward and backward: torch's values; under the eager options too, the same bits
    wl = tracegrad.tensor(w, requires_grad=True)
    xl = tracegrad.tensor(x, requires_grad=True)
    tracegrad.nn.functional.linear(xl, wl).backward(tracegrad.tensor(g))
    wr, xr = torch.tensor(w, requires_grad=True), torch.tensor(x, requires_grad=True)
    torch.nn.functional.linear(xr, wr).backward(torch.tensor(g))
    np.testing.assert_allclose(wl.grad.numpy(), wr.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(xl.grad.numpy(), xr.grad.numpy(), rtol=1e-5, atol=1e-5)

    def backward(x, w, g):
        return jax.vjp(lambda x, w: x @ w.T, x, w)[1](g)
    args = jnp.asarray(x), jnp.asarray(w), jnp.asarray(g)
    ours = jax.jit(backward)(*args)
    other = jax.jit(backward, compiler_options=opts)(*args)
    for a, b in zip(ours, other):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
