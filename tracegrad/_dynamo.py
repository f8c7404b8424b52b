"""``torch._dynamo``'s user-facing corner, for programs that configure ``torch.compile``
through it (``torch._dynamo.config.cache_size_limit = 64``, ``torch._dynamo.reset()``,
``torch._dynamo.mark_dynamic(x, 0)``). tracegrad has no bytecode tracer: these map onto
``tracegrad.compiler``; user backends (``optimize``, ``register_backend``, ``lookup_backend``,
``list_backends``, ``backends.common.aot_autograd``) onto ``_dynamo_backends.py`` (loaded on first
use: it needs ``tracegrad.fx``, imported after this module).
"""
from __future__ import annotations

import functools
import sys
import time
import types

from . import _compile_callbacks, compiler as _compiler
from .compiler import allow_in_graph, assume_constant_result, disable, is_compiling, reset, set_stance
from ._lowering import exc as _exc
from ._tensor.tensor import Tensor
from . import _state
from ._ops.warn import warn as _warn

__all__ = ["config", "reset", "disable", "allow_in_graph", "is_compiling", "mark_dynamic", "graph_break",
           "disallow_in_graph", "nonstrict_trace", "skip_frame", "optimize_assert", "run", "set_stance",
           "maybe_mark_dynamic", "mark_static", "mark_static_address", "explain", "optimize", "register_backend",
           "lookup_backend", "list_backends", "backends", "assume_constant_result", "OptimizedModule", "eval_frame",
           "utils", "callback", "on_compile_start", "on_compile_end"]

_FROM_BACKENDS = ("optimize", "register_backend", "lookup_backend", "list_backends")


def __getattr__(name):
    from . import _dynamo_backends as b
    if name in _FROM_BACKENDS:
        value = getattr(b, name)
    elif name == "backends":      # torch._dynamo.backends.common.aot_autograd / .registry.register_backend
        common = types.SimpleNamespace(aot_autograd=b.aot_autograd)
        registry = types.SimpleNamespace(register_backend=b.register_backend, lookup_backend=b.lookup_backend,
                                         list_backends=b.list_backends)
        value = types.SimpleNamespace(common=common, registry=registry)
    elif name == "OptimizedModule":
        value = eval_frame.OptimizedModule
    else:
        raise AttributeError(f"module 'tracegrad._dynamo' has no attribute {name!r}")
    globals()[name] = value        # found once: later reads are plain attributes
    return value


# flags tracegrad.compile reads, kept in compiler.py (which cannot import this module)
_COMPILER_FLAGS = ("error_on_recompile", "suppress_errors")


class _Config(types.ModuleType):
    """``torch._dynamo.config`` (a module, so ``import torch._dynamo.config`` works): ``cache_size_limit`` (alias ``recompile_limit``) is
    ``tracegrad.compiler.cache_size_limit`` (programs traced per compiled function before its
    calls run eagerly), ``accumulated_cache_size_limit`` (alias ``accumulated_recompile_limit``)
    ``tracegrad.compiler.accumulated_cache_size_limit`` (all its programs, those of dynamic
    sizes included: NOTE [dynamic sizes] in ``compiler.py``). ``error_on_recompile``: a call that
    needs another program raises ``RecompileError``, as torch. ``suppress_errors``: a user
    backend (``compile(backend=callable)``) that raises makes the function run eagerly from then
    on, as torch, instead of raising ``BackendCompilerFailed`` (still raised with
    ``fullgraph=True``); a call that cannot be one program runs eagerly with or without it. The
    other flags programs commonly set are accepted and kept; they do not change what tracegrad
    does (a ``backward()`` inside a compiled function is already part of its program, which is
    what ``compiled_autograd`` asks for). Setting an unknown flag raises AttributeError, as
    torch."""

    _FLAGS = dict(verbose=False, capture_scalar_outputs=False,
                  capture_dynamic_output_shape_ops=False, automatic_dynamic_shapes=True,
                  assume_static_by_default=True, optimize_ddp=True,
                  inline_inbuilt_nn_modules=True, guard_nn_modules=False,
                  compiled_autograd=False, specialize_int=False, specialize_float=False,
                  rewrite_assert_with_torch_assert=True, raise_on_ctx_manager_usage=True,
                  capture_func_transforms=True, force_parameter_static_shapes=True,
                  allow_unspec_int_on_nn_module=False, trace_numpy=True, replay_record_enabled=False)

    def __init__(self):
        super().__init__(__name__ + ".config")
        object.__setattr__(self, "_values", dict(self._FLAGS))

    def __getattr__(self, name):
        if name in ("cache_size_limit", "recompile_limit"):
            return _compiler.cache_size_limit
        if name in ("accumulated_cache_size_limit", "accumulated_recompile_limit"):
            return _compiler.accumulated_cache_size_limit
        if name in _COMPILER_FLAGS:
            return getattr(_compiler, name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"torch._dynamo.config.{name} does not exist") from None

    def patch(self, arg=None, value=None, **changes):
        """Mirrors ``torch._dynamo.config.patch``: ``patch(flag=value, ...)``, ``patch("flag",
        value)`` or ``patch({"flag": value})``, used as a context manager or as a decorator of a
        function or of a ``unittest.TestCase`` class (from ``setUpClass`` to
        ``tearDownClass``); the flags come back after.
        AttributeError for an unknown flag (when it is applied, as torch)."""
        if isinstance(arg, dict):
            changes.update(arg)
        elif arg is not None:
            changes[arg] = value
        return _ConfigPatch(self, changes)

    def __setattr__(self, name, value):
        if name.startswith("__"):           # the import system's __spec__, __loader__...
            object.__setattr__(self, name, value)
        elif name in ("cache_size_limit", "recompile_limit"):
            _compiler.cache_size_limit = int(value)
        elif name in ("accumulated_cache_size_limit", "accumulated_recompile_limit"):
            _compiler.accumulated_cache_size_limit = int(value)
        elif name in _COMPILER_FLAGS:
            setattr(_compiler, name, bool(value))
        elif name in self._values:
            self._values[name] = value
        else:
            raise AttributeError(f"torch._dynamo.config.{name} does not exist")


