"""Tensor factories: ``tensor``, ``as_tensor``, ``from_numpy``, ``zeros``/``ones``/``full``/
``empty``/``eye``/``arange``/``linspace``, the ``*_like`` forms and the random draws.

All mirror the torch functions of the same names and arguments (``dtype``, ``device``,
``requires_grad``, ``generator``). Python floats become the default dtype (float32), Python
ints int64, bools bool; numpy arrays keep their dtype (as torch). Every factory that makes a JAX
array runs under ``with_x64`` (float64/int64 without turning x64 on for the user's JAX code).
"""
from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp
import numpy as np

from ._device import device as _device
from ._ops import dtypes as _dt
from ._ops import random as _rnd
from ._tensor import Size, Tensor
from .autograd.grad_mode import in_inference_mode
from ._x64 import with_x64


def _place(array, device):
    if device is None:
        return array
    d = _device(device) if not isinstance(device, _device) else device
    if d.type == "cpu" and len(jax.devices()) and jax.devices()[0].platform == "cpu":
        return array
    return jax.device_put(array, d.jax_device())


def _finish(array, dtype=None, device=None, requires_grad=False):
    t = Tensor._make(_place(array, device))
    if in_inference_mode():
        t._inference = True
    if requires_grad:
        t.requires_grad_(True)
    return t


def _infer_dtype(data):
    """torch's rule for nested Python data: bool < int < float < complex, floats -> default."""
    kinds = set()

    def walk(x):
        if isinstance(x, Tensor):
            kinds.add(x.dtype)
        elif isinstance(x, (list, tuple)):
            for e in x:
                walk(e)
        elif isinstance(x, (bool, np.bool_)):
            kinds.add(_dt.bool_)
        elif isinstance(x, (numbers.Integral,)):
            kinds.add(_dt.int64)
        elif isinstance(x, numbers.Real):
            kinds.add(_dt.get_default_dtype())
        elif isinstance(x, numbers.Complex):
            kinds.add(_dt.complex64)
        elif isinstance(x, np.ndarray):
            kinds.add(_dt.from_numpy_dtype(x.dtype))
        else:
            raise TypeError(f"Could not infer dtype of {type(x).__name__}")
    walk(data)
    if not kinds:
        return _dt.get_default_dtype()
    return max(kinds, key=lambda d: (d._cat, d.itemsize))


def _to_numpy(data):
    if isinstance(data, Tensor):
        return np.asarray(data._value)
    if isinstance(data, (list, tuple)):
        if any(isinstance(e, Tensor) for e in data):
            return np.stack([_to_numpy(e) for e in data]) if data else np.zeros((0,))
        return np.array([_to_numpy(e) if isinstance(e, (list, tuple, Tensor)) else e for e in data]) if data else np.zeros((0,))
    return np.asarray(data)


def _ragged_message(data):
    """torch's message for a ragged nested list: the first length that differs."""
    def shape_of(x):
        out = []
        while isinstance(x, (list, tuple)):
            out.append(len(x))
            if not x:
                break
            x = x[0]
        return out
    want = shape_of(data)

    def walk(x, dim):
        if dim >= len(want):
            return None
        if not isinstance(x, (list, tuple)):
            return f"expected sequence of length {want[dim]} at dim {dim} (got scalar)" if dim else None
        if len(x) != want[dim]:
            return f"expected sequence of length {want[dim]} at dim {dim} (got {len(x)})"
        for e in x:
            m = walk(e, dim + 1)
            if m:
                return m
        return None
    return walk(data, 0)


