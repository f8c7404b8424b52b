"""Shared test setup: seeds, the ``jax_x64`` fixture, and torch at one thread
(torch's and JAX's thread pools fight on small machines and slow torch ops 50x)."""
import os

import numpy as np
import pytest
from hypothesis import settings

import tracegrad

try:
    import torch as _torch
    _torch.set_num_threads(1)
except ImportError:  # torch is an optional oracle
    _torch = None


# Property tests draw the same examples on every run (CI must not meet a new example by
# chance); HYPOTHESIS_PROFILE=explore draws fresh ones when hunting for bugs.
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def jax_x64():
    """JAX's x64 mode on for the test's own JAX code (a float64 ``jax.grad`` oracle, a
    hand-written ``jax.jit`` over tracegrad code). tracegrad turns x64 on only around its own
    calls (DESIGN 2.7), so a test's own JAX code opts in as a user would. Use with
    ``pytestmark = pytest.mark.usefixtures("jax_x64")``."""
    import jax
    with jax.enable_x64(True):
        yield


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    tracegrad.manual_seed(0)
    if _torch is not None:
        _torch.manual_seed(0)
    yield
