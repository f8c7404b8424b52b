"""Mirrors ``torch.fx.graph_module``: ``GraphModule``, an ``nn.Module`` whose ``forward`` is
Python source generated from its ``graph`` and compiled with ``exec``.

Each GraphModule gets its own subclass (named ``class_name``), so assigning ``forward`` on
recompile touches no other instance. The generated source is registered with ``linecache`` so
tracebacks through ``forward`` show the generated lines."""
from __future__ import annotations

import copy
import itertools
import linecache

from .._tensor.tensor import Tensor
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from ._tracer import Tracer
from ._codegen import base_globals
from .graph import Graph

__all__ = ["GraphModule"]

_counter = itertools.count()


def _exec_forward(src: str, globals_: dict):
    key = f"<eval_with_key>.{next(_counter)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    scope = dict(globals_)
    exec(compile(src, key, "exec"), scope)
    return scope["forward"]


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    """Set ``to_module.<target>`` to the object at ``from_module.<target>``, creating empty
    ``Module``s for missing intermediate paths (torch's layout: ``Module(`` in the repr)."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    _set(to_module, field, getattr(from_module, field))


def _set(module: Module, field: str, value) -> None:
    # a plain tensor attribute (a traced constant) becomes a buffer, as in torch: it is then
    # in state_dict and moves with .to()
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        module.register_buffer(field, value)
    else:
        setattr(module, field, value)


def _parent(module: Module, target: str, create: bool):
    """(module owning the last part of dotted ``target``, that part), creating empty
    ``Module``s for missing parts when ``create``; None when a part is missing or no Module."""
    *prefix, field = target.split(".")
    for item in prefix:
        sub = getattr(module, item, None)
        if sub is None and create:
            sub = Module()
            module.add_module(item, sub)
        if not isinstance(sub, Module):
            return None
        module = sub
    return module, field


def _assign_attr(value, to_module: Module, target: str) -> None:
    parent, field = _parent(to_module, target, create=True)
    _set(parent, field, value)


class GraphModule(Module):
    """Mirrors ``torch.fx.GraphModule(root, graph, class_name='GraphModule')``.

    ``root`` is an ``nn.Module`` (the submodules, parameters, buffers and tensor attributes the
    graph's ``call_module``/``get_attr`` nodes name are copied from it, shared not cloned) or a
    dict from qualified name to object. ``forward`` runs ``self.code``.

    Raises: RuntimeError when ``root`` is neither, or a dict lacks a target the graph names."""

    def __new__(cls, *args, **kwargs):
        for t in cls.__mro__:
            c = t.__qualname__.split(".")[-1]
            if c != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):   # one class per instance: forward is set on it
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root, graph: Graph, class_name: str = "GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        self.__class__.__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target was "
                                           "not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.meta = dict(getattr(root, "meta", {})) if isinstance(root, Module) else {}
        self.graph = graph

    # ---- the graph and its code ----------------------------------------------------------
    @property
    def graph(self) -> Graph:
        """The Graph behind this module; assigning one recompiles ``forward``."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise TypeError(f"torch.fx.GraphModule.graph: expected a Graph, got {type(g).__name__}")
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of ``forward``, as torch generates it."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self):
        """Mirrors ``GraphModule.recompile``: regenerate ``code`` from ``graph`` (call it after
        editing the graph) and install the new ``forward``. Returns the ``PythonCode``."""
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        type(self).forward = _exec_forward(self._code, python_code.globals)
        return python_code

    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False, **_ignored) -> str:
        """Mirrors ``GraphModule.print_readable``: the module as a class with the generated
        ``forward`` (nested GraphModules as nested classes). Prints it unless told not to and
        returns it."""
        out = self._readable(type(self).__name__)
        if print_output:
            print(out)
        return out

    def _readable(self, name: str) -> str:
        src = self._graph.python_code(root_module="self", verbose=True).src.strip()
        body = "\n".join("    " + line if line else line for line in src.split("\n"))
        parts = [f"class {name}(torch.nn.Module):\n{body}\n"]
        for sub_name, sub in self.named_children():
            if isinstance(sub, GraphModule):
                nested = sub._readable(sub_name)
                parts.append("\n".join("    " + line if line else line for line in nested.split("\n")))
        return "\n".join(parts)

    def __str__(self) -> str:
        return "\n".join([super().__str__(), self._code,
                          "# To see more debug info, please use `graph_module.print_readable()`"])

    # ---- submodule surgery ----------------------------------------------------------------
    def add_submodule(self, target: str, m: Module) -> bool:
        """Mirrors ``GraphModule.add_submodule``: install ``m`` at dotted ``target``, creating
        empty ``Module``s on the way. Returns False when a part of the path exists but is no
        Module."""
        found = _parent(self, target, create=True)
        if found is None:
            return False
        found[0].add_module(found[1], m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Mirrors ``GraphModule.delete_submodule``: remove the submodule at ``target``.
        Returns False when there is none there."""
        found = _parent(self, target, create=False)
        if found is None or not isinstance(getattr(found[0], found[1], None), Module):
            return False
        delattr(*found)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Mirrors ``GraphModule.delete_all_unused_submodules``: drop every submodule no
        ``call_module``/``get_attr`` node reaches (their parents stay)."""
        used = set()
        for node in self._graph.nodes:
            if node.op in ("call_module", "get_attr"):
                parts = node.target.split(".")
                used.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
                if node.op == "call_module":   # a called module uses all of its own children
                    sub = self.get_submodule(node.target)
                    used.update(f"{node.target}.{n}" for n, _ in sub.named_modules() if n)
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    # ---- copies --------------------------------------------------------------------------
    def __deepcopy__(self, memo):
        res = Module.__new__(Module)
        memo[id(self)] = res
        state = copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}, memo)
        res.__dict__.update(state)
        graph = copy.deepcopy(self._graph, memo)
        out = GraphModule(res, graph)   # torch's copy is a plain 'GraphModule' too
        for k, v in state.items():
            if k not in out.__dict__ or k in ("meta", "training"):
                out.__dict__[k] = v
        return out

    def __copy__(self):
        res = GraphModule(self, self._graph, type(self).__name__)
        res.meta = dict(self.meta)
        return res

    def __reduce__(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        # the globals the code binds beyond torch's names (user functions) pickle by reference
        extra = {k: v for k, v in self._graph.python_code(root_module="self").globals.items()
                 if k not in base_globals()}
        return (_rebuild, (state, self._code, extra))


def _rebuild(state: dict, code: str, extra_globals: dict) -> GraphModule:
    """Unpickle: rebuild the graph by tracing the saved source over the saved submodules
    (every submodule stays a ``call_module`` leaf), as torch's ``reduce_graph_module`` does."""

    class _CodeOnly(Module):
        pass
    forward = _exec_forward(code, {**base_globals(), **extra_globals})
    _CodeOnly.forward = forward
    mod = Module.__new__(_CodeOnly)
    mod.__dict__.update(state)

    class _KeepModules(Tracer):
        def is_leaf_module(self, m, qualname):
            return True
    graph = _KeepModules().trace(mod)
    out = GraphModule(mod, graph)
    for k, v in state.items():
        if k not in out.__dict__:
            out.__dict__[k] = v
    return out
