"""Bad-input parity, round 23 (random draws and Generators, torch.fft, torch.linalg, torch.func,
torch.utils.checkpoint, nn.utils prune/weight_norm/spectral_norm, ``to``/``type`` strings,
``torch.save``): a probe over ~250 wrong calls across those areas left these differences from
torch 2.13, fixed here:

- ``normal`` with a NaN ``std`` (a number: ``normal(0., nan, size)``, ``normal(mean, nan)``,
  ``Tensor.normal_(0, nan)``, ``nn.init.normal_``) drew NaN samples: the check was ``std < 0``,
  torch's is ``std >= 0.0``, which NaN fails (RuntimeError);
- ``randperm`` with a one-element integer tensor ``n`` used it as a shape: a 0-d one was NumPy's
  AxisError, a 1-element one came back as ``[n]`` unpermuted (a silent wrong result; torch reads the
  tensor's value); ``randperm(True)`` was a permutation of one, ``randint(True, size)`` a draw from
  ``[0, 1)``, ``multinomial(p, True)`` one sample (torch's parser refuses a bool int: TypeError);
  ``randperm(2**70)`` was RuntimeError (torch's parser: ValueError, as tracegrad's ``randint``);
  ``Tensor.random_`` the same two: a bool bound drew from ``[0, 1)``, one beyond int64 was
  RuntimeError;
- ``linalg.pinv(hermitian=True)`` of a non-square matrix and ``linalg.lstsq`` with batch dims that
  do not broadcast raised JAX's broadcast errors (torch: RuntimeError, eigh's square check and the
  broadcast text); ``linalg.eigh(UPLO=1)`` was the value check's RuntimeError (torch's parser:
  TypeError); ``linalg.vector_norm(ord=1j)`` was TypeError (torch: RuntimeError).

Found and left alone: ``linalg.pinv`` with an ``rtol`` tensor of shape ``(3,)`` for one 2x2
matrix (torch broadcasts it into a batch of 3; tracegrad refuses it with a ValueError; a rare form);
``func.linearize`` of a function returning a float (torch accepts it, tracegrad refuses with a
RuntimeError naming linearize); ``vjp_fn(c1, c2)`` (torch: TypeError from reading ``c2`` as
``retain_graph``, tracegrad: the cotangent-structure RuntimeError); ``load(BytesIO, mmap=True)``
of a non-zip stream (torch: RuntimeError about the zip format, tracegrad: the ValueError torch
raises for a zip stream); ``randperm(tensor(True))`` (torch's own internal assert);
``matrix_power`` of a singular matrix with a negative power raises torch's ``_LinAlgError`` by
name (round 15 covers that class). Each call runs under torch (the oracle) and
tracegrad: the same exception class (or none), no text of the layers below tracegrad; ``_ok`` calls
are ones torch accepts.
"""
import importlib
import warnings

import numpy as np
import pytest

import tracegrad

from _bad_input_helpers import table_tests

torch = pytest.importorskip("torch")

NAN = float("nan")


def _m(T, name):
    return importlib.import_module(T.__name__ + name)


def _prune(T):
    return _m(T, ".nn.utils.prune")


def _cp(T):
    return _m(T, ".utils.checkpoint")


def _lin(T):
    return T.nn.Linear(2, 2)


def _local_object():
    class Local:
        pass
    return Local()


