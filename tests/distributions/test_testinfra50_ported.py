"""testinfra50: PyTorch's test/distributions/test_distributions.py, the classes no earlier port
took, run eagerly against tracegrad with torch 2.13 as the oracle.

Each case is a program ``fn(T)`` run once with ``T=torch`` and once with ``T=tracegrad``
(``parity.same_outcome``): the values it returns (log-densities, moments, cdf / icdf values,
gradients of the parameters, booleans about cached attributes, exception class names) must agree.
Parameters come from a fixed NumPy stream (the two libraries' random streams differ), and every
compared value is a deterministic function of them.

Ported, each case names its original:
  * ``TestNumericalStability`` (all of it): test_bernoulli_gradient,
    test_bernoulli_with_logits_underflow / _overflow, test_categorical_log_prob(_with_logits),
    test_multinomial_log_prob(_with_logits), test_continuous_bernoulli_gradient,
    test_continuous_bernoulli_with_logits_underflow / _overflow; float32 and float64 each.
  * ``TestLazyLogitsInitialization``: test_lazy_logits_initialization,
    test_lazy_probs_initialization (which of probs / logits a distribution computes and caches).
  * ``TestAgainstScipy``: test_mean, test_variance_stddev, test_cdf, test_icdf over the same 29
    distributions and the rest of _get_examples' families (Chi2, ContinuousBernoulli,
    Kumaraswamy, LKJCholesky, NegativeBinomial, the relaxed ones, straight-through, Independent,
    MixtureSameFamily, TransformedDistribution), with torch in scipy's place; the cdf is taken at
    fixed points in the support instead of at samples. Added for a training user: log_prob and
    entropy, and the gradients of their sums with respect to every parameter. The same case
    runs ``TestConstraints``' test_support_constraints and test_params_constraints on it.
  * ``TestFunctors``: test_cat_transform, test_cat_transform_non_uniform, test_cat_event_dim,
    test_stack_transform (and the gradient through each).
  * ``TestValidation``: test_warning_unimplemented_constraints, test_invalid (every row of
    _get_bad_examples raises ValueError on both sides; VonMises, Kumaraswamy and
    LowRankMultivariateNormal rows added).
  * ``TestDistributions``: test_lazy_property_grad, test_distribution_subclass_expand,
    test_gamma_log_prob_at_boundary, test_dirichlet_log_prob_zero, test_binomial_stable,
    test_vonmises_logprob (on a coarser grid), test_logisticnormal (log_prob and gradients),
    test_lowrank_multivariate_normal_log_prob / _moments (against the full-covariance
    MultivariateNormal, deterministic parts), test_multivariate_normal_stable_with_precision_matrix,
    test_wishart_stable_with_precision_matrix, test_binomial_extreme_vals,
    test_binomial_log_prob_vectorized_count, test_poisson_forward_ad and the
    test_*_enumerate_support tests of Binomial, OneHotCategorical, Bernoulli and Categorical.
  * ``_get_examples``' edge parameter sets (numbers as parameters, probabilities of 0 and 1,
    total_count as a vector, a matrix or 0, scales of 1e-5, LKJCholesky, Wishart from each of
    its three matrices, straight-through, mixture, transformed): the generic observations of
    ``TestDistributions`` (log_prob and its gradient as _gradcheck_log_prob takes it, entropy
    and its gradient, mean, variance, mode, cdf, enumerate_support, shapes) on two draws torch
    makes (its stream forked and seeded), scored by both libraries.
  * ``TestKL``: test_kl_transformed, test_kl_shape (for the examples here),
    test_kl_multivariate_normal_batched(_broadcasted), test_kl_lowrank_multivariate_normal(_batched)
    (the analytic KLs against each other and torch; the Monte Carlo halves are left out).

Left out: the statistical tests (Monte Carlo estimates, samplers against scipy), TestJit
(torch.jit.trace), and the GPU / MPS variants.
"""
import math

import numpy as np
import pytest

from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")


# ==== helpers ===================================================================================
def _rs(seed):
    return np.random.RandomState(seed)


def attempt(fn):
    """``fn()``'s value, or the name of the builtin exception class it raised (so that a method
    one library does not implement must be missing from the other too)."""
    try:
        return fn()
    except NotImplementedError:
        return "NotImplementedError"
    except ValueError:
        return "ValueError"


def grads(T, out, params):
    """Gradients of ``out.sum()`` with respect to ``params`` (None where one does not reach)."""
    got = T.autograd.grad(out.sum(), params, allow_unused=True)
    return [None if g is None else g for g in got]


# ==== TestNumericalStability ====================================================================
def pdf_score(T, dist_name, x, probs=None, logits=None, dtype="float32"):
    """_test_pdf_score's program: log_prob of ``x`` under ``Dist(probs)`` or ``Dist(logits=)``
    and the gradient of its sum with respect to that parameter."""
    dt = getattr(T, dtype)
    Dist = getattr(T.distributions, dist_name)
    if probs is not None:
        p = T.tensor(probs, dtype=dt, requires_grad=True)
        d = Dist(p, validate_args=False)
    else:
        p = T.tensor(logits, dtype=dt, requires_grad=True)
        d = Dist(logits=p, validate_args=False)
    lp = d.log_prob(T.tensor(x, dtype=dt))
    lp.sum().backward()
    return lp, p.grad


STABILITY = {}
for _dt in ("float32", "float64"):
    # test_bernoulli_gradient
    for _k, (_pr, _lg, _x) in enumerate([([0.], None, [0.]), ([0.], None, [1.]), ([1e-4], None, [1.]),
                                          ([1 - 1e-4], None, [0.]), (None, [math.log(9999)], [0.])]):
        STABILITY[f"bernoulli_gradient_{_k}_{_dt}"] = (
            lambda pr, lg, x, dt: lambda T: pdf_score(T, "Bernoulli", x, pr, lg, dt))(_pr, _lg, _x, _dt)
    # test_bernoulli_with_logits_underflow / _overflow
    _lim = 1e38 if _dt == "float32" else 1e308
    STABILITY[f"bernoulli_logits_underflow_{_dt}"] = (
        lambda lim, dt: lambda T: pdf_score(T, "Bernoulli", [0.], logits=[-lim], dtype=dt))(_lim, _dt)
    STABILITY[f"bernoulli_logits_overflow_{_dt}"] = (
        lambda lim, dt: lambda T: pdf_score(T, "Bernoulli", [1.], logits=[lim], dtype=dt))(_lim, _dt)
    # test_continuous_bernoulli_gradient
    for _k, (_pr, _lg, _x) in enumerate([([0.1], None, [0.1]), ([0.1], None, [1.0]), ([0.4999], None, [0.9]),
                                          ([1e-4], None, [1.]), ([1 - 1e-4], None, [0.1]),
                                          (None, [math.log(9999)], [0.]), (None, [0.001], [0.5])]):
        STABILITY[f"continuous_bernoulli_gradient_{_k}_{_dt}"] = (
            lambda pr, lg, x, dt: lambda T: pdf_score(T, "ContinuousBernoulli", x, pr, lg, dt))(_pr, _lg, _x, _dt)
    # test_continuous_bernoulli_with_logits_underflow / _overflow
    STABILITY[f"continuous_bernoulli_logits_underflow_{_dt}"] = (
        lambda lim, dt: lambda T: pdf_score(T, "ContinuousBernoulli", [0.], logits=[-lim], dtype=dt))(_lim, _dt)
    STABILITY[f"continuous_bernoulli_logits_overflow_{_dt}"] = (
        lambda lim, dt: lambda T: pdf_score(T, "ContinuousBernoulli", [1.], logits=[lim], dtype=dt))(_lim, _dt)

    def _one_hot(T, dt, logits, values, Dist="OneHotCategorical", n=None):
        p = T.tensor(logits, dtype=getattr(T, dt), requires_grad=True)
        D = getattr(T.distributions, Dist)
        d = D(logits=p) if n is None else D(n, logits=p)
        out = [d.log_prob(T.tensor(v, dtype=getattr(T, dt))) for v in values]
        return out + [T.autograd.grad(out[0], p)[0]]

    def _one_hot_probs(T, dt, probs, value, Dist="OneHotCategorical", n=None):
        p = T.tensor(probs, dtype=getattr(T, dt), requires_grad=True)
        D = getattr(T.distributions, Dist)
        d = D(p) if n is None else D(n, p)
        return d.log_prob(T.tensor(value, dtype=getattr(T, dt)))

    # test_categorical_log_prob / _with_logits, test_multinomial_log_prob / _with_logits
    STABILITY[f"categorical_log_prob_{_dt}"] = (lambda dt: lambda T: _one_hot_probs(T, dt, [0., 1.], [0., 1.]))(_dt)
    STABILITY[f"categorical_log_prob_with_logits_{_dt}"] = (
        lambda dt: lambda T: _one_hot(T, dt, [-math.inf, 0.], [[0., 1.], [1., 0.]]))(_dt)
    STABILITY[f"multinomial_log_prob_{_dt}"] = (
        lambda dt: lambda T: _one_hot_probs(T, dt, [0., 1.], [0., 10.], "Multinomial", 10))(_dt)
    STABILITY[f"multinomial_log_prob_with_logits_{_dt}"] = (
        lambda dt: lambda T: _one_hot(T, dt, [-math.inf, 0.], [[0., 10.], [10., 0.]], "Multinomial", 10))(_dt)


