"""Mirrors ``torch.backends.cuda``: ``matmul.allow_tf32`` is tied to
``tracegrad.set_float32_matmul_precision`` ('high' when True, 'highest' when False), which sets
JAX's default matmul precision; the reduced-precision reduction flags are stored only."""
import contextlib

from .._tensor import runtime as _runtime
from .._tensor.device import cuda_devices
from .._tensor.tensor import Tensor
from ._flags import flag_properties
from .._ops.warn import warn as _warn


class _MatmulFlags:
    """``torch.backends.cuda.matmul``."""

    @property
    def allow_tf32(self) -> bool:
        return _runtime.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value) -> None:
        _runtime.set_float32_matmul_precision("high" if value else "highest")


# seen by compiled functions that set or read them (NOTE [settings flags]); ``allow_tf32`` is the
# matmul precision, a global setting of its own
for _k, _p in flag_properties({"allow_fp16_reduced_precision_reduction": True,
                               "allow_bf16_reduced_precision_reduction": True}).items():
    setattr(_MatmulFlags, _k, _p)
matmul = _MatmulFlags()


def is_built() -> bool:
    """Mirrors ``torch.backends.cuda.is_built``: True when JAX has a GPU backend."""
    return bool(cuda_devices())


def is_flash_attention_available() -> bool:
    return False


def flash_sdp_enabled() -> bool:
    """Fused attention kernels are XLA's choice: reported off, math on."""
    return False


mem_efficient_sdp_enabled = cudnn_sdp_enabled = flash_sdp_enabled


def math_sdp_enabled() -> bool:
    return True


def enable_flash_sdp(enabled: bool) -> None:
    """Accepted: attention runs as XLA decides."""


enable_mem_efficient_sdp = enable_math_sdp = enable_cudnn_sdp = enable_flash_sdp


class SDPAParams:
    """Mirrors ``torch.backends.cuda.SDPAParams`` (also ``torch.nn.attention.SDPAParams``): the
    arguments of one ``scaled_dot_product_attention`` call, as the ``can_use_*_attention``
    queries take them -- ``SDPAParams(query, key, value, attn_mask, dropout, is_causal,
    enable_gqa)``, all seven positional. The tensors are held as given (``params.query is q``);
    the fields are read-only. Raises TypeError, as torch's constructor, for another number of
    arguments or a non-tensor query/key/value, and when pickled (torch's is not picklable)."""

    __slots__ = ("_query", "_key", "_value", "_attn_mask", "_dropout", "_is_causal", "_enable_gqa")
    # returned by a compiled function, it is rebuilt per call around that call's tensors
    # (NOTE [returned objects] in _lowering/result_objects.py)
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
    """Mirrors ``torch.backends.cuda.can_use_flash_attention(params, debug=False)``: False --
    tracegrad has no fused CUDA kernel (attention is XLA's, from the math formula)."""
    return False


def can_use_efficient_attention(params, debug: bool = False) -> bool:
    """Mirrors ``torch.backends.cuda.can_use_efficient_attention``: False (no fused CUDA kernel)."""
    return False


def can_use_cudnn_attention(params, debug: bool = False) -> bool:
    """Mirrors ``torch.backends.cuda.can_use_cudnn_attention``: False (no cuDNN kernel)."""
    return False


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True):
    """Mirrors ``torch.backends.cuda.sdp_kernel`` (deprecated in torch, with the same
    FutureWarning): a context manager allowing the enabled ``scaled_dot_product_attention``
    backends, i.e. ``torch.nn.attention.sdpa_kernel`` of their ``SDPBackend`` members. Results
    are the same for every backend here (one XLA implementation)."""
    _warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will "
          "be removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with "
          "updated signature.", FutureWarning)
    from ..nn.attention import SDPBackend, sdpa_kernel   # lazily: importing backends stays free of nn
    chosen = [b for on, b in ((enable_flash, SDPBackend.FLASH_ATTENTION), (enable_mem_efficient,
              SDPBackend.EFFICIENT_ATTENTION), (enable_math, SDPBackend.MATH), (enable_cudnn,
              SDPBackend.CUDNN_ATTENTION)) if on]
    with sdpa_kernel(chosen):
        yield
