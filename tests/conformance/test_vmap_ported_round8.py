"""Round 8 port of PyTorch's test/functorch/test_vmap.py: TestRandomness (the ``randomness``
flag: 'error' refuses random ops, 'different' draws per example, 'same' shares one draw and
refuses a batched input to an in-place/tensor-parameterised draw) and TestVmapOperators (vmap
of view, shape, reduction and pointwise ops against the per-example loop, with in_dims and
out_dims). Each body runs under torch 2.13 (the oracle) and under tracegrad (the ``T``
fixture), device 'cpu', float32; inputs come from a fixed numpy stream. Shapes are small and
shared (every distinct shape costs an XLA compile). Each test names its original."""
import numpy as np
import pytest


def _np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


def rn(T, *shape, seed=0):
    return T.tensor(np.random.RandomState(seed).standard_normal(shape).astype("float32"))


def _loop(T, f, xs, in_dims=0, out_dim=0):
    """The per-example reference: f on each slice along ``in_dims``, stacked along ``out_dim``."""
    xs = xs if isinstance(xs, tuple) else (xs,)
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(xs)
    n = next(x.shape[d] for x, d in zip(xs, dims) if d is not None)
    outs = [f(*[x if d is None else x.select(d, i) for x, d in zip(xs, dims)]) for i in range(n)]
    if isinstance(outs[0], (tuple, list)):
        return tuple(T.stack([o[k] for o in outs], out_dim) for k in range(len(outs[0])))
    return T.stack(outs, out_dim)


def _check(T, f, xs, in_dims=0, out_dims=0, tol=1e-5):
    got = T.func.vmap(f, in_dims=in_dims, out_dims=out_dims)(*(xs if isinstance(xs, tuple) else (xs,)))
    want = _loop(T, f, xs, in_dims, out_dims if isinstance(out_dims, int) else 0)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape), (tuple(g.shape), tuple(w.shape))
        assert g.dtype == w.dtype
        np.testing.assert_allclose(_np(g), _np(w), rtol=tol, atol=tol)


# ==== TestRandomness ============================================================================
RANDOM_OPS = {
    "rand": lambda T, t: T.rand(2),
    "randn_like": lambda T, t: t + T.randn_like(t),
    "dropout": lambda T, t: T.nn.functional.dropout(t, 0.5),
    "normal": lambda T, t: T.normal(0.0, 1.0, (2,)),
    "randint": lambda T, t: T.randint(0, 10, (2,)).float(),
    "rand_like_square": lambda T, t: T.rand_like(t) * t,
}


@pytest.mark.parametrize("name", list(RANDOM_OPS))
def test_randomness_error(T, name):
    # TestRandomness.test_random_unary / test_randperm / test_dropout...: 'error' mode refuses
    x = T.ones(3, 2)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        T.func.vmap(lambda t: RANDOM_OPS[name](T, t), randomness="error")(x)


@pytest.mark.parametrize("name", list(RANDOM_OPS))
def test_randomness_different_and_same(T, name):
    # TestRandomness: 'different' gives each example its own draw, 'same' one shared draw
    x = T.ones(3, 2)
    f = lambda t: RANDOM_OPS[name](T, t)    # noqa: E731
    y = T.func.vmap(f, randomness="different")(x)
    assert tuple(y.shape) == (3, 2)
    assert not bool((y[0] == y[1]).all() and (y[1] == y[2]).all())
    y = T.func.vmap(f, randomness="same")(x)
    assert tuple(y.shape) == (3, 2)
    assert bool((y[0] == y[1]).all()) and bool((y[1] == y[2]).all())


def test_randomness_same_refuses_batched_tensor_parameter(T):
    # TestRandomness.test_bernoulli_tensor / test_normal_tensor / test_poisson /
    # test_multinomial: 'same' with a batched parameter tensor is refused; unbatched (in_dims
    # None) parameters, or batching only at an outer level, are fine
    msg = "Vmap does not currently support same randomness with a batched tensor input"
    x = T.full((3, 2), 0.5)
    for f in (T.bernoulli, lambda t: T.normal(t, 1.0), lambda t: T.normal(0.0, t + 1), T.poisson,
              lambda t: T.multinomial(t, 1)):
        with pytest.raises(RuntimeError, match=msg):
            T.func.vmap(f, randomness="same")(x)
    y = T.func.vmap(lambda t, p: T.bernoulli(p) + t, in_dims=(0, None), randomness="same")(T.zeros(3, 2), T.full((2,), 0.5))
    assert tuple(y.shape) == (3, 2) and bool((y[0] == y[1]).all())

    def outer(t):   # q is batched by the outer vmap only: the inner 'same' level may draw with it
        q = t * 0 + 0.5
        return T.func.vmap(lambda u: T.bernoulli(q) + u, randomness="same")(T.zeros(3, 2))
    assert tuple(T.func.vmap(outer, randomness="different")(T.zeros(4, 2)).shape) == (4, 3, 2)


