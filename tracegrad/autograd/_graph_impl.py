"""The autograd graph: ``Node`` and its kinds, saved tensors, and saved-tensor hooks.

Mirrors ``torch.autograd.graph``. A Node is what a tensor's ``grad_fn`` points to; its
``next_functions`` are edges ``(node, output_nr)`` to the nodes of its inputs, with an
``AccumulateGrad`` node for each leaf that requires grad. The engine (``engine.py``) walks
these; the recording path (``autograd/_dispatch.py``) creates them: it also holds ``OpNode``,
the node of a table op, whose backward with ``create_graph=True`` is dispatched like any op.
This module imports nothing from dispatch (the dependency goes one way).

Hooks live on nodes in ordered dicts, one per event (STYLE 9):
``_tensor_pre_hooks[output_nr]`` (``Tensor.register_hook`` on a non-leaf),
``_retains_grad[output_nr]`` (``retain_grad``), ``_pre_hooks`` (``Node.register_prehook``),
``_post_hooks`` (``Node.register_hook``). A leaf's tensor hooks live on the tensor and act as
its AccumulateGrad's tensor pre-hooks.
"""
from __future__ import annotations

import itertools
import re
import sys
import threading
import traceback
import weakref
from collections import OrderedDict

from .. import _state
from .._tensor.layout import SparseOperand
from .._tensor.memory_format import grad_like_param
from .._tensor.meta import is_meta
from .._tensor.hooks import RemovableHandle
from .._tensor.tensor import Tensor
from .._x64 import x64_scope
from . import grad_mode


# NOTE [graph tasks]: one entry per running backward/grad call, innermost last:
# (task id, checkpoint valid, nodes it runs, whether it accumulates into .grad). utils.checkpoint reads them as torch's
# ``_current_graph_task_id`` (recompute once per backward call) and ``_is_checkpoint_valid``
# (False when the call was given ``inputs``: reentrant checkpoint refuses those);
# ``graph.register_multi_grad_hook`` as ``_will_engine_execute_node``; ops with a
# not-implemented derivative to know whether the call reaches that input (autograd/_dispatch.py).
# Per thread, as torch's current graph task: a backward run in another thread (at the same time,
# over one retained graph) has its own task id, its own callbacks and its own nodes to run.
class _Running(threading.local):
    def __init__(self):
        self.tasks: list = []
        # the final callbacks queued during each running backward call (same nesting as tasks)
        self.callbacks: list = []


_RUNNING = _Running()

_seq = itertools.count()
_ACCUMULATE_SEQ = sys.maxsize  # torch gives AccumulateGrad the highest priority
# held while a gradient is added into a leaf's .grad: backward calls from several Python threads
# sharing a leaf (Hogwild-style training) must each see the others' sums (torch's per-variable
# mutex in AccumulateGrad); the read-modify-write below spans JAX calls that release the GIL
_ACCUMULATE_LOCK = threading.Lock()

MSG_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")

# saved_tensors_hooks stack (innermost (pack, unpack) pair is used) and anomaly mode's
# [enabled, check_nan]: process-wide state, kept in _state (these are the same objects)
SAVED_HOOKS: list = _state.SAVED_HOOKS
ANOMALY: list = _state.ANOMALY


