"""Mirrors ``torch.backends.mkl``. tracegrad is not built with Intel oneMKL (XLA generates its
CPU kernels), so ``is_available()`` is False and ``verbose`` has nothing to log."""

VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available() -> bool:
    """Mirrors ``torch.backends.mkl.is_available``: False -- no oneMKL in tracegrad's build."""
    return False


class verbose:
    """Mirrors ``torch.backends.mkl.verbose``: a context manager for oneMKL's verbose log
    (``VERBOSE_OFF``/``VERBOSE_ON``). Without oneMKL there is nothing to log: it keeps
    ``enable`` and does nothing else."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        return None if self.enable == VERBOSE_OFF else self

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False
