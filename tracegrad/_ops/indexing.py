"""Indexing ops: basic keys (views), advanced keys (gathers), index_put, gather/scatter,
index_select, masked_fill, one_hot, embedding lookups.

Python 3.11 slices are unhashable, so keys travel as static tuples of markers:
``("s", start, stop, step)``, ``("i", n)``, ``("n",)`` (None), ``("e",)`` (Ellipsis) and
``("t",)`` (an index array passed as a dynamic argument).
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax import lax

from .reduction import _on_0d
from .registry import defop
from .shape import _start, defdynview


def decode_key(key, arrays=()):
    it = iter(arrays)
    out = []
    for k in key:
        tag = k[0]
        if tag == "s":
            out.append(slice(k[1], k[2], k[3]))
        elif tag == "i":
            out.append(k[1])
        elif tag == "n":
            out.append(None)
        elif tag == "e":
            out.append(Ellipsis)
        else:
            out.append(next(it))
    return tuple(out)


def _basic(x, key):
    return x[decode_key(key)]


def _key_split(static):
    """NOTE [dynamic positions] (``_ops/shape.py``) for a basic key: ``("i", n)`` becomes
    ``("i",)`` and a normalized slice ``("s", start, stop, step)`` becomes ``("s", length,
    step)``, their ``n``/``start`` the positions; full slices, None and Ellipsis stay. A key
    with a slice not normalized (None or negative bounds) stays all static."""
    key = dict(static)["key"]
    struct, dyn = [], []
    for m in key:
        tag = m[0]
        if tag == "i":
            if m[1] < 0:
                return static, ()
            struct.append(("i",))
            dyn.append(m[1])
        elif tag == "s" and m[1:] != (None, None, None):
            start, stop, step = m[1:]
            if start is None or stop is None or step is None or start < 0 or stop < 0 or step < 1:
                return static, ()
            struct.append(("s", len(range(start, stop, step)), step))
            dyn.append(start)
        else:
            struct.append(m)
    return (("key", tuple(struct)),), tuple(dyn)


def _basic_dyn(x, *pos, key):
    """``x[key]`` for a structure from ``_key_split``, positions as operands: one dynamic
    slice (ints are length-1 slices), one strided slice for steps, one reshape for the ints
    dropped and the Nones added."""
    n_real = sum(1 for m in key if m[0] in "is")
    starts, sizes, steps, out = [], [], [], []
    it, d = iter(pos), 0

    def full(d):
        starts.append(0)
        sizes.append(x.shape[d])
        steps.append(1)
        out.append(x.shape[d])
    for m in key:
        tag = m[0]
        if tag == "n":
            out.append(1)
        elif tag == "e":
            for _ in range(x.ndim - n_real):
                full(d)
                d += 1
        elif tag == "i":
            starts.append(_start(next(it)))
            sizes.append(1)
            steps.append(1)
            d += 1
        elif len(m) == 4:        # ("s", None, None, None)
            full(d)
            d += 1
        else:
            length, step = m[1], m[2]
            span = (length - 1) * step + 1 if length else 0
            starts.append(_start(next(it)))
            sizes.append(span)
            steps.append(step)
            out.append(length)
            d += 1
    while d < x.ndim:
        full(d)
        d += 1
    starts = [s if hasattr(s, "dtype") else _start(s) for s in starts]
    y = lax.dynamic_slice(x, starts, sizes) if x.ndim else x
    if any(s > 1 for s in steps):
        y = lax.slice(y, (0,) * y.ndim, tuple(sizes), tuple(steps))
    return y.reshape(tuple(out))


# basic keys are views; positions are operands (NOTE [dynamic positions])
defdynview("index_slice", _basic, _basic_dyn, _key_split, grad_fn="SliceBackward0")
defdynview("index_int", _basic, _basic_dyn, _key_split, grad_fn="SelectBackward0")
defdynview("index_none", _basic, _basic_dyn, _key_split, grad_fn="UnsqueezeBackward0")
defdynview("index_alias", _basic, _basic_dyn, _key_split, grad_fn="AliasBackward0")


def _advanced(x, *idx, key):
    return x[decode_key(key, idx)]


_IDX = tuple(f"indices{i}" for i in range(64))
# the index arrays must be saved: the backward scatters into the positions they name
defop("index", _advanced, args=("self",) + _IDX, grad_fn="IndexBackward0", saves=_IDX)


# NOTE [overwriting scatter]
# torch differentiates an overwriting write ``out = x; out[k] = v`` (scatter, index_put,
# index_copy) as: ``x`` gets ``grad`` with the written positions zeroed, and EVERY element of
# ``v`` gets ``grad[k]`` -- also the ones a repeated position overwrote. JAX's own derivative
# gives only the element that won the write a gradient. ``set_at`` keeps JAX's forward and
# declares the tangent ``where(written, 0, tx) + zeros.at[k].add(tv)``, whose transpose is
# torch's backward; it is linear in the tangents, so every order of derivative follows.
@partial(jax.custom_jvp, nondiff_argnums=(2,))
def set_at(x, v, key, *idx):
    """``x.at[decode_key(key, idx)].set(v)`` with torch's derivative (NOTE [overwriting scatter])."""
    return x.at[decode_key(key, idx)].set(v)


