"""``torch._prims_common``'s layout helper that programs call: ``suggest_memory_format``
(``_tensor/memory_format.py`` holds the rule)."""
from __future__ import annotations

from ._tensor.memory_format import suggest_memory_format as suggest_memory_format

__all__ = ["suggest_memory_format"]
