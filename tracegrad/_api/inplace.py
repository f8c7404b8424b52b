"""Tensor methods, in-place family: the ``*_`` methods, restriding in-place views, in-place random fills."""
from __future__ import annotations

import contextlib

import numpy as np

from .. import _state
from ..autograd._dispatch import VMAP_DRAW as _VMAP_DRAW, apply_inplace, check_inplace, sequential_copy_sources
from ..autograd._graph_impl import node_class
from ..autograd.grad_mode import no_grad
from .._ops import dtypes as _dt
from .._ops import random as _rnd
from .._ops.elementwise import FLOAT_UNARY, unary_kernel
from .._ops.errors import not_a_tensor, not_self
from .._ops.registry import OPS
from .._ops.warn import warn
from .._tensor import generator as _generator
from .._tensor.layout import SparseOperand
from .._tensor.meta import ShapeDtypeStruct, abstract
from .._tensor.factories import tensor
from .._tensor import tensor as _tensor_mod
from .._tensor.tensor import Tensor, NO_HOST_VALUES, _wrap_dim, check_no_internal_overlap
from .._x64 import with_x64
from ._registry import METHODS, inplace_operator, int_list_method, method
from .conversion import _grad_on, warn_complex_to_real
from .._tensor.convert import check_fits, check_float_fits
from .argcheck import strict_error
from .promotion import _CPP_NAME, ADDCDIV_INT, DEFAULT_ONE, alpha_arg, beta_first, check_alpha, check_real_scalars, check_rounding_mode, _SCALAR_NAME, _Number, alpha_first, check_lerp_dtype, check_lerp_end, check_same_dtype, _check_broadcast, _check_operand, _check_scalar_value, _float_dtype, result_dtype, value_first, check_scalar_tensor, check_number_fits, check_scalar_factor
from .shape import squeeze, t, transpose, unsqueeze
from .._ops.errors import broadcast_shapes as _broadcast_shapes


# ---- in-place ---------------------------------------------------------------------------
def check_index_dtype(index, api, message=None, *, empty_ok=False):
    """torch's index kernels take int32 or int64 index tensors only (an int16/uint8/bool/float
    index is a RuntimeError there, where XLA would read it as positions): ``message`` is the
    words after ``api(): `` (torch's differ from kernel to kernel; those given are torch's exactly).
    ``empty_ok``: the gather/scatter family, whose check torch skips for an index with no
    elements (``gather(x, 0, torch.empty(0, dtype=torch.uint8))`` is an empty result there)."""
    if empty_ok and isinstance(index, Tensor) and index.numel() == 0:
        return
    if isinstance(index, Tensor) and index.dtype not in (_dt.int32, _dt.int64):
        said = message or (f"Expected dtype int32/int64 for index but got: {_SCALAR_NAME[index.dtype.name]}; "
                           "convert the index with .long()")
        raise RuntimeError(f"{api}(): {said}")


def index_add_args(self, dim, index, source, alpha, api):
    """torch's checks on ``index_add(dim, index, source, alpha=)``: an integer index of at most
    one dim inside ``dim``, ``source`` of self's dtype (RuntimeError) and shape except along
    ``dim``. An index outside the dim raises what torch's CPU kernel raises: for a tensor of 2+
    dims, RuntimeError along its first or last dim when ``alpha`` is 1 and the index int64 (its
    scatter_add path), IndexError otherwise (and for 0-d/1-d tensors); nothing is checked when
    self or the index is empty (torch returns before looking). Returns the wrapped dim and
    ``alpha`` as self's kind of number (an integer tensor truncates it, as torch)."""
    if not isinstance(source, Tensor):   # torch's parser, before the index's checks
        raise strict_error(api.rstrip("_"), "source", "Tensor", source, 3)
    check_index_dtype(index, api)
    d = _wrap_dim(dim, self.ndim)
    if isinstance(index, Tensor) and index.ndim > 1:
        raise IndexError(f"{api}(): Index is supposed to be a vector, got {index.ndim} dims")
    if source.ndim == 0 and index.numel() != 1:   # torch's count check reads source.size(dim): IndexError
        raise IndexError(f"{api}(): Dimension specified as {dim} but tensor has no dimensions (source is 0-d; "
                         "give it self's dims)")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"{api}(): self ({self.dtype}) and source ({source.dtype}) must have the same scalar "
                           f"type; convert source with .to(self.dtype)")
    # torch counts the indices against source's rows along dim before comparing the other sizes
    # (the add would otherwise broadcast a one-row source over every index, or drop rows)
    if source.ndim and d >= source.ndim:
        raise RuntimeError(f"{api}(): Indexing dim {d} is out of bounds of the source tensor with dim {source.ndim}")
    if source.ndim and index.numel() != source.shape[d]:
        raise RuntimeError(f"{api}(): Number of indices ({index.numel()}) should be equal to source.size(dim): "
                           f"({source.shape[d]}), for dim: {d}; give source one row per index")
    # torch drops dim from both shapes only when neither is 0-d; else the whole shapes must match
    if (tuple(source.shape) != tuple(self.shape) if not (self.ndim and source.ndim) else
            source.ndim != self.ndim or any(a != b for k, (a, b) in enumerate(zip(self.shape, source.shape)) if k != d)):
        raise RuntimeError(f"{api}(): source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(self.shape)} source.shape = {list(source.shape)}")
    if self.ndim <= 1:
        check_index_range(index, self.shape[d] if self.ndim else 1, d, api, IndexError)
    elif index.numel() and self.numel():
        scatter_path = (d in (0, self.ndim - 1) and index.dtype is _dt.int64
                        and not isinstance(alpha, (Tensor, bool, np.bool_)) and alpha == 1)   # Scalar(True) != 1
        check_index_range(index, self.shape[d], d, api, RuntimeError if scatter_path else IndexError)
    check_real_scalars(api, self.dtype, alpha=alpha)
    if not (self.dtype.is_floating_point or self.dtype.is_complex) and isinstance(alpha, float):
        alpha = int(alpha)
    return d, alpha


def check_index_range(index, size, dim, api, error=RuntimeError, negative=False, message=None):
    """torch raises for an index outside ``[0, size)`` (``[-size, size)`` with ``negative``) where XLA clamps or drops it.
    One host read of the index in eager; inside tracegrad.compile checked when the program runs (NOTE [value checks
    at run time]). ``message(bad)``, when given, words the RuntimeError for the offending index ``bad``."""
    v = index._value
    if isinstance(v, NO_HOST_VALUES):
        _state.check_values(v, lambda v: (v >= size) | (v < (-size if negative else 0)))
        return
    if v.size == 0:
        return
    v = np.asarray(v.reshape(-1) if v.ndim > 64 else v)   # numpy holds 64 dims at most
    lo, hi = int(v.min()), int(v.max())
    if hi >= size or lo < (-size if negative else 0):
        if error is IndexError:
            raise IndexError(f"{api}(): index out of range in self (an index is outside [0, {size}) "
                             f"for dimension {dim} of size {size})")
        bad = hi if hi >= size else lo
        if message is not None:
            raise RuntimeError(message(bad))
        raise RuntimeError(f"{api}(): index {bad} is out of bounds for dimension {dim} with size {size}")