@set_at.defjvp
def _set_at_jvp(key, primals, tangents):
    x, v, *idx = primals
    tx, tv = tangents[:2]
    k = decode_key(key, idx)
    written = jnp.zeros(x.shape, bool).at[k].set(True)
    tangent = jnp.where(written, jnp.zeros((), tx.dtype), tx) + jnp.zeros_like(tx).at[k].add(tv)
    return set_at(x, v, key, *idx), tangent


def _index_put(x, v, *idx, key, accumulate):
    k = decode_key(key, idx)
    v = jnp.asarray(v).astype(x.dtype)
    if accumulate and x.dtype == jnp.bool_:
        return x.at[k].max(v)   # torch adds bools as logical or (XLA has no bool scatter-add)
    return x.at[k].add(v) if accumulate else set_at(x, v, key, *idx)


# ``x[mask]`` written as ``masked_select``: same gather, torch's node name
defop("masked_select", _advanced, args=("self",) + _IDX, grad_fn="MaskedSelectBackward0", saves=_IDX)
defop("index_put", _index_put, args=("self", "values") + _IDX, grad_fn="IndexPutBackward0", saves=_IDX)
def _scatter_idx(x, index, dim):
    grids = jnp.meshgrid(*[jnp.arange(s) for s in index.shape], indexing="ij")
    grids[dim] = index
    return tuple(grids)


def _one_d(a):
    """A 0-d array as one element along dim 0 (torch's rule for gather/scatter); others as they are."""
    return a.reshape(a.shape or (1,)) if hasattr(a, "shape") else a


def _gather(x, index, dim):
    """torch's gather: the result has ``index``'s shape, which may be smaller than ``x`` outside
    ``dim`` (no broadcasting); a 0-d ``x`` is one element along dim 0."""
    if x.ndim == 0 or index.ndim == 0:
        return _gather(_one_d(x), _one_d(index), dim).reshape(index.shape)
    return x[_scatter_idx(x, index, dim)]


defop("gather", _gather, args=("self", "index"), grad_fn="GatherBackward0", saves=("index", "self"))


def _scatter(x, index, src, dim, reduce=None):
    if x.ndim == 0 or index.ndim == 0:   # torch takes 0-d self/index/src (scatter(x0d, 0, i0d, s0d))
        return _scatter(_one_d(x), _one_d(index), _one_d(src), dim, reduce).reshape(x.shape)
    idx = _scatter_idx(x, index, dim)
    if not hasattr(src, "shape") or src.shape == ():
        vals = jnp.full(index.shape, src, x.dtype)
    else:
        vals = src[tuple(slice(0, s) for s in index.shape)].astype(x.dtype)
    if reduce == "add":   # a bool sum saturates at True (torch): an OR, which is a max
        return x.at[idx].max(vals) if x.dtype == jnp.bool_ else x.at[idx].add(vals)
    if reduce == "multiply":
        return x.at[idx].multiply(vals)
    return set_at(x, vals, (("t",),) * len(idx), *idx)


