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
    """Mirrors ``torch.dtype``: ``is_floating_point``, ``is_complex``, ``is_signed``, ``itemsize``,
    ``to_real()``, ``to_complex()``; prints ``torch.<name>`` under tracegrad's name.

    Most dtypes wrap the numpy/ml_dtypes dtype JAX computes in (``.np``). torch's dtypes JAX has
    no arrays for (complex32, the sub-byte ints, bits, quantized, packed float4) are names only:
    NOTE [dtypes without storage]. ``is_signed`` raises RuntimeError for bits and quantized
    dtypes, as torch.
    """

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "_signed", "itemsize", "_cat", "_scalar_name")

    def __init__(self, name, np_dtype, *, scalar_name, floating=None, signed=None, is_complex=None, itemsize=None):
        self.name, self._scalar_name = name, scalar_name
        npd = None if np_dtype is None else np.dtype(np_dtype)
        if npd is not None:
            self.np = npd
        kind = "" if npd is None else npd.kind
        # ml_dtypes' float8/bfloat16 report numpy kind 'V' (or 'f'): their flags come from the table
        self.is_floating_point = kind == "f" if floating is None else floating
        self.is_complex = kind == "c" if is_complex is None else is_complex
        # None: undefined (bits and quantized dtypes, whose is_signed raises as torch's)
        self._signed = (kind in "fci" if npd is not None else None) if signed is None else signed
        self.itemsize = npd.itemsize if itemsize is None else itemsize
        self._cat = 3 if self.is_complex else 2 if self.is_floating_point else 0 if name == "bool" else 1

    @property
    def is_signed(self) -> bool:
        if self._signed is None:
            raise RuntimeError(f"tracegrad.{self.name}.is_signed: signedness is undefined for bits and quantized "
                               "dtypes (torch raises too)")
        return self._signed

    def __repr__(self):
        return f"tracegrad.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self) -> "dtype":
        """Mirrors ``torch.dtype.to_real``: the real dtype of a complex one; others unchanged."""
        return _TO_REAL.get(self, self)

    def to_complex(self) -> "dtype":
        """Mirrors ``torch.dtype.to_complex``: float16 -> complex32, float32/bfloat16 -> complex64,
        float64 -> complex128, complex dtypes unchanged. Raises RuntimeError for the others."""
        if self.is_complex:
            return self
        r = _TO_COMPLEX.get(self)
        if r is None:
            raise RuntimeError(f"Unknown Complex ScalarType for {self._scalar_name} "
                               f"(tracegrad.{self.name}.to_complex(): use a floating dtype)")
        return r


# reported as the package's class, as torch.dtype: ``type(t.dtype)`` prints <class 'tracegrad.dtype'>
dtype.__module__ = "tracegrad"

class _NoStorageDtype(dtype):
    """NOTE [dtypes without storage]: a torch dtype JAX has no arrays of. Every path that makes
    or converts an array reads ``.np``; here that raises NotImplementedError instead of handing
    JAX a ``None`` (which it would read as float32, silently)."""

    __slots__ = ()

    @property
    def np(self):
        hint = "; use tracegrad.complex64" if self.name == "complex32" else ""
        raise NotImplementedError(f"tracegrad cannot make tensors of dtype tracegrad.{self.name}: JAX/XLA has no "
                                  f"arrays of it{hint}")


def _d(name, np_dtype, scalar_name, **flags):
    return (dtype if np_dtype is not None else _NoStorageDtype)(name, np_dtype, scalar_name=scalar_name, **flags)


float16 = _d("float16", jnp.float16, "Half")
bfloat16 = _d("bfloat16", jnp.bfloat16, "BFloat16", floating=True, signed=True)
float32 = _d("float32", jnp.float32, "Float")
float64 = _d("float64", jnp.float64, "Double")
complex64 = _d("complex64", jnp.complex64, "ComplexFloat")
complex128 = _d("complex128", jnp.complex128, "ComplexDouble")
int8 = _d("int8", jnp.int8, "Char")
uint8 = _d("uint8", jnp.uint8, "Byte")
int16 = _d("int16", jnp.int16, "Short")
int32 = _d("int32", jnp.int32, "Int")
int64 = _d("int64", jnp.int64, "Long")
bool_ = _d("bool", jnp.bool_, "Bool")
# NOTE [limited dtypes]: torch 2.13 implements only a few CPU kernels for these (creation,
# copies and casts, ==, indexing, cat, ...) and refuses to promote them with other dtypes;
# ``LIMITED`` and the op guard in _ops/limited.py mirror both.
uint16 = _d("uint16", jnp.uint16, "UInt16")
uint32 = _d("uint32", jnp.uint32, "UInt32")
uint64 = _d("uint64", jnp.uint64, "UInt64")
float8_e4m3fn = _d("float8_e4m3fn", jnp.float8_e4m3fn, "Float8_e4m3fn", floating=True, signed=True)
float8_e5m2 = _d("float8_e5m2", jnp.float8_e5m2, "Float8_e5m2", floating=True, signed=True)
float8_e4m3fnuz = _d("float8_e4m3fnuz", jnp.float8_e4m3fnuz, "Float8_e4m3fnuz", floating=True, signed=True)
float8_e5m2fnuz = _d("float8_e5m2fnuz", jnp.float8_e5m2fnuz, "Float8_e5m2fnuz", floating=True, signed=True)
float8_e8m0fnu = _d("float8_e8m0fnu", jnp.float8_e8m0fnu, "Float8_e8m0fnu", floating=True, signed=False)

