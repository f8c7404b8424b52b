"""Shared test setup: x64 (tracegrad enables it at import), seeds, and torch at one thread
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


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    tracegrad.manual_seed(0)
    if _torch is not None:
        _torch.manual_seed(0)
    yield
