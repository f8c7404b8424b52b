"""``torch.memory_format`` and its values (``contiguous_format``, ``preserve_format``,
``channels_last``, ``channels_last_3d``), and torch's rules for which layout a tensor gets.

NOTE [storage layouts]
A tensor's strides are read off its view chain over a row-major storage (``_tensor/tensor.py``).
A tensor laid out in another order (``channels_last``, or ``preserve_format`` of a permuted
dense input) keeps its array in *physical* order in a fresh storage, and its chain is one
``permute`` step back to the logical order: strides, ``is_contiguous``, ``view``-ability and
in-place writes then all follow from the chain as for any view. It is no view for autograd
(``_base`` None, ``_is_view()`` False, ``storage_offset()`` 0); its storage is marked
``_layout`` so that ops know a layout is in play. Values never change: only the order in
which the storage holds them.

Which layout a new tensor gets mirrors torch 2.13:
- ``*_like``/``clone``/``to`` with ``preserve_format`` (their default): a non-overlapping and
  dense input's strides; otherwise dense strides in the input's stride order
  (``infer_dense_strides``); a ``memory_format`` given asks for that format.
- pointwise ops (``POINTWISE`` below) order their output as TensorIterator does
  (``iterator_order``): inputs of one shape that are all contiguous, or all channels_last, or
  share one dense layout give that layout; otherwise dims sorted by the inputs' strides, the
  first input deciding, broadcast dims ignored.
- convolution: channels_last when the input or the weight suggests it; batch norm and pooling
  follow their input's ``suggest_memory_format``.
- flip and rot90 (``_api/shape.py``, ``_api/composite.py``): the input's ``preserve_format``
  order, plain views included (their kernels write into ``empty_like``; rot90 transposes it for
  an odd ``k``; ``k == 0`` is a contiguous clone).
Differs from torch: an op's output follows its inputs' layout only when one of them is such a
laid-out tensor (or a view of one), or, for batch norm and pixel (un)shuffle
(``suggest_view_layout``), a plain strided view that suggests a channels-last format; a
pointwise op on a plain permuted view (``x.t().exp()``) gives a contiguous result where torch
keeps the view's order (a cost on every op otherwise).
"""
from __future__ import annotations

from .. import _state
from .._ops.registry import OPS
from .meta import follow_meta, run as _run_meta
from .storage import FOLLOW_NEEDED, Storage
from .tensor import Tensor, chain_is_contiguous, strides_of


