"""Conformance tests: PyTorch's own tests (test/test_autograd.py, test/autograd/,
test/nn/test_module_hooks.py, test/test_optim.py) ported to run on tracegrad, each naming the
original in a comment. Most run the same body once with torch and once with tracegrad (the
``T`` fixture), so torch itself checks every expectation the port makes."""
import pytest

import tracegrad

torch = pytest.importorskip("torch")


@pytest.fixture(params=["torch", "tracegrad"])
def T(request):
    """The library under test: torch (the oracle: the port must hold there too) or tracegrad."""
    return torch if request.param == "torch" else tracegrad