# NOTE [dtypes without storage]: torch names these dtypes, but JAX/XLA has no arrays of them
# (complex32 has no XLA type; the sub-byte, bits and quantized ones no torch-compatible layout).
# They exist for their attributes, repr and comparisons; making a tensor of one raises
# NotImplementedError (``_NoStorageDtype.np``).
complex32 = _d("complex32", None, "ComplexHalf", is_complex=True, signed=True, itemsize=4)
float4_e2m1fn_x2 = _d("float4_e2m1fn_x2", None, "Float4_e2m1fn_x2", floating=True, signed=True, itemsize=1)
_SUB_BYTE = tuple(_d(f"{u}int{n}", None, f"{'U' if u else ''}Int{n}", floating=False, signed=not u, itemsize=1)
                  for u in ("", "u") for n in range(1, 8))
_BITS = tuple(_d(n, None, n.capitalize(), floating=False, itemsize=2 if n == "bits16" else 1)
              for n in ("bits1x8", "bits2x4", "bits4x2", "bits8", "bits16"))
_QUANTIZED = tuple(_d(n, None, scalar, floating=False, itemsize=4 if n == "qint32" else 1)
                   for n, scalar in (("qint8", "QInt8"), ("quint8", "QUInt8"), ("qint32", "QInt32"),
                                     ("quint4x2", "QUInt4x2"), ("quint2x4", "QUInt2x4")))

ALL = (float16, bfloat16, float32, float64, complex64, complex128, int8, uint8, int16, int32, int64, bool_,
       uint16, uint32, uint64, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)
NO_STORAGE = (complex32, float4_e2m1fn_x2) + _SUB_BYTE + _BITS + _QUANTIZED
LIMITED = frozenset((uint16, uint32, uint64, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz,
                     float8_e8m0fnu))
_FROM_NP = {d.np: d for d in ALL}
# torch's ScalarType names (its "not implemented for 'Long'" messages), by dtype name
SCALAR_NAMES = {d.name: d._scalar_name for d in ALL + NO_STORAGE}
_BY_NAME = {d.name: d for d in ALL + NO_STORAGE}
# torch spellings that are aliases
ALIASES = {"half": float16, "float": float32, "double": float64, "short": int16, "int": int32,
           "long": int64, "cfloat": complex64, "cdouble": complex128, "chalf": complex32, "bit": _BY_NAME["uint1"]}
_TO_REAL = {complex32: float16, complex64: float32, complex128: float64}
_TO_COMPLEX = {float16: complex32, bfloat16: complex64, float32: complex64, float64: complex128}


# [default float dtype]: process-wide state, kept in _state (the same list)
_default_float: list = _state.DEFAULT_DTYPE
_default_float[0] = float32


def _by_name(name):
    return _BY_NAME[name]


def get_default_dtype() -> dtype:
    """Mirrors ``torch.get_default_dtype``: the dtype of Python floats turned into tensors."""
    return _default_float[0]


def _kind_name(v) -> str:
    """A value's kind for a message: a class by its name, anything else by its type's name (a
    NumPy dtype's repr would show another library's words)."""
    return f"class {v.__name__}" if isinstance(v, type) else type(v).__name__


def set_default_dtype(d: dtype) -> None:
    """Mirrors ``torch.set_default_dtype``. Raises TypeError for a non-floating dtype, or for
    anything but a dtype object (a name, Python's ``float``), as torch."""
    if not isinstance(d, dtype):
        raise TypeError(f"invalid dtype object: only floating-point types are supported as the default type "
                        f"(got {_kind_name(d)}); pass tracegrad.float32 or tracegrad.float64")
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float[0] = d


