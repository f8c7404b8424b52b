"""The backward engine: ``backward`` and ``grad`` over the Node graph (DESIGN 2.3).

Plain Python over Tensors, so the same code runs on concrete arrays and inside a JAX trace.
Order, as torch's engine: nodes run when all their dependents have run, highest sequence
number first (AccumulateGrad first of all); for each node:

1. tensor hooks (``Tensor.register_hook``) per output slot, in registration order,
2. ``retain_grad`` updates,
3. capture of the gradient for ``autograd.grad`` inputs (stop here if the node is not needed),
4. Node pre-hooks, 5. the node itself (AccumulateGrad runs post-accumulate-grad hooks),
6. Node post-hooks; then saved tensors are freed unless ``retain_graph``.
"""
from __future__ import annotations

import ctypes
import heapq
import itertools
import logging
import operator
import traceback
from collections.abc import Mapping

import numpy as np

from .._tensor import factories as _factories
from .. import _state
from .._ops.registry import OPS
from .._ops.warn import warn as _warn, warn_once
from .._tensor.tensor import Tensor, level_value
from .._tensor import torch_function as _tf
from . import grad_mode
from ._graph_impl import _RUNNING, ANOMALY, AccumulateGrad, edge as _graph_edge
from . import _dispatch

_tie = itertools.count()

