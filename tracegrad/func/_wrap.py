"""The seam between tracegrad Tensors and JAX values for ``tracegrad.func`` (DESIGN 2, L6).

A Python function over Tensors becomes a pure JAX function by wrapping each incoming
``jax.Array`` (concrete or a tracer) into a Tensor with ``Tensor._make`` and unwrapping the
results with ``._value``: tracegrad's ops call the raw JAX function when they see tracers, so
JAX's transforms trace straight through tracegrad code. Trees are JAX pytrees (tuples, lists,
dicts) whose leaves are Tensors on the tracegrad side and arrays on the JAX side.
"""
from __future__ import annotations

import collections
import contextlib
import functools

import jax
import jax.numpy as jnp
import numpy as np

from .. import _state
from .._tensor import generator as _generator
from .._tensor.factories import from_numpy
from .._tensor.tensor import Tensor
from ..autograd import grad_mode
from ..autograd.function import Function, once_differentiable
from .._x64 import x64_enter, x64_exit
from . import _closure


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


class _Keyed(dict):
    """A plain ``dict`` of a user's tree while it is inside JAX: JAX flattens a ``dict`` in
    sorted key order and rebuilds it sorted, torch.func keeps insertion order (a gradient dict
    lists the parameters in ``named_parameters()`` order, which ``zip`` with
    ``parameters()`` relies on). ``keep_order`` swaps dicts for this node, ``plain`` back."""


jax.tree_util.register_pytree_node(
    _Keyed, lambda d: (tuple(d.values()), tuple(d.keys())), lambda keys, vals: _Keyed(zip(keys, vals)))


def keep_order(tree):
    """``tree`` with every plain ``dict`` (nested in dicts, lists and tuples) as a ``_Keyed``."""
    kind = type(tree)
    if kind is dict or kind is _Keyed:
        return _Keyed((k, keep_order(v)) for k, v in tree.items())
    if kind is list or kind is tuple:
        return kind(keep_order(v) for v in tree)
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):     # a namedtuple
        return kind(*(keep_order(v) for v in tree))
    if isinstance(tree, collections.OrderedDict):
        return kind((k, keep_order(v)) for k, v in tree.items())
    return tree


def plain(tree):
    """The inverse of ``keep_order``: every ``_Keyed`` back to a plain ``dict``, order kept."""
    kind = type(tree)
    if kind is _Keyed:
        return {k: plain(v) for k, v in tree.items()}
    if kind is list or kind is tuple:
        return kind(plain(v) for v in tree)
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return kind(*(plain(v) for v in tree))
    if isinstance(tree, collections.OrderedDict):
        return kind((k, plain(v)) for k, v in tree.items())
    return tree


def flatten(tree):
    """``(leaves, treedef)`` of ``tree`` with Tensors as leaves and dicts in insertion order;
    ``unflatten`` rebuilds it with plain dicts."""
    return jax.tree_util.tree_flatten(keep_order(tree), is_leaf=is_tensor)


def unflatten(treedef, leaves):
    return plain(jax.tree_util.tree_unflatten(treedef, leaves))


def to_arrays(tree):
    """Every Tensor leaf of ``tree`` as its ``jax.Array`` (no copy); other leaves unchanged.
    Dicts become ``_Keyed`` (insertion order kept through JAX)."""
    return jax.tree_util.tree_map(lambda t: t._value if isinstance(t, Tensor) else t, keep_order(tree),
                                  is_leaf=is_tensor)


def to_tensors(tree):
    """Every array leaf of ``tree`` (``jax.Array``, tracer or NumPy array, as a JAX function
    takes them) as a Tensor that holds it; dicts come back plain, in insertion order."""
    def wrap(a):
        if isinstance(a, (jax.Array, jax.core.Tracer)):
            return Tensor._make(a)
        if isinstance(a, np.ndarray):
            return from_numpy(a)
        return a
    return plain(jax.tree_util.tree_map(wrap, tree))


def tensor_leaves(tree):
    return jax.tree_util.tree_leaves(keep_order(tree), is_leaf=is_tensor)


def check_tensor_tree(tree, api):
    """The ``api``'s differentiated inputs must all be Tensors (torch.func's rule)."""
    leaves = tensor_leaves(tree)
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise ValueError(f"{api}: Thing passed to transform API must be Tensor, got {type(leaf)}")
    return leaves


def check_outputs(tree, api, what="outputs"):
    """The function's ``what`` must be Tensors (or trees of them); RuntimeError otherwise."""
    for leaf in tensor_leaves(tree):
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"{api}: Expected f(*args) to return only Tensors in its {what}, got {type(leaf)}")




