"""Mirrors the ``torch.functional`` module: the tensor functions torch writes in Python
(``einsum``, ``meshgrid``, ``split``, ``stft``, ``unique``...), the same objects as
``tracegrad.<name>``; ``F`` is ``tracegrad.nn.functional``, as in torch (programs write
``import torch.functional as F``)."""
import tracegrad as _tg
from tracegrad import (  # noqa: F401
    atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_shapes, broadcast_tensors, cartesian_prod,
    cdist, chain_matmul, einsum, istft, lu, meshgrid, norm, pca_lowrank, split, stft, svd_lowrank, tensordot, unique,
    unique_consecutive, unravel_index,
)
from tracegrad.nn import functional as F  # noqa: F401

Tensor = _tg.Tensor

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors", "cartesian_prod",
           "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu", "norm", "meshgrid", "split", "stft",
           "tensordot", "unique", "unique_consecutive", "unravel_index", "pca_lowrank", "svd_lowrank"]
