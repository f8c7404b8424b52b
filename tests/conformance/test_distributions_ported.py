"""PyTorch's test/distributions/test_distributions.py (and test_transforms.py /
test_constraints.py), ported: the same program runs on torch and on tracegrad
(``same_outcome``/``both``): shapes, log_prob, entropy, moments, cdf/icdf and their gradients,
validation errors, kl_divergence pairs, transforms and TransformedDistribution. Samples are
compared through what does not depend on the random stream (shapes, support, reparameterised
gradients, sample statistics against the distribution's own moments)."""
import math

import numpy as np
import pytest

import tracegrad
from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")


from _distributions_helpers import validation_on  # noqa: E402,F401  (autouse fixture)

R = np.random.default_rng(3)
LOC = R.standard_normal((2, 3))
SCALE = R.uniform(0.5, 2.0, (2, 3))
PROBS = R.uniform(0.1, 0.9, (2, 3))
POS = R.uniform(0.5, 3.0, (2, 3))
SIMPLEX = R.dirichlet(np.ones(4), 2)


def p(m, a, grad=True):
    """A float64 parameter tensor (requires grad) on module ``m``."""
    return m.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


# name -> (builder(m) -> (dist, [params]), value in the support, a value outside it or None)
DISTS = {
    "Normal": (lambda m: _d(m.distributions.Normal, p(m, LOC), p(m, SCALE)), LOC + 0.3, None),
    "Normal_scalar": (lambda m: (m.distributions.Normal(0.5, 2.0), []), np.array([0.1, -2.0]), None),
    "LogNormal": (lambda m: _d(m.distributions.LogNormal, p(m, LOC), p(m, SCALE)), POS, -POS),
    "HalfNormal": (lambda m: _d(m.distributions.HalfNormal, p(m, SCALE)), POS, -POS),
    "Cauchy": (lambda m: _d(m.distributions.Cauchy, p(m, LOC), p(m, SCALE)), LOC * 2, None),
    "Gumbel": (lambda m: _d(m.distributions.Gumbel, p(m, LOC), p(m, SCALE)), LOC - 0.5, None),
    "Laplace": (lambda m: _d(m.distributions.Laplace, p(m, LOC), p(m, SCALE)), LOC + 1, None),
    "Exponential": (lambda m: _d(m.distributions.Exponential, p(m, POS)), SCALE, -SCALE),
    "Uniform": (lambda m: _d(m.distributions.Uniform, p(m, LOC), p(m, LOC + SCALE)), LOC + SCALE / 2, LOC - 1),
    "Gamma": (lambda m: _d(m.distributions.Gamma, p(m, POS), p(m, SCALE)), SCALE, -SCALE),
    "Chi2": (lambda m: _d(m.distributions.Chi2, p(m, POS)), SCALE, -SCALE),
    "StudentT": (lambda m: _d(m.distributions.StudentT, p(m, POS + 2), p(m, LOC), p(m, SCALE)), LOC * 3, None),
    "StudentT_low_df": (lambda m: _d(m.distributions.StudentT, p(m, [0.5, 1.5, 3.0])), np.array([0.1, 2.0, -1.0]), None),
    "Beta": (lambda m: _d(m.distributions.Beta, p(m, POS), p(m, SCALE)), PROBS, PROBS + 1),
    "Dirichlet": (lambda m: _d(m.distributions.Dirichlet, p(m, POS[:, :2].repeat(2, 1).reshape(2, 4))),
                  SIMPLEX, SIMPLEX * 2),
    "Bernoulli": (lambda m: _d(m.distributions.Bernoulli, p(m, PROBS)), (PROBS > 0.5) * 1.0, PROBS),
    "Bernoulli_logits": (lambda m: _d(lambda x: m.distributions.Bernoulli(logits=x), p(m, LOC)),
                         (LOC > 0) * 1.0, None),
    "Geometric": (lambda m: _d(m.distributions.Geometric, p(m, PROBS)), np.floor(POS), -POS),
    "Geometric_logits": (lambda m: _d(lambda x: m.distributions.Geometric(logits=x), p(m, LOC)), np.floor(POS), None),
    "Poisson": (lambda m: _d(m.distributions.Poisson, p(m, POS)), np.floor(POS * 2), POS + 0.5),
    "Binomial": (lambda m: _d(lambda x: m.distributions.Binomial(5, x), p(m, PROBS)), np.floor(POS), POS * 4),
    "Binomial_logits": (lambda m: _d(lambda x: m.distributions.Binomial(m.tensor([[3.0], [6.0]], dtype=m.float64),
                                                                        logits=x), p(m, LOC)), np.floor(POS), None),
    "Categorical": (lambda m: _d(m.distributions.Categorical, p(m, SIMPLEX)), np.array([0, 3]), np.array([4, 0])),
    "OneHotCategorical": (lambda m: _d(m.distributions.OneHotCategorical, p(m, SIMPLEX)), np.eye(4)[[1, 2]], None),
    "MultivariateNormal": (lambda m: _d(lambda a, b: m.distributions.MultivariateNormal(
        a, scale_tril=m.diag_embed(b)), p(m, LOC), p(m, SCALE)), LOC + 0.2, None),
    "Independent": (lambda m: _d(lambda a, b: m.distributions.Independent(m.distributions.Normal(a, b), 1),
                                 p(m, LOC), p(m, SCALE)), LOC, None),
    "HalfCauchy": (lambda m: _d(m.distributions.HalfCauchy, p(m, SCALE)), POS, -POS),
    "Pareto": (lambda m: _d(m.distributions.Pareto, p(m, SCALE), p(m, POS)), SCALE + POS, SCALE * 0.5),
    "Weibull": (lambda m: _d(m.distributions.Weibull, p(m, SCALE), p(m, POS)), POS, -POS),
    "InverseGamma": (lambda m: _d(m.distributions.InverseGamma, p(m, POS), p(m, SCALE)), POS, -POS),
    "Multinomial": (lambda m: _d(lambda x: m.distributions.Multinomial(5, x), p(m, SIMPLEX)),
                    np.array([[1.0, 2, 0, 2], [0, 0, 5, 0]]), np.array([[1.0, 2, 0, 3], [0, 0, 5, 0]])),
    "NegativeBinomial": (lambda m: _d(m.distributions.NegativeBinomial, p(m, POS), p(m, PROBS)), np.floor(POS * 2),
                         -POS),
    "MixtureSameFamily": (lambda m: _d(lambda w, a, b: m.distributions.MixtureSameFamily(
        m.distributions.Categorical(w), m.distributions.Normal(a, b)), p(m, PROBS), p(m, LOC), p(m, SCALE)),
        np.array([0.3, -1.2]), None),
    "MixtureSameFamily_mvn": (lambda m: _d(lambda w, a, b: m.distributions.MixtureSameFamily(
        m.distributions.Categorical(w), m.distributions.Independent(m.distributions.Normal(a, b), 1)),
        p(m, PROBS[0, :2]), p(m, LOC), p(m, SCALE)), np.array([0.3, -1.2, 0.5]), None),
    "RelaxedBernoulli": (lambda m: _d(lambda x: m.distributions.RelaxedBernoulli(m.tensor(0.7, dtype=m.float64), x),
                                      p(m, PROBS)), PROBS[::-1].copy(), PROBS + 1),
    "RelaxedOneHotCategorical": (lambda m: _d(lambda x: m.distributions.RelaxedOneHotCategorical(
        m.tensor(0.7, dtype=m.float64), x), p(m, SIMPLEX)), SIMPLEX[::-1].copy(), None),
}