class Node:
    """Mirrors ``torch.autograd.graph.Node``: ``name()``, ``next_functions``, ``metadata``,
    ``register_hook(fn(grad_inputs, grad_outputs))`` and ``register_prehook(fn(grad_outputs))``."""

    __slots__ = ("next_functions", "_seq", "_post_hooks", "_pre_hooks", "_tensor_pre_hooks",
                 "_retains_grad", "_metadata", "_trace", "_parent", "__weakref__")
    # read by the engine for every node it runs: as class attributes (a compiled region's node
    # and a custom Function's set their own) a missing one costs no failed lookup, which on an
    # op's node goes through its Python ``__getattr__`` (~0.8 us a node)
    _through = None
    _forward_cls = None

    def __init__(self, next_functions=()):
        self.next_functions = next_functions
        self._seq = next(_seq)
        self._post_hooks = None
        self._pre_hooks = None
        self._tensor_pre_hooks = None
        self._retains_grad = None
        self._metadata = None
        self._trace = self._parent = None
        if ANOMALY[0]:
            self._trace = "".join(traceback.format_stack()[:-3])
            # torch's Node::assign_parent: a node made while another node's backward runs
            # (create_graph) records it, so an error reports the chain that induced it
            self._parent = _state.EVALUATING_NODE[0]

    def name(self) -> str:
        n = type(self).__name__
        return _QUALIFIED.get(n, n)

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    def _sequence_nr(self) -> int:
        """torch's creation order of nodes (the engine runs later-created ready nodes first);
        an AccumulateGrad's is the largest unsigned 64-bit value, as torch's."""
        return (1 << 64) - 1 if self._seq == _ACCUMULATE_SEQ else self._seq

    @property
    def _input_metadata(self) -> tuple:
        """Mirrors ``Node._input_metadata``: per gradient the node takes (one per output of the
        forward that made it), an ``_InputMetadata`` with that output's ``shape`` and ``dtype``."""
        return tuple(_InputMetadata(shape, dtype) for shape, dtype in self._output_avals())

    def _output_avals(self):
        """((shape, dtype), ...) of the forward outputs this node takes gradients for."""
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '_input_metadata' (tracegrad keeps "
                             "it for op, custom Function and AccumulateGrad nodes)")

    def _set_sequence_nr(self, sequence_nr) -> None:
        """Mirrors ``Node._set_sequence_nr(n)``: gives the node another priority in the engine
        (ready nodes run highest sequence number first). TypeError unless an integer."""
        if isinstance(sequence_nr, bool) or not isinstance(sequence_nr, int):
            raise TypeError(f"_set_sequence_nr(): an integer is required, got {type(sequence_nr).__name__}")
        self._seq = sequence_nr

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs) -> None or new grad_inputs``, run after the node."""
        if self._post_hooks is None:
            self._post_hooks = OrderedDict()
        h = RemovableHandle(self._post_hooks)
        self._post_hooks[h.id] = fn
        return h

    def register_prehook(self, fn):
        """``fn(grad_outputs) -> None or new grad_outputs``, run before the node."""
        if self._pre_hooks is None:
            self._pre_hooks = OrderedDict()
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks[h.id] = fn
        return h

    def _tensor_hooks_for(self, output_nr):
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        d = self._tensor_pre_hooks.get(output_nr)
        if d is None:
            d = self._tensor_pre_hooks[output_nr] = OrderedDict()
        return d

    def tensor_pre_hooks(self, output_nr):
        d = self._tensor_pre_hooks
        return d.get(output_nr) if d else None

    def apply(self, grads, create_graph=False):
        raise NotImplementedError

    def num_outputs(self) -> int:
        return 1

    def __call__(self, *grads):
        """Runs the node's backward on ``grads`` (one per output), as torch's ``grad_fn(...)``.
        TypeError for a wrong count or a gradient that is neither a Tensor nor None; all None
        gives None for every input (nothing flows); RuntimeError for a gradient whose shape the
        backward cannot take."""
        n = self.num_outputs()
        if len(grads) != n:   # torch checks the count first (TestAutograd.test_grad_fn_badcalls)
            raise TypeError(f"expected {n} arguments, got {len(grads)} instead")
        for i, g in enumerate(grads):
            if g is not None and not isinstance(g, Tensor):
                raise TypeError(f"argument {i} is not a Variable; pass {self.name()} a Tensor (or None) per output, "
                                f"not {type(g).__name__}")
        if all(g is None for g in grads):
            k = len(self.next_functions)
            return None if k == 1 else (None,) * k
        try:
            out = self.apply(list(grads))
        except (ValueError, TypeError) as e:   # the layer below's words for a gradient of another shape
            raise RuntimeError(f"{self.name()}: a gradient passed to the node does not fit its output "
                               f"(shapes {[None if g is None else list(g.shape) for g in grads]}); pass gradients "
                               f"of the outputs' shapes") from e
        return out[0] if len(out) == 1 else tuple(out)

    def release(self):
        pass


class _InputMetadata:
    """Mirrors ``torch._C._autograd._InputMetadata``: the shape (a list) and dtype of one output
    a node takes a gradient for (tracegrad has no nested tensors: both nested flags are False)."""

    __slots__ = ("shape", "dtype")
    is_nested_tensor = False
    is_cpp_nested_tensor = False

    def __init__(self, shape, dtype):
        self.shape, self.dtype = list(shape), dtype


_node_classes: dict = {}
# torch names its C++-only nodes with their namespace in name()
_QUALIFIED = {"AccumulateGrad": "torch::autograd::AccumulateGrad", "CopySlices": "torch::autograd::CopySlices",
              "Error": "torch::autograd::Error", "CopyBackwards": "torch::autograd::CopyBackwards"}


def node_class(name: str, base):
    """A Node subclass per torch name, so ``type(t.grad_fn).__name__ == 'MulBackward0'``."""
    key = (name, base)
    cls = _node_classes.get(key)
    if cls is None:
        # module 'builtins', as torch's C++ node types: ``type(t.grad_fn)`` prints <class 'MulBackward0'>
        cls = _node_classes[key] = type(name, (base,), {"__slots__": (), "__module__": "builtins"})
    return cls


_PACK_WROTE = ("A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
               "hook can not be modified by in-place operations as this can lead to unexpected side-effects. "
               "Please open an issue if you need to perform in-place operations on the input to a pack hook.")


class SavedTensor:
    """One saved tensor, as torch's SavedVariable: the tensor with the version it had when
    saved (checked at unpack), or what a saved_tensors_hooks pack function returned."""

    # nonleaf: a saved input that had history when saved; torch refuses to unpack it once
    # ``detach_()`` took that history away (its unpack reads the saved input's grad_fn)
    __slots__ = ("tensor", "version", "packed", "unpack_hook", "is_output", "grad_edge", "nonleaf")

    def __init__(self, tensor=None, is_output=False):
        if tensor is None:   # ``torch.autograd.SavedTensor()``: only autograd makes them, as torch
            raise RuntimeError("Trying to create a SavedTensor object from Python is forbidden.")
        if tensor.__dict__.get("_inference"):
            raise RuntimeError("Inference tensors cannot be saved for backward. To work around you can "
                               "make a clone to get a normal tensor and use it in autograd.")
        self.is_output = is_output
        self.nonleaf = not is_output and tensor._gf is not None
        if SAVED_HOOKS:
            pack, unpack = SAVED_HOOKS[-1]
            _state.note_hook("saved tensors pack", pack)
            self.tensor, self.version = None, None
            version = tensor._vc[0]
            with grad_mode.no_grad():  # torch runs pack hooks with grad recording off
                self.packed = pack(tensor)
            if tensor._vc[0] != version:
                raise RuntimeError(_PACK_WROTE)
            if tensor._chain:
                tensor._vcache = None   # a view the hook keeps must not keep its materialised copy
            self.unpack_hook = unpack
            # where the saved tensor sits in the graph: torch's unpack gives that place back to
            # what the hook returns (checkpoint's and save_on_cpu's are detached), so double
            # backward works through hooks. An output's place is the node that saved it.
            self.grad_edge = None
            if tensor._rg:
                self.grad_edge = (None, tensor._out_nr) if is_output else edge(tensor)
        else:
            self.grad_edge = None
            if is_output:
                # as torch's SavedVariable, an output is kept without its grad_fn (a detached
                # alias: same storage and version counter): the node holding the tensor that
                # holds the node would be a cycle only Python's cyclic GC frees
                self.grad_edge = (None, tensor._out_nr) if tensor._rg else None
                tensor = tensor.detach()
            self.tensor, self.version = tensor, tensor._vc[0]
            self.packed = self.unpack_hook = None
            if tensor._chain:
                # a saved view (Linear's weight.t()) must not keep its materialized value alive
                # until backward: torch's view costs no memory; recomputing it is one small op
                tensor._vcache = None

    def free(self):
        """Drop the saved value, as torch's SavedVariable when its node is released by a
        backward without retain_graph (register_hooks then raises)."""
        self.tensor = self.packed = self.unpack_hook = None
        return self

    @classmethod
    def freed(cls):
        """A SavedTensor whose value is gone (``grad_fn._raw_saved_*`` after backward)."""
        s = cls.__new__(cls)
        s.version, s.is_output, s.grad_edge, s.nonleaf = None, False, None, False
        return s.free()

    def register_hooks(self, *hooks):
        """Mirrors torch's ``SavedTensor.register_hooks(pack_hook, unpack_hook)``
        (``grad_fn._raw_saved_<name>``): packs the saved tensor now with ``pack_hook`` (grad mode
        off) and drops it; backward gets ``unpack_hook(packed)`` instead. Raises TypeError (torch's
        binding's "incompatible function arguments") unless given two callables, RuntimeError
        when hooks are already set, when the graph's saved tensors were freed, or when the pack
        hook modified the tensor in place."""
        if len(hooks) != 2 or not all(callable(h) for h in hooks):
            raise TypeError("register_hooks(): incompatible function arguments. The following argument types are "
                            "supported:\n    1. (self: torch._C._autograd.SavedTensor, arg0: Callable, arg1: "
                            f"Callable) -> None\n\nInvoked with: {', '.join(map(repr, hooks))}")
        pack_hook, unpack_hook = hooks
        if self.unpack_hook is not None:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been set. "
                               "Hint: only one pair of hooks is allowed at a time.")
        t = self.tensor
        if t is None:
            raise RuntimeError("Calling register_hooks on a saved tensor after it has been freed. Saved intermediate "
                               "values of the graph are freed when you call .backward() or autograd.grad(). Specify "
                               "retain_graph=True if you need to backward through the graph a second time or if you "
                               "need to access saved values after calling backward.")
        if not self.is_output and t._rg:
            self.grad_edge = edge(t)   # where the unpacked value goes back into the graph
        version = t._vc[0]
        with grad_mode.no_grad():
            packed = pack_hook(t)
        if t._vc[0] != version:
            raise RuntimeError(_PACK_WROTE)
        self.packed, self.unpack_hook = packed, unpack_hook
        self.tensor = self.version = None

    def unpack(self):
        """Mirrors torch's ``SavedTensor.unpack()``: the saved tensor (through the unpack hook
        when one packed it; each call runs it again)."""
        return self.get(None, 0)

    # torch's SavedTensor.unpack_hook is the slot above (None without hooks, or once freed)
    @property
    def data(self):
        """Mirrors torch's ``SavedTensor.data``: what the pack hook returned when hooks packed it,
        else the saved tensor (a saved output: an alias without autograd history, sharing its
        version counter); None once the graph freed it."""
        return self.packed if self.unpack_hook is not None else self.tensor

    def value(self, node, index):
        """The saved array, for a backward that records nothing (no ``create_graph``, no dual
        level): ``get``'s checks without the graph-connected tensor it builds."""
        t = self.tensor
        if t is None or t._vc[0] != self.version or (self.nonleaf and t._gf is None):
            return self.get(node, index)._value     # a hooks' packed value, or get's errors
        return t._value

    def get(self, node, index):
        if self.unpack_hook is not None:
            t = self.unpack_hook(self.packed)
            if not isinstance(t, Tensor):
                raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type {type(t).__name__}")
            if self.grad_edge is not None and not t._rg:
                t = _with_edge(t.detach(), self.grad_edge, node)
            return t
        t = self.tensor
        if t._vc[0] != self.version:
            raise version_error(node, t, self.version, self.is_output)
        if self.nonleaf and t._gf is None:
            raise RuntimeError("Trying to use a saved tensor that has been detached in-place, i.e. with .detach_(). "
                               "This is not supported, please use out-of-place `.detach()` instead")
        if self.is_output and self.grad_edge is not None:
            out = _with_edge(t.detach(), self.grad_edge, node)   # back in the graph at its node
            tangent = t.__dict__.get("_fw")
            if tangent is not None and _state.FORWARD_AD[0] is not None:   # forward AD's tangent too
                _state.FORWARD_AD[0].set_tangent(out, tangent)
            return out
        return t


