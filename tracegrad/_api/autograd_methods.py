"""Tensor methods, autograd family: ``backward``, ``register_hook``, ``retain_grad``,
``register_post_accumulate_grad_hook``. They are defined in ``autograd/_tensor_hooks.py`` (L3,
beside the engine and Node internals they use) and registered here like every other method."""
from __future__ import annotations

from ..autograd import _tensor_hooks as _hooks
from ._registry import METHODS, _put, method

method("backward")(_hooks.backward)
method("register_hook")(_hooks.register_hook)
method("retain_grad")(_hooks.retain_grad)
method("register_post_accumulate_grad_hook")(_hooks.register_post_accumulate_grad_hook)

# torch's private Tensor attributes for the graph and hooks: readable (``_grad_fn`` is
# ``grad_fn``; ``_backward_hooks`` the register_hook dict, assignable), never deletable
# (RuntimeError, as torch; TestAutograd.test_attribute_deletion)
_put(METHODS, ("_grad_fn",), property(
    lambda self: self.grad_fn, None, _hooks.refuse_deletion("Deletion of _grad_fn not allowed. Detach tensor instead!"),
    doc="torch's ``Tensor._grad_fn``: the same node as ``grad_fn``; cannot be deleted."), "Tensor.")
_put(METHODS, ("_backward_hooks",), property(
    _hooks.backward_hooks, _hooks.set_backward_hooks, _hooks.refuse_deletion("Deletion of _backwards_hooks not allowed!"),
    doc="torch's ``Tensor._backward_hooks``: the OrderedDict of register_hook hooks or None; "
        "assigning a dict replaces them; cannot be deleted."), "Tensor.")