def test_randomness_bad_flag(T):
    # TestRandomness.test_randomness_errors_with_bad_flag (the flag's values)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness are 'error', 'different', or 'same'"):
        T.func.vmap(lambda t: t, randomness="bad")(T.ones(3, 2))


def test_randomness_no_random_op_any_mode(T):
    # TestRandomness: a function without random ops runs in every mode with the same result
    x = rn(T, 3, 2)
    for mode in ("error", "different", "same"):
        assert np.allclose(_np(T.func.vmap(lambda t: t.sin(), randomness=mode)(x)), np.sin(_np(x)), atol=1e-6)


# ==== TestVmapOperators ==========================================================================
UNARY = ["abs", "asin", "ceil", "exp", "log1p", "relu", "rsqrt", "sigmoid", "sign", "tanh"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_pointwise_ops(T, name):
    # TestVmapOperators.test_unary_pointwise_ops: in_dims 0 and 1, out_dims 0 and 1
    x = rn(T, 3, 2, seed=1).abs() * 0.5 + 0.1 if name in ("acos", "asin") else rn(T, 3, 2, seed=1)
    if name in ("acos", "asin"):
        x = x.clamp(max=0.9)
    if name in ("log1p", "sqrt", "rsqrt"):
        x = x.abs() + 0.1
    f = getattr(T, name)
    _check(T, f, x)
    _check(T, f, x, in_dims=1, out_dims=1)


BINARY = {
    "add": lambda T, x, y: T.add(x, y, alpha=2), "sub": lambda T, x, y: x - y, "mul": lambda T, x, y: x * y,
    "div": lambda T, x, y: x / (y.abs() + 1), "pow": lambda T, x, y: x.abs().pow(y),
    "maximum": lambda T, x, y: T.maximum(x, y), "lt": lambda T, x, y: x < y,
    "where": lambda T, x, y: T.where(x > 0, x, y),
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_pointwise_ops(T, name):
    # TestVmapOperators._test_arithmetic / test_comparison_ops: both batched, one unbatched
    # (in_dims None), a scalar-shaped batched operand, and a batch dim at 1
    f = lambda x, y: BINARY[name](T, x, y)    # noqa: E731
    x, y = rn(T, 3, 2, seed=2), rn(T, 3, 2, seed=3)
    _check(T, f, (x, y))
    _check(T, f, (x, y), in_dims=(0, None))
    _check(T, f, (x, y.t().contiguous()), in_dims=(None, 1))
    _check(T, f, (x, rn(T, 3, seed=4)), in_dims=(0, 0))


VIEWS = {
    "diagonal": lambda T, x: T.diagonal(x, 0, 0, 1), "t": lambda T, x: x.t(), "T": lambda T, x: x.T,
    "transpose": lambda T, x: x.transpose(0, 1), "select": lambda T, x: x.select(1, 1),
    "slice": lambda T, x: x[:, 1:], "narrow": lambda T, x: x.narrow(0, 1, 1), "unsqueeze": lambda T, x: x.unsqueeze(1),
    "view": lambda T, x: x.view(-1), "reshape": lambda T, x: x.reshape(3, 2),
    "movedim": lambda T, x: T.movedim(x, 0, 1), "expand": lambda T, x: x.unsqueeze(0).expand(2, 2, 3),
    "unfold": lambda T, x: x.unfold(1, 2, 1), "roll": lambda T, x: x.roll(1, 1),
    "new_zeros": lambda T, x: x.new_zeros(2, 2) + x.sum(),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_and_shape_ops(T, name):
    # TestVmapOperators.test_diagonal / test_t / test_T_numpy / test_transpose / test_select /
    # test_slice / test_narrow / test_unsqueeze / test_squeeze / test_view / test_reshape /
    # test_flatten / test_permute / test_movedim / test_expand / test_unfold / test_new_zeros ...
    f = lambda x: VIEWS[name](T, x)    # noqa: E731
    x = rn(T, 4, 2, 3, seed=5)
    _check(T, f, x)
    _check(T, f, x.movedim(0, 2), in_dims=2, out_dims=1)


MULTI = {
    "unbind": lambda T, x: x.unbind(1), "split": lambda T, x: x.split(1, 1), "chunk": lambda T, x: x.chunk(2, 1),
    "tensor_split": lambda T, x: x.tensor_split(2, 1), "max_dim": lambda T, x: tuple(T.max(x, 1)),
    "sort": lambda T, x: tuple(T.sort(x, 1)), "topk": lambda T, x: tuple(T.topk(x, 2, 1)),
}


@pytest.mark.parametrize("name", list(MULTI))
def test_multiple_outputs(T, name):
    # TestVmapOperators.test_unbind / test_split / test_chunk / test_tensor_split / test_max_dim ...
    f = lambda x: MULTI[name](T, x)    # noqa: E731
    _check(T, f, rn(T, 4, 2, 3, seed=6))


REDUCE = {
    "sum": lambda T, x: x.sum(), "sum_dim": lambda T, x: x.sum(1), "mean": lambda T, x: x.mean(0, keepdim=True),
    "amax": lambda T, x: x.amax(0), "argmax": lambda T, x: x.argmax(1),
    "var": lambda T, x: x.var(1), "cumsum": lambda T, x: x.cumsum(1), "softmax": lambda T, x: T.softmax(x, 1),
    "trace": lambda T, x: x[:, :2].trace(),
}


@pytest.mark.parametrize("name", list(REDUCE))
def test_reductions(T, name):
    # TestVmapOperators.test_sum_dim / test_reduction_ops / test_cumsum / test_trace / test_softmax ...
    f = lambda x: REDUCE[name](T, x)    # noqa: E731
    x = rn(T, 4, 2, 3, seed=7)
    _check(T, f, x)
    _check(T, f, x.movedim(0, 1), in_dims=1)


LINALG = {
    "dot": (lambda T, x, y: T.dot(x, y), (3,), (3,)), "mv": (lambda T, x, y: T.mv(x, y), (2, 3), (3,)),
    "mm": (lambda T, x, y: T.mm(x, y), (2, 3), (3, 2)), "matmul": (lambda T, x, y: x @ y, (2, 3), (3,)),
    "outer": (lambda T, x, y: T.outer(x, y), (3,), (2,)), "bmm": (lambda T, x, y: T.bmm(x, y), (2, 2, 3), (2, 3, 2)),
}


@pytest.mark.parametrize("name", list(LINALG))
def test_linalg_products(T, name):
    # TestVmapOperators.test_dot / test_mv / test_mm / test_matmul / test_bmm: both batched, and
    # one side unbatched
    f, sa, sb = LINALG[name]
    g = lambda x, y: f(T, x, y)    # noqa: E731
    x, y = rn(T, 4, *sa, seed=8), rn(T, 4, *sb, seed=9)
    _check(T, g, (x, y))
    _check(T, g, (x, y[0]), in_dims=(0, None))


def test_cat_and_stack(T):
    # TestVmapOperators.test_cat / test_stack: batched with unbatched, different in_dims
    x, y = rn(T, 4, 2, seed=10), rn(T, 2, 4, seed=11)
    _check(T, lambda a, b: T.cat([a, b]), (x, y), in_dims=(0, 1))
    _check(T, lambda a, b: T.stack([a, b], 1), (x, y), in_dims=(0, 1))
    _check(T, lambda a, b: T.cat([a, b]), (x, y[:, 0]), in_dims=(0, None))


def test_to_and_dtype_queries(T):
    # TestVmapOperators.test_to / test_is_complex / test_is_floating_point / test_is_contiguous
    x = rn(T, 4, 2, 3, seed=12)
    _check(T, lambda t: t.to(T.float64), x)
    _check(T, lambda t: t.double().int(), x * 3)
    seen = []

    def f(t):
        seen.append((t.is_complex(), t.is_floating_point(), t.dim(), tuple(t.shape)))
        return t
    T.func.vmap(f)(x)
    assert seen == [(False, True, 2, (2, 3))]


def test_clamp_and_index_ops(T):
    # TestVmapOperators.test_clamp / test_index_select / test_gather / test_masked_fill
    x = rn(T, 4, 2, 3, seed=13)
    _check(T, lambda t: t.clamp(-0.5, 0.5), x)
    idx = T.tensor([2, 0])
    _check(T, lambda t: t.index_select(1, idx), x)
    _check(T, lambda t, i: t.gather(1, i), (x, T.tensor(np.random.RandomState(0).randint(0, 3, (4, 2, 2)))))
    _check(T, lambda t: t.masked_fill(t > 0, 0.0), x)
    _check(T, lambda t: t[:, T.tensor([1, 0, 2])], x)
