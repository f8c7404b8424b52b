"""The tracer of ``torch.fx._symbolic_trace``: ``Tracer`` runs a module's ``forward`` on
Proxies and records a ``Graph``; ``wrap`` makes a module-level function a leaf of every trace.

While a trace runs, ``Module.__call__`` and ``Module.__getattr__`` are patched (class-wide,
restored afterwards, as torch does): calling a submodule asks ``call_module`` whether to record
it or trace through it, and reading a parameter records a ``get_attr``."""
from __future__ import annotations

import builtins
import collections
import functools
import inspect
import math
import types

from ..nn.modules.container import Sequential
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from .._tensor.tensor import Tensor
from .graph import Graph
from .proxy import BASE_TYPES, ParameterProxy, Proxy, TracerBase

__all__ = ["Tracer", "wrap", "PH"]

# (globals dict of the module that called wrap, function name): patched during every trace
_WRAPPED = {}
_ABSENT = object()   # the global did not exist before the trace (a wrapped builtin)


def wrap(fn_or_name):
    """Mirrors ``torch.fx.wrap``: call at module scope with a function (or its name) defined in
    that module; traces then record calls of it as one ``call_function`` node instead of
    tracing into it. Returns its argument.

    Raises: RuntimeError for an argument that is neither (checked first, as torch) or a name
    that is no function there; NotImplementedError when not called at module scope."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or string name")
    frame = inspect.currentframe().f_back
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    name = fn_or_name if isinstance(fn_or_name, str) else getattr(fn_or_name, "__name__", None)
    if name is None or (name in frame.f_globals and not callable(frame.f_globals[name])):
        raise RuntimeError(f"torch.fx.wrap: {fn_or_name!r} is not a function of this module")
    _WRAPPED[(id(frame.f_globals), name)] = frame.f_globals
    return fn_or_name


def _assert(condition, message: str) -> None:
    """Guard that generated code runs for a ``concrete_args`` input (torch's ``torch._assert``)."""
    if not condition:
        raise AssertionError(message)


def _assert_is_none(value, message: str) -> None:
    """Guard for a ``concrete_args`` input traced as None."""
    if value is not None:
        raise AssertionError(message)


class _PH:
    """``torch.fx.PH``: in ``concrete_args``, marks an element still traced as a placeholder."""

    def __repr__(self):
        return "PH"


PH = _PH()


class Tracer(TracerBase):
    """Mirrors ``torch.fx.Tracer``: ``trace(root)`` records ``root``'s forward into a Graph.

    Override ``is_leaf_module`` to choose which submodules stay ``call_module`` nodes,
    ``call_module``/``create_proxy``/``create_arg``/``getattr`` to change what is recorded.
    ``autowrap_modules`` (default ``(math,)``) and ``autowrap_functions``: functions recorded as
    ``call_function`` leaves when ``forward``'s globals name them."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant=False):
        self._autowrap_function_ids = {id(v) for m in autowrap_modules for k, v in m.__dict__.items()
                                       if not k.startswith("_") and callable(v)}
        self._autowrap_function_ids |= {id(f) for f in autowrap_functions}
        self._autowrap_search = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.root = None
        self.graph = None
        self.submodule_paths = None
        self.tensor_attrs = {}
        self.module_stack = collections.OrderedDict()
        self.scope = ""

    # ---- what to record ------------------------------------------------------------------
    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """Mirrors ``Tracer.is_leaf_module``: tracegrad's own ``nn`` modules (but Sequential)
        are leaves; user modules are traced through."""
        return type(m).__module__.startswith("tracegrad.nn") and not isinstance(m, Sequential)

    def path_of_module(self, mod: Module) -> str:
        """Mirrors ``Tracer.path_of_module``: ``mod``'s qualified name in ``root``.

        Raises: NameError when ``mod`` is not a submodule of root."""
        if self.submodule_paths is None:
            self.submodule_paths = {id(m): n for n, m in self.root.named_modules()}
        path = self.submodule_paths.get(id(mod))
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m: Module, forward, args, kwargs):
        """Mirrors ``Tracer.call_module``: record ``m`` as one ``call_module`` node if it is a
        leaf, else trace through ``forward``."""
        path = self.path_of_module(m)
        outer = self.scope
        self.scope = path
        self.module_stack[path] = (path, type(m))
        try:
            if not self.is_leaf_module(m, path):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", path, args, kwargs)
        finally:
            self.module_stack.pop(path, None)
            self.scope = outer

    def getattr(self, attr: str, attr_val, parameter_proxy_cache: dict):
        """Mirrors ``Tracer.getattr``: a parameter of root read as an attribute becomes a
        ``get_attr`` proxy (one per parameter); any other value is returned as it is."""
        if not isinstance(attr_val, Parameter):
            return attr_val
        for n, p in self.root.named_parameters():
            if attr_val is p:
                if n not in parameter_proxy_cache:
                    if self.param_shapes_constant:
                        node = self.create_node("get_attr", n, (), {})
                        parameter_proxy_cache[n] = ParameterProxy(self, node, n, attr_val)
                    else:
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {})
                return parameter_proxy_cache[n]
        return attr_val

    def create_arg(self, a):
        """Mirrors ``Tracer.create_arg``: a value as a node argument: Proxies become their
        Nodes, root's parameters/buffers/tensor attributes ``get_attr`` nodes, other tensors
        ``_tensor_constant<i>`` attributes of root; containers recursively.

        Raises: NameError for a parameter that is no member of root, NotImplementedError for a
        type that cannot be an argument."""
        if isinstance(a, Proxy):
            return a.node
        if hasattr(type(a), "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            for n, b in self.root.named_buffers():
                if a is b:
                    return self.create_node("get_attr", n, (), {})
            qualname = self.tensor_attrs.get(id(a))
            if qualname is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                qualname = f"_tensor_constant{i}"
                self.tensor_attrs[id(a)] = qualname
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, Module):
            return self.create_node("get_attr", self.path_of_module(a), (), {})
        return super().create_arg(a)

    def _placeholders(self, fn, skip_self, concrete_args):
        """One placeholder per parameter of ``fn`` (in signature order). Returns the values to
        call it with: positional ones, keyword-only ones (name -> value), and the Proxies for
        ``*args``/``**kwargs`` (None when ``fn`` has no such parameter)."""
        params = list(inspect.signature(fn).parameters.values())[1 if skip_self else 0:]
        concrete_args = dict(concrete_args or {})
        pos, kwonly, var = [], {}, {}
        for p in params:
            variadic = p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            if p.name in concrete_args and concrete_args[p.name] is not PH and not variadic:
                value = self._concrete(p, concrete_args[p.name])
            else:
                name = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
                default = () if p.default is inspect.Parameter.empty else (p.default,)
                value = self.create_proxy("placeholder", name, default, {}, type_expr=_plain_type(p.annotation))
            if variadic:
                var[p.kind] = value
            elif p.kind == p.KEYWORD_ONLY:
                kwonly[p.name] = value
            else:
                pos.append(value)
        return pos, kwonly, var.get(inspect.Parameter.VAR_POSITIONAL), var.get(inspect.Parameter.VAR_KEYWORD)

    def _concrete(self, p, value):
        """A ``concrete_args`` value: still a parameter of the generated forward (``<name>_1``,
        same default), checked at run time to equal the value the trace specialised on."""
        if not isinstance(value, BASE_TYPES):
            return value
        default = () if p.default is inspect.Parameter.empty else (p.default,)
        ph = self.create_proxy("placeholder", f"{p.name}_1", default, {})
        msg = f"{p.name} was fixed to {value!r} by concrete_args when traced; got another value"
        if value is None:
            self.create_proxy("call_function", _assert_is_none, (ph, msg), {})
        else:
            self.create_proxy("call_function", _assert, (ph == value, msg), {})
        return value

    def trace(self, root, concrete_args: dict | None = None) -> Graph:
        """Mirrors ``Tracer.trace``: run ``root`` (an ``nn.Module`` or a function) on Proxies
        and return the recorded Graph (also ``self.graph``). ``concrete_args`` fixes some
        inputs to Python values (their branches are taken at trace time, as in torch).

        Raises: TraceError for control flow on traced values; whatever the program raises;
        AssertionError, as torch's, for a root that is neither a module nor callable."""
        if not isinstance(root, Module) and not callable(root):
            raise AssertionError(f"Expected FunctionType, got {type(root)}: trace an nn.Module or a function")
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            bound = functools.partial(fn, root)
            skip_self = True
        else:
            self.root = Module()
            fn = root
            bound = root
            skip_self = False
        self.submodule_paths = None
        self.tensor_attrs = {}
        self.graph = Graph(tracer_cls=type(self))
        for name, t in _tensor_attributes(self.root):
            self.tensor_attrs.setdefault(id(t), name)
        pos, kwonly, var_pos, var_kw = self._placeholders(fn, skip_self, concrete_args)
        if var_pos is None and var_kw is None:
            def run():
                return bound(*pos, **kwonly)
        else:
            # ``forward(*args)`` cannot receive a Proxy of unknown length: call a copy of ``fn``
            # whose *args/**kwargs are plain parameters, each given one Proxy (torch does too)
            flat = _flatten_variadics(fn)
            lead = [root] if skip_self else []
            extra = [v for v in (var_pos, var_kw) if v is not None]

            def run():
                return flat(*lead, *pos, *kwonly.values(), *extra)
        parameter_proxy_cache = {}
        tracer = self
        orig_call, orig_getattr = Module.__call__, Module.__getattr__

        def module_call_wrapper(mod, *args, **kwargs):
            def forward(*a, **k):
                return orig_call(mod, *a, **k)
            return tracer.call_module(mod, forward, args, kwargs)

        def module_getattr_wrapper(mod, attr):
            return tracer.getattr(attr, orig_getattr(mod, attr), parameter_proxy_cache)

        globals_ = getattr(fn, "__globals__", {})
        patches = self._autowrap_patches(globals_)
        Module.__call__, Module.__getattr__ = module_call_wrapper, module_getattr_wrapper
        for g, name, new, _ in patches:
            g[name] = new
        try:
            result = run()
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=_plain_type(getattr(fn, "__annotations__", {}).get("return")))
        finally:
            Module.__call__, Module.__getattr__ = orig_call, orig_getattr
            for g, name, _, orig in patches:
                if orig is _ABSENT:
                    del g[name]
                else:
                    g[name] = orig
        self.graph._wrapped_fns = [new.__wrapped__ for g, name, new, _ in patches if (id(g), name) in _WRAPPED]
        self.submodule_paths = None
        return self.graph

    def _autowrap_patches(self, fn_globals):
        """(globals dict, name, recording replacement, original) for each wrapped or
        autowrapped function the traced code can reach by a global name."""
        out = []
        for key, g in list(_WRAPPED.items()):
            name = key[1]
            # a builtin (``wrap('len')``) is shadowed by a module global for the trace
            fn = g.get(name, getattr(builtins, name, None))
            if callable(fn):
                out.append((g, name, self._recording(fn, name), g.get(name, _ABSENT)))
        # forward's globals (``from math import sqrt``) and the autowrap modules themselves
        # (``math.sqrt``)
        for g in [fn_globals] + [m.__dict__ for m in self._autowrap_search]:
            for name, value in list(g.items()):
                if callable(value) and id(value) in self._autowrap_function_ids \
                        and not any(g2 is g and n == name for g2, n, _, _ in out):
                    out.append((g, name, self._recording(value, name), value))
        return out

    def _recording(self, fn, name):
        tracer = self

        @functools.wraps(fn)
        def recording(*args, **kwargs):
            found = []

            def look(x):
                if isinstance(x, Proxy):
                    found.append(x)
                return x
            from .node import map_aggregate
            map_aggregate((args, kwargs), look)
            if found:
                return tracer.create_proxy("call_function", fn, args, kwargs)
            return fn(*args, **kwargs)
        return recording


def _flatten_variadics(fn):
    """``fn`` with its keyword-only, ``*args`` and ``**kwargs`` parameters turned into plain
    positional ones, in that (the code object's) order."""
    code = fn.__code__
    n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) \
        + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    flat = code.replace(co_argcount=n, co_kwonlyargcount=0,
                        co_flags=code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS))
    return types.FunctionType(flat, fn.__globals__, fn.__name__, None, fn.__closure__)


def _plain_type(annotation):
    """A parameter annotation kept on its placeholder when it is a class (torch prints
    ``x : torch.Tensor``); typing constructs and strings are dropped."""
    return annotation if isinstance(annotation, type) and annotation is not inspect.Parameter.empty else None


def _tensor_attributes(root):
    """(qualified name, tensor) of plain tensor attributes (not parameters/buffers) of every
    module under root: a trace reads those as ``get_attr`` of their own name."""
    for prefix, mod in root.named_modules():
        for k, v in vars(mod).items():
            if isinstance(v, Tensor) and not isinstance(v, Parameter):
                yield (f"{prefix}.{k}" if prefix else k), v
