"""Tensor methods, elementwise family: arithmetic, comparisons, unary math, clamp/where/lerp/addc*,
and Tensor's arithmetic, comparison and bitwise operators (each registered where it is defined,
``_registry``)."""
from __future__ import annotations

import builtins
import functools

import numpy as np

from ..autograd._dispatch import apply_inplace, apply_op
from ..autograd.function import _no_derivative
from .._ops import dtypes as _dt
from .._ops.elementwise import FLOAT_UNARY, unary_kernel
from .._ops.errors import int_past_64_bits, not_a_tensor, not_self
from .._ops.registry import OPS
from .._ops.warn import warn_once
from .._tensor.convert import check_float_fits
from .._tensor.factories import tensor as _new_tensor
from .._tensor.layout import SparseOperand
from .._tensor.tensor import Tensor
from ._registry import function, inplace_operator, method
from .argcheck import require_bool
from .indexing import nonzero
from .inplace import _check_bound_fits, _check_int_divisor, _concrete, _inplace_unary, check_bool_clamp, check_bound_kinds, copy_, inplace_via_copy
from .promotion import (ADDCDIV_INT, check_sub_bool, DEFAULT_ONE, check_alpha as _check_alpha, check_real_scalars, check_number_fits, check_scalar_factor, check_rounding_mode, _SCALAR_NAME, _Number, _binary, alpha_arg, alpha_first, check_lerp_dtype, check_lerp_end, check_same_dtype, _check_broadcast, _check_operand, _float_dtype, value_first, check_scalar_tensor,
                        check_not_two_numbers, check_operand_kinds, check_tensors, result_dtype)


# ---- arithmetic -------------------------------------------------------------------------
def _wrap_numbers(api, self, other):
    """torch wraps ``add(2, 3)``'s two numbers into 0-dim tensors (int64, the default float
    dtype, bool or the default complex dtype). An ndarray ``other`` is torch's parser TypeError:
    the operators (``t + ndarray``) then defer to numpy, which computes with numpy's promotion
    and hands the result back as a tensor through ``__array_wrap__``, as torch's do."""
    if not isinstance(self, Tensor) and not isinstance(other, Tensor) and isinstance(self, _Number) \
            and isinstance(other, _Number):
        self = _new_tensor(self)
    elif isinstance(self, _Number) and not isinstance(self, np.ndarray) and isinstance(other, Tensor):
        # torch's parser takes a number for ``input`` of these functions (``torch.add(1, t)``,
        # ``torch.mul(2.5, t)``) as a wrapped 0-dim tensor: int64, the default float dtype,
        # bool or complex, which the tensor's dtype outranks within its category
        self = _new_tensor(self)
    if isinstance(other, np.ndarray):
        raise TypeError(f"{api}(): argument 'other' (position 2) must be Tensor, not numpy.ndarray; "
                        f"wrap it with tracegrad.from_numpy(...) or tracegrad.tensor(...)")
    return self, other


@method("add", function=True)
def add(self, other, *rest, alpha=DEFAULT_ONE):
    """Mirrors ``torch.add(input, other, alpha=1, out=None)`` (``out=`` on the function form only, as torch): ``input + alpha * other`` with torch's
    type promotion (and torch's deprecated ``add(alpha, other)``, with its warning). Two numbers
    are wrapped into 0-dim tensors. Autograd: ``AddBackward0``. RuntimeError for a float alpha
    with integral inputs, a complex alpha with real ones, a bool alpha with non-bool results, or
    an ``out`` of a lower category."""
    try:
        other, alpha = alpha_first("add", other, rest, alpha)
        self, other = _wrap_numbers("add", self, other)
        _check_alpha("add", self, other, alpha)
        return _binary("add", self, other, alpha_arg(alpha))
    except SparseOperand as e:   # an operand is sparse COO (NOTE in _tensor/layout.py)
        return e.tensor._sparse_operand(e, "add", self, other, alpha=1 if alpha is None else alpha)


@method("sub", "subtract", function=True)
def sub(self, other, *rest, alpha=DEFAULT_ONE):
    """Mirrors ``torch.sub(input, other, alpha=1, out=None)`` (and the deprecated ``sub(alpha,
    other)``, with torch's warning). RuntimeError when an operand is bool (use logical_xor)."""
    try:
        other, alpha = alpha_first("sub", other, rest, alpha)
        self, other = _wrap_numbers("sub", self, other)
        check_sub_bool(self, other)
        _check_alpha("sub", self, other, alpha)
        return _binary("sub", self, other, alpha_arg(alpha))
    except SparseOperand as e:
        return e.tensor._sparse_operand(e, "sub", self, other, alpha=1 if alpha is None else alpha)


@function("rsub")
def rsub(self, other, alpha=1):
    """Mirrors ``torch.rsub(input, other, alpha=1)``: ``other - alpha * input``. Autograd:
    ``RsubBackward0`` (tensor other) / ``RsubBackward1`` (number). RuntimeError for bools,
    TypeError for alpha=None."""
    check_sub_bool(other, self)
    _check_alpha("rsub", self, other, alpha)
    return _binary("rsub_tensor" if isinstance(other, Tensor) else "rsub", self, other, alpha_arg(alpha))


