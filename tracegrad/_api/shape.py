"""Tensor methods, shape family: views, reshape, transpose/permute, expand/repeat, split/chunk,
flip/roll, tril/triu/diag, cat/stack, and the ``T``/``mT``/``H`` properties."""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from ..autograd._dispatch import apply_op, show_saved
from .. import _state
from .._ops import dtypes as _dt
from .._ops.errors import not_a_tensor, not_self
from .._ops.registry import OPS
from .._ops.warn import warn_once
from .._tensor.convert import bool_size_error
from .._tensor.tensor import Size, Tensor, _wrap_dim, can_view_as
from ._registry import function, int_list_method, method, prop
from .argcheck import check_kinds, require_int
from .dtype_views import view_dtype
from .promotion import _SCALAR_NAME, result_dtype
from .._tensor import factories as _factories
from .._tensor import memory_format as _mf
from .._tensor.out import accepts_out


# ---- shape and views --------------------------------------------------------------------
def by_keyword(args, kwargs, name, api):
    """The ``*shape`` of a torch method that also takes its sequence by keyword
    (``x.reshape(shape=(2, 3))``, ``x.permute(dims=(1, 0))``): ``args``, or ``(kwargs[name],)``.
    TypeError, as Python's, for another keyword or both forms at once."""
    if not kwargs:
        return args
    other = [k for k in kwargs if k != name]
    if other:
        raise TypeError(f"{api}() got an unexpected keyword argument '{other[0]}'")
    if args:
        raise TypeError(f"{api}() got multiple values for argument '{name}'")
    return (kwargs[name],)


def _shape_arg(shape, api="view", arg="size"):
    """``api``'s sizes or dims (ints, or one tuple/list/Size of them) as a tuple of ints.
    TypeError when none is given (``x.reshape()``: torch's required argument; ``x.view(())`` is
    the 0-d shape)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    elif not shape:
        raise TypeError(f'{api}() missing 1 required positional arguments: "{arg}"; pass the {arg} '
                        f"(an empty tuple for a 0-d result)")
    for s in shape:
        if type(s) is not int:
            return _index_all(shape, api, arg)
    return tuple(shape)


def _index_all(shape, api, arg):
    """The slow path of ``_shape_arg``: what has ``__index__`` (numpy ints, one-element integer
    tensors) is an int; anything else (a float, None, a string, a float or larger tensor) is
    torch's parser TypeError, where ``int()`` would truncate a float silently."""
    out = []
    for pos, v in enumerate(shape):
        if arg != "dims" and isinstance(v, Tensor) and v.dtype is _dt.bool_ and v.numel() == 1:
            # a size list is read as symbolic ints, which refuse a bool tensor; dims take its
            # __index__ (``x.permute(tensor(True), 0)`` is a transpose)
            raise bool_size_error(f"{api}(): argument '{arg}'", pos)
        try:
            if type(v) is bool and pos == 0:    # torch's parser tells an int list by its first element
                raise TypeError
            out.append(operator.index(v))
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"{api}(): argument '{arg}' must be tuple of ints, but found element of type "
                            f"{type(v).__name__} at pos {pos}; pass ints") from None
    return tuple(out)


def _past_int64(shape, what):
    """torch's parser TypeError for a size past int64 (it reads each size as int64 before any
    shape check); looked at only on the error paths of ``_infer``."""
    for i, s in enumerate(shape):
        if not -2 ** 63 <= s < 2 ** 63:
            raise TypeError(f"{what}(): argument 'size' failed to unpack the object at pos {i + 1} with error "
                            f"\"Overflow when unpacking long long\" (size {s} does not fit int64)")


def _infer(shape, numel, what="view"):
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                _past_int64(shape, what)
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 and numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                               "unspecified dimension size -1 can be any value and is ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        _past_int64(shape, what)
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _ndim(self, api):
    """``self.ndim``; torch's TypeError when ``api`` was called on the class with a non-Tensor
    (NOTE [unbound self]). One call more: for the methods off the eager hot path; the hot ones
    (view, reshape, flatten, permute, t) hold the same ``try`` inline."""
    try:
        return self.ndim
    except AttributeError:
        raise not_self(api, self) from None


@method()
def view(self, *shape, **kwargs):
    """Mirrors ``torch.Tensor.view(*shape)`` (one -1 inferred; or ``size=``); shares storage.
    ``view(dtype)`` (or ``dtype=``) reinterprets the bytes (``dtype_views.view_dtype``).
    RuntimeError on a size mismatch, or when the new shape cannot be laid over the input's
    storage with strides (as torch: use ``.reshape(...)``)."""
    if kwargs:
        if "dtype" in kwargs and not _dt.is_dtype_arg(kwargs["dtype"]):   # view(dtype=3) is no size
            raise TypeError(f"view() received an invalid combination of arguments - got (dtype="
                            f"{type(kwargs['dtype']).__name__}); pass view(dtype=tracegrad.float32) or view(*shape)")
        shape = by_keyword(shape, kwargs, "dtype" if "dtype" in kwargs else "size", "view")
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list, Size)) and _dt.is_dtype_arg(shape[0]):
        return view_dtype(self, shape[0])   # a Python number type too: view(float) is view(float64), as torch
    try:
        numel = self.numel()
    except AttributeError:   # NOTE [unbound self]
        raise not_self("view", self) from None
    s = _infer(_shape_arg(shape), numel)   # None, a float...: TypeError there
    src = self   # whose layout decides: a non-contiguous view argument's own (see_layout_choice)
    if _state.CAPTURE[0] is not None:
        real = _state.CAPTURE[0].see_layout_choice(self, "view()")
        if real is not None:
            src = real
    if src._chain and not can_view_as(src, s):
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return apply_op(OPS["view"], (self,), (("shape", s),))


