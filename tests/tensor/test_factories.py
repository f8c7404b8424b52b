"""Parity of tensor factories with torch (values, dtypes, shapes, requires_grad, errors), and
the random factories by shape/dtype/range/statistics and per-seed reproducibility (streams
differ from torch's by design)."""
import re

import numpy as np
import pytest

import tracegrad
from parity import A, C, F, I, check_parity, params

torch = pytest.importorskip("torch")

FACTORIES = [
    C("tensor_floats", lambda t: t.tensor([1.0, 2.5]), []),
    C("tensor_ints", lambda t: t.tensor([[1, 2], [3, 4]]), []),
    C("tensor_bools", lambda t: t.tensor([True, False]), []),
    C("tensor_mixed", lambda t: t.tensor([1, 2.5, True]), []),
    C("tensor_scalar", lambda t: t.tensor(3), []),
    C("tensor_scalar_float", lambda t: t.tensor(3.5), []),
    C("tensor_empty", lambda t: t.tensor([]), []),
    C("tensor_dtype", lambda t: t.tensor([1, 2], dtype=t.float64), []),
    C("tensor_requires_grad", lambda t: t.tensor([1.0, 2.0], requires_grad=True), []),
    C("tensor_int_requires_grad_raises", lambda t: t.tensor([1, 2], requires_grad=True), [], raises=True),
    C("tensor_ragged_raises", lambda t: t.tensor([[1, 2], [3]]), [], raises=True),
    C("tensor_str_raises", lambda t: t.tensor("abc"), [], raises=True),
    C("tensor_neg_int_uint8_wraps", lambda t: t.tensor([-2, 3], dtype=t.uint8), []),
    C("tensor_neg_float_uint8_raises", lambda t: t.tensor([1.7, -2.5], dtype=t.uint8), [], raises=True),
    C("tensor_small_neg_float_uint8_raises", lambda t: t.tensor([-0.5], dtype=t.uint8), [], raises=True),
    C("tensor_float_over_int8_raises", lambda t: t.tensor([127.9], dtype=t.int8), [], raises=True),
    C("tensor_float_int8_truncates", lambda t: t.tensor([-0.5, -2.0, 126.9], dtype=t.int8), []),
    C("tensor_deque", lambda t: t.tensor(__import__("collections").deque([1.0, 2.5])), []),
    C("tensor_nested_deque_tuple", lambda t: t.tensor([__import__("collections").deque([1, 2]), (3, 4)]), []),
    C("tensor_userlist_ragged_raises",
      lambda t: t.tensor(__import__("collections").UserList([[1, 2], __import__("collections").deque([3])])), [],
      raises=True),
    C("tensor_set_raises", lambda t: t.tensor({1, 2}), [], raises=True),
    C("tensor_of_0d_tensors", lambda t: t.tensor([t.tensor(1.0), t.tensor(2.0)]), []),
    C("tensor_numpy_f64", lambda t: t.tensor(np.array([1.0, 2.0])), []),
    C("tensor_numpy_i32", lambda t: t.tensor(np.array([1, 2], dtype=np.int32)), []),
    C("tensor_from_tensor", lambda t, x: t.tensor(x.detach()), [F(3)]),
    C("as_tensor_same", lambda t, x: t.as_tensor(x) is x, [F(3)]),
    C("as_tensor_dtype", lambda t, x: t.as_tensor(x, dtype=t.float64), [F(3)]),
    C("as_tensor_list", lambda t: t.as_tensor([1, 2, 3]), []),
    C("from_numpy", lambda t: t.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3)), []),
    C("from_numpy_int", lambda t: t.from_numpy(np.arange(3)), []),
    C("from_numpy_list_raises", lambda t: t.from_numpy([1, 2]), [], raises=True),
    C("ones", lambda t: t.ones(2, 3), []),
    C("ones_tuple", lambda t: t.ones((2, 3), dtype=t.int32), []),
    C("ones_size", lambda t, x: t.ones(x.shape), [F(2, 3)]),
    C("ones_requires_grad", lambda t: t.ones(2, requires_grad=True), []),
    C("zeros", lambda t: t.zeros(3), []),
    C("zeros_0d", lambda t: t.zeros(()), []),
    C("zeros_negative_raises", lambda t: t.zeros(-1), [], raises=True),
    C("full", lambda t: t.full((2, 2), 7), []),
    C("full_float", lambda t: t.full((2,), 1.5), []),
    C("full_bool", lambda t: t.full((2,), True), []),
    C("full_dtype", lambda t: t.full((2,), 3, dtype=t.float32), []),
    C("empty_shape", lambda t: (t.empty(2, 3).shape, t.empty(2, 3).dtype, t.empty(0).shape), []),
    C("eye", lambda t: t.eye(3), []),
    C("eye_rect", lambda t: t.eye(2, 4, dtype=t.int64), []),
    C("arange", lambda t: t.arange(5), []),
    C("arange_start_end", lambda t: t.arange(2, 7), []),
    C("arange_step", lambda t: t.arange(0, 1, 0.25), []),
    C("arange_neg_step", lambda t: t.arange(5, 0, -2), []),
    C("arange_float_end", lambda t: t.arange(3.0), []),
    C("arange_dtype", lambda t: t.arange(4, dtype=t.float64), []),
    C("arange_zero_step_raises", lambda t: t.arange(0, 3, 0), [], raises=True),
    C("linspace", lambda t: t.linspace(0, 1, 5), []),
    C("linspace_one", lambda t: t.linspace(-1, 1, 1), []),
    C("linspace_dtype", lambda t: t.linspace(0, 10, 4, dtype=t.float64), []),
    C("logspace", lambda t: t.logspace(0, 2, 3), []),
    C("zeros_like", lambda t, x: t.zeros_like(x), [F(2, 3)]),
    C("ones_like_dtype", lambda t, x: t.ones_like(x, dtype=t.int64), [F(2, 3)]),
    C("ones_like_int", lambda t, x: t.ones_like(x), [I(2, 3)]),
    C("full_like", lambda t, x: t.full_like(x, 2.5), [F(2, 3)]),
    C("full_like_int", lambda t, x: t.full_like(x, 2.7), [I(2, 3)]),
    C("empty_like", lambda t, x: (t.empty_like(x).shape, t.empty_like(x).dtype), [I(2, 3)]),
    C("zeros_like_requires_grad", lambda t, x: t.zeros_like(x, requires_grad=True), [F(2)]),
    C("legacy_Tensor", lambda t: t.Tensor([1, 2]), []),
    C("legacy_Tensor_sizes", lambda t: t.Tensor(2, 3).shape, []),
    C("legacy_Tensor_empty", lambda t: (t.Tensor(), repr(t.Tensor())), []),
]


