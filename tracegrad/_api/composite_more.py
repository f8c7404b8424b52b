"""More torch functions composed of other tracegrad functions (the sibling of ``composite.py``):
array builders (diag_embed, block_diag, vander, combinations), indexing (take), batched
products (baddbmm), integration (trapezoid/trapz), distances (dist) and statistics over values
(histc, mode, unique_consecutive). Gradients follow from the ops they are made of. ``histc``
and ``unique_consecutive`` read values on the host (inside a compiled function: a graph break).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .. import _autocast, _state
from ..autograd._dispatch import apply_op
from ..autograd.function import _no_derivative as no_derivative
from .._ops import dtypes as _dt
from .._ops.registry import OPS
from .._tensor.factories import arange as _arange, check_result_size, tensor as _tensor, zeros as _zeros
from .._tensor.tensor import Tensor, NO_HOST_VALUES, _wrap_dim
from ._registry import function, method
from .argcheck import check_kinds
from .composite import _host, _no_dim_of_0d
from .composite_names import _add_scaled, _fused_node
from .elementwise import where
from .linalg import bmm
from .._tensor.convert import check_float_fits
from .promotion import beta_first, check_tensors, _SCALAR_NAME, result_dtype
from .reduction import check_sortable, return_types
from .shape import cat, stack
from .._tensor.out import accepts_out


def _name(t):
    return _SCALAR_NAME.get(t.dtype.name, t.dtype.name)


@method("baddbmm", function=True)
def baddbmm(input, batch1, batch2, *rest, beta=1, alpha=1):
    """Mirrors ``torch.baddbmm``: ``beta * input + alpha * (batch1 @ batch2)`` for ``(b, n, m)``
    and ``(b, m, p)`` batches; ``input`` broadcasts to ``(b, n, p)``. With ``beta=0`` the
    input is ignored (its NaNs do not propagate), as torch. RuntimeError for shapes or dtypes
    that differ (from ``bmm``). Under autocast all three go to its dtype first (torch's list).
    torch's deprecated scalars-first overloads (``x.baddbmm(beta, alpha, b1, b2)``) warn and bind."""
    input, batch1, batch2, beta, alpha = beta_first("baddbmm", input, batch1, batch2, rest, beta, alpha,
                                                    ("batch1", "batch2"))
    input, batch1, batch2 = _autocast.cast("lower", "baddbmm", input, batch1, batch2)
    # torch sizes the result from batch1.size(0), batch1.size(1), batch2.size(2) before its rank
    # checks: a batch of too few dims is an IndexError there
    for t, d in ((batch1, 0), (batch1, 1), (batch2, 2)):
        if isinstance(t, Tensor) and d >= t.ndim:
            if t.ndim == 0:
                raise IndexError(f"baddbmm: Dimension specified as {d} but tensor has no dimensions; "
                                 "pass 3-D batches")
            raise IndexError(f"baddbmm: Dimension out of range (expected to be in range of [{-t.ndim}, "
                             f"{t.ndim - 1}], but got {d}); pass 3-D batches")
    if batch1.ndim == 3 and batch2.ndim == 3 and batch1.shape[0] == batch2.shape[0] and \
            batch1.shape[2] == batch2.shape[1]:
        out = _fused_node("baddbmm", input, batch1, batch2, beta, alpha,
                          (batch1.shape[0], batch1.shape[1], batch2.shape[2]))
        if out is not None:    # BaddbmmBackward0, torch's node
            return out
    prod = bmm(batch1, batch2)
    if input.dtype is not prod.dtype:
        raise RuntimeError(f"baddbmm: expected self and batch1 to have the same dtype, but got: "
                           f"{_name(input)} != {_name(prod)}; convert them to one dtype")
    # addbmm's rules: integer operands truncate float beta/alpha (torch: int64 result, 0.2 -> 0)
    return _add_scaled(input, prod, beta, alpha, "baddbmm")


@method("diag_embed", function=True)
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Mirrors ``torch.diag_embed``: a tensor whose (``dim1``, ``dim2``) planes hold the last
    dim of ``input`` on their ``offset`` diagonal, zeros elsewhere; the output has one more dim,
    of size ``n + |offset|`` in both planes' dims. RuntimeError when ``dim1 == dim2``."""
    nd = input.dim() + 1
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}; pass two different dims")
    x = input.reshape(1) if input.dim() == 0 else input
    # one op: torch's single DiagEmbedBackward0 node and its contiguous result
    return apply_op(OPS["diag_embed_nd"], (x,), (("offset", int(offset)), ("dim1", d1), ("dim2", d2)))