CASES = {
    # random draws
    "normal(0., nan, (2,))": lambda T: T.normal(0., NAN, (2,)),
    "normal(mean tensor, nan)": lambda T: T.normal(T.zeros(2), NAN),
    "normal(mean tensor, std tensor with nan)": lambda T: T.normal(T.zeros(2), T.tensor([1., NAN])),
    "Tensor.normal_(0, nan)": lambda T: T.zeros(2).normal_(0, NAN),
    "nn.init.normal_(std=nan)": lambda T: T.nn.init.normal_(T.zeros(2), 0., NAN),
    "normal(0., -1., (2,))": lambda T: T.normal(0., -1., (2,)),
    "normal(0., inf, (2,))_ok": lambda T: T.normal(0., float("inf"), (2,)),
    "randperm(True)": lambda T: T.randperm(True),
    "randperm(tensor(3))_ok": lambda T: T.randperm(T.tensor(3)),
    "randperm(tensor(3.))": lambda T: T.randperm(T.tensor(3.)),
    "randperm(2**70)": lambda T: T.randperm(2 ** 70),
    "randint(True, (2,))": lambda T: T.randint(True, (2,)),
    "randint(0, True, (2,))": lambda T: T.randint(0, True, (2,)),
    "multinomial(num_samples=True)": lambda T: T.multinomial(T.ones(3), True),
    "randint(5, 5, (2,))": lambda T: T.randint(5, 5, (2,)),
    "randint(5, 2, (2,))": lambda T: T.randint(5, 2, (2,)),
    "Tensor.random_(5, 5)": lambda T: T.zeros(2).random_(5, 5),
    "Tensor.random_(True)": lambda T: T.zeros(2).random_(True),
    "Tensor.random_(0, True)": lambda T: T.zeros(2).random_(0, True),
    "Tensor.random_(0, 2**70)": lambda T: T.zeros(2, dtype=T.int64).random_(0, 2 ** 70),
    "Tensor.random_(-5, 5)_ok": lambda T: T.zeros(2, dtype=T.int64).random_(-5, 5),
    "bernoulli(p 1.5)": lambda T: T.bernoulli(T.tensor([1.5, 0.2])),
    "Tensor.bernoulli_(1.5)": lambda T: T.zeros(2).bernoulli_(1.5),
    "multinomial(p inf)": lambda T: T.multinomial(T.tensor([1., float("inf")]), 1),
    "multinomial(num_samples -1)": lambda T: T.multinomial(T.ones(3), -1),
    "multinomial(3-D)": lambda T: T.multinomial(T.ones(2, 2, 2), 1),
    "manual_seed(1.5)": lambda T: T.manual_seed(1.5),
    "manual_seed('a')": lambda T: T.manual_seed("a"),
    "Generator.set_state(uint8 of the wrong size)": lambda T: T.Generator().set_state(T.zeros(3, dtype=T.uint8)),
    "set_rng_state(float tensor)": lambda T: T.set_rng_state(T.ones(3)),
    # torch.fft
    "fft.fft(norm='bad')": lambda T: T.fft.fft(T.ones(4), norm="bad"),
    "fft.rfft(norm='ORTHO')": lambda T: T.fft.rfft(T.ones(4), norm="ORTHO"),
    "fft.fft(n=0)": lambda T: T.fft.fft(T.ones(4), n=0),
    "fft.irfft(n=0)": lambda T: T.fft.irfft(T.ones(4), n=0),
    "fft.fft(dim=1 of 1-D)": lambda T: T.fft.fft(T.ones(4), dim=1),
    "fft.fftn(dim=(0, 0))": lambda T: T.fft.fftn(T.ones(4, 4), dim=(0, 0)),
    "fft.fftn(s shorter than dim)": lambda T: T.fft.fftn(T.ones(4, 4), s=(2,), dim=(0, 1)),
    "fft.rfft(complex)": lambda T: T.fft.rfft(T.ones(4, dtype=T.complex64)),
    # torch.linalg
    "linalg.matrix_power(2x3)": lambda T: T.linalg.matrix_power(T.ones(2, 3), 2),
    "linalg.pinv(1-D)": lambda T: T.linalg.pinv(T.ones(3)),
    "linalg.lstsq(3 rows vs 2)": lambda T: T.linalg.lstsq(T.ones(3, 2), T.ones(2, 1)),
    "linalg.lstsq(driver='bad')": lambda T: T.linalg.lstsq(T.ones(3, 2), T.ones(3, 1), driver="bad"),
    "linalg.eigh(2x3)": lambda T: T.linalg.eigh(T.ones(2, 3)),
    "linalg.eigh(UPLO='X')": lambda T: T.linalg.eigh(T.eye(2), UPLO="X"),
    "linalg.eigh(UPLO=1)": lambda T: T.linalg.eigh(T.eye(2), UPLO=1),
    "linalg.pinv(2x3, hermitian=True)": lambda T: T.linalg.pinv(T.ones(2, 3), hermitian=True),
    "linalg.lstsq(batch 2 vs 3)": lambda T: T.linalg.lstsq(T.ones(2, 3, 2), T.ones(3, 3, 1)),
    "linalg.lstsq(batch 2 vs 1)_ok": lambda T: T.linalg.lstsq(T.ones(2, 3, 2) + T.eye(3, 2), T.ones(1, 3, 1)),
    "linalg.vector_norm(ord=1j)": lambda T: T.linalg.vector_norm(T.ones(3), ord=1j),
    "linalg.matrix_norm(ord=3)": lambda T: T.linalg.matrix_norm(T.ones(2, 2), ord=3),
    # torch.func
    "vmap(in_dims longer than the args)": lambda T: T.func.vmap(lambda a: a, in_dims=(0, 0))(T.ones(2)),
    "vmap(in_dims='a')": lambda T: T.func.vmap(lambda a: a, in_dims="a")(T.ones(2)),
    "vmap(out_dims longer than the outputs)": lambda T: T.func.vmap(lambda a: a, out_dims=(0, 0))(T.ones(2)),
    "func.grad(non-scalar output)": lambda T: T.func.grad(lambda a: a * 2)(T.ones(2)),
    "func.grad(float output)": lambda T: T.func.grad(lambda a: 1.0)(T.ones(2)),
    "jacrev(argnums=2 of 1)": lambda T: T.func.jacrev(lambda a: a * 2, argnums=2)(T.ones(2)),
    "jacrev(argnums=(0, 0))": lambda T: T.func.jacrev(lambda a, b: a * b, argnums=(0, 0))(T.ones(2), T.ones(2)),
    # torch.utils.checkpoint
    "checkpoint(non-callable)": lambda T: _cp(T).checkpoint(1, T.ones(2), use_reentrant=False),
    "checkpoint(unknown keyword)": lambda T: _cp(T).checkpoint(lambda a: a * 2, T.ones(2), use_reentrant=False,
                                                              bogus=1),
    # nn.utils
    "prune.remove(unpruned)": lambda T: _prune(T).remove(_lin(T), "weight"),
    "prune.l1_unstructured(amount=-0.1)": lambda T: _prune(T).l1_unstructured(_lin(T), "weight", amount=-0.1),
    "prune.ln_structured(dim=3)": lambda T: _prune(T).ln_structured(_lin(T), "weight", amount=0.5, n=2, dim=3),
    "weight_norm(name='bogus')": lambda T: T.nn.utils.weight_norm(_lin(T), name="bogus"),
    "remove_weight_norm(none there)": lambda T: T.nn.utils.remove_weight_norm(_lin(T)),
    "spectral_norm(name='bogus')": lambda T: T.nn.utils.spectral_norm(_lin(T), name="bogus"),
    # to / type strings, save
    "Linear.to('float33')": lambda T: _lin(T).to("float33"),
    "Linear.to(int64)": lambda T: _lin(T).to(T.int64),
    "Tensor.type('torch.BadTensor')": lambda T: T.ones(2).type("torch.BadTensor"),
    "Tensor.to('cpu:-1')": lambda T: T.ones(2).to("cpu:-1"),
    "save(lambda)": lambda T: T.save(lambda a: a, "/dev/null"),
    "save(a local class's object)": lambda T: T.save(_local_object(), "/dev/null"),
}