def _d(cls, *params):
    return cls(*params), list(params)


def _value(m, name, a):
    dtype = m.int64 if name == "Categorical" else m.float64
    return m.tensor(np.asarray(a), dtype=dtype)


def _try(log, fn):
    try:
        log.append(fn())
    except NotImplementedError:
        log.append("NotImplementedError")


def _observations(name):
    """test_distribution_shape / test_entropy / test_mean / test_variance / test_cdf_icdf /
    test_log_prob gradients: everything deterministic a distribution reports."""
    build, value, _ = DISTS[name]

    def program(m):
        d, params = build(m)
        v = _value(m, name, value)
        log = [repr(d), d.batch_shape, d.event_shape, d.has_rsample, type(d.support).__name__.lstrip("_")]
        lp = d.log_prob(v)
        log.append(lp)
        for attr in ("mean", "variance", "stddev", "mode"):
            _try(log, lambda: getattr(d, attr))
        _try(log, d.entropy)
        if name not in ("Categorical", "OneHotCategorical", "Dirichlet", "MultivariateNormal", "Independent",
                        "Multinomial", "RelaxedOneHotCategorical", "MixtureSameFamily_mvn"):
            _try(log, lambda: d.cdf(v))
            _try(log, lambda: d.icdf(m.tensor(np.full(d.batch_shape, 0.3))))
        # gradients of log_prob and entropy with respect to the parameters
        total = lp.sum()
        try:
            total = total + d.entropy().sum()
        except NotImplementedError:
            pass
        if params:
            log.append(m.autograd.grad(total, params, allow_unused=True))
        # test_distribution_expand: a new leading batch dim
        e = d.expand((5,) + tuple(d.batch_shape))
        log += [e.batch_shape, e.event_shape, e.log_prob(v), type(e).__name__]
        # samples: shape, dtype, in the support
        s = d.sample((4,))
        log += [s.shape, s.dtype, bool(d.support.check(s).all())]
        return log
    return program


