"""The ``tracegrad.<op>`` functional namespace: every function the op families register with
``function=True`` or ``@function`` (``_registry.FUNCTIONS``: ``tracegrad.exp is Tensor.exp``),
plus torch's free functions with no Tensor method, registered below. ``__all__`` lists them
all; ``tracegrad/__init__.py`` re-exports each by name."""
from __future__ import annotations

import inspect

from .._ops.registry import OPS
from ..autograd._dispatch import apply_op
from .._ops.errors import broadcast_shape
from .._ops.warn import warn_once
from .._tensor.storage import Storage, TypedStorage
from .._tensor.tensor import Size, Tensor
from . import tensor_methods as _tensor_methods  # noqa: F401  (runs every family's registration)
from ._registry import FUNCTIONS, function
from .argcheck import guard_all, require_float
from .numpy_names import add_numpy_names
from .out_functions import add_out
from .promotion import _SCALAR_NAME, check_tensor_seq, check_tensors, check_same_dtype, function_form_of, result_dtype


@function()
def result_type(tensor1, tensor2):
    """Mirrors ``torch.result_type``: each operand a Tensor or a number (TypeError otherwise)."""
    for v in (tensor1, tensor2):
        if not isinstance(v, (Tensor, int, float, complex)) and type(v).__module__ != "numpy":
            raise TypeError(f"result_type() received an invalid combination of arguments - got "
                            f"({type(tensor1).__name__}, {type(tensor2).__name__}); pass Tensors or numbers")
    return result_dtype(tensor1, tensor2)


@function()
def is_tensor(obj) -> bool:
    """Mirrors ``torch.is_tensor``."""
    return isinstance(obj, Tensor)


@function()
def is_storage(obj) -> bool:
    """Mirrors ``torch.is_storage``: whether ``obj`` is a storage (``untyped_storage()`` or the
    deprecated ``storage()``), not a tensor."""
    return isinstance(obj, (Storage, TypedStorage))


@function()
def is_floating_point(t) -> bool:
    """Mirrors ``torch.is_floating_point``."""
    return t.is_floating_point()


@function()
def is_inference(input) -> bool:
    """Mirrors ``torch.is_inference``: ``input.is_inference()`` (made inside ``inference_mode``)."""
    return input.is_inference()


@function()
def numel(t) -> int:
    """Mirrors ``torch.numel``."""
    return t.numel()


@function()
def broadcast_tensors(*tensors):
    """Mirrors ``torch.broadcast_tensors``: views expanded to the common shape; as torch, a tensor
    that already has the common shape is returned itself (no ``ExpandBackward0`` view)."""
    check_tensor_seq("broadcast_tensors", tensors)
    shape = tuple(broadcast_shape([t.shape for t in tensors], "broadcast_tensors"))
    return tuple(t if tuple(t.shape) == shape else t.expand(shape) for t in tensors)


@function()
def broadcast_shapes(*shapes):
    """Mirrors ``torch.broadcast_shapes`` (ints count as 1-D shapes; None is skipped). Errors as
    torch 2.13: RuntimeError for a non-int shape or two sizes that do not broadcast, ValueError
    for a negative size met where the common size is still 1."""
    shapes = [(s,) if isinstance(s, int) else s for s in shapes if s is not None]
    for s in shapes:
        if isinstance(s, (tuple, list, Size, str)) and not all(isinstance(n, int) for n in s):
            # torch compares the entries with ints (a str) or builds a Size of them: TypeError
            raise TypeError(f"broadcast_shapes(): each shape must hold ints, got {s!r}")
        if not isinstance(s, (tuple, list, Size)) or not all(isinstance(n, int) for n in s):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {s}")
    common = [1] * max((len(s) for s in shapes), default=0)
    for i, s in enumerate(shapes):
        for k in range(1, len(s) + 1):
            n = s[-k]
            if n == common[-k]:
                continue
            if common[-k] == 1:
                if n < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[-k] = n
            elif n != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {n} at {-k}! Mismatching argument "
                                   f"at index {i} had {s}; but expected shape should be broadcastable to {common}")
    return Size(common)


