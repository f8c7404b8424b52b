"""``tracegrad.utils``: mirrors ``torch.utils`` (``data``, ``hooks``, ``checkpoint``)."""
from . import data, hooks  # noqa: F401


def __getattr__(name):
    # autograd imports utils.hooks while it loads, and checkpoint imports autograd: load
    # checkpoint on first use so ``tracegrad.utils.checkpoint`` works without an import cycle
    if name == "checkpoint":
        import importlib
        return importlib.import_module(".checkpoint", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