class _ConfigPatch:
    """What ``config.patch`` returns: a context manager and a decorator."""

    def __init__(self, cfg, changes):
        self.cfg, self.changes, self.saved = cfg, changes, []

    def __enter__(self):
        before = {k: getattr(self.cfg, k) for k in self.changes}
        for k, v in self.changes.items():
            setattr(self.cfg, k, v)
        self.saved.append(before)
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.pop().items():
            setattr(self.cfg, k, v)
        return False

    def __call__(self, fn):
        if isinstance(fn, type):      # a TestCase: patched from setUpClass to tearDownClass
            ctx = _ConfigPatch(self.cfg, self.changes)

            class Patched(fn):
                @classmethod
                def setUpClass(cls):
                    ctx.__enter__()
                    try:
                        super().setUpClass()
                    except BaseException:
                        ctx.__exit__(None, None, None)
                        raise

                @classmethod
                def tearDownClass(cls):
                    try:
                        super().tearDownClass()
                    finally:
                        ctx.__exit__(None, None, None)
            Patched.__name__, Patched.__qualname__, Patched.__module__ = fn.__name__, fn.__qualname__, fn.__module__
            return Patched

        @functools.wraps(fn)
        def patched(*args, **kwargs):
            with _ConfigPatch(self.cfg, self.changes):
                return fn(*args, **kwargs)
        return patched


config = _Config()
# ``import torch._dynamo.config`` (gpt-fast, many training scripts): this module answers as a
# package whose ``config`` submodule is already imported
__path__: list = []
sys.modules[config.__name__] = config
utils = types.ModuleType(__name__ + ".utils", "torch._dynamo.utils: ``counters`` (graph breaks by reason, "
                         "compiled graphs), as torch's, from tracegrad.compile's calls.")
utils.counters = _compiler.COUNTERS
sys.modules[utils.__name__] = utils         # ``from torch._dynamo.utils import counters``
# torch._dynamo.exc: a module too (``from torch._dynamo.exc import Unsupported``)
exc = types.ModuleType(__name__ + ".exc", _exc.__doc__)
for _name in _exc.__all__:
    setattr(exc, _name, getattr(_exc, _name))
exc.__all__ = list(_exc.__all__)
sys.modules[exc.__name__] = exc
# torch._dynamo.eval_frame (``isinstance(model, torch._dynamo.eval_frame.OptimizedModule)``, what
# compile(model) returns); the class lives in nn, imported after this module: read on first use
eval_frame = types.ModuleType(__name__ + ".eval_frame", "torch._dynamo.eval_frame's OptimizedModule.")


def _eval_frame_attr(name):
    if name == "OptimizedModule":
        from .nn.modules.module import OptimizedModule
        eval_frame.OptimizedModule = OptimizedModule
        return OptimizedModule
    raise AttributeError(f"module 'tracegrad._dynamo.eval_frame' has no attribute {name!r}")


