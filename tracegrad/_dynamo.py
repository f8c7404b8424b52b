"""``torch._dynamo``'s user-facing corner, for programs that configure ``torch.compile``
through it (``torch._dynamo.config.cache_size_limit = 64``, ``torch._dynamo.reset()``,
``torch._dynamo.mark_dynamic(x, 0)``). tracegrad has no bytecode tracer: these map onto
``tracegrad.compiler``.
"""
from __future__ import annotations

from . import compiler as _compiler
from .compiler import allow_in_graph, disable, is_compiling, reset

__all__ = ["config", "reset", "disable", "allow_in_graph", "is_compiling", "mark_dynamic", "graph_break",
           "maybe_mark_dynamic", "mark_static"]


class _Config:
    """``torch._dynamo.config``: ``cache_size_limit`` (alias ``recompile_limit``) is
    ``tracegrad.compiler.cache_size_limit`` (programs traced per compiled function before its
    calls run eagerly). The other flags programs commonly set are accepted and kept; they do
    not change what tracegrad does (a call that cannot be one program already runs eagerly,
    which is what ``suppress_errors`` asks for). Setting an unknown flag raises
    AttributeError, as torch."""

    _FLAGS = dict(suppress_errors=False, verbose=False, capture_scalar_outputs=False,
                  capture_dynamic_output_shape_ops=False, automatic_dynamic_shapes=True,
                  assume_static_by_default=True, optimize_ddp=True, accumulated_cache_size_limit=256,
                  inline_inbuilt_nn_modules=True, error_on_recompile=False, guard_nn_modules=False)

    def __init__(self):
        object.__setattr__(self, "_values", dict(self._FLAGS))

    def __getattr__(self, name):
        if name in ("cache_size_limit", "recompile_limit"):
            return _compiler.cache_size_limit
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"torch._dynamo.config.{name} does not exist") from None

    def __setattr__(self, name, value):
        if name in ("cache_size_limit", "recompile_limit"):
            _compiler.cache_size_limit = int(value)
        elif name in self._values:
            self._values[name] = value
        else:
            raise AttributeError(f"torch._dynamo.config.{name} does not exist")


config = _Config()


def graph_break(msg=""):
    """Mirrors ``torch._dynamo.graph_break``: inside a compiled function, a graph break here
    (the call runs eagerly, with the reason in ``tracegrad.compiler.stats()``; with
    ``fullgraph=True`` it raises ``GraphBreak``); outside one, nothing."""
    if is_compiling():
        raise _compiler.GraphBreak("torch._dynamo.graph_break() called" + (f": {msg}" if msg else ""))


def mark_dynamic(t, index, *, min=None, max=None):   # noqa: A002 -- torch's argument names
    """Mirrors ``torch._dynamo.mark_dynamic``: accepted; each new input shape is traced once
    and cached (XLA programs have static shapes), so there is nothing to mark."""


def maybe_mark_dynamic(t, index):
    """Mirrors ``torch._dynamo.maybe_mark_dynamic``: accepted, as ``mark_dynamic``."""


def mark_static(t, index=None):
    """Mirrors ``torch._dynamo.mark_static``: accepted; shapes are always static here."""