def pure(fn, args, positions, kind=None):
    """``fn`` as a JAX function of the arrays of ``args[p]`` for ``p`` in ``positions``; the
    other arguments are closed over unchanged. Its results are trees of arrays (dicts in
    insertion order: ``keep_order``). ``kind``: "reverse" or "forward" (or "jacfwd": forward,
    vmapped), the transform's mode (NOTE [grad mode inside transforms])."""
    positions = tuple(positions)

    def jax_fn(*arrays):
        call = list(args)
        for p, a in zip(positions, arrays):
            call[p] = to_tensors(a)
        if kind is None:
            return to_arrays(fn(*call))
        levels = _closure.LEVELS
        levels.append(kind)
        # the differentiated inputs' storages (NOTE [inputs of a reverse-mode level] in _closure)
        _closure.INPUTS.append({id(t._st) for p in positions for t in tensor_leaves(call[p]) if isinstance(t, Tensor)}
                               if kind == "reverse" else set())
        prev = _state.GRAD_MODE[0]
        traces = _state.FUNC_TRACES
        n_traces = len(traces)
        if kind == "reverse":
            _state.GRAD_MODE[0] = True
            # NOTE [requires_grad inside transforms] (_closure)
            traces.extend({a._trace for a in jax.tree_util.tree_leaves(arrays) if isinstance(a, jax.core.Tracer)})
        try:
            return to_arrays(fn(*call))
        finally:
            levels.pop()
            _closure.INPUTS.pop()
            del traces[n_traces:]
            _state.GRAD_MODE[0] = prev
    return jax_fn



def run_jax(fn, *args):
    """``fn(*args)`` with JAX's x64 mode on (tracegrad's float64/int64, DESIGN 2.7) when the
    arguments are concrete; inside someone else's trace (a tracer among them) the trace's own
    mode stays, as the x64 scope must never flip mid-trace."""
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(args)):
        return fn(*args)
    prev = x64_enter()
    try:
        return fn(*args)
    finally:
        x64_exit(prev)


class FuncTransform(Function):
    """The node of a ``tracegrad.func`` transform called eagerly on Tensors that require grad
    (torch's transforms give differentiable results then): its backward is the VJP of the
    whole transformed function with respect to those Tensors (traced again at backward, eager
    like the forward). Its gradient is not itself differentiable (once_differentiable)."""

    @staticmethod
    def forward(ctx, call, *diff):
        ctx.call = call
        ctx.save_for_backward(*diff)
        return call(diff)

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads):
        diff, call = ctx.saved_tensors, ctx.call

        def flat(*arrays):
            return tuple(t._value for t in call(tuple(Tensor._make(a) for a in arrays)))
        def vjp(primals, cotangents):
            out, pullback = jax.vjp(flat, *primals)
            cts = tuple(np.zeros(o.shape, jax.dtypes.float0) if np.dtype(o.dtype).kind not in "fc"
                        else g.astype(o.dtype) for g, o in zip(cotangents, out))
            # torch's convention: conj(JAX vjp(conj(ct))) (NOTE [complex gradients])
            conj = lambda t: jax.tree_util.tree_map(  # noqa: E731
                lambda a: jnp.conj(a) if jnp.iscomplexobj(a) else a, t)
            return conj(pullback(conj(cts)))
        primals = tuple(d._value for d in diff)
        res = run_jax(vjp, primals, tuple(g._value for g in grads))
        used = run_jax(_used_inputs, flat, primals)
        # NOTE [inputs no result depends on]: torch's graph of a transform's results never
        # reaches a tensor they do not depend on (a network's output bias under
        # vmap(jacrev(net)): the Jacobian holds no term of it), so its .grad stays None; the
        # VJP gives zeros for it. Inputs the results' computation does not use get None.
        return (None,) + tuple(Tensor._make(r) if u else None for r, u in zip(res, used))


def _used_inputs(fn, primals):
    """Per input of ``fn``, whether its results' computation uses it (JAX's dead-code
    elimination of ``fn``'s jaxpr, every result kept)."""
    from jax._src.interpreters import partial_eval as pe    # JAX's jaxpr dead-code elimination
    closed = jax.make_jaxpr(fn)(*primals)
    _, used = pe.dce_jaxpr(closed.jaxpr, [True] * len(closed.jaxpr.outvars))
    return used


