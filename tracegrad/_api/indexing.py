"""Tensor methods, indexing family: getitem/setitem, index_put, gather/scatter, index_select/add, masked ops, nonzero."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import _state
from ..autograd._dispatch import apply_inplace, apply_op, show_saved, warn_in_backward
from .._ops import dtypes as _dt, limited
from .._ops.warn import warn as _warn
from .._ops.errors import broadcast_shape, not_a_tensor
from .._ops.registry import OPS
from .._tensor.convert import check_float_fits
from .._tensor.factories import tensor, zeros
from .._tensor.tensor import Tensor, _concrete, NO_HOST_VALUES, _wrap_dim
from ._registry import method
from .promotion import _SCALAR_NAME
from .argcheck import strict_error
from .inplace import _check_expand, check_index_dtype, check_index_range, check_scatter_reduce, check_scatter_shapes, index_add_args, copy_, is_expanded, \
    write_one_value_expanded
from .promotion import _CPP_NAME, _check_scalar_value, check_number_fits, check_real_scalars, check_tensors
from .shape import expand, flatten
from .sparse_embedding import sparse_gather
from .._ops.errors import broadcast_shapes as _broadcast_shapes


# ---- indexing ---------------------------------------------------------------------------
def _is_advanced(k):
    return isinstance(k, (Tensor, list, range, np.ndarray)) or (isinstance(k, bool))


# the index tensor dtypes torch takes (uint8: a deprecated mask); any other, IndexError
_INDEX_DTYPES = (_dt.int64, _dt.int32, _dt.uint8, _dt.bool_)
_SEQUENCE_AS_TUPLE = ("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
                      "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted "
                      "as tensor index, x[torch.tensor(seq)], which will result either in an error or a different "
                      "result")


def _sequence_as_tuple(key):
    """torch's (and NumPy's) legacy rule: a list index of fewer than 32 elements holding a tensor,
    a sequence, a slice, None or Ellipsis is a tuple of indices (``x[[rows, cols]]`` is
    ``x[rows, cols]``), with torch's deprecation warning; otherwise it is one index tensor."""
    if len(key) >= 32:
        return False
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, (Tensor, list, tuple, range, slice, np.ndarray)):
            _warn(_SEQUENCE_AS_TUPLE, UserWarning)
            return True
    return False


def _expand_ellipses(key, skip, ndim):
    """torch's reading of an index with several ellipses: each one skips the ``skip`` dims no
    other index names (``x[..., 0, ...]`` of a 2-D ``x`` is ``x[:, 0]``), so each becomes that
    many full slices; full slices past the last dim are dropped, as torch's dim counter runs
    past the end there without indexing anything."""
    out = []
    for k in key:
        out.extend([slice(None)] * builtins.max(skip, 0) if k is Ellipsis else [k])
    full = slice(None)
    while out and len(out) > ndim and isinstance(out[-1], slice) and out[-1] == full:
        out.pop()
    return tuple(out)


def _parse_key(self, key, raws=None):
    """Split a torch index into static markers and dynamic index arrays. ``raws``, a list,
    gets each marker's bounds as written (an int's index, a slice's ``(start, stop, step)``,
    else None): torch's nodes show them (``_torch_view_steps``)."""
    if isinstance(key, list) and _sequence_as_tuple(key):
        key = tuple(key)
    if not isinstance(key, tuple):
        key = (key,)
    if builtins.any(isinstance(k, range) for k in key):      # x[range(n), y], as a list
        key = tuple(list(k) if isinstance(k, range) else k for k in key)
    shp = tuple(self.shape)
    n_real = builtins.sum(1 for k in key if k is not None and k is not Ellipsis and not (isinstance(k, Tensor) and k.dtype is _dt.bool_))
    n_real += builtins.sum(k.ndim for k in key if isinstance(k, Tensor) and k.dtype is _dt.bool_)
    if len(key) > 1 and builtins.sum(1 for k in key if k is Ellipsis) > 1:   # no ellipsis left after this
        return _parse_key(self, _expand_ellipses(key, len(shp) - n_real, len(shp)), raws)
    if n_real > len(shp):
        raise IndexError(f"too many indices for tensor of dimension {len(shp)}")
    markers, arrays = [], []
    dim = 0
    for pos, k in enumerate(key):
        if _index_object(k):
            # torch reads any object with ``__index__`` as an int index (x[I()] is x[1], a
            # view); tracegrad raised IndexError. A compiled trace's ``item()`` stand-in raises
            # its own graph break here (the value read), not an IndexError
            k = operator.index(k)
        if raws is not None and (k is None or k is Ellipsis):
            raws.append(None)
        if k is None:
            markers.append(("n",))
        elif k is Ellipsis:
            markers.append(("e",))
            dim += len(shp) - n_real
        elif isinstance(k, slice):
            step = k.step
            if step is not None and step <= 0:
                raise ValueError("slice step cannot be zero" if step == 0 else "step must be greater than zero")
            if k.start is None and k.stop is None and step is None:
                markers.append(("s", None, None, None))
            else:   # bounds in range: the start is a runtime operand (NOTE [dynamic positions])
                markers.append(("s",) + slice(_idx(k.start), _idx(k.stop), _idx(step)).indices(shp[dim]))
            if raws is not None:
                raws.append((_idx(k.start), _idx(k.stop), _idx(step)))
            dim += 1
        elif isinstance(k, Tensor) and k.ndim == 0 and isinstance(k._value, NO_HOST_VALUES) and (
                k.dtype is _dt.int64 or k.dtype is _dt.int32):
            # a 0-d index tensor without a value here (inside tracegrad.compile): indexing by it
            # as an index tensor picks the same elements without reading it in Python (a graph
            # break); its range is checked when the program runs (_check_bounds)
            _check_bounds(k, shp[dim], dim)
            markers.append(("t",))
            arrays.append(k)
            if raws is not None:
                raws.append((k,))
            dim += 1
        elif isinstance(k, (int, np.integer)) or (isinstance(k, Tensor) and k.ndim == 0 and not k.dtype.is_floating_point and k.dtype is not _dt.bool_):
            i = int(k)
            size = shp[dim]
            if not -size <= i < size:   # torch names the index's position in the key (None and ... count)
                if not -2 ** 63 <= i < 2 ** 63:   # torch's parser reads the int as int64 first
                    raise ValueError(f"Overflow when unpacking long long (index {i} does not fit int64)")
                raise IndexError(f"index {i} is out of bounds for dimension {pos} with size {size}")
            markers.append(("i", i % size))
            if raws is not None:
                raws.append(i)
            dim += 1
        else:
            if not isinstance(k, Tensor):
                k = _as_index_tensor(k)
            if k.dtype is _dt.bool_:
                _check_mask_shape(k, shp, dim)
                for j, nz in enumerate(nonzero(k, as_tuple=True)):
                    markers.append(("t",))
                    arrays.append(nz)
                    if raws is not None:   # torch saves the mask itself, once
                        raws.append(None if j else (k,))
                dim += k.ndim
            elif k.dtype is not _dt.int64 and k.dtype is not _dt.int32:   # (uint8 masks are bool by here)
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            else:
                _check_bounds(k, shp[dim], dim)
                markers.append(("t",))
                arrays.append(k)
                if raws is not None:
                    raws.append((k,))
                dim += 1
    return tuple(markers), arrays


