"""Mirrors ``torch.fx.node``: one operation of a ``Graph`` (``Node``) and the helpers that walk
the nested arguments a node holds (``map_arg``, ``map_aggregate``).

A node's ``op`` is one of ``placeholder``, ``get_attr``, ``call_function``, ``call_module``,
``call_method``, ``output``. Its ``args``/``kwargs`` may nest tuples, lists, dicts and slices
whose leaves are other Nodes or plain constants; the Node keeps its inputs' ``users`` in step
whenever ``args``/``kwargs`` are reassigned.
"""
from __future__ import annotations

import builtins
import operator

__all__ = ["Node", "map_arg", "map_aggregate", "Argument", "Target"]

Argument = object
Target = object

_OPS = ("placeholder", "get_attr", "call_function", "call_module", "call_method", "output", "root")


def map_aggregate(a, fn):
    """Mirrors ``torch.fx.node.map_aggregate``: apply ``fn`` to every leaf of ``a``, rebuilding
    tuples (named tuples too), lists, dicts and slices around the results."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """Mirrors ``torch.fx.node.map_arg``: apply ``fn`` to every Node inside ``a``.

    Raises: TypeError when ``fn`` is not callable (as torch's assertion-free check reads)."""
    if not callable(fn):
        raise TypeError("torch.fx.map_arg: fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _qualified_name(func) -> str:
    """The dotted name torch prints and generates for a callable target (``torch.relu``,
    ``torch.nn.functional.relu``, ``operator.add``, ``builtins.getattr``)."""
    from ._names import torch_name
    name = torch_name(func)
    if name is not None:
        return name
    if getattr(builtins, getattr(func, "__name__", ""), None) is func:
        return f"builtins.{func.__name__}"
    if getattr(operator, getattr(func, "__name__", ""), None) is func:
        return f"operator.{func.__name__}"
    module = getattr(func, "__module__", None) or "__main__"
    return f"{module}.{getattr(func, '__qualname__', getattr(func, '__name__', repr(func)))}"


def _pretty_target(target) -> str:
    return _qualified_name(target) if callable(target) and not isinstance(target, str) else str(target)


def _format_arg(arg) -> str:
    """How ``str(graph)`` writes an argument: Nodes as ``%name``, dict keys bare."""
    if isinstance(arg, tuple) and not hasattr(arg, "_fields"):
        items = ", ".join(_format_arg(a) for a in arg)
        return f"({items},)" if len(arg) == 1 else f"({items})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    if type(arg).__name__ == "dtype" and type(arg).__module__.startswith("tracegrad"):
        return "torch." + str(arg).rpartition(".")[2]   # torch prints its dtypes as torch.float32
    return str(arg)


class Node:
    """Mirrors ``torch.fx.Node``: ``op``, ``target``, ``name``, ``args``, ``kwargs``, ``users``
    (dict Node -> None, insertion-ordered), ``meta`` (free-form dict), ``type`` and the graph
    it belongs to. Nodes live in their graph's doubly linked list (``prev``/``next``).

    Raises: ValueError for an unknown ``op``; RuntimeError when moving/linking across graphs."""

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in _OPS:
            # (torch asserts it: AssertionError)
            raise AssertionError(f"op {op!r} is not in _legal_ops: a node's op is one of {_OPS[:-1]}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"torch.fx.Node: call_function target must be callable, got {target!r}")
        if op in ("placeholder", "get_attr", "call_module", "call_method", "output") and not isinstance(target, str):
            raise ValueError(f"torch.fx.Node: {op} target must be a str, got {target!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes = {}
        self.users = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta = {}
        self._args = ()
        self._kwargs = {}
        self._update_args_kwargs(args, kwargs)

    # ---- linked list ---------------------------------------------------------------------
    @property
    def next(self):
        """The node after this one in its graph (the graph's root sentinel after the last)."""
        return self._next

    @property
    def prev(self):
        """The node before this one in its graph."""
        return self._prev

    def prepend(self, x: "Node") -> None:
        """Mirrors ``Node.prepend``: move ``x`` right before this node."""
        if x.graph is not self.graph:
            raise RuntimeError("torch.fx.Node.prepend: the two nodes belong to different graphs")
        if x is self:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: "Node") -> None:
        """Mirrors ``Node.append``: move ``x`` right after this node."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # ---- arguments -----------------------------------------------------------------------
    @property
    def args(self) -> tuple:
        """Positional arguments (a tuple; assigning one updates the inputs' ``users``)."""
        return self._args

    @args.setter
    def args(self, a):
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        """Keyword arguments (a dict; assigning one updates the inputs' ``users``)."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list:
        """The Nodes among ``args``/``kwargs``, each once, in first-seen order."""
        return list(self._input_nodes)

    def _update_args_kwargs(self, new_args, new_kwargs):
        self._args = tuple(map_aggregate(new_args, lambda x: x))
        self._kwargs = dict(map_aggregate(new_kwargs, lambda x: x))
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        map_arg(self._args, lambda n: self._input_nodes.setdefault(n))
        map_arg(self._kwargs, lambda n: self._input_nodes.setdefault(n))
        for n in self._input_nodes:
            n.users.setdefault(self)

    def update_arg(self, idx: int, arg) -> None:
        """Mirrors ``Node.update_arg``: replace positional argument ``idx``."""
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg) -> None:
        """Mirrors ``Node.update_kwarg``: set keyword argument ``key``."""
        self.kwargs = {**self.kwargs, key: arg}

    def replace_all_uses_with(self, replace_with: "Node", delete_user_cb=lambda user: True, *,
                              propagate_meta=False) -> list:
        """Mirrors ``Node.replace_all_uses_with``: every user of this node (for which
        ``delete_user_cb`` is true) reads ``replace_with`` instead. Returns the changed users."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        to_process = [u for u in self.users if delete_user_cb(u)]
        for user in to_process:
            user.replace_input_with(self, replace_with)
        return to_process

    def replace_input_with(self, old_input: "Node", new_input: "Node") -> None:
        """Mirrors ``Node.replace_input_with``: swap ``old_input`` for ``new_input`` in
        ``args``/``kwargs``."""
        swap = lambda n: new_input if n is old_input else n  # noqa: E731
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    # ---- printing ------------------------------------------------------------------------
    def __repr__(self) -> str:
        return self.name

    def format_node(self, placeholder_names=None, maybe_return_typename=None) -> str | None:
        """Mirrors ``Node.format_node``: the line ``str(graph)`` prints for this node."""
        if self.op == "output":
            return f"return {self.args[0]}"
        from ._names import type_repr
        typed = f"{type_repr(self.type)} " if self.type is not None else ""
        head = f"%{self.name} : {typed}[num_users={len(self.users)}] = {self.op}[target={_pretty_target(self.target)}]"
        if self.op == "placeholder":
            return head + (f"(default={self.args[0]})" if self.args else "")
        if self.op == "get_attr":
            return head
        return head + f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})"

    def is_impure(self) -> bool:
        """Mirrors ``Node.is_impure``: placeholders, outputs and in-place calls (a target or
        method whose name ends with one ``_``) are kept by dead-code elimination."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module":
            mod = self.graph.owning_module
            sub = mod.get_submodule(self.target) if mod is not None else None
            return bool(getattr(sub, "_is_impure", False))
        name = self.target if isinstance(self.target, str) else getattr(self.target, "__name__", "")
        return self.op in ("call_method", "call_function") and name.endswith("_") and not name.endswith("__")

    @property
    def stack_trace(self):
        """The traced program's stack where the node was recorded (``meta["stack_trace"]``), or None."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace):
        self.meta["stack_trace"] = trace


# a Node is used as a dict key by identity (torch's too)
Node.__hash__ = object.__hash__