eval_frame.__getattr__ = _eval_frame_attr
sys.modules[eval_frame.__name__] = eval_frame
# torch._dynamo.callback (``from torch._dynamo.callback import on_compile_start``) and its two
# decorators at the package level (``@torch._dynamo.on_compile_start``): NOTE [compile callbacks] in _compile_callbacks.py
callback = types.ModuleType(__name__ + ".callback", "torch._dynamo.callback: functions run when a trace of a "
                            "compiled function starts and ends.")
for _name in ("CallbackTrigger", "CallbackArgs", "CompilationCallbackHandler", "callback_handler",
              "on_compile_start", "on_compile_end"):
    setattr(callback, _name, getattr(_compile_callbacks, _name))
sys.modules[callback.__name__] = callback
on_compile_start, on_compile_end = _compile_callbacks.on_compile_start, _compile_callbacks.on_compile_end


_NONSTRICT = [0]       # depth of nonstrict_trace calls running now


def graph_break(msg=""):
    """Mirrors ``torch._dynamo.graph_break``: inside a compiled function, a graph break here
    (the call runs eagerly, with the reason in ``tracegrad.compiler.stats()``; with
    ``fullgraph=True`` it raises ``GraphBreak``); outside one, or inside a function marked
    :func:`nonstrict_trace`, nothing."""
    if _compiler._tracing() and not _NONSTRICT[0]:
        raise _compiler.GraphBreak("torch._dynamo.graph_break() called" + (f": {msg}" if msg else ""))


def nonstrict_trace(fn):
    """Mirrors ``torch._dynamo.nonstrict_trace``: ``fn`` is traced into the compiled program as
    an opaque step, so a ``graph_break()`` inside it breaks nothing (with ``fullgraph=True``
    too); its tensor math runs every call. Returns a wrapper of ``fn``; TypeError for a
    non-callable."""
    if not callable(fn):
        raise TypeError(f"torch._dynamo.nonstrict_trace expects a callable, got {type(fn).__name__}")

    @functools.wraps(fn)
    def traced_as_a_step(*args, **kwargs):
        _NONSTRICT[0] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            _NONSTRICT[0] -= 1
    return traced_as_a_step


def disallow_in_graph(fn):
    """Mirrors ``torch._dynamo.disallow_in_graph``: ``fn`` must be a library op (``torch.sub``);
    torch then breaks the graph around it. A break changes no value, and tracegrad's programs
    call library ops the same way either way, so this only checks ``fn`` and returns it.
    RuntimeError for a function that is not a library op (as torch)."""
    if not (callable(fn) and str(getattr(fn, "__module__", "") or "").startswith("tracegrad")):
        raise RuntimeError("disallow_in_graph is expected to be used on an already allowed callable "
                           f"(a torch.* op), not on {getattr(fn, '__qualname__', fn)!r}")
    return fn


def skip_frame(msg=""):
    """Mirrors ``torch._dynamo.skip_frame``: inside a compiled function the call runs eagerly
    (a graph break here, as :func:`graph_break`); outside one, nothing."""
    graph_break(msg or "torch._dynamo.skip_frame() called")


def optimize_assert(backend="inductor", **kwargs):
    """Mirrors ``torch._dynamo.optimize_assert(backend)``: ``optimize(backend, nopython=True)``."""
    from . import _dynamo_backends as b
    return b.optimize(backend, nopython=True, **kwargs)


def run(fn=None):
    """Mirrors ``torch._dynamo.run``: ``fn`` runs as it is (already compiled programs are used,
    nothing new is compiled by this wrapper). Returns ``fn``."""
    return fn


def _mark(t, index, attr, api):
    """Add ``index`` (an int, or a list/tuple of them) to the set ``t.<attr>``, as torch's
    markers do (AssertionError for another index type)."""
    if isinstance(index, (list, tuple)):
        for i in index:
            _mark(t, i, attr, api)
        return
    if not isinstance(index, int):
        raise AssertionError(f"torch._dynamo.{api}: expected index to be int, list, or tuple, got {type(index)}")
    if _state.CAPTURE[0] is not None:
        return       # inside a trace: a program's shapes are static; marks matter on arguments
    marked = getattr(t, attr, None)
    if marked is None:
        marked = set()
        setattr(t, attr, marked)
    marked.add(index)


def mark_dynamic(t, index, *, min=None, max=None, hint_override=None, specialize_on=None):  # noqa: A002 -- torch's names
    """Mirrors ``torch._dynamo.mark_dynamic``: the sizes ``t`` has along dims ``index`` (an int,
    or a list/tuple of them) may change from call to call. XLA programs have static shapes, so
    each new size is still traced once and cached; what the mark changes is that those programs
    do not count toward ``cache_size_limit`` (only toward ``accumulated_cache_size_limit``): a
    batch or sequence length that varies keeps its calls compiled (NOTE [dynamic sizes] in
    ``compiler.py``). ``min``/``max``/``hint_override``/``specialize_on`` are accepted. Kept in
    ``t._dynamo_dynamic_indices`` as torch keeps it. Raises AssertionError for an index that is
    not an int, list or tuple."""
    _mark(t, index, "_dynamo_dynamic_indices", "mark_dynamic")


