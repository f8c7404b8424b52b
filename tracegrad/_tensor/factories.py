"""Tensor factories: ``tensor``, ``as_tensor``, ``from_numpy``, ``zeros``/``ones``/``full``/
``empty``/``eye``/``arange``/``linspace``, the ``*_like`` forms and the random draws.

All mirror the torch functions of the same names and arguments (``dtype``, ``device``,
``requires_grad``, ``generator``). Python floats become the default dtype (float32), Python
ints int64, bools bool; numpy arrays keep their dtype (as torch). Every factory that makes a JAX
array runs under ``with_x64`` (float64/int64 without turning x64 on for the user's JAX code).
On the 'meta' device (``device='meta'`` or inside ``with device('meta')``) no array is made or
drawn at all: the tensor holds its shape and dtype only (NOTE [meta tensors] in meta.py).
"""
from __future__ import annotations

import functools
import math
import numbers
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from . import generator as _generator
from . import memory_format as _mf
from . import runtime as _runtime
from .meta import ShapeDtypeStruct as _Abstract, abstract, make_meta
from .numpy_bridge import storage_for_numpy
from .convert import INT64_MAX, INT64_MIN, bool_size_error, check_fits, check_float_fits, check_numpy_strides, int_bounds, size_tuple, to_array
from .device import cuda_devices, device as _device
from .host import filled, put, small, to_device
from .range_values import arange_values
from .layout import sparse_coo, strided
from .storage import Storage, TypedStorage
from .._ops import dtypes as _dt, limited
from .._ops import random as _rnd
from .._ops.errors import int_past_64_bits, not_a_tensor, out_of_memory
from .._ops.spacing import torch_linspace
from .._ops.warn import warn, warn_once
from .. import _state
from .._state import in_inference_mode
from .tensor import Tensor, see_reads
from .._x64 import with_x64, x64_scope
from .out import accepts_out


def _place(array, device):
    if device is None:
        return array
    d = _device(device) if not isinstance(device, _device) else device
    if d.type in ("cpu", "meta") and len(jax.devices()) and jax.devices()[0].platform == "cpu":
        return array
    with x64_scope():   # outside x64 mode a transfer narrows int64/float64 buffers (_x64.py)
        return jax.device_put(array, d.jax_device())


def _is_meta(device) -> bool:
    """Whether a factory's ``device`` (or, for None, the default device) is 'meta'."""
    if device is None:
        d = _runtime._default_device[0]
        return d is not None and d.type == "meta"
    return (device.type if isinstance(device, _device) else str(device).split(":")[0]) == "meta"


def check_pin_memory(pin_memory, device=None):
    """torch's RuntimeError for a factory's ``pin_memory=True`` on a machine without an
    accelerator: page-locked host memory is a GPU's staging buffer, and torch's CPU build has no
    allocator for it. Where a GPU exists the flag is taken and changes nothing (JAX manages the
    host-device transfers); a 'meta' tensor allocates nothing and takes it too."""
    if pin_memory and not _is_meta(device) and not cuda_devices():
        raise RuntimeError("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory "
                           "allocator is available on this system. Leave pin_memory out (False): a tensor "
                           "here is in host memory already")


def _finish(array, dtype=None, device=None, requires_grad=False):
    t = Tensor._make(array if type(array) is _Abstract else _place(array, device))
    if _is_meta(device):
        make_meta(t)
    if in_inference_mode():
        t._inference = True
    if requires_grad:
        t._factory_requires_grad()
    return t


_I64_MAX = 2 ** 63 - 1


def _check_size_fits(shape, sizes_given=True):
    """torch's parser TypeError for a size given by the caller that is no int64 (only looked at
    once the storage size has overflowed, so the common path pays nothing); a size computed
    from other arguments (arange's) keeps the RuntimeError."""
    for i, n in enumerate(shape if sizes_given else ()):
        if not -_I64_MAX - 1 <= n <= _I64_MAX:
            raise TypeError(f"argument 'size' failed to unpack the object at pos {i + 1} with error \"Overflow when "
                            f"unpacking long long\" (size {n} does not fit int64)")


def check_storage_size(shape, itemsize, strides=None, sizes_given=True):
    """RuntimeError, as torch, before allocating a tensor whose contiguous strides or byte size
    do not fit int64 (``empty([8, 8, 2**29, 2**29])``), instead of letting XLA abort the process.
    ``strides``: an explicit layout (``empty_strided``) whose storage size is checked.
    ``sizes_given``: the caller passed ``shape`` (a size past int64 is then torch's parser
    TypeError); False for a size computed from other arguments."""
    shape = [int(n) for n in shape]
    if strides is None:
        stride = 1
        for n in reversed(shape[1:]):
            stride *= max(n, 1)
            if stride > _I64_MAX:
                _check_size_fits(shape, sizes_given)
                raise RuntimeError(f"Stride calculation overflowed for sizes {shape}; use smaller sizes")
        numel = 1
        for n in shape:
            numel *= n
        count = numel
    else:
        count = 0 if 0 in shape else 1 + sum((n - 1) * abs(int(s)) for n, s in zip(shape, strides))
    if count * itemsize > _I64_MAX:
        _check_size_fits(shape, sizes_given)
        raise RuntimeError(f"Storage size calculation overflowed with sizes={shape}"
                           + ("" if strides is None else f" and strides={list(strides)}"))


def check_result_size(shape, itemsize, api, view=False):
    """RuntimeError, as torch's, before an op (``expand``, ``repeat``, ``repeat_interleave``...)
    hands XLA a result whose byte size does not fit int64: XLA aborts the whole process on such
    a shape (NOTE [result size past int64]). ``view``: torch's result is a view that allocates
    nothing (``expand``): torch only fails when the element count itself overflows ("numel:
    integer multiplication overflow"), so a count that fits but whose bytes do not gets a message
    saying tracegrad materialises the result. One ``math.prod`` on the common path."""
    numel = math.prod(shape)
    if numel * itemsize <= _I64_MAX:
        return
    if not view:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} ({api}(): its result would "
                           f"take more than 2**63 bytes; use smaller sizes or counts)")
    if numel > _I64_MAX:
        raise RuntimeError(f"numel: integer multiplication overflow ({api}() to sizes {list(shape)}); use smaller sizes")
    raise RuntimeError(f"{api}(): the result of sizes {list(shape)} would take more than 2**63 bytes; tracegrad "
                       f"materialises it (torch's is a view of no new storage): use smaller sizes")


# NOTE [result size past int64]
# XLA checks a shape's byte size when the op is compiled and, when the product of the dims times
# the element size overflows int64, aborts the process from C++ ("overflow in static extent
# product") -- no Python exception, nothing a caller can catch. The factories size their result
# with ``check_storage_size``; the ops whose result shape is computed from the caller's counts
# (expand/broadcast_to, repeat/tile, repeat_interleave, vander's N, interpolate's size) call
# ``check_result_size`` before dispatching, which turns that abort into torch's RuntimeError.


def _fresh(shape, d, device, requires_grad, make, sizes_given=True):
    """A factory's tensor of ``shape`` and dtype ``d``: the array ``make()`` returns, or on the
    'meta' device none at all (``make`` is not called: nothing is allocated or drawn, NOTE
    [meta tensors] in meta.py)."""
    check_storage_size(shape, d.itemsize, sizes_given=sizes_given)
    if _is_meta(device):
        return _finish(abstract(shape, d.np), d, device, requires_grad)
    try:
        array = make()
    except (RuntimeError, MemoryError) as e:      # NOTE [out of memory] in _ops/errors.py
        oom = out_of_memory(e, f"tracegrad: a new tensor of shape {list(shape)} and dtype {d}",
                            nbytes=int(np.prod(shape, dtype=np.float64)) * d.itemsize)
        if oom is None:
            raise
        raise oom from None
    return _finish(array, d, device, requires_grad)


