"""``torch.memory_format`` and its values (``contiguous_format``, ``preserve_format``,
``channels_last``, ``channels_last_3d``), the objects torch's ``memory_format=`` arguments take.

tracegrad lays every new tensor out row-major (XLA picks the physical layout; views keep the
strides of what they view), so these name a request rather than change a layout: factories,
``*_like``, ``contiguous``, ``clone`` and ``to`` accept any of them and return row-major
results. Differs from torch: ``channels_last`` strides and the strides ``preserve_format``
would copy from a permuted input are not reproduced."""
from __future__ import annotations


class memory_format:
    """Mirrors ``torch.memory_format``: one of the module-level values below (compare with ``is``
    or ``==``); not constructible by users in torch either."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"tracegrad.{self._name}"

    def __reduce__(self):   # pickles as the module-level singleton
        return self._name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
