"""More small torch names written with other tracegrad functions: tensor queries
(``is_nonzero``, ``is_same_size``, ``is_signed``), splitting spellings (``split_with_sizes``,
``unsafe_split``, ``unsafe_chunk``), writes into a view of a copy (``select_scatter``,
``slice_scatter``, ``diagonal_scatter``, ``put``/``put_``), index helpers (``unravel_index``,
``nonzero_static``), ``renorm``, ``chain_matmul``, ``scalar_tensor``, ``float_power_``,
``index_reduce`` and the finite-difference ``gradient``.
Gradients follow from the ops they are made of (the scatters: ``CopySlices`` as torch's
decompositions; torch names their nodes ``SelectScatterBackward0``...)."""
from __future__ import annotations

import functools

import numpy as np

from ..autograd._dispatch import apply_inplace, apply_op
from .promotion import _SCALAR_NAME, check_tensor_seq, check_tensors
from .._ops import dtypes as _dt
from .._ops.errors import int_past_64_bits
from .._ops.registry import OPS
from .._ops.warn import warn, warn_once
from .._tensor.factories import check_pin_memory, tensor as _tensor
from .._tensor.tensor import Tensor, _wrap_dim
from ._registry import function, method
from .composite import float_power
from .composite_more import flat_index
from .inplace import check_index_dtype, check_index_range, copy_
from .shape import cat, chunk, split
from .._tensor.out import accepts_out


# ---- queries ---------------------------------------------------------------------------------
@method("is_nonzero", function=True)
def is_nonzero(input):
    """Mirrors ``torch.is_nonzero``: whether the single element of ``input`` is nonzero.
    RuntimeError for a tensor of no or several elements, as torch."""
    n = input.numel()
    if n != 1:
        raise RuntimeError(f"Boolean value of Tensor with {'no values' if n == 0 else 'more than one value'} is "
                           "ambiguous; reduce it to one element first (any(), all(), item())")
    return bool(input.item() != 0)


@method("is_same_size", function=True)
def is_same_size(input, other):
    """Mirrors ``torch.is_same_size``: ``input.shape == other.shape``."""
    check_tensors("is_same_size", input, other, names=("input", "other"))
    return tuple(input.shape) == tuple(other.shape)


@method("is_signed", function=True)
def is_signed(input):
    """Mirrors ``torch.is_signed``: True for signed dtypes (every floating, complex and signed
    integer dtype); False for uint8 and bool."""
    return input.dtype.name not in ("uint8", "bool", "uint16", "uint32", "uint64")


@function()
def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    """Mirrors ``torch.scalar_tensor``: a 0-d tensor holding ``s``, of the default float dtype
    unless ``dtype`` is given. TypeError when ``s`` is not a number (a one-element tensor is one)."""
    check_pin_memory(pin_memory, device)
    if not isinstance(s, (int, float, complex, np.number, np.bool_)) and not (isinstance(s, Tensor) and s.numel() == 1):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not {type(s).__name__}")
    big = int_past_64_bits(s, "scalar_tensor")   # torch's parser reads an int as int64 or uint64
    if big is not None:
        raise big
    return _tensor(s, dtype=dtype or _dt.get_default_dtype(), requires_grad=requires_grad)


# ---- splitting -------------------------------------------------------------------------------
@method("split_with_sizes", function=True)
def split_with_sizes(input, split_sizes, dim=0):
    """Mirrors ``torch.split_with_sizes``: views of the given sizes along ``dim``.
    RuntimeError unless the sizes add up to that dim's length."""
    d = _wrap_dim(dim, input.dim())
    sizes = [int(s) for s in split_sizes]
    if sum(sizes) != input.shape[d] or any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {input.shape[d]} (input tensor's "
                           f"size at dimension {dim}), but got split_sizes={sizes}")
    return split(input, sizes, d)


@method(function=True)
def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """Mirrors ``torch.unsafe_split_with_sizes``: ``split_with_sizes`` whose parts autograd does
    not track as views (``UnsafeSplitWithSizesBackward0``); see ``unsafe_split``."""
    d = _wrap_dim(dim, input.dim())
    split_with_sizes(input, split_sizes, d)    # torch's checks
    return apply_op(OPS["unsafe_split_with_sizes"], (input,), (("sizes", tuple(int(s) for s in split_sizes)), ("dim", d)))


