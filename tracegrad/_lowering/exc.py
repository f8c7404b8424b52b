"""``torch._dynamo.exc``'s classes for the lowering layer and ``tracegrad._dynamo.exc``: defined in
``_ops/dynamo_exc`` (the eager higher-order ops of the API layer raise them too)."""
from .._ops.dynamo_exc import *  # noqa: F401,F403
from .._ops.dynamo_exc import __all__  # noqa: F401
