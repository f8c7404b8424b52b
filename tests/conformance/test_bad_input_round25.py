"""Bad-input parity, round 25 (torch.distributions constructors and methods, torch.func,
torch.autograd.functional, nn.utils, torch.linalg): a probe over ~360 wrong calls across those areas
left these differences from torch 2.13, fixed here:

- ``linalg.lstsq`` refused a driver name in capitals (torch lower-cases it: 'GELS' is 'gels') and
  answered a driver that is not a str with the unknown-driver RuntimeError (torch's parser:
  TypeError naming the argument);
- ``linalg.lu`` of an integer input raised RuntimeError (torch's CPU kernel: NotImplementedError,
  '"lu_cpu" not implemented for 'Long'');
- ``Categorical.sample`` (and ``OneHotCategorical``'s) took a bare int as ``sample_shape`` (torch
  builds a ``torch.Size`` of it: TypeError), and a sample shape of strs or floats raised Python's
  "can't multiply sequence" text or the layer below's shape text (now torch.Size's TypeError);
- ``linalg.multi_dot`` of neighbours whose sizes do not chain raised matmul's "mat1 and mat2"
  text, and of mixed dtypes no multi_dot check (now torch's "multi_dot(): tensors i and j with
  shapes ... cannot be multiplied" and its same-dtype message);
- ``func.grad(argnums=())`` said "argnums must be int or Tuple[int, ...]" (torch: "argnums must
  be non-empty"); the linalg dtype refusals named 'Int64' where torch names its scalar type 'Long'.

Found and left alone: ``func.vjp``'s ``vjp_fn(c1, c2)`` takes the two as the cotangents of a pair
(tracegrad's deliberate convenience; torch reads ``c2`` as ``retain_graph`` and fails with an index
TypeError); ``pack_padded_sequence`` with a length above the time dim (round 24); torch's
``_LinAlgError`` cases (singular ``solve``, non positive-definite ``LowRankMultivariateNormal``
and unvalidated ``MultivariateNormal``) are tracegrad's ``linalg.LinAlgError`` (round 15's mapping).
Each call runs under torch (the oracle) and tracegrad: the same exception class (or none), no text
of the layers below tracegrad; ``_ok`` calls are ones torch accepts.
"""
import importlib

import numpy as np
import pytest

import tracegrad

from _bad_input_helpers import table_tests

torch = pytest.importorskip("torch")


def _m(T, name):
    return importlib.import_module(T.__name__ + name)


def _d(T):
    return T.distributions


def _af(T):
    return T.autograd.functional


def _lin(T):
    return T.nn.Linear(2, 2)


def _grads(T):
    p = T.nn.Parameter(T.ones(2))
    p.grad = T.ones(2)
    return [p]


def _lstsq(T, driver):
    return T.linalg.lstsq(T.eye(2), T.ones(2, 1), driver=driver)


def _cat(T):
    return _d(T).Categorical(probs=T.ones(2))