@method("unsafe_split", function=True)
def unsafe_split(input, split_size, dim=0):
    """Mirrors ``torch.unsafe_split``: ``split`` whose parts autograd does not track as views
    (``UnsafeSplitBackward0``), so an in-place op on one is allowed. Differs from torch: the
    parts are new tensors, not sharing the input's storage."""
    d = _wrap_dim(dim, input.dim()) if input.dim() else dim
    sizes = tuple(p.shape[d] for p in split(input, split_size, d))    # torch's checks and sizes
    return apply_op(OPS["unsafe_split"], (input,), (("sizes", sizes), ("dim", d)))


@method("unsafe_chunk", function=True)
def unsafe_chunk(input, chunks, dim=0):
    """Mirrors ``torch.unsafe_chunk``: ``chunk``'s parts as ``unsafe_split`` returns them."""
    d = _wrap_dim(dim, input.dim()) if input.dim() else dim
    parts = chunk(input, chunks, d)
    return apply_op(OPS["unsafe_split"], (input,), (("sizes", tuple(p.shape[d] for p in parts)), ("dim", d)))


# ---- writes into a view of a copy ------------------------------------------------------------
def _scatter_into(api, input, src, view):
    out = input.clone()
    target = view(out)
    if tuple(target.shape) != tuple(src.shape):
        raise RuntimeError(f"{api}: expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(target.shape)}")
    target.copy_(src)
    return out


@method("select_scatter", function=True)
def select_scatter(input, src, dim, index):
    """Mirrors ``torch.select_scatter``: a copy of ``input`` with ``src`` written at ``index``
    along ``dim`` (``src`` has ``input.select(dim, index)``'s shape). Gradients to both.
    RuntimeError for a ``src`` of another shape, IndexError for a bad index."""
    return _scatter_into("select_scatter", input, src, lambda t: t.select(dim, index))


@method("slice_scatter", function=True)
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """Mirrors ``torch.slice_scatter``: a copy of ``input`` with ``src`` written into
    ``[start:end:step]`` along ``dim``. Gradients to both. RuntimeError for a ``src`` of
    another shape."""
    d = _wrap_dim(dim, input.dim())
    if step is not None and step <= 0:   # torch's slice kernel (Python's slice would say ValueError)
        raise RuntimeError(f"slice_scatter: slice step must be positive, got {step}")
    key = (slice(None),) * d + (slice(start, end, step),)
    return _scatter_into("slice_scatter", input, src, lambda t: t[key])


@method("diagonal_scatter", function=True)
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """Mirrors ``torch.diagonal_scatter``: a copy of ``input`` with ``src`` written on its
    ``offset`` diagonal of dims (``dim1``, ``dim2``). Gradients to both. RuntimeError for a
    ``src`` of another shape."""
    return _scatter_into("diagonal_scatter", input, src, lambda t: t.diagonal(offset, dim1, dim2))


@method("put", function=True)
def put(input, index, source, accumulate=False):
    """Mirrors ``torch.put``: a copy of ``input`` with ``source``'s values written (added, with
    ``accumulate``) at the flat positions ``index`` (int64; negative counts from the end).
    Gradients to ``input`` and ``source`` (``PutBackward0``). IndexError for an index out of
    range (eager) or sizes that differ, RuntimeError for a non-int64 index or a ``source`` of
    another dtype."""
    return apply_op(OPS["put"], _put_args(input, index, source, "put"), (("accumulate", bool(accumulate)),))


@method("put_")
def put_(self, index, source, accumulate=False):
    """Mirrors ``Tensor.put_``: ``put`` written into ``self`` (in place, ``PutBackward0``)."""
    return apply_inplace(OPS["put"], self, _put_args(self, index, source, "put_")[1:],
                         (("accumulate", bool(accumulate)),))