# torch.autograd.graph's logger: with ``set_logs(autograd=logging.DEBUG)`` (or the logger's level set
# to DEBUG) every node the engine runs is logged as torch logs it ("Executing: <node> with
# grad_outputs: [f32[10]]"); checked once per backward call, so the hot loop pays one test per node
_LOG = logging.getLogger(__name__.rsplit(".", 1)[0] + ".graph")
# torch.utils._dtype_abbrs' short names, by dtype name
_ABBRS = {"float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16", "complex32": "c32",
          "complex64": "c64", "complex128": "c128", "int8": "i8", "int16": "i16", "int32": "i32",
          "int64": "i64", "bool": "b8", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64"}


def _log_node(node, grads):
    def fmt(t):
        if t is None:
            return "None"
        name = str(t.dtype).rsplit(".", 1)[-1]
        return f"{_ABBRS.get(name, name)}[{', '.join(map(str, t.shape))}]"
    _LOG.debug(f"Executing: {node!r} with grad_outputs: [{','.join(fmt(t) for t in grads)}]")

_task_ids = itertools.count()


def queue_callback(callback) -> None:
    """Mirrors ``Variable._execution_engine.queue_callback``: run ``callback()`` once the
    innermost running backward call has run all its nodes (leaves' ``.grad`` are set by then).
    A callback may queue more; they run in order. RuntimeError outside backward."""
    if not _RUNNING.tasks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _RUNNING.callbacks[-1].append(callback)


def _current_graph_task_id() -> int:
    """Id of the innermost running backward call, -1 outside backward (torch's name)."""
    return _RUNNING.tasks[-1][0] if _RUNNING.tasks else -1


def _current_graph_task_keep_graph() -> bool:
    """Whether the innermost running backward call keeps the graph (``retain_graph``), as
    ``torch._C._autograd._get_current_graph_task_keep_graph``; True outside backward, as torch's."""
    return _RUNNING.tasks[-1][4][2] if _RUNNING.tasks else True


def _current_graph_task_execution_order() -> list:
    """The nodes the innermost running backward call runs (or captures a gradient at), in the
    order it runs them, as ``torch._C._current_graph_task_execution_order``: the whole call's
    order, nodes already run included. The order is replayed from the call's roots with the
    engine's own rule (ready nodes by sequence number). RuntimeError outside backward or while
    multithreading is enabled (torch's order is only defined for one worker thread)."""
    if not _RUNNING.tasks:
        raise RuntimeError("_current_graph_task_execution_order should only be called during the backward pass")
    if grad_mode.is_multithreading_enabled():
        raise RuntimeError("get_current_graph_task_execution_order expects the current backward to be executed "
                           "with multithreading disabled, e.g. by running:\n\n>>> with "
                           "torch.autograd.set_multithreading_enabled(False):\n...     torch.autograd.grad(...)\n")
    _, _, runs, _, (root_nodes, execute, _) = _RUNNING.tasks[-1]
    deps, _ = _discover([(n, 0) for n in root_nodes])
    tie = itertools.count()
    heap = [(-n._seq, next(tie), n) for n in root_nodes if deps.get(n, 0) == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, _, node = heapq.heappop(heap)
        if node in runs:
            order.append(node)
        if execute is not None and node not in execute:
            continue   # as the engine: a node it only captures at passes nothing on
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] -= 1
            if deps[nxt] == 0 and nxt in runs:
                heapq.heappush(heap, (-nxt._seq, next(tie), nxt))
    return order


def _is_checkpoint_valid() -> bool:
    """False inside a backward call that was given ``inputs`` (``autograd.grad``,
    ``backward(inputs=...)``), as ``torch.autograd._is_checkpoint_valid``."""
    return _RUNNING.tasks[-1][1] if _RUNNING.tasks else True


def _will_engine_execute_node(node) -> bool:
    """Whether the innermost running backward call runs ``node`` (or captures its gradient,
    for ``autograd.grad``'s inputs), as torch's ``_will_engine_execute_node``. RuntimeError
    outside backward."""
    if not _RUNNING.tasks:
        raise RuntimeError("_will_engine_execute_node should only be called during the backward pass")
    _, _, runs, accumulates, _ = _RUNNING.tasks[-1]
    if node not in runs:   # (torch checks a leaf only once it is one the call reaches)
        return False
    if not accumulates and isinstance(node, AccumulateGrad):   # autograd.grad, not backward(inputs=)
        raise RuntimeError("A leaf node was passed to _will_engine_execute_node but we are currently running "
                           "autograd.grad(). This is currently not supported.")
    return True


class GradientEdge(tuple):
    """Mirrors ``torch.autograd.graph.GradientEdge``: ``(node, output_nr)``, the place in the
    graph a tensor's gradient flows into; ``autograd.grad``/``backward`` accept it as an input
    in place of the tensor (the gradient of the tensor's value at the time the edge was taken),
    and as an output (the gradient flowing into that place; its shape and dtype are those of the
    tensor ``get_gradient_edge`` took it from)."""
    # a __dict__ (tuple subclasses take no slots): ``_meta``, the (shape, dtype) of the tensor
    # whose edge it is, which seeds an output edge's gradient (torch reads the node's metadata)

    def __new__(cls, node, output_nr):
        self = tuple.__new__(cls, (node, int(output_nr)))
        self._meta = None
        return self

    node = property(lambda self: self[0])
    output_nr = property(lambda self: self[1])

    def __repr__(self):
        return f"GradientEdge(node={self[0]!r}, output_nr={self[1]})"


def get_gradient_edge(tensor):
    """Mirrors ``torch.autograd.graph.get_gradient_edge``: the edge of ``tensor`` (its grad_fn
    and output_nr, or a leaf's AccumulateGrad). RuntimeError if it does not require grad."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                           "gradients")
    node, nr = _graph_edge(tensor)
    edge = GradientEdge(node, nr)
    edge._meta = (tuple(tensor.shape), tensor.dtype)
    return edge


def _edge(t):
    return tuple(t) if isinstance(t, GradientEdge) else _graph_edge(t)


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, (Tensor, GradientEdge)):
        return (x,)
    return tuple(x)


def _check_api_args(api, tensors, *flags):
    """torch's TypeError for the arguments its entry functions cannot take, before any work: no
    tensors at all (None: torch iterates it), or a flag (retain_graph, create_graph, allow_unused)
    that is neither an int/bool nor, where ``(name, value, none_ok)`` allows it, None."""
    if tensors is None:
        raise TypeError(f"{api}(): argument 'tensors' must be a Tensor or a sequence of Tensors, not NoneType; "
                        "pass the outputs to differentiate")
    for name, value, none_ok in flags:
        if value is None and none_ok or type(value) is bool or isinstance(value, int):
            continue
        if value is not None and hasattr(value, "__index__"):
            try:   # torch's engine reads a flag through __index__: a one-element integer or bool tensor passes
                operator.index(value)
                continue
            except TypeError:
                pass
        raise TypeError(f"{api}(): argument '{name}' must be a bool, not {type(value).__name__}; pass True or False")


def _make_grads(outputs, grad_outputs, create_graph):
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if isinstance(out, GradientEdge):
            out = _edge_output(out, g)
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs; pass "
                                   "`gradient=` (a tensor of the output's shape) or reduce the "
                                   "output first, e.g. out.sum().backward()")
            if not out.dtype.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype!r}")
            g = _factories.ones_like(out)
        elif not isinstance(g, Tensor):
            # as torch (_make_grads): a Python number is not a gradient
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        elif tuple(g.shape) != tuple(out.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] has a shape of {out.shape}.")
        elif (g.dtype.is_complex or out.dtype.is_complex) and g.dtype != out.dtype:
            # as torch's _make_grads: a real gradient is cast to a real output's dtype, but a
            # complex one must match exactly (no silent drop of the imaginary part)
            raise RuntimeError("For complex Tensors, both grad_output and output are required to have the same dtype. "
                               f"Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and output[{i}] has a "
                               f"dtype of {out.dtype}.")
        grads.append(g)
    return grads


# NOTE [sparse outputs and inputs]
# A sparse COO tensor has no node of its own: its values carry its autograd history
# (_api/sparse_coo.py). As a backward/grad output it stands for its values, whose gradient is the
# output's gradient at each entry's position (``_values_grad``); as a grad input its gradient is
# built from its values' gradient (``_grad_from_values``).
def _through_values(outputs, grads):
    """``outputs`` and ``grads`` with each sparse output replaced by its values and their gradient."""
    if not any(hasattr(o, "_values_grad") for o in outputs):
        return outputs, grads
    outs, gs = [], []
    for o, g in zip(outputs, grads):
        if hasattr(o, "_values_grad"):
            o, g = o._sp_values, o._values_grad(g)
        outs.append(o)
        gs.append(g)
    return tuple(outs), gs


def _paired_grads(grads, outputs):
    """One gradient (or None) per output, as torch pairs them up with zip: fewer is a
    RuntimeError, extra ones are ignored."""
    gs = _as_tuple(grads) if grads is not None else (None,) * len(outputs)
    if len(gs) < len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(gs)} gradients")
    return gs[:len(outputs)]


def _check_inputs(inputs):
    for t in inputs:
        if not isinstance(t, (Tensor, GradientEdge)):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}")


def _edge_output(edge, g):
    """A stand-in with the shape and dtype of the tensor whose gradient flows into ``edge``
    (for ``_make_grads``' checks and implicit ones)."""
    meta = edge._meta
    if meta is None:
        if g is None:
            raise RuntimeError("backward/grad: a GradientEdge built by hand as an output needs its gradient: "
                               "pass grad_tensors/grad_outputs, or take the edge with "
                               "autograd.graph.get_gradient_edge(tensor)")
        return g
    return _factories.empty(meta[0], dtype=meta[1])


def _level_grad_error():
    # NOTE [requires_grad inside transforms] (func/_closure.py): such values have no Node here
    raise RuntimeError("autograd.grad inside a tracegrad.func transform (grad, vjp, jacrev) cannot differentiate "
                       "the transform's own values (no graph is recorded there): nest tracegrad.func.grad or "
                       "tracegrad.func.vjp instead")


def _check_outputs(outputs):
    for i, out in enumerate(outputs):
        if isinstance(out, GradientEdge):
            continue
        if not isinstance(out, Tensor):
            # torch's Python asserts it (AssertionError) once the outputs are a sequence
            raise AssertionError(f"Expected output to be a Tensor: backward/grad got {type(out).__name__} at index "
                                 f"{i} of the outputs")
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if level_value(out):
            _level_grad_error()


def _discover(roots):
    """All nodes reachable from roots and, per node, its number of incoming edges."""
    deps, seen, stack = {}, set(), []
    for n, _ in roots:
        if n is not None and n not in seen:
            seen.add(n)
            stack.append(n)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps, seen


def _needed(seen, targets):
    """Nodes with a path to a target node (targets included)."""
    memo = {}
    for start in seen:
        if start in memo:
            continue
        stack = [(start, iter(start.next_functions))]
        on = {start}
        while stack:
            node, it = stack[-1]
            advanced = False
            for nxt, _ in it:
                if nxt is None:
                    continue
                if nxt in memo:
                    if memo[nxt]:
                        memo[node] = True
                    continue
                if nxt in on:
                    continue
                stack.append((nxt, iter(nxt.next_functions)))
                on.add(nxt)
                advanced = True
                break
            if not advanced:
                stack.pop()
                memo[node] = memo.get(node, False) or node in targets
                if stack and memo[node]:
                    memo[stack[-1][0]] = True
    return {n for n, v in memo.items() if v}


def _run_tensor_hooks(hooks, g):
    for h in tuple(hooks.values()):
        if _state.CAPTURE[0] is not None:
            _state.note_hook("tensor", h)
        r = h(g)
        if r is not None:
            g = _checked_value(h, r, g)
    return g


def _hooks_on_missing(node, grads):
    """Tensor hooks of the outputs of ``node`` that got no gradient this pass, called with None as
    torch's engine does (a hook on one piece of ``unbind`` sees None when another piece is
    backpropagated); RuntimeError, as torch, when one returns a tensor in place of that None."""
    slots = (0,) if isinstance(node, AccumulateGrad) else (node._tensor_pre_hooks or ())
    for slot in tuple(slots):
        if slot < len(grads) and grads[slot] is not None:
            continue
        hooks = node.tensor_pre_hooks(slot)
        for h in tuple(hooks.values()) if hooks else ():
            if _state.CAPTURE[0] is not None:
                _state.note_hook("tensor", h)
            if h(None) is not None:
                raise RuntimeError("can't replace a None gradient with a non-None value")


def _checked_value(hook, r, g):
    """``r``, what ``hook`` returned in place of the gradient ``g``, checked as torch's
    check_single_result does: a Tensor (else TypeError) of ``g``'s size and dtype (else
    RuntimeError)."""
    name = getattr(hook, '__name__', 'hook')
    if not isinstance(r, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}' (a gradient hook returns "
                        "a Tensor or None)")
    if tuple(r.shape) != tuple(g.shape):
        raise RuntimeError(f"hook '{name}' has changed the size of value: expected {list(g.shape)} "
                           f"but got {list(r.shape)}")
    if r.dtype is not g.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {g.dtype} "
                           f"got {r.dtype}); return a gradient of the same dtype (.to(grad.dtype))")
    return r