@params(FACTORIES)
def test_parity(case):
    check_parity(case, torch)


RANDOM = [
    # name, draw(module, generator) -> tensor, (torch dtype name, shape), (low, high) or None
    ("rand", lambda t, g: t.rand(500, 4, generator=g), ("float32", (500, 4)), (0.0, 1.0)),
    ("rand_f64", lambda t, g: t.rand(3, dtype=t.float64, generator=g), ("float64", (3,)), (0.0, 1.0)),
    ("randn", lambda t, g: t.randn(500, 4, generator=g), ("float32", (500, 4)), None),
    ("randint", lambda t, g: t.randint(3, 10, (400,), generator=g), ("int64", (400,)), (3, 9)),
    ("randint_high_only", lambda t, g: t.randint(5, (400,), generator=g), ("int64", (400,)), (0, 4)),
    ("randint_high_size_kw", lambda t, g: t.randint(5, size=(400,), generator=g), ("int64", (400,)), (0, 4)),
    ("randperm", lambda t, g: t.randperm(10, generator=g), ("int64", (10,)), (0, 9)),
    ("normal_floats", lambda t, g: t.normal(2.0, 3.0, (2000,), generator=g), ("float32", (2000,)), None),
    ("normal_tensor", lambda t, g: t.normal(t.zeros(3), t.ones(3), generator=g), ("float32", (3,)), None),
]


