import pytest


@pytest.fixture
def torch_validate_args():
    """torch's distributions validate their arguments during the test (as tracegrad's do by
    default), so that both sides raise for the same bad parameters; restored afterwards."""
    torch = pytest.importorskip("torch")
    old = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(old)