def maybe_mark_dynamic(t, index):
    """Mirrors ``torch._dynamo.maybe_mark_dynamic``: as ``mark_dynamic`` (kept in
    ``t._dynamo_weak_dynamic_indices``)."""
    _mark(t, index, "_dynamo_weak_dynamic_indices", "maybe_mark_dynamic")


def mark_static(t, index=None):
    """Mirrors ``torch._dynamo.mark_static``: these dims of ``t`` (all when ``index`` is None)
    count toward ``cache_size_limit`` when they change, even under ``compile(dynamic=True)``
    (``mark_dynamic`` wins over it, as in torch). An ``nn.Module`` class (torch's static class) is
    marked ``_dynamo_marked_static`` and returned, as torch does. Raises TypeError for anything
    else."""
    from .nn.modules.module import Module
    if isinstance(t, type) and issubclass(t, Module):
        t._dynamo_marked_static = True
        return t
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_static expects a tensor/nn.Module class but received {type(t)}")
    _mark(t, list(range(t.dim())) if index is None else index, "_dynamo_static_indices", "mark_static")
    return None


def mark_static_address(t, guard=False):
    """Mirrors ``torch._dynamo.mark_static_address`` (a KV cache kept at one address for CUDA
    graphs): accepted; a state tensor's buffer is already passed to the program (and donated)
    in place. Raises TypeError for a non-tensor."""
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_static_address expects a tensor but received {type(t)}")
    t._dynamo_static_input_type = "guarded" if guard else "unguarded"


class _BreakReason:
    """One graph break of ``explain``: ``reason`` (text) and ``user_stack`` (``["file:line"]``)."""

    def __init__(self, reason, where):
        self.reason, self.user_stack = reason, [where] if where else []

    def __repr__(self):
        return f"GraphCompileReason(reason={self.reason!r}, user_stack={self.user_stack!r})"


class ExplainOutput:
    """Mirrors ``torch._dynamo.explain``'s result: ``graphs`` (the FX ``GraphModule`` of each
    graph a user backend would get), ``graph_count``, ``graph_break_count``, ``break_reasons``
    (``.reason``, ``.user_stack``), ``ops_per_graph`` (each graph's call_function targets and
    call_method names), ``op_count``, ``compile_times`` (seconds, as text)."""

    def __init__(self, graphs, break_reasons, seconds):
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.graph_break_count = len(break_reasons)
        self.break_reasons = break_reasons
        self.ops_per_graph = [[n.target for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
                              for gm in graphs]
        self.op_count = sum(len(ops) for ops in self.ops_per_graph)
        self.out_guards = None
        self.compile_times = f"trace and compile: {seconds:.4f} s"

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        for i, r in enumerate(self.break_reasons, 1):
            lines += [f"  Break Reason {i}:", f"    Reason: {r.reason}", "    User Stack:"]
            lines += [f"      {w}" for w in r.user_stack]
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Ops {i}:")
            lines += [f"    {op}" for op in ops]
        lines.append(f"Compile Times: {self.compile_times}")
        return "\n".join(lines) + "\n"


def explain(f, *extra_args, **extra_kwargs):
    """Mirrors ``torch._dynamo.explain(f)(*args, **kwargs)``: runs ``f`` once on these arguments
    (as torch does) the way a user backend sees it (NOTE [lazy segments] in
    ``_dynamo_capture.py``) and returns an ``ExplainOutput``: the graphs its tensor ops form and
    the graph breaks between them (reason, file and line). Passing the arguments to ``explain``
    itself is deprecated in torch and warns the same way."""
    def inner(*args, **kwargs):
        from ._dynamo_backends import capture_graphs
        t0 = time.perf_counter()
        graphs, breaks = capture_graphs(f, args, kwargs)
        seconds = time.perf_counter() - t0
        return ExplainOutput(graphs, [_BreakReason(r, w) for r, w in breaks], seconds)
    if extra_args or extra_kwargs:
        _warn("explain(f, *args, **kwargs) is deprecated, use explain(f)(*args, **kwargs) instead.  "
              "If you don't migrate, we may break your explain call in the future if your user defined "
              "kwargs conflict with future kwargs added to explain(f).", FutureWarning)
        return inner(*extra_args, **extra_kwargs)
    return inner