def _like_device(input, device):
    """A ``*_like`` factory's device: ``device``, else input's when input is meta (as torch, whose
    ``*_like`` keep the input's device), else None (JAX's default placement)."""
    if device is None and type(input._st.array) is _Abstract:
        return "meta"
    return device or None


@with_x64
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """Mirrors ``torch.tensor``: always copies ``data`` (nested lists/tuples of numbers or 0-d
    tensors, numpy arrays, tensors), except a storage, which the 1-D result shares as torch's
    (``storage_types.tensor_on_storage``). TypeError for data it cannot read; RuntimeError when
    ``requires_grad=True`` with a non-floating dtype. A tensor ``data`` is copied without its
    history, with torch's UserWarning recommending ``detach().clone()``."""
    check_pin_memory(pin_memory, device)
    if isinstance(data, (Storage, TypedStorage)):   # a tensor sharing the storage, as torch
        from .storage_types import tensor_on_storage
        return tensor_on_storage(data, dtype, requires_grad)
    array = _numpy_input(data)
    if array is not None:
        return _from_stand_in(data, array, dtype, device, requires_grad)
    if isinstance(data, Tensor):
        warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
             "or sourceTensor.detach().clone().requires_grad_(True), rather than "
             "torch.tensor(sourceTensor).", UserWarning)
    arr, d = to_array(data, dtype)
    t = _finish(arr, d, device, requires_grad)
    if _state.CAPTURE[0] is not None and not isinstance(data, Tensor):
        _state.CAPTURE[0].constants.made(t, data, dtype)   # NOTE [constants in a trace]
    if type(data) is np.ndarray and not t._chain:
        order = _numpy_order(data)     # torch's copy keeps the array's dim order (in a trace too)
        if order is not None:
            _mf.lay_out(t, order)
    return t


def as_tensor(data, dtype=None, device=None):
    """Mirrors ``torch.as_tensor``: returns ``data`` itself when it is a tensor of the requested
    dtype/device; a tensor sharing a writable ndarray's memory when no conversion is asked for
    (as ``from_numpy``, NOTE [numpy bridge]); otherwise converts (a copy)."""
    if isinstance(data, Tensor):
        if (dtype is None or _dt.to_dtype(dtype) is data.dtype) and device is None:
            return data
        return data.to(dtype=dtype, device=device)
    array = _numpy_input(data)
    if array is not None:
        shares = _can_share(data, dtype, device)
        return _shared_numpy_input(_from_stand_in(data, array, dtype, device, False, dense_only=shares), shares)
    if type(data) is np.ndarray and _can_share(data, dtype, device):
        return from_numpy(data)
    if type(data) is np.ndarray and not data.flags.writeable:
        _warn_read_only()       # torch's as_tensor goes through from_numpy, converting or not
    return tensor(data, dtype=dtype, device=device)


def _warn_read_only():
    """torch's warning for a read-only ndarray given to ``from_numpy``/``as_tensor`` (not to
    ``tensor``, which copies): once per process, as its TORCH_WARN_ONCE, one for both functions
    (every time under ``set_warn_always(True)``); its first sentence as torch words it."""
    warn_once("The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
              "tracegrad copies the array, so writes to the tensor do not reach it (copy the array, or make "
              "it writable, to silence this warning).", UserWarning, key="numpy-not-writable")


def _can_share(arr, dtype, device) -> bool:
    """Whether torch's ``as_tensor(arr, dtype, device)`` aliases ``arr``: a writable array in
    native byte order with non-negative strides, of a dtype torch has, kept as it is, on the CPU."""
    if not arr.flags.writeable or not arr.dtype.isnative or any(st < 0 or st % arr.itemsize for st in arr.strides):
        return False
    try:
        d = _dt.from_numpy_dtype(arr.dtype)
    except TypeError:
        return False
    if dtype is not None and _dt.to_dtype(dtype) is not d:
        return False
    return device is None or _device(device).type == "cpu"


@with_x64
def from_numpy(ndarray, /):
    """Mirrors ``torch.from_numpy``: a tensor of ``ndarray``'s shape and dtype that shares its
    memory: writes through either are seen by the other (NOTE [numpy bridge]). Differs from
    torch only for a large array (over 256 KiB) at an address XLA cannot use in place (not 64-byte
    aligned, or strided): the tensor starts from a copy, writes to the tensor still reach the
    array, but later writes to the array are not seen. A read-only array is copied (with torch's
    warning), and so is any array inside a compiled region or off the CPU backend.
    TypeError for non-arrays or unsupported dtypes; ValueError for a negative stride."""
    array = _numpy_input(ndarray)
    if array is not None:
        return _shared_numpy_input(_from_stand_in(ndarray, array, None, None, False, dense_only=True), True)
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy(): expected an ndarray (got {type(ndarray).__name__}); pass an array, or use "
                        f"tensor() for other data")
    check_numpy_strides(ndarray)
    _dt.from_numpy_dtype(ndarray.dtype)
    if not ndarray.flags.writeable:
        _warn_read_only()
    elif _state.CAPTURE[0] is None:
        order = _numpy_order(ndarray, dense_only=True)
        if order is not None:
            # a dense array in another dim order (a transposed one): the storage shares its
            # bytes in their physical order, the tensor lays it out back (torch's strides)
            st = storage_for_numpy(np.transpose(ndarray, order))
            if st is not None:
                return _mf.adopt_layout(Tensor._make(st.array), st, order)
        else:
            st = storage_for_numpy(ndarray)
            if st is not None:
                t = Tensor._make(st.array)
                t._st = st
                return t
    t = Tensor._make(to_device(np.array(ndarray)))      # a copy the user cannot write
    # laid out as eager's tensor in a trace too (an array argument traced as itself: its
    # ``stride()`` and ``view`` as eagerly, NOTE [numpy arguments])
    order = _numpy_order(ndarray, dense_only=True)
    if order is not None:
        _mf.lay_out(t, order)
    if ndarray.flags.writeable and _state.CAPTURE[0] is not None:
        _state.CAPTURE[0].numpy_copy(t._st)        # a write to it is a graph break
    return t


def _numpy_input(data):
    """The traced value of ``data`` when it is the stand-in of a compiled function's NumPy
    argument (NOTE [numpy arguments] in ``_lowering/numpy_args.py``), else None."""
    cap = _state.CAPTURE[0]
    stand_in = cap.numpy_inputs.get(id(data)) if cap is not None and cap.numpy_inputs else None
    return None if stand_in is None else stand_in.value()


def _shared_numpy_input(t, shares):
    """``t``, made from a NumPy argument's stand-in where eager's tensor shares the caller's
    array (``shares``): a copy in the program, so writing it in place, or keeping it past the
    call, is a graph break."""
    if shares:
        _state.CAPTURE[0].numpy_copy(t._st, argument=True)
    return t


@with_x64
def _from_stand_in(stand_in, array, dtype, device, requires_grad, dense_only=False):
    """The tensor a conversion makes from a NumPy argument's stand-in (traced value ``array``),
    with the layout eager's tensor gets from the caller's array (``_numpy_order``;
    ``dense_only`` where eagerly it shares the array): a Fortran-ordered batch (pandas'
    ``df.values``) is a column-major tensor eagerly, whose ``stride()``, ``is_contiguous()``
    and ``view(-1)`` (an error) the trace must answer as eagerly. The stand-in answers the
    array's shape and strides, which key the program (NOTE [numpy arguments])."""
    d = _dt.to_dtype(dtype) if dtype is not None else _dt.from_numpy_dtype(stand_in.dtype)
    t = _finish(jnp.asarray(array, d.np), d, device, requires_grad)
    if t._chain or type(t._st.array) is _Abstract:
        return t
    order = _numpy_order(stand_in, dense_only)
    return t if order is None else _mf.lay_out(t, order)


