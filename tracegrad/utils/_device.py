"""``torch.utils._device``: ``set_device``, a decorator running a function (or each step of a
generator) under ``with tracegrad.device(...)``, so factories without a ``device=`` make their
tensors there."""
from __future__ import annotations

import functools
import inspect

import tracegrad

__all__ = ["set_device", "device_decorator"]


def device_decorator(device, func):
    """Mirrors ``torch.utils._device.device_decorator``: ``func`` wrapped to run under
    ``tracegrad.device(device)``; a generator function's body runs under it step by step (the
    caller's code between steps does not)."""
    if inspect.isgeneratorfunction(func):
        @functools.wraps(func)
        def gen_wrapper(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with tracegrad.device(device):
                    value = next(gen)
                while True:
                    sent = yield value
                    with tracegrad.device(device):
                        value = gen.send(sent)
            except StopIteration as e:
                return e.value
        return gen_wrapper

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with tracegrad.device(device):
            return func(*args, **kwargs)
    return wrapper


def set_device(device):
    """Mirrors ``torch.utils._device.set_device``: a decorator; ``@set_device("meta")`` makes
    the function's factory calls default to that device."""
    return lambda func: device_decorator(tracegrad.device(device), func)
