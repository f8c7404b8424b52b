"""Indexing ops: basic keys (views), advanced keys (gathers), index_put, gather/scatter,
index_select, masked_fill, one_hot, embedding lookups.

Python 3.11 slices are unhashable, so keys travel as static tuples of markers:
``("s", start, stop, step)``, ``("i", n)``, ``("n",)`` (None), ``("e",)`` (Ellipsis) and
``("t",)`` (an index array passed as a dynamic argument).
"""
from __future__ import annotations

import jax.numpy as jnp

from .registry import defop


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


defop("index_slice", _basic, grad_fn="SliceBackward0", view=True)
defop("index_int", _basic, grad_fn="SelectBackward0", view=True)
defop("index_none", _basic, grad_fn="UnsqueezeBackward0", view=True)
defop("index_alias", _basic, grad_fn="AliasBackward0", view=True)


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
