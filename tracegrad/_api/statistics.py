"""Statistics: ``nanmedian``/``nanquantile`` (ops of ``_ops/statistics.py``), ``cov`` and
``corrcoef`` (composites, differentiable) and ``histogram`` (counted on the host, like
``histc``: a graph break when compiled)."""
from __future__ import annotations


import numpy as np

from ..autograd._dispatch import apply_op
from .._ops import dtypes as _dt
from .._ops.registry import OPS
from .._tensor.convert import check_float_fits
from .._tensor.factories import tensor as _tensor
from .._tensor.tensor import Tensor, NO_HOST_VALUES, _wrap_dim
from .._ops.warn import warn as _warn
from ._registry import function, method
from .composite import _host
from .reduction import check_keepdim_needs_dim, check_median, quantile_op, return_types
from .promotion import _SCALAR_NAME



@method("nanmedian", function=True)
def nanmedian(input, dim=None, keepdim=False):
    """Mirrors ``torch.nanmedian``: the lower median of the non-NaN values (NaN when all are
    NaN); with ``dim`` a named tuple ``(values, indices)`` (int64). The whole-tensor form
    spreads the gradient evenly over the elements equal to the median, as torch. NaN for an
    empty tensor; IndexError for an empty ``dim``; NotImplementedError for complex or bool."""
    check_median(input, dim, "nanmedian")
    if dim is None:
        check_keepdim_needs_dim("nanmedian", keepdim)
        return apply_op(OPS["nanmedian_all"], (input,))
    v, i = apply_op(OPS["nanmedian_dim"], (input,), (("dim", _wrap_dim(dim, input.ndim)), ("keepdim", keepdim)))
    return return_types.nanmedian(v, i)


@method("nanquantile", function=True)
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """Mirrors ``torch.nanquantile``: ``torch.quantile`` over the non-NaN values of each slice
    (NaN for a slice with none); ``q`` a float or 1-D tensor in [0, 1] (its dim comes first).
    RuntimeError for ``q`` outside [0, 1], an unknown ``interpolation`` or a non-floating input."""
    return quantile_op("nanquantile", input, q, dim, keepdim, interpolation)


def _weights(w, n_obs, name):
    """``cov``'s checks of a weight vector: one dim, one weight per observation and, where the
    values are known (eager), none negative (nor NaN), as torch."""
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                           f"{w.dim()} dimensions")
    if w.numel() != n_obs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                           f"input but got {w.numel()} != {n_obs}")
    if w.numel() and not isinstance(w._value, NO_HOST_VALUES) and not bool((w >= 0).all()):
        raise RuntimeError(f"cov(): {name} cannot be negative; pass weights >= 0")
    return w


@method("cov", function=True)
def cov(input, *, correction=1, fweights=None, aweights=None):
    """Mirrors ``torch.cov``: the covariance matrix of the variables in the rows of ``input``
    (``(vars, obs)``; a 1-D input is one variable: a 0-d result), with frequency weights
    ``fweights`` (integers) and observation weights ``aweights``; normalized by the weight sum
    minus ``correction`` (Bessel's correction by default). Integer inputs give the default
    float dtype. Differentiable. RuntimeError for more than 2 dims or bad weights; a
    non-positive normalizer warns and gives inf/NaN, as torch; RuntimeError for a bool input."""
    if isinstance(correction, bool) or not (isinstance(correction, (int, np.integer)) or (
            isinstance(correction, Tensor) and correction.dim() == 0 and correction.dtype._cat == 1)):
        raise TypeError(f"cov(): argument 'correction' must be int, not {type(correction).__name__}; pass an int "
                        f"(1: Bessel's correction, 0: none)")
    if input.dtype is _dt.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input; convert it with .float()")
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(_dt.get_default_dtype())
    n_obs = x.shape[1]
    w = None
    if fweights is not None:
        if fweights.is_floating_point() or fweights.is_complex():
            raise RuntimeError("cov(): expected fweights to have integral dtype")
        w = _weights(fweights, n_obs, "fweights")
    if aweights is not None:
        if not aweights.is_floating_point():
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got {aweights.dtype}")
        aw = _weights(aweights, n_obs, "aweights")
        w = aw if w is None else w * aw
    if w is None:
        w_sum = float(n_obs)
        avg = x.mean(1)
        norm = w_sum - correction
    else:
        w = w.to(x.real.dtype if x.is_complex() else x.dtype)
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
    concrete = not (isinstance(norm, Tensor) and isinstance(norm._value, NO_HOST_VALUES))   # eager: warn as torch
    if concrete and float(norm) <= 0:
        _warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
              "observations.")
    norm = norm.clamp(min=0) if isinstance(norm, Tensor) else max(norm, 0.0)
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    out = (xw @ (xm.mT.conj() if xm.is_complex() else xm.mT)) / norm
    return out.squeeze()