def check_scatter_shapes(self, index, src, dim=None):
    """torch's rank checks of a scatter (0-d counts as 1-d): index must have self's rank and a
    tensor ``src`` index's; a ``src`` of lower rank fails as torch's size lookup does (IndexError).
    With ``dim``, torch's size check too: index no larger than self outside ``dim`` and no
    larger than a tensor ``src`` anywhere (XLA would read past src's end).
    Returns the ``(index, src)`` the kernel gets: an index with no elements writes nothing, and
    torch checks neither its rank nor its size nor src's then, so both become empty of self's
    rank (an int64 index) for the kernel to index with."""
    if not isinstance(index, Tensor) or not isinstance(self, Tensor):
        return index, src   # the caller's own argument checks name a non-tensor
    if index.numel() == 0:
        empty = (0,) * (self.ndim or 1)
        if isinstance(src, Tensor):
            src = src.reshape(-1).narrow(0, 0, 0).reshape(empty)
        return index.reshape(empty).to(_dt.int64), src
    rank = index.ndim or 1
    if rank != (self.ndim or 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, Tensor):
        if 0 < src.ndim < rank:
            # torch's size check walks the dims (index against self apart from dim, then against
            # src) and stops at the first that is too large: src's missing dim is its IndexError
            # only when the walk reaches it; a walk stopped before fails on the rank (below)
            d0 = dim % rank if type(dim) is int and self.ndim and -rank <= dim < rank else None
            for i in range(rank):
                if d0 is not None and i != d0 and index.shape[i] > self.shape[i]:
                    break
                if i >= src.ndim:
                    raise IndexError(f"Dimension out of range (expected to be in range of [{-src.ndim}, "
                                     f"{src.ndim - 1}], but got {src.ndim}): src has fewer dimensions than index")
                if d0 is not None and index.shape[i] > src.shape[i]:
                    break
        if (src.ndim or 1) != rank:
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    if type(dim) is int and index.ndim and self.ndim and -rank <= dim < rank and index.numel():
        d, ish = dim % rank, index.shape
        tsrc = isinstance(src, Tensor) and src.ndim
        if any((i != d and ish[i] > self.shape[i]) or (tsrc and ish[i] > src.shape[i]) for i in range(rank)):
            raise RuntimeError(f"Expected index {list(ish)} to be no larger than self {list(self.shape)} apart from "
                               f"dimension {d}" + (f" and to be no larger size than src {list(src.shape)}" if tsrc else ""))
    return index, src


def check_scatter_reduce(reduce, api):
    """``scatter``'s legacy ``reduce=`` takes only 'add' and 'multiply' (``scatter_reduce`` has the others)."""
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError(f"{api}(): reduce argument must be either add or multiply, got {reduce!r} (use "
                           "scatter_reduce for 'sum', 'prod', 'mean', 'amax' or 'amin')")


def _check_inplace_broadcast(self, other):
    """An in-place op cannot grow self: torch's 'output with shape ... doesn't match the broadcast shape'."""
    if isinstance(other, Tensor) and other._value.shape != self._value.shape:
        _check_broadcast(self, other)   # torch's message when they do not broadcast at all
        shape = _broadcast_shapes(self._value.shape, other._value.shape)
        if tuple(shape) != tuple(self._value.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(shape)}")


def _inplace_binary(opname):
    op = OPS[opname]

    def f(self, other, *rest, alpha=DEFAULT_ONE):
        if opname in ("add", "sub"):
            other, alpha = alpha_first(opname + "_", other, rest, alpha)
            if alpha is None:
                raise TypeError(f"{opname}_(): argument 'alpha' must be Number, not NoneType; leave it out for alpha=1")
            if isinstance(alpha, Tensor):
                check_scalar_tensor(opname + "_", "alpha", alpha)
        elif rest:
            raise TypeError(f"{opname}_() takes 1 positional argument but {1 + len(rest)} were given")
        _check_operand(other, opname + "_")
        if opname == "sub" and (self.dtype is _dt.bool_ or isinstance(other, (bool, np.bool_)) or
                                (isinstance(other, Tensor) and other.dtype is _dt.bool_)):
            if self.dtype is _dt.bool_ and (isinstance(other, (bool, np.bool_)) or
                                            (isinstance(other, Tensor) and other.dtype is _dt.bool_)):
                # torch counts a bool number as a bool tensor here (its out-of-place words)
                raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported (sub_). "
                                   "Use the `^` or `logical_xor_()` operator instead.")
            raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported (sub_). If you "
                               "are trying to invert a mask, use the `~` or `logical_not_()` operator instead.")
        try:
            if opname in ("add", "sub"):
                check_alpha(opname + "_", self, other, alpha)
            _check_inplace_broadcast(self, other)
            dt = self._value.dtype if (isinstance(other, Tensor) and other._value.dtype == self._value.dtype) else result_dtype(self, other).np
        except SparseOperand as e:   # a sparse COO operand (NOTE in _tensor/layout.py)
            return e.tensor._sparse_operand(e, opname + "_", self, other, alpha=1 if alpha is None else alpha)
        if opname in ("igamma", "igammac"):   # the cast is checked before the kernel's dtypes (complex)
            check_tensor_other(opname + "_", other)
            check_inplace_result(opname + "_", self, other)
        if opname in ("igamma", "igammac") and self.dtype._cat < 2 and isinstance(other, Tensor) \
                and other.dtype._cat < 2:   # torch computes in the integer dtype, which has no kernel
            kind = _SCALAR_NAME[result_dtype(self, other).name]
            raise NotImplementedError(f"\"{opname}_cpu\" not implemented for '{kind}'; {opname}_ needs a floating "
                                      f"self: use {opname}(x.float(), ...) instead")
        args = (other, alpha_arg(alpha)) if opname in ("add", "sub") else (other,)
        return apply_inplace(op, self, args, (("dtype", dt),))
    f.__name__ = opname + "_"
    f.__doc__ = f"Mirrors ``torch.Tensor.{opname}_``: in place, bumps ``_version``; RuntimeError when " \
                "the result dtype cannot be cast to self's, or on a leaf that requires grad."
    return f


add_, sub_, mul_ = (method(n + "_")(_inplace_binary(n)) for n in ("add", "sub", "mul"))


# a rounding_mode given (even None) selects torch's other overload of div_, named DivBackward2
_NO_MODE = object()


# (here, not in elementwise.py, which imports them: div_ needs them too)
def _concrete(v):
    """``v``'s value as numpy, or None inside a trace (compiled code cannot raise on values)."""
    if isinstance(v, Tensor):
        v = v._value
        return None if isinstance(v, NO_HOST_VALUES) else np.asarray(v)
    return np.asarray(v)


def _check_int_divisor(other, dividend=None):
    """torch raises for an integer division or remainder by zero (XLA gives garbage); one
    host read of the divisor, only for integer dtypes. Inside a compiled trace the divisor has
    no value yet: the program checks it when it runs (NOTE [value checks at run time]), and a
    zero makes that call run eagerly, raising here. An empty ``dividend`` divides nothing: torch
    raises only for a zero that meets an element, so no check."""
    if isinstance(dividend, Tensor) and dividend.numel() == 0:
        return
    v = _concrete(other)
    if v is None:
        _state.check_values(other._value, lambda d: d == 0)
    elif not np.all(v):
        raise RuntimeError("ZeroDivisionError")