@pytest.mark.parametrize("fn", outcome_params({n: _observations(n) for n in DISTS}))
def test_distribution_observations(fn):
    same_outcome(fn)


def _invalid(name):
    """test_support / test_invalid_parameter_type: a value outside the support raises ValueError
    with validate_args (and not without it, where torch returns a value)."""
    build, _, bad = DISTS[name]

    def program(m):
        d, _ = build(m)
        return d.log_prob(_value(m, name, bad))
    return program


@pytest.mark.parametrize("fn", outcome_params({n: _invalid(n) for n, c in DISTS.items() if c[2] is not None}))
def test_log_prob_outside_support_raises(fn):
    same_outcome(fn)


BAD_PARAMS = {
    "normal_scale": lambda m: m.distributions.Normal(0.0, -1.0),
    "normal_scale_tensor": lambda m: m.distributions.Normal(m.zeros(2), m.tensor([1.0, 0.0])),
    "lognormal_scale": lambda m: m.distributions.LogNormal(0.0, 0.0),
    "halfnormal_scale": lambda m: m.distributions.HalfNormal(-1.0),
    "cauchy_scale": lambda m: m.distributions.Cauchy(0.0, -2.0),
    "gumbel_scale": lambda m: m.distributions.Gumbel(0.0, -2.0),
    "poisson_rate": lambda m: m.distributions.Poisson(-1.0),
    "geometric_zero": lambda m: m.distributions.Geometric(0.0),
    "geometric_above_one": lambda m: m.distributions.Geometric(1.5),
    "geometric_both": lambda m: m.distributions.Geometric(0.5, logits=0.1),
    "binomial_count": lambda m: m.distributions.Binomial(-1, 0.5),
    "binomial_fraction": lambda m: m.distributions.Binomial(2.5, 0.5),
    "binomial_neither": lambda m: m.distributions.Binomial(3),
    "chi2_df": lambda m: m.distributions.Chi2(-1.0),
    "studentt_df": lambda m: m.distributions.StudentT(0.0),
    "bernoulli_both": lambda m: m.distributions.Bernoulli(0.5, logits=0.0),
    "bernoulli_range": lambda m: m.distributions.Bernoulli(1.5),
    "uniform_order": lambda m: m.distributions.Uniform(1.0, 0.0),
    "categorical_neg": lambda m: m.distributions.Categorical(m.tensor([-0.1, 1.1])),
    "non_tensor": lambda m: m.distributions.Normal("a", 1.0),
    "transformed_bad": lambda m: m.distributions.TransformedDistribution(m.distributions.Normal(0.0, 1.0), 3),
    "transformed_too_few_dims": lambda m: m.distributions.TransformedDistribution(
        m.distributions.Normal(0.0, 1.0), m.distributions.SoftmaxTransform()),
    "independent_too_many": lambda m: m.distributions.Independent(m.distributions.Normal(m.zeros(2), 1.0), 2),
    "transform_cache": lambda m: m.distributions.ExpTransform(cache_size=2),
    "multinomial_tensor_count": lambda m: m.distributions.Multinomial(m.tensor(3), m.tensor([0.5, 0.5])),
    "negbin_probs_one": lambda m: m.distributions.NegativeBinomial(2.0, m.tensor([0.5, 1.0])),
    "pareto_alpha": lambda m: m.distributions.Pareto(1.0, -1.0),
    "weibull_concentration": lambda m: m.distributions.Weibull(1.0, 0.0),
    "mixture_not_categorical": lambda m: m.distributions.MixtureSameFamily(
        m.distributions.Bernoulli(0.5), m.distributions.Normal(m.zeros(2), 1.0)),
    "mixture_component_count": lambda m: m.distributions.MixtureSameFamily(
        m.distributions.Categorical(m.ones(3)), m.distributions.Normal(m.zeros(2), 1.0)),
    "mixture_batch_mismatch": lambda m: m.distributions.MixtureSameFamily(
        m.distributions.Categorical(m.ones(3, 2)), m.distributions.Normal(m.zeros(4, 2), 1.0)),
    "validation_off": lambda m: m.distributions.Normal(0.0, -1.0, validate_args=False).scale,
    "validation_off_log_prob": lambda m: m.distributions.Poisson(2.0, validate_args=False).log_prob(m.tensor(0.5)),
}


