"""Forward-mode AD's machinery: the dual level, tangents on tensors, and tangent propagation
through every op (``autograd/forward_ad.py`` is the public face).

A tangent is an ordinary Tensor kept in its primal's ``__dict__["_fw"]``. While a level is open,
``_state.FORWARD_AD[0]`` holds it, and dispatch (``apply_op``, ``apply_inplace``,
``Function.apply``) hands it each op; ops whose inputs carry no tangent go straight back to
dispatch. The level propagates tangents so:

* a table op: its output tangents come from the op's ``jvp_op`` (``_ops/derived.py``: ``jax.jvp``
  of the op's pure function, jitted and cached per (op, static, which inputs carry tangents)),
  applied through ``apply_op`` like any op, so tangents record reverse-mode history when a
  primal or tangent requires grad (reverse-over-forward comes for free);
* a view op: the output's tangent is the same view of the input's tangent, so writing a dual
  view's tangent writes its base's (torch: a view's forward grad is a view of its base's);
* an in-place op: the new tangent is computed from the old values, then copied into the written
  tensor's tangent (created as zeros over its base when it had none, as torch), so views that
  share it see the write;
* integer and bool outputs, outputs past an op's ``n_diff`` and ops without a ``grad_fn`` get
  no tangent.

While the level computes (the primal op, the tangent op), ``FORWARD_AD[0]`` is None, so the
ops it runs itself are plain ops. Exiting the level drops every tangent it handed out.
"""
from __future__ import annotations

import weakref

from .. import _state
from .._ops import dtypes as _dt
from .._ops.derived import jvp_op
from .._ops.registry import OPS
from .._tensor import factories as _factories
from .._tensor.tensor import Tensor, _JaxTracer
from . import _dispatch
from .function import Function

_FWD = _state.FORWARD_AD
_LEVEL: list = [-1]     # the open level's number (torch's ``forward_ad._current_level``), -1: none
_OPEN: list = [None]    # the open Level, also while it computes (when FORWARD_AD[0] is None)
# torch's forward-grad mode (``torch._C._set_fwd_grad_enabled``): while off, the open level stays
# open but propagates nothing and ``unpack_dual`` sees no tangent (torch's ``_fw_grad`` reads as
# undefined); ``make_dual`` still attaches its tangent, seen once the mode is back on
_FW_ENABLED: list = [True]


def set_fwd_grad_enabled(enabled: bool) -> None:
    """Set the forward-grad mode; the open level's dispatch slot follows it."""
    _FW_ENABLED[0] = bool(enabled)
    if _OPEN[0] is not None:
        _state.set_forward_ad(_OPEN[0] if enabled else None)