class _SavedNone(SavedTensor):
    """What a custom Function's ``_raw_saved_tensors`` holds for a ``None`` it saved (torch's
    undefined SavedVariable): hooks cannot be registered on it."""

    def __init__(self):
        self.tensor = self.packed = self.unpack_hook = self.version = self.grad_edge = None
        self.is_output = self.nonleaf = False

    def register_hooks(self, *hooks):
        raise RuntimeError("Calling register_hooks on a saved tensor with value None is forbidden")

    def get(self, node, index):
        return None


_SavedNone.__name__ = _SavedNone.__qualname__ = "SavedTensor"   # torch's one class for both


def version_error(node, t, version, is_output=False):
    """torch's RuntimeError for a tensor ``node`` saved at ``version`` and modified in place since:
    the tensor as "[torch.FloatTensor [2, 3]]", and the hint of its anomaly mode (on: look at the
    forward backtrace; off: turn it on)."""
    hint = ("the backtrace further above shows the operation that failed to compute its gradient. "
            "The variable in question was changed in there or anywhere later. Good luck!" if ANOMALY[0] else
            "enable anomaly detection to find the operation that failed to compute its gradient, "
            "with torch.autograd.set_detect_anomaly(True, check_nan=False).")
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: [{t.type()} [{', '.join(map(str, t.shape))}]]{_saved_origin(node, t, is_output)} is at "
        f"version {t._vc[0]}; expected version {version} instead (saved by {node.name()}). Hint: {hint}")


