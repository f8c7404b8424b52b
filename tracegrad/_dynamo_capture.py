"""FX graphs of a function's tensor ops, for user backends (``torch.compile(fn, backend=callable)``).

NOTE [lazy segments]: torch's dynamo reads the function's bytecode; tracegrad runs the
function's Python on every call instead, under a ``TorchFunctionMode`` that does not compute
the tensor ops it sees. Each op runs on shapes alone (meta stand-ins of its inputs, so its
result is a meta tensor of the right shape and dtype: a *pending* tensor) and is recorded.
When Python needs a value (``.item()``, ``bool(t)``, ``print``, printing a tensor,
``backward()``, a pending tensor's ``requires_grad`` or ``grad_fn``, an op that cannot run on
shapes alone), when grad mode or autocast changes (dynamo records the switch inside one graph;
here each graph runs under its ops' modes), and when the function returns, the ops recorded since the last such point (a *segment*) become one FX
graph: its placeholders are the real tensors the segment read (arguments, parameters and
buffers, values of earlier segments), in order of first use; its outputs are the pending
tensors still alive. The backend is called with ``(GraphModule, example_inputs)`` the first
time a segment of that structure (ops, constants, input shapes/dtypes/``requires_grad``) is
seen; what it returned runs on the real inputs, and each live pending tensor takes its result's
place (the same Python object: ``_become``). So a graph break splits the function into several
graphs, each given to the backend, as dynamo does, and Python between them (prints, appends,
counters) runs on every call, as in eager.

Differs from dynamo: graph outputs are the pending tensors alive at the break (a local variable
not used again is still an output); shapes are static (a new shape is a new graph, as
``dynamic=False``); factories (``torch.randn(3)``) run when called, and their tensors are
placeholders of the graph that uses them; ``a + b`` and ``a.add(b)`` are both the call_method
``add`` (dynamo: ``operator.add`` and call_method), ``torch.sin(x)`` the call_function
``torch.sin``; ops the shapes-only run rejects end a graph (they run eagerly between graphs);
``print`` is found by replacing ``builtins.print`` while a compiled call runs (a ``print``
bound before, ``from builtins import print as p``, is not seen); code that reads tensors
without tensor ops (an optimizer's fused step) sees recorded in-place writes once their graph
ends: a ``.grad``/``.data`` read after one ends it.
"""
from __future__ import annotations

import builtins
import operator
import os
import sys
import threading
import weakref

import tracegrad
from . import _autocast, _state
from ._tensor import torch_function as _tf
from ._tensor.meta import abstract, is_meta
from ._tensor.tensor import Tensor, _JaxTracer
from .fx.graph import Graph
from .fx._names import is_tensor_method
from .fx.graph_module import GraphModule
from .nn.modules.module import Module
from .overrides import TorchFunctionMode

# calls that read a value, or run autograd or user code, are never run on shapes: they end the graph
_READS = frozenset({
    "item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__", "__complex__", "__repr__",
    "__str__", "__format__", "__array__", "__iter__", "__reduce_ex__", "__deepcopy__", "__setstate__",
    "equal", "allclose", "data_ptr", "untyped_storage", "__dlpack__", "is_nonzero"})
_AUTOGRAD = frozenset({"backward", "grad", "register_hook", "retain_grad", "register_post_accumulate_grad_hook",
                       "requires_grad_"})
# reads of metadata a pending tensor answers as its real value would
_METADATA = frozenset({
    "size", "dim", "numel", "nelement", "ndimension", "__len__", "is_floating_point", "is_complex",
    "element_size", "stride", "is_contiguous", "storage_offset", "get_device", "has_names", "__hash__",
    "is_signed", "is_inference"})
_METADATA_PROPS = frozenset({
    "shape", "dtype", "requires_grad", "is_leaf", "ndim", "grad", "grad_fn", "names", "layout", "is_cuda",
    "is_sparse", "is_quantized", "is_meta", "is_mps", "is_xpu", "itemsize", "nbytes", "_version", "output_nr",
    "is_nested", "_base", "retains_grad"})