@method()
def div_(self, other, *, rounding_mode=_NO_MODE):
    op = OPS["div"] if rounding_mode is _NO_MODE else OPS["div_mode"]   # (DivBackward0 / DivBackward2)
    if rounding_mode is _NO_MODE:
        rounding_mode = None
    if rounding_mode not in (None, "trunc", "floor"):
        check_rounding_mode(rounding_mode)
    _check_operand(other, "div_", pos=1)   # a list is the parser's TypeError, not data
    try:
        dt = result_dtype(self, other)
    except SparseOperand as e:   # a sparse divisor: torch's RuntimeError (NOTE in _tensor/layout.py)
        return e.tensor._sparse_operand(e, "div_", self, other)
    if rounding_mode is None:
        dt = _float_dtype(dt)
    if rounding_mode is not None and dt._cat == 1:
        # as out of place: torch raises for an integer division by zero (the kernel gave garbage)
        _check_int_divisor(other, self)
    st = (("dtype", dt.np),) if op is OPS["div"] else (("dtype", dt.np), ("rounding_mode", rounding_mode))
    return apply_inplace(op, self, (other,), st)


def check_bound_kinds(api, min, max):
    """torch's clamp overloads take two number bounds or two tensor bounds (None for either):
    TypeError, as its parser, for one of each -- but a 0-d tensor beside a number is read as a
    number (its Scalar overload)."""
    if min is not None and max is not None and isinstance(min, Tensor) is not isinstance(max, Tensor) \
            and (min if isinstance(min, Tensor) else max).ndim:
        raise TypeError(f"{api}() received an invalid combination of arguments - got (min={type(min).__name__}, "
                        f"max={type(max).__name__}); pass both bounds as numbers or both as Tensors")


def check_bool_clamp(api, min, max):
    """torch's kernels for a bool clamp (the caller has found the result dtype bool): one tensor
    bound (the other None) is a max/min, which has a bool kernel; two tensor bounds (clamp_cpu)
    or number bounds (clamp_scalar_cpu, clamp_min_scalar_cpu, clamp_max_scalar_cpu) have none:
    NotImplementedError."""
    tensors = [isinstance(v, Tensor) for v in (min, max) if v is not None]
    if tensors == [True]:
        return
    kernel = "clamp_cpu" if all(tensors) else \
        "clamp_scalar_cpu" if len(tensors) == 2 else "clamp_min_scalar_cpu" if max is None else "clamp_max_scalar_cpu"
    raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'; {api} of a bool tensor takes one "
                              "bool tensor bound (or convert the input with .int())")


def _check_bound_fits(bound, dt, api):
    """A number bound must fit the result dtype (clamp, clamp_min, clamp_max and clamp_ alike:
    torch converts it to the input's scalar type first and refuses ``clamp_max(int8_tensor, 300)``).
    A float within float16's range or an int within int8's fits every dtype it can meet here: two
    comparisons, and the full check only for the rest."""
    kind = type(bound)
    if bound is None or (kind is float and -65504.0 <= bound <= 65504.0) or (kind is int and -128 <= bound <= 127):
        return
    if dt._cat == 1 and isinstance(bound, int):
        check_fits(np.asarray(bound), dt, api)
    check_float_fits(bound, dt, api)


@method("clamp_", "clip_")
def clamp_(self, min=None, max=None):
    if min is None and max is None:
        if not isinstance(self, Tensor):   # NOTE [unbound self]
            raise not_self("clamp_", self)
        raise RuntimeError("tracegrad.clamp: At least one of 'min' or 'max' must not be None")
    _check_operand(min, "clamp_", "min", 1)
    _check_operand(max, "clamp_", "max", 2)
    check_bound_kinds("clamp_", min, max)
    dt = result_dtype(self, *(v for v in (min, max) if v is not None))
    if self.dtype._cat == 3:
        raise NotImplementedError("clamp is not supported for complex types; clamp .real and .imag apart")
    if dt is _dt.bool_:
        check_bool_clamp("clamp_", min, max)
    if not _dt.can_cast(dt, self.dtype):
        raise RuntimeError(f"clamp_: result type {_SCALAR_NAME[dt.name]} can't be cast to the desired output type "
                           f"{_SCALAR_NAME[self.dtype.name]}; use clamp (out of place) or bounds of self's dtype")
    for bound in (min, max):   # clamp_(min=1e39) of float32 wrote inf (torch: RuntimeError)
        _check_bound_fits(bound, self.dtype, "clamp_")
    op = OPS["clamp_tensor"] if isinstance(min, Tensor) or isinstance(max, Tensor) else OPS["clamp"]
    return apply_inplace(op, self, (min, max), (("dtype", self._value.dtype),))


@method()
def copy_(self, src, non_blocking=False):
    """Mirrors ``torch.Tensor.copy_``: writes ``src`` (a Tensor, broadcast and cast, or a number
    filled in) into self. Autograd: ``CopyBackwards`` (``CopySlices`` on the base when self is a
    view). TypeError for anything else (a list, tuple or ndarray: wrap it in ``tracegrad.tensor``),
    as torch; and for a ``non_blocking`` that is not a bool."""
    if non_blocking is not False and type(non_blocking) is not bool:
        raise TypeError(f"copy_(): argument 'non_blocking' must be bool, not {type(non_blocking).__name__}; "
                        "pass True or False")
    if not isinstance(src, Tensor):
        if not isinstance(src, _Number):
            raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not {type(src).__name__}; "
                            "convert it with tracegrad.tensor(...) first")
        # a complex number into a real tensor is cast as a complex tensor is (torch: 1j -> 0.0,
        # True for bool), where ``tensor(1j, dtype=float32)`` refuses it
        src = tensor(src).to(self.dtype) if isinstance(src, complex) and not self.dtype.is_complex \
            else tensor(src, dtype=self.dtype)
    if tuple(src.shape) != tuple(self.shape):
        _check_broadcast(self, src)
        full = _broadcast_shapes(tuple(src.shape), tuple(self.shape))
        if full != tuple(self.shape):   # torch's text for an output the source would grow (was expand's)
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                               f"{list(full)} (copy_ writes into self; src must broadcast to self's shape)")
    if src.dtype.is_complex and not self.dtype.is_complex and self.dtype.name != "bool":
        warn_complex_to_real()
    if src._st is not self._st or src is self:
        return apply_inplace(OPS["copy"], self, (src,))
    return _overlapping_copy(self, src)


def _overlapping_copy(self, src):
    """``copy_`` between views of one storage. Autograd sees a plain copy (torch's CopySlices:
    the source's gradient is the destination's), but where the views overlap torch's element by
    element copy lets later reads see earlier writes, and those are the values written."""
    roots = sequential_copy_sources(self, src)
    arr = self._st.array                   # the storage before the write (arrays are immutable)
    if roots is not None and type(arr) is ShapeDtypeStruct:
        roots = None     # a meta tensor has no values
    if roots is not None:
        old = Tensor._make(arr).reshape(-1)
        if arr.dtype != self._value.dtype:
            if not (old.is_complex() and not self.is_complex()):
                roots = None     # another reinterpreting view: copied as one write
            else:                # .real/.imag of a complex storage number its (re, im) pairs
                from .complex_api import view_as_real   # only .real/.imag copies need it: off the import path
                old = view_as_real(old).reshape(-1)
    apply_inplace(OPS["copy"], self, (src,))
    if roots is not None:
        vals = old.index_select(0, tensor(roots.reshape(-1))).reshape(tuple(self.shape))
        self._write(vals._value)
        self._vc[0] -= 1     # one copy_, one version bump (as torch)
    return self


