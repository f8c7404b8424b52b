"""Mirrors ``torch.fx.proxy``: ``Proxy``, the stand-in a symbolic trace passes through a
program; every operation on it records a Node instead of computing. Python operators become
``call_function`` nodes on ``operator.*``, attribute reads ``getattr`` nodes, method calls
``call_method`` nodes, and tracegrad functions reach it through ``__torch_function__``.

Values a trace cannot know (``bool(proxy)``, iterating a proxy of unknown length, ``len``)
raise ``TraceError`` / RuntimeError as torch's."""
from __future__ import annotations

import collections
import dis
import inspect
import operator
import os
import traceback

from .._tensor.overridable import activate as _activate_protocol
from ._forwarded import as_torch_forwards
from ._names import is_tensor_method
from .node import Node, map_aggregate

__all__ = ["Proxy", "Attribute", "TraceError", "ParameterProxy", "TracerBase", "GraphAppendingTracer"]

# constants a node argument may hold as they are
BASE_TYPES = (str, int, float, bool, complex, type(None), type(...), slice)


class TraceError(ValueError):
    """Mirrors ``torch.fx.proxy.TraceError``: a traced program needs a concrete value."""


def _find_tracer(args, kwargs):
    found = []

    def look(x):
        if isinstance(x, Proxy) and not found:
            found.append(x.tracer)
        return x
    map_aggregate((args, kwargs), look)
    return found[0] if found else None


_FX_DIR = os.path.dirname(os.path.abspath(__file__))
_MODULE_FILE = os.path.join(os.path.dirname(_FX_DIR), "nn", "modules", "module.py")


def _user_stack() -> str:
    """The traced program's frames (fx and Module.__call__ frames left out), innermost last,
    formatted as ``traceback`` does."""
    def ours(f):
        path = os.path.abspath(f.filename)
        return path.startswith(_FX_DIR + os.sep) or path == _MODULE_FILE
    frames = [f for f in traceback.extract_stack()[:-2] if not ours(f)]
    return "".join(traceback.format_list(frames))


