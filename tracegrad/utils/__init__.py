"""``tracegrad.utils``: mirrors ``torch.utils`` (``data``, ``hooks``, ``checkpoint``)."""
from . import data, hooks  # noqa: F401


def __getattr__(name):
    # autograd imports utils.hooks while it loads, and checkpoint imports autograd: load
    # checkpoint on first use so ``tracegrad.utils.checkpoint`` works without an import cycle
    # (dlpack likewise: it sits on tracegrad.func)
    if name in ("checkpoint", "dlpack"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
