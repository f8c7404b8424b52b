"""A region's results: how the arrays its program returns become the Python value the function
returned, on every call (DESIGN 2.4).

At trace time ``_out_recipe`` describes each result leaf of the traced call: a tensor made by
the call (a new storage per call), a view of an argument, of outside state or of a tensor the
call binds to a Python place (rebuilt from its root), the tensor a followed place held, a
detached alias, or a Python value; ``OutRecipe.leaves_out`` rebuilds them from one run's
arrays, with their ``requires_grad``, graph node, version counter, attributes and layout as
the eager call left them. ``region.py`` traces the call and runs the program.
"""
from __future__ import annotations

import collections.abc
import functools
import types
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from .. import _state
from .._tensor.memory_format import _PERMUTE as PERMUTE_OP, lay_out
from .._tensor.tensor import Tensor
from ..autograd import grad_mode
from .call_tree import unflatten
from .capture import GraphBreak
from .carry import get as slot_get, plain_attributes, put as slot_put
from .deferred import Deferred, DeferredItem
from .guards import KEYS, _slot
from .vjp_node import CompiledFunctionBackward, after_backward_message, dead_node

_Tracer = jax.core.Tracer


class OutRecipe:
    """How the program's result arrays become the Python value ``fn`` returned."""

    def __init__(self, treedef, leaves):
        # leaves: ("new", (rg, how, cls, inference, version, attrs, retained, order)) | ("const", value) | ("arg", index)
        # | ("same", position)
        # | ("view", (root, chain, rg, how[, no _base, own version counter])) | ("alias", (index, same_version))
        # | ("state alias", (storage weakref, version counter)): see _out_recipe
        self.treedef, self.leaves = treedef, leaves
        self.places = ()      # the slots of the ("place", k) leaves (``_result_places``)
        self.entry_grads = False   # ("entry grad", owner index) leaves: NOTE [the .grad a call starts with]
        self.array_at = {}    # while tracing: "new" leaf position -> its array's position

    def build(self, arrays, arg_leaves, vjp):
        return unflatten(self.treedef, self.leaves_out(arrays, arg_leaves, vjp))

    def leaves_out(self, arrays, arg_leaves, vjp, kept=(), placed=(), grads=(), made=(), entry=()):
        """The flat result leaves (tensors made from ``arrays``, arguments, constants); ``kept``:
        tensors the call bound to Python places that are differentiable outputs too, after the
        results (NOTE [kept graphs]); ``made``: this call's tensors bound to places, in
        ``rebinds`` order (NOTE [views of rebound tensors])."""
        it = iter(arrays)
        out, diff, later = [], [], []
        # made under inference_mode(): inference tensors, as eager's ops make
        inference = _state.INFERENCE_DEPTH[0] and grad_mode.STATE[1]
        for kind, v in self.leaves:
            if kind == "new":
                rg, how, cls, made_inference, version, attrs, retained, order = v
                t = cls._make(next(it))
                if order is not None:         # NOTE [layouts of results]
                    lay_out(t, order)
                if retained is not None:      # NOTE [retained grads of results]
                    t._retains_grad = retained != "set"
                    if retained:
                        t._grad = Tensor._make(next(it))
                t._vc[0] = version
                if attrs:
                    t.__dict__.update(attrs)
                if inference or made_inference:
                    t._inference = True
                if rg:
                    t._rg = True
                    if type(how) is tuple:     # ("dead", why a backward through it raises)
                        t._gf = dead_node(how[1])
                    elif how == "diff":
                        diff.append(t)
                out.append(t)
            elif kind == "owner grad":    # NOTE [returned .grad]: the .grad set after the call
                next(it)
                out.append(grads[v])
            elif kind == "arg grad":
                next(it)
                out.append(arg_leaves[v]._grad)
            elif kind == "entry grad":    # NOTE [the .grad a call starts with]
                out.append(entry[v])
            elif kind == "grad view":     # ``p.grad.view(-1)``, ``p.grad[0]`` of such a .grad
                next(it)
                (src, k), chain = v
                base = grads[k] if src == "owner grad" else arg_leaves[k]._grad
                out.append(_rebuild_view((("state", base), chain, False, None), out, arg_leaves))
            elif kind == "grad alias":    # ``p.grad.detach()``, ``p.grad.data`` of such a .grad
                next(it)
                (src, k), same_version = v
                t = (grads[k] if src == "owner grad" else arg_leaves[k]._grad).detach()
                if not same_version:
                    t._vc = [0]
                out.append(t)
            elif kind == "item":          # NOTE [deferred item]: eager's item() of the value
                out.append(np.asarray(next(it)).item())
            elif kind == "item expr":     # Python's arithmetic on this call's numbers
                n, evaluate = v
                out.append(evaluate([np.asarray(next(it)).item() for _ in range(n)]))
            elif kind == "arg":
                out.append(arg_leaves[v])
            elif kind == "place":         # the tensor a followed place held (``_result_places``)
                out.append(placed[v])
            elif kind == "same":
                out.append(out[v])
                if out[v] is None:
                    later.append(len(out) - 1)
            elif kind == "view":
                if v[0][0] == "rebind":
                    v = (("state", made[v[0][1]]),) + v[1:]
                    out.append(_rebuild_view(v, out, arg_leaves))
                elif v[0][0] == "entry grad":    # NOTE [the .grad a call starts with]
                    out.append(_rebuild_view((("state", entry[v[0][1]]),) + v[1:], out, arg_leaves))
                elif v[0][0] == "out" and v[0][1] >= len(out):   # a view of a later result (``y[0], y``)
                    later.append(len(out))
                    out.append(None)
                else:
                    out.append(_rebuild_view(v, out, arg_leaves))
            elif kind == "state alias":    # ``p.detach()`` of a state tensor (``_out_recipe``)
                out.append(_state_alias(*v))
            elif kind == "alias":          # a detached alias of an argument
                i, same_version = v
                t = arg_leaves[i].detach()
                if not same_version:
                    t._vc = [0]
                out.append(t)
            else:
                out.append(v)
        for n in later:     # the views of later results, then their repeats, in result order
            kind, v = self.leaves[n]
            out[n] = _rebuild_view(v, out, arg_leaves) if kind == "view" else out[v]
        diff += kept
        if diff:
            pullback, edges, (s_args, s_out, s_state), through, reach, backward = vjp
            # NOTE [saved versions of a compiled region]: versions as the call left them, less
            # the writes the function made after saving (``late``: such a backward raises)
            saved = [(arg_leaves[i], o) for i, o in s_args] + [(out[k], o) for k, o in s_out] \
                + [(r(), o) for r, o in s_state]
            node = CompiledFunctionBackward(edges, backward, pullback,
                                            [(t._value.shape, t._value.dtype) for t in diff],
                                            [(t._vc, t._vc[0] - late, t.dtype, tuple(t.shape), o)
                                             for t, (o, late) in saved if t is not None], through, reach)
            for i, t in enumerate(diff):
                t._gf, t._out_nr = node, i
        return out