MSG_NO_LEVEL = ("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                "enter_dual_level() first.")
MSG_NESTED = ("Nested forward mode AD is not supported at the moment: tracegrad, as torch, has one "
              "dual level; use tracegrad.func.jvp for higher-order forward derivatives.")
MSG_CAPTURED = ("forward-mode AD: a dual tensor reached an op inside a traced region (a tracegrad.func "
                "transform, a checkpoint recompute or a compiled region), whose results would lose their "
                "tangents; keep dual tensors out of the transformed function, or use tracegrad.func.jvp "
                "for forward derivatives there.")


class Level:
    """An open dual level: the tensors it gave tangents to (to drop them at exit), and the
    dispatch of ops while it is open."""

    def __init__(self, number):
        self.number = number
        self.duals: list = []   # weak references to every tensor given a tangent at this level
        self._compact_at = 1024

    # ---- dispatch ----------------------------------------------------------------------------
    def apply_op(self, op, args, static):
        tangents = [tangent_of(a) if isinstance(a, Tensor) else None for a in args]
        _state.set_forward_ad(None)
        try:
            out = _dispatch.apply_op(op, args, static)
            if op.view:
                self._view(op, args, static, tangents[0], out)
            elif op.grad_fn is not None and any(t is not None for t in tangents):
                self._attach(op, args, static, tangents, out)
            return out
        finally:
            _state.set_forward_ad(self)

    def _view(self, op, args, static, tangent, out):
        if tangent is not None:         # the same view of the tangent
            _check_eager(args)
            tan = _dispatch.apply_op(op, (tangent, *args[1:]), static)
            for o, t in zip(_as_tuple(out), _as_tuple(tan)):
                self.set_tangent(o, t)
            return
        root = _alias_root(args[0])
        if root is not None:            # a view of make_dual/unpack_dual's alias: see _fw_base
            for o in _as_tuple(out):
                o.__dict__["_fw_root"] = root

    def _attach(self, op, args, static, tangents, out):
        if op.no_forward_ad is not None:
            raise NotImplementedError(f"Trying to use forward AD with {op.no_forward_ad} that does not support it "
                                      "because it has not been implemented yet.")
        _check_eager((*args, *tangents))
        outs = _as_tuple(out)
        n_diff = len(outs) if op.n_diff is None else op.n_diff
        out_idx = tuple(i for i, o in enumerate(outs[:n_diff]) if o._value.dtype in _dt.DIFFERENTIABLE)
        if not out_idx:
            return
        mask = tuple(t is not None for t in tangents)
        jop = jvp_op(op, static, mask, None if op.n_out == 1 else out_idx)
        res = _dispatch.apply_op(jop, (*args, *(t for t in tangents if t is not None)))
        for i, t in zip(out_idx, _as_tuple(res)):
            self.set_tangent(outs[i], t)
        if op.saves_result and outs[0]._gf is not None:
            self._share_with_saved_result(outs[0])

    def _share_with_saved_result(self, t):
        """The alias of ``t`` its node saved (``exp``'s result) gets ``t``'s tangent, so a
        backward run under the level differentiates through it (forward-over-reverse)."""
        tangent = t.__dict__.get("_fw")
        for s in getattr(t._gf, "saved", ()):
            if s.is_output and s.tensor is not None and tangent is not None:
                self.set_tangent(s.tensor, tangent)

    def apply_inplace(self, op, self_t, args, static):
        tangents = [tangent_of(a) if isinstance(a, Tensor) else None for a in (self_t, *args)]
        _state.set_forward_ad(None)
        try:
            if op.grad_fn is None or all(t is None for t in tangents):
                return _dispatch.apply_inplace(op, self_t, args, static)
            _check_eager((self_t, *args, *tangents))
            # the new tangent reads the old values: compute it before the write
            mask = tuple(t is not None for t in tangents)
            jop = jvp_op(op, static, mask, None)
            # self's old value with its old history: the write below must not invalidate what
            # the tangent's reverse-mode node saved
            old = _dispatch.snapshot(self_t)
            new = _dispatch.apply_op(jop, (old, *args, *(t for t in tangents if t is not None)))
            _dispatch.apply_inplace(op, self_t, args, static)
            if self_t._value.dtype not in _dt.DIFFERENTIABLE:
                return self_t
            tan = tangents[0] if tangents[0] is not None else self.zero_tangent(self_t)
            _dispatch.apply_inplace(OPS["copy"], tan, (new,))
            if op.saves_result and self_t._gf is not None:
                self._share_with_saved_result(self_t)
            return self_t
        finally:
            _state.set_forward_ad(self)

    # ---- custom Functions ---------------------------------------------------------------------
    def function_tangents(self, cls, args):
        """The tangents ``cls.jvp`` receives, one per ``apply`` argument (zeros for a tensor
        without tangent, None for a non-tensor), or None when no argument is dual."""
        tangents = [tangent_of(a) if isinstance(a, Tensor) else None for a in args]
        if all(t is None for t in tangents):
            return None
        if cls.jvp is Function.jvp:
            raise NotImplementedError(f"You must implement the jvp function for custom autograd.Function "
                                      f"{cls.__name__} to use it with forward mode AD.")
        # (an integer or bool tensor has no tangent at all: None, as torch)
        return [t if t is not None or not isinstance(a, Tensor) or a._value.dtype not in _dt.DIFFERENTIABLE
                else _factories.zeros(tuple(a.shape), dtype=a.dtype) for a, t in zip(args, tangents)]

    def function_outputs(self, cls, ctx, tangents, result, nondiff=frozenset(), args=(), outs=(), dirty=frozenset()):
        """Run ``cls.jvp(ctx, *tangents)`` and give its tangents to the Function's outputs
        (``result``; ``outs`` are what forward returned, ``args`` what apply got, ``dirty`` the
        ids ``mark_dirty`` named). RuntimeError, as torch's _process_forward_mode_AD, for a
        wrong count or shape, a tangent for a non-differentiable output, a dirty input's tangent
        not modified in place and returned as-is, or a view of an input (or an input returned
        as-is) whose tangent is not the same view of that input's tangent."""
        given = [tangent_of(a) if isinstance(a, Tensor) else None for a in args]   # the real ones
        versions = [None if t is None else t._vc[0] for t in given]
        _state.set_forward_ad(None)
        ctx._in_jvp = True
        try:
            out_t = cls.jvp(ctx, *tangents)
        finally:
            ctx._in_jvp = False
            _state.set_forward_ad(self)
        out_t = _as_tuple(out_t)
        if len(out_t) != len(result):
            raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of forward "
                               f"gradients (expected {len(result)}, got {len(out_t)})")
        for i, (o, t) in enumerate(zip(result, out_t)):
            if t is None:
                continue
            if not isinstance(o, Tensor) or id(o) in nondiff or o._value.dtype not in _dt.DIFFERENTIABLE:
                raise RuntimeError(f"Function's jvp returned a gradient at position {i}, but the corresponding "
                                   "forward output is not a differentiable Tensor. You should return None at "
                                   "that position instead.")
            if not isinstance(t, Tensor) or tuple(t.shape) != tuple(o.shape):
                raise RuntimeError(f"function {cls.__name__}Backward's jvp returned a forward gradient of "
                                   f"shape {list(getattr(t, 'shape', ()))} for an output of shape "
                                   f"{list(o.shape)}; return one tensor of the output's shape per output.")
            if i < len(outs) and isinstance(outs[i], Tensor):
                _check_function_tangent(outs[i], t, args, given, versions, dirty)
            self.set_tangent(o, t)

    def zero_tangent(self, t):
        """A zero tangent for ``t``, which had none; for a view, a view of a zero tangent given
        to its base (torch: the view's forward grad is a view of its base's)."""
        base = _fw_base(t)
        if base is None:
            tan = _factories.zeros(tuple(t.shape), dtype=t.dtype)
        else:
            btan = base.__dict__.get("_fw")
            if btan is None:
                btan = _factories.zeros(tuple(base.shape), dtype=base.dtype)
                self.set_tangent(base, btan)
            tan = _view_of(btan, t._chain[len(base._chain):])
        self.set_tangent(t, tan)
        return tan

    def set_tangent(self, t, tangent):
        t.__dict__["_fw"] = tangent
        duals = self.duals
        duals.append(weakref.ref(t))
        if len(duals) >= self._compact_at:    # a long level (a loop): forget dead tensors
            self.duals = [r for r in duals if r() is not None]
            self._compact_at = max(1024, 2 * len(self.duals))

    def drop_tangents(self):
        for r in self.duals:
            t = r()
            if t is not None:
                t.__dict__.pop("_fw", None)
        self.duals = []


