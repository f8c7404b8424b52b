"""torch 2.13's test/autograd/test_node_lifecycle.py, ported in our own words: graph nodes,
the hooks on them and the tensors they save are freed by reference counting as soon as nothing
holds them (and by the cycle collector when a hook captures its own node), for built-in ops and
custom Functions, with and without backward / retain_graph, for shared nodes and for chains.
Each program runs with torch and with tracegrad and records which weak references are dead.
``Tensor._use_count`` (the C++ reference count) has no tracegrad counterpart: a weak reference
to the node plays its part."""
import gc
import weakref

import pytest

import tracegrad

torch = pytest.importorskip("torch")
LIBS = (torch, tracegrad)


class Marker:
    """Something a hook closes over, to watch the hook's lifetime."""


def _functions(lib):
    class Ident(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g

    class Double(lib.autograd.Function):      # saves its input
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2

    class Exp(lib.autograd.Function):         # saves its output
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class Halves(lib.autograd.Function):      # two outputs, one node
        @staticmethod
        def forward(ctx, x):
            return x[:2].clone(), x[2:].clone()

        @staticmethod
        def backward(ctx, g0, g1):
            return lib.cat([g0, g1])
    return Ident, Double, Exp, Halves


def _watch(node):
    """A weak reference that dies with ``node`` (torch's built-in nodes take no weak references:
    it watches a marker that only a hook on the node holds)."""
    marker = Marker()
    node.register_hook(lambda *args: marker and None)
    return weakref.ref(marker)


HOOKS = ("none", "tensor", "tensor captures node", "node", "node captures node")


def _marker_dead(lib, python_node, hook, backward, collect):
    """Build ``b = 2a`` (a built-in node or a custom Function), hang ``hook`` on it, run
    ``backward``, drop every name, then report whether the hook's closure died."""
    _, Double, _, _ = _functions(lib)
    a = lib.ones(4, requires_grad=True)
    b = Double.apply(a) if python_node else a * 2
    marker = Marker()
    ref = weakref.ref(marker)
    node = b.grad_fn
    if hook == "tensor":
        b.register_hook(lambda g: marker and None)
    elif hook == "tensor captures node":
        b.register_hook(lambda g: (node, marker) and None)
    elif hook == "node":
        b.grad_fn.register_hook(lambda *args: marker and None)
    elif hook == "node captures node":
        b.grad_fn.register_hook(lambda *args: (node, marker) and None)
    if backward == "backward":
        b.sum().backward()
    elif backward == "retain_graph":
        b.sum().backward(retain_graph=True)
    del a, b, marker, node
    if collect:
        gc.collect()
    return ref() is None


def test_nodes_and_hooks_freed_by_refcount_or_the_collector():
    # TestNodeLifecycle: every node kind x hook kind x backward state; a hook that captures its
    # own node makes a cycle, which only the collector frees
    def program(lib):
        out = {}
        for python_node in (False, True):
            for hook in HOOKS:
                cycle = "captures" in hook
                for backward in ("none", "backward", "retain_graph"):
                    out[python_node, hook, backward] = _marker_dead(lib, python_node, hook, backward, cycle)
        return out
    theirs, ours = (program(lib) for lib in LIBS)
    assert all(theirs.values())          # (the property the original asserts of torch)
    assert ours == theirs


def test_leaf_shared_and_chained_nodes_are_released():
    # TestLeafNodeLifecycle / TestSharedGradFn / TestChainLifecycle
    def program(lib):
        Ident, Double, _, Halves = _functions(lib)
        out = []
        # a post-accumulate-grad hook goes with its leaf
        marker = Marker()
        ref = weakref.ref(marker)
        a = lib.ones(2, requires_grad=True)
        a.register_post_accumulate_grad_hook(lambda t: marker and None)
        (a * 2).sum().backward()
        del a, marker
        gc.collect()
        out.append(ref() is None)
        # a node with two outputs lives while either output does
        for split in (lambda x: (x * 2).split(2), Halves.apply):
            x = lib.ones(4, requires_grad=True)
            b0, b1 = split(x)
            node = _watch(b0.grad_fn)
            del b0
            alive = node() is not None
            del b1
            out += [alive, node() is None]
            b0, b1 = split(x)
            node = _watch(b0.grad_fn)
            b0.sum().backward(retain_graph=True)
            del b0, b1
            out.append(node() is None)
            # a hook that captures the shared node: a cycle the collector frees
            marker = Marker()
            ref = weakref.ref(marker)
            b0, b1 = split(x)
            shared = b0.grad_fn
            b0.grad_fn.register_hook(lambda *args: (shared, marker) and None)
            del x, b0, b1, shared, marker
            gc.collect()
            out.append(ref() is None)
        # chains: built-in, custom, mixed; every node goes with the last output
        a = lib.ones(2, requires_grad=True)
        b = a * 2
        c = b + 1
        d = c * 3
        refs = [_watch(t.grad_fn) for t in (b, c, d)]
        del b, c, d
        b = Double.apply(a)
        c = Ident.apply(b)
        refs += [_watch(t.grad_fn) for t in (b, c)]
        del b, c
        b = a * 2
        c = Ident.apply(b)
        d = c + 1
        refs += [_watch(t.grad_fn) for t in (b, c, d)]
        del b, c, d
        out.append([r() is None for r in refs])
        # deep chains are freed without recursion errors
        for python_chain in (False, True):
            x = lib.ones(2, requires_grad=True)
            first = None
            for _ in range(1500):
                x = Ident.apply(x) if python_chain else x + 1
                first = first or _watch(x.grad_fn)
            del x
            out.append(first() is None)
        return out
    theirs, ours = (program(lib) for lib in LIBS)
    assert ours == theirs


def test_saved_tensors_live_exactly_as_long_as_their_graph():
    # TestSavedVariableLifecycle: a saved input lives until the graph goes (or backward frees it;
    # retain_graph keeps it); a saved output does not keep itself alive
    def program(lib):
        _, Double, Exp, _ = _functions(lib)
        out = []
        square = (lambda b: b ** 2, lambda b: Double.apply(b))
        for make in square:
            for backward in ("none", "backward", "retain_graph"):
                a = lib.ones(2, requires_grad=True)
                b = a + 1
                ref = weakref.ref(b)
                c = make(b).sum()
                del b
                row = [ref() is not None]
                if backward != "none":
                    c.backward(retain_graph=backward == "retain_graph")
                    row.append(ref() is not None)
                del c
                row.append(ref() is not None)
                out.append(row)
        for make in (lambda x: x.exp(), Exp.apply):
            for backward in (False, True):
                a = lib.ones(2, requires_grad=True)
                b = make(a)
                ref = weakref.ref(b)
                if backward:
                    b.sum().backward()
                del b
                out.append(ref() is None)
        return out
    theirs, ours = (program(lib) for lib in LIBS)
    assert ours == theirs