@method("take", function=True)
def take(input, index):
    """Mirrors ``torch.take``: ``input.flatten()[index]``, shaped like ``index`` (int64;
    negative indices count from the end). RuntimeError for a non-int64 index, IndexError for
    one out of range (checked eagerly), as torch. Autograd: ``TakeBackward0``."""
    return apply_op(OPS["take"], (input, flat_index(input, index, "take").reshape(tuple(index.shape))))


def flat_index(input, index, api):
    """``index`` (int64, negative counting from the end) as non-negative positions into
    ``input.flatten()``, a 1-d tensor. RuntimeError for a non-int64 index; IndexError for one
    out of range (checked eagerly), as torch's ``take``/``put``."""
    if index.dtype is not _dt.int64:
        raise RuntimeError(f"{api}(): Expected a long tensor for index, but got {_name(index)}; "
                           "convert it with .long()")
    n = input.numel()
    if isinstance(index._value, NO_HOST_VALUES):
        _state.check_values(index._value, lambda v: (v >= n) | (v < -n))
    elif index.numel():
        a = _host(index)
        bad = a[(a >= n) | (a < -n)]
        if bad.size:
            raise IndexError(f"out of range: tried to access index {int(bad[0])} on a tensor of {n} elements.")
    return where(index < 0, index + n, index).reshape(-1)


@method("dist", function=True)
def dist(input, other, p=2):
    """Mirrors ``torch.dist``: the ``p``-norm of ``input - other`` (broadcast) as a 0-d tensor
    (``p`` 0: the count of non-zeros; inf/-inf: max/min of the absolute difference), one
    ``DistBackward0`` node over both inputs (zero gradient where the distance is 0, as torch).
    RuntimeError for non-floating inputs, as torch."""
    check_tensors("dist", input, other, names=("input", "other"))
    if not isinstance(p, (int, float)) and not (isinstance(p, Tensor) and p.numel() == 1) \
            and type(p).__module__ != "numpy":
        raise TypeError(f"dist(): argument 'p' must be Number, not {type(p).__name__}; pass a number such as 2")
    if input.dtype is _dt.bool_ or other.dtype is _dt.bool_:
        input - other     # torch subtracts first: its error for a bool operand
    common = result_dtype(input, other)    # torch checks the operands' common dtype
    if not (common.is_floating_point or common.is_complex):
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{_SCALAR_NAME.get(common.name, common.name)} instead; convert the inputs with .float()")
    return apply_op(OPS["dist"], (input, other), (("ord", float(p)), ("dtype", result_dtype(input, other).np)))


def _trapezoid_terms(y, x, dx, dim, api):
    """``(pair, scale, d)``: the sums of neighbours of ``y`` along dim ``d`` and the spacing
    (a number, ``dx / 2``, or the tensor of ``x`` differences, to halve after multiplying)."""
    if isinstance(x, (int, float)):                 # trapz(y, dx, dim=...) positional spacing
        x, dx = None, x
    if x is not None and dx is not None:
        # torch's overloads take either sample points or a spacing, never both
        raise TypeError(f"{api}() received an invalid combination of arguments - got (Tensor, "
                        f"dx={type(dx).__name__}, x={type(x).__name__}), but expected one of:\n"
                        f" * (Tensor y, Tensor x, *, int dim = -1)\n * (Tensor y, *, Number dx = 1, int dim = -1)")
    if isinstance(dx, complex) or (isinstance(dx, Tensor) and dx.is_complex()):
        raise RuntimeError(f"{api}: Currently, we only support dx as a real number.")
    if isinstance(dx, Tensor):   # torch's Number dx: the value of a 0-d tensor that needs no grad
        if dx.ndim or dx.requires_grad:
            raise TypeError(f"{api}() received an invalid combination of arguments - got (Tensor, dx=Tensor); dx "
                            f"is a number (a 0-d tensor without grad at most), got shape {list(dx.shape)}"
                            f"{' requiring grad' if dx.requires_grad else ''}")
        dx = dx.item()
    if getattr(y, "dtype", None) is _dt.bool_ or getattr(x, "dtype", None) is _dt.bool_:
        raise RuntimeError(f"{api}: received a bool input for `x` or `y`, but bool is not supported; convert it "
                           f"with .float()")
    d = _wrap_dim(dim, y.dim())
    n = y.shape[d]
    if not (y.is_floating_point() or y.is_complex()):
        y = y.to(_dt.get_default_dtype())
    if n == 0:
        return y, None, d
    if x is None and api == "trapezoid":   # the sum is taken first (see trapezoid)
        return y, 1.0 if dx is None else dx, d
    pair = y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)
    if x is None:
        return pair, (1.0 if dx is None else dx) / 2.0, d
    xd = d if x.dim() == y.dim() else x.dim() - 1
    if x.shape[xd] != n:
        raise RuntimeError(f"{api}: There must be one `x` value for each sample point; "
                           f"got {x.shape[xd]} x values and {n} samples")
    spacing = x.narrow(xd, 1, n - 1) - x.narrow(xd, 0, n - 1)
    if x.dim() == 1 and y.dim() > 1:
        spacing = spacing.reshape((n - 1,) + (1,) * (y.dim() - 1 - d))
    return pair, spacing, d