@function()
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Mirrors ``torch.cdist``: p-norm distances between the rows of ``x1 (*, P, M)`` and ``x2
    (*, R, M)``, shape ``(*, P, R)``. ``compute_mode`` is accepted; tracegrad always takes the
    direct difference (torch's matrix-product shortcut only changes rounding). Gradients follow
    torch's cdist formulas: p=1 gives ``sign(diff)`` (0 where the coordinates agree), p=inf
    gives ``sign(diff)`` to every coordinate reaching the maximum (not split between ties).
    RuntimeError when the dtypes differ (torch does not promote), for inputs below 2-D or a
    negative ``p``; ValueError for an unknown ``compute_mode``; NotImplementedError for
    float16/bfloat16."""
    check_tensors("cdist", x1, x2, names=("x1", "x2"))
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode; use one of {list(_CDIST_MODES)}")
    check_same_dtype("cdist", x1, x2)
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.dim()}D")
        if not x.dtype.is_floating_point:   # complex too: torch has no complex kernel
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {_SCALAR_NAME[x.dtype.name]}")
    if x1.dtype.name in ("float16", "bfloat16"):   # torch's CPU kernel: float32/float64 only
        raise NotImplementedError(f"\"cdist\" not implemented for '{_SCALAR_NAME[x1.dtype.name]}'; compute the "
                                  f"distances in float32 (.float())")
    p = require_float("cdist", "p", p, 3)   # torch's float p: a 0-d tensor at most
    if not p >= 0:   # NaN too, as torch
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode == "use_mm_for_euclid_dist_if_necessary" and (x1.shape[-2] > 25 or x2.shape[-2] > 25)))
    if not mm and x1.shape[-1] == x2.shape[-1]:
        # torch's direct kernel: one CdistBackward0 node (its matrix-product path records the product's nodes)
        return apply_op(OPS["cdist"], (x1, x2), (("p", float(p)),))
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 1 or p == float("inf"):
        size = diff * diff.sign().detach()        # |diff| whose gradient is sign(diff), 0 at 0
        if p == 1:
            return size.sum(-1)
        top = size.detach().amax(-1, keepdim=True)
        return top.squeeze(-1) + ((size - size.detach()) * (size.detach() == top)).sum(-1)
    return diff.norm(p=p, dim=-1)


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")




@function()
def meshgrid(*tensors, indexing=None):
    """Mirrors ``torch.meshgrid(*tensors, indexing='ij')``: 0-D/1-D tensors (or one list of
    them) expanded to the grid of their lengths (views; ``'xy'`` swaps the first two dims).
    Without ``indexing``: ``'ij'`` and torch's UserWarning (once per process, as torch) that it
    will be required. RuntimeError for another ``indexing``, no tensors, tensors of different
    dtypes or devices, or an input above 1-D (torch's texts)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        indexing = "ij"
        warn_once("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.")
    if indexing not in ("xy", "ij"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for i, t in enumerate(tensors):   # the TensorList parser's TypeError, before any shape check
        if not isinstance(t, Tensor):
            raise TypeError(f"meshgrid(): expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList; pass at least one tensor")
    for a, b in zip(tensors, tensors[1:]):
        if a.dtype != b.dtype:
            raise RuntimeError(f"meshgrid expects all tensors to have the same dtype (got {a.dtype} and {b.dtype})")
        if a.device != b.device:
            raise RuntimeError(f"meshgrid expects all tensors to have the same device (got {a.device} and {b.device})")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a tensor of "
                               f"shape {list(t.shape)}")
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
        out.append(t.reshape(view).expand(tuple(shape)))
    return tuple(out)


# NOTE [input keyword]: a Tensor method's function form is the method itself (``tracegrad.sum
# is Tensor.sum``'s function), whose first parameter is ``self``; torch's function forms name it
# ``input`` (``torch.sum(input=x, dim=0)``, ``torch.add(input=a, other=b)``). The parameter is
# renamed in the code object, once: a local variable's name decides only keyword binding and
# introspection (the body reads it by index), so the call costs nothing more and ``x.sum()``
# is unchanged.
def _first_parameter_named_input(table):
    for fn in {id(f): f for f in table.values()}.values():
        f = inspect.unwrap(fn)
        code = getattr(f, "__code__", None)
        if code is None or code.co_argcount == 0 or code.co_varnames[0] != "self" or "input" in code.co_varnames:
            continue
        f.__code__ = code.replace(co_varnames=("input",) + code.co_varnames[1:],
                                  co_cellvars=tuple("input" if n == "self" else n for n in code.co_cellvars))


_first_parameter_named_input(FUNCTIONS)
add_numpy_names(FUNCTIONS)   # torch.sum(x, axis=0, keepdims=True): the same objects as Tensor's
for _name in ("addmm", "addbmm", "baddbmm", "addmv", "addr"):   # their deprecated overloads differ
    FUNCTIONS[_name] = function_form_of(_name, FUNCTIONS[_name])
add_out(FUNCTIONS)   # after every family registered: torch.add(a, b, out=c)
guard_all(FUNCTIONS)   # torch's TypeError for an argument of the wrong kind (argcheck.py), on failure only
__all__ = sorted(FUNCTIONS)


def __getattr__(name):
    """``tracegrad._api.functions.<name>`` for every registered function (PEP 562)."""
    try:
        return FUNCTIONS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__():
    return sorted(set(globals()) | set(FUNCTIONS))
