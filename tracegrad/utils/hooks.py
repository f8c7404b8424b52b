"""Mirrors ``torch.utils.hooks``: ``RemovableHandle``, ``unserializable_hook`` and
``warn_if_has_hooks``. The handle class lives in ``tracegrad/_tensor/hooks.py`` (below autograd,
whose nodes and tensor hooks return it); this is the same class."""
from __future__ import annotations

from collections import OrderedDict

from .._tensor.hooks import RemovableHandle as RemovableHandle
from ..autograd._tensor_hooks import backward_hooks as _backward_hooks
from .._ops.warn import warn as _warn


def new_hook_dict() -> OrderedDict:
    return OrderedDict()


def unserializable_hook(f):
    """Mirrors ``torch.utils.hooks.unserializable_hook``: marks ``f`` (returned as is) as a tensor
    hook that is not meant to be saved, so ``tracegrad.save`` gives no warning for it."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor) -> None:
    """Mirrors ``torch.utils.hooks.warn_if_has_hooks``: a UserWarning for each hook of
    ``tensor.register_hook`` not marked ``unserializable_hook`` (save keeps no hooks)."""
    for hook in (_backward_hooks(tensor) or {}).values():
        if not hasattr(hook, "__torch_unserializable__"):
            _warn(f"backward hook {hook!r} on tensor will not be serialized.  If this is expected, you can "
                  "decorate the function with @tracegrad.utils.hooks.unserializable_hook to suppress this "
                  "warning")
