"""Tensor methods and operators, attached to ``Tensor`` (tinygrad keeps op families in
mixins the same way). Each family lives in ``tracegrad/_methods/<family>.py``: it parses torch's
arguments, decides the result dtype with torch's promotion rules, and calls the one dispatch
path with a row of the op table. This module re-exports their names and attaches them.

``tracegrad.<fn>`` functions (``_functions.py``) are thin aliases of these methods.
"""
from __future__ import annotations

from .promotion import result_dtype
from .elementwise import (
    _unaries, absolute, add, addcdiv, addcmul, allclose, arccos, arcsin, arctan, atan2, bitwise_and,
    bitwise_or, bitwise_xor, clamp, clamp_max, clamp_min, clip, div, eq, equal, fix, floor_divide, fmax,
    fmin, fmod, ge, greater, greater_equal, gt, isclose, le, lerp, less, less_equal, logical_and,
    logical_or, logical_xor, lt, maximum, minimum, mul, ne, negative, not_equal, pow, remainder, round,
    rsub, sub, where
)
from .conversion import clone, contiguous, cpu, cuda, is_contiguous, to, type_as
from .reduction import (
    all, amax, amin, any, argmax, argmin, argsort, count_nonzero, cumprod, cumsum, kthvalue,
    log_softmax, logsumexp, max, mean, median, min, nanmean, nanquantile, nansum, norm, prod, quantile,
    return_types, softmax, sort, std, std_mean, sum, topk, var, var_mean
)
from .linalg import addmm, bmm, dot, einsum, ger, matmul, mm, mv, outer
from .shape import (
    broadcast_to, cat, chunk, concat, concatenate, diag, diagonal, expand, expand_as, flatten, flip,
    fliplr, flipud, hstack, moveaxis, movedim, narrow, permute, repeat, repeat_interleave, reshape,
    reshape_as, roll, select, split, squeeze, stack, swapaxes, swapdims, t, tensor_split, trace,
    transpose, tril, triu, unbind, unflatten, unsqueeze, view, view_as, vstack
)
from .indexing import (
    argwhere, gather, getitem, index_add, index_put, index_put_, index_select, masked_fill,
    masked_select, nonzero, scatter, scatter_add, setitem, take_along_dim
)
from .inplace import (
    add_, addcdiv_, addcmul_, bernoulli_, clamp_, copy_, div_, exponential_, fill_, index_add_, lerp_,
    masked_fill_, maximum_, mul_, normal_, pow_, random_, scatter_, scatter_add_, squeeze_, sub_, t_,
    transpose_, uniform_, unsqueeze_, zero_
)
from .register import register_all

register_all()

from . import creation as _creation  # noqa: E402
from .._tensor.tensor import Tensor as _Tensor  # noqa: E402

for _name, _fn in _creation.METHODS.items():
    setattr(_Tensor, _name, _fn)
for _name, _fn in _creation.PROPERTIES.items():
    setattr(_Tensor, _name, property(_fn))