@pytest.mark.parametrize("fn", outcome_params(STABILITY))
def test_numerical_stability(fn):
    same_outcome(fn)


def test_numerical_stability_expected_values():
    """The closed forms TestNumericalStability states, on tracegrad itself (the parity cases
    above compare with torch; these pin the values torch's test asserts)."""
    import tracegrad as tg
    lp, g = pdf_score(tg, "Bernoulli", [1.], probs=[1e-4], dtype="float64")
    np.testing.assert_allclose(lp.detach().numpy(), [math.log(1e-4)], atol=1e-5)
    np.testing.assert_allclose(g.numpy(), [1e4], atol=1e-5)
    lp, g = pdf_score(tg, "Bernoulli", [0.], logits=[-1e38])
    assert lp.item() == 0 and g.item() == 0
    lp, g = pdf_score(tg, "ContinuousBernoulli", [0.], logits=[-1e38])
    np.testing.assert_allclose(lp.detach().numpy(), [2.76898], atol=1e-5)
    assert g.item() == 0
    lp, g = pdf_score(tg, "ContinuousBernoulli", [1.], logits=[1e308], dtype="float64")
    np.testing.assert_allclose(lp.detach().numpy(), [3.58473], atol=1e-5)


# ==== TestLazyLogitsInitialization ==============================================================
def _lazy_examples(T):
    """The first example of each family _get_examples lists with probs (Categorical,
    OneHotCategorical, Bernoulli, Binomial, Multinomial), with values in each support."""
    t = T.tensor
    return {
        "Bernoulli": ({"probs": t([0.7, 0.2, 0.4])}, t([1., 0., 1.])),
        "Categorical": ({"probs": t([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]])}, t([2, 0])),
        "OneHotCategorical": ({"probs": t([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]])}, t([[0., 0., 1.], [1., 0., 0.]])),
        "Binomial": ({"probs": t([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]]), "total_count": 10},
                     t([[1., 2., 3.], [5., 3., 10.]])),
        "Multinomial": ({"probs": t([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]]), "total_count": 10},
                        t([[2., 3., 5.], [5., 3., 2.]])),
    }


def lazy_logits(T, name):
    # test_lazy_logits_initialization: built from logits, the distribution never computes probs
    # for log_prob, enumerate_support or its shapes
    param, value = _lazy_examples(T)[name]
    param = dict(param)
    param["logits"] = T.distributions.utils.probs_to_logits(param.pop("probs"))
    d = getattr(T.distributions, name)(**param)
    seen = [d.log_prob(value)]
    seen.append("probs" in d.__dict__)
    attempt(d.enumerate_support)
    seen.append("probs" in d.__dict__)
    seen.append((tuple(d.batch_shape), tuple(d.event_shape)))
    seen.append("probs" in d.__dict__)
    seen.append(d.probs)            # asked for, it is made from the logits and cached
    seen.append("probs" in d.__dict__)
    return seen


def lazy_probs(T, name):
    # test_lazy_probs_initialization: built from probs, sampling, enumerate_support and the
    # shapes never compute logits
    param, value = _lazy_examples(T)[name]
    d = getattr(T.distributions, name)(**param)
    seen = [tuple(d.sample().shape), "logits" in d.__dict__]
    attempt(d.enumerate_support)
    seen.append("logits" in d.__dict__)
    seen.append((tuple(d.batch_shape), tuple(d.event_shape)))
    seen.append("logits" in d.__dict__)
    seen.append(d.log_prob(value))
    seen.append(d.logits)
    return seen


LAZY = {}
for _n in ("Bernoulli", "Categorical", "OneHotCategorical", "Binomial", "Multinomial"):
    LAZY[f"lazy_logits_{_n}"] = (lambda n: lambda T: lazy_logits(T, n))(_n)
    LAZY[f"lazy_probs_{_n}"] = (lambda n: lambda T: lazy_probs(T, n))(_n)


@pytest.mark.parametrize("fn", outcome_params(LAZY))
def test_lazy_initialization(fn):
    same_outcome(fn)


# ==== TestAgainstScipy, torch in scipy's place ==================================================
_N = 6


def _pair_arrays():
    """setUp's parameters, from a fixed NumPy stream (float64, length 6 instead of 20)."""
    rs = _rs(50)
    pos, pos2, rv = np.exp(rs.randn(_N)), np.exp(rs.randn(_N)), rs.randn(_N)
    z = rs.randn(_N)
    simplex = np.exp(z) / np.exp(z).sum()
    a = rs.randn(_N, _N)
    cov = a @ a.T + 0.5 * np.eye(_N)
    return dict(pos=pos, pos2=pos2, rv=rv, simplex=simplex, cov=cov,
                unit=1 / (1 + np.exp(-rs.randn(_N))))


_ARR = _pair_arrays()


def _leaf(T, name, fn=None):
    """A float64 leaf that needs grad, made from ``_ARR[name]`` (mapped by ``fn`` first)."""
    a = _ARR[name] if fn is None else fn(_ARR[name])
    return T.tensor(np.array(a), dtype=T.float64, requires_grad=True)


def _c(T, a):
    return T.tensor(np.array(a), dtype=T.float64)


