"""Ctrl-C (a Jupyter kernel's interrupt) held back while a program's donated state is in flight.

NOTE [interrupts and donated state]: a compiled step's program (and the fused eager optimizer
step) donates its input buffers: the parameters' and optimizer state's old arrays are deleted
when it runs, and only the Python code after the call puts the new arrays back into their
storages. SIGINT arrives while XLA runs; Python raises the ``KeyboardInterrupt`` at the next
bytecode, right after the program returns, which dropped its outputs: every parameter was left
holding a deleted buffer, and the model trained so far was lost ("Buffer has been deleted or
donated" on the next call or print). torch's C++ kernels also finish before the interrupt is
seen. So between ``hold()`` and ``release()`` SIGINT is only recorded, and ``release`` hands it
to the handler that was installed (Python's, or the kernel's), once the new state is written
back: the loop stops after a complete step, state as after that step.

Cost: two handler swaps per program run in the main thread, 1.3 us measured, through
``_signal`` (the ``signal`` module's wrappers convert handlers to enums: 8 us a swap); nothing
in other threads (they never receive Python's SIGINT) or when SIGINT is not handled in Python
(ignored, or the default action that ends the process). A Ctrl-C during a long program is
seen when it returns, as torch's during a long C++ kernel.
"""
from __future__ import annotations

import _signal     # not ``signal``: see Cost above
import threading

_SIGINT = 2     # the same number on every platform Python runs on

_MAIN = threading.main_thread().ident
_PENDING = []


def _record(signum, frame):
    _PENDING.append((signum, frame))


def hold():
    """Start deferring SIGINT; returns what ``release`` needs (None: nothing was changed, as in
    another thread, inside an outer ``hold``, or when Python does not handle SIGINT)."""
    if threading.get_ident() != _MAIN:
        return None
    prev = _signal.getsignal(_SIGINT)
    if prev is _record or not callable(prev):
        return None
    _signal.signal(_SIGINT, _record)
    return prev


def release(prev):
    """Put the handler ``hold`` replaced back and run it for a SIGINT that came meanwhile
    (Python's default handler raises ``KeyboardInterrupt`` here)."""
    if prev is None:
        return
    _signal.signal(_SIGINT, prev)
    if _PENDING:
        signum, frame = _PENDING[0]
        _PENDING.clear()
        prev(signum, frame)
