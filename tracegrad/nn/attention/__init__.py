"""``tracegrad.nn.attention``: mirrors ``torch.nn.attention`` -- ``sdpa_kernel`` and ``SDPBackend``
(the backend choice of ``F.scaled_dot_product_attention``) and ``flex_attention``.

tracegrad has one attention implementation (XLA's, from the math formula), so choosing a
backend changes nothing about the result: ``sdpa_kernel`` validates its argument and records the
choice for the duration of the block (``current_backends()``), as torch's context manager."""
from __future__ import annotations

import contextlib
import enum

from ..._tensor.tensor import Tensor

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS", "can_use_flash_attention",
           "can_use_efficient_attention", "can_use_cudnn_attention", "SDPAParams"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """Mirrors ``torch.nn.attention.SDPBackend`` (same members and values)."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_ACTIVE = [tuple(SDPBackend)[1:]]


def current_backends() -> tuple:
    """The backends the innermost ``sdpa_kernel`` block allows (all of them outside one)."""
    return _ACTIVE[0]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Mirrors ``torch.nn.attention.sdpa_kernel(backends, set_priority=False)``: a context
    manager restricting ``scaled_dot_product_attention`` to ``backends`` (one ``SDPBackend`` or a
    list). Results are the same for every backend here (one XLA implementation), but on the CPU
    a call no allowed backend can run raises torch's RuntimeError (see
    ``scaled_dot_product_attention``). AssertionError, as torch, for anything but an SDPBackend
    or a list (a tuple or a set too); a list's other entries allow nothing, as in torch."""
    if isinstance(backends, SDPBackend):
        items = [backends]
    elif isinstance(backends, list):
        items = [b for b in backends if isinstance(b, SDPBackend)]
    else:
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    prev = _ACTIVE[0]
    _ACTIVE[0] = tuple(items)
    try:
        yield
    finally:
        _ACTIVE[0] = prev


class SDPAParams:
    """Mirrors ``torch.backends.cuda.SDPAParams`` (also ``torch.nn.attention.SDPAParams``): the
    arguments of one ``scaled_dot_product_attention`` call, as the ``can_use_*_attention``
    queries take them -- ``SDPAParams(query, key, value, attn_mask, dropout, is_causal,
    enable_gqa)``, all seven positional. The tensors are held as given (``params.query is q``);
    the fields are read-only. Raises TypeError, as torch's constructor, for another number of
    arguments or a non-tensor query/key/value, and when pickled (torch's is not picklable)."""

    __slots__ = ("_query", "_key", "_value", "_attn_mask", "_dropout", "_is_causal", "_enable_gqa")
    # returned by a compiled function, it is rebuilt per call around that call's tensors
    # (NOTE [returned objects] in result_objects.py)
    _tracegrad_result_object = True

    def __init__(self, query, key, value, attn_mask, dropout, is_causal, enable_gqa, *extra):
        if extra or not all(isinstance(t, Tensor) for t in (query, key, value)) \
                or not (attn_mask is None or isinstance(attn_mask, Tensor)):
            raise TypeError("SDPAParams(query, key, value, attn_mask, dropout, is_causal, enable_gqa): "
                            "query, key and value must be tensors, attn_mask a tensor or None")
        for name, v in (("query", query), ("key", key), ("value", value), ("attn_mask", attn_mask),
                        ("dropout", float(dropout)), ("is_causal", bool(is_causal)),
                        ("enable_gqa", bool(enable_gqa))):
            object.__setattr__(self, "_" + name, v)

    query = property(lambda self: self._query)
    key = property(lambda self: self._key)
    value = property(lambda self: self._value)
    attn_mask = property(lambda self: self._attn_mask)
    dropout = property(lambda self: self._dropout)
    is_causal = property(lambda self: self._is_causal)
    enable_gqa = property(lambda self: self._enable_gqa)

    def __setattr__(self, name, value):
        raise AttributeError(f"property of 'SDPAParams' object has no setter: {name!r} is read-only; "
                             "make a new SDPAParams")

    def __reduce_ex__(self, protocol):
        raise TypeError("cannot pickle 'SDPAParams' object (as torch's): pickle its tensors instead")


def can_use_flash_attention(params, debug: bool = False) -> bool:
    """Mirrors ``torch.nn.attention.can_use_flash_attention(params, debug=False)``: False --
    tracegrad has no fused CUDA kernel (attention is XLA's, from the math formula)."""
    return False


def can_use_efficient_attention(params, debug: bool = False) -> bool:
    """Mirrors ``torch.backends.cuda.can_use_efficient_attention``: False (no fused CUDA kernel)."""
    return False


def can_use_cudnn_attention(params, debug: bool = False) -> bool:
    """Mirrors ``torch.backends.cuda.can_use_cudnn_attention``: False (no cuDNN kernel)."""
    return False


def _cur_sdpa_kernel_backends() -> list:
    """Mirrors ``torch.nn.attention._cur_sdpa_kernel_backends()``: the backends the innermost
    ``sdpa_kernel`` block enables (all of them outside one), as a list in torch's fixed order
    (cuDNN, flash, efficient, math, overrideable) whatever order or priority the block gave."""
    on = set(current_backends())
    return [b for b in _TORCH_ORDER if b in on]


_TORCH_ORDER = (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                SDPBackend.MATH, SDPBackend.OVERRIDEABLE)