@pytest.mark.parametrize("fn", outcome_params(BAD_PARAMS))
def test_parameter_validation(fn):
    same_outcome(fn)


# ---- kl_divergence (test_kl_monte_carlo/test_kl_exponential_family values, exact) -----------
def _pair(cls, *a, **kw):
    return lambda m: (getattr(m.distributions, cls)(*(p(m, x) for x in a), **kw),)


KL = {
    "normal": ("Normal", (LOC, SCALE), (LOC * 0.5, SCALE * 2)),
    "exponential": ("Exponential", (POS,), (SCALE,)),
    "laplace": ("Laplace", (LOC, SCALE), (LOC + 1, SCALE)),
    "gamma": ("Gamma", (POS, SCALE), (SCALE, POS)),
    "beta": ("Beta", (POS, SCALE), (SCALE, POS)),
    "poisson": ("Poisson", (POS,), (SCALE,)),
    "geometric": ("Geometric", (PROBS,), (PROBS[::-1].copy(),)),
    "bernoulli": ("Bernoulli", (PROBS,), (PROBS[::-1].copy(),)),
    "binomial": ("Binomial", (5.0, PROBS), (5.0, PROBS[::-1].copy())),
    "categorical": ("Categorical", (SIMPLEX,), (SIMPLEX[::-1].copy(),)),
    "dirichlet": ("Dirichlet", (POS[:, :2].repeat(2, 1).reshape(2, 4),), (SIMPLEX + 0.5,)),
    "uniform": ("Uniform", (LOC, LOC + SCALE), (LOC - 1, LOC + SCALE + 1)),
    "lognormal": ("LogNormal", (LOC, SCALE), (LOC * 0.5, SCALE * 2)),
    "halfnormal": ("HalfNormal", (SCALE,), (POS,)),
    "gumbel": ("Gumbel", (LOC, SCALE), (LOC * 0.5, SCALE * 2)),
    "cauchy": ("Cauchy", (LOC, SCALE), (LOC * 0.5, SCALE * 2)),
    "chi2": ("Chi2", (POS,), (SCALE,)),
    "pareto": ("Pareto", (SCALE, POS), (SCALE * 0.5, POS + 1)),
    "halfcauchy_unregistered": ("HalfCauchy", (SCALE,), (POS,)),
    "negbin_unregistered": ("NegativeBinomial", (POS, PROBS), (SCALE, PROBS)),
}


def _kl(case):
    cls, a, b = case

    def program(m):
        params = []

        def make(args):
            built = [p(m, x) if isinstance(x, np.ndarray) else x for x in args]
            params.extend(x for x in built if isinstance(x, m.Tensor))
            return getattr(m.distributions, cls)(*built)
        kl = m.distributions.kl_divergence(make(a), make(b))
        return kl, m.autograd.grad(kl.sum(), params, allow_unused=True)
    return program


KL_XFAIL = {}


@pytest.mark.parametrize("fn", outcome_params({n: _kl(c) for n, c in KL.items()}, xfail=KL_XFAIL))
def test_kl_divergence(fn):
    same_outcome(fn)


KL_MIXED = {
    # test_kl_infinite / test_kl_edgecases
    "uniform_not_covered": lambda m: m.distributions.kl_divergence(m.distributions.Uniform(0.0, 2.0),
                                                                   m.distributions.Uniform(0.5, 1.0)),
    "bernoulli_edge": lambda m: m.distributions.kl_divergence(m.distributions.Bernoulli(m.tensor([0.0, 1.0])),
                                                              m.distributions.Bernoulli(m.tensor([0.0, 1.0]))),
    "unregistered": lambda m: m.distributions.kl_divergence(m.distributions.Normal(0.0, 1.0),
                                                            m.distributions.Cauchy(0.0, 1.0)),
    "independent": lambda m: m.distributions.kl_divergence(
        m.distributions.Independent(m.distributions.Normal(p(m, LOC), p(m, SCALE)), 1),
        m.distributions.Independent(m.distributions.Normal(p(m, LOC * 0), p(m, SCALE * 0 + 1)), 1)),
    "mvn": lambda m: m.distributions.kl_divergence(
        m.distributions.MultivariateNormal(p(m, LOC), scale_tril=m.diag_embed(p(m, SCALE)) + m.tensor(
            np.tril(np.full((3, 3), 0.2), -1))),
        m.distributions.MultivariateNormal(p(m, LOC[0] * 0.5), covariance_matrix=m.tensor(np.eye(3) * 2 + 0.3))),
    "mvn_event_mismatch": lambda m: m.distributions.kl_divergence(
        m.distributions.MultivariateNormal(m.zeros(2), m.eye(2)), m.distributions.MultivariateNormal(m.zeros(3), m.eye(3))),
    "transformed_same_chain": lambda m: m.distributions.kl_divergence(
        m.distributions.TransformedDistribution(m.distributions.Normal(p(m, LOC), p(m, SCALE)),
                                                [m.distributions.ExpTransform()]),
        m.distributions.TransformedDistribution(m.distributions.Normal(p(m, LOC + 1), p(m, SCALE)),
                                                [m.distributions.ExpTransform()])),
}


