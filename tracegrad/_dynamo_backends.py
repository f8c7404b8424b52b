"""User compiler backends: ``torch.compile(fn, backend=my_compiler)``, ``register_backend``,
``torch._dynamo.optimize``, ``lookup_backend``, ``list_backends``, ``aot_autograd`` and
``explain``'s graphs.

A backend is ``my_compiler(gm: GraphModule, example_inputs: list[Tensor]) -> callable``. It is
called once per new graph (NOTE [lazy segments] in ``_dynamo_capture.py``: a graph break splits
a function into several graphs; a new input shape is a new graph) and what it returns runs on
every call with that graph: return ``gm.forward`` for eager's results, or any callable taking the
graph's inputs and returning its outputs (a tuple). The callable runs tracegrad ops eagerly, so
autograd through its results reaches the parameters. XLA's named backends (``"inductor"``...)
do not come here: ``compiler.py`` compiles them.
"""
from __future__ import annotations

import functools
import inspect
import itertools
import os
import sys

from . import compiler as _compiler
from . import _dynamo_capture as _capture
from ._tensor.tensor import Tensor
from .nn.modules.module import Module
from ._lowering.warned import say
from ._lowering.exc import BackendCompilerFailed, InvalidBackend

__all__ = ["BackendCompilerFailed", "CompiledWithBackend", "register_backend", "lookup_backend", "list_backends",
           "optimize", "aot_autograd", "capture_graphs"]

_REGISTRY = {}          # name -> backend registered by register_backend
_ORDER = itertools.count(10 ** 9)


def _backend_name(backend):
    return getattr(backend, "__name__", None) or type(backend).__name__


