"""Python data -> JAX array, with torch's dtype inference and errors: the conversion behind
``tracegrad.tensor`` (``factories.py``) and torch's legacy constructor ``Tensor(data)`` /
``Tensor(*sizes)`` (``tensor.py``). It sits below both, so neither imports the other for it.

``TensorBase`` is the root of ``Tensor`` (as ``torch._C.TensorBase`` is torch's): declared here
so the conversion recognises tensors nested in its data (``[t1, t2]``) without importing
``tensor.py``. It adds no slots and no behaviour.
"""
from __future__ import annotations

import collections.abc
import functools
import numbers
import operator

import jax
import jax.numpy as jnp
import numpy as np

from .._ops import dtypes as _dt
from .._ops.warn import warn_once
from .._x64 import with_x64
from .host import filled, to_device


class SizeBase(tuple):
    """The base class of ``tracegrad.Size`` (defined in tensor.py), here so that converters below
    it can tell a shape from data: ``FloatTensor(x.size())`` makes a tensor of that shape, as
    torch, where a plain tuple is data."""

    __slots__ = ()


class TensorBase:
    """The base class of ``tracegrad.Tensor``; never instantiated on its own. Subclasses read
    ``_value`` (the JAX array) and ``dtype``."""

    __slots__ = ()


INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1


def check_data_leaf(data):
    """torch's errors for non-numeric data: a str reached through the first element
    of each level is read as one more dimension (ValueError "too many dimensions 'str'"),
    elsewhere it is an invalid data type (TypeError)."""
    x = data
    while isinstance(x, (list, tuple)) and x:
        x = x[0]
    if isinstance(x, str) and x is not data:
        raise ValueError("tensor(): too many dimensions 'str' (strings are not numbers; convert them first)")


def plain_sequences(data):
    """Other Python sequences (``collections.deque``, ``UserList``, any ``collections.abc.Sequence``
    that is not a list, tuple, range, str or bytes) as lists, at every level: torch reads any
    sequence as nested data (REINFORCE's ``torch.tensor(deque_of_returns)``)."""
    return _plain(data, ())


def _plain(data, path):
    if isinstance(data, (list, tuple)):
        if id(data) in path:   # a list that contains itself (z = [0]; z += [z])
            raise TypeError("new(): self-referential lists are incompatible")
        path = path + (id(data),)
        out = [_plain(e, path) for e in data]
        return data if all(a is b for a, b in zip(out, data)) else out
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (range, str, bytes, TensorBase)):
        return [_plain(e, path) for e in data]
    if _duck_sequence(data):
        # any object with __len__ and __getitem__ is a sequence to torch (PySequence_Check)
        try:
            items = [data[i] for i in range(len(data))]
        except Exception:  # noqa: BLE001 - torch reports any failure to read it the same way
            raise ValueError(f"could not determine the shape of object type '{type(data).__name__}'") from None
        return [_plain(e, path) for e in items]
    return data


def _duck_sequence(x):
    t = type(x)
    return (hasattr(t, "__len__") and hasattr(t, "__getitem__") and not hasattr(t, "__array__")
            and not isinstance(x, (np.ndarray, np.generic, TensorBase, str, bytes, range,
                                   collections.abc.Mapping, collections.abc.Set)))


def _one_element(t, target):
    """A tensor nested in a list is one number to torch, read as the result's dtype ``target``:
    an integer or bool result reads it through ``__index__`` (TypeError unless it has one
    element), a floating or complex one through ``item()`` (ValueError). The tensor's own dtype
    does not choose the error, except that ``__index__`` refuses a floating or complex one
    (``tensor([tensor(2.5)], dtype=int64)`` is torch's TypeError, not a truncation)."""
    if target._cat <= 1 and t.dtype._cat >= 2:
        raise TypeError("only integer tensors of a single element can be converted to an index (a "
                        f"{t.dtype.name} tensor nested in a list is read as an integer for dtype="
                        f"{target.name}; convert it with .to() first, or leave dtype out)")
    if int(np.prod(t._value.shape)) != 1:
        if target._cat <= 1:
            raise TypeError("only integer tensors of a single element can be converted to an index (a tensor "
                            "nested in a list is read as a number; use tracegrad.stack for tensors)")
        raise ValueError("only one element tensors can be converted to Python scalars (a tensor nested "
                         "in a list is read as a number; use tracegrad.stack for tensors)")


