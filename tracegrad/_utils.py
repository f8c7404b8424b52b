"""``torch._utils`` helpers that programs and PyTorch's own tests call."""
from __future__ import annotations

from ._ops import dtypes as _dt


def _element_size(dtype) -> int:
    """Mirrors ``torch._utils._element_size``: bytes per element of ``dtype``."""
    return _dt.to_dtype(dtype).itemsize
