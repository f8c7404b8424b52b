"""``tracegrad.utils``: mirrors ``torch.utils`` (``data``, ``hooks``, ``checkpoint``, ``_pytree``,
``swap_tensors``, ``weak``)."""
import importlib

from . import data, hooks  # noqa: F401
from ._swap import swap_tensors  # noqa: F401


def __getattr__(name):
    # checkpoint imports autograd and _lowering, dlpack sits on tracegrad.func and _pytree imports
    # linalg (to register tracegrad's return types): load them on first use so importing
    # tracegrad.utils stays light and free of import cycles
    if name in ("checkpoint", "dlpack", "_pytree", "_cxx_pytree", "flop_counter", "weak", "module_tracker",
                "deterministic", "_device", "collect_env", "_foreach_utils"):
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
