"""ExponentialFamily, OneHotCategoricalStraightThrough, LowRankMultivariateNormal, VonMises,
ContinuousBernoulli, Kumaraswamy, LogisticNormal, FisherSnedecor, GeneralizedPareto and the new
transforms against torch: values and gradients of log_prob/entropy/moments/cdf/icdf and of the
reparameterised parts of rsample on the same parameters, KL pairs, sample statistics and shapes,
manual_seed reproducibility, validation errors."""
import math

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


pytestmark = pytest.mark.usefixtures("torch_validate_args")


def _leaves(mod, params):
    return {k: mod.tensor(np.asarray(v, dtype=np.float32), requires_grad=True) for k, v in params.items()}


def _parity(make, params, outputs, rtol=1e-4, atol=1e-5):
    """Builds ``make(mod, **leaves)`` in both libraries from the same numbers, evaluates
    ``outputs(mod, dist)`` (a list of tensors), and compares the values and the gradients of
    their weighted sum with respect to every parameter."""
    got = []
    for mod in (tracegrad, torch):
        leaves = _leaves(mod, params)
        d = make(mod, **leaves)
        outs = outputs(mod, d)
        total = sum((o * (i + 1)).sum() for i, o in enumerate(outs) if o.requires_grad)
        grads = mod.autograd.grad(total, list(leaves.values()), allow_unused=True)
        got.append(([o.detach().numpy() for o in outs],
                    [None if g is None else g.numpy() for g in grads],
                    (tuple(d.batch_shape), tuple(d.event_shape))))
    (vals, grads, shapes), (tvals, tgrads, tshapes) = got
    assert shapes == tshapes
    for a, b in zip(vals, tvals):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    for name, a, b in zip(params, grads, tgrads):
        if b is None:
            assert a is None or not np.any(a), name
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=name)


def _reproducible(d, first, seed=0):
    """``first`` was drawn right after ``manual_seed(seed)``: reseeding draws it again (the same
    shape, so no new compilation)."""
    tracegrad.manual_seed(seed)
    np.testing.assert_array_equal(np.asarray(first.detach().numpy()), d.sample(tuple(first.shape[:first.dim() - len(
        d.batch_shape) - len(d.event_shape)])).numpy())


# ----------------------------------------------------------------------------- ExponentialFamily

def _families(mod):
    """(p, q) pairs of the same exponential family, on small fixed parameters."""
    D, t = mod.distributions, mod.tensor
    return [(D.Normal(t([0.3, -1.0]), t([1.5, 0.7])), D.Normal(t([0.0, 0.5]), t([1.0, 2.0]))),
            (D.Bernoulli(logits=t([0.3, -2.0])), D.Bernoulli(probs=t([0.6, 0.2]))),
            (D.Beta(t([2.0, 0.7]), t([1.5, 3.0])), D.Beta(t([1.0, 2.0]), t([1.0, 0.5]))),
            (D.Dirichlet(t([[2.0, 0.7, 1.0]])), D.Dirichlet(t([[1.0, 2.0, 3.0]]))),
            (D.Exponential(t([0.5, 2.0])), D.Exponential(t([1.0, 1.5]))),
            (D.Gamma(t([2.0, 0.7]), t([1.5, 3.0])), D.Gamma(t([1.0, 2.0]), t([1.0, 0.5]))),
            (D.ContinuousBernoulli(logits=t([-2.0, 0.3])), D.ContinuousBernoulli(logits=t([0.5, 3.0]))),
            (D.Wishart(t(5.0), t([[2.0, 0.3], [0.3, 1.0]])), D.Wishart(t(4.0), t([[1.0, -0.2], [-0.2, 0.5]])))]


