"""torch's ``_foreach_*`` functions: one op applied to every tensor of a list (torch's
multi-tensor kernels, which optimizers use with ``foreach=True``).

tracegrad has no fused multi-tensor kernel to dispatch to: each function runs the ordinary
per-tensor op (method) on every element, which is what torch's "slow path" does and gives the
same values, dtypes, type promotion, autograd graph and errors as calling the op in a loop.
What is specific to foreach is the argument checking, done here once for all functions:

* the first argument is a list or tuple of Tensors with at least one element;
* a second list of Tensors has as many elements ("Tensor lists must have the same number of
  tensors, got N and M"), a list of numbers as many as there are tensors ("Tensor list must
  have same number of elements as scalar list.");
* a Tensor "scalar" argument is 0-dimensional;
* out-of-place functions return a tuple of new tensors, in-place ones (``_foreach_add_``...)
  the list they were given, changed in place.

``FOREACH`` maps every ``_foreach_*`` name to its function; ``tracegrad/__init__.py`` puts
them on the package (torch's ``torch._foreach_add`` and so on).
"""
from __future__ import annotations

import numbers

from .._tensor.tensor import Tensor
from .._ops.dtypes import can_cast
from .promotion import _SCALAR_NAME, result_dtype

FOREACH: dict = {}


# ---- argument checking ------------------------------------------------------------------------
def _tensor_list(name, tensors, what="self"):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument '{what}' must be a list or tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): expected Tensor as element {i} in argument '{what}', but got "
                            f"{type(t).__name__}")
    if not tensors:
        raise RuntimeError(f"{name}(): Tensor list must have at least one tensor.")
    return tensors


def _is_number(x):
    return isinstance(x, numbers.Number) and not isinstance(x, Tensor)


def _per_tensor(name, tensors, other, what="other", tensor_ok=True, numbers_ok=True):
    """``other`` spread over ``tensors``: one value per tensor (a list of Tensors, a list of
    numbers, a 0-dim Tensor or a number used for all). ``tensor_ok``/``numbers_ok`` say which
    forms the function accepts besides a list of Tensors."""
    n = len(tensors)
    if isinstance(other, Tensor):
        if not tensor_ok:   # torch's argument parser takes a 0-dim Tensor as a number
            if other.ndim != 0 or not numbers_ok:
                raise TypeError(f"{name}(): argument '{what}' must be a number or a list, not a "
                                f"{other.ndim}-dim Tensor")
            return [other.item()] * n
        if other.ndim != 0:
            raise RuntimeError(f"{name}(): scalar tensor expected to be 0 dim but it has {other.ndim} "
                               f"dimensions and {other.numel()} elements.")
        return [other] * n
    if _is_number(other):
        if not numbers_ok:
            raise TypeError(f"{name}(): argument '{what}' must be a list of Tensors, not "
                            f"{type(other).__name__}")
        return [other] * n
    if not isinstance(other, (list, tuple)):
        raise TypeError(f"{name}(): argument '{what}' must be a number, a Tensor or a list, not "
                        f"{type(other).__name__}")
    if other and all(isinstance(o, Tensor) for o in other):
        if len(other) != n:
            raise RuntimeError(f"{name}(): Tensor lists must have the same number of tensors, got "
                               f"{n} and {len(other)}")
        return list(other)
    if other and not all(_is_number(o) for o in other):
        bad = next(i for i, o in enumerate(other) if not (_is_number(o) if _is_number(other[0]) else isinstance(o, Tensor)))
        raise TypeError(f"{name}(): expected the same kind (all Tensors or all numbers) in argument "
                        f"'{what}', but element {bad} is {type(other[bad]).__name__}")
    if not numbers_ok:
        raise TypeError(f"{name}(): argument '{what}' must be a list of Tensors")
    if len(other) != n:
        raise RuntimeError(f"{name}(): Tensor list must have same number of elements as scalar list.")
    return list(other)


def _finish(tensors, results, inplace):
    return tensors if inplace else tuple(results)


