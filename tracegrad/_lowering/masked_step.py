"""A step whose writes are undone when a traced flag is set (NOTE [skipped steps in a trace]).

``run_unless(flag, tensors, step)``: inside a trace, run ``step()`` and then keep the values
``tensors``' storages had before it wherever ``flag`` (a traced boolean) is true.
"""
from __future__ import annotations

import jax.numpy as jnp

from .capture import GraphBreak

# NOTE [skipped steps in a trace]
# ``GradScaler.step(opt)`` skips ``opt.step()`` when the unscaled gradients hold an inf or NaN:
# eagerly it reads the flag on the host (``found_inf.item()``), which inside a trace is a graph
# break, so every call of a compiled mixed-precision step ran eagerly. The program cannot branch
# on the flag in Python, but it can compute the step and keep the old values where the flag is
# set: each storage the step wrote (parameters, their .grad, the optimizer's state tensors: the
# writes are array replacements, so a storage whose array is a new object was written) gets
# ``where(flag, before, after)``. The values, the state dicts and the tensors in them are then
# those of eager after a skipped step or a taken one. Only what the values cannot show differs:
# the version counters of the written tensors move on every call, as after a taken step. The
# caller (``GradScaler.step``) keeps the graph break where more than values would differ: step
# hooks (their Python runs on every call), an optimizer whose first step creates its state or
# rebinds its tensors (eager's skipped step leaves none), a step returning a value.


def run_unless(flag, tensors, step):
    """Run ``step()`` in the current trace, then put back, where the 0-d boolean array ``flag``
    is true, the values the storages of ``tensors`` held before it. Returns ``step()``'s result.
    Raises GraphBreak when the step changed a storage's shape or dtype."""
    before = {}
    for t in tensors:
        st = t._st
        before.setdefault(id(st), (st, st.array))
    out = step()
    for st, old in before.values():
        new = st.array
        if new is old or old is None:
            continue
        if getattr(new, "shape", None) != old.shape or getattr(new, "dtype", None) != old.dtype:
            raise GraphBreak("GradScaler.step: the optimizer step changed a tensor's shape or dtype, which a "
                             "skipped step (inf/NaN gradients) would not; a program cannot choose between them")
        st.array = jnp.where(flag, old, new)
        st.gen += 1
    return out