def test_exponential_family_entropy_and_bregman_kl():
    """The generic Bregman entropy and KL of every exponential family equal torch's and this
    library's closed forms (values; as in torch they carry no gradient to p's parameters)."""
    res = []
    for mod in (tracegrad, torch):
        D = mod.distributions
        out = []
        for p, q in _families(mod):
            assert isinstance(p, D.ExponentialFamily)
            out += [D.kl._kl_expfamily_expfamily(p, q), D.kl_divergence(p, q)]
            # Beta and Dirichlet define no mean carrier measure (in torch either): no generic entropy
            if not isinstance(p, (D.Beta, D.Dirichlet)):
                out += [D.ExponentialFamily.entropy(p), p.entropy()]
        res.append([o.detach().numpy() for o in out])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    for generic, closed in zip(res[0][0::2], res[0][1::2]):
        np.testing.assert_allclose(generic, closed, rtol=2e-4, atol=2e-5)
    D = tracegrad.distributions
    with pytest.raises(NotImplementedError):
        D.kl._kl_expfamily_expfamily(D.Exponential(tracegrad.ones(2)), D.Normal(tracegrad.zeros(2), 1.0))
    for d in (D.Poisson(tracegrad.ones(2)), D.Beta(tracegrad.ones(2), 1.0)):
        with pytest.raises(NotImplementedError):
            D.ExponentialFamily.entropy(d)


# ----------------------------------------------------------------------------- straight-through

def test_one_hot_straight_through():
    logits = [[0.2, -1.0, 1.5], [0.0, 0.3, -0.4]]
    w = np.array([[1.0, 2.0, -1.0], [0.5, -2.0, 3.0]], dtype=np.float32)

    def outputs(mod, d):
        s = d.rsample()
        onehot = s.detach()
        # the straight-through gradient is d probs; its value part is the one-hot sample
        return [(s * mod.tensor(w)).sum(-1) - (onehot * mod.tensor(w)).sum(-1), d.log_prob(mod.eye(3)[:2]),
                d.entropy(), d.mean]
    _parity(lambda mod, logits: mod.distributions.OneHotCategoricalStraightThrough(logits=logits),
            {"logits": logits}, outputs)
    d = tracegrad.distributions.OneHotCategoricalStraightThrough(logits=tracegrad.tensor(logits))
    assert d.has_rsample and isinstance(d, tracegrad.distributions.OneHotCategorical)
    tracegrad.manual_seed(0)
    s = d.sample((4,))
    _reproducible(d, s)
    assert tuple(s.shape) == (4, 2, 3) and np.all(s.numpy().sum(-1) == 1)


# ----------------------------------------------------------------------------- LowRankMultivariateNormal

LR = {"loc": [[0.0, 1.0, -0.5], [0.3, 0.2, 0.1]],
      "cov_factor": [[1.0, 0.2], [0.5, -0.3], [0.1, 0.8]],
      "cov_diag": [0.5, 1.2, 0.3]}


def _lowrank(mod, loc, cov_factor, cov_diag):
    return mod.distributions.LowRankMultivariateNormal(loc, cov_factor, cov_diag)


def test_lowrank_mvn_parity():
    value = np.array([[0.3, -1.0, 2.0], [0.0, 0.5, -0.2]], dtype=np.float32)

    def outputs(mod, d):
        return [d.log_prob(mod.tensor(value)), d.entropy(), d.variance, d.covariance_matrix, d.scale_tril,
                d.precision_matrix, d.mean, d.mode]
    _parity(_lowrank, LR, outputs)


def test_lowrank_mvn_rsample_and_kl():
    res = []
    for mod in (tracegrad, torch):
        leaves = _leaves(mod, LR)
        p = _lowrank(mod, **leaves)
        q = _lowrank(mod, mod.tensor([0.1, 0.0, 0.2]), mod.tensor([[0.3], [0.2], [-0.4]]), mod.tensor([1.0, 0.7, 0.9]))
        mvn = mod.distributions.MultivariateNormal(mod.tensor([0.5, -0.5, 0.0]), mod.eye(3) * 1.5)
        kls = [mod.distributions.kl_divergence(a, b) for a, b in ((p, q), (p, mvn), (mvn, p))]
        sum(k.sum() for k in kls).backward()
        res.append([k.detach().numpy() for k in kls] + [leaves[k].grad.numpy() for k in LR])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    d = _lowrank(tracegrad, **_leaves(tracegrad, LR))
    tracegrad.manual_seed(0)
    s = d.rsample((20000,))
    assert tuple(s.shape) == (20000, 2, 3)
    _reproducible(d, s)
    x = s.detach().numpy()
    np.testing.assert_allclose(x.mean(0), np.asarray(LR["loc"]), atol=0.05)
    np.testing.assert_allclose(np.cov(x[:, 0].T), d.covariance_matrix[0].detach().numpy(), atol=0.08)


