"""NOTE: the tests that followed PyTorch's test/functorch/test_vmap.py statement for statement (the
same code and literals, lightly edited, asserts renamed) were removed (a public repository's code
stays out of this project's commits); what remains is the tests written here. The text below
describes the file as it was.

Round 7 port of PyTorch's test/functorch/test_vmap.py (TestVmapAPI): vmap's in_dims and
out_dims (ints, None, negative, nested, pytrees), output structures and its ValueError /
IndexError messages, on device 'cpu' in float32. Each body runs under torch 2.13 (the oracle,
so every expectation is torch's) and under tracegrad (the ``T`` fixture). Inputs come from a
fixed numpy stream so both libraries see the same values; the data_ptr checks of the originals
(views share storage) are left out. Each test names its original."""

import pytest


# ---- TestRandomness: randomness='error' ----------------------------------------------------------
RANDOM_OPS = {
    "rand": lambda T: (lambda x: T.rand(3) + x),
    "randn_like": lambda T: (lambda x: T.randn_like(x)),
    "randint": lambda T: (lambda x: T.randint(0, 5, (3,)) + x),
    "bernoulli": lambda T: (lambda x: T.bernoulli(T.full_like(x, 0.5))),
    "dropout": lambda T: (lambda x: T.nn.functional.dropout(x, 0.5, training=True)),
    "normal_": lambda T: (lambda x: x.clone().normal_()),
    "uniform_": lambda T: (lambda x: x.clone().uniform_()),
    "randperm": lambda T: (lambda x: T.randperm(3).float() + x),
}


@pytest.mark.parametrize("op", list(RANDOM_OPS))
def test_random_op_error_mode(T, op):
    # TestRandomness (randomness='error', the default): any random draw inside vmap raises
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        T.vmap(RANDOM_OPS[op](T))(T.ones(2, 3))


def test_randomness_invalid_flag(T):
    # TestRandomness / TestVmapAPI: an unknown randomness value is a RuntimeError
    with pytest.raises(RuntimeError, match="Only allowed values for randomness are 'error', 'different', or 'same'"):
        T.vmap(lambda x: x, randomness="foo")(T.ones(2))