def _numpy_order(host, dense_only=False):
    """The dims, outermost first, in which torch lays out a tensor made from ndarray ``host``
    (NOTE [storage layouts]), or None for row-major: a non-overlapping and dense array keeps
    its strides (``from_numpy`` of ``a.T``: (1, n)); another (a slice with gaps) gets dense
    strides in its stride order where it is copied (``torch.tensor``, as ATen's empty_like)
    and row-major where it is shared (``dense_only``: torch keeps its strides over the whole
    buffer, a strided view tracegrad's storages do not give)."""
    if host.ndim < 2 or host.flags.c_contiguous or host.size == 0:
        return None
    shape = host.shape
    strides = tuple(st // host.itemsize for st in host.strides)
    if _mf.non_overlapping_and_dense(shape, strides):
        order = _mf.dense_order(shape, strides)
    elif dense_only:
        return None
    else:
        order = _mf.iterator_order(shape, (strides,))
    return None if order == tuple(sorted(order)) else order


@with_x64
def from_file_array(ndarray):
    """``from_numpy`` for an array the library read from a file itself (``torch.load``): those
    are often read-only views of the file's bytes, which only the loader holds, so the
    read-only warning meant for a user's array would be noise (torch.load does not warn).
    Copied: a state dict's arrays have many shapes, each of which ``asarray`` would compile for
    (NOTE [host arrays]), and the file's bytes must not become a tensor's memory."""
    return Tensor._make(to_device(np.array(ndarray)))


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """Mirrors ``torch.asarray``; ValueError for ``copy=False`` where a tensor or a NumPy array
    would need another dtype (no alias can change it) and for a Python number or list (nothing
    to alias), as torch; TypeError for a ``copy`` that is not None or a bool."""
    if copy is not None and type(copy) is not bool:
        kind = type(copy).__name__
        kind = kind if type(copy).__module__ == "builtins" else f"{type(copy).__module__}.{kind}"
        raise TypeError(f"asarray(): argument 'copy' must be bool, not {kind}; pass None, True or False")
    if copy is False and type(obj) in (list, tuple, int, float, complex, bool):
        raise ValueError("asarray(): can't alias arbitrary sequence into a tensor; pass copy=None (or True) for a "
                         "Python number or list")
    if copy is False and dtype is not None and isinstance(obj, (Tensor, np.ndarray)):
        have = obj.dtype if isinstance(obj, Tensor) else as_tensor(obj[:0] if obj.ndim else obj).dtype
        if _dt.to_dtype(dtype) is not have:
            raise ValueError(f"asarray(): can't alias tensor with dtype '{_SCALAR_NAME_OF(have)}' into dtype "
                             f"'{_SCALAR_NAME_OF(_dt.to_dtype(dtype))}'; pass copy=None or copy=True")
    if _plain_buffer(obj):
        t = _from_buffer(obj, _fdt(dtype))
        if device is not None:
            t = t.to(device)
        if copy:
            t = t.clone()
    elif copy and isinstance(obj, np.ndarray):     # (a compiled function's NumPy stand-in too)
        t = tensor(obj, dtype=dtype, device=device)
    else:
        t = as_tensor(obj, dtype=dtype, device=device)
        if copy and t is obj:
            # torch copies a tensor for copy=True even where no conversion is needed: a clone,
            # differentiable (CloneBackward0) as torch's, never the caller's storage
            t = obj.clone()
    # torch 2.13: an unspecified requires_grad keeps the source's; an explicit False turns it off
    # on the result (the source tensor itself when the result is that alias and a leaf, as torch)
    if requires_grad is None:
        return t
    if requires_grad:
        return t._factory_requires_grad()
    if isinstance(t, Tensor) and t.requires_grad:
        if t.is_leaf:
            t.requires_grad_(False)
        else:
            t = t.detach()
    return t


def _plain_buffer(obj):
    """torch's asarray reads an object with the buffer protocol that is neither a tensor, an
    array (numpy's or a DLPack/array-interface producer) nor a numpy scalar as raw bytes
    (bytes, bytearray, memoryview, array.array), before trying it as a sequence."""
    t = type(obj)
    if isinstance(obj, (Tensor, np.ndarray, np.generic)) or any(
            hasattr(t, a) for a in ("__dlpack__", "__array__", "__array_interface__")):
        return False
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def _from_buffer(obj, d):
    """``obj``'s bytes as a 1-d tensor of ``d`` (the default dtype when none is asked, as torch):
    aliasing a writable buffer (the numpy bridge), copying a read-only one."""
    mv = memoryview(obj).cast("B")
    item = np.dtype(d.np).itemsize
    if len(mv) == 0:
        raise ValueError("asarray(): both buffer length (0) and count (-1) must not be 0")
    if len(mv) % item:
        raise ValueError(f"asarray(): buffer length ({len(mv)} bytes) after offset (0 bytes) must be a multiple of "
                         f"element size ({item}); pass a dtype whose size divides it")
    arr = np.frombuffer(mv, dtype=d.np)
    if mv.readonly:
        return Tensor._make(to_device(arr.copy()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return from_numpy(arr)


def _SCALAR_NAME_OF(d):
    # torch's scalar-type name of a dtype (Float, Long) for messages
    return getattr(d, "_scalar_name", None) or d.name


def _size_keyword(fn):
    """torch's ``zeros(size=(2, 3))`` spelling of ``zeros(2, 3)`` for the ``*size`` factories
    (gat/main.py: ``torch.empty(size=(in_features, out_features))``); TypeError, as torch, when no
    size is given at all."""
    @functools.wraps(fn)
    def with_size(*size, **kwargs):
        if not size and "size" not in kwargs:   # torch's size is required (zeros(()) is the 0-d tensor)
            raise TypeError(f'{fn.__name__}() missing 1 required positional arguments: "size"; pass the sizes, '
                            f"or () for a 0-d tensor")
        if "size" in kwargs:
            if size:
                raise TypeError(f"{fn.__name__}() got multiple values for argument 'size'")
            size = (kwargs.pop("size"),)
            if not isinstance(size[0], (tuple, list)):   # Size is a tuple; size=2 is the parser's TypeError
                raise TypeError(f"{fn.__name__}(): argument 'size' must be tuple of ints, not {type(size[0]).__name__}; "
                                f"pass size=(n,) or the sizes positionally")
        return fn(*size, **kwargs)
    return with_size


_COMPRESSED = ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")


def _dense_layout(layout, api, ndim=None):
    """NotImplementedError for a layout other than strided: these factories make dense tensors
    (a sparse COO tensor comes from ``tracegrad.sparse_coo_tensor`` or ``Tensor.to_sparse``).
    Where torch itself refuses the layout, its class instead: RuntimeError for a compressed
    layout (csr/csc/bsr/bsc) of fewer than 2 dims (``ndim``: the result's rank, or a callable
    giving it; torch's eye and arange build a 1-d tensor first) and for ``ones``/``full`` with
    ``sparse_coo`` (torch: "full(...) is not implemented for sparse layout")."""
    if layout is not None and layout is not strided:
        if not isinstance(layout, type(strided)):
            raise TypeError(f"{api}(): argument 'layout' must be torch.layout, not {type(layout).__name__}; "
                            "pass tracegrad.strided (or leave it out)")
        if layout.name in _COMPRESSED and ndim is not None:
            try:
                n = ndim() if callable(ndim) else ndim
            except (TypeError, ValueError):   # a bad size: the size's own error comes later
                n = None
            if n is not None and n < 2:
                raise RuntimeError(f"tracegrad.{api}: Only batched sparse compressed (non-block) tensors are "
                                   f"supported, but got a {n}-d size for layout={layout!r}; a compressed "
                                   "layout needs at least 2 dims")
        if layout is sparse_coo and api in ("ones", "full"):
            raise RuntimeError(f"tracegrad.{api}: full(...) is not implemented for sparse layout; build "
                               "the dense tensor and call .to_sparse()")
        raise NotImplementedError(f"tracegrad.{api}: layout={layout!r} is not supported here; build a sparse COO "
                                  "tensor with tracegrad.sparse_coo_tensor or Tensor.to_sparse()")


# the sparse COO constructor lives in the API layer above this one (_api/sparse_coo.py); it fills
# this slot on import, so that zeros/empty/zeros_like can give torch's sparse result here
SPARSE_COO_TENSOR = [None]


def _sparse_zeros(shape, dtype, device, requires_grad):
    """The all-zero sparse COO tensor (no stored entries) that torch's ``zeros``/``empty``/
    ``zeros_like`` give for ``layout=torch.sparse_coo``."""
    d = _fdt(dtype)
    return SPARSE_COO_TENSOR[0](zeros(len(shape), 0, dtype=_dt.int64), zeros(0, dtype=d), tuple(shape),
                                device=device, requires_grad=requires_grad)


def _fdt(dtype):
    return _dt.to_dtype(dtype) if dtype is not None else _dt.get_default_dtype()


@with_x64
@accepts_out(dtype_from_out=True, keep_shape="resize")
@_size_keyword
def zeros(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False):
    """Mirrors ``torch.zeros(*size)``; default dtype float32. NotImplementedError for a sparse layout."""
    check_pin_memory(pin_memory, device)
    if layout is sparse_coo and out is None:   # torch: a sparse COO tensor with no stored entries
        return _sparse_zeros(size_tuple(size), dtype, device, requires_grad)
    _dense_layout(layout, "zeros", lambda: len(size_tuple(size)))
    d = _fdt(dtype)
    shape = size_tuple(size)
    return _fresh(shape, d, device, requires_grad, lambda: filled(shape, 0, d.np))


@with_x64
@accepts_out(dtype_from_out=True, keep_shape="resize")
@_size_keyword
def ones(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False):
    """Mirrors ``torch.ones(*size)``; default dtype float32. NotImplementedError for a sparse layout."""
    check_pin_memory(pin_memory, device)
    _dense_layout(layout, "ones", lambda: len(size_tuple(size)))
    d = _fdt(dtype)
    shape = size_tuple(size)
    return _fresh(shape, d, device, requires_grad, lambda: filled(shape, 1, d.np))


@accepts_out(dtype_from_out=True, keep_shape="resize")
@_size_keyword
def empty(*size, dtype=None, device=None, requires_grad=False, memory_format=None, out=None, layout=None, pin_memory=False):
    """Mirrors ``torch.empty``; ``memory_format`` (default ``contiguous_format``) lays it out
    (``channels_last`` needs 4 dims, ``channels_last_3d`` 5: RuntimeError otherwise, and for
    ``preserve_format``, as torch). Differs from torch: the memory is zero-filled (JAX has no
    uninitialised arrays), or NaN / the integer max under deterministic algorithms with
    ``utils.deterministic.fill_uninitialized_memory`` (as torch then)."""
    check_pin_memory(pin_memory, device)
    if layout is sparse_coo and out is None and memory_format is None:   # as zeros: torch's empty sparse tensor
        return _sparse_zeros(size_tuple(size), dtype, device, requires_grad)
    _dense_layout(layout, "empty", lambda: len(size_tuple(size)))
    _mf.check_format(memory_format, "empty")
    if memory_format is _mf.preserve_format:
        raise RuntimeError("empty(): unsupported memory format Preserve; pass torch.contiguous_format, "
                           "torch.channels_last or torch.channels_last_3d")
    order = _mf.format_order(memory_format, len(size_tuple(size)))
    out = zeros(*size, dtype=dtype, device=device)
    fill = uninitialized_fill(out.dtype)
    if fill is not None:
        out.fill_(fill)
    return _mf.lay_out(out._factory_requires_grad() if requires_grad else out, order)


def uninitialized_fill(dtype):
    """What torch writes into new, uninitialised memory of ``dtype``: None (tracegrad's zeros
    stand) unless deterministic algorithms and ``torch.utils.deterministic.fill_uninitialized_memory``
    are both on; then NaN for floating/complex dtypes, True for bool, the max for integers."""
    cap = _state.CAPTURE[0]
    if cap is not None:     # a program holds while both flags are what its trace read (dropout's mask)
        cap.guard_attribute(_runtime, "_deterministic")
        cap.guard_attribute(_state, "FILL_UNINITIALIZED")
    if not (_runtime._deterministic[0] and _state.FILL_UNINITIALIZED[0]):
        return None
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    return True if dtype is _dt.bool_ else int(np.iinfo(dtype.np).max)


@with_x64
@accepts_out(dtype_from_out=True, keep_shape="resize")
def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False):
    """Mirrors ``torch.full``: dtype inferred from ``fill_value`` (bool/int64/float32).
    TypeError when ``fill_value`` is not a number (or a 0-d tensor); RuntimeError when it does
    not fit an integer ``dtype``."""
    check_pin_memory(pin_memory, device)
    _dense_layout(layout, "full", lambda: len(size))
    if not isinstance(size, (tuple, list)):   # no *size form (Size is a tuple)
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}; "
                        "pass the size as a tuple: full((n,), value)")
    return _full(size, fill_value, dtype, device, requires_grad, "full")