def _check_expand(shape, target):
    """torch's message when ``shape`` cannot be expanded to ``target`` (copy_, setitem)."""
    lead = len(target) - len(shape)
    if lead < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({len(target)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({len(shape)})")
    for i, s_ in enumerate(shape):
        if s_ != target[lead + i] and s_ != 1:
            raise RuntimeError(f"The expanded size of the tensor ({target[lead + i]}) must match the existing size "
                               f"({s_}) at non-singleton dimension {lead + i}.  Target sizes: {list(target)}.  "
                               f"Tensor sizes: {list(shape)}")


@method()
def fill_(self, value):
    """Mirrors ``torch.Tensor.fill_(value)``: a number (``FillBackward2``) or a 0-d tensor
    (``FillBackward3``, the gradient flows to it). RuntimeError for a tensor with dims or a
    complex number into a real tensor; TypeError for a value that is neither."""
    _check_scalar_value(value, "fill_", "Tensor value")
    if isinstance(value, (complex, np.complexfloating)) and not self.dtype.is_complex:
        # as c10's checked conversion: any number into bool (v != 0), a zero imaginary part into the rest
        if self.dtype is _dt.bool_:
            value = bool(value)
        elif value.imag == 0:
            value = value.real
        else:
            raise RuntimeError(f"fill_: value cannot be converted to type {self.dtype} without overflow "
                               f"(a complex value into a real tensor)")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
        return apply_inplace(OPS["fill_tensor"], self, (value,))
    if self.dtype._cat == 1 and not isinstance(value, (bool, np.bool_)):
        check_fits(np.asarray(value), self.dtype, "fill_")   # torch refuses a value the dtype cannot hold
    check_float_fits(value, self.dtype, "fill_", through_float=self.numel() == 1)
    return _fill_overlapping(OPS["fill"], self, (value,))


@method()
def zero_(self):
    """Mirrors ``torch.Tensor.zero_``. Like ``fill_`` with a number, it may write a view whose
    elements alias each other (an ``expand``ed or zero-stride tensor), as torch."""
    return _fill_overlapping(OPS["zero"], self, ())


def _fill_overlapping(op, self, args):
    # NOTE: torch's fill_(number)/zero_ do not check internal overlap (fill_(tensor) does)
    with overlap_allowed():
        return apply_inplace(op, self, args)


@contextlib.contextmanager
def overlap_allowed():
    """Writes inside skip the internal-overlap check: for torch's in-place ops that give every
    alias of an element the same value (fill_ with a number, zero_, threshold_)."""
    _tensor_mod.OVERLAP_OK[0] = True
    try:
        yield
    finally:
        _tensor_mod.OVERLAP_OK[0] = False


@method()
def masked_fill_(self, mask, value):
    """Mirrors ``torch.Tensor.masked_fill_``. TypeError for a mask that is not a tensor (torch's
    argument parser); RuntimeError for a non-bool mask or a complex value on a real tensor (its
    imaginary part would be dropped)."""
    if not isinstance(mask, Tensor):
        raise not_a_tensor("masked_fill_", mask, "mask")
    if mask.dtype is not _dt.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {_CPP_NAME[mask.dtype.name]}; "
                           "pass mask.bool() or a comparison's result")
    _check_scalar_value(value, "masked_fill_", "Tensor mask, Tensor value", self.dtype)
    check_real_scalars("masked_fill_", self.dtype, value=value)
    if isinstance(value, (complex, np.complexfloating)) and not self.dtype.is_complex:
        # what c10's checked conversion keeps (v != 0 for bool, else the real part), so that the
        # kernel gets no complex number to cast (JAX's ComplexWarning)
        value = bool(value) if self.dtype is _dt.bool_ else value.real
    if isinstance(value, Tensor) and value.ndim != 0:   # as the out-of-place form
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.ndim} "
                           "dimension(s).")
    op = OPS["masked_fill_tensor"] if isinstance(value, Tensor) else OPS["masked_fill"]
    if (is_expanded(self) and mask.ndim <= self.ndim and broadcastable(mask.shape, self.shape)):
        return _masked_fill_expanded(op, self, mask, value)
    return apply_inplace(op, self, (mask, value))


def broadcastable(src, dst) -> bool:
    """``src`` expands to ``dst`` (right-aligned; each dim equal or 1)."""
    return all(a in (1, b) for a, b in zip(reversed(tuple(src)), reversed(tuple(dst))))


def write_one_value_expanded(self, where, value, name):
    """``self`` (an expanded tensor: has_internal_overlap) with ``value`` (a number or 0-d
    tensor) written at the True elements of the bool tensor ``where``, as torch's index_fill_ and
    index_put_ do there: its deprecation UserWarning, then every alias written (see
    ``_masked_fill_expanded``). Returns self."""
    warn(f"Use of {name} on expanded tensors is deprecated. Please clone() the tensor before performing this "
         "operation. This also applies to advanced indexing e.g. tensor[indices] = tensor")
    op = OPS["masked_fill_tensor"] if isinstance(value, Tensor) else OPS["masked_fill"]
    return _masked_fill_expanded(op, self, where, value, warned=True)


def is_expanded(t) -> bool:
    """t's elements alias each other (a zero-stride dim of size > 1 from expand/as_strided) and
    the one-value write torch allows there with a warning can be done: not when t's history is
    recorded (torch then raises "unsupported operation" in backward, from AsStridedBackward0; we
    keep raising at the write, which also says to clone)."""
    return (_tensor_mod.has_internal_overlap(t) and any(o.view == "overlap" for o, _, _ in t._chain)
            and not (t.requires_grad and _state.grad_enabled()))


def _masked_fill_expanded(op, self, mask, value, warned=False):
    """torch lets masked_fill_ write an expanded tensor (its elements alias each other) with a
    deprecation UserWarning, where other in-place ops raise "unsupported operation": every element
    gets the one value, so the result is defined. Writing one element writes all its aliases, so
    the mask is widened to "any alias masked" along the zero-stride dims before the write (a
    plain masked write would leave the aliases of a masked element disagreeing, and the base
    unchanged)."""
    if not warned:
        warn("Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing "
             "this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar")
    shape = tuple(self.shape)
    wide = mask.expand(shape) if tuple(mask.shape) != shape else mask
    dims = tuple(d for d, (n, st) in enumerate(zip(shape, _tensor_mod.strides_of(self))) if n > 1 and st == 0)
    wide = wide.any(dim=dims, keepdim=True).expand(shape) if dims else wide
    with overlap_allowed():
        return apply_inplace(op, self, (wide, value))


# in-place unaries whose torch kernel has no bool version (out of place, ``_unary`` refuses them too)
_NO_BOOL_KERNEL = ("floor", "ceil", "round", "trunc", "frac", "abs")
# ... and those with no complex version: torch's NotImplementedError (was a result or a generic error)
_NO_COMPLEX_KERNEL = {
    **{n: f"{n} is not supported for complex inputs; apply {n}_ to .real and .imag apart"
       for n in ("floor", "ceil", "trunc")},
    "frac": "\"frac_cpu\" not implemented for 'ComplexFloat'; apply frac_ to .real and .imag apart",
    "sign": "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn instead.",
    "relu": "relu_: clamp is not supported for complex types; take .real or .abs() first",
}


