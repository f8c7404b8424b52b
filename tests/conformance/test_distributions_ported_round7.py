"""Round 7 port of PyTorch's test/distributions/test_distributions.py (TestDistributionShapes):
batch/event shapes, sample shapes and log_prob's broadcasting (or its ValueError for a value
whose shape does not broadcast) for scalar and tensor parameters, plus
test_load_state_dict_BC from test/nn/test_load_state_dict.py. Each body runs under torch
2.13 (the oracle) and tracegrad (the ``T`` fixture). Samples are checked for shape only (the
random streams differ); log_prob values are in each support (``fill``). validate_args is passed
explicitly: torch's global default is switched off by the first torch.compile in a process."""
import pytest

V = dict(validate_args=True)

# name: (constructor, batch shape, event shape, fill value in the support,
#        {value shape: log_prob shape or ValueError})
SHAPES = {
    "bernoulli_scalar": (lambda T: T.distributions.Bernoulli(0.3, **V), (), (), 1.0,
                         {(3, 2): (3, 2), (3, 2, 3): (3, 2, 3)}),
    "bernoulli_tensor": (lambda T: T.distributions.Bernoulli(T.tensor([[0.6, 0.3]] * 3), **V), (3, 2), (), 1.0,
                         {(3, 2): (3, 2), (3, 2, 3): ValueError, (3, 1, 1): (3, 3, 2)}),
    "geometric_scalar": (lambda T: T.distributions.Geometric(0.3, **V), (), (), 1.0,
                         {(3, 2): (3, 2), (3, 2, 3): (3, 2, 3)}),
    "geometric_tensor": (lambda T: T.distributions.Geometric(T.tensor([[0.6, 0.3]] * 3), **V), (3, 2), (), 1.0,
                         {(3, 2): (3, 2), (3, 2, 3): ValueError, (3, 1, 1): (3, 3, 2)}),
    "beta_scalar": (lambda T: T.distributions.Beta(0.1, 0.1, **V), (), (), 0.5,
                    {(3, 2): (3, 2), (3, 2, 3): (3, 2, 3)}),
    "beta_tensor": (lambda T: T.distributions.Beta(T.tensor([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]),
                                                   T.tensor([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]), **V),
                    (3, 2), (), 0.5, {(3, 2): (3, 2), (3, 2, 3): ValueError, (3, 1, 1): (3, 3, 2)}),
    "binomial": (lambda T: T.distributions.Binomial(10, T.tensor([0.6, 0.3]), **V), (2,), (), 1.0,
                 {(3, 2): (3, 2), (3, 2, 3): ValueError}),
    "multinomial": (lambda T: T.distributions.Multinomial(10, T.tensor([[0.6, 0.3]] * 3), **V), (3,), (2,), 5.0,
                    {(3, 2): (3,), (3, 2, 3): ValueError, (3, 1, 2): (3, 3)}),
    "categorical": (lambda T: T.distributions.Categorical(T.tensor([[0.6, 0.3]] * 3), **V), (3,), (), 1.0,
                    {(3, 2): ValueError, (3, 2, 3): (3, 2, 3), (3, 1): (3, 3)}),
    "one_hot_categorical": (lambda T: T.distributions.OneHotCategorical(T.tensor([[0.6, 0.3]] * 3), **V),
                            (3,), (2,), None, {(3, 2): (3,), (3, 2, 3): ValueError, (3, 1, 2): (3, 3)}),
    "cauchy_scalar": (lambda T: T.distributions.Cauchy(0., 1., **V), (), (), 1.0,
                      {(3, 2): (3, 2), (3, 2, 3): (3, 2, 3)}),
    "cauchy_tensor": (lambda T: T.distributions.Cauchy(T.tensor([0., 0.]), T.tensor([1., 1.]), **V), (2,), (),
                      1.0, {(3, 2): (3, 2), (3, 2, 3): ValueError, (2, 1): (2, 2)}),
    "dirichlet": (lambda T: T.distributions.Dirichlet(T.tensor([[0.6, 0.3], [1.6, 1.3], [2.6, 2.3]]), **V),
                  (3,), (2,), 0.5, {(3, 2): (3,), (3, 2, 3): ValueError, (3, 1, 2): (3, 3)}),
    "gamma_scalar": (lambda T: T.distributions.Gamma(1., 1., **V), (), (), 1.0,
                     {(3, 2): (3, 2), (3, 2, 3): (3, 2, 3)}),
    "gamma_tensor": (lambda T: T.distributions.Gamma(T.tensor([1., 1.]), T.tensor([1., 1.]), **V), (2,), (), 1.0,
                     {(3, 2): (3, 2), (3, 2, 3): ValueError, (2, 1): (2, 2)}),
    "chi2_scalar": (lambda T: T.distributions.Chi2(1., **V), (), (), 1.0, {(3, 2): (3, 2), (3, 2, 3): (3, 2, 3)}),
    "chi2_tensor": (lambda T: T.distributions.Chi2(T.tensor([1., 1.]), **V), (2,), (), 1.0,
                    {(3, 2): (3, 2), (3, 2, 3): ValueError, (2, 1): (2, 2)}),
    "studentT_scalar": (lambda T: T.distributions.StudentT(1., **V), (), (), 1.0,
                        {(3, 2): (3, 2), (3, 2, 3): (3, 2, 3)}),
    "studentT_tensor": (lambda T: T.distributions.StudentT(T.tensor([1., 1.]), **V), (2,), (), 1.0,
                        {(3, 2): (3, 2), (3, 2, 3): ValueError, (2, 1): (2, 2)}),
    "pareto_scalar": (lambda T: T.distributions.Pareto(1., 1., **V), (), (), 1.0,
                      {(3, 2): (3, 2), (3, 2, 3): (3, 2, 3)}),
    "normal_scalar": (lambda T: T.distributions.Normal(0., 1., **V), (), (), 1.0,
                      {(3, 2): (3, 2), (3, 2, 3): (3, 2, 3)}),
    "normal_tensor": (lambda T: T.distributions.Normal(T.tensor([0., 0.]), T.tensor([1., 1.]), **V), (2,), (),
                      1.0, {(3, 2): (3, 2), (3, 2, 3): ValueError, (2, 1): (2, 2)}),
    "uniform_scalar": (lambda T: T.distributions.Uniform(0., 1., **V), (), (), 0.5,
                       {(3, 2): (3, 2), (3, 2, 3): (3, 2, 3)}),
    "uniform_tensor": (lambda T: T.distributions.Uniform(T.tensor([0., 0.]), T.tensor([1., 1.]), **V), (2,), (),
                       0.5, {(3, 2): (3, 2), (3, 2, 3): ValueError, (2, 1): (2, 2)}),
    "exponential_scalar": (lambda T: T.distributions.Exponential(1., **V), (), (), 1.0,
                           {(3, 2): (3, 2), (3, 2, 3): (3, 2, 3)}),
    "exponential_tensor": (lambda T: T.distributions.Exponential(T.tensor([1., 1.]), **V), (2,), (), 1.0,
                           {(3, 2): (3, 2), (3, 2, 3): ValueError, (2, 1): (2, 2)}),
    "laplace_scalar": (lambda T: T.distributions.Laplace(0., 1., **V), (), (), 1.0,
                       {(3, 2): (3, 2), (3, 2, 3): (3, 2, 3)}),
    "laplace_tensor": (lambda T: T.distributions.Laplace(T.tensor([0., 0.]), T.tensor([1., 1.]), **V), (2,), (),
                       1.0, {(3, 2): (3, 2), (3, 2, 3): ValueError, (2, 1): (2, 2)}),
    "poisson_scalar": (lambda T: T.distributions.Poisson(2.0, **V), (), (), 1.0,
                       {(3, 2): (3, 2), (3, 2, 3): (3, 2, 3)}),
    "poisson_tensor": (lambda T: T.distributions.Poisson(T.tensor([2.0, 1.0]), **V), (2,), (), 1.0,
                       {(3, 2): (3, 2), (3, 2, 3): ValueError, (2, 1): (2, 2)}),
    "continuous_bernoulli_scalar": (lambda T: T.distributions.ContinuousBernoulli(0.3, **V), (), (), 0.5,
                                    {(3, 2): (3, 2), (3, 2, 3): (3, 2, 3)}),
    "mvn": (lambda T: T.distributions.MultivariateNormal(T.zeros(3, 2), T.eye(2), **V), (3,), (2,), 0.5,
            {(3, 2): (3,), (3, 2, 3): ValueError, (4, 1, 2): (4, 3)}),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_distribution_shapes(T, name):
    # TestDistributionShapes.test_<dist>_shape_scalar_params / _tensor_params / test_binomial_shape /
    # test_multinomial_shape / test_categorical_shape / test_one_hot_categorical_shape /
    # test_dirichlet_shape / test_mixture_same_family_shape ...
    make, batch, event, fill, log_prob_shapes = SHAPES[name]
    d = make(T)
    assert tuple(d.batch_shape) == batch and tuple(d.event_shape) == event
    assert tuple(d.sample().shape) == batch + event
    assert tuple(d.sample((3, 2)).shape) == (3, 2) + batch + event
    assert tuple(d.rsample((2,)).shape) == (2,) + batch + event if d.has_rsample else True
    if fill is not None and not name.startswith(("gamma", "chi2")):
        # a Python number is not a Tensor (Gamma and Chi2 convert the value first, as torch)
        with pytest.raises(ValueError):
            d.log_prob(1)
    for shape, expected in log_prob_shapes.items():
        if fill is None:    # one-hot values: the first category
            value = T.zeros(shape)
            value[..., 0] = 1
        else:
            value = T.full(shape, fill)
        if expected is ValueError:
            with pytest.raises(ValueError):
                d.log_prob(value)
        else:
            assert tuple(d.log_prob(value).shape) == expected


@pytest.mark.parametrize("name", ["bernoulli_tensor", "beta_tensor", "normal_tensor", "gamma_tensor",
                                  "dirichlet", "categorical", "mvn", "uniform_tensor", "laplace_scalar"])
def test_entropy_shape(T, name):
    # TestDistributionShapes.test_entropy_shape: entropy() has the batch shape
    d = SHAPES[name][0](T)
    assert tuple(d.entropy().shape) == tuple(d.batch_shape)


def test_load_state_dict_BC(T):
    # TestLoadStateDict.test_load_state_dict_BC: a BatchNorm state dict from before
    # num_batches_tracked (version 1, or no version) loads with the counter at 0 (int64)
    bn = T.nn.BatchNorm2d(3)
    sd = bn.state_dict()
    del sd["num_batches_tracked"]
    sd._metadata[""]["version"] = 1
    bn.load_state_dict(sd)
    assert bn.num_batches_tracked.dtype == T.long and bn.num_batches_tracked.item() == 0
    del sd._metadata[""]["version"]
    bn.load_state_dict(sd)
    assert bn.num_batches_tracked.dtype == T.long and bn.num_batches_tracked.item() == 0