def _register(name, fn, doc):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    FOREACH[name] = fn


# ---- families ------------------------------------------------------------------------------------
_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
          "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round",
          "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")


def _unary(op, inplace):
    name = f"_foreach_{op}{'_' if inplace else ''}"
    method = op + ("_" if inplace else "")

    def fn(self):
        tensors = _tensor_list(name, self)
        return _finish(tensors, [getattr(t, method)() for t in tensors], inplace)
    _register(name, fn, f"Mirrors ``torch.{name}(self)``: ``Tensor.{method}`` on every tensor of "
                        f"``self`` ({'in place, returns self' if inplace else 'returns a tuple'}). "
                        "RuntimeError/TypeError as the per-tensor op and for an empty list.")


_CLAMP_FOR = {"maximum": "clamp_min", "minimum": "clamp_max"}
# the CPU kernel torch's tensor-operand maximum/minimum and clamps run (named in its complex refusal)
_ORDER_KERNEL = {"maximum": "maximum_cpu", "clamp_min": "maximum_cpu", "minimum": "minimum_cpu",
                 "clamp_max": "minimum_cpu"}


def _check_order_operands(name, op, inplace, t, o):
    """torch's foreach maximum/minimum/clamp_min/clamp_max with a Tensor operand order values:
    a complex pair is refused as the CPU kernel has none (NotImplementedError naming it), after
    the in-place cast check (a real ``t`` cannot take a complex result: RuntimeError)."""
    if not (t.dtype.is_complex or o.dtype.is_complex):
        return
    dtype = result_dtype(t, o)
    if inplace and not can_cast(dtype, t.dtype):
        raise RuntimeError(f"{name}(): result type {_SCALAR_NAME[dtype.name]} can't be cast to the desired "
                           f"output type {_SCALAR_NAME[t.dtype.name]}")
    raise NotImplementedError(f"{name}(): \"{_ORDER_KERNEL[op]}\" not implemented for "
                              f"'{_SCALAR_NAME[dtype.name]}'; compare .real or .abs() instead")


def _call(t, method, other):
    """``t.<method>(other)``; the in-place forms Tensor lacks (maximum_, minimum_) compute out of
    place and write back, refusing a result dtype ``t`` cannot hold, as torch's in-place ops."""
    if hasattr(t, method):
        return getattr(t, method)(other)
    result = getattr(t, method[:-1])(other)
    if not can_cast(result.dtype, t.dtype):
        raise RuntimeError(f"result type {_SCALAR_NAME[result.dtype.name]} can't be cast to the desired "
                           f"output type {_SCALAR_NAME[t.dtype.name]}")
    return t.copy_(result)


def _binary(op, inplace, alpha_ok=False, tensor_ok=False):
    """add/sub (with ``alpha`` for tensor operands), mul/div, the clamps, maximum/minimum, pow.
    ``tensor_ok``: the function takes a 0-dim Tensor as its scalar (torch: add, mul, div)."""
    name = f"_foreach_{op}{'_' if inplace else ''}"
    method = op + ("_" if inplace else "")
    # torch's maximum/minimum with numbers are the clamps (Tensor.maximum takes Tensors only)
    number_method = _CLAMP_FOR.get(op, op) + ("_" if inplace else "")

    def fn(self, other=None, *, alpha=None, scalar=None, scalars=None, exponent=None):
        # torch's keyword names for the second operand, one per overload
        other = next((o for o in (other, scalar, scalars, exponent) if o is not None), None)
        if isinstance(self, numbers.Number) and op == "pow" and not inplace:
            # _foreach_pow(scalar, exponents): scalar ** each tensor
            return tuple(t.__rpow__(self) for t in _tensor_list(name, other, "exponent"))
        tensors = _tensor_list(name, self)
        others = _per_tensor(name, tensors, other, tensor_ok=tensor_ok)
        if op in _ORDER_KERNEL:
            for t, o in zip(tensors, others):
                if not _is_number(o):
                    _check_order_operands(name, op, inplace, t, o)
        if alpha is None:
            out = [_call(t, number_method if _is_number(o) else method, o) for t, o in zip(tensors, others)]
        elif alpha_ok and not _is_number(others[0]):
            out = [getattr(t, method)(o, alpha=alpha) for t, o in zip(tensors, others)]
        else:
            raise TypeError(f"{name}(): 'alpha' is taken only by _foreach_add/_foreach_sub with a Tensor "
                            "or a list of Tensors")
        return _finish(tensors, out, inplace)
    _register(name, fn, f"Mirrors ``torch.{name}(self, other{', *, alpha=1' if alpha_ok else ''})``: "
                        f"``Tensor.{method}`` on every tensor of ``self`` with ``other`` a number, a "
                        "list of numbers, a list of Tensors (or, for add/mul/div, a 0-dim Tensor) "
                        f"({'in place, returns self' if inplace else 'returns a tuple'}). "
                        "RuntimeError for lists of different lengths or a non-0-dim Tensor; "
                        "TypeError for other kinds of argument.")


