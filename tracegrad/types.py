"""``tracegrad.types``: mirrors ``torch.types``, the type aliases programs annotate with
(``Number``, ``Device``, ``_dtype``, ``_size``...)."""
from __future__ import annotations

from typing import Union

from ._ops.dtypes import dtype as _dtype
from ._tensor.device import device as _device
from ._tensor.tensor import Size as _size
from ._tensor.tensor import Tensor

__all__ = ["Number", "Device", "Storage", "_dtype", "_device", "_size", "_int", "_float", "_bool", "_complex",
           "FileLike", "IntLikeType", "FloatLikeType", "BoolLikeType", "TensorOrTensors",
           "_TensorOrTensors"]

_int, _float, _bool, _complex = int, float, bool, complex
Number = Union[int, float, bool]
Device = Union[_device, str, int, None]
IntLikeType = int
FloatLikeType = float
BoolLikeType = bool
TensorOrTensors = Union[Tensor, tuple]
_TensorOrTensors = TensorOrTensors  # torch.types spells it with the underscore too
FileLike = Union[str, "object"]


class Storage:
    """The ``torch.types.Storage`` protocol (``tracegrad.UntypedStorage`` satisfies it)."""