@pytest.mark.parametrize("fn", outcome_params(KL_MIXED))
def test_kl_special_cases(fn):
    same_outcome(fn)


# ---- transforms (test/distributions/test_transforms.py) ----------------------------------------
def _transforms(m):
    T = m.distributions
    return {
        "exp": T.ExpTransform(),
        "sigmoid": T.SigmoidTransform(),
        "tanh": T.TanhTransform(),
        "power": T.PowerTransform(p(m, SCALE, grad=False)),
        "power_scalar": T.PowerTransform(2.0),
        "affine": T.AffineTransform(p(m, LOC, grad=False), p(m, SCALE, grad=False)),
        "affine_neg_number": T.AffineTransform(1.0, -2.0),
        "affine_event": T.AffineTransform(p(m, LOC[0], grad=False), p(m, SCALE[0], grad=False), event_dim=1),
        "exp_inv": T.ExpTransform().inv,
        "compose": T.ComposeTransform([T.AffineTransform(0.5, 2.0), T.ExpTransform()]),
        "compose_inv": T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 3.0)]).inv,
        "identity": T.ComposeTransform([]),
        "softmax": T.SoftmaxTransform(),
        "abs": T.AbsTransform(),
        "softplus": T.SoftplusTransform(),
        "stick_breaking": T.StickBreakingTransform(),
        "independent_exp": T.IndependentTransform(T.ExpTransform(), 1),
        "independent_affine": T.IndependentTransform(T.AffineTransform(0.5, p(m, SCALE, grad=False)), 2),
        "compose_stick": T.ComposeTransform([T.AffineTransform(1.0, 2.0), T.StickBreakingTransform()]),
    }


DOMAIN_INPUT = {"power": POS, "power_scalar": POS, "exp_inv": POS, "compose_inv": POS + 1.5}


def _transform_case(key):
    """test_forward_inverse / test_jacobian / test_transform_shapes: y, x back, the log |det J|,
    sign, bijective, event dims, shapes, and gradients of the log-det."""
    def program(m):
        t = _transforms(m)[key]
        x = p(m, DOMAIN_INPUT.get(key, LOC))
        y = t(x)
        log = [y, t.domain.event_dim, t.codomain.event_dim, t.bijective, bool(t.domain.check(x).all()),
               bool(t.codomain.check(y).all()), t.forward_shape((2, 3)), t.inverse_shape((2, 3))]
        _try(log, lambda: t.inv(y))
        _try(log, lambda: t.sign)
        try:
            ladj = t.log_abs_det_jacobian(x, y)
            log += [ladj, m.autograd.grad(ladj.sum(), x)]
        except NotImplementedError:
            log.append("NotImplementedError")
        return log
    return program


TRANSFORM_KEYS = ["exp", "sigmoid", "tanh", "power", "power_scalar", "affine", "affine_neg_number", "affine_event",
                  "exp_inv", "compose", "compose_inv", "identity", "softmax", "abs", "softplus", "stick_breaking",
                  "independent_exp", "independent_affine", "compose_stick"]


@pytest.mark.parametrize("fn", outcome_params({k: _transform_case(k) for k in TRANSFORM_KEYS}))
def test_transforms(fn):
    same_outcome(fn)


def _transform_api(m):
    """test_cache / test_equality / test_inv_inv."""
    T = m.distributions
    e = T.ExpTransform()
    c = T.ExpTransform(cache_size=1)
    x = m.tensor([0.5, 1.0])
    y = c(x)
    return [e == T.ExpTransform(), e == T.SigmoidTransform(), e.inv.inv is e, e.inv == T.ExpTransform().inv,
            c.inv(y) is x, e.inv(e(x)) is x, T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0),
            T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 3.0), e.with_cache(1)._cache_size,
            T.ComposeTransform([e, T.SigmoidTransform()]) == T.ComposeTransform([T.ExpTransform(), T.SigmoidTransform()]),
            T.ComposeTransform([T.AffineTransform(0.0, -1.0), e]).sign, T.ComposeTransform([e, e]).inv.parts[0] == e.inv]


