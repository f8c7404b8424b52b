"""JAX interop for library users: ``from_jax``/``Tensor.jax()`` without copies, DLPack exchange
with torch and numpy, ``jax_function`` (a JAX function as one autograd node), and
``func.to_jax`` (a Module as a pure JAX function under jit/grad/vmap/optax)."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp

import tracegrad

RNG = np.random.default_rng(0)


def test_from_jax_and_jax_share_the_array():
    a = jnp.arange(6.0).reshape(2, 3)
    t = tracegrad.from_jax(a)
    assert t.jax() is a and t.shape == (2, 3) and t.dtype == tracegrad.float32
    assert not t.requires_grad and t.is_leaf
    view = t[1]
    np.testing.assert_array_equal(np.asarray(view.jax()), np.asarray(a[1]))
    t.add_(1)                   # a write gives the tensor a new array; the jax.Array is immutable
    np.testing.assert_array_equal(np.asarray(a), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(t.numpy(), np.arange(6.0).reshape(2, 3) + 1)
    with pytest.raises(TypeError, match="from_jax"):
        tracegrad.from_jax(np.ones(2))


def test_from_numpy_keeps_dtype_and_shares_memory():
    arr = np.arange(3, dtype=np.int32)
    t = tracegrad.from_numpy(arr)
    assert t.dtype == tracegrad.int32
    arr[0] = 7                   # torch's from_numpy shares the array's memory both ways
    assert t.tolist() == [7, 1, 2]
    t[1] = 5
    assert arr.tolist() == [7, 5, 2]


def test_dlpack_with_torch_and_numpy():
    torch = pytest.importorskip("torch")
    t = tracegrad.tensor(RNG.standard_normal((2, 3)), dtype=tracegrad.float64)
    tt = torch.from_dlpack(t)             # tracegrad -> torch through __dlpack__, no copy
    assert tt.dtype == torch.float64
    assert tt.data_ptr() == t.jax().unsafe_buffer_pointer()
    np.testing.assert_array_equal(tt.numpy(), t.numpy())
    cap = tracegrad.utils.dlpack.to_dlpack(t)
    np.testing.assert_array_equal(torch.utils.dlpack.from_dlpack(cap).numpy(), t.numpy())

    src = torch.arange(4, dtype=torch.float64) / 3
    for obj in (src, torch.utils.dlpack.to_dlpack(src), src.numpy()):
        back = tracegrad.utils.dlpack.from_dlpack(obj)
        assert back.dtype == tracegrad.float64
        np.testing.assert_array_equal(back.numpy(), src.numpy())
    assert tracegrad.from_dlpack is tracegrad.utils.dlpack.from_dlpack
    np.testing.assert_array_equal(np.from_dlpack(t), t.numpy())

    # torch's __dlpack__ refuses a tensor that requires grad, its to_dlpack does not; so do ours
    for mod in (torch, tracegrad):
        with pytest.raises(BufferError, match="detach"):
            mod.ones(2, requires_grad=True).__dlpack__()
        assert type(mod.utils.dlpack.to_dlpack(mod.ones(2, requires_grad=True))).__name__ == "PyCapsule"
    for mod in (torch, tracegrad):   # torch: "invalid capsule" RuntimeError for an object without __dlpack__
        with pytest.raises(RuntimeError):
            mod.utils.dlpack.from_dlpack([1.0, 2.0])


def _softplus_mul(x, y):
    return jnp.logaddexp(x, 0.0) * y


def test_jax_function_records_one_node_and_backward_is_its_vjp():
    op = tracegrad.jax_function(_softplus_mul)
    xa, ya = RNG.standard_normal(4), RNG.standard_normal(4)
    x = tracegrad.tensor(xa, requires_grad=True)
    y = tracegrad.tensor(ya, requires_grad=True)
    out = op(x, y)
    assert type(out.grad_fn).__name__ == "_softplus_mulBackward"
    assert [type(n).__name__ for n, _ in out.grad_fn.next_functions] == ["AccumulateGrad", "AccumulateGrad"]
    out.sum().backward()
    with jax.enable_x64(True):
        gx, gy = jax.grad(lambda a, b: _softplus_mul(a, b).sum(), argnums=(0, 1))(xa, ya)
    np.testing.assert_allclose(x.grad.numpy(), np.asarray(gx), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), np.asarray(gy), rtol=1e-12)


def test_jax_function_create_graph_and_second_derivative():
    op = tracegrad.jax_function(lambda x: jnp.sin(x) ** 3, name="SinCube")
    xa = RNG.standard_normal(3)
    x = tracegrad.tensor(xa, requires_grad=True)
    (g,) = tracegrad.autograd.grad(op(x).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    (gg,) = tracegrad.autograd.grad(g.sum(), x)
    with jax.enable_x64(True):
        f = lambda a: (jnp.sin(a) ** 3).sum()  # noqa: E731
        want_g = jax.grad(f)(xa)
        want_gg = jax.grad(lambda a: jax.grad(f)(a).sum())(xa)
    np.testing.assert_allclose(g.detach().numpy(), np.asarray(want_g), rtol=1e-12)
    np.testing.assert_allclose(gg.numpy(), np.asarray(want_gg), rtol=1e-12)


def test_jax_function_multi_output_static_kwargs_and_transforms():
    op = tracegrad.jax_function(lambda x, *, k: (x * k, jnp.cumsum(x)))
    x = tracegrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a, b = op(x, k=2.0)
    assert a.grad_fn is b.grad_fn
    (a.sum() + 2 * b.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 6.0, 4.0])
    # traced inline inside tracegrad.func and jax transforms
    g = tracegrad.func.grad(lambda t: op(t, k=3.0)[0].sum())(x.detach())
    np.testing.assert_allclose(g.numpy(), [3.0, 3.0, 3.0])
    with pytest.raises(TypeError, match="array or a tuple of arrays"):
        tracegrad.jax_function(lambda x: {"a": x})(x)
    with pytest.raises(TypeError, match="positional arguments"):
        op(x, "k")


def _model():
    tracegrad.manual_seed(0)
    nn = tracegrad.nn
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))


def test_to_jax_under_jit_grad_vmap():
    model = _model()
    params, apply = tracegrad.func.to_jax(model)
    assert set(params) == {k for k, _ in model.named_parameters()}
    assert all(isinstance(v, jax.Array) for v in params.values())
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    y = RNG.standard_normal((4, 2)).astype(np.float32)
    want = model(tracegrad.tensor(x))
    got = jax.jit(apply)(params, jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), want.detach().numpy(), rtol=1e-6)

    def loss(p, xb, yb):
        return ((apply(p, xb) - yb) ** 2).mean()
    grads = jax.jit(jax.grad(loss))(params, jnp.asarray(x), jnp.asarray(y))
    ((want - tracegrad.tensor(y)) ** 2).mean().backward()
    for k, p in model.named_parameters():
        np.testing.assert_allclose(np.asarray(grads[k]), p.grad.numpy(), rtol=1e-5, atol=1e-7)
    per_example = jax.vmap(apply, in_axes=(None, 0))(params, jnp.asarray(x[:, None, :]))
    np.testing.assert_allclose(np.asarray(per_example)[:, 0], want.detach().numpy(), rtol=1e-6)
    # the module itself is untouched (no tracer left behind)
    assert all(not isinstance(p.jax(), jax.core.Tracer) for p in model.parameters())


def test_to_jax_with_optax_matches_tracegrad_sgd():
    optax = pytest.importorskip("optax")
    model = _model()
    params, apply = tracegrad.func.to_jax(model)
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    y = RNG.standard_normal((4, 2)).astype(np.float32)
    opt = optax.sgd(0.1, momentum=0.9)
    state = opt.init(params)

    @jax.jit
    def step(p, s):
        g = jax.grad(lambda q: ((apply(q, x) - y) ** 2).mean())(p)
        upd, s = opt.update(g, s, p)
        return optax.apply_updates(p, upd), s
    for _ in range(3):
        params, state = step(params, state)

    sgd = tracegrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        sgd.zero_grad()
        ((model(tracegrad.tensor(x)) - tracegrad.tensor(y)) ** 2).mean().backward()
        sgd.step()
    for k, p in model.named_parameters():
        np.testing.assert_allclose(np.asarray(params[k]), p.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_jax_function_under_compile_equals_eager():
    op = tracegrad.jax_function(lambda x: jnp.logaddexp(x, 0.0), name="Softplus")
    w = tracegrad.tensor(RNG.standard_normal(3), requires_grad=True)

    def step(x):
        loss = op(x * w).sum()
        loss.backward()
        return loss
    x = tracegrad.tensor(RNG.standard_normal(3))
    want = step(x).item(), w.grad.clone()
    compiled = tracegrad.compile(step)
    for _ in range(2):
        w.grad = None
        got = compiled(x).item()
        assert got == pytest.approx(want[0], rel=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), want[1].numpy(), rtol=1e-6)
