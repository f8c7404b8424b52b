"""The outside Tensors a transformed function reads (closes over), for ``tracegrad.func``.

In torch a transform's results stay connected to the outer autograd graph: ``grad(f)(x)``
where ``f`` reads an outer ``w`` that requires grad gives a gradient whose ``grad_fn``
reaches ``w`` (MAML's outer loop, ``vmap(lambda x: x @ w)``). Here the transform is a JAX
trace, so ``w`` enters it as a constant. While the outermost transform traces its function
eagerly, a ``Reads`` object sits in dispatch's interposer slot (NOTE [interposer] in
``_state``): it notes the concrete (not traced) Tensors requiring grad that ops receive.
``_wrap.differentiable`` then makes them extra inputs of the transform's autograd node, and
that node's backward traces the function again with ``Reads`` swapping each of them for its
traced value at every op that receives it, so JAX's VJP covers them too.

The same object guards in-place writes to captured Tensors (torch raises for those: a grad
transform refuses any write to a captured Tensor, vmap one of a per-example value), which
would otherwise leave a tracer in the outside Tensor.

Only the outermost eager transform installs one; a transform called inside another's trace
runs under it (``nested``). Outside the trace dispatch pays nothing: the slot is read anyway.
"""
from __future__ import annotations

import contextlib
import weakref

import jax

from .. import _state
from ..autograd import _dispatch
from .._ops.dtypes import DIFFERENTIABLE
from .._tensor.tensor import Tensor

_Tracer = jax.core.Tracer
_INTERPOSE = _state.INTERPOSE

# NOTE [grad mode inside transforms]: torch.func's reverse-mode transforms (grad, vjp, jacrev)
# run their function with grad mode on whatever the caller's mode (``no_grad(): grad(f)(x)``
# still differentiates), and what the function computes under ``no_grad`` is a constant of
# that level (``_closure.Reads.apply_op`` puts it behind ``stop_gradient``). Forward-mode
# levels (jvp, jacfwd) ignore grad mode, as torch's forward AD. ``LEVELS`` is the stack of
# open transform kinds, innermost last (``_state.FUNC_LEVELS``: autograd.Function reads it).
LEVELS = _state.FUNC_LEVELS

# NOTE [inputs of a reverse-mode level]: inside torch.func's grad/vjp/jacrev the differentiated
# inputs are leaves that require grad at that level. So an in-place op on one of them (or on a
# view of it) with grad mode on raises torch's leaf error, and an in-place op under ``no_grad``
# (on an input or on any value of the level) records nothing: the write changes the value but
# the gradient passes through it as through an identity, as torch's unchanged history does.
# ``INPUTS`` holds, per open transform level (innermost last), the storage ids of its
# differentiated inputs (an empty set for a forward-mode level).
INPUTS = _state.FUNC_INPUTS

# NOTE [requires_grad inside transforms]: inside torch.func's grad/vjp/jacrev the differentiated
# inputs, and every value computed from them with grad mode on, report ``requires_grad`` True
# (they are wrapped at that level); the inputs are leaves, the values computed from them are not;
# ``detach()`` and results under ``no_grad`` require none, and jvp/vmap levels add nothing.
# Here those values are traced by JAX at the level: ``_wrap.pure`` pushes the level's JAX
# traces on ``_state.FUNC_TRACES`` and ``Tensor.requires_grad``/``is_leaf`` ask whether a
# value is traced at one of them (constants of a level are concrete or behind stop_gradient).
# ``grad_fn`` stays None there: no tracegrad Node records inside a transform.


@jax.custom_jvp
def _keeps_derivative(old, new):
    """``new``'s value with ``old``'s derivative: an unrecorded write (NOTE [inputs of a
    reverse-mode level])."""
    return new


@_keeps_derivative.defjvp
def _keeps_derivative_jvp(primals, tangents):
    return primals[1], tangents[0]


def _reverse_level():
    return bool(LEVELS) and LEVELS[-1] == "reverse"


def check_input_write(target):
    """torch's leaf error for an in-place op, with grad mode on, on a differentiated input of
    the innermost reverse-mode level or a view of one (NOTE [inputs of a reverse-mode level])."""
    if _reverse_level() and _state.GRAD_MODE[0] and INPUTS and id(target._st) in INPUTS[-1]:
        what = "a view of a leaf Variable" if target._base is not None else "a leaf Variable"
        raise RuntimeError(f"{what} that requires grad is being used in an in-place operation. Inside a "
                           "tracegrad.func grad/vjp/jacrev transform the differentiated inputs are leaves; "
                           "write into a clone() of the input instead.")


