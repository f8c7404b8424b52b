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


# NOTE [shared MLIR contexts]: JAX's module lowering gets a per-thread context reused for
# xla_options._CONTEXT_USES programs; the lowered program is the one a fresh context gives.

def _context(fn, *args):
    return fn.lower(*args)._lowering._hlo.context


def test_lowerings_share_a_per_thread_context_and_rotate(monkeypatch):
    from jax._src.interpreters import mlir
    assert getattr(mlir.make_ir_context, "_tracegrad_shared", False)
    monkeypatch.setattr(xla_options, "_CONTEXT_USES", 3)
    f = jax.jit(lambda v: jnp.sin(v) * 2)
    ctxs = [_context(f, np.ones(n, np.float32)) for n in (11, 12, 13, 14, 15, 16)]
    # 3 programs per context: two runs of 3 equal neighbours, 2 distinct contexts at most 3 apart
    same = [a is b for a, b in zip(ctxs, ctxs[1:])]
    assert sum(same) == 4 and len({id(c) for c in ctxs}) == 2
    other = []
    t = __import__("threading").Thread(target=lambda: other.append(_context(f, np.ones(17, np.float32))))
    t.start()
    t.join()
    assert all(other[0] is not c for c in ctxs)        # another thread lowers in its own context


def test_shared_context_lowers_the_same_program_as_a_fresh_one(monkeypatch):
    from jax._src.interpreters import mlir

    def f(v, w):
        return jnp.sum(jnp.tanh(v) @ w, axis=0), jnp.cumsum(w, 1)
    args = (np.arange(6.0, dtype=np.float32).reshape(2, 3), np.ones((3, 4), np.float32))
    shared = jax.jit(f).lower(*args)
    monkeypatch.setattr(mlir, "make_ir_context", mlir.make_ir_context.__wrapped__)
    fresh = jax.jit(f).lower(*args)
    assert shared.as_text() == fresh.as_text()
    for a, b in zip(shared.compile()(*args), fresh.compile()(*args)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_export_keeps_its_fresh_contexts():
    # export re-parses and rewrites modules in contexts of its own (not ModuleContext's)
    exp = jax.export.export(jax.jit(lambda v: jnp.exp(v) + 1))(jax.ShapeDtypeStruct((3,), jnp.float32))
    np.testing.assert_allclose(np.asarray(exp.call(jnp.arange(3.0, dtype=jnp.float32))),
                               np.exp(np.arange(3.0)) + 1, rtol=1e-6)
