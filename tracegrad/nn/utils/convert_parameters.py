"""Mirrors ``torch.nn.utils.convert_parameters``."""
from __future__ import annotations

import tracegrad
from tracegrad import Tensor


def parameters_to_vector(parameters):
    """Mirrors ``torch.nn.utils.parameters_to_vector``: one 1-D tensor of all parameters (differentiable)."""
    # a Tensor is iterated (its rows), as torch
    return tracegrad.cat([p.view(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Mirrors ``torch.nn.utils.vector_to_parameters``: each parameter's ``.data`` becomes a view of
    its slice of ``vec`` (later writes to ``vec`` show in the parameters, as in torch). TypeError if
    vec is not a Tensor."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for p in parameters:
        n = p.numel()
        p.data = vec[pointer:pointer + n].view_as(p).data
        pointer += n
