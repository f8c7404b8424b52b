"""Mirrors ``torch.fx.graph``: ``Graph``, the ordered list of ``Node``s a trace records, with
the editing API (insertion points, copies, erasure, dead-code elimination), its checks
(``lint``), its printing (``str``, ``print_tabular``) and its Python code (``python_code``)."""
from __future__ import annotations

import copy
import inspect

from ._codegen import PythonCode, python_code
from ._namespace import Namespace, target_to_str
from .node import Node, map_arg

__all__ = ["Graph", "PythonCode"]


class _NodeList:
    """The live view ``graph.nodes``: iterable (also reversed) and sized."""

    def __init__(self, graph, reverse=False):
        self._graph, self._reverse = graph, reverse

    def __len__(self):
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        step = "_prev" if self._reverse else "_next"
        cur = getattr(root, step)
        while cur is not root:
            nxt = getattr(cur, step)   # read first: the loop body may erase cur
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return _NodeList(self._graph, not self._reverse)


class _InsertPoint:
    """Sets a graph's insertion point now; ``with`` restores the previous one at exit."""

    def __init__(self, graph, where):
        self._graph, self._prev = graph, graph._insert
        graph._insert = where

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._graph._insert = self._prev


class Graph:
    """Mirrors ``torch.fx.Graph``. Nodes are created at the insertion point (the end unless
    ``inserting_before``/``inserting_after`` says otherwise) and named uniquely from their
    target.

    Raises: RuntimeError when erasing a node that still has users or belongs elsewhere, and
    from ``lint`` for a malformed graph."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._graph_namespace = Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._insert = self._root.prepend
        self._wrapped_fns = []

    @property
    def owning_module(self):
        """The GraphModule this graph belongs to (None for a free graph)."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        """The nodes in order: a live view (iterable, reversible, sized); erasing while iterating is safe."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target=None, sort: bool = True) -> list:
        """Mirrors ``Graph.find_nodes``: the nodes with this ``op`` (and ``target``), in order."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ---- creating nodes ------------------------------------------------------------------
    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None) -> Node:
        """Mirrors ``Graph.create_node``: a new node at the insertion point."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise TypeError(f"torch.fx.Graph.create_node: args must be a tuple, got {type(args).__name__}")
        if not isinstance(kwargs, dict):
            raise TypeError(f"torch.fx.Graph.create_node: kwargs must be a dict, got {type(kwargs).__name__}")
        candidate = name if name is not None else target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name: str, type_expr=None, default_value=inspect.Signature.empty) -> Node:
        """Mirrors ``Graph.placeholder``: a forward parameter (``default_value`` its default)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr=None) -> Node:
        """Mirrors ``Graph.get_attr``: read ``root.<qualified_name>``."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args=None, kwargs=None, type_expr=None) -> Node:
        """Mirrors ``Graph.call_module``: call submodule ``root.<module_name>``."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args=None, kwargs=None, type_expr=None) -> Node:
        """Mirrors ``Graph.call_method``: ``args[0].<method_name>(*args[1:], **kwargs)``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None) -> Node:
        """Mirrors ``Graph.call_function``: ``the_function(*args, **kwargs)``."""
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None) -> Node:
        """Mirrors ``Graph.output``: what ``forward`` returns."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform=lambda x: x) -> Node:
        """Mirrors ``Graph.node_copy``: copy ``node`` (from any graph) here, its input Nodes
        mapped through ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    def graph_copy(self, g: "Graph", val_map: dict, return_output_node: bool = False):
        """Mirrors ``Graph.graph_copy``: copy every node of ``g`` (but its output) here;
        ``val_map`` maps ``g``'s nodes to the values standing for them and is filled in.
        Returns the copied output value (and the output node when asked)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None) -> "Graph":
        memo = memo if memo is not None else {}
        g = Graph(tracer_cls=self._tracer_cls)
        g._wrapped_fns = list(self._wrapped_fns)
        out = g.graph_copy(self, val_map=memo, return_output_node=True)
        if out is not None:
            value, old_output = out
            g.output(value, type_expr=old_output.type).meta = copy.copy(old_output.meta)
        return g

    # ---- insertion points ----------------------------------------------------------------
    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """Mirrors ``Graph.inserting_before``: new nodes go before ``n`` (default: the start)."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise RuntimeError("torch.fx.Graph.inserting_before: the node belongs to another graph")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """Mirrors ``Graph.inserting_after``: new nodes go after ``n`` (default: the end)."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise RuntimeError("torch.fx.Graph.inserting_after: the node belongs to another graph")
        return _InsertPoint(self, n.append)

    # ---- removing nodes ------------------------------------------------------------------
    def erase_node(self, to_erase: Node) -> None:
        """Mirrors ``Graph.erase_node``.

        Raises: RuntimeError if the node still has users, or is not in this graph."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                               f"users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})   # its inputs lose it as a user

    def eliminate_dead_code(self, is_impure_node=None) -> bool:
        """Mirrors ``Graph.eliminate_dead_code``: erase, last to first, every node without users
        that is not impure (``Node.is_impure`` or ``is_impure_node``). Returns whether any went."""
        self.lint()
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and not node.users:
                self.erase_node(node)
                changed = True
        return changed

    # ---- checks and printing -------------------------------------------------------------
    def lint(self) -> None:
        """Mirrors ``Graph.lint``: every node belongs here, is defined before it is used, has a
        unique name and a valid op; a get_attr/call_module target exists on the owning module.

        Raises: RuntimeError naming the first problem."""
        seen, names = set(), set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for inp in node.all_input_nodes:
                if inp.graph is not self:
                    raise RuntimeError(f"Argument '{inp}' of Node '{node}' does not belong to this Graph!")
                if inp not in seen:
                    raise RuntimeError(f"Argument '{inp}' of Node '{node}' was used before it has been defined! "
                                       "Please check that Nodes in the graph are topologically ordered")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen.add(node)
            names.add(node.name)
        mod = self._owning_module
        if mod is None:
            return
        for node in self.nodes:
            if node.op not in ("get_attr", "call_module"):
                continue
            obj = mod
            for i, atom in enumerate(node.target.split(".")):
                if not hasattr(obj, atom):
                    raise RuntimeError(f"Node {node} target {node.target} references nonexistent attribute "
                                       f"{atom} of {'.'.join(node.target.split('.')[:i]) or 'the root module'}")
                obj = getattr(obj, atom)

    def __str__(self) -> str:
        lines = ["graph():"]
        for node in self.nodes:
            line = node.format_node()
            if line:
                lines.append("    " + line)
        return "\n".join(lines)

    def print_tabular(self) -> None:
        """Mirrors ``Graph.print_tabular``: one row per node (opcode, name, target, args,
        kwargs), drawn by the ``tabulate`` package.

        Raises: ImportError (after printing how to install it) when tabulate is missing, as torch."""
        try:
            from tabulate import tabulate
        except ImportError:
            print("`print_tabular` relies on the library `tabulate`, which could not be found on this "
                  "machine. Run `pip install tabulate` to install the library.")
            raise
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        print(tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"]))

    def python_code(self, root_module: str, *, verbose: bool = False, **_ignored) -> PythonCode:
        """Mirrors ``Graph.python_code``: the source of ``def forward(<root_module>, ...)``
        and the globals it needs."""
        return python_code(list(self.nodes), self._graph_namespace, root_module, verbose, self._wrapped_fns)

    def on_generate_code(self, make_transformer):
        """Mirrors ``Graph.on_generate_code``: not supported (tracegrad has one code generator).

        Raises: NotImplementedError."""
        raise NotImplementedError("torch.fx.Graph.on_generate_code: custom code generators are not supported "
                                  "in tracegrad; edit the graph instead")
