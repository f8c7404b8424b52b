"""Process-wide runtime settings that map onto JAX: float32 matmul precision (torch's
``set_float32_matmul_precision`` / ``backends.cuda.matmul.allow_tf32``) and the default device
(``set_default_device``). Nothing here runs at import: JAX's global configuration changes
only when the user asks for a setting, as torch's settings are process-global too."""
from __future__ import annotations

import jax

from .. import _state
from .._ops.linalg import MATMUL_PRECISION
from . import device as _device_mod
from .device import cuda_devices, device
from .device import device as _device    # set_default_device's argument is named device, as torch's
from .._ops.warn import warn as _warn

# torch's float32 matmul precision names -> JAX's default_matmul_precision values
_PRECISION = {"highest": "float32", "high": "tensorfloat32", "medium": "bfloat16"}
_matmul_precision = MATMUL_PRECISION     # torch's default, 'highest'; the matmul ops read it
_default_device = [None]


def get_float32_matmul_precision() -> str:
    """Mirrors ``torch.get_float32_matmul_precision``: 'highest' (default), 'high' or 'medium'."""
    _state.note_setting_read()
    return _matmul_precision[0]


def set_float32_matmul_precision(precision: str) -> None:
    """Mirrors ``torch.set_float32_matmul_precision``: 'highest' keeps float32 matmuls exact,
    'high' allows TF32 (or bf16x3), 'medium' bfloat16. Sets JAX's ``default_matmul_precision``
    to the matching value (it only changes GPU/TPU results; CPU matmuls stay float32).
    An unknown name warns and changes nothing, as torch; RuntimeError for a value that is not
    a str (torch's C++ check)."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}; "
                           "pass 'highest', 'high' or 'medium'")
    if precision not in _PRECISION:
        # torch's text names its C++ setter (setFloat32MatmulPrecision)
        _warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
              "setFloat32MatmulPrecision call has no effect.", UserWarning)
        return
    _matmul_precision[0] = precision
    jax.config.update("jax_default_matmul_precision", _PRECISION[precision])


def get_default_device() -> device:
    """Mirrors ``torch.get_default_device``: the device new tensors are made on."""
    if _default_device[0] is not None:
        return _default_device[0]
    d = jax.devices()[0]
    return _device_mod._make("cpu") if d.platform == "cpu" else _device_mod._make("cuda", d.id)


def set_default_device(device) -> None:
    """Mirrors ``torch.set_default_device(device)``: factories create tensors on ``device``
    ('cpu', 'cuda', 'cuda:1', a device, or None for JAX's default). Sets JAX's
    ``jax_default_device``. Differs from torch: 'cuda' without a GPU raises torch's
    AssertionError ('Torch not compiled with CUDA enabled') here; torch raises it at the first
    factory call."""
    if device is None:
        _default_device[0] = None
        jax.config.update("jax_default_device", None)
        return
    d = device if isinstance(device, _device) else _device(device)
    if d.type == "cuda" and d.index is None and cuda_devices():
        d = _device("cuda", 0)
    jax.config.update("jax_default_device", d.jax_device())
    _default_device[0] = d


_DEVICE_STACK: list = []    # the default devices ``with device(...)`` blocks replaced


def _enter_device(self):
    _DEVICE_STACK.append(_default_device[0])
    set_default_device(self)
    return self


def _exit_device(self, *exc):
    set_default_device(_DEVICE_STACK.pop())


# ``with tracegrad.device(...)``: the device is the default device of the block (torch's
# DeviceContext); set here, where the default device lives (device.py sits below this module)
device.__enter__, device.__exit__ = _enter_device, _exit_device

# torch.use_deterministic_algorithms: recorded only (XLA's CPU and GPU kernels tracegrad uses
# are deterministic run to run, but for scatter-add on GPU, which this flag does not change)
_deterministic = [False, False]   # [mode, warn_only]


def use_deterministic_algorithms(mode, *, warn_only=False) -> None:
    """Mirrors ``torch.use_deterministic_algorithms(mode, *, warn_only=False)``: records the
    flag that ``are_deterministic_algorithms_enabled`` and
    ``is_deterministic_algorithms_warn_only_enabled`` read back.
    Raises: TypeError when ``mode`` or ``warn_only`` is not a bool (as torch).
    Differs from torch: no op raises or warns under it (the flag changes no kernel)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must be bool, "
                        f"not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _deterministic[:] = [mode, warn_only]


def are_deterministic_algorithms_enabled() -> bool:
    """Mirrors ``torch.are_deterministic_algorithms_enabled``."""
    _state.note_setting_read()
    return _deterministic[0]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Mirrors ``torch.is_deterministic_algorithms_warn_only_enabled``."""
    _state.note_setting_read()
    return _deterministic[1]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """Mirrors ``torch.set_deterministic_debug_mode``: ``"default"``/0 (off), ``"warn"``/1
    (deterministic, warn only), ``"error"``/2 (deterministic); the same flags as
    ``use_deterministic_algorithms``. TypeError for another type, RuntimeError for another
    string or number."""
    if isinstance(debug_mode, bool) or not isinstance(debug_mode, (str, int)):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    level = _DEBUG_MODES.get(debug_mode) if isinstance(debug_mode, str) else debug_mode
    if level not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected one of 'default', 'warn', 'error' or 0, 1, 2, "
                           f"but got {debug_mode!r}")
    use_deterministic_algorithms(level > 0, warn_only=level == 1)


def get_deterministic_debug_mode() -> int:
    """Mirrors ``torch.get_deterministic_debug_mode``: 0 off, 1 warn only, 2 on."""
    mode, warn_only = _deterministic
    return 0 if not mode else 1 if warn_only else 2
