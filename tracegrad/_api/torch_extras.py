"""torch's smaller top-level functions that programs call and that compose from existing ops:
process settings (``set_warn_always``, ``set_flush_denormal``, ``set_default_tensor_type``,
``set_anomaly_enabled``), the ``sym_*`` helpers on plain numbers, ``detach``/``fill``/
``frombuffer``, ``Tensor.narrow_copy``, the legacy copies ``resize``/``resize_as``, ``as_subclass``,
``torch.cond`` and ``torch.while_loop`` (eager semantics), and the functions torch removed in
1.9, which raise its RuntimeError naming the replacement. (The nn-level ones -- functional
recurrent cells, ``native_*`` -- are in ``nn/_toplevel.py``.)"""
from __future__ import annotations

import builtins
import inspect
import math
import warnings
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from .. import _state
from .._ops import dtypes as _dt
from .._ops import warn as _warn
from .._ops.dynamo_exc import TorchDynamoException, TorchRuntimeError, UncapturedHigherOrderOpError
from .._ops.errors import OutOfMemoryError  # noqa: F401  (torch.OutOfMemoryError; raised by out_of_memory)
from .._ops.registry import OPS
from .._tensor.factories import from_numpy as _from_numpy, tensor as _tensor_from
from .._tensor.tensor import Tensor

_Tracer = jax.core.Tracer
from .._tensor.generator import get_rng_state, set_rng_state
from ..autograd._dispatch import apply_op, apply_inplace as _apply_inplace
from ..autograd._graph_impl import _seq as _node_seq
from ..autograd.engine import _current_graph_task_keep_graph as _keep_graph, grad as _autograd_grad
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, no_grad
from . import strided as _strided  # noqa: F401  (defines tracegrad.narrow_copy)
from ._registry import FUNCTIONS, method
from .out_functions import method_form
from .creation import _BY_TYPE_NAME, LegacyTensorType

# ---- process settings -----------------------------------------------------------------------

_WARN_ALWAYS = _warn.WARN_ALWAYS   # shared with _ops/warn.py's warn_once


def set_warn_always(b: bool) -> None:
    """Mirrors ``torch.set_warn_always``: when True, warnings torch gives once per process are
    given every time (a flag programs and tests read back with ``is_warn_always_enabled``).
    RuntimeError, as torch, for anything but a bool."""
    if not isinstance(b, bool):
        raise RuntimeError(f"set_warn_always: setWarnOnlyOnce expects a bool, but got {_type_name(b)}; "
                           "pass True or False")
    _WARN_ALWAYS[0] = bool(b)


def is_warn_always_enabled() -> bool:
    """Mirrors ``torch.is_warn_always_enabled``."""
    _state.note_setting_read()
    return _WARN_ALWAYS[0]


def set_flush_denormal(mode: bool) -> bool:
    """Mirrors ``torch.set_flush_denormal``: returns whether the CPU is in the asked mode. XLA
    keeps denormal float32/float64 values (torch's default), and cannot be told to flush them:
    ``set_flush_denormal(False)`` is True, ``set_flush_denormal(True)`` is False (torch's
    answer on a CPU without the mode) and changes nothing. RuntimeError, as torch, for anything
    but a bool."""
    if not isinstance(mode, bool):
        raise RuntimeError(f"set_flush_denormal: flush_denormal expects a bool, but got {_type_name(mode)}; "
                           "pass True or False")
    return not mode


def _type_name(v):
    """torch's name of a Python value's type in its C++ checks (``numpy.bool``, ``int``)."""
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _nnpack_available() -> bool:
    """Mirrors ``torch._nnpack_available``: False -- tracegrad has no NNPACK (XLA generates its
    own convolution kernels), as a torch build without it. Tests gate NNPACK-only paths on it."""
    return False