@method("mul", "multiply", function=True)
def mul(self, other):
    """Mirrors ``torch.mul``. Autograd: ``MulBackward0`` (saves other/self as torch does)."""
    if other is None:
        raise TypeError("mul(): argument 'other' (position 2) must be Tensor, not NoneType")
    self, other = _wrap_numbers("mul", self, other)
    try:
        return _binary("mul", self, other)
    except SparseOperand as e:   # a sparse COO operand (NOTE in _tensor/layout.py)
        return e.tensor._sparse_operand(e, "mul", self, other)


# a rounding_mode given (even None) selects torch's other overload of div, named DivBackward2
_NO_MODE = object()


@method("div", "divide", function=True)
def div(self, other, *, rounding_mode=_NO_MODE):
    """Mirrors ``torch.div(input, other, rounding_mode=None, out=None)``: true division gives the
    default float dtype for integer inputs; ``'trunc'``/``'floor'`` keep the promoted dtype.
    RuntimeError for an ``out`` of a lower category (an integer out for a true division)."""
    op = OPS["div"] if rounding_mode is _NO_MODE else OPS["div_mode"]   # (DivBackward0 / DivBackward2)
    if rounding_mode is _NO_MODE:
        rounding_mode = None
    if rounding_mode not in (None, "trunc", "floor"):
        check_rounding_mode(rounding_mode)
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")
    if rounding_mode is None and isinstance(self, Tensor) and self.is_sparse:
        return type(self).div(self, other)     # torch.div / true_divide(sparse, number): the sparse div
    if isinstance(other, Tensor):
        self, other = _wrap_numbers("div", self, other)    # torch.div(1, t)
    _check_operand(other, "div")
    try:
        if isinstance(other, Tensor) and self._value.shape != other._value.shape:
            _check_broadcast(self, other)
    except SparseOperand as e:   # a sparse divisor: torch's RuntimeError (NOTE in _tensor/layout.py)
        return e.tensor._sparse_operand(e, "div", self, other)
    dt = result_dtype(self, other)
    if rounding_mode is None:
        dt = _float_dtype(dt)
    if rounding_mode is not None and dt.is_complex:
        raise NotImplementedError(f"\"div_{rounding_mode}_cpu\" not implemented for '{_SCALAR_NAME[dt.name]}'; "
                                  "rounding divisions take real tensors")
    if rounding_mode is not None and dt is _dt.bool_:
        raise NotImplementedError(f"\"div_{rounding_mode}_cpu\" not implemented for 'Bool'; convert the tensors with .int()")
    if rounding_mode is not None and dt._cat <= 1:
        _check_int_divisor(other, self)
    st = (("dtype", dt.np),) if op is OPS["div"] else (("dtype", dt.np), ("rounding_mode", rounding_mode))
    return apply_op(op, (self, other), st)


@method("true_divide", function=True)
def true_divide(self, other):
    """Mirrors ``torch.true_divide(input, other)``: ``div`` without a rounding mode (torch's
    true_divide has no ``rounding_mode``: TypeError for one, where div's would round)."""
    return div(self, other)


def _rdiv(self, other):
    # torch: ``number / tensor`` is ``tensor.reciprocal() * number`` (ReciprocalBackward0, MulBackward0)
    _check_operand(other, "div")
    return mul(_unaries["reciprocal"](self), other)


@method("floor_divide", function=True)
def floor_divide(self, other):
    """Mirrors ``torch.floor_divide`` (Python's ``//``): ``div(input, other, rounding_mode="floor")``,
    with torch's promotion. torch has no derivative for it: the result of an input that requires
    grad has a ``NotImplemented`` grad_fn whose backward raises RuntimeError (``div`` with
    ``rounding_mode="floor"`` differentiates to zeros instead)."""
    out = div(self, other, rounding_mode="floor")
    if out.grad_fn is None:
        return out
    # torch's node has an edge to each input that requires grad, and none to the others
    return _no_derivative(out.detach(), tuple(t for t in (self, other) if isinstance(t, Tensor) and t.requires_grad),
                          "floor_divide", "NotImplemented",
                          (RuntimeError, "derivative for aten::floor_divide is not implemented"))


def _refuse_complex(name, self, other):
    """torch's NotImplementedError for a complex remainder/fmod (no ordering of complex numbers)."""
    if isinstance(self, Tensor) and isinstance(other, (Tensor, _Number)):
        dt = result_dtype(self, other)
        if dt.is_complex:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_SCALAR_NAME[dt.name]}'; "
                                      f"{name} takes real tensors")
        if dt is _dt.bool_:   # nor a bool kernel
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'; convert the tensors with .int()")


@method("remainder", function=True)
def remainder(self, other):
    """Mirrors ``torch.remainder`` (Python's ``%``: the sign of the divisor). Autograd:
    ``RemainderBackward0`` (number other) / ``RemainderBackward1`` (tensor)."""
    if not isinstance(self, Tensor) and isinstance(self, _Number):
        if not isinstance(other, Tensor):
            raise TypeError(f"remainder() received an invalid combination of arguments - got "
                            f"({type(self).__name__}, {type(other).__name__}): one of them must be a Tensor")
        self = _new_tensor(self)   # torch's remainder(Scalar self, Tensor other)
    _refuse_complex("remainder", self, other)
    if isinstance(self, Tensor) and result_dtype(self, other)._cat <= 1:
        _check_int_divisor(other, self)
    return _binary("remainder_tensor" if isinstance(other, Tensor) else "remainder", self, other)