@method()
def reshape(self, *shape, **kwargs):
    """Mirrors ``torch.reshape`` (the shape as arguments, a sequence, or ``shape=``): a view
    when the input is contiguous, else a copy."""
    try:
        numel = self.numel()
    except AttributeError:   # NOTE [unbound self]
        raise not_self("reshape", self) from None
    s = _infer(_shape_arg(by_keyword(shape, kwargs, "shape", "reshape"), "reshape", "shape"), numel)
    src = self   # as in view
    if _state.CAPTURE[0] is not None:
        real = _state.CAPTURE[0].see_layout_choice(self, "reshape()")
        if real is not None:
            src = real
    if not src._chain or can_view_as(src, s):
        return apply_op(OPS["view"], (self,), (("shape", s),))
    return apply_op(OPS["reshape_copy"], (self,), (("shape", s),))


@method()
def view_as(self, other):
    """Mirrors ``torch.Tensor.view_as``: ``self.view(other.shape)``. TypeError when ``other`` is
    not a Tensor."""
    return view(self, _shape_of("view_as", other))


@method()
def reshape_as(self, other):
    """Mirrors ``torch.Tensor.reshape_as``: ``self.reshape(other.shape)``. TypeError when
    ``other`` is not a Tensor."""
    return reshape(self, _shape_of("reshape_as", other))


def _shape_of(api, other):
    """``other``'s shape, or torch's TypeError when it has none (None, a number, a list)."""
    try:
        return tuple(other.shape)
    except AttributeError:
        raise not_a_tensor(api, other, "other", 1) from None


@method(function=True)
def flatten(self, start_dim=0, end_dim=-1):
    """Mirrors ``torch.flatten``; a 0-d input becomes 1-d."""
    try:
        n = self.ndim
    except AttributeError:   # NOTE [unbound self]
        raise not_self("flatten", self) from None
    s, e = _wrap_dim(start_dim, n), _wrap_dim(end_dim, n)   # a 0-d tensor takes dims 0 and -1 only
    if n == 0:
        return reshape(self, (1,))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self
    shp = tuple(self.shape)
    # the flattened size itself, not -1: with a 0 elsewhere (shape (0, 4, 4)) -1 is ambiguous to
    # reshape, where torch's flatten gives (0, 16)
    return reshape(self, shp[:s] + (math.prod(shp[s:e + 1]),) + shp[e + 1:])


@method(function=True)
def unflatten(self, dim, sizes):
    """Mirrors ``torch.unflatten(input, dim, sizes)``: RuntimeError when ``sizes`` do not
    multiply up to the size of ``dim``, when they are empty or when the tensor is 0-d (no dim to
    split, though ``dim`` 0 and -1 are in range for it)."""
    d = _wrap_dim(dim, self.ndim)
    shp = tuple(self.shape)
    # read as torch's int list (a float or a leading bool is its TypeError, not a size)
    sizes = _shape_arg((tuple(sizes),), "unflatten", "sizes")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty; give the sizes the dim splits into")
    if not shp:
        raise RuntimeError(f"unflatten: Dimension specified as {dim} but tensor has no dimensions; a 0-dim tensor has "
                           "no dim to split (reshape it instead)")
    if sizes.count(-1) <= 1 and all(s >= 0 for s in sizes if s != -1):
        known = math.prod(s for s in sizes if s != -1)
        if (-1 not in sizes and known != shp[d]) or (-1 in sizes and known != 0 and shp[d] % known):
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                               f"({shp[d]}) in the input tensor; their product must equal it")
    inner = _infer(sizes, shp[d])
    return view(self, shp[:d] + inner + shp[d + 1:])


@int_list_method(none=False)
@function()
def squeeze(self, dim=None):
    """Mirrors ``torch.squeeze``: drops size-1 dims (all, one, or a tuple of dims; the method
    also takes several dims as separate arguments, ``x.squeeze(0, 2)``)."""
    shp = tuple(self.shape)
    if dim is None:
        dims = tuple(i for i, s in enumerate(shp) if s == 1)
        return apply_op(OPS["squeeze"], (self,), (("dim", dims),))
    if isinstance(dim, Tensor) and dim.numel() == 1 and dim.dtype._cat <= 1 and (dim.ndim or dim.dtype._cat == 0):
        # torch: a one-element bool or 1-d integer tensor is no int, but its int[] overload takes it
        dim = [int(dim)]
    if isinstance(dim, (tuple, list)):
        wrapped = [_wrap_dim(x, self.ndim) for x in dim]
        if len(set(wrapped)) != len(wrapped):
            raise RuntimeError(f"dim {next(d for i, d in enumerate(wrapped) if d in wrapped[:i])} appears multiple "
                               "times in the list of dims")
        dims = tuple(d for d in wrapped if self.ndim and shp[d] == 1)   # a 0-d tensor: nothing to drop
        return apply_op(OPS["squeeze_dims"], (self,), (("dim", dims),))
    d = _wrap_dim(dim, self.ndim)   # a 0-d tensor takes dim 0 or -1, as torch
    dims = (d,) if self.ndim and shp[d] == 1 else ()
    return show_saved(apply_op(OPS["squeeze_dim"], (self,), (("dim", dims),)), (("dim", dim),))


@method(function=True)
def unsqueeze(self, dim):
    """Mirrors ``torch.unsqueeze``: dim in ``[-ndim-1, ndim]``; a non-integer dim is TypeError."""
    if type(dim) is not int:
        dim = operator.index(require_int("unsqueeze", "dim", dim, 1))
    n = self.ndim + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    out = apply_op(OPS["unsqueeze"], (self,), (("dim", dim % n),))
    return show_saved(out, (("dim", dim),)) if dim < 0 else out


_NO_REPEATS = object()


