"""``tracegrad.sparse.FloatTensor`` and its siblings: torch's deprecated typed sparse constructors
(``torch.sparse.FloatTensor(indices, values, size)``), still what old programs such as pygcn's
``sparse_mx_to_torch_sparse_tensor`` call."""
from __future__ import annotations

from .._api.sparse_coo import SparseCooTensor, sparse_coo_tensor
from .._ops import dtypes as _dt
from .._ops.warn import warn_once
from .._tensor.factories import zeros
from .._tensor.tensor import Tensor

# torch's deprecation warnings, by the form called; each once per process (TORCH_WARN_ONCE)
_DEPRECATED = "torch.sparse.SparseTensor({}) is deprecated.  Please use torch.sparse_coo_tensor({})."
_FORMS = {"data": ("indices, values, shape, *, device=", "indices, values, shape, dtype=, device="),
          "sizes": ("shape, *, device=", "shape, dtype=, device="), "empty": ("", "(0,), dtype=")}


class LegacySparseType(type):
    """The metaclass of ``tracegrad.sparse.FloatTensor`` & co. ``isinstance(x, FloatTensor)`` is
    True for a sparse COO tensor of that dtype."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, SparseCooTensor) and obj.dtype == cls.dtype

    def __call__(cls, *args, device=None):
        """``(indices, values[, size])``: a sparse COO tensor of ``values`` (their dtype is kept, as
        torch's); ``(*sizes)``: an empty one of the class's dtype; ``()``: size ``(0,)``. Every form
        is deprecated: torch's UserWarning, once per process and form. RuntimeError for indices that
        are not int64; TypeError for data given as a sequence."""
        if args and isinstance(args[0], Tensor):
            if not 2 <= len(args) <= 3:
                raise TypeError(f"{cls.__name__}(): expected (indices, values) or (indices, values, size)")
            indices, values = args[0], args[1]
            if indices.dtype is not _dt.int64:
                raise RuntimeError("indices must be an int64 tensor")
            warn_once(_DEPRECATED.format(*_FORMS["data"]))
            return sparse_coo_tensor(indices, values, *args[2:], device=device)
        if not all(isinstance(s, int) and not isinstance(s, bool) for s in args):
            raise TypeError(f"torch.sparse.SparseTensor(sequence) only accepts sizes.  Please use "
                            f"torch.sparse_coo_tensor() or construct a strided tensor and convert it to "
                            f"sparse via to_sparse (in {cls.__name__})")
        warn_once(_DEPRECATED.format(*_FORMS["sizes" if args else "empty"]))
        size = args or (0,)
        return sparse_coo_tensor(zeros((len(size), 0), dtype=_dt.int64), zeros((0,), dtype=cls.dtype), size,
                                 device=device)


def _legacy_sparse(kind, dtype):
    return LegacySparseType(f"{kind}Tensor", (), {"dtype": dtype, "__module__": "tracegrad.sparse"})


FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor = (
    _legacy_sparse(k, d) for k, d in (("Float", _dt.float32), ("Double", _dt.float64), ("Half", _dt.float16),
                                      ("BFloat16", _dt.bfloat16)))
LongTensor, IntTensor, ShortTensor, CharTensor, ByteTensor = (
    _legacy_sparse(k, d) for k, d in (("Long", _dt.int64), ("Int", _dt.int32), ("Short", _dt.int16),
                                      ("Char", _dt.int8), ("Byte", _dt.uint8)))
