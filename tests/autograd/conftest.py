"""Autograd tests: ``from _ag import ...`` (this folder is on sys.path) and ``from parity import
...`` (tests/parity.py, the one parity runner)."""
import pytest


@pytest.fixture(autouse=True)
def _restore_grad_mode():
    """A test that leaves grad mode off (a bug under test) must not break the next ones."""
    yield
    import tracegrad
    tracegrad.set_grad_enabled(True)
    try:
        import torch
        torch.set_grad_enabled(True)
    except ImportError:
        pass