def _check_bounds(index, size, dim):
    """IndexError for an integer index tensor with a value outside ``[-size, size)`` (XLA would
    clamp or drop it). One host read of the index, only in eager (a tracer is not checked)."""
    v = index._value
    if isinstance(v, NO_HOST_VALUES):
        _state.check_values(v, lambda v: (v >= size) | (v < -size))
    elif v.size:
        h = np.asarray(v)   # host min/max: no XLA program per index shape
        lo, hi = int(h.min()), int(h.max())
        if hi >= size or lo < -size:
            if size == 0:   # torch names no index and no dim here
                raise IndexError("index is out of bounds for dimension with size 0")
            bad = hi if hi >= size else lo
            raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


_BYTE_MASK = "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead."


def _n_byte_masks(key):
    """How many uint8 index tensors ``key`` holds (each one a deprecation warning of torch's)."""
    items = key if isinstance(key, tuple) else (key,)
    return builtins.sum(1 for k in items if isinstance(k, Tensor) and k.dtype is _dt.uint8)


def _byte_masks_as_bool(key):
    """torch reads a uint8 index tensor as a bool mask (with its deprecation warning)."""
    items = key if isinstance(key, tuple) else (key,)
    n_masks = _n_byte_masks(key)
    if not n_masks:
        return key
    for _ in range(n_masks):    # torch warns once per uint8 mask of the key
        _warn(_BYTE_MASK, UserWarning)   # the user's line, however many frames dispatch adds
    items = tuple(k.to(_dt.bool_) if isinstance(k, Tensor) and k.dtype is _dt.uint8 else k for k in items)
    return items if isinstance(key, tuple) else items[0]


def _is_bool_scalar(k):
    return isinstance(k, (bool, np.bool_)) or (isinstance(k, Tensor) and k.ndim == 0 and k.dtype is _dt.bool_)


def _unsqueeze_bools(self, key):
    """torch's rule for a Python bool or a 0-d bool tensor in an index: a new size-1 dim at its
    place, indexed by ``[0]`` when True and by no index at all when False (a 0-long dim), so
    ``x[True]`` is ``x[None]`` as a copy and ``x[False]`` is empty. Returns ``(self', key')``
    with those dims added to self and the bools replaced by int64 index tensors."""
    if isinstance(key, list) and builtins.any(_is_bool_scalar(k) for k in key) and _sequence_as_tuple(key):
        # a list torch reads as a tuple (x[[tensor(True), 2]] is x[tensor(True), 2]): its bool
        # scalars add dims as a tuple's do, where read as one list they made an index tensor
        key = tuple(key)
    items = key if isinstance(key, tuple) else (key,)
    if not builtins.any(_is_bool_scalar(k) for k in items):
        return self, key
    for k in items:
        if isinstance(k, np.bool_):   # torch's index parser takes Python bools only (a numpy bool is no int)
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte tensors are "
                             "valid indices (got an array library's bool scalar, not a Python bool); index with bool(b)")

    def dims_used(k):   # how many dims of (the unsqueezed) self an index item consumes
        if k is None or k is Ellipsis:
            return 0
        if isinstance(k, Tensor) and k.dtype is _dt.bool_ and not _is_bool_scalar(k):
            return k.ndim
        if isinstance(k, (list, tuple)):    # a nested sequence of bools is a mask over its ndim dims
            arr = np.asarray(k)
            if arr.dtype == np.bool_ and arr.ndim:
                return arr.ndim
        return 1
    n_bools = builtins.sum(1 for k in items if _is_bool_scalar(k))
    ellipsis_dims = self.ndim + n_bools - builtins.sum(dims_used(k) for k in items)
    out, dim = [], 0
    for k in items:
        if _is_bool_scalar(k):
            self = self.unsqueeze(dim)
            k = tensor([0] if bool(k) else [], dtype=_dt.int64)
        dim += ellipsis_dims if k is Ellipsis else dims_used(k)
        out.append(k)
    return self, tuple(out)