def _checked_node_result(hook, returned, expected):
    """What a Node pre-hook or post hook returned in place of ``expected`` (its grad_outputs or
    grad_inputs), as a list, checked as torch's check_result: a tuple (a list or a bare Tensor is
    a TypeError) of the same length (RuntimeError), each entry None or a Tensor that keeps the
    size and dtype of a non-None original (a None gradient cannot be replaced: RuntimeError)."""
    if not isinstance(returned, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(returned).__name__}' (a Node hook returns "
                        "a tuple with one gradient or None per slot, or None)")
    if len(returned) != len(expected):
        raise RuntimeError(f"hook '{getattr(hook, '__name__', 'hook')}' has returned an incorrect number "
                           f"of values (got {len(returned)}, but expected {len(expected)})")
    for g, r in zip(expected, returned):
        if r is not None:
            if g is None:
                raise RuntimeError("can't replace a None gradient with a non-None value")
            _checked_value(hook, r, g)
    return list(returned)


# NOTE [returning freed memory]
# XLA:CPU allocates arrays with the C library's malloc. glibc serves the 8 MiB activations of a
# training step from its heap (its mmap threshold rises to the largest block freed so far) and
# keeps freed heap blocks resident: a hole between live blocks is reused only by a request that
# fits it. torch's in-place kernels allocate little besides activations and gradients, so its
# holes refill; an eager XLA step also allocates and frees every op's output and temporaries
# (and the first step loads its programs in between), the holes fragment, and the working set
# of a 24-block MLP step grew to ~1.6x torch's (benchmarks/eager_memory.py) although the live
# arrays matched torch's bytes at every node. So free heap pages go back to the OS (glibc's
# ``malloc_trim``) once about _TRIM_BYTES were let go of: backward estimates the saved tensors
# and gradients it drops and trims at its end (measured: 1.65x -> 1.09x torch's peak);
# ``note_released`` takes counts from elsewhere and trims at once (``zero_grad``: gradients and
# the optimizer's old parameter buffers go just before the next forward builds the peak; with
# it 0.99x). The cost is page faults when trimmed memory is used again (~0.15 s of kernel time a
# step there, ~4%). Trimming inside backward too (every 64 MiB) held the peak ~18% lower still,
# but faulted the same pages in several times a step (1.5x the kernel time). Small graphs never
# reach the threshold and pay nothing.
_TRIM_BYTES = 64 << 20
_PENDING = [0]          # bytes let go of since the last trim
_trim_fn: list = []


