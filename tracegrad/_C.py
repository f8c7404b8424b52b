"""The ``torch._C`` names that Tensor-subclass code uses for ``__torch_function__``
(``_disabled_torch_function_impl``, ``DisableTorchFunction``, ``DisableTorchFunctionSubclass``
and the torch-function state queries). Thin re-exports of ``_tensor/torch_function.py``."""
from __future__ import annotations

from ._tensor.torch_function import (  # noqa: F401
    DisableTorchFunction as DisableTorchFunction,
    DisableTorchFunctionSubclass as DisableTorchFunctionSubclass,
    _disabled_torch_function_impl as _disabled_torch_function_impl,
    has_torch_function as _has_torch_function,
    is_torch_function_enabled as _is_torch_function_enabled,
    is_torch_function_mode_enabled as _is_torch_function_mode_enabled,
)
from ._tensor import torch_function as _tf


def _has_torch_function_unary(arg) -> bool:
    """Mirrors ``torch._C._has_torch_function_unary``."""
    return _tf.has_torch_function((arg,))


def _has_torch_function_variadic(*args) -> bool:
    """Mirrors ``torch._C._has_torch_function_variadic``."""
    return _tf.has_torch_function(args)


def _len_torch_function_stack() -> int:
    """Mirrors ``torch._C._len_torch_function_stack``: modes on this thread's stack."""
    return len(_tf.STATE.modes)


def _is_torch_function_all_disabled() -> bool:
    """Mirrors ``torch._C._is_torch_function_all_disabled``: True inside
    ``DisableTorchFunction`` (modes and subclasses off), False otherwise (also inside
    ``DisableTorchFunctionSubclass``, which leaves modes on)."""
    return _tf.STATE.level == _tf.ALL_DISABLED


def _push_on_torch_function_stack(mode) -> None:
    """Mirrors ``torch._C._push_on_torch_function_stack``."""
    _tf.push_mode(mode)


def _pop_torch_function_stack():
    """Mirrors ``torch._C._pop_torch_function_stack``. RuntimeError on an empty stack."""
    return _tf.pop_mode()


def _get_function_stack_at(i: int):
    """Mirrors ``torch._C._get_function_stack_at``: the mode at position ``i`` (0: outermost)."""
    return _tf.STATE.modes[i]


def _skip_one_hop_torch_function(func, types, args=(), kwargs=None):
    """Mirrors ``torch._C._skip_one_hop_torch_function`` (``overrides.redispatch_function``)."""
    return _tf.redispatch(func, types, args, kwargs)


def _will_engine_execute_node(node) -> bool:
    """Mirrors ``torch._C._will_engine_execute_node(node)``: whether the running backward call
    runs ``node`` (a graph Node or GradientEdge). RuntimeError outside backward, for a leaf's
    node during ``autograd.grad``, and for anything that is not a node (a tensor)."""
    from .autograd.engine import GradientEdge, _will_engine_execute_node as will_run
    if isinstance(node, GradientEdge):
        node = node.node
    if not (hasattr(node, "next_functions") and hasattr(node, "register_hook")):
        raise RuntimeError("_will_engine_execute_node expects an grad_fn, node must be a "
                           "torch.autograd.graph.Node or GradientEdge")
    return will_run(node)


def _current_graph_task_id() -> int:
    """Mirrors ``torch._C._current_graph_task_id``: an id of the running backward call, -1
    outside backward (``torch.utils.module_tracker`` reads it as ``is_bw``)."""
    from .autograd.engine import _current_graph_task_id as task_id
    return task_id()


def _current_graph_task_execution_order() -> list:
    """Mirrors ``torch._C._current_graph_task_execution_order()``: the nodes the running backward
    call runs, in order (see ``autograd.engine``); RuntimeError outside backward or unless
    multithreading is disabled (``autograd.set_multithreading_enabled(False)``)."""
    from .autograd.engine import _current_graph_task_execution_order as order
    return order()


def _set_grad_enabled(enabled) -> None:
    """Mirrors ``torch._C._set_grad_enabled(enabled)``: sets grad mode now (no restoring; the
    hand-written context managers of PyTorch's compile tests call it). TypeError unless a bool."""
    from ._state import swap_grad_enabled
    if not isinstance(enabled, bool):
        raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                        f"not {type(enabled).__name__}")
    swap_grad_enabled(enabled)


def _is_grad_enabled() -> bool:
    """Mirrors ``torch._C.is_grad_enabled`` under its private spelling: the current grad mode."""
    from ._state import grad_enabled
    return grad_enabled()


# torch's CPU builds report LAPACK (test_linalg.py reads the flag before the SVD-based norms);
# tracegrad's decompositions come from XLA's, always present
has_lapack = True


