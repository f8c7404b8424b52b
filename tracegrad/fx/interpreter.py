"""Mirrors ``torch.fx.interpreter``: ``Interpreter`` runs a GraphModule node by node (one
overridable method per op kind), ``Transformer`` re-records a new graph while doing so."""
from __future__ import annotations

import inspect

from ._tracer import Tracer
from .graph import Graph
from .graph_module import GraphModule
from .node import map_aggregate, map_arg
from .proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Mirrors ``torch.fx.Interpreter(module, garbage_collect_values=True, graph=None)``.

    ``run(*args)`` walks the graph: ``run_node`` fetches a node's arguments from ``env`` and
    calls the method named after its op (``placeholder``, ``get_attr``, ``call_function``,
    ``call_module``, ``call_method``, ``output``); override any of them. Values are dropped
    from ``env`` after their last use when ``garbage_collect_values``.

    Raises: RuntimeError for a missing positional input or a nonexistent attribute target."""

    def __init__(self, module, garbage_collect_values: bool = True, graph: Graph | None = None):
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            last_use = {}
            for node in reversed(self.graph.nodes):
                for inp in node.all_input_nodes:
                    last_use.setdefault(inp, node)
            self.user_to_last_uses = {}
            for inp, user in last_use.items():
                self.user_to_last_uses.setdefault(user, []).append(inp)

    def run(self, *args, initial_env: dict | None = None, enable_io_processing: bool = True):
        """Mirrors ``Interpreter.run``: the graph's output for positional ``args``
        (``initial_env`` pre-fills node values; those nodes are not run)."""
        self.env = initial_env if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback and hasattr(e, "add_note"):
                    e.add_note(f"While executing {node.format_node()}")
                raise
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, []):
                    self.env.pop(dead, None)
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n):
        """Mirrors ``Interpreter.run_node``: run one node with its arguments from ``env``."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ---- one method per op ---------------------------------------------------------------
    def placeholder(self, target, args, kwargs):
        """The next positional input (all the rest for ``*args``), else the default."""
        if target.startswith("**"):
            return {}
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not "
                               "passed in!") from None

    def get_attr(self, target, args, kwargs):
        """The value of ``module.<target>``."""
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        """``target(*args, **kwargs)``."""
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        """``args[0].<target>(*args[1:], **kwargs)``."""
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target, args, kwargs):
        """Call submodule ``module.<target>`` with the arguments."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        """The value ``run`` returns: the output node's argument."""
        return args[0]

    # ---- helpers -------------------------------------------------------------------------
    def fetch_attr(self, target: str):
        """Mirrors ``Interpreter.fetch_attr``: ``module.<target>``.

        Raises: RuntimeError naming the missing part of the path."""
        atoms = target.split(".")
        attr = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(attr, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[:i + 1])}")
            attr = getattr(attr, atom)
        return attr

    def fetch_args_kwargs_from_env(self, n):
        """Mirrors ``Interpreter.fetch_args_kwargs_from_env``."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        """Mirrors ``Interpreter.map_nodes_to_values``: each Node in ``args`` -> its value.

        Raises: RuntimeError for a node not computed yet (or already freed)."""
        def load(x):
            if x not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {x}! Run Graph.lint() to diagnose "
                                   "such issues")
            return self.env[x]
        return map_arg(args, load)


class _TransformerTracer(Tracer):
    def __init__(self, graph):
        super().__init__()
        self.graph = graph

    def is_leaf_module(self, m, qualname):
        return True


class Transformer(Interpreter):
    """Mirrors ``torch.fx.Transformer(module)``: ``transform()`` runs the graph on Proxies that
    record into ``new_graph`` and returns a new GraphModule; override the per-op methods to
    rewrite nodes (return Proxies built with ``self.tracer``)."""

    def __init__(self, module):
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target, args, kwargs):
        """A placeholder of the new graph (same name and default), as a Proxy."""
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target, args, kwargs):
        """Record a ``get_attr`` of ``target`` in the new graph."""
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        """Record the submodule call (``Tracer.call_module``: a leaf unless overridden)."""
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target, args, kwargs):
        """Record ``target(*args, **kwargs)`` in the new graph."""
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def run_node(self, n):
        """Run the node (on Proxies) and carry its ``meta`` over to the new node."""
        result = super().run_node(n)
        if isinstance(result, Proxy) and n.op != "output":
            for k, v in n.meta.items():
                result.node.meta.setdefault(k, v)
        return result

    def transform(self) -> GraphModule:
        """Mirrors ``Transformer.transform``: the rewritten GraphModule."""
        result = super().run(enable_io_processing=False)
        if result is not None:
            self.new_graph.output(map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a))
        return GraphModule(self.module, self.new_graph, type(self.module).__name__)