# both libraries' messages hold these words (the API or the argument)
GIST = {
    "normal(0., nan, (2,))": "normal expects std >= 0.0, but found std nan",
    "Tensor.normal_(0, nan)": "normal expects std >= 0.0",
    "randperm(True)": "must be int, not bool",
    "randint(True, (2,))": "argument 'high'",
    "multinomial(num_samples=True)": "argument 'num_samples'",
    "randperm(2**70)": "Overflow when unpacking long long",
    "randint(5, 5, (2,))": "random_ expects 'from' to be less than 'to'",
    "fft.fft(norm='bad')": "Invalid normalization mode",
    "fft.fft(n=0)": "Invalid number of data points (0) specified",
    "linalg.matrix_power(2x3)": "must be batches of square matrices",
    "linalg.eigh(UPLO='X')": "Expected UPLO argument to be 'L' or 'U'",
    "linalg.eigh(UPLO=1)": "argument 'UPLO' must be str",
    "linalg.pinv(2x3, hermitian=True)": "must be batches of square matrices, but they are 2 by 3 matrices",
    "linalg.lstsq(batch 2 vs 3)": "The size of tensor a (2) must match the size of tensor b (3)",
    "linalg.vector_norm(ord=1j)": "Expected a non-complex scalar as the order of norm",
    "Tensor.random_(0, 2**70)": "Overflow when unpacking long long",
    "vmap(in_dims longer than the args)": "in_dims is not compatible with the structure of `inputs`",
    "func.grad(non-scalar output)": "Expected f(*args) to return a scalar Tensor",
    "prune.remove(unpruned)": "has to be pruned before pruning can be removed",
    "Linear.to(int64)": "nn.Module.to only accepts floating point or complex dtypes",
}

