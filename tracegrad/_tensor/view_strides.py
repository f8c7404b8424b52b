"""A view chain's layout (shape, strides, storage offset) by torch's formulas, step by step.

NOTE [strides by formula]: a tensor's strides are what its view chain makes of a row-major
storage (``_tensor/tensor.py``). Reading them off the element positions (the chain replayed
over an iota as large as the storage) is exact for any chain, but it is O(numel) host work:
seconds for a ``weight.t()`` of a large model, a 4 TB meta tensor's view not at all. The
common view steps -- slicing and indexing with ints/slices/None/Ellipsis, select, narrow,
split/chunk/unbind, transpose/permute/t, unsqueeze/squeeze, expand, view/reshape, diagonal,
unfold, as_strided -- change a layout by a formula, the one torch's own view functions apply
to their input's sizes and strides (e.g. ``unsqueeze`` gives the new dim the stride
``size * stride`` of the dim it precedes; ``view`` splits and merges strides as ATen's
``computeStride``). ``chain_layout`` applies those, in O(ndim) per step; a chain with any
other step (the complex part views, ``view(dtype)``) answers None, and the caller reads the
positions as before. An empty view gets the same formulas (its strides and offset are torch's).
"""
from __future__ import annotations

from .._ops.registry import OPS


def _contiguous(shape) -> list:
    out, nxt = [0] * len(shape), 1
    for k in range(len(shape) - 1, -1, -1):
        out[k] = nxt
        nxt *= shape[k] or 1
    return out


def _select(shape, strides, off, dim, index):
    n = shape[dim]
    index = index + n if index < 0 else index
    return shape[:dim] + shape[dim + 1:], strides[:dim] + strides[dim + 1:], off + index * strides[dim]


def _slice(shape, strides, off, dim, start, stop, step):
    r = range(shape[dim])[slice(start, stop, step)]
    shape, strides = list(shape), list(strides)
    off += r.start * strides[dim]   # an empty slice too moves the offset to its clamped start, as torch
    shape[dim], strides[dim] = len(r), strides[dim] * r.step
    return shape, strides, off


def _unsqueeze(shape, strides, dim):
    s = shape[dim] * strides[dim] if dim < len(shape) else 1
    return shape[:dim] + [1] + shape[dim:], strides[:dim] + [s] + strides[dim:]


def _key(shape, strides, off, key):
    """Basic indexing by a key of markers (``_ops/indexing.py``), as torch's ``applySlicing``:
    left to right, an int selects, a slice slices, None unsqueezes, Ellipsis skips the dims
    the other int and slice markers leave over."""
    span = len(shape) - sum(1 for m in key if m[0] in "is")
    shape, strides, d = list(shape), list(strides), 0
    for m in key:
        tag = m[0]
        if tag == "i":
            shape, strides, off = _select(shape, strides, off, d, m[1])
        elif tag == "s":
            shape, strides, off = _slice(shape, strides, off, d, m[1], m[2], m[3])
            d += 1
        elif tag == "n":
            shape, strides = _unsqueeze(shape, strides, d)
            d += 1
        elif tag == "e":
            d += span
        else:
            return None
    return shape, strides, off