@method("corrcoef", function=True)
def corrcoef(input):
    """Mirrors ``torch.corrcoef``: Pearson correlation coefficients of the rows of ``input``
    (``cov`` normalized by the standard deviations, real parts clipped to [-1, 1]).
    Differentiable. RuntimeError for more than 2 dims or a bool input (as torch, from ``cov``)."""
    if input.dtype is _dt.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input; convert it with .float()")
    if input.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    std = c.diagonal().sqrt()
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    return c.clamp(-1, 1) if not c.is_complex() else c


def _bin_edges(a, bins, range_, dtype, dim=0):
    """``bins + 1`` equal-width edges over ``range_`` (default: the data's min and max).
    RuntimeError, as torch, for a range (given or of the data: a NaN or an inf value) that is
    not finite, or a reversed one."""
    if range_ is not None:
        lo, hi = float(range_[0]), float(range_[1])
    elif a.size:
        lo, hi = float(a.min()), float(a.max())
    else:
        lo, hi = 0.0, 1.0                # torch's range for an empty input
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension {dim}'s range [{lo:g}, {hi:g}] is not finite; pass a "
                           f"finite range=, or drop the NaN/inf values from the input first")
    if lo > hi:
        raise RuntimeError(f"histogram: min should not exceed max, but got min {lo} max {hi}")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5      # torch's widening of a one-value range
    # torch's linspace in the input dtype: the first half counts up from lo, the rest down from hi
    lo, hi = dtype.type(lo), dtype.type(hi)
    step = (hi - lo) / dtype.type(bins)
    i = np.arange(bins + 1)
    up = lo + i.astype(dtype) * step
    down = hi - (bins - i).astype(dtype) * step
    return np.where(i < (bins + 1) // 2, up, down).astype(dtype)


def _bin_positions(v, edges, equal_width):
    """``(inside, bin index)`` of each value of ``v`` for the increasing ``edges``: bins hold
    ``[left, right)``, the last also its right edge; the index is meaningful where ``inside``."""
    n = edges.shape[0] - 1
    keep = (v >= edges[0]) & (v <= edges[-1])
    if equal_width and n:
        # torch's equal-width rule: the index from the position in the range, then moved by one
        # where rounding put it on the wrong side of an edge
        with np.errstate(invalid="ignore"):
            pos = np.clip(np.where(keep, (v - edges[0]) * v.dtype.type(n) / (edges[-1] - edges[0]), 0).astype(np.int64),
                          0, n - 1)
        pos -= v < edges[pos]
        pos += (pos < n - 1) & (v >= edges[np.minimum(pos + 1, n)])
    else:
        pos = np.searchsorted(edges, v, side="right") - 1
    return keep, np.clip(pos, 0, max(n - 1, 0))


@method("histogram", function=True)   # torch.histogram's out=(hist, bin_edges): out_functions.EXACT
def histogram(input, bins=100, *, range=None, weight=None, density=False):  # noqa: A002 -- torch's name
    """Mirrors ``torch.histogram``: the named tuple ``(hist, bin_edges)``: ``bins`` (default 100) equal-width
    bins over ``range`` (default: the data's min and max) or the increasing edges in the 1-d
    tensor ``bins``; each bin holds ``[left, right)``, the last also its right edge; values
    outside are ignored. ``weight`` (``input``'s shape) weighs each value; ``density=True``
    divides by the total and the bin widths. Both outputs have ``input``'s floating dtype; no
    gradient (torch has none). Counted on the host. NotImplementedError for integer input,
    RuntimeError for ``bins <= 0``, a reversed range or a ``weight`` of another shape, and (before
    the dtype's error, as torch) for a range limit past the input's dtype (1e39 into float32)."""
    if isinstance(range, (tuple, list)):   # torch's checked conversion of the limits
        for v in range:
            check_float_fits(v, input.dtype, "torch.histogram()")
    if not input.is_floating_point():
        name = _SCALAR_NAME.get(input.dtype.name, input.dtype.name)
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{name}'; convert the input with .float() first")
    a = _host(input).reshape(-1)
    dt = a.dtype
    if isinstance(bins, Tensor):
        if range is not None:   # torch's overload with a bins tensor has no range: its edges are the range
            raise TypeError("histogram() received an invalid combination of arguments: range= goes with an int "
                            "bins, not with a bins tensor (its edges give the range); drop range=")
        if bins.dim() != 1 or bins.numel() < 1:
            raise RuntimeError("torch.histogram(): bins tensor should have one dimension and at least 1 element")
        edges = _host(bins).astype(dt)
    else:
        if int(bins) <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
        if range is not None and len(range) != 2:
            raise RuntimeError(f"torch.histogramdd: for a 1-dimensional histogram range should have 2 elements, "
                               f"but got {len(range)}; pass range=(min, max)")
        edges = _bin_edges(a, int(bins), range, dt)
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError("histogram: if weight tensor is provided it should have the same shape as the input "
                           f"tensor, got {tuple(weight.shape)} and {tuple(input.shape)}")
    w = None if weight is None else _host(weight).reshape(-1).astype(dt)
    keep, pos = _bin_positions(a, edges, not isinstance(bins, Tensor))
    n = edges.shape[0] - 1
    hist = np.bincount(pos[keep], weights=None if w is None else w[keep], minlength=n).astype(dt) if n else np.zeros(0, dt)
    if density:
        hist = hist / (hist.sum() * np.diff(edges))
    return return_types.histogram(_tensor(hist.astype(dt), dtype=input.dtype), _tensor(edges, dtype=input.dtype))


@function()
def histogramdd(input, bins, *, range=None, weight=None, density=False):  # noqa: A002 -- torch's name
    """Mirrors ``torch.histogramdd``: the D-dimensional histogram of the points in ``input``'s
    last dimension (``input`` is ``(*, D)``), the named tuple ``(hist, bin_edges)`` with ``hist``
    of shape ``(bins_0, ..., bins_{D-1})`` and ``bin_edges`` a tuple of D 1-d tensors. ``bins``:
    one int for every dimension, a sequence of D ints, or a sequence of D increasing 1-d edge
    tensors; ``range``: a flat sequence ``(min_0, max_0, min_1, max_1, ...)`` for int bins
    (default: each dimension's min and max). Binning per dimension as ``histogram`` (a point
    outside any dimension's edges is dropped). ``weight`` has ``input``'s shape without the last
    dimension; ``density=True`` divides by the total and the bins' volumes. Outputs in
    ``input``'s floating dtype. Counted on the host (a graph break when compiled). Differs from
    torch: torch's ``hist`` requires grad (with a node whose backward raises "not implemented")
    when ``input`` or ``weight`` does; here it does not require grad. NotImplementedError for
    integer input; RuntimeError for input with fewer than 2 dimensions, a bins or range of the
    wrong length, ``bins <= 0``, a reversed range, or a ``weight`` of the wrong shape."""
    if not input.is_floating_point():
        name = _SCALAR_NAME.get(input.dtype.name, input.dtype.name)
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{name}'; convert the input with .float() first")
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions; pass points as (N, D)")
    D = input.shape[-1]
    pts = _host(input).reshape(-1, D)
    dt = pts.dtype
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        bins = [int(bins)] * D
    bins = list(bins)
    if len(bins) != D:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if range is not None and len(range) != 2 * D:
        raise RuntimeError(f"torch.histogramdd: for a {D}-dimensional histogram range should have {2 * D} elements, "
                           f"but got {len(range)}")
    if weight is not None and tuple(weight.shape) != tuple(input.shape[:-1]):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the input "
                           f"tensor excluding its innermost dimension, but got input with shape {tuple(input.shape)} "
                           f"and weight with shape {tuple(weight.shape)}")
    edges, positions, keep = [], [], np.ones(pts.shape[0], bool)
    for d, b in enumerate(bins):
        col = pts[:, d]
        if isinstance(b, Tensor):
            if b.dim() != 1 or b.numel() < 1:
                raise RuntimeError(f"torch.histogramdd(): bins tensor should have one dimension and at least 1 "
                                   f"element, for dimension {d}")
            e = _host(b).astype(dt)
        else:
            if int(b) <= 0:
                raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {b} for dimension {d}")
            r = None if range is None else (range[2 * d], range[2 * d + 1])
            if r is not None and float(r[0]) > float(r[1]):
                raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {r[0]} max {r[1]} "
                                   f"for dimension {d}")
            e = _bin_edges(col, int(b), r, dt, d)
        inside, pos = _bin_positions(col, e, not isinstance(b, Tensor))
        keep &= inside
        edges.append(e)
        positions.append(pos)
    shape = tuple(e.shape[0] - 1 for e in edges)
    w = None if weight is None else _host(weight).reshape(-1).astype(dt)[keep]
    flat = np.ravel_multi_index(tuple(p[keep] for p in positions), shape) if all(shape) else np.zeros(0, np.int64)
    size = int(np.prod(shape))
    hist = (np.bincount(flat, weights=w, minlength=size) if size else np.zeros(0)).astype(dt).reshape(shape)
    if density:
        volume = np.ones(shape, dt)
        for d, e in enumerate(edges):
            volume = volume * np.diff(e).reshape([-1 if i == d else 1 for i in np.arange(D)])
        hist = hist / (hist.sum() * volume)
    return return_types.histogramdd(_tensor(hist.astype(dt), dtype=input.dtype),
                                    tuple(_tensor(e, dtype=input.dtype) for e in edges))


__all__ = ["nanmedian", "nanquantile", "cov", "corrcoef", "histogram", "histogramdd"]