def _check_index_put(self, indices, values, api):
    """torch's checks of a public ``index_put``/``index_put_`` call (``x[i] = v`` casts ``v``
    instead): values a Tensor of self's dtype, integer or bool indices, at most one per dim, every
    index in range (IndexError; XLA would silently drop or clamp it)."""
    if not isinstance(values, Tensor):
        raise TypeError(f"{api}(): argument 'values' must be Tensor, not {type(values).__name__}")
    ints = [t for t in indices if isinstance(t, Tensor)]
    if len(ints) > 1 and all(t.dtype is not _dt.bool_ for t in ints):   # (a mask stands for its nonzero indices)
        _check_index_broadcast(ints)
    dim = 0
    for pos, i in enumerate(indices):
        if i is None:
            raise TypeError(f"{api}(): expected Tensor as element {pos} in argument 1 'indices', but got NoneType")
        if not isinstance(i, Tensor) or i.dtype not in _INDEX_DTYPES:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        n = i.ndim if i.dtype is _dt.bool_ else 1
        if dim + n > self.ndim:
            raise IndexError(f"too many indices for tensor of dimension {self.ndim} (got {len(indices)})")
        if i.dtype is _dt.bool_ and tuple(i.shape) != tuple(self.shape[dim:dim + n]):
            raise IndexError(f"The shape of the mask {list(i.shape)} at index {dim} does not match the shape of the "
                             f"indexed tensor {list(self.shape)} at index {dim}")
        dim += n
    # torch's order after the indices' kinds and shapes: values' shape against the indexing
    # result, values' dtype, then the index values (read only when one of the last two fails)
    try:
        _check_put_dtype(self, values)
        dim = 0
        for i in indices:
            if i.dtype is not _dt.bool_:
                _check_bounds(i, self.shape[dim], dim)
            dim += i.ndim if i.dtype is _dt.bool_ else 1
    except (RuntimeError, IndexError):
        # the result's shape, with every int index at 0 (an out-of-range one would fail here)
        _check_value_fits(self, tuple(i if i.dtype is _dt.bool_ else zeros(tuple(i.shape), dtype=i.dtype)
                                      for i in indices), values)
        _check_put_dtype(self, values)
        raise


def _index_object(k):
    """An index item torch reads through ``__index__`` as a Python int: not a type tracegrad
    parses itself (ints, numpy integers and bools, tensors, slices, sequences, arrays), and no
    array-like with a ``shape`` (a JAX array has ``__index__`` too, but is read as an index
    tensor)."""
    return (k is not None and k is not Ellipsis and hasattr(type(k), "__index__")
            and not isinstance(k, (int, np.integer, np.bool_, Tensor, slice, list, tuple, range, np.ndarray))
            and not hasattr(k, "shape"))


def _idx(v):
    if v is None:
        return None
    if isinstance(v, (float, str, bytes, complex)) or not hasattr(v, "__index__"):
        raise TypeError(f"slice indices must be integers or None or have an __index__ method (got {v!r})")
    return operator.index(v)   # a float tensor's __index__ is torch's TypeError (int() would truncate it)


def _holds_str(seq):
    return builtins.any(isinstance(v, (str, bytes)) or (isinstance(v, (list, tuple)) and _holds_str(v)) for v in seq)


def _as_index_tensor(k):
    try:
        t_ = tensor(k)
    except (RuntimeError, ValueError):   # (a str stays the constructor's TypeError, as torch)
        if isinstance(k, (list, tuple)):
            if _holds_str(k):   # torch's index conversion refuses the str itself: TypeError
                raise TypeError("invalid data type 'str' in a list used as an index; index with integers, "
                                "bools or tensors of them") from None
            raise
        # an object of another kind as a key: torch's indexing error, not the tensor constructor's
        raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte tensors are valid "
                         f"indices (got {type(k).__name__})") from None
    if t_.numel() == 0:
        t_ = t_.long()
    elif isinstance(k, (list, tuple, np.ndarray)) and t_.dtype not in _INDEX_DTYPES:
        # torch reads a sequence index that is not a bool/uint8 mask as int64 (its
        # indexing_tensor_from_data): x[[1.7]] is x[[1]], a complex entry the int conversion's
        # TypeError; a float *tensor* index stays IndexError
        t_ = tensor(k, dtype=_dt.int64)
    return t_


def _basic_op(markers):
    for m in reversed(markers):
        if m[0] == "i":
            return OPS["index_int"]
        if m[0] == "s" and m[1:] != (None, None, None):
            return OPS["index_slice"]
        if m[0] == "n":
            return OPS["index_none"]
    return OPS["index_slice"] if builtins.any(m[0] == "s" for m in markers) else OPS["index_alias"]


# NOTE [indexing nodes as torch]
# torch applies a basic key one entry at a time (its applySlicing): an int is ``select``, a
# slice ``slice``, None ``unsqueeze``, each recording its own node with torch's saved
# attributes (``_saved_dim``, ``_saved_start``, ``_saved_end`` as written: None as 0 and
# INT64_MAX, a negative bound shown as its unsigned 64-bit value); a slice of a tuple key that
# starts at 0 with step 1 and reaches the end records nothing (``x[:, 0:5]`` of 5 columns), a
# lone slice always does (``x[:]``), and a key that records nothing gives ``alias``. Tools that
# walk ``grad_fn`` graphs (pruning libraries, graph viewers) read that chain. When the result
# records history, getitem does the same; otherwise one program reads the whole key (one
# dispatch instead of one per entry: nothing can observe the chain).
_INT64_MAX = 2 ** 63 - 1


def _torch_view_steps(shape, markers, raws, single):
    """The ``(op, static, shown)`` steps torch records for a key's basic entries
    (NOTE [indexing nodes as torch]); index tensors ('t') keep their dim for the advanced
    index applied after."""
    skip = len(shape) - builtins.sum(1 for m in markers if m[0] in "ist")   # the dims ``...`` stands for
    shape, steps, dim = list(shape), [], 0
    for m, raw in zip(markers, raws):
        tag = m[0]
        if tag == "e":
            dim += skip
            continue
        if tag == "t":
            dim += 1
        elif tag == "n":
            steps.append((OPS["unsqueeze"], (("dim", dim),), None))
            shape.insert(dim, 1)
            dim += 1
        elif tag == "i":
            steps.append((OPS["select"], (("dim", dim), ("index", m[1])),
                          (("dim", dim), ("index", raw))))
            del shape[dim]
        else:
            size = shape[dim]
            start, stop, step = raw if raw is not None else (None, None, None)
            start, stop, step = (0 if start is None else start, _INT64_MAX if stop is None else stop,
                                 1 if step is None else step)
            if single or not (start == 0 and step == 1 and stop >= size):
                s0, s1, s2 = slice(start, stop, step).indices(size)
                steps.append((OPS["slice"], (("dim", dim), ("start", s0), ("end", s1), ("step", s2)),
                              (("dim", dim), ("start", start), ("end", stop), ("step", step))))
                shape[dim] = len(range(s0, s1, s2))
            dim += 1
    return steps


