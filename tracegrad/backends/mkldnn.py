"""Mirrors ``torch.backends.mkldnn`` (oneDNN). tracegrad runs on XLA, which does not use
oneDNN, so ``is_available()`` is False; the flags (``enabled``, ``deterministic``,
``allow_tf32``, ``fp32_precision``) are stored and read back for programs that set them, and
change no result. ``flags(...)`` sets them for a ``with`` block, as torch. ``allow_tf32``
reads None, as on torch builds without an Intel GPU (TF32 on oneDNN is an Intel-GPU feature);
setting it through ``set_flags``/``flags`` warns and leaves it None, as there."""
import sys
from contextlib import contextmanager

from ._flags import bool_flag, flag_module, precision_flag
from .._ops.warn import warn as _warn


def _allow_tf32(value):
    # torch's setter takes a bool, warns that oneDNN TF32 needs an Intel GPU and keeps None
    bool_flag("_set_onednn_allow_tf32")(value)
    _warn("TF32 acceleration on top of oneDNN is available for Intel GPUs. tracegrad has no oneDNN, so "
          "allow_tf32 stays None.", UserWarning)


# ``enabled``, ``deterministic``, ``allow_tf32``, ``fp32_precision``: attributes of this module,
# seen by compiled functions that set or read them (NOTE [settings flags]), checked as torch's
# setters check them
flag_module(__name__, {"enabled": True, "deterministic": False, "allow_tf32": None, "fp32_precision": "none"},
            {"enabled": bool_flag("set_enabled_mkldnn"), "deterministic": bool_flag("set_deterministic_mkldnn"),
             "allow_tf32": _allow_tf32, "fp32_precision": precision_flag("mkldnn")})
_THIS = sys.modules[__name__]

VERBOSE_OFF = 0
VERBOSE_ON = 1
VERBOSE_ON_CREATION = 2

_FP32_PRECISIONS = ("none", "ieee", "tf32", "bf16")


def is_available() -> bool:
    """Mirrors ``torch.backends.mkldnn.is_available``: False -- tracegrad is not built with
    oneDNN (XLA generates its own CPU kernels)."""
    return False


def is_acl_available() -> bool:
    """Mirrors ``torch.backends.mkldnn.is_acl_available``: False (no Arm Compute Library)."""
    return False


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    """Mirrors ``torch.backends.mkldnn.set_flags``: sets each flag given (``None`` keeps it)
    and returns the previous ``(enabled, deterministic, allow_tf32, fp32_precision)``."""
    orig = (_THIS.enabled, _THIS.deterministic, _THIS.allow_tf32, _THIS.fp32_precision)
    if _fp32_precision is not None and _fp32_precision not in _FP32_PRECISIONS:
        raise RuntimeError(f"torch.backends.mkldnn.set_flags: fp32_precision must be one of "
                           f"{list(_FP32_PRECISIONS)}, got {_fp32_precision!r}")
    if _enabled is not None:
        _THIS.enabled = _enabled
    if _deterministic is not None:
        _THIS.deterministic = _deterministic
    if _allow_tf32 is not None:
        _THIS.allow_tf32 = _allow_tf32     # (checked and warned by its setter; it stays None)
    if _fp32_precision is not None:
        _THIS.fp32_precision = _fp32_precision
    return orig


@contextmanager
def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    """Mirrors ``torch.backends.mkldnn.flags``: a context manager that sets the flags (note
    torch's default ``enabled=False``) and restores the previous values on exit."""
    orig = set_flags(enabled, deterministic, allow_tf32, fp32_precision)
    try:
        yield
    finally:
        set_flags(*orig)


class verbose:
    """Mirrors ``torch.backends.mkldnn.verbose``: a context manager for oneDNN's verbose log
    level (``VERBOSE_OFF``/``VERBOSE_ON``/``VERBOSE_ON_CREATION``). Without oneDNN there is
    nothing to log: the level is checked and kept in ``level``."""

    def __init__(self, level):
        if level not in (VERBOSE_OFF, VERBOSE_ON, VERBOSE_ON_CREATION):
            raise RuntimeError(f"torch.backends.mkldnn.verbose: level must be VERBOSE_OFF, VERBOSE_ON or "
                               f"VERBOSE_ON_CREATION (0, 1, 2), got {level!r}")
        self.level = level

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False
