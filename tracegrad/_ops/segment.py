"""``segment_reduce``: reduce consecutive runs ("segments") of ``data`` along one axis.

The caller resolves the segment layout on the host (lengths are data: the output shape depends
on them) into a padded gather: ``index`` (``batch, segments * width``) says which element along
the axis fills each slot, ``valid`` which slots are real. The op gathers, fills the padding with
the reduction's identity and reduces, so the gradient is JAX's VJP of a dense reduction (prod's
exact around zeros, as torch's ``SegmentReduceBackward0``) except for max/min, see
NOTE [segment max gradient].
"""
from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp

from .registry import defop

_IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -jnp.inf, "min": jnp.inf}


def _segment_reduce(data, index, valid, counts, reduce, segments, initial, axis):
    """``data`` (*lead, N, *rest) reduced along ``axis`` with ``index``/``valid`` (B, S*W) and
    ``counts`` (B, S), B = prod(lead) -> (*lead, S, *rest)."""
    lead, rest = data.shape[:axis], data.shape[axis + 1:]
    rest_size = math.prod(rest)
    out = _reduce_flat(data.reshape(index.shape[0], data.shape[axis], rest_size), index, valid, counts, reduce,
                       segments, initial)
    return out.reshape(*lead, segments, *rest)


def _reduce_flat(data, index, valid, counts, reduce, segments, initial):
    b, n, r = data.shape
    if n == 0:                                  # nothing to gather (every slot is padding): a stand-in element
        data = jnp.zeros((b, 1, r), data.dtype)
    got = jnp.take_along_axis(data, index[:, :, None], axis=1).reshape(b, segments, -1, r)
    got = jnp.where(valid.reshape(b, segments, -1, 1), got, jnp.asarray(_IDENTITY[reduce], data.dtype))
    n = counts[:, :, None].astype(data.dtype)
    if reduce in ("sum", "mean"):
        out = got.sum(2) + (0 if initial is None else initial)
        if reduce == "mean":
            fill = jnp.nan if initial is None else initial
            out = jnp.where(n > 0, out / jnp.where(n > 0, n, 1), jnp.asarray(fill, data.dtype))
        return out
    if reduce == "prod":
        out = got.prod(2)
        return out if initial is None else out * initial
    return _extreme(reduce, initial, got, valid.reshape(got.shape[:3] + (1,)))


# NOTE [segment max gradient]: torch's backward for max/min (SegmentReduce.cpp) gives every element
# equal to its segment's result (and every NaN) the incoming gradient, then, where there are
# several, divides only the positive ones by their count: a tie of two gets (g/2, g/2) for g > 0
# but (g, g) for g < 0. JAX's max splits every tie evenly, so the rule is written out here.
# ``initial`` joins the reduction inside the rule: it is no element, so an element tied with it
# takes the whole gradient and a NaN element keeps its share (outside, jnp.maximum would split
# the tie with ``initial`` and give a NaN nothing).
@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _extreme(reduce, initial, got, valid):
    out = got.max(2) if reduce == "max" else got.min(2)
    if initial is not None:
        out = (jnp.maximum if reduce == "max" else jnp.minimum)(out, jnp.asarray(initial, got.dtype))
    return out


def _extreme_fwd(reduce, initial, got, valid):
    out = _extreme(reduce, initial, got, valid)
    return out, (got, valid, out)


def _extreme_bwd(reduce, initial, res, g):
    got, valid, out = res
    hit = valid & ((got == out[:, :, None]) | jnp.isnan(got))
    count = hit.sum(2, keepdims=True)
    each = jnp.where(hit, g[:, :, None], 0)
    each = jnp.where((count >= 2) & (each > 0), each / count, each)
    return each.astype(got.dtype), None


_extreme.defvjp(_extreme_fwd, _extreme_bwd)


defop("segment_reduce", _segment_reduce, args=("data", "index", "valid", "counts"),
      grad_fn="SegmentReduceBackward0", saves=("data", "index", "valid", "counts", "result"),
      no_edge=("index", "valid", "counts"))
