"""``tracegrad.distributions``: mirrors ``torch.distributions`` -- ``Distribution``, ``Normal``,
``Categorical``, ``Bernoulli``, ``Uniform``, ``Exponential``, ``Laplace``, ``Gamma``, ``Dirichlet``, ``Beta``, ``Independent``, ``MultivariateNormal``, ``OneHotCategorical``, ``kl_divergence``/``register_kl`` and
``constraints``. Written against tracegrad's own API (no JAX here): sampling draws from
tracegrad's generator (reproducible under ``tracegrad.manual_seed``, different numbers from
torch's), and log-probabilities, entropies and reparameterised samples are differentiable."""
from . import constraints  # noqa: F401
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "Exponential", "Gamma", "Independent", "Laplace", "MultivariateNormal", "Normal",
           "OneHotCategorical", "Uniform", "constraints", "kl_divergence", "register_kl"]