# name -> (build(T) -> (distribution, parameters needing grad), value(T) in the support)
PAIRS = {
    "Bernoulli": (lambda T: (lambda s: (T.distributions.Bernoulli(s), [s]))(_leaf(T, "simplex")),
                  lambda T: _c(T, [0., 1., 1., 0., 1., 0.])),
    "Beta": (lambda T: (lambda a, b: (T.distributions.Beta(a, b), [a, b]))(_leaf(T, "pos"), _leaf(T, "pos2")),
             lambda T: _c(T, _ARR["unit"])),
    "Binomial": (lambda T: (lambda s: (T.distributions.Binomial(10, s), [s]))(_leaf(T, "simplex")),
                 lambda T: _c(T, [0., 1., 3., 10., 2., 5.])),
    "Cauchy": (lambda T: (lambda r, p: (T.distributions.Cauchy(r, p), [r, p]))(_leaf(T, "rv"), _leaf(T, "pos")),
               lambda T: _c(T, _ARR["rv"] + 0.3)),
    "Dirichlet": (lambda T: (lambda p: (T.distributions.Dirichlet(p), [p]))(_leaf(T, "pos")),
                  lambda T: _c(T, _ARR["simplex"])),
    "Exponential": (lambda T: (lambda p: (T.distributions.Exponential(p), [p]))(_leaf(T, "pos")),
                    lambda T: _c(T, _ARR["pos2"])),
    "FisherSnedecor": (lambda T: (lambda a, b: (T.distributions.FisherSnedecor(a, 4 + b), [a, b]))(
        _leaf(T, "pos"), _leaf(T, "pos2")), lambda T: _c(T, _ARR["pos2"])),
    "Gamma": (lambda T: (lambda a, b: (T.distributions.Gamma(a, b), [a, b]))(_leaf(T, "pos"), _leaf(T, "pos2")),
              lambda T: _c(T, _ARR["pos2"])),
    "Geometric": (lambda T: (lambda s: (T.distributions.Geometric(s), [s]))(_leaf(T, "simplex")),
                  lambda T: _c(T, [0., 1., 4., 2., 0., 7.])),
    "Gumbel": (lambda T: (lambda r, p: (T.distributions.Gumbel(r, p), [r, p]))(_leaf(T, "rv"), _leaf(T, "pos2")),
               lambda T: _c(T, _ARR["rv"] + 0.3)),
    "GeneralizedPareto": (lambda T: (lambda r, p, c: (T.distributions.GeneralizedPareto(r, p, c / 10), [r, p, c]))(
        _leaf(T, "rv"), _leaf(T, "pos"), _leaf(T, "rv")), lambda T: _c(T, _ARR["rv"] + 0.1 * _ARR["pos"])),
    "HalfCauchy": (lambda T: (lambda p: (T.distributions.HalfCauchy(p), [p]))(_leaf(T, "pos")),
                   lambda T: _c(T, _ARR["pos2"])),
    "HalfNormal": (lambda T: (lambda p: (T.distributions.HalfNormal(p), [p]))(_leaf(T, "pos2")),
                   lambda T: _c(T, _ARR["pos"])),
    "InverseGamma": (lambda T: (lambda a, b: (T.distributions.InverseGamma(a, b), [a, b]))(
        _leaf(T, "pos"), _leaf(T, "pos2")), lambda T: _c(T, _ARR["pos2"])),
    "Laplace": (lambda T: (lambda r, p: (T.distributions.Laplace(r, p), [r, p]))(_leaf(T, "rv"), _leaf(T, "pos2")),
                lambda T: _c(T, _ARR["rv"] + 0.3)),
    "LogNormal": (lambda T: (lambda r, p: (T.distributions.LogNormal(r, p.clamp(max=3)), [r, p]))(
        _leaf(T, "rv"), _leaf(T, "pos")), lambda T: _c(T, _ARR["pos2"])),
    "LowRankMultivariateNormal": (lambda T: (lambda r, w, p: (T.distributions.LowRankMultivariateNormal(r, w, p), [r, w, p]))(
        _leaf(T, "rv"), _leaf(T, "rv", lambda a: np.zeros((_N, 1))), _leaf(T, "pos2")),
        lambda T: _c(T, _ARR["rv"] + 0.3)),
    "Multinomial": (lambda T: (lambda s: (T.distributions.Multinomial(10, s), [s]))(_leaf(T, "simplex")),
                    lambda T: _c(T, [1., 2., 0., 3., 4., 0.])),
    "MultivariateNormal_diag": (lambda T: (lambda r, p: (T.distributions.MultivariateNormal(r, T.diag(p)), [r, p]))(
        _leaf(T, "rv"), _leaf(T, "pos2")), lambda T: _c(T, _ARR["rv"] + 0.3)),
    "MultivariateNormal_full": (lambda T: (lambda r, c: (T.distributions.MultivariateNormal(r, c), [r, c]))(
        _leaf(T, "rv"), _leaf(T, "cov")), lambda T: _c(T, _ARR["rv"] + 0.3)),
    "Normal": (lambda T: (lambda r, p: (T.distributions.Normal(r, p), [r, p]))(_leaf(T, "rv"), _leaf(T, "pos2")),
               lambda T: _c(T, _ARR["rv"] + 0.3)),
    "OneHotCategorical": (lambda T: (lambda s: (T.distributions.OneHotCategorical(s), [s]))(_leaf(T, "simplex")),
                          lambda T: _c(T, np.eye(_N)[2])),
    "Pareto": (lambda T: (lambda a, b: (T.distributions.Pareto(a, 2 + b), [a, b]))(_leaf(T, "pos"), _leaf(T, "pos2")),
               lambda T: _c(T, _ARR["pos"] * (1 + _ARR["pos2"]))),
    "Poisson": (lambda T: (lambda p: (T.distributions.Poisson(p), [p]))(_leaf(T, "pos")),
                lambda T: _c(T, [0., 1., 2., 3., 0., 5.])),
    "StudentT": (lambda T: (lambda a, r, b: (T.distributions.StudentT(2 + a, r, b), [a, r, b]))(
        _leaf(T, "pos"), _leaf(T, "rv"), _leaf(T, "pos2")), lambda T: _c(T, _ARR["rv"] + 0.3)),
    "Uniform": (lambda T: (lambda r, p: (T.distributions.Uniform(r, r + p), [r, p]))(_leaf(T, "rv"), _leaf(T, "pos")),
                lambda T: _c(T, _ARR["rv"] + 0.5 * _ARR["pos"])),
    "VonMises": (lambda T: (lambda r, p: (T.distributions.VonMises(r, p), [r, p]))(_leaf(T, "rv"), _leaf(T, "pos")),
                 lambda T: _c(T, np.clip(_ARR["rv"] + 0.3, -3.1, 3.1))),
    "Weibull": (lambda T: (lambda a, b: (T.distributions.Weibull(a[0], b[0]), [a, b]))(_leaf(T, "pos"), _leaf(T, "pos2")),
                lambda T: _c(T, _ARR["pos2"][:3])),
    "Wishart": (lambda T: (lambda a, c: (T.distributions.Wishart(_N + 2 + a[0], c), [a, c]))(_leaf(T, "pos"), _leaf(T, "cov")),
                lambda T: _c(T, _ARR["cov"] + np.eye(_N))),
}


def _lkj_value(T):
    """A 3x3 correlation Cholesky factor (rows of unit norm), batch of 3."""
    a = _rs(60).randn(3, 3, 3)
    corr = a @ np.swapaxes(a, -1, -2) + 3 * np.eye(3)
    d = np.sqrt(np.diagonal(corr, axis1=-2, axis2=-1))
    return _c(T, np.linalg.cholesky(corr / d[..., :, None] / d[..., None, :]))


def _mixture(T):
    mix, loc, scale = _leaf(T, "simplex", lambda a: a[:3]), _leaf(T, "rv"), _leaf(T, "pos2")
    D = T.distributions
    comp = D.Independent(D.Normal(loc.view(3, 2), scale.view(3, 2)), 1)
    return D.MixtureSameFamily(D.Categorical(mix), comp), [mix, loc, scale]


def _transformed(T):
    loc, scale = _leaf(T, "rv"), _leaf(T, "pos2")
    D = T.distributions
    tr = [D.transforms.AffineTransform(loc, scale), D.transforms.ExpTransform()]
    return D.TransformedDistribution(D.Normal(T.zeros(_N, dtype=T.float64), T.ones(_N, dtype=T.float64)), tr), [loc, scale]


# the rest of _get_examples' families, observed the same way
PAIRS.update({
    "Chi2": (lambda T: (lambda p: (T.distributions.Chi2(p), [p]))(_leaf(T, "pos")), lambda T: _c(T, _ARR["pos2"])),
    "ContinuousBernoulli": (lambda T: (lambda u: (T.distributions.ContinuousBernoulli(u), [u]))(_leaf(T, "unit")),
                            lambda T: _c(T, _ARR["simplex"] * 3)),
    "Kumaraswamy": (lambda T: (lambda a, b: (T.distributions.Kumaraswamy(1 + a, 1 + b), [a, b]))(
        _leaf(T, "unit"), _leaf(T, "simplex")), lambda T: _c(T, _ARR["unit"])),
    "LKJCholesky": (lambda T: (lambda c: (T.distributions.LKJCholesky(3, c), [c]))(
        _leaf(T, "pos", lambda a: a[:3] + 0.5)), _lkj_value),
    "NegativeBinomial": (lambda T: (lambda u: (T.distributions.NegativeBinomial(T.tensor(5.0, dtype=T.float64), u), [u]))(
        _leaf(T, "unit")), lambda T: _c(T, [0., 3., 1., 7., 2., 4.])),
    "RelaxedBernoulli": (lambda T: (lambda u: (T.distributions.RelaxedBernoulli(_c(T, 0.7), u), [u]))(_leaf(T, "unit")),
                         lambda T: _c(T, _ARR["simplex"] * 3)),
    "RelaxedOneHotCategorical": (lambda T: (lambda s: (T.distributions.RelaxedOneHotCategorical(_c(T, 0.7), s), [s]))(
        _leaf(T, "simplex")), lambda T: _c(T, _ARR["simplex"][::-1].copy())),
    "OneHotCategoricalStraightThrough": (lambda T: (lambda s: (T.distributions.OneHotCategoricalStraightThrough(s), [s]))(
        _leaf(T, "simplex")), lambda T: _c(T, np.eye(_N)[4])),
    "HalfCauchy_scale_tensor": (lambda T: (lambda p: (T.distributions.HalfCauchy(p.view(_N, 1)), [p]))(_leaf(T, "pos")),
                                lambda T: _c(T, _ARR["pos2"].reshape(_N, 1))),
    "Independent": (lambda T: (lambda r, p: (T.distributions.Independent(T.distributions.Normal(r.view(2, 3), p.view(2, 3)), 1),
                                             [r, p]))(_leaf(T, "rv"), _leaf(T, "pos2")),
                    lambda T: _c(T, _ARR["rv"].reshape(2, 3) + 0.3)),
    "MixtureSameFamily": (_mixture, lambda T: _c(T, [[0.1, -0.4], [1.0, 0.3]])),
    "TransformedDistribution": (_transformed, lambda T: _c(T, _ARR["pos2"])),
})


def scipy_pair(T, name, what):
    """One TestAgainstScipy observation of one distribution: ``moments`` (mean, variance,
    stddev, test_mean / test_variance_stddev, and the mode), ``cdf`` at fixed points in the
    support (test_cdf), ``icdf`` at fixed probabilities (test_icdf), ``log_prob`` and
    ``entropy``, each with the gradients of its sum."""
    build, value = PAIRS[name]
    d, params = build(T)
    if what == "moments":
        return [attempt(lambda: d.mean), attempt(lambda: d.variance), attempt(lambda: d.stddev),
                attempt(lambda: d.mode)]
    if what in ("cdf", "icdf"):
        q = _c(T, _rs(70).uniform(0.05, 0.95, (5,) + tuple(d.batch_shape)))
        got = attempt(lambda: d.cdf(value(T)) if what == "cdf" else d.icdf(q))
        return got if isinstance(got, str) or not got.requires_grad else [got] + grads(T, got, params)
    if what == "log_prob":
        lp = d.log_prob(value(T))
        return [lp] + grads(T, lp, params)
    ent = attempt(d.entropy)
    return ent if isinstance(ent, str) else [ent] + grads(T, ent, params)


