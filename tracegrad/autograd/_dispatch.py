"""The one dispatch path every op takes (STYLE 5), and the node it records.

``apply_op(op, args, static)`` unwraps tensors to arrays, calls the op's jitted forward
(``Op.run``: cached per static arguments), wraps the outputs, and -- only when grad mode is on
and an input requires grad -- records an ``OpNode`` holding exactly torch's saved set.
An ``OpNode``'s backward is the op's backward op (``Op.backward_op``); with
``create_graph=True`` it goes through ``apply_op`` like any forward op, which is why the node
lives here rather than in ``_graph_impl.py`` (the generic graph, which imports nothing from
this module).
View ops give outputs that share the input's storage; ``apply_inplace`` writes an op's
result back through a tensor's view chain and rebases autograd history (``CopySlices``);
``view_grad_fn`` regenerates a view's grad_fn after its base was written.
"""
from __future__ import annotations

import math
import weakref

import numpy as _np
from functools import partial

from .. import _state
from .._state import GRAD_MODE as STATE, INFERENCE_DEPTH
from .._ops import deps as _deps
from .._ops import derived as _derived
from .._ops import dtypes as _dt
from .._ops.errors import not_a_tensor
from .._ops.warn import warn as _warn
from .._ops.registry import CONST, NONDIFF_SAVED, RESULT, SAVED, SHAPE, Op, SavedLayout
from .._tensor import factories as _factories
from .._tensor import tensor as _tensor_mod
from .._tensor.numpy_bridge import owned_array
from .._tensor.memory_format import LAYOUTS_SEEN as _LAYOUTS_SEEN, follow as _follow_layout
from .._tensor.meta import run as _run_meta, run_inplace as _run_meta_inplace
from .._tensor.tensor import Tensor
from ._graph_impl import _RUNNING, MSG_FREED, Node, SavedTensor, _SavedNone, edge, node_class, version_error
from ._graph_impl import SAVED_HOOKS as _SAVED_HOOKS
from ._saved_names import SAVED_NAMES

_CAPTURE = _state.CAPTURE
_FORWARD_AD = _state.FORWARD_AD   # the open forward-AD level (_forward_ad_impl.Level) or None
_INTERPOSE = _state.INTERPOSE     # forward AD's level or the profiler: NOTE [interposer] in _state
_node_cls: dict = {}


def _cls_for(op):
    c = _node_cls.get(op)
    if c is None:
        c = _node_cls[op] = node_class(op.grad_fn, OpNode)
    return c


def apply_op(op: Op, args, static=()):
    """Run ``op`` on ``args`` (Tensors, Python scalars, None) with static keyword arguments
    ``static`` (a tuple of (name, value) pairs). Returns a Tensor, or a tuple of Tensors for
    multi-output ops."""
    if _INTERPOSE[0] is not None:   # a dual level or the profiler: it does its part, then calls back here
        return _INTERPOSE[0].apply_op(op, args, static)
    cap = _CAPTURE[0]
    if cap is not None:
        cap.see_tensors(args)
    arrays = []
    record = False
    for a in args:
        if isinstance(a, Tensor):
            arrays.append(a._value)
            if a._rg or (a._base is not None and a._base._rg and _stale_view_requires_grad(a)):
                record = True
        else:
            arrays.append(a)
    if cap is not None and cap.vjp:
        arrays = cap.graph_inputs(args, arrays, STATE[0])
    # once a meta tensor exists (NOTE [meta tensors]), its abstract inputs run by shape inference
    out = _run_meta(op, arrays, static) if _LAYOUTS_SEEN[0] else op.run(arrays, static)
    record = record and STATE[0] and op.grad_fn is not None
    if record and op.view and "_inference" in args[0].__dict__:
        record = False    # NOTE [inference views]: a view of an inference tensor has no history
    if op.n_out == 1:
        # torch gives integer and bool results no history
        record = record and out.dtype in _dt.DIFFERENTIABLE
        t = Tensor._make(out)
        if INFERENCE_DEPTH[0] and STATE[1] and not op.view:
            t._inference = True
        if _LAYOUTS_SEEN[0]:     # NOTE [storage layouts]: outputs ordered as torch's
            _follow_layout(op, args, (t,))
        if op.view:
            _make_view(t, args[0], op, static, None)
            t._vcache = out
        if record:
            _record(op, args, static, (t,))
        if cap is not None and cap.constants.values:     # NOTE [constants in a trace]
            cap.constants.fold(op, args, static, (t,))
        return t
    outs = tuple(Tensor._make(o) for o in out)
    if INFERENCE_DEPTH[0] and STATE[1] and not op.view:
        for t in outs:
            t._inference = True
    if _LAYOUTS_SEEN[0]:
        _follow_layout(op, args, outs)
    if op.view:
        for i, t in enumerate(outs):
            _make_view(t, args[0], op, static, i)
            t._vcache = out[i]
    if record:
        _record(op, args, static, outs if op.n_diff is None else outs[:op.n_diff])
    if cap is not None and cap.constants.values:
        cap.constants.fold(op, args, static, outs)
    return outs


def show_saved(t, shown):
    """``t`` with its node showing ``shown`` (``((name, value), ...)``) as torch's
    ``_saved_<name>`` where the op's static arguments hold another form of it: the value as
    the caller wrote it (a negative dim or index as its unsigned 64-bit value, as torch shows
    it), an int where the op keeps a tuple. A tensor without a node of its own is left as is."""
    gf = t._gf
    if isinstance(gf, OpNode):
        gf.shown = tuple((k, v % 2 ** 64 if isinstance(v, int) and v < 0 else v) for k, v in shown)
    return t


# NOTE [warnings in backward]
# Some of torch's backward formulas call the forward's kernel again on a saved argument, and
# that kernel warns again: ``IndexBackward0`` puts the gradient back through the saved uint8
# mask of ``x[mask]``, so each run of the node repeats the "indexing with dtype torch.uint8"
# deprecation. A node here computes its backward as a JAX VJP that sees no such argument; the
# op records the warnings on its node instead (``warn_in_backward``) and ``OpNode.apply`` gives
# them, attributed to the user's line that started the backward (torch's name the line of its
# own engine call in torch/autograd/graph.py, which a "default" filter shows once in all).
def warn_in_backward(t, warns):
    """``t`` with its node giving ``warns`` (``((message, category), ...)``) each time its
    backward runs (NOTE [warnings in backward]). A tensor without a node of its own is left as
    is."""
    gf = t._gf
    if isinstance(gf, OpNode) and warns:
        gf.warns = tuple(warns)
    return t


