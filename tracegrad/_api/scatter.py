"""Tensor methods, overwriting and reducing scatters: index_copy, index_fill, masked_scatter,
scatter_reduce and their in-place forms. Their derivatives are torch's also where an index
repeats (NOTE [overwriting scatter] and NOTE [scatter_reduce derivative], ``_ops/indexing.py``)."""
from __future__ import annotations

import numpy as np

from .. import _state
from ..autograd._dispatch import apply_inplace, apply_op
from .._ops import dtypes as _dt
from .._ops.errors import broadcast_shape
from .._ops.registry import OPS
from .._tensor.tensor import Tensor, NO_HOST_VALUES, _wrap_dim
from .._tensor.factories import zeros
from ._registry import method
from .argcheck import strict_error
from .indexing import _index_arg
from .inplace import check_index_range, check_scatter_shapes, is_expanded, write_one_value_expanded
from .promotion import _SCALAR_NAME, _check_scalar_value
from .shape import expand

_REDUCES = {"sum": "sum", "prod": "prod", "mean": "mean", "amax": "amax", "amin": "amin",
            "max": "amax", "min": "amin"}     # torch 2.13 still takes "max"/"min" as amax/amin


def _cpp(dtype):
    return _SCALAR_NAME[dtype.name]


def _same_dtype(self, other, api, what):
    if not isinstance(other, Tensor):
        raise TypeError(f"{api}(): {what} must be a Tensor, got {type(other).__name__}")
    if other.dtype is not self.dtype:
        raise RuntimeError(f"{api}(): self and {what} expected to have the same dtype, but got (self) "
                           f"{_cpp(self.dtype)} and ({what}) {_cpp(other.dtype)}; cast one with .to()")


def _index_vector(self, dim, index, api, negative=False, dtype_error=RuntimeError, check_range=True):
    """The checks torch makes on an ``index_*`` index: int64 (else ``dtype_error``: index_fill
    raises IndexError, the others RuntimeError), at most 1-D, inside ``dim`` (``negative``:
    counting from the end allowed, as index_fill). A self without elements is torch's own case:
    when ``dim`` has size 0 no index can be written (RuntimeError, whatever its values), else
    nothing is written and no index is looked at."""
    if not isinstance(index, Tensor):   # torch's argument parser: TypeError
        raise TypeError(f"{api}(): argument 'index' must be Tensor, not {type(index).__name__}; pass an int64 tensor")
    if index.dtype is not _dt.int64:
        got = _cpp(index.dtype) if isinstance(index, Tensor) else type(index).__name__
        raise dtype_error(f"{api}(): Expected a long tensor for index, but got {got}")
    d = _wrap_dim(dim, self.ndim)
    if not check_range:
        return d
    if self.ndim and self.numel() == 0 and index.numel():
        if self.shape[d] == 0:
            raise RuntimeError(f"{api}(): setStorage: a slice along dimension {d} of self (shape {list(self.shape)}) "
                               "is out of bounds for storage of size 0: that dimension has size 0, so no index can "
                               "write into it; pass an empty index")
        return d
    check_index_range(index, self.shape[d] if self.ndim else 1, d, api, IndexError, negative)
    return d


def _index_copy_args(self, dim, index, source, api):
    # torch's order: the parser's Tensor source; the index's rank; source's rank against the
    # index and self; the index's dtype; source's dtype and shape; only then the index's values
    if not isinstance(source, Tensor):
        raise strict_error(api.rstrip("_"), "source", "Tensor", source, 3)
    if isinstance(index, Tensor):
        if index.ndim > 1:
            raise IndexError(f"{api}(): Index should have dimension 1 or 0 (got {index.ndim})")
        if source.ndim == 0 and index.numel() != 1:
            raise IndexError(f"{api}(): When source is scalar, index should have one element (got "
                             f"{index.numel()}); give one index or a source with self's dims")
        if source.ndim and self.ndim and source.ndim != self.ndim:
            raise IndexError(f"{api}(): When source and destination are not scalars, their dimensionality must "
                             f"match. Source dimensionality ({source.ndim}), destination dimensionality ({self.ndim})")
    d = _index_vector(self, dim, index, api, check_range=False)
    _same_dtype(self, source, api, "source")
    n = index.numel()
    want = list(self.shape)
    if self.ndim:
        want[d] = n
    # torch lets 0-d and 1-element target/source mix when one position is copied
    if list(source.shape) != want and not (source.ndim <= 1 and source.numel() == 1 and n == 1 and self.ndim <= 1):
        if source.ndim == self.ndim > 0 and [s for i, s in enumerate(source.shape) if i != d] != \
                [s for i, s in enumerate(self.shape) if i != d] or source.ndim == 0 and self.ndim > 1:
            # torch: slices of another shape are a RuntimeError; counts and ranks an IndexError
            raise RuntimeError(f"{api.rstrip('_')}_(): Source/destination tensor must have same slice shapes: source of shape "
                               f"{list(source.shape)} does not fit: expected {want} (self's shape with dimension "
                               f"{d} the number of indices, {n})")
        raise IndexError(f"{api}(): source of shape {list(source.shape)} does not fit: expected {want} "
                         f"(self's shape with dimension {d} the number of indices, {n})")
    _index_vector(self, dim, index, api)   # the values, last
    # reshape only the 0-d / 1-element mixes: a source of the right shape keeps its own node
    # (torch's IndexCopyBackward0 links to it directly, with no ViewBackward0 between)
    if list(source.shape) != want:
        source = source.reshape(want)
    return d, index.reshape(-1), source