class memory_format:
    """Mirrors ``torch.memory_format``: one of the module-level values below (compare with ``is``
    or ``==``); not constructible by users in torch either."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"tracegrad.{self._name}"

    def __reduce__(self):   # pickles as the module-level singleton
        return self._name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

# set once any tensor got a storage layout: until then no op output needs a look (apply_op's check)
LAYOUTS_SEEN = FOLLOW_NEEDED   # (storage.py: layouts and meta storages share the flag)

_PERMUTE = OPS["permute"]
# dims outermost to innermost in memory, per rank, for the channels-last formats
_CHANNELS_LAST = {channels_last: (4, (0, 2, 3, 1)), channels_last_3d: (5, (0, 2, 3, 4, 1))}


# ---- reading layouts --------------------------------------------------------------------------
def check_format(fmt, api):
    """TypeError unless ``fmt`` is a ``memory_format`` (or None)."""
    if fmt is not None and not isinstance(fmt, memory_format):
        raise TypeError(f"{api}(): argument 'memory_format' must be torch.memory_format, not {type(fmt).__name__}")


def format_order(fmt, ndim, api="memory_format"):
    """The dims outermost to innermost for ``contiguous_format``/``channels_last``/
    ``channels_last_3d`` at rank ``ndim``. RuntimeError, with torch's text, for a channels-last
    format at the wrong rank."""
    if fmt in _CHANNELS_LAST:
        rank, order = _CHANNELS_LAST[fmt]
        if ndim != rank:
            name = "channels_last" if rank == 4 else "channels_last_3d"
            raise RuntimeError(f"required rank {rank} tensor to use {name} format")
        return order
    return tuple(range(ndim))


def _contiguous_as(shape, strides, order) -> bool:
    """torch's ``compute_*_contiguous``: strides are those of a dense layout in ``order``
    (outermost first), size-1 dims free."""
    expected = 1
    for d in reversed(order):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def is_contiguous_as(t, fmt) -> bool:
    """torch's ``is_contiguous(memory_format=fmt)``: False for a channels-last format at another
    rank; ``preserve_format`` and ``contiguous_format`` ask for row-major order."""
    if fmt in _CHANNELS_LAST:
        rank, order = _CHANNELS_LAST[fmt]
        return t.ndim == rank and _contiguous_as(tuple(t.shape), strides_of(t), order)
    return chain_is_contiguous(t)


def non_overlapping_and_dense(shape, strides) -> bool:
    """torch's ``is_non_overlapping_and_dense``: the elements fill a block of storage exactly
    once in some order of the dims."""
    expected = 1
    for d in sorted((d for d in range(len(shape)) if shape[d] != 1), key=lambda d: strides[d]):
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def _strides_like_channels_last(shape, strides, order) -> bool:
    """torch's ``is_channels_last_strides_{2,3}d`` (c10/core/MemoryFormat.h): the strides rank
    the dims as ``order``, ambiguous cases (size-1 dims with equal strides) counting as
    row-major."""
    if strides[1] == 0:
        return False
    low = 0
    for d in reversed(order):
        if shape[d] == 0 or strides[d] < low:
            return False
        if d == 0 and low == strides[1]:
            return False
        low = strides[d] * (shape[d] if shape[d] > 1 else 1)
    return True


def suggest_memory_format(t):
    """Mirrors ``torch._prims_common.suggest_memory_format`` (and ATen's): ``channels_last``
    (``channels_last_3d`` at rank 5) when a 4-d (5-d) tensor's strides order its dims as that
    format, else ``contiguous_format``."""
    for fmt, (rank, order) in _CHANNELS_LAST.items():
        if t.ndim == rank and _strides_like_channels_last(tuple(t.shape), strides_of(t), order):
            return fmt
    return contiguous_format


# ---- choosing layouts -------------------------------------------------------------------------
def iterator_order(shape, operand_strides):
    """TensorIterator's ``reorder_dimensions``: the dims outermost to innermost, sorted by the
    operands' strides (the first operand that tells two dims apart decides; a stride of 0, a
    broadcast dim, tells nothing; equal strides put the smaller dim inside). An insertion sort
    that keeps the row-major order where nothing decides, as torch's."""
    nd = len(shape)
    perm = list(range(nd - 1, -1, -1))    # innermost first, as torch's perm_

    def should_swap(d0, d1):
        for st in operand_strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0
    for i in range(1, nd):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return tuple(reversed(perm))


def dense_order(shape, strides):
    """The dims outermost to innermost of a non-overlapping and dense layout: by decreasing
    stride, a size-1 dim inside a larger dim of the same stride (where its stride is the same)."""
    return tuple(sorted(range(len(shape)), key=lambda d: (-strides[d], shape[d] == 1, d)))


def preserve_order(t):
    """The order ``preserve_format`` gives a copy of ``t`` (ATen's ``empty_like``): t's own for a
    non-overlapping and dense t, else the dense order its strides suggest."""
    if not t._chain:    # the whole of a row-major storage
        return tuple(range(t.ndim))
    shape, strides = tuple(t.shape), strides_of(t)
    if non_overlapping_and_dense(shape, strides):
        return dense_order(shape, strides)
    return iterator_order(shape, (strides,))


def requested_order(t, fmt, api):
    """The order a copy of ``t`` made with ``memory_format=fmt`` gets (None: preserve)."""
    check_format(fmt, api)
    if fmt is None or fmt is preserve_format:
        return preserve_order(t)
    return format_order(fmt, t.ndim)