def save_indices(values, indices):
    """``(values, indices)`` with the node of ``values`` keeping ``indices`` as torch's max-pool
    nodes save their index output: writing ``indices`` in place before backward raises torch's
    version RuntimeError (the gradient here is recomputed from the input, so without this the
    edit would pass silently). A ``values`` without a node of its own is left as is."""
    gf = values._gf
    if isinstance(gf, OpNode):
        gf.const_vc += ((indices, indices._vc[0]),)
    return values, indices


def _stale_view_requires_grad(t):
    """A view made while its base needed no grad, whose base has since been given history by
    an in-place write (through the base or another of its views): torch's view requires grad
    from then on (its grad_fn is regenerated from the base's). Marks it so; True if it does."""
    if t._gf is None and t._base._gf is not None and "_cmeta" not in t.__dict__:
        t._rg = True      # edge() asks grad_fn, which regenerates the view's node (view_grad_fn)
        return True
    return False


def _make_view(t, src, op, static, idx):
    t._st, t._vc = src._st, src._vc
    t._chain = src._chain + ((op, static, idx),)
    t._vgen = t._st.gen    # the forward's output is the view's value until the storage changes
    t._base = src._base if src._base is not None else src
    t._gf_ver = src._vc[0]
    if _CAPTURE[0] is not None:     # a view made while tracing is not from outside (capture.py)
        _CAPTURE[0].see_alias_made(t)
    if _VIEW_REPLAY[0]:   # torch decides at the view's creation whether it will be replayed
        t._replay = True
    if src.__dict__.get("_inference"):   # torch: a view is an inference tensor iff its base is,
        t._inference = True               # and then not a view for autograd (it shares storage)
        t._base = None
    elif not STATE[0] and (t._base._rg or t._base.requires_grad):
        # torch: a view made without grad requires grad iff its base does (not so a view of a
        # view that was given requires_grad_() itself over a base that needs none)
        t._cmeta = "inference mode" if STATE[1] and INFERENCE_DEPTH[0] else "no_grad mode"
        t._rg = True
    elif not STATE[0] and t.dtype.is_floating_point:
        # torch's NO_GRAD_MODE / INFERENCE_MODE creation meta on a view of a tensor that does
        # not require grad: only check_view_rebase reads it (an in-place write with grad mode on
        # by a value that requires grad is refused)
        t._ngview = "inference mode" if STATE[1] and INFERENCE_DEPTH[0] else "no_grad mode"
    elif "_ngview" in src.__dict__:   # torch: a view of such a view keeps its creation meta
        t._ngview = src._ngview
    elif "_cmeta" in src.__dict__ or "_cmeta_of" in src.__dict__:
        # a view made with grad mode on of a view made without it (of a base requiring grad):
        # torch propagates the creation meta, so writing it in place is refused too
        t._cmeta_of = src.__dict__.get("_cmeta") or src._cmeta_of
    elif STATE[0] and idx is None and ("_cfn" in src.__dict__ or "_cfn_of" in src.__dict__):
        # a view (made with grad mode on) of a view a custom Function returned: torch propagates
        # the IN_CUSTOM_FUNCTION creation meta, so writing this one in place is refused too (the
        # rebase would bypass that Function's backward: a wrong gradient); one of several views
        # (unbind, split) keeps its own MULTI_OUTPUT_NODE meta, as torch's
        t._cfn_of = True


# NOTE [inference views]
# torch's CreationMeta, for views made in inference mode (tensor.__dict__["_cmeta"]):
# - a view of an inference tensor is an inference tensor with no autograd history, whatever
#   mode it is made in: no node is recorded, and it is no view for autograd (``_base`` None,
#   ``_is_view()`` False), only an alias of the storage, like ``detach()``;
# - a view of a normal tensor that requires grad, made inside inference_mode(), requires grad
#   but is a leaf with no grad_fn ("inference mode"); an op using it later records an edge to
#   nowhere. Writing it in place with grad mode on, or asking its grad_fn after its base was
#   written in place, raises torch's RuntimeError (autograd cannot rebase such a view).
# Views made under no_grad() of a tensor that requires grad are the same ("no_grad mode"), as
# torch's NO_GRAD_MODE creation meta.


_tuple_new = tuple.__new__
# torch's view-replay mode (autograd.grad_mode._force_original_view_tracking), read by _make_view
_VIEW_REPLAY = _state.VIEW_REPLAY


def _record(op, args, static, outs):
    kinds, avals, needs, consts, edges, edge_pos = [], [], [], [], [], []
    # torch saves a wrapped Python scalar, or an integer index, like a tensor (freed after backward)
    saved_const = False
    const_vc = ()   # (index tensor, its version when saved): an in-place edit before backward raises, as torch's
    save_pos, save_if, no_edge = op.save_pos, op.save_if, op.no_edge_pos
    for i, a in enumerate(args):
        is_t = isinstance(a, Tensor)
        rg = is_t and a._rg
        if i not in no_edge:
            edge_pos.append(i)
            edges.append(edge(a) if rg else (None, 0))
        # inputs never differentiated (integer/bool indices and masks, a quantile's q...)
        # reach the backward as constants, so a VJP never sees a placeholder for them
        # (a tensor that requires grad is floating, so it skips the dtype check)
        if is_t and not rg and (a._value.dtype not in _dt.DIFFERENTIABLE or (i in no_edge and i not in save_pos)):
            kinds.append(CONST)
            consts.append(a._value)
            if i in save_pos:      # torch saves it (an index): a second backward must raise
                saved_const = True
                const_vc += ((a, a._vc[0]),)
        elif is_t:
            needs.append(rg and i not in no_edge)
            if i in save_pos and (not save_if or i not in save_if or _needs_grad(args, save_if[i])):
                kinds.append(SAVED)
            else:
                kinds.append(SHAPE)
                v = a._value
                avals.append((v.shape, v.dtype))
        else:
            kinds.append(CONST)
            consts.append(a)
            if i in save_pos and (not save_if or i not in save_if or _needs_grad(args, save_if[i])):
                saved_const = True
    node = _cls_for(op)(tuple(edges))
    node.op, node.static = op, static
    # NOTE [saved layout]; tuple.__new__ skips the NamedTuple's Python-level __new__ (hot path)
    node.layout = _tuple_new(SavedLayout, (tuple(kinds), tuple(avals), tuple(needs), tuple(edge_pos)))
    node.consts, node.released = consts, False
    node.nout, node.saved_const, node.const_vc, node.warns = len(outs), saved_const, const_vc, ()
    for i, t in enumerate(outs):
        t._gf, t._out_nr, t._rg = node, i, True
    saved = []
    if op.saves:
        for p in op.save_order:
            if p == RESULT:
                saved.append(SavedTensor(outs[0], True))
            elif p < len(args) and kinds[p] == SAVED:
                saved.append(SavedTensor(args[p]))
    node.saved = saved
    return node