@method(function=True)
def index_copy(self, dim, index, source):
    """Mirrors ``torch.index_copy(input, dim, index, source)``: ``out[..., index[i], ...] =
    source[..., i, ...]`` along ``dim``. index: int64, 0-D or 1-D; source: input's dtype and
    shape with ``dim`` of length ``index.numel()``. Autograd: ``IndexCopyBackward0``; a repeated
    index gives every source slice the gradient of its position, as torch.
    Raises: RuntimeError (index dtype, source dtype, source slices of another shape), IndexError
    (index dims, out-of-range index in eager, source rank or length along ``dim``)."""
    d, index, source = _index_copy_args(self, dim, index, source, "index_copy")
    return apply_op(OPS["index_copy"], (self, index, source), (("dim", d),))


@method()
def index_copy_(self, dim, index, source):
    """Mirrors ``torch.Tensor.index_copy_`` (in place); see ``index_copy``."""
    d, index, source = _index_copy_args(self, dim, index, source, "index_copy_")
    return apply_inplace(OPS["index_copy"], self, (index, source), (("dim", d),))


def _index_fill_args(self, dim, index, value, api):
    if isinstance(value, Tensor) and value.ndim != 0:   # torch's first check: before the dim's and the index's
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    d = _index_vector(self, dim, index, "index_fill_", negative=True, dtype_error=IndexError)
    if index.ndim > 1:
        raise RuntimeError(f"{api}(): Index has to be a vector/scalar")
    _check_scalar_value(value, api, "Tensor value")
    if isinstance(value, complex) and not self.is_complex():
        raise RuntimeError(f"{api}(): Converting complex Scalar to non-complex type is not supported")
    _check_scalar_value(value, api, "Tensor value", self.dtype)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        return d, index.reshape(-1), OPS["index_fill_tensor"]
    return d, index.reshape(-1), OPS["index_fill"]


@method(function=True)
def index_fill(self, dim, index, value):
    """Mirrors ``torch.index_fill(input, dim, index, value)``: the slices ``index`` names along
    ``dim`` set to ``value`` (a number, or a 0-D tensor that gets a gradient: the sum over the
    filled positions, repeats counted, as torch). Autograd: ``IndexFillBackward0``/``1``.
    Raises: RuntimeError (index dtype or dims, value not 0-D), IndexError (index out of range, eager)."""
    d, index, op = _index_fill_args(self, dim, index, value, "index_fill")
    return apply_op(op, (self, index, value), (("dim", d),))


@method()
def index_fill_(self, dim, index, value):
    """Mirrors ``torch.Tensor.index_fill_`` (in place); see ``index_fill``."""
    d, index, op = _index_fill_args(self, dim, index, value, "index_fill_")
    if is_expanded(self):
        # torch warns and fills every alias (one value: defined) where other writes raise
        where = zeros(tuple(self.shape), dtype=_dt.bool_).index_fill_(d, index, True)
        return write_one_value_expanded(self, where, value, "index_fill_")
    return apply_inplace(op, self, (index, value), (("dim", d),))


