"""``tracegrad.nn.parallel._functions``: torch's multi-device autograd Functions, here ``Broadcast``.

tracegrad runs one process on one device, so there is nothing to broadcast to; the module exists
because code (torch's test_nn.py among it) imports ``Broadcast`` at module level. As in a
CPU-only torch, applying it to CPU tensors is an AssertionError."""
from __future__ import annotations

from ...autograd import Function


class Broadcast(Function):
    """Mirrors ``torch.nn.parallel._functions.Broadcast``: ``Broadcast.apply(target_gpus, *inputs)``
    gives one copy of ``inputs`` per target; its backward sums the copies' gradients."""

    @staticmethod
    def forward(ctx, target_gpus, *inputs):
        # torch's own check (its copy goes through the CUDA communication kernels).
        assert all(i.device.type != "cpu" for i in inputs), (
            "Broadcast function not implemented for CPU tensors")
        ctx.num_inputs = len(inputs)
        if not inputs:
            return ()
        return tuple(i.clone() for _ in target_gpus for i in inputs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        n = ctx.num_inputs
        grads = [None] * n
        for k, g in enumerate(grad_outputs):
            if g is not None:
                grads[k % n] = g if grads[k % n] is None else grads[k % n] + g
        return (None, *grads)