def support_and_params(T, name):
    # test_support_constraints: the support's event_dim is the event rank, and its check of a
    # sample has the batch shape and holds; also of the fixed value scored above.
    # test_params_constraints: each given parameter's constraint has an event_dim its value
    # covers, and (unless dependent) holds for it
    T.manual_seed(0)    # each library's own stream, fixed so that a run repeats
    build, value = PAIRS[name]
    d, _ = build(T)
    sup = d.support
    out = [sup.event_dim, len(d.event_shape), sup.is_discrete]
    ok = sup.check(d.sample())
    out += [tuple(ok.shape), bool(ok.all()), sup.check(value(T))]
    for key, c in sorted(d.arg_constraints.items()):
        v = d.__dict__.get(key)
        if v is None or not hasattr(v, "shape"):
            continue     # not given (the other of probs / logits) or a number
        if T.distributions.constraints.is_dependent(c):
            out.append((key, "dependent"))
            continue
        out.append((key, c.event_dim, v.dim() >= c.event_dim, bool(c.check(v.detach()).all())))
    return out


def scipy_pair_all(T, name):
    """Every observation of ``scipy_pair`` and ``support_and_params`` for one distribution. GeneralizedPareto runs with
    float64 as the default dtype, as torch's test_cdf does: torch 2.13's GeneralizedPareto
    compares float64 parameters with a float32 ``tensor(0.0)`` and raises RuntimeError under a
    float32 default (tracegrad does not copy that accident)."""
    old = T.get_default_dtype()
    if name == "GeneralizedPareto":
        T.set_default_dtype(T.float64)
    try:
        return [scipy_pair(T, name, w) for w in ("moments", "cdf", "icdf", "log_prob", "entropy")] + [
            support_and_params(T, name)]
    finally:
        T.set_default_dtype(old)


SCIPY = {name: (lambda n: lambda T: scipy_pair_all(T, n))(name) for name in PAIRS}


@pytest.mark.parametrize("fn", outcome_params(SCIPY))
def test_against_torch(fn):
    same_outcome(fn)


# ==== TestFunctors ==============================================================================
def _ar(T, lo=1, hi=101):
    return T.arange(lo, hi, dtype=T.float32)


def _transform_observations(T, t, x, y, parts):
    """What the functor tests compare: domain / codomain checks, forward, inverse and the
    log-Jacobian of the combined transform, each part's own results (``parts``), and the
    gradient of the forward and log-Jacobian sums with respect to ``x``."""
    x = x.detach().requires_grad_()
    out = [t.domain.check(x), t.codomain.check(y), t(x), t.inv(y), t.log_abs_det_jacobian(x, y)]
    out.append(T.autograd.grad((t(x) + t.log_abs_det_jacobian(x, t(x))).sum(), x)[0])
    return out + parts


def cat_transform(T):
    # test_cat_transform: CatTransform of Exp, Affine(1, 100) and identity along dim 0
    tr = T.distributions.transforms
    xs = [-_ar(T).view(-1, 100), (_ar(T).view(-1, 100) - 1) / 100, _ar(T).view(-1, 100)]
    ts = [tr.ExpTransform(), tr.AffineTransform(1, 100), tr.identity_transform]
    ys = [_ar(T).view(-1, 100)] * 3
    t = tr.CatTransform(ts, dim=0)
    parts = [T.cat([f(x) for f, x in zip(ts, xs)]), T.cat([f.inv(y) for f, y in zip(ts, ys)]),
             T.cat([f.log_abs_det_jacobian(x, y) for f, x, y in zip(ts, xs, ys)])]
    return _transform_observations(T, t, T.cat(xs), T.cat(ys), parts)


def cat_transform_non_uniform(T):
    # test_cat_transform_non_uniform: lengths [1, 2], the second part itself a CatTransform
    tr = T.distributions.transforms
    x1 = -_ar(T).view(-1, 100)
    x2 = T.cat([(_ar(T).view(-1, 100) - 1) / 100, _ar(T).view(-1, 100)])
    t1 = tr.ExpTransform()
    t2 = tr.CatTransform([tr.AffineTransform(1, 100), tr.identity_transform], dim=0)
    t = tr.CatTransform([t1, t2], dim=0, lengths=[1, 2])
    y1, y2 = _ar(T).view(-1, 100), T.cat([_ar(T).view(-1, 100)] * 2)
    parts = [T.cat([t1(x1), t2(x2)]), T.cat([t1.inv(y1), t2.inv(y2)]),
             T.cat([t1.log_abs_det_jacobian(x1, y1), t2.log_abs_det_jacobian(x2, y2)])]
    return _transform_observations(T, t, T.cat([x1, x2]), T.cat([y1, y2]), parts)


def cat_event_dim(T):
    # test_cat_event_dim: two Affine transforms with event_dim=1 joined along dim 1; the
    # log-Jacobian sums the parts' (fixed inputs instead of randn)
    tr = T.distributions.transforms
    t1 = tr.AffineTransform(0, 2 * T.ones(2), event_dim=1)
    t2 = tr.AffineTransform(0, 2 * T.ones(2), event_dim=1)
    x1, x2 = T.tensor(_rs(1).randn(16, 2).astype("float32")), T.tensor(_rs(2).randn(16, 2).astype("float32"))
    t = tr.CatTransform([t1, t2], dim=1, lengths=[2, 2])
    x = T.cat([x1, x2], dim=1)
    y = t(x)
    return [y, t.log_abs_det_jacobian(x, y), t1.log_abs_det_jacobian(x1, t1(x1)) + t2.log_abs_det_jacobian(x2, t2(x2)),
            t.event_dim, t.inv(y)]


def stack_transform(T):
    # test_stack_transform: StackTransform of Exp, Affine(1, 100) and identity along dim 0
    tr = T.distributions.transforms
    xs = [-_ar(T), (_ar(T) - 1) / 100, _ar(T)]
    ts = [tr.ExpTransform(), tr.AffineTransform(1, 100), tr.identity_transform]
    ys = [_ar(T)] * 3
    t = tr.StackTransform(ts, dim=0)
    parts = [T.stack([f(x) for f, x in zip(ts, xs)]), T.stack([f.inv(x) for f, x in zip(ts, xs)]),
             T.stack([f.log_abs_det_jacobian(x, y) for f, x, y in zip(ts, xs, ys)]), t.inv(T.stack(xs))]
    return _transform_observations(T, t, T.stack(xs), T.stack(ys), parts)


def cat_stack_errors(T):
    # CatTransform / StackTransform refuse parts that are not transforms (AssertionError in
    # torch) and lengths that do not match the number of parts
    tr = T.distributions.transforms
    out = [attempt_any(lambda: tr.CatTransform([tr.ExpTransform(), 3])),
           attempt_any(lambda: tr.StackTransform([tr.ExpTransform(), "x"])),
           attempt_any(lambda: tr.CatTransform([tr.ExpTransform()], lengths=[1, 2]))]
    t = tr.CatTransform([tr.ExpTransform(), tr.identity_transform], dim=0, lengths=[1, 1])
    out.append(attempt_any(lambda: t(T.zeros(3))))
    return out


