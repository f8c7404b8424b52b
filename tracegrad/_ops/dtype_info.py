"""Mirrors ``torch.finfo`` and ``torch.iinfo``: the numeric limits of a tracegrad dtype, read
from numpy's (and ml_dtypes' for bfloat16) tables through ``jnp.finfo``/``jnp.iinfo``."""
from __future__ import annotations

import math

import jax.numpy as jnp

from . import dtypes as _dt

# torch's epsilon where it differs from ml_dtypes' (c10 defines float8_e5m2fnuz's as 2**-3)
_EPS = {"float8_e5m2fnuz": 0.125}


def _g(x) -> str:
    return f"{x:g}"


def _info_dtype(d, api):
    """The dtype an info object describes: a tracegrad dtype, or one of the Python types torch's
    argument parser takes for one (``int`` -> int64, ``float`` -> float64...). TypeError else."""
    if d in (int, float, bool, complex):
        return _dt.to_dtype(d)
    if not isinstance(d, _dt.dtype):
        raise TypeError(f"{api}(): argument 'type' (position 1) must be tracegrad.dtype, not {d.__class__.__name__}")
    return d


class _Limits:
    """The attributes are read-only, as torch's (AttributeError on assignment)."""

    __hash__ = None   # torch's finfo/iinfo define == but no hash

    def __setattr__(self, name, value):
        raise AttributeError(f"attribute '{name}' of 'tracegrad.{type(self).__name__}' objects is not writable")

    def _set(self, **attrs):
        for k, v in attrs.items():
            object.__setattr__(self, k, v)

    def __eq__(self, other):
        return isinstance(other, type(self)) and self.dtype == other.dtype


_NO_TYPE = object()   # finfo's ``type`` not given (None is no dtype)


class finfo(_Limits):
    """Mirrors ``torch.finfo(type=None)``: limits of a floating (or complex: its real part's)
    dtype; the default dtype when ``type`` is omitted.

    Attributes (read-only): ``bits`` (int), ``eps``, ``max``, ``min``, ``tiny``, ``smallest_normal``,
    ``resolution`` (Python floats) and ``dtype`` (the name, a str, as torch).
    Raises: TypeError for a non-dtype argument or an integer/bool dtype.
    Differs from torch: nothing known.
    >>> tracegrad.finfo(tracegrad.float16).eps
    0.0009765625
    """

    def __init__(self, type=_NO_TYPE):   # noqa: A002  (torch's argument name)
        # torch's overloads are finfo() and finfo(type): an explicit None is its TypeError
        d = _dt.get_default_dtype() if type is _NO_TYPE else _info_dtype(type, "finfo")
        if not (d.is_floating_point or d.is_complex) or d is _dt.float4_e2m1fn_x2:
            raise TypeError("tracegrad.finfo() requires a floating point input type. Use tracegrad.iinfo "
                            f"to handle {d}")
        d = d.to_real()
        info = jnp.finfo(d.np)
        self._set(bits=int(info.bits), eps=_EPS.get(d.name, float(info.eps)), max=float(info.max),
                  min=float(info.min), tiny=float(info.tiny), smallest_normal=float(info.smallest_normal),
                  # torch: exactly 10**-digits10, digits10 = floor(mantissa bits * log10(2)) (numpy's
                  # ``precision`` rounds differently for float8: 1 where torch has 0)
                  resolution=10.0 ** -math.floor(int(info.nmant) * math.log10(2)), dtype=d.name)

    def __repr__(self):
        return (f"finfo(resolution={_g(self.resolution)}, min={_g(self.min)}, max={_g(self.max)}, "
                f"eps={_g(self.eps)}, smallest_normal={_g(self.smallest_normal)}, tiny={_g(self.tiny)}, "
                f"dtype={self.dtype})")


class iinfo(_Limits):
    """Mirrors ``torch.iinfo(type)``: limits of an integer dtype.

    Attributes (read-only): ``bits``, ``max``, ``min`` (Python ints) and ``dtype`` (the name, a str).
    Raises: TypeError for a floating, complex or bool dtype, or a non-dtype argument.
    >>> tracegrad.iinfo(tracegrad.uint8).max
    255
    """

    def __init__(self, type):   # noqa: A002
        type = _info_dtype(type, "iinfo")   # noqa: A001
        if type is _dt.bool_:
            raise TypeError("tracegrad.bool is not supported by tracegrad.iinfo")
        if type.name.startswith(("qint", "quint")):
            raise NotImplementedError(f"tracegrad.iinfo: {type} is a quantized dtype; its limits are not defined")
        if isinstance(type, _dt._NoStorageDtype):
            raise TypeError(f"tracegrad.iinfo() does not support {type} (no storage: bits and sub-byte dtypes)")
        if type.is_floating_point or type.is_complex:
            raise TypeError("tracegrad.iinfo() requires an integer input type. Use tracegrad.finfo "
                            f"to handle {type}")
        info = jnp.iinfo(type.np)
        self._set(bits=int(info.bits), max=int(info.max), min=int(info.min), dtype=type.name)

    def __repr__(self):
        return f"iinfo(min={_g(self.min)}, max={_g(self.max)}, dtype={self.dtype})"


# reported as the package's classes, as torch.finfo/torch.iinfo
finfo.__module__ = iinfo.__module__ = "tracegrad"
