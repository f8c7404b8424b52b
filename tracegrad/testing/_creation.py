"""``make_tensor``: torch.testing's random test tensors of a given shape, dtype and range."""
from __future__ import annotations

import math

import tracegrad
from .._ops.warn import warn as _warn

_INTEGRAL = (tracegrad.uint8, tracegrad.int8, tracegrad.int16, tracegrad.int32, tracegrad.int64)


def _low_high(low, high, dtype, *, lowest, highest, default_low, default_high):
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype in (tracegrad.bool,) + _INTEGRAL:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")  # randint's range would be empty
    if low == high:
        _warn("Passing `low==high` to `tracegrad.testing.make_tensor` for floating or complex types is "
              "deprecated since 2.1 and will be removed in 2.3. Use `tracegrad.full(...)` instead.",
              FutureWarning)
    elif low > high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if dtype is tracegrad.bool or dtype in _INTEGRAL:
        return math.ceil(low), math.ceil(high)
    return low, high


def _uniform(shape, dtype, low, high, device):
    out = tracegrad.empty(shape, dtype=dtype, device=device)
    if low == high:
        return out.fill_(low)
    if high - low >= tracegrad.finfo(dtype).max:   # the span itself would overflow: draw half of it
        return out.uniform_(low / 2, high / 2).mul_(2)
    return out.uniform_(low, high)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """Mirrors ``torch.testing.make_tensor``: a tensor of ``shape`` (ints, or one sequence)
    filled with random values in ``[low, high)``.

    Defaults: floating/complex ``[-9, 9)`` (uniform; complex: real and imaginary parts each),
    integers ``[-9, 10)`` clamped to the dtype's range (so uint8 ``[0, 10)``), bool
    ``{False, True}``. ``exclude_zero`` replaces zeros with 1 (integers, bool) or the dtype's
    ``tiny``. ``noncontiguous`` returns a strided view (every second element of a tensor twice
    as long in its last dimension). ``requires_grad`` applies to floating/complex dtypes.
    Raises: ValueError for ``low >= high`` (integers) or ``low > high``, NaN bounds, a range
    outside the dtype, ``requires_grad`` with an integral dtype, or ``noncontiguous`` with
    ``memory_format``; TypeError for a dtype make_tensor does not support.
    ``memory_format`` lays the result out so (``clone(memory_format=...)``).
    Differs from torch: values differ (tracegrad's generator).
    """
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    if requires_grad and (dtype is tracegrad.bool or dtype in _INTEGRAL):
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is tracegrad.bool:
        low, high = _low_high(low, high, dtype, lowest=0, highest=2, default_low=0, default_high=2)
        result = tracegrad.randint(low, high, shape, device=device) != 0
    elif dtype in _INTEGRAL:
        info = tracegrad.iinfo(dtype)
        low, high = _low_high(low, high, dtype, lowest=info.min, highest=info.max + (dtype is not tracegrad.int64),
                              default_low=-9, default_high=10)
        result = tracegrad.randint(low, high, shape, dtype=dtype, device=device)
    elif isinstance(dtype, tracegrad.dtype) and (dtype.is_floating_point or dtype.is_complex):
        info = tracegrad.finfo(dtype)
        low, high = _low_high(low, high, dtype, lowest=info.min, highest=info.max, default_low=-9, default_high=9)
        if dtype.is_complex:
            real = dtype.to_real()
            result = (_uniform(shape, real, low, high, device).to(dtype)
                      + _uniform(shape, real, low, high, device).to(dtype) * 1j)
        else:
            result = _uniform(shape, dtype, low, high, device)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by tracegrad.testing.make_tensor().")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if (dtype is tracegrad.bool or dtype in _INTEGRAL) else tracegrad.finfo(dtype).tiny
    if dtype.is_floating_point or dtype.is_complex:
        result.requires_grad = requires_grad
    return result


# torch.testing._creation's table of each floating dtype's complex partner (test files import it)
float_to_corresponding_complex_type_map = {
    tracegrad.float16: tracegrad.complex32 if hasattr(tracegrad, "complex32") else tracegrad.complex64,
    tracegrad.float32: tracegrad.complex64,
    tracegrad.float64: tracegrad.complex128,
}