@method("fmod", function=True)
def fmod(self, other):
    """Mirrors ``torch.fmod`` (C's fmod: the sign of the dividend). Autograd: ``FmodBackward0``
    (number other) / ``FmodBackward1`` (tensor)."""
    _refuse_complex("fmod", self, other)
    if isinstance(self, Tensor) and result_dtype(self, other)._cat <= 1:
        _check_int_divisor(other, self)
    return _binary("fmod_tensor" if isinstance(other, Tensor) else "fmod", self, other)


@method("pow", function=True)
def pow(self, exponent):
    """Mirrors ``torch.pow``: ``PowBackward0`` (scalar exponent), ``PowBackward1`` (tensor)."""
    check_not_two_numbers("pow", self, exponent)
    if not isinstance(self, Tensor):   # torch.pow(2, t): the Scalar-base overload
        return _rpow(exponent, self)
    _check_operand(exponent, "pow")
    if isinstance(exponent, Tensor) and self._value.shape != exponent._value.shape:
        _check_broadcast(self, exponent)
    dt = result_dtype(self, exponent).np
    if dt == np.bool_ and isinstance(exponent, (bool, np.bool_)):
        # torch's pow by a number: exponent 1 copies self, 0 gives ones (a bool tensor too)
        return self.clone() if exponent else self.new_ones(self.shape)
    if dt == np.bool_:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'; convert the tensors with .int()")
    if check_int_pow(self, exponent):
        return _int_pow_negative(self, exponent)
    if isinstance(exponent, Tensor):
        return apply_op(OPS["pow_tensor"], (self, exponent), (("dtype", dt),))
    return apply_op(OPS["pow"], (self, exponent), (("dtype", dt),))


@method()
def pow_(self, exponent):
    """Mirrors ``torch.Tensor.pow_``; an integer self with negative exponents as :func:`pow`."""
    _check_operand(exponent, "pow_", "exponent", 1)
    if self.dtype is _dt.bool_ and isinstance(exponent, (bool, np.bool_)):   # as pow: self, or ones
        return copy_(self, pow(self, exponent))
    if self.dtype is _dt.bool_ and isinstance(exponent, Tensor) and exponent.dtype is _dt.bool_:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'; pow_ has no bool kernel: convert the "
                                  "tensors with .int() (out of place) first")
    if check_int_pow(self, exponent):
        return copy_(self, _int_pow_negative(self, exponent))
    op = OPS["pow_tensor"] if isinstance(exponent, Tensor) else OPS["pow"]
    return apply_inplace(op, self, (exponent,), (("dtype", result_dtype(self, exponent).np),))


def check_int_pow(base, exponent):
    """For integer ``base ** exponent``: True when some exponent is negative (the caller takes
    ``_int_pow_negative``); RuntimeError, as torch, when that exponent is a number."""
    if result_dtype(base, exponent)._cat != 1:
        return False
    neg = _concrete(exponent)
    if neg is None:
        # a traced exponent (tracegrad.compile) has no values to look at: the composite gives
        # torch's values whatever their signs (XLA's integer pow gives garbage for negative ones)
        return True
    if not (neg < 0).any():
        return False
    if not isinstance(exponent, Tensor):
        big = int_past_64_bits(exponent, "pow")   # the parser's OverflowError comes first in torch
        if big is not None:
            raise big
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return True


def _int_pow_negative(base, exponent):
    """Integer ``base ** exponent`` where some exponents are negative, as torch computes it:
    ``1 ** -n`` is 1, ``(-1) ** -n`` is +-1 by parity, any other base gives 0 (XLA gives
    garbage). Integer results carry no history, so a composite is safe here."""
    # the op itself, not ``pow``: a traced exponent would bring ``pow`` back here
    safe = apply_op(OPS["pow_tensor"], (base, clamp_min(exponent, 0)), (("dtype", result_dtype(base, exponent).np),))
    zero = mul(safe, 0)   # result's shape and dtype
    by_parity = where(ne(remainder(exponent, 2), 0), zero - 1, zero + 1)
    neg_val = where(eq(base, 1), zero + 1, where(eq(base, -1), by_parity, zero))
    return where(lt(exponent, 0), neg_val, safe)


def _rpow(self, base):
    if self.dtype is _dt.bool_ and isinstance(base, (bool, np.bool_)):   # a bool result: no bool kernel
        raise NotImplementedError("\"pow\" not implemented for 'Bool'; convert the tensor with .int()")
    if check_int_pow(base, self):   # an integer base to negative integer powers: 0, 1 or -1, as torch
        return _int_pow_negative(_new_tensor(base), self)
    dt = result_dtype(self, base).np
    return apply_op(OPS["pow_scalar_base"], (base, self), (("dtype", dt),))