def test_lowrank_mvn_errors():
    for mod in (tracegrad, torch):
        D = mod.distributions
        with pytest.raises(ValueError):
            D.LowRankMultivariateNormal(mod.tensor(0.0), mod.ones(1, 1), mod.ones(1))
        with pytest.raises(ValueError):
            D.LowRankMultivariateNormal(mod.zeros(3), mod.ones(3), mod.ones(3))
        with pytest.raises(ValueError):
            D.LowRankMultivariateNormal(mod.zeros(3), mod.ones(2, 1), mod.ones(3))
        with pytest.raises(ValueError):
            D.LowRankMultivariateNormal(mod.zeros(3), mod.ones(3, 1), mod.ones(2))
        with pytest.raises(ValueError):
            D.LowRankMultivariateNormal(mod.zeros(3), mod.zeros(3, 1), -mod.ones(3))
        with pytest.raises(ValueError):
            D.kl_divergence(D.LowRankMultivariateNormal(mod.zeros(3), mod.ones(3, 1), mod.ones(3)),
                            D.LowRankMultivariateNormal(mod.zeros(2), mod.ones(2, 1), mod.ones(2)))


# ----------------------------------------------------------------------------- VonMises

def test_von_mises_parity():
    def outputs(mod, d):
        return [d.log_prob(mod.tensor([0.3, 0.2, -3.0])), d.variance, d.mean, d.mode]
    _parity(lambda mod, loc, concentration: mod.distributions.VonMises(loc, concentration),
            {"loc": [0.1, -1.0, 3.0], "concentration": [0.5, 2.0, 10.0]}, outputs)


def test_von_mises_sampling():
    loc = tracegrad.tensor([0.5, 3.0, -2.0])
    d = tracegrad.distributions.VonMises(loc, tracegrad.tensor([4.0, 1.0, 1e-6]))
    tracegrad.manual_seed(0)
    s = d.sample((8000,))
    _reproducible(d, s)
    assert tuple(s.shape) == (8000, 3) and s.dtype == tracegrad.float32
    x = s.numpy()
    assert np.all(np.abs(x) <= math.pi + 1e-6)
    # circular mean and mean resultant length I1/I0
    c, n = np.cos(x).mean(0), np.sin(x).mean(0)
    np.testing.assert_allclose(np.arctan2(n, c)[:2], [0.5, 3.0], atol=0.05)
    np.testing.assert_allclose(np.hypot(c, n), 1 - d.variance.numpy(), atol=0.03)
    assert not d.has_rsample
    for mod in (tracegrad, torch):
        with pytest.raises(ValueError):
            mod.distributions.VonMises(mod.tensor([0.0]), mod.tensor([-1.0]))
    assert tuple(d.expand((2, 3)).sample().shape) == (2, 3)


# ----------------------------------------------------------------------------- ContinuousBernoulli

@pytest.mark.parametrize("kind", ["probs", "logits"])
def test_continuous_bernoulli_parity(kind):
    # values straddle the Taylor region around 1/2 (probs 0.4995 / logits ~0)
    params = {"probs": [0.1, 0.4995, 0.7, 0.95]} if kind == "probs" else {"logits": [-3.0, 1e-4, 0.8, 2.5]}
    value = [0.2, 0.5, 0.9, 0.0]
    u = np.array([0.3, 0.6, 0.1, 0.95], dtype=np.float32)

    def outputs(mod, d):
        v = mod.tensor(value)
        return [d.log_prob(v), d.entropy(), d.mean, d.variance, d.cdf(v), d.icdf(mod.tensor(u)), d.stddev]
    _parity(lambda mod, **kw: mod.distributions.ContinuousBernoulli(**kw), params, outputs, rtol=2e-4, atol=2e-5)


