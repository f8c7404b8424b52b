"""The ``tracegrad.<op>`` functional namespace: torch's free functions, as aliases of the
Tensor methods (``tracegrad.exp(x) is x.exp()``)."""
from __future__ import annotations

from . import tensor_methods as _m

_SAME = ["add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow",
         "atan2", "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "greater",
         "greater_equal", "less", "less_equal", "not_equal", "logical_and", "logical_or",
         "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "round", "clamp", "clip",
         "clamp_min", "clamp_max", "where", "lerp", "addcmul", "addcdiv", "isclose", "allclose",
         "equal", "clone", "sum", "nansum", "mean", "nanmean", "prod", "var", "std", "var_mean",
         "std_mean", "max", "min", "amax", "amin", "argmax", "argmin", "logsumexp", "softmax",
         "log_softmax", "norm", "cumsum", "cumprod", "all", "any", "count_nonzero", "sort",
         "argsort", "topk", "kthvalue", "median", "quantile", "matmul", "mm", "bmm", "mv", "dot", "addmm",
         "outer", "ger", "einsum", "reshape", "flatten", "unflatten", "squeeze", "unsqueeze",
         "transpose", "swapaxes", "swapdims", "t", "permute", "movedim", "moveaxis", "broadcast_to",
         "repeat_interleave", "narrow", "select", "unbind", "split", "chunk", "tensor_split",
         "flip", "fliplr", "flipud", "roll", "tril", "triu", "diag", "diagonal", "trace", "cat",
         "concat", "concatenate", "stack", "hstack", "vstack", "gather", "take_along_dim",
         "scatter", "scatter_add", "index_select", "index_add", "index_put", "masked_fill",
         "masked_select", "nonzero", "argwhere", "negative", "absolute", "arcsin", "arccos",
         "arctan", "fix", "result_dtype"]

g = globals()
for _n in _SAME:
    g[_n] = getattr(_m, _n)
for _n, _f in _m._unaries.items():
    g.setdefault(_n, _f)
subtract, multiply, divide, true_divide = _m.sub, _m.mul, _m.div, _m.div
rsub = _m.rsub
neg = _m._unaries["neg"]


def result_type(tensor1, tensor2):
    """Mirrors ``torch.result_type``."""
    return _m.result_dtype(tensor1, tensor2)


def is_tensor(obj) -> bool:
    """Mirrors ``torch.is_tensor``."""
    from .._tensor.tensor import Tensor
    return isinstance(obj, Tensor)


def is_floating_point(t) -> bool:
    return t.is_floating_point()


def is_inference(input) -> bool:
    """Mirrors ``torch.is_inference``: ``input.is_inference()`` (made inside ``inference_mode``)."""
    return input.is_inference()


def numel(t) -> int:
    return t.numel()


def broadcast_tensors(*tensors):
    """Mirrors ``torch.broadcast_tensors``: views expanded to the common shape."""
    from .._ops.errors import broadcast_shape
    shape = broadcast_shape([t.shape for t in tensors], "broadcast_tensors")
    return tuple(t.expand(*shape) for t in tensors)


def broadcast_shapes(*shapes):
    """Mirrors ``torch.broadcast_shapes``; RuntimeError when the shapes do not broadcast."""
    from .._ops.errors import broadcast_shape
    from .._tensor.tensor import Size
    return Size(broadcast_shape([(s,) if isinstance(s, int) else s for s in shapes], "broadcast_shapes"))


def cdist(x1, x2, p=2.0):
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return diff.norm(p=p, dim=-1)


def meshgrid(*tensors, indexing="ij"):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    n = len(tensors)
    shape = [t.numel() for t in tensors]
    if indexing == "xy" and n >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, t in enumerate(tensors):
        view = [1] * n
        pos = i
        if indexing == "xy" and n >= 2 and i < 2:
            pos = 1 - i
        view[pos] = -1
        out.append(t.reshape(view).expand(*shape))
    return tuple(out)
