"""Autograd nodes for the results of a compiled region.

``CompiledFunctionBackward`` (torch.compile's name for the same node) is one node for a whole
region whose results stay differentiable: its backward is the region's VJP, run as one jitted
program on the residuals the forward program returned (the forward is not run again).
``dead_node()`` is what a result gets when the region already ran ``backward()`` through it:
torch frees such a graph, so a second backward raises torch's error.
"""
from __future__ import annotations

import jax.numpy as jnp

from .._tensor.tensor import Tensor
from .._x64 import x64_enter, x64_exit
from ..autograd._graph_impl import MSG_FREED, Node


class CompiledFunctionBackward(Node):
    """One node for a compiled region: ``next_functions`` are the edges of the region's
    differentiable inputs (parameters' AccumulateGrad, the arguments' grad_fns)."""

    __slots__ = ("_bwd", "_pullback", "_avals", "released", "_versions", "_through", "_reach")

    def __init__(self, edges, bwd, pullback, avals, versions=(), through=(), reach=()):
        super().__init__(edges)
        self._bwd, self._pullback, self._avals = bwd, pullback, avals
        self.released = False
        # (version counter, its value after the call, dtype, shape, the results whose graph
        # saved it) of the arguments, results and state tensors the region's ops saved (NOTE [saved versions of a compiled region],
        # region.py); the counters, not the tensors: a result holding its own node is a cycle
        self._versions = versions
        # ((k, outputs whose traced graph went through output k), ...): NOTE [results computed
        # from results] in region.py
        self._through = through
        # per result, the edges (by input position) its traced graph reaches: NOTE [inputs a
        # result reaches] in region.py
        self._reach = reach

    def check_through(self, grads, captures):
        """Called by the engine before this node's hooks: raises where a gradient from one
        result would have to be seen at another result it was computed from (a hook,
        ``retain_grad``, ``autograd.grad``/``backward(inputs=...)`` at that result): the
        region's one node cannot split it out (NOTE [results computed from results])."""
        for k, js in self._through:
            if not any(j < len(grads) and grads[j] is not None for j in js):
                continue
            retained = self._retains_grad and self._retains_grad.get(k)
            if self.tensor_pre_hooks(k) or (retained is not None and retained and retained() is not None) \
                    or (self, k) in captures:
                raise RuntimeError(MSG_THROUGH)

    def num_outputs(self) -> int:
        return len(self._avals)

    def apply(self, grads, create_graph=False):
        if self.released or self._pullback is None:
            # torch.compile's message, plus why it can come without a second backward from one
            # result: every result of the call shares this node, so a backward from one frees
            # it for the others (eager's results have separate graphs)
            raise RuntimeError(MSG_FREED + MSG_SHARED)
        for vc, version, dtype, shape, outs in self._versions:
            # only a backward from a result whose graph saved it fails, as eager's
            if vc[0] != version and any(k < len(grads) and grads[k] is not None for k in outs):
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an "
                    f"inplace operation: [{dtype.name}{list(shape)}] is at version {vc[0]}; "
                    f"expected version {version} instead (saved by CompiledFunctionBackward). Hint: "
                    "write a clone() of it, or write it after the backward.")
        prev = x64_enter()
        try:
            cts = [jnp.zeros(shape, dtype) if g is None else g._value
                   for g, (shape, dtype) in zip(list(grads) + [None] * len(self._avals), self._avals)]
            d_state, d_data = self._bwd(self._pullback, cts)
        finally:
            x64_exit(prev)
        out = [Tensor._make(g) for g in reversed([*d_state, *d_data])]   # the edges' order
        reach = self._reach
        if reach.__class__ is not tuple:    # a CutReach: after the trace that ran bwd above
            reach = reach.resolve()
        if reach:
            # an input no result with a gradient reaches gets none (eager's .grad stays None),
            # not the VJP's zeros; the node's outputs past ``reach`` reach every input
            live = [j for j, g in enumerate(grads) if g is not None]
            n = len(out)
            out = [None if all(j < len(reach) and n - 1 - m not in reach[j] for j in live) else t
                   for m, t in enumerate(out)]
        if create_graph:
            # as torch's compiled backward: the gradients exist and require grad, and a
            # backward through them (double backward) raises; the node keeps this node's edges
            # so that backward reaches it (and raises) instead of finding the inputs unused
            # (each gradient its own output of it: a backward from several of them must not
            # add gradients of different shapes into one slot before reaching the raise)
            node = dead_node(MSG_DOUBLE, self.next_functions)
            for k, t in enumerate(out):
                if t is not None:
                    t._rg, t._gf, t._out_nr = True, node, k
        return out

    def release(self):
        self.released = True
        self._pullback = None
        self._versions = ()