def _torch_indices(ndim, markers, raws):
    """torch's ``_saved_indices`` of an advanced key: per dim of the view the basic entries
    leave, the index tensor (a bool mask as given) or None, up to the last one indexed."""
    skip = ndim - builtins.sum(1 for m in markers if m[0] in "ist")
    out, dim = [], 0
    for m, raw in zip(markers, raws):
        tag = m[0]
        if tag == "e":
            dim += skip
        elif tag != "i":
            if tag == "t" and raw is not None:
                out.extend([None] * (dim - len(out)))
                out.append(raw[0])
            dim += 1
    return tuple(out)


def _apply_view_steps(self, steps):
    if not steps:
        return apply_op(OPS["alias"], (self,))
    for op, static, shown in steps:
        self = apply_op(op, (self,), static)
        if shown is not None:
            show_saved(self, shown)
    return self


def _records(self):
    return _state.GRAD_MODE[0] and (self._rg or (self._base is not None and self._base._rg))


@method("__getitem__")
def getitem(self, key):
    """Mirrors ``Tensor.__getitem__``: ints, slices, None, ..., integer tensors/lists and bool
    masks. Basic keys give views; advanced keys give copies (``IndexBackward0``).
    IndexError for out-of-range indices."""
    # a Python True/False in the key is basic indexing in torch (an unsqueeze view, then copy_, which
    # refuses an expanded tensor), not a mask: no one-value write into an expanded self then
    py_bool = any(type(k) is bool for k in (key if isinstance(key, tuple) else (key,)))
    n_byte_masks = _n_byte_masks(key)
    self, key = _unsqueeze_bools(self, _byte_masks_as_bool(key))
    if self.ndim == 0 and not (key is None or key is Ellipsis or (isinstance(key, tuple) and builtins.all(k is None or k is Ellipsis for k in key))):
        # torch unpacks a slice before it looks at the rank: a float bound is TypeError, a step
        # of 0 or below ValueError, even on a 0-d tensor
        for k in (key if isinstance(key, tuple) else (key,)):
            if isinstance(k, slice):
                step = [_idx(v) for v in (k.start, k.stop, k.step)][2]
                if step is not None and step <= 0:
                    raise ValueError("slice step cannot be zero" if step == 0 else "step must be greater than zero")
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
    raws = [] if _records(self) else None
    markers, arrays = _parse_key(self, key, raws)
    shape, full_markers = self.shape, markers
    if not arrays:
        if raws is not None:    # NOTE [indexing nodes as torch]
            return _apply_view_steps(self, _torch_view_steps(self.shape, markers, raws, not isinstance(key, tuple)))
        return apply_op(_basic_op(markers), (self,), (("key", markers),))
    _check_index_broadcast(arrays)
    if builtins.any(m[0] in "in" or (m[0] == "s" and m[1:] != (None, None, None)) for m in markers):
        # as torch: ints, slices and None first (a view, positions as operands), then the
        # advanced index on what is left (IndexBackward0 over SelectBackward0/SliceBackward0)
        basic, rest = _split_basic(markers)
        if raws is not None:
            steps = _torch_view_steps(self.shape, markers, raws, False)
            if steps:
                self = _apply_view_steps(self, steps)
        else:
            self = apply_op(_basic_op(basic), (self,), (("key", basic),))
        markers = rest
    out = apply_op(OPS["index"], (self, *arrays), (("key", markers),))
    if raws is not None:
        show_saved(out, (("indices", _torch_indices(len(shape), full_markers, raws)),))
    # torch's IndexBackward0 indexes with the saved uint8 masks again: the same warnings
    return warn_in_backward(out, ((_BYTE_MASK, UserWarning),) * n_byte_masks)


@method("__delitem__")
def delitem(self, key):
    """``del t[key]``: torch's TypeError (without this method Python raises AttributeError,
    since ``__setitem__`` exists)."""
    raise TypeError("Tensor does not support deleting items")


def _check_index_broadcast(arrays):
    """IndexError, as torch, when the index tensors of one key do not broadcast together."""
    if len(arrays) > 1:
        shapes = [tuple(a.shape) for a in arrays]
        try:
            _broadcast_shapes(*shapes)
        except ValueError:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                             + ", ".join(str(list(s_)) for s_ in shapes)) from None


def _split_basic(markers):
    """``(basic, rest)``: the key's basic part with index arrays as full slices, and the key
    to apply to that view (ints gone, slices and Nones full slices)."""
    basic = tuple(("s", None, None, None) if m[0] == "t" else m for m in markers)
    rest = tuple(m if m[0] in "te" else ("s", None, None, None) for m in markers if m[0] != "i")
    return basic, rest


def _check_mask_shape(mask, shp, dim):
    """IndexError unless a bool/byte ``mask`` placed at ``dim`` matches ``shp`` there; torch's
    message names the first mismatching dimension."""
    for j, n in enumerate(mask.shape):
        if dim + j >= len(shp) or shp[dim + j] != n:
            raise IndexError(f"The shape of the mask {list(mask.shape)} at index {dim + j} does not match the shape "
                             f"of the indexed tensor {list(shp)} at index {dim + j}")


