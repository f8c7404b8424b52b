"""Mirrors ``torch.fx._symbolic_trace``: ``symbolic_trace`` (trace, then wrap the graph in a
``GraphModule``), with ``Tracer``, ``wrap`` and ``PH`` from ``_tracer.py``."""
from __future__ import annotations

from ..nn.modules.module import Module
from ._tracer import PH, Tracer, _assert, _assert_is_none, wrap
from .graph_module import GraphModule

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH"]
_ = (PH, _assert, _assert_is_none, wrap)   # generated code names them by this module's path


def symbolic_trace(root, concrete_args: dict | None = None) -> GraphModule:
    """Mirrors ``torch.fx.symbolic_trace``: trace ``root`` (an ``nn.Module`` or a function)
    with the default ``Tracer`` and return a ``GraphModule`` whose class is named after root's
    (after the function for a function).

    Raises: TraceError for control flow on traced values (see ``Tracer.trace``)."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
