"""``autocast``: mirrors ``torch.autocast`` / ``torch.amp.autocast``. Inside the context, ops on
torch's autocast lists run in lower precision (matmul, linear, conv, attention: the autocast
dtype) or in float32 (losses), see ``tracegrad._autocast``. CPU default dtype bfloat16, CUDA
float16, as torch."""
from __future__ import annotations

import functools

import tracegrad

from .. import _autocast
from .._tensor.device import cuda_devices
from .._ops import dtypes as _dt
from .._ops.warn import warn as _warn   # at the user's line, as torch's (through the with-statement)

__all__ = ["autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

_DEFAULT = {"cpu": _dt.bfloat16, "cuda": _dt.float16}
_KNOWN = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
          "lazy", "vulkan", "mps", "meta", "hpu", "mtia")


def is_autocast_available(device_type: str) -> bool:
    """Mirrors ``torch.amp.is_autocast_available``: 'cpu', and 'cuda' where JAX has a GPU.
    TypeError for a device_type that is not a str; RuntimeError for an unknown one."""
    _device_type(device_type, "is_autocast_available")
    return device_type == "cpu" or (device_type == "cuda" and bool(cuda_devices()))


def _device_type(device_type, api):
    if not isinstance(device_type, str):
        raise TypeError(f"{api}: argument 'device_type' (position 1) must be str, not {type(device_type).__name__}; "
                        f"pass 'cpu' or 'cuda'")
    if device_type not in _KNOWN:
        raise RuntimeError(f"Expected one of {', '.join(n for n in _KNOWN if n != 'xla')} device type at start of device string: "
                           f"{device_type}")
    return device_type


def get_autocast_dtype(device_type: str):
    """Mirrors ``torch.get_autocast_dtype``: the active (or configured) autocast dtype.
    TypeError for a device_type that is not a str; RuntimeError for an unknown one."""
    device_type = _device_type(device_type, "get_autocast_dtype")
    return _autocast.dtype_for(device_type) or _DEFAULT.get(device_type, _dt.float16)


_NO_DEVICE_TYPE = object()


def is_autocast_enabled(device_type: str = _NO_DEVICE_TYPE) -> bool:
    """Mirrors ``torch.is_autocast_enabled``: no argument means 'cuda', as torch. TypeError for a
    device_type that is not a str (None too); RuntimeError for an unknown one."""
    if device_type is _NO_DEVICE_TYPE:
        device_type = "cuda"
    return _autocast.dtype_for(_device_type(device_type, "is_autocast_enabled")) is not None


def set_autocast_enabled(device_type, enabled=None) -> None:
    """Mirrors ``torch.set_autocast_enabled(device_type, enabled)``: turns autocast on or off for
    ``device_type`` outside any ``autocast`` context (with the dtype ``set_autocast_dtype`` chose);
    the legacy one-argument form ``set_autocast_enabled(enabled)`` means 'cuda'.
    Raises RuntimeError for an unknown device type."""
    if enabled is None and isinstance(device_type, bool):
        device_type, enabled = "cuda", device_type
    elif not isinstance(enabled, bool):   # torch's parser: a bool only
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 2) must be bool, not "
                        f"{type(enabled).__name__}; pass True or False")
    device_type = _device_type(device_type, "set_autocast_enabled")
    _autocast.set_dtype(device_type, get_autocast_dtype(device_type) if enabled else None)


def set_autocast_dtype(device_type, dtype) -> None:
    """Mirrors ``torch.set_autocast_dtype(device_type, dtype)``: the dtype autocast on
    ``device_type`` casts to (the default of the next ``autocast`` context, and the active one
    where autocast is on). Raises RuntimeError for an unknown device type, TypeError for a
    non-dtype."""
    device_type = _device_type(device_type, "set_autocast_dtype")
    dtype = _dt.to_dtype(dtype)
    _DEFAULT[device_type] = dtype
    if _autocast.dtype_for(device_type) is not None:
        _autocast.set_dtype(device_type, dtype)