@method("atan2", "arctan2", function=True)
def atan2(self, other):
    """Mirrors ``torch.atan2`` (both tensors; integers give the default float dtype)."""
    check_tensors("atan2", self, other)
    dt = _float_dtype(result_dtype(self, other)).np
    return apply_op(OPS["atan2"], (self, other), (("dtype", dt),))


@method("maximum", function=True)
def maximum(self, other):
    """Mirrors ``torch.maximum`` (elementwise, both tensors: TypeError for a number)."""
    check_tensors("maximum", self, other)
    _check_real("maximum", self, other)
    return _binary("maximum", self, other)


@method("minimum", function=True)
def minimum(self, other):
    """Mirrors ``torch.minimum`` (elementwise, both tensors: TypeError for a number)."""
    check_tensors("minimum", self, other)
    _check_real("minimum", self, other)
    return _binary("minimum", self, other)


def _check_real(api, *tensors):
    """RuntimeError, as torch, for ops that order values (maximum, minimum) on complex tensors."""
    if builtins.any(t.dtype.is_complex for t in tensors):
        raise RuntimeError(f"{api} not implemented for complex tensors; compare .abs() or .real instead")


@method("fmax", function=True)
def fmax(self, other):
    """Mirrors ``torch.fmax``: maximum ignoring NaN (both tensors)."""
    check_tensors("fmax", self, other)
    return _binary("fmax", self, other)


@method("fmin", function=True)
def fmin(self, other):
    """Mirrors ``torch.fmin``: minimum ignoring NaN (both tensors)."""
    check_tensors("fmin", self, other)
    return _binary("fmin", self, other)


def _cmp(name):
    def f(self, other):
        if not isinstance(self, Tensor):   # bitwise ops accept a number first; _bitwise checks them
            check_not_two_numbers(name, self, other) if name.startswith("bitwise") else \
                check_tensors(name, self, names=("input",))
        _check_operand(other, name)
        if isinstance(other, Tensor) and self._value.shape != other._value.shape:
            _check_broadcast(self, other)
        dt = result_dtype(self, other)
        if dt._cat == 3 and name in _ORDERED:
            raise NotImplementedError(f'"{name}_cpu" not implemented for complex tensors: ordering comparisons '
                                      "take real inputs (compare .abs() or .real)")
        return apply_op(OPS[name], (self, other), (("dtype", dt.np),))
    f.__name__ = name
    f.__doc__ = f"Mirrors ``torch.{name}``: elementwise, broadcasting; returns a bool tensor."
    return f


_ORDERED = ("lt", "le", "gt", "ge")
eq = method("eq", function=True)(_cmp("eq"))
ne = method("ne", "not_equal", function=True)(_cmp("ne"))
lt = method("lt", "less", function=True)(_cmp("lt"))
le = method("le", "less_equal", function=True)(_cmp("le"))
gt = method("gt", "greater", function=True)(_cmp("gt"))
ge = method("ge", "greater_equal", function=True)(_cmp("ge"))
_logical = {n: _cmp(n) for n in ("logical_and", "logical_or", "logical_xor")}


def _logical_api(name):
    def f(self, other):
        check_tensors(name, self, other)   # the operators (``t & True``) go to _logical directly
        return _logical[name](self, other)
    f.__name__, f.__doc__ = name, f"Mirrors ``torch.{name}``: elementwise on two tensors; a bool tensor."
    return f


logical_and, logical_or, logical_xor = (method(n, function=True)(_logical_api(n)) for n in _logical)


def _bitwise(name):
    f = _cmp(name)

    def g(self, other):
        for v in (self, other):
            if isinstance(v, Tensor) and v.dtype._cat > 1 or isinstance(v, float):
                check_operand_kinds(name, self, other)   # the parser's TypeError before the dtype check
                raise NotImplementedError(f'"{name}_cpu" not implemented for floating-point or complex '
                                          "inputs: bitwise ops take integer or bool tensors")
        if not isinstance(self, Tensor) and isinstance(other, Tensor):
            return f(other, self)   # torch's Scalar-self overload; and, or and xor commute
        return f(self, other)
    g.__name__, g.__doc__ = name, f"Mirrors ``torch.{name}``: integer and bool tensors only."
    return g


bitwise_and, bitwise_or, bitwise_xor = (method(n, function=True)(_bitwise(n)) for n in ("bitwise_and", "bitwise_or", "bitwise_xor"))


