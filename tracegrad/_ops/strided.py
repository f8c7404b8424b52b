"""View ops that address storage directly: ``as_strided`` (elements picked by size, stride and
storage offset) and ``view(dtype)`` (the same bytes read as another dtype).

NOTE [as_strided views]
torch's ``as_strided(size, stride, offset)`` reads storage positions ``offset + sum(i_k *
stride_k)``. A tracegrad view is a chain of pure functions from its storage's array, so the op's
step maps those positions back onto its *input's* elements: the input's own layout (its strides
and offset, static arguments) says which input element sits at each storage position, and the
step is a gather of the input's flat values. Its backward is then ``jax.vjp`` of a gather (a
scatter-add), torch's as_strided gradient for inputs whose elements do not overlap. Positions
the input does not cover cannot be reached this way; the API layer (``_api/strided.py``) then
applies the op to the whole storage instead.
"""
from __future__ import annotations

from functools import lru_cache

import jax.numpy as jnp
import numpy as np
from jax import lax

from .registry import OPS, defop
from .shape import POSITIONS, UNVIEW


def _positions(shape, stride, offset) -> np.ndarray:
    """Storage positions of a strided layout, an int64 array of ``shape``."""
    pos = np.full(shape, offset, dtype=np.int64)
    for k, (n, s) in enumerate(zip(shape, stride)):
        pos = pos + (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - k - 1))
    return pos


@lru_cache(maxsize=1024)
def as_strided_index(in_shape, in_stride, in_offset, size, stride, offset):
    """Flat indices into the input (layout ``in_shape``/``in_stride``/``in_offset``) of the
    elements ``as_strided(size, stride, offset)`` reads, or None when one of them lies outside
    the input's elements."""
    have = _positions(in_shape, in_stride, in_offset).reshape(-1)
    want = _positions(size, stride, offset).reshape(-1)
    if want.size == 0:
        return np.zeros(size, dtype=np.int64)
    order = np.argsort(have, kind="stable")
    sorted_have = have[order]
    at = np.searchsorted(sorted_have, want)
    if have.size == 0 or np.any(at >= have.size) or np.any(sorted_have[np.minimum(at, have.size - 1)] != want):
        return None
    return order[at].reshape(size)


def _as_strided(x, size, stride, offset, in_stride, in_offset):
    idx = as_strided_index(tuple(x.shape), in_stride, in_offset, size, stride, offset)
    return jnp.reshape(x, (-1,))[idx]


# view="overlap": a stride-0 dim aliases elements (writes check the written tensor itself)
defop("as_strided", _as_strided, grad_fn="AsStridedBackward0", view="overlap")


# ---- view(dtype) -----------------------------------------------------------------------------
def _bits(x):
    """``x`` as an array of a real, bitcastable dtype: complex becomes (real, imag) pairs along a
    new last dim merged into the last one; bool becomes uint8."""
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        pairs = jnp.stack([jnp.real(x), jnp.imag(x)], axis=-1)
        return pairs.reshape(x.shape[:-1] + (2 * x.shape[-1],)) if x.ndim else pairs
    if x.dtype == jnp.bool_:
        return x.astype(jnp.uint8)
    return x


def _real_of(dtype):
    """The dtype ``_bits`` works in for ``dtype`` (complex -> its float of half the size)."""
    d = np.dtype(dtype)
    if d.kind == "c":
        return np.dtype(f"float{d.itemsize * 4}")
    return np.dtype(np.uint8) if d == np.bool_ else d


def view_dtype_shape(shape, src, dst):
    """The shape ``view(dst)`` gives a tensor of ``shape`` and dtype ``src``: the last dim scales
    by the ratio of the element sizes (a 0-dim tensor only views a dtype of its size)."""
    a, b = np.dtype(src).itemsize, np.dtype(dst).itemsize
    if a == b:
        return tuple(shape)
    return tuple(shape[:-1]) + (shape[-1] * a // b,)


def _view_dtype(x, dtype):
    out_shape = view_dtype_shape(x.shape, x.dtype, dtype)
    bits, real = _bits(x), _real_of(dtype)
    a, b = bits.dtype.itemsize, real.itemsize
    if a > b:
        y = lax.bitcast_convert_type(bits, real)                 # (..., m, a // b)
    elif a < b:
        r = b // a
        y = lax.bitcast_convert_type(bits.reshape(bits.shape[:-1] + (bits.shape[-1] // r, r)), real)
    else:
        y = lax.bitcast_convert_type(bits, real)
    d = np.dtype(dtype)
    if d.kind == "c":
        y = y.reshape(out_shape + (2,))
        return lax.complex(y[..., 0], y[..., 1])
    if d == np.bool_:
        return y.reshape(out_shape) != 0
    return y.reshape(out_shape)


def _view_dtype_positions(p, dtype, src):
    """Storage positions of ``view(dtype)``'s elements, in ``dtype`` units, from the input's
    positions ``p`` (in ``src`` units)."""
    a, b = np.dtype(src).itemsize, np.dtype(dtype).itemsize
    if a == b:
        return p
    if a > b:
        r = a // b
        q = p[..., None] * r + jnp.arange(r, dtype=p.dtype)
        return q.reshape(p.shape[:-1] + (p.shape[-1] * r,))
    r = b // a
    return p[..., ::r] // r


# not differentiable (torch: "view(dtype) does not support backward"); writes through it are
# read back into the input's dtype (NOTE [complex part views], shape.py)
_VIEW_DTYPE = defop("view_dtype", lambda x, dtype, src: _view_dtype(x, dtype), view=True)
UNVIEW[_VIEW_DTYPE] = lambda old, new: _view_dtype(new, old.dtype)
POSITIONS[_VIEW_DTYPE] = _view_dtype_positions


# ---- unfold ----------------------------------------------------------------------------------
def _unfold(x, dimension, size, step):
    if x.ndim == 0:     # torch: a 0-d tensor unfolds to shape (size,), size 0 or 1
        return jnp.reshape(x, (1,))[:size]
    n = (x.shape[dimension] - size) // step + 1
    idx = np.arange(n)[:, None] * step + np.arange(size)
    win = jnp.take(x, idx.reshape(-1), axis=dimension)
    win = win.reshape(x.shape[:dimension] + (n, size) + x.shape[dimension + 1:])
    return jnp.moveaxis(win, dimension + 1, -1)


# a gather of x: windows may share elements (step < size), hence "overlap"
defop("unfold", _unfold, grad_fn="UnfoldBackward0", view="overlap")


# ---- *_copy ops --------------------------------------------------------------------------------
# torch's ``<view>_copy`` functions compute a view op's values into a new tensor; their nodes
# are the view's name with ``_copy`` (``ViewBackward0_copy``). One copy op per view op those
# functions reach (``_api/strided.py``), the same pure function without the aliasing.
COPY_OF: dict = {}
for _name in ("alias", "view", "diagonal", "split", "split_with_sizes", "select", "slice", "transpose", "permute", "t",
              "unsqueeze", "squeeze", "squeeze_dim", "expand", "unbind", "as_strided", "unfold", "view_as_real",
              "view_as_complex"):
    _op = OPS[_name]
    COPY_OF[_op] = defop(_name + "_copy", _op.fn, args=_op.args, grad_fn=_op.grad_fn + "_copy", n_out=_op.n_out)
# torch's narrow_copy has a node of its own name
NARROW_COPY = defop("narrow_copy", OPS["slice"].fn, grad_fn="NarrowCopyBackward0")