@method("repeat_interleave")
def repeat_interleave_method(self, repeats=_NO_REPEATS, dim=None, *, output_size=None):
    """Mirrors ``torch.Tensor.repeat_interleave(repeats, dim=None, *, output_size=None)``: as
    ``tracegrad.repeat_interleave(self, repeats, ...)``; ``repeats`` is required (TypeError
    without it or for None, as torch's parser: the counts-only form is the function's)."""
    if repeats is _NO_REPEATS or repeats is None:
        raise TypeError("repeat_interleave() received an invalid combination of arguments - got no repeats: pass "
                        "repeats (an int or a tensor of counts)")
    return repeat_interleave(self, repeats, dim, output_size=output_size)


@method("transpose", "swapdims", function=True)
def transpose(self, dim0, dim1):
    """Mirrors ``torch.transpose`` / ``torch.swapdims``: swaps two dims; a view. IndexError for a
    dim out of range."""
    if self.is_sparse:   # torch.transpose(sparse): the sparse tensor's own (index rows swapped)
        return type(self).transpose(self, dim0, dim1)
    n = self.ndim
    out = apply_op(OPS["transpose"], (self,), (("dim0", _wrap_dim(dim0, n)), ("dim1", _wrap_dim(dim1, n))))
    if (type(dim0) is int and dim0 < 0) or (type(dim1) is int and dim1 < 0):
        show_saved(out, (("dim0", dim0), ("dim1", dim1)))
    return out


@method("swapaxes", function=True)
def swapaxes(self, axis0, axis1):
    """Mirrors ``torch.swapaxes(input, axis0, axis1)`` (numpy's names for ``transpose``)."""
    return transpose(self, axis0, axis1)


@method(function=True)
def t(self):
    """Mirrors ``torch.t``: transpose of a <=2-D tensor. RuntimeError for more dims."""
    try:
        n = self.ndim
    except AttributeError:   # NOTE [unbound self]
        raise not_self("t", self) from None
    if self.is_sparse:   # torch.t(sparse): the sparse tensor's own t() (index rows swapped)
        return type(self).t(self)
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return apply_op(OPS["t"], (self,))


@method()
def permute(self, *dims, **kwargs):
    """Mirrors ``torch.permute`` (``dims`` as arguments, a sequence, or ``dims=``). RuntimeError
    when dims is not a permutation."""
    dims = _shape_arg(by_keyword(dims, kwargs, "dims", "permute"), "permute", "dims")
    try:
        n = self.ndim
    except AttributeError:   # NOTE [unbound self]
        raise not_self("permute", self) from None
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to len(dims) = {len(dims)}")
    d = tuple(_wrap_dim(x, n) for x in dims)
    if len(set(d)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return apply_op(OPS["permute"], (self,), (("dims", d),))


@method("movedim", function=True)
def movedim(self, source, destination):
    """Mirrors ``torch.movedim(input, source, destination)``: a permuted view with the dims in
    ``source`` (an int or a sequence) at the positions in ``destination``, the others in their
    order. TypeError for an int with a sequence; RuntimeError for lengths that differ or a
    repeated dim; IndexError for a dim out of range."""
    return _movedim(self, source, destination, "movedim")


@method("moveaxis", function=True)
def moveaxis(self, source, destination):
    """Mirrors ``torch.moveaxis``, NumPy's name for ``movedim`` (the same checks; its argument
    TypeError names moveaxis, the later errors movedim as torch's do)."""
    return _movedim(self, source, destination, "moveaxis")


def _movedim(self, source, destination, api):
    n = self.ndim
    # torch's int parser takes anything with __index__ (a numpy integer, a 0-d integer tensor)
    source, destination = (operator.index(v) if _index_like(v) else v for v in (source, destination))
    if isinstance(source, int) != isinstance(destination, int):   # torch's overloads: two ints or two sequences
        raise TypeError(f"{api}() received an invalid combination of arguments - got ({type(source).__name__}, "
                        f"{type(destination).__name__}); pass two ints or two sequences of ints")
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should "
                           f"contain the same number of dims as destination ({dst} dims)")
    src = [_wrap_dim(s, n) for s in src]
    dst = [_wrap_dim(s, n) for s in dst]
    for what, ds in (("source", src), ("destination", dst)):
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"movedim: repeated dim in `{what}` ({ds})")
    if n == 0:   # a 0-d tensor's dim 0 / -1 is no axis: nothing moves
        return permute(self, ())
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(self, order)


def _index_like(v) -> bool:
    """A non-sequence, non-bool value torch's int parser reads through ``__index__``."""
    return not isinstance(v, (bool, list, tuple)) and hasattr(v, "__index__") and not (
        isinstance(v, Tensor) and (v.ndim != 0 or v.is_floating_point() or v.is_complex() or v.dtype is _dt.bool_))


@method()
def expand(self, *sizes, **kwargs):
    """Mirrors ``torch.Tensor.expand``: broadcast to ``sizes`` (or ``size=``; -1 keeps a dim)
    without copying; writing into the result in place raises RuntimeError, as torch."""
    sizes = _shape_arg(by_keyword(sizes, kwargs, "size", "expand"), "expand")
    try:
        shp = tuple(self.shape)
    except AttributeError:   # NOTE [unbound self]
        raise not_self("expand", self) from None
    if len(sizes) < len(shp):
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(shp)}}}, size=[{', '.join(map(str, sizes))}]): the number of sizes provided ({len(sizes)}) must be greater or equal to the number of dimensions in the tensor ({len(shp)})")
    lead = len(sizes) - len(shp)
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s == -1:
                raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
            out.append(s)
        else:
            cur = shp[i - lead]
            if s == -1:
                s = cur
            if cur != s and cur != 1:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: {list(shp)}")
            out.append(s)
    _factories.check_result_size(out, self.dtype.itemsize, "expand", view=True)   # NOTE [result size past int64]
    return apply_op(OPS["expand"], (self,), (("size", tuple(out)),))


@method()
def expand_as(self, other):
    """Mirrors ``torch.Tensor.expand_as``: ``self.expand(other.shape)``. TypeError when ``other``
    is not a Tensor."""
    return expand(self, _shape_of("expand_as", other))