test_same_class_as_torch, test_message_gist = table_tests(CASES, GIST, torch, tracegrad)


def _seeded(fn):
    """``fn`` under torch and under tracegrad, each after ``manual_seed(0)``, as NumPy arrays."""
    out = []
    for T in (torch, tracegrad):
        T.manual_seed(0)
        out.append(fn(T).numpy())
    return out


@pytest.mark.parametrize("n", [lambda T: T.tensor(4), lambda T: T.tensor([4]), lambda T: T.tensor(4, dtype=T.int32)],
                         ids=["0-d", "1-element", "int32"])
def test_randperm_of_a_tensor_is_a_permutation_of_its_value(n):
    """A one-element integer tensor ``n`` is read as its value: the same draw as the int."""
    want, got = _seeded(lambda T: T.randperm(n(T)))
    np.testing.assert_array_equal(np.sort(want), np.arange(4))
    np.testing.assert_array_equal(np.sort(got), np.arange(4))
    tracegrad.manual_seed(0)
    np.testing.assert_array_equal(got, tracegrad.randperm(4).numpy())


def test_normal_std_checks_keep_valid_draws():
    """std 0 and inf are accepted (torch too): a constant draw, an infinite one; a NaN in a std
    tensor is refused and the refused draw writes nothing in place."""
    for T in (torch, tracegrad):
        np.testing.assert_array_equal(T.normal(1.5, 0., (3,)).numpy(), [1.5] * 3)
        assert np.isinf(T.normal(0., float("inf"), (3,)).numpy()).all()
    x = tracegrad.ones(2)
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        x.normal_(0., NAN)
    np.testing.assert_array_equal(x.numpy(), [1., 1.])


def test_checkpoint_without_use_reentrant_warns_as_torch():
    """Omitting ``use_reentrant`` is a UserWarning naming the parameter (torch 2.13 still
    runs the call)."""
    for T in (torch, tracegrad):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = _cp(T).checkpoint(lambda a: a * 2, T.ones(2, requires_grad=True))
        np.testing.assert_array_equal(out.detach().numpy(), [2., 2.])
        assert any(w.category is UserWarning and "use_reentrant parameter should be passed explicitly"
                   in str(w.message) for w in caught), [str(w.message) for w in caught]
