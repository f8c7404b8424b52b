"""Process-wide state that ``tracegrad.compile`` must see (layer L0: imports nothing).

``CAPTURE[0]`` is the region capture running right now (a ``_lowering.capture.Capture``) or
None. Lower layers cannot import ``_lowering``, so they report what a trace must know through
the few functions here; each is called only when ``CAPTURE[0] is not None``, so eager code pays
one list read at each site.

``STRUCTURE[0]`` counts changes a compiled program cannot see in tensor values: hooks added
or removed, modules' parameters/buffers/submodules rebound, ``requires_grad_`` flips. A
compiled call compares it with the count at its trace and re-traces when it moved (one int
compare per call instead of walking every module). ``train()``/``eval()`` flips back and forth
in every training loop, so modules' ``training`` flags are guarded one by one instead.
"""
from __future__ import annotations

CAPTURE: list = [None]
STRUCTURE: list = [0]


def bump_structure() -> None:
    """Something a compiled program baked in (hooks, module layout, modes) changed."""
    STRUCTURE[0] += 1


def note_hook(kind: str, fn) -> None:
    """A user hook is about to run inside a capture: report it (the capture decides whether it
    may be traced or the call must run eagerly so its Python side effects happen every call)."""
    cap = CAPTURE[0]
    if cap is not None:
        cap.on_hook(kind, fn)
