"""A user's ``autograd.Function`` inside a compiled forward differentiated outside (DESIGN 2.4).

A compiled function without a backward inside (``tracegrad.compile(model)``, the loss's
``backward()`` called after it) is traced under ``jax.vjp``; its results get one node whose
backward is that VJP. JAX would differentiate the Function's ``forward`` and never call its
``backward``: silently wrong for a deliberately non-mathematical backward (straight-through
estimator, gradient reversal, clamped gradient). So the call becomes a ``jax.custom_vjp``:

- its primal (fwd) runs the Function's ``forward`` (and ``setup_context``) once, on stand-in
  Tensors of the traced arguments, with a fresh ctx;
- the residuals are the Tensors ``backward`` reads (``save_for_backward``'s and Tensor ctx
  attributes); every other ctx attribute is a Python value kept as it was in the trace;
- bwd (traced when the region's backward program is built) rebuilds a ctx of the Function's
  node class with those residuals and runs ``BackwardCFunction.apply``: the user's backward,
  with torch's checks, casts and reductions of what it returns.

The tape still records the Function's node (with the ctx attributes forward set, Tensors mapped
back onto the call's arguments and results), so the region sees which inputs the results reach
and which tensors were saved (version checks) exactly as for any other op.

What cannot be kept exactly stays a graph break, with the reason (``compiler.stats()``):
``ctx.mark_dirty`` (an in-place write through the Function), a backward whose code has Python
side effects or reads values (``print``, ``.item()``, a ``global``/``nonlocal`` write, an
attribute set on a Python object it or a helper reaches: it would run once, when the backward
program is traced), a forward that reads a tensor requiring grad
which is not an argument (JAX's custom_vjp cannot close over a value it differentiates), an
input returned as-is with ``setup_context``, a backward writing in place while ctx keeps an
argument or output (the write would reach only the residual's copy), and a Function whose backward was differentiated
again (``create_graph=True``) on an earlier call -- a compiled region's backward cannot be,
(``autograd.function.DOUBLE_DIFFERENTIATED``; the compile's first, eager call usually shows it).
A backward that still reaches Python output at run time raises (never prints once silently).
"""
from __future__ import annotations

import contextlib
import dis
import sys
import types

import jax
import jax.numpy as jnp

from .. import _state
from .._tensor.tensor import Tensor
from ..autograd import grad_mode
from ..autograd.function import DOUBLE_DIFFERENTIATED, Function
from .capture import _AD_TRACERS, GraphBreak, StreamGuard, outer_ad_traces
from .pystate import attribute_writes

# ctx attributes that belong to the node or to the call, not to what backward reads as residuals
_OWN = ("to_save", "saved_for_forward", "dirty_tensors", "non_differentiable", "needs_input_grad")

# names whose use in a backward means Python side effects or a value read on the host: the
# program's backward is traced once, so they would happen once (or fail on a traced value).
# Not ``warn``: a warning the trace gives is given again by every run (NOTE [warnings in a
# trace] in warned.py, rule 6)
_EFFECT_NAMES = {"print": "print()", "item": ".item()", "tolist": ".tolist()", "numpy": ".numpy()",
                 "input": "input()", "open": "open()", "append": "a list append", "extend": "a list extend",
                 "write": "a write to a file or stream", "info": "a logging call",
                 "debug": "a logging call", "warning": "a logging call", "log": "a logging call",
                 "__bool__": "a tensor's truth value", "__float__": "float() of a tensor",
                 "__int__": "int() of a tensor"}
_STORES = {"STORE_GLOBAL": "a global variable", "STORE_DEREF": "a nonlocal variable",
           "DELETE_GLOBAL": "a global variable"}


def _user_backward(cls):
    bwd = cls.backward if cls.backward is not Function.backward else cls.vjp
    return getattr(bwd, "__wrapped__", bwd)     # once_differentiable's wrapper -> the user's


