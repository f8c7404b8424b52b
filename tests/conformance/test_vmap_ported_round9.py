"""Ported from PyTorch's test/functorch/test_vmap.py (TestRandomness), round 9: random ops under
``vmap(..., randomness=...)`` -- 'error' refuses any draw, 'same' gives every example the same
values, 'different' gives each its own; in-place draws into batched and unbatched tensors; draws
with batched parameters under 'same'. Each body runs under torch 2.13 (the oracle) and tracegrad
through the ``T`` fixture.

Adapted: the originals compare against draws replayed from a saved RNG state; the random streams
differ between the libraries, so the ports assert the structure those comparisons check (rows
equal or not, shapes, errors) instead of values. Not ported: the CUDA and `_in_place` dtype
grids (one float32 case each here)."""
import pytest

ERROR_MSG = "called random operation while in randomness error mode"
SAME_BATCHED_MSG = "Vmap does not currently support same randomness with a batched tensor input"
INPLACE_UNBATCHED_MSG = "different inplace randomness on an unbatched tensor"
B = 3


def _rows_equal(out):
    return bool((out == out[0]).all())


def _x(T):
    return T.ones(B, 4)


OUT_OF_PLACE = {
    # TestRandomness.test_factory_ops
    "rand": lambda T: lambda t: T.rand(4),
    "randn": lambda T: lambda t: T.randn(4),
    "randint": lambda T: lambda t: T.randint(0, 1000, (4,)).float(),
    "randperm": lambda T: lambda t: T.randperm(4).float(),
    # TestRandomness.test_like_functions
    "rand_like": lambda T: lambda t: T.rand_like(t),
    "randn_like": lambda T: lambda t: T.randn_like(t),
    "randint_like": lambda T: lambda t: T.randint_like(t, 0, 1000),
    # TestRandomness.test_random_unary_out_of_place (unbatched parameter)
    "bernoulli_scalar_p": lambda T: lambda t: T.bernoulli(T.full((16,), 0.5)),
    "poisson": lambda T: lambda t: T.poisson(T.full((16,), 4.0)),
    # TestRandomness.test_dropout / test_alpha_dropout / test_feature_dropout
    "dropout": lambda T: lambda t: T.nn.functional.dropout(T.ones(16) + t.sum() * 0, 0.5),
    "alpha_dropout": lambda T: lambda t: T.nn.functional.alpha_dropout(T.ones(16) + t.sum() * 0, 0.5, True),
    "feature_dropout": lambda T: lambda t: T.nn.functional.dropout2d(T.ones(8, 2, 2) + t.sum() * 0, 0.5),
}


@pytest.mark.parametrize("name", list(OUT_OF_PLACE))
@pytest.mark.parametrize("randomness", ["error", "same", "different"])
def test_random_out_of_place(T, name, randomness):
    # TestRandomness: test_factory_ops, test_like_functions, test_random_unary_out_of_place,
    # test_dropout, test_alpha_dropout, test_feature_dropout
    T.manual_seed(0)
    fn = OUT_OF_PLACE[name](T)
    if randomness == "error":
        with pytest.raises(RuntimeError, match=ERROR_MSG):
            T.vmap(fn, randomness=randomness)(_x(T))
        return
    out = T.vmap(fn, randomness=randomness)(_x(T))
    assert out.shape[0] == B
    assert _rows_equal(out) == (randomness == "same")


@pytest.mark.parametrize("op", ["uniform_", "normal_", "bernoulli_", "exponential_", "random_", "cauchy_",
                                "log_normal_", "geometric_"])
@pytest.mark.parametrize("randomness", ["error", "same", "different"])
def test_random_unary_inplace_batched(T, op, randomness):
    # TestRandomness.test_random_unary_inplace (batched_input="first"): drawing in place into a
    # batched tensor
    args = (0.5,) if op in ("bernoulli_", "geometric_") else ()

    def fn(t):
        return getattr(t.clone(), op)(*args)

    T.manual_seed(0)
    x = T.ones(B, 16)
    if randomness == "error":
        with pytest.raises(RuntimeError, match=ERROR_MSG):
            T.vmap(fn, randomness=randomness)(x)
        return
    out = T.vmap(fn, randomness=randomness)(x)
    assert out.shape == (B, 16)
    assert _rows_equal(out) == (randomness == "same")


