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
from .._lowering.custom_function import ctx_residuals, ctx_restore
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
_OWN = ("to_save", "saved_for_forward")     # ctx attributes of the node itself, not the user's


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
        res, layout = ctx_residuals(ctx, _OWN, drop_unflattenable=True)
        ctx.to_save = ()
        ctxs.append((ctx, layout))
        return out, res

    def bwd(res, cts):
        ctx, layout = ctxs[-1]
        ctx_restore(ctx, res, layout)
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



# ---- vmap: the Function's own vmap staticmethod -------------------------------------------------
# torch.func calls a Function's ``vmap(info, in_dims, *args)`` at a vmap level, with the
# arguments' batch dimensions exposed (in_dims) and the level removed; what it returns,
# ``(output, out_dims)``, is the batched output. Here the innermost jax.vmap's BatchTrace is
# the level: an argument that is a BatchTracer of that trace is unwrapped to its value and batch
# dim, and each output with an int out_dim is wrapped back into a BatchTracer of it. (A public
# jax.custom_batching.custom_vmap would trace forward first, which torch never runs here, and
# moves every batch dim to 0.)
class VmapInfo(tuple):
    """torch.autograd.function's ``VmapInfo``: ``batch_size`` and ``randomness``."""
    __slots__ = ()

    def __new__(cls, batch_size, randomness):
        return super().__new__(cls, (batch_size, randomness))

    batch_size = property(lambda self: self[0])
    randomness = property(lambda self: self[1])

    def __repr__(self):
        return f"VmapInfo(batch_size={self[0]}, randomness={self[1]!r})"


def _randomness():
    """The innermost vmap's randomness, read off ``_vmap``'s state: 'same' records its level,
    'different' swaps in a per-example ``next_key``, otherwise 'error'."""
    from . import _vmap
    if _state.VMAP_SAME and _state.VMAP_SAME[-1] is not None:
        return "same"
    nk = _vmap._generator.Generator.next_key
    return "different" if getattr(nk, "__qualname__", "").startswith("_different.") else "error"


def _map_tree(fn, tree):
    if isinstance(tree, (tuple, list)):
        return type(tree)(_map_tree(fn, t) for t in tree)
    if isinstance(tree, dict):
        return {k: _map_tree(fn, v) for k, v in tree.items()}
    return fn(tree)


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [x for t in tree for x in _leaves(t)]
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in _leaves(v)]
    return [tree]


def _broadcast_dims(dims, out):
    """torch's ``_broadcast_to_and_flatten``: one out_dim per output leaf (an int or None applies
    to a whole subtree), or None when the structures do not fit."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(_leaves(out))
    if isinstance(dims, (tuple, list)) and type(dims) is type(out) and len(dims) == len(out):
        parts = [_broadcast_dims(d, o) for d, o in zip(dims, out)]
        return None if any(p is None for p in parts) else [x for p in parts for x in p]
    if isinstance(dims, dict) and isinstance(out, dict) and dims.keys() == out.keys():
        parts = [_broadcast_dims(dims[k], out[k]) for k in out]
        return None if any(p is None for p in parts) else [x for p in parts for x in p]
    return None


def vmap_innermost() -> bool:
    """Whether a vmap is the innermost open transform (its jax BatchTrace is the current trace)
    rather than a grad/jvp level opened inside it: ``tracegrad.func`` keeps vmap levels apart
    from ``_closure.LEVELS``, so the jax trace tells which one a Function call meets first."""
    from jax._src import core as jcore
    from jax._src.interpreters import batching
    return isinstance(jcore.trace_ctx.trace, batching.BatchTrace)


def vmap_apply(cls, args, kwargs=None):
    """``cls.apply(*args, **kwargs)`` at a vmap level for a Function with its own ``vmap``
    staticmethod (``args`` bound to forward's signature; ``kwargs`` its keyword-only arguments,
    which the vmap staticmethod gets by keyword, as torch's)."""
    kwargs = kwargs or {}
    from jax._src import core as jcore
    from jax._src.interpreters import batching
    trace = jcore.trace_ctx.trace
    level = _state.VMAP_SAME.pop()
    try:
        if not isinstance(trace, batching.BatchTrace):
            return cls.apply(*args, **kwargs)
        size = [None]

        def unwrap(a):
            if isinstance(a, Tensor) and isinstance(a._st.array, batching.BatchTracer) and a._st.array._trace is trace \
                    and isinstance(a._st.array.batch_dim, int):
                arr = a._st.array
                size[0] = arr.val.shape[arr.batch_dim]
                return Tensor._make(arr.val), arr.batch_dim
            return a, None
        pairs = _map_tree(unwrap, tuple(args))
        # the rule (or forward, when nothing is batched at this level: torch skips the level)
        # runs at the enclosing levels: the jax trace outside this BatchTrace is the current one
        with jcore.set_current_trace(trace.parent_trace):
            if size[0] is None:
                return cls.apply(*args, **kwargs)
            vals, in_dims = _split_pairs(tuple(args), pairs)
            info = VmapInfo(size[0], _randomness() if level is None else "same")
            result = cls.vmap(info, in_dims, *vals, **kwargs)
    finally:
        _state.VMAP_SAME.append(level)
    base = ("Expected the vmap staticmethod to have two returns, an output and out_dims with pytree structure "
            "compatible with the output. ")
    if not isinstance(result, tuple):
        raise RuntimeError(base + f"Got a {type(result)} instead")
    if len(result) != 2:
        raise RuntimeError(base + f"Got {len(result)} returns instead")
    output, out_dims = result
    flat_dims = _broadcast_dims(out_dims, output)
    if flat_dims is None:
        raise RuntimeError(f"The autograd.Function's vmap staticmethod returned an incompatible (output, out_dims) "
                           f"tuple. Expected out_dims={out_dims} to be compatible with the structure of `output` "
                           f"({cls.__name__}.vmap).")
    it = iter(flat_dims)

    def wrap(o):
        d = next(it)
        if not isinstance(o, Tensor) or d is None:
            return o
        return Tensor._make(batching.BatchTracer(trace, o._value, d % max(o.dim(), 1)))
    return _map_tree(wrap, output)


def _split_pairs(args, pairs):
    """(values, in_dims) trees from the (value, dim) pairs ``_map_tree(unwrap, args)`` made."""
    def walk(a, p):
        if isinstance(a, (tuple, list)):
            vs, ds = zip(*(walk(x, y) for x, y in zip(a, p))) if a else ((), ())
            return type(a)(vs), type(a)(ds)
        if isinstance(a, dict):
            out = {k: walk(a[k], p[k]) for k in a}
            return {k: v[0] for k, v in out.items()}, {k: v[1] for k, v in out.items()}
        return p
    vs, ds = walk(args, pairs)
    return tuple(vs), tuple(ds)