def _codes(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


def backward_effect(cls):
    """Why ``cls``'s backward cannot be traced once for every call (a Python side effect or a
    value read its code names), or None."""
    fn = _user_backward(cls)
    code = getattr(fn, "__code__", None)
    if code is None:
        return f"its backward {fn!r} is not Python code tracegrad can inspect"
    for c in _codes(code):
        for name in c.co_names:
            if name in _EFFECT_NAMES:
                return f"its backward uses {_EFFECT_NAMES[name]} ('{name}')"
        # a variable the backward assigns in an enclosing scope (a counter): a STORE_DEREF of
        # the backward's own cell variables (a closure it makes) stays inside it
        own = set(c.co_cellvars)
        for ins in dis.get_instructions(c):
            what = _STORES.get(ins.opname)
            if what is not None and not (ins.opname == "STORE_DEREF" and ins.argval in own):
                return f"its backward assigns {what} ('{ins.argval}')"
    # an attribute of a Python object it reaches (``state.enabled = True`` there or in a context
    # manager it enters; torch's test_non_nullified_side_effect_in_backward_fails)
    place = attribute_writes(fn)
    if place is not None:
        return f"its backward sets the attribute '{place}'"
    return None


def inplace_in_backward(cls):
    """The first in-place Tensor method (``mul_``, ``copy_``, ...) ``cls``'s backward code names,
    or None."""
    code = getattr(_user_backward(cls), "__code__", None)
    for c in (_codes(code) if code is not None else ()):
        for name in c.co_names:
            if name.endswith("_") and not name.startswith("_") and callable(getattr(Tensor, name, None)):
                return name
    return None


def _keeps_call_tensor(c, inner, outs):
    """Whether ctx ``c`` keeps (saved or as an attribute) one of the call's argument stand-ins
    ``inner`` or its outputs ``outs``: Tensors the caller also holds."""
    attrs = {k: v for k, v in vars(c).items() if not k.startswith("_") and k not in _OWN}
    kept = {id(t) for t in jax.tree_util.tree_leaves((tuple(c.to_save), attrs), is_leaf=_is_leaf)
            if isinstance(t, Tensor)}
    return any(isinstance(t, Tensor) and id(t) in kept for t in (*inner, *outs))


def rule(cap, cls):
    """What ``Function.apply`` runs instead of calling forward when the call is recorded in a
    trace JAX differentiates (``cap.vjp``): ``run`` below, after the checks that make the call a
    graph break (raised here, before forward runs)."""
    if cls in DOUBLE_DIFFERENTIATED:
        raise GraphBreak(f"the custom autograd.Function {cls.__name__} runs inside a compiled function whose "
                         "results are differentiated outside it, and its backward was differentiated again "
                         "(create_graph=True) on an earlier call: the compiled region's backward cannot be")
    why = backward_effect(cls)
    if why is not None:
        raise GraphBreak(f"the custom autograd.Function {cls.__name__} runs inside a compiled function whose "
                         f"results are differentiated outside it, and {why}: the backward program is traced "
                         "once, so that would not happen on every backward")
    return run


@contextlib.contextmanager
def _guard_streams():
    """While the backward program traces the Function's backward: output it writes (a print
    from a helper the code scan did not see) raises instead of coming out once. Warnings pass
    (eager's default filter shows one per place too: ``ctx.saved_variables``'s deprecation)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = StreamGuard(out, "stdout"), StreamGuard(err, "stderr")
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def _is_leaf(x):
    return x is None or isinstance(x, Tensor)


def ctx_residuals(ctx, own=_OWN, drop_unflattenable=False):
    """The Tensors a custom Function's backward reads from ``ctx`` (``save_for_backward``'s and
    those stored as ctx attributes, also inside lists, tuples and dicts; attributes named in
    ``own`` belong to the node, not the user) as ``(arrays, layout)`` for ``ctx_restore``.
    Attributes JAX cannot flatten (a dict with unsortable keys) raise TypeError/ValueError, or
    with ``drop_unflattenable`` stay on the ctx as they are (their Tensors closed over)."""
    attrs = {k: v for k, v in vars(ctx).items() if not k.startswith("_") and k not in own}
    try:
        leaves, treedef = jax.tree_util.tree_flatten((tuple(ctx.to_save), attrs), is_leaf=_is_leaf)
    except (TypeError, ValueError):
        if not drop_unflattenable:
            raise
        leaves, treedef = jax.tree_util.tree_flatten((tuple(ctx.to_save), {}), is_leaf=_is_leaf)
    arrays = tuple(leaf._value for leaf in leaves if isinstance(leaf, Tensor))
    return arrays, (treedef, [None if isinstance(leaf, Tensor) else leaf for leaf in leaves],
                    [isinstance(leaf, Tensor) for leaf in leaves])


def ctx_restore(ctx, arrays, layout):
    """``ctx`` with the residual ``arrays`` (new Tensors) back in the places ``ctx_residuals``
    took them from."""
    treedef, kept, is_tensor = layout
    it = iter(arrays)
    leaves = [Tensor._make(next(it)) if t else leaf for leaf, t in zip(kept, is_tensor)]
    saved, attrs = jax.tree_util.tree_unflatten(treedef, leaves)
    ctx.to_save, ctx._saved = tuple(saved), None
    for k, v in attrs.items():
        setattr(ctx, k, v)


def _residuals(ctx):
    try:
        return ctx_residuals(ctx)
    except (TypeError, ValueError):
        raise GraphBreak(f"the custom autograd.Function {type(ctx).__name__[:-8]} keeps ctx attributes "
                         "tracegrad cannot follow into its backward (a dict with unsortable keys)") from None


def _differentiated(arrays) -> bool:
    """Whether JAX differentiates through one of ``arrays`` (else it never asks for a VJP)."""
    return any(isinstance(a, _AD_TRACERS) for a in arrays)


def run(cls, ctx, args, kwargs, forward):
    """``forward(cls, c, args, kwargs)`` (the Function's forward and setup_context on ctx ``c``)
    as a ``jax.custom_vjp`` whose backward is the Function's; returns forward's output holding
    the custom_vjp's results, with ``ctx`` set up as forward set its own (Tensors mapped onto
    ``args`` and the returned output)."""
    pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    arrays = tuple(args[i]._value for i in pos)
    if not _differentiated(arrays):
        # JAX takes no derivative through this call (no traced input reaches the region's
        # differentiable inputs): nothing for backward to do in the program
        return forward(cls, ctx, args, kwargs)
    new_style = cls.setup_context is not Function.setup_context
    node_cls = type(ctx)
    # what JAX's functions read: ``live`` (the call's Tensors, ctx) is emptied once the call is
    # recorded -- the region's pullback keeps bwd, which must not keep the trace's Tensors (an
    # argument's stand-in kept alive is a graph break); ``meta`` holds Python values only
    live = {"args": args, "ctx": ctx}
    last, meta = {}, {}
    dtypes = tuple(a.dtype for a in arrays)
    outer = outer_ad_traces(arrays)     # NOTE [transforms inside a custom Function's forward]

    def call(xs):
        args, ctx = live["args"], live["ctx"]
        c = node_cls()
        c.needs_input_grad = ctx.needs_input_grad
        before = dict(vars(c))
        inner = list(args)
        for i, x in zip(pos, xs):
            inner[i] = Tensor._make(x, requires_grad=args[i]._rg)
        cap = _state.CAPTURE[0]
        prev = cap.function_forward if cap is not None else None
        if cap is not None:
            cap.function_forward = (cls.__name__, outer)
        try:
            out = forward(cls, c, tuple(inner), kwargs)
        finally:
            if cap is not None:
                cap.function_forward = prev
        if c.dirty_tensors:
            raise GraphBreak(f"the custom autograd.Function {cls.__name__} marks an input dirty (ctx.mark_dirty) "
                             "inside a compiled function whose results are differentiated outside it")
        outs = out if isinstance(out, tuple) else (out,)
        ids = {id(inner[i]) for i in pos}
        if new_style and any(isinstance(o, Tensor) and id(o) in ids for o in outs):
            raise GraphBreak(f"the custom autograd.Function {cls.__name__} returns an input as-is and uses "
                             "setup_context, inside a compiled function whose results are differentiated "
                             "outside it")
        last.update(c=c, before=before, inner=inner, out=out)
        return tuple(o._value for o in outs if isinstance(o, Tensor))

    @jax.custom_vjp
    def fn(*xs):
        return call(xs)

    def fwd(*ps):
        out = call(tuple(p.value for p in ps))
        c = last["c"]
        res, layout = _residuals(c)
        # backward gets the residuals as new arrays: an in-place write there to a Tensor the caller
        # holds too (an argument or output kept on ctx; torch's
        # test_autograd_function_ctx_stash_no_vc_check mutates ``ctx.b`` and reads it back) would
        # not reach the caller's Tensor. The code scan is conservative (an in-place op on a local
        # clone also counts): such a call runs eagerly, correct
        outs = last["out"] if isinstance(last["out"], tuple) else (last["out"],)
        name = inplace_in_backward(cls)
        if name is not None and _keeps_call_tensor(c, last["inner"], outs):
            raise GraphBreak(f"the custom autograd.Function {cls.__name__} keeps an argument or output on ctx "
                             f"and its backward writes in place ('{name}'), inside a compiled function whose "
                             "results are differentiated outside it: the write would not reach the caller's "
                             "tensor")
        meta["layout"] = layout
        meta["materialize"] = (getattr(c, "materialize_grads", True), c._materialize_non_diff_grads)
        return out, res

    def bwd(res, cts):
        c = node_cls()
        c.needs_input_grad, c._in_meta, c._out_meta = meta["needs"], meta["in_meta"], meta["out_meta"]
        c.materialize_grads, c._materialize_non_diff_grads = meta["materialize"]
        ctx_restore(c, res, meta["layout"])
        grads = []
        for g, (shape, dtype, nondiff) in zip(cts, [m for m in c._out_meta if m[0] is not None]):
            zero = isinstance(g, jax.custom_derivatives.SymbolicZero) or g.dtype == jax.dtypes.float0
            grads.append(None if nondiff or zero else Tensor._make(g))
        it = iter(grads)
        spread = [next(it) if m[0] is not None else None for m in c._out_meta]
        prev = grad_mode.STATE[0]
        grad_mode.STATE[0] = False
        try:
            with _guard_streams():
                got = c.apply(spread)
        finally:
            grad_mode.STATE[0] = prev
        c.release()
        out = []
        for dt, g in zip(dtypes, got):
            if g is None or not jnp.issubdtype(dt, jnp.inexact):
                out.append(None)
            else:
                out.append(g._value.astype(dt))
        # NOTE [None from a lowered backward]: JAX makes these zeros; the region's node must not
        meta["none_in"] = frozenset(k for k, g in enumerate(got) if g is None)
        return tuple(out)

    fn.defvjp(fwd, bwd, symbolic_zeros=True)
    try:
        results = fn(*arrays)
    finally:
        live.clear()
    output = _adopt(ctx, last, args, results)
    last.clear()
    ctx._lowered_meta = meta     # NOTE [None from a lowered backward]: read by ``CutReach.of``
    # the metadata ``Function.apply`` gives its node, for the ctx bwd makes
    nondiff = {id(t) for t in getattr(ctx, "non_differentiable", ())}
    meta["needs"] = ctx.needs_input_grad
    meta["in_meta"] = tuple((tuple(a.shape), a.dtype, n) if isinstance(a, Tensor) else None
                            for a, n in zip(args, ctx.needs_input_grad))
    meta["out_meta"] = tuple((tuple(o.shape), o.dtype, id(o) in nondiff) if isinstance(o, Tensor)
                             else (None, None, True)
                             for o in (output if isinstance(output, tuple) else (output,)))
    return output


def _adopt(ctx, last, args, results):
    """Forward's output rebuilt over ``results`` (the custom_vjp's), and ``ctx`` given what
    forward set on its own ctx, its Tensors mapped: an argument's stand-in to the argument, an
    output to the new output Tensor."""
    c, inner, out = last["c"], last["inner"], last["out"]
    outs = out if isinstance(out, tuple) else (out,)
    mapping = {id(t): a for t, a in zip(inner, args) if isinstance(t, Tensor)}
    it = iter(results)
    new = []
    for o in outs:
        if not isinstance(o, Tensor):
            new.append(o)
            continue
        r = next(it)
        t = mapping.get(("out", id(o)))
        if t is None:
            t = Tensor._make(r)
            mapping[("out", id(o))] = t
        new.append(t)
    # an output wins over an argument it was returned as (the node's output, not its input)
    for o in outs:
        if isinstance(o, Tensor) and id(o) not in mapping:
            mapping[id(o)] = mapping[("out", id(o))]

    def remap(v):
        if isinstance(v, Tensor):
            return mapping.get(id(v), v)
        if isinstance(v, tuple):
            return tuple(remap(x) for x in v)
        if isinstance(v, list):
            return [remap(x) for x in v]
        if isinstance(v, dict):
            return {k: remap(x) for k, x in v.items()}
        return v
    before = last["before"]
    for k, v in vars(c).items():
        if k == "needs_input_grad" or (k in before and before[k] is v):
            continue
        if k == "non_differentiable":
            v = tuple(mapping.get(("out", id(x)), remap(x)) for x in v)
        setattr(ctx, k, remap(v))
    return tuple(new) if isinstance(out, tuple) else new[0]


# NOTE [None from a lowered backward]
# A Function's backward may return None for an input that requires grad (torch leaves that
# input's ``.grad`` None: the engine hands its AccumulateGrad no gradient). In a region
# differentiated outside (``tracegrad.compile(f)``, ``backward()`` after it), the backward is
# JAX's VJP of the whole region, and JAX turns the None into a zero cotangent: the region's node
# would give the leaf zeros, and an optimizer then decays and steps a parameter eager skips.
# Which inputs get None is known only once bwd is traced (with the region's backward program),
# so the region keeps a numbered copy of its traced graph (no tensors, no nodes: ints and the
# Functions' ``meta``) and ``CutReach.resolve`` walks it after that trace with the edges cut
# whose backward gave None. A leaf still reached along another path keeps its gradient.
class CutReach:
    """Per differentiable result of a region, the positions of the VJP's inputs its traced
    graph reaches, with a lowered Function's input edges cut where its backward returned None
    (NOTE [None from a lowered backward]). ``resolve()`` gives the tuple of frozensets
    ``_result_reach`` gives, refined once every such backward was traced."""

    __slots__ = ("_adj", "_ends", "_cuts", "_roots", "_base", "_resolved")

    def __init__(self, adj, ends, cuts, roots, base):
        self._adj, self._ends, self._cuts, self._roots, self._base = adj, ends, cuts, roots, base
        self._resolved = None

    @classmethod
    def of(cls, results, pos, base):
        """A ``CutReach`` over the traced graphs of ``results`` (``pos``: id of an input's leaf
        tensor -> its position), or None when no lowered Function is in them (``base`` holds)."""
        index, adj, ends, cuts, stack = {}, [], {}, {}, []

        def number(n):
            i = index.get(id(n))
            if i is None:
                i = index[id(n)] = len(adj)
                adj.append(())
                stack.append((n, i))
            return i
        roots = [None if t.grad_fn is None else number(t.grad_fn) for t in results]
        while stack:
            n, i = stack.pop()
            v = getattr(n, "variable", None)
            if v is not None and id(v) in pos:
                ends[i] = pos[id(v)]
            meta = n.__dict__.get("_lowered_meta") if hasattr(n, "__dict__") else None
            if meta is not None:
                cuts[i] = meta
            adj[i] = tuple((number(e[0]), k) for k, e in enumerate(n.next_functions) if e[0] is not None)
        return cls(adj, ends, cuts, roots, base) if cuts else None

    def resolve(self):
        if self._resolved is not None:
            return self._resolved
        if any("none_in" not in m for m in self._cuts.values()):
            return self._base         # a backward not traced yet: the graph's own reach
        out = []
        for r in self._roots:
            seen, got, todo = set(), set(), [] if r is None else [r]
            while todo:
                i = todo.pop()
                if i in seen:
                    continue
                seen.add(i)
                if i in self._ends:
                    got.add(self._ends[i])
                cut = self._cuts.get(i)
                todo.extend(j for j, k in self._adj[i] if cut is None or k not in cut["none_in"])
            out.append(frozenset(got))
        self._resolved = tuple(out)
        self._adj = self._ends = self._cuts = None    # resolved for good: the graph copy can go
        return self._resolved