@with_x64
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """Mirrors ``torch.tensor``: always copies ``data`` (nested lists/tuples of numbers or 0-d
    tensors, numpy arrays, tensors). TypeError for data it cannot read; RuntimeError when
    ``requires_grad=True`` with a non-floating dtype."""
    if isinstance(data, Tensor):
        arr = data._value
        d = _dt.to_dtype(dtype) if dtype is not None else data.dtype
        return _finish(jnp.asarray(arr, d.np), d, device, requires_grad)
    if isinstance(data, jax.Array):
        d = _dt.to_dtype(dtype) if dtype is not None else _dt.from_numpy_dtype(data.dtype)
        return _finish(jnp.asarray(data, d.np), d, device, requires_grad)
    if isinstance(data, str):
        raise TypeError("new(): invalid data type 'str'")
    if isinstance(data, np.ndarray):
        d = _dt.to_dtype(dtype) if dtype is not None else _dt.from_numpy_dtype(data.dtype)
    else:
        d = _dt.to_dtype(dtype) if dtype is not None else _infer_dtype(data)
    try:
        arr = _to_numpy(data)
    except ValueError as e:
        raise ValueError(_ragged_message(data) or f"tensor(): nested sequences must be rectangular ({e})") from None
    if arr.dtype == object:
        raise TypeError("tensor(): nested sequences must be rectangular and hold numbers")
    return _finish(jnp.asarray(arr.astype(d.np)), d, device, requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Mirrors ``torch.as_tensor``: returns ``data`` itself when it is a tensor of the requested
    dtype/device; otherwise converts (JAX cannot alias numpy memory, so numpy data is copied)."""
    if isinstance(data, Tensor):
        if (dtype is None or _dt.to_dtype(dtype) is data.dtype) and device is None:
            return data
        return data.to(dtype=dtype, device=device)
    return tensor(data, dtype=dtype, device=device)


@with_x64
def from_numpy(ndarray):
    """Mirrors ``torch.from_numpy``. Differs from torch: the tensor holds a *copy* (JAX arrays
    cannot share memory with numpy), so later writes to the numpy array are not seen.
    TypeError for non-arrays or unsupported dtypes."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _dt.from_numpy_dtype(ndarray.dtype)
    return Tensor._make(jnp.asarray(ndarray))


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    t = as_tensor(obj, dtype=dtype, device=device)
    return t.requires_grad_(requires_grad) if requires_grad else t


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s)
        if not isinstance(s, (int, np.integer)):
            raise TypeError(f"size must be a tuple of ints, but got {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


def _fdt(dtype):
    return _dt.to_dtype(dtype) if dtype is not None else _dt.get_default_dtype()


@with_x64
def zeros(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    """Mirrors ``torch.zeros(*size)``; default dtype float32."""
    d = _fdt(dtype)
    return _finish(jnp.zeros(_size(size), d.np), d, device, requires_grad)


@with_x64
def ones(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    """Mirrors ``torch.ones(*size)``; default dtype float32."""
    d = _fdt(dtype)
    return _finish(jnp.ones(_size(size), d.np), d, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, memory_format=None, out=None, layout=None, pin_memory=False):
    """Mirrors ``torch.empty``. Differs from torch: the memory is zero-filled (JAX has no
    uninitialised arrays)."""
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


@with_x64
def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    """Mirrors ``torch.full``: dtype inferred from ``fill_value`` (bool/int64/float32)."""
    d = _dt.to_dtype(dtype) if dtype is not None else _dt.scalar_dtype(fill_value if not isinstance(fill_value, Tensor) else fill_value.item())
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _finish(jnp.full(_size((size,)), fill_value, d.np), d, device, requires_grad)


@with_x64
def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """Mirrors ``torch.eye(n, m=None)``: an ``(n, m)`` identity matrix."""
    d = _fdt(dtype)
    return _finish(jnp.eye(n, n if m is None else m, dtype=d.np), d, device, requires_grad)


@with_x64
def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None):
    """Mirrors ``torch.arange``: int64 when start/end/step are all integers, else float32."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if dtype is None:
        d = _dt.int64 if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in vals) else _dt.get_default_dtype()
    else:
        d = _dt.to_dtype(dtype)
    n = int(np.ceil((vals[1] - vals[0]) / vals[2]))
    arr = (np.arange(max(n, 0), dtype=np.float64) * vals[2] + vals[0]) if d.is_floating_point else np.arange(vals[0], vals[1], vals[2])
    return _finish(jnp.asarray(arr.astype(d.np)), d, device, requires_grad)


@with_x64
def range(start, end, step=1, *, dtype=None, device=None, requires_grad=False):
    """Mirrors the deprecated ``torch.range``: like ``arange`` but *including* ``end``, and
    float32 by default. Warns as torch does; prefer ``arange``."""
    import warnings
    warnings.warn("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use torch.arange, "
                  "which produces values in [start, end).", UserWarning, stacklevel=2)
    d = _fdt(dtype)
    n = int(np.floor((end - start) / step)) + 1
    arr = np.arange(max(n, 0), dtype=np.float64) * step + start
    return _finish(jnp.asarray(arr.astype(d.np)), d, device, requires_grad)


@with_x64
def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None):
    """Mirrors ``torch.linspace``: ``steps`` evenly spaced points from start to end inclusive."""
    d = _fdt(dtype)
    return _finish(jnp.linspace(start, end, steps, dtype=d.np), d, device, requires_grad)


@with_x64
def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    d = _fdt(dtype)
    return _finish(jnp.logspace(start, end, steps, base=base, dtype=d.np), d, device, requires_grad)


def _like(fn):
    def like(input, *args, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
        d = dtype if dtype is not None else input.dtype
        return fn(*args, *input.shape, dtype=d, device=device or None, requires_grad=requires_grad) \
            if fn is not full else full(input.shape, args[0], dtype=d, device=device, requires_grad=requires_grad)
    like.__name__ = fn.__name__ + "_like"
    like.__doc__ = f"Mirrors ``torch.{fn.__name__}_like``: same shape (and dtype unless given) as ``input``."
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    """Mirrors ``torch.full_like``."""
    return full(input.shape, fill_value, dtype=dtype if dtype is not None else input.dtype,
                device=device, requires_grad=requires_grad)


# ---- random -----------------------------------------------------------------------------
@with_x64
def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Mirrors ``torch.rand``: uniform on [0, 1). JAX PRNG: streams differ from torch's."""
    d = _fdt(dtype)
    return _finish(_rnd.uniform(_rnd.key_for(generator), _size(size), d.np), d, device, requires_grad)


@with_x64
def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Mirrors ``torch.randn``: standard normal. JAX PRNG: streams differ from torch's."""
    d = _fdt(dtype)
    return _finish(_rnd.normal(_rnd.key_for(generator), _size(size), d.np), d, device, requires_grad)


@with_x64
def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Mirrors ``torch.randint(low=0, high, size)``: int64 uniform on [low, high)."""
    if size is None:
        low, high, size = 0, low, high
    d = _dt.to_dtype(dtype) if dtype is not None else _dt.int64
    arr = _rnd.randint(_rnd.key_for(generator), _size((size,)), low, high, jnp.int64)
    return _finish(arr.astype(d.np), d, device, requires_grad)


@with_x64
def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Mirrors ``torch.randperm``: a random permutation of ``0..n-1`` (int64)."""
    d = _dt.to_dtype(dtype) if dtype is not None else _dt.int64
    return _finish(_rnd.permutation(_rnd.key_for(generator), n, d.np), d, device, requires_grad)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return rand(*input.shape, dtype=dtype or input.dtype, device=device, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return randn(*input.shape, dtype=dtype or input.dtype, device=device, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False):
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device)


@with_x64
def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Mirrors ``torch.normal``: tensor or float ``mean``/``std`` (broadcast), or floats with ``size``."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        shape = jnp.broadcast_shapes(tuple(getattr(mean, "shape", ())), tuple(getattr(std, "shape", ())))
        ref = mean if isinstance(mean, Tensor) else std
        z = Tensor._make(_rnd.normal(_rnd.key_for(generator), shape, ref.dtype.np))
        return z * std + mean
    d = _fdt(dtype)
    return _finish(_rnd.normal(_rnd.key_for(generator), _size((size,)), d.np, mean, std), d, device, requires_grad)


@with_x64
def bernoulli(input, p=None, *, generator=None, out=None):
    """Mirrors ``torch.bernoulli``: 1 with probability ``input`` (elementwise), same dtype."""
    probs = input._value if p is None else jnp.full(input.shape, p)
    draw = _rnd.bernoulli(_rnd.key_for(generator), probs, tuple(input.shape))
    return Tensor._make(draw.astype(input._value.dtype))


@with_x64
def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Mirrors ``torch.multinomial``: int64 indices drawn from the rows of ``input``."""
    p = input._value / jnp.sum(input._value, axis=-1, keepdims=True)
    return Tensor._make(_rnd.multinomial(_rnd.key_for(generator), p, num_samples, replacement).astype(jnp.int64))


def _legacy_tensor_ctor(*args, **kwargs):
    """``tracegrad.Tensor(data)`` / ``Tensor(*sizes)``: float32, as ``torch.Tensor``."""
    if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
        return tensor(args[0], dtype=_dt.get_default_dtype())
    return empty(*args)