# ---- giving a tensor a layout -----------------------------------------------------------------
def lay_out(t, order):
    """Give the fresh tensor ``t`` (no view, own storage) the dense layout whose dims run
    ``order`` outermost to innermost (NOTE [storage layouts]); row-major order leaves it as it
    is. Returns ``t``."""
    order = tuple(order)
    if order == tuple(range(len(order))):
        return t
    value = t._value
    inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
    st = Storage(_run_meta(_PERMUTE, [value], (("dims", order),)))   # (meta: the shape only)
    st._layout = True
    t._st, t._chain = st, ((_PERMUTE, (("dims", inverse),), None),)
    t._vcache, t._vgen = value, st.gen
    LAYOUTS_SEEN[0] = True
    return t


def adopt_layout(t, st, order):
    """Make fresh tensor ``t`` the logical tensor over storage ``st``, which holds it in the
    dense order ``order`` (outermost first), as ``lay_out`` but without copying: ``from_numpy``
    of a transposed array shares its bytes this way. Returns ``t``."""
    inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
    st._layout = True
    t._st, t._chain = st, ((_PERMUTE, (("dims", inverse),), None),)
    t._vcache, t._vgen = None, 0
    LAYOUTS_SEEN[0] = True
    return t


def grad_like_param(grad, param):
    """torch's AccumulateGrad (``clone_obey_contract``): the fresh ``.grad`` tensor ``grad`` takes
    the strides of a non-overlapping and dense ``param`` (else stays row-major). Inside a
    compiled region the region owns ``.grad``'s storage: row-major there. Returns ``grad``."""
    shape, strides = tuple(param.shape), strides_of(param)
    if _state.CAPTURE[0] is None and non_overlapping_and_dense(shape, strides):
        lay_out(grad, dense_order(shape, strides))
    return grad


def has_layout(t) -> bool:
    """Whether t's storage holds its array in a non-row-major order (NOTE [storage layouts])."""
    return getattr(t._st, "_layout", False)


def as_format(fmt, ndim):
    """``memory_format`` for a suggested order at rank ``ndim``: channels_last or row-major."""
    return fmt if fmt in _CHANNELS_LAST and _CHANNELS_LAST[fmt][0] == ndim else contiguous_format


def _broadcast_strides(t, shape):
    """t's strides against the broadcast ``shape``: 0 for dims t lacks or broadcasts."""
    st, sh = strides_of(t), tuple(t.shape)
    pad = len(shape) - len(sh)
    return tuple(0 if k < pad or (sh[k - pad] == 1 and shape[k] != 1) else st[k - pad]
                 for k in range(len(shape)))


def _pointwise_order(out, tensors, scalars):
    shape = tuple(out.shape)
    # TensorIterator's fast setup, for operands of one shape (a Python number torch wraps into
    # a 0-d operand, ``x + 1``, rules it out)
    if not scalars and all(tuple(a.shape) == shape for a in tensors):
        if all(chain_is_contiguous(a) for a in tensors):
            return None
        for fmt, (rank, order) in _CHANNELS_LAST.items():
            if len(shape) == rank and all(is_contiguous_as(a, fmt) for a in tensors):
                return order
        strides = [strides_of(a) for a in tensors]
        if all(s == strides[0] for s in strides) and non_overlapping_and_dense(shape, strides[0]):
            return dense_order(shape, strides[0])
    return iterator_order(shape, [_broadcast_strides(a, shape) for a in tensors])


def _cat_order(out, tensors, scalars):
    # ATen's cat_compute_output_memory_format: the inputs' common suggested format, else row-major
    fmts = {suggest_memory_format(a) for a in tensors}
    fmt = fmts.pop() if len(fmts) == 1 else contiguous_format
    return format_order(fmt, out.ndim) if fmt is not contiguous_format else None


def _suggested_order(out, tensors, scalars):
    fmt = suggest_memory_format(tensors[0])
    return format_order(fmt, out.ndim) if fmt is not contiguous_format and out.ndim == tensors[0].ndim else None


def _batch_norm_order(out, tensors, scalars):
    fmt = batch_norm_format(tensors[0])
    return format_order(fmt, out.ndim) if fmt is not contiguous_format else None


def _conv_order(out, tensors, scalars):
    fmts = {suggest_memory_format(a) for a in tensors[:2]}
    fmt = next((f for f in fmts if f is not contiguous_format), None)
    return format_order(fmt, out.ndim) if fmt is not None and as_format(fmt, out.ndim) is fmt else None