@function("trapezoid", "trapz")
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """Mirrors ``torch.trapezoid`` (and ``torch.trapz``): the trapezoidal-rule integral of ``y``
    along ``dim``, with sample points ``x`` (a tensor, 1-d or of ``y``'s shape) or spacing
    ``dx`` (default 1); the dim is reduced. Integer ``y`` gives the default float dtype.
    RuntimeError when ``x`` has a different length along ``dim``, as torch."""
    pair, scale, d = _trapezoid_terms(y, x, dx, dim, "trapezoid")
    if scale is None:   # no samples: zeros without a history, in y's own dtype (as torch)
        return _zeros(tuple(s for i, s in enumerate(y.shape) if i != d), dtype=y.dtype)
    # torch's formulas and nodes, its products by a C++ Scalar being MulBackward1/DivBackward1:
    # (y.sum(d) - (y[0] + y[-1]) * 0.5) * dx, or (spacing * (y[1:] + y[:-1])).sum(d) / 2
    if not isinstance(scale, Tensor):
        ends = apply_op(OPS["mul_scalar"], (pair.select(d, 0) + pair.select(d, -1), 0.5))
        return apply_op(OPS["mul_scalar"], (pair.sum(d) - ends, float(scale)))
    return apply_op(OPS["div_scalar"], ((scale * pair).sum(d), 2.0))


@function()
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """Mirrors ``torch.cumulative_trapezoid``: the running trapezoidal-rule integral of ``y``
    along ``dim`` (one element shorter there), with sample points ``x`` (1-d or ``y``'s shape)
    or spacing ``dx`` (default 1). Integer ``y`` gives the default float dtype.
    RuntimeError when ``x`` has a different length along ``dim``, as torch."""
    pair, scale, d = _trapezoid_terms(y, x, dx, dim, "cumulative_trapezoid")
    if scale is None:   # no samples: torch's formula on the empty slices still records a cumsum
        return (pair.narrow(d, 0, 0) + pair.narrow(d, 0, 0)).cumsum(d)
    if not isinstance(scale, Tensor):   # torch: cumsum((y[1:] + y[:-1]) * (dx / 2)), a C++ Scalar product
        return apply_op(OPS["mul_scalar"], (pair, float(scale))).cumsum(d)
    return apply_op(OPS["div_scalar"], ((scale * pair).cumsum(d), 2.0))


@function()
def combinations(input, r=2, with_replacement=False):
    """Mirrors ``torch.combinations``: the rows of all length-``r`` combinations of the 1-d
    ``input`` (itertools order; with replacement when asked): ``(count, r)``, or ``(0,)`` for
    ``r == 0``. RuntimeError for a non-1-d input, as torch."""
    check_tensors("combinations", input, names=("input",))
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}; flatten the input first")
    if r < 0:
        raise RuntimeError(f"combinations: Expect a non-negative number, but got r={r}")
    if r == 0:
        return _zeros((0,), dtype=input.dtype)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(pick(range(input.shape[0]), r)), np.int64).reshape(-1, r)
    return input.index_select(0, _tensor(idx.reshape(-1))).reshape(idx.shape)


