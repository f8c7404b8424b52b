"""torch.distributions' per-distribution module paths import in tracegrad with the same names."""
import importlib

import pytest

torch = pytest.importorskip("torch")

PATHS = ["bernoulli", "beta", "binomial", "categorical", "cauchy", "chi2", "dirichlet", "exponential", "gamma",
         "geometric", "gumbel", "half_cauchy", "half_normal", "independent", "inverse_gamma", "laplace",
         "log_normal", "multinomial", "multivariate_normal", "negative_binomial", "normal", "one_hot_categorical",
         "pareto", "poisson", "relaxed_bernoulli", "relaxed_categorical", "studentT", "transformed_distribution",
         "uniform", "von_mises", "weibull", "wishart", "kl", "constraints", "transforms"]


@pytest.mark.parametrize("path", PATHS)
def test_module_path_holds_torchs_public_names(path):
    theirs = importlib.import_module(f"torch.distributions.{path}")
    ours = importlib.import_module(f"tracegrad.distributions.{path}")
    names = getattr(theirs, "__all__", None) or [n for n in dir(theirs) if n[:1].isupper()]
    missing = [n for n in names if not hasattr(ours, n)]
    assert not missing, f"tracegrad.distributions.{path} lacks {missing}"


def test_aliased_module_classes_are_the_package_classes():
    from tracegrad import distributions as D
    from tracegrad.distributions.studentT import StudentT
    from tracegrad.distributions.relaxed_categorical import RelaxedOneHotCategorical
    assert StudentT is D.StudentT and RelaxedOneHotCategorical is D.RelaxedOneHotCategorical
    d = StudentT(torch_df := 3.0)
    assert d.df.item() == torch_df