def _needs_grad(args, p):
    a = args[p] if p < len(args) else None
    return isinstance(a, Tensor) and a._rg


# ---- the node of a table op ---------------------------------------------------------------------

class OpNode(Node):
    """The node of one op from the table; its backward is the op's cached jitted VJP."""

    # layout: the SavedLayout of NOTE [saved layout] (how each forward input is kept)
    # shown: ((name, value), ...) torch shows as ``_saved_<name>`` where the node's static
    # arguments hold another form (NOTE [indexing nodes as torch]); unset on most nodes
    # (no output shapes are kept for ``Node._input_metadata``: a cost on every recorded op)
    # warns: ((message, category), ...) given each time the backward runs (NOTE [warnings in
    # backward]); () on most nodes
    __slots__ = ("op", "static", "layout", "saved", "consts", "released", "nout", "saved_const", "const_vc",
                 "shown", "warns")

    def __getattr__(self, attr):
        if attr.startswith("_saved_") or attr.startswith("_raw_saved_"):
            raw = attr.startswith("_raw_")
            name = attr[len("_raw_saved_"):] if raw else attr[len("_saved_"):]
            try:
                shown = dict(object.__getattribute__(self, "shown"))
            except AttributeError:
                shown = ()
            if name in shown:
                v = shown[name]
                if self.released and isinstance(v, tuple) and any(isinstance(i, Tensor) for i in v):
                    raise RuntimeError(MSG_FREED)    # saved tensors, freed by the backward as torch's
                if raw and isinstance(v, tuple):
                    # torch's list of SavedVariables: one SavedTensor per entry (a None one refuses
                    # hooks). These are views for inspection: hooks registered on them do not
                    # reach the backward, which reads the node's own copy
                    return tuple(_SavedNone() if i is None else SavedTensor(i) if isinstance(i, Tensor) else i
                                 for i in v)
                return v
            op = object.__getattribute__(self, "op")
            if name in op.saves:
                if self.released:
                    if raw:   # torch hands out the freed SavedTensor (its register_hooks raises)
                        return SavedTensor.freed()
                    raise RuntimeError(MSG_FREED)
                layout = self.layout
                order = layout.save_order(op)
                want = RESULT if name == "result" else op.args.index(name)
                if want in order:
                    s = self.saved[order.index(want)]
                    return s if raw else s.get(self, 0)
                if want == RESULT or want >= len(layout.kinds) or layout.kinds[want] != CONST:
                    return None
                v = self.consts[layout.const_index(want)]
                if v is None or isinstance(v, bool):
                    return v
                if hasattr(v, "dtype"):  # an integer/bool tensor input kept as a constant
                    return Tensor._make(v)
                # torch saves a Python number as a wrapped 0-dim double/long tensor
                return _factories.tensor(v, dtype=_dt.float64 if isinstance(v, float) else _dt.int64)
            if name in op.args:
                p = op.args.index(name)
                kinds = self.layout.kinds
                if p < len(kinds) and kinds[p] == CONST:
                    return self.consts[self.layout.const_index(p)]
            static = dict(object.__getattribute__(self, "static"))
            if op.name.startswith("upsample_") and name in _UPSAMPLE_SCALES:
                # torch saves one optional double per spatial dim: ``_saved_scales`` (1-D),
                # ``_saved_scales_h``/``_w`` (2-D), ``_saved_scales_d``/``_h``/``_w`` (3-D)
                scales = static.get("scales") or ()
                names = _UPSAMPLE_SCALES_BY_DIM.get(len(scales), ())
                if name not in names:
                    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")
                return scales[names.index(name)]
            if name in static:
                return static[name]
            derived = _OP_SAVED.get((op.name, name)) or _DERIVED_SAVED.get(name)
            if derived is not None:
                v = derived(self)
                if v is _NONE:
                    return None
                if v is not None:
                    return v
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")

    def __dir__(self):
        """The ``_saved_<name>`` attributes of torch's saved set (and ``_raw_saved_<name>``, the
        SavedTensor, for those kept as tensors), as ``dir(grad_fn)`` lists them in torch."""
        op = object.__getattribute__(self, "op")
        order = self.layout.save_order(op)
        names = []
        torch_names = SAVED_NAMES.get(type(self).__name__)
        for name in op.saves:
            if torch_names is not None and name not in torch_names:
                continue    # held under another name than torch's (``indices0``...: ``_saved_indices``)
            names.append(f"_saved_{name}")
            if (RESULT if name == "result" else op.args.index(name)) in order:
                names.append(f"_raw_saved_{name}")
        kinds = self.layout.kinds
        # Python numbers among the inputs: torch saves them as scalars (``_saved_exponent``)
        names += [f"_saved_{a}" for p, a in enumerate(op.args[:len(kinds)]) if kinds[p] == CONST
                  and self.consts[self.layout.const_index(p)] is not None
                  and (torch_names is None or a in torch_names)]
        # torch's other saved attributes of this node class (dims, sizes...) that it can answer
        for name in torch_names or ():
            attr = f"_saved_{name}"
            if attr not in names:
                try:
                    getattr(self, attr)
                except AttributeError:
                    continue
                except RuntimeError:   # freed by a backward: torch still lists it
                    pass
                names.append(attr)
        return sorted(set(super().__dir__()) | set(names))

    def apply(self, grads, create_graph=False):
        # one read of the saved list: another thread's backward through this graph may release
        # the node meanwhile (NOTE [concurrent release])
        saved_list = self.saved
        if self.released:
            raise RuntimeError(MSG_FREED)
        for message, category in self.warns:   # NOTE [warnings in backward]
            _warn(message, category)
        try:
            return self._apply(grads, saved_list)
        except (AttributeError, TypeError):
            if self.released:
                raise RuntimeError(MSG_FREED) from None
            raise

    # NOTE [concurrent release]
    # Threads running backward through one graph without retain_graph (torch's
    # test_python_thread_in_middle): torch locks each node while it runs and frees its saved
    # variables under that lock, so the other threads either ran it first or get the
    # "Specify retain_graph=True" error. Here a node applied in one thread can be released by
    # another mid-way (its SavedTensors emptied): the values already read stay valid; a read
    # that found one emptied fails, and that failure becomes the same RuntimeError.
    def _apply(self, grads, saved_list):
        n = self.nout
        if len(grads) != n:
            grads = grads[:n] if len(grads) > n else list(grads) + [None] * (n - len(grads))
        for t, version in self.const_vc:
            if t._vc[0] != version:
                raise version_error(self, t, version)
        if self.op.no_derivative:
            _refuse_missing_derivative(self)
        key = (self.op, self.static, self.layout)
        entry = _BWD.get(key)
        if entry is None:
            entry = _BWD[key] = _backward_entry(self, len(saved_list), len(self.consts))
        bop, slots, prune, nondiff = entry
        if STATE[0] or _FORWARD_AD[0] is not None:   # create_graph (record it like any op), or
            # an open dual level (gradients of dual tensors get tangents: forward-over-reverse)
            saved = [s.get(self, i) for i, s in enumerate(saved_list)]
            if nondiff and STATE[0]:   # NOTE [non-differentiable backwards]
                saved = [t.detach() for t in saved]
            args = [*saved, *self.consts, *grads]
            res = apply_op(bop, _unread_detached(bop, args) if STATE[0] else args)
            if bop.n_out == 1:
                res = (res,)
        else:                    # plain backward: the saved arrays straight into the jitted VJP
            if prune:   # _drop_unread reads the saved tensors too: unpack them once, as torch
                # runs an unpack hook once per use of the saved tensor
                saved = [s.get(self, i) for i, s in enumerate(saved_list)]
                args = [t._value for t in saved]
            else:
                saved = None
                args = [s.value(self, i) for i, s in enumerate(saved_list)]
            args += self.consts
            args += [None if g is None else g._value for g in grads]
            out = _run_meta(bop, args, ()) if _LAYOUTS_SEEN[0] else bop.run(args, ())
            if bop.n_out == 1:
                if slots == (0,) and not prune:
                    return [Tensor._make(out)]
                res = (Tensor._make(out),)
            else:
                res = tuple(Tensor._make(o) for o in out)
        res = [None if s < 0 else res[s] for s in slots]
        if prune:
            _drop_unread(self, saved, grads, res)
        return res

    def num_outputs(self) -> int:
        return self.nout

    def release(self):
        # torch raises on a second backward only through nodes that saved something
        if self.saved or self.saved_const:
            self.released = True
            for s in self.saved:   # a SavedTensor the user holds (_raw_saved_*) is freed too
                s.free()
            self.saved = self.const_vc = ()