@int_list_method
@function()
def broadcast_to(self, size):
    """Mirrors ``torch.broadcast_to``: ``self.expand(size)`` (the method also takes the sizes as
    separate arguments, ``x.broadcast_to(2, 3)``)."""
    return expand(self, tuple(size))


@method()
def repeat(self, *repeats, **kwargs):
    """Mirrors ``torch.Tensor.repeat`` (tiles; or ``repeats=``). RuntimeError when fewer repeats
    than dims."""
    r = _shape_arg(by_keyword(repeats, kwargs, "repeats", "repeat"), "repeat", "repeats")
    if len(r) < _ndim(self, "repeat"):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    if any(k < 0 for k in r):   # torch sizes the result first (unchecked, the op failed with no torch message)
        shape = [k * n for k, n in zip(r, (1,) * (len(r) - self.ndim) + tuple(self.shape))]
        if builtins.min(shape) >= 0:   # negative counts only on empty dims: torch's empty result, as for 0
            return apply_op(OPS["repeat"], (self,), (("repeats", tuple(builtins.max(k, 0) for k in r)),))
        raise RuntimeError(f"Trying to create tensor with negative dimension {next(n for n in shape if n < 0)}: {shape} "
                           f"(repeat(): repeats must be non-negative, got {list(r)})")
    shape = [k * n for k, n in zip(r, (1,) * (len(r) - self.ndim) + tuple(self.shape))]
    _factories.check_result_size(shape, self.dtype.itemsize, "repeat")   # NOTE [result size past int64]
    return apply_op(OPS["repeat"], (self,), (("repeats", r),))


@function()
def repeat_interleave(self, repeats=None, dim=None, *, output_size=None):
    """Mirrors ``torch.repeat_interleave(input, repeats, dim=None, *, output_size=None)`` (int or
    1-D tensor repeats; flattens when dim is None). ``repeat_interleave(repeats)`` alone (a 1-D
    integer tensor) gives ``i`` repeated ``repeats[i]`` times. ``output_size``, the result's
    length along ``dim``, is checked (torch uses it to skip a device sync). RuntimeError for a
    negative repeat or an ``output_size`` that differs from the repeats' total; TypeError for
    ``repeats`` of another kind (a float, a string)."""
    if repeats is not None and (not isinstance(repeats, (int, Tensor)) and not hasattr(repeats, "__index__")
                                or isinstance(repeats, (bool, np.bool_))):   # torch's parser takes no bool
        raise TypeError(f"repeat_interleave(): argument 'repeats' must be Tensor or int, not {type(repeats).__name__}")
    if repeats is not None and dim is not None and self.ndim == 0:
        # torch repeats along a dim it adds to the 0-dim tensor, and that dim is out of range
        raise IndexError(f"repeat_interleave(): dim {dim} is out of range for a 0-dim tensor (it has no dims); leave "
                         "dim=None to repeat its one element")
    if output_size is not None:
        out = repeat_interleave(self, repeats, dim)
        n = out.shape[0 if dim is None or repeats is None else _wrap_dim(dim, self.ndim)]
        if int(output_size) != n:
            if isinstance(repeats, Tensor) or repeats is None:
                raise RuntimeError("allocated size does not match required size")
            raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {n} but got {output_size}")
        return out
    if repeats is None:
        if self.dtype._cat != 1:   # the counts: an integer tensor (torch's kernel has no other)
            raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{_SCALAR_NAME[self.dtype.name]}'"
                                      f"; repeat_interleave(repeats) takes integer counts")
        if self.ndim != 1:
            raise RuntimeError(f"repeat_interleave only accept 1D vector as repeat (got {self.ndim} dims)")
        return repeat_interleave(_factories.arange(self.shape[0]), self)
    op = OPS["repeat_interleave"]
    if isinstance(repeats, Tensor):
        if repeats.dtype._cat != 1:
            raise NotImplementedError(f"repeat_interleave(): repeats must be an integer tensor, got {repeats.dtype}")
        if repeats.ndim > 1:
            raise RuntimeError(f"repeat_interleave(): repeats must be 0-dim or 1-dim tensor (got {repeats.ndim} dims)")
        if repeats.numel() == 1:    # a one-element 1-D tensor broadcasts like a 0-d one, as torch
            repeats = int(repeats.reshape(()))
        else:
            op = OPS["repeat_interleave_tensor"]
            repeats = tuple(repeats.tolist())
    if builtins.min(repeats if isinstance(repeats, tuple) else (repeats,), default=0) < 0:
        raise RuntimeError(f"repeat_interleave(): repeats can not be negative (got {repeats})")
    x = self if dim is not None else flatten(self)
    d = 0 if dim is None else _wrap_dim(dim, self.ndim)
    if isinstance(repeats, tuple) and x.ndim and len(repeats) != x.shape[d]:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{len(repeats)} and input.size({d}) = {x.shape[d]}")
    if x.ndim:   # NOTE [result size past int64]
        n = builtins.sum(repeats) if isinstance(repeats, tuple) else repeats * x.shape[d]
        _factories.check_result_size(x.shape[:d] + (n,) + x.shape[d + 1:], x.dtype.itemsize, "repeat_interleave")
    return apply_op(op, (x,), (("repeats", repeats), ("dim", d)))


@method(function=True)
def narrow(self, dim, start, length):
    """Mirrors ``torch.narrow``: a view of ``length`` elements from ``start`` along ``dim``.
    RuntimeError for a 0-d tensor or a range past the end."""
    if self.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if isinstance(start, Tensor) and (start.ndim != 0 or start.dtype._cat != 1):
        raise RuntimeError("start must be an 0-dim integral Tensor.")
    if type(start) is not int and not isinstance(start, Tensor):
        start = require_int("narrow", "start", start, 2)
    if type(length) is not int:
        length = require_int("narrow", "length", length, 3)
    d = _wrap_dim(dim, self.ndim)
    size = self.shape[d]
    start = int(start)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if start + length > size or start < 0 or length < 0:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return apply_op(OPS["slice"], (self,), (("dim", d), ("start", start), ("end", start + length), ("step", 1)))


