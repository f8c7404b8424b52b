"""Mirrors ``torch.distributions.kl``: ``kl_divergence(p, q)`` looked up by the pair of types
(the most specific registered pair along both MROs), and ``register_kl`` to add one."""
from __future__ import annotations


import math

import tracegrad

from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .exp_family import ExponentialFamily, _detached_leaves, _normalizer_and_grads
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Binomial, Geometric
from .gumbel import Gumbel
from .independent import Independent, _sum_rightmost
from .laplace import Laplace
from .log_normal import HalfNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal
from .one_hot_categorical import OneHotCategorical
from .normal import Normal
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}
_KL_MEMO: dict = {}


def register_kl(type_p, type_q):
    """Decorator: registers ``fn(p, q)`` as ``KL(p || q)`` for instances of ``type_p``/``type_q``.
    Raises: TypeError when either argument is not a class."""
    if not isinstance(type_p, type) or not isinstance(type_q, type):
        raise TypeError(f"Expected type_p and type_q to be subclasses of Distribution, but got {type_p} and {type_q}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMO.clear()
        return fn
    return decorator


def _dispatch(type_p, type_q):
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return None
    # the most specific pair: smallest MRO distances, p's first
    return _KL_REGISTRY[min(matches, key=lambda pq: (type_p.__mro__.index(pq[0]), type_q.__mro__.index(pq[1])))]


def kl_divergence(p, q):
    """Mirrors ``torch.distributions.kl_divergence``: ``KL(p || q)`` over the batch shape.
    Pairs here (each with itself): Normal, HalfNormal, Categorical, OneHotCategorical, Bernoulli,
    Binomial, Geometric, Poisson, Pareto, Uniform (infinite where q's support does not cover p's, as
    torch), Exponential, Laplace, Gamma (and Chi2), Beta, Dirichlet, Cauchy, Gumbel, Independent,
    MultivariateNormal and LowRankMultivariateNormal (also with each other), ContinuousBernoulli, and
    TransformedDistribution with equal transforms (LogNormal); ContinuousBernoulli against Beta,
    Uniform, Exponential, Normal, Pareto, Gamma, Gumbel, Laplace (infinite where supports differ, as
    torch); every pair of different families torch has (Beta, Exponential, Gamma, Gumbel,
    Laplace, Normal, Pareto and Uniform against each other, Bernoulli against Poisson): closed
    forms from p's moments, infinite where q's support misses part of p's (Poisson against
    Bernoulli/Binomial too); any other pair of one ExponentialFamily by the Bregman divergence
    (e.g. Wishart).
    Raises: NotImplementedError for a pair with no registered rule."""
    key = (type(p), type(q))
    if key not in _KL_MEMO:
        _KL_MEMO[key] = _dispatch(*key)
    fn = _KL_MEMO[key]
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fn(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = t.masked_fill((q.probs == 0).expand_as(t), float("inf"))
    return t.masked_fill((p.probs == 0).expand_as(t), 0.0).sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    softplus = tracegrad.nn.functional.softplus
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = t1.masked_fill(q.probs == 0, float("inf")).masked_fill(p.probs == 0, 0.0)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = t2.masked_fill(q.probs == 1, float("inf")).masked_fill(p.probs == 1, 0.0)
    return t1 + t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return result.masked_fill((q.low > p.low) | (q.high < p.high), float("inf"))


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - ratio.log() - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * tracegrad.exp(-loc_abs_diff / p.scale) - 1


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("kl_divergence(Independent, Independent): the two must reinterpret the same "
                                  "number of batch dims")
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    a, b, c, d = p.concentration, p.rate, q.concentration, q.rate
    return (c * (b / d).log() + c.lgamma() - a.lgamma() + (a - c) * a.digamma() + (d - b) * (a / b))


def _log_beta(a, b):
    return a.lgamma() + b.lgamma() - (a + b).lgamma()


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    return (_log_beta(a2, b2) - _log_beta(a1, b1) + (a1 - a2) * a1.digamma() + (b1 - b2) * b1.digamma()
            + (a2 - a1 + b2 - b1) * (a1 + b1).digamma())


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    a, b = p.concentration, q.concentration
    total = a.sum(-1)
    return (total.lgamma() - b.sum(-1).lgamma() - (a.lgamma() - b.lgamma()).sum(-1)
            + ((a - b) * (a.digamma() - total.digamma().unsqueeze(-1))).sum(-1))


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    # -H(p) - E_p[log q(k)], with E_p[k] = 1/p - 1
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return kl.masked_fill(p.total_count > q.total_count, float("inf"))


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    ratio = (p.scale / q.scale).pow(2)
    return 0.5 * (ratio - 1 - ratio.log())


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    return (((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)) / (4 * p.scale * q.scale)).log()


_EULER = 0.57721566490153286060


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ratio = p.scale / q.scale
    shift = (p.loc - q.loc) / q.scale
    return -ratio.log() + shift + ratio * _EULER + (-shift + (1 + ratio).lgamma()).exp() - (1 + _EULER)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    """KL is invariant under one shared bijection: the bases' KL (summed over the event dims the
    transforms added)."""
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError("kl_divergence(TransformedDistribution, TransformedDistribution) needs equal "
                                  "transforms and event shapes")
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), len(p.event_shape) - len(p.base_dist.event_shape))


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    alpha_ratio = q.alpha / p.alpha
    kl = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    # p puts mass below q's support
    return kl.masked_fill(p.scale < q.scale, float("inf"))


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    return _kl_gaussians(p, q, "Multivariate Normals")


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p, q):
    return _kl_gaussians(p, q, "Low Rank Multivariate Normals")


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_mvn_lowrank(p, q):
    return _kl_gaussians(p, q, "(Low Rank) Multivariate Normals")