def is_autocast_cache_enabled() -> bool:
    """Mirrors ``torch.is_autocast_cache_enabled``: whether autocast reuses its cast of a weight
    (NOTE [autocast cast cache] in ``tracegrad/_autocast.py``). Each ``autocast`` context sets it
    from its ``cache_enabled`` and restores it on exit."""
    return _autocast._CACHE_ENABLED[0]


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Mirrors ``torch.set_autocast_cache_enabled``: see ``is_autocast_cache_enabled``."""
    _autocast._CACHE_ENABLED[0] = bool(enabled)


def clear_autocast_cache() -> None:
    """Mirrors ``torch.clear_autocast_cache``: drops the casts autocast has cached (the outermost
    ``autocast`` calls it on exit)."""
    _autocast.clear_cache()


def autocast_increment_nesting() -> int:
    """Mirrors ``torch.autocast_increment_nesting``: this thread's autocast nesting depth after
    the call (every ``autocast`` context, enabled or not, counts while it is open)."""
    return _autocast.add_nesting(1)


def autocast_decrement_nesting() -> int:
    """Mirrors ``torch.autocast_decrement_nesting``: the depth after the call (never below 0)."""
    return _autocast.add_nesting(-1)


class autocast:
    """Mirrors ``torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``, as a
    context manager or decorator. Nested contexts restore the outer setting on exit.

    Args: device_type 'cpu' or 'cuda'; dtype (default bfloat16 on CPU, float16 on CUDA; CPU
    accepts bfloat16/float16); enabled; cache_enabled (default: the current
    ``is_autocast_cache_enabled()``; when on, a float32 weight's cast is made once and reused until
    the outermost context exits, NOTE [autocast cast cache]).
    Raises: ValueError when ``device_type`` is not a str, RuntimeError for an unknown device type.
    Like torch it warns and disables itself for an unsupported dtype, or 'cuda' without a GPU.
    Differs from torch: the op lists cover the ops tracegrad has (matmul/mm/bmm/addmm, linear,
    conv*, scaled_dot_product_attention in low precision; the losses, and on CUDA softmax/
    log_softmax/layer_norm/group_norm, in float32); other ops run in their inputs' dtype.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = _device_type(device_type, "autocast")
        self.fast_dtype = dtype if dtype is not None else get_autocast_dtype(device_type)
        # (None: the flag in force now, as torch -- a context inside cache_enabled=False keeps it off)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled and device_type == "cpu" and self.fast_dtype not in (_dt.bfloat16, _dt.float16):
            _warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                  "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.")
            enabled = False
        elif enabled and device_type == "cuda" and not cuda_devices():
            # torch 2.x's wording (the "User provided device_type of 'cuda'" text is torch 1.x's)
            _warn("CUDA is not available or torch_xla is imported. Disabling autocast.")
            enabled = False
        elif enabled and device_type not in ("cpu", "cuda"):
            _warn(f"tracegrad autocast supports device types 'cpu' and 'cuda'; '{device_type}' is disabled")
            enabled = False
        self._enabled = enabled
        self._prev = []

    def __enter__(self):
        if not isinstance(self.fast_dtype, _dt.dtype):
            # (as torch, on entering: a string such as "bfloat16" is no dtype)
            raise TypeError(f"autocast: argument 'dtype' must be a tracegrad.dtype (tracegrad.bfloat16, "
                            f"tracegrad.float16), not {type(self.fast_dtype).__name__}")
        if type(self._cache_enabled) is not bool:
            raise TypeError(f"autocast: cache_enabled must be a bool (got {type(self._cache_enabled).__name__})")
        if self.device == "meta":
            raise RuntimeError("autocast: the 'meta' device type has no autocast (unsupported scalarType); "
                               "use device_type='cpu' or 'cuda'")
        self._prev.append((_autocast.set_dtype(self.device, self.fast_dtype if self._enabled else None),
                           _autocast._CACHE_ENABLED[0]))
        autocast_increment_nesting()
        _autocast._CACHE_ENABLED[0] = self._cache_enabled
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:
            # through the package attribute, as torch: a program that replaces
            # torch.clear_autocast_cache keeps the casts past the context (test_cast_cache_is_global)
            tracegrad.clear_autocast_cache()
        dtype, _autocast._CACHE_ENABLED[0] = self._prev.pop()
        _autocast.set_dtype(self.device, dtype)
        return False

    def __call__(self, func):
        """Use as a decorator: each call runs inside a fresh context with these settings.
        TypeError when ``func`` is not callable."""
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}; to use it "
                            "as a context manager write `with tracegrad.autocast(device_type=...):`")
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)
        return wrapped


def _cast_floating(value, dtype):
    if hasattr(value, "dtype") and value.dtype.is_floating_point and value.dtype.name != "float64":
        return value.to(dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_floating(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast_floating(v, dtype) for k, v in value.items()}
    return value


def _check_device_type(device_type):
    if not isinstance(device_type, str):   # torch's check, before the decorator is built
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`; pass "
                         "device_type='cpu' or 'cuda'")


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Mirrors ``torch.amp.custom_fwd`` for a custom Function's ``forward``: with ``cast_inputs``
    and autocast active, floating inputs are cast to it and the body runs with autocast off.
    ``device_type`` is required (TypeError without it, ValueError for a non-str); an unknown
    device type is a RuntimeError when the forward runs, as torch."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        get_autocast_dtype(device_type)   # (RuntimeError for an unknown device type)
        if cast_inputs is None or not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type, enabled=False):
            return fwd(*_cast_floating(args, cast_inputs), **_cast_floating(kwargs, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Mirrors ``torch.amp.custom_bwd``: the backward runs under the autocast state active when
    the engine calls it. ``device_type`` is required (TypeError without it, ValueError for a
    non-str); an unknown device type is a RuntimeError when the backward runs, as torch."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        get_autocast_dtype(device_type)   # (RuntimeError for an unknown device type)
        return bwd(*args, **kwargs)
    return decorate_bwd