def _malloc_trim():
    """glibc's ``malloc_trim(0)``, or nothing where the C library has none (musl, macOS)."""
    if not _trim_fn:
        try:
            fn = ctypes.CDLL(None).malloc_trim
            fn.argtypes, fn.restype = (ctypes.c_size_t,), ctypes.c_int
        except (OSError, AttributeError):
            fn = None
        _trim_fn.append(fn)
    fn = _trim_fn[0]
    if fn is not None:
        fn(0)


def _return_memory():
    _PENDING[0] = 0
    _malloc_trim()


def note_released(nbytes: int) -> None:
    """Tell the engine that ``nbytes`` of arrays were just let go of (``zero_grad`` dropping
    gradients); once about 64 MiB were, free memory goes back to the OS (NOTE [returning freed
    memory]). Call it after the last reference is gone. No effect inside a compiled trace."""
    if _state.CAPTURE[0] is not None:
        return
    _PENDING[0] += nbytes
    if _PENDING[0] >= _TRIM_BYTES:
        _return_memory()


_SIZES: dict = _state.register_cache("autograd.engine._SIZES", {})


def _released_bytes(node, grads, saved):
    """About the bytes let go of once ``node`` has run: its incoming gradient and, when the
    graph is freed and the node saved tensors, as much again for them (a saved activation has
    its gradient's size, give or take). An estimate from one array, ~0.5 us a node: counting
    every array exactly cost ~3 us a node, 3% of a small MLP's step."""
    for g in grads:
        if g is not None:
            a = g._st.array
            key = (getattr(a, "shape", None), getattr(a, "dtype", None))
            n = _SIZES.get(key)
            if n is None:
                n = 0
                if key[0] is not None and key[1] is not None:
                    n = key[1].itemsize
                    for d in key[0]:
                        n *= d
                if len(_SIZES) > 4096:
                    _SIZES.clear()
                _SIZES[key] = n
            return 2 * n if saved and getattr(node, "saved", None) else n
    return 0


def _detached(g):
    """``g.detach()`` keeping forward AD's tangent: under a dual level, torch's gradients of
    dual tensors carry tangents (forward-over-reverse) with or without ``create_graph``."""
    d = g.detach()
    tangent = g.__dict__.get("_fw")
    if tangent is not None and _state.FORWARD_AD[0] is not None:
        _state.FORWARD_AD[0].set_tangent(d, tangent)
    return d