def unrecorded_write(st, old):
    """After an in-place op under ``no_grad`` inside a reverse-mode level: the storage ``st``
    (which held ``old``) keeps ``old``'s derivative (NOTE [inputs of a reverse-mode level])."""
    new = st.array
    if (not _reverse_level() or _state.GRAD_MODE[0] or new is old or not isinstance(old, _Tracer)
            or new.shape != old.shape or new.dtype != old.dtype or not jax.numpy.issubdtype(old.dtype, jax.numpy.inexact)):
        return
    st.array = _keeps_derivative(old, new)
    st.gen += 1     # views cached the plain new value


def constant_of_level(tree):
    """``tree``'s traced arrays behind ``stop_gradient`` when computed under ``no_grad`` inside
    a reverse-mode transform (NOTE [grad mode inside transforms]); else ``tree`` unchanged."""
    if not LEVELS or LEVELS[-1] != "reverse" or _state.GRAD_MODE[0]:
        return tree
    return jax.tree_util.tree_map(
        lambda t: Tensor._make(jax.lax.stop_gradient(t._value))
        if isinstance(t, Tensor) and isinstance(t._value, jax.core.Tracer) and t._base is None else t,
        tree, is_leaf=lambda x: isinstance(x, Tensor))


def active():
    """The ``Reads`` of the transform being traced now, or None outside any."""
    return _state.FUNC_READS[0]


class _All:
    """Every position (``Reads.see`` notes none of them)."""

    def __contains__(self, _):
        return True


_ALL = _All()


def _differentiable(out, n_diff):
    outs = out if isinstance(out, tuple) else (out,)
    return any(isinstance(o, Tensor) and o._value.dtype in DIFFERENTIABLE for o in outs[:n_diff])


def _concrete(t) -> bool:
    return isinstance(t, Tensor) and not isinstance(t._st.array, _Tracer)