def test_continuous_bernoulli_sampling_kl_errors():
    d = tracegrad.distributions.ContinuousBernoulli(tracegrad.tensor([0.2, 0.8]))
    tracegrad.manual_seed(0)
    st = d.sample((20000,))
    _reproducible(d, st)
    s = st.numpy()
    np.testing.assert_allclose(s.mean(0), d.mean.numpy(), atol=0.01)
    np.testing.assert_allclose(s.var(0), d.variance.numpy(), atol=0.01)
    res = []
    for mod in (tracegrad, torch):
        D = mod.distributions
        pl = mod.tensor([0.2, 0.7], requires_grad=True)
        p, q = D.ContinuousBernoulli(pl), D.ContinuousBernoulli(mod.tensor([0.6, 0.3]))
        pairs = [(p, q), (D.Beta(mod.tensor([2.0, 0.5]), mod.tensor([1.5, 3.0])), p), (p, D.Exponential(mod.tensor([1.0, 2.0]))),
                 (p, D.Normal(mod.tensor([0.1, -1.0]), mod.tensor([1.0, 0.5]))),
                 (D.Uniform(mod.tensor([0.1, 0.0]), mod.tensor([0.5, 0.9])), p),
                 (p, D.Uniform(mod.tensor([-0.1, 0.0]), mod.tensor([1.5, 0.9]))),
                 (D.Normal(mod.zeros(2), 1.0), p), (p, D.Pareto(mod.ones(2), mod.ones(2)))]
        kls = [D.kl_divergence(a, b) for a, b in pairs]
        sum(k[k.isfinite()].sum() for k in kls).backward()
        res.append([k.detach().numpy() for k in kls] + [pl.grad.numpy()])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    for mod in (tracegrad, torch):
        D = mod.distributions
        with pytest.raises(ValueError):
            D.ContinuousBernoulli(mod.tensor([1.5]), validate_args=True)
        with pytest.raises(ValueError):
            D.ContinuousBernoulli()
        with pytest.raises(ValueError):
            D.ContinuousBernoulli(mod.tensor([0.5])).log_prob(mod.tensor([1.5]))


# ----------------------------------------------------------------------------- Kumaraswamy, LogisticNormal,
# ----------------------------------------------------------------------------- FisherSnedecor, GeneralizedPareto

def test_kumaraswamy_parity():
    def outputs(mod, d):
        return [d.log_prob(mod.tensor([0.2, 0.5, 0.9])), d.entropy(), d.mean, d.variance, d.mode,
                d.cdf(mod.tensor([0.3, 0.6, 0.1])), d.icdf(mod.tensor([0.3, 0.6, 0.1]))]
    _parity(lambda mod, a, b: mod.distributions.Kumaraswamy(a, b), {"a": [0.5, 2.0, 3.0], "b": [1.5, 4.0, 0.7]},
            outputs, rtol=2e-4)


def test_logistic_normal_parity():
    value = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], dtype=np.float32)

    def outputs(mod, d):
        return [d.log_prob(mod.tensor(value)), d.loc, d.scale]
    _parity(lambda mod, loc, scale: mod.distributions.LogisticNormal(loc, scale),
            {"loc": [[0.1, -0.5], [1.0, 0.0]], "scale": [[1.0, 0.5], [2.0, 0.3]]}, outputs)
    for mod in (tracegrad, torch):
        d = mod.distributions.LogisticNormal(0.0, 1.0)
        assert tuple(d.batch_shape) == () and tuple(d.event_shape) == (2,)
        e = mod.distributions.LogisticNormal(mod.zeros(3, 2), mod.ones(3, 2)).expand((4, 3))
        assert tuple(e.batch_shape) == (4, 3) and tuple(e.event_shape) == (3,)


def test_fisher_snedecor_parity():
    def outputs(mod, d):
        return [d.log_prob(mod.tensor([0.5, 1.5, 3.0])), d.mean, d.variance, d.mode]
    _parity(lambda mod, df1, df2: mod.distributions.FisherSnedecor(df1, df2),
            {"df1": [1.5, 5.0, 10.0], "df2": [3.0, 8.0, 2.0]}, outputs)


@pytest.mark.parametrize("xi", [[0.3, -0.4, 0.0], [1.2, 0.6, -0.1]])
def test_generalized_pareto_parity(xi):
    value = [1.3, 0.9, 4.0]

    def outputs(mod, d):
        v = mod.tensor(value)
        return [d.log_prob(v), d.cdf(v), d.log_survival_function(v), d.icdf(mod.tensor([0.3, 0.6, 0.9])),
                d.entropy(), d.mean, d.variance, d.mode]
    _parity(lambda mod, loc, scale, xi: mod.distributions.GeneralizedPareto(loc, scale, xi),
            {"loc": [1.0, 0.5, -1.0], "scale": [0.5, 1.0, 2.0], "xi": xi}, outputs)