def _put_args(input, index, source, api):
    idx = flat_index(input, index, api)
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{api}(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{input.dtype} and source.dtype = {source.dtype}; convert source with .to()")
    if source.numel() != idx.numel():
        raise IndexError(f"{api}(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {idx.numel()}")
    return input, idx, source


# ---- index helpers ---------------------------------------------------------------------------
@function()
def unravel_index(indices, shape):
    """Mirrors ``torch.unravel_index``: the coordinates in a tensor of ``shape`` of the flat
    ``indices`` (int64 tensors shaped like ``indices``, one per dim; negative indices count from
    the end; out-of-range ones wrap, as torch's do). TypeError for a non-integer ``indices``,
    ValueError for a negative size."""
    if not isinstance(indices, Tensor) or indices.is_floating_point() or indices.is_complex() \
            or indices.dtype is _dt.bool_:
        got = indices.dtype if isinstance(indices, Tensor) else type(indices).__name__
        raise TypeError(f"expected 'indices' to be integer dtype, but got {got}; pass an int64 tensor")
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    elif isinstance(shape, Tensor) or not isinstance(shape, (list, tuple)):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if not all(isinstance(s, (int, np.integer)) for s in shape):
        raise TypeError(f"expected 'shape' sequence to only contain ints, but got {tuple(shape)}")
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    # floor division and modulo, as torch: an index outside the range wraps around (no error)
    flat = indices.long()
    out = []
    for s in reversed(shape):
        out.append(flat % s)
        flat = flat // s
    return tuple(reversed(out))


@method("nonzero_static", function=True)
def nonzero_static(input, *, size, fill_value=-1):
    """Mirrors ``torch.nonzero_static``: ``nonzero(input)`` cut or padded with ``fill_value``
    rows to exactly ``size`` rows (``(size, input.dim())``, int64). Reads the values on the host
    (a graph break when compiled). RuntimeError for a negative ``size``."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    nz = input.nonzero()[:size]
    if nz.shape[0] < size:
        pad = _tensor(np.full((size - nz.shape[0], input.dim()), fill_value, np.int64))
        nz = cat([nz, pad], 0)
    return nz


# ---- norms and products ----------------------------------------------------------------------
@method("renorm", function=True)
def renorm(input, p, dim, maxnorm):
    """Mirrors ``torch.renorm``: each slice ``input.select(dim, i)`` whose ``p``-norm exceeds
    ``maxnorm`` is scaled to norm ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``, as torch); the
    others are unchanged. Differentiable. RuntimeError for ``p <= 0``, ``maxnorm < 0`` or a
    non-floating input."""
    for pos, (name, v) in enumerate((("p", p), ("maxnorm", maxnorm))):
        if isinstance(v, Tensor) and v.ndim:   # float() would take a one-element tensor; the parser's Number not
            raise TypeError(f"renorm(): argument '{name}' (position {1 + 2 * pos}) must be Number, not Tensor; "
                            "pass a number (or a 0-d tensor)")
    if input.dim() < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions")
    if not (input.is_floating_point() or input.is_complex()):
        raise RuntimeError(f"renorm: Expected a floating point or complex tensor as input. Got {input.dtype}")
    if not p > 0:   # NaN too, as torch
        raise RuntimeError(f"renorm: non-positive-norm not supported (got p={p})")
    if not maxnorm >= 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = _wrap_dim(dim, input.dim())
    # one op: torch's single RenormBackward0 node
    return apply_op(OPS["renorm"], (input,), (("p", float(p)), ("dim", d), ("maxnorm", float(maxnorm))))


@method("renorm_")
def renorm_(self, p, dim, maxnorm):
    """Mirrors ``Tensor.renorm_``: ``renorm`` written into ``self``."""
    return copy_(self, renorm(self.clone(), p, dim, maxnorm))   # the clone is what backward saves


@function()
@accepts_out()
def chain_matmul(*matrices, out=None):
    """Mirrors ``torch.chain_matmul`` (deprecated in torch, which warns the same): the product
    of 2-d matrices, left to right. RuntimeError for no matrices or one that is not 2-d."""
    check_tensor_seq("chain_matmul", matrices)
    # once per process, as torch's TORCH_WARN_ONCE; its first sentence as torch words it
    warn_once("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. "
              "Use tracegrad.linalg.multi_dot, which takes a list of two or more matrices.", UserWarning)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    return matrices[0].clone() if len(matrices) == 1 else functools.reduce(lambda a, b: a @ b, matrices)


@method("float_power_")
def float_power_(self, exponent):
    """Mirrors ``Tensor.float_power_``: ``float_power`` in place; ``self`` must be float64 (or
    complex128), RuntimeError otherwise, as torch."""
    # the result is complex128 when either operand is complex (a complex exponent on a float64
    # base too: torch refuses that in place rather than dropping the imaginary part)
    cplx = self.is_complex() or (exponent.is_complex() if isinstance(exponent, Tensor) else isinstance(exponent, complex))
    want = "complex128" if cplx else "float64"
    if self.dtype.name != want:
        names = {"float32": "Float", "int64": "Long", "float64": "Double", "complex128": "ComplexDouble",
                 "complex64": "ComplexFloat"}
        name = names.get(self.dtype.name, self.dtype.name)
        raise RuntimeError(f"the base given to float_power_ has dtype {name} but the operation's result requires "
                           f"dtype {names[want]}; convert self with .{'double' if want == 'float64' else 'cdouble'}() first")
    return copy_(self, float_power(self.clone(), exponent))


# ---- finite differences ----------------------------------------------------------------------
def _diff_uniform(f, d, h, edge_order):
    n = f.shape[d]

    def at(i, k=1):
        return f.narrow(d, i if i >= 0 else n + i, k)
    inner = (at(2, n - 2) - at(0, n - 2)) / (2.0 * h)
    if edge_order == 1:
        first, last = (at(1) - at(0)) / h, (at(-1) - at(-2)) / h
    else:
        first = (-1.5 * at(0) + 2.0 * at(1) - 0.5 * at(2)) / h
        last = (0.5 * at(-3) - 2.0 * at(-2) + 1.5 * at(-1)) / h
    return cat([first, inner, last], d)


def _diff_coords(f, d, x, edge_order):
    """Second-order differences on the sample points ``x`` (1-d), numpy's formulas."""
    n = f.shape[d]
    shape = [1] * f.dim()
    shape[d] = -1

    def at(i, k=1):
        return f.narrow(d, i if i >= 0 else n + i, k)

    def along(v):
        return v.reshape(shape)
    dx = x[1:] - x[:-1]
    dx1, dx2 = along(dx[:-1]), along(dx[1:])
    inner = (-dx2 / (dx1 * (dx1 + dx2)) * at(0, n - 2) + (dx2 - dx1) / (dx1 * dx2) * at(1, n - 2)
             + dx1 / (dx2 * (dx1 + dx2)) * at(2, n - 2))
    if edge_order == 1:
        first, last = (at(1) - at(0)) / float(dx[0]), (at(-1) - at(-2)) / float(dx[-1])
    else:
        a, b = float(dx[0]), float(dx[1])
        first = (-(2 * a + b) / (a * (a + b)) * at(0) + (a + b) / (a * b) * at(1) - a / (b * (a + b)) * at(2))
        a, b = float(dx[-2]), float(dx[-1])
        last = (b / (a * (a + b)) * at(-3) - (a + b) / (a * b) * at(-2) + (2 * b + a) / (b * (a + b)) * at(-1))
    return cat([first, inner, last], d)