# torch's logical_and_/or_/xor_/not_ have no autograd kernel, so none of autograd's in-place
# checks: on a leaf that requires grad (or a view of one) they write the values and record nothing
_UNTRACKED_INPLACE = frozenset(("logical_and", "logical_or", "logical_xor", "logical_not"))


def _untracked_on_leaf(f):
    """``f`` (an in-place method) run under no_grad when self is a leaf that requires grad or a
    view of one (as torch, which records nothing for these ops); unchanged otherwise."""
    def g(self, *args, **kwargs):
        base = getattr(self, "_base", None)
        leaf = self if base is None else base
        if isinstance(self, Tensor) and leaf._rg and leaf._gf is None and _state.grad_enabled():
            with no_grad():
                return f(self, *args, **kwargs)
        return f(self, *args, **kwargs)
    return g


def _inplace_unary(name):
    op = OPS[name]

    def f(self):
        return apply_inplace(op, self, ())
    if name == "bitwise_not":   # integer and bool kernels only (out of place refuses the others too)
        def f(self):   # noqa: F811
            try:
                dt = self.dtype
            except AttributeError:   # NOTE [unbound self]
                raise not_a_tensor(name + "_", self) from None
            if dt._cat > 1:
                # torch's autograd check (a leaf that requires grad) and its TensorIterator's
                # overlap check (an expanded self) come before the kernel's dtype
                check_inplace(self)
                check_no_internal_overlap(self)
                raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for '{_SCALAR_NAME[dt.name]}'; "
                                          "bitwise_not_ takes integer or bool tensors")
            return apply_inplace(op, self, ())
    elif name in FLOAT_UNARY:
        def f(self):   # noqa: F811
            try:
                dt = self.dtype
            except AttributeError:   # NOTE [unbound self]
                raise not_a_tensor(name + "_", self) from None
            if dt._cat < 2:   # torch's cast check; some ops (sigmoid, rsqrt) failed on an integer input unchecked
                raise RuntimeError(f"result type {_SCALAR_NAME[_dt.get_default_dtype().name]} can't be cast to the "
                                   f"desired output type {_SCALAR_NAME[dt.name]} ({name}_ writes into self; use "
                                   f"{name}() for a float result)")
            return apply_inplace(op, self, ())
    elif name in _NO_BOOL_KERNEL or name in _NO_COMPLEX_KERNEL or name == "neg":   # the others keep the one-line body (the hot path)
        def f(self):   # noqa: F811
            try:
                dt = self.dtype
            except AttributeError:   # NOTE [unbound self]
                raise not_a_tensor(name + "_", self) from None
            if name == "neg":   # as out of place (the op failed on a bool input with no torch message)
                if dt is _dt.bool_:
                    raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                                       "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
                return apply_inplace(op, self, ())
            if dt._cat == 3 and name in _NO_COMPLEX_KERNEL:   # as out of place: no complex kernel in torch
                raise NotImplementedError(_NO_COMPLEX_KERNEL[name])
            if (dt is _dt.bool_ and name != "relu") or (name == "frac" and dt._cat < 2):
                if name == "sign":   # a bool's sign is itself (as torch)
                    return self
                raise NotImplementedError(f"\"{unary_kernel(name)}\" not implemented for '{_SCALAR_NAME[dt.name]}'; convert "
                                          f"the tensor with .float() first")
            if name == "abs" and dt._cat == 3:   # |z| is real: it cannot be written back into z (torch refuses)
                raise RuntimeError("In-place abs is not supported for complex tensors; use tracegrad.abs(z) "
                                   "(a real tensor) instead")
            return apply_inplace(op, self, ())
    if name in _UNTRACKED_INPLACE:
        f = _untracked_on_leaf(f)
    f.__name__ = name + "_"
    f.__doc__ = f"Mirrors ``torch.Tensor.{name}_`` (in place)."
    return f


@method()
def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    """Mirrors ``torch.Tensor.scatter_(dim, index, src|value)``. TypeError without src/value, or with both."""
    if src is not None and value is not None:   # no overload takes both (one would be dropped silently)
        raise TypeError("scatter_() received an invalid combination of arguments: got both src and value=; pass "
                        "src (a Tensor) or value (a number), not both")
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter_() received an invalid combination of arguments: give src (a Tensor) or value (a number)")
    if isinstance(index, Tensor):
        _wrap_dim(dim, self.ndim)   # torch checks the dim's range before the reduce, index's dtype and rank
    check_scatter_reduce(reduce, "scatter_")
    check_index_dtype(index, "scatter", "Expected dtype int32/int64 for index", empty_ok=True)
    if isinstance(src, Tensor) and src.dtype is not self.dtype:
        raise RuntimeError(f"scatter_(): Expected self.dtype to be equal to src.dtype; got {self.dtype} and "
                           f"{src.dtype}, convert src with .to(self.dtype)")
    index, src = check_scatter_shapes(self, index, src, dim)
    d = _wrap_dim(dim, self.ndim)
    check_index_range(index, self.shape[d] if self.ndim else 1, d, "scatter_")
    check_number_fits(src, self.dtype, "scatter_")   # NaN/inf into an integer tensor, as torch
    check_float_fits(src, self.dtype, "scatter_")
    check_real_scalars("scatter_", self.dtype, value=src)
    op = OPS["scatter"] if isinstance(src, Tensor) else OPS["scatter_value"]
    return apply_inplace(op, self, (index, src), (("dim", d), ("reduce", reduce)))


@method()
def scatter_add_(self, dim, index, src):
    if not isinstance(src, Tensor):   # no Scalar overload in torch (scatter_ has one)
        raise strict_error("scatter_add_", "src", "Tensor", src, 3)
    if isinstance(index, Tensor):
        _wrap_dim(dim, self.ndim)   # torch checks the dim's range before the index's dtype and rank
    check_index_dtype(index, "scatter", "Expected dtype int32/int64 for index", empty_ok=True)
    if src.dtype is not self.dtype:
        raise RuntimeError(f"scatter_add_(): Expected self.dtype to be equal to src.dtype; got {self.dtype} and "
                           f"{src.dtype}, convert src with .to(self.dtype)")
    index, src = check_scatter_shapes(self, index, src, dim)
    d = _wrap_dim(dim, self.ndim)
    check_index_range(index, self.shape[d] if self.ndim else 1, d, "scatter_add_")
    return apply_inplace(OPS["scatter_add"], self, (index, src), (("dim", _wrap_dim(dim, self.ndim)),))


@method()
def index_add_(self, dim, index, source, *, alpha=1):
    d, alpha = index_add_args(self, dim, index, source, alpha, "index_add_")
    if index.ndim == 0:   # torch takes a 0-d index as one index
        index = index.reshape(1)
    return apply_inplace(OPS["index_add"], self, (index, source, alpha), (("dim", d),))


def _check_addc_cast(self, tensor1, tensor2):
    """addcmul_/addcdiv_ compute in the promoted dtype, which must cast back to self's (an int
    tensor cannot take a float product): torch's RuntimeError."""
    if isinstance(tensor1, Tensor) and isinstance(tensor2, Tensor) and tensor1.dtype is self.dtype \
            and tensor2.dtype is self.dtype:
        return
    dt = result_dtype(self, tensor1, tensor2)
    if not _dt.can_cast(dt, self.dtype):
        raise RuntimeError(f"result type {_SCALAR_NAME[dt.name]} can't be cast to the desired output type "
                           f"{_SCALAR_NAME[self.dtype.name]}")