def infer_dtype(data, dtype=None):
    """torch's rule for nested Python data: the promotion (``promote_types``) of every leaf's
    dtype, where a Python bool is bool, an int int64, a float the default dtype, a complex its
    complex partner, and a numpy scalar or array, or a one-element tensor, its own dtype.
    Returns ``(dtype, big)``: ``big`` is True when a Python int lies outside int64. ``dtype``,
    the one asked for (if any), chooses the error for a nested tensor of several elements; with
    it, another kind of number (a Fraction) is left for ``read_numbers`` (``big`` is None when
    there is one) instead of refused."""
    given = dtype is not None
    kinds = set()
    big = [False]
    odd = [False]
    nested = []

    def walk(x):
        if isinstance(x, TensorBase):
            nested.append(x)
            kinds.add(x.dtype)
        elif isinstance(x, (list, tuple, range)):
            for e in x:
                walk(e)
        elif isinstance(x, (np.ndarray, np.generic)):   # before the Python types: np.float64 is a float
            kinds.add(_dt.from_numpy_dtype(x.dtype))
        elif isinstance(x, bool):
            kinds.add(_dt.bool_)
        elif isinstance(x, numbers.Number) and not isinstance(x, (int, float, complex)):
            # a Fraction or a Decimal has no dtype to torch (it infers from Python ints, floats
            # and complex numbers only); with a dtype given it reads it as that dtype's kind
            if not given:
                raise RuntimeError(f"tensor(): Could not infer dtype of {type(x).__name__}; pass a dtype or "
                                   "convert it with float() or int() first")
            odd[0] = True
        elif isinstance(x, (numbers.Integral,)):
            kinds.add(_dt.int64)
            if not INT64_MIN <= x <= INT64_MAX:
                big[0] = True
        elif isinstance(x, numbers.Real):
            kinds.add(_dt.get_default_dtype())
        elif isinstance(x, numbers.Complex):
            kinds.add(_dt.scalar_dtype(complex(x)))   # complex128 under a float64 default, as torch
        elif isinstance(x, np.ndarray):
            kinds.add(_dt.from_numpy_dtype(x.dtype))
        elif isinstance(x, (str, bytes)):
            raise TypeError(f"tensor(): new(): invalid data type '{type(x).__name__}'")
        elif given:   # torch reads it as the given dtype's kind of number: its conversion's TypeError
            raise TypeError(f"tensor(): {type(x).__name__} is not a number: must be a real number or an integer "
                            f"for dtype={dtype}")
        else:
            raise RuntimeError(f"tensor(): Could not infer dtype of {type(x).__name__}")
    walk(data)
    flag = None if odd[0] else big[0]
    if not kinds:
        return _dt.get_default_dtype(), flag
    inferred = functools.reduce(_dt.promote_types, sorted(kinds, key=lambda d: d.name))
    for t in nested:
        _one_element(t, _dt.to_dtype(dtype) if dtype is not None else inferred)
    return inferred, flag


def read_numbers(data, d):
    """``data`` with each number that is no Python int, float or complex (a Fraction, a Decimal)
    read as torch reads it into dtype ``d``: ``complex()``, ``float()``, or for an integer or bool
    dtype ``operator.index`` (torch's TypeError "... cannot be interpreted as an integer")."""
    if isinstance(data, (list, tuple)):
        return [read_numbers(e, d) for e in data]
    if isinstance(data, numbers.Number) and not isinstance(data, (int, float, complex, np.generic)):
        return complex(data) if d.is_complex else float(data) if d.is_floating_point else operator.index(data)
    return data


