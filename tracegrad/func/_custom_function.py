"""A user's ``autograd.Function`` inside a ``tracegrad.func`` transform: its own rules, as torch.

torch.func applies a custom Function level by level: at a reverse-mode level (grad, vjp,
jacrev) the level's gradient comes from the Function's ``backward``, at a forward-mode level
(jvp, jacfwd) its tangent from the Function's ``jvp``; whatever the rule computes is itself
differentiated by the levels outside. Tracing through ``forward`` instead would give the
mathematical derivative of forward, silently different from a deliberately non-mathematical
backward (a straight-through estimator, a clipped gradient).

The same structure in JAX: the innermost open level (``_closure.LEVELS[-1]``) decides between
``jax.custom_vjp`` (fwd runs forward and ``setup_context``; bwd runs ``backward``) and
``jax.custom_jvp`` (the rule runs forward, ``setup_context`` and ``jvp``). The primal inside
either is the same Function applied with that level closed (``_outer``), so each enclosing
level again uses the Function's rule for its own kind (``jacfwd(jacrev(f))``: ``backward`` for
the inner level, and ``backward``'s own ops differentiated by the outer forward level, as torch).
With no level left the Function's plain ``apply`` runs ``forward`` on the traced values.

Tensors reach ``backward`` as the custom_vjp's residuals: what ``save_for_backward`` got and the
Tensors stored as ctx attributes; other ctx attributes are Python values kept on the ctx.
"""
from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np

from .. import _state
from .._ops.dtypes import DIFFERENTIABLE
from .._tensor.tensor import Tensor
from ..autograd.function import Function, _backward_cls
from . import _closure

_Tracer = jax.core.Tracer


def handles(cls, args) -> bool:
    """Whether ``cls.apply(*args)`` goes through a transform level's rule here: a user's
    Function (tracegrad's own trace through), called with a traced Tensor argument, inside an
    open level that differentiates (a reverse level under ``no_grad`` makes constants instead:
    NOTE [grad mode inside transforms] in ``_closure``)."""
    levels = _closure.LEVELS
    if not levels or cls.__module__.startswith("tracegrad."):
        return False
    if levels[-1] == "reverse" and not _state.GRAD_MODE[0]:
        return False
    return any(isinstance(a, Tensor) and isinstance(a._st.array, _Tracer) for a in args)


@contextlib.contextmanager
def _outer():
    """The innermost transform level closed while the Function's primal runs at the levels
    outside it (its entry restored afterwards)."""
    kind, inputs = _closure.LEVELS.pop(), _closure.INPUTS.pop()
    try:
        yield
    finally:
        _closure.LEVELS.append(kind)
        _closure.INPUTS.append(inputs)


class _Call:
    """One ``apply`` of ``cls`` at the innermost level: the arguments, which of them are
    Tensors, and (once forward ran) the output's structure."""

    def __init__(self, cls, args):
        self.cls, self.args = cls, args
        self.pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.structure = None     # (is_tuple, per output: None for a Tensor, else the value)

    def tensors(self, arrays):
        call = list(self.args)
        for i, a in zip(self.pos, arrays):
            call[i] = Tensor._make(a)
        return tuple(call)

    def primal(self, *arrays):
        """The Function applied to ``arrays`` at the enclosing levels: the output Tensors' arrays."""
        with _outer():
            out = self.cls.apply(*self.tensors(arrays))
        is_tuple = isinstance(out, tuple)
        outs = out if is_tuple else (out,)
        self.structure = (is_tuple, tuple(None if isinstance(o, Tensor) else o for o in outs))
        return tuple(o._value for o in outs if isinstance(o, Tensor))

    def output(self, arrays):
        """Forward's output (a Tensor or tuple, non-Tensors in place) holding ``arrays``."""
        it = iter(arrays)
        is_tuple, kinds = self.structure
        outs = tuple(Tensor._make(next(it)) if k is None else k for k in kinds)
        return outs if is_tuple else outs[0]

    def context(self, arrays, out_arrays, perturbed=None):
        """A fresh ctx of the Function's node class, after ``setup_context`` on this level's
        inputs and outputs; its ``_in_meta``/``_out_meta`` as ``BackwardCFunction.apply`` reads.
        ``perturbed``: per Tensor argument, whether this level differentiates it (reverse mode;
        torch's ``needs_input_grad`` is False for an argument the transform does not track)."""
        ins = self.tensors(arrays)
        output = self.output(out_arrays)
        ctx = _backward_cls(self.cls)()
        flags = iter(perturbed if perturbed is not None else [True] * len(self.pos))
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and next(flags) and a._value.dtype in DIFFERENTIABLE
                                     for a in ins)
        self.cls.setup_context(ctx, ins, output)
        outs = output if isinstance(output, tuple) else (output,)
        nondiff = {id(t) for t in ctx.non_differentiable}
        ctx._in_meta = tuple((tuple(a.shape), a.dtype, n) if isinstance(a, Tensor) else None
                             for a, n in zip(ins, ctx.needs_input_grad))
        ctx._out_meta = tuple((tuple(o.shape), o.dtype, id(o) in nondiff) if isinstance(o, Tensor) else (None, None, True)
                              for o in outs)
        ctx.dirty_tensors = ctx.non_differentiable = ()
        return ctx, ins, outs