@method()
def addcmul_(self, tensor1, tensor2, *rest, value=DEFAULT_ONE):
    """Mirrors ``torch.Tensor.addcmul_`` (and the deprecated ``addcmul_(value, tensor1, tensor2)``).
    NotImplementedError for a bool self (torch has no bool kernel)."""
    tensor1, tensor2, value = value_first("addcmul_", tensor1, tensor2, rest, value)
    _check_addc_cast(self, tensor1, tensor2)
    if self.dtype is _dt.bool_:   # the cast check passed: all three are bool, which has no kernel
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'; addcmul_ has no bool kernel: "
                                  "compute in .int() or .float() out of place")
    check_real_scalars("addcmul_", self.dtype, value=value)
    check_scalar_factor(value, self.dtype, "addcmul_")
    return apply_inplace(OPS["addcmul"], self, (tensor1, tensor2, value), (("dtype", self._value.dtype),))


@method()
def addcdiv_(self, tensor1, tensor2, *rest, value=DEFAULT_ONE):
    """Mirrors ``torch.Tensor.addcdiv_`` (and the deprecated ``addcdiv_(value, tensor1, tensor2)``);
    RuntimeError for two integral tensors, as ``addcdiv``."""
    tensor1, tensor2, value = value_first("addcdiv_", tensor1, tensor2, rest, value)
    if all(isinstance(v, Tensor) and v.dtype._cat <= 1 for v in (tensor1, tensor2)):
        raise RuntimeError(ADDCDIV_INT)
    _check_addc_cast(self, tensor1, tensor2)
    check_real_scalars("addcdiv_", self.dtype, value=value)
    return apply_inplace(OPS["addcdiv"], self, (tensor1, tensor2, value), (("dtype", self._value.dtype),))


@method()
def lerp_(self, end, weight):
    check_lerp_end("lerp_", end, weight)
    # a weight with dims must have self's dtype too, as lerp's
    check_same_dtype("lerp_", self, end, weight if isinstance(weight, Tensor) and weight.ndim else None)
    check_lerp_dtype(self)
    check_real_scalars("lerp_", self.dtype, weight=weight)
    if isinstance(weight, Tensor) and weight.is_complex() and not self.is_complex():
        raise RuntimeError(f"lerp_: result type {_SCALAR_NAME[weight.dtype.name]} can't be cast to the desired "
                           f"output type {_SCALAR_NAME[self.dtype.name]}; pass a real weight")
    op = OPS["lerp_tensor"] if isinstance(weight, Tensor) else OPS["lerp"]
    return apply_inplace(op, self, (end, weight), (("dtype", self._value.dtype),))


@method()
def t_(self):
    """Mirrors ``torch.Tensor.t_``: transposes self in place (metadata change; grad_fn
    ``TBackward1``)."""
    if not isinstance(self, Tensor):   # NOTE [unbound self]
        raise not_self("t_", self)
    return _restride_(self, t, (), "TBackward1")


@method()
def transpose_(self, dim0, dim1):
    """Mirrors ``torch.Tensor.transpose_`` (grad_fn ``TransposeBackward1``)."""
    return _restride_(self, transpose, (dim0, dim1), "TransposeBackward1")


@method()
def swapaxes_(self, axis0, axis1):
    """Mirrors ``Tensor.swapaxes_(axis0, axis1)``: ``transpose_`` under numpy's argument names."""
    return transpose_(self, axis0, axis1)


@int_list_method(none=False)
def squeeze_(self, dim=None):
    """Mirrors ``torch.Tensor.squeeze_`` (grad_fn ``SqueezeBackward3/4/5`` for no dim, one
    dim, several dims; those also as separate arguments, ``x.squeeze_(0, 2)``)."""
    name = "SqueezeBackward3" if dim is None else "SqueezeBackward5" if isinstance(dim, (tuple, list)) \
        else "SqueezeBackward4"
    return _restride_(self, squeeze, (dim,), name)


@method()
def unsqueeze_(self, dim):
    """Mirrors ``torch.Tensor.unsqueeze_`` (grad_fn ``UnsqueezeBackward1``)."""
    return _restride_(self, unsqueeze, (dim,), "UnsqueezeBackward1")


def _restride_(self, view, args=(), grad_fn=None):
    """``self`` takes the metadata of ``view(self, *args)`` (``view``: a view op, or a tensor
    already made from ``self.detach()``): the same storage, a new view chain, the version
    bumped. A non-leaf that requires grad (with grad mode on) gets the view op's node as its
    grad_fn, under torch's in-place name ``grad_fn``; its ``retain_grad()`` stays with the old
    history, as torch's. A leaf that requires grad is torch's leaf error; ``as_strided_``,
    ``set_`` and ``resize_`` pass a tensor and are refused on any tensor that requires grad."""
    check_inplace(self)     # torch's inference-tensor / inference-view errors first
    if _state.CAPTURE[0] is not None:   # in a compiled trace: a tensor from outside is a graph break
        _state.CAPTURE[0].see_layout_change(self, None if callable(view) else view)
    node = None
    if self.requires_grad and _grad_on():
        if not callable(view) or self.grad_fn is None:
            if callable(view):
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            raise RuntimeError("tracegrad: shape-changing in-place ops (as_strided_, set_, resize_) are not "
                               "supported on tensors that require grad; use the out-of-place form")
        tracked = view(self, *args)
        node, out_nr = tracked._gf, tracked._out_nr
        node.__class__ = node_class(grad_fn, type(node).__mro__[1])
    new = view(self.detach(), *args) if callable(view) else view
    self._st, self._chain, self._vcache = new._st, new._chain, None
    self._vgen = -1
    self._vc[0] += 1
    if node is not None:
        self._gf, self._out_nr, self._gf_ver = node, out_nr, self._vc[0]
    return self


def _number_arguments(api, args, kwargs, ints):
    """``(args, kwargs)`` with a one-element tensor read as its number, or torch's parser
    TypeError for a distribution parameter that is not a number (a string, a list, None, a
    tensor of several elements; for random_'s bounds, a float too); bernoulli_'s ``p`` may be a
    tensor of probabilities. Only reached when an argument is not a plain int (or float)."""
    def one(pos, v):
        if type(v) is int or (type(v) is float and not ints) or v is None and api == "random_" and pos == 2:
            return v
        if isinstance(v, Tensor):
            if api == "bernoulli_":
                return v
            if v.numel() == 1 and (not ints or v.dtype._cat <= 1):
                return v.item()
        elif isinstance(v, (bool, np.integer)) or (not ints and isinstance(v, (float, np.floating))):
            return v
        want = "int" if ints else "float"
        raise TypeError(f"{api}(): argument (position {pos}) must be {want}, not {type(v).__name__}; "
                        f"pass a Python number")
    args = tuple(one(pos, v) for pos, v in enumerate(args, 1))
    kwargs = {k: one(len(args) + i, v) for i, (k, v) in enumerate(kwargs.items(), 1)}
    return args, kwargs


