"""Mirrors ``torch.utils._foreach_utils``, which copies of torch's optimizer sources import:
the device types of torch's foreach and fused kernels, and grouping tensor lists by
(device, dtype) before a multi-tensor update. tracegrad runs every path through XLA with the
same values; these answer the questions the copied code asks."""
from __future__ import annotations

from typing import TypeAlias

from .. import Tensor, no_grad

TensorListList: TypeAlias = "list[list[Tensor | None]]"
Indices: TypeAlias = "list[int]"
_foreach_supported_types = [Tensor]


def _get_foreach_kernels_supported_devices() -> list[str]:
    """Mirrors ``torch.utils._foreach_utils._get_foreach_kernels_supported_devices``: the device
    types torch's optimizers default to foreach on (not CPU)."""
    return ["cuda", "xpu", "mtia", "privateuseone"]


def _get_fused_kernels_supported_devices() -> list[str]:
    """Mirrors ``torch.utils._foreach_utils._get_fused_kernels_supported_devices``: the device
    types that accept ``fused=True``."""
    return ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", "privateuseone"]


def _group_tensors_by_device_and_dtype(tensorlistlist, with_indices: bool = False):
    """Mirrors ``torch.utils._foreach_utils._group_tensors_by_device_and_dtype``: splits
    parallel tensor lists by the (device, dtype) of the first list's tensors. Returns a dict
    ``{(device, dtype): (lists, indices)}``: ``lists`` has one sub-list per input list, holding
    the entries (tensors themselves, or None) at that group's positions; ``indices`` are those
    positions when ``with_indices``, else ``[]``. Groups come in order of first appearance; a
    later list may be empty (its sub-lists stay empty). RuntimeError, as torch, for an empty
    first list or a later list of another non-zero length."""
    if not tensorlistlist or not tensorlistlist[0]:
        raise RuntimeError("_group_tensors_by_device_and_dtype: the first tensor list must not be empty")
    n = len(tensorlistlist[0])
    if any(len(lst) not in (n, 0) for lst in tensorlistlist):
        raise RuntimeError("_group_tensors_by_device_and_dtype: every tensor list must have the first list's "
                           f"length or be empty, got lengths {[len(lst) for lst in tensorlistlist]}")
    groups: dict = {}
    with no_grad():
        for i, t in enumerate(tensorlistlist[0]):
            lists, indices = groups.setdefault((t.device, t.dtype), ([[] for _ in tensorlistlist], []))
            for out, lst in zip(lists, tensorlistlist):
                if lst:
                    out.append(lst[i])
            if with_indices:
                indices.append(i)
    return groups


def _device_has_foreach_support(device) -> bool:
    """Mirrors ``torch.utils._foreach_utils._device_has_foreach_support``: True for the foreach
    device types and CPU."""
    return device.type in (_get_foreach_kernels_supported_devices() + ["cpu"])


def _has_foreach_support(tensors, device) -> bool:
    """Mirrors ``torch.utils._foreach_utils._has_foreach_support``: the device supports foreach
    and every tensor (None allowed) is a plain Tensor."""
    return _device_has_foreach_support(device) and all(t is None or type(t) in _foreach_supported_types
                                                       for t in tensors)
