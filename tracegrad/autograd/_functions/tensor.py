"""``Resize``: mirrors ``torch.autograd._functions.tensor.Resize`` (a Function, so its grad_fn is
``ResizeBackward``)."""
from __future__ import annotations

import math

from ..function import Function


class Resize(Function):
    """``Resize.apply(tensor, sizes)``: ``tensor`` reshaped to ``sizes`` (same number of
    elements; RuntimeError naming both otherwise). Backward reshapes the gradient back."""

    @staticmethod
    def forward(ctx, tensor, sizes):
        ctx.sizes = tuple(sizes)
        ctx.numel = math.prod(ctx.sizes)
        if tensor.numel() != ctx.numel:
            raise RuntimeError(
                f"requested resize to {'x'.join(map(str, ctx.sizes))} ({ctx.numel} elements in total), "
                f"but the given tensor has a size of {'x'.join(map(str, tensor.size()))} "
                f"({tensor.numel()} elements). autograd's resize can only change the shape of a given "
                "tensor, while preserving the number of elements. ")
        ctx.input_sizes = tensor.size()
        return tensor.contiguous().view(*ctx.sizes).clone()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.contiguous().view(ctx.input_sizes), None