def _check_fill(fill_value, api):
    if isinstance(fill_value, Tensor):
        if fill_value.ndim:
            raise TypeError(f"{api}(): argument 'fill_value' must be a Number or a 0-dim tensor, got a tensor of "
                            f"shape {list(fill_value.shape)}")
        return fill_value.item()
    # torch's Number is a Python int, float or complex or a numpy scalar: a Fraction or a
    # Decimal (numbers.Number too) is refused by its argument parser
    if not isinstance(fill_value, (int, float, complex, np.number, np.bool_)):
        raise TypeError(f"{api}(): argument 'fill_value' (position 2) must be Number, not "
                        f"{type(fill_value).__name__}")
    big = int_past_64_bits(fill_value, api)   # before any dtype: the parser reads it as int64/uint64
    if big is not None:
        raise big
    return fill_value


@with_x64
def _full(size, fill_value, dtype, device, requires_grad, api):
    fill_value = _check_fill(fill_value, api)
    d = _dt.to_dtype(dtype) if dtype is not None else _dt.scalar_dtype(fill_value)
    if isinstance(fill_value, (complex, np.complexfloating)) and not d.is_complex and d is not _dt.bool_:
        if fill_value.imag:   # torch converts the value to the real dtype: an imaginary part does not fit
            raise RuntimeError(f"{api}(): value cannot be converted to type {d.name} without overflow "
                               f"(fill_value={fill_value}); pass a complex dtype or a real fill_value")
        fill_value = fill_value.real
    if isinstance(fill_value, numbers.Integral) and not isinstance(fill_value, (bool, np.bool_)) and d._cat == 1:
        lo, hi = int_bounds(d)
        if not lo <= fill_value <= hi:
            raise RuntimeError(f"{api}(): value cannot be converted to type {d.name} without overflow "
                               f"(fill_value={fill_value})")
    elif isinstance(fill_value, float) and d._cat == 1:   # nan, inf and out-of-range floats
        check_fits(np.asarray(fill_value), d, f"{api}()")
    shape = size_tuple((size,))
    check_float_fits(fill_value, d, f"{api}()", through_float=int(np.prod(shape, dtype=np.int64)) == 1)
    return _fresh(shape, d, device, requires_grad, lambda: filled(shape, fill_value, d.np))


_NO_M = object()   # eye(n): m not given (None given is torch's TypeError)