def test_transform_api():
    same_outcome(_transform_api)


def _shape_transforms(m):
    """test_transform_shapes / LowerCholeskyTransform: reshape and Cholesky-factor maps."""
    T = m.distributions
    r = T.ReshapeTransform((3,), (3, 1))
    x = m.tensor(LOC)
    lc = T.LowerCholeskyTransform()
    a = m.tensor(np.stack([np.eye(2) + 0.5, np.eye(2) * 2 - 0.3]))
    out = [r(x), r.inv(r(x)), r.log_abs_det_jacobian(x, r(x)), r.forward_shape((4, 3)), r.inverse_shape((4, 3, 1)),
           r.domain.event_dim, r.codomain.event_dim, lc(a), lc.inv(lc(a)), bool(lc.codomain.check(lc(a)).all())]
    for bad in (lambda: T.ReshapeTransform((3,), (2, 2)), lambda: r.forward_shape((4, 2))):
        try:
            bad()
            out.append("ok")
        except ValueError:
            out.append("ValueError")
    return out


def test_shape_transforms():
    same_outcome(_shape_transforms)


def _registry(m):
    """test_constraint_registry: biject_to / transform_to land in the constraint's set, are
    inverted by .inv, and pick the same transform types as torch."""
    D = m.distributions
    c = D.constraints
    x = m.tensor(LOC)
    out = []
    for k in (c.real, c.positive, c.nonnegative, c.greater_than(2.0), c.greater_than_eq(1.0), c.less_than(1.0),
              c.unit_interval, c.interval(-1.0, 2.0), c.half_open_interval(0.0, 1.0), c.simplex, c.real_vector,
              c.independent(c.positive, 1)):
        for registry in (D.biject_to, D.transform_to):
            t = registry(k)
            y = t(x)
            out += [repr(t), y, bool(k.check(y).all())]
            if registry is D.biject_to:
                out += [t.inv(y), t.log_abs_det_jacobian(x, y)]
    out.append(repr(D.transform_to(c.lower_cholesky)))
    for bad in (lambda: D.biject_to(c.lower_cholesky), lambda: D.biject_to(c.boolean),
                lambda: D.biject_to.register(3, lambda k: None)):
        try:
            bad()
            out.append("ok")
        except (NotImplementedError, TypeError) as e:
            out.append(type(e).__name__)
    return out


def test_constraint_registry():
    same_outcome(_registry)


def _tdist(key):
    """test_transformed_distribution_shapes / log_prob / cdf: a base pushed through a chain."""
    def program(m):
        T = m.distributions
        loc, scale = p(m, LOC), p(m, SCALE)
        chains = {
            "exp": (T.Normal(loc, scale), [T.ExpTransform()], POS),
            "affine_sigmoid": (T.Normal(loc, scale), [T.AffineTransform(1.0, 2.0), T.SigmoidTransform()], PROBS),
            "neg_affine": (T.Normal(loc, scale), [T.AffineTransform(0.5, -3.0)], LOC),
            "broadcast": (T.Normal(p(m, 0.2), p(m, 1.3)), [T.AffineTransform(loc, scale)], LOC * 2),
            "event_dim": (T.Normal(loc, scale), [T.AffineTransform(p(m, LOC[0]), p(m, SCALE[0]), event_dim=1)], LOC),
            "tanh": (T.Normal(loc, scale), T.TanhTransform(), PROBS - 0.5),
            "softmax": (T.Normal(loc, scale), [T.SoftmaxTransform()], SIMPLEX[:, :3] / SIMPLEX[:, :3].sum(-1, keepdims=True)),
            "empty": (T.Normal(loc, scale), [], LOC),
            "uniform_inv_exp": (T.Uniform(p(m, PROBS * 0.1), p(m, PROBS + 0.05)), [T.ExpTransform().inv], np.log(PROBS)),
        }
        base, ts, value = chains[key]
        d = T.TransformedDistribution(base, ts)
        v = m.tensor(value)
        log = [d.batch_shape, d.event_shape, type(d.support).__name__.lstrip("_"), d.has_rsample]
        lp = d.log_prob(v)
        log += [lp, m.autograd.grad(lp.sum(), [loc, scale], allow_unused=True)]
        _try(log, lambda: d.cdf(v))
        _try(log, lambda: d.icdf(m.full(d.batch_shape + d.event_shape, 0.3, dtype=m.float64)))
        e = d.expand((4,) + tuple(d.batch_shape))
        log += [e.batch_shape, e.log_prob(v), d.sample((5,)).shape]
        return log
    return program


