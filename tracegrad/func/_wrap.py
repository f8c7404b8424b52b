"""The seam between tracegrad Tensors and JAX values for ``tracegrad.func`` (DESIGN 2, L6).

A Python function over Tensors becomes a pure JAX function by wrapping each incoming
``jax.Array`` (concrete or a tracer) into a Tensor with ``Tensor._make`` and unwrapping the
results with ``._value``: tracegrad's ops call the raw JAX function when they see tracers, so
JAX's transforms trace straight through tracegrad code. Trees are JAX pytrees (tuples, lists,
dicts) whose leaves are Tensors on the tracegrad side and arrays on the JAX side.
"""
from __future__ import annotations

import jax

from .._tensor import Tensor
from .._x64 import x64_enter, x64_exit


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def to_arrays(tree):
    """Every Tensor leaf of ``tree`` as its ``jax.Array`` (no copy); other leaves unchanged."""
    return jax.tree_util.tree_map(lambda t: t._value if isinstance(t, Tensor) else t, tree, is_leaf=is_tensor)


def to_tensors(tree):
    """Every array leaf of ``tree`` (``jax.Array`` or tracer) as a Tensor that holds it."""
    return jax.tree_util.tree_map(lambda a: Tensor._make(a) if isinstance(a, (jax.Array, jax.core.Tracer)) else a,
                                  tree)


def tensor_leaves(tree):
    return jax.tree_util.tree_leaves(tree, is_leaf=is_tensor)


def check_tensor_tree(tree, api):
    """The ``api``'s differentiated inputs must all be Tensors (torch.func's rule)."""
    leaves = tensor_leaves(tree)
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise ValueError(f"{api}: Thing passed to transform API must be Tensor, got {type(leaf)}")
    return leaves


def check_outputs(tree, api, what="outputs"):
    """The function's ``what`` must be Tensors (or trees of them); RuntimeError otherwise."""
    for leaf in tensor_leaves(tree):
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"{api}: Expected f(*args) to return only Tensors in its {what}, got {type(leaf)}")


def pure(fn, args, positions):
    """``fn`` as a JAX function of the arrays of ``args[p]`` for ``p`` in ``positions``; the
    other arguments are closed over unchanged. Its results are trees of arrays."""
    positions = tuple(positions)

    def jax_fn(*arrays):
        call = list(args)
        for p, a in zip(positions, arrays):
            call[p] = to_tensors(a)
        return to_arrays(fn(*call))
    return jax_fn


def run_jax(fn, *args):
    """``fn(*args)`` with JAX's x64 mode on (tracegrad's float64/int64, DESIGN 2.7) when the
    arguments are concrete; inside someone else's trace (a tracer among them) the trace's own
    mode stays, as the x64 scope must never flip mid-trace."""
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(args)):
        return fn(*args)
    prev = x64_enter()
    try:
        return fn(*args)
    finally:
        x64_exit(prev)