def _unary(name):
    op = OPS[name]
    floaty = name in FLOAT_UNARY

    def f(self):
        try:
            dt = self._value.dtype
        except AttributeError:
            raise not_a_tensor(name, self) from None
        if name in _REAL_ONLY and _kind(dt) == "complex":
            if name == "frac":   # torch's kernel has no complex version (floor/ceil/trunc: its own words)
                raise NotImplementedError(f"\"frac_cpu\" not implemented for '{_SCALAR_NAME[self.dtype.name]}'; "
                                          "take frac of .real and .imag apart")
            if name == "sign":   # torch's own words point at sgn (test_sign_complex_assert_raises)
                raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex numbers. "
                                          "Please use torch.sgn instead.")
            if name == "signbit":
                raise NotImplementedError("signbit is not implemented for complex tensors.")
            raise NotImplementedError(f"{name} is not supported for complex inputs")
        if name == "relu" and dt.kind == "c":   # torch's relu is a clamp
            raise NotImplementedError("relu: clamp is not supported for complex types; take .real or .abs() first")
        if (name in _ROUNDING and dt == np.bool_) or (name == "frac" and self.dtype._cat < 2):
            raise NotImplementedError(f"\"{unary_kernel(name)}\" not implemented for '{_SCALAR_NAME[self.dtype.name]}'; "
                                      "convert the tensor with .float()")
        if name == "bitwise_not" and self.dtype._cat > 1:
            raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for '{_SCALAR_NAME[self.dtype.name]}'; "
                                      "bitwise ops take integer or bool tensors")
        if dt == np.bool_:
            if name == "square":             # torch squares a bool tensor as int64
                return f(self.long())
            if name == "neg":
                raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                                   "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
            if name == "relu":
                raise RuntimeError("Boolean inputs not supported for relu; convert the tensor with .float() or .int()")
            if name in ("sign", "sgn"):      # torch: a bool's sign is itself
                return apply_op(OPS["clone"], (self,))
            if name == "abs":
                raise NotImplementedError("\"abs_cpu\" not implemented for 'Bool'; convert the tensor with .int()")
        if floaty and _kind(dt) is None:
            return apply_op(op, (self,), (("dtype", _dt.get_default_dtype().np),))
        return apply_op(op, (self,))
    f.__name__ = name
    f.__doc__ = f"Mirrors ``torch.{name}`` (elementwise). Autograd: ``{op.grad_fn}``."
    return f


@functools.lru_cache(maxsize=None)
def _kind(dt):
    """"float" (numpy's floating types and bfloat16), "complex" or None for a numpy dtype; cached
    per dtype: ``np.issubdtype`` costs ~0.4 us a call, one to three per op (a tanh takes ~6 us)."""
    if np.issubdtype(dt, np.complexfloating):
        return "complex"
    return "float" if np.issubdtype(dt, np.floating) or dt == _dt.bfloat16.np else None