def _kl_gaussians(p, q, kinds):
    """``log|Lq| - log|Lp| + (tr(Sq^-1 Sp) + |Lq^-1 (mq - mp)|^2 - n) / 2`` with the Cholesky
    factors ``L`` of either Gaussian (a low-rank one's is formed densely: same value as torch's
    Woodbury form); both sides broadcast to a common batch shape. Raises ValueError for different
    event shapes."""
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {kinds} with different event shapes cannot be computed")
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    n = p.event_shape[0]
    batch = tuple(tracegrad.broadcast_shapes(tuple(lq.shape[:-2]), tuple(lp.shape[:-2]), tuple(p.loc.shape[:-1]),
                                             tuple(q.loc.shape[:-1])))
    lq_full = lq.tril().expand(batch + (n, n))
    log_det = lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - lp.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    # p's factor enters whole, as torch's triangular solve takes it: its entries above the
    # diagonal (zero for a valid scale_tril) still get their gradient; only q's is read as lower
    trace = tracegrad.linalg.solve(lq_full, lp.expand(batch + (n, n))).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc).expand(batch + (n,)).unsqueeze(-1)
    maha = tracegrad.linalg.solve(lq_full, diff).pow(2).sum((-2, -1))
    return log_det + 0.5 * (trace + maha - n)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log normalizer: ``F(tq) - F(tp) - <tq - tp, grad F(tp)>``, with
    p's natural parameters detached as torch does. Raises NotImplementedError across families."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot be "
                                  "computed using Bregman divergences")
    p_params = _detached_leaves(p._natural_params)
    value, grads = _normalizer_and_grads(p, p_params)
    result = q._log_normalizer(*q._natural_params) - value
    for tp, tq, g in zip(p_params, q._natural_params, grads):
        result = result - _sum_rightmost((tq - tp) * g, len(q.event_shape))
    return result