def attempt_any(fn):
    """``fn()``'s value, or the name of the builtin class of what it raised."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 -- the class is what is compared
        return next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")


FUNCTORS = {"cat_transform": cat_transform, "cat_transform_non_uniform": cat_transform_non_uniform,
            "cat_event_dim": cat_event_dim, "stack_transform": stack_transform,
            "cat_stack_errors": cat_stack_errors}


@pytest.mark.parametrize("fn", outcome_params(FUNCTORS))
def test_functors(fn):
    same_outcome(fn)


# ==== TestValidation.test_warning_unimplemented_constraints =====================================
def unimplemented_constraints(T):
    # a Distribution subclass that declares no arg_constraints / support warns (UserWarning)
    # when it validates: once when built, once when log_prob validates a value
    class Delta(T.distributions.Distribution):
        def __init__(self, validate_args=True):
            super().__init__(validate_args=validate_args)

        def sample(self, sample_shape=()):
            return T.tensor(0.0).expand(sample_shape)

        def log_prob(self, value):
            if self._validate_args:
                self._validate_sample(value)
            return T.where(value == 0.0, T.zeros_like(value), T.full_like(value, -math.inf))

    import warnings
    seen = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        d = Delta()
        seen.append([c.category.__name__ for c in w])
        del w[:]
        lp = d.log_prob(d.sample((2,)))
        seen.append([c.category.__name__ for c in w])
        del w[:]
        Delta(validate_args=False).log_prob(T.zeros(2))
        seen.append([c.category.__name__ for c in w])
    return seen + [lp]


def test_warning_unimplemented_constraints():
    got = same_outcome(unimplemented_constraints)
    assert got[0] == ["UserWarning"] and got[1] == ["UserWarning"] and got[2] == []


# ==== TestDistributions: single tests no port took ==============================================
def lazy_property_grad(T):
    # test_lazy_property_grad: a lazy_property computed under no_grad is not cached, so the
    # value asked for later (grad mode on) still leads back to the parameter
    x = T.tensor([0.5], requires_grad=True)

    class Dummy:
        @T.distributions.utils.lazy_property
        def y(self):
            return x + 1

    out = []
    for ctx in (T.enable_grad, T.no_grad):
        x.grad = None
        with ctx():
            d = Dummy()
            v = d.y
        out += [v.requires_grad, "y" in d.__dict__]
        d.y.backward()
        out.append(x.grad.clone())
    cov = T.eye(2, requires_grad=True)
    dist = T.distributions.MultivariateNormal(T.tensor([0.3, -0.2]), cov)
    with T.no_grad():
        first = dist.scale_tril
    out += [first.requires_grad, dist.scale_tril.requires_grad]
    dist.scale_tril.sum().backward()
    return out + [cov.grad]


def _subclass_examples(T):
    D, t = T.distributions, T.tensor
    return [
        (D.Normal, dict(loc=t([0.1, -0.3]), scale=t([1.0, 2.0])), t([0.4, 0.2])),
        (D.Bernoulli, dict(probs=t([0.7, 0.2, 0.4])), t([1., 0., 1.])),
        (D.Categorical, dict(logits=t([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]])), t([2, 0])),
        (D.Beta, dict(concentration1=t([1.5, 0.5]), concentration0=t([2.0, 1.2])), t([0.3, 0.6])),
        (D.Dirichlet, dict(concentration=t([[1.5, 0.5, 2.0]])), t([0.2, 0.3, 0.5])),
        (D.Kumaraswamy, dict(concentration1=t([1.5, 1.2]), concentration0=t([1.1, 1.9])), t([0.3, 0.6])),
        (D.VonMises, dict(loc=t([0.2, -1.0]), concentration=t([1.0, 3.0])), t([0.5, 0.1])),
        (D.MultivariateNormal, dict(loc=t([0.1, 0.2]), scale_tril=t([[1.0, 0.0], [0.3, 0.8]])), t([0.0, 0.5])),
        (D.LowRankMultivariateNormal, dict(loc=t([0.1, 0.2]), cov_factor=t([[0.5], [0.2]]), cov_diag=t([1.0, 0.5])),
         t([0.0, 0.5])),
        (D.GeneralizedPareto, dict(loc=t([0.1, 0.2]), scale=t([1.0, 2.0]), concentration=t([0.1, -0.2])), t([0.5, 0.7])),
        (D.ContinuousBernoulli, dict(probs=t([0.3, 0.8])), t([0.25, 0.75])),
        (D.RelaxedBernoulli, dict(temperature=t(0.5), probs=t([0.3, 0.8])), t([0.25, 0.75])),
    ]


def subclass_expand(T, k):
    # test_distribution_subclass_expand: ``expand`` on a subclass that adds nothing returns the
    # subclass, with the expanded batch shape, sample shape and the same log_prob
    Dist, param, value = _subclass_examples(T)[k]

    class SubClass(Dist):
        pass

    d = SubClass(**param)
    e = d.expand((2,) + tuple(d.batch_shape))
    return [type(e) is SubClass, tuple(e.batch_shape), tuple(e.sample().shape), tuple(d.sample().shape),
            e.log_prob(value), d.log_prob(value)]


SINGLES = {f"subclass_expand_{Dist.__name__}": (lambda k: lambda T: subclass_expand(T, k))(k)
           for k, (Dist, _, _) in enumerate(_subclass_examples(torch))}


def gamma_log_prob_at_boundary(T):
    # test_gamma_log_prob_at_boundary: Gamma(c, 1).log_prob(0) is +inf, 0 and -inf for
    # c = 0.5, 1, 2 (and the same through Chi2 / Exponential), with validate_args on
    out = []
    for c in (0.5, 1.0, 2.0):
        out.append(T.distributions.Gamma(T.tensor(c), T.tensor(1.0), validate_args=True).log_prob(T.tensor(0.)))
    out.append(T.distributions.Chi2(T.tensor(2.0), validate_args=True).log_prob(T.tensor(0.)))
    out.append(T.distributions.Exponential(T.tensor(2.0), validate_args=True).log_prob(T.tensor(0.)))
    return out


def dirichlet_log_prob_zero(T):
    # test_dirichlet_log_prob_zero: a coordinate at 0 with concentration 1 has a finite density
    alpha = T.tensor([1.0, 2.0], requires_grad=True)
    lp = T.distributions.Dirichlet(alpha, validate_args=True).log_prob(T.tensor([0.0, 1.0]))
    return [lp] + grads(T, lp, [alpha])


def binomial_stable(T):
    # test_binomial_stable: extreme logits give finite log_prob and gradients
    logits = T.tensor([-100., 100.], requires_grad=True)
    lp = T.distributions.Binomial(1, logits=logits).log_prob(T.tensor([0., 0.]))
    return [lp] + grads(T, lp, [logits])


def vonmises_logprob(T):
    # test_vonmises_logprob: the density integrates to 1 over a circle for small to large
    # concentrations (a grid of step 1e-2 here, not 1e-4), and log_prob's gradients
    out = []
    grid = T.arange(0.0, 2 * math.pi, 1e-2, dtype=T.float64)
    for conc in (0.01, 0.3, 3.0, 30.0, 100.0):
        c = T.tensor(conc, dtype=T.float64, requires_grad=True)
        loc = T.tensor(0.2, dtype=T.float64, requires_grad=True)
        lp = T.distributions.VonMises(loc, c).log_prob(grid)
        norm = lp.exp().mean() * 2 * math.pi
        out += [lp[::50], abs(norm.item() - 1) < 1e-3] + grads(T, lp, [loc, c])
    return out


def logisticnormal(T):
    # test_logisticnormal: sample shapes, log_prob at a fixed point of the simplex and its
    # gradients with respect to loc and scale
    rs = _rs(7)
    mean = T.tensor(rs.randn(5, 5), dtype=T.float64, requires_grad=True)
    std = T.tensor(np.abs(rs.randn(5, 5)), dtype=T.float64, requires_grad=True)
    D = T.distributions.LogisticNormal
    out = [tuple(D(mean, std).sample().shape), tuple(D(mean, std).sample((7,)).shape),
           tuple(D(T.tensor([0.3]), T.tensor([0.5])).sample((1,)).shape),
           tuple(D(0.2, 0.6).sample().shape), tuple(D(-0.7, 50.0).sample().shape),
           D(mean, std).rsample().requires_grad]
    z = np.exp(rs.randn(5, 6))
    value = T.tensor(z / z.sum(-1, keepdims=True), dtype=T.float64)
    lp = D(mean, std).log_prob(value)
    return out + [lp] + grads(T, lp, [mean, std])


def _lowrank(T, batch=()):
    rs = _rs(11)
    loc = T.tensor(rs.randn(*batch, 4), dtype=T.float64, requires_grad=True)
    w = T.tensor(rs.randn(*batch, 4, 2), dtype=T.float64, requires_grad=True)
    diag = T.tensor(np.exp(rs.randn(*batch, 4)), dtype=T.float64, requires_grad=True)
    value = T.tensor(rs.randn(3, *batch, 4), dtype=T.float64)
    return loc, w, diag, value


def lowrank_log_prob(T, batch):
    # test_lowrank_multivariate_normal_log_prob: the low-rank form's log_prob equals the full
    # covariance MultivariateNormal's, batched or not; the gradients reach loc, factor, diag
    loc, w, diag, value = _lowrank(T, batch)
    low = T.distributions.LowRankMultivariateNormal(loc, w, diag)
    full = T.distributions.MultivariateNormal(loc, w @ w.mT + T.diag_embed(diag))
    lp, lpf = low.log_prob(value), full.log_prob(value)
    return [lp, (lp - lpf).abs().max().item() < 1e-8] + grads(T, lp, [loc, w, diag])


def lowrank_moments(T):
    # test_lowrank_multivariate_normal_moments, the deterministic half: mean, variance,
    # covariance, precision, scale_tril and entropy agree with the full form
    loc, w, diag, _ = _lowrank(T)
    low = T.distributions.LowRankMultivariateNormal(loc, w, diag)
    full = T.distributions.MultivariateNormal(loc, w @ w.mT + T.diag_embed(diag))
    out = [low.mean, low.variance, low.covariance_matrix, low.precision_matrix, low.scale_tril, low.entropy()]
    same = [bool(T.allclose(a, b)) for a, b in zip(out, [full.mean, full.variance, full.covariance_matrix,
                                                          full.precision_matrix, full.scale_tril, full.entropy()])]
    return out + same + grads(T, low.entropy() + low.scale_tril.sum() + low.precision_matrix.sum(), [w, diag])


def stable_with_precision(T, which):
    # test_multivariate_normal_stable_with_precision_matrix / test_wishart_stable_with_precision_matrix:
    # an RBF kernel as the precision matrix (badly conditioned) is accepted
    x = T.tensor(_rs(3).randn(10), dtype=T.float64)
    P = T.exp(-((x - x.unsqueeze(-1)) ** 2))
    if which == "mvn":
        d = T.distributions.MultivariateNormal(x.new_zeros(10), precision_matrix=P)
    else:
        d = T.distributions.Wishart(T.tensor(10, dtype=T.float64), precision_matrix=P)
    return [tuple(d.batch_shape), tuple(d.event_shape), bool(T.isfinite(d.scale_tril).all())]


def binomial_extreme_vals(T):
    # test_binomial_extreme_vals (float64 default): probs 0 and 1 put all mass on 0 and on
    # total_count; a zero total_count samples and scores zeros
    old = T.get_default_dtype()
    T.set_default_dtype(T.float64)
    try:
        B = T.distributions.Binomial
        b0, b1 = B(100, 0), B(100, 1)
        zero = T.zeros(2, 2)
        b2 = B(zero, 1)
        return [b0.sample(), b0.log_prob(T.tensor([0.])), b0.log_prob(T.tensor([1.])).exp(),
                b1.sample(), b1.log_prob(T.tensor([100.])), b1.log_prob(T.tensor([99.])).exp(),
                b2.sample(), b2.log_prob(zero)]
    finally:
        T.set_default_dtype(old)


def binomial_vectorized_count_log_prob(T):
    # test_binomial_log_prob_vectorized_count: total_count as a tensor, one for all or one per
    # item; the gradients reach probs
    out = []
    for count, value in (([10], [7., 3., 9.]), ([1, 2, 10], [0., 1., 9.])):
        probs = T.tensor([0.2, 0.7, 0.9], requires_grad=True)
        lp = T.distributions.Binomial(T.tensor(count), probs).log_prob(T.tensor(value))
        out += [lp] + grads(T, lp, [probs])
    return out


def enumerate_supports(T):
    # test_binomial_enumerate_support / test_one_hot_categorical_enumerate_support /
    # test_bernoulli_enumerate_support / test_categorical_enumerate_support (_check_enumerate_support:
    # the values, and expand=False's unexpanded shape)
    D, t = T.distributions, T.tensor
    cases = [(D.Binomial, dict(probs=t([0.1]), total_count=2)), (D.Binomial, dict(probs=t([0.1, 0.9]), total_count=2)),
             (D.Binomial, dict(probs=t([[0.1, 0.2], [0.3, 0.4]]), total_count=3)),
             (D.OneHotCategorical, dict(probs=t([0.1, 0.2, 0.7]))), (D.OneHotCategorical, dict(probs=t([[0.1, 0.9], [0.3, 0.7]]))),
             (D.Bernoulli, dict(probs=t([[0.1, 0.2], [0.3, 0.4]]))), (D.Categorical, dict(probs=t([[0.1, 0.9], [0.3, 0.7]])))]
    out = []
    for Dist, kw in cases:
        d = Dist(**kw)
        out += [d.enumerate_support(), d.enumerate_support(expand=False)]
    return out


def poisson_forward_ad(T):
    # test_poisson_forward_ad (_check_forward_ad(torch.poisson)): a sample carries a zero tangent
    fwAD = T.autograd.forward_ad
    out = []
    for shape in ((), (3,), (2, 3)):
        rate = T.full(shape, 2.0)
        with fwAD.dual_level():
            y = T.poisson(fwAD.make_dual(rate, T.ones(shape)))
            primal, tangent = fwAD.unpack_dual(y)
        out += [tuple(primal.shape), tangent]
    return out


def dirichlet_beta_mode(T):
    # test_mode's Dirichlet / Beta rows where every concentration is below 1: torch gives the
    # first category (Beta: 1), whichever concentration is larger; mixed rows keep the formula
    c = T.tensor([[0.3, 0.9, 0.5], [2.0, 3.0, 0.5], [0.2, 0.1, 0.3], [1.5, 0.4, 0.4]])
    return [T.distributions.Dirichlet(c).mode,
            T.distributions.Beta(T.tensor([0.2, 0.5, 2.0]), T.tensor([0.9, 0.3, 0.5])).mode]


SINGLES.update({
    "dirichlet_beta_mode": dirichlet_beta_mode,
    "binomial_extreme_vals": binomial_extreme_vals,
    "binomial_log_prob_vectorized_count": binomial_vectorized_count_log_prob,
    "enumerate_supports": enumerate_supports,
    "poisson_forward_ad": poisson_forward_ad,
    "lazy_property_grad": lazy_property_grad,
    "gamma_log_prob_at_boundary": gamma_log_prob_at_boundary,
    "dirichlet_log_prob_zero": dirichlet_log_prob_zero,
    "binomial_stable": binomial_stable,
    "vonmises_logprob": vonmises_logprob,
    "logisticnormal": logisticnormal,
    "lowrank_log_prob": lambda T: lowrank_log_prob(T, ()),
    "lowrank_log_prob_batched": lambda T: lowrank_log_prob(T, (2,)),
    "lowrank_moments": lowrank_moments,
    "mvn_stable_with_precision": lambda T: stable_with_precision(T, "mvn"),
    "wishart_stable_with_precision": lambda T: stable_with_precision(T, "wishart"),
})


@pytest.mark.parametrize("fn", outcome_params(SINGLES))
def test_distributions_single(fn):
    same_outcome(fn)


# ==== TestKL: the analytic halves ===============================================================
def kl_transformed(T):
    # test_kl_transformed: KL of an Independent Normal and of its affine TransformedDistribution
    # with itself has the batch shape (2,)
    D = T.distributions
    diag = D.Independent(D.Normal(T.zeros(2, 3), T.ones(2, 3)), 1)
    tr = D.TransformedDistribution(diag, D.transforms.AffineTransform(loc=0.0, scale=2.0))
    return [D.kl_divergence(diag, diag), D.kl_divergence(tr, tr)]


def _tril(T, shape, seed):
    return T.distributions.transform_to(T.distributions.constraints.lower_cholesky)(
        T.tensor(_rs(seed).randn(*shape), dtype=T.float64))


def kl_mvn_batched(T, broadcast):
    # test_kl_multivariate_normal_batched(_broadcasted): a batched KL equals the stack of the
    # per-item ones; gradients reach both locations and scale_trils
    D = T.distributions
    b = 4
    loc = [T.tensor(_rs(20 + i).randn(b, 3), dtype=T.float64, requires_grad=True) for i in range(2)]
    tril = [_tril(T, (b, 3, 3), 30).requires_grad_(), _tril(T, (3, 3) if broadcast else (b, 3, 3), 31).requires_grad_()]
    per = T.stack([D.kl_divergence(D.MultivariateNormal(loc[0][i], scale_tril=tril[0][i]),
                                   D.MultivariateNormal(loc[1][i], scale_tril=tril[1] if broadcast else tril[1][i]))
                   for i in range(b)])
    kl = D.kl_divergence(D.MultivariateNormal(loc[0], scale_tril=tril[0]), D.MultivariateNormal(loc[1], scale_tril=tril[1]))
    return [kl, bool(T.allclose(kl, per))] + grads(T, kl, loc + tril)


def kl_lowrank(T, batch):
    # test_kl_lowrank_multivariate_normal(_batched): KL between low-rank forms, and between a
    # low-rank and a full form either way, equal the full-full KL
    D = T.distributions
    rs = _rs(40)
    loc = [T.tensor(rs.randn(*batch, 4), dtype=T.float64, requires_grad=True) for _ in range(2)]
    fac = [T.tensor(rs.randn(*batch, 4, 3), dtype=T.float64, requires_grad=True) for _ in range(2)]
    diag = [T.tensor(np.exp(rs.randn(*batch, 4)), dtype=T.float64, requires_grad=True) for _ in range(2)]
    cov = [f @ f.mT + T.diag_embed(d) for f, d in zip(fac, diag)]
    p, q = (D.LowRankMultivariateNormal(loc[i], fac[i], diag[i]) for i in range(2))
    pf, qf = (D.MultivariateNormal(loc[i], cov[i]) for i in range(2))
    ll, lf, fl, ff = D.kl_divergence(p, q), D.kl_divergence(p, qf), D.kl_divergence(pf, q), D.kl_divergence(pf, qf)
    return [ll, lf, fl, ff] + grads(T, ll, loc + fac + diag)


def kl_shape(T):
    # test_kl_shape over this file's examples: kl(d, d) has d's batch shape, or the pair is
    # not implemented
    out = []
    for name in PAIRS:
        d = PAIRS[name][0](T)[0]
        kl = attempt(lambda: T.distributions.kl_divergence(d, d))
        out.append(kl if isinstance(kl, str) else (tuple(kl.shape), tuple(d.batch_shape)))
    return out


KL = {"kl_transformed": kl_transformed, "kl_mvn_batched": lambda T: kl_mvn_batched(T, False),
      "kl_mvn_batched_broadcasted": lambda T: kl_mvn_batched(T, True),
      "kl_lowrank": lambda T: kl_lowrank(T, ()), "kl_lowrank_batched": lambda T: kl_lowrank(T, (3,)),
      "kl_shape": kl_shape}


@pytest.mark.parametrize("fn", outcome_params(KL))
def test_kl(fn):
    same_outcome(fn)


# ==== TestDistributions' generic tests over _get_examples' parameter sets =======================
_e = _rs(5)
_A23, _B23, _A4 = np.exp(_e.randn(2, 3)), np.exp(_e.randn(2, 3)), np.exp(_e.randn(4))
_A1, _B1, _R55, _R1 = np.exp(_e.randn(1)), np.exp(_e.randn(1)), _e.randn(5, 5), _e.randn(1)
_U23, _V23 = _e.uniform(1, 2, (2, 3)), _e.uniform(1, 2, (2, 3))


def _examples(T):
    leaves = []

    def t(a):
        leaves.append(T.tensor(np.asarray(a), dtype=T.float64, requires_grad=True))
        return leaves[-1]
    D = T.distributions
    return leaves, {
        "bern_num": lambda: D.Bernoulli(probs=0.3),
        "bern_logit0": lambda: D.Bernoulli(logits=t([0.0])),
        "geom_num": lambda: D.Geometric(probs=0.3),
        "cat_zero": lambda: D.Categorical(probs=t([[1.0, 0.0], [0.0, 1.0]])),
        "cat_logits0": lambda: D.Categorical(logits=t([[0.0, 0.0], [0.0, 0.0]])),
        "binom_zero_probs": lambda: D.Binomial(10, probs=t([[1.0, 0.0], [0.0, 1.0]])),
        "binom_vec_count": lambda: D.Binomial(T.tensor([10, 8]), probs=t([[1.0, 0.0], [0.0, 1.0]])),
        "binom_mat_count": lambda: D.Binomial(T.tensor([[10.0, 8.0], [5.0, 3.0]], dtype=T.float64), probs=t([[1.0, 0.0], [0.0, 1.0]])),
        "binom_count0": lambda: D.Binomial(T.tensor(0.0, dtype=T.float64), probs=t([[1.0, 0.0], [0.0, 1.0]])),
        "negbin10": lambda: D.NegativeBinomial(10, probs=t([[0.1, 0.2, 0.3], [0.5, 0.3, 0.2]])),
        "negbin_zero": lambda: D.NegativeBinomial(10, probs=t([[0.9, 0.0], [0.0, 0.9]])),
        "negbin_vec": lambda: D.NegativeBinomial(T.tensor([10, 8]), probs=t([[0.9, 0.0], [0.0, 0.9]])),
        "negbin_count0": lambda: D.NegativeBinomial(T.tensor(0.0, dtype=T.float64), probs=t([[0.9, 0.0], [0.0, 0.9]])),
        "multinom_zero": lambda: D.Multinomial(10, probs=t([[1.0, 0.0], [0.0, 1.0]])),
        "cauchy_num": lambda: D.Cauchy(0.0, 1.0),
        "cauchy_col": lambda: D.Cauchy(t([[0.0], [0.0]]), t([[1.0], [1.0]])),
        "fisher_num": lambda: D.FisherSnedecor(t([1.0]), 1.0),
        "gamma1": lambda: D.Gamma(t(_A1), t(_B1)),
        "halfcauchy_num": lambda: D.HalfCauchy(1.0),
        "halfnormal_tiny": lambda: D.HalfNormal(t([1e-5, 1e-5])),
        "indep2": lambda: D.Independent(D.Normal(t(_R55[:2, :3]), t(np.abs(_R55[2:4, :3]))), 2),
        "lkj2": lambda: D.LKJCholesky(2, 0.5),
        "lkj3": lambda: D.LKJCholesky(3, t([0.5, 1.0, 2.0])),
        "laplace_tiny": lambda: D.Laplace(t([1.0, 0.0]), t([1e-5, 1e-5])),
        "lognormal_tiny": lambda: D.LogNormal(t([1.0, 0.0]), t([1e-5, 1e-5])),
        "logisticnormal_tiny": lambda: D.LogisticNormal(t([1.0, 0.0]), t([1e-5, 1e-5])),
        "pareto_num": lambda: D.Pareto(1.0, 2.0),
        "poisson0": lambda: D.Poisson(t(0.0)),
        "relaxbern_num": lambda: D.RelaxedBernoulli(t(1.0), 0.3),
        "relaxohc": lambda: D.RelaxedOneHotCategorical(t(2.0), t([[0.1, 0.2, 0.7], [0.5, 0.3, 0.2]])),
        "uniform_num": lambda: D.Uniform(0.0, 1.0),
        "contbern_logits": lambda: D.ContinuousBernoulli(logits=t([0.0])),
        "vonmises_num": lambda: D.VonMises(1.0, 1.0),
        "wishart_df": lambda: D.Wishart(t(3.5), covariance_matrix=t(np.eye(2) * 2 + 0.3)),
        "wishart_prec": lambda: D.Wishart(t(3.0), precision_matrix=t(np.eye(2) + 0.5)),
        "wishart_tril": lambda: D.Wishart(t(4.0), scale_tril=t(np.linalg.cholesky(np.eye(3) + 0.2))),
        "ohcst": lambda: D.OneHotCategoricalStraightThrough(logits=t([[0.0, 0.0], [0.0, 0.0]])),
        "mix": lambda: D.MixtureSameFamily(D.Categorical(t([0.3, 0.7])), D.Normal(t([0.0, 1.0]), t([1.0, 0.5]))),
        "transformed": lambda: D.TransformedDistribution(D.Normal(t(_R1), t(_A1)), [D.transforms.ExpTransform(), D.transforms.AffineTransform(1.0, 2.0)]),
    }


def _torch_sample(name):
    """Two draws of example ``name`` made by torch (its stream forked and seeded): the data
    both libraries score, so that values in each support need no hand-made table."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return _examples(torch)[1][name]().sample((2,)).numpy()


