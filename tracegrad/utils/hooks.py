"""Mirrors ``torch.utils.hooks``: ``RemovableHandle``, ``unserializable_hook`` and
``warn_if_has_hooks``. The handle class lives in ``tracegrad/_tensor/hooks.py`` (below autograd,
whose nodes and tensor hooks return it); this is the same class. ``warn_if_has_hooks`` lives
beside the tensor hooks (``autograd/_tensor_hooks.py``): pickling a tensor warns too."""
from __future__ import annotations

from collections import OrderedDict

from .._tensor.hooks import RemovableHandle as RemovableHandle
from ..autograd._tensor_hooks import warn_if_has_hooks as warn_if_has_hooks


def new_hook_dict() -> OrderedDict:
    return OrderedDict()


def unserializable_hook(f):
    """Mirrors ``torch.utils.hooks.unserializable_hook``: marks ``f`` (returned as is) as a tensor
    hook that is not meant to be saved, so ``tracegrad.save`` gives no warning for it."""
    f.__torch_unserializable__ = True
    return f