class CompiledWithBackend:
    """What ``tracegrad.compile(fn, backend=callable)`` returns (``functools.wraps`` of ``fn``):
    each call runs ``fn``'s Python, handing its tensor ops to the backend graph by graph.

    Attributes: ``stats`` -- calls, ``graphs`` (backend calls), ``eager_graphs`` (graphs run
    without the backend), ``eager_calls`` (calls run eagerly as a whole) and the graph breaks
    (reason, ``file:line``); also in ``tracegrad.compiler.stats()``."""

    _tracegrad_state_is_captured = True

    def __init__(self, fn, fullgraph=False, dynamic=None, backend=None, mode=None, options=None, disable=False):
        functools.update_wrapper(self, fn, updated=())
        self._fn, self.backend, self.fullgraph, self.disabled = fn, backend, bool(fullgraph), bool(disable)
        self.dynamic, self.mode, self.options = dynamic, mode, options
        self._cache = {}        # segment signature -> the backend's callable
        self._graphs_at = {}    # a segment's index in the call -> graphs compiled for it
        self._names = None      # id(tensor) -> placeholder name (arguments, module state)
        self._warned = False
        self._always_eager = False
        self.stats = {"calls": 0, "graphs": 0, "eager_graphs": 0, "eager_calls": 0, "graph_breaks": []}
        self._order = next(_ORDER)
        _compiler._ALL.add(self)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __deepcopy__(self, memo):     # NOTE [deepcopy of a compiled callable] (compiler.py)
        return _compiler.copy_compiled(self, memo)

    def reset(self):
        self._cache.clear()
        self._graphs_at.clear()
        self._always_eager = False
        self.stats.update(calls=0, graphs=0, eager_graphs=0, eager_calls=0, graph_breaks=[])

    def __call__(self, *args, **kwargs):
        self.stats["calls"] += 1
        if (self.disabled or _capture.active() is not None or _compiler._STANCE[0] == "force_eager"
                or _compiler._tracing()):
            return self._fn(*args, **kwargs)       # nested: part of the outer graph
        if self._always_eager:
            self.stats["eager_calls"] += 1
            return self._fn(*args, **kwargs)
        self._names = None
        cap = _capture.Capture(functools.partial(self._segment, args, kwargs))
        try:
            with _capture.capturing(cap):
                out = self._fn(*args, **kwargs)
        except BaseException as e:
            if cap.leaked(e):
                return self._leaked(cap, e, args, kwargs)
            # the ops before the raise happened eagerly (an in-place write, a buffer update):
            # run them, then raise the function's own error
            try:
                cap.flush(None)
            except Exception:      # noqa: BLE001 -- the function's error is the one to report
                pass
            raise
        cap.flush(None)
        return out

    def _leaked(self, cap, error, args, kwargs):
        """Code inside tracegrad computed on a value no graph had computed yet, without a tensor
        op the capture sees (``nn.LSTM``'s layers). The function runs eagerly from now on, said
        once; this call runs again eagerly when no graph has run yet (else the error is raised:
        running again would repeat the graph's effects)."""
        where = getattr(self._fn, "__qualname__", self._fn)
        if cap.ran:
            raise RuntimeError(f"tracegrad.compile: {where} with a user backend: tracegrad code computed on a "
                               f"value before its graph ran ({error}); compile it without backend=") from error
        self._always_eager = True
        reason = ("tracegrad code inside it computes without tensor ops a graph can record "
                  f"({type(error).__name__}: {error})")
        self.stats["graph_breaks"].append((reason, None))
        say(f"tracegrad.compile: {where} runs eagerly, without the backend: {reason}. "
            "See tracegrad.compiler.stats().", stacklevel=4)
        self.stats["eager_calls"] += 1
        return self._fn(*args, **kwargs)

    # -- one graph ------------------------------------------------------------------------------
    def _segment(self, args, kwargs, seg, outputs, reason):
        if reason is not None:
            if self.fullgraph:
                raise _compiler.GraphBreak(f"{reason} (at {_capture.where()})")
            brk = (reason, _capture.where())
            if brk not in self.stats["graph_breaks"]:      # once per place, not once per call
                self.stats["graph_breaks"].append(brk)
        sig = seg.signature(outputs)
        compiled = self._cache.get(sig)
        if compiled is None:
            # the limit is per place in the function (dynamo's is per frame, and each graph
            # break resumes in a frame of its own)
            if self._graphs_at.get(seg.index, 0) >= _compiler.cache_size_limit:
                return self._eager(seg, outputs, f"{_compiler.cache_size_limit} graphs compiled for graph "
                                   f"{seg.index + 1} of the call (cache_size_limit)")
            names = [self._name(t, local, args, kwargs) for t, local in zip(seg.inputs, seg.names)]
            try:
                gm = _capture.build_graph(seg, outputs, names)
            except Exception as e:      # noqa: BLE001 -- a value FX cannot hold: run the calls
                return self._eager(seg, outputs, f"no FX graph for these calls ({type(e).__name__}: {e})")
            try:
                compiled = self.backend(gm, list(seg.inputs))
                if not callable(compiled):
                    raise TypeError(f"the backend returned {type(compiled).__name__}, not a callable "
                                    "(return gm.forward)")
            except Exception as e:
                if _compiler.suppress_errors and not self.fullgraph:
                    return self._suppressed(seg, outputs, e)
                raise BackendCompilerFailed(self.backend, e) from e
            self._cache[sig] = compiled
            self._graphs_at[seg.index] = self._graphs_at.get(seg.index, 0) + 1
            self.stats["graphs"] += 1
        with _capture.modes(seg):
            # an AOT-style callable marked _boxed_call takes the inputs as one list, as in torch
            out = compiled(list(seg.inputs)) if getattr(compiled, "_boxed_call", False) else compiled(*seg.inputs)
        if isinstance(out, Tensor):
            out = (out,)
        if not isinstance(out, (tuple, list)) or len(out) != len(outputs):
            raise RuntimeError(f"tracegrad.compile: the backend's compiled function returned {type(out).__name__}"
                               f"{'' if not isinstance(out, (tuple, list)) else f' of {len(out)}'}; the graph has "
                               f"{len(outputs)} output(s): return them as a tuple, as gm.forward does")
        return out

    def _suppressed(self, seg, outputs, error):
        """The backend raised under ``torch._dynamo.config.suppress_errors``: as torch, the
        function runs eagerly from now on (the backend is not asked again) and this graph's
        calls run eagerly now; said once, the error kept as a graph break in ``stats``."""
        self._always_eager = True
        reason = f"backend={_backend_name(self.backend)!r} raised {type(error).__name__}: {error} (suppress_errors)"
        self.stats["graph_breaks"].append((reason, None))
        if not self._warned:
            self._warned = True
            say(f"tracegrad.compile: {getattr(self._fn, '__qualname__', self._fn)} runs eagerly from now on, "
                f"without the backend: {reason}. See tracegrad.compiler.stats().", stacklevel=_user_level())
        return self._eager(seg, outputs, reason)

    def _eager(self, seg, outputs, reason):
        """A graph that does not go to the backend runs its calls eagerly; said once."""
        self.stats["eager_graphs"] += 1
        if not self._warned:
            self._warned = True
            say(f"tracegrad.compile: a graph of {getattr(self._fn, '__qualname__', self._fn)} runs "
                f"eagerly, without the backend: {reason}. See tracegrad.compiler.stats().", stacklevel=5)
        with _capture.modes(seg):
            return _capture.run_calls(seg, outputs, seg.inputs)

    def _name(self, t, local, args, kwargs):
        """dynamo's placeholder names: ``L_x_`` for argument ``x``, ``L_fn_modules_0_parameters_weight_``
        for a compiled module's state, a local variable's name for a value of an earlier graph."""
        if self._names is None:
            self._names = _source_names(self._fn, args, kwargs)
        name = self._names.get(id(t))
        if name is None:
            name = local or "tensor"
        return f"L_{name}_"


