"""Autograd methods of Tensor: ``backward``, ``register_hook``, ``retain_grad``,
``register_post_accumulate_grad_hook``. Defined here, beside the engine and Node internals they
reach; the API layer registers them as Tensor methods (``_api/autograd_methods.py``)."""
from __future__ import annotations

import weakref
from collections import OrderedDict

from .. import _state
from .._ops.errors import not_self
from .._ops.warn import warn as _warn
from .._tensor.hooks import RemovableHandle
from .._tensor.tensor import level_value as _level_value
from . import engine


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Mirrors ``torch.Tensor.backward``: accumulates d(self)/d(leaf) into each leaf's ``.grad``.
    ``gradient`` is required unless self has one element. RuntimeError on a second backward
    through freed buffers (pass ``retain_graph=True``)."""
    engine.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def _backward_override_args(args, kwargs):
    """The arguments torch's Tensor.backward gives an override: ``(self,)`` and every option by
    keyword (``gradient``, ``retain_graph``, ``create_graph``, ``inputs``)."""
    given = dict(zip(("self", "gradient", "retain_graph", "create_graph", "inputs"), args), **kwargs)
    if "self" not in given:
        return args, kwargs
    this = given.pop("self")
    return (this,), {"gradient": None, "retain_graph": None, "create_graph": False, "inputs": None, **given}


engine._tf.OVERRIDE_ARGS[backward] = _backward_override_args


def register_hook(self, hook):
    """Mirrors ``torch.Tensor.register_hook``: ``hook(grad) -> Tensor or None`` runs each time
    the gradient w.r.t. this tensor is computed; a returned tensor replaces the gradient.
    Hooks run in registration order. Returns a handle with ``.remove()``.
    RuntimeError on a tensor that does not require grad."""
    if _level_value(self):
        return _state.FUNC_HOOK[0](self, hook)
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    gf = self.grad_fn
    if gf is None:
        if self._hooks is None:
            self._hooks = OrderedDict()
        d = self._hooks
    else:
        d = gf._tensor_hooks_for(self._out_nr)
    # a hook on a node recorded outside any compiled trace (``out.register_hook`` on a compiled
    # call's result, every step) runs in the eager engine, never inside a program: the cached
    # programs stay valid (no ``_state.STRUCTURE`` bump, which would trace again every call)
    h = RemovableHandle(d, _structure=gf is None or _state.CAPTURE[0] is not None)
    d[h.id] = hook
    return h


def backward_hooks(t):
    """The hooks ``register_hook`` put on tensor ``t``, in registration order (torch's
    ``Tensor._backward_hooks``): an OrderedDict, or None when it has none."""
    gf = t.grad_fn
    if gf is None:
        return t._hooks
    hooks = gf.tensor_pre_hooks(t._out_nr)
    return t._hooks if hooks is None else hooks


def set_backward_hooks(t, hooks):
    """``t._backward_hooks = hooks`` as torch's setter: on a leaf the dict (an OrderedDict of
    hooks, or None for none) replaces the hooks ``register_hook`` put there; on a non-leaf torch
    only records it (its grad_fn keeps the hooks it had), and so does this."""
    t._hooks = hooks


def refuse_deletion(message):
    """A property deleter raising torch's RuntimeError ``message`` (``del t._grad_fn``...)."""
    def deleter(self):
        raise RuntimeError(message)
    return deleter


def retain_grad(self):
    """Mirrors ``torch.Tensor.retain_grad``: a non-leaf keeps its ``.grad`` after backward (no-op
    on leaves). RuntimeError on a tensor that does not require grad."""
    try:
        rg = self.requires_grad
    except AttributeError:   # Tensor.retain_grad(None): only on the error path
        raise not_self("retain_grad", self) from None
    if not rg:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if _level_value(self):
        raise RuntimeError("You are attempting to call Tensor.retain_grad() inside of a function being transformed "
                           "by a tracegrad.func transform. This is unsupported: use the transforms themselves "
                           "(grad, vjp, jacrev, jacfwd, hessian) or call retain_grad() outside of the transformed "
                           "function instead.")
    gf = self.grad_fn
    if gf is None or self._retains_grad:
        return
    if _state.CAPTURE[0] is not None:
        _state.CAPTURE[0].see_retain_grad(self)
    if gf._retains_grad is None:
        gf._retains_grad = {}
    gf._retains_grad[self._out_nr] = weakref.ref(self)
    self._retains_grad = True


def register_post_accumulate_grad_hook(self, hook):
    """Mirrors ``torch.Tensor.register_post_accumulate_grad_hook``: ``hook(tensor)`` runs after
    the leaf's ``.grad`` has been accumulated. RuntimeError on a non-leaf or a tensor that
    does not require grad."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if self._post_acc_hooks is None:
        self._post_acc_hooks = OrderedDict()
    h = RemovableHandle(self._post_acc_hooks)
    self._post_acc_hooks[h.id] = hook
    return h


def warn_if_has_hooks(tensor) -> None:
    """Mirrors ``torch.utils.hooks.warn_if_has_hooks``: a UserWarning for each hook of
    ``tensor.register_hook`` not marked ``unserializable_hook`` (``tracegrad.save`` and pickling
    keep no hooks)."""
    for hook in (backward_hooks(tensor) or {}).values():
        if not hasattr(hook, "__torch_unserializable__"):
            _warn(f"backward hook {hook!r} on tensor will not be serialized.  If this is expected, you can "
                  "decorate the function with @tracegrad.utils.hooks.unserializable_hook to suppress this "
                  "warning")
