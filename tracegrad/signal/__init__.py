"""``tracegrad.signal``: torch.signal's names; today its one submodule, ``windows``."""
from . import windows as windows  # noqa: F401

__all__ = ["windows"]