_REAL_ONLY = ("floor", "ceil", "trunc", "frac", "sign", "signbit")
_ROUNDING = ("floor", "ceil", "round", "trunc")   # identities on integers, refused on bool (as torch)
_UNARY_NAMES = ["abs", "neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
                "sin", "cos", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sinh", "cosh", "tanh",
                "sigmoid", "relu",
                "erf", "erfinv", "sign", "floor", "ceil", "round", "trunc", "frac", "reciprocal", "square",
                "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "signbit", "sgn"]
_UNARY_ALIASES = {"neg": ("negative",), "abs": ("absolute",), "asin": ("arcsin",), "acos": ("arccos",),
                  "atan": ("arctan",), "trunc": ("fix",), "asinh": ("arcsinh",), "acosh": ("arccosh",),
                  "atanh": ("arctanh",)}
_NO_INPLACE = ("isnan", "isinf", "isfinite", "signbit", "sgn")   # predicates (and sgn: sgn_ not provided yet)
_unaries = {n: _unary(n) for n in _UNARY_NAMES}
for _name in _UNARY_NAMES:
    if _name != "round":   # round takes decimals: its own definition below
        method(_name, *_UNARY_ALIASES.get(_name, ()), function=True)(_unaries[_name])
    if _name not in _NO_INPLACE and _name != "round":   # torch's aliases have in-place forms too (arcsin_, negative_...)
        method(*(a + "_" for a in (_name,) + _UNARY_ALIASES.get(_name, ())))(_inplace_unary(_name))
_round_in_place = _inplace_unary("round")
_round_decimals_in_place = inplace_via_copy("round")


@method("round", function=True)
def round(self, *, decimals=0):
    """Mirrors ``torch.round(input, *, decimals=0)`` (half to even, as torch). Autograd:
    ``RoundBackward0`` / ``RoundBackward1`` (with decimals); the gradient is zero."""
    try:
        dt = self.dtype
    except AttributeError:   # NOTE [unbound self]
        raise not_self("round", self) from None
    if dt is _dt.bool_:
        raise NotImplementedError("\"round_vml_cpu\" not implemented for 'Bool'; convert the tensor with .float()")
    if type(decimals) is not int and (isinstance(decimals, (bool, float, str)) or not hasattr(decimals, "__index__")
                                      # a Tensor has __index__, but the parser takes only a 0-d integer one
                                      or isinstance(decimals, Tensor) and (decimals.ndim or decimals.dtype._cat != 1)):
        raise TypeError(f"round(): argument 'decimals' must be int, not {type(decimals).__name__}; pass an int")
    if decimals:
        if self.dtype._cat < 2:
            raise NotImplementedError(f"\"round_decimals_cpu\" not implemented for '{_SCALAR_NAME[self.dtype.name]}'; "
                                      "round with decimals takes a floating tensor")
        return apply_op(OPS["round_decimals"], (self,), (("decimals", int(decimals)),))
    return apply_op(OPS["round"], (self,))


@method("round_")
def round_(self, *, decimals=0):
    """Mirrors ``Tensor.round_(*, decimals=0)``: ``round`` written into ``self``."""
    if decimals:
        return _round_decimals_in_place(self, decimals=decimals)   # no in-place op of its own
    return _round_in_place(self)


def _real_bound(bound):
    """A number bound of a floating clamp, as torch reads it: converted to a double, so a complex
    number with no imaginary part is its real part and any other one torch's RuntimeError (not the
    complex-clamp NotImplementedError that an integer input's promotion to complex gives)."""
    if isinstance(bound, (complex, np.complexfloating)):
        if bound.imag != 0:
            raise RuntimeError(f"clamp: value cannot be converted to type double without overflow (the bound "
                               f"{bound} is complex); pass a real number")
        return bound.real
    return bound


@method("clamp", "clip", function=True)
def clamp(self, min=None, max=None):
    """Mirrors ``torch.clamp(input, min=None, max=None)`` with number or tensor bounds.
    RuntimeError when both are None; NotImplementedError for a bool result, except with a
    single tensor bound (as torch: a max/min)."""
    if min is None and max is None:
        if not isinstance(self, Tensor):   # torch's parser sees the input before the bounds
            check_tensors("clamp", self, names=("input",))
        raise RuntimeError("tracegrad.clamp: At least one of 'min' or 'max' must not be None")
    _check_operand(min, "clamp", "min")
    _check_operand(max, "clamp", "max", 3)
    check_bound_kinds("clamp", min, max)
    if isinstance(self, Tensor) and self.dtype.is_floating_point:
        min, max = (_real_bound(b) for b in (min, max))
    dt = result_dtype(self, min, max) if (isinstance(min, Tensor) or isinstance(max, Tensor)) else \
        result_dtype(self, *(v for v in (min, max) if v is not None))
    if dt is _dt.bool_:
        check_bool_clamp("clamp", min, max)
        return clamp_min(self, min) if max is None else clamp_max(self, max)
    if dt._cat == 3 and isinstance(self, Tensor) and self.dtype._cat == 3:
        raise NotImplementedError("clamp is not supported for complex types; clamp .real and .imag apart")
    for bound in (min, max):
        _check_bound_fits(bound, dt, "clamp")   # torch refuses a bound the dtype cannot hold
    op = OPS["clamp_tensor"] if isinstance(min, Tensor) or isinstance(max, Tensor) else OPS["clamp"]
    return apply_op(op, (self, min, max), (("dtype", dt.np),))


@method("clamp_min", function=True)
def clamp_min(self, min):
    """Mirrors ``torch.clamp_min``. Autograd: ``ClampMinBackward0`` (number) / ``ClampMinBackward1``."""
    check_tensors("clamp_min", self, names=("input",))
    if min is None:   # a required bound here (clamp's is optional): torch's parser refuses None
        raise TypeError("clamp_min(): argument 'min' (position 2) must be Tensor or Number, not NoneType; "
                        "pass the lower bound (or use clamp(input, min=..., max=...))")
    _check_operand(min, "clamp_min", "min")
    t = isinstance(min, Tensor)
    if not t and self.dtype is _dt.bool_ and result_dtype(self, min) is _dt.bool_:
        check_bool_clamp("clamp_min", min, None)
    if not t:
        _check_bound_fits(min, result_dtype(self, min), "clamp_min")
    return apply_op(OPS["clamp_min_tensor" if t else "clamp_min"], (self, min), (("dtype", result_dtype(self, min).np),))


@method("clamp_max", function=True)
def clamp_max(self, max):
    """Mirrors ``torch.clamp_max``. Autograd: ``ClampMaxBackward0`` (number) / ``ClampMaxBackward1``."""
    check_tensors("clamp_max", self, names=("input",))
    if max is None:   # a required bound here (clamp's is optional): torch's parser refuses None
        raise TypeError("clamp_max(): argument 'max' (position 2) must be Tensor or Number, not NoneType; "
                        "pass the upper bound (or use clamp(input, min=..., max=...))")
    _check_operand(max, "clamp_max", "max")
    t = isinstance(max, Tensor)
    if not t and self.dtype is _dt.bool_ and result_dtype(self, max) is _dt.bool_:
        check_bool_clamp("clamp_max", None, max)
    if not t:
        _check_bound_fits(max, result_dtype(self, max), "clamp_max")
    return apply_op(OPS["clamp_max_tensor" if t else "clamp_max"], (self, max), (("dtype", result_dtype(self, max).np),))


# where's arguments left out (not an explicit None, which torch's parser refuses)
_ABSENT = type("_Absent", (), {"__repr__": lambda self: "<absent>"})()


@function("where")
def where(condition, input=_ABSENT, other=_ABSENT):
    """Mirrors ``torch.where(condition, input, other)``; ``where(condition)`` is ``nonzero(as_tuple=True)``.
    TypeError, as torch's parser, for only one of input/other or an explicit None."""
    if input is _ABSENT and other is _ABSENT:
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError("where(): argument 'condition' must be Tensor")
    if input is None or other is None or input is _ABSENT or other is _ABSENT:   # both or neither, as torch
        input, other = (None if v is _ABSENT else v for v in (input, other))
        raise TypeError(f"where() received an invalid combination of arguments: input={type(input).__name__}, "
                        f"other={type(other).__name__}; pass both (where(condition, input, other)) or neither")
    if condition.dtype is _dt.uint8:   # deprecated in torch, still accepted with a warning given once per process
        warn_once("where received a uint8 condition tensor. This behavior is deprecated and will be removed in "
                  "a future version of PyTorch. Use a boolean condition instead.")
        condition = condition.bool()
    if condition.dtype is not _dt.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {_SCALAR_NAME[condition.dtype.name]}")
    dt = result_dtype(input, other)
    for v in (input, other):   # a number the result's dtype cannot hold: RuntimeError, as torch
        check_number_fits(v, dt, "where")
        check_float_fits(v, dt, "where", through_float=True)
    return apply_op(OPS["where"], (condition, input, other), (("dtype", dt.np),))


@method("lerp", function=True)
def lerp(self, end, weight):
    """Mirrors ``torch.lerp(input, end, weight)``: ``input + weight * (end - input)``.
    RuntimeError when ``end`` has another dtype (torch does not promote it) or a complex
    ``weight`` meets real tensors."""
    check_lerp_end("lerp", end, weight)
    # a weight with dims must match too; a 0-d weight of another dtype is accepted, as torch
    check_same_dtype("lerp", self, end, weight if isinstance(weight, Tensor) and weight.ndim else None)
    check_lerp_dtype(self)
    dt = result_dtype(self, end)
    check_real_scalars("lerp", dt, weight=weight)
    op = OPS["lerp_tensor"] if isinstance(weight, Tensor) else OPS["lerp"]
    return apply_op(op, (self, end, weight), (("dtype", dt.np),))


@method("addcmul", function=True)
def addcmul(self, tensor1, tensor2, *rest, value=DEFAULT_ONE):
    """Mirrors ``torch.addcmul``: ``input + value * tensor1 * tensor2`` (and the deprecated
    ``addcmul(value, tensor1, tensor2)``, with its warning). RuntimeError for a complex ``value``
    (nonzero imaginary part) with real tensors; NotImplementedError when all three are bool
    (torch has no bool kernel)."""
    tensor1, tensor2, value = value_first("addcmul", tensor1, tensor2, rest, value)
    dt = result_dtype(self, tensor1, tensor2)
    if dt is _dt.bool_:
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'; convert the tensors with "
                                  ".int() or .float() first")
    check_real_scalars("addcmul", dt, value=value)
    check_scalar_factor(value, dt, "addcmul")
    return apply_op(OPS["addcmul"], (self, tensor1, tensor2, value), (("dtype", dt.np),))