def _accumulate(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if type(a) is not type(b) and a.is_sparse and not b.is_sparse:
        return b + a    # torch's input buffer: a dense gradient absorbs a sparse one, in any order
    return a + b


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=(), allow_unused=True,
                 accumulate_grad=True):
    """Run the graph from ``outputs`` seeded with ``grad_outputs``. With ``accumulate_grad``
    (``backward``) leaves' ``.grad`` fill in; else (``autograd.grad``) the gradients w.r.t.
    ``inputs`` are captured and returned."""
    if accumulate_grad and _state.CAPTURE[0] is not None:
        _state.CAPTURE[0].backward_ran = True   # a compiled region's results are consumed
    roots = [_edge(t) for t in outputs]
    deps, seen = _discover(roots)
    if _state.CAPTURE[0] is not None:   # before any node runs (and frees what it saved)
        _state.CAPTURE[0].see_backward_graph(seen)
    captures = {}         # (node, slot) -> [input index]
    input_edges = []
    for i, t in enumerate(inputs):
        e = _edge(t)
        if e[0] is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        input_edges.append(e)
        if accumulate_grad and not isinstance(e[0], AccumulateGrad) and not isinstance(t, GradientEdge):
            t.retain_grad()   # as torch's backward(inputs=...): a non-leaf input retains its grad
        captures.setdefault(e, []).append(i)
    if inputs:
        targets = {e[0] for e in input_edges}
        needed = _needed(seen, targets)
        # run a node only if it leads to another wanted node; the inputs' own nodes (a leaf's
        # AccumulateGrad, a non-leaf's grad_fn) run only for backward(inputs=...), never for
        # autograd.grad (torch's engine.cpp init_to_execute)
        execute = {n for n in needed if any(nx in needed for nx, _ in n.next_functions)}
        if accumulate_grad:   # torch marks every input's node needed (the non-leaf's grad_fn runs too)
            execute |= targets
        visit = execute | targets
    else:
        execute = visit = None
    captured = [None] * len(inputs)

    buffers = {}
    heap = []
    root_nodes = []
    for (node, slot), g in zip(roots, grad_outputs):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * _n_slots(node, slot)
            root_nodes.append(node)
        if slot >= len(buf):
            buf.extend([None] * (slot + 1 - len(buf)))
        buf[slot] = _accumulate(buf[slot], g)
    for node in root_nodes:
        if deps.get(node, 0) == 0:
            heapq.heappush(heap, (-node._seq, next(_tie), node))

    # NOTE [returning freed memory]: eager backward only (under a compiled trace arrays are abstract)
    trim = _state.CAPTURE[0] is None
    logging_on = _LOG.isEnabledFor(logging.DEBUG)
    # the saved_tensors_hooks stack as it was: torch's engine runs on a copy of the caller's
    # thread-local state, so a hook entering or exiting a context during backward leaves the
    # caller's stack as it found it
    hooks_before = list(_state.SAVED_HOOKS)
    prev = grad_mode.STATE[0]
    grad_mode.STATE[0] = bool(create_graph)
    # the nodes this call runs or captures at: an input's node the roots do not reach is not one
    # (torch's _will_engine_execute_node is False for it)
    # (task id, whether the call has no inputs, the nodes it runs or captures at, whether it
    # accumulates into .grad, (its root nodes, the nodes it executes, retain_graph))
    _RUNNING.tasks.append((next(_task_ids), not inputs, seen if visit is None else visit & seen, accumulate_grad,
                           (root_nodes, execute, bool(retain_graph))))
    _RUNNING.callbacks.append([])
    node = None
    evaluating = _state.EVALUATING_NODE.v     # this thread's slot (read once: a per-thread lookup)
    try:
        while heap:
            _, _, node = heapq.heappop(heap)
            grads = buffers.pop(node, None) or []
            if type(node) is AccumulateGrad and grads and "_gdt" in node.variable.__dict__:
                grads = _to_grad_dtype(grads, node.variable.__dict__["_gdt"])
            if node._through:   # a compiled region's node (its check_through)
                node.check_through(grads, captures)
            # torch captures the raw gradient of a node it will also execute, and the hooked
            # one of a node it only captures from (engine.cpp: evaluate_function)
            raw = list(grads) if captures and execute is not None and node in execute else None
            # 1-2. tensor hooks and retain_grad, per output slot
            if node._tensor_pre_hooks is not None or node._retains_grad or isinstance(node, AccumulateGrad):
                for slot, g in enumerate(grads):
                    if g is None:
                        continue
                    hooks = node.tensor_pre_hooks(slot)
                    if hooks:
                        g = grads[slot] = _run_tensor_hooks(hooks, g)
                    rg = node._retains_grad
                    if rg:
                        ref = rg.get(slot)
                        t = ref() if ref is not None else None
                        if t is not None:
                            t._grad = (_detached(g) if not create_graph else g) if t._grad is None else _accumulate(t._grad, g)
                _hooks_on_missing(node, grads)
            # 3. captures for autograd.grad / backward(inputs=...)
            if captures:
                src = raw if raw is not None else grads
                for slot in range(len(grads)):
                    for i in captures.get((node, slot), ()):
                        if not accumulate_grad:
                            captured[i] = _accumulate(captured[i], src[slot])
                        elif (not isinstance(node, AccumulateGrad) and not isinstance(inputs[i], GradientEdge)
                              and not inputs[i]._retains_grad):
                            _accumulate_nonleaf(inputs[i], src[slot], create_graph)
            if execute is not None and node not in execute:
                continue
            # 4. node pre-hooks
            if node._pre_hooks:
                for h in tuple(node._pre_hooks.values()):
                    _state.note_hook("Node pre", h)
                    r = h(tuple(grads))
                    if r is not None:
                        grads = _checked_node_result(h, r, grads)
            if logging_on:   # torch logs from a pre-hook it registers last, so after the user's
                _log_node(node, grads)
            # 5. the node
            # post-hooks registered only while the node runs (an unpack hook reaching the node
            # through torch._C._current_autograd_node) see None grad_outputs: torch hands the
            # node its inputs without a copy unless post-hooks existed before it ran
            had_post = bool(node._post_hooks)
            # a node whose gradients are all undefined still runs when it is a custom Function's
            # (torch's engine calls every ready node: a PyNode materializes zeros for its backward,
            # or hands it None under set_materialize_grads(False)); an op's node would only pass
            # undefined gradients on, so it is skipped
            if ((len(grads) == 1 and grads[0] is not None) or any(g is not None for g in grads)
                    or node._forward_cls is not None):
                cap = _state.CAPTURE[0]
                if cap is not None:   # a checkpoint's recompute waits for these
                    cap.current_grads = grads
                prof = _state.PROFILER[0]
                outer, evaluating[0] = evaluating[0], node
                try:
                    if prof is None:
                        outs = node.apply(grads, create_graph)
                    else:             # timed as torch's autograd::engine::evaluate_function range
                        outs = prof.evaluate_function(node, grads, create_graph)
                finally:
                    evaluating[0] = outer
                if cap is not None:   # not kept past the node: the trace would see them escape
                    cap.current_grads = ()
                if ANOMALY[0] and ANOMALY[1]:
                    _check_nan(node, outs)
            else:
                outs = [None] * len(node.next_functions)
            # 6. node post-hooks
            if node._post_hooks:
                seen = tuple(grads) if had_post else (None,) * len(grads)
                for h in tuple(node._post_hooks.values()):
                    _state.note_hook("Node post", h)
                    r = h(tuple(outs), seen)
                    if r is not None:
                        outs = _checked_node_result(h, r, outs)
            if trim:
                _PENDING[0] += _released_bytes(node, grads, not retain_graph)
            if not retain_graph:
                node.release()
            for (nxt, slot), g in zip(node.next_functions, outs):
                if nxt is None:
                    continue
                if g is not None:
                    buf = buffers.get(nxt)
                    if buf is None:
                        buf = buffers[nxt] = [None] * _n_slots(nxt, slot)
                    if slot >= len(buf):
                        buf.extend([None] * (slot + 1 - len(buf)))
                    buf[slot] = _accumulate(buf[slot], g)
                d = deps[nxt] - 1
                deps[nxt] = d
                if d == 0 and (visit is None or nxt in visit):
                    heapq.heappush(heap, (-nxt._seq, next(_tie), nxt))
        node = None
        callbacks = _RUNNING.callbacks[-1]
        k = 0
        while k < len(callbacks):   # a callback may queue another
            callbacks[k]()
            k += 1
    except Exception:
        # anomaly mode: whatever fails while a node runs (its hooks, its backward, the NaN
        # check) is reported with the forward traceback of that node, as torch's engine does
        if ANOMALY[0] and node is not None:
            _anomaly_report(node)
        raise
    finally:
        grad_mode.STATE[0] = prev
        if _state.SAVED_HOOKS != hooks_before:
            _state.SAVED_HOOKS[:] = hooks_before
        _RUNNING.tasks.pop()
        _RUNNING.callbacks.pop()
    if trim and _PENDING[0] >= _TRIM_BYTES:
        buffers = grads = outs = raw = src = g = r = None   # the engine's last references first
        _return_memory()
    return captured