def check_numpy_strides(arr):
    """torch refuses a numpy array in the other byte order, one viewed with a negative stride (``a[::-1]``) or with a stride
    that is not a multiple of its element size, or of the other byte order: ValueError."""
    if not arr.dtype.isnative:
        raise ValueError("given array has byte order different from the native byte order. Conversion between "
                         "byte orders is not supported; pass array.astype(array.dtype.newbyteorder('='))")
    if any(st < 0 for st in arr.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported; pass array.copy() instead")
    if any(st % arr.itemsize for st, n in zip(arr.strides, arr.shape) if n > 1):
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy "
                         "array to reallocate the memory.")


def int_bounds(d):
    """The values torch lets an integer dtype hold when converting a Python number (c10's
    ``overflows``: an unsigned type also takes negatives that wrap, down to ``-max``)."""
    info = np.iinfo(d.np)
    return (-int(info.max) if info.min == 0 else int(info.min)), int(info.max)


def check_fits(arr, d, api):
    """RuntimeError, as torch, when numbers do not fit the integer dtype ``d`` they are converted to
    (ints: torch's wrap range, down to ``-max`` for unsigned types; floats: the type's own range,
    so nan and inf never fit)."""
    if d._cat != 1 or not arr.size or arr.dtype.kind not in "iuf":
        return
    if arr.dtype.kind == "f":   # a float must lie in the type's real range (no unsigned wrap), as c10
        info = np.iinfo(d.np)
        lo, hi = int(info.min), int(info.max)
    else:
        lo, hi = int_bounds(d)
    amin, amax = arr.min(), arr.max()
    if amin < lo or amax > hi or np.isnan(amin):
        raise RuntimeError(f"{api}: value cannot be converted to type {d.name} without overflow "
                           f"(values span [{amin}, {amax}], {d.name} holds [{lo}, {hi}])")


# c10's checked conversion of a number to a floating type compares it with the type's largest
# value before rounding (complex64: each part with float32's)
_F32_MAX = float(np.finfo(np.float32).max)
_FLOAT_LIMIT = {"float16": 65504.0, "bfloat16": float(jnp.finfo(jnp.bfloat16).max), "float32": _F32_MAX,
                "complex64": _F32_MAX}


def check_float_fits(value, d, api, through_float=False):
    """RuntimeError, as torch, when the Python or numpy number ``value`` converted to the
    floating or complex dtype ``d`` is finite but beyond ``d``'s largest magnitude (a fill
    value, a clamp bound: ``full((2,), 1e40)`` raises where ``tensor([1e40])`` gives inf). nan
    and inf pass; float64 holds every Python float. ``through_float``: torch's path converts
    the number to float32 (checked) and then to float16/bfloat16 unchecked (``where``, a
    one-element ``fill_``), so those two dtypes get inf instead of an error."""
    lim = _FLOAT_LIMIT.get(d.name)
    if lim is None or not isinstance(value, (numbers.Number, np.generic)) or isinstance(value, (bool, np.bool_)):
        return
    if through_float and d.itemsize == 2:
        return
    c = complex(value)
    for part in (c.real, c.imag):
        if abs(part) > lim and part - part == 0:       # finite and too large
            raise RuntimeError(f"{api}: value cannot be converted to type {d.name} without overflow "
                               f"({value} is beyond {d.name}'s largest value {lim:g}); pass a wider dtype")


def _number_of(t):
    """A one-element tensor as a 0-d numpy array numpy can combine with others (bfloat16 is
    widened to float32: numpy has no common type for it and float16)."""
    a = np.asarray(t._value).reshape(())
    return a.astype(np.float32) if a.dtype == _dt.bfloat16.np else a


def _traced_leaf(data) -> bool:
    """Whether nested lists/tuples ``data`` hold a tensor whose value is a JAX tracer."""
    if isinstance(data, TensorBase):
        return isinstance(data._value, jax.core.Tracer)
    return isinstance(data, (list, tuple)) and any(map(_traced_leaf, data))


def _stack_traced(data, d):
    """``to_numpy`` for data holding traced tensors: a JAX array of dtype ``d`` (each nested
    tensor one number, as ``_number_of``)."""
    if isinstance(data, TensorBase):
        return jnp.asarray(data._value).reshape(()).astype(d.np)
    if isinstance(data, (list, tuple)):
        if not data:
            return jnp.zeros((0,), d.np)
        return jnp.stack([_stack_traced(e, d) for e in data])
    return jnp.asarray(data, d.np)