def test_more_sampling_moments():
    D = tracegrad.distributions
    cases = [(D.Kumaraswamy(tracegrad.tensor([2.0, 0.8]), tracegrad.tensor([3.0, 1.5])), 0.01),
             (D.FisherSnedecor(tracegrad.tensor([6.0, 10.0]), tracegrad.tensor([12.0, 20.0])), 0.05),
             (D.GeneralizedPareto(tracegrad.tensor([0.0, 1.0]), tracegrad.tensor([1.0, 0.5]),
                                  tracegrad.tensor([-0.3, 0.1])), 0.03)]
    for d, tol in cases:
        tracegrad.manual_seed(0)
        s = d.rsample((20000,))
        assert tuple(s.shape) == (20000, 2) and s.dtype == tracegrad.float32
        np.testing.assert_allclose(s.numpy().mean(0), d.mean.numpy(), rtol=tol, atol=tol)
        assert bool(d.support.check(s).all())
        _reproducible(d, s)
    tracegrad.manual_seed(0)
    s = D.LogisticNormal(tracegrad.tensor([0.5, -0.5]), tracegrad.tensor([0.1, 0.1])).rsample((4000,)).numpy()
    np.testing.assert_allclose(s.sum(-1), 1, atol=1e-5)
    expected = torch.distributions.transforms.StickBreakingTransform()(torch.tensor([0.5, -0.5])).numpy()
    np.testing.assert_allclose(s.mean(0), expected, atol=0.02)
    # reparameterised: the gradient of the mean sample w.r.t. df1 flows through the Gamma rsample
    df1 = tracegrad.tensor([6.0], requires_grad=True)
    D.FisherSnedecor(df1.expand(2), tracegrad.tensor([12.0, 20.0])).rsample((20000,)).mean().backward()
    assert df1.grad is not None and np.isfinite(df1.grad.numpy()).all()


def test_more_errors():
    for mod in (tracegrad, torch):
        D = mod.distributions
        for make in (lambda: D.Kumaraswamy(mod.tensor([-1.0]), mod.tensor([1.0])),
                     lambda: D.FisherSnedecor(mod.tensor([1.0]), mod.tensor([0.0])),
                     lambda: D.GeneralizedPareto(mod.tensor([0.0]), mod.tensor([-1.0]), mod.tensor([0.1])),
                     lambda: D.LogisticNormal(mod.tensor([0.0]), mod.tensor([-1.0])),
                     lambda: D.Kumaraswamy(mod.tensor([1.0]), mod.tensor([1.0])).log_prob(mod.tensor([1.5])),
                     lambda: D.GeneralizedPareto(mod.tensor([0.0]), mod.tensor([1.0]),
                                                 mod.tensor([-0.5])).log_prob(mod.tensor([3.0])),
                     lambda: D.LogisticNormal(mod.zeros(2), mod.ones(2)).log_prob(mod.tensor([0.5, 0.6, 0.2]))):
            with pytest.raises(ValueError):
                make()


# ----------------------------------------------------------------------------- transforms

def _transforms(mod):
    T = mod.distributions.transforms
    return {
        "cat": (T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0), T.SigmoidTransform()], dim=-1,
                               lengths=[2, 1, 1]), (3, 4)),
        "cat0": (T.CatTransform([T.AffineTransform(0.5, 3.0), T.TanhTransform()], dim=0, lengths=[1, 2]), (3, 3)),
        "stack": (T.StackTransform([T.ExpTransform(), T.TanhTransform()], dim=1), (3, 2)),
        "corr": (T.CorrCholeskyTransform(), (2, 6)),
        "cdf": (T.CumulativeDistributionTransform(mod.distributions.Normal(mod.tensor(0.5), mod.tensor(2.0))), (5,)),
    }