@method(function=True)
def select(self, dim, index):
    """Mirrors ``torch.select``: removes ``dim`` picking ``index``; IndexError when out of range."""
    if type(index) is not int:
        index = require_int("select", "index", index, 2)
    if self.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, self.ndim)
    size = self.shape[d]
    index = int(index)
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} at dimension {d}")
    out = apply_op(OPS["select"], (self,), (("dim", d), ("index", index % size)))
    return show_saved(out, (("index", index),)) if index < 0 else out


@method(function=True)
def unbind(self, dim=0):
    """Mirrors ``torch.unbind``: a tuple of views along ``dim``. IndexError for a 0-d tensor."""
    if self.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions; unbind needs at least one")
    d = _wrap_dim(dim, self.ndim)
    return apply_op(OPS["unbind"], (self,), (("dim", d),))


@function()
def split(tensor, split_size_or_sections, dim=0):
    """Mirrors ``torch.split``: chunks of ``split_size`` (last may be smaller; a one-element tensor
    is read with ``int()``) or the given sizes; a numpy int or a float size is torch's TypeError.
    RuntimeError for a 0-d tensor, a negative size, a zero ``split_size`` of a non-empty dim, or
    sizes that do not sum to the dim's size."""
    _check_splittable(tensor, "split")
    # torch's parser checks the sizes' types (and split's kernel a negative split_size) before
    # the dim is wrapped: those errors win over a dim out of range
    if isinstance(split_size_or_sections, Tensor) and split_size_or_sections.numel() == 1:
        split_size_or_sections = int(split_size_or_sections)   # torch's Tensor.split reads it with int()
    if isinstance(split_size_or_sections, int):
        if type(split_size_or_sections) is bool:    # an int to Python, not to torch's parser
            raise TypeError(f"split(): argument 'split_size' must be int or tuple of ints, not bool")
        s = split_size_or_sections
        if s < 0:
            raise RuntimeError(f"split(): split_size must be non-negative, got split_size={s}")
        d = _wrap_dim(dim, tensor.ndim)
        n = tensor.shape[d]
        if s == 0 and n:
            raise RuntimeError(f"split(): split_size must be positive (it may be 0 only for a dimension of size 0), "
                               f"got split_size={s} for dimension {d} of size {n}")
        sizes = tuple(builtins.min(s, n - i) for i in range(0, n, s)) if n else (0,)
        return apply_op(OPS["split"], (tensor,), (("sizes", sizes), ("dim", d)))
    if isinstance(split_size_or_sections, Tensor) and split_size_or_sections.numel() != 1:
        raise TypeError("split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, not Tensor; "
                        "pass split_size_or_sections.tolist()")
    if not hasattr(split_size_or_sections, "__iter__"):   # a numpy int, a float: torch's parser TypeError
        raise TypeError(f"split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, not "
                        f"{type(split_size_or_sections).__name__}; pass a Python int or a list of ints")
    sizes = _index_all(tuple(split_size_or_sections), "split_with_sizes", "split_sizes")   # a float, a str: TypeError
    d = _wrap_dim(dim, tensor.ndim)
    n = tensor.shape[d]
    if builtins.any(x < 0 for x in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={list(sizes)}")
    if builtins.sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at dimension {d}), but got split_sizes={list(sizes)}")
    return apply_op(OPS["split_with_sizes"], (tensor,), (("sizes", sizes), ("dim", d)))


@method("split")
def _split_method(self, split_size, dim=0):
    """Mirrors ``Tensor.split(split_size, dim=0)`` (torch's method names its first argument
    ``split_size``; the function ``split_size_or_sections``): ``split``."""
    return split(self, split_size, dim)