def _views_of_rebound(recipe, candidates, by_escape, arrays, diff_out, saved, where):
    """NOTE [views of rebound tensors]: a result that is a view of a tensor the call binds to
    a Python place shares that tensor's storage eagerly (a write through one shows in the
    other, its ``_base`` is the bound tensor). The program returns the bound tensor's value
    (a rebind); the result, computed as a copy, becomes a view rebuilt over each call's new
    bound tensor, and its array leaves the program's outputs. ``candidates``: (leaf position,
    storage id, view chain) of "new" results; ``by_escape``: escape storage id -> position in
    ``rebinds``. Returns ``diff_out`` with the positions after a dropped array moved down."""
    dropped = []
    for n, st, chain in candidates:
        m = by_escape.get(st)
        if m is None:
            continue
        rg, how = recipe.leaves[n][1][:2]
        if how == "diff" or n in saved:
            # its gradient would have to flow through the bound tensor's slot of the region's
            # backward: run such a call eagerly rather than return a copy
            raise GraphBreak("the function returns a view of a tensor with a graph that it also stores in a "
                             "container or attribute: the program cannot return that view over the stored "
                             "tensor", where)
        dropped.append(recipe.array_at[n])
        recipe.leaves[n] = ("view", (("rebind", m), chain, rg, how, False, False))
    for k in sorted(dropped, reverse=True):
        del arrays[k]
    return [d - sum(k < d for k in dropped) for d in diff_out]