defop("scatter", _scatter, args=("self", "index", "src"), grad_fn="ScatterBackward0",
      saves=("index",))
defop("scatter_value", _scatter, args=("self", "index", "value"), grad_fn="ScatterBackward1",
      saves=("index",), no_edge=("value",))
defop("scatter_add", lambda x, index, src, dim: _scatter(x, index, src, dim, "add"),
      args=("self", "index", "src"), grad_fn="ScatterAddBackward0", saves=("index",))
# torch treats a 0-d self as one element along dim 0 (index [0]) and gives a 0-d result
def _put(x, index, source, accumulate):
    flat, src = x.reshape(-1), source.reshape(-1).astype(x.dtype)
    # an overwriting put is an overwriting scatter: every source element gets its position's
    # gradient, also where the index repeats (NOTE [overwriting scatter])
    # (a bool accumulation saturates at True, as torch's: an OR, which is a max)
    out = (flat.at[index].max(src) if flat.dtype == jnp.bool_ else flat.at[index].add(src)) if accumulate \
        else set_at(flat, src, (("t",),), index)
    return out.reshape(x.shape)


# take/put on the flat positions ``index`` (non-negative, checked by the API layer)
defop("take", lambda x, index: jnp.take(x.reshape(-1), index), args=("self", "index"), grad_fn="TakeBackward0",
      saves=("index", "self"))
defop("put", _put, args=("self", "index", "source"), grad_fn="PutBackward0", saves=("index",))
defop("index_select", _on_0d(lambda x, index, dim: jnp.take(x, index, axis=dim)), args=("self", "index"),
      grad_fn="IndexSelectBackward0", saves=("index",))


def _index_add(x, index, source, alpha, dim):
    source = source.reshape(x.shape) if source.ndim == 0 else source   # a 0-d self's 0-d source (_on_0d)
    xm = jnp.moveaxis(x, dim, 0)
    sm = jnp.moveaxis(source.astype(x.dtype), dim, 0)
    return jnp.moveaxis(xm.at[index].add(alpha * sm), 0, dim)


defop("index_add", _on_0d(_index_add), args=("self", "index", "source", "alpha"), grad_fn="IndexAddBackward0",
      saves=("index",))
defop("masked_fill", lambda x, mask, value: jnp.where(mask, jnp.asarray(value, x.dtype), x),
      args=("self", "mask", "value"), grad_fn="MaskedFillBackward0", saves=("mask",), no_edge=("value",))
defop("masked_fill_tensor", lambda x, mask, value: jnp.where(mask, value.astype(x.dtype), x),
      args=("self", "mask", "value"), grad_fn="MaskedFillBackward1", saves=("mask",))


# ``x[mask] = value`` with one bool mask over x's leading dims and a single value: the same
# write as index_put through the mask's nonzero() positions (torch's node name), as a select,
# so it needs no host read of the mask (and compiles into one program)
def _mask_put(x, mask, value):
    m = mask.reshape(mask.shape + (1,) * (x.ndim - mask.ndim))
    return jnp.where(m, jnp.asarray(value).astype(x.dtype), x)


defop("index_put_mask", _mask_put, args=("self", "mask", "value"), grad_fn="IndexPutBackward0",
      saves=("mask",))
defop("index_put_mask_tensor", _mask_put, args=("self", "mask", "value"), grad_fn="IndexPutBackward0",
      saves=("mask",))
defop("one_hot", lambda x, num_classes: (x[..., None] == jnp.arange(num_classes)).astype(jnp.int64))
defop("embedding", lambda weight, indices: jnp.take(weight, indices, axis=0),
      args=("weight", "indices"), grad_fn="EmbeddingBackward0", saves=("indices",))