@with_x64
@accepts_out(dtype_from_out=True, keep_shape="resize")
def eye(n, m=_NO_M, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """Mirrors ``torch.eye(n, m=None)``: an ``(n, m)`` identity matrix. RuntimeError for a
    negative ``n`` or ``m``; NotImplementedError for a sparse layout."""
    check_pin_memory(pin_memory, device)
    _dense_layout(layout, "eye", 1)
    if m is _NO_M:
        m = None
    elif m is None:   # torch's overloads take eye(n) or eye(n, m) with an int m
        raise TypeError("eye(): argument 'm' must be int, not NoneType; call eye(n) for a square matrix")
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"eye(): {name} must be greater or equal to 0, got {v}")
    d = _fdt(dtype)
    m = n if m is None else m
    return _fresh((n, m), d, device, requires_grad, lambda: put(np.eye(n, m, dtype=d.np)) if small((n, m), d.np)
                  else jnp.eye(n, m, dtype=d.np))


# an argument left out (arange's start/end, bernoulli's p), where torch refuses an explicit None
_NO_P = type("_NoP", (), {"__repr__": lambda self: "<absent>"})()


@with_x64
@accepts_out(dtype_from_out=True, keep_shape="warn")
def arange(start=_NO_P, end=_NO_P, step=1, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
           pin_memory=False):
    """Mirrors ``torch.arange``: int64 when start/end/step are all integers, else float32.
    With an integer ``dtype`` the values are ``int(start) + i * int(step)``; the length is
    counted on the truncated numbers for int64 and from the numbers as given (in double) for the
    other integer dtypes, as torch. RuntimeError for a zero step, a non-finite bound, or bounds
    inconsistent with the step's sign (``arange(0, 5, -1)``); ValueError for an int64 step that
    truncates to 0; NotImplementedError for ``dtype=bool`` or a sparse layout."""
    check_pin_memory(pin_memory, device)
    _dense_layout(layout, "arange", 1)
    if start is None or end is None:   # torch's overloads take numbers (arange(end) leaves the end out)
        raise TypeError(f"arange() received an invalid combination of arguments: got "
                        f"{'start' if start is None else 'end'}=None; pass arange(end) or arange(start, end, step)")
    if end is _NO_P:
        if start is _NO_P:
            raise TypeError("arange() missing required argument 'end'")
        start, end = 0, start
    elif start is _NO_P:   # arange(end=5)
        start = 0
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, Tensor) and v.ndim:   # torch's parser takes only a 0-d tensor as a Number
            raise TypeError(f"arange(): argument '{name}' must be Number, not Tensor (a tensor with {v.ndim} "
                            f"dim(s)); pass a number or a 0-d tensor")
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    for i, (name, v) in enumerate(zip(("start", "end", "step"), vals)):   # a list, a string, None: torch's parser
        if isinstance(v, complex):   # torch reads a complex bound as a double: only a zero imaginary part fits
            if v.imag:
                raise RuntimeError(f"arange(): value cannot be converted to type double without overflow "
                                   f"({name}={v}); pass real numbers")
            vals[i] = v = v.real
        if not isinstance(v, (int, float, np.number)):
            raise TypeError(f"arange(): argument '{name}' must be Number, not {type(v).__name__}; pass numbers")
        big = int_past_64_bits(v, "arange")   # torch's parser: past 64 bits, OverflowError
        if big is not None:
            raise big
    if dtype is None:
        # bools count as integers, as torch (arange(False, True) is int64)
        d = _dt.int64 if all(isinstance(v, (int, np.integer)) for v in vals) else _dt.get_default_dtype()
    else:
        d = _dt.to_dtype(dtype)
    limited.check_dtype("arange()", d)
    if d is _dt.bool_:
        raise NotImplementedError("arange(): \"arange_cpu\" not implemented for 'Bool'; use an integer dtype "
                                  "and compare, or .bool() the result")
    if d.is_complex:   # torch's arange kernel has no complex instance (linspace has)
        raise NotImplementedError(f"arange(): \"arange_cpu\" not implemented for {d}; make a real range and "
                                  f".to({d}) it, or use linspace")
    if d._cat == 1 and any(isinstance(v, int) and v > INT64_MAX for v in vals):
        # an int in [2**63, 2**64) is a uint64 Scalar to torch: its checked integer conversion refuses it
        raise RuntimeError(f"arange(): value cannot be converted to type {d.name} without overflow "
                           f"(start={vals[0]}, end={vals[1]}, step={vals[2]})")
    # torch checks only the bounds for finiteness: an infinite step is a range of at most one
    # element's width (empty for floats) and a NaN step fails its nonzero test
    if not all(np.isfinite(float(v)) for v in vals[:2]):   # float(): numpy refuses an int past int64
        raise RuntimeError(f"arange(): unsupported range: {vals[0]} -> {vals[1]} (step {vals[2]})")
    if not (vals[2] > 0 or vals[2] < 0):
        raise RuntimeError(f"arange(): step must be nonzero (got step={vals[2]})")
    # int64 truncates the three numbers before anything else; the other dtypes check and count
    # with them as given (in double) and truncate only start and step to make the values
    if (vals[2] > 0 and vals[1] < vals[0]) or (vals[2] < 0 and vals[1] > vals[0]):
        raise RuntimeError(f"arange(): upper bound and lower bound inconsistent with step sign (start={vals[0]}, "
                           f"end={vals[1]}, step={vals[2]})")
    if not d.is_floating_point and not np.isfinite(float(vals[2])):   # torch's checked cast to int64
        raise RuntimeError(f"arange(): value cannot be converted to type int64_t without overflow "
                           f"(step={vals[2]}); pass a finite step")
    ints = [int(v) for v in vals] if not d.is_floating_point else None
    lo, hi, st = ints if d is _dt.int64 else vals
    if st == 0:   # torch's class for an int64 step that truncates to 0
        raise ValueError(f"arange(): step must be nonzero (step={vals[2]} truncates to 0 for int64)")
    if d is _dt.int64:
        n = abs(hi - lo + st - (1 if st > 0 else -1)) // abs(st)
    else:
        n = int(np.ceil((float(hi) - float(lo)) / float(st)))

    def values():
        if d.is_floating_point:
            return to_device(arange_values(float(vals[0]), float(vals[2]), max(n, 0), d.np))
        arr = np.arange(n, dtype=np.int64) * ints[2] + ints[0]
        return to_device(arr.astype(d.np))
    return _fresh((max(n, 0),), d, device, requires_grad, values, sizes_given=False)


