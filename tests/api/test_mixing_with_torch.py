"""A real PyTorch tensor and a tracegrad Tensor in one operation: PyTorch offers the tracegrad
Tensor to ``__torch_function__``, which declines (NotImplemented) instead of running torch's
function again (a RecursionError before), so torch raises its TypeError; tracegrad's own
operators raise TypeError for a torch tensor too."""
import pytest

import tracegrad

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("call", [
    lambda: torch.ones(2) - tracegrad.ones(2),
    lambda: torch.add(torch.ones(2), tracegrad.ones(2)),
    lambda: torch.nn.functional.relu(tracegrad.ones(2)),
    lambda: tracegrad.ones(2) + torch.ones(2),
], ids=["torch_operator", "torch_function", "torch_functional", "tracegrad_operator"])
def test_mixing_raises_type_error(call):
    with pytest.raises(TypeError):
        call()


def test_subclass_protocol_still_runs_tracegrad_functions():
    class Sub(tracegrad.Tensor):
        pass
    s = tracegrad.ones(2).as_subclass(Sub)
    assert type(s + 1) is Sub and type(tracegrad.add(s, 1)) is Sub
    assert (s + 1).tolist() == [2.0, 2.0]
