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


class finfo:
    """Mirrors ``torch.finfo(type=None)``: limits of a floating (or complex: its real part's)
    dtype; the default dtype when ``type`` is omitted.

    Attributes: ``bits`` (int), ``eps``, ``max``, ``min``, ``tiny``, ``smallest_normal``,
    ``resolution`` (Python floats) and ``dtype`` (the name, a str, as torch).
    Raises: TypeError for a non-dtype argument or an integer/bool dtype.
    Differs from torch: nothing known.
    >>> tracegrad.finfo(tracegrad.float16).eps
    0.0009765625
    """

    __hash__ = None   # torch's finfo defines == but no hash

    def __init__(self, type=None):   # noqa: A002  (torch's argument name)
        d = _dt.get_default_dtype() if type is None else type
        if not isinstance(d, _dt.dtype):
            raise TypeError(f"finfo(): argument 'type' (position 1) must be tracegrad.dtype, not {d.__class__.__name__}")
        if not (d.is_floating_point or d.is_complex) or d is _dt.float4_e2m1fn_x2:
            raise TypeError("tracegrad.finfo() requires a floating point input type. Use tracegrad.iinfo "
                            f"to handle {d}")
        d = d.to_real()
        info = jnp.finfo(d.np)
        self.bits = int(info.bits)
        self.eps = _EPS.get(d.name, float(info.eps))
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = float(info.tiny)
        self.smallest_normal = float(info.smallest_normal)
        # torch: exactly 10**-digits10, digits10 = floor(mantissa bits * log10(2)) (numpy's
        # ``precision`` rounds differently for float8: 1 where torch has 0)
        self.resolution = 10.0 ** -math.floor(int(info.nmant) * math.log10(2))
        self.dtype = d.name

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __repr__(self):
        return (f"finfo(resolution={_g(self.resolution)}, min={_g(self.min)}, max={_g(self.max)}, "
                f"eps={_g(self.eps)}, smallest_normal={_g(self.smallest_normal)}, tiny={_g(self.tiny)}, "
                f"dtype={self.dtype})")


class iinfo:
    """Mirrors ``torch.iinfo(type)``: limits of an integer dtype.

    Attributes: ``bits``, ``max``, ``min`` (Python ints) and ``dtype`` (the name, a str).
    Raises: TypeError for a floating, complex or bool dtype, or a non-dtype argument.
    >>> tracegrad.iinfo(tracegrad.uint8).max
    255
    """

    __hash__ = None

    def __init__(self, type):   # noqa: A002
        if not isinstance(type, _dt.dtype):
            raise TypeError(f"iinfo(): argument 'type' (position 1) must be tracegrad.dtype, not {type.__class__.__name__}")
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
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = type.name

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __repr__(self):
        return f"iinfo(min={_g(self.min)}, max={_g(self.max)}, dtype={self.dtype})"