# which ops order their outputs, and how (apply_op calls ``follow`` for these)
_POINTWISE_MODULE = "tracegrad._ops.elementwise"
_NOT_POINTWISE = {"clone", "to_copy", "copy", "fill", "fill_tensor", "zero"}   # clone/to: conversion.py
_ACTIVATIONS = ("gelu", "leaky_relu", "elu", "hardtanh", "softplus", "mul_scalar", "div_scalar", "relu", "silu",
                "mish", "sigmoid", "tanh")
FOLLOW: dict = {}
_WRAPPED = ("self", "other")
# ops whose CPU kernel lays its output out as its input's suggest_memory_format (max_unpool2d
# does, max_unpool3d's output is always contiguous in torch)
_SUGGESTED = {"native_group_norm", "max_pool2d", "max_pool2d_with_indices", "avg_pool2d",
              "adaptive_avg_pool2d", "adaptive_max_pool2d", "max_pool3d", "max_pool3d_with_indices", "avg_pool3d",
              "adaptive_avg_pool3d", "max_unpool2d", "adaptive_max_pool2d_indices", "pixel_shuffle",
              "pixel_unshuffle"}


def _build_follow():
    for name, op in OPS.items():
        if name in _NOT_POINTWISE or op.view:
            continue
        if getattr(op.fn, "__module__", None) == _POINTWISE_MODULE or name in _ACTIVATIONS:
            FOLLOW[op] = _pointwise_order
    for name, op in OPS.items():
        if name in _SUGGESTED or name.startswith("upsample_") and name[-2:] in ("2d", "3d"):
            FOLLOW[op] = _suggested_order
    FOLLOW[OPS["convolution"]] = _conv_order
    FOLLOW[OPS["native_batch_norm"]] = _batch_norm_order
    FOLLOW[OPS["cat"]] = _cat_order


def batch_norm_format(t):
    """The format ATen's CPU batch norm gives its output: the input's own when it is dense in
    one (row-major, then channels_last_3d, then channels_last: an ambiguous channels-last
    input such as (1, C, H, 1), whose ``suggest_memory_format`` is contiguous, still gets
    channels_last), else ``suggest_memory_format``."""
    if chain_is_contiguous(t):
        return contiguous_format
    for fmt in (channels_last_3d, channels_last):
        if is_contiguous_as(t, fmt):
            return fmt
    return suggest_memory_format(t)


def suggest_view_layout(out, input, fmt=None):
    """Lay the op's fresh output ``out`` out in ``fmt`` (default ``input``'s
    ``suggest_memory_format``) when ``input`` is a plain strided view (no storage layout:
    ``follow`` covers those), as torch's CPU batch norm and pixel (un)shuffle kernels do: a
    channels-last-strided permute of a row-major tensor gives a channels-last result. Returns
    ``out``."""
    if (isinstance(input, Tensor) and input._chain and not has_layout(input) and not out._chain
            and out.ndim == input.ndim and input.ndim in (4, 5)):
        fmt = suggest_memory_format(input) if fmt is None else fmt
        if fmt is not contiguous_format:
            lay_out(out, format_order(fmt, out.ndim))
    return out


def follow(op, args, outs):
    """Give op's fresh outputs the layout torch gives them when one of its tensor inputs has a
    storage layout (NOTE [storage layouts]), and make them meta tensors when their inputs are
    (NOTE [meta tensors]). Called from ``apply_op`` only once either exists."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    follow_meta(args, op.args, f"tracegrad.{op.name}()")
    if not FOLLOW:
        _build_follow()
    rule = FOLLOW.get(op)
    if rule is None:
        return
    if not any(has_layout(a) for a in tensors):
        return
    # Python numbers torch wraps into operands: a binary op's other (or self) argument
    scalars = any(not isinstance(a, Tensor) and a is not None and name in _WRAPPED
                  for a, name in zip(args, op.args))
    order = rule(outs[0], tensors, scalars)
    if order is None:
        return
    for t in outs:
        if t.ndim == len(order) and not t._chain:
            lay_out(t, order)