def _state_alias_ref(alias, t, state):
    """("state alias" recipe) when ``alias`` (``t`` or its base) is a whole-storage alias of a
    state tensor's storage (``p.detach()``, ``p.data``): (weakref to the storage, the state
    tensor's version counter when ``alias`` shares it, as ``detach`` does, else None: ``.data``
    gets a counter of its own); else None."""
    st, r = (state or {}).get(id(t._st), (None, None))
    if st is None or alias._value.shape != st.array.shape:
        return None
    owner = r() if r is not None else None
    return weakref.ref(st), (alias._vc if owner is not None and owner._vc is alias._vc else None), r


def _state_alias(ref, vc, owner):
    """A tensor over the state storage ``ref()`` with version counter ``vc`` (a new one for
    None); over the storage of the state tensor ``owner()`` the storage was read through, when
    it lives: the program follows it onto another storage (NOTE [tensors moved off their
    storage])."""
    t = owner() if owner is not None else None
    st = t._st if t is not None and not t._chain else ref()
    t = Tensor._make(st.array)
    t._st, t._vc = st, [0] if vc is None else vc
    return t


def _rebuild_view(spec, out, arg_leaves):
    """A view result over its root's storage, as eager's view: same storage, version counter
    and ``_base``; its value is computed from the chain when read."""
    (where, ref), chain, rg, how = spec[:4]
    if where == "detached arg":
        i, same_version = ref
        base = arg_leaves[i].detach()
        if not same_version:
            base._vc = [0]
    elif where in ("state alias", "state storage"):
        base = _state_alias(*ref)
    elif where == "state detached view":     # its base: the detached view, no base of its own
        base = _rebuild_view((("state storage", ref[:3]), ref[3], False, None, True), out, arg_leaves)
    else:
        base = out[ref] if where == "out" else arg_leaves[ref] if where == "arg" else ref
    if where in ("arg", "detached arg"):
        chain = base._chain + chain     # traced relative to the argument's value
    t = Tensor._make(base._st.array)
    t._st, t._vc, t._chain = base._st, base._vc, chain
    # a detached view (``p[0].detach()``, ``x[1].data``) has no base, as eagerly
    t._base = None if spec[4:5] == (True,) else base._base if base._base is not None else base
    if spec[5:] == (True,):
        t._vc = [0]
    t._gf_ver = t._vc[0]
    t._vcache, t._vgen = None, -1
    if rg:
        t._rg = True
        if type(how) is tuple:
            t._gf = dead_node(how[1])
    return t


def _closes_over_the_call(f, cap, depth=3) -> bool:
    """Whether the function, bound method or ``functools.partial`` ``f`` a call returned holds,
    in its closure cells, defaults, ``self`` or bound arguments (in a list, tuple, dict or another
    such function, ``depth`` levels down), a tensor made during the trace (NOTE [returned
    closures]). Objects are not looked into: a dict subclass or a dataclass result (an HF
    ModelOutput) stays a constant, as it was (round-23's strict xfail)."""
    if depth < 0:
        return False
    if isinstance(f, Tensor):
        return cap.made_here(f)
    if isinstance(f, (list, tuple)):
        return any(_closes_over_the_call(v, cap, depth - 1) for v in f)
    if isinstance(f, dict):
        return any(_closes_over_the_call(v, cap, depth - 1) for v in f.values())
    if isinstance(f, functools.partial):
        return _closes_over_the_call([f.func, f.args, f.keywords], cap, depth - 1)
    if isinstance(f, (types.FunctionType, types.MethodType)):   # not any callable: an object's
        # ``__getattr__`` may answer ``__code__`` (an HF ModelOutput's does)
        held = [c.cell_contents for c in (f.__closure__ or ()) if _cell_full(c)]
        held += list(f.__defaults__ or ()) + list((f.__kwdefaults__ or {}).values())
        held.append(getattr(f, "__self__", None))       # a bound method (``return h.mul``)
        return _closes_over_the_call(held, cap, depth - 1)
    return False


