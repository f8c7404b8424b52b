"""``Tensor.register_hook`` on a value of a tracegrad.func reverse-mode level (grad, vjp, jacrev).

torch.func runs such a hook on the level's gradient of the tensor (``grad(f)`` of a function
that hooks ``y = x.sin()`` with ``lambda g: g * 2`` doubles what flows back through ``y``).
No tracegrad Node records inside a transform (NOTE [requires_grad inside transforms] in
``_closure``): the tensor's value is JAX's, so the hooks sit in an identity with a custom
VJP that the tensor's storage holds from the first registration on; its backward passes the
cotangent, as a Tensor, through the hooks registered by then (in order; a removed hook no
longer runs), checked as the eager engine checks a hook's result. That backward runs after
the function has returned, so a hook that reads the function's own values (its input, a value
it computed) raises a RuntimeError; torch allows it.

Only what is computed from the tensor after the first registration flows through that
identity, while torch's hook sees every use. A hook registered on a tensor that an op has
already read in this transform, or on a view, is refused with a RuntimeError rather than
silently missing those uses.
"""
from __future__ import annotations

from collections import OrderedDict

import jax

from .._tensor.tensor import Tensor
from .._tensor.hooks import RemovableHandle
from ..autograd.engine import _checked_value
from . import _closure


def register(t, hook):
    """``t.register_hook(hook)`` for ``t`` traced at an open reverse-mode level."""
    reads = _closure.active()
    if t._base is not None:
        raise RuntimeError("register_hook on a view inside a tracegrad.func transform (grad, vjp, jacrev) is not "
                           "supported: register it on the tensor the view was taken from, or on a clone() of "
                           "the view")
    hooks = t._hooks
    if hooks is None:
        if reads is not None and id(t._st) in reads.used:
            raise RuntimeError("register_hook inside a tracegrad.func transform (grad, vjp, jacrev) on a tensor "
                               "an operation has already used: its gradient from that use would bypass the hook. "
                               "Register the hook right after the tensor is made, before using it")
        hooks = t._hooks = OrderedDict()
        st = t._st
        st.array = _through(st.array, hooks)
        st.gen += 1
    h = RemovableHandle(hooks)
    hooks[h.id] = hook
    return h


def _through(value, hooks):
    """``value`` unchanged, with ``hooks`` (read when the gradient arrives) applied to its
    cotangent."""
    @jax.custom_vjp
    def identity(x):
        return x

    def fwd(x):
        return x, None

    def bwd(_, g):
        grad = Tensor._make(g)
        for hook in tuple(hooks.values()):
            try:
                r = hook(grad)
            except jax.errors.UnexpectedTracerError:
                # the gradient is computed after the function has returned; its values are gone
                raise RuntimeError(f"tensor hook {getattr(hook, '__name__', 'hook')!r} registered inside a "
                                   "tracegrad.func transform used a value the transformed function computed (or "
                                   "its input); such a hook may use only its gradient argument and tensors from "
                                   "outside the transform") from None
            if r is not None:
                grad = _checked_value(hook, r, grad)
        return (grad._value,)

    identity.defvjp(fwd, bwd)
    return identity(value)
