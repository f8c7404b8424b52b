"""Mirrors ``torch.utils.hooks``: ``RemovableHandle``. The class lives in ``tracegrad/_tensor/hooks.py``
(below autograd, whose nodes and tensor hooks return it); this is the same class."""
from __future__ import annotations

from collections import OrderedDict

from .._tensor.hooks import RemovableHandle as RemovableHandle


def new_hook_dict() -> OrderedDict:
    return OrderedDict()