@function()
def block_diag(*tensors):
    """Mirrors ``torch.block_diag``: the tensors (0-d as 1x1, 1-d as one row, 2-d) on the
    diagonal of a 2-d tensor of zeros, in their promoted dtype. RuntimeError for an input of
    more than 2 dims, as torch."""
    # (not check_tensor_seq: torch's block_diag takes the tensors unpacked only, never one list of them)
    check_tensors("block_diag", *tensors, names=("tensors",) * len(tensors))
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions; reshape it to at most 2 dims")
    if not tensors:
        return _zeros((1, 0))
    if len(tensors) > 256:   # the op's argument slots; more blocks compose from partial results
        return block_diag(block_diag(*tensors[:256]), *tensors[256:])
    dt = result_dtype(*tensors)   # over the inputs as given: a 1-d int8 beats a 0-d int16, as torch
    # one op: torch's single BlockDiagBackward0 node, an edge per input
    return apply_op(OPS["block_diag"], tuple(tensors), (("dtype", dt.np),))


@function()
def vander(x, N=None, increasing=False):
    """Mirrors ``torch.vander``: the Vandermonde matrix of the 1-d ``x`` with ``N`` columns
    (default ``len(x)``): powers ``N-1 .. 0`` (``0 .. N-1`` when ``increasing``); integer
    inputs stay int64 (bool becomes int64). Gradient through ``cumprod``. RuntimeError for a
    non-1-d ``x`` or a negative ``N``, as torch."""
    if x.dim() != 1:
        raise RuntimeError(f"vander: x must be a one-dimensional tensor, got {x.dim()} dims; flatten it first")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError(f"vander: N must be non-negative, got {n}")
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(_dt.int64)
    if n == 0:
        return _zeros((x.shape[0], 0), dtype=x.dtype)
    check_result_size((x.shape[0], n), x.dtype.itemsize, "vander")   # NOTE [result size past int64]
    ones = _zeros((x.shape[0], 1), dtype=x.dtype) + 1
    cols = cat([ones, x.unsqueeze(1).expand(x.shape[0], n - 1)], 1) if n > 1 else ones
    out = cols.cumprod(1)
    return out if increasing else out.flip(1)


@method("histc", function=True)
def histc(input, bins=100, min=0, max=0):
    """Mirrors ``torch.histc``: counts of ``input``'s values in ``bins`` equal-width bins over
    ``[min, max]`` (both 0: the data's min and max; equal: widened by 1 each way); values
    outside are ignored, ``max`` falls in the last bin. A 1-d tensor of the input's (floating)
    dtype, no gradient. Reads the values on the host (a graph break when compiled).
    RuntimeError for ``bins <= 0`` or ``min > max`` (checked first, as torch), then
    NotImplementedError for integer inputs."""
    if isinstance(bins, Tensor):
        # bins is a plain int to torch's parser: a 0-d integer tensor is one (anything else, a bool
        # tensor included, its TypeError; the histogram below would read a tensor as an array)
        if bins.ndim or bins.dtype._cat != 1:
            raise TypeError("histc(): argument 'bins' must be int, not Tensor; pass an int bin count")
        bins = int(bins)
    # torch checks the arguments before the dtype: an integer input with min > max (or bins <= 0)
    # raises RuntimeError, not the dtype's NotImplementedError (test_histc_min_max_errors)
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins}; pass a positive bin count")
    if min > max:
        raise RuntimeError(f"torch.histc: max must be larger than min, got min={min} and max={max}; swap them")
    for v in (min, max):   # torch converts the limits to the input's dtype, checked (1e39 into float32)
        check_float_fits(v, input.dtype, "torch.histc")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_name(input)}'; convert the input "
                                  "with .float() first")
    a = _host(input).reshape(-1)
    lo, hi = a.dtype.type(min), a.dtype.type(max)
    if lo == hi and a.size:
        lo, hi = a.min(), a.max()
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite; pass finite min and max or drop "
                           "the non-finite values")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    keep = a[(a >= lo) & (a <= hi)]
    with np.errstate(all="ignore"):
        pos = (keep - lo) * a.dtype.type(bins) / (hi - lo)
    # a range of width 0 or inf at the dtype's extremes (widening finfo.min by 1 changes nothing)
    # gives NaN positions: count those values in the first bin (torch counts them too; its bin
    # choice there is an accident of its kernel: last bin for finfo.max)
    check_result_size((bins,), 8, "histc")   # before NumPy sizes the counts (NOTE [result size past int64])
    pos = np.clip(np.nan_to_num(pos, nan=0.0), 0, bins).astype(np.int64)
    pos[pos == bins] = bins - 1
    return _tensor(np.bincount(pos, minlength=bins).astype(a.dtype), dtype=input.dtype)