@method("__setitem__")
def setitem(self, key, value):
    """Mirrors ``Tensor.__setitem__``: writes through views (the base gets ``CopySlices``);
    advanced keys use ``index_put_`` (``IndexPutBackward0``). A value tensor's leading size-1
    dims are dropped before it is broadcast, as torch (``x[i] = row.view(1, -1)``). RuntimeError
    for a complex number into a real tensor."""
    if isinstance(key, Tensor) and key.dtype is _dt.uint8 and key.ndim and (
            not isinstance(value, Tensor) or value.numel() == 1):
        # torch writes one value through one mask with masked_fill_, which takes bool masks only;
        # its index parser checks the mask's rank and shape against self's first
        if key.ndim > self.ndim:
            raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
        _check_mask_shape(key, tuple(self.shape), 0)
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype unsigned char; "
                           "index with mask.bool()")
    # a Python True/False in the key is basic indexing in torch (an unsqueeze view, then copy_, which
    # refuses an expanded tensor), not a mask: no one-value write into an expanded self then
    py_bool = any(type(k) is bool for k in (key if isinstance(key, tuple) else (key,)))
    n_byte_masks = _n_byte_masks(key)
    self, key = _unsqueeze_bools(self, _byte_masks_as_bool(key))
    if isinstance(value, int) and not -2 ** 63 <= value < 2 ** 63:
        # torch's setitem reads a Python int value as int64, whatever self's dtype
        raise ValueError(f"Overflow when unpacking long long (the value {value} does not fit int64; "
                         "write float(value) into a floating tensor)")
    if isinstance(value, complex) and not self.is_complex():
        raise RuntimeError(f"value cannot be converted to type {self.dtype} without overflow: {value} is complex; "
                           "write into a complex tensor or pass a real value")
    if _mask_put(self, key, value, py_bool):
        return
    masked = _has_bool_mask(key)
    markers, arrays = _parse_key(self, key)
    _check_index_broadcast(arrays)
    full = builtins.all(m[0] == "e" or m == ("s", None, None, None) or m[0] == "t" for m in markers)
    if not arrays:
        if full:      # ``x[...] = v`` / ``x[:] = v`` write self itself (no view)
            if isinstance(value, Tensor):
                copy_(self, _drop_leading_ones(value, self))
            else:
                apply_inplace(OPS["fill_tensor"], self, (value,))
            return
        v = apply_op(_basic_op(markers), (self,), (("key", markers),))
        if isinstance(value, Tensor) and tuple(value.shape) != tuple(v.shape):
            value = _drop_leading_ones(value, v)
            _check_expand(tuple(value.shape), tuple(v.shape))   # torch expands the value first
        copy_(v, value)
        return
    value = _drop_leading_ones(value)
    if masked and isinstance(value, Tensor) and value._value.ndim == 0 and value.dtype is not self.dtype:
        value = value.to(self.dtype)    # torch: a bool mask with a 0-dim value is masked_fill, which casts
    if isinstance(value, Tensor) and value.dtype is not self.dtype:
        _check_value_fits(self, key, value)    # torch reports a shape mismatch before the dtype
    _check_put_dtype(self, value)   # torch casts only for basic keys (copy_)
    if (not py_bool and is_expanded(self)
            and (isinstance(value, (int, float)) or (isinstance(value, Tensor) and value.numel() == 1))):
        # an expanded self and one value: torch's index_put_ warns and writes every alias
        where = zeros(tuple(self.shape), dtype=_dt.bool_)
        setitem(where, key, True)
        write_one_value_expanded(self, where, value.reshape(()) if isinstance(value, Tensor) else value, "index_put_")
        return
    try:
        if full:
            # torch's IndexPutBackward0 indexes with the saved uint8 masks again, once for
            # self's gradient and once for the values' (NOTE [warnings in backward])
            grads = self._rg + (isinstance(value, Tensor) and value._rg)
            index_put_(self, arrays, value, markers=markers)
            warn_in_backward(self, ((_BYTE_MASK, UserWarning),) * (n_byte_masks * grads))
            return
        # torch applies the basic part first (a view) and index_puts into it: CopySlices on self
        basic, rest = _split_basic(markers)
        v = apply_op(_basic_op(basic), (self,), (("key", basic),))
        grads = v._rg + (isinstance(value, Tensor) and value._rg)
        index_put_(v, arrays, value, markers=rest)
        # (the write's node is the CopySlices one the base holds now)
        warn_in_backward(v if v._base is None else v._base, ((_BYTE_MASK, UserWarning),) * (n_byte_masks * grads))
    except RuntimeError:
        if isinstance(value, Tensor):
            _check_value_fits(self, key, value)    # torch's "shape mismatch" message when that is the cause
        raise


# torch's names: an override that looks at ``func.__name__`` sees ``__getitem__``, as with torch
for _fn, _name in ((getitem, "__getitem__"), (setitem, "__setitem__"), (delitem, "__delitem__")):
    _fn.__name__ = _fn.__qualname__ = _name
del _fn, _name


def _check_value_fits(self, key, value):
    """RuntimeError, as torch, when ``value`` does not broadcast to ``self[key]``'s shape (read
    only on error paths: a dtype mismatch, where torch names the shape first, or a failed put)."""
    want = tuple(getitem(self.detach(), key).shape)
    try:
        _check_expand(tuple(value.shape), want)
    except RuntimeError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(want)}") from None


