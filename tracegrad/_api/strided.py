"""Tensor methods that address storage directly: ``as_strided``/``as_strided_``, ``unfold``, ``set_``, ``resize_``/``resize_as_``, and torch's ``*_copy`` functions (a view
op's values in a new tensor: ``view_copy``, ``diagonal_copy``, ``split_copy``...).

Strides and storage offsets are read off the view chain (``_tensor/tensor.py``); NOTE [as_strided
views] in ``_ops/strided.py`` says how as_strided becomes a chain step.
"""
from __future__ import annotations

import builtins
import math
import operator

from .. import _state
from ..autograd._dispatch import apply_op, show_saved
from ..autograd.grad_mode import STATE as _GRAD_MODE
from .._ops.errors import not_a_tensor, not_self
from .._ops.registry import OPS
from .._ops.strided import COPY_OF, NARROW_COPY, as_strided_index
from .._tensor.convert import bool_size_error
from .._tensor.factories import arange, check_result_size, empty, zeros
from .._tensor.numpy_bridge import HostSharedStorage
from .._tensor.memory_format import (channels_last, check_format, contiguous_format, format_order,
                                      memory_format as _memory_format, preserve_format, suggest_memory_format)
from .._tensor.out import write_out
from .._tensor.storage import Storage, TypedStorage
from .._tensor.tensor import Tensor, _wrap_dim, storage_offset_of, strides_of
from ._registry import function, method
from .argcheck import require_int
from .inplace import _restride_
from .promotion import check_tensors


def _ints(seq, what):
    if isinstance(seq, bool) or (isinstance(seq, (tuple, list)) and seq and type(seq[0]) is bool):
        # torch's parser tells an int list by its first element: a bool there is no int
        raise TypeError(f"as_strided(): argument '{what}' must be tuple of ints, but found element of type bool "
                        "at pos 0; pass ints")
    if isinstance(seq, int):
        seq = (seq,)
    for pos, s in enumerate(seq):
        if isinstance(s, Tensor) and s.dtype.name == "bool" and s.numel() == 1:
            raise bool_size_error(f"as_strided(): argument '{what}'", pos)   # a symbolic int list, as torch's
    try:
        # __index__, not int(): torch's parser refuses a float size (as_strided(x, (2.5,), (1,)))
        return tuple(operator.index(s) for s in seq)
    except TypeError:
        raise TypeError(f"as_strided(): argument '{what}' must be a tuple of ints") from None


def _contiguous_strides(shape):
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= builtins.max(n, 1)
    return tuple(reversed(out))


def _storage_tensor(t):
    """A tensor over the whole of t's storage (no view chain), sharing its version counter."""
    r = Tensor._make(t._st.array)
    r._st, r._vc = t._st, t._vc
    return r