@function()
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Mirrors ``torch.gradient``: one tensor per dim in ``dim`` (all dims when None) holding
    the derivative estimated by central differences inside and one-sided differences of order
    ``edge_order`` (1 or 2) at the edges. ``spacing``: a number (the sample distance), a list of
    numbers (one per dim) or a list of 1-d tensors of sample coordinates (non-uniform spacing,
    second-order accurate). Integer inputs give the default float dtype. Differentiable.
    RuntimeError for a dim shorter than ``edge_order + 1``, another ``edge_order`` or a
    ``spacing`` list of the wrong length or holding a tensor that is not 1-d, or a bool or uint8
    input, as torch."""
    if input.dtype is _dt.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported (torch.gradient); "
                           "convert the input with .float()")
    if input.dtype is _dt.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    dims = list(range(input.dim())) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [_wrap_dim(d, input.dim()) for d in dims]
    for d in dims:
        if dims.count(d) > 1:
            raise RuntimeError(f"gradient(): dim {d} appears multiple times in the list of dims")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    spacings = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(spacings) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                           f"equal to 'self.dim() = {input.dim()}', since dim argument was not given, but got a list "
                           f"of length {len(spacings)}" if dim is None else
                           f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length "
                           f"{len(spacings)} and a dim argument of length {len(dims)}.")
    if isinstance(spacing, (list, tuple)):
        for h in spacings:   # a list of tensors is torch's coordinates overload: 1-d ones only (a 0-d one too)
            if isinstance(h, Tensor) and h.dim() != 1:
                raise RuntimeError(f"torch.gradient expected each element of spacing to have one dimension, but got "
                                   f"an element with {h.dim()} dimensions! Pass 1-d coordinate tensors or numbers")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    f = input if (input.is_floating_point() or input.is_complex()) else input.to(_dt.get_default_dtype())
    out = []
    for d, h in zip(dims, spacings):
        if isinstance(h, Tensor) and h.dim() == 1:
            # floating coordinates promote with the input, as torch's arithmetic does
            x = h if h.is_floating_point() else h.to(f.real.dtype if f.is_complex() else f.dtype)
            out.append(_diff_coords(f, d, x, edge_order))
        else:
            out.append(_diff_uniform(f, d, 1.0 if h is None else float(h), edge_order))
    return tuple(out)


@method("index_reduce", function=True)
def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """Mirrors ``torch.index_reduce`` / ``Tensor.index_reduce``: rows ``index[i]`` of ``input``
    along ``dim`` reduced with ``source``'s row ``i`` by ``reduce`` ('prod', 'mean', 'amax',
    'amin'), counting the original row unless ``include_self=False`` (rows no index names stay
    as they are). Gradients as ``scatter_reduce``, which it is built on. RuntimeError for
    another ``reduce``, a non-1-d index or mismatched sizes; NotImplementedError for a complex or
    bool tensor (torch's kernel has no such version); IndexError for an index out of range."""
    if not isinstance(source, Tensor):   # torch's parser, before anything else
        raise TypeError(f"index_reduce(): argument 'source' (position 3) must be Tensor, not {type(source).__name__}; "
                        "pass a tensor of the rows to reduce in")
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    check_index_dtype(index, "index_reduce_")
    if input.dim() == 0 and source.dim() == 0:     # torch: a 0-d tensor is one row
        return index_reduce(input.reshape(1), dim, index, source.reshape(1), reduce,
                            include_self=include_self).reshape(())
    d = _wrap_dim(dim, input.dim())
    if index.dim() > 1:   # torch's IndexError, as index_add_'s and index_copy_'s
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, got {index.dim()} dims")
    if source.dim() == 0 and index.numel() != 1:   # torch's count check reads source.size(dim): IndexError
        raise IndexError(f"index_reduce_(): Dimension specified as {dim} but tensor has no dimensions (source is "
                         "0-d; give it input's dims)")
    if source.dim() == input.dim() and any(a != b for k, (a, b) in enumerate(zip(input.shape, source.shape))
                                           if k != d):
        raise RuntimeError(f"index_reduce_(): source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input.shape)} source.shape = "
                           f"{list(source.shape)}")
    if source.dim() != input.dim() or source.shape[d] != index.numel():
        raise RuntimeError(f"index_reduce_(): source must have the input's dims and index.numel() = {index.numel()} "
                           f"rows along dim {dim}, got source of shape {list(source.shape)}")
    if source.dtype is not input.dtype:   # checked before the index's values, as torch
        raise RuntimeError(f"index_reduce_(): self ({_SCALAR_NAME[input.dtype.name]}) and source "
                           f"({_SCALAR_NAME[source.dtype.name]}) must have the same scalar type; convert source "
                           "with .to(input.dtype)")
    if input.dtype.is_complex or input.dtype is _dt.bool_:   # torch's kernel: real numbers only
        raise NotImplementedError(f"\"index_func_\" not implemented for '{_SCALAR_NAME[input.dtype.name]}'; "
                                  "index_reduce takes integer or floating tensors")
    # torch's IndexError for an index outside [0, size) (negative ones too), not scatter_reduce's
    check_index_range(index, input.shape[d], d, "index_reduce_", error=IndexError)
    # torch's TORCH_WARN_ONCE from its kernel (once per process unless set_warn_always(True))
    warn_once("index_reduce() is in beta and the API may change at any time.")
    shape = [1] * source.dim()
    shape[d] = -1
    idx = index.reshape(shape).expand(source.shape)
    return input.scatter_reduce(d, idx, source, reduce, include_self=include_self)


@method("index_reduce_")
def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """Mirrors ``Tensor.index_reduce_``: ``index_reduce`` written into ``self``."""
    return copy_(self, index_reduce(self.clone(), dim, index, source, reduce, include_self=include_self))


__all__ = ["gradient", "index_reduce", "index_reduce_",
           "is_nonzero", "is_same_size", "is_signed", "scalar_tensor", "split_with_sizes", "unsafe_split",
           "unsafe_chunk", "select_scatter", "slice_scatter", "diagonal_scatter", "put", "put_", "unravel_index",
           "nonzero_static", "renorm", "renorm_", "chain_matmul", "float_power_"]


# ---- Python callables over elements (torch's CPU-only apply_/map_/map2_) ---------------------
def _check_callable_args(api, self, others):
    """torch refuses a tensor that requires grad (self or an operand, grad mode or not) and an
    operand whose dtype differs from self's (TypeError naming the argument)."""
    if self.requires_grad or any(o.requires_grad for _, o in others):
        raise RuntimeError(f"Can't call {api}() on Variable that requires grad. Use var.detach().{api}() instead.")
    for name, o in others:
        if not isinstance(o, Tensor):
            raise TypeError(f"{api}(): argument '{name}' must be Tensor, not {type(o).__name__}")
        if o.dtype is not self.dtype:
            raise TypeError(f"{api}: expected {self.type()} for {name} (got {o.type()})")


@method("apply_")
def apply_(self, callable):
    """Mirrors ``torch.Tensor.apply_(callable)``: each element replaced by ``callable(value)``
    (a Python number in, a number out), in place. Runs on the host, element by element (slow,
    as torch's); no gradient: RuntimeError when self requires grad."""
    _check_callable_args("apply_", self, ())
    values = [callable(v) for v in self.reshape(-1).tolist()]
    return _write_values(self, values)


@method("map_")
def map_(self, tensor, callable):
    """Mirrors ``torch.Tensor.map_(tensor, callable)``: each element replaced by
    ``callable(self_value, tensor_value)``, ``tensor`` (self's dtype) broadcast to self's shape,
    in place. RuntimeError when either requires grad; TypeError for another dtype."""
    _check_callable_args("map_", self, (("'other'", tensor),))
    other = tensor.expand(tuple(self.shape)).reshape(-1).tolist()
    values = [callable(a, b) for a, b in zip(self.reshape(-1).tolist(), other)]
    return _write_values(self, values)


@method("map2_")
def map2_(self, x, y, callable):
    """Mirrors ``torch.Tensor.map2_(x, y, callable)``: each element replaced by
    ``callable(self_value, x_value, y_value)``, ``x`` and ``y`` (self's dtype) broadcast to
    self's shape, in place. RuntimeError when any requires grad; TypeError for another dtype."""
    _check_callable_args("map2_", self, (("argument 'x'", x), ("argument 'y'", y)))
    shape = tuple(self.shape)
    xs, ys = x.expand(shape).reshape(-1).tolist(), y.expand(shape).reshape(-1).tolist()
    values = [callable(a, b, c) for a, b, c in zip(self.reshape(-1).tolist(), xs, ys)]
    return _write_values(self, values)


def _write_values(self, values):
    want = complex if self.is_complex() else float
    for v in values:    # torch converts each result to a number of self's kind
        if isinstance(v, (str, bytes)) or not isinstance(v, (bool, int, float, complex, np.number)) \
                or (want is float and isinstance(v, (complex, np.complexfloating))):
            raise TypeError(f"must be {'complex' if want is complex else 'real'} number, not {type(v).__name__}")
    return copy_(self, _tensor(values, dtype=self.dtype).reshape(tuple(self.shape)))
