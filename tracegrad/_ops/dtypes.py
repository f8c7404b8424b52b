"""torch dtypes as thin wrappers over numpy/JAX dtypes, and torch's type-promotion rules.

A ``tracegrad.dtype`` prints like torch (``torch.float32`` -> ``tracegrad.float32``) and
carries the numpy dtype JAX uses. Promotion follows torch's ``result_type``: tensors with
dimensions outrank zero-dim tensors, which outrank Python scalars, except that a
higher *category* (bool < integer < floating < complex) always wins, taking the default
dtype of that category for scalars (float32 for a Python float, int64 for a Python int).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import _state


class dtype:
    """Mirrors ``torch.dtype``. ``is_floating_point``, ``is_complex``, ``is_signed``, ``itemsize``."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize", "_cat")

    def __init__(self, name, np_dtype):
        self.name = name
        self.np = np.dtype(np_dtype)
        kind = self.np.kind
        self.is_floating_point = kind == "f" or name == "bfloat16"
        self.is_complex = kind == "c"
        self.is_signed = kind in "fci" or name == "bfloat16"
        self.itemsize = self.np.itemsize
        self._cat = 3 if self.is_complex else 2 if self.is_floating_point else 0 if name == "bool" else 1

    def __repr__(self):
        return f"tracegrad.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self):
        """Mirrors ``torch.dtype.to_real``: a complex dtype's real counterpart; other dtypes unchanged."""
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self):
        """Mirrors ``torch.dtype.to_complex``: a floating dtype's complex counterpart (bfloat16 and
        float32 -> complex64, float64 -> complex128); complex dtypes unchanged. RuntimeError for
        integer and bool dtypes, and for float16 (tracegrad has no complex32)."""
        if self.is_complex:
            return self
        out = {bfloat16: complex64, float32: complex64, float64: complex128}.get(self)
        if out is None:
            raise RuntimeError(f"Unknown Complex ScalarType for {self.name}: to_complex takes a floating "
                               "dtype (tracegrad has no complex32 for float16)")
        return out


float16 = dtype("float16", jnp.float16)
bfloat16 = dtype("bfloat16", jnp.bfloat16)
float32 = dtype("float32", jnp.float32)
float64 = dtype("float64", jnp.float64)
complex64 = dtype("complex64", jnp.complex64)
complex128 = dtype("complex128", jnp.complex128)
int8 = dtype("int8", jnp.int8)
uint8 = dtype("uint8", jnp.uint8)
int16 = dtype("int16", jnp.int16)
int32 = dtype("int32", jnp.int32)
int64 = dtype("int64", jnp.int64)
bool_ = dtype("bool", jnp.bool_)

ALL = (float16, bfloat16, float32, float64, complex64, complex128, int8, uint8, int16, int32, int64, bool_)
_FROM_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
# torch spellings that are aliases
ALIASES = {"half": float16, "float": float32, "double": float64, "short": int16, "int": int32,
           "long": int64, "cfloat": complex64, "cdouble": complex128}

# [default float dtype]: process-wide state, kept in _state (the same list)
_default_float: list = _state.DEFAULT_DTYPE
_default_float[0] = float32


def _by_name(name):
    return _BY_NAME[name]


def get_default_dtype() -> dtype:
    """Mirrors ``torch.get_default_dtype``: the dtype of Python floats turned into tensors."""
    return _default_float[0]


def set_default_dtype(d: dtype) -> None:
    """Mirrors ``torch.set_default_dtype``. Raises TypeError for a non-floating dtype."""
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float[0] = d


def from_numpy_dtype(npd) -> dtype:
    """The tracegrad dtype of a numpy/JAX dtype; TypeError for ones torch lacks (uint16...)."""
    try:
        return _FROM_NP[np.dtype(npd)]
    except KeyError:
        raise TypeError(f"can't convert numpy dtype {npd}: tracegrad supports "
                        f"{', '.join(d.name for d in ALL)}") from None


def to_dtype(d) -> dtype:
    """Accepts a tracegrad dtype, a numpy dtype, a Python type or a torch-style name."""
    if isinstance(d, dtype):
        return d
    if d is float:      # torch reads Python's float as double, whatever the default dtype
        return float64
    if d is complex:
        return complex128
    if d is int:
        return int64
    if d is bool:
        return bool_
    if isinstance(d, str):
        name = d.replace("torch.", "").replace("tracegrad.", "")
        if name in ALIASES:
            return ALIASES[name]
        if name in _BY_NAME:
            return _BY_NAME[name]
    if getattr(d, "__module__", "").startswith("torch") and hasattr(d, "is_floating_point"):
        return _by_name(str(d).split(".")[-1])
    return from_numpy_dtype(d)


_promote_cache: dict = _state.register_cache("_ops.dtypes._promote_cache", {})


def promote_types(a: dtype, b: dtype) -> dtype:
    """Mirrors ``torch.promote_types`` for two tensor dtypes."""
    if a is b:
        return a
    key = (a, b)
    r = _promote_cache.get(key)
    if r is None:
        if a._cat == b._cat == 1 and "uint8" in (a.name, b.name) and a.is_signed != b.is_signed:
            other = b if a is uint8 else a
            r = int16 if other is int8 else other
        else:
            r = from_numpy_dtype(jnp.promote_types(a.np, b.np))
        _promote_cache[key] = r
    return r


def scalar_dtype(x) -> dtype:
    """Default dtype of a Python scalar's category (torch's "wrapped number" rule)."""
    if isinstance(x, bool):
        return bool_
    # numpy integer scalars count as Python ints, as torch (np.bool_ counts as a float there)
    if isinstance(x, (int, np.integer)):
        return int64
    if isinstance(x, complex):
        return complex64 if get_default_dtype() is not float64 else complex128
    return get_default_dtype()


def to_complex(d: dtype) -> dtype:
    """torch's ``toComplexType`` for a floating dtype (half and bfloat16 give complex64:
    tracegrad has no complex32)."""
    return complex128 if d is float64 else complex64


def _combine(higher, lower):
    # torch's combine_categories: a group of higher priority (tensors with dims) keeps its
    # dtype unless a lower-priority group belongs to a higher category.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        # a complex scalar keeps the value type of floating tensors (float32 -> complex64)
        return to_complex(higher) if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def result_type(tensor_dtypes_dim, tensor_dtypes_zero, scalars) -> dtype:
    """torch.result_type over three groups: dtypes of tensors with dims, of zero-dim tensors,
    and Python scalars."""
    dim = zero = wrapped = None
    for d in tensor_dtypes_dim:
        dim = d if dim is None else promote_types(dim, d)
    for d in tensor_dtypes_zero:
        zero = d if zero is None else promote_types(zero, d)
    for s in scalars:
        d = scalar_dtype(s)
        wrapped = d if wrapped is None else promote_types(wrapped, d)
    return _combine(dim, _combine(zero, wrapped))


def can_cast(from_: dtype, to: dtype) -> bool:
    """Mirrors ``torch.can_cast``: no cast to a lower category (float -> int, int -> bool)."""
    return from_._cat <= to._cat


# dtypes whose results autograd records (torch differentiates floating and complex only)
DIFFERENTIABLE = frozenset(np.dtype(n) for n in ("float16", "float32", "float64", "complex64", "complex128")) | \
    {np.dtype(jnp.bfloat16)}