CASES = {
    # lstsq's driver, lu of integers, Categorical's sample shape (fixed)
    "linalg.lstsq(driver='GELS')_ok": lambda T: _lstsq(T, "GELS"),
    "linalg.lstsq(driver='Gelsd')_ok": lambda T: _lstsq(T, "Gelsd"),
    "linalg.lstsq(driver=1)": lambda T: _lstsq(T, 1),
    "linalg.lu(int64)": lambda T: T.linalg.lu(T.eye(2, dtype=T.int64)),
    "linalg.lu(bool)": lambda T: T.linalg.lu(T.eye(2, dtype=T.bool)),
    "Categorical.sample(2)": lambda T: _cat(T).sample(2),
    "Categorical.sample('ab')": lambda T: _cat(T).sample("ab"),
    "Categorical.sample((2.5,))": lambda T: _cat(T).sample((2.5,)),
    "OneHotCategorical.sample(2)": lambda T: _d(T).OneHotCategorical(probs=T.ones(2)).sample(2),
    # distributions: constructors and methods the earlier rounds left out (already torch's)
    "Categorical(an all-zero row)": lambda T: _d(T).Categorical(probs=T.tensor([[0., 0.], [1., 1.]])),
    "Categorical(negative probs)": lambda T: _d(T).Categorical(probs=T.tensor([-1., 2.])),
    "Categorical()": lambda T: _d(T).Categorical(),
    "Binomial(total_count=-1)": lambda T: _d(T).Binomial(-1, probs=T.tensor(0.5)),
    "Binomial.log_prob(3 of 2)": lambda T: _d(T).Binomial(2, probs=T.tensor(0.5)).log_prob(T.tensor(3.)),
    "Gamma(concentration 0)": lambda T: _d(T).Gamma(T.tensor(0.), T.tensor(1.)),
    "Poisson.log_prob(0.5)": lambda T: _d(T).Poisson(T.tensor(1.)).log_prob(T.tensor(0.5)),
    "Geometric(probs 0)": lambda T: _d(T).Geometric(T.tensor(0.)),
    "Pareto.log_prob(below the scale)": lambda T: _d(T).Pareto(T.tensor(1.), T.tensor(1.)).log_prob(T.tensor(0.5)),
    "LowRankMultivariateNormal(1-D cov_factor)": lambda T: _d(T).LowRankMultivariateNormal(
        T.zeros(2), T.ones(2), T.ones(2)),
    "LowRankMultivariateNormal(cov_factor 3 rows for loc 2)": lambda T: _d(T).LowRankMultivariateNormal(
        T.zeros(2), T.ones(3, 1), T.ones(2)),
    "MultivariateNormal(non-PD covariance)": lambda T: _d(T).MultivariateNormal(
        T.zeros(2), T.tensor([[1., 2.], [2., 1.]])),
    "MultivariateNormal(covariance and scale_tril)": lambda T: _d(T).MultivariateNormal(
        T.zeros(2), T.eye(2), scale_tril=T.eye(2)),
    "Multinomial.log_prob(counts above the total)": lambda T: _d(T).Multinomial(
        3, probs=T.tensor([0.5, 0.5])).log_prob(T.tensor([2., 2.])),
    "OneHotCategorical.log_prob(not one-hot)": lambda T: _d(T).OneHotCategorical(
        probs=T.tensor([0.5, 0.5])).log_prob(T.tensor([1., 1.])),
    "kl_divergence(Normal, Bernoulli)": lambda T: _d(T).kl_divergence(_d(T).Normal(0., 1.), _d(T).Bernoulli(0.5)),
    "Normal.expand((3,)) of batch 2": lambda T: _d(T).Normal(T.zeros(2), T.ones(2)).expand((3,)),
    "MixtureSameFamily(3 weights, 2 components)": lambda T: _d(T).MixtureSameFamily(
        _d(T).Categorical(T.ones(3)), _d(T).Normal(T.zeros(2), T.ones(2))),
    # torch.func
    "func.jacfwd(argnums=2 of 1)": lambda T: _m(T, ".func").jacfwd(lambda a: a, argnums=2)(T.zeros(2)),
    "func.hessian(argnums=2 of 1)": lambda T: _m(T, ".func").hessian(lambda a: a.sum(), argnums=2)(T.zeros(2)),
    "func.grad(argnums=())": lambda T: _m(T, ".func").grad(lambda a: a.sum(), argnums=())(T.zeros(2)),
    "func.vmap(chunk_size=0)": lambda T: _m(T, ".func").vmap(lambda a: a, chunk_size=0)(T.zeros(2)),
    "func.vmap(0-d input)": lambda T: _m(T, ".func").vmap(lambda a: a)(T.tensor(1.)),
    "func.vmap(batch sizes 2 and 3)": lambda T: _m(T, ".func").vmap(lambda a, b: a + b)(T.zeros(2), T.zeros(3)),
    "func.stack_module_state([])": lambda T: _m(T, ".func").stack_module_state([]),
    "func.stack_module_state(train and eval)": lambda T: _m(T, ".func").stack_module_state(
        [_lin(T), _lin(T).eval()]),
    "func.functional_call(missing key, strict)": lambda T: _m(T, ".func").functional_call(
        _lin(T), {"weight": T.zeros(2, 2)}, (T.zeros(1, 2),), strict=True),
    # torch.autograd.functional
    "jacobian(strategy='x')": lambda T: _af(T).jacobian(lambda a: a, T.zeros(2), strategy="x"),
    "jacobian(forward-mode, vectorize=False)": lambda T: _af(T).jacobian(lambda a: a, T.zeros(2),
                                                                          strategy="forward-mode"),
    "jacobian(strict, vectorize)": lambda T: _af(T).jacobian(lambda a: a, T.zeros(2), strict=True, vectorize=True),
    "jacobian(strict, output independent)": lambda T: _af(T).jacobian(lambda a: T.ones(2), T.zeros(2), strict=True),
    "jacobian(create_graph, float output)": lambda T: _af(T).jacobian(lambda a: 3., T.zeros(2), create_graph=True),
    "hessian(non-scalar output)": lambda T: _af(T).hessian(lambda a: a, T.zeros(2)),
    "hessian(outer_jacobian_strategy='x')": lambda T: _af(T).hessian(lambda a: a.sum(), T.zeros(2),
                                                                     outer_jacobian_strategy="x"),
    "vjp(v of 3 for 2)": lambda T: _af(T).vjp(lambda a: a * 2, T.zeros(2), T.ones(3)),
    "vjp(no v, non-scalar output)": lambda T: _af(T).vjp(lambda a: a * 2, T.zeros(2)),
    "jvp(v of 3 for 2)": lambda T: _af(T).jvp(lambda a: a * 2, T.zeros(2), T.ones(3)),
    "hvp(v of 3 for 2)": lambda T: _af(T).hvp(lambda a: a.sum(), T.zeros(2), T.ones(3)),
    "vhp(non-scalar output)": lambda T: _af(T).vhp(lambda a: a, T.zeros(2), T.ones(2)),
    # nn.utils
    "pack_padded_sequence(lengths [2, 3], enforce_sorted)": lambda T: _m(T, ".nn.utils.rnn").pack_padded_sequence(
        T.zeros(3, 2, 1), [2, 3]),
    "pack_sequence(unsorted, enforce_sorted)": lambda T: _m(T, ".nn.utils.rnn").pack_sequence(
        [T.zeros(1), T.zeros(2)]),
    "pad_packed_sequence(total_length below the longest)": lambda T: _m(T, ".nn.utils.rnn").pad_packed_sequence(
        _m(T, ".nn.utils.rnn").pack_sequence([T.zeros(3), T.zeros(2)]), total_length=2),
    "clip_grad_norm_(norm_type='fro')": lambda T: T.nn.utils.clip_grad_norm_(_grads(T), 1., norm_type="fro"),
    "clip_grad_norm_(max_norm=-1.)_ok": lambda T: T.nn.utils.clip_grad_norm_(_grads(T), -1.),
    "get_total_norm(norm_type='fro')": lambda T: T.nn.utils.get_total_norm([T.ones(2)], "fro"),
    "parametrizations.orthogonal(orthogonal_map='x')": lambda T: T.nn.utils.parametrizations.orthogonal(
        _lin(T), orthogonal_map="x"),
    "parametrizations.spectral_norm(n_power_iterations=0)": lambda T: T.nn.utils.parametrizations.spectral_norm(
        _lin(T), n_power_iterations=0),
    "parametrize.register_parametrization(name 'x')": lambda T: T.nn.utils.parametrize.register_parametrization(
        _lin(T), "x", T.nn.Identity()),
    "parametrize.remove_parametrizations(none there)": lambda T: T.nn.utils.parametrize.remove_parametrizations(
        _lin(T), "weight"),
    # torch.linalg
    "linalg.det(int64)": lambda T: T.linalg.det(T.eye(2, dtype=T.int64)),
    "linalg.slogdet(int64)": lambda T: T.linalg.slogdet(T.eye(2, dtype=T.int64)),
    "linalg.inv(2x3)": lambda T: T.linalg.inv(T.zeros(2, 3)),
    "linalg.eigvalsh(UPLO='X')": lambda T: T.linalg.eigvalsh(T.eye(2), UPLO="X"),
    "linalg.matrix_power(2x3, -1)": lambda T: T.linalg.matrix_power(T.zeros(2, 3), -1),
    "linalg.cond(p='x')": lambda T: T.linalg.cond(T.eye(2), p="x"),
    "linalg.multi_dot([one])": lambda T: T.linalg.multi_dot([T.eye(2)]),
    "linalg.multi_dot(2x2 @ 3x3)": lambda T: T.linalg.multi_dot([T.eye(2), T.eye(3)]),
    "linalg.multi_dot(2 @ 2x3 @ 2x2)": lambda T: T.linalg.multi_dot([T.ones(2), T.ones(2, 3), T.eye(2)]),
    "linalg.multi_dot(float32 @ float64)": lambda T: T.linalg.multi_dot([T.eye(2), T.eye(2, dtype=T.float64)]),
    "linalg.multi_dot(2 @ 2x3 @ 3)_ok": lambda T: T.linalg.multi_dot([T.ones(2), T.ones(2, 3), T.ones(3)]),
    "linalg.tensorinv(ind=0)": lambda T: T.linalg.tensorinv(T.eye(4).reshape(4, 2, 2), ind=0),
    "linalg.vecdot(2 and 3)": lambda T: T.linalg.vecdot(T.ones(2), T.ones(3)),
    "linalg.solve_triangular(no upper)": lambda T: T.linalg.solve_triangular(T.eye(2), T.ones(2, 1)),
    "linalg.matrix_exp(2x3)": lambda T: T.linalg.matrix_exp(T.zeros(2, 3)),
}

