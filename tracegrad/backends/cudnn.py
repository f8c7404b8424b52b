"""Mirrors ``torch.backends.cudnn``: plain settable flags. XLA picks convolution algorithms
itself, so ``benchmark``/``deterministic``/``allow_tf32``/``fp32_precision`` are stored and read
back but do not change results. ``flags(...)`` sets them for a ``with`` block, as torch."""
import sys
from contextlib import contextmanager

from .._tensor.device import cuda_devices
from ._flags import bool_flag, flag_module, precision_flag

# ``enabled``, ``benchmark``, ``benchmark_limit``, ``deterministic``, ``allow_tf32``: attributes of
# this module, seen by compiled functions that set or read them (NOTE [settings flags]); each is
# checked as torch's setter checks it (a bool; a precision name CUDA has)
flag_module(__name__, {"enabled": True, "benchmark": False, "benchmark_limit": 10, "deterministic": False,
                       "allow_tf32": True, "fp32_precision": "none"},
            {"enabled": bool_flag("set_enabled_cudnn"), "benchmark": bool_flag("set_benchmark_cudnn"),
             "deterministic": bool_flag("set_deterministic_cudnn"), "allow_tf32": bool_flag("set_allow_tf32_cublas"),
             "fp32_precision": precision_flag("cuda", ("ieee", "tf32", "none"))})
_THIS = sys.modules[__name__]
_FLAGS = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32", "fp32_precision")


def is_available() -> bool:
    """Mirrors ``torch.backends.cudnn.is_available``: True when JAX has a GPU."""
    return bool(cuda_devices())


def version():
    """Mirrors ``torch.backends.cudnn.version``: None (XLA links cuDNN itself; no version exposed)."""
    return None


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None, _allow_tf32=None,
              _fp32_precision="none"):
    """Mirrors ``torch.backends.cudnn.set_flags``: sets each flag given (``None`` keeps it) and
    returns the previous ``(enabled, benchmark, benchmark_limit, deterministic, allow_tf32,
    fp32_precision)``."""
    orig = tuple(getattr(_THIS, k) for k in _FLAGS)
    for k, value in zip(_FLAGS, (_enabled, _benchmark, _benchmark_limit, _deterministic, _allow_tf32, _fp32_precision)):
        if value is not None:
            setattr(_THIS, k, value)
    return orig


@contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True,
          fp32_precision="none"):
    """Mirrors ``torch.backends.cudnn.flags``: a context manager that sets every flag (note
    torch's default ``enabled=False``) and restores the previous values on exit."""
    orig = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32, fp32_precision)
    try:
        yield
    finally:
        set_flags(*orig)
