"""Shared test setup: x64 (tracegrad enables it at import), seeds, and torch at one thread
(torch's and JAX's thread pools fight on small machines and slow torch ops 50x)."""
import numpy as np
import pytest

import tracegrad

try:
    import torch as _torch
    _torch.set_num_threads(1)
except ImportError:  # torch is an optional oracle
    _torch = None


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    tracegrad.manual_seed(0)
    if _torch is not None:
        _torch.manual_seed(0)
    yield