def set_default_tensor_type(t) -> None:
    """Mirrors the deprecated ``torch.set_default_tensor_type``: ``torch.DoubleTensor`` (or the
    string ``'torch.DoubleTensor'``) makes float64 the default floating dtype, as
    ``set_default_dtype``. TypeError for a non-floating type and AttributeError for an unknown
    type name, as torch; warns once per process that the API is deprecated."""
    # torch gives this deprecation with TORCH_WARN_ONCE (python_tensor.cpp): once per process,
    # so a program that sets and later restores the default type sees one warning
    _warn.warn_once("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                    "torch.set_default_dtype() and torch.set_default_device() as alternatives.")
    if isinstance(t, str):
        name = t.rsplit(".", 1)[-1]
        kind = name[:-len("Tensor")] if name.endswith("Tensor") else None
        if "." not in t:   # torch imports the name's module first
            raise ModuleNotFoundError(f"set_default_tensor_type(): No module named {t!r}; pass a name such as "
                                      "'torch.DoubleTensor'")
        if kind not in _BY_TYPE_NAME or ".cuda." in t:
            # torch resolves the dotted name first: an unknown one is an AttributeError
            raise AttributeError(f"set_default_tensor_type(): no tensor type named {t!r}; "
                                 "use one of 'torch.FloatTensor', 'torch.DoubleTensor', ...")
        dtype = _dt.to_dtype(_BY_TYPE_NAME[kind])
    elif isinstance(t, LegacyTensorType):
        dtype = t.dtype
    else:
        raise TypeError(f"set_default_tensor_type(): expected a tensor type such as torch.DoubleTensor, "
                        f"got {type(t).__name__}")
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _dt.set_default_dtype(dtype)


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Mirrors ``torch.set_anomaly_enabled`` (the switch under ``autograd.set_detect_anomaly``)."""
    _state.ANOMALY[0], _state.ANOMALY[1] = bool(enabled), bool(check_nan)




# ---- sym_* on plain numbers (torch's versions for non-symbolic values) -----------------------


class SymInt:
    """Mirrors ``torch.SymInt``, the class of symbolic sizes under ``torch.compile``'s dynamic
    shapes. tracegrad's sizes are plain ints (a new size is a new trace), so no value is ever
    one: ``isinstance(n, torch.SymInt)`` is False, as in torch eager."""


class SymFloat:
    """Mirrors ``torch.SymFloat`` (see ``SymInt``: never instantiated here)."""


class SymBool:
    """Mirrors ``torch.SymBool`` (see ``SymInt``: never instantiated here)."""


def sym_int(a):
    """Mirrors ``torch.sym_int``: ``int(a)``, truncating a float toward zero."""
    return math.trunc(a) if isinstance(a, float) else int(a)


def sym_float(a):
    """Mirrors ``torch.sym_float``: ``float(a)``."""
    return float(a)


def sym_max(a, b):
    """Mirrors ``torch.sym_max``: the larger, as a float when either is a float."""
    r = builtins.max(a, b)
    return float(r) if isinstance(a, float) or isinstance(b, float) else r


def sym_min(a, b):
    """Mirrors ``torch.sym_min``: the smaller, as a float when either is a float."""
    r = builtins.min(a, b)
    return float(r) if isinstance(a, float) or isinstance(b, float) else r


def sym_not(a):
    """Mirrors ``torch.sym_not``: ``not a``."""
    return not a


def sym_ite(b, t, f):
    """Mirrors ``torch.sym_ite``: ``t if b else f``."""
    return t if b else f


def sym_sqrt(a):
    """Mirrors ``torch.sym_sqrt``: ``math.sqrt(a)`` (a float)."""
    return math.sqrt(a)


def sym_sum(args):
    """Mirrors ``torch.sym_sum``: the sum of ``args``."""
    return builtins.sum(args)


# ---- small tensor functions -----------------------------------------------------------------


def detach(input):
    """Mirrors ``torch.detach``: ``input.detach()``."""
    return input.detach()


def fill(input, value):
    """Mirrors ``torch.fill``: a new tensor of ``input``'s shape and dtype filled with ``value``
    (a number or a 0-d tensor, whose gradient is the sum of the result's; ``input``'s is zero)."""
    if isinstance(value, Tensor):
        return value.to(input.dtype).expand(input.shape).clone()
    # input's gradient is zero (torch's FillBackward0): the fill overwrites a copy of it
    return input.clone().fill_(value)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """Mirrors ``torch.frombuffer``: a 1-d tensor of ``dtype`` read from an object exposing the
    buffer protocol, skipping ``offset`` bytes and reading ``count`` elements (-1: all). The
    tensor shares a writable buffer's memory as torch's does (through the numpy bridge,
    NOTE [numpy bridge], with from_numpy's limits); a read-only one (bytes) is copied, with
    torch's warning. ValueError as torch for an empty buffer or ``count=0``, a size that is not
    a whole number of elements or a count past the end."""
    d = _dt.to_dtype(dtype)
    try:
        mv = memoryview(buffer).cast("B")
    except TypeError:
        raise ValueError(f"frombuffer(): object does not implement Python buffer protocol (got "
                         f"{type(buffer).__name__}); pass bytes, bytearray or an array") from None
    item = np.dtype(d.np).itemsize
    if len(mv) == 0 or count == 0:   # torch refuses to make an empty tensor from a buffer
        raise ValueError(f"frombuffer(): both buffer length ({len(mv)}) and count ({count}) must not be 0")
    if offset < 0 or offset > len(mv) - 1:
        raise ValueError(f"frombuffer(): offset ({offset} bytes) must be non-negative and no greater than the "
                         f"buffer length ({len(mv)} bytes) minus 1")
    avail = len(mv) - offset
    if count < 0:
        if avail % item:
            raise ValueError(f"frombuffer(): buffer length ({avail} bytes after the offset) must be a "
                             f"multiple of the element size ({item}); pass count=")
        count = avail // item
    elif count * item > avail:
        raise ValueError(f"frombuffer(): requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset}) must not be greater than the actual buffer length ({len(mv)})")
    arr = np.frombuffer(mv, dtype=d.np, count=count, offset=offset)
    if mv.readonly:
        # once per process (torch's TORCH_WARN_ONCE)
        _warn.warn_once("The given buffer is not writable, and PyTorch does not support non-writable tensors. "
                        "tracegrad copies it, so writes to the tensor do not reach the buffer.", UserWarning)
        return _tensor_from(arr.copy(), dtype=d, requires_grad=requires_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = _from_numpy(arr)   # torch's tensor aliases the buffer: writes through either are seen
    return t.requires_grad_() if requires_grad else t


# Tensor.narrow_copy is the function strided.py defines (torch.narrow_copy, NarrowCopyBackward0),
# without its out= (torch's methods take none)
method("narrow_copy")(method_form(FUNCTIONS["narrow_copy"], "narrow_copy"))


def _same_numel_resize(self, sizes):
    """torch's autograd resize keeps the element count: RuntimeError for any other."""
    shape = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
    if not all(isinstance(s, int) for s in shape):
        return   # resize_ refuses them
    n = 1
    for s in shape:
        n *= s
    if n != self.numel():
        def shown(shp):
            return "x".join(map(str, shp))
        raise RuntimeError(f"requested resize to {shown(shape)} ({n} elements in total), but the given tensor has a "
                           f"size of {shown(self.shape)} ({self.numel()} elements). autograd's resize can only change "
                           f"the shape of a given tensor, while preserving the number of elements. (Use resize_ to "
                           f"change the element count, or reshape.)")


@method()
def resize(self, *sizes):
    """Mirrors the deprecated ``torch.Tensor.resize``: a resized copy (``resize_`` on a clone);
    warns as torch. RuntimeError, as torch, for sizes with another element count."""
    _warn.warn("non-inplace resize is deprecated", UserWarning)   # the user's line, dispatched or not
    _same_numel_resize(self, sizes)
    with no_grad():
        return self.detach().clone().resize_(*sizes)


@method()
def resize_as(self, other):
    """Mirrors the deprecated ``torch.Tensor.resize_as``: a copy resized to ``other``'s shape.
    RuntimeError, as torch, when ``other`` has another element count."""
    _warn.warn("non-inplace resize_as is deprecated", UserWarning)
    _same_numel_resize(self, (tuple(other.shape),))
    with no_grad():
        return self.detach().clone().resize_(other.shape)


@method()
def as_subclass(self, cls):
    """Mirrors ``torch.Tensor.as_subclass``: an alias of ``self`` of type ``cls`` (a Tensor
    subclass): same storage, and attached to the autograd graph through an ``AliasBackward0``
    node, as torch's; ``cls.__init__`` does not run. TypeError for a class that does not
    derive from Tensor."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("as_subclass(): creating a Tensor subclass from a class that does not inherit from "
                        f"Tensor is not possible ({cls!r}); make sure your class inherits from Tensor")
    out = apply_op(OPS["alias"], (self,))
    try:
        out.__class__ = cls
    except TypeError:        # a subclass with slots of its own: a new object with the alias's fields
        alias, out = out, object.__new__(cls)
        for name in Tensor.__slots__:
            if name not in ("__dict__", "__weakref__") and hasattr(alias, name):
                setattr(out, name, getattr(alias, name))
        out.__dict__.update(alias.__dict__)
    return out


@method()
def module_load(self, other, assign=False):
    """Mirrors ``torch.Tensor.module_load``: what ``nn.Module.load_state_dict`` swaps into the
    parameter or buffer ``self`` for the state-dict value ``other`` when
    ``torch.__future__.set_swap_module_params_on_conversion(True)`` is on: ``other.detach()``
    with ``assign``, else ``self.copy_(other).detach()``. A Tensor subclass overrides it to remap
    ``other``; it must return a new object, neither ``self`` nor ``other``."""
    if assign:
        return other.detach()
    with no_grad():
        return self.copy_(other).detach()


@method("_make_subclass")
def make_subclass(cls, data, require_grad=False):
    """Mirrors ``torch.Tensor._make_subclass(cls, data, require_grad=False)`` (called on the class,
    as in a subclass's ``__new__``): a ``cls`` instance sharing ``data``'s storage and version
    counter, a leaf with ``requires_grad=require_grad`` (``data``'s history is not kept).
    ``cls.__init__`` does not run. TypeError for a class that does not derive from Tensor."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"_make_subclass(): cls must be a subclass of Tensor, got {cls!r}")
    out = data.detach().as_subclass(cls)
    out._base = None     # a fresh leaf over the same storage, not a view for autograd
    return out._set_requires_grad(require_grad)


# ---- higher-order control flow, eager semantics ---------------------------------------------


# NOTE [torch.cond with a tensor pred]
# torch 2.13 runs ``torch.cond`` with a tensor ``pred`` as one higher-order op even eagerly: it
# traces *both* branches first, lifting every tensor a branch reads (operands and closed-over
# parameters, buffers, intermediate results) into the op's inputs, then runs the taken branch.
# What a program can see of that here:
# - every operand that requires grad, and every outside tensor requiring grad that either branch
#   reads, gets a gradient after backward: the taken branch's, or zeros (``.grad`` is a zeros
#   tensor, never None; post-accumulate-grad hooks run with it). One ``CondAutogradOpBackward``
#   node holds all those edges, so backward from any one output reaches all of them, and every
#   floating output requires grad when any of them does;
# - the branches must return the same structure and, per tensor, the same dimensions and dtype;
#   a branch may not return an operand or other outside tensor (aliasing) nor write in place
#   into one (input mutation): RuntimeError, whichever branch is taken.
# Here the taken branch runs with grad mode as the caller has it, and the other one runs too,
# under no_grad and with the RNG state put back, only to learn what it reads and returns; the
# true branch first either way (the order a program running both keeps). A
# ``_BranchReads`` interposer (NOTE [interposer] in _state) notes the outside tensors requiring
# grad that ops of either branch receive (outside: a leaf, or a result whose node is older than
# the cond) and the storages written in place. In the taken branch the ops read a recorded
# alias of each outside tensor instead (torch's lifted placeholder): ``CondAutogradOp``'s
# backward differentiates the branch's graph down to those aliases, so the outside tensor's
# hooks run once (from the node's edge, all inputs' gradients ready together as in torch) and a
# ``create_graph`` gradient still reaches the tensor through the alias. A cond nested in a
# branch passes its inputs through the outer interposer (the outer aliases), so the outer
# backward reaches the inner node. A write into a storage still alive after the branch (not one
# of its fresh results) is outside state: put back, then the error.
# A Python-bool ``pred`` is a plain call of one branch, as in torch (no zeros, no checks).
# Under ``vmap`` a per-sample pred selects with ``where`` between both branches' results, as
# torch's batching rule. Inside ``tracegrad.compile`` a traced ``pred`` runs both branches in
# the program and selects (NOTE [torch.cond inside tracegrad.compile]). Known difference: torch 2.13's eager cond returns ``create_graph``
# gradients without a graph (a penalty on them trains nothing); here they are differentiable.


# NOTE [higher-order op errors]
# torch 2.13 runs an eager ``cond`` with a tensor pred, and every eager ``while_loop``, by compiling
# the op with ``fullgraph=True``: what goes wrong while a branch or body is traced reaches the
# caller as one of ``torch._dynamo.exc``'s RuntimeErrors, not as the branch's own exception. A
# program that catches them (``except torch._dynamo.exc.UncapturedHigherOrderOpError``) or
# asserts the class sees the same here:
# - before anything runs, plain RuntimeError: a branch, ``cond_fn`` or ``body_fn`` that is not
#   callable, a ``cond`` operand that is not a tensor (dicts, lists and tuples of them nest), a
#   ``cond_fn`` that returns a tuple; AssertionError (torch's assert) for a carried input of
#   ``while_loop`` that is neither a tensor nor an int;
# - ``UncapturedHigherOrderOpError``: a branch that returns an input (aliasing) or writes into one
#   (mutation), returns None or a float (only tensors and ints are outputs), branches whose
#   outputs nest differently (a tuple and a list, dicts of other keys), a ``cond_fn`` whose tensor
#   is not a 0-d bool one or a constant true ``cond_fn`` (an infinite loop: torch traces it once),
#   a body whose outputs differ from the carried inputs in number, kind, shape or dtype, and any
#   Python error a branch raises (ZeroDivisionError, a TypeError binding its arguments...);
# - ``TorchRuntimeError``: an op of a branch that fails (a RuntimeError: torch meets it running the
#   op on fake tensors), and branches whose tensors differ in dims or dtype, or where one returns
#   a tensor and the other does not (the op's own output check, run on fake tensors too);
# - an IndexError from a branch passes through unchanged, as torch's (dynamo re-raises it).
# The original exception is the new one's ``__cause__``. Inside ``tracegrad.compile``'s trace
# nothing is converted: there the capture's own exceptions must pass through the branch. In a
# compiled function (traced, or run eagerly after a graph break) torch's dynamo meets the op
# before its eager checks: a branch that is not callable is UncapturedHigherOrderOpError there,
# and non-tensor operands are accepted.
# With grad mode off torch lets a branch (a loop's body) write into its operands and return them:
# the taken branch's writes stay, the untaken one's are put back, and nothing is raised.
# A Python ``pred`` calls one branch plainly (no checks, its errors unchanged), as in torch.
# Left as they were under ``vmap`` (``_cond_per_sample``): no aliasing check, and branches of other
# dims are refused where torch's batching rule broadcasts them.


def _traced_error(hop, e):
    """The ``torch._dynamo.exc`` error torch raises for ``e``, raised while a branch or body of
    the higher-order op ``hop`` ran eagerly, or None to re-raise ``e`` as it is (NOTE
    [higher-order op errors])."""
    if (not isinstance(e, Exception) or isinstance(e, (TorchDynamoException, IndexError))
            or _state.CAPTURE[0] is not None):
        return None
    if isinstance(e, RuntimeError):
        return TorchRuntimeError(f"{hop}: an op failed while a branch was traced ({type(e).__name__}: {e}); "
                                 "fix that op's inputs (every branch is traced, also the one not taken)")
    return UncapturedHigherOrderOpError(
        f"{hop}: this higher order operator doesn't work unless it is captured completely; a branch raised "
        f"{type(e).__name__}: {e}. Every branch (also the one not taken) is traced with the operands: make it "
        "run on them")


def _compiling():
    """A ``tracegrad.compile``d function runs (traced, or its Python eagerly after a graph break):
    torch's dynamo, not its eager checks, meets a higher-order op there."""
    return _state.CAPTURE[0] is not None or _state.IN_COMPILED[0] > 0


def _eager_check_error(hop, what, todo):
    """The RuntimeError of torch's eager checks of ``hop``'s arguments (before any tracing)."""
    return RuntimeError(f"{hop}: {what}; {todo}")


def _unsupported_hop(hop, what, todo):
    """``UncapturedHigherOrderOpError`` for a branch or body of ``hop`` that cannot be captured
    (``what``), saying what to do (``todo``)."""
    return UncapturedHigherOrderOpError(f"{hop}: this higher order operator doesn't work unless it is captured "
                                        f"completely: {what}; {todo}")


# ids of the placeholders of the cond branches running now (an outer branch's reads skip an inner's)
_PLACEHOLDERS: set = set()


class _BranchReads:
    """The interposer while a ``cond`` branch runs (NOTE [torch.cond with a tensor pred])."""

    def __init__(self, start, prev, lift):
        self.start, self.prev, self.lift = start, prev, lift
        self.found: dict = {}      # id -> outside Tensor requiring grad read at a gradient edge
        # with ``lift`` (the taken branch, grad mode on): id of such a Tensor -> the alias of it
        # its ops read instead, as torch's lifted placeholder: the cond's node differentiates the
        # branch's graph down to these (so the outside tensor's hooks run once, from the node)
        # while a double backward still reaches the tensor through the alias
        self.lifted: dict = {}
        self.own: set = set()      # ids of those placeholders
        self.writes: dict = {}     # id(storage) -> (weakref to it, array before, gen before, op name)
        self.made: set = set()     # ids of the storages of results made inside (held in ``keep``)
        self.born: set = set()     # ids of every storage created while the branch runs
        self.keep: list = []

    def outside(self, t):
        fn = t.grad_fn
        return fn is None or fn._seq < self.start

    def see(self, args):
        """``args`` with the outside Tensors requiring grad noted (and swapped for their
        placeholders with ``lift``)."""
        out = None
        for i, a in enumerate(args):
            sub = a
            if isinstance(a, Tensor):
                if a._rg and id(a) not in _PLACEHOLDERS and id(a._st) not in self.made and self.outside(a):
                    self.found.setdefault(id(a), a)
                    if self.lift:
                        sub = self.lifted.get(id(a))
                        if sub is None:
                            # (grad mode on: an inner cond's untaken branch may read it first)
                            sub = self.lifted[id(a)] = self._run(_recorded_alias, a)
                            self.own.add(id(sub))
                            _PLACEHOLDERS.add(id(sub))
            elif type(a) in (list, tuple):
                new = self.see(a)
                if new is not a:
                    sub = type(a)(new)
            if sub is not a:
                if out is None:
                    out = list(args)
                out[i] = sub
        return args if out is None else tuple(out)

    def _made(self, out, args):
        """Note the fresh storages of an op's results (a view shares its input's: not fresh)."""
        held = {id(a._st) for a in args if isinstance(a, Tensor)}
        for o in (out if isinstance(out, (tuple, list)) else (out,)):
            if isinstance(o, Tensor) and id(o._st) not in held and id(o._st) not in self.made:
                self.made.add(id(o._st))
                self.keep.append(o._st)

    def _run(self, fn, *call):
        _state.INTERPOSE[0] = self.prev     # the op itself runs on below this slot
        try:
            return fn(*call)
        finally:
            _state.INTERPOSE[0] = self

    def apply_op(self, op, args, static):
        args = self.see(args)
        out = self._run(apply_op, op, args, static)
        self._made(out, args)
        return out

    def apply_inplace(self, op, target, args, static):
        self.see((target,))
        args = self.see(args)
        st = target._st
        if id(st) not in self.made and id(st) not in self.born and id(st) not in self.writes:
            before = st.array
            if getattr(st, "_np", None) is not None:   # its array may be numpy's memory, written in place
                before = jnp.array(before, copy=True)
            self.writes[id(st)] = (weakref.ref(st), before, st.gen, op.name)
        return self._run(_apply_inplace, op, target, args, static)


def _recorded_alias(t):
    with enable_grad():
        return apply_op(OPS["alias"], (t,))


def _outside_writes(reads, results):
    """The in-place writes of a finished branch into storages that outlive it (outside state):
    put back; returns the op names. A storage only the branch's results still hold is local."""
    own = {id(o._st) for o in results if isinstance(o, Tensor)}
    bad = []
    for key, (ref, before, gen, name) in reads.writes.items():
        st = ref()
        if st is not None and key not in own:
            st.array, st.gen = before, max(gen, st.gen) + 1    # views cached the written value
            bad.append(name)
    return bad


def _run_branch(fn, args, start, lift, grad=None, hop="torch.cond"):
    """``fn(*args)`` under a ``_BranchReads`` (lifting outside tensors or not), with grad mode
    ``grad`` (default: ``lift``); returns (result, reads). What it raises becomes torch's error of
    the higher-order op ``hop`` (NOTE [higher-order op errors])."""
    prev = _state.INTERPOSE[0]
    reads = _BranchReads(start, prev, lift)
    _state.INTERPOSE[0] = reads
    _state.BORN.append(reads.born)
    try:
        if lift if grad is None else grad:
            out = fn(*args)
        else:
            with no_grad():
                out = fn(*args)
    except BaseException as e:
        _state.INTERPOSE[0] = prev
        _state.BORN.pop()
        _PLACEHOLDERS.difference_update(reads.own)
        reads.keep.clear()
        _outside_writes(reads, ())
        err = _traced_error(hop, e)
        if err is None:
            raise
        raise err from e
    _state.INTERPOSE[0] = prev
    _state.BORN.pop()
    _PLACEHOLDERS.difference_update(reads.own)
    return out, reads


def _flat_results(out):
    """(leaves, structure) of a branch's result: tuples, lists and dicts (their keys in the
    structure) nest, anything else is a leaf."""
    if isinstance(out, (tuple, list)):
        parts = [_flat_results(o) for o in out]
        return [x for p in parts for x in p[0]], (type(out), tuple(p[1] for p in parts))
    if isinstance(out, dict):
        parts = [_flat_results(o) for o in out.values()]
        return [x for p in parts for x in p[0]], (type(out), tuple(p[1] for p in parts), tuple(out))
    return [out], None


def _same_nesting(a, b):
    """The two structures of ``_flat_results`` nest the same containers (tuple/list/dict kinds and
    dict keys, leaves aside): torch's check of a cond's branches before their outputs'."""
    if a is None or b is None:
        return True          # a leaf against a container: the outputs' check (TorchRuntimeError)
    if a[0] is not b[0] or len(a[1]) != len(b[1]) or a[2:] != b[2:]:
        return False
    return all(_same_nesting(x, y) for x, y in zip(a[1], b[1]))


class CondAutogradOp(Function):
    """One node for a cond with a tensor pred, as torch's: edges to every operand requiring
    grad and every outside tensor either branch reads (``inputs``); its backward differentiates
    the taken branch's results (``ctx.outs``, their graph kept) with respect to them, and an
    input that branch does not reach gets zeros (NOTE [torch.cond with a tensor pred])."""

    @staticmethod
    def forward(ctx, outs, lifted, *inputs):
        ctx.outs, ctx.lifted = outs, lifted      # lifted[i]: input i's placeholder or None
        ctx.zeros = [(tuple(z.shape), z.dtype) for z in inputs]
        # saved as torch's node saves its inputs: a second backward without retain_graph, or one
        # after an in-place change of an input, raises torch's errors
        ctx.save_for_backward(*inputs)
        return tuple(o.detach().clone() for o in outs)

    @staticmethod
    def backward(ctx, *grads):
        ctx.saved_tensors    # noqa: B018 (checks them: freed or changed in place raise)
        pairs = [(o, g) for o, g in zip(ctx.outs, grads) if o.requires_grad and g is not None]
        got = [None] * len(ctx.lifted)
        at = [i for i, p in enumerate(ctx.lifted) if p is not None]
        if pairs and at:
            # the taken branch's graph is kept when the running backward keeps its own (a second
            # backward without retain_graph raises torch's error from it), and always once a
            # gradient with a graph was made from it (that graph's nodes share its saved values)
            create = _state.grad_enabled()
            ctx.keep = getattr(ctx, "keep", False) or create
            gs = _autograd_grad([o for o, _ in pairs], [ctx.lifted[i] for i in at], [g for _, g in pairs],
                                allow_unused=True, retain_graph=ctx.keep or _keep_graph(), create_graph=create)
            for i, g in zip(at, gs):
                got[i] = g
        like = grads[0]
        return (None, None, *(like.new_zeros(shape, dtype=dtype) if g is None else g
                              for g, (shape, dtype) in zip(got, ctx.zeros)))


def _cond_on_tensor(taken, true_fn, false_fn, args):
    """``torch.cond`` with a tensor pred whose value is ``taken`` (NOTE [torch.cond with a
    tensor pred])."""
    start = next(_node_seq)
    # true_fn first whichever is taken: a branch's Python side effects come in one order, the
    # order a compiled program (which runs both) keeps too
    ran = []
    for fn, is_taken in ((true_fn, bool(taken)), (false_fn, not taken)):
        if is_taken:
            ran.append(_run_branch(fn, args, start, _state.grad_enabled()))
            continue
        rng = get_rng_state()
        try:
            ran.append(_run_branch(fn, args, start, False))
        finally:
            set_rng_state(rng)
        # its writes into outside tensors put back before the taken branch reads them (the
        # checks below still see them)
        _outside_writes(ran[-1][1], _flat_results(ran[-1][0])[0])
    (out, reads), (other, other_reads) = ran if taken else ran[::-1]
    leaves, spec, other_leaves = _checked_branches(bool(taken), out, reads, other, other_reads, args)
    keys, inputs = _cond_inputs(args, *((reads, other_reads) if taken else (other_reads, reads)))
    diff = [i for i, o in enumerate(leaves) if isinstance(o, Tensor) and o._value.dtype in _dt.DIFFERENTIABLE]
    if not inputs or not diff or not _state.grad_enabled():
        return out
    lifted = [reads.lifted.get(k) for k in keys]
    made = CondAutogradOp.apply(tuple(leaves[i] for i in diff), lifted, *inputs)
    for i, m in zip(diff, made):
        leaves[i] = m
    return _unflatten(leaves, spec)


# NOTE [torch.cond inside tracegrad.compile]
# A traced pred has no value to pick a branch with, and reading it (``item()``) was a graph break:
# the step ran eagerly, and ``fullgraph=True`` refused what torch compiles. The program runs
# both branches instead (eager runs both too, the untaken one only to check it) and selects:
# - each result is ``where(pred, true result, false result)``; a Python value both return must
#   be equal, and the two tensors of a pair must have one shape (eager allows other shapes:
#   one program cannot return either), else a graph break;
# - both branches run with grad mode as the caller has it, each lifting what it reads
#   (``_BranchReads``), and ``CondSelectOp``, one node with the edges eager's node has,
#   differentiates each branch's graph to its placeholders and selects the *gradients* with
#   pred: an input the taken branch does not reach gets zeros, as eagerly. Selecting the
#   gradients, not differentiating a select, keeps a NaN or inf of the untaken branch's
#   backward (``sqrt`` of a negative: the case a cond guards against) out of the result, where
#   ``where``'s own derivative would pass it on as 0 * inf;
# - a branch that draws random numbers (eager puts the RNG back after the untaken one: which
#   state is left depends on pred), and a compiled forward JAX differentiates from outside
#   (``Capture.vjp``: its VJP would differentiate the select) are graph breaks, as before.
# Known difference: a second-order gradient through the cond (``create_graph``) differentiates
# the gradients' select, so a NaN of the untaken branch's second derivative can reach it.


class CondSelectOp(Function):
    """A cond with a traced pred (NOTE [torch.cond inside tracegrad.compile]): ``where(pred,
    true result, false result)`` per output, with edges to ``inputs`` as eager's
    ``CondAutogradOp``; backward differentiates each branch's results down to its placeholders
    and selects the gradients with pred (zeros for what a branch does not reach)."""

    @staticmethod
    def forward(ctx, pred, touts, fouts, tlifted, flifted, *inputs):
        ctx.pred, ctx.branches = pred, ((touts, tlifted), (fouts, flifted))
        ctx.zeros = [(tuple(z.shape), z.dtype) for z in inputs]
        ctx.save_for_backward(*inputs)
        return tuple(t.where(pred, f) for t, f in zip(touts, fouts))

    @staticmethod
    def backward(ctx, *grads):
        ctx.saved_tensors    # noqa: B018 (checks them: freed or changed in place raise)
        create = _state.grad_enabled()
        ctx.keep = getattr(ctx, "keep", False) or create
        per_branch = []
        for outs, lifted in ctx.branches:
            got = [None] * len(lifted)
            pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad and g is not None]
            at = [i for i, p in enumerate(lifted) if p is not None]
            if pairs and at:
                gs = _autograd_grad([o for o, _ in pairs], [lifted[i] for i in at], [g for _, g in pairs],
                                    allow_unused=True, retain_graph=ctx.keep or _keep_graph(), create_graph=create)
                for i, g in zip(at, gs):
                    got[i] = g
            per_branch.append(got)
        like = grads[0]
        out = []
        for gt, gf, (shape, dtype) in zip(*per_branch, ctx.zeros):
            if gt is None and gf is None:
                out.append(like.new_zeros(shape, dtype=dtype))
                continue
            gt = like.new_zeros(shape, dtype=dtype) if gt is None else gt
            gf = like.new_zeros(shape, dtype=dtype) if gf is None else gf
            out.append(gt.where(ctx.pred, gf))
        return (None, None, None, None, None, *out)


def _cond_traced(pred, true_fn, false_fn, args):
    """``torch.cond`` with a pred traced by tracegrad.compile (NOTE [torch.cond inside
    tracegrad.compile])."""
    cap = _state.CAPTURE[0]
    grad = _state.grad_enabled()
    start = next(_node_seq)
    keys = cap.generator_keys()
    out_t, reads_t = _run_branch(true_fn, args, start, grad)
    out_f, reads_f = _run_branch(false_fn, args, start, grad)
    after = cap.generator_keys()
    if len(after) != len(keys) or any(g is not h or k is not j for (g, k), (h, j) in zip(after, keys)):
        cap.cannot("torch.cond: a branch draws random numbers, and which RNG state eager leaves depends on the "
                   "pred's value")
    if not grad:
        # grad mode off: eager keeps the taken branch's in-place writes into outside tensors and
        # returns an operand as it is, which one program cannot decide by pred
        results = [(_flat_results(o)[0], r) for o, r in ((out_t, reads_t), (out_f, reads_f))]
        wrote = [w for leaves, r in results for w in _outside_writes(r, leaves)]
        if wrote or any(isinstance(o, Tensor) and id(o._st) not in r.made and id(o._st) not in r.born
                        for leaves, r in results for o in leaves):
            cap.cannot("torch.cond under no_grad: a branch writes in place into a tensor from outside it or "
                       "returns one, which eager keeps only for the branch pred picks")
    leaves_t, spec, leaves_f = _checked_branches(True, out_t, reads_t, out_f, reads_f, args)
    if cap.vjp:
        cap.cannot("torch.cond with a traced pred in a compiled forward differentiated outside it")
    if any(isinstance(o, Tensor) and isinstance(o._value, _Tracer) and type(o._value) is not type(pred._value)
           for o in leaves_t + leaves_f):
        # a tracegrad.func transform inside the compiled function: JAX would differentiate the
        # select (NaN from the untaken branch), where eager differentiates the taken branch
        cap.cannot("torch.cond with a traced pred inside a tracegrad.func transform")
    p = pred.detach().reshape(())
    if p._value.dtype != jnp.bool_:
        p = p != 0
    for t, f in zip(leaves_t, leaves_f):
        if isinstance(t, Tensor):
            if t.shape != f.shape:
                cap.cannot(f"torch.cond: the branches return tensors of shapes {tuple(t.shape)} and "
                           f"{tuple(f.shape)}; one program returns one shape")
        elif not (t is f or (type(t) is type(f) and t == f)):
            cap.cannot(f"torch.cond: the branches return the Python values {t!r} and {f!r}, which pred's value "
                       "would pick between")
    keys, inputs = _cond_inputs(args, reads_t, reads_f)
    diff = [i for i, o in enumerate(leaves_t) if isinstance(o, Tensor) and o._value.dtype in _dt.DIFFERENTIABLE]
    merged = list(leaves_t)
    with no_grad():
        for i, (t, f) in enumerate(zip(leaves_t, leaves_f)):
            if isinstance(t, Tensor):
                merged[i] = t.where(p, f)
    if not inputs or not diff or not grad or not any(leaves_t[i].requires_grad or leaves_f[i].requires_grad
                                                       for i in diff):
        return _unflatten(merged, spec)
    made = CondSelectOp.apply(p, tuple(leaves_t[i] for i in diff), tuple(leaves_f[i] for i in diff),
                              [reads_t.lifted.get(k) for k in keys], [reads_f.lifted.get(k) for k in keys], *inputs)
    for i, m in zip(diff, made):
        merged[i] = m
    return _unflatten(merged, spec)


def _checked_branches(first_true, out, reads, other, other_reads, args):
    """torch's checks of a cond's two branch results (``out`` of the taken branch,
    ``first_true`` whether that is the true one): in-place writes into outside tensors (put
    back), structures, dims and dtypes, aliasing. Returns (leaves, structure, other leaves)."""
    leaves, spec = _flat_results(out)
    other_leaves, other_spec = _flat_results(other)
    # grad mode off: torch lets a branch write into (and return) its operands; only the taken
    # branch runs for real there, so the other's writes are put back without an error
    inference = not _state.grad_enabled()
    bad = _outside_writes(other_reads, () if inference else other_leaves)
    bad = [] if inference else _outside_writes(reads, leaves) + bad
    if bad:
        raise _unsupported_hop("torch.cond", f"Encountered input mutation during higher order op tracing: a "
                               f"branch wrote in place ({bad[0]}_) into a tensor from outside it (an operand, a "
                               "buffer or another captured tensor)", "return the new value from the branch "
                               "instead (the tensor was restored)")
    outside = {id(a._st) for a in args if isinstance(a, Tensor)}
    for r in (reads, other_reads):
        outside.update(id(t._st) for t in r.found.values())
        outside.update(id(t._st) for t in r.lifted.values())
    for branch, r in ((leaves, reads), (other_leaves, other_reads)) if not inference else ():
        for o in branch:
            # a storage neither an op of the branch made nor created while it ran is from outside
            # (an operand, a closed-over tensor, a parameter or buffer): torch lifts it as an input
            if isinstance(o, Tensor) and (id(o._st) in outside or (id(o._st) not in r.made
                                                                   and id(o._st) not in r.born)):
                raise _unsupported_hop("torch.cond", "Encountered aliasing during higher order op tracing: a "
                                       "branch returned one of its inputs (or a view of one)",
                                       "return a copy (x.clone()) instead")
    _check_outputs(leaves, spec, other_leaves, other_spec)
    leaves_t, leaves_f = (leaves, other_leaves) if first_true else (other_leaves, leaves)
    for t, f in zip(leaves_t, leaves_f):
        if isinstance(t, Tensor) != isinstance(f, Tensor):
            raise TorchRuntimeError("torch.cond: Unmatched output spec from torch.cond branches: one branch "
                                    "returned a tensor where the other did not; return tensors in the same places")
        if not isinstance(t, Tensor):
            continue
        if t.dim() != f.dim():
            raise TorchRuntimeError(f"When merging two branches' output in torch.cond,  expected same dim but got "
                                    f"{t.dim()} and {f.dim()}.")
        if t.dtype != f.dtype:
            raise TorchRuntimeError(f"When merging two branches' output in torch.cond,  expected same dtype but "
                                    f"got {t.dtype} and {f.dtype}.")
    return leaves, spec, other_leaves


def _cond_inputs(args, true_reads, false_reads):
    """The tensors a cond's node has edges to, in torch's order: the operands requiring grad,
    then what the true branch reads, then the false one (through an outer cond's
    placeholders when this cond runs in a branch of another), with the ids of the tensors
    themselves (what the branches' ``lifted`` maps)."""
    zero = {}
    for a in args:
        if isinstance(a, Tensor) and a._rg:
            zero.setdefault(id(a), a)
    for r in (true_reads, false_reads):
        for k, t in r.found.items():
            zero.setdefault(k, t)
    inputs = tuple(zero.values())
    outer = _state.INTERPOSE[0]
    if isinstance(outer, _BranchReads):
        # a cond inside a branch of another: what it reads, the outer one reads (through the
        # outer's placeholders, so the outer node's backward reaches this node's edges)
        inputs = outer.see(inputs)
    return tuple(zero), inputs


def _unflatten(leaves, spec):
    """``leaves`` nested as ``spec`` (``_flat_results``'s structure) describes."""
    it = iter(leaves)

    def build(s):
        if s is None:
            return next(it)
        if len(s) == 3:      # a dict: its keys come third
            return s[0](zip(s[2], [build(p) for p in s[1]]))
        typ, parts = s
        return typ(build(p) for p in parts)
    return build(spec)


def _tensor_leaves(tree):
    """Every leaf of ``tree`` (tuples, lists and dicts nest) is a Tensor."""
    if isinstance(tree, (tuple, list)):
        return all(_tensor_leaves(t) for t in tree)
    if isinstance(tree, dict):
        return all(_tensor_leaves(t) for t in tree.values())
    return isinstance(tree, Tensor)


def cond(pred, true_fn, false_fn, operands=()):
    """Mirrors ``torch.cond``: ``true_fn(*operands)`` when ``pred`` (a bool or a one-element
    tensor) is true, else ``false_fn(*operands)``. A Python ``pred`` calls one branch; a tensor
    ``pred`` follows torch's higher-order op (NOTE [torch.cond with a tensor pred]): both
    branches are checked, and the inputs the untaken one reads get zero gradients. Inside
    ``tracegrad.compile`` a traced ``pred`` is one program that runs both branches and selects
    (``fullgraph=True`` works; NOTE [torch.cond inside tracegrad.compile]), never a frozen
    choice. RuntimeError, as torch, for a ``pred`` tensor of more than one element, a
    non-bool/number ``pred``, a branch that is not callable or an operand that is not a tensor;
    torch's ``_dynamo.exc`` classes for branches that cannot be traced or whose results differ
    (NOTE [higher-order op errors])."""
    if isinstance(pred, (bool, int, float)):
        # a constant pred: torch calls the branch as it is, before checking anything
        return (true_fn if pred else false_fn)(*operands)
    if not isinstance(pred, Tensor):
        raise RuntimeError(f"torch.cond: expected pred to be a bool or a tensor with a single item, got "
                           f"{type(pred).__name__}")
    if pred.numel() != 1:
        raise RuntimeError(f"torch.cond: expected pred to be a bool or a tensor with a single item, "
                           f"got a tensor of shape {list(pred.shape)}")
    compiling = _compiling()
    if not callable(true_fn) or not callable(false_fn):
        # in a compiled function torch's dynamo meets the cond first: its error, not the eager check
        raise (_unsupported_hop if compiling else _eager_check_error)(
            "torch.cond", f"Expect both branches to be callable, got {type(true_fn).__name__} and "
            f"{type(false_fn).__name__}", "pass functions of the operands")
    if not isinstance(operands, (tuple, list)) or not (compiling or _tensor_leaves(operands)):
        raise RuntimeError(f"torch.cond: Expect operands to be a tuple of possibly nested dict/list/tuple that only "
                           f"consists of tensor leaves, but got {type(operands).__name__} {_brief(operands)}; pass "
                           "other values through a closure")
    if type(pred._value).__name__ == "BatchTracer":   # (JAX keeps the class private)
        return _cond_per_sample(pred, true_fn, false_fn, tuple(operands))
    if _state.CAPTURE[0] is not None and isinstance(pred._value, _Tracer):
        return _cond_traced(pred, true_fn, false_fn, tuple(operands))
    return _cond_on_tensor(bool(pred.item()), true_fn, false_fn, tuple(operands))


def _brief(v):
    """A short text of a value for an error message (a tensor by its shape and dtype)."""
    if isinstance(v, Tensor):
        return f"Tensor{list(v.shape)}"
    if isinstance(v, (tuple, list)):
        return ("(" if isinstance(v, tuple) else "[") + ", ".join(_brief(x) for x in v[:6]) + (
            ", ..." if len(v) > 6 else "") + (")" if isinstance(v, tuple) else "]")
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {_brief(x)}" for k, x in list(v.items())[:6]) + "}"
    return repr(v)[:60]


def _check_outputs(leaves, spec, other_leaves, other_spec):
    """torch's checks of a cond's two branch results (``_flat_results``' leaves and structures)
    before their tensors are compared: only tensors and ints, the same nesting, the same leaves
    (NOTE [higher-order op errors])."""
    for o in leaves + other_leaves:
        if not isinstance(o, (Tensor, int)):
            raise _unsupported_hop("torch.cond", f"unsupported branch return type {type(o).__name__} (a branch "
                                   "output is a tensor or an int)", "return tensors (and ints) from both branches")
    if any(isinstance(o, bool) for o in leaves + other_leaves):
        # torch's dynamo passes a bool constant on; the op's own output check (on fake tensors) refuses it
        raise TorchRuntimeError("torch.cond: a branch returned a bool; return a bool tensor (torch.tensor(flag)) "
                                "or an int instead")
    if not _same_nesting(spec, other_spec):
        raise _unsupported_hop("torch.cond", f"differing branch outputs: one branch returned {_spec_text(spec)} and "
                               f"the other {_spec_text(other_spec)}", "return the same nesting of tuples, lists and "
                               "dicts (with the same keys) from both branches")
    if spec != other_spec or len(leaves) != len(other_leaves):
        raise TorchRuntimeError(f"torch.cond: Unmatched output spec from torch.cond branches: one branch returned "
                                f"{_spec_text(spec)} and the other {_spec_text(other_spec)}; return the same "
                                "structure of tensors from both branches")


def _spec_text(spec):
    """A ``_flat_results`` structure as Python would write it, each leaf an ``x``:
    ``[(x, {'k': x})]``."""
    if spec is None:
        return "x"
    if len(spec) == 3:
        return "{" + ", ".join(f"{k!r}: {_spec_text(p)}" for k, p in zip(spec[2], spec[1])) + "}"
    inner = ", ".join(_spec_text(p) for p in spec[1])
    if spec[0] is list:
        return f"[{inner}]"
    return f"({inner}{',' if len(spec[1]) == 1 else ''})"


def _call_branch(fn, args):
    """``fn(*args)`` for a branch run without ``_run_branch`` (under ``vmap``): what it raises
    becomes torch's error (NOTE [higher-order op errors])."""
    try:
        return fn(*args)
    except BaseException as e:
        err = _traced_error("torch.cond", e)
        if err is None:
            raise
        raise err from e


def _cond_per_sample(pred, true_fn, false_fn, args):
    """``cond`` under ``vmap`` with a pred that differs per sample: as torch, both branches run
    and each result is ``where(pred, true result, false result)`` (so gradients reach both
    branches through the selection)."""
    t_leaves, t_spec = _flat_results(_call_branch(true_fn, args))
    f_leaves, f_spec = _flat_results(_call_branch(false_fn, args))
    _check_outputs(t_leaves, t_spec, f_leaves, f_spec)
    p = pred if pred._value.dtype == jnp.bool_ else pred != 0
    out = []
    for t, f in zip(t_leaves, f_leaves):
        if isinstance(t, Tensor) and isinstance(f, Tensor):
            if t.dim() != f.dim() or t.dtype != f.dtype:
                raise RuntimeError(f"When merging two branches' output in torch.cond,  expected same dim and dtype "
                                   f"but got {t.dim()}/{t.dtype} and {f.dim()}/{f.dtype}.")
            out.append(t.where(p.reshape(p.shape + (1,) * max(t.dim() - p.dim(), 0)), f))
        else:
            out.append(t)
    return _unflatten(out, t_spec)


def while_loop(cond_fn, body_fn, carried_inputs):
    """Mirrors ``torch.while_loop``: ``carried = body_fn(*carried)`` while ``cond_fn(*carried)``
    (a 0-d bool tensor) holds; returns the final carried values as a tuple, the tensors among
    them new ones (never the inputs themselves, even after no iteration). Run eagerly (inside
    ``tracegrad.compile`` the condition is a data-dependent branch: a graph break). As torch:
    RuntimeError for a ``cond_fn``/``body_fn`` that is not callable, AssertionError for a carried
    input that is neither a tensor nor an int, and ``torch._dynamo.exc``'s classes for a
    ``cond_fn`` that returns something else than a 0-d bool tensor (a constant true one loops
    forever), a body whose results differ from the carried inputs in number, kind, shape or dtype,
    one that writes in place into a tensor from outside it (put back first), or a Python error in
    either (NOTE [higher-order op errors])."""
    if not callable(cond_fn) or not callable(body_fn):
        raise (_unsupported_hop if _compiling() else _eager_check_error)(
            "torch.while_loop", f"Expect cond_fn and body_fn to be callable, got {type(cond_fn).__name__} and "
            f"{type(body_fn).__name__}", "pass functions of the carried inputs")
    carried = tuple(carried_inputs)
    kinds = _leaf_kinds(carried)
    if not kinds <= {Tensor, int}:
        raise AssertionError(f"torch.while_loop: carried_inputs {_brief(carried)} can only be of (Tensor, int) but "
                             f"got {tuple(sorted(k.__name__ for k in kinds))}; pass other values through a closure")
    first = carried
    while True:
        c = _loop_step(cond_fn, carried, ())
        if isinstance(c, Tensor):
            if c.dim() != 0 or c.dtype is not _dt.bool_:
                raise _unsupported_hop("torch.while_loop", f"unsupported cond_fn return type: a {c.dtype} tensor of "
                                       f"shape {list(c.shape)}", "return a 0-d bool tensor (a comparison: i < n)")
            c = bool(c.item())
        elif isinstance(c, (tuple, list)):
            raise RuntimeError(f"torch.while_loop: cond_fn must return a boolean scalar tensor or a boolean but got "
                               f"{type(c).__name__} {_brief(c)}; return the 0-d bool tensor itself")
        elif c and int not in kinds:
            # torch traces cond_fn once: a true that reads no carried value is true forever
            raise _unsupported_hop("torch.while_loop", "infinite loop detected: cond_fn returned a constant true "
                                   f"({c!r})", "return a 0-d bool tensor computed from the carried inputs")
        if not c:
            return tuple(v.clone() if isinstance(v, Tensor) and any(v is f for f in first) else v for v in carried)
        new = _loop_step(body_fn, carried, carried)
        new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
        # torch compares the flattened leaves (tuples, lists and dicts nest), in number, then each
        flat_new, flat_old = _flat_results(new)[0], _flat_results(carried)[0]
        if len(flat_new) != len(flat_old):
            raise _unsupported_hop("torch.while_loop", f"Expected body_fn_output and carried_inputs to have same "
                                   f"number of outputs but got {len(flat_new)} and {len(flat_old)}",
                                   "return one value per carried input, nested as they are")
        for i, (n, o) in enumerate(zip(flat_new, flat_old)):
            if isinstance(o, Tensor) and (not isinstance(n, Tensor) or n.shape != o.shape or n.dtype != o.dtype):
                got = f"{tuple(n.shape)} {n.dtype}" if isinstance(n, Tensor) else type(n).__name__
                raise _unsupported_hop("torch.while_loop", f"Expected body_fn_output and carried_inputs to have "
                                       f"same metadata but found: pair[{i}] differ: {got} vs {tuple(o.shape)} "
                                       f"{o.dtype}", "return a tensor of the carried shape and dtype")
            if isinstance(o, int) and (isinstance(n, Tensor) or not isinstance(n, int)):
                raise _unsupported_hop("torch.while_loop", f"Expected body_fn_output and carried_inputs to have "
                                       f"same metadata but found: pair[{i}] differ in type: {type(n).__name__} for "
                                       "a carried int", "return an int")
        carried = new


def _leaf_kinds(tree):
    """The classes of ``tree``'s leaves (tuples, lists and dicts nest; a Tensor subclass and a
    bool count as Tensor and int)."""
    if isinstance(tree, (tuple, list)):
        return set().union(*(_leaf_kinds(t) for t in tree))
    if isinstance(tree, dict):
        return set().union(*(_leaf_kinds(t) for t in tree.values()))
    return {Tensor if isinstance(tree, Tensor) else int if isinstance(tree, int) else type(tree)}


def _loop_step(fn, args, carried):
    """One call of a while_loop's ``cond_fn``/``body_fn`` with its in-place writes into tensors
    from outside it (the carried inputs included) refused, as torch's."""
    out, reads = _run_branch(fn, args, 0, False, grad=_state.grad_enabled(), hop="torch.while_loop")
    results = out if isinstance(out, (tuple, list)) else (out,)
    if not _state.grad_enabled():
        return out       # grad mode off: torch lets cond_fn/body_fn write into the carried inputs
    bad = _outside_writes(reads, results)
    if bad:
        raise _unsupported_hop("torch.while_loop", f"Encountered input mutation during higher order op tracing: "
                               f"cond_fn or body_fn wrote in place ({bad[0]}_) into a tensor from outside it (a "
                               "carried input, a buffer or another captured tensor)", "return the new value instead "
                               "(the tensor was restored)")
    return out


# ---- functions torch removed in 1.9 ---------------------------------------------------------

_REMOVED = {
    "eig": "use torch.linalg.eig (complex eigenvalues and eigenvectors) or torch.linalg.eigvals",
    "lstsq": "use torch.linalg.lstsq(A, B) (its arguments are reversed; it returns a named tuple)",
    "solve": "use torch.linalg.solve(A, B) (its arguments are reversed; it returns only the solution)",
    "symeig": "use torch.linalg.eigh (it reads the lower triangle by default) or torch.linalg.eigvalsh",
    "matrix_rank": "use torch.linalg.matrix_rank (its 'symmetric' parameter is called 'hermitian')",
}


# their parameters in torch: a call that does not fit them is Python's TypeError there, before
# the RuntimeError naming the replacement
def _eig(self, eigenvectors=False, *, e=None, v=None):
    pass


def _lstsq(input, A, *, out=None):
    pass


def _symeig(input, eigenvectors=False, upper=True, *, out=None):
    pass


def _matrix_rank(input, tol=None, symmetric=False, *, out=None):
    pass


_REMOVED_SIGNATURES = {"eig": _eig, "lstsq": _lstsq, "solve": _lstsq, "symeig": _symeig, "matrix_rank": _matrix_rank}


def _removed(name):
    sig = inspect.signature(_REMOVED_SIGNATURES[name])

    def fn(*args, **kwargs):
        try:
            sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{name}() {e}; torch.{name} takes {sig}") from None
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now removed: torch.{name}; "
                           f"{_REMOVED[name]}.")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}``, removed in torch 1.9: raises RuntimeError naming the replacement."
    return fn


eig, lstsq, solve, symeig, matrix_rank = (_removed(n) for n in ("eig", "lstsq", "solve", "symeig", "matrix_rank"))
for _name in ("eig", "lstsq", "solve", "symeig"):
    method(_name)(_removed(_name))