# both libraries' messages hold these words (the API or the argument)
GIST = {
    "linalg.lstsq(driver=1)": "argument 'driver' must be str, not int",
    "linalg.lu(int64)": "\"lu_cpu\" not implemented for 'Long'",
    "Categorical.sample('ab')": "takes an iterable of 'int' (item 0 is 'str')",
    "func.grad(argnums=())": "argnums must be non-empty",
    "linalg.multi_dot(2x2 @ 3x3)": "multi_dot(): tensors 0 and 1 with shapes [2, 2] and [3, 3] cannot be multiplied",
    "linalg.multi_dot(2 @ 2x3 @ 2x2)": "multi_dot(): tensors 1 and 2 with shapes [2, 3] and [2, 2] cannot be multiplied",
    "linalg.multi_dot(float32 @ float64)": "multi_dot(): all tensors must have be the same dtype",
    "linalg.det(int64)": "linalg.det: Expected a floating point or complex tensor as input. Got Long",
    "Categorical(an all-zero row)": "Expected parameter probs",
    "MultivariateNormal(non-PD covariance)": "Expected parameter covariance_matrix",
    "LowRankMultivariateNormal(cov_factor 3 rows for loc 2)": "cov_factor must be a batch of matrices with shape 2 x m",
    "MixtureSameFamily(3 weights, 2 components)": "does not equal `component_distribution.batch_shape[-1]`",
    "func.jacfwd(argnums=2 of 1)": "Got argnum=2, but only 1 positional inputs",
    "func.vmap(chunk_size=0)": "chunk_size should be None or greater than 0",
    "func.stack_module_state(train and eval)": "same training/eval mode",
    "func.functional_call(missing key, strict)": "Missing key(s): 'bias'",
    "jacobian(strict, vectorize)": "`strict=True` and `vectorized=True` are not supported together",
    "hessian(non-scalar output)": "given to hessian should contain a single element",
    "vjp(v of 3 for 2)": "v has invalid size",
    "pack_padded_sequence(lengths [2, 3], enforce_sorted)": "must be sorted in decreasing order",
    "pad_packed_sequence(total_length below the longest)": "Expected total_length to be at least",
    "parametrizations.orthogonal(orthogonal_map='x')": "orthogonal_map has to be one of",
    "linalg.eigvalsh(UPLO='X')": "Expected UPLO argument to be 'L' or 'U'",
    "linalg.tensorinv(ind=0)": "strictly positive integer for 'ind'",
}

test_same_class_as_torch, test_message_gist = table_tests(CASES, GIST, torch, tracegrad)
