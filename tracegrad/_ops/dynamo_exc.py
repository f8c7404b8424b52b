"""The exception classes of ``torch._dynamo.exc`` that tracegrad raises (re-exported there by
``tracegrad._dynamo``): a program catching ``torch._dynamo.exc.Unsupported`` around a
``fullgraph=True`` call, or ``InvalidBackend`` around ``compile(backend=...)``, catches
tracegrad's. All are RuntimeErrors, as torch's. They live at the op layer because the eager
higher-order ops (``tracegrad.cond``/``while_loop``, the API layer) raise them too, as torch's eager
calls of those ops (which compile them) do; ``_lowering.exc`` re-exports them."""
from __future__ import annotations


class TorchDynamoException(RuntimeError):
    """Mirrors ``torch._dynamo.exc.TorchDynamoException``: the base of compile's errors."""


class Unsupported(TorchDynamoException):
    """Mirrors ``torch._dynamo.exc.Unsupported``: the function does something one compiled
    program cannot do on every call (a graph break), raised with ``fullgraph=True``."""


class UserError(TorchDynamoException):
    """Mirrors ``torch._dynamo.exc.UserError``: the compiled program was misused."""


class InvalidBackend(TorchDynamoException):
    """Mirrors ``torch._dynamo.exc.InvalidBackend``: ``compile`` got a backend name it does not
    know."""

    def __init__(self, name, hint=""):
        self.name = name
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for available "
                         f"backends.{' ' + hint if hint else ''}")


class TorchRuntimeError(TorchDynamoException):
    """Mirrors ``torch._dynamo.exc.TorchRuntimeError``."""


class UncapturedHigherOrderOpError(TorchDynamoException):
    """Mirrors ``torch._dynamo.exc.UncapturedHigherOrderOpError``: a higher-order op
    (``cond``, ``while_loop``) whose branch or body cannot be captured as one subgraph (it
    returns an input or something else than tensors and ints, writes into an input, or raises
    a Python error while it is traced)."""


class InternalTorchDynamoError(TorchDynamoException):
    """Mirrors ``torch._dynamo.exc.InternalTorchDynamoError``."""


class RecompileError(TorchDynamoException):
    """Mirrors ``torch._dynamo.exc.RecompileError``: a compiled function needed a new program
    while ``torch._dynamo.config.error_on_recompile`` was set."""


class BackendCompilerFailed(TorchDynamoException):
    """Mirrors ``torch._dynamo.exc.BackendCompilerFailed``: a user's backend raised while
    compiling a graph (the original error is ``inner_exception`` and ``__cause__``)."""

    def __init__(self, backend_fn, inner_exception, first_useful_frame=None):
        self.backend_name = getattr(backend_fn, "__name__", None) or type(backend_fn).__name__
        self.inner_exception = inner_exception
        super().__init__(f"backend={self.backend_name!r} raised:\n{type(inner_exception).__name__}: "
                         f"{inner_exception}")


__all__ = ["TorchDynamoException", "Unsupported", "UserError", "InvalidBackend", "TorchRuntimeError",
           "UncapturedHigherOrderOpError", "InternalTorchDynamoError", "BackendCompilerFailed", "RecompileError"]
