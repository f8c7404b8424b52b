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
