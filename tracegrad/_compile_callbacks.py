"""``torch._dynamo.callback`` for tracegrad: functions run when a compile starts and ends.

What ``torch._dynamo.on_compile_start`` / ``on_compile_end`` register; ``compiler.py`` runs
them around each trace of a compiled function (``callback_handler.install_callbacks``).
"""
from __future__ import annotations

import contextlib
import dataclasses
import enum


# NOTE [compile callbacks]: ``torch._dynamo.on_compile_start``/``on_compile_end`` register
# functions torch calls around each compile (dynamo tracing a frame). tracegrad's compile is the
# trace of a program (``CompiledFunction._trace``): the first call of a compiled function runs
# eagerly and compiles nothing, the second traces, a later call traces again only for a new key
# (a recompile). A trace that ends in a graph break still started and ended: both callbacks run
# once for it, and the eager calls after it run none. A trace inside a trace (a compiled function
# called by another) runs none of its own: as torch, only the outermost one counts, so a start is
# always followed by its end, even when the trace raises.
class CallbackTrigger(enum.Enum):
    """Mirrors ``torch._dynamo.callback.CallbackTrigger``: why a compile ran (tracegrad's are all
    ``DYNAMO``, a trace of the compiled function)."""
    DYNAMO = 1
    LAZY_BACKWARD = 2
    TRITON_AUTOTUNING = 3
    CUDAGRAPH_RECORDING = 4


@dataclasses.dataclass
class CallbackArgs:
    """Mirrors ``torch._dynamo.callback.CallbackArgs``: what a compile callback is given --
    ``callback_trigger`` and ``compile_id`` (``"<function>/<program>"``, counted from 0 per
    compiled function here)."""
    callback_trigger: CallbackTrigger
    compile_id: str


class CompilationCallbackHandler:
    """Mirrors ``torch._dynamo.callback.CompilationCallbackHandler``: the start and end callbacks,
    run around each outermost trace (NOTE [compile callbacks])."""

    def __init__(self):
        self.start_callbacks, self.end_callbacks = [], []
        self._pending = 0

    def register_start_callback(self, callback):
        """Adds ``callback(CallbackArgs)`` to run when a trace starts; returns it."""
        self.start_callbacks.append(callback)
        return callback

    def register_end_callback(self, callback):
        """Adds ``callback(CallbackArgs)`` to run when a trace ends; returns it."""
        self.end_callbacks.append(callback)
        return callback

    def remove_start_callback(self, callback):
        """Removes a start callback (ValueError, as ``list.remove``, for one not registered)."""
        self.start_callbacks.remove(callback)

    def remove_end_callback(self, callback):
        """Removes an end callback (ValueError, as ``list.remove``, for one not registered)."""
        self.end_callbacks.remove(callback)

    def run_start_callbacks(self, args):
        """Calls every start callback with ``args``, in registration order."""
        for callback in list(self.start_callbacks):
            callback(args)

    def run_end_callbacks(self, args):
        """Calls every end callback with ``args``, in registration order."""
        for callback in list(self.end_callbacks):
            callback(args)

    @contextlib.contextmanager
    def install_callbacks(self, trigger, compile_id):
        """Runs the start callbacks on entry and the end callbacks on exit (an exception too),
        for the outermost of nested blocks only."""
        args = CallbackArgs(trigger, compile_id)
        self._pending += 1
        try:
            if self._pending == 1:
                self.run_start_callbacks(args)
            yield
        finally:
            try:
                if self._pending == 1:
                    self.run_end_callbacks(args)
            finally:
                self._pending -= 1

    def clear(self):
        """Forgets every callback; RuntimeError while a trace is running them."""
        if self._pending:
            raise RuntimeError("torch._dynamo.callback: cannot clear the compile callbacks while a compile "
                               "is running; clear them after it ends")
        self.start_callbacks.clear()
        self.end_callbacks.clear()


callback_handler = CompilationCallbackHandler()


def on_compile_start(callback):
    """Mirrors ``torch._dynamo.on_compile_start``, a decorator: ``callback(CallbackArgs)`` runs
    when a trace of a compiled function starts (NOTE [compile callbacks]); returns ``callback``."""
    return callback_handler.register_start_callback(callback)


def on_compile_end(callback):
    """Mirrors ``torch._dynamo.on_compile_end``, a decorator: ``callback(CallbackArgs)`` runs when
    a trace ends, a graph break or an error included; returns ``callback``."""
    return callback_handler.register_end_callback(callback)