class _Freed(Node):
    __slots__ = ("msg",)

    def apply(self, grads, create_graph=False):
        raise RuntimeError(self.msg)


_Freed.__name__ = _Freed.__qualname__ = "CompiledFunctionBackward"

MSG_KEPT = ("this tensor was stored by a compiled function while it ran; its values are updated on "
            "every call, but its graph exists only inside the compiled program, so there is nothing "
            "to backward through. Store tensor.detach(), or run the function uncompiled "
            "(tracegrad.compile(..., disable=True)) when you need its graph.")


MSG_SHARED = (" (tracegrad.compile: the differentiable results of one call of a compiled function share "
              "one backward node, so a backward from one of them frees the graph of all of them; "
              "backpropagate from all of them at once (torch.autograd.backward([a.sum(), b.sum()])), or pass "
              "retain_graph=True to the first backward.)")


MSG_THROUGH = ("tracegrad.compile: the gradient at a result of a compiled function was asked for (a hook or "
               "retain_grad() on it, autograd.grad or backward(inputs=...) with it as an input) while "
               "backpropagating from another result the function computed from it (return logits, loss): "
               "the compiled function's single backward node cannot give the part of the gradient that "
               "flows through the first result. Take that gradient inside the compiled function, or call "
               "it uncompiled (tracegrad.compile(..., disable=True)).")


MSG_DOUBLE = ("tracegrad.compile: backward through the gradient of a compiled function (double "
              "backward, a gradient taken with create_graph=True) is not supported, as in torch.compile; "
              "run that part eagerly: call the function uncompiled (tracegrad.compile(..., disable=True)) "
              "when you need higher-order gradients through it.")


MSG_RETAINED = ("tracegrad.compile: a backward() inside the compiled function left this result's graph "
                "alive (it passed retain_graph=True, or did not reach the result), so eagerly a backward "
                "through it after the call works; a compiled function that runs backward() inside keeps "
                "no graph for its results after it returns. Run that backward inside the function, or "
                "call the function uncompiled (tracegrad.compile(..., disable=True)).")


# NOTE [results after a backward inside]: a compiled function that runs ``backward()`` inside
# returns results without a graph the caller can backpropagate through (its program holds no
# residuals for them), so a backward from one raises. Which error: the one eager's backward
# would raise where it raises -- a node the inside backward freed ("backward through the graph
# a second time"), a tensor the graph saved and the function wrote in place afterwards (an
# optimizer step after ``loss.backward(retain_graph=True)``: "modified by an inplace
# operation") -- and where eager's backward would work (the graph was retained, or the inside
# backward never reached it), a message saying that the compiled call cannot, instead of
# torch's "Specify retain_graph=True" advice the function had already followed.
def after_backward_message(t) -> str:
    """The message a backward through ``t`` (a traced result that requires grad, made by a
    function that ran ``backward()`` inside) raises after the compiled call: NOTE [results after
    a backward inside]."""
    seen, stack, stale = set(), [t.grad_fn], None
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        if getattr(n, "released", False) or getattr(n, "_released", False) or isinstance(n, _Freed):
            return getattr(n, "msg", MSG_FREED)
        for s in getattr(n, "saved", None) or getattr(n, "_saved", None) or ():
            w = getattr(s, "tensor", None)
            if stale is None and w is not None and w._vc[0] != s.version:
                stale = (f"one of the variables needed for gradient computation has been modified by an "
                         f"inplace operation: [{w.dtype.name}{list(w.shape)}] was written in place later in "
                         f"the compiled call that saved it (saved by {n.name()}). Hint: write a clone() of "
                         "it, or write it after the backward.")
        stack.extend(e[0] for e in n.next_functions if e is not None)
    return stale or MSG_RETAINED


def dead_node(msg=MSG_FREED, edges=()):
    """A node whose backward raises ``msg`` (default: torch's 'backward through the graph a
    second time', for results whose graph the compiled call already consumed); ``edges``: the
    inputs a backward reaching it must find used."""
    n = _Freed(edges)
    n.msg = msg
    return n