def _masked_scatter_args(self, mask, source):
    for pos, (name, v) in enumerate((("mask", mask), ("source", source)), 1):
        if not isinstance(v, Tensor):   # the parser's TypeError before the dtype checks
            raise TypeError(f"masked_scatter(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(v).__name__}")
    if not isinstance(mask, Tensor) or mask.dtype is not _dt.bool_:
        got = _cpp(mask.dtype) if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {got}")
    if not isinstance(source, Tensor) or source.dtype is not self.dtype:
        got = _cpp(source.dtype) if isinstance(source, Tensor) else type(source).__name__
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{_cpp(self.dtype)} and {got}")
    m = mask._value
    shape = broadcast_shape((m.shape, self.shape), "masked_scatter")
    if isinstance(m, NO_HOST_VALUES):
        # traced: the count is checked when the program runs (NOTE [value checks at run time]);
        # XLA would repeat the source's last element silently
        n = source.numel()
        _state.check_values(mask, lambda t: expand(t, shape).sum() > n)
    else:
        ones = int(np.broadcast_to(np.asarray(m), shape).sum())
        if source.numel() < ones:
            raise RuntimeError(f"Number of elements of source < number of ones in mask ({source.numel()} < {ones})")


@method(function=True)
def masked_scatter(self, mask, source):
    """Mirrors ``torch.masked_scatter(input, mask, source)``: where the bool ``mask`` (broadcast
    with input) is True, take ``source``'s elements in row-major order. source: input's dtype,
    at least as many elements as True entries. Autograd: ``MaskedScatterBackward0`` (unused
    source elements get zero). Raises: RuntimeError (mask dtype, source dtype, source too
    small -- that last check in eager only)."""
    _masked_scatter_args(self, mask, source)
    shape = tuple(broadcast_shape((self.shape, mask.shape), "masked_scatter"))
    x = expand(self, *shape) if tuple(self.shape) != shape else self
    return apply_op(OPS["masked_scatter"], (x, mask, source))


@method()
def masked_scatter_(self, mask, source):
    """Mirrors ``torch.Tensor.masked_scatter_`` (in place; mask broadcasts to self)."""
    _masked_scatter_args(self, mask, source)
    return apply_inplace(OPS["masked_scatter"], self, (mask, source))


def _scatter_reduce_args(self, dim, index, src, reduce, api):
    if not isinstance(src, Tensor):   # no Scalar overload in torch
        raise strict_error(api, "src", "Tensor", src, 3)
    _index_arg(index, api, self, dim)   # the dim's range first, as torch
    if not isinstance(reduce, str):   # torch's argument parser
        raise TypeError(f"{api}(): argument 'reduce' must be str, not {type(reduce).__name__}; pass one of "
                        f"'sum', 'prod', 'mean', 'amax', 'amin'")
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if not isinstance(src, Tensor) or src.dtype is not self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    index, src = check_scatter_shapes(self, index, src, dim)
    if reduce == "mean" and self.dtype is _dt.bool_:
        raise NotImplementedError("\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'; "
                                  "convert the tensors with .int() or .float()")
    d = _wrap_dim(dim, self.ndim)
    check_index_range(index, self.shape[d] if self.ndim else 1, d, api)
    return d, _REDUCES[reduce], index, src


@method(function=True)
def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    """Mirrors ``torch.scatter_reduce(input, dim, index, src, reduce, include_self=True)``:
    reduces ``src`` into input at ``index`` along ``dim`` with "sum", "prod", "mean", "amax" or
    "amin" (input's own value counted when ``include_self``; integer "mean" floors). index:
    int64 of input's rank; src: input's dtype. Autograd: ``ScatterReduceBackward0`` with torch's
    rules: ties of amax/amin share the gradient evenly, prod is exact with zeros.
    Raises: RuntimeError (reduce name, dtypes, ranks, out-of-range index in eager)."""
    d, reduce, index, src = _scatter_reduce_args(self, dim, index, src, reduce, "scatter_reduce")
    return apply_op(OPS["scatter_reduce"], (self, index, src),
                    (("dim", d), ("reduce", reduce), ("include_self", bool(include_self))))


@method()
def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """Mirrors ``torch.Tensor.scatter_reduce_`` (in place); see ``scatter_reduce``."""
    d, reduce, index, src = _scatter_reduce_args(self, dim, index, src, reduce, "scatter_reduce_")
    return apply_inplace(OPS["scatter_reduce"], self, (index, src),
                         (("dim", d), ("reduce", reduce), ("include_self", bool(include_self))))