_BWD: dict = _state.register_cache("autograd._dispatch._BWD", {})


def _refuse_missing_derivative(node):
    """NOTE [not-implemented derivatives]: torch's derivatives.yaml marks some inputs
    ``not_implemented`` (igamma's ``input``, zeta's ``self``). Their edge stays in the graph, and
    the node raises NotImplementedError only when the running backward call goes on to that
    edge (``autograd.grad`` with respect to another input alone does not), as torch's
    ``should_compute_output`` check."""
    runs = _RUNNING.tasks[-1][2] if _RUNNING.tasks else None
    for slot, p in enumerate(node.layout.edge_pos):
        label = node.op.no_derivative.get(p)
        nxt = node.next_functions[slot][0] if label is not None else None
        if nxt is not None and (runs is None or nxt in runs):
            raise NotImplementedError(f"the derivative for '{label}' is not implemented.")


def _backward_entry(node, ns, nc):
    """The backward op of a node's (op, static, layout); per next_functions slot, which of
    its outputs is that slot's gradient (-1: none); and whether the node is itself a backward
    (NOTE [double-backward edges])."""
    return (node.op.backward_op(node.static, node.layout, ns, nc), node.layout.grad_slots(),
            node.op.derivative_of is not None, ns if node.op.grad_fn in NONDIFF_SAVED else 0)


_DEPS: dict = _state.register_cache("autograd._dispatch._DEPS", {})


def _reads(op, static, args) -> list:
    """Per input of ``op`` on ``args`` (Tensors, ``_deps.aval``s, constants), the outputs that
    read it (NOTE [double-backward edges]); cached per op, static arguments and input avals."""
    key = (op, static, tuple((a.shape, a.dtype) if hasattr(a, "dtype") else type(a) for a in args))
    deps = _DEPS.get(key)
    if deps is None:
        fn = partial(op.fn, **dict(static)) if static else op.fn
        deps = _DEPS[key] = _deps.input_deps(fn, [a._value if isinstance(a, Tensor) else a for a in args])
    return deps


# NOTE [shape edges]
# Some of torch's backward ops take a forward input whose values no gradient reads: avg_pool2d's
# backward is ``avg_pool2d_backward(grad, self, ...)``, which reads only ``self``'s shape. torch's
# formula for differentiating it gives ``self`` zeros (``zeros_like(self)``), or an undefined
# gradient (convolution's double backward without a weight gradient), but the edge is there: a
# first derivative taken with create_graph requires grad whenever the input does. Such an op
# saves the input and names it in ``shape_edges``; its backward op keeps the edge when recorded
# (``Op.kept_edges`` by the backward op's argument position), and differentiating that node gives
# the zeros JAX computes for an unread input, or None for "undefined".
def _unread_detached(bop, args):
    """``args`` of a backward op about to be recorded (create_graph), with the tensors no
    output reads detached: the recorded node gets no edge to them, as torch's formula has none
    (except an input torch's backward op takes for its shape: NOTE [shape edges])."""
    deps = _reads(bop, (), args)
    kept = bop.kept_edges
    return [a.detach() if not d and isinstance(a, Tensor) and a._rg and i not in kept else a
            for i, (a, d) in enumerate(zip(args, deps))]


def _drop_unread(node, saved, grads, res):
    """The node of a backward op gives None to each input that none of its outputs with an
    incoming gradient reads (NOTE [double-backward edges])."""
    layout = node.layout
    by_pos = dict(zip(layout.save_order(node.op), saved))
    consts, avals = iter(node.consts), iter(layout.avals)
    args = [by_pos[p] if k == SAVED else _deps.aval(*next(avals)) if k == SHAPE else next(consts)
            for p, k in enumerate(layout.kinds)]
    deps = _reads(node.op, node.static, args)
    live = {j for j, g in enumerate(grads) if g is not None}
    kept = node.op.kept_edges
    for s, p in enumerate(layout.edge_pos):
        if res[s] is not None and not (deps[p] & live) and kept.get(p) != "zeros":
            res[s] = None


def _input_shape(node, p):
    layout = node.layout
    kind = layout.kinds[p]
    if kind == SAVED:
        return tuple(node.saved[layout.save_order(node.op).index(p)].get(node, 0).shape)
    if kind == SHAPE:
        return tuple(layout.avals[layout.aval_index(p)][0])
    return tuple(node.consts[layout.const_index(p)].shape)


