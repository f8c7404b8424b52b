"""Mirrors ``torch.testing._internal.common_dtype``: the dtype groups of PyTorch's dispatch
macros (``floating_types()``, ``all_types_and_complex_and(...)``...) and the ``get_all_*_dtypes``
lists, with tracegrad's dtypes. Each group is a tuple subclass whose ``+`` stays a group; the
``*_and(...)`` forms append the given dtypes (AssertionError for a non-dtype)."""
from __future__ import annotations

import tracegrad


def _validate_dtypes(*dtypes):
    for dtype in dtypes:
        if not isinstance(dtype, tracegrad.dtype):
            raise AssertionError(f"Expected dtype to be torch.dtype, got {type(dtype)}")
    return dtypes


class _dispatch_dtypes(tuple):
    """A dtype group (torch's ``_dispatch_dtypes``): a tuple that stays one when added to."""
    __slots__ = ()

    def __add__(self, other):
        if not isinstance(other, tuple):
            raise AssertionError(f"Expected other to be a tuple, got {type(other)}")
        return _dispatch_dtypes(tuple.__add__(self, other))


_empty_types = _dispatch_dtypes(())
_floating_types = _dispatch_dtypes((tracegrad.float32, tracegrad.float64))
_floating_types_and_half = _floating_types + (tracegrad.half,)
_floating_and_complex_types = _floating_types + (tracegrad.cfloat, tracegrad.cdouble)
_double_types = _dispatch_dtypes((tracegrad.float64, tracegrad.complex128))
# no uint16/32/64 (torch leaves them out for backward compatibility)
_integral_types = _dispatch_dtypes((tracegrad.uint8, tracegrad.int8, tracegrad.int16, tracegrad.int32, tracegrad.int64))
_all_types = _floating_types + _integral_types
_complex_types = _dispatch_dtypes((tracegrad.cfloat, tracegrad.cdouble))
_all_types_and_complex = _all_types + _complex_types
_all_types_and_half = _all_types + (tracegrad.half,)
_all_mps_types = _dispatch_dtypes((tracegrad.float, tracegrad.half, tracegrad.bfloat16)) + _integral_types
_float8_types = _dispatch_dtypes((tracegrad.float8_e4m3fn, tracegrad.float8_e4m3fnuz, tracegrad.float8_e5m2,
                                  tracegrad.float8_e5m2fnuz))


def empty_types():
    """``()``."""
    return _empty_types


def floating_types():
    """float32, float64."""
    return _floating_types


def floating_types_and_half():
    """float32, float64, float16."""
    return _floating_types_and_half


def floating_types_and(*dtypes):
    """float32, float64 and ``dtypes``."""
    return _floating_types + _validate_dtypes(*dtypes)


def floating_and_complex_types():
    """float32, float64, complex64, complex128."""
    return _floating_and_complex_types


def floating_and_complex_types_and(*dtypes):
    """float32, float64, complex64, complex128 and ``dtypes``."""
    return _floating_and_complex_types + _validate_dtypes(*dtypes)


def double_types():
    """float64, complex128."""
    return _double_types


def integral_types():
    """uint8, int8, int16, int32, int64."""
    return _integral_types


def integral_types_and(*dtypes):
    """The integral types and ``dtypes``."""
    return _integral_types + _validate_dtypes(*dtypes)


def all_types():
    """The floating then the integral types."""
    return _all_types


def all_types_and(*dtypes):
    """``all_types()`` and ``dtypes``."""
    return _all_types + _validate_dtypes(*dtypes)


def complex_types():
    """complex64, complex128."""
    return _complex_types


def complex_types_and(*dtypes):
    """complex64, complex128 and ``dtypes``."""
    return _complex_types + _validate_dtypes(*dtypes)


def all_types_and_complex():
    """``all_types()`` then the complex types."""
    return _all_types_and_complex


def all_types_and_complex_and(*dtypes):
    """``all_types_and_complex()`` and ``dtypes`` (typically bool, half, bfloat16)."""
    return _all_types_and_complex + _validate_dtypes(*dtypes)


def all_types_and_half():
    """``all_types()`` and float16."""
    return _all_types_and_half


def all_mps_types():
    """float32, float16, bfloat16 and the integral types."""
    return _all_mps_types


def all_mps_types_and(*dtypes):
    """``all_mps_types()`` and ``dtypes``."""
    return _all_mps_types + _validate_dtypes(*dtypes)


def float8_types():
    """The four float8 dtypes."""
    return _float8_types


def float8_types_and(*dtypes):
    """The float8 dtypes and ``dtypes``."""
    return _float8_types + _validate_dtypes(*dtypes)


def all_types_complex_float8_and(*dtypes):
    """All types, the complex and float8 dtypes, and ``dtypes``."""
    return _all_types + _complex_types + _float8_types + _validate_dtypes(*dtypes)


def custom_types(*dtypes):
    """Exactly ``dtypes``, as a group."""
    return _empty_types + _validate_dtypes(*dtypes)


def get_all_int_dtypes() -> list:
    """uint8, int8, int16, int32, int64."""
    return [tracegrad.uint8, tracegrad.int8, tracegrad.int16, tracegrad.int32, tracegrad.int64]


def get_all_fp_dtypes(include_half=True, include_bfloat16=True) -> list:
    """float32, float64, then float16 and bfloat16 unless excluded."""
    dtypes = [tracegrad.float32, tracegrad.float64]
    if include_half:
        dtypes.append(tracegrad.float16)
    if include_bfloat16:
        dtypes.append(tracegrad.bfloat16)
    return dtypes


def get_all_complex_dtypes(include_complex32=False) -> list:
    """complex64, complex128 (complex32 first when asked)."""
    return ([tracegrad.complex32] if include_complex32 else []) + [tracegrad.complex64, tracegrad.complex128]


def get_all_qint_dtypes() -> list:
    """The quantized dtypes (names only: tracegrad has no quantized kernels)."""
    return [tracegrad.qint8, tracegrad.quint8, tracegrad.qint32, tracegrad.quint4x2, tracegrad.quint2x4]


def get_all_dtypes(include_half=True, include_bfloat16=True, include_bool=True, include_complex=True,
                   include_complex32=False, include_qint=False) -> list:
    """Mirrors ``common_dtype.get_all_dtypes``: ints, floats, bool, complex (and qints), in torch's order."""
    dtypes = get_all_int_dtypes() + get_all_fp_dtypes(include_half=include_half, include_bfloat16=include_bfloat16)
    if include_bool:
        dtypes.append(tracegrad.bool)
    if include_complex:
        dtypes += get_all_complex_dtypes(include_complex32)
    if include_qint:
        dtypes += get_all_qint_dtypes()
    return dtypes


def get_all_math_dtypes(device) -> list:
    """Ints, float32/float64 (and float16 on CUDA), complex."""
    return (get_all_int_dtypes() + get_all_fp_dtypes(include_half=device.startswith("cuda"), include_bfloat16=False)
            + get_all_complex_dtypes())


def highest_precision_float(device):
    """float64 (float32 on MPS)."""
    return tracegrad.float32 if tracegrad.device(device).type == "mps" else tracegrad.float64


def highest_precision_complex(device):
    """complex128 (complex64 on MPS)."""
    return tracegrad.complex64 if tracegrad.device(device).type == "mps" else tracegrad.complex128


float_to_corresponding_complex_type_map = {
    tracegrad.float16: tracegrad.complex32, tracegrad.float32: tracegrad.complex64,
    tracegrad.float64: tracegrad.complex128,
}
