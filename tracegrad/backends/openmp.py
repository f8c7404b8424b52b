"""Mirrors ``torch.backends.openmp``."""


def is_available() -> bool:
    """Mirrors ``torch.backends.openmp.is_available``: False -- tracegrad's CPU kernels are
    XLA's, which run on XLA's own thread pool, not OpenMP."""
    return False