@method(function=True)
def chunk(self, chunks, dim=0):
    """Mirrors ``torch.chunk``: up to ``chunks`` pieces of size ceil(n / chunks); a dim of size 0
    gives ``chunks`` empty pieces. ``chunks`` is anything with ``__index__`` but a bool (a numpy
    int, a one-element integer tensor). RuntimeError for a 0-d tensor or ``chunks`` below 1."""
    _check_splittable(self, "chunk")
    if type(chunks) is not int:
        if isinstance(chunks, bool):
            raise TypeError("chunk(): argument 'chunks' (position 1) must be int, not bool; pass an int")
        chunks = operator.index(require_int("chunk", "chunks", chunks, 1))
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap_dim(dim, self.ndim)
    n = self.shape[d]
    if n == 0:
        return split(self, [0] * chunks, d)
    return split(self, -(-n // chunks), d)


def _check_splittable(self, api):
    if self.ndim == 0:
        raise RuntimeError(f"{api} expects at least a 1-dimensional tensor (got a 0-d tensor)")


@method(function=True)
def tensor_split(self, indices_or_sections=None, dim=0, *, sections=None, indices=None):
    """Mirrors ``torch.tensor_split``: views along ``dim``; an int gives that many near-equal
    pieces (the first ``n % sections`` one longer), a sequence of ints gives split points (sliced
    as Python slices), a tensor holds either (0-d: sections, 1-d: indices)."""
    given = [v for v in (indices_or_sections, sections, indices) if v is not None]
    if len(given) != 1:   # torch's overloads take exactly one of them, and never None
        raise TypeError("tensor_split(): pass exactly one of indices_or_sections (an int, a sequence of ints or "
                        f"a tensor), sections= or indices=; got {len(given)}")
    spec = given[0]
    if isinstance(spec, bool) or type(spec).__name__ in ("bool_", "bool"):   # numpy's bool too
        # a bool is no int to torch's parser (int() would take it as 1 section)
        raise TypeError(f"tensor_split(): argument 'sections' must be int, not {type(spec).__name__}; pass an "
                        "int number of sections, a sequence of int indices or a long tensor")
    if not isinstance(spec, Tensor) and _index_like(spec):   # a numpy integer: sections, as an int
        spec = operator.index(spec)
    elif isinstance(spec, (list, tuple)):
        # torch reads the split points as ints: a float (or a leading bool) is its parser's
        # TypeError, where int() below would truncate it silently
        spec = _index_all(spec, "tensor_split", "indices")
    if self.ndim == 0:
        raise RuntimeError(f"tensor_split expected at least a 1-dimensional tensor, but got a tensor with {self.ndim} dims")
    if isinstance(spec, Tensor):
        if spec.dtype is not _dt.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                               f"{_SCALAR_NAME[spec.dtype.name]}")
        if spec.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {spec.ndim} dims")
        spec = int(spec.item()) if spec.ndim == 0 else [int(i) for i in spec.tolist()]
    d = _wrap_dim(dim, self.ndim)
    n = self.shape[d]
    if isinstance(spec, int):
        if spec <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {spec}")
        base, extra = divmod(n, spec)
        sizes = [base + 1] * extra + [base] * (spec - extra)
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
    else:
        points = [0] + [int(i) for i in spec] + [n]
        pieces = [range(n)[a:b] for a, b in zip(points, points[1:])]
        starts = [r.start if len(r) else min(r.start, n) for r in pieces]
        sizes = [len(r) for r in pieces]
    out = []
    for start, s_ in zip(starts, sizes):     # torch slices each piece (SliceBackward0)
        out.append(apply_op(OPS["slice"], (self,), (("dim", d), ("start", start), ("end", start + s_), ("step", 1))))
    return tuple(out)


@method()
def flip(self, *dims, **kw):
    """Mirrors ``torch.flip(input, dims)`` (``dims`` positional or keyword). RuntimeError for a
    repeated dim; TypeError when no ``dims`` is given."""
    if not dims and "dims" not in kw:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    if isinstance(kw.get("dims"), int):   # only the method's varargs read a bare int as the dims
        raise TypeError(f"flip(): argument 'dims' must be tuple of ints, not {type(kw['dims']).__name__}; "
                        "pass dims=(d,)")
    dims = _shape_arg((kw.pop("dims"),) if "dims" in kw else dims, "flip", "dims")
    if kw:
        raise TypeError(f"flip() got an unexpected keyword argument '{next(iter(kw))}'")
    if self.ndim > 64:   # torch's flip marks its dims in a 64-bit set, whatever dims are named
        raise RuntimeError(f"only tensors with up to 64 dims are supported (flip of a {self.ndim}-d input); "
                           "reshape it to 64 dims or fewer first")
    out = apply_op(OPS["flip"], (self,), (("dims", _unique_dims(dims, self.ndim)),))
    # torch's flip writes into empty_like(self): preserve_format, self's own strides when it is
    # non-overlapping and dense (a transposed or channels-last input keeps its layout)
    return _mf.lay_out(out, _mf.preserve_order(self))


@method("__reversed__")
def reversed_(self):
    """Mirrors ``Tensor.__reversed__``: ``reversed(t)`` is ``t.flip(0)``, a Tensor (a 0-d tensor
    is returned as it is, where ``len`` and iteration refuse it)."""
    return self if self.dim() == 0 else flip(self, 0)


def _unique_dims(dims, ndim):
    """``dims`` wrapped into range; RuntimeError as torch when one appears twice."""
    out = tuple(_wrap_dim(d, ndim) for d in dims)
    for i, d in enumerate(out):
        if d in out[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return () if ndim == 0 else out   # a 0-d tensor's dim 0 / -1 is no axis


@method(function=True)
def fliplr(self):
    """Mirrors ``torch.fliplr``: reverses dim 1. RuntimeError below 2 dims."""
    if _ndim(self, "fliplr") < 2:
        raise RuntimeError(f"Input must be >= 2-d. (fliplr got a {self.ndim}-d tensor)")
    return flip(self, 1)


@method(function=True)
def flipud(self):
    """Mirrors ``torch.flipud``: reverses dim 0. RuntimeError for a 0-d tensor."""
    if _ndim(self, "flipud") < 1:
        raise RuntimeError("Input must be >= 1-d. (flipud got a 0-d tensor)")
    return flip(self, 0)


@method(function=True)
def roll(self, shifts, dims=None):
    """Mirrors ``torch.roll``: without ``dims`` the flattened tensor is rolled by one shift.
    RuntimeError when ``shifts`` is empty or does not match ``dims``."""
    if isinstance(shifts, (tuple, list)) and shifts and type(shifts[0]) is bool:
        check_kinds("roll", shifts=shifts)   # torch's parser tells an int list by its first element
    # shifts and dims are int lists to torch, read through __index__: a one-element bool or
    # integer tensor is one int there (x.roll(1, tensor(0)) rolls dim 0)
    if isinstance(shifts, Tensor) and shifts.dtype is _dt.bool_ and shifts.numel() == 1:
        shifts = operator.index(shifts)
    if isinstance(dims, Tensor) and dims.ndim == 0 and dims.dtype._cat <= 1:
        dims = operator.index(dims)
    if type(shifts) is bool or not isinstance(shifts, int) and not isinstance(shifts, (tuple, list)):
        check_kinds("roll", shifts=shifts)   # a string, a tensor of several elements: the parser's TypeError
        shifts = operator.index(shifts)      # a numpy integer, a one-element integer tensor
    if not isinstance(shifts, int) and len(shifts) == 0:
        raise RuntimeError("`shifts` required")
    if isinstance(dims, (tuple, list)) and len(dims) == 0:
        dims = None   # torch takes an empty dims list as none given: the flattened roll
    if dims is None and not isinstance(shifts, int) and len(shifts) != 1:
        check_kinds("roll", shifts=shifts)
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
    if dims is None:
        return apply_op(OPS["roll_flat"], (self,), (("shifts", int(shifts if isinstance(shifts, int) else shifts[0])),))
    sh = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dm = (dims,) if isinstance(dims, int) else tuple(dims)
    if self.ndim == 0 and dm:
        raise IndexError(f"Dimension specified as {dm[0]} but tensor has no dimensions")
    if len(sh) != len(dm):
        check_kinds("roll", shifts=shifts)
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(dm)}")
    return apply_op(OPS["roll"], (self,), (("shifts", sh), ("dims", tuple(_wrap_dim(d, self.ndim) for d in dm))))


def _check_matrix(self, api, diagonal):
    # torch's check, after its parser's (a diagonal that is not an int: the op's TypeError);
    # without it a 0-d or 1-D input reached the op with no torch message
    if type(diagonal) is bool or isinstance(diagonal, Tensor) and diagonal.dtype is _dt.bool_:
        require_int(api, "diagonal", diagonal, 1)   # a bool tensor: torch's RuntimeError (a symbolic int)
    if _ndim(self, api) < 2 and hasattr(diagonal, "__index__"):
        raise RuntimeError(f"{api}: input tensor must have at least 2 dimensions, got a {self.ndim}-D tensor")
    if isinstance(diagonal, Tensor) and diagonal.dtype._cat == 1 and diagonal.numel() == 1:
        return operator.index(diagonal)   # torch's parser takes a one-element integer tensor as the int
    return diagonal


@method(function=True)
def tril(self, diagonal=0):
    """Mirrors ``torch.tril``. RuntimeError for an input of fewer than 2 dims."""
    diagonal = _check_matrix(self, "tril", diagonal)
    return apply_op(OPS["tril"], (self,), (("diagonal", diagonal),))


@method(function=True)
def triu(self, diagonal=0):
    """Mirrors ``torch.triu``. RuntimeError for an input of fewer than 2 dims."""
    diagonal = _check_matrix(self, "triu", diagonal)
    return apply_op(OPS["triu"], (self,), (("diagonal", diagonal),))


@method(function=True)
def diag(self, diagonal=0):
    """Mirrors ``torch.diag``: 1-D -> diagonal matrix, 2-D -> its diagonal."""
    if type(diagonal) is not int:
        diagonal = operator.index(require_int("diag", "diagonal", diagonal, 1))
    if _ndim(self, "diag") == 1:
        return apply_op(OPS["diag_embed"], (self,), (("diagonal", diagonal),))
    if self.ndim != 2:
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{self.ndim}D")
    return apply_op(OPS["diag"], (self,), (("diagonal", diagonal),))


@method(function=True)
def diagonal(self, offset=0, dim1=0, dim2=1):
    """Mirrors ``torch.diagonal``: a view. RuntimeError when ``dim1`` and ``dim2`` name the same dim."""
    if type(offset) is not int:
        offset = operator.index(require_int("diagonal", "offset", offset, 1))
    d1, d2 = _wrap_dim(dim1, _ndim(self, "diagonal")), _wrap_dim(dim2, self.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return apply_op(OPS["diagonal"], (self,), (("offset", offset), ("dim1", d1), ("dim2", d2)))


@method(function=True)
def trace(self):
    """Mirrors ``torch.trace``: sum of the diagonal of a 2-D tensor (integers give int64).
    Autograd: ``TraceBackward0``. RuntimeError unless 2-D; NotImplementedError for bool."""
    if _ndim(self, "trace") != 2 and self.dtype is not _dt.bool_:   # torch checks the dtype first
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
    if self.dtype is _dt.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool': convert with .long() first")
    return apply_op(OPS["trace"], (self,))


def _tensor_sequence(tensors, api):
    """The ``tensors`` argument of cat/stack/hstack... as a list. torch's parser takes a sequence
    (a list, a tuple, anything indexable but a dict) and refuses a Tensor, a generator, an
    iterator or a set with TypeError: they have no order or length to check first."""
    if isinstance(tensors, (list, tuple)):
        return list(tensors)
    if isinstance(tensors, (Tensor, dict)) or not hasattr(type(tensors), "__getitem__") \
            or not hasattr(tensors, "__len__"):
        raise TypeError(f"{api}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}; pass a list or tuple (list(...) of a generator)")
    return list(tensors)


@function("cat", "concat", "concatenate")
@accepts_out(cast_error=TypeError)
def cat(tensors, dim=0, *, out=None):
    """Mirrors ``torch.cat(tensors, dim=0)`` with dtype promotion. RuntimeError for mismatched
    shapes or an empty list."""
    tensors = _tensor_sequence(tensors, "cat")
    if not tensors:
        raise ValueError("tracegrad.cat(): expected a non-empty list of Tensors")
    for i, t_ in enumerate(tensors):   # (not tensors.index(t_): == on tensors is elementwise)
        if not isinstance(t_, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t_).__name__}")
    for i, t_ in enumerate(tensors):   # torch's check (the op failed here with no torch message)
        if t_.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated; use stack, "
                               "or reshape it to 1-D")
    # torch skips legacy empty 1-D tensors
    ref = next((t_ for t_ in tensors if t_.shape != (0,)), None)
    if ref is None:   # only legacy empties: torch returns an empty 1-D result for any dim
        return apply_op(OPS["cat"], tuple(tensors), (("dim", 0), ("dtype", result_dtype(*tensors).np)))
    d = _wrap_dim(dim, ref.ndim)
    for i, t_ in enumerate(tensors):
        if t_.shape == (0,) and t_ is not ref:
            continue
        if t_.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {t_.ndim}")
        for k in range(ref.ndim):
            if k != d and t_.shape[k] != ref.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {ref.shape[k]} but got size {t_.shape[k]} for tensor number {i} in the list.")
    dt = result_dtype(*tensors)
    return apply_op(OPS["cat"], tuple(tensors), (("dim", d), ("dtype", dt.np)))


