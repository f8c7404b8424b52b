"""``tracegrad.masked``: mirrors ``torch.masked``'s masked reductions and normalizations
(``sum``, ``mean``, ``amax``, ``softmax``... with ``mask=``; see ``_ops.py``) and the prototype
``MaskedTensor`` (``maskedtensor.py``)."""
from ._ops import (  # noqa: F401
    _canonical_dim, _combine_input_and_mask, _input_mask, _output_mask, _reduction_identity, _where,
    amax, amin, argmax, argmin, cumprod, cumsum, log_softmax, logaddexp, logsumexp, mean, median, norm,
    normalize, prod, softmax, softmin, std, sum, var,
)
from .maskedtensor import MaskedTensor, as_masked_tensor, is_masked_tensor, masked_tensor  # noqa: F401

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp", "logsumexp",
           "mean", "median", "norm", "normalize", "prod", "softmax", "softmin", "std", "sum", "var",
           "MaskedTensor", "as_masked_tensor", "is_masked_tensor", "masked_tensor"]