def _saved_indices(node):
    if node.op.name == "index":      # advanced indexing: the index tensors
        return [Tensor._make(c) for c in node.consts if hasattr(c, "dtype")]
    if node.op.name in ("max_dim", "min_dim"):   # the indices output, recomputed from self
        st = dict(node.static)
        x = node._saved_self
        return (x.argmax if node.op.name == "max_dim" else x.argmin)(st["dim"], st["keepdim"])
    return None


def _saved_key_index(node):
    key = dict(node.static).get("key")
    ints = [m[1] for m in key or () if m[0] == "i"]
    return ints[-1] if ints else None


def _recomputed_indices(method, *names):
    """torch's saved ``indices`` output of a values-and-indices op, recomputed from the saved
    input (the node keeps ``self``; freed after backward, as torch's indices are)."""
    def get(node):
        st = dict(node.static)
        return getattr(node._saved_self, method)(*[st[n] for n in names]).indices
    return get


def _layer_norm_stats(node):
    """torch's saved ``(mean, rstd)`` of a layer norm (its outputs 1 and 2), recomputed from the
    saved input: per row over the normalized dims, kept as size-1 dims."""
    st = dict(node.static)
    x = node._saved_input
    dims = tuple(range(x.ndim - st["n"], x.ndim))
    mean = x.detach().mean(dims, keepdim=True)
    var = x.detach().var(dims, correction=0, keepdim=True)
    return mean, (var + st["eps"]).rsqrt()


# the same for one op: (op name, attribute) -> derive(node)
def _conv_bias_sizes(node):
    """torch's ``ConvolutionBackward0._saved_bias_sym_sizes_opt``: the bias's shape, or ``(0,)``
    when there is no bias (torch turns its empty optional into that)."""
    kinds = node.layout.kinds
    if len(kinds) < 3 or (kinds[2] == CONST and node.consts[node.layout.const_index(2)] is None):
        return (0,)
    return _input_shape(node, 2)


_NONE = object()     # what an _OP_SAVED entry returns for an attribute torch shows as None

_OP_SAVED = {
    ("convolution", "bias_sym_sizes_opt"): _conv_bias_sizes,
    ("logit", "eps"): lambda n: _NONE if dict(n.static).get("eps") is None else dict(n.static)["eps"],
    ("im2col", "self_sym_argsize_minus_2"): lambda n: _input_shape(n, 0)[-2],
    ("im2col", "self_sym_argsize_minus_1"): lambda n: _input_shape(n, 0)[-1],
    ("split", "split_size"): lambda n: dict(n.static)["sizes"][0],
    ("gather", "sparse_grad"): lambda n: False,        # tracegrad has no sparse gradients
    ("elu", "scale"): lambda n: 1,
    ("elu", "input_scale"): lambda n: 1,
    ("native_layer_norm", "normalized_shape"): lambda n: _input_shape(n, 0)[len(_input_shape(n, 0)) - dict(n.static)["n"]:],
    ("topk", "indices"): _recomputed_indices("topk", "k", "dim", "largest", "sorted"),
    ("native_layer_norm", "result1"): lambda n: _layer_norm_stats(n)[0],
    ("native_layer_norm", "result2"): lambda n: _layer_norm_stats(n)[1],
    ("sort", "indices"): _recomputed_indices("sort", "dim", "descending"),
    ("kthvalue", "indices"): _recomputed_indices("kthvalue", "k", "dim", "keepdim"),
    ("median_dim", "indices"): _recomputed_indices("median", "dim", "keepdim"),
    ("cummax", "indices"): _recomputed_indices("cummax", "dim"),
}


# torch's saved attributes that tracegrad derives from what a node holds
_UPSAMPLE_SCALES_BY_DIM = {1: ("scales",), 2: ("scales_h", "scales_w"), 3: ("scales_d", "scales_h", "scales_w")}
_UPSAMPLE_SCALES = {"scales", "scales_d", "scales_h", "scales_w"}

_DERIVED_SAVED = {
    "self_sym_sizes": lambda n: _input_shape(n, 0),
    "self_sym_numel": lambda n: int(math.prod(_input_shape(n, 0))),
    "indices": _saved_indices,
    "index": _saved_key_index,
}


# ---- in-place ops ------------------------------------------------------------------------------

MSG_CUSTOM_FUNCTION_VIEW = (
    "This view was created inside a custom Function (or because an input was returned as-is) and "
    "the autograd logic to handle view+inplace would override the custom backward associated with "
    "the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix "
    "this by cloning the output of the custom Function.")


def check_custom_function_view(t):
    """RuntimeError, as torch's handle_view_on_rebase, when ``t`` -- about to be written in place
    (or marked dirty) with grad mode on -- is a view a custom Function returned (or an input it
    returned as-is), or a view of one (torch propagates that IN_CUSTOM_FUNCTION creation meta):
    rebasing its history would bypass the Function's backward."""
    if STATE[0] and t._rg and "_cfn" in t.__dict__:
        nr, name = t._cfn
        where = ("A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
                 if "_cmeta" in t.__dict__ else f"Output {nr} of {name} is a view and is being modified inplace. ")
        raise RuntimeError(where + MSG_CUSTOM_FUNCTION_VIEW)
    if STATE[0] and t._rg and "_cfn_of" in t.__dict__ and t._gf is not None:
        raise RuntimeError(f"Output {t._out_nr} of {_node_short_name(t._gf)} is a view and is being modified "
                           "inplace. " + MSG_CUSTOM_FUNCTION_VIEW)


def _node_short_name(node):
    """A node's name as torch's view errors write it: ``ViewBackward0`` is "View"."""
    name = node.name()
    return name[:-len("Backward0")] if name.endswith("Backward0") else name


