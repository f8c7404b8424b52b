"""Mirrors ``torch.nn.utils.convert_parameters``."""
from __future__ import annotations

import tracegrad
from tracegrad import Tensor, _state


def parameters_to_vector(parameters):
    """Mirrors ``torch.nn.utils.parameters_to_vector``: one 1-D tensor of all parameters (differentiable)."""
    # a Tensor is iterated (its rows), as torch
    flat = []
    for p in parameters:
        if not isinstance(p, Tensor):   # torch reads param.device first: AttributeError for anything else
            raise AttributeError(f"parameters_to_vector: expected an iterable of Tensors, got a "
                                 f"{type(p).__name__} (it has no tensor .device)")
        flat.append(p.view(-1))
    return tracegrad.cat(flat)


def vector_to_parameters(vec, parameters):
    """Mirrors ``torch.nn.utils.vector_to_parameters``: each parameter's ``.data`` becomes a view of
    its slice of ``vec`` (later writes to ``vec`` show in the parameters, as in torch). TypeError if
    vec is not a Tensor.

    Differs from torch inside a compiled step, for a ``vec`` the step made itself
    (``vector_to_parameters(v - lr * g, ...)``): each parameter gets a copy of its slice, a
    storage of its own, which the program carries from call to call (NOTE [.data set in a trace]
    in ``_lowering/region.py`` follows one new storage per tensor); values are the same, only the
    parameters' sharing of one storage is not."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    cap = _state.CAPTURE[0]
    own = cap is not None and cap.made_inside(vec)
    pointer = 0
    for p in parameters:
        n = p.numel()
        part = vec[pointer:pointer + n].view_as(p).data
        p.data = part.clone() if own else part
        pointer += n