def _pointwise(op, inplace):
    """addcmul/addcdiv(self, tensor1, tensor2, value=1 | scalars | 1-D Tensor of scalars)."""
    name = f"_foreach_{op}{'_' if inplace else ''}"
    method = op + ("_" if inplace else "")

    def fn(self, tensor1, tensor2, scalars=None, *, value=None):
        tensors = _tensor_list(name, self)
        t1 = _per_tensor(name, tensors, tensor1, "tensor1", tensor_ok=False, numbers_ok=False)
        t2 = _per_tensor(name, tensors, tensor2, "tensor2", tensor_ok=False, numbers_ok=False)
        if scalars is None:
            values = [1 if value is None else value] * len(tensors)
        elif isinstance(scalars, Tensor):   # torch: a 1-D tensor holding one scalar per tensor
            if scalars.ndim != 1 or scalars.numel() != len(tensors):
                raise RuntimeError(f"{name}(): Expected scalars to be a 1-D tensor with one element per "
                                   f"tensor ({len(tensors)}), got shape {tuple(scalars.shape)}")
            values = scalars.tolist()
        elif _is_number(scalars):
            values = [scalars] * len(tensors)
        else:
            values = _per_tensor(name, tensors, list(scalars), "scalars", tensor_ok=False)
        out = [getattr(t, method)(a, b, value=v) for t, a, b, v in zip(tensors, t1, t2, values)]
        return _finish(tensors, out, inplace)
    _register(name, fn, f"Mirrors ``torch.{name}(self, tensor1, tensor2, value=1)`` (or a list / "
                        f"1-D Tensor of per-tensor scalars): ``Tensor.{method}`` on every triple "
                        f"({'in place, returns self' if inplace else 'returns a tuple'}). "
                        "RuntimeError for lists of different lengths.")


def _lerp(inplace):
    name = f"_foreach_lerp{'_' if inplace else ''}"
    method = "lerp_" if inplace else "lerp"

    def fn(self, tensors1, weight):
        tensors = _tensor_list(name, self)
        ends = _per_tensor(name, tensors, tensors1, "tensors1", tensor_ok=False, numbers_ok=False)
        weights = _per_tensor(name, tensors, weight, "weight")
        return _finish(tensors, [getattr(t, method)(e, w) for t, e, w in zip(tensors, ends, weights)], inplace)
    _register(name, fn, f"Mirrors ``torch.{name}(self, tensors1, weight)``: ``Tensor.{method}`` on "
                        "every pair, ``weight`` a number, a list of numbers or of Tensors, or a 0-dim "
                        "Tensor. RuntimeError for lists of different lengths and integer tensors.")


for _op in _UNARY:
    _unary(_op, False)
    _unary(_op, True)