@with_x64
@accepts_out(dtype_from_out=True, keep_shape=True)
def range(start, end, step=1, *, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    """Mirrors the deprecated ``torch.range``: like ``arange`` but *including* ``end``, and
    float32 by default. Warns as torch does; prefer ``arange``."""
    _dense_layout(layout, "range", 1)
    warn("torch.range is deprecated and will be removed in a future release because its "
         "behavior is inconsistent with Python's range builtin. Instead, use torch.arange, "
         "which produces values in [start, end).", UserWarning)   # the user's line, under with_x64
    d = _fdt(dtype)
    # torch takes 0-d tensors for the bounds and step as Scalars
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if not (step > 0 or step < 0):   # a NaN step fails torch's nonzero test too
        raise RuntimeError(f"range(): step must be nonzero (got step={step})")
    # torch's range kernel checks the bounds before sizing: a non-finite bound, or an end on the
    # wrong side of start for the step's sign, is its RuntimeError (not an empty tensor)
    if not (np.isfinite(float(start)) and np.isfinite(float(end))):
        raise RuntimeError(f"range(): unsupported range: {start} -> {end}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError(f"range(): upper bound and lower bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    # torch sizes and fills it in the accumulate type: float for the 16-bit dtypes (a float32
    # quotient can truncate one element shorter than the double one), double otherwise
    acc = np.float32 if d.is_floating_point and d.itemsize == 2 else np.float64
    start, end, step = acc(start), acc(end), acc(step)
    count = (end - start) / step + acc(1)
    if not count < 2.0 ** 63:   # torch's int64 size overflows: its RuntimeError, not a huge allocation
        raise RuntimeError(f"range(): {start} -> {end} with step {step} has too many elements ({count}) "
                           f"to be a tensor size; pass a larger step")
    n = int(count)
    arr = np.arange(max(n, 0), dtype=acc) * step + start
    return _finish(to_device(arr.astype(d.np)), d, device, requires_grad)


def _check_steps(steps, api):
    if isinstance(steps, Tensor):
        # torch's parser takes a 0-d integer tensor as the int ``steps``; a one-element tensor of
        # more dims is no int to it (TypeError), though ``.item()`` would read it
        if steps.ndim:
            raise TypeError(f"{api}(): argument 'steps' must be int, not a {steps.ndim}-d Tensor; pass an int "
                            "or a 0-d integer tensor")
        steps = steps.item()
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool):
        raise TypeError(f"{api}(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError(f"{api}(): number of steps must be non-negative, got steps={steps}")
    return int(steps)


def _endpoints(start, end, api):
    """linspace/logspace endpoints as numbers; torch takes 0-d tensors too (RuntimeError otherwise)."""
    out = []
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, Tensor):
            if v.ndim != 0:
                raise RuntimeError(f"{api} only supports 0-dimensional start and end tensors, but got {name} "
                                   f"with {v.ndim} dimension(s).")
            v = v.item()
        out.append(v)
    return out


def _spaced(start, end, steps, dtype, api):
    """``steps`` points from ``start`` to ``end`` as torch's kernel computes them: the endpoints
    cast to ``dtype`` first (an integer dtype truncates them), the step in double, the first half
    counted up from ``start`` and the second half down from ``end`` (so both ends are exact).
    Returns the float64/complex128 numpy points and the result dtype."""
    start, end = _endpoints(start, end, api)
    steps = _check_steps(steps, api)
    if dtype is not None:
        d = _dt.to_dtype(dtype)
        if d is _dt.bool_:
            raise NotImplementedError(f"\"{api}_cpu\" not implemented for 'Bool': make the points in an integer "
                                      "dtype and compare")
        if not d.is_complex and any(isinstance(v, complex) for v in (start, end)):
            # (the imaginary parts would be dropped)
            inferred = _dt.SCALAR_NAMES[_dt.to_complex(_dt.get_default_dtype()).name]
            raise RuntimeError(f"torch.{api}(): inferred dtype {inferred} can't be safely cast to passed dtype "
                               f"{_dt.SCALAR_NAMES[d.name]}; pass a complex dtype or real endpoints")
    elif any(isinstance(v, complex) for v in (start, end)):
        d = _dt.to_complex(_dt.get_default_dtype())
    else:
        d = _dt.get_default_dtype()
    for v in (start, end):   # torch converts each endpoint to the dtype, checked (1e39 into float32)
        check_float_fits(v, d, f"torch.{api}()")
    work = np.complex128 if d.is_complex else np.float64
    # the points are made in float64 on the host: sized before NumPy refuses them (its ValueError)
    check_result_size((steps,), np.dtype(work).itemsize, api)
    lo, hi = (np.asarray(v).astype(d.np).astype(work) for v in (start, end))
    i = np.arange(steps, dtype=np.float64)
    step = (hi - lo) / max(steps - 1, 1)
    from_start = (i < steps // 2) | (steps == 1)   # a single point is ``start``
    return np.where(from_start, lo + step * i, hi - step * (steps - 1 - i)), d


@with_x64
@accepts_out(dtype_from_out=True, keep_shape=True)
def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
             pin_memory=False):
    """Mirrors ``torch.linspace``: ``steps`` evenly spaced points from start to end inclusive
    (numbers or 0-d tensors). Dtype: ``dtype``, else complex64 for a complex endpoint, else the
    default dtype. An integer dtype truncates the endpoints and then each point (as torch).
    RuntimeError for negative ``steps`` or a tensor endpoint that is not 0-d."""
    check_pin_memory(pin_memory, device)
    _dense_layout(layout, "linspace", 1)
    points, d = _spaced(start, end, steps, dtype, "linspace")
    exact = torch_linspace(*_endpoints(start, end, "linspace"), len(points), d.np)   # torch's last-place rounding
    return _finish(to_device(points.astype(d.np) if exact is None else exact), d, device, requires_grad)


@with_x64
@accepts_out(dtype_from_out=True, keep_shape=True)
def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    """Mirrors ``torch.logspace``: ``base ** linspace(start, end, steps)``, computed in double
    and cast to the dtype (an integer dtype truncates the exponents' endpoints and the powers,
    as torch). RuntimeError for negative ``steps`` or a tensor endpoint that is not 0-d."""
    check_pin_memory(pin_memory, device)
    _dense_layout(layout, "logspace", 1)
    if not isinstance(base, (numbers.Real, Tensor)):   # torch's parser takes a real number as the base
        raise TypeError(f"logspace(): argument 'base' must be float, not {type(base).__name__}")
    exponents, d = _spaced(start, end, steps, dtype, "logspace")
    with np.errstate(all="ignore"):
        points = np.power(np.asarray(base, dtype=exponents.dtype), exponents)
    return _finish(to_device(points.astype(d.np)), d, device, requires_grad)


def _check_like(input, api):
    """torch's TypeError for a ``*_like`` factory given a non-Tensor."""
    if not isinstance(input, Tensor):
        raise not_a_tensor(api, input)


def _like(fn):
    def like(input, *args, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
             pin_memory=False):
        check_pin_memory(pin_memory, device)
        _check_like(input, fn.__name__ + "_like")
        # a sparse input would give torch a sparse result: not a silently dense one here
        lay = input.layout if layout is None else layout
        if fn is zeros and lay is sparse_coo and memory_format is None and not args:
            # torch's zeros_like for a sparse COO layout (asked for, or the input's): no stored entries
            return _sparse_zeros(input.shape, dtype if dtype is not None else input.dtype,
                                 _like_device(input, device), requires_grad)
        _dense_layout(lay, fn.__name__ + "_like", input.dim())
        d = dtype if dtype is not None else input.dtype
        size = (*args, *input.shape) if args else (tuple(input.shape),)   # () for a 0-d input: one argument
        out = fn(*size, dtype=d, device=_like_device(input, device), requires_grad=requires_grad)
        return _laid_out_like(out, input, memory_format, like.__name__)
    like.__name__ = like.__qualname__ = fn.__name__ + "_like"   # TypeErrors for a bad keyword name the op
    like.__doc__ = (f"Mirrors ``torch.{fn.__name__}_like``: same shape (and dtype unless given) as ``input``, "
                    f"laid out as ``memory_format`` asks (default ``preserve_format``: input's strides when it is "
                    f"non-overlapping and dense, else dense in its stride order).")
    return like


def _laid_out_like(out, input, memory_format, api):
    """``out`` (fresh, input's shape) with the layout a ``*_like`` factory gives it (NOTE
    [storage layouts] in memory_format.py)."""
    return _mf.lay_out(out, _mf.requested_order(input, memory_format, api))


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
              pin_memory=False):
    """Mirrors ``torch.full_like``: ``input``'s shape, and its dtype unless ``dtype`` is given.
    TypeError when ``fill_value`` is not a number."""
    check_pin_memory(pin_memory, device)
    _check_like(input, "full_like")
    _dense_layout(input.layout if layout is None else layout, "full_like")
    out = _full(input.shape, fill_value, dtype if dtype is not None else input.dtype, _like_device(input, device),
                requires_grad, "full_like")
    return _laid_out_like(out, input, memory_format, "full_like")