def _user_level():
    """The ``stacklevel`` (for ``say``'s caller) of the nearest frame outside tracegrad: the
    user's line whose op reached the backend, however deep the capture's callback sits."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def _source_names(fn, args, kwargs):
    names = {}

    def add(prefix, value):
        if isinstance(value, Tensor):
            names.setdefault(id(value), prefix)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                add(f"{prefix}_{i}", v)
        elif isinstance(value, dict):
            for k, v in value.items():
                add(f"{prefix}_{k}", v)
        elif isinstance(value, Module):
            for path, v in itertools.chain(value.named_parameters(), value.named_buffers()):
                add(f"{prefix}_{_state_path(value, path)}", v)
    module = getattr(fn, "module", None)
    if isinstance(module, Module):       # a compiled module: torch names it fn, its inputs args/kwargs
        add("fn", module)
        add("args", list(args))
        add("kwargs", kwargs)
        return names
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        for k, v in bound.arguments.items():
            add(k, v)
    except (TypeError, ValueError):
        add("args", list(args))
    code = getattr(fn, "__code__", None)
    if code is not None:        # modules and tensors the function reads from globals or its closure
        glb = getattr(fn, "__globals__", {})
        for n in code.co_names:
            if n in glb:
                add(n, glb[n])
        for n, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
            try:
                add(n, cell.cell_contents)
            except ValueError:
                pass
    return names


def _state_path(module, path):
    """``0.weight`` -> ``modules_0_parameters_weight`` (dynamo's spelling)."""
    parts = path.split(".")
    out, m = [], module
    for p in parts[:-1]:
        out.append(f"modules_{p}")
        m = m._modules[p]
    kind = "parameters" if parts[-1] in m._parameters else "buffers"
    return "_".join(out + [f"{kind}_{parts[-1]}"])


# -- registry -----------------------------------------------------------------------------------
def register_backend(compiler_fn=None, name=None, tags=()):
    """Mirrors ``torch._dynamo.register_backend``: ``compiler_fn`` (``(gm, example_inputs) ->
    callable``) becomes compilable by name (``tracegrad.compile(m, backend=name)``; the name
    defaults to the function's). Usable as a decorator, with or without arguments.
    Returns ``compiler_fn``. Raises AssertionError (as torch) when ``compiler_fn`` is not
    callable or the name is taken (XLA's names included)."""
    if compiler_fn is None:
        return functools.partial(register_backend, name=name, tags=tags)
    if not callable(compiler_fn):
        raise AssertionError(f"register_backend: compiler_fn must be callable, got {type(compiler_fn).__name__}")
    name = name or compiler_fn.__name__
    if name in _REGISTRY or name in _compiler._BACKENDS:
        raise AssertionError(f"duplicate name: {name}")
    _REGISTRY[name] = compiler_fn
    _compiler.USER_BACKEND_TAGS[name] = tuple(tags)
    return compiler_fn


def lookup_backend(compiler_fn):
    """Mirrors ``torch._dynamo.lookup_backend``: a name becomes its registered backend; a
    callable is returned as is; XLA's names stay names. Raises RuntimeError for an unknown name
    (``InvalidBackend``, as torch)."""
    if isinstance(compiler_fn, str):
        if compiler_fn in _REGISTRY:
            return _REGISTRY[compiler_fn]
        if compiler_fn in _compiler._BACKENDS:
            return compiler_fn
        raise InvalidBackend(compiler_fn)
    return compiler_fn


list_backends = _compiler.list_backends   # torch._dynamo.list_backends is torch.compiler's


def _resolve(backend):
    """``compiler.compile``'s question: the user backend ``backend`` names, or None for XLA."""
    if isinstance(backend, str):
        return _REGISTRY.get(backend)
    return backend if callable(backend) else None


def optimize(backend="inductor", *, nopython=False, guard_export_fn=None, guard_fail_fn=None, disable=False,
             dynamic=None):
    """Mirrors ``torch._dynamo.optimize(backend)``: a decorator compiling a function (or a
    module) with ``backend``, as ``tracegrad.compile(fn, backend=backend, fullgraph=nopython)``."""
    return functools.partial(_compiler.compile, backend=lookup_backend(backend), fullgraph=nopython,
                             dynamic=dynamic, disable=disable)


def aot_autograd(**kwargs):
    """Mirrors ``torch._dynamo.backends.common.aot_autograd(fw_compiler=..., bw_compiler=...)``:
    a backend that gives the graph to ``fw_compiler`` and runs what it returns.

    Differs from torch: the graph is dynamo's (torch functions, not ATen ops) and there is no
    joint graph: backward runs tracegrad's autograd over the forward's ops, so ``bw_compiler``
    and ``partition_fn`` are not called."""
    fw_compiler = kwargs.get("fw_compiler")
    if fw_compiler is None:
        raise TypeError("aot_autograd: fw_compiler is required")

    def aot_backend(gm, example_inputs):
        return fw_compiler(gm, example_inputs)
    return aot_backend


def capture_graphs(fn, args, kwargs):
    """Run ``fn`` once with a backend that keeps each graph: ``(graphs, graph breaks)`` (what
    ``torch._dynamo.explain`` reports)."""
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    cf = CompiledWithBackend(fn, backend=keep)
    cf(*args, **kwargs)
    return graphs, cf.stats["graph_breaks"]


_compiler.USER_BACKENDS[0] = (_resolve, CompiledWithBackend)
