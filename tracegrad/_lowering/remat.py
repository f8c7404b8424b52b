"""Recomputation that XLA keeps (DESIGN 2.6): checkpointed regions inside a compiled program.

Inside a trace, a checkpoint's recompute is the same computation as its forward; XLA's CSE
would merge the two and keep every activation alive, saving nothing. ``barrier(values)``
passes the recompute's inputs through ``lax.optimization_barrier`` together with the gradient
that reached the node asking for the recompute, so the recompute depends on values XLA cannot
prove equal to the forward's and cannot start before the backward gets there; it also tells
the capture that the program
needs XLA:CPU's ``cse_barrier_expander`` pass off (it strips the barriers otherwise; the
option is per program, never a process-global ``XLA_FLAGS``). Eagerly it does nothing.
"""
from __future__ import annotations

import jax

from .. import _state
from .._tensor.tensor import Tensor

_Tracer = jax.core.Tracer
REMAT_COMPILER_OPTIONS = {"xla_disable_hlo_passes": "cse_barrier_expander"}


def barrier(tensors):
    """``tensors`` (a sequence; non-tensors pass through) with their values behind one
    optimization barrier when traced; the same objects otherwise. The results are new
    tensors with no history (callers detach the recompute's inputs anyway)."""
    idx = [i for i, t in enumerate(tensors) if isinstance(t, Tensor) and isinstance(t._value, _Tracer)]
    if not idx:
        return tuple(tensors)
    cap = _state.CAPTURE[0]
    after = []
    if cap is not None:
        cap.uses_remat = True
        # tie the recompute to the gradient arriving at the node that needs it: without that
        # data dependency XLA may schedule the recompute early, during the forward
        after = [g._value for g in cap.current_grads if isinstance(g, Tensor) and isinstance(g._value, _Tracer)]
    vals = jax.lax.optimization_barrier([tensors[i]._value for i in idx] + after)
    out = list(tensors)
    for i, v in zip(idx, vals):
        t = Tensor._make(v)
        t._rg = tensors[i]._rg
        out[i] = t
    return tuple(out)
