"""Mirrors ``torch.backends.cudnn``: plain settable flags. XLA picks convolution algorithms
itself, so ``benchmark``/``deterministic``/``allow_tf32``/``fp32_precision`` are stored and read
back but do not change results. ``flags(...)`` sets them for a ``with`` block, as torch."""
from contextlib import contextmanager

from .._tensor.device import cuda_devices

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True
fp32_precision = "none"


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
    global enabled, benchmark, benchmark_limit, deterministic, allow_tf32, fp32_precision
    orig = (enabled, benchmark, benchmark_limit, deterministic, allow_tf32, fp32_precision)
    for name, value in (("enabled", _enabled), ("benchmark", _benchmark), ("benchmark_limit", _benchmark_limit),
                        ("deterministic", _deterministic), ("allow_tf32", _allow_tf32),
                        ("fp32_precision", _fp32_precision)):
        if value is not None:
            globals()[name] = value
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