# the keywords of torch's in-place draws (any other is its parser's TypeError)
_DRAW_KEYWORDS = {"normal_": ("mean", "std"), "uniform_": ("from", "to"), "bernoulli_": ("p",),
                  "random_": ("from", "to"), "exponential_": ("lambd",), "geometric_": ("p",),
                  "log_normal_": ("mean", "std"), "cauchy_": ("median", "sigma")}


def _random_inplace(fn):
    fn = with_x64(fn)   # draws and casts to self's dtype make 64-bit arrays
    api, ints = fn.__name__[1:] + "_", fn.__name__ == "_random"
    keywords = _DRAW_KEYWORDS[api]

    def f(self, *args, generator=None, **kwargs):
        for k in kwargs:
            if k not in keywords:
                raise TypeError(f"{api}() got an unexpected keyword argument '{k}' (Tensor.{api} takes "
                                f"{', '.join(keywords)} and generator)")
        for v in args + tuple(kwargs.values()):   # one type check per argument on the common path
            if type(v) is not int and (ints or type(v) is not float):
                args, kwargs = _number_arguments(api, args, kwargs, ints)
                break
        try:
            with_grad = self.requires_grad and _grad_on()
        except AttributeError:   # NOTE [unbound self]
            raise not_self(api, self) from None
        if with_grad and self._gf is None:
            check_inplace(self)
        shape, dtype = tuple(self.shape), self._value.dtype
        if self.is_meta:   # no data to draw (NOTE [meta tensors]): one element runs the argument checks
            one = fn(_generator.peek_key(generator), (), dtype, *args, **kwargs)
            new = abstract(shape, one.dtype)
        else:
            new = fn(_generator.key_for(generator, api + "()"), shape, dtype, *args, **kwargs)
            if _state.VMAP_SAME and _state.FUNC_READS[0] is not None and \
                    _rnd.drawn_per_example_into_unbatched(self._value, new):
                _state.FUNC_READS[0].random_writes.add(id(self._st))
        if _state.VMAP_SAME:
            _VMAP_DRAW[0] = True
            try:
                return copy_(self, Tensor._make(new))
            finally:
                _VMAP_DRAW[0] = False
        return copy_(self, Tensor._make(new))
    f.__name__ = fn.__name__ + "_"
    return f


def _normal(k, shape, dtype, mean=0.0, std=1.0):
    if not std >= 0:   # torch's check is ``std >= 0.0``: a NaN std is refused as well
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _rnd.normal(k, shape, dtype, mean, std)


def _uniform(k, shape, dtype, *args, **kw):
    # torch's parameters are named ``from`` and ``to`` (a Python keyword: given as **{"from": ...})
    if len(args) > 2:
        raise TypeError(f"uniform_() takes from 0 to 2 positional arguments but {len(args)} were given")
    for name in ("from", "to")[:len(args)]:
        if name in kw:
            raise TypeError(f"uniform_() got multiple values for argument '{name}'")
    a, b = (tuple(args) + (kw.get("from", 0.0), kw.get("to", 1.0))[len(args):])
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    return _rnd.uniform(k, shape, dtype, a, b)


def _bernoulli(k, shape, dtype, p=0.5):
    if np.dtype(dtype).kind == "c":   # torch's kernels fill real tensors only
        kernel = "bernoulli_tensor_cpu_self_" if hasattr(p, "shape") else "bernoulli_scalar_cpu_"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_SCALAR_NAME[np.dtype(dtype).name]}'; "
                                  "bernoulli_ fills real tensors only")
    if hasattr(p, "shape"):   # torch's kernel reads tensor probabilities as floating values only
        pname = getattr(p.dtype, "name", None) or np.dtype(p.dtype).name
        if not (pname.startswith("float") or pname == "bfloat16"):
            raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for '{_SCALAR_NAME[pname]}'; "
                                      "pass the probabilities as a floating tensor (.float())")
    ps = tuple(getattr(p, "shape", ()))
    if ps != tuple(shape) and ps:   # p expands to self's shape (as torch), never the other way
        lead = len(shape) - len(ps)
        for d, n in enumerate(ps):
            if lead < 0 or (n != 1 and n != shape[lead + d]):
                raise RuntimeError(f"bernoulli_: The expanded size of the tensor ({shape[lead + d] if lead >= 0 else '?'}) "
                                   f"must match the existing size ({n}) at non-singleton dimension {lead + d}. Target "
                                   f"sizes: {list(shape)}. Tensor sizes: {list(ps)}")
    return _rnd.bernoulli(k, p, shape).astype(dtype)


_UNSET = object()   # random_() draws over the dtype's whole default range
_NO_TO = object()   # random_(to) alone; random_(from, None) is open-ended
_DIGITS = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}
_I64 = (-2 ** 63, 2 ** 63 - 1)
_C_NAME = {"float64": "double", "float32": "float", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
           "int64": "int64_t", "int32": "int", "int16": "short", "int8": "signed char", "uint8": "unsigned char",
           "bool": "bool"}


def _random(k, shape, dtype, a=_UNSET, b=_NO_TO, **kw):
    """torch's ``random_()`` / ``random_(to)`` / ``random_(from, to)`` (``to=None``: up to the
    dtype's largest value, 2**digits for a float; ``from`` at int64's minimum: all 64 bits).
    RuntimeError when from >= to or a bound lies outside the dtype (a float's: its finite range
    within int64); UserWarning when a float's bound passes 2**digits, past which its integers
    are no longer all exact (torch's texts)."""
    if "from" in kw or "to" in kw:   # the keyword spellings random_(from=..., to=...)
        a, b = kw.get("from", 0 if a is _UNSET else a), kw.get("to", b)
    # torch's parser: a bool bound is no int (TypeError; it drew from [0, 1) here), a bound beyond
    # int64 does not unpack (ValueError; the dtype's bounds check below said RuntimeError)
    for v in (a, b):
        if isinstance(v, bool):
            raise TypeError("random_(): 'from' and 'to' must be ints, not bool; pass ints")
        if isinstance(v, int) and not _I64[0] <= v <= _I64[1]:
            raise ValueError(f"random_(): Overflow when unpacking long long ({v} is outside int64)")
    name = np.dtype(dtype).name
    if np.dtype(dtype).kind == "c":   # torch draws integers into real tensors only
        if a is _UNSET:
            raise NotImplementedError(f"\"random_kernel_cpu\" not implemented for '{_SCALAR_NAME[name]}'; random_ "
                                      "fills real tensors only")
        raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean types (random_ "
                           "fills real tensors only)")
    if name == "bool":
        lo, hi, top = 0, 1, 1
    elif np.issubdtype(dtype, np.integer):
        lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
        top = hi
    else:
        lo, hi = _I64 if name == "bfloat16" else (max(int(np.finfo(dtype).min), _I64[0]),
                                                  min(int(np.finfo(dtype).max), _I64[1]))
        top = 2 ** _DIGITS[name]
    if a is _UNSET:
        low, to_inc = 0, top
    elif b is None and a == _I64[0]:
        low, to_inc = _I64
    else:
        if b is _NO_TO:
            a, b = 0, a
        low, to_inc = a, (top if b is None else b - 1)
        if b is not None and a >= b:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={a} >= to={b}")
        for what, v in (("from", low), ("to - 1", to_inc)):
            if not lo <= v <= hi:
                raise RuntimeError(f"{what} is out of bounds for {_C_NAME.get(name, name)}")
        if b is None and low > to_inc:
            raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' "
                               f"casted to dtype, but got from={low} > to_inc={to_inc}")
        if name in _DIGITS:
            d = _DIGITS[name]
            for what, v in (("from", low), ("to - 1", to_inc)):
                if not -top <= v <= top:
                    warn(f"{what} is out of bounds [-(2^{d}), 2^{d}]. Due to precision limitations "
                         f"{_C_NAME[name]} can support discrete uniform distribution only within this range. "
                         "This warning will become an error in version 1.7 release, please fix the code in advance")
    return _rnd.ints_as(_rnd.randint_inclusive(k, shape, low, to_inc), dtype)