@method(function=True)
def as_strided(self, size, stride, storage_offset=None):
    """Mirrors ``torch.as_strided(input, size, stride, storage_offset=None)``: a view reading
    storage positions ``storage_offset + sum(i_k * stride_k)`` (offset default: input's). Autograd
    ``AsStridedBackward0`` when every position is one of input's elements (NOTE [as_strided
    views]). RuntimeError for mismatched lengths, negative strides or offset, or positions past
    the storage's end. Differs from torch: reading storage outside input's elements is allowed
    only without autograd (NotImplementedError when input requires grad)."""
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: as_strided got size {list(size)} and "
                           f"stride {list(stride)}")
    if builtins.any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    if builtins.any(n < 0 for n in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(size)}")
    check_result_size(size, 1, "as_strided", view=True)   # torch's numel overflow (NOTE [result size past int64])
    if storage_offset is not None and (isinstance(storage_offset, bool) or not hasattr(storage_offset, "__index__")):
        # int() would take a bool or truncate a float: torch's parser refuses both
        raise TypeError(f"as_strided(): argument 'storage_offset' (position 3) must be int, not "
                        f"{type(storage_offset).__name__}; pass an int offset (in elements)")
    offset = storage_offset_of(self) if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    itemsize = self._value.dtype.itemsize
    n_storage = self._st.nbytes() // itemsize
    need = offset + builtins.sum((n - 1) * s for n, s in zip(size, stride)) + 1 if math.prod(size) else 0
    if need > n_storage:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {itemsize} requiring a storage size of {need * itemsize} are out of bounds "
                           f"for storage of size {n_storage * itemsize}")
    in_stride, in_offset = strides_of(self), storage_offset_of(self)
    if as_strided_index(tuple(self.shape), in_stride, in_offset, size, stride, offset) is not None:
        static = (("size", size), ("stride", stride), ("offset", offset), ("in_stride", in_stride),
                  ("in_offset", in_offset))
        # torch's node shows the storage_offset argument as given (None when omitted)
        return show_saved(apply_op(OPS["as_strided"], (self,), static), (("storage_offset", storage_offset),))
    # positions outside self's elements: read them from the whole storage
    if self.requires_grad and _GRAD_MODE[0]:
        raise NotImplementedError("tracegrad.as_strided: reading storage outside the input's elements is not "
                                  "differentiable here; as_strided the base tensor instead")
    root = _storage_tensor(self)
    if root._value.dtype != self._value.dtype:
        raise NotImplementedError("tracegrad.as_strided: a part view of a complex storage can only address its own "
                                  "elements; as_strided the complex tensor instead")
    static = (("size", size), ("stride", stride), ("offset", offset),
              ("in_stride", _contiguous_strides(tuple(root.shape))), ("in_offset", 0))
    out = apply_op(OPS["as_strided"], (root,), static)
    base = self._base if self._base is not None else self
    out._base = base if not base._chain else None   # a view of base only when base is the storage
    return out


@method(function=True)
def as_strided_(self, size, stride, storage_offset=None):
    """Mirrors ``torch.Tensor.as_strided_``: self becomes ``as_strided(size, stride, offset)``
    of its storage (a metadata change; same rules as ``as_strided``)."""
    return _restride_(self, as_strided(self.detach(), size, stride, storage_offset))


@method(function=True)
def as_strided_scatter(self, src, size, stride, storage_offset=None):
    """Mirrors ``torch.as_strided_scatter(input, src, size, stride, storage_offset=None)``: a copy
    of ``input`` (new storage) whose elements at ``as_strided(size, stride, storage_offset)``
    positions of the copy's storage are ``src``'s. Gradients flow to both (input's at the
    overwritten positions is 0). RuntimeError when ``src``'s shape is not ``size``. Differs from
    torch: grad_fn ``CopySlices`` (torch: ``AsStridedScatterBackward0``)."""
    check_tensors("as_strided_scatter", self, src, names=("input", "src"))
    out = self.clone()
    region = as_strided(out, size, stride, storage_offset)
    if tuple(region.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(region.shape)}")
    region.copy_(src)
    return out


@function()
def slice_inverse(input, src, dim=0, start=None, end=None, step=1):
    """Mirrors ``torch.slice_inverse(input, src, dim=0, start=None, end=None, step=1)``, the
    inverse of ``src[start:end:step]`` (along ``dim``) for view replay: ``input``'s storage seen
    with ``src``'s shape, strides and offset (``input.as_strided(src.size(), src.stride(),
    src.storage_offset())``; ``dim``/``start``/``end``/``step`` only describe the slice).
    RuntimeError when that reaches past ``input``'s storage. Differs from torch: grad_fn
    ``AsStridedBackward0`` (torch: ``SliceInverseBackward0``)."""
    check_tensors("slice_inverse", input, src, names=("input", "src"))
    return as_strided(input, tuple(src.shape), strides_of(src), storage_offset_of(src))


@method("unfold")
def unfold(self, dimension, size, step):
    """Mirrors ``Tensor.unfold(dimension, size, step)``: a view holding every window of ``size``
    elements along ``dimension``, ``step`` apart, as a new last dim (``dimension`` becomes
    ``(length - size) // step + 1`` long). Autograd ``UnfoldBackward0``. RuntimeError for
    ``size`` negative or larger than the dim, or ``step <= 0``; TypeError for a non-int argument."""
    for pos, (name, v) in enumerate((("dimension", dimension), ("size", size), ("step", step)), 1):
        if type(v) is not int:   # torch's parser: ints (a float size is refused)
            require_int("unfold", name, v, pos)
    d = _wrap_dim(dimension, self.ndim)
    length = self.shape[d] if self.ndim else 1
    if size < 0:
        raise RuntimeError(f"unfold: size is {size} but must be >= 0")
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"unfold: step is {step} but must be > 0")
    return apply_op(OPS["unfold"], (self,), (("dimension", d), ("size", int(size)), ("step", int(step))))