@pytest.mark.parametrize("name,draw,meta,rng", RANDOM, ids=[r[0] for r in RANDOM])
def test_random_factories(name, draw, meta, rng):
    want = draw(torch, torch.Generator().manual_seed(0))
    got = draw(tracegrad, tracegrad.Generator().manual_seed(0))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] == meta[0]
    assert tuple(got.shape) == tuple(want.shape) == meta[1]
    v = got.numpy()
    if rng is not None:
        assert v.min() >= rng[0] and v.max() <= rng[1]
        if v.dtype.kind == "i" and v.size > 100:
            assert set(np.unique(v)) == set(range(rng[0], rng[1] + 1))  # every value drawn
    if name == "randperm":
        assert sorted(v.tolist()) == list(range(10))
    # same seed -> same values; different seed -> different values
    again = draw(tracegrad, tracegrad.Generator().manual_seed(0)).numpy()
    other = draw(tracegrad, tracegrad.Generator().manual_seed(1)).numpy()
    np.testing.assert_array_equal(v, again)
    assert not np.array_equal(v, other)


def test_random_statistics():
    g = tracegrad.Generator().manual_seed(3)
    u = tracegrad.rand(20000, generator=g).numpy()
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    n = tracegrad.randn(20000, generator=g).numpy()
    assert abs(n.mean()) < 0.03 and abs(n.std() - 1) < 0.03
    m = tracegrad.normal(2.0, 3.0, (20000,), generator=g).numpy()
    assert abs(m.mean() - 2.0) < 0.1 and abs(m.std() - 3.0) < 0.1


def test_manual_seed_reproducible():
    tracegrad.manual_seed(123)
    a = tracegrad.randn(5).numpy()
    b = tracegrad.randn(5).numpy()
    tracegrad.manual_seed(123)
    np.testing.assert_array_equal(tracegrad.randn(5).numpy(), a)
    np.testing.assert_array_equal(tracegrad.randn(5).numpy(), b)
    assert not np.array_equal(a, b)
    assert tracegrad.initial_seed() == 123
    state = tracegrad.get_rng_state()
    c = tracegrad.rand(4).numpy()
    tracegrad.set_rng_state(state)
    np.testing.assert_array_equal(tracegrad.rand(4).numpy(), c)


def test_manual_seed_key_is_jaxs_key_of_the_seed():
    # manual_seed builds JAX's threefry key of the seed with numpy (generator._seed_key): it
    # must be the key JAX's own seeding gives, for small, 32-bit-boundary, 64-bit and negative seeds
    import jax
    g = tracegrad.Generator()
    for seed in (0, 7, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 3, 2 ** 63 - 1, 67280421310721, -5):
        g.manual_seed(seed)
        with jax.enable_x64(True):
            want = jax.random.key_data(jax.random.PRNGKey(seed % 2 ** 64 % 2 ** 63))
        assert g._key.dtype == want.dtype and g._key.shape == want.shape
        np.testing.assert_array_equal(np.asarray(g._key), np.asarray(want))


@pytest.mark.parametrize("mod", ["tracegrad", "torch"])
def test_rng_state_restores_initial_seed_and_rejects_bad_states(mod):
    m = tracegrad if mod == "tracegrad" else torch
    m.manual_seed(5)
    state = m.get_rng_state()
    assert state.dtype == m.uint8 and state.dim() == 1
    a = m.rand(3).tolist()
    m.manual_seed(7)
    m.set_rng_state(state)
    assert m.initial_seed() == 5                 # torch's state holds the seed too
    assert m.rand(3).tolist() == a
    g = m.Generator().manual_seed(11)
    st = g.get_state()
    g.manual_seed(3)
    assert g.set_state(st) is g and g.initial_seed() == 11
    with pytest.raises(TypeError):
        m.set_rng_state(m.zeros(3))
    with pytest.raises(TypeError):
        m.set_rng_state([1, 2])
    with pytest.raises(RuntimeError):
        m.set_rng_state(m.zeros(3, dtype=m.uint8))


def test_generator_api():
    g = tracegrad.Generator()
    assert g.manual_seed(7) is g
    assert g.initial_seed() == 7
    assert tracegrad.Generator().initial_seed() == torch.Generator().initial_seed()
    assert isinstance(tracegrad.manual_seed(1), tracegrad.Generator)
    # a generator's stream is independent of the default one
    g1 = tracegrad.Generator().manual_seed(5)
    x = tracegrad.rand(3, generator=g1).numpy()
    tracegrad.rand(10)
    g2 = tracegrad.Generator().manual_seed(5)
    np.testing.assert_array_equal(tracegrad.rand(3, generator=g2).numpy(), x)


