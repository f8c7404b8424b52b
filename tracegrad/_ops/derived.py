"""Ops derived from other ops at run time, built here so every Op comes from the op layer
(DESIGN 2.1; ``defop`` builds the table's rows, ``Op.backward_op`` an op's backward).

* ``copy_slices_op(chain, op, static, n_others)``: torch's ``CopySlices``, an in-place op
  written through a view chain into the view's base;
* ``view_of_base_op(chain)``: a view regenerated from its base after the base was written
  (torch's ``AsStridedBackward0``);
* ``jax_function_op(name, fn, nargs, n_out)``: a user's pure JAX function as one op
  (``tracegrad.func.jax_function``).

The first two are cached per view-chain *structure* (NOTE [dynamic positions], ``shape.py``):
the chain's positions are trailing Python-int inputs of the op, runtime operands of its forward
and of its backward, so a view at a new position compiles nothing. Both caches are registered
with ``_state`` (``clear_caches()`` empties them; they are rebuilt on demand).
"""
from __future__ import annotations

from .. import _state
from .registry import Op
from .shape import chain_apply_dyn, chain_scatter_dyn, chain_split

_copy_slices_ops: dict = _state.register_cache("_ops.derived._copy_slices_ops", {})
_view_of_base_ops: dict = _state.register_cache("_ops.derived._view_of_base_ops", {})


def _position_names(k: int) -> tuple:
    return tuple(f"position{i}" for i in range(k))


def copy_slices_op(chain, op: Op, static: tuple, n_others: int):
    """``(CopySlices op, positions)`` for the in-place ``op`` (static arguments ``static``,
    ``n_others`` inputs besides ``self``) applied to the view that ``chain`` (a view chain, from
    the base) selects. The op computes ``base, *others, *positions -> new base``: the view's
    region of base replaced by ``op(view, *others)``, as torch's CopySlices wraps the in-place
    op's node. Call it as ``apply_op(cs, (base, *others, *positions))``."""
    struct, pos = chain_split(chain)
    key = (struct, op, static, n_others)
    cs = _copy_slices_ops.get(key)
    if cs is None:
        kw, k = dict(static), len(pos)

        def fn(base, *rest):
            others, p = rest[:len(rest) - k], rest[len(rest) - k:]
            view = chain_apply_dyn(struct, base, p)
            return chain_scatter_dyn(struct, base, op.fn(view, *others, **kw), p)
        pnames = _position_names(k)
        names = ("self",) + op.args[1:1 + n_others]
        no_edge = tuple(op.args[i] for i in op.no_edge_pos if i <= n_others) + pnames
        # save what the wrapped op saves (torch's CopySlices keeps the op's node): the view and
        # scatter around it are linear, so only the op's own backward needs primal values; the
        # base stands for the op's input and for its result (recomputed from the base)
        wanted = set(op.saves)
        saves = tuple(n for n in names if n in wanted or (n == "self" and "result" in wanted))
        cs = _copy_slices_ops[key] = Op(name="copy_slices", fn=fn, args=names + pnames, grad_fn="CopySlices",
                                        saves=saves, no_edge=no_edge)
    return cs, pos


def view_of_base_op(chain):
    """``(op, positions)``: the op computing, from a base, the view that ``chain`` selects;
    ``grad_fn`` ``AsStridedBackward0``, nothing saved, the positions (trailing inputs) without
    ``next_functions`` slots. Dispatch records it to regenerate a view's grad_fn after its base
    was written in place."""
    struct, pos = chain_split(chain)
    op = _view_of_base_ops.get(struct)
    if op is None:
        pnames = _position_names(len(pos))

        def fn(b, *p):
            return chain_apply_dyn(struct, b, p)
        op = _view_of_base_ops[struct] = Op(name="as_strided_view", fn=fn, args=("self",) + pnames,
                                            grad_fn="AsStridedBackward0", no_edge=pnames)
    return op, pos


def jax_function_op(name: str, fn, nargs: int, n_out: int, doc=None) -> Op:
    """The op of ``tracegrad.func.jax_function``: ``fn`` (pure JAX, ``nargs`` array inputs named
    ``input0``..., ``n_out`` outputs: a tuple when ``n_out != 1``) with grad_fn ``<name>Backward``.
    Every input is saved: the backward re-runs ``fn``'s VJP from them (DESIGN 2.1). Not cached
    here: each wrapped function keeps its own ops (one per arity and output count)."""
    names = tuple(f"input{i}" for i in range(nargs))
    return Op(name=name, fn=fn, args=names, grad_fn=f"{name}Backward", saves=names, n_out=n_out, doc=doc)
