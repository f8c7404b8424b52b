"""``torch._utils`` helpers that programs and PyTorch's own tests call."""
from __future__ import annotations

from ._ops import dtypes as _dt


def _element_size(dtype) -> int:
    """Mirrors ``torch._utils._element_size``: bytes per element of ``dtype``."""
    return _dt.to_dtype(dtype).itemsize


def render_call(fn, args, kwargs) -> str:
    """Mirrors ``torch._utils.render_call``: ``fn(args..., key=value...)`` as text, ``fn`` by its
    torch name (``torch.sum``) and tensors printed without their elements
    (``tensor([...], size=(100,))``)."""
    from . import _tensor_str, overrides
    name = overrides.resolve_name(fn)
    if name is None:
        name = str(fn)
    with _tensor_str.printoptions(threshold=0, edgeitems=0):
        parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
        return f"{name}({', '.join(parts)})"