def unfold_backward(grad_in, input_sizes, dim, size, step):
    """Mirrors ``torch.ops.aten.unfold_backward(grad_in, input_sizes, dim, size, step)`` (an
    operator torch has only under ``ops.aten``): the gradient of ``Tensor.unfold(dim, size, step)``
    for an input of ``input_sizes``, each window's gradient added back at the elements it covers
    (overlapping windows sum). Differentiable (an index_add of ``grad_in``). ValueError for
    ``step <= 0``, RuntimeError for a negative ``size`` (torch's order: step, then size), IndexError
    for ``dim`` out of range."""
    from .indexing import index_add   # local: only this ATen-only op needs an edge to indexing/shape
    from .shape import movedim        # local: as above
    if step <= 0:   # torch checks the step first, with a ValueError
        raise ValueError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    sizes = tuple(int(s) for s in input_sizes)
    d = _wrap_dim(dim, len(sizes))
    if not sizes:   # a 0-d input unfolds to (size,) with size 0 or 1
        return grad_in.sum().reshape(())
    n = grad_in.shape[d]
    # the windows' elements, window after window, laid out along dim: (..., n * size, ...)
    g = movedim(grad_in, -1, d + 1).reshape(sizes[:d] + (n * size,) + sizes[d + 1:])
    idx = (arange(n, device=grad_in.device).reshape(n, 1) * step + arange(size, device=grad_in.device)).reshape(-1)
    return index_add(zeros(sizes, dtype=grad_in.dtype, device=grad_in.device), d, idx, g)


# set_'s source left out (an explicit None is torch's TypeError)
_NO_SOURCE = type("_NoSource", (), {"__repr__": lambda self: "<absent>"})()