# read from the real tensor: a pending one has no autograd history yet
_AUTOGRAD_PROPS = frozenset({"grad", "data", "grad_fn", "is_leaf", "_base", "_version", "output_nr", "retains_grad",
                             "requires_grad"})
_SETITEM = ("__setitem__", "setitem")
_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep
_LOCAL = threading.local()      # .capture: this thread's running capture (a compiled call inside it is part of its graph)


def _property_name(func):
    prop = getattr(func, "__self__", None)
    if isinstance(prop, property):
        for klass in type.mro(Tensor):
            for k, v in vars(klass).items():
                if v is prop:
                    return k
    return None


def _leaves(obj, out):
    """The tensors of a call's arguments or result (through tuples, lists and dicts)."""
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _leaves(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _leaves(o, out)
    return out


def _map(obj, fn, kind=Tensor):
    """``obj`` with each ``kind`` leaf (through tuples, lists and dicts) replaced by ``fn(leaf)``."""
    if isinstance(obj, kind):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_map(o, fn, kind) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(o, fn, kind) for o in obj)
    if isinstance(obj, dict):
        return {k: _map(v, fn, kind) for k, v in obj.items()}
    return obj


def _key(obj, strict=False):
    """A hashable stand-in of a constant argument (a segment's cache key). An unhashable object
    is keyed by identity (the graph holds it, so its id is not reused while cached), or with
    ``strict`` raises TypeError."""
    if isinstance(obj, (list, tuple)):
        return (type(obj), tuple(_key(o, strict) for o in obj))
    if isinstance(obj, dict):
        return (dict, tuple((k, _key(v, strict)) for k, v in obj.items()))
    if isinstance(obj, slice):
        return (slice, _key(obj.start, strict), _key(obj.stop, strict), _key(obj.step, strict))
    try:
        hash(obj)
        return (type(obj), obj)
    except TypeError:
        if strict:
            raise
        return ("id", id(obj))


def user_frame():
    """The innermost frame outside tracegrad's package (where the user's line is)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PKG):
        f = f.f_back
    return f


def where() -> str | None:
    f = user_frame()
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else None


def _local_name(t, frame):
    if frame is not None:
        for k, v in frame.f_locals.items():
            if v is t:
                return k
    return None


def modes_now():
    """(grad mode, autocast settings) of this thread."""
    return tracegrad.is_grad_enabled(), tuple(sorted(_autocast._state().items()))


class modes:
    """``with modes(seg):`` grad mode and autocast as they were when ``seg``'s ops were called."""

    def __init__(self, seg):
        self.seg = seg

    def __enter__(self):
        self.prev = tracegrad.is_grad_enabled()
        tracegrad.set_grad_enabled(self.seg.grad_enabled)
        # an autocast context as the recorded one was (its cached casts end with it)
        self._autocast = _autocast.entered(dict(self.seg.autocast))
        self._autocast.__enter__()

    def __exit__(self, *exc):
        self._autocast.__exit__(*exc)
        tracegrad.set_grad_enabled(self.prev)


class _Ref:
    """A segment value in a recorded call: placeholder ``j`` or result ``i`` (item ``k`` of it)."""

    __slots__ = ("kind", "index", "item")

    def __init__(self, kind, index, item=None):
        self.kind, self.index, self.item = kind, index, item

    def key(self):
        return (self.kind, self.index, self.item)


