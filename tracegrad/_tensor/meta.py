"""torch's 'meta' device: tensors with a shape and a dtype and no data (NOTE [meta tensors]).

NOTE [meta tensors]: a meta tensor's storage holds a ``jax.ShapeDtypeStruct`` in place of its
``jax.Array`` (``abstract``), so it takes no memory whatever its size: ``zeros(10**6, 10**6,
device='meta')`` is 4 TB of float32 that is never allocated. Everything that reads only shapes
and dtypes works unchanged (``shape``, ``dtype``, ``numel``, ``nbytes``, views: their chain runs
under ``jax.eval_shape``); ``device`` is ``device('meta')`` and ``data_ptr()`` is 0, as torch's.
Ops on meta tensors run through shape inference only: once a meta tensor exists
(``storage.FOLLOW_NEEDED``), ``apply_op``/``apply_inplace``/plain backward call ``run``, which
evaluates the op's jitted forward under ``jax.eval_shape`` when an input is abstract; its
outputs are abstract, hence meta, and the autograd graph records as usual (``backward()`` gives
meta gradients). An in-place op on a meta tensor only bumps its version (``Tensor._write``).
Reading the data (``item``, ``tolist``, ``numpy``, a copy to another device) raises torch's
errors (``check_not_meta``); a meta tensor beside a CPU tensor that is not a 0-d scalar is
torch's RuntimeError (``follow_meta``). Made by factories with ``device='meta'`` (or inside
``with device('meta')``), ``.to('meta')`` and ``Module.to('meta')``; ``Module.to_empty(device=...)``
and ``load_state_dict(..., assign=True)`` give real tensors back.
The strides of a view of a meta tensor follow from torch's per-op formulas (NOTE [strides by
formula] in ``view_strides.py``), whatever its size. Differs from torch: the few view steps
without a formula there (complex part views, ``view(dtype)``) read them off the storage's element
positions, an index array as large as the storage (O(numel) host memory).
"""
from __future__ import annotations

import jax

from .._ops.errors import op_error
from .._ops.registry import as_arg
from .._x64 import x64_enter, x64_exit
from .storage import FOLLOW_NEEDED

ShapeDtypeStruct = jax.ShapeDtypeStruct


def abstract(shape, dtype) -> ShapeDtypeStruct:
    """The data-free stand-in a meta storage holds for an array of ``shape`` and ``dtype``;
    from now on ops check their inputs for it (``FOLLOW_NEEDED``)."""
    FOLLOW_NEEDED[0] = True
    return ShapeDtypeStruct(tuple(shape), dtype)


def is_meta(t) -> bool:
    """Whether tensor ``t`` is on the 'meta' device."""
    return type(t._st.array) is ShapeDtypeStruct


def make_meta(t):
    """Make ``t`` (a fresh tensor owning its storage) a meta tensor of its shape and dtype,
    dropping its data; returns it."""
    st = t._st
    st.array = abstract(st.array.shape, st.array.dtype)
    t._vcache = None
    return t


def run(op, arrays, static):
    """``op.run(arrays, static)``, or when an input is abstract (a meta tensor's), the
    forward's result shapes and dtypes by ``jax.eval_shape``: nothing is computed or allocated.
    Shape errors are the op's own (torch's classes, NOTE [errors at the dispatch boundary])."""
    for a in arrays:
        if type(a) is ShapeDtypeStruct:
            break
    else:
        return op.run(arrays, static)
    prev = x64_enter()   # the same dtypes as the op's eager run (_x64.py)
    try:
        return jax.eval_shape(lambda *a: op._inline(a, static), *map(as_arg, arrays))
    except Exception as e:
        raise op_error(op, arrays, static, e) from None
    finally:
        x64_exit(prev)


def run_inplace(op, arrays, static):
    """``run`` for an in-place op writing into ``arrays[0]``. A meta tensor may be written from
    any device (its shape only changes nothing), but a meta operand has no data to write into a
    tensor that has some: NotImplementedError (torch's for ``copy_``; torch's other in-place ops
    leave such a tensor unchanged without a word, a silent no-op tracegrad does not copy)."""
    out = run(op, arrays, static)
    if type(out) is ShapeDtypeStruct and type(arrays[0]) is not ShapeDtypeStruct:
        raise NotImplementedError("Cannot copy out of meta tensor; no data! (an in-place op on a tensor with data "
                                  "got a meta operand: move that operand off 'meta' first)")
    return out


def follow_meta(args, names, api):
    """torch's RuntimeError for a meta input beside a CPU tensor that is not a 0-d scalar or an
    index (an ``index``/``indices`` argument: torch's indexing kernels take CPU indices). The
    op's outputs are meta already: ``run`` gave them abstract values. ``args``: the op's
    arguments, ``names``: their names."""
    tensors = [(a, n) for a, n in zip(args, names) if hasattr(a, "_st")]
    if not any(type(a._st.array) is ShapeDtypeStruct for a, _ in tensors):
        return
    for a, name in tensors:
        if a.ndim and type(a._st.array) is not ShapeDtypeStruct and not name.startswith("ind"):
            raise RuntimeError(f"Tensor on device {a.device} is not on the expected device meta! "
                               f"({api}: move it with .to('meta'))")


def check_not_meta(t, what):
    """torch's error for reading the data of a meta tensor (``what``: the API)."""
    if type(t._st.array) is ShapeDtypeStruct:
        if what in ("item()", "bool()"):
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        if what.startswith("numpy"):
            raise TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
                            "host memory first.")
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