for _op, _alpha, _tensor in (("add", True, True), ("sub", True, False), ("mul", False, True),
                             ("div", False, True), ("clamp_min", False, False), ("clamp_max", False, False),
                             ("maximum", False, False), ("minimum", False, False), ("pow", False, False)):
    _binary(_op, False, _alpha, _tensor)
    _binary(_op, True, _alpha, _tensor)
for _op in ("addcmul", "addcdiv"):
    _pointwise(_op, False)
    _pointwise(_op, True)
_lerp(False)
_lerp(True)


# ---- the rest: reductions, copies, matmul ---------------------------------------------------------
def _foreach_norm(self, ord=2, dtype=None):
    tensors = _tensor_list("_foreach_norm", self)
    if ord == float("inf") and any(t.numel() == 0 for t in tensors):   # torch's own check, before norm's
        raise RuntimeError("_foreach_norm cannot compute the infinity norm on an empty tensor because the operation "
                           "does not have an identity; drop the empty tensors from the list or use ord=2")
    return tuple(t.norm(ord, dtype=dtype) for t in tensors)


def _foreach_max(self):
    tensors = _tensor_list("_foreach_max", self)
    for t in tensors:
        if t.numel() == 0:
            raise RuntimeError("_foreach_max cannot compute the maximum of an empty tensor; max over "
                               "zero elements is undefined.")
    return tuple(t.max() for t in tensors)


def _foreach_powsum(self, ord=2, dtype=None):
    tensors = _tensor_list("_foreach_powsum", self)
    # the sum of |x|**ord, the p-norm before its root (ord 0 counts the non-zeros, as norm does)
    out = []
    for t in tensors:
        x = t if dtype is None else t.to(dtype)
        out.append((x != 0).sum().to(x.dtype) if ord == 0 else x.abs().pow(ord).sum())
    return tuple(out)


def _foreach_mm(self, mat2):
    tensors = _tensor_list("_foreach_mm", self)
    others = _per_tensor("_foreach_mm", tensors, mat2, "mat2", tensor_ok=False, numbers_ok=False)
    return tuple(a.mm(b) for a, b in zip(tensors, others))


def _foreach_clone(self):
    return tuple(t.clone() for t in _tensor_list("_foreach_clone", self))


def _foreach_zero_(self):
    tensors = _tensor_list("_foreach_zero_", self)
    for t in tensors:
        t.zero_()
    return tensors


def _foreach_copy_(self, src, non_blocking=False):
    tensors = _tensor_list("_foreach_copy_", self)
    srcs = _per_tensor("_foreach_copy_", tensors, src, "src", tensor_ok=False, numbers_ok=False)
    for t, s in zip(tensors, srcs):
        t.copy_(s, non_blocking=non_blocking)
    return tensors


for _fn, _doc in (
        (_foreach_norm, "Mirrors ``torch._foreach_norm(self, ord=2, dtype=None)``: a tuple of 0-dim "
                        "vector norms, one per tensor (computed in ``dtype`` when given). RuntimeError "
                        "for integer tensors."),
        (_foreach_max, "Mirrors ``torch._foreach_max(self)``: a tuple of each tensor's maximum "
                       "(0-dim). RuntimeError for an empty tensor."),
        (_foreach_powsum, "Mirrors ``torch._foreach_powsum(self, ord=2, dtype=None)``: a tuple of "
                          "``sum(|x| ** ord)``, one per tensor."),
        (_foreach_mm, "Mirrors ``torch._foreach_mm(self, mat2)``: a tuple of matrix products. "
                      "RuntimeError for non-matrices or mismatched shapes."),
        (_foreach_clone, "Mirrors ``torch._foreach_clone(self)``: a tuple of copies."),
        (_foreach_zero_, "Mirrors ``torch._foreach_zero_(self)``: zeroes every tensor; returns self."),
        (_foreach_copy_, "Mirrors ``torch._foreach_copy_(self, src, non_blocking=False)``: copies "
                         "each ``src`` tensor into the matching one of ``self`` (broadcasting and "
                         "casting as ``copy_``); returns self.")):
    _register(_fn.__name__, _fn, _doc)