# ---- random -----------------------------------------------------------------------------
@with_x64
@accepts_out(dtype_from_out=True, keep_shape="resize")
@_size_keyword
def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False):
    """Mirrors ``torch.rand``: uniform on [0, 1). JAX PRNG: streams differ from torch's.
    NotImplementedError for an integer or bool ``dtype``."""
    check_pin_memory(pin_memory, device)
    _dense_layout(layout, "rand", lambda: len(size_tuple(size)))
    d = _fdt(dtype)
    _rnd.check_floating(d.np, "rand()", "check_uniform_bounds")
    shape = size_tuple(size)
    return _fresh(shape, d, device, requires_grad,
                  lambda: _rnd.uniform(_generator.key_for(generator, "rand()"), shape, d.np, api="rand()"))


@with_x64
@accepts_out(dtype_from_out=True, keep_shape="resize")
@_size_keyword
def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False):
    """Mirrors ``torch.randn``: standard normal. JAX PRNG: streams differ from torch's.
    NotImplementedError for an integer or bool ``dtype``."""
    check_pin_memory(pin_memory, device)
    _dense_layout(layout, "randn", lambda: len(size_tuple(size)))
    d = _fdt(dtype)
    _rnd.check_floating(d.np, "randn()", "normal_kernel_cpu")
    shape = size_tuple(size)
    if len(shape) > 64:   # numpy (the draw's host side) holds at most 64 dims, torch more: draw flat
        return _fresh(shape, d, device, requires_grad,
                      lambda: _rnd.normal(_generator.key_for(generator, "randn()"), (math.prod(shape),), d.np,
                                          api="randn()").reshape(shape))
    return _fresh(shape, d, device, requires_grad,
                  lambda: _rnd.normal(_generator.key_for(generator, "randn()"), shape, d.np, api="randn()"))


def _int_like(v):
    """What torch's parser takes for an int argument: an int (numpy's too, ``__index__``) or a
    one-element integer tensor."""
    if isinstance(v, Tensor):
        return v.numel() == 1 and v.dtype._cat == 1
    return isinstance(v, numbers.Integral) or (hasattr(v, "__index__") and not isinstance(v, numbers.Real))


def _int_not_bool(api, name, value):
    """torch's parser TypeError for a bool given as ``api``'s int argument ``name``: Python's bool is
    an int, torch's parser refuses it (a draw from ``[0, True)`` or a permutation of ``True``
    would run silently)."""
    if isinstance(value, bool):
        raise TypeError(f"{api}(): argument '{name}' must be int, not bool; pass an int")
    if isinstance(value, Tensor) and value.dtype is _dt.bool_ and value.numel() == 1:
        # a bool tensor passes torch's parser (a symbolic int), then its value is refused
        raise bool_size_error(f"{api}(): argument '{name}'", None)


@with_x64
@accepts_out(dtype_from_out=True, keep_shape="resize")   # torch's randint(..., out=t) draws in t's dtype
def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False, layout=None,
            pin_memory=False):
    """Mirrors ``torch.randint(low=0, high, size)``: int64 uniform on [low, high).
    RuntimeError for an empty range (``low >= high``); ValueError for bounds outside int64;
    TypeError for a bool bound."""
    check_pin_memory(pin_memory, device)
    _dense_layout(layout, "randint", lambda: len(size_tuple(high if size is None else size)))
    # torch's two overloads name the first argument 'high' in randint(high, size) and 'low' in
    # randint(low, high, size); its parser's TypeError names the one the call resolved to
    bounds = ((1, "low", low), (2, "high", high))
    if size is None:
        low, high, size = 0, low, high
        bounds = ((1, "high", high),)
    elif high is None:   # randint(high, size=...)
        low, high = 0, low
        bounds = ((1, "high", high),)
    if size is None or high is None:
        raise TypeError("randint(): missing the size argument: call randint(high, size) or randint(low, high, size)")
    if not isinstance(size, (tuple, list)):   # torch's size is a sequence only: randint(5, 2) is no shape
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not {type(size).__name__}; "
                        f"pass the shape as a tuple, e.g. randint(high, (n,))")
    for pos, name, v in bounds:
        _int_not_bool("randint", name, v)
        if not _int_like(v):   # a float bound (seq_len / 160 - timestep): no int overload takes it
            raise TypeError(f"randint(): argument '{name}' (position {pos}) must be int, not {type(v).__name__}; "
                            f"pass an int bound, e.g. int({name})")
    for name, v in (("low", low), ("high", high)):
        if isinstance(v, numbers.Integral) and not INT64_MIN <= v <= INT64_MAX:
            raise ValueError(f"randint(): Overflow when unpacking long long (bound {v} is outside int64)")
    _rnd.check_range(low, high, "randint()")
    d = _dt.to_dtype(dtype) if dtype is not None else _dt.int64
    if d.is_complex:   # torch fills randint's result with random_, whose bounds check refuses complex (randint_like too)
        raise RuntimeError("randint(): check_random_bounds handles only integral, floating-point and boolean types "
                           f"(got {d}); draw the real part in a real dtype and convert")
    limited.check_dtype("randint()", d, unsigned_ok=True)
    if d is _dt.bool_ or (d._cat == 1 and d.itemsize < 8):   # the bounds must fit a narrow integer dtype
        _randint_bounds(low, high, d)
    shape = size_tuple((size,))
    return _fresh(shape, d, device, requires_grad, lambda: _rnd.randint(
        _generator.key_for(generator, "randint()"), shape, low, high, jnp.int64, api="randint()").astype(d.np))


_C_INT_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short", "int32": "int",
                "uint16": "unsigned short", "uint32": "unsigned int"}


def _randint_bounds(low, high, d):
    """torch's RuntimeError for a ``randint`` range that the integer dtype ``d`` cannot hold."""
    info = (0, 1) if d is _dt.bool_ else (int(np.iinfo(d.np).min), int(np.iinfo(d.np).max))
    for what, v in (("from", low), ("to - 1", high - 1)):
        if not info[0] <= v <= info[1]:
            raise RuntimeError(f"randint(): {what} is out of bounds for {_C_INT_NAMES.get(d.name, d.name)} "
                               f"(range [{low}, {high}) does not fit {d}); pass a wider dtype")


@with_x64
@accepts_out(dtype_from_out=True, keep_shape="resize")
def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """Mirrors ``torch.randperm``: a random permutation of ``0..n-1`` (int64); ``n`` an int or a
    one-element integer tensor. RuntimeError for a negative ``n``; TypeError for a bool or float
    ``n``; ValueError for an ``n`` beyond int64; NotImplementedError for ``dtype=bool`` or a
    complex dtype."""
    check_pin_memory(pin_memory, device)
    _dense_layout(layout, "randperm", 1)
    d = _dt.to_dtype(dtype) if dtype is not None else _dt.int64
    # torch's parser takes ``n`` as an int: a one-element integer tensor is read as its value (it
    # was used as a shape: a 0-d one failed inside the draw, a 1-element one came back unpermuted),
    # and a bool is refused (it is an int to Python, not to torch)
    if isinstance(n, Tensor) and n.numel() == 1 and n.dtype._cat == 1:
        n = int(n.item())
    _int_not_bool("randperm", "n", n)
    if isinstance(n, numbers.Integral) and n > INT64_MAX:   # torch's parser: ValueError, as randint's bounds
        raise ValueError(f"randperm(): Overflow when unpacking long long (n={n} is outside int64)")
    if n < 0:
        raise RuntimeError(f"randperm(): Trying to create tensor with negative dimension {n}: [{n}]")
    if d.is_complex:   # torch has no complex randperm kernel
        raise NotImplementedError(f"\"randperm\" not implemented for '{_dt.SCALAR_NAMES[d.name]}'; pass an integer "
                                  "or real floating dtype")
    if d is _dt.float16 and n > 2049:   # torch's bound: float16 holds every integer up to 2048 exactly
        raise RuntimeError(f"randperm(): n cannot be greater than 2049 for Half type (got n={n}); pass a wider dtype "
                           f"such as float32 or int64")
    if d._cat == 1 and n > 1 and n - 1 > np.iinfo(d.np).max:
        raise RuntimeError(f"randperm(): value cannot be converted to type {d.name} without overflow (n={n} does not "
                           f"fit the dtype); pass a wider dtype such as int64")
    return _fresh((n,), d, device, requires_grad,
                  lambda: _rnd.permutation(_generator.key_for(generator, "randperm()"), n, d.np, api="randperm()"))