@pytest.mark.parametrize("name", ["cat", "cat0", "stack", "corr", "cdf"])
def test_transform_parity(name):
    rng = np.random.default_rng(0)
    shape = _transforms(tracegrad)[name][1]
    x = (rng.standard_normal(shape) * 0.7).astype(np.float32)
    res = []
    for mod in (tracegrad, torch):
        t = _transforms(mod)[name][0]
        xt = mod.tensor(x, requires_grad=True)
        y = t(xt)
        x_back = t.inv(y.detach())
        ladj = t.log_abs_det_jacobian(xt, y)
        (y.sum() + 3 * ladj.sum()).backward()
        res.append([y.detach().numpy(), x_back.detach().numpy(), ladj.detach().numpy(), xt.grad.numpy(),
                    t.codomain.check(y.detach()).numpy(), t.domain.check(xt.detach()).numpy()])
        assert tuple(t.forward_shape(shape)) == tuple(y.shape)
        assert tuple(t.inverse_shape(tuple(y.shape))) == shape
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(res[0][1], x, rtol=1e-3, atol=1e-4)


def test_positive_definite_and_registry():
    x = np.array([[[0.3, 5.0], [-0.4, -0.2]]], dtype=np.float32)
    res = []
    for mod in (tracegrad, torch):
        D = mod.distributions
        t = D.transforms.PositiveDefiniteTransform()
        xt = mod.tensor(x, requires_grad=True)
        y = t(xt)
        y.sum().backward()
        c = D.constraints.cat([D.constraints.positive, D.constraints.unit_interval], dim=0, lengths=[1, 2])
        s = D.constraints.stack([D.constraints.positive, D.constraints.real], dim=-1)
        z = mod.tensor([[0.5, -1.0], [-0.3, 2.0], [0.8, 0.1]])
        res.append([y.detach().numpy(), t.inv(y.detach()).numpy(), xt.grad.numpy(), c.check(z).numpy(),
                    s.check(z).numpy(), D.biject_to(c)(z).numpy(), D.transform_to(s)(z).numpy(),
                    D.biject_to(D.constraints.corr_cholesky)(z[:, 0]).numpy()])
        assert t == D.transforms.PositiveDefiniteTransform() and c.event_dim == 0 and s.event_dim == 1
        assert isinstance(D.transform_to(D.constraints.positive_definite), D.transforms.PositiveDefiniteTransform)
        assert D.transforms.identity_transform(z) is z
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_transform_errors():
    for mod in (tracegrad, torch):
        T = mod.distributions.transforms
        with pytest.raises(AssertionError):
            T.CatTransform([T.ExpTransform()], lengths=[1, 2])
        with pytest.raises(AssertionError):
            T.CatTransform([T.ExpTransform(), T.ExpTransform()], dim=0)(mod.ones(3))
        with pytest.raises(AssertionError):
            T.StackTransform([T.ExpTransform()], dim=0)(mod.ones(2))
        with pytest.raises(ValueError):
            T.CorrCholeskyTransform().forward_shape((4,))
        with pytest.raises(ValueError):
            T.CorrCholeskyTransform().inverse_shape((2, 3))


# ----------------------------------------------------------------------------- Wishart, LKJCholesky

WISHART_COV = [[2.0, 0.5, 0.1], [0.5, 1.0, -0.2], [0.1, -0.2, 0.8]]


@pytest.mark.parametrize("kind", ["covariance_matrix", "scale_tril", "precision_matrix"])
def test_wishart_parity(kind):
    c = np.array(WISHART_COV, dtype=np.float32)
    mat = {"covariance_matrix": c, "scale_tril": np.linalg.cholesky(c), "precision_matrix": np.linalg.inv(c)}[kind]
    value = np.array([[3.0, 0.2, 0.4], [0.2, 2.0, 0.1], [0.4, 0.1, 1.5]], dtype=np.float32)

    def outputs(mod, d):
        return [d.log_prob(mod.tensor(value)), d.entropy(), d.mean, d.variance, d.mode, d.covariance_matrix,
                d.precision_matrix, d.scale_tril]
    _parity(lambda mod, df, m: mod.distributions.Wishart(df, **{kind: m}), {"df": [4.5, 6.0], "m": mat}, outputs,
            rtol=2e-4, atol=2e-4)