def _mask_put(self, key, value, py_bool=False):
    """``self[mask] = value`` for one bool mask over self's leading dims and a single value (a
    Python number self's dtype holds, or a 0-d tensor) as one select (``index_put_mask``): the
    same values and ``IndexPutBackward0`` as index_put at the mask's nonzero() positions, with
    no host read of the mask. Returns False (nothing written) for any other key or value."""
    mask = key[0] if isinstance(key, tuple) and len(key) == 1 else key
    if not isinstance(mask, Tensor) or mask.dtype is not _dt.bool_ or mask.ndim == 0:
        return False
    if tuple(mask.shape) != tuple(self.shape[:mask.ndim]):
        return False     # the general path raises torch's IndexError
    if (not py_bool and is_expanded(self)
            and (isinstance(value, (int, float)) or (isinstance(value, Tensor) and value.ndim == 0))):
        # an expanded self: torch writes one value through a mask with masked_fill_, which warns
        # and writes every alias (see inplace._masked_fill_expanded) instead of raising
        self.masked_fill_(mask.reshape(tuple(mask.shape) + (1,) * (self.ndim - mask.ndim)),
                          value.to(self.dtype) if isinstance(value, Tensor) else value)
        return True
    if isinstance(value, Tensor):
        if value.ndim != 0 or (value.is_complex() and not self.is_complex()):
            return False
        if value.dtype is not self.dtype:
            value = value.to(self.dtype)    # torch: a bool mask with a 0-dim value is masked_fill, which casts
        apply_inplace(OPS["index_put_mask_tensor"], self, (mask, value))
        return True
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    if not (self.dtype.is_floating_point or self.is_complex()):
        if not isinstance(value, (int, np.integer)) or self.dtype is _dt.bool_:
            return False
        info = np.iinfo(np.dtype(self.dtype.name))
        if not info.min <= int(value) <= info.max:
            return False
    apply_inplace(OPS["index_put_mask"], self, (mask, value))
    return True


def _drop_leading_ones(value, target=None):
    """``value`` viewed without its leading size-1 dims, as torch's setitem does before it
    broadcasts a tensor value (numpy's rule); unchanged when not a tensor, when it has none, or
    when its shape already equals ``target``'s (torch copies it as it is then)."""
    if not isinstance(value, Tensor) or (target is not None and value.shape == target.shape):
        return value
    shape = tuple(value.shape)
    lead = 0
    while lead < len(shape) and shape[lead] == 1:
        lead += 1
    return value.view(shape[lead:]) if lead else value


def _has_bool_mask(key):
    """Whether an indexing key holds a bool tensor (torch's masked paths)."""
    parts = key if isinstance(key, tuple) else (key,)
    return builtins.any(isinstance(k, Tensor) and k.dtype is _dt.bool_ for k in parts)


def _check_put_dtype(self, values):
    """torch's index_put does not promote: a tensor of values must have self's dtype
    (TestTypePromotion.test_indexing_fail); a Python number is cast."""
    if isinstance(values, Tensor) and values.dtype is not self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_SCALAR_NAME[self.dtype.name]} for the destination and {_SCALAR_NAME[values.dtype.name]} "
                           "for the source. Convert the values with .to(destination.dtype).")


def _mask_to_indices(indices):
    return [j for i in indices
            for j in (nonzero(i, as_tuple=True) if isinstance(i, Tensor) and i.dtype is _dt.bool_ else (i,))]


def _check_indices_tuple(indices, api):
    """torch's parser: ``indices`` a tuple (or list) of Tensors / None, not a Tensor itself."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{api}(): argument 'indices' (position 1) must be tuple of Tensors, not "
                        f"{type(indices).__name__}; wrap it: {api}((index,), values)")
    for i, t in enumerate(indices):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")


@method()
def index_put_(self, indices, values, accumulate=False, *, markers=None):
    """Mirrors ``torch.Tensor.index_put_`` (bool masks as in :func:`index_put`)."""
    if markers is None:
        _check_indices_tuple(indices, "index_put_")
        masks = _byte_masks_as_bool(tuple(indices))
        _check_index_put(self, masks, values, "index_put_")   # a mask's shape is checked first
        _check_byte_mask_fill(indices, values, accumulate)
        indices = masks
        key = indices
        if (not accumulate and is_expanded(self) and isinstance(values, Tensor) and values.numel() == 1
                and values.dtype is self.dtype):
            # an expanded self and one value: torch warns and writes every alias (defined, as the
            # value is the same everywhere) where other writes raise
            where = zeros(tuple(self.shape), dtype=_dt.bool_).index_put_(tuple(indices), tensor(True))
            return write_one_value_expanded(self, where, values.reshape(()), "index_put_")
        indices = _mask_to_indices(indices)
        markers = tuple(("t",) for _ in indices)
        _check_put_dtype(self, values)
        try:
            return apply_inplace(OPS["index_put"], self, (values, *indices), (("key", markers), ("accumulate", accumulate)))
        except RuntimeError:
            _check_value_fits(self, key, values)    # torch's "shape mismatch" message when that is the cause
            raise
    _check_put_dtype(self, values)
    return apply_inplace(OPS["index_put"], self, (values, *indices), (("key", markers), ("accumulate", accumulate)))


def _check_byte_mask_fill(indices, values, accumulate):
    """torch writes one value through a single mask with ``masked_fill_``, which takes no uint8
    mask: RuntimeError there, where ``self[mask] = v`` and accumulate=True take it."""
    if (not accumulate and len(indices) == 1 and isinstance(indices[0], Tensor) and indices[0].dtype is _dt.uint8
            and isinstance(values, Tensor) and values.numel() == 1):
        raise RuntimeError("index_put_: masked_fill_ only supports boolean masks, but got mask with dtype unsigned "
                           "char; pass mask.bool()")


@method(function=True)
def index_put(self, indices, values, accumulate=False):
    """Mirrors ``torch.index_put``: ``self[indices] = values`` (``+=`` with ``accumulate``) out of
    place. A bool mask among ``indices`` stands for the int indices of its True elements, as torch
    (so it needs concrete values). RuntimeError when values' dtype is not self's or values do not
    broadcast to ``self[indices]``'s shape; IndexError for float indices, too many indices or an
    index out of range."""
    _check_indices_tuple(indices, "index_put")
    masks = _byte_masks_as_bool(tuple(indices))
    _check_index_put(self, masks, values, "index_put")   # a mask's shape is checked first
    _check_byte_mask_fill(indices, values, accumulate)
    indices = masks
    key = indices
    indices = _mask_to_indices(indices)
    markers = tuple(("t",) for _ in indices)
    _check_put_dtype(self, values)
    try:
        return apply_op(OPS["index_put"], (self, values, *indices), (("key", markers), ("accumulate", accumulate)))
    except RuntimeError:
        _check_value_fits(self, key, values)    # torch's "shape mismatch" message when that is the cause
        raise


def _index_arg(index, name, self=None, dim=None):
    """An index tensor of int32 or int64 (torch's RuntimeError for any other, or a non-tensor).
    With ``self``, ``dim`` is checked against its rank first: torch wraps the dim of gather and
    the scatters before it looks at the index's dtype or rank (IndexError)."""
    if not isinstance(index, Tensor):   # torch's argument parser: TypeError
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(index).__name__}; pass an int64 tensor")
    if isinstance(self, Tensor):
        _wrap_dim(dim, self.ndim)
    words = "Expected dtype int32 or int64 for index" if name == "index_select" else None
    # scatter's kernels all say scatter() (scatter_add, scatter_reduce too), as torch
    check_index_dtype(index, "scatter" if name.startswith("scatter") else name,
                      words or "Expected dtype int32/int64 for index", empty_ok=name != "index_select")


