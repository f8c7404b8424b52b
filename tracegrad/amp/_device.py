"""The per-device spellings ``torch.cuda.amp`` and ``torch.cpu.amp`` give ``autocast`` and
``GradScaler``: the same classes as ``tracegrad.amp`` with the device (and autocast's
default dtype) filled in."""
from __future__ import annotations

from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler
from .._ops.warn import warn as _warn


def device_classes(device_type, default_dtype, module):
    """``(autocast, GradScaler)`` for ``device_type``, named as ``module``'s
    (``torch.<device>.amp.autocast(enabled=True, dtype=<default_dtype>, cache_enabled=True)``,
    ``torch.<device>.amp.GradScaler(init_scale=2.**16, ...)``). Making either gives torch's
    FutureWarning naming the ``tracegrad.amp`` spelling to use instead."""

    def deprecated(name):
        _warn(f"`tracegrad.{device_type}.amp.{name}(args...)` is deprecated. Please use "
              f"`tracegrad.amp.{name}('{device_type}', args...)` instead.", FutureWarning)

    class autocast(_autocast):
        __doc__ = (f"Mirrors ``torch.{device_type}.amp.autocast(enabled=True, dtype={default_dtype}, "
                   "cache_enabled=True)``.")

        def __init__(self, enabled=True, dtype=None, cache_enabled=True):
            deprecated("autocast")
            super().__init__(device_type, dtype=default_dtype if dtype is None else dtype, enabled=enabled,
                             cache_enabled=cache_enabled)

    class GradScaler(_GradScaler):
        __doc__ = f"Mirrors ``torch.{device_type}.amp.GradScaler`` (``tracegrad.amp.GradScaler`` for '{device_type}')."

        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                     enabled=True):
            deprecated("GradScaler")
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    for cls in (autocast, GradScaler):
        cls.__module__ = module
        cls.__qualname__ = cls.__name__
    return autocast, GradScaler