def _dim_key(dim):
    """The static key of ``x[:, ..., index, ...]`` with the index array at ``dim``."""
    return (("s", None, None, None),) * dim + (("t",),)


def _index_copy(x, index, source, dim):
    return set_at(x, source.astype(x.dtype), _dim_key(dim), index)


def _index_fill(x, index, value, dim):
    """A 0-D tensor ``value`` gets the sum of the gradient over the filled positions, each
    counted once even where ``index`` repeats (torch uniques the index there)."""
    written = jnp.zeros(x.shape, bool).at[decode_key(_dim_key(dim), (index,))].set(True)
    return jnp.where(written, jnp.asarray(value).astype(x.dtype), x)


defop("index_copy", _on_0d(_index_copy), args=("self", "index", "source"), grad_fn="IndexCopyBackward0",
      saves=("index",))
defop("index_fill", _on_0d(_index_fill), args=("self", "index", "value"), grad_fn="IndexFillBackward0",
      saves=("index",), no_edge=("value",))
defop("index_fill_tensor", _on_0d(_index_fill), args=("self", "index", "value"), grad_fn="IndexFillBackward1",
      saves=("index",))


def _masked_scatter(x, mask, source):
    """Positions where ``mask`` (broadcast to ``x``) is True take ``source``'s elements in
    row-major order; the gather's derivative is torch's (unused source elements get 0)."""
    m = jnp.broadcast_to(mask, x.shape).reshape(-1)
    pos = jnp.clip(jnp.cumsum(m) - 1, 0, max(source.size - 1, 0))
    vals = source.reshape(-1).astype(x.dtype)[pos] if source.size else jnp.zeros_like(x).reshape(-1)
    return jnp.where(m, vals, x.reshape(-1)).reshape(x.shape)


defop("masked_scatter", _masked_scatter, args=("self", "mask", "source"), grad_fn="MaskedScatterBackward0",
      saves=("mask",))


# NOTE [scatter_reduce derivative]
# torch's ScatterReduceBackward0: "sum"/"mean" are linear (JAX's derivative is torch's);
# "amax"/"amin" split the gradient evenly between the elements equal to the result, and
# count self's element among them even with include_self=False (then give it nothing);
# "prod" gives each element the product of the others at its position, exact with zeros.
# JAX has no derivative for a multiplying scatter with repeated indices and splits max ties
# only between the elements it reduced, so these three declare their tangent with
# ``custom_jvp``: linear in the tangents, so it transposes to torch's backward.
def _reduce_start(x, written, reduce, include_self):
    """``x`` with the written positions set to the reduction's identity unless ``include_self``."""
    if include_self:
        return x
    if reduce in ("sum", "mean"):
        ident = 0
    elif reduce == "prod":
        ident = 1
    elif jnp.issubdtype(x.dtype, jnp.floating):
        ident = -jnp.inf if reduce == "amax" else jnp.inf
    else:
        info = jnp.iinfo(x.dtype)
        ident = info.min if reduce == "amax" else info.max
    return jnp.where(written, jnp.asarray(ident, x.dtype), x)


def _scatter_combine(x, src, written, idx, reduce, include_self):
    start = _reduce_start(x, written, reduce, include_self)
    if reduce == "prod":
        return start.at[idx].multiply(src)
    return start.at[idx].max(src) if reduce == "amax" else start.at[idx].min(src)


@partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _scatter_nonlinear(reduce, include_self, x, src, written, *idx):
    """``scatter_reduce`` for "prod", "amax", "amin" (NOTE [scatter_reduce derivative]);
    ``written`` marks the positions ``idx`` names."""
    return _scatter_combine(x, src, written, tuple(idx), reduce, include_self)


