"""``torch._inductor.utils``: the helpers programs call around ``torch.compile`` (the regional
compilation recipe measures a cold compile inside ``fresh_inductor_cache()``)."""
from __future__ import annotations

import contextlib

__all__ = ["fresh_inductor_cache", "fresh_cache"]


@contextlib.contextmanager
def fresh_cache(cache_entries=None, dir=None, delete=True):  # noqa: A002 -- torch's argument names
    """Mirrors ``torch._inductor.utils.fresh_cache`` (alias ``fresh_inductor_cache``): torch
    compiles inside with an empty on-disk kernel cache. tracegrad keeps no on-disk cache of its
    own (``tracegrad.compiler.reset()`` forgets the compiled programs), so the block runs
    unchanged; ``cache_entries``, when given, stays an empty dict."""
    yield


fresh_inductor_cache = fresh_cache