class Segment:
    """The tensor ops recorded between two graph breaks (NOTE [lazy segments])."""

    def __init__(self, index=0):
        self.grad_enabled, self.autocast = modes_now()   # the modes its ops run under
        self.index = index        # its place in the call: the first graph, the one after a break...
        self.inputs = []          # real tensors, in order of first use
        self.names = []           # the name of the user's local variable holding each input, or None
        self.calls = []           # (func, args, kwargs) with tensors as _Ref
        self.refs = {}            # id(tensor) -> _Ref of its current value in this segment
        self.keep = {}            # id(tensor) -> the tensor (real) or a weakref to it (pending)
        self.pending = []         # (weakref to a pending tensor, its _Ref), in creation order
        self.device = None
        self.dirty = False        # an in-place op on a real tensor is recorded (not yet run)

    def is_pending(self, t):
        kept = self.keep.get(id(t))
        return isinstance(kept, weakref.ref) and kept() is t

    def ref_of(self, t):
        r = self.refs.get(id(t))
        if r is not None:
            kept = self.keep[id(t)]
            if kept is t or (isinstance(kept, weakref.ref) and kept() is t):
                return r
        r = _Ref("input", len(self.inputs))
        self.inputs.append(t)
        # its variable's name, for the placeholder (read now: holding the frame would keep
        # its locals, pending tensors among them, alive as graph outputs)
        self.names.append(_local_name(t, user_frame()))
        self.refs[id(t)], self.keep[id(t)] = r, t
        if self.device is None:
            self.device = t.device
        return r

    def signature(self, outputs):
        ins = tuple((tuple(t.shape), t.dtype, t.requires_grad, type(t)) for t in self.inputs)
        calls = tuple((func, _key(_map(a, _Ref.key, _Ref)), _key(_map(k, _Ref.key, _Ref)))
                      for func, a, k in self.calls)
        return (self.grad_enabled, self.autocast, ins, calls, tuple(r.key() for r in outputs))


class _Out:
    """A result in ``_SHAPES``: input tensor ``arg`` (an in-place op) or a new one of ``shape``/``dtype``."""

    __slots__ = ("arg", "shape", "dtype")

    def __init__(self, arg, shape=None, dtype=None):
        self.arg, self.shape, self.dtype = arg, shape, dtype


# (func, argument shapes/dtypes/constants) -> its results as _Outs: one shape inference per op
_SHAPES = _state.register_cache("_dynamo_capture._SHAPES", {})


def _shapes_of(func, args, kwargs, tensors):
    """``func``'s result with each new tensor a pending (meta) one and each input it returns (an
    in-place op) that input itself. Runs ``func`` on meta stand-ins of the inputs the first
    time (without autograd: a pending tensor's saved inputs would keep them alive as outputs),
    then answers from ``_SHAPES``. Raises what the shapes-only run raised."""
    meta = lambda t: ("T", tuple(t.shape), t.dtype)    # noqa: E731
    try:
        key = (func, _key(_map(args, meta), True), _key(_map(kwargs, meta), True))
        spec = _SHAPES.get(key)
    except TypeError:        # an argument that cannot be a key part: no cache
        key, spec = None, None
    if spec is None:
        stand = {id(t): Tensor._make(abstract(tuple(t.shape), t._value.dtype), requires_grad=t.requires_grad)
                 for t in tensors}
        of_stand = {id(s): k for k, s in enumerate(stand.values())}
        with tracegrad.no_grad():
            out = func(*_map(args, lambda t: stand[id(t)]), **_map(kwargs, lambda t: stand[id(t)]))
        spec = _map(out, lambda t: _Out(of_stand[id(t)]) if id(t) in of_stand else _Out(None, tuple(t.shape), t._value.dtype))
        if key is not None:
            if len(_SHAPES) > 4096:
                _SHAPES.clear()
            _SHAPES[key] = spec
    firsts = list({id(t): t for t in tensors}.values())    # stand-ins were made once per tensor
    return _map(spec, lambda o: firsts[o.arg] if o.arg is not None else Tensor._make(abstract(o.shape, o.dtype)), _Out)