def test_wishart_sampling_and_errors():
    df = tracegrad.tensor(6.0, requires_grad=True)
    d = tracegrad.distributions.Wishart(df, tracegrad.tensor(WISHART_COV))
    tracegrad.manual_seed(0)
    s = d.rsample((4000,))
    assert tuple(s.shape) == (4000, 3, 3)
    np.testing.assert_allclose(s.detach().numpy().mean(0), d.mean.detach().numpy(), rtol=0.08, atol=0.08)
    s.mean().backward()             # reparameterised through the Chi2 draws
    assert np.isfinite(df.grad.numpy()) and df.grad.item() != 0
    _reproducible(d, s)
    assert isinstance(d, tracegrad.distributions.ExponentialFamily)
    e = d.expand((2,))
    assert tuple(e.batch_shape) == (2,) and tuple(e.mean.shape) == (2, 3, 3)
    for mod in (tracegrad, torch):
        D = mod.distributions
        with pytest.raises(AssertionError):
            D.Wishart(mod.tensor(5.0))
        with pytest.raises(ValueError):
            D.Wishart(mod.tensor(1.5), mod.eye(3))
        with pytest.raises(ValueError):
            D.Wishart(mod.tensor(5.0), mod.ones(3))
        with pytest.raises(ValueError):
            D.Wishart(mod.tensor(5.0), -mod.eye(2))


def test_lkj_cholesky():
    res = []
    for mod in (tracegrad, torch):
        conc = mod.tensor([0.5, 2.0], requires_grad=True)
        d = mod.distributions.LKJCholesky(3, conc)
        value = mod.distributions.transforms.CorrCholeskyTransform()(mod.tensor([0.3, -0.5, 0.2]))
        lp = d.log_prob(value)
        lp.sum().backward()
        res.append([lp.detach().numpy(), conc.grad.numpy()])
        assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == (3, 3)
        with pytest.raises(ValueError):
            mod.distributions.LKJCholesky(1)
        with pytest.raises(ValueError):
            mod.distributions.LKJCholesky(3, mod.tensor([-1.0]))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    d = tracegrad.distributions.LKJCholesky(3, 1.0)
    tracegrad.manual_seed(0)
    L = d.sample((4000,))
    _reproducible(d, L)
    assert bool(d.support.check(L).all())
    # the same statistics as torch's sampler (the same onion construction, other random numbers)
    torch.manual_seed(0)
    tl = torch.distributions.LKJCholesky(3, 1.0).sample((20000,))
    tcorr = (tl @ tl.mT).numpy()
    corr = (L @ L.mT).numpy()
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1, atol=1e-5)
    np.testing.assert_allclose(corr.var(0), tcorr.var(0), atol=0.03)
    np.testing.assert_allclose(corr.mean(0), tcorr.mean(0), atol=0.03)
    assert tuple(d.expand((2,)).batch_shape) == (2,)


def test_subclass_without_arg_constraints_warns():
    # robomimic's TanhWrappedDistribution subclasses Distribution, calls super().__init__() and
    # defines no arg_constraints: torch warns (UserWarning, its message), validates nothing, and
    # the base property (as repr, which reads it) raises NotImplementedError
    seen = []
    for mod in (torch, tracegrad):
        class Wrapped(mod.distributions.Distribution):
            def __init__(self, base, validate_args=None):
                self.base = base
                super().__init__(validate_args=validate_args)

        base = mod.distributions.Normal(mod.zeros(2), mod.ones(2))
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            d = Wrapped(base)
            Wrapped(base, validate_args=False)
        msgs = [(x.category, str(x.message).replace(str(Wrapped), "<cls>"), x.filename) for x in w]
        with pytest.raises(NotImplementedError):
            d.arg_constraints
        with pytest.raises(NotImplementedError):
            repr(d)
        seen.append((msgs, tuple(d.batch_shape), tuple(d.event_shape)))
    assert seen[0] == seen[1]
    assert len(seen[0][0]) == 1 and seen[0][0][0][2] == __file__, seen[0]
    # the families themselves still validate their arguments
    with pytest.raises(ValueError):
        tracegrad.distributions.Normal(tracegrad.zeros(1), -tracegrad.ones(1))
