"""Mirrors ``torch.nn.modules.batchnorm``: the batch-norm layers under torch's file name
(``from torch.nn.modules.batchnorm import _BatchNorm`` is how much user code finds them)."""
from .layers_more import SyncBatchNorm  # noqa: F401
from .lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, _LazyNormBase  # noqa: F401
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm, _NormBase  # noqa: F401

__all__ = ["BatchNorm1d", "LazyBatchNorm1d", "BatchNorm2d", "LazyBatchNorm2d", "BatchNorm3d", "LazyBatchNorm3d",
           "SyncBatchNorm"]