def to_numpy(data):
    """Nested lists/tuples of numbers and tensors (or one tensor, or array-like) -> numpy array."""
    if isinstance(data, TensorBase):
        return np.asarray(data._value)
    if isinstance(data, (list, tuple)):
        if any(isinstance(e, TensorBase) for e in data):   # each one number (``_one_element``)
            return np.stack([_number_of(e) if isinstance(e, TensorBase) else to_numpy(e)
                             for e in data]) if data else np.zeros((0,))
        return np.array([to_numpy(e) if isinstance(e, (list, tuple, TensorBase)) else e for e in data]) if data else np.zeros((0,))
    return np.asarray(data)


def _is_seq(x):   # a numpy array with dims is a sequence to torch too; a 0-d one a number
    return isinstance(x, (list, tuple)) or (isinstance(x, np.ndarray) and x.ndim > 0)


def _first_shape(x):
    """The shape torch reads off nested data: the lengths of the first elements, down to the
    first number or the first empty sequence."""
    out = []
    while _is_seq(x):
        out.append(len(x))
        if not len(x):
            break
        x = x[0]
    return out


def ragged_error(data):
    """torch's error for a ragged nested list, at the first place it differs from the shape of
    the first elements: TypeError where a number stands for a sequence or a sequence for a
    number, ValueError where a sequence has another length. None when rectangular."""
    is_seq = _is_seq
    want = _first_shape(data)

    def walk(x, dim):
        seq = is_seq(x)
        if dim >= len(want):
            return TypeError(f"tensor(): expected a number at dim {dim}, got a {type(x).__name__}") if seq else None
        if not seq:
            return TypeError(f"tensor(): expected a sequence of length {want[dim]} at dim {dim}, got a "
                             f"{type(x).__name__} (not a sequence)")
        if len(x) != want[dim]:
            return ValueError(f"expected sequence of length {want[dim]} at dim {dim} (got {len(x)})")
        for e in x:
            err = walk(e, dim + 1)
            if err:
                return err
        return None
    return walk(data, 0)


def _ragged(data, e):
    return ragged_error(data) or ValueError(f"tensor(): nested sequences must be rectangular ({e})")


def _empty_of_ragged(data, d, dtype):
    """torch's tensor of ragged data whose first elements end in an empty list (``[[], [1]]``):
    the shape read off the first elements holds a 0, so torch stores no element and never reads
    the rest. Its dtype inference, done before, still sees every number, and reads an empty list
    as the default dtype (``[[], [1]]`` is float32). ``(array, dtype)``, or None otherwise."""
    shape = _first_shape(data)
    if 0 not in shape:
        return None
    if dtype is None and not (d.is_floating_point or d.is_complex):
        d = _dt.get_default_dtype()
    return to_device(np.zeros(shape, d.np)), d


def bool_size_error(api, pos):
    """torch's RuntimeError for a one-element bool tensor where it reads a size (or another
    symbolic int: ``select``'s index, ``topk``'s k): its parser takes any one-element integral
    tensor there, bool included, then refuses a bool value (``zeros(tensor(True))``), where
    ``operator.index`` of the same tensor is 1."""
    where = f" at position {pos}" if pos is not None else ""
    return RuntimeError(f"{api}: a size or index must be integral, but the tensor{where} is bool; "
                        "pass an int or an integer tensor (tensor.long())")