def check_inplace(t):
    # a custom Function's view (or a view of one): torch's IN_CUSTOM_FUNCTION creation meta,
    # checked before the leaf checks as torch does
    check_custom_function_view(t)
    if t._gf is None and t._rg and STATE[0] and t._base is None:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation. Wrap the "
            "update in `with tracegrad.no_grad():` or use .data / .detach() if autograd must not "
            "see it.")
    if (STATE[0] and t._base is not None and t._gf is None and not t._rg and t._base._rg
            and t._base._gf is not None and "_cmeta" not in t.__dict__):
        # a view made before its base got history, whose grad_fn nothing has asked for since:
        # torch's in-place check sees a leaf that requires grad (asking its grad_fn, or using
        # it in an op, regenerates the node and lifts this)
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation. Wrap the "
            "update in `with tracegrad.no_grad():` or use .data / .detach() if autograd must not "
            "see it.")
    if t._base is not None and t._base._rg and STATE[0] and "_cmeta" not in t.__dict__:
        # (a view made in no_grad/inference mode reports that instead, below: torch records
        # NO_GRAD_MODE over MULTI_OUTPUT_NODE as the view's creation meta); checked before the
        # view-of-a-leaf error, as torch's check_inplace handles the view's rebase first
        check_multi_output_view(t)
    if t._base is not None and t._base._gf is None and t._base._rg and STATE[0] and "_cmeta" not in t.__dict__:
        # (a view made in no_grad/inference mode reports its creation mode instead, below: torch's
        # handle_view_on_rebase runs before the view-of-a-leaf check)
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation. "
            "Wrap the update in `with tracegrad.no_grad():` or clone() the leaf first.")
    if STATE[0] and t._rg and t._base is not None and not t._base._rg and "_cmeta" not in t.__dict__:
        # a view given requires_grad_() itself, or a view of one (their base needs no grad)
        if t._gf is None:
            _refuse_rebase(t, "")
        where = t.__dict__.get("_ngview")
        if where is not None:
            # a view (with history) of a view made in no_grad/inference mode, given
            # requires_grad_() in between: torch's handle_view_on_rebase refuses it by the
            # creation meta the view inherited (TestAutograd.test_autograd_inplace_view_of_view)
            _refuse_view_of_view(t, where)
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation. "
            "Wrap the update in `with tracegrad.no_grad():` or clone() the view first.")
    if STATE[0] and t._gf is not None and "_cmeta_of" in t.__dict__:
        _refuse_view_of_view(t, t._cmeta_of)
    if STATE[0] and t._base is not None and "_cmeta" in t.__dict__:
        where = t._cmeta
        raise RuntimeError(
            f"A view was created in {where} and is being modified inplace "
            f"{'in normal mode' if where == 'inference mode' else 'with grad mode enabled'}. "
            "Autograd cannot track it (NOTE [inference views]): clone() the view, or create it "
            f"outside {'inference_mode()' if where == 'inference mode' else 'no_grad()'}.")
    if not STATE[1] and t.__dict__.get("_inference") and "_inference_vc" not in t.__dict__:
        # (an alias detached outside inference mode has a version counter: writable, as torch's)
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not allowed. Make a clone() "
            "to get a normal tensor before doing the inplace update.")


def _refuse_view_of_view(t, where):
    """torch's handle_view_on_rebase for a view (with a grad_fn) of a view made in no_grad or
    inference mode (``where``), written in place."""
    block = "inference_mode" if where == "inference mode" else "no_grad"
    raise RuntimeError(
        f"Output {t._out_nr} of {type(t._gf).__name__.split('Backward')[0]} is a view of a view which was "
        f"created in {where} and is being modified inplace "
        f"{'in normal mode' if where == 'inference mode' else 'with grad mode enabled'}. This use is "
        "ambiguous and forbidden: make both the view and the in-place write either inside the "
        f"{block} block (if the write should not be tracked) or both outside it (if it should).")


def check_multi_output_view(t):
    """RuntimeError, as torch's handle_view_on_rebase, when ``t`` is one of the views an op
    returning several views made (unbind, split, chunk): one node cannot rebase several views'
    histories, so writing one in place (or a custom Function marking it dirty) is refused."""
    for op, _, idx in t._chain:
        if idx is not None:
            raise RuntimeError(
                f"Output {idx} of {op.grad_fn[:-len('Backward0')]} is a view and is being modified inplace. "
                "This view is the output of a function that returns multiple views (unbind, split, "
                "chunk), which do not allow the output views to be modified inplace. Replace the "
                "inplace operation by an out-of-place one, or clone() the output first.")


def _multi_output_index(t):
    for op, _, idx in t._chain:
        if idx is not None:
            return op, idx
    return None


def check_view_rebase(t, args):
    """A view of a base that does not require grad, written in-place with a value that does,
    gets history of its own; torch refuses that for the views it refuses it for when the base
    requires grad: a view a custom Function returned and a multi-output view (unbind/split/
    chunk). Such a view has no grad_fn, so torch words it as a view made without grad."""
    if not STATE[0] or t._rg or t._base is None or not any(isinstance(a, Tensor) and a._rg for a in args):
        return
    _refuse_rebase(t, " by a value that requires grad")


def _refuse_rebase(t, by):
    """torch's handle_view_on_rebase for a view with no grad_fn of a base that needs no grad,
    about to get history of its own (``by`` says why, for the no_grad-view message)."""
    if "_cfn" in t.__dict__:
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace with grad mode "
                           "enabled. " + MSG_CUSTOM_FUNCTION_VIEW)
    where = t.__dict__.get("_ngview")
    if where is not None and not t._base._rg:
        raise RuntimeError(
            f"A view was created in {where} and is being modified inplace "
            f"{'in normal mode' if where == 'inference mode' else 'with grad mode enabled'}{by}. "
            "Autograd cannot track it: clone() the view, or create it outside "
            f"{'inference_mode()' if where == 'inference mode' else 'no_grad()'}.")
    if (not t._base._rg and "_cmeta" not in t.__dict__ and t._chain
            and _multi_output_index(t) is not None):
        raise RuntimeError(
            "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
            "This view is the output of a function that returns multiple views (unbind, split, chunk), "
            "which do not allow the output views to be modified inplace. Replace the inplace operation "
            "by an out-of-place one, or clone() the output first.")


