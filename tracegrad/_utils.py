"""``torch._utils`` helpers that programs and PyTorch's own tests call."""
from __future__ import annotations

from . import _state
from ._ops import dtypes as _dt
from ._ops.warn import warn as _warn


def is_compiling() -> bool:
    """Mirrors ``torch._utils.is_compiling`` (deprecated in torch, which warns): warns that
    ``tracegrad.compiler.is_compiling`` is the name to use and returns its answer (True while a
    compiled function is traced or runs its Python)."""
    _warn("`torch._utils.is_compiling` is deprecated. Use `torch.compiler.is_compiling` instead.")
    return _state.CAPTURE[0] is not None or _state.IN_COMPILED[0] > 0


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