def _cross_entropy_to_cb(q, mean):
    """``-E_p[log q(x)]`` for a ContinuousBernoulli ``q`` and any p on [0, 1] with mean ``mean``."""
    return -mean * q.logits - (-q.probs).log1p() - q._log_norm()


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p, q):
    return (p.mean * (p.logits - q.logits) + p._log_norm() + (-p.probs).log1p()
            - q._log_norm() - (-q.probs).log1p())


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_cb(p, q):
    return -p.entropy() + _cross_entropy_to_cb(q, p.mean)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p, q):
    result = -p.entropy() + _cross_entropy_to_cb(q, p.mean)
    # torch's test: infinite unless p sits strictly inside (0, 1)
    return result.masked_fill((p.high >= 1) | (p.low <= 0), math.inf)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p, q):
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).pow(2)) + q.scale.log()
    t3 = (p.variance + p.mean.pow(2) - 2.0 * q.loc * p.mean) / (2.0 * q.scale.pow(2))
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    # torch's test (q.low >= 0 or q.high <= 1), kept as is for parity
    return result.masked_fill((q.low >= 0) | (q.high <= 1), math.inf)


def _infinite_kl(param_name):
    """A KL rule for pairs where q's support misses part of p's: ``inf`` of p's batch shape."""
    return lambda p, q: tracegrad.full_like(getattr(p, param_name), math.inf)


for _p, _q, _param in ((ContinuousBernoulli, Pareto, "probs"), (Exponential, ContinuousBernoulli, "rate"),
                       (Gamma, ContinuousBernoulli, "concentration"), (Gumbel, ContinuousBernoulli, "loc"),
                       (Laplace, ContinuousBernoulli, "loc"), (Normal, ContinuousBernoulli, "loc"),
                       (Pareto, ContinuousBernoulli, "scale")):
    register_kl(_p, _q)(_infinite_kl(_param))


# ---- pairs of different families ----------------------------------------------------------------
# Each finite rule is -H(p) - E_p[log q(X)], with E_p[log q] written from p's moments: the mean
# and variance (q Normal), E[log X] (q Gamma, Pareto, Beta) or E[exp(-X / scale)] (q Gumbel).
# Where q's support misses part of p's, the divergence is infinite.
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _vs_normal(p, q, mean, var):
    return -p.entropy() + q.scale.log() + _HALF_LOG_2PI + (var + (mean - q.loc).pow(2)) / (2 * q.scale.pow(2))


def _vs_gamma(p, q, mean, mean_log):
    k, r = q.concentration, q.rate
    return -p.entropy() - k * r.log() + k.lgamma() - (k - 1) * mean_log + r * mean


def _vs_exponential(p, q, mean):
    return -p.entropy() - q.rate.log() + q.rate * mean


def _vs_gumbel(p, q, mean, mean_exp):
    """``mean_exp``: E_p[exp(-X / q.scale)]."""
    return -p.entropy() + q.scale.log() + (mean - q.loc) / q.scale + (q.loc / q.scale).exp() * mean_exp


def _beta_moments(p):
    a, b = p.concentration1, p.concentration0
    total = a + b
    return a / total, a * b / (total.pow(2) * (total + 1)), a.digamma() - total.digamma()


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return _vs_exponential(p, q, _beta_moments(p)[0])


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    mean, _, mean_log = _beta_moments(p)
    return _vs_gamma(p, q, mean, mean_log)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    mean, var, _ = _beta_moments(p)
    return _vs_normal(p, q, mean, var)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return result.masked_fill((q.low > 0) | (q.high < 1), math.inf)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    return _vs_gamma(p, q, p.rate.reciprocal(), -_EULER - p.rate.log())


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    lam_scale = p.rate * q.scale
    return _vs_gumbel(p, q, p.rate.reciprocal(), lam_scale / (lam_scale + 1))


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    mean = p.rate.reciprocal()
    return _vs_normal(p, q, mean, mean.pow(2))


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return _vs_exponential(p, q, p.concentration / p.rate)


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    mean_exp = (1 + (p.rate * q.scale).reciprocal()).pow(-p.concentration)
    return _vs_gumbel(p, q, p.concentration / p.rate, mean_exp)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    return _vs_normal(p, q, p.concentration / p.rate, p.concentration / p.rate.pow(2))


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    return _vs_normal(p, q, p.loc + p.scale * _EULER, (math.pi * p.scale).pow(2) / 6)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    return _vs_normal(p, q, p.loc, 2 * p.scale.pow(2))


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    shift = (p.loc - q.loc) / q.scale
    return -p.entropy() + q.scale.log() + shift + (-shift + (p.scale / q.scale).pow(2) / 2).exp()


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    # E|X - m| for X ~ N(mu, s): s sqrt(2/pi) exp(-d^2 / 2s^2) + d erf(d / (s sqrt 2)), d = mu - m
    d, s = p.loc - q.loc, p.scale
    mean_abs = s * math.sqrt(2 / math.pi) * (-(d / s).pow(2) / 2).exp() + d * (d / (s * math.sqrt(2))).erf()
    return -p.entropy() + (2 * q.scale).log() + mean_abs / q.scale