@function()
@accepts_out(cast_error=TypeError)
def stack(tensors, dim=0, *, out=None):
    """Mirrors ``torch.stack``: RuntimeError unless all shapes are equal."""
    tensors = _tensor_sequence(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t_ in enumerate(tensors):
        if not isinstance(t_, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t_).__name__}")
    s0 = tuple(tensors[0].shape)
    for i, t_ in enumerate(tensors):
        if tuple(t_.shape) != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(s0)} at entry 0 and {list(t_.shape)} at entry {i}")
    n = len(s0) + 1
    if type(dim) is not int:
        dim = operator.index(require_int("stack", "dim", dim, 2))
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    dt = result_dtype(*tensors)
    return apply_op(OPS["stack"], tuple(tensors), (("dim", dim % n), ("dtype", dt.np)))


def _stack_list(tensors, api):
    """The tensors of hstack/vstack/dstack as a list; RuntimeError when empty (torch's class, where
    ``cat`` raises ValueError); TypeError for one tensor instead of a sequence, as torch's parser."""
    tensors = _tensor_sequence(tensors, api)
    if not tensors:
        raise RuntimeError(f"{api} expects a non-empty TensorList")
    return tensors


@function()
def hstack(tensors):
    """Mirrors ``torch.hstack``: cat along dim 1 (dim 0 for 1-D tensors; 0-d tensors count as
    1-D, as ``atleast_1d``)."""
    tensors = [t_ if t_.ndim else t_.reshape(1) for t_ in _stack_list(tensors, "hstack")]
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