class TracerBase:
    """Mirrors ``torch.fx.proxy.TracerBase``: records nodes into ``self.graph`` for the
    operations Proxies see. ``Tracer`` adds module/parameter handling and ``trace``."""

    graph = None
    module_stack = None
    record_stack_traces = False   # store the user's stack (``node.stack_trace``) on each node

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        """Mirrors ``TracerBase.create_node``: add the node to the graph, with ``nn_module_stack``
        meta for the modules being traced through."""
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        node.meta["nn_module_stack"] = collections.OrderedDict(self.module_stack or {})
        return node

    def proxy(self, node) -> "Proxy":
        """The Proxy standing for ``node`` (override to return a subclass)."""
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        """Mirrors ``TracerBase.create_proxy``: ``create_arg`` the arguments, record the node and
        wrap it in a Proxy (``proxy_factory_fn(node)`` when given)."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        if self.record_stack_traces and node.stack_trace is None:
            node.stack_trace = _user_stack()
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """Mirrors ``TracerBase.create_arg``: Proxies become their Nodes; tuples, lists, dicts
        (constant keys) and slices are rebuilt around their converted elements; constants stay.

        Raises: NotImplementedError for a traced dict key or a type that cannot be a node
        argument."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return type(a)(*(self.create_arg(e) for e in a))
        if isinstance(a, (tuple, list)):
            return type(a)(self.create_arg(e) for e in a)
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if isinstance(k, (Proxy, Node)):
                    raise NotImplementedError(f"torch.fx: a traced value cannot be a dict key (got {k!r}); "
                                              "use constant keys")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, BASE_TYPES) or callable(a) or isinstance(a, Node):
            return a
        import tracegrad
        if isinstance(a, (tracegrad.dtype, tracegrad.device, tracegrad.layout, tracegrad.memory_format)):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    # ---- what a trace cannot know --------------------------------------------------------
    def to_bool(self, obj: Proxy) -> bool:
        """Mirrors ``TracerBase.to_bool``: control flow on a traced value.

        Raises: TraceError (override to decide)."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy):
        """Mirrors ``TracerBase.iter``: a loop over (or ``*``-unpacking of) a traced value.

        Raises: TraceError."""
        raise TraceError("Proxy object cannot be iterated. A traced value has no known length: a loop over it, "
                         "or passing it as *args/**kwargs, needs one; index it explicitly or mark the code as a "
                         "leaf with torch.fx.wrap")

    def keys(self, obj: Proxy):
        """Mirrors ``TracerBase.keys``: ``**proxy`` records a ``keys`` call."""
        return self.create_proxy("call_method", "keys", (obj,), {})


class GraphAppendingTracer(TracerBase):
    """Mirrors ``torch.fx.proxy.GraphAppendingTracer``: appends to an existing graph (what
    ``Proxy(node)`` uses when given no tracer)."""

    def __init__(self, graph):
        self.graph = graph
        self.module_stack = collections.OrderedDict()


class Proxy:
    """Mirrors ``torch.fx.Proxy``: wraps the ``node`` it stands for and the ``tracer`` recording.

    Raises: TraceError when the program asks for a concrete value (``bool``, iteration of
    unknown length), RuntimeError for ``len``."""

    def __init__(self, node, tracer=None):
        # tracegrad turns the __torch_function__ protocol on lazily; tracegrad's own classes do
        # not trigger it, so a Proxy does (once per process)
        _activate_protocol()
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k) -> "Attribute":
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)   # copy/pickle probing special names must not record nodes
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __deepcopy__(self, memo):
        # (defined so copy does not reach __getattr__): a copy of a traced value is the same value
        result = object.__new__(type(self))
        result.__dict__.update(self.__dict__)
        memo[id(self)] = result
        return result

    def __call__(self, *args, **kwargs) -> "Proxy":
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        frame = inspect.currentframe().f_back
        # ``a, b = proxy``: the caller's next instruction says how many values it unpacks
        for inst in dis.get_instructions(frame.f_code):
            if inst.offset == frame.f_lasti and inst.opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(inst.argval))
        return self.tracer.iter(self)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")

    def keys(self):
        """``**proxy`` during a trace: asks the tracer (a Proxy, which then cannot be iterated)."""
        return self.tracer.keys(self)

    @classmethod
    def __torch_function__(cls, orig_method, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tracer = _find_tracer(args, kwargs)
        if is_tensor_method(orig_method):
            return tracer.create_proxy("call_method", orig_method.__name__, args, kwargs)
        args, kwargs = as_torch_forwards(orig_method, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs)


Proxy.__hash__ = object.__hash__


class Attribute(Proxy):
    """Mirrors ``torch.fx.proxy.Attribute``: ``proxy.name``; a ``getattr`` node is recorded
    only when the value is used, a call records ``call_method`` instead."""

    def __init__(self, root: Proxy, attr: str):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        """The ``getattr`` node, recorded on first use."""
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """Mirrors ``torch.fx.proxy.ParameterProxy``: a get_attr of a parameter whose ``shape``,
    ``size()``, ``dim()`` and ``ndim`` read the real parameter (``param_shapes_constant``)."""

    def __init__(self, tracer, node, name, param):
        Proxy.__init__(self, node, tracer)
        self.param, self.name = param, name

    @property
    def shape(self):
        """The parameter's real shape."""
        return self.param.shape

    def size(self, dim=None):
        """The parameter's real size (or one dimension of it)."""
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self):
        """The parameter's real number of dimensions."""
        return self.param.dim()

    @property
    def ndim(self):
        """The parameter's real number of dimensions."""
        return self.param.ndim

    def numel(self):
        """The parameter's real number of elements."""
        return self.param.numel()

    def nelement(self):
        """The parameter's real number of elements."""
        return self.param.nelement()


def _binary(name):
    fn = getattr(operator, name)

    def forward(self, rhs):
        return self.tracer.create_proxy("call_function", fn, (self, rhs), {})

    def reflected(self, lhs):
        return self.tracer.create_proxy("call_function", fn, (lhs, self), {})
    return forward, reflected


def _unary(name):
    fn = getattr(operator, name)

    def impl(self):
        return self.tracer.create_proxy("call_function", fn, (self,), {})
    return impl


_REFLECTABLE = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift", "and_", "or_",
                "xor", "matmul")
for _name in _REFLECTABLE:
    _dunder = _name.rstrip("_")
    _fwd, _rev = _binary(_name)
    setattr(Proxy, f"__{_dunder}__", _fwd)
    setattr(Proxy, f"__r{_dunder}__", _rev)
for _name in ("eq", "ne", "lt", "gt", "le", "ge", "getitem"):
    setattr(Proxy, f"__{_name}__", _binary(_name)[0])
for _name in ("neg", "pos", "invert", "abs"):
    setattr(Proxy, f"__{_name}__", _unary(_name))
del _name, _dunder, _fwd, _rev