class Capture(TorchFunctionMode):
    """The mode a compiled call runs under: records ops into segments and hands each to
    ``on_segment(segment, outputs, reason)``, which returns the real output tensors."""

    def __init__(self, on_segment):
        super().__init__()
        self.on_segment = on_segment
        self.segment = Segment()
        self.ran = False          # a graph has run (its effects happened) in this call

    # -- the protocol ---------------------------------------------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        prop = _property_name(func) if name == "__get__" else None
        if prop is not None:
            name = prop
        if name in _METADATA or prop in _METADATA_PROPS:
            if prop in _AUTOGRAD_PROPS and (self.segment.dirty or self.segment.is_pending(args[0])):
                # a pending tensor's autograd facts are the real result's; and code that works
                # on .grad/.data without tensor ops (an optimizer's fused step) must see the
                # in-place writes recorded so far (clip_grad_norm_'s, a weight decay)
                self.flush(f".{prop} read")
            return func(*args, **kwargs)
        if prop == "device":
            t = args[0]
            return self.segment.device if is_meta(t) and self.segment.device is not None else func(*args)
        if modes_now() != (self.segment.grad_enabled, self.segment.autocast):
            # the segment's ops run under the modes they were called in: a change ends it
            self.flush("grad mode or autocast changed")
        if name in _READS:
            return self._break(func, args, kwargs, f"{name}() needs a tensor's value")
        if name in _AUTOGRAD:
            return self._break(func, args, kwargs, f"{name}() runs autograd (between graphs)")
        tensors = _leaves((args, kwargs), [])
        if not tensors or any(isinstance(t._st.array, _JaxTracer) for t in tensors):
            # a factory runs as it is (a random one draws once, as eager); so does a call inside
            # a JAX trace of tracegrad's own (a fused optimizer step)
            return func(*args, **kwargs)
        seg = self.segment
        try:
            out = _shapes_of(func, args, kwargs, tensors)
        except Exception as e:     # noqa: BLE001 -- it cannot run on shapes: run it for real
            return self._break(func, args, kwargs, f"{name} cannot run on shapes alone ({type(e).__name__}: {e})")
        single = isinstance(out, Tensor)
        if single:
            results = [(None, out)]
        else:      # a graph node's value is one tensor or a flat sequence (``max(dim)``'s pair)
            results = [(k, o) for k, o in enumerate(out)] if isinstance(out, (tuple, list)) else []
            results = [(k, o) for k, o in results if isinstance(o, Tensor)]
            if len(results) != len(_leaves(out, [])):
                return self._break(func, args, kwargs, f"{name} returns nested tensors")
        if not results and not (out is None and name in _SETITEM):
            return self._break(func, args, kwargs, f"{name} returns no tensor")
        if prop is not None:
            func, args = getattr, (args[0], prop)
        index = len(seg.calls)
        seg.calls.append((func, _map(args, seg.ref_of), _map(kwargs, seg.ref_of)))
        for k, t in results:
            r = _Ref("result", index, k)
            if seg.keep.get(id(t)) is t:    # an in-place op on a real tensor: it stays that object
                seg.refs[id(t)] = r
                seg.dirty = True
                continue
            seg.refs[id(t)], seg.keep[id(t)] = r, weakref.ref(t)
            seg.pending.append((weakref.ref(t), r))
        return out

    def _break(self, func, args, kwargs, reason):
        self.flush(reason)
        return func(*args, **kwargs)

    # -- ending a segment -----------------------------------------------------------------------
    def flush(self, reason):
        """End the segment (reason: why, or None at return): run it and make its live pending
        tensors real. Runs with this mode off, so the backend's callable computes for real."""
        seg = self.segment
        if not seg.calls:
            self.segment = Segment(seg.index)
            return
        self.segment = Segment(seg.index + 1)
        self.ran = True
        live, outputs, seen = [], [], set()
        for ref, r in seg.pending:
            t = ref()
            if t is not None and seg.refs.get(id(t)) is r:
                live.append((t, r))
                if r.key() not in seen:
                    seen.add(r.key())
                    outputs.append(r)
        with _off(self):
            results = self.on_segment(seg, outputs, reason)
        by_key = dict(zip((r.key() for r in outputs), results))
        for t, r in live:
            _become(t, by_key[r.key()])

    def leaked(self, error) -> bool:
        """Whether ``error`` is a pending tensor reaching code that computes without a tensor op
        this mode sees (``nn.LSTM``'s layer function): a meta-tensor error while some are pending."""
        return "meta" in str(error) and any(ref() is not None for ref, _ in self.segment.pending)


class _off:
    """Take ``mode`` off the mode stack for the block (it is on top, or not there at all)."""

    def __init__(self, mode):
        self.mode, self.popped = mode, False

    def __enter__(self):
        modes = _tf.STATE.modes
        if modes and modes[-1] is self.mode:
            _tf.pop_mode()
            self.popped = True

    def __exit__(self, *exc):
        if self.popped:
            _tf.push_mode(self.mode)