def test_random_requires_grad_and_errors():
    x = tracegrad.randn(3, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    for mod in (torch, tracegrad):
        with pytest.raises(RuntimeError):
            mod.randint(0, 5, (3,), requires_grad=True)
        with pytest.raises(TypeError):
            mod.randint(5)   # no size
        with pytest.raises(RuntimeError):
            mod.rand(-1)


@pytest.mark.parametrize("call, name", [
    (lambda m: m.randint(20480 / 160 - 12, size=(1,)), "'high' (position 1)"),   # CPC's time stamp
    (lambda m: m.randint(4.0, (2,)), "'high' (position 1)"),
    (lambda m: m.randint(np.float64(3), (2,)), "'high' (position 1)"),
    (lambda m: m.randint(m.tensor(4.0), (2,)), "'high' (position 1)"),
])
def test_randint_float_bound_names_the_overloads_argument(call, name):
    # torch's randint(high, size) overload calls its first argument 'high': a float there is a
    # TypeError that names it (tracegrad named the signature's 'low'); int-like bounds still draw
    for mod in (torch, tracegrad):
        with pytest.raises(TypeError, match=re.escape(f"argument {name} must be int")):
            call(mod)
    assert tracegrad.randint(np.int64(4), (2,)).dtype == tracegrad.int64
    assert tracegrad.randint(tracegrad.tensor(4), (2,)).shape == (2,)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int8", "uint8"])
def test_linspace_values_are_torchs_to_the_last_bit(dtype):
    # torch fills the first half from start and the second from end, one rounding per point:
    # later floors (affine_grid's identity grid in grid_sample) depend on the last place
    cases = [(-1, 1, 28), (0.1, 0.7, 1000), (1, -1, 9), (0, 10, 4), (3, 3, 1), (0, 1, 0)]
    if dtype != "uint8":    # torch refuses a negative float endpoint for uint8
        cases.append((-3.5, 7.25, 17))
    for args in cases:
        a = torch.linspace(*args, dtype=getattr(torch, dtype))
        b = tracegrad.linspace(*args, dtype=getattr(tracegrad, dtype))
        assert str(b.dtype).rsplit(".")[-1] == dtype
        np.testing.assert_array_equal(b.float().numpy().view(np.int32), a.float().numpy().view(np.int32))


def test_linspace_complex_endpoints_give_a_complex_result():
    a, b = torch.linspace(0, 1j, 3), tracegrad.linspace(0, 1j, 3)
    assert str(b.dtype) == "tracegrad.complex64" and str(a.dtype) == "torch.complex64"
    np.testing.assert_allclose(b.numpy(), a.numpy())


# A 0-d integer numpy array is a size like numpy's integer scalars (torch reads it through
# ``__index__``): e-hulten/real-nvp-2d builds ``nn.Linear(mask.sum().numpy(), ...)``. A float,
# bool or 1-d array stays torch's TypeError; a negative one is its RuntimeError.
@pytest.mark.parametrize("make", [
    lambda t: t.empty(np.array(3), 2).shape,
    lambda t: t.zeros((2, np.array(3, dtype=np.int32))).shape,
    lambda t: t.ones(2, 3).new_zeros(np.array(2)).shape,
    lambda t: t.ones(2, 3).reshape(np.array(6)).shape,
    lambda t: t.nn.Linear(np.array(2), np.array(3)).weight.shape,
    lambda t: t.empty(np.array(-1)),
    lambda t: t.empty(np.array(3.0)),
    lambda t: t.empty(np.array([3])),
    lambda t: t.empty(np.array(True), 2),
])
def test_zero_dim_numpy_int_is_a_size(make):
    def outcome(t):
        try:
            return tuple(make(t))
        except Exception as e:   # noqa: BLE001 - the class is what is compared
            return type(e)
    assert outcome(tracegrad) == outcome(torch)
