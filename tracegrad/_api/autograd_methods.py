"""Tensor methods, autograd family: ``backward``, ``register_hook``, ``retain_grad``,
``register_post_accumulate_grad_hook``. They are defined in ``autograd/_tensor_hooks.py`` (L3,
beside the engine and Node internals they use) and registered here like every other method."""
from __future__ import annotations

from ..autograd import _tensor_hooks as _hooks
from ._registry import method

method("backward")(_hooks.backward)
method("register_hook")(_hooks.register_hook)
method("retain_grad")(_hooks.retain_grad)
method("register_post_accumulate_grad_hook")(_hooks.register_post_accumulate_grad_hook)
