"""Indexing ops: basic keys (views), advanced keys (gathers), index_put, gather/scatter,
index_select, masked_fill, one_hot, embedding lookups.

Python 3.11 slices are unhashable, so keys travel as static tuples of markers:
``("s", start, stop, step)``, ``("i", n)``, ``("n",)`` (None), ``("e",)`` (Ellipsis) and
``("t",)`` (an index array passed as a dynamic argument).
"""
from __future__ import annotations

import jax.numpy as jnp
from jax import lax

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


def _index_put(x, v, *idx, key, accumulate):
    k = decode_key(key, idx)
    v = v.astype(x.dtype) if hasattr(v, "astype") else v
    return x.at[k].add(v) if accumulate else x.at[k].set(v)


# ``x[mask]`` written as ``masked_select``: same gather, torch's node name
defop("masked_select", _advanced, args=("self",) + _IDX, grad_fn="MaskedSelectBackward0", saves=_IDX)
defop("index_put", _index_put, args=("self", "values") + _IDX, grad_fn="IndexPutBackward0", saves=_IDX)
defop("gather", lambda x, index, dim: jnp.take_along_axis(x, index, axis=dim),
      args=("self", "index"), grad_fn="GatherBackward0", saves=("index", "self"))


def _scatter_idx(x, index, dim):
    grids = jnp.meshgrid(*[jnp.arange(s) for s in index.shape], indexing="ij")
    grids[dim] = index
    return tuple(grids)


def _scatter(x, index, src, dim, reduce=None):
    idx = _scatter_idx(x, index, dim)
    if not hasattr(src, "shape") or src.shape == ():
        vals = jnp.full(index.shape, src, x.dtype)
    else:
        vals = src[tuple(slice(0, s) for s in index.shape)].astype(x.dtype)
    if reduce == "add":
        return x.at[idx].add(vals)
    if reduce == "multiply":
        return x.at[idx].multiply(vals)
    return x.at[idx].set(vals)


defop("scatter", _scatter, args=("self", "index", "src"), grad_fn="ScatterBackward0",
      saves=("index",))
defop("scatter_value", _scatter, args=("self", "index", "value"), grad_fn="ScatterBackward1",
      saves=("index",), no_edge=("value",))
defop("scatter_add", lambda x, index, src, dim: _scatter(x, index, src, dim, "add"),
      args=("self", "index", "src"), grad_fn="ScatterAddBackward0", saves=("index",))
defop("index_select", lambda x, index, dim: jnp.take(x, index, axis=dim), args=("self", "index"),
      grad_fn="IndexSelectBackward0", saves=("index",))


def _index_add(x, index, source, alpha, dim):
    xm = jnp.moveaxis(x, dim, 0)
    sm = jnp.moveaxis(source.astype(x.dtype), dim, 0)
    return jnp.moveaxis(xm.at[index].add(alpha * sm), 0, dim)


defop("index_add", _index_add, args=("self", "index", "source", "alpha"), grad_fn="IndexAddBackward0",
      saves=("index",))
defop("masked_fill", lambda x, mask, value: jnp.where(mask, jnp.asarray(value, x.dtype), x),
      args=("self", "mask", "value"), grad_fn="MaskedFillBackward0", saves=("mask",), no_edge=("value",))
defop("masked_fill_tensor", lambda x, mask, value: jnp.where(mask, value.astype(x.dtype), x),
      args=("self", "mask", "value"), grad_fn="MaskedFillBackward1", saves=("mask",))
defop("one_hot", lambda x, num_classes: (x[..., None] == jnp.arange(num_classes)).astype(jnp.int64))
defop("embedding", lambda weight, indices: jnp.take(weight, indices, axis=0),
      args=("weight", "indices"), grad_fn="EmbeddingBackward0", saves=("indices",))