def _anomaly_report(node):
    # torch's PyAnomalyMetadata::print_stack: one warning for the failing node (its forward
    # traceback, or that none was recorded), then one per parent node whose backward made it
    # (create_graph under anomaly mode). A warning that raises (a filter set to "error") is
    # printed to stderr instead, as torch's warning handler does while an error is in flight:
    # the engine's own error is the one that propagates.
    parent = False
    while node is not None:
        name = node.name()
        if node._trace is None:
            msg = (f"Error detected in {name}. No forward pass information available. Enable detect "
                   "anomaly during forward pass for more information.")
        elif parent:
            msg = (f"\n\nPrevious calculation was induced by {name}. Traceback of forward call that "
                   "induced the previous calculation:\n" + node._trace)
        else:
            msg = f"Error detected in {name}. Traceback of forward call that caused the error:\n" + node._trace
        try:
            _warn(msg)
        except Exception:
            traceback.print_exc()
        node, parent = node._parent, True


def _n_slots(node, slot):
    # one buffer entry per output of the node, so pre-hooks see torch's full tuple
    return max(slot + 1, node.num_outputs())


def _accumulate_nonleaf(t, g, create_graph):
    if g is None:
        return
    t._grad = (_detached(g) if not create_graph else g) if t._grad is None else _accumulate(t._grad, g)