def apply_inplace(op: Op, self: Tensor, args, static=()):
    """``self.<op>_(*args)``: compute ``op(self, *args)`` functionally, cast to self's dtype,
    write it through self's view chain, and rebase autograd history onto the op's node (for a
    view: the base gets a ``CopySlices`` node, the view's grad_fn is regenerated from it)."""
    if _INTERPOSE[0] is not None:
        return _INTERPOSE[0].apply_inplace(op, self, args, static)
    try:
        check_inplace(self)
    except AttributeError:
        if isinstance(self, Tensor):
            raise
        raise not_a_tensor(op.name + "_", self) from None
    if self._base is not None:
        check_view_rebase(self, args)
    for a in args:
        if isinstance(a, Tensor) and a._st is self._st and a is not self:
            _check_no_partial_overlap(self, a, op)
    if _VMAP_LEVELS and not VMAP_DRAW[0]:
        _check_vmap_inplace(op, self, args)
    all_args = (self, *args)
    cap = _CAPTURE[0]
    if cap is not None:
        cap.see_tensors(all_args)
    for a in all_args:
        if isinstance(a, Tensor) and not a._rg and a._base is not None and a._base._rg:
            _stale_view_requires_grad(a)
    record = STATE[0] and op.grad_fn is not None and any(isinstance(a, Tensor) and a._rg for a in all_args)
    if record and op.name == "copy" and self._value.dtype not in _dt.DIFFERENTIABLE:
        # torch's copy_ records nothing into an integer/bool tensor (its hand-written autograd
        # checks self's dtype; fill_/masked_fill_ do record there, as torch's generated ones)
        record = False
    if record and self._base is not None:
        return _inplace_on_view(op, self, args, static)
    arrays = [a._value if isinstance(a, Tensor) else a for a in all_args]
    if cap is not None and cap.vjp:
        arrays = cap.graph_inputs(all_args, arrays, record)
    out = _run_meta_inplace(op, arrays, static) if _LAYOUTS_SEEN[0] else op.run(arrays, static)
    if out.shape != arrays[0].shape:   # an in-place op never grows self (its other operands broadcast to it)
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(out.shape)}")
    if out.dtype != self._value.dtype:
        src, dst = _dt.from_numpy_dtype(out.dtype), self.dtype
        if not _dt.can_cast(src, dst):
            raise RuntimeError(f"result type {_torch_name(src)} can't be cast to the desired output type {_torch_name(dst)}")
    if record:
        res = Tensor._make(out)
        if _SAVED_HOOKS and 0 in op.save_pos:
            # torch hands a saved_tensors_hooks pack function a clone of self's old value (the
            # op then writes self), not self: allow_mutation_on_saved_tensors counts what was
            # written after being saved by that, and a user's hook must not keep the written
            # tensor. The snapshot has self's history, so the node's edges are the same.
            node = _record(op, (snapshot(self), *args), static, (res,))
        else:
            node = _record(op, all_args, static, (res,))
            _snapshot_saved(node, self)
        self._write(out)
        old, old_nr = self._gf, self._out_nr
        self._gf, self._out_nr, self._rg, self._gf_ver = node, 0, True, self._vc[0]
        if self._retains_grad:  # retain_grad follows the tensor onto its new history
            _move_retain_grad(self, old, old_nr, node)
        # result-saving ops saved (an alias of) `res`, which shares nothing with self; re-point
        # it at an alias of self (self itself would hold its own node: a reference cycle)
        for s in node.saved:
            if s.is_output and s.tensor is not None and s.tensor._st is res._st:
                s.tensor, s.version = self.detach(), self._vc[0]
        return self
    if cap is not None and cap.vjp:          # (self may share its storage with a tensor in the graph)
        # the whole storage keeps its derivative, a view's base included (NOTE [gradients in a
        # differentiated trace]): a view made under no_grad holds a stop_gradient'ed value
        old = self._st.array
        self._write(out)
        cap.unrecorded_write(self._st, old)
        return self
    self._write(out)
    return self


_VMAP_LEVELS = _state.VMAP_SAME   # non-empty while a vmap'd function runs (one entry per level)
# set while an in-place random draw writes its values: a per-example draw into an unbatched
# tensor follows vmap's randomness rules (_api/inplace.py's _random_inplace), not this check
VMAP_DRAW = [False]


def _batch_levels(array):
    """The vmap levels (JAX batching traces) at which ``array`` is batched."""
    levels = set()
    while type(array).__name__ == "BatchTracer":   # (JAX keeps the class private)
        if array.batch_dim is not None:
            levels.add(id(array._trace))
        array = array.val
    return levels


def _check_vmap_inplace(op, self, args):
    """torch's RuntimeError for an in-place op under vmap whose other operand is batched at a
    level where self is not (an unbatched self cannot hold per-example results)."""
    mine = None
    for a in args:
        if isinstance(a, Tensor) and type(a._st.array).__name__ == "BatchTracer":
            if mine is None:
                mine = _batch_levels(self._st.array)
            if not _batch_levels(a._st.array) <= mine:
                raise RuntimeError(f"vmap: {op.name}_(self, *extra_args) is not possible because there exists a "
                                   "Tensor `other` in extra_args that has more elements than `self`. This happened "
                                   "due to `other` being vmapped over but `self` not being vmapped over in a vmap. "
                                   "Please try to use out-of-place operators instead.")


def _check_no_partial_overlap(self, other, op=None):
    """torch refuses an in-place op whose input shares some, but not all, of the written elements
    (``x[1:].add_(x[:-1])``): the result would depend on the write order. torch can only tell
    when both tensors are dense blocks of memory; two strided views (``x[:, 1:, :2]`` and
    ``x[:, :-1, :2]``) pass its check and are copied element by element, which ``copy_`` mirrors
    (``sequential_copy_sources``); other ops on such views still raise here (their write-order
    results are not reproduced)."""
    mine, theirs = _tensor_mod.element_positions(self), _tensor_mod.element_positions(other)
    if mine.shape == theirs.shape and (mine == theirs).all():
        return
    if op is not None and op.name == "copy" and not (_dense(mine) and _dense(theirs)):
        return
    if _np.intersect1d(mine, theirs).size:
        raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                           "refer to a single memory location. Please clone() the tensor before performing the "
                           "operation.")


def _dense(pos):
    """torch's ``is_non_overlapping_and_dense`` from element positions: distinct positions that
    fill one block of storage."""
    if pos.size <= 1:
        return True
    flat = pos.reshape(-1)
    return int(flat.max() - flat.min()) + 1 == flat.size and _np.unique(flat).size == flat.size


def sequential_copy_sources(dst, src):
    """Where ``dst.copy_(src)`` reads each element from when the two are overlapping strided views
    of one storage (None when no read sees an earlier write): torch copies element by element in
    the destination's memory order, so an element whose source was already overwritten gets the
    value written there (S2-MLP's ``x[:, 1:] = x[:, :w-1]`` on a channel slice repeats row 0).
    Returns flat storage positions of the original values, one per element of ``dst``."""
    d_pos = _tensor_mod.element_positions(dst)
    s_pos = _np.broadcast_to(_tensor_mod.element_positions(src), d_pos.shape)
    if _dense(d_pos) and _dense(s_pos):
        return None
    order = _np.argsort(d_pos.reshape(-1), kind="stable")
    d, s = d_pos.reshape(-1)[order], s_pos.reshape(-1)[order]
    k = _np.arange(d.size)
    j = _np.minimum(_np.searchsorted(d, s), d.size - 1)
    parent = _np.where((d[j] == s) & (j < k), j, k)      # the earlier write this read sees
    if (parent == k).all():
        return None
    while True:                                          # follow chains of writes to their start
        nxt = parent[parent]
        if (nxt == parent).all():
            break
        parent = nxt
    roots = _np.empty_like(s)
    roots[order] = s[parent]
    return roots.reshape(d_pos.shape)


def _move_retain_grad(t, old, old_nr, new):
    if old is not None and old._retains_grad:
        old._retains_grad.pop(old_nr, None)
    if new._retains_grad is None:
        new._retains_grad = {}
    new._retains_grad[0] = weakref.ref(t)