TDIST = ["exp", "affine_sigmoid", "neg_affine", "broadcast", "event_dim", "tanh", "softmax", "empty", "uniform_inv_exp"]


@pytest.mark.parametrize("fn", outcome_params({k: _tdist(k) for k in TDIST}))
def test_transformed_distribution(fn):
    same_outcome(fn)


# ---- constraints (test/distributions/test_constraints.py) ---------------------------------------
CONSTRAINT_VALUES = np.array([[-1.0, 0.0, 0.5], [1.0, 2.0, 2.5]])


def _constraints(m):
    c = m.distributions.constraints
    v = m.tensor(CONSTRAINT_VALUES)
    checks = [c.real, c.positive, c.nonnegative, c.unit_interval, c.boolean, c.nonnegative_integer,
              c.interval(0.0, 2.0), c.half_open_interval(0.0, 2.0), c.greater_than(0.5), c.greater_than_eq(0.5),
              c.less_than(1.0), c.integer_interval(0, 2), c.real_vector, c.independent(c.positive, 1), c.simplex]
    out = [k.check(v) for k in checks]
    out += [[k.event_dim for k in checks], [k.is_discrete for k in checks]]
    out.append(c.lower_cholesky.check(m.tensor([[1.0, 0.0], [2.0, 3.0]])))
    out.append(c.positive_definite.check(m.tensor([[2.0, 1.0], [1.0, 2.0]])))
    out.append(c.is_dependent(c.dependent))
    out.append(c.is_dependent(c.real))
    return out


def test_constraints():
    same_outcome(_constraints)


# ---- enumerate_support (test_enumerate_support) ---------------------------------------------
ENUM = {
    "bernoulli": lambda m: m.distributions.Bernoulli(m.tensor([0.2, 0.7])).enumerate_support(),
    "bernoulli_no_expand": lambda m: m.distributions.Bernoulli(m.tensor([0.2, 0.7])).enumerate_support(False),
    "categorical": lambda m: m.distributions.Categorical(m.tensor(SIMPLEX)).enumerate_support(),
    "binomial": lambda m: m.distributions.Binomial(3, m.tensor([0.2, 0.7])).enumerate_support(),
    "binomial_inhomogeneous": lambda m: m.distributions.Binomial(m.tensor([2.0, 3.0]), m.tensor([0.2, 0.7])).entropy(),
    "onehot": lambda m: m.distributions.OneHotCategorical(m.tensor(SIMPLEX)).enumerate_support(),
}


@pytest.mark.parametrize("fn", outcome_params(ENUM))
def test_enumerate_support(fn):
    same_outcome(fn)


# ---- sampling: reparameterised gradients and moments (test_rsample, test_*_sample) ---------------
CDF_RSAMPLE = ["Normal", "LogNormal", "HalfNormal", "Cauchy", "Gumbel", "Laplace", "Exponential", "Uniform", "Gamma",
               "Chi2", "HalfCauchy", "Pareto", "Weibull", "InverseGamma"]


@pytest.mark.parametrize("name", CDF_RSAMPLE)
def test_rsample_gradient_is_implicit_reparameterisation(name):
    """test_rsample / test_gamma_sample_grad: for a univariate family, the gradient of a
    reparameterised sample ``x`` is ``-(dF(x)/dtheta) / p(x)`` with the cdf ``F`` held at
    ``x`` (the cdf and density are checked against torch above), sample by sample; ``dF/dtheta``
    by central differences (each batch element's cdf reads only its own parameters)."""
    build = DISTS[name][0]
    tracegrad.manual_seed(0)
    d, params = build(tracegrad)
    x = d.rsample((3,))
    assert x.shape == (3,) + tuple(d.batch_shape) and x.requires_grad
    got = tracegrad.autograd.grad(x.sum(), params)
    x = x.detach()
    density = d.log_prob(x).exp().detach()
    eps = 1e-6
    for i, g in enumerate(got):
        def cdf(shift):
            bumped = [q.detach() + (shift if j == i else 0.0) for j, q in enumerate(params)]
            return type(d)(*bumped).cdf(x)
        want = (-(cdf(eps) - cdf(-eps)) / (2 * eps) / density).sum(0)
        np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-4, atol=1e-6)