def _view(oldshape, oldstride, newshape):
    """ATen's ``computeStride``: the strides of ``newshape`` over the same elements, or None
    when the layout cannot be described so (``view`` would raise; ``reshape`` copies)."""
    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base = oldstride[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1
                             and oldstride[tensor_d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base = oldstride[tensor_d - 1]
                tensor_numel = view_numel = 1
    return newstride if view_d == -1 else None


def view_strides(shape, strides, newshape):
    """``computeStride`` for a non-empty layout of at least one dim (None otherwise too)."""
    if not shape or not all(shape):
        return None
    return _view(list(shape), list(strides), list(newshape))


def _expand(shape, strides, size):
    n = len(size)
    out_shape, out_strides = [0] * n, [0] * n
    lead = n - len(shape)
    for i in range(n - 1, -1, -1):
        d = i - lead
        if d >= 0:
            s, st = shape[d], strides[d]
        else:
            s, st = 1, (out_shape[i + 1] * out_strides[i + 1] if i + 1 < n else 1)
        target = size[i]
        if target != -1 and target != s:
            s, st = target, 0
        out_shape[i], out_strides[i] = s, st
    return out_shape, out_strides


def _step(op, st, idx, shape, strides, off):
    """One chain step applied to a layout; None when this step has no formula here."""
    name = op.name
    nd = len(shape)
    if name in ("alias", "conj"):
        return shape, strides, off
    if name in ("index_slice", "index_int", "index_none", "index_alias"):
        return _key(shape, strides, off, st["key"])
    if name == "slice":
        return _slice(shape, strides, off, st["dim"], st["start"], st["end"], st["step"])
    if name == "select":
        return _select(shape, strides, off, st["dim"], st["index"])
    if name == "unbind":
        return _select(shape, strides, off, st["dim"] % nd, idx)
    if name in ("split", "split_with_sizes"):
        dim, sizes = st["dim"] % nd, st["sizes"]
        shape, strides = list(shape), list(strides)
        off += sum(sizes[:idx]) * strides[dim]
        shape[dim] = sizes[idx]
        return shape, strides, off
    if name == "t":
        if nd < 2:
            return shape, strides, off
        return shape[::-1], strides[::-1], off
    if name == "transpose":
        if nd == 0:    # a 0-d transpose (dims 0/-1) moves nothing
            return shape, strides, off
        a, b = st["dim0"] % nd, st["dim1"] % nd
        shape, strides = list(shape), list(strides)
        shape[a], shape[b], strides[a], strides[b] = shape[b], shape[a], strides[b], strides[a]
        return shape, strides, off
    if name == "permute":
        dims = [d % nd for d in st["dims"]]
        return [shape[d] for d in dims], [strides[d] for d in dims], off
    if name == "unsqueeze":
        return (*_unsqueeze(shape, strides, st["dim"] % (nd + 1)), off)
    if name in ("squeeze", "squeeze_dim", "squeeze_dims"):
        dims = st["dim"]
        dims = range(nd) if dims is None else [dims] if isinstance(dims, int) else dims
        drop = {d % nd for d in dims if shape[d % nd] == 1} if nd else set()
        keep = [k for k in range(nd) if k not in drop]
        return [shape[k] for k in keep], [strides[k] for k in keep], off
    if name == "expand":
        if not nd:
            return None
        return (*_expand(shape, strides, st["size"]), off)
    if name == "view":
        new = view_strides(shape, strides, st["shape"])
        return None if new is None else (list(st["shape"]), new, off)
    if name == "diagonal":
        o, d1, d2 = st["offset"], st["dim1"] % nd, st["dim2"] % nd
        n = max(min(shape[d1] - max(-o, 0), shape[d2] - max(o, 0)), 0)
        if n == 0:
            return None
        off += o * strides[d2] if o >= 0 else -o * strides[d1]
        keep = [k for k in range(nd) if k not in (d1, d2)]
        return ([shape[k] for k in keep] + [n], [strides[k] for k in keep] + [strides[d1] + strides[d2]], off)
    if name == "unfold":
        if not nd:
            return None
        d, size, step = st["dimension"] % nd, st["size"], st["step"]
        shape, strides = list(shape), list(strides)
        shape.append(size)
        strides.append(strides[d])
        shape[d] = (shape[d] - size) // step + 1
        strides[d] *= step
        return shape, strides, off
    if name == "as_strided":
        return list(st["size"]), list(st["stride"]), st["offset"]
    return None


_VIEW_NAMES = frozenset(["alias", "conj", "index_slice", "index_int", "index_none", "index_alias", "slice",
                         "select", "unbind", "split", "split_with_sizes", "t", "transpose", "permute",
                         "unsqueeze", "squeeze", "squeeze_dim", "squeeze_dims", "expand", "view",
                         "diagonal", "unfold", "as_strided"])
assert all(n in OPS for n in _VIEW_NAMES)


def chain_layout(chain, root_shape):
    """``(shape, strides, storage offset)`` of the view ``chain`` over a row-major storage of
    ``root_shape``, by torch's per-op formulas (NOTE [strides by formula]); None when a step
    has no formula here (read the element positions instead)."""
    shape, strides, off = list(root_shape), _contiguous(root_shape), 0
    for op, static, idx in chain:
        if op.name not in _VIEW_NAMES:
            return None
        res = _step(op, dict(static), idx, shape, strides, off)
        if res is None:
            return None
        shape, strides, off = res
        shape, strides = list(shape), list(strides)
    return tuple(shape), tuple(strides), off


def is_contiguous(shape, strides) -> bool:
    """torch's ``is_contiguous`` of a layout: row-major strides, size-1 dims ignored; an empty
    layout is contiguous whatever its strides."""
    if not all(shape):
        return True
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True
