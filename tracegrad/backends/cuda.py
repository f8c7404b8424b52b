"""Mirrors ``torch.backends.cuda``: ``matmul.allow_tf32`` is tied to
``tracegrad.set_float32_matmul_precision`` ('high' when True, 'highest' when False), which sets
JAX's default matmul precision; the reduced-precision reduction flags are stored only."""
import contextlib

from .._tensor import runtime as _runtime
from .._tensor.device import cuda_devices
from ._flags import bool_flag, flag_properties, precision_flag, reduction_flag
from .._ops.warn import warn as _warn


class _MatmulFlags:
    """``torch.backends.cuda.matmul``: its flags only (AttributeError "Unknown attribute" for
    any other name, read or set, as torch)."""

    @property
    def allow_tf32(self) -> bool:
        return _runtime.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value) -> None:
        bool_flag("set_allow_tf32_cublas")(value)
        _runtime.set_float32_matmul_precision("high" if value else "highest")

    def __getattr__(self, name):
        raise AttributeError(f"Unknown attribute {name}: torch.backends.cuda.matmul has allow_tf32, fp32_precision, "
                             "allow_fp16_accumulation and allow_{fp16,bf16}_reduced_precision_reduction")

    def __setattr__(self, name, value):
        if not isinstance(getattr(type(self), name, None), property):
            self.__getattr__(name)
        super().__setattr__(name, value)


# seen by compiled functions that set or read them (NOTE [settings flags]), checked as torch's
# setters check them; ``allow_tf32`` is the matmul precision, a global setting of its own
for _k, _p in flag_properties({"allow_fp16_reduced_precision_reduction": True,
                               "allow_bf16_reduced_precision_reduction": True,
                               "allow_fp16_accumulation": False, "fp32_precision": "none"},
                              {"allow_fp16_reduced_precision_reduction":
                               reduction_flag("allow_fp16_reduced_precision_reduction"),
                               "allow_bf16_reduced_precision_reduction":
                               reduction_flag("allow_bf16_reduced_precision_reduction"),
                               "allow_fp16_accumulation": bool_flag("set_allow_fp16_accumulation_cublas"),
                               "fp32_precision": precision_flag("cuda", ("ieee", "tf32", "none"))}).items():
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


# torch.backends.cuda.SDPAParams and the can_use_*_attention queries live in nn.attention (which
# torch re-exports them from): read on first use, as importing backends stays free of nn
_FROM_ATTENTION = ("SDPAParams", "can_use_flash_attention", "can_use_efficient_attention",
                   "can_use_cudnn_attention")


def __getattr__(name):
    if name in _FROM_ATTENTION:
        from ..nn import attention
        value = getattr(attention, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tracegrad.backends.cuda' has no attribute {name!r}")


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
