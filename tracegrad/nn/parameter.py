"""``nn.Parameter`` and ``nn.Buffer``: mirror ``torch.nn.parameter``."""
from __future__ import annotations

import tracegrad
from tracegrad import Tensor


class Parameter(Tensor):
    """Mirrors ``torch.nn.Parameter``: a Tensor that a Module registers as a parameter when it is
    assigned as an attribute. ``Parameter(data)`` shares ``data``'s storage and version counter
    (as ``torch.Tensor._make_subclass``); ``requires_grad`` defaults to True. ``data=None`` gives
    an empty float tensor. Results of ops on a Parameter are plain Tensors. ``data`` may be a
    non-leaf (it is detached). Raises TypeError when ``data`` is not a Tensor and RuntimeError,
    as torch, for ``requires_grad=True`` on an integer or bool tensor."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = tracegrad.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        if requires_grad and not (data.dtype.is_floating_point or data.dtype.is_complex):
            raise RuntimeError(f"Parameter(): Only Tensors of floating point and complex dtype can require gradients "
                               f"(got {data.dtype}); pass requires_grad=False or convert with .float()")
        self = Tensor.__new__(cls)
        src = data.detach()
        self._st, self._chain, self._vc = src._st, src._chain, src._vc
        self._vcache, self._vgen = src._vcache, src._vgen
        self._rg = bool(requires_grad)
        return self

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            result.grad = self.grad.detach().clone()
        result.__dict__.update({k: v for k, v in self.__dict__.items()})
        memo[id(self)] = result
        return result


class Buffer(Tensor):
    """Mirrors ``torch.nn.Buffer``: marks a tensor to be registered as a buffer on assignment.
    ``Buffer(data, persistent=True)`` shares ``data``'s storage."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = tracegrad.empty(0)
        self = Tensor.__new__(cls)
        src = data.detach()
        self._st, self._chain, self._vc = src._st, src._chain, src._vc
        self._vcache, self._vgen = src._vcache, src._vgen
        self.persistent = persistent
        return self

    def __init__(self, data=None, *, persistent=True):
        pass


def is_lazy(param) -> bool:
    return False