def _snapshot_saved(node, t):
    """torch saves a clone of ``self`` when an in-place op needs its old value; JAX arrays are
    immutable, so the clone is a new tensor over the same array, carrying self's old history.
    Only the ``self`` slot (input 0) gets the clone: ``t`` passed again as another operand
    (``x.mul_(x)``, ``x.addcmul_(x, x)``) stays saved as itself, which the write then outdates,
    so backward raises torch's "modified by an inplace operation" error."""
    for s, p in zip(node.saved, node.layout.save_order(node.op)):
        if p == 0 and s.tensor is t and not s.is_output:
            s.tensor, s.version = snapshot(t), 0


def snapshot(t):
    """A new tensor over ``t``'s current array carrying ``t``'s history: what ``t`` was before an
    in-place write, for whatever must still read (and differentiate) that value after it."""
    snap = Tensor._make(t._value if t._chain else owned_array(t._st))   # a view's value is a new array
    snap._gf, snap._out_nr, snap._rg = t._gf, t._out_nr, t._rg
    if t._gf is None and t._rg:
        snap._acc = t._acc
    if "_fw" in t.__dict__:     # a dual tensor: the snapshot keeps (a copy of) its old tangent
        SNAPSHOT_TANGENT[0](t, snap)
    return snap


# set by autograd/_forward_ad_impl.py (which imports this module): gives a snapshot of a dual
# tensor a copy of its tangent, which the in-place op is about to overwrite
SNAPSHOT_TANGENT: list = [None]


def _torch_name(d):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}[d.name]


def _inplace_on_view(op, view, args, static):
    _tensor_mod.check_no_internal_overlap(view)   # CopySlices writes the base: check the view itself
    base = view._base
    chain = view._chain[len(base._chain):]
    cs, pos = _derived.copy_slices_op(chain, op, static, len(args))
    if _SAVED_HOOKS and 0 in cs.save_pos:
        # pack hooks get the base's old value, never the base the write then changes (as in
        # apply_inplace): allow_mutation_on_saved_tensors must not count it as written
        res = apply_op(cs, (snapshot(base), *args, *pos))
        node = res._gf
    else:
        res = apply_op(cs, (base, *args, *pos))
        node = res._gf
        if node is None:
            # an integer/bool base (a grad-requiring float written into it: ``ints[0] = x.round()``)
            # gets no history: its values change, as torch's (whose backward could not run there)
            base._write(res._value)
            return view
        _snapshot_saved(node, base)
    base._write(res._value)
    old, old_nr = base._gf, base._out_nr
    base._gf, base._out_nr, base._rg = node, 0, True
    if base._retains_grad:   # as torch: the base's retained grad is that of its new history
        _move_retain_grad(base, old, old_nr, node)
    view._gf_ver = -1     # regenerate from the base's new history on next access
    return view


# ---- view regeneration ---------------------------------------------------------------------------

def record_view_of_base(t):
    """Regenerate a view's grad_fn after its base was written (torch: AsStridedBackward0)."""
    base = t._base
    op, pos = _derived.view_of_base_op(t._chain[len(base._chain):], "_replay" in t.__dict__)
    saved_state = STATE[0]
    STATE[0] = True
    try:
        node = _record(op, (base, *pos), (), (Tensor._make(None),))
    finally:
        STATE[0] = saved_state
    if isinstance(node, OpNode) and node.name() == "AsStridedBackward0":
        # torch's node is an as_strided of the base: it shows the view's geometry as saved
        node.shown = (("size", tuple(t.shape)), ("stride", tuple(t.stride())),
                      ("storage_offset", t.storage_offset()))
    t._gf, t._out_nr, t._rg, t._gf_ver = node, 0, True, t._vc[0]
    return node


def view_grad_fn(t):
    """The grad_fn of a view whose base requires grad. After an in-place write anywhere in the
    base's storage, torch regenerates the view's grad_fn from the base's new history
    (``AsStridedBackward0``); so do we."""
    gf = t._gf
    if gf is not None and t._gf_ver == t._vc[0]:
        return gf
    cmeta = t.__dict__.get("_cmeta")
    if cmeta is not None:   # NOTE [inference views]
        # torch raises once the storage was written since the view was made, whether the base
        # is a leaf or has history (its grad_fn would need a rebase it cannot do)
        if t._gf_ver != t._vc[0]:
            normal = "in normal mode" if cmeta == "inference mode" else "with grad mode enabled"
            raise RuntimeError(
                f"A view was created in {cmeta} and its base or another view of its base has "
                f"been modified inplace {normal}. Autograd cannot rebase such a view: clone() "
                "it, or create it outside that mode.")
        return None
    cfn = t.__dict__.get("_cfn")
    if cfn is not None and gf is not None:
        raise RuntimeError(f"Output {cfn[0]} of {cfn[1]} is a view and its base or another view of its "
                           "base has been modified inplace. " + MSG_CUSTOM_FUNCTION_VIEW)
    if gf is not None and "_cfn_of" in t.__dict__:   # a view of such a view: the same creation meta
        raise RuntimeError(f"Output {t._out_nr} of {_node_short_name(gf)} is a view and its base or another "
                           "view of its base has been modified inplace. " + MSG_CUSTOM_FUNCTION_VIEW)
    if (gf is not None or (t._base is not None and t._base._rg)) and t._gf_ver != t._vc[0] \
            and _multi_output_index(t) is not None:
        # one of several views (unbind, split, chunk) or a view of one, its storage written since
        # (also by an optimizer step under no_grad): torch's MULTI_OUTPUT_NODE creation meta
        # forbids the rebase its grad_fn would need, so asking for it raises
        who = ("A view was created in no_grad mode" if gf is None
               else f"Output {t._out_nr} of {_node_short_name(gf)} is a view")
        raise RuntimeError(f"{who} and its base or another view of its base has been modified inplace. This view "
                           "is the output of a function that returns multiple views (unbind, split, chunk), whose "
                           "history cannot be rebased; take the views again after the in-place write, or clone() "
                           "them first.")
    # a leaf base too: torch regenerates a view of a parameter written in place (an optimizer
    # step under no_grad) as AsStridedBackward0 into its AccumulateGrad; hooks registered on
    # the view's old node stay there, as torch's
    old_nr = t._out_nr
    new = record_view_of_base(t)
    if t._retains_grad and gf is not None and new is not None and new is not gf:
        _move_retain_grad(t, gf, old_nr, new)     # torch moves retain_grad to the new grad_fn
    return new


_tensor_mod.VIEW_GRAD_FN[0] = view_grad_fn   # Tensor.grad_fn of a view calls it (tensor layer)