def _exponential(k, shape, dtype, lambd=1.0):
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _rnd.exponential(k, shape, dtype) / lambd


def _geometric(k, shape, dtype, p):
    return _rnd.geometric(k, shape, dtype, p)


def _log_normal(k, shape, dtype, mean=1.0, std=2.0):
    return _rnd.log_normal(k, shape, dtype, mean, std)


def _cauchy(k, shape, dtype, median=0.0, sigma=1.0):
    return _rnd.cauchy(k, shape, dtype, median, sigma)


normal_, uniform_, bernoulli_, random_, exponential_, geometric_, log_normal_, cauchy_ = (
    method(f.__name__[1:] + "_")(_random_inplace(f))
    for f in (_normal, _uniform, _bernoulli, _random, _exponential, _geometric, _log_normal, _cauchy))


# ---- operators --------------------------------------------------------------------------
# x %= y and x //= y write into x as well (torch's remainder_ / floor_divide_: views see it)
for _name, _inplace in (("__iadd__", "add_"), ("__isub__", "sub_"), ("__imul__", "mul_"), ("__itruediv__", "div_"),
                        ("__ipow__", "pow_"), ("__imod__", "remainder_"), ("__ifloordiv__", "floor_divide_")):
    inplace_operator(_name, _inplace)


# NOTE [in-place through copy_]
# The in-place forms of functions without an in-place op of their own compute the result out
# of place (from a clone when self is in a graph, so the backward sees the values before the
# write) and ``copy_`` it into self: values, version counter, leaf and view rules are copy_'s,
# the grad_fn is ``CopyBackwards`` where torch names the function's own node.
# binary ops whose result is the promotion of self and other: torch's TensorIterator checks that
# self can hold it (shape, then dtype) before the kernel's own dtype check (NotImplementedError)
_PROMOTING = frozenset({"bitwise_and", "bitwise_or", "bitwise_xor", "floor_divide", "fmod", "remainder",
                        # and those whose kernel has no complex version: a complex other into a real
                        # self is the cast's RuntimeError first (was the kernel's NotImplementedError,
                        # or for ldexp_ a result with the imaginary part dropped)
                        "atan2", "clamp_max", "clamp_min", "copysign", "hypot", "ldexp", "nextafter", "xlogy"})


# in-place binary ops with no Scalar overload in torch: a number for ``other`` is the parser's
# TypeError, before the cast of the result into self is looked at
_TENSOR_OTHER_ONLY = frozenset({"atan2", "hypot", "ldexp", "nextafter", "igamma", "igammac", "fmax", "fmin",
                                "logaddexp", "logaddexp2", "gcd", "lcm"})


def check_tensor_other(api, other):
    """TypeError for a non-tensor ``other`` of an in-place op torch takes a Tensor for only."""
    if api[:-1] in _TENSOR_OTHER_ONLY and not isinstance(other, Tensor):
        raise strict_error(api, "other", "Tensor", other, 1)


def check_inplace_result(api, self, other):
    """torch's checks for ``self.<api>(other)`` writing into self, before the kernel's: RuntimeError
    when the broadcast shape is not self's, then when the promoted dtype cannot be cast to self's."""
    if not isinstance(other, (Tensor,) + _Number):
        return   # the op's own parser check names it
    _check_inplace_broadcast(self, other)
    dt = result_dtype(self, other)
    if dt is not self.dtype and not _dt.can_cast(dt, self.dtype):
        raise RuntimeError(f"result type {_SCALAR_NAME[dt.name]} can't be cast to the desired output type "
                           f"{_SCALAR_NAME[self.dtype.name]} ({api} writes into self; use the out-of-place "
                           f"form for a new tensor)")


# the ops with torch's deprecated (Number beta, [Number alpha,] ...) overloads: their operand names
_BETA_FIRST_OPERANDS = {"addmm": ("mat1", "mat2"), "addmv": ("mat", "vec"), "addr": ("vec1", "vec2"),
                        "addbmm": ("batch1", "batch2"), "baddbmm": ("batch1", "batch2")}


def inplace_via_copy(name):
    promoting = name in _PROMOTING

    def f(self, *args, **kwargs):
        out_of_place = METHODS[name]    # looked up late: some families register after this one
        try:
            rg = self.requires_grad
        except AttributeError:
            raise not_a_tensor(name + "_", self) from None
        if args:
            check_tensor_other(name + "_", args[0])
        if name in ("clamp_min", "clamp_max") and args and isinstance(args[0], (complex, np.complexfloating)):
            # torch's scalar clamp refuses a complex bound before it looks at casting into self
            raise NotImplementedError(f"{name}_: clamp is not supported for complex types; pass a real bound")
        if promoting and len(args) == 1:
            check_inplace_result(name + "_", self, args[0])
        if name in _BETA_FIRST_OPERANDS and len(args) > 2:
            # the deprecated scalars-first overload (x.addbmm_(1, b1, b2)): bound here, so torch's
            # warning names the in-place method ("This overload of addbmm_ is deprecated")
            kw = dict(kwargs)
            _, a, b, beta, alpha = beta_first(name + "_", self, args[0], args[1], args[2:], kw.pop("beta", 1),
                                              kw.pop("alpha", 1), _BETA_FIRST_OPERANDS[name])
            args, kwargs = (a, b), dict(kw, beta=beta, alpha=alpha)
        if name in ("cumsum", "cumprod") and self.dtype is _dt.bool_ and kwargs.get("dtype") in (None, _dt.bool_):
            # torch scans in self's dtype here (out of place, bool counts in int64): no bool kernel
            raise NotImplementedError(f"\"{name}_out_cpu\" not implemented for 'Bool'; {name}_ cannot write "
                                      f"into a bool tensor: use {name}() for an int64 result")
        out = out_of_place(self.clone() if rg else self, *args, **kwargs)
        if out.dtype is not self.dtype and not _dt.can_cast(out.dtype, self.dtype):
            raise RuntimeError(f"result type {_SCALAR_NAME[out.dtype.name]} can't be cast to the desired output type "
                               f"{_SCALAR_NAME[self.dtype.name]} ({name}_ writes into self; use {name}() for a new tensor)")
        if tuple(out.shape) != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                               f"{list(out.shape)}")
        return copy_(self, out)
    if name in _UNTRACKED_INPLACE:
        f = _untracked_on_leaf(f)
    f.__name__ = name + "_"
    f.__doc__ = (f"Mirrors ``torch.Tensor.{name}_``: ``{name}`` written into self (NOTE [in-place through "
                 f"copy_]). RuntimeError when the result dtype cannot be cast to self's, when self would "
                 f"have to grow, or on a leaf that requires grad.")
    return f