@method("mode", function=True)
def mode(input, dim=-1, keepdim=False):
    """Mirrors ``torch.mode``: the most frequent value along ``dim`` (the smallest among equally
    frequent ones) and the index of its last occurrence (int64), a named tuple ``(values,
    indices)``. NaNs count as equal to each other and larger than every number. Gradient to the
    chosen elements. Uses ``n x n`` comparisons per slice. IndexError for an empty ``dim``;
    NotImplementedError for a complex input, as torch. Differs from torch: with NaNs present
    torch's answer depends on where its unstable sort leaves them (``mode([nan, 1., 2.])`` is
    NaN there, 1 here)."""
    check_sortable(input, "mode", NotImplementedError)
    d = _wrap_dim(dim, input.dim())   # a 0-d input's dim is checked too (range [-1, 0]), as torch
    if input.dim() == 0:
        idx = _zeros((), dtype=_dt.int64)
        return return_types.mode(apply_op(OPS["mode_pick"], (input, idx), (("dim", 0), ("keepdim", True))), idx)
    n = input.shape[d]
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size; pass a dim with elements")
    x = input.movedim(d, -1)
    xd = x.detach()
    key = xd.reshape(-1, n)   # 2-D: the n x n comparison below stays within 64 dims (torch takes 65)
    if input.is_floating_point():   # NaN -> inf: NaNs compare equal to each other and sort after the numbers
        key = where(key.isnan(), math.inf, key)
    counts = (key.unsqueeze(-1) == key.unsqueeze(-2)).sum(-1)
    best = counts.amax(-1, keepdim=True)
    cand = counts == best
    smallest = where(cand, key, key.amax(-1, keepdim=True)).amin(-1, keepdim=True)
    pos = _arange(n, dtype=_dt.int64)
    idx = where(key == smallest, pos, -1).amax(-1, keepdim=True)
    idx = idx.reshape(tuple(x.shape[:-1]) + (1,)).movedim(-1, d).contiguous()
    # the values come from one op reading input at idx: torch's single ModeBackward0 node
    values = apply_op(OPS["mode_pick"], (input, idx), (("dim", d), ("keepdim", bool(keepdim))))
    return return_types.mode(values, idx if keepdim else idx.squeeze(d))


@method("unique_consecutive", function=True)
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Mirrors ``torch.unique_consecutive``: drops consecutive repeats (of elements of the
    flattened input, or of slices along ``dim``), with the inverse indices and run lengths
    (int64) when asked. Output size depends on the values: read on the host (a graph break
    when compiled). IndexError for a bad ``dim``; TypeError for a flag that is not a bool;
    NotImplementedError for a complex input (as torch)."""
    check_tensors("unique_consecutive", input, names=("input",))
    check_kinds("unique_consecutive", ("return_inverse", "return_counts"), return_inverse=return_inverse,
                return_counts=return_counts, **({} if dim is None else {"dim": dim}))
    # torch's kernel is unique's: no complex dtype (values have no order to run-length by there)
    if input.dtype.is_complex:
        raise NotImplementedError(f'"unique" not implemented for \'{_SCALAR_NAME[input.dtype.name]}\'; '
                                  "unique_consecutive takes real or bool tensors")
    a = _host(input)
    if dim is None:
        flat = a.reshape(-1)
        change = np.ones(flat.shape[0], bool)
        change[1:] = flat[1:] != flat[:-1]
        vals = flat[change]
        inv_shape = a.shape
    else:
        _no_dim_of_0d(input, dim)
        d = _wrap_dim(dim, input.dim())
        moved = np.moveaxis(a, d, 0)
        change = np.ones(moved.shape[0], bool)
        if moved.shape[0] > 1:
            change[1:] = (moved[1:] != moved[:-1]).reshape(moved.shape[0] - 1, -1).any(1)
        vals = np.moveaxis(moved[change], 0, d)
        inv_shape = (moved.shape[0],)
    starts = np.flatnonzero(change)
    out = [no_derivative(_tensor(vals, dtype=input.dtype), input, "unique_consecutive",
                         "UniqueConsecutiveBackward0")]
    if return_inverse:
        out.append(_tensor((np.cumsum(change) - 1).reshape(inv_shape).astype(np.int64), dtype=_dt.int64))
    if return_counts:
        counts = np.diff(np.append(starts, change.shape[0])).astype(np.int64)
        out.append(_tensor(counts, dtype=_dt.int64))
    return out[0] if len(out) == 1 else tuple(out)


__all__ = ["baddbmm", "diag_embed", "take", "dist", "trapezoid", "cumulative_trapezoid", "combinations", "block_diag", "vander",
           "histc", "mode", "unique_consecutive"]
