"""Shared by the ported distributions tests."""
import pytest

import tracegrad

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def validation_on():
    """torch's default is validate_args=True, but the first torch.compile in the process (any
    earlier test) turns it off globally (torch._dynamo's patch_torch): compare both with it on."""
    olds = [lib.distributions.Distribution._validate_args for lib in (torch, tracegrad)]
    for lib in (torch, tracegrad):
        lib.distributions.Distribution.set_default_validate_args(True)
    yield
    for lib, old in zip((torch, tracegrad), olds):
        lib.distributions.Distribution.set_default_validate_args(old)