def _check_nan(node, outs):
    cap = _state.CAPTURE[0]
    for i, g in enumerate(outs):
        if g is not None and cap is not None:
            # the check reads the gradient's values in Python: inside a compiled function a
            # graph break (the call runs eagerly, where the check happens)
            cap.python_read(g, "anomaly mode's NaN check of a gradient")
        if g is not None and bool(np.isnan(np.asarray(g._value)).any()):
            msg = f"Function '{node.name()}' returned nan values in its {i}th output."
            if node._trace:   # run_backward's handler warns with the same traceback
                msg += "\nForward call that created it:\n" + node._trace
            raise RuntimeError(msg)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Mirrors ``torch.autograd.backward``: accumulates gradients of ``tensors`` into the
    ``.grad`` of graph leaves (or only of ``inputs``). RuntimeError for a non-scalar output
    without ``grad_tensors``, an output that does not require grad, or a freed graph."""
    _check_api_args("backward", tensors, ("retain_graph", retain_graph, True), ("create_graph", create_graph, False))
    if _state.FUNC_LEVELS or _state.VMAP_SAME:
        # as torch's: whatever the tensors, no backward while a transform runs its function
        raise RuntimeError("backward() called inside a tracegrad.func transform. This is not supported: use "
                           "tracegrad.func.grad or tracegrad.func.vjp instead, or call backward() outside of the "
                           "transformed function.")
    tensors = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = grad_variables
    gts = _paired_grads(grad_tensors, tensors)
    if retain_graph is None:
        retain_graph = create_graph
    ins = _as_tuple(inputs)
    if inputs is not None and not ins:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    _check_inputs(ins)
    _check_outputs(tensors)
    grads = _make_grads(tensors, gts, create_graph)
    tensors, grads = _through_values(tensors, grads)
    ins = tuple(t._sp_values if hasattr(t, "_grad_from_values") else t for t in ins)
    if create_graph:   # torch's TORCH_WARN_ONCE: once per process, unless set_warn_always(True)
        warn_once("Using backward() with create_graph=True will create a reference cycle between the parameter "
                  "and its gradient which can cause a memory leak. We recommend using autograd.grad when creating "
                  "the graph to avoid this. If you have to use this function, make sure to reset the .grad fields "
                  "of your parameters to None after use to break the cycle and avoid the leak.")
    run_backward(tensors, grads, retain_graph, create_graph, ins, accumulate_grad=True)


def _to_grad_dtype(grads, gd):
    """The gradient reaching a leaf whose ``grad_dtype`` was set, cast to it (None: as it comes),
    as torch's engine casts to the AccumulateGrad node's input metadata before its hooks run."""
    g = grads[0]
    if gd is None or g is None or g.dtype is gd:
        return grads
    return [g.to(gd)] + list(grads[1:])


def _tensor_like(v) -> bool:
    return type(v) is Tensor or hasattr(type(v), "__torch_function__")


def _as_override_tuple(v):
    return (v,) if _tensor_like(v) or isinstance(v, GradientEdge) else tuple(v)


def _grad_override_args(args, kwargs):
    """The arguments torch.autograd.grad gives an override: ``(outputs, inputs)`` as tuples,
    every option by keyword (a dict ``inputs`` is left as it is)."""
    names = ("outputs", "inputs", "grad_outputs", "retain_graph", "create_graph", "only_inputs", "allow_unused",
             "is_grads_batched", "materialize_grads")
    kw = {"grad_outputs": None, "retain_graph": None, "create_graph": False, "only_inputs": True,
          "allow_unused": None, "is_grads_batched": False, "materialize_grads": False}
    given = dict(zip(names, args), **kwargs)
    if "outputs" not in given or given.get("inputs") is None or type(given["inputs"]) is dict:
        return args, kwargs
    kw.update(given)
    if kw["allow_unused"] is None:
        kw["allow_unused"] = kw["materialize_grads"]
    outs, ins = _as_override_tuple(kw.pop("outputs")), _as_override_tuple(kw.pop("inputs"))
    return (outs, ins), kw


def _backward_override_args(args, kwargs):
    """The arguments torch.autograd.backward gives an override: ``tensors`` as a tuple, the
    options by keyword (``inputs`` a tuple)."""
    names = ("tensors", "grad_tensors", "retain_graph", "create_graph", "grad_variables", "inputs")
    given = dict(zip(names, args), **kwargs)
    if "tensors" not in given:
        return args, kwargs
    kw = {"grad_tensors": given.get("grad_tensors"), "retain_graph": given.get("retain_graph"),
          "create_graph": given.get("create_graph", False)}
    ins = given.get("inputs")
    kw["inputs"] = None if ins is None else _as_override_tuple(ins)
    return (_as_override_tuple(given["tensors"]),), kw


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Mirrors ``torch.autograd.grad``: returns the gradients of ``outputs`` w.r.t. ``inputs``
    (a tuple), without touching ``.grad``. RuntimeError if an input is not reached and
    ``allow_unused`` is False; ``materialize_grads=True`` returns zeros instead of None.
    ``inputs`` may be a dict (torch 2.13): the gradients come back in a dict with its keys."""
    if type(inputs) is dict:
        keys = list(inputs)
        res = grad(outputs, tuple(inputs.values()), grad_outputs, retain_graph, create_graph, only_inputs,
                   allow_unused, is_grads_batched, materialize_grads)
        return dict(zip(keys, res))
    if isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `grad()` must be a dict, not {type(inputs).__name__}. "
                        "Other Mapping types are not supported.")
    # allow_unused left as None takes materialize_grads' value, and torch's engine reads that one as
    # its bool (a str or None there is its TypeError)
    _check_api_args("grad", outputs, ("retain_graph", retain_graph, True), ("create_graph", create_graph, False),
                    ("allow_unused", allow_unused, True) if allow_unused is not None
                    else ("materialize_grads", materialize_grads, False))
    if inputs is None:
        raise TypeError("grad(): argument 'inputs' must be a Tensor or a sequence of Tensors, not NoneType; "
                        "pass the tensors to differentiate with respect to")
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty: pass the tensors to "
                           "differentiate with respect to")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    gos = _paired_grads(grad_outputs, outs)
    if retain_graph is None:
        retain_graph = create_graph
    if not only_inputs:
        _warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use tracegrad.autograd.backward.",
                      FutureWarning)     # the user's line, dispatched or not (_ops.warn.warn)
    _check_inputs(ins)
    if is_grads_batched:
        return _grads_batched(outs, ins, gos, retain_graph, create_graph, allow_unused, materialize_grads)
    _check_outputs(outs)
    for t in ins:
        if isinstance(t, GradientEdge):
            continue
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        if level_value(t):
            _level_grad_error()
    grads = _make_grads(outs, gos, create_graph)
    outs, grads = _through_values(outs, grads)
    res = run_backward(outs, grads, retain_graph, create_graph,
                       tuple(t._sp_values if hasattr(t, "_grad_from_values") else t for t in ins), accumulate_grad=False)
    res = [t._grad_from_values(g) if g is not None and hasattr(t, "_grad_from_values") else g for t, g in zip(ins, res)]
    out = []
    for i, (t, g) in enumerate(zip(ins, res)):
        if g is None:
            if materialize_grads:
                if isinstance(t, GradientEdge):   # no tensor to take the zeros' shape from
                    raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
                g = _factories.zeros_like(t)
                if create_graph:          # as torch: a leaf the caller can differentiate again
                    g._set_requires_grad(True)
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
        elif not create_graph:
            g = _detached(g)
        out.append(g)
    return tuple(out)


