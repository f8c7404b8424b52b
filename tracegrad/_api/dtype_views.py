"""``Tensor.view(dtype)``: the same bytes read as another dtype (the op is ``view_dtype`` in
``_ops/strided.py``). Its own module so that the shape family can call it without importing the
in-place family (which imports the shape family)."""
from __future__ import annotations

from ..autograd._dispatch import apply_op
from .._ops import dtypes as _dt
from .._ops.registry import OPS
from .._tensor.tensor import storage_offset_of, strides_of
from .complex_api import is_conj, is_neg
from .promotion import _SCALAR_NAME


def view_dtype(self, dtype):
    """``Tensor.view(dtype)``: the same bytes read as ``dtype``; the last dim scales by the ratio
    of the element sizes. Not differentiable (no history, ``requires_grad`` False, as torch);
    writes through it reach self. RuntimeError, as torch, for a conjugate view, or (element sizes
    differing) a 0-dim tensor, a last dim with stride != 1, or a wider dtype whose ratio does
    not divide the last size, the storage offset and the other strides. As torch 2.13, the
    result shares self's storage but is no view for autograd (``_is_view()`` False, like
    ``detach()``)."""
    d = _dt.to_dtype(dtype)
    if is_conj(self):
        raise RuntimeError("view(dtype) is not supported for conjugate view tensors; call resolve_conj() first")
    if is_neg(self):    # the storage holds the un-negated values: torch refuses too
        raise RuntimeError("view(dtype) is not supported for tensors with negative bit set; call resolve_neg() first")
    a, b = self._value.dtype.itemsize, d.itemsize
    if a != b:
        how = f"to view {_SCALAR_NAME[self.dtype.name]} as {_SCALAR_NAME[d.name]} (different element sizes)"
        if self.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {how}")
        strides = strides_of(self)
        r = b // a
        if b > a:   # torch checks the last size and the offset before the last stride
            for what, v in [("self.size(-1)", self.shape[-1]), ("self.storage_offset()", storage_offset_of(self))]:
                if v % r:
                    raise RuntimeError(f"{what} must be divisible by {r} {how}, but got {v}")
        if strides[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {how}, but got {strides[-1]}")
        if b > a:
            for i, v in enumerate(strides[:-1]):
                if v % r:
                    raise RuntimeError(f"self.stride({i}) must be divisible by {r} {how}, but got {v}")
    out = apply_op(OPS["view_dtype"], (self,), (("dtype", d.np), ("src", self._value.dtype)))
    out._base, out._rg = None, False
    out.__dict__.pop("_cmeta", None)
    return out