def _check_function_tangent(out, tangent, args, given, versions, dirty):
    """torch's view and in-place checks on the tangent a custom Function's jvp returned for
    forward's output ``out`` (``given``: the inputs' own tangents, ``versions`` theirs before
    jvp ran)."""
    if id(out) in dirty:
        j = next((k for k, a in enumerate(args) if a is out), None)
        if j is None or given[j] is None:
            return
        if tangent._vc[0] == versions[j]:
            raise RuntimeError("An inplace custom Function is not modifying the forward mode gradients inplace. If "
                               "the forward is modifying an input inplace, then the jvp function must modify the "
                               "corresponding gradient inplace.")
        if tangent is not given[j]:
            raise RuntimeError("An inplace custom Function is not returning the forward mode gradients as-is. If "
                               "the forward is modifying an input inplace, then the jvp function must modify the "
                               "gradient inplace and return it as-is.")
        return
    base = out._base
    j = next((k for k, a in enumerate(args) if isinstance(a, Tensor) and given[k] is not None and
              (a is out or (base is not None and (a is base or a._base is base)))), None)
    if j is None:
        return
    if tangent._base is None:
        raise RuntimeError("A custom Function's forward is returning a view (or an input as-is) but the jvp is not "
                           "returning a view: return the same view of the input's tangent (e.g. t.view_as(t)).")
    tin = given[j]
    if tin._base is not None and tangent._base is not tin._base:
        raise RuntimeError("A custom Function is returning a view but the jvp is not returning a view of the same "
                           "base as the given grad input.")
    if tin._base is None and tangent._base is not tin:
        raise RuntimeError("A custom Function is returning a view but the jvp is not returning a view of the given "
                           "grad input.")


