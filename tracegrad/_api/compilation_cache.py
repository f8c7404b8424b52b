"""Whole-file writes for JAX's persistent compilation cache when tracegrad chose its folder.

NOTE [cache entries written whole]
JAX (0.4.30-0.10) writes a cache entry in place (``LRUCache.put``: ``Path.write_bytes``) and,
with eviction off (its default: no size limit), reads without a lock. tracegrad turns the cache
on by default in one folder (``~/.cache/tracegrad/xla``) that every process of the user shares:
two training scripts, a notebook beside a script, pytest-xdist workers. One process compiling a
program while another loads the same entry can read it half written, and deserializing that
crashed the reader (seen: a segfault in ``compilation_cache.get_executable_and_time``). So when
the cache is tracegrad's choice, each entry is written to a file of its own and renamed into
place (atomic on one file system): a reader sees no entry or the whole one. The bytes and names
are JAX's; nothing else about the cache changes. A folder the user configured is left to JAX.
"""
from __future__ import annotations

import os
import pathlib
import threading


def write_entries_atomically() -> None:
    """Make ``LRUCache.put`` write each entry whole (NOTE [cache entries written whole]).
    Idempotent; does nothing where JAX's cache module is not the one this was written for or
    eviction (which JAX locks itself) is on."""
    try:
        from jax._src import lru_cache     # private, and absent from some JAX versions: checked here
    except ImportError:
        return
    put = lru_cache.LRUCache.put
    if getattr(put, "_tracegrad_whole", False) or not hasattr(lru_cache, "_CACHE_SUFFIX"):
        return

    def put_whole(self, key, value):
        path = getattr(self, "path", None)
        # a remote folder (etils' paths, not the standard library's) stays JAX's
        if getattr(self, "eviction_enabled", True) or not key or not isinstance(path, pathlib.PurePath):
            return put(self, key, value)
        final = os.fspath(path / f"{key}{lru_cache._CACHE_SUFFIX}")
        if os.path.exists(final):
            return None
        tmp = os.fspath(path / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp")
        # os-level writes: ``open`` while a compiled step is traced (an op compiled then) would
        # be the user's file I/O to the trace's guard (capture.guard_output)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            try:
                view = memoryview(value)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, final)
        except BaseException:
            # a failed write or rename (a full disk, an interrupt, a folder made read-only)
            # leaves no temporary file behind to fill the shared folder
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return None
    put_whole._tracegrad_whole = True
    put_whole.__doc__ = put.__doc__
    lru_cache.LRUCache.put = put_whole
