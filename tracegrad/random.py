"""Mirrors ``torch.random``: the default generator's functions (``manual_seed``, ``seed``,
``initial_seed``, ``get_rng_state``, ``set_rng_state``; the same objects as ``tracegrad.<name>``)
and ``fork_rng``, which restores the generator's state when its block exits."""
from __future__ import annotations

import contextlib

from ._tensor.device import device as _device
from ._tensor.generator import (Generator, default_generator, get_rng_state, initial_seed,  # noqa: F401
                                manual_seed, seed, set_rng_state)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed",
           "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Mirrors ``torch.random.fork_rng``: a context manager; on exit (normal or by an exception)
    the default generator gets back the seed and state it had on entry, so draws inside the
    block do not change the stream outside it. ``enabled=False`` makes it do nothing.

    ``devices``/``device_type`` are accepted and not needed: tracegrad has one generator for
    every device (TypeError, as torch, when ``devices`` is not iterable; RuntimeError, even with
    ``enabled=False``, for a ``device_type`` that is not a device name or a device). Differs
    from torch: no warning about forking many CUDA devices."""
    if device_type is not None and not isinstance(device_type, _device):
        if not isinstance(device_type, str):
            raise RuntimeError(f"Invalid value of device '{device_type}', expect torch.device, str, or None "
                               f"({_caller}: device_type names a device type, e.g. 'cuda')")
        _device(device_type)   # RuntimeError for a name torch does not know, as torch's device module lookup
    if not enabled:
        yield
        return
    if devices is not None and not hasattr(devices, "__iter__"):   # torch traverses them
        raise TypeError(f"'{type(devices).__name__}' object is not iterable ({_caller}: {_devices_kw} is a "
                        f"list of devices, e.g. [0])")
    saved_seed, saved_state = initial_seed(), get_rng_state()
    try:
        yield
    finally:
        default_generator.manual_seed(saved_seed)
        set_rng_state(saved_state)