MEAN_RSAMPLE = {"StudentT": 0.15, "Beta": 0.06, "Dirichlet": 0.06, "MultivariateNormal": 0.06, "Independent": 0.06}


@pytest.mark.parametrize("name", list(MEAN_RSAMPLE))
def test_rsample_gradient_matches_mean_gradient(name):
    """Families without a cdf: the average gradient of many reparameterised samples estimates
    the gradient of the mean (unbiased pathwise estimator)."""
    build = DISTS[name][0]
    tracegrad.manual_seed(0)
    d, params = build(tracegrad)
    x = d.rsample((4000,))
    assert bool(d.support.check(x.detach()).all())
    got = tracegrad.autograd.grad(x.mean(0).sum(), params)
    want = tracegrad.autograd.grad(d.mean.sum(), params, allow_unused=True)
    for g, w in zip(got, want):
        w = tracegrad.zeros_like(g) if w is None else w
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=0.1, atol=MEAN_RSAMPLE[name])


MOMENT_DISTS = {
    "Poisson": lambda m: m.distributions.Poisson(m.tensor([0.5, 4.0, 20.0])),
    "Geometric": lambda m: m.distributions.Geometric(m.tensor([0.2, 0.5, 0.9])),
    "Binomial": lambda m: m.distributions.Binomial(m.tensor([3.0, 10.0, 40.0]), m.tensor([0.2, 0.5, 0.9])),
    "Chi2": lambda m: m.distributions.Chi2(m.tensor([1.0, 3.0, 8.0])),
    "StudentT": lambda m: m.distributions.StudentT(m.tensor([5.0, 8.0, 30.0]), 1.0, 2.0),
    "LogNormal": lambda m: m.distributions.LogNormal(m.tensor([0.0, 0.5, -1.0]), 0.4),
    "HalfNormal": lambda m: m.distributions.HalfNormal(m.tensor([0.5, 1.0, 3.0])),
    "Gumbel": lambda m: m.distributions.Gumbel(m.tensor([0.0, 2.0, -1.0]), 1.5),
    "Weibull": lambda m: m.distributions.Weibull(m.tensor([0.5, 1.0, 2.0]), m.tensor([0.8, 2.0, 5.0])),
    "Pareto": lambda m: m.distributions.Pareto(m.tensor([0.5, 1.0, 2.0]), m.tensor([5.0, 6.0, 9.0])),
    "InverseGamma": lambda m: m.distributions.InverseGamma(m.tensor([5.0, 6.0, 9.0]), m.tensor([0.5, 1.0, 2.0])),
    "NegativeBinomial": lambda m: m.distributions.NegativeBinomial(m.tensor([1.0, 3.0, 10.0]), m.tensor([0.2, 0.5, 0.7])),
    "Multinomial": lambda m: m.distributions.Multinomial(7, m.tensor([0.2, 0.5, 0.3])),
    "MixtureSameFamily": lambda m: m.distributions.MixtureSameFamily(
        m.distributions.Categorical(m.tensor([0.3, 0.7])), m.distributions.Normal(m.tensor([-1.0, 2.0]), m.tensor([0.5, 1.0]))),
}


@pytest.mark.parametrize("name", list(MOMENT_DISTS))
def test_sample_moments(name):
    """test_poisson_sample / test_geometric_sample / ...: sample mean and variance of 10000
    draws agree with the distribution's own mean/variance (checked against torch above)."""
    tracegrad.manual_seed(0)
    d = MOMENT_DISTS[name](tracegrad)
    s = d.sample((10000,)).double()
    mean, var = d.mean.double(), d.variance.double()
    np.testing.assert_allclose(s.mean(0).numpy(), mean.numpy(), rtol=0.05, atol=0.03)
    np.testing.assert_allclose(s.var(0).numpy(), var.numpy(), rtol=0.12, atol=0.05)
    assert bool(d.support.check(s).all())


def test_cauchy_sample_median_and_quartiles():
    """Cauchy has no moments: its sample quartiles match icdf(0.25/0.5/0.75) instead."""
    tracegrad.manual_seed(0)
    d = tracegrad.distributions.Cauchy(1.0, 2.0)
    s = d.sample((20000,)).numpy()
    want = [float(d.icdf(tracegrad.tensor(q))) for q in (0.25, 0.5, 0.75)]
    np.testing.assert_allclose(np.quantile(s, [0.25, 0.5, 0.75]), want, atol=0.1)
    assert math.isclose(want[1], 1.0, abs_tol=1e-6)