def _snapshot_tangent(t, snap):
    level = _OPEN[0]
    if level is not None:
        level.set_tangent(snap, plain(_dispatch.apply_op, OPS["clone"], (t.__dict__["_fw"],)))


_dispatch.SNAPSHOT_TANGENT[0] = _snapshot_tangent


def _check_eager(tensors):
    """Tangents propagate on concrete values only: inside a captured region or a JAX trace
    (tracegrad.func transforms, checkpoint's recompute) the outputs of the region would silently
    lose them, so a dual tensor meeting a trace is an error."""
    if _state.CAPTURE[0] is not None or any(isinstance(t, Tensor) and isinstance(t._value, _JaxTracer)
                                             for t in tensors):
        raise RuntimeError(MSG_CAPTURED)


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _view_of(tangent, chain):
    """``tangent`` seen through the view ``chain`` (entries ``(op, static, output index)``)."""
    for op, static, idx in chain:
        tangent = _dispatch.apply_op(op, (tangent,), static)
        if idx is not None:
            tangent = tangent[idx]
    return tangent


def tangent_of(t):
    """``t``'s tangent at the open level, or None. A view made before its base got a tangent
    (an in-place op made the base dual) sees the same view of the base's tangent."""
    d = t.__dict__
    tan = d.get("_fw")
    if tan is not None:
        return tan
    base = _fw_base(t)
    btan = None if base is None else base.__dict__.get("_fw")
    if btan is None:
        return None
    tan = plain(_view_of, btan, t._chain[len(base._chain):])
    _OPEN[0].set_tangent(t, tan)
    return tan


def _fw_base(t):
    """The tensor whose tangent ``t``'s tangent is a view of: ``t._base``, except that the
    aliases ``make_dual``/``unpack_dual`` return share no tangent with their base (torch: forward
    non-differentiable views), so they and the views taken of them stop at the alias."""
    d = t.__dict__
    if "_fw_alias" in d:
        return None
    return d.get("_fw_root", t._base)


def _alias_root(t):
    if not isinstance(t, Tensor):
        return None
    d = t.__dict__
    return t if "_fw_alias" in d else d.get("_fw_root")


def mark_alias(t):
    """Mark ``t``, a view made by make_dual/unpack_dual, as sharing no tangent with its base."""
    t.__dict__["_fw_alias"] = True
    return t


def plain(fn, *args):
    """``fn(*args)`` with tangent propagation off: the ops it runs are plain ops."""
    prev = _FWD[0]
    _state.set_forward_ad(None)
    try:
        return fn(*args)
    finally:
        _state.set_forward_ad(prev)