def generic_example(T, name, value):
    """log_prob of torch's draws, entropy, mean, variance, mode, cdf, enumerate_support and the
    shapes of one example (float64 default, as most of torch's tests), with the gradients of
    log_prob's and entropy's sums with respect to every tensor parameter."""
    old = T.get_default_dtype()
    T.set_default_dtype(T.float64)
    try:
        leaves, table = _examples(T)
        d = table[name]()
        v = T.tensor(value)

        def grads_of(f):
            return lambda: list(T.autograd.grad(f().sum(), leaves, allow_unused=True)) if leaves else None
        return [attempt_any(f) for f in (
            lambda: d.log_prob(v), grads_of(lambda: d.log_prob(v)), d.entropy, grads_of(d.entropy),
            lambda: d.mean, lambda: d.variance,
            lambda: d.mode, lambda: d.cdf(v), lambda: (tuple(d.batch_shape), tuple(d.event_shape)),
            d.enumerate_support)]
    finally:
        T.set_default_dtype(old)


def _generic_group(names):
    values = {}

    def fn(T):
        for n in names:
            if n not in values:
                values[n] = _torch_sample(n)
        return [generic_example(T, n, values[n]) for n in names]
    return fn


_GENERIC_NAMES = list(_examples(torch)[1])
GENERIC = {"+".join(_GENERIC_NAMES[i:i + 6]): _generic_group(_GENERIC_NAMES[i:i + 6])
           for i in range(0, len(_GENERIC_NAMES), 6)}