class capturing:
    """``with capturing(capture):`` the capture's mode is on, and ``print`` is a graph break in
    this thread (``builtins.print`` is replaced while any thread captures)."""

    _lock = threading.Lock()
    _count = 0
    _print = None      # builtins.print as it was before the first capture

    def __init__(self, capture):
        self.capture = capture

    def __enter__(self):
        cls = capturing
        with cls._lock:
            if cls._count == 0:
                cls._print = builtins.print
                builtins.print = _print
            cls._count += 1
        _LOCAL.capture = self.capture
        self.capture.__enter__()

    def __exit__(self, *exc):
        cls = capturing
        try:
            self.capture.__exit__(*exc)
        finally:
            _LOCAL.capture = None
            with cls._lock:
                cls._count -= 1
                if cls._count == 0:
                    builtins.print = cls._print


def _print(*args, **kwargs):
    """``print`` while capturing: a graph break, as in dynamo."""
    cap = active()
    if cap is not None:
        cap.flush("print() is a graph break")
    return capturing._print(*args, **kwargs)


def active():
    """This thread's running capture, or None."""
    return getattr(_LOCAL, "capture", None)


_SLOTS = tuple(s for s in Tensor.__slots__ if s not in ("__dict__", "__weakref__"))


def _become(pending, real):
    """Make the pending (meta) tensor object ``pending`` the tensor ``real``: the same storage,
    view chain, version counter and autograd node (an alias, as ``detach`` shares storage)."""
    if not isinstance(real, Tensor):
        raise RuntimeError(f"tracegrad.compile: the backend's compiled function returned {type(real).__name__} "
                           "where a Tensor was expected; return gm.forward or a callable with its outputs")
    for s in _SLOTS:
        try:
            setattr(pending, s, getattr(real, s))
        except AttributeError:
            pass
    pending.__dict__.update(real.__dict__)


# -- the FX graph of a segment ------------------------------------------------------------------
def build_graph(seg, outputs, names):
    """``GraphModule`` of ``seg`` returning ``outputs`` (a tuple, as dynamo's graphs do);
    ``names``: a placeholder name per input (annotated with its class, as dynamo's)."""
    graph = Graph()
    nodes = {}
    taken = set()
    for j, n in enumerate(names):
        base, k = n, 0
        while n in taken:               # two inputs found under one name: L_tensor_, L_tensor_1_
            k += 1
            n = f"{base[:-1]}{k}_"
        taken.add(n)
        nodes[("input", j, None)] = graph.create_node("placeholder", n, name=n.lower(), type_expr=type(seg.inputs[j]))
    for i, (func, args, kwargs) in enumerate(seg.calls):
        conv = lambda r: _node(graph, nodes, r)    # noqa: E731
        args, kwargs = _map(args, conv, _Ref), _map(kwargs, conv, _Ref)
        syntax = _SYNTAX.get(getattr(func, "__name__", None))
        if syntax is not None:          # ``t[i]``, ``t[i] = v``: written as such
            node = graph.call_function(syntax, args, kwargs)
        elif is_tensor_method(func):     # Tensor.mul (what ``a * 2`` and ``a.mul(2)`` call): call_method
            node = graph.create_node("call_method", func.__name__, args, kwargs)
        else:
            node = graph.create_node("call_function", func, args, kwargs)
        nodes[("result", i, None)] = node
    graph.output(tuple(_node(graph, nodes, r) for r in outputs))
    return GraphModule(Module(), graph)


_SYNTAX = {"getitem": operator.getitem, "setitem": operator.setitem}


def _node(graph, nodes, r):
    n = nodes.get(r.key())
    if n is None:                      # item k of a call with several results
        n = graph.call_function(operator.getitem, (nodes[("result", r.index, None)], r.item))
        nodes[r.key()] = n
    return n


def run_calls(seg, outputs, inputs):
    """The segment's calls run eagerly (no backend): the values of ``outputs``."""
    values = {("input", j, None): t for j, t in enumerate(inputs)}

    def val(r):
        v = values.get(r.key())
        return v if v is not None else values[("result", r.index, None)][r.item]
    for i, (func, args, kwargs) in enumerate(seg.calls):
        values[("result", i, None)] = func(*_map(args, val, _Ref), **_map(kwargs, val, _Ref))
    return [val(r) for r in outputs]