def _pareto_mean(p):
    return (p.alpha * p.scale / (p.alpha - 1)).masked_fill(p.alpha <= 1, math.inf)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    return _vs_exponential(p, q, _pareto_mean(p))


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    return _vs_gamma(p, q, _pareto_mean(p), p.scale.log() + p.alpha.reciprocal())


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    a = p.alpha
    var = (p.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))).masked_fill(a <= 2, math.inf)
    return _vs_normal(p, q, _pareto_mean(p), var)


def _uniform_mean_log(low, high):
    """E[log X] for X ~ Uniform(low, high), 0 <= low (x log x taken as 0 at 0)."""
    return (tracegrad.xlogy(high, high) - tracegrad.xlogy(low, low)) / (high - low) - 1


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    a, b = q.concentration1, q.concentration0
    log_beta = a.lgamma() + b.lgamma() - (a + b).lgamma()
    mean_log = _uniform_mean_log(p.low, p.high)
    mean_log1m = _uniform_mean_log(1 - p.high, 1 - p.low)
    result = -p.entropy() - (a - 1) * mean_log - (b - 1) * mean_log1m + log_beta
    return result.masked_fill((p.low < 0) | (p.high > 1), math.inf)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = _vs_exponential(p, q, (p.low + p.high) / 2)
    return result.masked_fill(p.low < 0, math.inf)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    result = _vs_gamma(p, q, (p.low + p.high) / 2, _uniform_mean_log(p.low, p.high))
    return result.masked_fill(p.low < 0, math.inf)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    width = p.high - p.low
    mean_exp = q.scale * ((-p.low / q.scale).exp() - (-p.high / q.scale).exp()) / width
    return _vs_gumbel(p, q, (p.low + p.high) / 2, mean_exp)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    return _vs_normal(p, q, (p.low + p.high) / 2, (p.high - p.low).pow(2) / 12)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    a = q.alpha
    result = -p.entropy() - a.log() - a * q.scale.log() + (a + 1) * _uniform_mean_log(p.low, p.high)
    return result.masked_fill(p.low < q.scale, math.inf)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() + q.rate - p.probs * q.rate.log()


# q's support misses part of p's (unbounded p against a bounded or half-bounded q; a Poisson
# against a count bounded by 1 or n)
for _p, _q, _param in ((Beta, Pareto, "concentration1"), (Exponential, Beta, "rate"), (Exponential, Pareto, "rate"),
                       (Exponential, Uniform, "rate"), (Gamma, Beta, "concentration"), (Gamma, Pareto, "concentration"),
                       (Gamma, Uniform, "concentration"), (Gumbel, Beta, "loc"), (Gumbel, Exponential, "loc"),
                       (Gumbel, Gamma, "loc"), (Gumbel, Pareto, "loc"), (Gumbel, Uniform, "loc"),
                       (Laplace, Beta, "loc"), (Laplace, Exponential, "loc"), (Laplace, Gamma, "loc"),
                       (Laplace, Pareto, "loc"), (Laplace, Uniform, "loc"), (Normal, Beta, "loc"),
                       (Normal, Exponential, "loc"), (Normal, Gamma, "loc"), (Normal, Pareto, "loc"),
                       (Normal, Uniform, "loc"), (Pareto, Beta, "scale"), (Pareto, Uniform, "scale"),
                       (Poisson, Bernoulli, "rate"), (Poisson, Binomial, "rate")):
    register_kl(_p, _q)(_infinite_kl(_param))