def _cell_full(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:          # an empty cell (a name assigned later in the enclosing function)
        return False
    return True


def _result_places(region, places, rebound_before):
    """A state tensor read from a place the program follows (NOTE [carried state], NOTE
    [tensors read by place]: ``state["last"]`` the caller or the call rebinds) and returned as
    itself was a "const" leaf: every later call returned the tensor the trace read, not the one
    the place held at that call, as eager returns (so too one the call rebinds, ``prev =
    state["last"]; state["last"] = x.mean()``, and one no program reads). Such a leaf becomes ``("place", k)``: the
    tensor at slot ``k`` of ``recipe.places``, read at the call before its rebinds."""
    recipe, slots = region.out_recipe, []
    by_storage = {}
    for j, found_slots, _ in places:
        for slot in found_slots:
            by_storage.setdefault(id(region.storages[j]), slot)
    for r in region.rebinds:
        if r.carried is not None:
            by_storage.setdefault(id(region.storages[r.carried]), r.slots[0])
    # a tensor no program reads (NOTE [tensors compared by identity]): its place is guarded by
    # requires_grad and layout, not identity, so the one there at the call is the result
    by_identity = dict(rebound_before)
    for d, k in region.unread:
        slot = _slot(d, k) if k is not KEYS else None
        if slot is not None and isinstance(t := slot_get(slot), Tensor):
            by_identity.setdefault(id(t), slot)
    if not by_storage and not by_identity:
        return
    leaves = list(recipe.leaves)
    for n, (kind, v) in enumerate(leaves):
        if kind == "const" and isinstance(v, Tensor):
            slot = by_identity.get(id(v))
            if slot is None and not v._chain and v._base is None:
                slot = by_storage.get(id(v._st))
            if slot is not None:
                leaves[n] = ("place", len(slots))
                slots.append(slot)
                if id(v) in rebound_before:
                    # the trace left its own tensor there; the first run (``region.run`` just
                    # after) reads the place before rebinding it, as every later call
                    slot_put(slot, v)
    recipe.leaves, recipe.places = leaves, tuple(slots)


def _out_recipe(r_leaves, r_def, call_leaves, cap, outside, state=None, where=None):
    """``outside``: ids of tensor objects that existed before the call (parameters, buffers,
    optimizer state, ``.grad``s): returned as themselves, as eager returns them. A result
    returned twice comes back twice as one object; a result that is a view of another result,
    of an argument or of a state tensor (without a live graph) comes back as that view, sharing
    storage and version counter as eagerly."""
    leaves, arrays, diff = [], [], []
    at = {}     # the position in ``arrays`` of each "new" leaf's value (``_views_of_rebound``)
    consumed = cap.backward_ran
    seen, whole = {}, {}      # id(tensor) -> leaf position; id(storage) -> a plain new result's
    # a view may come before the result it views (``return y[0], y``): that result's position,
    # for a view whose ``_base`` is that very result (not one of a ``.grad`` the call made
    # returned with its ``.data``: NOTE [returned .grad] makes those "grad view"s)
    ahead = {}
    for n, t in enumerate(r_leaves):
        if isinstance(t, Tensor) and not isinstance(t, Deferred) and _plain_new(t, call_leaves, cap, outside, state):
            ahead.setdefault(id(t._st), (n, t))
    for t in r_leaves:
        if isinstance(t, Deferred):     # NOTE [deferred item]: the number is read after each call
            items = []
            t.items(items)
            try:
                arrays += [jnp.reshape(d.array, ()) for d in items]
            except jax.errors.UnexpectedTracerError:     # item() inside a nested transform
                raise GraphBreak("item() of a tensor inside a checkpointed or transformed block is returned: "
                                 "the program cannot return it from there") from None
            leaves.append(("item", None) if type(t) is DeferredItem else ("item expr", (len(items), t.evaluator({id(d): k for k, d in enumerate(items)}))))
            continue
        if not isinstance(t, Tensor):
            if type(t) is int and any(t == id(w) for w in call_leaves if isinstance(w, Tensor)):
                # ``id(x)`` of an argument is the id of its stand-in (NOTE [argument stand-ins]),
                # another object than the caller's tensor on every call: the program would return
                # a stale number (``id`` is a builtin the capture does not see)
                raise GraphBreak("id() of a tensor argument returned: the program runs on a stand-in, not on "
                                 "the caller's tensor object", where)
            if isinstance(t, collections.abc.Iterator):
                # a generator (the function is a generator function), ``iter``/``zip``/``map``
                # made while tracing: kept as a constant, later calls would get that one
                # object, already used up
                raise GraphBreak(f"the function returns a {type(t).__name__} (an iterator made by the call): "
                                 "the program would hand back the one made while tracing", where)
            if isinstance(t, weakref.ref) and isinstance(t(), Tensor) and id(t()) not in outside \
                    and not any(t() is w for w in call_leaves):
                # ``return weakref.ref(y), y`` (ReproTests.test_return_weakref): the trace's
                # weakref, to the trace's tensor, on every call -- ``wr() is y`` False, or None
                raise GraphBreak("the function returns a weakref to a tensor made by the call: the program "
                                 "would hand back the one made while tracing, to its tensor, on every call", where)
            if isinstance(t, (functools.partial, types.FunctionType, types.MethodType)) \
                    and _closes_over_the_call(t, cap):
                # NOTE [returned closures]: ``return loss, lambda s: h * s`` -- a constant result is
                # the trace's object, handed back on every call, and its cells hold the trace's
                # tensors (refreshed as escapes): a lambda the caller kept from an earlier call then
                # showed the latest call's values, and its graph was cut. Eager makes a new function
                # over that call's tensors every call: run such a call eagerly
                raise GraphBreak(f"the function returns a function ({getattr(t, '__qualname__', type(t).__name__)}) "
                                 "that closes over tensors made by the call: the program would hand back the one "
                                 "made while tracing, over its tensors, on every call", where)
            leaves.append(("const", t))
            continue
        if id(t) in seen:
            leaves.append(("same", seen[id(t)]))
            continue
        seen[id(t)] = len(leaves)
        idx = next((i for i, w in enumerate(call_leaves) if w is t), None)
        if idx is not None:
            leaves.append(("arg", idx))
            continue
        if id(t) in outside or (t._st not in cap.created and not isinstance(t._st.array, _Tracer)):
            leaves.append(("const", t))       # a state tensor returned as itself
            continue
        if not t._chain and not t._rg:
            # ``x.detach()``, ``x.data`` of an argument: the caller's tensor's storage, not a copy
            i = next((i for i, w in enumerate(call_leaves) if isinstance(w, Tensor) and w._st is t._st), None)
            if i is not None:
                leaves.append(("alias", (i, t._vc is call_leaves[i]._vc)))
                continue
            # ``p.detach()``/``p.data`` of a state tensor (a Parameter, a buffer): its storage, as
            # eager's, not a copy: the caller's writes through it (in place, through numpy) reach
            # the parameter. Only a whole-storage alias without a view chain; the storage is
            # held weakly (the orphan guard counts references) and the version counter object is
            # the state tensor's (``.detach()``) or the alias's own (``.data``)
            ref = _state_alias_ref(t, t, state)
            if ref is not None:
                leaves.append(("state alias", ref))
                continue
        rg = t.requires_grad
        how = None
        if rg and t.grad_fn is not None:
            # NOTE [results after a backward inside] in vjp_node.py
            how = ("dead", after_backward_message(t)) if consumed else "diff"
        root = _view_root(t, call_leaves, whole, outside, state, ahead) if t._chain else None
        if root is not None and how is not None:
            # a view of a leaf from outside (``w[:2]`` of a Parameter) aliases it, as eager's; its
            # grad_fn is made from the base's view chain as eager's is (no region VJP needed).
            # So is a view of a tensor argument that requires grad and got no history inside
            # (``return a[0], a.t()``): torch.compile returns it as a view of the caller's tensor
            # (``_base``, shared storage, the in-place checks of views of leaves), its grad_fn
            # regenerated from the argument's (a leaf's or a non-leaf's) view chain. Also after a
            # backward inside (``opt.step(); return w[0]``): that graph is the view chain alone,
            # alive eagerly (``out.sum().backward()`` reaches ``w``), never the consumed one
            plain_arg = root[0] == "arg" and call_leaves[root[1]]._rg and call_leaves[root[1]]._gf is None
            if (root[0] == "state" and root[1]._gf is None) or plain_arg:
                how = None
            elif how == "diff":
                root = None
        if root is not None:
            # no ``_base`` for a detached view (``w[0].detach()``, ``x[1].data``), as eagerly;
            # a version counter of its own for a ``.data`` view of a result (``y[0].data``)
            own_vc = root[0] == "out" and t._vc is not r_leaves[root[1]]._vc
            leaves.append(("view", (root, t._chain, rg, how, t._base is None, own_vc)))
            continue
        if not t._chain:
            whole[id(t._st)] = len(leaves)
        v = t._value
        if not isinstance(v, _Tracer):
            v = jnp.asarray(v)
        if how == "diff":
            diff.append(len(arrays))
        # an ``nn.Parameter(...)`` made inside comes back a Parameter, as eager's (other tensor
        # subclasses may keep state their __init__ sets: those come back plain tensors)
        cls = type(t) if type(t).__module__ == "tracegrad.nn.parameter" else Tensor
        # made under inference_mode() inside the function: an inference tensor on every call
        # and with the version its in-place ops gave it (``z = x.clone(); z.add_(1)``: 1) and the
        # Python attributes the function set on it (``logits.tag = "head"``)
        # NOTE [retained grads of results]: a result the function called ``retain_grad()`` on
        # and ran a backward through inside (``a.retain_grad(); loss.backward(); return a``)
        # keeps that call's ``.grad`` eagerly, so the program returns the gradient too (and a
        # result whose retained ``.grad`` stayed None comes back retaining, its ``.grad`` None)
        # A ``.grad`` the function assigned to a result it made (``y = x + 10; y.grad = x``)
        # comes back the same way, the result not retaining ("set"): it was lost (round 28,
        # MiscTests.test_newly_constructed_tensor_attr_mutation)
        retained = None
        if how != "diff" and t._retains_grad:
            g = t._grad
            retained = g is not None
        elif t._grad is not None and not t._retains_grad:
            g, retained = t._grad, "set"
        leaves.append(("new", (rg, how, cls, "_inference" in t.__dict__, t._vc[0], _result_attrs(t, where),
                               retained, None if how == "diff" else _dense_order(t))))
        at[len(leaves) - 1] = len(arrays)
        arrays.append(v)
        if retained:
            gv = g._value
            arrays.append(gv if isinstance(gv, _Tracer) else jnp.asarray(gv))
    recipe = OutRecipe(r_def, leaves)
    recipe.array_at = at
    return recipe, arrays, diff


# NOTE [layouts of results]: a result made with a dense layout of its own (``x.t().clone()``,
# ``empty_like`` of a permuted tensor: ``memory_format.lay_out`` keeps the input's stride order,
# as torch's preserve_format) came back from the program row-major: the first (eager) call's
# ``y.stride()`` was (1, 4), every compiled call's (5, 1), and code choosing a path by strides
# or ``is_contiguous()`` took another one (round 31, ReproTests.test_clone_not_memory_dense).
# The recipe keeps the order and gives the rebuilt result that layout again (one permute, only
# for such results). A differentiable result stays row-major: the region's VJP node reads its
# output through the result's storage (a laid-out one fed it a flat cotangent).
def _dense_order(t):
    """The dense storage order (outermost dim first) of a result ``lay_out`` gave a layout, or
    None for a row-major one."""
    if t._base is not None or len(t._chain) != 1 or not getattr(t._st, "_layout", False):
        return None
    op, statics, _ = t._chain[0]
    if op is not PERMUTE_OP:
        return None
    inverse = dict(statics)["dims"]
    return tuple(sorted(range(len(inverse)), key=inverse.__getitem__))


def _result_attrs(t, where=None):
    """The Python attributes the function set on the result ``t`` (a name, a flag), for every
    call's result to carry; None when there are none. A value that is not an immutable
    scalar or a tuple of them (a tensor, a dict the caller might change) is a graph break."""
    attrs, bad = plain_attributes(t)
    if bad is not None:
        raise GraphBreak(f"the function sets the attribute '{bad[0]}' of a result to a {type(bad[1]).__name__}: "
                         "a program's result can carry only numbers, strings and tuples of them", where)
    return attrs or None


def _plain_new(t, call_leaves, cap, outside, state):
    """Whether ``_out_recipe`` makes the result ``t`` a "new" result over a storage of its own
    (no view chain, made by the call, no alias of an argument or of state)."""
    if t._chain or any(w is t for w in call_leaves):
        return False
    if id(t) in outside or (t._st not in cap.created and not isinstance(t._st.array, _Tracer)):
        return False
    if not t._rg and (any(isinstance(w, Tensor) and w._st is t._st for w in call_leaves)
                      or _state_alias_ref(t, t, state) is not None):
        return False
    return True


def _view_root(t, call_leaves, whole, outside, state=None, ahead=None):
    """What the view result ``t`` views, rebuilt after each call: ("out", position of an
    earlier plain result), ("arg", index), ("detached arg", (index, same version counter)) for
    a view of ``arg.detach()``/``arg.data``, or ("state", the outside tensor); None otherwise."""
    if id(t._st) in whole:
        return ("out", whole[id(t._st)])
    n, r = (ahead or {}).get(id(t._st), (None, None))
    if r is not None and (t._base is r or t._base is None):   # a (detached) view of a result further on
        return ("out", n)
    i = next((i for i, w in enumerate(call_leaves) if isinstance(w, Tensor) and w._st is t._st), None)
    if i is not None:
        # a view of a detached alias of the argument (``a.detach()[1]``) is that alias's view,
        # not the argument's: no ``_base`` link, no grad_fn (as eager's)
        if t._base is call_leaves[i]:
            return ("arg", i)
        # and a detached view of the argument (``a[1].detach()``, ``a[1].data``: no ``_base``)
        return ("detached arg", (i, t._vc is call_leaves[i]._vc))   # ``.data`` has a version counter of its own
    b = t._base
    if b is not None and id(b) in outside and b._st is t._st:
        return ("state", b)
    if b is None:
        # NOTE [detached views of state]: ``p[0].detach()`` (``p[0].data``) of a state tensor is
        # no view eagerly (no ``_base``, as torch's) yet shares the parameter's storage: the
        # parameter's later updates show through it and writes through it reach the parameter.
        # Returned as a new result, it was a copy the next call's update did not reach
        ref = _state_storage_ref(t, state)
        return None if ref is None else ("state storage", ref)
    if b._chain and b._base is None:
        # a view of a detached view of state (``p[0].detach().view(-1)``, ``p[1].data.t()``):
        # over the state's storage too, its base that detached view rebuilt over it
        ref = _state_storage_ref(b, state)
        return None if ref is None else ("state detached view", ref + (b._chain,))
    ref = None if b._chain else _state_alias_ref(b, t, state)
    return None if ref is None else ("state alias", ref)    # a view of ``p.detach()``


def _state_storage_ref(t, state):
    """(weakref to the state storage ``t`` is over, the state tensor's version counter when
    ``t`` shares it, else None, the state tensor's weakref) or None when ``t``'s storage is no
    state storage."""
    st, r = (state or {}).get(id(t._st), (None, None))
    if st is None:
        return None
    owner = r() if r is not None else None
    return weakref.ref(st), t._vc if owner is not None and owner._vc is t._vc else None, r
