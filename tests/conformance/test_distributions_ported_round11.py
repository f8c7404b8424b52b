"""Ported from PyTorch's test/distributions/test_distributions.py, round 11: TestDistributions,
TestDistributionShapes, TestKL, TestConstraints-adjacent cases not ported in rounds 5 and 7 --
sample/rsample shapes and requires_grad, log_prob/cdf/icdf/entropy values, enumerate_support,
parameter broadcasting and validation errors, expand, Independent, KL divergences. Each case is
one program run with torch (the oracle) and tracegrad (``parity.same_outcome``). Random draws
differ between the libraries, so draws are compared by shape, dtype and requires_grad only;
every value compared is a deterministic function of fixed parameters."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")


def p(T, *vals):
    return T.tensor(vals, dtype=T.float64)


def D(T):
    return T.distributions


def sample_info(d, shape=()):
    s = d.sample(shape)
    return tuple(s.shape), str(s.dtype).rsplit(".", 1)[-1], s.requires_grad


def rsample_info(d, shape=()):
    s = d.rsample(shape)
    return tuple(s.shape), s.requires_grad


_X = (0.2, 0.7, 1.5)

CASES = {
    # TestDistributionShapes.test_normal_shape / beta / bernoulli / gamma / laplace / uniform /
    # exponential / poisson / cauchy / gumbel / halfnormal / chi2 / studentT shapes
    "normal_shape": lambda T: (sample_info(D(T).Normal(p(T, 0., 1.), p(T, 1., 2.)), (3,)),
                               D(T).Normal(p(T, 0., 1.), p(T, 1., 2.)).log_prob(p(T, 0.5)).shape),
    "normal_shape_scalar_params": lambda T: (sample_info(D(T).Normal(0., 1.)), D(T).Normal(0., 1.).batch_shape,
                                             D(T).Normal(0., 1.).log_prob(p(T, 0.5, 1.)).shape),
    "beta_shape": lambda T: (sample_info(D(T).Beta(p(T, 1., 2.), p(T, 3., 4.)), (2, 3)), D(T).Beta(p(T, 1., 2.), p(T, 3., 4.)).batch_shape),
    "bernoulli_shape": lambda T: (sample_info(D(T).Bernoulli(p(T, 0.2, 0.8)), (4,)), D(T).Bernoulli(p(T, 0.2, 0.8)).event_shape),
    "gamma_shape": lambda T: sample_info(D(T).Gamma(p(T, 1., 2.), p(T, 3., 4.)), (2,)),
    "laplace_shape": lambda T: sample_info(D(T).Laplace(p(T, 0., 1.), p(T, 1., 2.)), (1, 2)),
    "uniform_shape": lambda T: sample_info(D(T).Uniform(p(T, 0., 1.), p(T, 1., 2.)), (5,)),
    "exponential_shape": lambda T: sample_info(D(T).Exponential(p(T, 1., 2.)), (2,)),
    "poisson_shape": lambda T: sample_info(D(T).Poisson(p(T, 1., 2.)), (3,)),
    "cauchy_shape": lambda T: sample_info(D(T).Cauchy(p(T, 0.), p(T, 1.)), (2,)),
    "gumbel_shape": lambda T: sample_info(D(T).Gumbel(p(T, 0., 1.), p(T, 1., 1.)), ()),
    "chi2_shape": lambda T: sample_info(D(T).Chi2(p(T, 2., 3.)), (2,)),
    "studentT_shape": lambda T: sample_info(D(T).StudentT(p(T, 3.)), (4,)),
    "pareto_shape": lambda T: sample_info(D(T).Pareto(p(T, 1., 2.), p(T, 2., 3.)), (2,)),
    "kumaraswamy_shape": lambda T: sample_info(D(T).Kumaraswamy(p(T, 1., 2.), p(T, 2., 3.)), (2,)),
    "multivariate_normal_shape": lambda T: (sample_info(D(T).MultivariateNormal(T.zeros(2, 3, dtype=T.float64), T.eye(3, dtype=T.float64)), (4,)),
                                            D(T).MultivariateNormal(T.zeros(2, 3, dtype=T.float64), T.eye(3, dtype=T.float64)).event_shape),
    "lowrank_multivariate_normal_shape": lambda T: (lambda d: (sample_info(d, (2,)), d.batch_shape, d.event_shape))(
        D(T).LowRankMultivariateNormal(T.zeros(3, dtype=T.float64), T.ones(3, 1, dtype=T.float64), T.ones(3, dtype=T.float64))),
    "categorical_shape_and_dtype": lambda T: sample_info(D(T).Categorical(probs=p(T, 0.2, 0.3, 0.5)), (2, 3)),
    "one_hot_categorical_shape": lambda T: sample_info(D(T).OneHotCategorical(probs=p(T, 0.2, 0.3, 0.5)), (2,)),
    "dirichlet_shape": lambda T: sample_info(D(T).Dirichlet(p(T, 1., 2., 3.)), (2,)),
    # TestDistributions.test_rsample_requires_grad / test_sample_detached
    "rsample_requires_grad": lambda T: (lambda mu: (rsample_info(D(T).Normal(mu, 1.), (2,)), sample_info(D(T).Normal(mu, 1.), (2,))))(
        p(T, 0., 1.).requires_grad_()),
    "rsample_requires_grad_gamma": lambda T: (lambda a: rsample_info(D(T).Gamma(a, 1.), (2,)))(p(T, 1., 2.).requires_grad_()),
    "rsample_unsupported_raises": lambda T: D(T).Bernoulli(p(T, 0.5)).rsample(),
    "has_rsample_flags": lambda T: [getattr(D(T), n).has_rsample for n in ("Normal", "Bernoulli", "Gamma", "Categorical", "Beta", "Poisson")],
    # test_enumerate_support_type / test_bernoulli_enumerate_support / test_categorical_enumerate_support
    "bernoulli_enumerate_support": lambda T: (D(T).Bernoulli(p(T, 0.1, 0.9)).enumerate_support(),
                                              D(T).Bernoulli(p(T, 0.1, 0.9)).enumerate_support(expand=False)),
    "categorical_enumerate_support": lambda T: (D(T).Categorical(probs=T.ones(2, 3) / 3).enumerate_support(),
                                                D(T).Categorical(probs=T.ones(2, 3) / 3).enumerate_support(expand=False)),
    "one_hot_enumerate_support": lambda T: D(T).OneHotCategorical(probs=T.ones(3) / 3).enumerate_support(),
    "enumerate_support_unsupported_raises": lambda T: D(T).Normal(0., 1.).enumerate_support(),
    # log_prob values (test_beta_log_prob / test_gamma_log_prob / test_halfnormal / lognormal /
    # continuous_bernoulli / von_mises_logprob / binomial vectorized count / negative binomial)
    "beta_log_prob": lambda T: D(T).Beta(p(T, 0.5, 2.), p(T, 1.5, 3.)).log_prob(p(T, 0.3, 0.8)),
    "gamma_log_prob": lambda T: D(T).Gamma(p(T, 0.5, 2.), p(T, 1.5, 3.)).log_prob(p(T, 0.3, 1.8)),
    "halfnormal_log_prob_cdf": lambda T: (lambda d: (d.log_prob(p(T, *_X)), d.cdf(p(T, *_X)), d.icdf(p(T, 0.1, 0.5, 0.9)), d.entropy()))(
        D(T).HalfNormal(p(T, 1.5))),
    "halfcauchy_log_prob_cdf": lambda T: (lambda d: (d.log_prob(p(T, *_X)), d.cdf(p(T, *_X)), d.entropy()))(D(T).HalfCauchy(p(T, 2.))),
    "lognormal_values": lambda T: (lambda d: (d.log_prob(p(T, *_X)), d.mean, d.variance, d.entropy()))(D(T).LogNormal(p(T, 0.2), p(T, 0.5))),
    "continuous_bernoulli_values": lambda T: (lambda d: (d.log_prob(p(T, 0.1, 0.5, 0.9)), d.mean, d.cdf(p(T, 0.1, 0.5, 0.9))))(
        D(T).ContinuousBernoulli(probs=p(T, 0.2, 0.5, 0.7))),
    "von_mises_log_prob": lambda T: D(T).VonMises(p(T, 0.5), p(T, 2.)).log_prob(p(T, -1., 0., 2.)),
    "binomial_log_prob_vectorized_count": lambda T: D(T).Binomial(total_count=p(T, 5., 10.), probs=p(T, 0.3, 0.6)).log_prob(p(T, 2., 7.)),
    "zero_excluded_binomial": lambda T: D(T).Binomial(total_count=10, probs=p(T, 0., 1.)).log_prob(p(T, 0., 10.)),
    "negative_binomial_log_prob": lambda T: D(T).NegativeBinomial(total_count=p(T, 3.), probs=p(T, 0.4)).log_prob(p(T, 0., 2., 5.)),
    "geometric_log_prob_mean": lambda T: (lambda d: (d.log_prob(p(T, 0., 3.)), d.mean, d.entropy()))(D(T).Geometric(p(T, 0.3))),
    "weibull_values": lambda T: (lambda d: (d.log_prob(p(T, *_X)), d.mean, d.entropy()))(D(T).Weibull(p(T, 2.), p(T, 1.5))),
    "logistic_normal_log_prob": lambda T: D(T).LogisticNormal(p(T, 0., 0.5), p(T, 1., 0.5)).log_prob(p(T, 0.2, 0.3, 0.5)),
    "log_prob_scalar_value": lambda T: D(T).Normal(p(T, 0., 1.), p(T, 1., 2.)).log_prob(T.tensor(0.5, dtype=T.float64)),
    # test_cdf_icdf_inverse / test_cdf_log_prob (deterministic): icdf(cdf(x)) = x
    "cdf_icdf_inverse_normal": lambda T: (lambda d: d.icdf(d.cdf(p(T, *_X))))(D(T).Normal(p(T, 0.3), p(T, 1.2))),
    "cdf_icdf_inverse_exponential": lambda T: (lambda d: d.icdf(d.cdf(p(T, *_X))))(D(T).Exponential(p(T, 1.7))),
    "cdf_icdf_inverse_laplace_cauchy": lambda T: [(lambda d: (d.cdf(p(T, *_X)), d.icdf(d.cdf(p(T, *_X)))))(dist)
                                                  for dist in (D(T).Laplace(p(T, 0.5), p(T, 2.)), D(T).Cauchy(p(T, 0.5), p(T, 2.)))],
    "cdf_uniform_gumbel": lambda T: (D(T).Uniform(0., 2.).cdf(p(T, *_X)), D(T).Gumbel(p(T, 0.5), p(T, 2.)).cdf(p(T, *_X))),
    "icdf_unsupported_raises": lambda T: D(T).Gamma(p(T, 2.), p(T, 1.)).icdf(p(T, 0.5)),
    # entropy (test_entropy_exponential_family values; shapes with batches)
    "entropy_family": lambda T: [d.entropy() for d in (
        D(T).Normal(p(T, 0., 1.), p(T, 0.5, 2.)), D(T).Exponential(p(T, 0.5, 2.)), D(T).Gamma(p(T, 0.5, 2.), p(T, 1., 3.)),
        D(T).Beta(p(T, 0.5, 2.), p(T, 1., 3.)), D(T).Bernoulli(p(T, 0.2, 0.5)), D(T).Categorical(probs=p(T, 0.2, 0.3, 0.5)),
        D(T).Dirichlet(p(T, 1., 2., 3.)), D(T).Laplace(p(T, 0.), p(T, 2.)), D(T).Poisson(p(T, 3.)) if False else D(T).Uniform(0., 3.))],
    # mean / variance / mode of common distributions (test_mode)
    "mode_values": lambda T: [d.mode for d in (D(T).Gamma(p(T, 0.5, 2.), p(T, 1., 3.)), D(T).Beta(p(T, 2., 0.5), p(T, 3., 3.)),
                                               D(T).Poisson(p(T, 0.5, 3.)), D(T).Binomial(5, p(T, 0.3)),
                                               D(T).Categorical(probs=p(T, 0.2, 0.5, 0.3)))],
    # test_valid_parameter_broadcasting / test_invalid_parameter_broadcasting
    "valid_parameter_broadcasting": lambda T: [d.batch_shape for d in (D(T).Normal(p(T, 0., 1.), T.ones(3, 1, dtype=T.float64)),
                                                                       D(T).Gamma(T.ones(2, 1, dtype=T.float64), p(T, 1., 2., 3.)),
                                                                       D(T).Uniform(0., p(T, 1., 2.)))],
    "invalid_parameter_broadcasting": lambda T: D(T).Normal(p(T, 0., 1.), p(T, 1., 1., 1.)),
    "invalid_parameter_broadcasting_gamma": lambda T: D(T).Gamma(p(T, 1., 2.), p(T, 1., 2., 3.)),
    # test_params_constraints / validate_args errors (ValueError)
    "normal_negative_scale_raises": lambda T: D(T).Normal(0., p(T, -1.), validate_args=True),
    "bernoulli_prob_out_of_range_raises": lambda T: D(T).Bernoulli(p(T, 1.5), validate_args=True),
    "categorical_both_args_raises": lambda T: D(T).Categorical(probs=p(T, 0.5, 0.5), logits=p(T, 0., 0.)),
    "categorical_no_args_raises": lambda T: D(T).Categorical(),
    "log_prob_out_of_support_raises": lambda T: D(T).Exponential(p(T, 1.), validate_args=True).log_prob(p(T, -1.)),
    "log_prob_out_of_support_no_validation": lambda T: D(T).Exponential(p(T, 1.), validate_args=False).log_prob(p(T, -1.)),
    # test_invalid_log_probs_arg: Categorical with logits of -inf entries
    "categorical_logits_with_neg_inf": lambda T: (lambda d: (d.probs, d.log_prob(T.tensor([1, 2])), d.entropy()))(
        D(T).Categorical(logits=p(T, 0., float("-inf"), 1.))),
    # test_distribution_expand / test_independent_shape / test_independent_expand
    "expand_shapes": lambda T: (lambda d: (d.batch_shape, d.event_shape, sample_info(d, (2,)), d.log_prob(T.zeros(3, 2, dtype=T.float64)).shape))(
        D(T).Normal(p(T, 0., 1.), p(T, 1., 2.)).expand((3, 2))),
    "expand_invalid_raises": lambda T: D(T).Normal(p(T, 0., 1.), p(T, 1., 2.)).expand((3,)),
    "independent_shape": lambda T: (lambda d: (d.batch_shape, d.event_shape, d.log_prob(T.zeros(2, 3, dtype=T.float64)), d.entropy()))(
        D(T).Independent(D(T).Normal(T.zeros(2, 3, dtype=T.float64), T.ones(2, 3, dtype=T.float64)), 1)),
    "independent_expand": lambda T: (lambda d: (d.batch_shape, d.event_shape))(
        D(T).Independent(D(T).Normal(T.zeros(3, dtype=T.float64), 1.), 1).expand((4,))),
    "independent_too_many_dims_raises": lambda T: D(T).Independent(D(T).Normal(T.zeros(3, dtype=T.float64), 1.), 2),
    # test_mixture_same_family_log_prob
    "mixture_same_family_log_prob": lambda T: (lambda d: (d.batch_shape, d.log_prob(p(T, -1., 0., 2.5)), d.mean, d.variance))(
        D(T).MixtureSameFamily(D(T).Categorical(probs=p(T, 0.3, 0.7)), D(T).Normal(p(T, -1., 1.), p(T, 0.5, 2.)))),
    # test_relaxed_bernoulli / test_relaxed_one_hot_categorical_1d (shapes and rsample grad)
    "relaxed_bernoulli_shape": lambda T: (lambda pr: rsample_info(D(T).RelaxedBernoulli(p(T, 0.5), probs=pr), (2,)))(p(T, 0.2, 0.7).requires_grad_()),
    "relaxed_one_hot_1d": lambda T: (lambda pr: rsample_info(D(T).RelaxedOneHotCategorical(p(T, 0.7), probs=pr), (2,)))(p(T, 0.2, 0.8).requires_grad_()),
    # test_rsample_grads: gradients of a deterministic rsample (loc/scale families with zero noise
    # are not available; grads of log_prob of fixed values instead)
    "log_prob_grads_normal": lambda T: (lambda mu, sd: (D(T).Normal(mu, sd).log_prob(p(T, *_X)).sum().backward(), mu.grad, sd.grad)[1:])(
        p(T, 0.3).requires_grad_(), p(T, 1.2).requires_grad_()),
    "log_prob_grads_beta": lambda T: (lambda a, b: (D(T).Beta(a, b).log_prob(p(T, 0.2, 0.7)).sum().backward(), a.grad, b.grad)[1:])(
        p(T, 1.3).requires_grad_(), p(T, 2.2).requires_grad_()),
    "entropy_grad_dirichlet": lambda T: (lambda c: (D(T).Dirichlet(c).entropy().backward(), c.grad)[1])(p(T, 1., 2., 3.).requires_grad_()),
    # TestKL: closed forms for common pairs, batches, infinities, the shape rule
    "kl_normal_normal": lambda T: D(T).kl_divergence(D(T).Normal(p(T, 0., 1.), p(T, 1., 2.)), D(T).Normal(p(T, 0.5), p(T, 1.5))),
    "kl_exponential_gamma": lambda T: D(T).kl_divergence(D(T).Exponential(p(T, 1., 2.)), D(T).Gamma(p(T, 2.), p(T, 1.))),
    "kl_beta_beta": lambda T: D(T).kl_divergence(D(T).Beta(p(T, 1., 2.), p(T, 3., 1.)), D(T).Beta(p(T, 2.), p(T, 2.))),
    "kl_bernoulli_bernoulli": lambda T: D(T).kl_divergence(D(T).Bernoulli(p(T, 0.2, 0.5)), D(T).Bernoulli(p(T, 0.4, 0.4))),
    "kl_categorical": lambda T: D(T).kl_divergence(D(T).Categorical(probs=p(T, 0.2, 0.3, 0.5)), D(T).Categorical(probs=p(T, 0.3, 0.3, 0.4))),
    "kl_dirichlet": lambda T: D(T).kl_divergence(D(T).Dirichlet(p(T, 1., 2., 3.)), D(T).Dirichlet(p(T, 2., 2., 2.))),
    "kl_mvn_mvn": lambda T: D(T).kl_divergence(D(T).MultivariateNormal(p(T, 0., 1.), T.eye(2, dtype=T.float64) * 2),
                                               D(T).MultivariateNormal(p(T, 1., 0.), T.tensor([[1., 0.3], [0.3, 1.]], dtype=T.float64))),
    "kl_uniform_normal": lambda T: D(T).kl_divergence(D(T).Uniform(p(T, 0.), p(T, 2.)), D(T).Normal(p(T, 1.), p(T, 1.5))),
    "kl_infinite_uniform": lambda T: D(T).kl_divergence(D(T).Uniform(p(T, 0.), p(T, 3.)), D(T).Uniform(p(T, 1.), p(T, 2.))),
    "kl_infinite_bernoulli": lambda T: D(T).kl_divergence(D(T).Bernoulli(p(T, 0.5)), D(T).Bernoulli(p(T, 0.))),
    "kl_independent": lambda T: D(T).kl_divergence(D(T).Independent(D(T).Normal(T.zeros(2, 3, dtype=T.float64), 1.), 1),
                                                   D(T).Independent(D(T).Normal(T.ones(2, 3, dtype=T.float64), 2.), 1)),
    "kl_not_implemented_raises": lambda T: D(T).kl_divergence(D(T).Poisson(p(T, 1.)), D(T).Gumbel(p(T, 0.), p(T, 1.))),
    "kl_grad": lambda T: (lambda mu: (D(T).kl_divergence(D(T).Normal(mu, 1.), D(T).Normal(0., 2.)).sum().backward(), mu.grad)[1])(
        p(T, 0.5, -1.).requires_grad_()),
    # test_support_attributes / constraints membership
    "support_checks": lambda T: [d.support.check(v) for d, v in (
        (D(T).Normal(0., 1.), p(T, -5., 0.)), (D(T).Exponential(p(T, 1.)), p(T, -1., 0., 1.)),
        (D(T).Beta(p(T, 1.), p(T, 1.)), p(T, 0., 0.5, 1.)), (D(T).Bernoulli(p(T, 0.5)), p(T, 0., 0.5, 1.)),
        (D(T).Categorical(probs=p(T, 0.5, 0.5)), T.tensor([0, 1, 2])))],
    "support_discrete_flags": lambda T: [getattr(D(T), n).support.is_discrete if not callable(getattr(D(T), n).support) else None
                                         for n in ("Normal", "Bernoulli", "Poisson", "Exponential")],
}


@pytest.mark.parametrize("fn", outcome_params(CASES))
def test_distributions_round11(fn):
    same_outcome(fn)


# TestKL.test_kl_monte_carlo / test_kl_infinite / test_kl_edgecases over pairs of different
# families (every pair torch registers): the closed forms (or inf) on fixed batched parameters,
# some inside and some outside q's support
_FAMILIES = {
    "Beta": lambda T: D(T).Beta(p(T, 1.5, 0.7), p(T, 2., 3.)),
    "Exponential": lambda T: D(T).Exponential(p(T, 0.8, 2.5)),
    "Gamma": lambda T: D(T).Gamma(p(T, 0.7, 3.), p(T, 1.5, 0.6)),
    "Gumbel": lambda T: D(T).Gumbel(p(T, -0.5, 1.), p(T, 0.7, 1.8)),
    "Laplace": lambda T: D(T).Laplace(p(T, 0.3, -1.), p(T, 0.5, 1.5)),
    "Normal": lambda T: D(T).Normal(p(T, 0.4, -0.6), p(T, 0.9, 1.7)),
    "Pareto": lambda T: D(T).Pareto(p(T, 0.5, 1.5), p(T, 3., 1.5)),
    "Uniform": lambda T: D(T).Uniform(p(T, 0.2, -0.5), p(T, 0.9, 2.)),
    "Bernoulli": lambda T: D(T).Bernoulli(p(T, 0.3, 0.8)),
    "Poisson": lambda T: D(T).Poisson(p(T, 0.5, 2.)),
    "Binomial": lambda T: D(T).Binomial(3, p(T, 0.3, 0.6)),
}
_CROSS = [("Beta", "Exponential"), ("Beta", "Gamma"), ("Beta", "Normal"), ("Beta", "Pareto"), ("Beta", "Uniform"),
          ("Exponential", "Beta"), ("Exponential", "Gamma"), ("Exponential", "Gumbel"), ("Exponential", "Normal"),
          ("Exponential", "Pareto"), ("Exponential", "Uniform"), ("Gamma", "Beta"), ("Gamma", "Exponential"),
          ("Gamma", "Gumbel"), ("Gamma", "Normal"), ("Gamma", "Pareto"), ("Gamma", "Uniform"), ("Gumbel", "Beta"),
          ("Gumbel", "Exponential"), ("Gumbel", "Gamma"), ("Gumbel", "Normal"), ("Gumbel", "Pareto"), ("Gumbel", "Uniform"),
          ("Laplace", "Beta"), ("Laplace", "Exponential"), ("Laplace", "Gamma"), ("Laplace", "Normal"), ("Laplace", "Pareto"),
          ("Laplace", "Uniform"), ("Normal", "Beta"), ("Normal", "Exponential"), ("Normal", "Gamma"), ("Normal", "Gumbel"),
          ("Normal", "Laplace"), ("Normal", "Pareto"), ("Normal", "Uniform"), ("Pareto", "Beta"), ("Pareto", "Exponential"),
          ("Pareto", "Gamma"), ("Pareto", "Normal"), ("Pareto", "Uniform"), ("Poisson", "Bernoulli"), ("Poisson", "Binomial"),
          ("Uniform", "Beta"), ("Uniform", "Exponential"), ("Uniform", "Gamma"), ("Uniform", "Gumbel"), ("Uniform", "Normal"),
          ("Uniform", "Pareto"), ("Bernoulli", "Poisson")]
_UNIT_UNIFORM = {  # p inside q's support for the bounded-support q rules
    "Beta": lambda T: D(T).Uniform(p(T, 0.1, 0.), p(T, 0.9, 1.)),
    "Pareto": lambda T: D(T).Uniform(p(T, 3.5, 5.), p(T, 4., 6.)),
    "Gamma": lambda T: D(T).Uniform(p(T, 0., 1.), p(T, 0.5, 3.)),
}
KL_CROSS = {f"kl_{a}_{b}": (lambda T, a=a, b=b: D(T).kl_divergence(_FAMILIES[a](T), _FAMILIES[b](T))) for a, b in _CROSS}
KL_CROSS.update({f"kl_Uniform_{b}_inside_support": (lambda T, b=b: D(T).kl_divergence(_UNIT_UNIFORM[b](T), _FAMILIES[b](T)))
                 for b in _UNIT_UNIFORM})
KL_CROSS["kl_Beta_Uniform_covering"] = lambda T: D(T).kl_divergence(_FAMILIES["Beta"](T), D(T).Uniform(p(T, -0.5, 0.), p(T, 1., 2.)))
KL_CROSS["kl_cross_grads"] = lambda T: (lambda mu, r: (
    (D(T).kl_divergence(D(T).Normal(mu, 1.), D(T).Gumbel(p(T, 0.2), p(T, 1.3)))
     + D(T).kl_divergence(D(T).Gamma(r, 2.), D(T).Normal(p(T, 0.5), p(T, 2.)))).sum().backward(), mu.grad, r.grad)[1:])(
    p(T, 0.5, -1.).requires_grad_(), p(T, 1.5, 2.5).requires_grad_())


@pytest.mark.parametrize("fn", outcome_params(KL_CROSS))
def test_kl_cross_families(fn):
    same_outcome(fn)