@method("addcdiv", function=True)
def addcdiv(self, tensor1, tensor2, *rest, value=DEFAULT_ONE):
    """Mirrors ``torch.addcdiv``: ``input + value * tensor1 / tensor2`` (and the deprecated
    ``addcdiv(value, tensor1, tensor2)``, with its warning). RuntimeError, as torch, when tensor1
    and tensor2 are both integral (torch dropped integer division here)."""
    tensor1, tensor2, value = value_first("addcdiv", tensor1, tensor2, rest, value)
    if all(isinstance(v, Tensor) and v.dtype._cat <= 1 for v in (tensor1, tensor2)):
        raise RuntimeError(ADDCDIV_INT)
    dt = _float_dtype(result_dtype(self, tensor1, tensor2))
    check_real_scalars("addcdiv", dt, value=value)
    return apply_op(OPS["addcdiv"], (self, tensor1, tensor2, value), (("dtype", dt.np),))


@method("isclose", function=True)
def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Mirrors ``torch.isclose``: ``|a - b| <= atol + rtol * |b|`` elementwise, on two tensors.
    RuntimeError for a negative ``rtol``/``atol`` or different dtypes (torch does not promote);
    TypeError for an ``equal_nan`` that is not a bool (torch's parser)."""
    check_tensors("isclose", self, other)
    require_bool("isclose", "equal_nan", equal_nan)
    if self.dtype is not other.dtype:
        raise RuntimeError(f"{_SCALAR_NAME[self.dtype.name]} did not match {_SCALAR_NAME[other.dtype.name]}: "
                           "isclose/allclose compare tensors of one dtype; convert one with .to()")
    for name, v in (("rtol", rtol), ("atol", atol)):
        if not v >= 0:   # NaN too, as torch
            raise RuntimeError(f"isclose(): {name} must be greater than or equal to zero, but got {v}")
    dt = result_dtype(self, other)
    return apply_op(OPS["isclose"], (self, other), (("rtol", rtol), ("atol", atol), ("equal_nan", equal_nan), ("dtype", dt.np)))


@method("allclose", function=True)
def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Mirrors ``torch.allclose``: a Python bool (errors as ``isclose``, named ``allclose``)."""
    check_tensors("allclose", self, other)
    require_bool("allclose", "equal_nan", equal_nan)
    return bool(isclose(self, other, rtol, atol, equal_nan).all())


@method("equal", function=True)
def equal(self, other) -> bool:
    """Mirrors ``torch.equal``: same shape and same values (a Python bool). TypeError for a
    non-tensor argument."""
    check_tensors("equal", self, other)
    if tuple(self.shape) != tuple(other.shape):
        return False
    # flat: torch.equal compares past 64 dims, where all() refuses the 64-bit dim mask
    return bool(eq(self, other).reshape(-1).all())


@method("where")
def _where_method(self, condition, other):
    """Mirrors ``torch.Tensor.where(condition, other)``: ``tracegrad.where(condition, self, other)``."""
    return where(condition, self, other)


# ---- operators --------------------------------------------------------------------------
def _full_like_scalar(s, o):
    return _new_tensor(o, dtype=result_dtype(s, o))


def operator(fn):
    """A binary operator (``tensor <op> other``) as torch's: a TypeError from the op (an operand
    it does not take: a list, a str, None, an ndarray where the op refuses one) becomes
    NotImplemented, so Python tries the other operand: ``[0] * t`` repeats the list through
    ``t.__index__``, ``t / ndarray`` goes through numpy and comes back as a tensor through
    ``__array_wrap__``, and anything else ends in Python's own TypeError."""
    def op(s, o):
        try:
            return fn(s, o)
        except TypeError:
            return NotImplemented
    op.__name__ = fn.__name__
    return op