@_scatter_nonlinear.defjvp
def _scatter_nonlinear_jvp(reduce, include_self, primals, tangents):
    x, src, written, *idx = primals
    tx, tsrc = tangents[:2]
    idx = tuple(idx)
    out = _scatter_nonlinear(reduce, include_self, x, src, written, *idx)
    keep = jnp.logical_not(written) if not include_self else jnp.ones(x.shape, bool)
    if reduce == "prod":
        one = jnp.ones((), x.dtype)
        x1 = jnp.where(keep, x, one)
        # per position: product of the nonzero factors and the number of zero factors
        # (through this function again, so that the tangent has a derivative of its own)
        nz = _scatter_nonlinear("prod", True, jnp.where(x1 == 0, one, x1), jnp.where(src == 0, one, src),
                                written, *idx)
        # and the product of the zero factors themselves (1 where there is none): a nonzero
        # factor's "others" is nz / v times it, 0 in value but, with one zero in the slot,
        # differentiable in that zero (torch's double backward), which a constant 0 is not
        zp = _scatter_nonlinear("prod", True, jnp.where(x1 == 0, x1, one), jnp.where(src == 0, src, one),
                                written, *idx)
        zeros = (x1 == 0).astype(jnp.int32).at[idx].add((src == 0).astype(jnp.int32))
        # the sum of the zero factors: for a zero ``v`` with one other zero in the slot, zs - v is
        # that other zero (0 in value, differentiable in it and not in ``v``)
        zs = jnp.where(x1 == 0, x1, 0).at[idx].add(jnp.where(src == 0, src, 0))

        def others(v, nz, zp, zs, zeros):   # product of the factors other than ``v``
            safe = jnp.where(v == 0, one, v)
            rest = jnp.where(zeros == 1, one, jnp.where(zeros == 2, zs - v, 0))
            return jnp.where(v == 0, nz * rest, nz / safe * zp)
        dx = jnp.where(written, jnp.where(keep, tx * others(x1, nz, zp, zs, zeros), 0), tx)
        return out, dx + jnp.zeros_like(tx).at[idx].add(tsrc * others(src, nz[idx], zp[idx], zs[idx], zeros[idx]))
    self_tie = x == out
    src_tie = src == out[idx]
    n = self_tie.astype(x.dtype).at[idx].add(src_tie.astype(x.dtype))
    n = jnp.where(n == 0, jnp.ones((), x.dtype), n)
    dx = jnp.where(written, jnp.where(self_tie & keep, tx, 0) / n, tx)
    return out, dx + jnp.zeros_like(tx).at[idx].add(jnp.where(src_tie, tsrc, 0)) / n


def _scatter_reduce(x, index, src, dim, reduce, include_self):
    if x.dtype == jnp.bool_:   # torch reduces bools as 0/1: sum and amax are "any", prod and amin "all"
        out = _scatter_reduce(x.astype(jnp.int32), index, src.astype(jnp.int32), dim, reduce, include_self)
        return out.astype(jnp.bool_)
    if x.ndim == 0 or index.ndim == 0:   # 0-d operands: one element along dim 0, as _scatter
        return _scatter_reduce(_one_d(x), _one_d(index), _one_d(src), dim, reduce, include_self).reshape(x.shape)
    idx = _scatter_idx(x, index, dim)
    vals = src[tuple(slice(0, s) for s in index.shape)].astype(x.dtype)
    written = jnp.zeros(x.shape, bool).at[idx].set(True)
    if reduce in ("prod", "amax", "amin"):
        return _scatter_nonlinear(reduce, include_self, x, vals, written, *idx)
    total = _reduce_start(x, written, reduce, include_self).at[idx].add(vals)
    if reduce == "sum":
        return total
    # mean: self counts once when include_self; integers divide by flooring, as torch
    count = jnp.zeros(x.shape, x.dtype).at[idx].add(jnp.ones_like(vals)) + (1 if include_self else 0)
    count = jnp.where(count == 0, jnp.ones((), x.dtype), count)
    return total / count if jnp.issubdtype(x.dtype, jnp.inexact) else total // count


defop("scatter_reduce", _scatter_reduce, args=("self", "index", "src"), grad_fn="ScatterReduceBackward0",
      saves=("self", "index", "src"))