def rand_like(input, *, generator=None, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
              pin_memory=False):
    """Mirrors ``torch.rand_like``: ``rand`` of input's shape and dtype, laid out as ``*_like``
    (draws from ``generator`` when given)."""
    check_pin_memory(pin_memory, device)
    _check_like(input, "rand_like")
    _dense_layout(input.layout if layout is None else layout, "rand_like")
    out = rand(tuple(input.shape), generator=generator, dtype=dtype or input.dtype, device=_like_device(input, device),
               requires_grad=requires_grad)
    return _laid_out_like(out, input, memory_format, "rand_like")


def randn_like(input, *, generator=None, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
               pin_memory=False):
    """Mirrors ``torch.randn_like``: ``randn`` of input's shape and dtype, laid out as ``*_like``
    (draws from ``generator`` when given)."""
    check_pin_memory(pin_memory, device)
    _check_like(input, "randn_like")
    _dense_layout(input.layout if layout is None else layout, "randn_like")
    out = randn(tuple(input.shape), generator=generator, dtype=dtype or input.dtype, device=_like_device(input, device),
                requires_grad=requires_grad)
    return _laid_out_like(out, input, memory_format, "randn_like")


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None, requires_grad=False,
                 memory_format=None, layout=None, pin_memory=False):
    """Mirrors ``torch.randint_like(input, low=0, high)``: ``randint`` of input's shape and dtype,
    laid out as ``*_like`` (draws from ``generator`` when given)."""
    check_pin_memory(pin_memory, device)
    _check_like(input, "randint_like")
    _dense_layout(input.layout if layout is None else layout, "randint_like")
    if high is None:
        low, high = 0, low
    for name, v in (("low", low), ("high", high)):
        # torch's overloads: an int, or a tensor (a scalar one; checked further on)
        if not (isinstance(v, (int, Tensor)) or hasattr(v, "__index__")) or isinstance(v, bool):
            raise TypeError(f"randint_like(): argument '{name}' must be int, not {type(v).__name__}; pass an int bound")
        if isinstance(v, Tensor) and v.numel() != 1:   # torch's tensor overload (randint itself takes no such tensor)
            raise RuntimeError(f"randint_like(): {name} must be a scalar tensor and on CPU "
                               f"(got {v.numel()} elements); pass a one-element tensor or an int")
    out = randint(low, high, tuple(input.shape), generator=generator, dtype=dtype or input.dtype,
                  device=_like_device(input, device), requires_grad=requires_grad)   # (was dropped)
    return _laid_out_like(out, input, memory_format, "randint_like")


@with_x64
@accepts_out(dtype_from_out=True)
def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False, out=None,
           layout=None, pin_memory=False):
    """Mirrors ``torch.normal``: tensor or float ``mean``/``std`` (broadcast), or floats with ``size``.
    RuntimeError for a negative ``std`` (tensor values checked in eager only: inside
    ``tracegrad.compile`` there is no value to check); NotImplementedError for an integer dtype
    or a sparse ``layout``."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        shape = jnp.broadcast_shapes(tuple(getattr(mean, "shape", ())), tuple(getattr(std, "shape", ())))
        ref = mean if isinstance(mean, Tensor) else std
        _rnd.check_same_randomness(*(a._value for a in (mean, std) if isinstance(a, Tensor)))
        z = meta_draw((mean, std), shape, ref.dtype.np)
        if z is None:
            _rnd.check_std(std._value if isinstance(std, Tensor) else std, "normal()")
            z = Tensor._make(_rnd.normal(_generator.key_for(generator, "normal()"), shape, ref.dtype.np, api="normal()"))
        return z * std + mean
    if size is not None and not isinstance(size, (tuple, list)):   # torch's size is a sequence
        raise TypeError(f"normal(): argument 'size' must be tuple of ints, not {type(size).__name__}; pass size=(n,)")
    check_pin_memory(pin_memory, device)
    _dense_layout(layout, "normal")
    d = _fdt(dtype)
    _rnd.check_floating(d.np, "normal()", "normal_kernel_cpu")
    _rnd.check_std(std, "normal()")
    shape = size_tuple((size,))
    return _fresh(shape, d, device, requires_grad,
                  lambda: _rnd.normal(_generator.key_for(generator, "normal()"), shape, d.np, mean, std, api="normal()"))


def meta_draw(operands, shape, dtype):
    """A draw's result when one of its tensor ``operands`` is meta (NOTE [meta tensors]): a meta
    tensor of ``shape`` and ``dtype``, nothing drawn; else None."""
    if any(isinstance(a, Tensor) and type(a._st.array) is _Abstract for a in operands):
        return Tensor._make(abstract(shape, dtype))
    return None


@with_x64
@accepts_out(any_dtype=True, keep_shape="resize")   # torch draws into an out of any dtype (they take no dtype= to pass)
def bernoulli(input, p=_NO_P, *, generator=None, out=None):
    """Mirrors ``torch.bernoulli``: 1 with probability ``input`` (elementwise), same dtype.
    RuntimeError for a probability outside [0, 1] or NaN (tensor values checked in eager only);
    NotImplementedError, as torch, when ``input`` holds the probabilities but is not floating;
    TypeError for an explicit ``p=None`` (torch's overloads take a float p or none)."""
    if p is None:
        raise TypeError("bernoulli(): argument 'p' must be float, not NoneType; leave p out to draw with "
                        "the probabilities in input")
    if p is _NO_P:
        p = None
    if p is None and not input.dtype.is_floating_point:
        raise NotImplementedError(f"bernoulli(): probabilities of dtype {input.dtype} are not supported; "
                                  f"pass a floating tensor (or p=) instead")
    if p is None:
        _rnd.check_same_randomness(input._value)
    meta = meta_draw((input,), input.shape, input._value.dtype)
    if meta is not None:
        return meta
    see_reads(input)    # drawn from the values, not through an op
    _rnd.check_probs(input._value if p is None else p, "bernoulli()")
    probs = input._value if p is None else jnp.full(input.shape, p)
    draw = _rnd.bernoulli(_generator.key_for(generator, "bernoulli()"), probs, tuple(input.shape), api="bernoulli()")
    return Tensor._make(draw.astype(input._value.dtype))


@with_x64
@accepts_out(exact_dtype=True, keep_shape="resize")   # torch: an int64 out only
def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Mirrors ``torch.multinomial``: int64 indices drawn from the rows of ``input`` (1-D or 2-D,
    floating). RuntimeError, as torch, for ``num_samples <= 0``, more samples than categories
    without replacement, and (eager only) negative/inf/NaN probabilities or a row summing to 0;
    TypeError for a bool ``num_samples``."""
    _int_not_bool("multinomial", "num_samples", num_samples)
    if type(replacement) is not bool:   # torch's parser takes a bool only (not 1, not a string)
        raise TypeError(f"multinomial(): argument 'replacement' must be bool, not {type(replacement).__name__}; "
                        "pass True or False")
    _rnd.check_same_randomness(input._value)
    meta = meta_draw((input,), tuple(input.shape[:-1]) + (num_samples,), np.int64)
    if meta is not None:
        return meta
    see_reads(input)    # drawn from the values, not through an op
    _rnd.check_multinomial(input._value, num_samples, replacement, "multinomial()")
    p = input._value / jnp.sum(input._value, axis=-1, keepdims=True)
    return Tensor._make(_rnd.multinomial(_generator.key_for(generator, "multinomial()"), p, num_samples, replacement).astype(jnp.int64))