class Reads:
    """The interposer while a transform traces: ``collect`` notes the concrete Tensors requiring
    grad that ops read (``found``, first-read order); ``lifted`` (id of such a Tensor -> a
    Tensor holding its traced value) swaps them in for the backward's trace. ``grad_depth``:
    how many grad-type transforms (not vmap) are open, for the in-place rule."""

    def __init__(self, collect=False, lifted=None, grad_kind=True, arguments=(), outside=None):
        self.collect = collect
        # which Tensors count as read from outside the function: by default the concrete ones;
        # inside a compiled trace every array is traced, so the caller says (``_wrap``)
        self.outside = outside
        # the transform's own arguments may be written (torch allows it; ``_wrap`` guards them)
        self.arguments = {id(a._st) for a in arguments if isinstance(a, Tensor)}
        self.found: dict = {}
        self.lifted = lifted or {}
        self.grad_depth = int(grad_kind)
        # id(storage) -> (weakref to it, its array before, the op's name, inside a grad transform)
        self.writes: dict = {}
        # ids of storages a random in-place op drew per-example values into under
        # vmap(randomness='different') while they were unbatched (``_api/inplace.py``)
        self.random_writes: set = set()
        # ids of the storages ops read while a reverse-mode level is open (``_hooks.register``
        # refuses a hook on a tensor already used)
        self.used: set = set()

    def see(self, args, skip=frozenset()):
        """``args`` with lifted Tensors swapped for their traced values; with ``collect`` the
        other concrete Tensors requiring grad (positions not in ``skip``) are noted."""
        out = None
        for i, a in enumerate(args):
            if isinstance(a, Tensor) and a._rg and (not isinstance(a._st.array, _Tracer) if self.outside is None
                                                    else self.outside(a)):
                sub = self.lifted.get(id(a))
                if sub is not None:
                    if out is None:
                        out = list(args)
                    out[i] = sub
                elif self.collect and i not in skip:
                    self.found.setdefault(id(a), a)
        return args if out is None else tuple(out)

    def _run(self, fn, *call):
        prev = _INTERPOSE[0]
        _INTERPOSE[0] = _state.PROFILER[0]     # the op itself runs on below this slot
        try:
            return fn(*call)
        finally:
            _INTERPOSE[0] = prev

    def _note_used(self, args):
        used = self.used
        for a in args:
            if isinstance(a, Tensor):
                used.add(id(a._st))
            elif type(a) in (list, tuple):
                used.update(id(b._st) for b in a if isinstance(b, Tensor))

    def apply_op(self, op, args, static):
        if _state.FUNC_TRACES:
            self._note_used(args)
        out = self._run(_dispatch.apply_op, op, self.see(args, _ALL) if self.lifted else args, static)
        if LEVELS and not _state.GRAD_MODE[0]:
            out = constant_of_level(out)
        # as torch's graph: only inputs an op records an edge to, and only when it has a
        # differentiable result (``zeros_like(w)``, ``argmax(w)`` connect nothing)
        if self.collect and op.grad_fn is not None and _differentiable(out, op.n_diff):
            self.see(args, op.no_edge_pos)
        return out

    def apply_inplace(self, op, target, args, static):
        if _state.FUNC_TRACES:
            self._note_used((target, *args))
        if _concrete(target):
            self._note_write(op, target, args)
        else:
            check_input_write(target)
        st = target._st
        old = st.array
        out = self._run(_dispatch.apply_inplace, op, target, self.see(args, _ALL) if self.lifted else args, static)
        unrecorded_write(st, old)
        if self.collect and op.grad_fn is not None and _differentiable(target, None):
            self.see((target, *args), op.no_edge_pos)
        return out

    def _note_write(self, op, target, args):
        """An in-place op on a concrete Tensor: one requiring grad is refused now (torch refuses
        it in a grad transform, a captured Tensor, and under vmap with grad mode on, a leaf);
        others are noted, and if the Tensor outlives the function (it was captured, not made
        inside) ``check_writes`` refuses it after the call: in a grad transform any write,
        under vmap a traced one."""
        if target._rg and (self.grad_depth or self.collect or self.lifted):
            raise RuntimeError(f"tracegrad.func: the transformed function called the in-place operation "
                               f"{op.name}_ on a Tensor from outside it that requires grad; a transform cannot "
                               "mutate it. Use the out-of-place operation instead.")
        traced = any(isinstance(a, Tensor) and isinstance(a._st.array, _Tracer) for a in args)
        st = target._st
        if (traced or self.grad_depth) and id(st) not in self.arguments:
            self.writes.setdefault(id(st), (weakref.ref(st), st.array, op.name, bool(self.grad_depth)))

    def check_writes(self, failed=False):
        """After the traced call: restore captured Tensors the function wrote into (the local
        Tensors it made are gone by now) and raise torch's RuntimeError, unless the call
        ``failed`` already (then only restore: no tracer stays behind in them)."""
        bad = []
        for key, (ref, before, name, in_grad) in self.writes.items():
            st = ref()
            if st is not None and (in_grad or isinstance(st.array, _Tracer)):
                st.array, st.gen = before, st.gen + 1
                bad.append((name, in_grad, key in self.random_writes))
        if bad and not failed:
            name, in_grad, random = bad[0]
            if random and not in_grad:   # torch's words for a captured tensor drawn into per example
                raise RuntimeError("vmap: Cannot ask for different inplace randomness on an unbatched tensor. "
                                   "This will appear like same randomness. If this is necessary for your usage, "
                                   "please file an issue with functorch. The Tensor was restored.")
            kind = "During a grad (vjp, jvp, grad, etc) transform, the function" if in_grad else "vmap: the function"
            raise RuntimeError(f"{kind} provided wrote in place ({name}_) into a captured Tensor (one defined "
                               "outside the function transform that is not an input to it), which a transform "
                               "cannot mutate. Use the out-of-place operation instead. The Tensor was restored.")


@contextlib.contextmanager
def reading(collect=False, lifted=None, grad_kind=True, arguments=(), outside=None):
    """The outermost transform's trace: installs a ``Reads`` for the block and yields it.
    ``arguments``: the transform's argument Tensors (not captured ones); ``outside``: a
    predicate for the Tensors read from outside (default: those holding concrete arrays)."""
    reads = Reads(collect, lifted, grad_kind, arguments, outside)
    _state.set_func_reads(reads)
    try:
        yield reads
    except BaseException:
        _state.set_func_reads(None)
        reads.check_writes(failed=True)
        raise
    _state.set_func_reads(None)
    reads.check_writes()


@contextlib.contextmanager
def nested(reads, grad_kind):
    """A transform called inside ``reads``' trace (``vmap(grad(f))``): its reads are the
    outer transform's; a grad-type one makes captured writes errors while it runs."""
    if grad_kind:
        reads.grad_depth += 1
    try:
        yield
    finally:
        if grad_kind:
            reads.grad_depth -= 1


def note_reads(tensors):
    """The running function read ``tensors`` without an op (a result traced earlier with them
    reused, as ``vjp_fn`` reuses its forward's pullback): noted as if ops had read them."""
    reads = active()
    if reads is not None:
        reads.see(tuple(tensors))