def size_tuple(size):
    """A factory's ``*size`` arguments (ints, 0-d tensors, or one tuple/list/Size) -> a tuple of
    ints. TypeError for a non-integer, RuntimeError for a negative dimension, as torch."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):   # a Size is a tuple
        size = tuple(size[0])
    out = []
    if size and type(size[0]) is bool:   # torch's parser refuses a bool as the first size (zeros(True))
        raise TypeError(f"size must be a tuple of ints, not bool (found at position 0 of {list(size)}); pass an int")
    for s in size:
        if isinstance(s, TensorBase):   # a one-element integer tensor stands for its value; float ones do not
            if s.dtype.is_floating_point or s.dtype.is_complex:
                raise TypeError(f"size must be a tuple of ints, but got a {s.dtype} tensor; pass an int")
            if s.dtype is _dt.bool_:
                raise bool_size_error("size", len(out))
            s = int(s)
        # a 0-d integer numpy array (``mask.sum().numpy()``) is an index like numpy's scalars:
        # torch's parser takes it through ``__index__``; 1-d, float and bool arrays it refuses
        if isinstance(s, np.ndarray) and s.ndim == 0 and s.dtype.kind in "iu":
            s = s[()]
        if not isinstance(s, (int, np.integer)):
            raise TypeError(f"size must be a tuple of ints, but got {type(s).__name__}")
        if s < 0:
            if s < INT64_MIN:   # torch's parser reads each size as int64 before the sign check
                raise TypeError(f"argument 'size' failed to unpack the object at pos {len(out) + 1} with error "
                                f"\"Overflow when unpacking long long\" (size {s} does not fit int64)")
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


@with_x64
def to_array(data, dtype=None):
    """``tracegrad.tensor``'s conversion: ``(jax array, tracegrad dtype)`` for ``data`` (nested
    lists/tuples of numbers or 0-d tensors, numpy or JAX arrays, tensors), always a copy.
    TypeError for data it cannot read, ValueError for ragged lists or an int outside int64,
    RuntimeError when numbers do not fit an integer ``dtype``."""
    if isinstance(data, TensorBase):
        d = _dt.to_dtype(dtype) if dtype is not None else data.dtype
        return jnp.asarray(data._value, d.np), d
    if isinstance(data, jax.Array):
        d = _dt.to_dtype(dtype) if dtype is not None else _dt.from_numpy_dtype(data.dtype)
        return jnp.asarray(data, d.np), d
    if isinstance(data, (str, bytes)):
        raise TypeError(f"tensor(): new(): invalid data type '{type(data).__name__}'")
    if (hasattr(type(data), "__dlpack__") and hasattr(type(data), "__dlpack_device__")
            and not isinstance(data, np.ndarray)):
        # any DLPack producer (torch's tensor(obj) reads it through the protocol, not item by item)
        data = np.from_dlpack(data)
    if isinstance(data, (list, tuple)) and data and isinstance(data[0], np.ndarray):
        # as torch, once per process (every time under set_warn_always(True))
        warn_once("Creating a tensor from a list of numpy.ndarrays is extremely slow. "
                  "Convert the list to a single numpy.ndarray with numpy.array() before making a tensor of it.")
    big = False
    data = plain_sequences(data)
    if isinstance(data, np.ndarray):
        check_numpy_strides(data)
        d = _dt.to_dtype(dtype) if dtype is not None else _dt.from_numpy_dtype(data.dtype)
    else:
        check_data_leaf(data)
        inferred, big = infer_dtype(data, dtype)
        d = _dt.to_dtype(dtype) if dtype is not None else inferred
        if big is None:   # a Fraction or a Decimal read as d's kind
            data = read_numbers(data, d)
            inferred, big = infer_dtype(data, dtype)
        if inferred.is_complex and not d.is_complex and d is not _dt.bool_:
            # torch reads each Python number as the dtype's kind: a complex one is no real number
            raise TypeError(f"tensor(): must be real number, not complex (data holds complex numbers, dtype={d}); "
                            "pass a complex dtype or real data")
    if big:
        empty = _empty_of_ragged(data, d, dtype)   # (torch never reads the big int then)
        if empty is not None:
            return empty
        if d is _dt.uint64:   # torch reads ints up to 2**64 - 1 into uint64 (OverflowError past it, as numpy)
            return to_device(np.array(data, dtype=np.uint64)), d
        if d._cat <= 1 and d is not _dt.bool_:   # torch reads Python ints as int64 before converting to an integer dtype
            raise ValueError("tensor(): Overflow when unpacking long long (a Python int outside the int64 "
                             "range; pass dtype=tracegrad.float64 to keep it approximately)")
        try:
            arr = np.array(data, dtype=np.complex128 if d.is_complex else np.float64)
        except ValueError as e:
            empty = _empty_of_ragged(data, d, dtype)
            if empty is None:
                raise _ragged(data, e) from None
            return empty
        return to_device(arr.astype(d.np)), d
    try:
        arr = to_numpy(data)
    except ValueError as e:
        empty = _empty_of_ragged(data, d, dtype)
        if empty is None:
            raise _ragged(data, e) from None
        return empty
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        if not _traced_leaf(data):
            raise
        # a tensor nested in the list holds a traced value (``tensor([x])`` inside a compiled
        # function): numpy cannot read it, so the data is stacked as JAX arrays, of the dtype
        # chosen above (its value is unknown here, so no ``check_fits``). Asked only once numpy
        # failed: walking every list an eager tensor() reads cost as much as reading it.
        return _stack_traced(data, d), d
    if arr.dtype == object:
        raise TypeError("tensor(): nested sequences must be rectangular and hold numbers")
    if dtype is not None and not isinstance(data, np.ndarray):
        check_fits(arr, d, "tensor()")
    with np.errstate(over="ignore"):   # 1e40 -> float32 is inf, as torch
        arr = arr.astype(d.np)
    return to_device(arr), d


def check_legacy_device(args, device, form="constructor"):
    """torch's legacy constructors (``Tensor(...)``, ``FloatTensor(...)``, ``x.new(...)``) make CPU
    tensors only: RuntimeError for another device, and for a tensor argument with any device."""
    if device is None:
        return
    kind = device if isinstance(device, str) else getattr(device, "type", str(device))
    kind = str(kind).split(":")[0]
    if kind != "cpu":
        raise RuntimeError(f"legacy constructor expects device type: cpu but device type: {kind} was passed")
    if len(args) == 1 and isinstance(args[0], TensorBase):
        raise RuntimeError(
            "Legacy tensor constructor of the form torch.Tensor(tensor, device=device) is not supported.  Use "
            "torch.tensor(...) or torch.as_tensor(...) instead." if form == "constructor" else
            "Legacy tensor new of the form tensor.new(tensor, device=device) is not supported.  Use "
            "torch.as_tensor(...) instead.")


@with_x64
def legacy_array(*args, **kwargs):
    """The array of ``tracegrad.Tensor(data)`` / ``Tensor(*sizes)``: default dtype (float32),
    as ``torch.Tensor``; sizes give zeros (JAX has no uninitialised memory). ``device`` must be
    the CPU (``check_legacy_device``); other keyword arguments are accepted and ignored, except
    ``dtype`` (torch's TypeError: the class is the dtype). TypeError for one Python number that
    is no size (``Tensor(2.5)``), as torch."""
    if "dtype" in kwargs:
        raise TypeError("new() received an invalid combination of arguments - got dtype=; Tensor(...) makes the "
                        "default dtype: use tracegrad.tensor(data, dtype=...) or tracegrad.empty(*sizes, dtype=...)")
    check_legacy_device(args, kwargs.get("device"))
    return legacy_array_of(_dt.get_default_dtype(), *args)


@with_x64
def legacy_array_of(d, *args):
    """The array of a typed legacy constructor (``LongTensor(data)`` / ``LongTensor(*sizes)`` /
    ``LongTensor(x.size())``: a ``Size`` is sizes, as in torch, a plain tuple is data):
    ``legacy_array`` with the tracegrad dtype ``d`` in place of the default dtype. TypeError for
    one Python number that is no size (``Tensor(2.5)``, ``Tensor(True)``), as torch."""
    if len(args) == 1 and isinstance(args[0], (float, complex, bool)):
        raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__}); pass [value] or use "
                        f"tracegrad.tensor(value)")
    if len(args) == 1 and not isinstance(args[0], (int, np.integer, SizeBase)):
        return to_array(args[0], d)[0]
    return filled(size_tuple(args), 0, d.np)
