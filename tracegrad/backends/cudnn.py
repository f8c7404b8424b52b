"""Mirrors ``torch.backends.cudnn``: plain settable flags. XLA picks convolution algorithms
itself, so ``benchmark``/``deterministic``/``allow_tf32`` are stored and read back but do not
change results."""
from .._tensor.device import cuda_devices

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """Mirrors ``torch.backends.cudnn.is_available``: True when JAX has a GPU."""
    return bool(cuda_devices())


def version():
    """Mirrors ``torch.backends.cudnn.version``: None (XLA links cuDNN itself; no version exposed)."""
    return None