def differentiable(run, args, modules=(), grad_kind=True):
    """``run(*args)`` (a transform on Tensors, giving detached Tensors); when grad mode is on
    and Tensor leaves of ``args`` require grad, or the transformed function reads outside
    Tensors requiring grad (closes over them: ``_closure``), the result is recorded as one
    ``FuncTransform`` node over those Tensors, so ``backward()`` reaches them as through
    torch's transforms. ``modules``: the nn.Modules the transformed function is
    (``jacrev(model)``, ``vmap(jacrev(model))``): their parameters that require grad are swapped
    for traced values in the module itself (also where dispatch does not see them).
    ``grad_kind``: a differentiating transform (False for vmap), for the in-place rule on
    captured Tensors (RuntimeError, as torch)."""
    leaves, treedef = flatten(args)
    with _no_traced_writes(leaves):
        reads = _closure.active()
        if reads is not None:      # inside an outer transform's trace: what it reads is the outer's,
            seen = reads.see(tuple(leaves))     # its arguments too (MAML: grad(loss)(params))
            if any(a is not b for a, b in zip(seen, leaves)):
                args = unflatten(treedef, list(seen))
            with _closure.nested(reads, grad_kind):
                return run(*args)
        return _differentiable(run, args, leaves, treedef, _captured(modules, leaves), grad_kind)


class _no_traced_writes:
    """An in-place op on an argument inside a transform that wrote a traced value into the
    argument's storage would let the tracer escape: restore the arguments' arrays and raise."""

    def __init__(self, leaves):
        self.before = [(t._st, t._st.array) for t in leaves
                       if isinstance(t, Tensor) and not isinstance(t._st.array, jax.core.Tracer)]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not any(isinstance(st.array, jax.core.Tracer) for st, _ in self.before):
            return False
        for st, array in self.before:
            if st.array is not array:
                st.array, st.gen = array, st.gen + 1
        if exc[0] is None:
            raise RuntimeError("tracegrad.func: the transformed function wrote a value computed from the "
                               "transformed inputs into one of its Tensor arguments in place; a transform cannot "
                               "write traced values out of it. Return the new value instead. The arguments were "
                               "restored.")
        return False


class _KeyTape:
    """The keys generators hand out while a transformed function runs forward, handed out again
    in the same order when its backward runs the function again (``FuncTransform.backward``),
    so random draws inside (dropout under ``vmap(randomness=...)``) repeat and the gradient
    belongs to the forward's values. The first use records; every later use replays."""

    def __init__(self):
        self.keys, self.recorded = [], False

    def __enter__(self):
        self.orig = _generator.Generator.next_key
        if not self.recorded:
            orig, keys = self.orig, self.keys

            def next_key(gen):
                k = orig(gen)
                keys.append(k)
                return k
        else:
            replay = iter(self.keys)

            def next_key(gen):
                k = next(replay, None)
                if k is None:
                    raise RuntimeError("tracegrad.func: the transformed function drew more random numbers in "
                                       "backward than in its forward call; its draws must not depend on "
                                       "Python state that changed in between")
                return k
        _generator.Generator.next_key = next_key
        return self

    def __exit__(self, *exc):
        _generator.Generator.next_key = self.orig
        self.recorded = True
        return False


def _captured(modules, leaves):
    """``(module, name, parameter)`` for the parameters requiring grad of ``modules``; none
    inside another transform's trace (a tracer among the arguments): only the outermost eager
    call records the node, and its backward swaps traced values in for all of them."""
    if any(isinstance(leaf, Tensor) and isinstance(leaf._value, jax.core.Tracer) for leaf in leaves):
        return []
    # every place a tied parameter sits is swapped (its gradient sums over them, as torch's)
    return [(m, n, p) for m in modules for n, p in m.named_parameters(remove_duplicate=False) if p.requires_grad]


@contextlib.contextmanager
def _swapped(swaps):
    """Each ``(module, name, tensor)``: the parameter ``name`` put in its owner's parameter
    store for the block (the backward's traced values), the original back on exit."""
    done = []
    try:
        for module, name, value in swaps:
            *path, leaf = name.split(".")
            owner = module
            for step in path:
                owner = owner._modules[step]
            done.append((owner, leaf, owner._parameters[leaf]))
            owner._parameters[leaf] = value
        yield
    finally:
        for owner, leaf, old in reversed(done):
            owner._parameters[leaf] = old


