"""Which outputs of a backward op read which of its inputs (data flow in its jaxpr).

NOTE [double-backward edges]
With ``create_graph=True`` a node's backward is recorded as one op (``Op.backward_op``) with
an edge to every input it was given: the forward's saved inputs and the incoming gradient.
torch records its backward formula op by op, so a gradient that does not read an input has
no path to it: ``d(x * a)/dx = grad * a`` never reaches ``x``, and differentiating it with
respect to ``x`` gives None (``allow_unused``), not zeros; ``autograd.functional``'s strict
mode relies on that to tell a constant Jacobian. A backward op's node therefore asks
``input_deps`` which of its inputs each output reads, and gives None to an input that no
output with an incoming gradient reads. The question is about data flow only: an input that
reaches an output only through a comparison (``relu``'s mask) still counts, as torch's formula
keeps it too (its gradient there is zeros, not None).
"""
from __future__ import annotations

import jax
from jax import ShapeDtypeStruct
from jax.extend import core as jax_core

from .._x64 import x64_enter, x64_exit
from .registry import as_arg

_EMPTY = frozenset()
_SUB_JAXPR = ("jaxpr", "call_jaxpr")   # pjit / closed_call: follow the inner program


def aval(shape, dtype):
    """An abstract argument for ``input_deps`` (an input the node keeps only the shape of)."""
    return ShapeDtypeStruct(shape, dtype)


def input_deps(fn, args) -> list:
    """For each positional argument of ``fn(*args)`` (arrays, ``aval``s, Python numbers, None,
    or containers of them), the frozenset of flat output indices whose value reads it."""
    owner, leaves = [], []
    for i, a in enumerate(args):
        for x in jax.tree_util.tree_leaves(a):
            owner.append(i)
            leaves.append(ShapeDtypeStruct(x.shape, x.dtype) if hasattr(x, "shape") else as_arg(x))
    treedef = jax.tree_util.tree_structure(list(args))
    prev = x64_enter()
    try:
        closed = jax.make_jaxpr(lambda *ls: fn(*jax.tree_util.tree_unflatten(treedef, ls)))(*leaves)
    finally:
        x64_exit(prev)
    reads = _flow(closed.jaxpr, [frozenset((i,)) for i in owner])
    deps = [set() for _ in args]
    for j, r in enumerate(reads):
        for i in r:
            deps[i].add(j)
    return [frozenset(d) for d in deps]


def _flow(jaxpr, in_reads) -> list:
    """Per outvar of ``jaxpr``, the union of ``in_reads`` of the invars it is computed from."""
    env = dict(zip(jaxpr.invars, in_reads))

    def read(v):
        return _EMPTY if isinstance(v, jax_core.Literal) else env.get(v, _EMPTY)

    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        sub = next((eqn.params[k] for k in _SUB_JAXPR if k in eqn.params), None)
        if sub is not None and hasattr(sub, "jaxpr") and len(sub.jaxpr.invars) == len(ins):
            outs = _flow(sub.jaxpr, ins)
        else:      # any other higher-order primitive: every output reads every input
            union = frozenset().union(*ins)
            outs = [union] * len(eqn.outvars)
        for v, r in zip(eqn.outvars, outs):
            env[v] = r
    return [read(v) for v in jaxpr.outvars]