@method()
def set_(self, source=_NO_SOURCE, storage_offset=0, size=None, stride=None):
    """Mirrors ``torch.Tensor.set_``: self becomes a view of ``source`` (a tensor: its storage and
    layout; a storage: ``size``/``stride``/``storage_offset`` over it, contiguous by default;
    nothing: an empty tensor). A metadata change that bumps the version counter. TypeError for
    an explicit ``source=None`` (torch's overloads take a source or nothing)."""
    if source is None:
        raise TypeError("set_() received an invalid combination of arguments: got source=None; call set_() "
                        "with no argument for an empty tensor, or pass a Tensor or a Storage")
    if source is _NO_SOURCE:
        new = Tensor._make(self._value.reshape(-1)[:0])
    elif isinstance(source, Tensor):
        if source.dtype != self.dtype:
            raise RuntimeError(f"set_(): expected a source tensor of dtype {self.dtype} (self's dtype) but got "
                               f"{source.dtype}; convert it first with source.to(self.dtype)")
        new = source.detach()
    elif isinstance(source, (Storage, TypedStorage)):
        st = source if isinstance(source, Storage) else source.untyped()
        if st.array.dtype != self._value.dtype:
            raise RuntimeError(f"Expected a Storage of type {self.dtype} but got a storage of another type")
        carrier = Tensor._make(st.array)
        carrier._st = st
        size = (st.nbytes() // self._value.dtype.itemsize,) if size is None else tuple(size)
        stride = _contiguous_strides(size) if stride is None else tuple(stride)
        new = as_strided(carrier, size, stride, storage_offset)
    else:
        raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not {type(source).__name__}")
    if _state.CAPTURE[0] is not None:
        # inside a compiled trace: moving ``self`` onto another storage is ``self.data = new``
        # to the capture (undone if the trace is abandoned; onto an argument's memory, a break)
        _state.CAPTURE[0].see_data_set(self, new)
    return _retarget(self, new)


@method()
def sparse_dim(self):
    """Mirrors ``torch.Tensor.sparse_dim()``: the number of sparse dims, 0 for a strided tensor
    (sparse COO tensors have their own)."""
    if not isinstance(self, Tensor):   # NOTE [unbound self]
        raise not_self("sparse_dim", self)
    return 0


@method()
def dense_dim(self):
    """Mirrors ``torch.Tensor.dense_dim()``: the number of dense dims, ``ndim`` for a strided
    tensor (sparse COO tensors have their own)."""
    return self.ndim


@method()
def dim_order(self, *, ambiguity_check=False):
    """Mirrors ``torch.Tensor.dim_order(*, ambiguity_check=False)``: the dims from outermost to
    innermost in memory, a tuple of ints, ordered as torch orders an elementwise result's
    dims (contiguous and channels_last layouts first; equal strides by size).

    ``ambiguity_check=True`` raises RuntimeError when another order is as valid (a size-1 dim,
    two dims of equal stride); a list of memory formats accepts such a tensor when it is
    contiguous in exactly one of them. TypeError for another kind of ``ambiguity_check``."""
    if not isinstance(ambiguity_check, bool) and not (
            isinstance(ambiguity_check, list) and all(isinstance(f, _memory_format) for f in ambiguity_check)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    shape, st = tuple(self.shape), strides_of(self)
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    if ambiguity_check is not False and (any(a == b for a, b in zip(st, st[1:])) or 1 in shape) \
            and builtins.sum(bool(self.is_contiguous(memory_format=f)) for f in formats) != 1:
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                           "memory formats.")
    perm, ambiguous = _layout_order(shape, st, self)
    if ambiguity_check is not False and ambiguous:
        raise RuntimeError("The tensor does not have unique dim order.")
    return perm


def _layout_order(shape, st, t):
    """(dims outermost first, whether some neighbours could swap) by torch's rule for the
    physical order of an elementwise result: an insertion sort from the innermost dim that
    skips stride-0 dims and orders equal strides by size."""
    nd = len(shape)
    if nd <= 1:
        return tuple(range(nd)), False
    cont = t.is_contiguous(memory_format=contiguous_format)
    last = nd == 4 and t.is_contiguous(memory_format=channels_last)
    if cont != last:
        return (tuple(range(nd)) if cont else (0, *range(2, nd), 1)), False

    def ge(a, b):
        return b == 0 or (a != 0 and (a >= b or a % b == 0))

    def order(a, b):        # 1: swap (a is inner to b), -1: keep, 0: either
        sa, sb = st[a], st[b]
        if sa == 0 or sb == 0:
            return 0
        if sa == sb:
            return 0 if ge(shape[b], shape[a]) else 1
        return -1 if ge(sb, sa) else 1

    perm = list(reversed(range(nd)))
    for i in range(1, nd):
        j = i
        for k in reversed(range(i)):
            c = order(perm[k], perm[j])
            if c > 0:
                perm[k], perm[j] = perm[j], perm[k]
                j = k
            elif c < 0:
                break
    ambiguous = any(order(perm[i], perm[i + 1]) != -1 for i in range(nd - 1))
    return tuple(reversed(perm)), ambiguous


@method()
def is_set_to(self, tensor) -> bool:
    """Mirrors ``torch.Tensor.is_set_to``: True when both tensors are the same view of one
    storage (same storage, offset, shape and strides)."""
    check_tensors("is_set_to", self, tensor, names=("input", "tensor"))
    return (self._st is tensor._st and tuple(self.shape) == tuple(tensor.shape)
            and storage_offset_of(self) == storage_offset_of(tensor) and strides_of(self) == strides_of(tensor))


def _retarget(self, new):
    """self takes ``new``'s storage and view chain (``_restride_``); it stays a view of its base
    only while the base's chain still leads to it."""
    _restride_(self, new)
    base = self._base
    if base is not None and (base._st is not self._st or self._chain[:len(base._chain)] != base._chain):
        self._base = None
    return self


def _resize_sizes(sizes):
    """``resize_``'s sizes (ints, or one tuple/list/Size) as torch's parser reads them: through
    ``__index__`` (a 0-d integer tensor is one size; a float, even inside a tuple, or a bool first
    is its TypeError, where ``int()`` truncated 2.5 silently), a bool tensor its RuntimeError."""
    seq = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
    for pos, s in enumerate(seq):
        if isinstance(s, Tensor) and s.dtype.name == "bool" and s.numel() == 1:
            raise bool_size_error("resize_(): argument 'size'", pos)
        try:
            if type(s) is bool and pos == 0:   # torch's parser tells an int list by its first element
                raise TypeError
            operator.index(s)
        except TypeError:
            raise TypeError(f"resize_(): argument 'size' (position 1) must be tuple of ints, but found element of "
                            f"type {type(s).__name__} at pos {pos}; pass ints") from None
    return tuple(operator.index(s) for s in seq)


@method()
def resize_(self, *sizes, memory_format=None):
    """Mirrors ``torch.Tensor.resize_``: self takes the new shape over its storage, contiguous
    from its storage offset; elements past the storage's end are new (``tracegrad.empty``'s:
    zeros, or NaN / the integer max under deterministic fill; uninitialized in torch). Unchanged
    shape: nothing happens. RuntimeError for a tensor that requires grad (even for an unchanged
    shape, as torch) or a negative size, or
    for growing one that shares a NumPy array's memory (torch's unresizable storage). Differs from torch: growing the storage gives self a new one (views of the
    old storage keep it). TypeError, as torch, when no size is given."""
    if not sizes:
        raise TypeError('resize_() missing 1 required positional arguments: "size"; pass the new sizes, or () '
                        'for a 0-d tensor')
    shape = _resize_sizes(sizes)
    check_format(memory_format, "resize_")
    # torch checks this first (even a resize to the same shape is refused), in its autograd
    # kernel, which inference_mode() skips: there any tensor resizes
    if self.requires_grad and not _state.in_inference_mode():
        raise RuntimeError("cannot resize variables that require grad; resize a detached copy instead "
                           "(x.detach().clone().resize_(...))")
    if memory_format is preserve_format:
        raise RuntimeError("Unsupported memory formatPreserve: resize_ takes contiguous_format, channels_last or "
                           "channels_last_3d")
    # a memory_format restrides self to that format even when the shape is unchanged (torch's
    # empty_tensor_restride after the resize)
    strides = None if memory_format is None else _format_strides(shape, memory_format)
    if shape == tuple(self.shape) and (strides is None or strides == strides_of(self)):
        return self
    if builtins.any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(shape)}: {list(shape)}")
    if _state.CAPTURE[0] is not None:   # in a compiled trace: a tensor from outside is a graph break
        _state.CAPTURE[0].see_layout_change(self)
    n, offset = math.prod(shape), storage_offset_of(self)
    if (n + offset) * self._value.dtype.itemsize >= 2 ** 63:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and "
                           f"strides={list(_contiguous_strides(shape))}")
    root = _storage_tensor(self)
    if root._value.dtype != self._value.dtype:
        raise NotImplementedError("tracegrad: resize_ of a part view of a complex storage is not supported")
    if offset + n > root.numel():    # grow: a new storage holding the old elements, then new memory
        if type(self._st) is HostSharedStorage:   # numpy owns the memory (NOTE [numpy bridge])
            raise RuntimeError("Trying to resize storage that is not resizable: the tensor shares a NumPy array's "
                               "memory (from_numpy / numpy()); resize a clone() instead")
        grown = empty(offset + n - root.numel(), dtype=self.dtype)
        root = apply_op(OPS["cat"], (root.reshape(-1), grown), (("dim", 0), ("dtype", self._value.dtype)))
    return _retarget(self, as_strided(root, shape, strides or _contiguous_strides(shape), offset))


