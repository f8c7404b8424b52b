"""Mirrors ``torch.fx``: symbolic tracing of ``nn.Module``s and functions into a ``Graph`` of
``Node``s, Python code generated from it (``GraphModule``), and the tools to run and rewrite it
(``Interpreter``, ``Transformer``, ``subgraph_rewriter.replace_pattern``, ``passes``).

Targets are tracegrad functions, printed and generated under torch's names (``torch.relu``,
``torch._C._nn.linear``; generated code runs with ``torch`` bound to a view of ``tracegrad``
that resolves those paths), and ``F.*`` calls are recorded with the arguments torch's Python
functions forward (``relu(x, inplace = False)``), so ``gm.code`` reads as torch's.

Differs from torch: no pytree input/output flattening (``concrete_args`` takes plain values),
no custom code generators, no ``ProxyableClassMeta``, no mutable-operation check, no
``torch.fx.experimental`` beyond ``optimization.fuse``; ``Graph.print_tabular`` needs the
``tabulate`` package, as torch's.
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
