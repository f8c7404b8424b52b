"""``tracegrad.autograd.graph``: mirrors ``torch.autograd.graph``."""
import collections
import collections.abc
import contextlib
import weakref

from .._tensor.tensor import Tensor, chain_value_fn
from ._graph_impl import SAVED_HOOKS as _SAVED_HOOKS
from ._graph_impl import SAVED_HOOKS_DISABLED as _DISABLED
from ._graph_impl import Node as Node
from ._graph_impl import increment_version as increment_version
from ._graph_impl import save_on_cpu as save_on_cpu
from ._graph_impl import saved_tensors_hooks as saved_tensors_hooks
from .engine import GradientEdge as GradientEdge
from .engine import _current_graph_task_id, _will_engine_execute_node
from .engine import get_gradient_edge as get_gradient_edge

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "saved_tensors_hooks", "save_on_cpu",
           "increment_version", "register_multi_grad_hook", "disable_saved_tensors_hooks",
           "allow_mutation_on_saved_tensors"]


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Mirrors ``torch.autograd.graph.disable_saved_tensors_hooks(error_message)``: within the
    block, entering ``saved_tensors_hooks`` (or ``save_on_cpu``) raises
    ``RuntimeError(error_message)``. Nests: the outer message is back after the block.

    Raises:
        RuntimeError(error_message): on entry, when ``saved_tensors_hooks`` are already active
        (as torch: the hooks in force could not be honoured inside the block).
    """
    if not isinstance(error_message, str):   # torch's binding takes a str only (on entry)
        raise TypeError(f"_saved_tensors_hooks_disable(): incompatible function arguments: error_message must be "
                        f"a str, not {type(error_message).__name__}")
    prev = _DISABLED[0]
    _DISABLED[0] = error_message
    try:
        if _SAVED_HOOKS:
            raise RuntimeError(error_message)
        yield
    finally:
        _DISABLED[0] = prev


class _MultiHandle:
    """The handle ``register_multi_grad_hook`` returns: ``remove()`` removes every tensor hook."""

    __slots__ = ("handles",)

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Mirrors ``torch.autograd.graph.register_multi_grad_hook(tensors, fn, *, mode="all")``.

    ``mode="all"``: once per backward call, after the gradients of all ``tensors`` that call
    computes, ``fn(grads)`` with ``grads[i]`` the gradient of ``tensors[i]`` or None for a
    tensor the call does not reach. ``mode="any"``: once per backward call, ``fn(grad)`` with
    the first gradient computed among ``tensors`` (those that require grad). ``fn``'s return
    value is ignored. Returns a handle whose ``remove()`` unregisters it.

    Raises:
        ValueError: ``mode`` is not "all" or "any".
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = list(tensors)
    if mode == "any":
        fired = set()         # graph task ids the hook already ran in

        def first(grad):
            task = _current_graph_task_id()
            if task not in fired:
                fired.add(task)
                fn(grad)
        return _MultiHandle(tuple(t.register_hook(first) for t in tensors if t.requires_grad))

    for t in tensors:   # torch asserts each tensor has a grad_fn or a grad accumulator
        if isinstance(t, Tensor) and not t.requires_grad:
            raise AssertionError("register_multi_grad_hook: Expected gradient function to be set (a tensor that "
                                 "does not require grad has no gradient to wait for)")
    nodes = [get_gradient_edge(t).node for t in tensors]
    pending = {}             # graph task id -> [gradients so far, how many still to come]

    def collector(i):
        def hook(grad):
            task = _current_graph_task_id()
            entry = pending.get(task)
            if entry is None:       # the first of this call: how many will come
                entry = pending[task] = [[None] * len(tensors), sum(map(_will_engine_execute_node, nodes))]
            entry[0][i] = grad
            entry[1] -= 1
            if entry[1] == 0:
                del pending[task]
                fn(entry[0])
        return hook
    return _MultiHandle(tuple(t.register_hook(collector(i)) for i, t in enumerate(tensors)))


class _Handle:
    """What ``allow_mutation_on_saved_tensors`` packs for one saved tensor: the tensor, and the
    storage array it read when saved (JAX arrays are immutable: an in-place op later puts a new
    array in the storage, so keeping the old one costs nothing until then, as torch's
    clone-on-write)."""

    __slots__ = ("storage", "array", "__weakref__")

    def __init__(self, t):
        self.storage, self.array = t._st, t._st.array


class _AllowMutationOnSavedContext:
    """The state of one ``allow_mutation_on_saved_tensors`` block (torch's object of that
    name, with its attributes): ``original`` maps each live handle to its saved tensor,
    ``cloned`` to the tensor with the values it had when saved, once it was written in place.
    Cleared when the block ends."""

    def __init__(self):
        self.cloned = _ClonedHandles(self)
        self.original = weakref.WeakKeyDictionary()
        self.tid_to_weakhandle = weakref.WeakValueDictionary()
        self.sid_to_tid = collections.defaultdict(set)

    def clear(self):
        self.cloned.clear()
        self.original.clear()
        self.tid_to_weakhandle.clear()
        self.sid_to_tid.clear()


def _written_since_saved(h, t) -> bool:
    return not (t._st is h.storage and h.storage.array is h.array)


class _ClonedHandles(collections.abc.MutableMapping):
    """``ctx.cloned``: the live handles whose saved tensor was written in place since it was
    saved, each to a tensor with the values it had then. torch clones at the in-place op; here
    the storage keeps the array it read (JAX arrays are immutable), so a handle joins the
    mapping when the mapping is read (or at unpack), with the same contents torch's has: it
    grows with each write to a saved tensor and shrinks as graphs holding the handles are freed."""

    def __init__(self, ctx):
        self._ctx = ctx
        self._d = weakref.WeakKeyDictionary()

    def _sync(self):
        original = self._ctx.original
        for h, t in list(original.items()):
            if _written_since_saved(h, t):
                self._d[h] = _saved_values(t, h)
                del original[h]

    def __getitem__(self, h):
        self._sync()
        return self._d[h]

    def __setitem__(self, h, value):
        self._d[h] = value

    def __delitem__(self, h):
        del self._d[h]

    def __iter__(self):
        self._sync()
        return iter(list(self._d.keys()))

    def __len__(self):
        self._sync()
        return len(self._d)

    def clear(self):
        self._d.clear()


_MUTATION_ALLOWED = [False]
_OUTSIDE = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
            "in which the graph was originally recorded.")


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Mirrors ``torch.autograd.graph.allow_mutation_on_saved_tensors()``: within the block, a
    tensor saved for backward may be modified in place; backward then uses the values it had
    when saved (instead of raising the "modified by an inplace operation" error). Run the
    forward and the backward inside the same block. Yields the block's
    ``_AllowMutationOnSavedContext`` (cleared at the end).

    Raises:
        RuntimeError: the block is entered inside another one.
        AssertionError: (at backward) a graph recorded in a block is backpropagated after it ended.
    """
    ctx = _AllowMutationOnSavedContext()

    def pack(t):
        # as torch, one handle per (tensor, storage, version): a tensor saved by several nodes
        # at one version is kept (and counted in ctx.cloned) once
        tid = (id(t), id(t._st), t._version)
        h = ctx.tid_to_weakhandle.get(tid)
        if h is None or (ctx.original.get(h) is not t and h not in ctx.cloned._d):
            h = _Handle(t)
            ctx.tid_to_weakhandle[tid] = h
            ctx.original[h] = t
        return h

    def unpack(h):
        if not _MUTATION_ALLOWED[0]:
            raise AssertionError(_OUTSIDE)
        cloned = ctx.cloned._d            # not the synced view: unpack checks its own handle only
        t = ctx.original.get(h)
        if t is None:
            if h not in cloned:
                raise AssertionError(_OUTSIDE)
            return cloned[h]
        if not _written_since_saved(h, t):
            return t
        # written in place since: the values it had when saved, from the array it read then
        clone = _saved_values(t, h)
        del ctx.original[h]
        cloned[h] = clone
        return clone

    with saved_tensors_hooks(pack, unpack):
        try:
            if _MUTATION_ALLOWED[0]:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _MUTATION_ALLOWED[0] = True
            yield ctx
        finally:
            ctx.clear()
            _MUTATION_ALLOWED[0] = False


def _saved_values(t, h):
    return t.detach().clone() if t._st.array is None else _as_saved(t, h)


def _as_saved(t, h):
    """A new tensor (no graph) holding ``t``'s values as they were when ``h`` was packed."""
    return Tensor._make(chain_value_fn(t._chain)(h.array) if t._chain else h.array)