@method(function=True)
def gather(self, dim, index, *, sparse_grad=False):
    """Mirrors ``torch.gather(input, dim, index)``. RuntimeError for non-int64 index.
    ``sparse_grad=True``: the gradient for ``self`` is a sparse COO tensor, as torch."""
    _index_arg(index, "gather", self, dim)
    if index.numel() == 0:
        # torch checks neither the index's dtype nor its shape against self when it has no elements:
        # the result is an empty tensor of the index's shape and self's dtype (a view: grad_fn differs)
        return self.reshape(-1).narrow(0, 0, 0).reshape(tuple(index.shape))
    if index.ndim != self.ndim and (self.ndim, index.ndim) not in ((0, 1), (1, 0)):   # 0-d counts as 1-d
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    d = _wrap_dim(dim, self.ndim)
    for i, (n, m) in enumerate(zip(index.shape, self.shape)):
        if i != d and n > m:
            raise RuntimeError(f"gather(): Size does not match at dimension {i} expected index {list(index.shape)} to "
                               f"be no larger than self {list(self.shape)} apart from dimension {d}")
    check_index_range(index, self.shape[d] if self.ndim else 1, d, "gather")
    if sparse_grad and self.ndim and index.ndim and self.requires_grad and _state.grad_enabled():
        # sparse_grad was ignored: the gradient came back dense where torch's is sparse COO
        # (a 0-d input or index keeps the dense gradient here: torch's is a sparse tensor of no sparse dims)
        return sparse_gather(self, d, index)
    return apply_op(OPS["gather"], (self, index), (("dim", d),))


@method(function=True)
def take_along_dim(self, indices, dim=None):
    """Mirrors ``torch.take_along_dim``: without ``dim``, ``gather`` on the flattened tensors
    (RuntimeError for an index out of range); with ``dim``, input and ``indices`` broadcast
    outside ``dim`` and each index is taken modulo the dim's size, as torch 2.13 (so ``-1`` is
    the last element). RuntimeError when the ranks differ or ``indices`` is not int64 (without
    ``dim``, not int32 or int64: torch hands the flattened tensors to gather's own check)."""
    if dim is None and isinstance(indices, Tensor):
        return gather(flatten(self), 0, flatten(indices))
    if not isinstance(indices, Tensor) or indices.dtype is not _dt.int64:
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_SCALAR_NAME[indices.dtype.name] if isinstance(indices, Tensor) else type(indices).__name__}")
    if self.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, but "
                           f"got {self.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    d = _wrap_dim(dim, self.ndim)
    want = list(self.shape)
    want[d] = indices.shape[d]
    index_shape = tuple(broadcast_shape((want, indices.shape), "take_along_dim"))
    self_shape = index_shape[:d] + (self.shape[d],) + index_shape[d + 1:]
    x = expand(self, self_shape) if tuple(self.shape) != self_shape else self
    indices = expand(indices, index_shape) if tuple(indices.shape) != index_shape else indices
    return gather(x, d, indices % builtins.max(self.shape[d], 1))


def _check_src_dtype(self, src, api):
    if isinstance(src, Tensor) and src.dtype is not self.dtype:
        raise RuntimeError(f"{api}(): Expected self.dtype to be equal to src.dtype; got {self.dtype} and {src.dtype}, "
                           "convert src with .to(input.dtype)")


@method(function=True)
def scatter(self, dim, index, src=None, *, value=None, reduce=None):
    """Mirrors ``torch.scatter(input, dim, index, src|value)``."""
    _index_arg(index, "scatter", self, dim)
    if src is not None and value is not None:   # no overload takes both (one would be dropped silently)
        raise TypeError("scatter() received an invalid combination of arguments: got both src and value=; pass "
                        "src (a Tensor) or value (a number), not both")
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() received an invalid combination of arguments: give src (a Tensor) or value (a number)")
    check_scatter_reduce(reduce, "scatter")
    index, src = check_scatter_shapes(self, index, src, dim)
    d = _wrap_dim(dim, self.ndim)
    check_index_range(index, self.shape[d] if self.ndim else 1, d, "scatter")
    _check_src_dtype(self, src, "scatter")
    if isinstance(src, Tensor):
        return apply_op(OPS["scatter"], (self, index, src), (("dim", d), ("reduce", reduce)))
    check_number_fits(src, self.dtype, "scatter")   # NaN/inf into an integer tensor, as torch
    check_float_fits(src, self.dtype, "scatter")
    check_real_scalars("scatter", self.dtype, value=src)
    return apply_op(OPS["scatter_value"], (self, index, src), (("dim", d), ("reduce", reduce)))


@method(function=True)
def scatter_add(self, dim, index, src):
    """Mirrors ``torch.scatter_add``. TypeError for a src that is not a Tensor (no Scalar
    overload in torch)."""
    if not isinstance(src, Tensor):
        raise strict_error("scatter_add", "src", "Tensor", src, 3)
    _index_arg(index, "scatter_add", self, dim)
    index, src = check_scatter_shapes(self, index, src, dim)
    d = _wrap_dim(dim, self.ndim)
    check_index_range(index, self.shape[d] if self.ndim else 1, d, "scatter_add")
    _check_src_dtype(self, src, "scatter_add")
    return apply_op(OPS["scatter_add"], (self, index, src), (("dim", d),))