def _saved_origin(node, t, is_output):
    """", which is output k of Op," for a saved tensor, as torch names it: for an output the node
    that saved it, for an input the tensor's grad_fn now (the in-place op that bumped it); ""
    for a leaf."""
    src, nr = (node, 0) if is_output else (t.grad_fn, t._out_nr)
    if src is None or isinstance(src, AccumulateGrad):
        return ""
    return f", which is output {nr} of {re.sub(r'Backward[0-9]*$', '', src.name())},"


def _with_edge(t, grad_edge, node):
    """``t`` (a fresh alias) placed in the graph at ``grad_edge``: a leaf's grad accumulator, a
    node's output, or (``(None, nr)``) output ``nr`` of ``node``, the node unpacking it."""
    gf, nr = grad_edge
    t._rg = True
    if isinstance(gf, AccumulateGrad):
        t._acc = weakref.ref(gf)   # still a leaf, accumulating into the saved leaf's .grad
    else:
        t._gf, t._out_nr = (node if gf is None else gf), nr
    return t


class AccumulateGrad(Node):
    """Mirrors torch's AccumulateGrad: adds the incoming gradient into ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        super().__init__(())
        self._seq = _ACCUMULATE_SEQ
        self.variable = variable

    def _output_avals(self):
        return ((tuple(self.variable.shape), self.variable.dtype),)

    def tensor_pre_hooks(self, output_nr):
        return self.variable._hooks

    def _tensor_hooks_for(self, output_nr):
        v = self.variable
        if v._hooks is None:
            v._hooks = OrderedDict()
        return v._hooks

    def apply(self, grads, create_graph=False):
        g = grads[0]
        var = self.variable
        if g is None:
            return []
        if _state.CAPTURE[0] is not None:
            _state.CAPTURE[0].see_grad_owner(var, accumulate=True)
        with _ACCUMULATE_LOCK:
            self._accumulate(var, g, create_graph)
        if var._post_acc_hooks:
            for h in tuple(var._post_acc_hooks.values()):
                _state.note_hook("post accumulate grad", h, var)
                r = h(var)
                if r is not None and r is not var:   # torch tolerates the tensor itself only
                    if not isinstance(r, Tensor):   # torch's hook wrapper checks the kind first
                        raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}': a post "
                                        f"accumulate grad hook returns None (modify .grad in place)")
                    raise RuntimeError("Tensor post accumulate grad hooks should return None: the hook "
                                       "sees .grad already accumulated; modify it in place instead")
        return []

    @staticmethod
    def _accumulate(var, g, create_graph):
        try:
            if var._grad is None:
                # a fresh storage: a later in-place accumulation must not write into a tensor the
                # caller, a hook or another leaf still holds (NOTE [stolen gradient])
                # (with create_graph, torch's copy into a new tensor: its node is CopyBackwards)
                new = g.new_empty(g.shape) if create_graph else Tensor._make(g._value)
                if var._chain:   # a strided leaf: torch's AccumulateGrad gives .grad its strides
                    grad_like_param(new, var)
                var._grad = new.copy_(g) if create_graph else new
            elif grad_mode.STATE[0]:
                # torch's AccumulateGrad under create_graph: a sparse .grad meeting a dense gradient
                # sums as dense + sparse (sparse + dense is an error), giving a new dense .grad
                old = var._grad
                var._grad = g + old if old.is_sparse and not g.is_sparse else old + g
            else:
                old = var._grad
                if is_meta(old):   # no data to add to (NOTE [meta tensors]): its version moves
                    old._write(old._value)
                else:
                    with x64_scope():
                        old._write(old._value + g._value)
        except SparseOperand as e:   # a sparse COO gradient (nn.Embedding(sparse=True)) or .grad
            var._grad = type(e.tensor)._accumulate_grad(var._grad, g)


# NOTE [stolen gradient]: torch's AccumulateGrad stores the incoming gradient itself as .grad
# (no copy) when its TensorImpl's use count says nothing else holds it, so a
# post-accumulate-grad hook's in-place write to .grad shows in the AccumulateGrad post-hooks'
# grad_outputs. tracegrad always gives .grad its own storage. Telling "nothing else holds it" from
# Python reference counts was tried (2026-12-06) and dropped: the counts depend on what else the
# process does (the steal stopped happening in a full test run, never alone), and a miscount
# means two tensors silently sharing memory (two leaves given detached aliases of one gradient
# shared one .grad). A copy is always a correct value; only that hook-visibility case differs
# (strict xfails in tests/conformance/test_testinfra47_ported.py).


def accumulate_node(t):
    """The tensor's AccumulateGrad node, created once and held weakly by the tensor (the
    graph holds it strongly), like torch's grad accumulator."""
    ref = t._acc
    n = ref() if ref is not None else None
    if n is None:
        n = AccumulateGrad(t)
        t._acc = weakref.ref(n)
    return n