# ---- reverse mode: jax.custom_vjp ---------------------------------------------------------------
def _residuals(ctx):
    """The Tensors ``backward`` reads: ``save_for_backward``'s (None kept) and those stored as
    ctx attributes, directly or in a list/tuple, as (arrays, how to put them back)."""
    saved = tuple(ctx.to_save)
    attrs = {}
    for k, v in vars(ctx).items():
        if k.startswith("_") or k in ("to_save", "saved_for_forward"):
            continue
        if isinstance(v, Tensor):
            attrs[k] = (None, 1)
        elif isinstance(v, (list, tuple)) and v and any(isinstance(e, Tensor) for e in v):
            attrs[k] = (type(v), len(v))
    arrays = [t._value for t in saved if t is not None]
    for k, (kind, _) in attrs.items():
        v = vars(ctx)[k]
        arrays.extend(e._value for e in ((v,) if kind is None else v) if isinstance(e, Tensor))
    layout = (tuple(t is None for t in saved), {k: (kind, tuple(isinstance(e, Tensor) for e in
                                                                 ((vars(ctx)[k],) if kind is None else vars(ctx)[k])))
                                               for k, (kind, _) in attrs.items()})
    return tuple(arrays), layout


def _restore(ctx, arrays, layout):
    none_mask, attrs = layout
    it = iter(arrays)
    ctx.to_save = tuple(None if is_none else Tensor._make(next(it)) for is_none in none_mask)
    ctx._saved = None
    for k, (kind, mask) in attrs.items():
        old = (vars(ctx)[k],) if kind is None else vars(ctx)[k]
        new = [Tensor._make(next(it)) if m else e for e, m in zip(old, mask)]
        setattr(ctx, k, new[0] if kind is None else kind(new))


def _reverse(call, arrays):
    ctxs = []

    @jax.custom_vjp
    def fn(*xs):
        return call.primal(*xs)

    # symbolic zeros (jax's CustomVJPPrimal / SymbolicZero): fwd learns which arguments this
    # level differentiates (ctx.needs_input_grad), bwd which outputs got no gradient (None for
    # backward, or zeros unless ctx.set_materialize_grads(False): BackwardCFunction.apply)
    def fwd(*ps):
        xs = tuple(p.value for p in ps)
        out = call.primal(*xs)
        ctx, _, _ = call.context(xs, out, tuple(p.perturbed for p in ps))
        res, layout = _residuals(ctx)
        ctx.to_save = ()
        ctxs.append((ctx, layout))
        return out, res

    def bwd(res, cts):
        ctx, layout = ctxs[-1]
        _restore(ctx, res, layout)
        grads = []
        for c, (shape, dtype, nondiff) in zip(cts, _tensor_meta(ctx)):
            zero = isinstance(c, jax.custom_derivatives.SymbolicZero) or c.dtype == jax.dtypes.float0
            grads.append(None if nondiff or zero else Tensor._make(c))
        # grad mode on: the levels outside this one differentiate backward's ops (a reverse
        # level makes what runs under no_grad its constant: NOTE [grad mode inside transforms])
        with _state_grad(True):
            got = ctx.apply(_spread(ctx, grads))
        out = []
        for a, g in zip(arrays, got):
            if g is None or not jnp.issubdtype(a.dtype, jnp.inexact):
                out.append(None)
            else:
                out.append(g._value.astype(a.dtype))
        return tuple(out)

    fn.defvjp(fwd, bwd, symbolic_zeros=True)
    return fn(*arrays)