def _format_strides(shape, fmt):
    """The dense strides of ``shape`` laid out in memory format ``fmt`` (a size-0 or size-1 dim
    counts as 1, as torch's ``get_channels_last_strides``); torch's rank error for a channels-last
    format at the wrong rank."""
    strides, step = [0] * len(shape), 1
    for d in reversed(format_order(fmt, len(shape))):
        strides[d] = step
        step *= builtins.max(shape[d], 1)
    return tuple(strides)


@method(function=True)
def resize_as_(self, other, memory_format=None):
    """Mirrors ``torch.Tensor.resize_as_``: ``resize_(other.shape, memory_format=...)``, where
    ``preserve_format`` takes the format ``other`` suggests (channels_last for a channels-last
    template). TypeError when ``other`` is not a tensor."""
    check_tensors("resize_as_", self, other, names=("input", "the_template"))
    check_format(memory_format, "resize_as_")
    if memory_format is preserve_format:
        memory_format = suggest_memory_format(other)
    return resize_(self, tuple(other.shape), memory_format=memory_format)


# ---- the *_copy functions ------------------------------------------------------------------------
def _copy_function(name, make_view, copy_of=COPY_OF):
    """torch's ``<view>_copy``: the view's values in a new tensor (grad_fn ``<View>Backward0_copy``),
    with ``out=``. ``make_view(input, *args)`` is the view function; it parses the arguments and
    its last view step gives the copy op's static arguments; ``copy_of`` maps it to the copy op."""
    def f(input, *args, out=None, **kwargs):
        try:
            detached = input.detach()
        except AttributeError:
            raise not_a_tensor(name, input) from None
        probe = make_view(detached, *args, **kwargs)
        outs = probe if isinstance(probe, tuple) else (probe,)
        n = len(input._chain)
        step = outs[0]._chain[n:] if outs and outs[0]._st is input._st else ()
        if len(step) == 1 and step[0][0] in copy_of:
            op, static, _ = step[0]
            res = apply_op(copy_of[op], (input,), static)
        else:   # no single view step (the input itself, or a storage-wide as_strided): a clone
            res = make_view(input, *args, **kwargs)
            res = tuple(r.clone() for r in res) if isinstance(res, tuple) else res.clone()
        if out is not None and isinstance(res, tuple) and isinstance(out, (tuple, list)) and len(out) != len(res):
            # a list-returning copy (split_copy, unbind_copy): torch checks the out= list's length at run time
            raise RuntimeError(f"{name}() expected an out= argument of size {len(res)}, got size {len(out)}")
        return res if out is None else write_out(name, res, out, exact_dtype=True)   # torch: out's own dtype
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"Mirrors ``torch.{name}``: ``{name[:-5]}``'s values in a new tensor (no view of input); "
                 f"``out=`` as torch. Autograd: the view's node name with ``_copy``.")
    return f