def edge(t):
    """``(node, output_nr)``: where a gradient for ``t`` flows -- its grad_fn (a view's is
    regenerated if stale), a leaf's AccumulateGrad, or ``(None, 0)`` when it leads nowhere."""
    gf = t._gf if t._base is None else t.grad_fn
    if gf is not None:
        return (gf, t._out_nr)
    if t._rg:
        if t._base is not None and "_cmeta" in t.__dict__:
            return (None, 0)   # a view made in inference mode: requires grad, leads nowhere (torch)
        return (accumulate_node(t), 0)
    return (None, 0)



# the message ``disable_saved_tensors_hooks`` makes entering saved_tensors_hooks raise, or None
SAVED_HOOKS_DISABLED: list = [None]


AccumulateGrad.__module__ = "builtins"   # as torch's C++ node type (see node_class)

class StopAfterOp(Exception):
    """Raised by a saved-tensor pack hook to end the running forward right after the op whose
    tensor it packs (checkpoint's early stop). In torch that op's kernel has run whole by then;
    a composite that does more after recording its node (batch_norm's running-statistics update)
    finishes that work before letting this through."""


class saved_tensors_hooks:
    """Mirrors ``torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)``: each tensor
    an op saves for backward goes through ``pack_hook(tensor) -> anything`` once when saved;
    ``unpack_hook(packed) -> Tensor`` runs whenever backward (or a ``grad_fn._saved_*``
    access) needs it. Innermost hooks win. ``__enter__`` returns None (as torch)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def _check_callables(self):
        # torch's binding takes two callables, checked when the hooks are pushed
        for name, f in (("pack_hook", self.pack_hook), ("unpack_hook", self.unpack_hook)):
            if not callable(f):
                raise TypeError(f"saved_tensors_hooks: {name} must be callable, got {type(f).__name__}")

    def __enter__(self):
        if SAVED_HOOKS_DISABLED[0] is not None:
            raise RuntimeError(SAVED_HOOKS_DISABLED[0])
        self._check_callables()
        SAVED_HOOKS.append((self.pack_hook, self.unpack_hook))
        # returns None, as torch's: ``with SaveToDisk() as h`` binds None there too

    def __exit__(self, *exc):
        # an unbalanced exit (a hook that exits its own context during backward, then the
        # caller's exit) leaves the stack empty: torch tolerates it, and so does this
        if SAVED_HOOKS:
            SAVED_HOOKS.pop()


class save_on_cpu(saved_tensors_hooks):
    """Mirrors ``torch.autograd.graph.save_on_cpu(pin_memory=False)``: saved tensors are moved
    to host memory when saved (``Tensor.cpu()``: a ``jax.device_put`` to the CPU device) and
    back to their device when backward needs them (``Tensor.to(device)``). On CPU, as torch,
    ``pin_memory=False`` keeps the tensor itself (an in-place change before backward is seen)
    and ``pin_memory=True`` packs a copy (JAX manages host buffers: there is no pinning)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            d = t.detach()
            host = d.cpu()
            return (t.device, d.clone() if pin_memory and host is d else host)

        def unpack(packed):
            dev, t = packed
            return t.to(dev)
        super().__init__(pack, unpack)


def increment_version(tensor):
    """Mirrors ``torch.autograd.graph.increment_version``: bumps the version counter of a tensor,
    or of each tensor in an iterable (an inference tensor has none: left alone, as torch)."""
    if not isinstance(tensor, Tensor) and not hasattr(tensor, "__iter__"):
        raise RuntimeError(f"increment_version expect a Iterable[Tensor] as input, got {type(tensor).__name__}; "
                           "pass a Tensor or a list of them")
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"increment_version expects each element of the iterable to be a tensor, got "
                               f"{type(t).__name__}")
        if t.__dict__.get("_inference"):
            continue
        if _state.CAPTURE[0] is not None:     # a compiled program repeats the bump every call
            _state.CAPTURE[0].see_bump(t)
        t._vc[0] += 1