def _grads_batched(outs, ins, gos, retain_graph, create_graph, allow_unused, materialize_grads):
    """``is_grads_batched=True``: one vector-Jacobian product per row of the leading dim of
    each grad_output (torch vmaps; tracegrad loops, retaining the graph until the last row)."""
    for i, (o, g) in enumerate(zip(outs, gos)):
        if g is None and isinstance(o, Tensor) and o.ndim:
            raise RuntimeError("grad can be implicitly created only for scalar outputs; pass grad_outputs with a "
                               "leading batch dim")
        if isinstance(g, Tensor) and g.ndim == 0:   # torch indexes the batch dim: IndexError for a 0-d one
            raise IndexError(f"autograd.grad(is_grads_batched=True): grad_output[{i}] is 0-d, so it has no batch dim "
                             "to take rows from; pass grad_outputs whose first dim is the batch")
        if g is None:   # the implicit 0-d gradient of a scalar output: torch's batching rule refuses it
            raise ValueError(f"autograd.grad(is_grads_batched=True): grad_output[{i}] is 0-d, so it has no batch "
                             "dim to take rows from; pass grad_outputs whose first dim is the batch")
        if isinstance(g, Tensor) and isinstance(o, Tensor) and tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
                "dimension. The sizes of the remaining dimensions are expected to match the shape of corresponding "
                f"output, but a mismatch was detected: grad_output[{i}] has a shape of {g.shape[1:]} and "
                f"output[{i}] has a shape of {o.shape}. If you only want some tensors in `grad_output` to be "
                "considered batched, consider using vmap.")
    n = gos[0].shape[0]
    rows = []
    for k in range(n):
        last = k == n - 1
        rows.append(grad(outs, ins, [g[k] for g in gos], retain_graph=retain_graph if last else True,
                         create_graph=create_graph, allow_unused=allow_unused,
                         materialize_grads=materialize_grads))
    return tuple(None if rows[0][i] is None else _stack([r[i] for r in rows]) for i in range(len(ins)))


def _stack(ts):
    """``tracegrad.stack(ts)`` for rows of one gradient (equal shapes and dtype: no checks or
    promotion needed), through the op table instead of the API layer above autograd."""
    return _dispatch.apply_op(OPS["stack"], tuple(ts), (("dim", 0), ("dtype", ts[0].dtype.np)))


_tf.OVERRIDE_ARGS[grad] = _grad_override_args
_tf.OVERRIDE_ARGS[backward] = _backward_override_args