def from_numpy_dtype(npd) -> dtype:
    """The tracegrad dtype of a numpy/JAX dtype; TypeError for ones torch lacks (uint16...)."""
    try:
        return _FROM_NP[np.dtype(npd)]
    except KeyError:
        # the element type's plain name (object, str32): the array library's dtype repr is not tracegrad's word
        kind = getattr(np.dtype(npd), "name", str(npd)) if not isinstance(npd, str) else npd
        raise TypeError(f"can't convert an array of element type {kind}: tracegrad supports "
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


_PY_NUMBER_TYPES = (float, int, bool, complex)


def is_dtype_arg(d) -> bool:
    """Whether torch's parser takes ``d`` where a ``torch.dtype`` goes: a dtype or one of Python's
    number types (float: float64, int: int64, bool, complex: complex128; ``to_dtype`` reads them),
    not a name ('float32') nor a NumPy type. The one test every dtype argument shares."""
    return isinstance(d, dtype) or (type(d) is type and d in _PY_NUMBER_TYPES)


def user_dtype(d, api) -> dtype:
    """``to_dtype`` for a ``dtype=`` a user passed to ``api``: torch's parser takes a dtype or one
    of Python's number types only, so a name ('float32') or a numpy type is its TypeError here
    (``to_dtype`` itself keeps reading those for tracegrad's own callers)."""
    if is_dtype_arg(d):
        return to_dtype(d)
    raise TypeError(f"{api}(): argument 'dtype' must be torch.dtype, not {type(d).__name__}; "
                    f"pass one such as tracegrad.float32")


_promote_cache: dict = _state.register_cache("_ops.dtypes._promote_cache", {})


def promote_types(a: dtype, b: dtype) -> dtype:
    """Mirrors ``torch.promote_types`` for two tensor dtypes. Raises RuntimeError for pairs torch
    does not promote (float8 or uint16/32/64 with most others: NOTE [limited dtypes])."""
    if a is b:
        return a
    key = (a, b)
    r = _promote_cache.get(key)
    if r is None:
        _check_promotable(a, b)
        if complex32 in key:
            # complex32 is float16's complex: promote the real parts, then make it complex
            r = promote_types(float16, b if a is complex32 else a)
            r = r if r.is_complex else r.to_complex()
        elif a._cat == b._cat == 1 and "uint8" in (a.name, b.name) and a.is_signed != b.is_signed:
            other = b if a is uint8 else a
            r = int16 if other is int8 else other
        else:
            r = from_numpy_dtype(jnp.promote_types(a.np, b.np))
        _promote_cache[key] = r
    return r


_FLOAT8 = frozenset(d for d in LIMITED if d.is_floating_point)
_WIDE_UINTS = LIMITED - _FLOAT8
_PLAIN_FLOATS = frozenset((float16, bfloat16, float32, float64))


def _check_promotable(a: dtype, b: dtype) -> None:
    """NOTE [limited dtypes]: torch promotes float8 with nothing else and uint16/32/64 only
    with the plain floating dtypes (RuntimeError otherwise, as here)."""
    if a in _FLOAT8 or b in _FLOAT8:
        raise RuntimeError(f"tracegrad.promote_types: promotion for float8 dtypes is not supported, attempted "
                           f"to promote {a._scalar_name} and {b._scalar_name}; convert one with .to() first")
    if (a in _WIDE_UINTS and b not in _PLAIN_FLOATS) or (b in _WIDE_UINTS and a not in _PLAIN_FLOATS):
        raise RuntimeError(f"tracegrad.promote_types: promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {a._scalar_name} and {b._scalar_name}; convert one with .to() first")
    for d in (a, b):
        if isinstance(d, _NoStorageDtype) and d is not complex32:
            raise RuntimeError(f"tracegrad.promote_types: tracegrad.{d.name} takes part in no type promotion")


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
    """Mirrors ``torch.can_cast``: no complex -> real, floating -> integral, or non-bool -> bool
    cast. As torch, the sub-byte, bits and quantized dtypes do not count as integral."""
    if from_.is_complex and not to.is_complex:
        return False
    if from_.is_floating_point and to._cat == 1 and not isinstance(to, _NoStorageDtype):
        return False
    return from_ is bool_ or to is not bool_


# dtypes whose results autograd records (torch differentiates floating and complex only)
DIFFERENTIABLE = frozenset(np.dtype(n) for n in ("float16", "float32", "float64", "complex64", "complex128")) | \
    {np.dtype(jnp.bfloat16)}