@pytest.mark.parametrize("fn", outcome_params(GENERIC))
def test_generic_examples(fn):
    same_outcome(fn)



# ==== TestValidation.test_invalid over _get_bad_examples ========================================
def _bad_examples(T):
    """_get_bad_examples' table (and VonMises, Kumaraswamy, LowRankMultivariateNormal rows
    added here): each family with parameter sets its constraints refuse."""
    t = lambda *a, **k: T.tensor(*a, requires_grad=k.pop('g', True), **k)
    D = T.distributions
    N = lambda: D.Normal(0., 1.)
    return [
     ("Bern", D.Bernoulli, [dict(probs=t([1.1, 0.2, 0.4])), dict(probs=t([-0.5])), dict(probs=1.00001)]),
     ("Beta", D.Beta, [dict(concentration1=t([0.0]), concentration0=t([0.0])), dict(concentration1=t([-1.0]), concentration0=t([-2.0]))]),
     ("Geom", D.Geometric, [dict(probs=t([1.1, 0.2, 0.4])), dict(probs=t([-0.3])), dict(probs=1.00000001)]),
     ("Cat", D.Categorical, [dict(probs=t([[-0.1, 0.2, 0.3], [0.5, 0.3, 0.2]])), dict(probs=t([[-1.0, 10.0], [0.0, -1.0]]))]),
     ("Binom", D.Binomial, [dict(probs=t([[-0.0000001, 0.2, 0.3], [0.5, 0.3, 0.2]]), total_count=10), dict(probs=t([[1.0, 0.0], [0.0, 2.0]]), total_count=10)]),
     ("NegBin", D.NegativeBinomial, [dict(probs=t([[-0.0000001, 0.2, 0.3], [0.5, 0.3, 0.2]]), total_count=10), dict(probs=t([[1.0, 0.0], [0.0, 2.0]]), total_count=10)]),
     ("Cauchy", D.Cauchy, [dict(loc=0.0, scale=-1.0), dict(loc=t([0.0], g=False), scale=0.0), dict(loc=t([[0.0], [-2.0]], g=False), scale=t([[-0.000001], [1.0]], g=False))]),
     ("Chi2", D.Chi2, [dict(df=t([0.0])), dict(df=t([-2.0]))]),
     ("StudentT", D.StudentT, [dict(df=t([0.0])), dict(df=t([-2.0]))]),
     ("Dirichlet", D.Dirichlet, [dict(concentration=t([0.0])), dict(concentration=t([-2.0]))]),
     ("Exp", D.Exponential, [dict(rate=t([0.0, 0.0])), dict(rate=t([-2.0]))]),
     ("Fisher", D.FisherSnedecor, [dict(df1=t([0.0, 0.0]), df2=t([-1.0, -100.0])), dict(df1=t([1.0, 1.0]), df2=t([0.0, 0.0]))]),
     ("Gamma", D.Gamma, [dict(concentration=t([0.0, 0.0]), rate=t([-1.0, -100.0])), dict(concentration=t([1.0, 1.0]), rate=t([0.0, 0.0]))]),
     ("Gumbel", D.Gumbel, [dict(loc=t([1.0, 1.0]), scale=t([0.0, 1.0])), dict(loc=t([1.0, 1.0]), scale=t([1.0, -1.0]))]),
     ("HalfCauchy", D.HalfCauchy, [dict(scale=-1.0), dict(scale=0.0), dict(scale=t([[-0.000001], [1.0]], g=False))]),
     ("HalfNormal", D.HalfNormal, [dict(scale=t([0.0, 1.0])), dict(scale=t([1.0, -1.0]))]),
     ("LKJ", D.LKJCholesky, [dict(dim=-2, concentration=0.1), dict(dim=1, concentration=2.0), dict(dim=2, concentration=0.0)]),
     ("Laplace", D.Laplace, [dict(loc=t([1.0, 1.0]), scale=t([0.0, 1.0])), dict(loc=t([1.0, 1.0]), scale=t([1.0, -1.0]))]),
     ("LogNormal", D.LogNormal, [dict(loc=t([1.0, 1.0]), scale=t([0.0, 1.0])), dict(loc=t([1.0, 1.0]), scale=t([1.0, -1.0]))]),
     ("MVN", D.MultivariateNormal, [dict(loc=t([1.0, 1.0]), covariance_matrix=t([[1.0, 0.0], [0.0, -2.0]]))]),
     ("Normal", D.Normal, [dict(loc=t([1.0, 1.0]), scale=t([0.0, 1.0])), dict(loc=t([1.0, 1.0]), scale=t([1.0, -1.0])), dict(loc=t([1.0, 0.0]), scale=t([1e-5, -1e-5]))]),
     ("OHC", D.OneHotCategorical, [dict(probs=t([[0.1, 0.2, 0.3], [0.1, -10.0, 0.2]])), dict(probs=t([[0.0, 0.0], [0.0, 0.0]]))]),
     ("OHCST", D.OneHotCategoricalStraightThrough, [dict(probs=t([[0.1, 0.2, 0.3], [0.1, -10.0, 0.2]])), dict(probs=t([[0.0, 0.0], [0.0, 0.0]]))]),
     ("Pareto", D.Pareto, [dict(scale=0.0, alpha=0.0), dict(scale=t([0.0, 0.0]), alpha=t([-1e-5, 0.0])), dict(scale=t([1.0], g=False), alpha=-1.0)]),
     ("Poisson", D.Poisson, [dict(rate=t([-0.1])), dict(rate=-1.0)]),
     ("RelaxB", D.RelaxedBernoulli, [dict(temperature=t([1.5]), probs=t([1.7, 0.2, 0.4])), dict(temperature=t([2.0], g=False), probs=t([-1.0], g=False))]),
     ("RelaxOHC", D.RelaxedOneHotCategorical, [dict(temperature=t([0.5]), probs=t([[-0.1, 0.2, 0.7], [0.5, 0.3, 0.2]])), dict(temperature=t([2.0], g=False), probs=t([[-1.0, 0.0], [-1.0, 1.1]], g=False))]),
     ("Transformed", D.TransformedDistribution, [dict(base_distribution=N(), transforms=lambda x: x), dict(base_distribution=N(), transforms=[lambda x: x])]),
     ("Uniform", D.Uniform, [dict(low=t([2.0]), high=t([2.0])), dict(low=t([0.0]), high=t([0.0])), dict(low=t([1.0]), high=t([0.0]))]),
     ("Weibull", D.Weibull, [dict(scale=t([0.0]), concentration=t([0.0])), dict(scale=t([1.0]), concentration=t([-1.0]))]),
     ("Wishart", D.Wishart, [dict(covariance_matrix=t([[1.0, 0.0], [0.0, -2.0]]), df=t([1.5])), dict(covariance_matrix=t([[1.0, 1.0], [1.0, -2.0]]), df=t([3.0])), dict(covariance_matrix=t([[1.0, 1.0], [1.0, -2.0]]), df=3.0)]),
     ("ContB", D.ContinuousBernoulli, [dict(probs=t([1.1, 0.2, 0.4])), dict(probs=t([-0.5])), dict(probs=1.00001)]),
     ("InvGamma", D.InverseGamma, [dict(concentration=t([0.0, 0.0]), rate=t([-1.0, -100.0])), dict(concentration=t([1.0, 1.0]), rate=t([0.0, 0.0]))]),
     ("GPareto", D.GeneralizedPareto, [dict(loc=t([0.0, 0.0]), scale=t([-1.0, -100.0]), concentration=t([0.0, 0.0])), dict(loc=t([1.0, 1.0]), scale=t([0.0, 0.0]), concentration=t([-1.0, -100.0]))]),
     ("VonMises", D.VonMises, [dict(loc=t(1.0), concentration=t(-1.0)), dict(loc=t(1.0), concentration=t(0.0))]),
     ("Kumaraswamy", D.Kumaraswamy, [dict(concentration1=t([0.0]), concentration0=t([1.0])), dict(concentration1=t([1.0]), concentration0=t([-1.0]))]),
     ("LowRank", D.LowRankMultivariateNormal, [dict(loc=t([1.0, 1.0]), cov_factor=t([[1.0], [0.0]]), cov_diag=t([1.0, -1.0])), dict(loc=t([1.0, 1.0]), cov_factor=t([1.0, 0.0]), cov_diag=t([1.0, 1.0]))]),
    ]


def invalid_group(T, names):
    # test_invalid: built with validate_args=True, every bad parameter set raises ValueError
    # (the class is compared; the words name the parameter and its constraint on both sides).
    # float64 default, as torch's test: probs=1.00000001 is 1.0 in float32
    old = T.get_default_dtype()
    T.set_default_dtype(T.float64)
    try:
        out = []
        for name, Dist, params in _bad_examples(T):
            if name in names:
                out.append([attempt_any(lambda: Dist(validate_args=True, **p) and "built") for p in params])
        return out
    finally:
        T.set_default_dtype(old)


_BAD_NAMES = [n for n, _, _ in _bad_examples(torch)]
INVALID = {f"invalid_{_BAD_NAMES[i]}_to_{_BAD_NAMES[min(i + 9, len(_BAD_NAMES) - 1)]}":
           (lambda names: lambda T: invalid_group(T, names))(_BAD_NAMES[i:i + 10])
           for i in range(0, len(_BAD_NAMES), 10)}


@pytest.mark.parametrize("fn", outcome_params(INVALID))
def test_invalid_parameters(fn):
    got = same_outcome(fn)
    assert all(r == "ValueError" for row in got for r in row), got
