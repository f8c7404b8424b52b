"""``tracegrad.autograd.graph``: mirrors ``torch.autograd.graph``."""
import contextlib

from ._graph_impl import SAVED_HOOKS_DISABLED as _DISABLED
from ._graph_impl import Node as Node
from ._graph_impl import increment_version as increment_version
from ._graph_impl import save_on_cpu as save_on_cpu
from ._graph_impl import saved_tensors_hooks as saved_tensors_hooks
from .engine import GradientEdge as GradientEdge
from .engine import _current_graph_task_id, _will_engine_execute_node
from .engine import get_gradient_edge as get_gradient_edge

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "saved_tensors_hooks", "save_on_cpu",
           "increment_version", "register_multi_grad_hook", "disable_saved_tensors_hooks"]


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Mirrors ``torch.autograd.graph.disable_saved_tensors_hooks(error_message)``: within the
    block, entering ``saved_tensors_hooks`` (or ``save_on_cpu``) raises
    ``RuntimeError(error_message)``. Nests: the outer message is back after the block."""
    prev = _DISABLED[0]
    _DISABLED[0] = error_message
    try:
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
