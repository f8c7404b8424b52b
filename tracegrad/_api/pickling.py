"""Pickling tensors (``pickle.dumps(t)``, ``multiprocessing`` queues), as torch's
``Tensor.__reduce_ex__``.

A tensor pickles as its storage (pickled once per pickle, by its numpy copy: ``Storage.__reduce__``)
plus its layout over it (storage offset, size, stride), so tensors pickled together that share a
storage -- a tensor and its views -- share one storage again after loading, as in torch.
``requires_grad`` is kept; the graph and ``.grad`` are not (a pickled non-leaf loads as a leaf),
as torch. Subclasses (``nn.Parameter``) come back as their class with their ``__dict__``.
"""
from __future__ import annotations

from .._tensor.tensor import Tensor, storage_offset_of, strides_of
from ..autograd._tensor_hooks import warn_if_has_hooks
from ..autograd.grad_mode import no_grad
from ._registry import method
from .strided import as_strided


def _rebuild_tensor(storage, offset, size, stride, requires_grad, cls, state):
    t = Tensor._make(storage.array)
    t._st = storage
    if (tuple(size), tuple(stride), offset) != (tuple(t.shape), strides_of(t), 0):
        with no_grad():
            t = as_strided(t, size, stride, offset)
        t._base = None
    if cls is not Tensor:
        t = cls(t, requires_grad) if _takes_requires_grad(cls) else _as_class(t, cls)
    t._set_requires_grad(requires_grad)
    if state:
        t.__dict__.update(state)
    return t


def _takes_requires_grad(cls):
    # nn.Parameter (and its subclasses) is built as ``cls(data, requires_grad)``, as torch rebuilds it
    return any(k.__name__ == "Parameter" and k.__module__.startswith("tracegrad.nn") for k in cls.__mro__)


def _as_class(t, cls):
    out = Tensor.__new__(cls)
    for slot in Tensor.__slots__:
        if not slot.startswith("__") and hasattr(t, slot):
            setattr(out, slot, getattr(t, slot))
    return out


@method("__reduce_ex__")
def reduce_ex(self, proto):
    """Mirrors ``torch.Tensor.__reduce_ex__``: the rebuild function and its arguments (see the
    module docstring). A view whose dtype differs from its storage's (``view(dtype)``, ``.real``)
    pickles as a contiguous copy. A UserWarning for each tensor hook (not pickled), as torch."""
    warn_if_has_hooks(self)
    src = self.detach()
    if src._value.dtype != src._st.array.dtype:
        src = src.clone()
    state = dict(self.__dict__) if hasattr(self, "__dict__") else None
    return (_rebuild_tensor, (src._st, storage_offset_of(src), tuple(src.shape), strides_of(src),
                              self.requires_grad, type(self), state))