@function("vstack", "row_stack")
def vstack(tensors):
    """Mirrors ``torch.vstack``: cat along dim 0 after making 0-/1-D tensors rows."""
    return cat([t_ if t_.ndim > 1 else t_.reshape(1, -1) for t_ in _stack_list(tensors, "vstack")], 0)


@prop("T")
def _t_property(self):
    """Mirrors ``Tensor.T``: the dims reversed; torch's once-per-process UserWarning (every time
    under ``set_warn_always(True)``) for other than 2 dims."""
    if self.ndim != 2:
        warn_once("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases."
                  if self.ndim == 0 else
                  "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated "
                  "and it will throw an error in a future release. Consider `x.mT` to transpose batches of "
                  "matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a "
                  "tensor.")
    return permute(self, tuple(reversed(range(self.ndim))))


def _deprecated_0d(what, hint):
    """torch's once-per-process (TORCH_WARN_ONCE) UserWarning for ``what`` (H, mT, mH, adjoint())
    read on a 0-D tensor, one flag per ``what``."""
    warn_once(f"{what} is deprecated on 0-D tensors. {hint}", UserWarning)


@prop("H")
def _H(self):
    """Mirrors ``Tensor.H``: the conjugate transpose of a matrix (a view). RuntimeError for other
    than 2 dims (a 0-dim tensor: its conj, deprecated)."""
    if self.ndim == 0:
        _deprecated_0d("Tensor.H", "Consider using x.conj().")
        return self.conj()
    if self.ndim != 2:
        extra = " For batches of matrices, consider using tensor.mH" if self.ndim > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.{extra}")
    return transpose(self, 0, 1).conj()


def _batched_transpose(self, name, conj):
    """mT / mH / adjoint(): ``name`` as torch's messages spell it."""
    if _ndim(self, name.rstrip("()")) == 0:
        _deprecated_0d(name if name.endswith("()") else f"Tensor.{name}",
                       "Consider using x.conj()." if conj else "This function is the identity in these cases.")
        return self.conj() if conj else self
    if self.ndim < 2:
        raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor.")
    t = transpose(self, -2, -1)
    return t.conj() if conj else t


@prop("mT")
def _mT(self):
    """Mirrors ``Tensor.mT``: the last two dims swapped (a view). RuntimeError for 1 dim."""
    return _batched_transpose(self, "mT", False)


@prop("mH")
def _mH(self):
    """Mirrors ``Tensor.mH``: the conjugate transpose of the last two dims (``mT`` for real
    tensors). RuntimeError for 1 dim."""
    return _batched_transpose(self, "mH", True)


@method(function=True)
def adjoint(self):
    """Mirrors ``Tensor.adjoint()`` / ``torch.adjoint``: ``self.mH``. RuntimeError for 1 dim."""
    return _batched_transpose(self, "adjoint()", True)


def _sequence_only(fn, what):
    """The function form of a method that takes its sizes as separate arguments too: torch's
    ``torch.reshape(input, shape)`` / ``permute(input, dims)`` / ``flip(input, dims)`` take them as
    one sequence only (``torch.permute(x, 1, 0)`` is the parser's TypeError)."""
    api = fn.__name__

    def function_form(input, *args, **kwargs):
        if not isinstance(input, Tensor):   # (a closure: argcheck's guard passes these by)
            raise TypeError(f"{api}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        if len(args) == 1 and isinstance(args[0], int) or isinstance(kwargs.get(what), int):
            raise TypeError(f"{api}(): argument '{what}' (position 2) must be tuple of ints, not int; pass "
                            f"tracegrad.{api}(input, (n,))")
        if len(args) > 1:
            raise TypeError(f"{api}() takes 2 positional arguments but {1 + len(args)} were given; pass the "
                            f"{what} as one sequence: tracegrad.{api}(input, ({', '.join(map(repr, args))}))")
        return fn(input, *args, **kwargs)
    function_form.__name__ = function_form.__qualname__ = api
    function_form.__doc__ = fn.__doc__
    return function(api)(function_form)


reshape_function = _sequence_only(reshape, "shape")
permute_function = _sequence_only(permute, "dims")
flip_function = _sequence_only(flip, "dims")