@pytest.mark.parametrize("op", ["uniform_", "normal_", "bernoulli_"])
@pytest.mark.parametrize("randomness", ["error", "same", "different"])
def test_random_unary_inplace_unbatched(T, op, randomness):
    # TestRandomness.test_random_unary_inplace (batched_input="none"): drawing in place into a
    # tensor captured from outside: 'different' cannot (the tensor holds one draw) and raises
    y = T.ones(16)

    def fn(t):
        getattr(y, op)()
        return t + y

    T.manual_seed(0)
    if randomness == "error":
        with pytest.raises(RuntimeError, match=ERROR_MSG):
            T.vmap(fn, randomness=randomness)(T.ones(B, 16))
    elif randomness == "different":
        with pytest.raises(RuntimeError, match=INPLACE_UNBATCHED_MSG):
            T.vmap(fn, randomness=randomness)(T.ones(B, 16))
    else:
        out = T.vmap(fn, randomness=randomness)(T.ones(B, 16))
        assert _rows_equal(out)


BATCHED_PARAM = {
    # TestRandomness.test_random_unary_out_of_place / test_random_binary_out_of_place /
    # test_bernoulli_out_of_place (batched probabilities, means, rates)
    "bernoulli": lambda T: lambda t: T.bernoulli(t * 0.5),
    "poisson": lambda T: lambda t: T.poisson(t * 4.0),
    "normal": lambda T: lambda t: T.normal(t, t),
    "multinomial": lambda T: lambda t: T.multinomial(t, 2).float(),
    "binomial": lambda T: lambda t: T.binomial(t * 10, t * 0.5),
}


@pytest.mark.parametrize("name", list(BATCHED_PARAM))
@pytest.mark.parametrize("randomness", ["error", "same", "different"])
def test_random_batched_parameters(T, name, randomness):
    # TestRandomness: a draw whose parameters are batched: 'same' cannot share one draw across
    # different parameters and raises; 'different' draws per example
    fn = BATCHED_PARAM[name](T)
    T.manual_seed(0)
    x = T.ones(B, 16)
    if randomness == "error":
        with pytest.raises(RuntimeError, match=ERROR_MSG):
            T.vmap(fn, randomness=randomness)(x)
    elif randomness == "same":
        with pytest.raises(RuntimeError, match=SAME_BATCHED_MSG):
            T.vmap(fn, randomness=randomness)(x)
    else:
        out = T.vmap(fn, randomness=randomness)(x)
        assert out.shape[0] == B
        assert not _rows_equal(out)


@pytest.mark.parametrize("randomness", ["same", "different"])
def test_randomness_nested_vmap(T, randomness):
    # TestRandomness (nested vmaps, as test_random_unary_out_of_place's inner loop): the outer
    # level's flag decides across its examples; the inner 'different' always varies
    def inner(t):
        return T.vmap(lambda u: T.rand(4), randomness="different")(t)

    T.manual_seed(0)
    out = T.vmap(inner, randomness=randomness)(T.ones(B, 2, 4))
    assert out.shape == (B, 2, 4)
    assert not bool((out[:, 0] == out[:, 1]).all())          # inner examples differ
    assert bool((out == out[0]).all()) == (randomness == "same")


def test_randomness_manual_seed_reproducible(T):
    # TestRandomness (the originals' reset-the-seed comparisons): the same seed gives the same
    # batched draws, for 'same' and 'different'
    for randomness in ("same", "different"):
        T.manual_seed(7)
        a = T.vmap(lambda t: T.rand(4), randomness=randomness)(T.ones(B, 4))
        T.manual_seed(7)
        b = T.vmap(lambda t: T.rand(4), randomness=randomness)(T.ones(B, 4))
        assert T.equal(a, b)