@method(function=True)
def index_select(self, dim, index):
    """Mirrors ``torch.index_select``: index must be a 1-D integer tensor. An index outside the
    dim raises what torch's CPU kernels raise: IndexError, but RuntimeError for a tensor of two
    or more dims when ``dim`` is 1 or the tensor is empty (torch's dim-1 and empty-input
    paths), and RuntimeError for any index into a dim of size 0 of such a tensor."""
    if isinstance(index, Tensor) and index.ndim > 1:   # torch's first check, before the dtype's
        raise IndexError("index_select(): Index is supposed to be a vector")
    _index_arg(index, "index_select")
    if index.ndim == 0 and self.ndim:   # a 0-d index keeps the dim, one long
        index = index.reshape(1)
    d = _wrap_dim(dim, self.ndim)
    size = self.shape[d] if self.ndim else 1
    if self.ndim > 1 and index.numel() and (d == 1 or self.numel() == 0):
        if size == 0:
            raise RuntimeError("index_select(): self indexing axis dim should be positive: dimension "
                               f"{d} has size 0, so no index can select from it; pass an empty index")
        check_index_range(index, size, d, "index_select", negative=False, message=lambda bad: (
            f"index_select(): INDICES element is out of DATA bounds, id={bad} axis_dim={size} (indices "
            f"must lie in [0, {size}) for dimension {d})"))
    else:
        check_index_range(index, size, d, "index_select", IndexError)
    return apply_op(OPS["index_select"], (self, index), (("dim", d),))


@method(function=True)
def index_add(self, dim, index, source, *, alpha=1):
    """Mirrors ``torch.index_add``. An index outside the dim (eager) raises IndexError for a tensor
    of at most one dim, RuntimeError above (as torch); RuntimeError
    when ``source`` does not match ``self`` outside ``dim``."""
    d, alpha = index_add_args(self, dim, index, source, alpha, "index_add")
    if index.ndim == 0:   # torch takes a 0-d index as one index
        index = index.reshape(1)
    return apply_op(OPS["index_add"], (self, index, source, alpha), (("dim", d),))


@method(function=True)
def masked_fill(self, mask, value):
    """Mirrors ``torch.masked_fill``: mask must be bool and broadcastable."""
    if not isinstance(mask, Tensor):   # torch's argument parser: TypeError, as masked_fill_
        raise not_a_tensor("masked_fill", mask, "mask")
    if mask.dtype is not _dt.bool_:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype " + _CPP_NAME[mask.dtype.name])
    _check_scalar_value(value, "masked_fill", "Tensor mask, Tensor value", self.dtype)
    if (value.is_complex() if isinstance(value, Tensor) else isinstance(value, complex)) and not self.is_complex():
        raise RuntimeError(f"value cannot be converted to type {self.dtype} without overflow: {value} is complex; "
                           "fill a complex tensor or pass a real value")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.ndim} dimension(s).")
        return apply_op(OPS["masked_fill_tensor"], (self, mask, value))
    return apply_op(OPS["masked_fill"], (self, mask, value))


@method(function=True)
def masked_select(self, mask):
    """Mirrors ``torch.masked_select``: the 1-D tensor of elements where the bool ``mask``
    (broadcast with input) is True. Autograd: ``MaskedSelectBackward0``. RuntimeError for a
    non-bool mask or shapes that do not broadcast."""
    if not isinstance(self, Tensor) or not isinstance(mask, Tensor) or mask.dtype is not _dt.bool_:
        check_tensors("masked_select", self, mask, names=("input", "mask"))   # torch's parser first
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    try:
        shape = tuple(_broadcast_shapes(tuple(self.shape), tuple(mask.shape)))
    except ValueError:
        raise RuntimeError(f"masked_select: the shape of the mask {list(mask.shape)} does not broadcast with "
                           f"the input's {list(self.shape)}") from None
    x = expand(self, *shape) if tuple(self.shape) != shape else self
    m = expand(mask, *shape) if tuple(mask.shape) != shape else mask
    if not shape:   # 0-d input and mask: torch selects from the one element (nonzero's 0-d index is 1-d)
        x, m = x.reshape(1), m.reshape(1)
    idx = nonzero(m, as_tuple=True)
    return apply_op(OPS["masked_select"], (x, *idx), (("key", tuple(("t",) for _ in idx)),))


def _nonzero_past_numpy_dims(value, as_tuple):
    flat = np.flatnonzero(np.asarray(value.reshape(-1))).astype(np.int64)
    cols = []
    for size in reversed(value.shape):       # C order: the last dim varies fastest
        cols.append(flat % size if size else flat)
        flat = flat // size if size else flat
    cols.reverse()
    if as_tuple:
        return tuple(tensor(c) for c in cols)
    return tensor(np.stack(cols, axis=1))


@method(function=True)
def nonzero(self, *, as_tuple=False):
    """Mirrors ``torch.nonzero``: int64 ``(n, ndim)`` indices, or a tuple of 1-D index tensors
    with ``as_tuple=True``. Needs concrete values (the output shape depends on the data)."""
    value = _concrete(self, "nonzero()")
    limited.check_dtype("nonzero()", self.dtype)
    if value.ndim > 64:     # numpy holds 64 dims at most: the flat positions, unraveled by hand
        return _nonzero_past_numpy_dims(value, as_tuple)
    arr = np.asarray(value)
    nz = np.nonzero(arr) if arr.ndim else np.nonzero(arr.reshape(1))
    if as_tuple:
        return tuple(tensor(a.astype(np.int64)) for a in nz)
    if arr.ndim == 0:   # torch: one (empty) index row per nonzero element of a 0-d tensor
        return tensor(np.zeros((int(bool(arr)), 0), np.int64))
    return tensor(np.stack(nz, axis=1).astype(np.int64))


@method(function=True)
def argwhere(self):
    return nonzero(self)