def _infer_size(a, b):
    """Mirrors ``torch._C._infer_size(a, b)``: the broadcast of two ``torch.Size``s, as a Size.
    RuntimeError, torch's words, for a plain list/tuple argument or sizes that do not broadcast."""
    from ._ops.errors import _broadcast_message, broadcast_shapes
    from ._tensor.tensor import Size
    for i, s in enumerate((a, b), 1):
        if not isinstance(s, Size):
            raise RuntimeError(f"expected a torch.Size as argument {i}")
    msg = _broadcast_message([tuple(a), tuple(b)])
    if msg is not None:
        raise RuntimeError(msg)
    return Size(broadcast_shapes(tuple(a), tuple(b)))


# torch's public spelling of the same binding (a custom Function's backward may read the grad
# mode through it, as TestAutograd.test_grad_mode_restored_reentrant does)
is_grad_enabled = _is_grad_enabled


def _set_fwd_grad_enabled(enabled) -> None:
    """Mirrors ``torch._C._set_fwd_grad_enabled(enabled)``: sets forward-grad mode now (no
    restoring). While off, an open dual level propagates no tangents and ``unpack_dual`` sees
    none. TypeError unless a bool."""
    from .autograd import _forward_ad_impl
    if not isinstance(enabled, bool):
        raise TypeError(f"_set_fwd_grad_enabled(): enabled must be a bool (got {type(enabled).__name__})")
    _forward_ad_impl.set_fwd_grad_enabled(enabled)


def _is_fwd_grad_enabled() -> bool:
    """Mirrors ``torch._C._is_fwd_grad_enabled``: the forward-grad mode."""
    from .autograd import _forward_ad_impl
    return _forward_ad_impl._FW_ENABLED[0]


def _is_alias_of(self, other) -> bool:
    """Mirrors ``torch._C._is_alias_of``: whether two tensors share one storage (a view and its
    base, two views of one base, an ``out=`` result and the returned tensor). Anything that is
    not a Tensor aliases nothing (False), as torch's."""
    from ._tensor.tensor import Tensor
    return isinstance(self, Tensor) and isinstance(other, Tensor) and self._st is other._st


def _current_autograd_node():
    """Mirrors ``torch._C._current_autograd_node()``: the graph node whose backward the engine
    runs now in this thread (None outside one), e.g. read by a saved tensor's unpack hook."""
    from ._state import EVALUATING_NODE
    return EVALUATING_NODE[0]


class _WeakTensorRef:
    """Mirrors ``torch._C._WeakTensorRef(t)``: a weak reference to a tensor; ``expired()`` is
    True once the tensor is gone."""

    def __init__(self, tensor):
        import weakref
        self._ref = weakref.ref(tensor)

    def expired(self) -> bool:
        return self._ref() is None


def __getattr__(name):
    # torch._C._functions: the node classes torch registers there (AccumulateGrad) and the
    # callable nodes its tests apply to tensors (DelayedError, UndefinedGrad); autograd loads
    # after this module, so the namespace is built on first use
    if name == "_autograd":
        # torch._C._autograd: SavedTensor and the helpers torch's autograd tests call
        import types
        from .autograd import _graph_impl as _gi

        def _make_saved_tensor(tensor, is_output=False):
            """Mirrors ``torch._C._autograd._make_saved_tensor``: ``tensor`` saved as an op
            saves it (the current saved_tensors_hooks pack it now)."""
            return _gi.SavedTensor(tensor, is_output)

        def _saved_tensors_hooks_is_enabled():
            """Mirrors ``torch._C._autograd._saved_tensors_hooks_is_enabled``: False inside
            ``disable_saved_tensors_hooks``."""
            return _gi.SAVED_HOOKS_DISABLED[0] is None

        def _unsafe_set_version_counter(tensors, versions):
            """Mirrors ``torch._C._autograd._unsafe_set_version_counter``: sets each tensor's
            version counter (shared with its views); RuntimeError for a negative version."""
            for t, v in zip(tensors, versions):
                if v < 0:
                    raise RuntimeError(f"Cannot set a version counter to a negative value, got {v}")
                t._vc[0] = int(v)

        from .autograd.engine import _current_graph_task_keep_graph

        def _get_current_graph_task_keep_graph():
            """Mirrors ``torch._C._autograd._get_current_graph_task_keep_graph``: whether the
            running backward call was given ``retain_graph=True`` (True outside backward)."""
            return _current_graph_task_keep_graph()

        ns = types.SimpleNamespace(SavedTensor=_gi.SavedTensor, _make_saved_tensor=_make_saved_tensor,
                                   _get_current_graph_task_keep_graph=_get_current_graph_task_keep_graph,
                                   _saved_tensors_hooks_is_enabled=_saved_tensors_hooks_is_enabled,
                                   _unsafe_set_version_counter=_unsafe_set_version_counter)
        globals()["_autograd"] = ns
        return ns
    if name == "_functions":
        import types
        from .autograd import function as _fn
        from .autograd._graph_impl import AccumulateGrad
        ns = types.SimpleNamespace(AccumulateGrad=AccumulateGrad, DelayedError=_fn.DelayedError,
                                   UndefinedGrad=_fn.UndefinedGrad)
        globals()["_functions"] = ns
        return ns
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
