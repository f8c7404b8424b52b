"""Mirrors ``torch.backends.cudnn``: plain settable flags. XLA picks convolution algorithms
itself, so ``benchmark``/``deterministic``/``allow_tf32`` are stored and read back but do not
change results."""
from .._tensor.device import cuda_devices
from ._flags import flag_module

# ``enabled``, ``benchmark``, ``benchmark_limit``, ``deterministic``, ``allow_tf32``: attributes of
# this module, seen by compiled functions that set or read them (NOTE [settings flags])
flag_module(__name__, {"enabled": True, "benchmark": False, "benchmark_limit": 10, "deterministic": False,
                       "allow_tf32": True})


def is_available() -> bool:
    """Mirrors ``torch.backends.cudnn.is_available``: True when JAX has a GPU."""
    return bool(cuda_devices())


def version():
    """Mirrors ``torch.backends.cudnn.version``: None (XLA links cuDNN itself; no version exposed)."""
    return None
