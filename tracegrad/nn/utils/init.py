"""Mirrors ``torch.nn.utils.init``: ``skip_init``."""
from __future__ import annotations

import inspect

import tracegrad

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """Mirrors ``torch.nn.utils.skip_init``: ``module_cls(*args, **kwargs)`` with its parameters and
    buffers left uninitialised (``Module.to_empty`` on ``device``, default 'cpu'). TypeError when
    ``module_cls`` is not a class; RuntimeError when it is not a Module class or takes no ``device``
    argument.
    Differs from torch: the module's initialiser runs (there is no 'meta' device to skip it on);
    its values are then replaced, so only the time is spent."""
    if not isinstance(module_cls, type):   # torch's issubclass check fails first
        raise TypeError(f"issubclass() arg 1 must be a class (skip_init takes a Module class, not "
                        f"{type(module_cls).__name__})")
    if not issubclass(module_cls, tracegrad.nn.Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    return module_cls(*args, **kwargs).to_empty(device=final_device)
