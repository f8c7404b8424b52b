"""``tracegrad.distributions``: mirrors ``torch.distributions`` -- ``Distribution``, ``Normal``,
``Categorical``, ``Bernoulli``, ``Uniform``, ``Exponential``, ``Laplace``, ``Gamma``, ``Dirichlet``, ``Beta``, ``Independent``, ``MultivariateNormal``, ``OneHotCategorical``,
``Cauchy``, ``Poisson``, ``ExponentialFamily``, ``OneHotCategoricalStraightThrough``,
``LowRankMultivariateNormal``, ``VonMises``, ``ContinuousBernoulli``, ``Kumaraswamy``, ``LogisticNormal``,
``FisherSnedecor``, ``GeneralizedPareto``, ``Wishart``, ``LKJCholesky``, ``Geometric``, ``Binomial``, ``Chi2``, ``StudentT``, ``TransformedDistribution`` with
``LogNormal``/``HalfNormal``/``HalfCauchy``/``Gumbel``/``Pareto``/``Weibull``/``InverseGamma``/
``RelaxedBernoulli``/``RelaxedOneHotCategorical``, ``Multinomial``, ``NegativeBinomial``, ``MixtureSameFamily``,
the ``transforms`` (``ExpTransform``, ``AffineTransform``,
``SigmoidTransform``, ...) with ``biject_to``/``transform_to``, ``kl_divergence``/``register_kl`` and ``constraints``. Written against tracegrad's own API (no JAX here): sampling draws from
tracegrad's generator (reproducible under ``tracegrad.manual_seed``, different numbers from
torch's), and log-probabilities, entropies and reparameterised samples are differentiable."""
from . import constraints  # noqa: F401
from . import transforms  # noqa: F401
from .constraint_registry import biject_to, transform_to
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Binomial, Geometric
from .gumbel import Gumbel
from .independent import Independent
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import HalfCauchy, HalfNormal, LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial, NegativeBinomial
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import InverseGamma, Pareto, Weibull
from .poisson import Poisson
from .relaxed import ExpRelaxedCategorical, LogitRelaxedBernoulli, RelaxedBernoulli, RelaxedOneHotCategorical
from .student_t import Chi2, StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import (AbsTransform, AffineTransform, CatTransform, ComposeTransform, CorrCholeskyTransform,
                         CumulativeDistributionTransform, ExpTransform, IndependentTransform,
                         PositiveDefiniteTransform, StackTransform,
                         LowerCholeskyTransform, PowerTransform, ReshapeTransform, SigmoidTransform, SoftmaxTransform,
                         SoftplusTransform, StickBreakingTransform, TanhTransform, Transform, identity_transform)
from .uniform import Uniform
from .von_mises import VonMises
from .wishart import Wishart

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform", "Categorical", "Cauchy", "Chi2",
           "ComposeTransform", "ContinuousBernoulli", "CorrCholeskyTransform", "CumulativeDistributionTransform", "Dirichlet", "Distribution", "ExpRelaxedCategorical", "ExpTransform",
           "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
           "IndependentTransform", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal", "LogitRelaxedBernoulli",
           "LowRankMultivariateNormal", "LowerCholeskyTransform", "MixtureSameFamily", "Multinomial", "MultivariateNormal",
           "NegativeBinomial", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "PositiveDefiniteTransform", "PowerTransform",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform",
           "SoftmaxTransform", "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT", "TanhTransform",
           "Transform", "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "biject_to", "constraints",
           "kl_divergence", "register_kl", "identity_transform", "transform_to", "transforms"]


def _module_aliases():
    """torch's one-module-per-distribution paths (``from torch.distributions.studentT import
    StudentT``) for the classes that share a module here: each is a module in ``sys.modules``
    holding that class."""
    import sys
    import types
    paths = {"binomial": ["Binomial"], "chi2": ["Chi2"], "half_cauchy": ["HalfCauchy"], "half_normal": ["HalfNormal"],
             "inverse_gamma": ["InverseGamma"], "negative_binomial": ["NegativeBinomial"],
             "relaxed_bernoulli": ["LogitRelaxedBernoulli", "RelaxedBernoulli"],
             "relaxed_categorical": ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"],
             "studentT": ["StudentT"], "weibull": ["Weibull"]}
    for path, names in paths.items():
        mod = types.ModuleType(f"{__name__}.{path}", f"Mirrors ``torch.distributions.{path}``.")
        for n in names:
            setattr(mod, n, globals()[n])
        mod.__all__ = list(names)
        sys.modules[mod.__name__] = mod
        globals()[path] = mod


_module_aliases()
del _module_aliases