def _tensor_meta(ctx):
    """The output metadata of forward's Tensor outputs (the custom_vjp's outputs), in order."""
    return [m for m in ctx._out_meta if m[0] is not None]


def _spread(ctx, grads):
    """One gradient per forward output (None for a non-Tensor one), from the Tensor outputs'."""
    it = iter(grads)
    return [next(it) if m[0] is not None else None for m in ctx._out_meta]


@contextlib.contextmanager
def _state_grad(mode):
    prev = _state.GRAD_MODE[0]
    _state.GRAD_MODE[0] = mode
    try:
        yield
    finally:
        _state.GRAD_MODE[0] = prev


# ---- forward mode: jax.custom_jvp ---------------------------------------------------------------
def _forward(call, arrays):
    cls = call.cls

    @jax.custom_jvp
    def fn(*xs):
        return call.primal(*xs)

    @fn.defjvp
    def rule(primals, tangents):
        out = call.primal(*primals)
        ctx, ins, outs = call.context(primals, out)
        it = iter(tangents)
        given = []
        for a in ins:
            if not isinstance(a, Tensor):
                given.append(None)
                continue
            t = next(it)
            given.append(None if t.dtype == jax.dtypes.float0 else Tensor._make(t))
        ctx._in_jvp = True
        try:
            got = cls.jvp(ctx, *given)
        finally:
            ctx._in_jvp = False
        got = got if isinstance(got, tuple) else (got,)
        if len(got) != len(outs):
            raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of forward "
                               f"gradients (expected {len(outs)}, got {len(got)})")
        out_t = []
        for i, (o, t, meta) in enumerate(zip(outs, got, ctx._out_meta)):
            if not isinstance(o, Tensor):
                continue
            exact = o._value
            if t is None or meta[2] or exact.dtype not in DIFFERENTIABLE:
                if t is not None:
                    raise RuntimeError(f"Function's jvp returned a gradient at position {i}, but the corresponding "
                                       "forward output is not a differentiable Tensor. You should return None at "
                                       "that position instead.")
                out_t.append(np.zeros(exact.shape, jax.dtypes.float0) if exact.dtype not in DIFFERENTIABLE
                             else jnp.zeros_like(exact))
                continue
            if not isinstance(t, Tensor) or tuple(t.shape) != tuple(o.shape):
                raise RuntimeError(f"function {cls.__name__}Backward's jvp returned a forward gradient of "
                                   f"shape {list(getattr(t, 'shape', ()))} for an output of shape "
                                   f"{list(o.shape)}; return one tensor of the output's shape per output.")
            out_t.append(t._value.astype(exact.dtype))
        return out, tuple(out_t)

    return fn(*arrays)


def apply(cls, args):
    """``cls.apply(*args)`` inside a transform (``handles`` said yes; ``args`` bound to
    forward's signature): the Function with its rule for the innermost level."""
    reads = _closure.active()
    if reads is not None:      # an outside Tensor requiring grad: its traced value when lifted
        args = reads.see(tuple(args))
    kind = _closure.LEVELS[-1]
    if kind == "jacfwd" and not cls.generate_vmap_rule and cls.vmap is Function.vmap:
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please "
                           "override and implement the vmap staticmethod or set generate_vmap_rule=True. "
                           "(jacfwd and hessian vmap over the function's jvp)")
    if kind != "reverse" and cls.jvp is Function.jvp:
        raise NotImplementedError(f"You must implement the jvp function for custom autograd.Function "
                                  f"{cls.__name__} to use it with forward mode AD.")
    call = _Call(cls, tuple(args))
    arrays = tuple(args[i]._value for i in call.pos)
    out = (_reverse if kind == "reverse" else _forward)(call, arrays)
    return call.output(out)