def _slice(input, dim=0, start=None, end=None, step=1):
    """torch's ``slice`` (``aten::slice``): elements ``start:end:step`` of ``dim`` (a view)."""
    d = _wrap_dim(dim, input.ndim)
    if step is not None and step <= 0:   # (a range would reverse for a negative step, or raise ValueError for 0)
        raise RuntimeError(f"slice step must be positive, got {step}; flip() the result for a reversed slice")
    r = range(input.shape[d])[builtins.slice(start, end, step)]
    static = (("dim", d), ("start", r.start), ("end", builtins.max(r.stop, r.start)), ("step", r.step))
    return apply_op(OPS["slice"], (input,), static)


def _narrow_checked(input, dim, start, length):
    """``narrow`` for ``narrow_copy``, whose torch kernel reports a dim past the last as
    RuntimeError (a negative one out of range stays IndexError, as torch)."""
    if input.ndim and dim >= input.ndim:
        raise RuntimeError(f"narrow_copy(): Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, "
                           f"but got false. (dim {dim} for a {input.ndim}-d input)")
    return input.narrow(dim, start, length)


def _method(name):
    return lambda input, *args, **kwargs: getattr(input, name)(*args, **kwargs)


for _name in ("view", "diagonal", "split", "split_with_sizes", "select", "slice", "transpose", "permute", "t",
              "unsqueeze", "squeeze", "expand", "unbind", "as_strided", "narrow", "unfold", "alias", "detach",
              "view_as_real", "view_as_complex"):
    if _name == "slice":
        _view = _slice
    elif _name == "split_with_sizes":
        _view = _method("split")
    elif _name == "alias":
        _view = (lambda input: apply_op(OPS["alias"], (input,)))
    elif _name == "narrow":
        _view = _narrow_checked
    elif _name in ("view_as_real", "view_as_complex"):
        from . import complex_api as _complex
        _view = getattr(_complex, _name)
    else:
        _view = _method(_name)
    copies = {OPS["slice"]: NARROW_COPY} if _name == "narrow" else COPY_OF
    function(_name + "_copy")(_copy_function(_name + "_copy", _view, copies))