def _differentiable(run, args, leaves, treedef, captured, grad_kind):
    pos = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor) and leaf.requires_grad]
    grad_on = grad_mode.is_grad_enabled()
    tape = _KeyTape()
    cap = _state.CAPTURE[0]
    if cap is not None:
        # inside a compiled region the capture lifts every outside tensor itself and JAX
        # differentiates the whole program; reads are not tracked there
        if not grad_on:
            return run(*args)
        if not (pos or captured):
            return _traced_closure(cap, run, args, leaves, grad_kind)
        closed, first = [], None
    else:
        # the first trace is the forward: run as a node's forward runs (grad mode off), noting
        # the outside Tensors requiring grad the function reads
        with tape, _closure.reading(grad_on, None, grad_kind, leaves) as reads, grad_mode.no_grad():
            res = run(*args)
        known = {id(leaves[p]) for p in pos} | {id(p) for _, _, p in captured}
        closed = [t for i, t in reads.found.items() if i not in known]
        if not (pos or captured or closed) or not grad_on:
            return res
        first = res
    out_def = []
    n_pos, n_cap = len(pos), len(captured)

    def call(diff):
        nonlocal first
        if first is not None:          # the node's forward: the first trace's results
            res, first = first, None
        else:
            ls = list(leaves)
            for p, d in zip(pos, diff):
                ls[p] = d
            # the forward passes the parameters themselves (nothing to swap); backward, traced ones
            swaps = [(m, n, d) for (m, n, p), d in zip(captured, diff[n_pos:n_pos + n_cap]) if d is not p]
            lifted = {id(t): d for t, d in zip(closed, diff[n_pos + n_cap:]) if d is not t}
            reading = (_closure.reading(False, lifted, grad_kind, ls) if _state.CAPTURE[0] is None
                       else contextlib.nullcontext())
            with tape, _swapped(swaps), reading:
                res = run(*unflatten(treedef, ls))
        flat, tdef = flatten(res)
        out_def[:] = [tdef]
        return tuple(flat)
    res = FuncTransform.apply(call, *(leaves[p] for p in pos), *(p for _, _, p in captured), *closed)
    return unflatten(out_def[0], res if isinstance(res, tuple) else (res,))


def _traced_closure(cap, run, args, leaves, grad_kind):
    """A transform inside a compiled trace with no argument requiring grad: eagerly its results
    are differentiable when the function reads outside Tensors requiring grad (closes over a
    model's parameters: ``grad(lambda w: loss(model, w))``), and a trace that returned them
    detached would differ from eager (no ``grad_fn``, no gradient for the parameters). The
    trace cannot swap the closed-over Tensors for the node's backward (their arrays are
    traced already), so such a call breaks the graph: the function runs eagerly, as it
    should. Tensors whose storage this trace made before the transform began (the compiled
    function's intermediate results) count as outside too; those the transform makes do not."""
    before = {id(st) for st in list(cap.created)}

    def outside(t):
        return t._st not in cap.created or id(t._st) in before
    with _closure.reading(True, None, grad_kind, leaves, outside) as reads:
        res = run(*args)
    found = [t for i, t in reads.found.items() if not any(t is leaf for leaf in leaves)]
    if found:
        cap.see_func_closure(tuple(found[0].shape))
    return res


def _modules_of(func):
    """The nn.Modules whose parameters ``func`` reads for sure: ``func`` itself or the owner of
    a bound method, or the ones a transform of it recorded (``vmap(jacrev(model))``)."""
    for m in (func, getattr(func, "__self__", None)):
        if _is_module(m):
            return (m,)
    return getattr(func, "_tracegrad_modules", ())


def _is_module(obj):
    """An nn.Module, told by its parameter store (func sits below nn in the layers: DESIGN 2)."""
    return isinstance(getattr(obj, "_parameters", None), dict) and callable(getattr(obj, "named_parameters", None))


def recorded(transformed, func=None, grad_kind=True):
    """``transformed`` (a function over Tensors returned by a transform of ``func``) made
    differentiable with respect to its Tensor arguments that require grad, the Tensors
    requiring grad it reads from outside, and the parameters of ``func`` when it is an
    nn.Module (see ``differentiable``)."""
    modules = _modules_of(func)

    @functools.wraps(transformed)
    def wrapper(*args, **kwargs):
        return differentiable(lambda *a: transformed(*a, **kwargs), args, modules, grad_kind)
    wrapper._tracegrad_modules = modules
    return wrapper


def check_chunk_size(chunk_size, api):
    """torch.func's check of ``chunk_size``: None or a positive int."""
    if chunk_size is None:
        return
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool):
        raise TypeError(f"{api}: chunk_size should be None or an int, got {type(chunk_size).__name__}")
    if chunk_size <= 0:
        raise ValueError(f"{api}: chunk_size should be None or greater than 0. (got {chunk_size})")
