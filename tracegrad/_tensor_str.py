"""``torch._tensor_str``'s public corner: the print options as a dict and as a context manager
(``torch._utils.render_call`` and PyTorch's tests print under ``printoptions(...)``)."""
from __future__ import annotations

import contextlib

from ._tensor.tensor_str import get_printoptions, set_printoptions
from ._state import PRINT_OPTS

__all__ = ["PRINT_OPTS", "get_printoptions", "printoptions", "set_printoptions"]


@contextlib.contextmanager
def printoptions(**kwargs):
    """Mirrors ``torch._tensor_str.printoptions``: ``set_printoptions(**kwargs)`` for the
    ``with`` block, the previous options restored after (also when the block raises)."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)
