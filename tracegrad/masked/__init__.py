"""``tracegrad.masked``: mirrors ``torch.masked``'s masked reductions and normalizations
(``sum``, ``mean``, ``amax``, ``softmax``... with ``mask=``; see ``_ops.py``)."""
from ._ops import (  # noqa: F401
    _canonical_dim, _combine_input_and_mask, _input_mask, _output_mask, _reduction_identity, _where,
    amax, amin, argmax, argmin, cumprod, cumsum, log_softmax, logaddexp, logsumexp, mean, median, norm,
    normalize, prod, softmax, softmin, std, sum, var,
)

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp", "logsumexp",
           "mean", "median", "norm", "normalize", "prod", "softmax", "softmin", "std", "sum", "var"]
