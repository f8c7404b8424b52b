"""Ops derived from other ops at run time, built here so every Op comes from the op layer
(DESIGN 2.1; ``defop`` builds the table's rows, ``Op.backward_op`` an op's backward).

* ``copy_slices_op(chain, op, static, n_others)``: torch's ``CopySlices``, an in-place op
  written through a view chain into the view's base;
* ``view_of_base_op(chain)``: a view regenerated from its base after the base was written
  (torch's ``AsStridedBackward0``);
* ``jax_function_op(name, fn, nargs, n_out)``: a user's pure JAX function as one op
  (``tracegrad.func.jax_function``);
* ``jvp_op(op, static, mask, out_idx)``: the tangents of ``op``'s outputs (forward-mode AD,
  ``autograd.forward_ad``), ``jax.jvp`` of its pure function.

The first two are cached per view-chain *structure* (NOTE [dynamic positions], ``shape.py``):
the chain's positions are trailing Python-int inputs of the op, runtime operands of its forward
and of its backward, so a view at a new position compiles nothing. Both caches are registered
with ``_state`` (``clear_caches()`` empties them; they are rebuilt on demand).
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from .. import _state
from .registry import Op
from .shape import chain_apply_dyn, chain_scatter_dyn, chain_split

_copy_slices_ops: dict = _state.register_cache("_ops.derived._copy_slices_ops", {})
_view_of_base_ops: dict = _state.register_cache("_ops.derived._view_of_base_ops", {})
_jvp_ops: dict = _state.register_cache("_ops.derived._jvp_ops", {})


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


def view_of_base_op(chain, replay=False):
    """``(op, positions)``: the op computing, from a base, the view that ``chain`` selects;
    ``grad_fn`` ``AsStridedBackward0``, nothing saved, the positions (trailing inputs) without
    ``next_functions`` slots. Dispatch records it to regenerate a view's grad_fn after its base
    was written in place. ``replay``: the view was made with torch's view replay on
    (``autograd._force_original_view_tracking(True)``), where torch replays the view ops on the
    base, so the node is named as the last view op's (``ViewBackward0``)."""
    struct, pos = chain_split(chain)
    name = "AsStridedBackward0"
    if replay and struct and struct[-1][0].grad_fn:
        name = struct[-1][0].grad_fn
    key = struct if name == "AsStridedBackward0" else (struct, name)
    op = _view_of_base_ops.get(key)
    if op is None:
        pnames = _position_names(len(pos))

        def fn(b, *p):
            return chain_apply_dyn(struct, b, p)
        op = _view_of_base_ops[key] = Op(name="as_strided_view", fn=fn, args=("self",) + pnames,
                                         grad_fn=name, no_edge=pnames)
    return op, pos


def jax_function_op(name: str, fn, nargs: int, n_out: int, doc=None) -> Op:
    """The op of ``tracegrad.func.jax_function``: ``fn`` (pure JAX, ``nargs`` array inputs named
    ``input0``..., ``n_out`` outputs: a tuple when ``n_out != 1``) with grad_fn ``<name>Backward``.
    Every input is saved: the backward re-runs ``fn``'s VJP from them (DESIGN 2.1). Not cached
    here: each wrapped function keeps its own ops (one per arity and output count)."""
    names = tuple(f"input{i}" for i in range(nargs))
    grad_fn = f"{name}Backward0" if name in _TORCH_NODES else f"{name}Backward"
    return Op(name=name, fn=fn, args=names, grad_fn=grad_fn, saves=names, n_out=n_out, doc=doc)


# the linalg/fft functions tracegrad runs through jax_function whose torch node is one native
# function: torch names that node ``<name>Backward0`` (``LinalgSlogdetBackward0``,
# ``FftR2CBackward0``); composites (matrix_norm, svdvals) and internal helpers keep
# ``<name>Backward``
_TORCH_NODES = frozenset((
    "LinalgInvEx", "LinalgDet", "LinalgSlogdet", "LinalgQr", "LinalgSvd", "LinalgEigh", "LinalgCross",
    "LinalgCholeskyEx", "CholeskySolve", "CholeskyInverse", "LinalgSolveEx", "LinalgLuFactorEx",
    "LuUnpack", "LinalgLuSolve", "LinalgSolveTriangular", "LinalgLstsq", "LinalgEig",
    "LinalgHouseholderProduct", "Geqrf", "Ormqr", "LinalgMatrixExp", "FftR2C", "FftC2C", "FftC2R",
    # torch 2.13 records one native node for these too (linalg.vector_norm, linalg.pinv, pinverse)
    "LinalgVectorNorm", "LinalgPinv"))


def jvp_op(op: Op, static: tuple, mask: tuple, out_idx):
    """The op computing ``op``'s output tangents (forward-mode AD): inputs are ``op``'s own
    inputs followed by one tangent per input flagged in ``mask``; outputs are the tangents of the
    outputs ``out_idx`` lists (``None``: ``op`` has one output). Its ``fn`` is ``jax.jvp`` of
    ``op.fn`` (static arguments bound, unflagged inputs closed over), so the tangents of every
    table op come from JAX, and the op's own backward (``jax.vjp`` of that) makes tangents
    differentiable in reverse mode. Every input is saved, since its VJP needs the primals.

    Cached per ``(op, static, mask, out_idx)``; the jitted program per input shapes is
    ``Op.forward``'s, so a repeated call re-traces nothing."""
    key = (op, static, mask, out_idx)
    j = _jvp_ops.get(key)
    if j is None:
        if len(_jvp_ops) > 4096:    # many distinct static arguments: start afresh
            _jvp_ops.clear()
        fwd = partial(op.fn, **dict(static)) if static else op.fn
        n, pos = len(mask), tuple(i for i, m in enumerate(mask) if m)

        def fn(*a):
            primals, tangents = list(a[:n]), []
            for p, t in zip(pos, a[n:]):
                # torch keeps a tangent of another floating dtype than its primal (a float64
                # tangent of a float32 primal): the derivative is taken in the wider of the two
                dt = jnp.promote_types(primals[p].dtype, t.dtype)
                primals[p] = primals[p].astype(dt)
                tangents.append(t.astype(dt))

            def f(*d):
                args = list(primals)
                for p, v in zip(pos, d):
                    args[p] = v
                return fwd(*args)
            _, out_t = jax.jvp(f, tuple(primals[p] for p in pos), tuple(tangents))
            if out_idx is None:
                return out_t
            picked = tuple(out_t[i] for i in out_idx)
            return picked if len(picked) > 1 else picked[0]
        names = tuple(f"input{i}" for i in range(n + len(pos)))
        stem = op.grad_fn.rpartition("Backward")[0] if op.grad_fn else op.name
        j = _jvp_ops[key] = Op(name=f"{op.name}_jvp", fn=fn, args=names, grad_fn=f"{stem}JvpBackward0",
                               saves=names, n_out=1 if out_idx is None else len(out_idx))
    return j
