"""``torch._dynamo.exc``'s classes for the lowering layer and ``tracegrad._dynamo.exc``: defined in
``_ops/dynamo_exc`` (the eager higher-order ops of the API layer raise them too)."""
from .._ops.dynamo_exc import (BackendCompilerFailed, InternalTorchDynamoError, InvalidBackend, RecompileError,
                               TorchDynamoException, TorchRuntimeError, UncapturedHigherOrderOpError, Unsupported,
                               UserError)

__all__ = ["TorchDynamoException", "Unsupported", "UserError", "InvalidBackend", "TorchRuntimeError",
           "UncapturedHigherOrderOpError", "InternalTorchDynamoError", "BackendCompilerFailed", "RecompileError"]
