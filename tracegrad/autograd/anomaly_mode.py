"""Anomaly detection: mirrors ``torch.autograd.detect_anomaly`` / ``set_detect_anomaly``.
When on, each node records the Python stack of the forward op that created it, and a
backward that produces NaN raises RuntimeError naming that op and showing the stack."""
from __future__ import annotations

import functools

from .._state import ANOMALY
from .._ops.warn import warn as _warn


class detect_anomaly:
    """Context manager / decorator turning anomaly detection on (``check_nan=True`` default)."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        _warn("Anomaly Detection has been enabled. This mode will increase the runtime and "
              "should only be enabled for debugging.")

    def __enter__(self):
        if type(self.check_nan) is not bool:   # torch's set_anomaly_enabled parser, on entering
            raise TypeError(f"set_anomaly_enabled(): argument 'check_nan' (position 2) must be bool, not "
                            f"{type(self.check_nan).__name__}; pass True or False")
        self.prev = tuple(ANOMALY)
        ANOMALY[0], ANOMALY[1] = True, self.check_nan

    def __exit__(self, *exc):
        ANOMALY[0], ANOMALY[1] = self.prev

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self:
                return fn(*a, **k)
        return wrapper


class set_detect_anomaly:
    """Sets anomaly detection on/off at once; restores the previous setting as a context manager."""

    def __init__(self, mode: bool, check_nan: bool = True):
        for name, pos, v in (("enabled", 1, mode), ("check_nan", 2, check_nan)):
            if type(v) is not bool:   # torch's parser (set_anomaly_enabled) takes a bool only
                raise TypeError(f"set_anomaly_enabled(): argument '{name}' (position {pos}) must be bool, not "
                                f"{type(v).__name__}; pass True or False")
        self.prev = tuple(ANOMALY)
        ANOMALY[0], ANOMALY[1] = bool(mode), check_nan

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        ANOMALY[0], ANOMALY[1] = self.prev


def is_anomaly_enabled() -> bool:
    return ANOMALY[0]


def is_anomaly_check_nan_enabled() -> bool:
    return ANOMALY[1]
