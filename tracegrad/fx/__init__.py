"""Mirrors ``torch.fx``: symbolic tracing of ``nn.Module``s and functions into a ``Graph`` of
``Node``s, Python code generated from it (``GraphModule``), and the tools to run and rewrite it
(``Interpreter``, ``Transformer``, ``subgraph_rewriter.replace_pattern``, ``passes``).

Differs from torch: targets are tracegrad functions, printed and generated under torch's names
(``torch.relu``; the generated code binds ``torch`` to ``tracegrad``); Python-level ``F.*``
functions pass on only the arguments the caller wrote (torch's pass their defaults too, e.g.
``inplace = False``); no pytree input/output flattening, no custom code generators, no
``torch.fx.experimental`` beyond ``optimization.fuse``.
"""
from . import passes, subgraph_rewriter
from ._symbolic_trace import PH, Tracer, symbolic_trace, wrap
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Proxy
from .subgraph_rewriter import replace_pattern

__all__ = ["symbolic_trace", "Tracer", "wrap", "PH", "Graph", "GraphModule", "Interpreter", "Transformer", "Node",
           "Proxy", "replace_pattern", "map_arg", "passes", "subgraph_rewriter"]