def reflected(fn):
    """A reflected operator (``other <op> tensor``) that, as torch's, refuses an ndarray on the
    left: ``ndarray * tensor`` is a TypeError (numpy defers to Tensor, ``__array_priority__``);
    numpy scalars are numbers and go through. Other operands as ``operator``."""
    forward = operator(fn)

    def op(s, o):
        return NotImplemented if type(o) is np.ndarray else forward(s, o)
    op.__name__ = fn.__name__
    return op


def _floordiv(s, o):
    return floor_divide(s, o)


method("__add__")(operator(add))
method("__radd__")(reflected(add))
method("__sub__")(operator(sub))
method("__rsub__")(reflected(rsub))
method("__mul__")(operator(mul))
method("__rmul__")(reflected(mul))
method("__truediv__")(operator(div))
# torch's ``__rtruediv__`` is ``self.reciprocal() * other``: ``ndarray / tensor`` multiplies the
# reciprocal by the array (through numpy and ``__array_wrap__``: a tensor), unlike the other
# reflected operators, which refuse an ndarray on the left
method("__rtruediv__")(operator(lambda s, o: s.reciprocal() * o if type(o) is np.ndarray else _rdiv(s, o)))
method("__floordiv__")(operator(_floordiv))
method("__rfloordiv__")(reflected(lambda s, o: floor_divide(_full_like_scalar(s, o), s)))
method("__mod__")(operator(remainder))
method("__rmod__")(reflected(lambda s, o: remainder(_full_like_scalar(s, o), s)))
method("__pow__")(operator(pow))
method("__rpow__")(reflected(_rpow))
method("__neg__")(_unaries["neg"])
@method("__pos__")
def _pos(self):
    # torch's unary + is ``positive``: refused for bool tensors
    if self.dtype is _dt.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported; use the tensor itself")
    return self
method("__abs__")(_unaries["abs"])


@method("__contains__")
def _contains(self, element):
    """``element in t``: whether any element equals ``element`` (a tensor or a number), as
    torch; one comparison, not Python iteration. RuntimeError for anything else."""
    if not isinstance(element, (Tensor,) + _Number):
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                           f"{type(element)}.")
    return bool(eq(self, element).any())


@method("__invert__")
def _invert(self):
    """``~t``: logical_not for bool, bitwise_not for integers; TypeError otherwise, as torch."""
    if self.dtype is _dt.bool_:
        return _unaries["logical_not"](self)
    if self.dtype._cat > 1:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return _unaries["bitwise_not"](self)


def _bitwise_operator(name):
    """``a & b``, ``a | b``, ``a ^ b`` (and reflected): the logical op when the result is bool,
    else the bitwise one (``bool_tensor | int_tensor`` promotes to int64, as torch)."""
    bitwise, logical = METHODS_BITWISE[name], _logical["logical_" + name]

    def op(s, o):
        if s.dtype is _dt.bool_ and (o.dtype is _dt.bool_ if isinstance(o, Tensor) else isinstance(o, bool)):
            return logical(s, o)
        return bitwise(s, o)
    return op


METHODS_BITWISE = {"and": bitwise_and, "or": bitwise_or, "xor": bitwise_xor}
for _n in METHODS_BITWISE:
    method(f"__{_n}__", f"__r{_n}__")(operator(_bitwise_operator(_n)))
    # x &= y is torch's bitwise_and_ (bool tensors included)
    inplace_operator(f"__i{_n}__", f"bitwise_{_n}_")
# ``__hash__`` (by identity) is in Tensor's class body: ``__eq__`` here is elementwise
# as torch, ``tensor == ndarray`` (and ``ndarray == tensor``: numpy defers to Tensor) compares
# elementwise, while ``!=`` with an ndarray falls back to identity
method("__eq__")(lambda s, o: eq(s, o) if isinstance(o, (Tensor,) + _Number) else
                 eq(s, _new_tensor(o)) if type(o) is np.ndarray else NotImplemented)
method("__ne__")(lambda s, o: ne(s, o) if isinstance(o, (Tensor,) + _Number) else NotImplemented)
method("__lt__")(operator(lt))
method("__le__")(operator(le))
method("__gt__")(operator(gt))
method("__ge__")(operator(ge))
