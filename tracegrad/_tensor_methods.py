"""Tensor methods and operators, attached to ``Tensor`` (tinygrad keeps op families in
mixins the same way). Each method parses torch's arguments, decides the result dtype with
torch's promotion rules, and calls the one dispatch path with a row of the op table.

``tracegrad.<fn>`` functions (``_functions.py``) are thin aliases of these methods.
"""
from __future__ import annotations

import builtins
import collections
import numbers

import numpy as np

from ._dispatch import apply_inplace, apply_op
from ._ops import dtypes as _dt
from ._ops.elementwise import FLOAT_UNARY
from ._ops.registry import OPS
from ._tensor import Size, Tensor, _JaxTracer, _wrap_dim

_Number = (int, float, bool, complex, np.number, np.bool_)


def _ret_type(name, fields=("values", "indices")):
    return collections.namedtuple(name, fields)


return_types = type("return_types", (), {n: _ret_type(n) for n in (
    "max", "min", "sort", "topk", "kthvalue", "median", "mode", "cummax", "cummin")})


# ---- promotion --------------------------------------------------------------------------
def result_dtype(*xs) -> _dt.dtype:
    """torch.result_type over tensors and Python scalars."""
    dim, zero, scal = [], [], []
    for x in xs:
        if isinstance(x, Tensor):
            (dim if x._value.ndim else zero).append(x.dtype)
        elif x is not None:
            scal.append(x)
    return _dt.result_type(dim, zero, scal)


# torch's ScalarType names (``Long``) and C++ type names (``long int``) used in its messages
_SCALAR_NAME = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
_CPP_NAME = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
             "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
             "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
             "complex128": "c10::complex<double>"}


def _check_operand(x, name):
    if not isinstance(x, (Tensor,) + _Number) and x is not None:
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not {type(x).__name__}")


def _check_broadcast(*xs):
    """RuntimeError with torch's message when tensor shapes do not broadcast."""
    shapes = [x._value.shape for x in xs if isinstance(x, Tensor)]
    out = None
    for s in shapes:
        if out is None or s == out:
            out = s if out is None else out
            continue
        n = builtins.max(len(out), len(s))
        a, b = (1,) * (n - len(out)) + tuple(out), (1,) * (n - len(s)) + tuple(s)
        for i in reversed(range(n)):     # torch reports the right-most mismatch
            p, q = a[i], b[i]
            if p != q and p != 1 and q != 1:
                raise RuntimeError(f"The size of tensor a ({p}) must match the size of tensor b ({q}) at "
                                   f"non-singleton dimension {i}")
        out = tuple(q if p == 1 else p for p, q in zip(a, b))


_FLOAT_NP = frozenset(np.dtype(n) for n in ("float16", "float32", "float64")) | {_dt.bfloat16.np}


def _binary(opname, a, b, *extra):
    tb = type(b)
    if (tb is float or tb is int) and isinstance(a, Tensor) and a._value.dtype in _FLOAT_NP:
        # fast path: a floating tensor with a Python number keeps the tensor's dtype
        return apply_op(OPS[opname], (a, b, *extra), (("dtype", a._value.dtype),))
    _check_operand(b, opname)
    if isinstance(b, Tensor) and a._value.shape != b._value.shape:
        _check_broadcast(a, b)
    if type(a) is tb and a._value.dtype == b._value.dtype:
        dt = a._value.dtype
    else:
        dt = result_dtype(a, b).np
    return apply_op(OPS[opname], (a, b, *extra), (("dtype", dt),))


def _float_dtype(dt):
    return dt if (dt.is_floating_point or dt.is_complex) else _dt.get_default_dtype()


# ---- arithmetic -------------------------------------------------------------------------
def add(self, other, *, alpha=None):
    """Mirrors ``torch.add(input, other, alpha=1)``: ``input + alpha * other`` with torch's
    type promotion. Autograd: ``AddBackward0``."""
    return _binary("add", self, other, None if alpha == 1 else alpha)


def sub(self, other, *, alpha=None):
    """Mirrors ``torch.sub(input, other, alpha=1)``. RuntimeError on bool tensors (use logical_xor)."""
    if isinstance(self, Tensor) and self.dtype is _dt.bool_ and (not isinstance(other, Tensor) or other.dtype is _dt.bool_):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    return _binary("sub", self, other, None if alpha == 1 else alpha)


def rsub(self, other, alpha=None):
    """Mirrors ``torch.rsub(input, other, alpha=1)``: ``other - alpha * input``. Autograd:
    ``RsubBackward0`` (tensor other) / ``RsubBackward1`` (number)."""
    return _binary("rsub_tensor" if isinstance(other, Tensor) else "rsub", self, other, None if alpha == 1 else alpha)


def mul(self, other):
    """Mirrors ``torch.mul``. Autograd: ``MulBackward0`` (saves other/self as torch does)."""
    return _binary("mul", self, other)


def div(self, other, *, rounding_mode=None):
    """Mirrors ``torch.div(input, other, rounding_mode=None)``: true division gives the default
    float dtype for integer inputs; ``'trunc'``/``'floor'`` keep the promoted dtype."""
    if rounding_mode not in (None, "trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")
    _check_operand(other, "div")
    if isinstance(other, Tensor) and self._value.shape != other._value.shape:
        _check_broadcast(self, other)
    dt = result_dtype(self, other)
    if rounding_mode is None:
        dt = _float_dtype(dt)
    st = (("dtype", dt.np),) if rounding_mode is None else (("dtype", dt.np), ("rounding_mode", rounding_mode))
    return apply_op(OPS["div"], (self, other), st)


def _rdiv(self, other):
    # torch: ``number / tensor`` is ``tensor.reciprocal() * number`` (ReciprocalBackward0, MulBackward0)
    _check_operand(other, "div")
    return mul(_unaries["reciprocal"](self), other)


def floor_divide(self, other):
    return div(self, other, rounding_mode="floor")


def remainder(self, other):
    """Mirrors ``torch.remainder`` (Python's ``%``: the sign of the divisor). Autograd:
    ``RemainderBackward0`` (number other) / ``RemainderBackward1`` (tensor)."""
    return _binary("remainder_tensor" if isinstance(other, Tensor) else "remainder", self, other)


def fmod(self, other):
    """Mirrors ``torch.fmod`` (C's fmod: the sign of the dividend). Autograd: ``FmodBackward0``
    (number other) / ``FmodBackward1`` (tensor)."""
    return _binary("fmod_tensor" if isinstance(other, Tensor) else "fmod", self, other)


def pow(self, exponent):
    """Mirrors ``torch.pow``: ``PowBackward0`` (scalar exponent), ``PowBackward1`` (tensor)."""
    _check_operand(exponent, "pow")
    if isinstance(exponent, Tensor) and self._value.shape != exponent._value.shape:
        _check_broadcast(self, exponent)
    dt = result_dtype(self, exponent).np
    if isinstance(exponent, Tensor):
        return apply_op(OPS["pow_tensor"], (self, exponent), (("dtype", dt),))
    return apply_op(OPS["pow"], (self, exponent), (("dtype", dt),))


def _rpow(self, base):
    dt = result_dtype(self, base).np
    return apply_op(OPS["pow_scalar_base"], (base, self), (("dtype", dt),))


def atan2(self, other):
    dt = _float_dtype(result_dtype(self, other)).np
    return apply_op(OPS["atan2"], (self, other), (("dtype", dt),))


def maximum(self, other):
    """Mirrors ``torch.maximum`` (elementwise, both tensors)."""
    return _binary("maximum", self, other)


def minimum(self, other):
    """Mirrors ``torch.minimum`` (elementwise, both tensors)."""
    return _binary("minimum", self, other)


def fmax(self, other):
    return _binary("fmax", self, other)


def fmin(self, other):
    return _binary("fmin", self, other)


def _cmp(name):
    def f(self, other):
        _check_operand(other, name)
        if isinstance(other, Tensor) and self._value.shape != other._value.shape:
            _check_broadcast(self, other)
        return apply_op(OPS[name], (self, other), (("dtype", result_dtype(self, other).np),))
    f.__name__ = name
    f.__doc__ = f"Mirrors ``torch.{name}``: elementwise, broadcasting; returns a bool tensor."
    return f


eq, ne, lt, le, gt, ge = (_cmp(n) for n in ("eq", "ne", "lt", "le", "gt", "ge"))
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
logical_and, logical_or, logical_xor = (_cmp(n) for n in ("logical_and", "logical_or", "logical_xor"))
bitwise_and, bitwise_or, bitwise_xor = (_cmp(n) for n in ("bitwise_and", "bitwise_or", "bitwise_xor"))


def _unary(name):
    op = OPS[name]
    floaty = name in FLOAT_UNARY

    def f(self):
        dt = self._value.dtype
        if name == "neg" and dt == np.bool_:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                               "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
        if floaty and not (np.issubdtype(dt, np.floating) or dt == _dt.bfloat16.np or np.issubdtype(dt, np.complexfloating)):
            return apply_op(op, (self,), (("dtype", _dt.get_default_dtype().np),))
        return apply_op(op, (self,))
    f.__name__ = name
    f.__doc__ = f"Mirrors ``torch.{name}`` (elementwise). Autograd: ``{op.grad_fn}``."
    return f


_UNARY_NAMES = ["abs", "neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
                "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "relu",
                "erf", "erfinv", "sign", "floor", "ceil", "round", "trunc", "frac", "reciprocal", "square",
                "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "signbit", "sgn"]
_unaries = {n: _unary(n) for n in _UNARY_NAMES}
negative, absolute, arcsin, arccos, arctan = _unaries["neg"], _unaries["abs"], _unaries["asin"], _unaries["acos"], _unaries["atan"]
fix = _unaries["trunc"]


def round(self, decimals=0):
    """Mirrors ``torch.round(input, *, decimals=0)`` (half to even, as torch). Autograd:
    ``RoundBackward0`` / ``RoundBackward1`` (with decimals); the gradient is zero."""
    if decimals:
        return apply_op(OPS["round_decimals"], (self,), (("decimals", int(decimals)),))
    return apply_op(OPS["round"], (self,))


def clamp(self, min=None, max=None):
    """Mirrors ``torch.clamp(input, min=None, max=None)`` with number or tensor bounds.
    RuntimeError when both are None."""
    if min is None and max is None:
        raise RuntimeError("tracegrad.clamp: At least one of 'min' or 'max' must not be None")
    dt = result_dtype(self, min, max) if (isinstance(min, Tensor) or isinstance(max, Tensor)) else \
        result_dtype(self, *(v for v in (min, max) if v is not None))
    op = OPS["clamp_tensor"] if isinstance(min, Tensor) or isinstance(max, Tensor) else OPS["clamp"]
    return apply_op(op, (self, min, max), (("dtype", dt.np),))


clip = clamp


def clamp_min(self, min):
    """Mirrors ``torch.clamp_min``. Autograd: ``ClampMinBackward0`` (number) / ``ClampMinBackward1``."""
    t = isinstance(min, Tensor)
    return apply_op(OPS["clamp_min_tensor" if t else "clamp_min"], (self, min), (("dtype", result_dtype(self, min).np),))


def clamp_max(self, max):
    """Mirrors ``torch.clamp_max``. Autograd: ``ClampMaxBackward0`` (number) / ``ClampMaxBackward1``."""
    t = isinstance(max, Tensor)
    return apply_op(OPS["clamp_max_tensor" if t else "clamp_max"], (self, max), (("dtype", result_dtype(self, max).np),))


def where(condition, input=None, other=None):
    """Mirrors ``torch.where(condition, input, other)``; ``where(condition)`` is ``nonzero(as_tuple=True)``."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError("where(): argument 'condition' must be Tensor")
    if condition.dtype is not _dt.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {_SCALAR_NAME[condition.dtype.name]}")
    dt = result_dtype(input, other)
    return apply_op(OPS["where"], (condition, input, other), (("dtype", dt.np),))


def lerp(self, end, weight):
    """Mirrors ``torch.lerp(input, end, weight)``: ``input + weight * (end - input)``."""
    dt = result_dtype(self, end)
    op = OPS["lerp_tensor"] if isinstance(weight, Tensor) else OPS["lerp"]
    return apply_op(op, (self, end, weight), (("dtype", dt.np),))


def addcmul(self, tensor1, tensor2, *, value=1):
    """Mirrors ``torch.addcmul``: ``input + value * tensor1 * tensor2``."""
    dt = result_dtype(self, tensor1, tensor2)
    return apply_op(OPS["addcmul"], (self, tensor1, tensor2, value), (("dtype", dt.np),))


def addcdiv(self, tensor1, tensor2, *, value=1):
    """Mirrors ``torch.addcdiv``: ``input + value * tensor1 / tensor2``."""
    dt = _float_dtype(result_dtype(self, tensor1, tensor2))
    return apply_op(OPS["addcdiv"], (self, tensor1, tensor2, value), (("dtype", dt.np),))


def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Mirrors ``torch.isclose``: ``|a - b| <= atol + rtol * |b|`` elementwise."""
    dt = result_dtype(self, other)
    return apply_op(OPS["isclose"], (self, other), (("rtol", rtol), ("atol", atol), ("equal_nan", equal_nan), ("dtype", dt.np)))


def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Mirrors ``torch.allclose``: a Python bool."""
    return bool(isclose(self, other, rtol, atol, equal_nan).all())


def equal(self, other) -> bool:
    """Mirrors ``torch.equal``: same shape and same values (a Python bool)."""
    if tuple(self.shape) != tuple(other.shape):
        return False
    return bool(eq(self, other).all())


# ---- dtype and device -------------------------------------------------------------------
def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False, memory_format=None):
    """Mirrors ``torch.Tensor.to``: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``,
    ``to(other)``. Returns ``self`` when nothing changes (unless ``copy=True``).
    Autograd: ``ToCopyBackward0``."""
    from ._device import device as _device
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (str, _device)) and not (isinstance(a, str) and (a in _dt.ALIASES or a.replace("torch.", "") in _dt._BY_NAME)):
            device = a
        elif a is not None:
            dtype = a
    out = self
    if dtype is not None:
        d = _dt.to_dtype(dtype)
        if d is not self.dtype or copy:
            if d.is_floating_point or d.is_complex or not self._rg:
                out = apply_op(OPS["to_copy"], (self,), (("dtype", d.np),))
            else:   # an integer/bool result is not differentiable: no history (as torch)
                from .autograd.grad_mode import no_grad
                with no_grad():
                    out = apply_op(OPS["to_copy"], (self,), (("dtype", d.np),))
    if device is not None:
        dev = _device(device)
        if dev != self.device:
            out = _move(out, dev)
    return out


def _move(t, dev):
    import jax
    jdev = dev.jax_device()
    arr = jax.device_put(t._value, jdev)
    res = Tensor._make(arr)
    if t.requires_grad and _grad_on():
        # device moves are identities for autograd: route the grad back with an alias op
        res = apply_op(OPS["clone"], (t,))
        res._st.array = arr
    return res


def _grad_on():
    from .autograd.grad_mode import STATE
    return STATE[0]


def type_as(self, other):
    return to(self, other.dtype)


def _cast(d):
    def f(self, memory_format=None):
        return to(self, d)
    f.__doc__ = f"Mirrors ``torch.Tensor.{d.name}``-style casts: ``self.to({d!r})``."
    return f


def cpu(self, memory_format=None):
    """Mirrors ``torch.Tensor.cpu``."""
    return to(self, "cpu")


def cuda(self, device=None, non_blocking=False, memory_format=None):
    """Mirrors ``torch.Tensor.cuda``: RuntimeError where JAX sees no GPU."""
    from ._device import device as _device
    return to(self, _device("cuda", device if isinstance(device, int) else None) if not isinstance(device, (str, _device)) else device)


def clone(self, *, memory_format=None):
    """Mirrors ``torch.clone``: a copy with its own storage. Autograd: ``CloneBackward0``."""
    return apply_op(OPS["clone"], (self,))


def contiguous(self, memory_format=None):
    """Mirrors ``torch.Tensor.contiguous``: self when already contiguous, else a clone."""
    return self if is_contiguous(self) else clone(self)


def is_contiguous(self, memory_format=None) -> bool:
    """Mirrors ``torch.Tensor.is_contiguous``: elements sit at consecutive storage positions in
    row-major order (worked out from the view chain, since JAX arrays have no strides)."""
    from ._tensor import chain_is_contiguous
    return chain_is_contiguous(self)


# ---- reductions -------------------------------------------------------------------------
def _dims(dim, ndim):
    if dim is None:
        return None
    if isinstance(dim, (list, tuple, Size)):
        if len(dim) == 0:
            return None
        return tuple(sorted(_wrap_dim(int(d), ndim) for d in dim))
    return (_wrap_dim(int(dim), ndim),)


def _sum_dtype(self, dtype):
    if dtype is not None:
        return _dt.to_dtype(dtype).np
    d = self.dtype
    return _dt.int64.np if (d._cat <= 1) else None


def sum(self, dim=None, keepdim=False, *, dtype=None):
    """Mirrors ``torch.sum(input, dim=None, keepdim=False, dtype=None)``; integer and bool
    inputs sum to int64. Autograd: ``SumBackward0`` (all) / ``SumBackward1`` (dims)."""
    dims = _dims(dim, self.ndim)
    if dim is None:   # sum(dim=()) reduces everything but is the dim overload (SumBackward1)
        return apply_op(OPS["sum"], (self,), (("dim", None), ("keepdim", keepdim), ("dtype", _sum_dtype(self, dtype))))
    return apply_op(OPS["sum_dim"], (self,), (("dim", dims), ("keepdim", keepdim), ("dtype", _sum_dtype(self, dtype))))


def nansum(self, dim=None, keepdim=False, *, dtype=None):
    """Mirrors ``torch.nansum``: sum treating NaN as zero. Autograd: ``NansumBackward0``."""
    dims = _dims(dim, self.ndim)
    return apply_op(OPS["nansum"], (self,), (("dim", dims), ("keepdim", keepdim), ("dtype", _sum_dtype(self, dtype))))


def mean(self, dim=None, keepdim=False, *, dtype=None):
    """Mirrors ``torch.mean``. RuntimeError for integer inputs without ``dtype`` (as torch)."""
    d = _dt.to_dtype(dtype) if dtype is not None else self.dtype
    if not (d.is_floating_point or d.is_complex):
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {_SCALAR_NAME[d.name]}")
    dims = _dims(dim, self.ndim)
    st = (("dim", dims), ("keepdim", keepdim), ("dtype", None if dtype is None else d.np))
    return apply_op(OPS["mean" if dim is None else "mean_dim"], (self,), st)


def nanmean(self, dim=None, keepdim=False, *, dtype=None):
    """Mirrors ``torch.nanmean``: ``nansum / count of non-NaN`` (``DivBackward0``)."""
    m = ~_unaries["isnan"](self)
    return nansum(self, dim, keepdim) / sum(m, dim, keepdim)


def prod(self, dim=None, keepdim=False, *, dtype=None):
    """Mirrors ``torch.prod(input, dim=None, keepdim=False)``."""
    if dim is None:
        return apply_op(OPS["prod"], (self,), (("dim", None), ("keepdim", False), ("dtype", _sum_dtype(self, dtype))))
    return apply_op(OPS["prod_dim"], (self,), (("dim", _dims(dim, self.ndim)), ("keepdim", keepdim), ("dtype", _sum_dtype(self, dtype))))


def _correction(correction, unbiased):
    if correction is not None:
        return correction
    return 1 if unbiased in (None, True) else 0


def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Mirrors ``torch.var(input, dim=None, *, correction=1, keepdim=False)``."""
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    return apply_op(OPS["var"], (self,), (("dim", _dims(dim, self.ndim)), ("correction", _correction(correction, unbiased)), ("keepdim", keepdim)))


def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Mirrors ``torch.std(input, dim=None, *, correction=1, keepdim=False)``."""
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    return apply_op(OPS["std"], (self,), (("dim", _dims(dim, self.ndim)), ("correction", _correction(correction, unbiased)), ("keepdim", keepdim)))


def var_mean(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Mirrors ``torch.var_mean``: a tuple ``(var, mean)``."""
    return apply_op(OPS["var_mean"], (self,), (("dim", _dims(dim, self.ndim)), ("correction", _correction(correction, unbiased)), ("keepdim", keepdim)))


def std_mean(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Mirrors ``torch.std_mean``: a tuple ``(std, mean)``. Autograd: ``StdMeanBackward0``."""
    return apply_op(OPS["std_mean"], (self,), (("dim", _dims(dim, self.ndim)), ("correction", _correction(correction, unbiased)), ("keepdim", keepdim)))


def _minmax(kind):
    def f(self, dim=None, keepdim=False):
        if isinstance(dim, Tensor):
            return (maximum if kind == "max" else minimum)(self, dim)
        if dim is None:
            if self.numel() == 0:
                raise RuntimeError(f"{kind}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.")
            return apply_op(OPS[f"{kind}_all"], (self,))
        d = _wrap_dim(dim, self.ndim)
        v, i = apply_op(OPS[f"{kind}_dim"], (self,), (("dim", d), ("keepdim", keepdim)))
        return getattr(return_types, kind)(v, i)
    f.__name__ = kind
    f.__doc__ = (f"Mirrors ``torch.{kind}``: the {kind}imum of all elements, or with ``dim`` a namedtuple "
                 f"``(values, indices)``, or with a tensor the elementwise {kind}imum.")
    return f


max, min = _minmax("max"), _minmax("min")


def amax(self, dim=(), keepdim=False):
    """Mirrors ``torch.amax`` (gradient split evenly between ties, as torch)."""
    return apply_op(OPS["amax"], (self,), (("dim", _dims(dim, self.ndim)), ("keepdim", keepdim)))


def amin(self, dim=(), keepdim=False):
    """Mirrors ``torch.amin``."""
    return apply_op(OPS["amin"], (self,), (("dim", _dims(dim, self.ndim)), ("keepdim", keepdim)))


def argmax(self, dim=None, keepdim=False):
    """Mirrors ``torch.argmax``: int64 index of the first maximum (flattened when dim=None)."""
    d = None if dim is None else _wrap_dim(dim, self.ndim)
    return apply_op(OPS["argmax"], (self,), (("dim", d), ("keepdim", keepdim)))


def argmin(self, dim=None, keepdim=False):
    """Mirrors ``torch.argmin``."""
    d = None if dim is None else _wrap_dim(dim, self.ndim)
    return apply_op(OPS["argmin"], (self,), (("dim", d), ("keepdim", keepdim)))


def logsumexp(self, dim, keepdim=False):
    """Mirrors ``torch.logsumexp(input, dim, keepdim=False)``, numerically stable."""
    return apply_op(OPS["logsumexp"], (self,), (("dim", _dims(dim, self.ndim)), ("keepdim", keepdim)))


def softmax(self, dim, dtype=None):
    """Mirrors ``torch.softmax(input, dim, dtype=None)``. Autograd: ``SoftmaxBackward0`` (saves result)."""
    return apply_op(OPS["softmax"], (self,), (("dim", _wrap_dim(dim, self.ndim)), ("dtype", None if dtype is None else _dt.to_dtype(dtype).np)))


def log_softmax(self, dim, dtype=None):
    """Mirrors ``torch.log_softmax(input, dim, dtype=None)``."""
    return apply_op(OPS["log_softmax"], (self,), (("dim", _wrap_dim(dim, self.ndim)), ("dtype", None if dtype is None else _dt.to_dtype(dtype).np)))


def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
    """Mirrors ``torch.norm(input, p='fro', dim=None, keepdim=False)`` for vector norms
    (``p`` a number, inf, -inf or 'fro'). Autograd: ``LinalgVectorNormBackward0``."""
    if p == "fro" or p is None:
        p = 2
    if p == "nuc":
        raise NotImplementedError("tracegrad.norm: the nuclear norm is not supported")
    return apply_op(OPS["norm"], (self,), (("ord", float(p)), ("dim", _dims(dim, self.ndim)), ("keepdim", keepdim)))


def cumsum(self, dim, *, dtype=None):
    """Mirrors ``torch.cumsum(input, dim)``."""
    return apply_op(OPS["cumsum"], (self,), (("dim", _wrap_dim(dim, self.ndim)), ("dtype", _sum_dtype(self, dtype))))


def cumprod(self, dim, *, dtype=None):
    """Mirrors ``torch.cumprod(input, dim)``."""
    return apply_op(OPS["cumprod"], (self,), (("dim", _wrap_dim(dim, self.ndim)), ("dtype", _sum_dtype(self, dtype))))


def all(self, dim=None, keepdim=False):
    """Mirrors ``torch.all``: a bool tensor."""
    return apply_op(OPS["all"], (self,), (("dim", _dims(dim, self.ndim)), ("keepdim", keepdim)))


def any(self, dim=None, keepdim=False):
    """Mirrors ``torch.any``: a bool tensor."""
    return apply_op(OPS["any"], (self,), (("dim", _dims(dim, self.ndim)), ("keepdim", keepdim)))


def count_nonzero(self, dim=None):
    return apply_op(OPS["count_nonzero"], (self,), (("dim", _dims(dim, self.ndim)),))


def sort(self, dim=-1, descending=False, stable=False):
    """Mirrors ``torch.sort``: namedtuple ``(values, indices)``; stable always."""
    v, i = apply_op(OPS["sort"], (self,), (("dim", _wrap_dim(dim, self.ndim)), ("descending", descending), ("stable", True)))
    return return_types.sort(v, i)


def argsort(self, dim=-1, descending=False, stable=False):
    """Mirrors ``torch.argsort``."""
    return apply_op(OPS["argsort"], (self,), (("dim", _wrap_dim(dim, self.ndim)), ("descending", descending), ("stable", True)))


def topk(self, k, dim=-1, largest=True, sorted=True):
    """Mirrors ``torch.topk``: namedtuple ``(values, indices)``. RuntimeError if k is too large."""
    d = _wrap_dim(dim, self.ndim)
    if k > (self.shape[d] if self.ndim else 1):
        raise RuntimeError("selected index k out of range")
    v, i = apply_op(OPS["topk"], (self,), (("k", int(k)), ("dim", d), ("largest", largest), ("sorted", sorted)))
    return return_types.topk(v, i)


def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    """Mirrors ``torch.quantile``: ``q`` a float or 1-D tensor in [0, 1] (its dim comes first
    in the result); ``interpolation`` one of linear, lower, higher, midpoint, nearest.
    RuntimeError for q outside [0, 1] or a non-floating input."""
    if not self.dtype.is_floating_point:
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    qv = q._value if isinstance(q, Tensor) else q
    if not isinstance(qv, _JaxTracer) and not bool(np.all((np.asarray(qv) >= 0) & (np.asarray(qv) <= 1))):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    d = None if dim is None else _wrap_dim(dim, self.ndim)
    return apply_op(OPS["quantile"], (self, q), (("dim", d), ("keepdim", keepdim), ("interpolation", interpolation)))


def nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    return quantile(self, q, dim, keepdim, interpolation=interpolation)


def kthvalue(self, k, dim=-1, keepdim=False):
    v, i = apply_op(OPS["kthvalue"], (self,), (("k", int(k)), ("dim", _wrap_dim(dim, self.ndim)), ("keepdim", keepdim)))
    return return_types.kthvalue(v, i)


def median(self, dim=None, keepdim=False):
    """Mirrors ``torch.median``: lower median; with dim a namedtuple ``(values, indices)``."""
    if dim is None:
        return apply_op(OPS["median_all"], (self,))
    v, i = apply_op(OPS["median_dim"], (self,), (("dim", _wrap_dim(dim, self.ndim)), ("keepdim", keepdim)))
    return return_types.median(v, i)


# ---- linear algebra ---------------------------------------------------------------------
def _mm_dtype(a, b, name):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_CPP_NAME[a.dtype.name]} != {_CPP_NAME[b.dtype.name]}" if name != "dot" else
                           f"dot : expected both vectors to have same dtype, but found {a.dtype.name} and {b.dtype.name}")
    return (("dtype", a._value.dtype),)


def matmul(self, other):
    """Mirrors ``torch.matmul`` / ``@``: dot (1-D x 1-D), mv, mm, and batched products with
    broadcasting. Autograd names follow torch's kernels (``DotBackward0``, ``MvBackward0``,
    ``MmBackward0``, ``UnsafeViewBackward0`` for batched). RuntimeError on shape mismatch."""
    if not isinstance(other, Tensor):
        raise TypeError(f"matmul(): argument 'other' must be Tensor, not {type(other).__name__}")
    a, b = self.ndim, other.ndim
    if a == 0 or b == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a}D and {b}D")
    ka = self.shape[-1]
    kb = other.shape[-2] if b >= 2 else other.shape[0]
    if ka != kb:
        if a == 1 and b == 1:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{ka}] and src [{kb}] to have the same number of elements, but got {ka} and {kb} elements respectively")
        sa = "x".join(map(str, self.shape if a > 1 else (1, ka)))
        sb = "x".join(map(str, other.shape if b > 1 else (kb, 1)))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
    st = _mm_dtype(self, other, "matmul")
    if a == 1 and b == 1:
        return apply_op(OPS["dot"], (self, other), st)
    if a == 2 and b == 1:
        return apply_op(OPS["mv"], (self, other), st)
    if a == 2 and b == 2:
        return apply_op(OPS["mm"], (self, other), st)
    if a == 1 and b == 2:
        return apply_op(OPS["matmul_squeeze"], (self, other), st)
    if a == 2:
        return apply_op(OPS["matmul_clone"], (self, other), st)
    return apply_op(OPS["matmul"], (self, other), st)


def mm(self, mat2):
    """Mirrors ``torch.mm``: 2-D x 2-D. RuntimeError for other ranks or mismatched shapes."""
    if self.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"self must be a matrix" if self.ndim != 2 else "mat2 must be a matrix")
    return matmul(self, mat2)


def bmm(self, mat2):
    """Mirrors ``torch.bmm``: ``(b, n, m) x (b, m, p) -> (b, n, p)``."""
    if self.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if self.ndim != 3 else "batch2 must be a 3D tensor")
    if self.shape[0] != mat2.shape[0] or self.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{self.shape[0]}, {self.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    return apply_op(OPS["bmm"], (self, mat2), _mm_dtype(self, mat2, "bmm"))


def mv(self, vec):
    """Mirrors ``torch.mv``: ``(n, m) x (m,) -> (n,)``."""
    if self.ndim != 2 or vec.ndim != 1:
        raise RuntimeError("vector + matrix @ vector expected, got " + f"{self.ndim}, {vec.ndim}")
    return matmul(self, vec)


def dot(self, other):
    """Mirrors ``torch.dot``: 1-D x 1-D -> 0-D."""
    if self.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {self.ndim}D and {other.ndim}D tensors")
    return matmul(self, other)


def addmm(self, mat1, mat2, *, beta=1, alpha=1):
    """Mirrors ``torch.addmm``: ``beta * input + alpha * (mat1 @ mat2)``. Autograd: ``AddmmBackward0``."""
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError("mat1 must be a matrix, got {}-D tensor".format(mat1.ndim))
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    dt = result_dtype(mat1, mat2)
    return apply_op(OPS["addmm"], (self, mat1, mat2, beta, alpha), (("dtype", dt.np),))


def outer(self, vec2):
    """Mirrors ``torch.outer``: ``(n,) x (m,) -> (n, m)``. Autograd: ``MulBackward0``."""
    return mul(unsqueeze(self, 1), vec2)


ger = outer


def einsum(equation, *operands):
    """Mirrors ``torch.einsum(equation, *operands)`` (operands may also be one list)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return apply_op(OPS["einsum"], operands, (("equation", equation.replace(" ", "")),))


# ---- shape and views --------------------------------------------------------------------
def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _infer(shape, numel, what="view"):
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def view(self, *shape):
    """Mirrors ``torch.Tensor.view(*shape)`` (one -1 inferred); shares storage. ``view(dtype)``
    is not supported. RuntimeError on a size mismatch, or when the new shape cannot be laid
    over the input's storage with strides (as torch: use ``.reshape(...)``)."""
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list, Size)):
        raise NotImplementedError("tracegrad: Tensor.view(dtype) is not supported")
    s = _infer(_shape_arg(shape), self.numel())
    from ._tensor import can_view_as
    if self._chain and not can_view_as(self, s):
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return apply_op(OPS["view"], (self,), (("shape", s),))


def reshape(self, *shape):
    """Mirrors ``torch.reshape``: a view when the input is contiguous, else a copy."""
    s = _infer(_shape_arg(shape), self.numel())
    from ._tensor import can_view_as
    if not self._chain or can_view_as(self, s):
        return apply_op(OPS["view"], (self,), (("shape", s),))
    return apply_op(OPS["reshape_copy"], (self,), (("shape", s),))


def view_as(self, other):
    return view(self, tuple(other.shape))


def reshape_as(self, other):
    return reshape(self, tuple(other.shape))


def flatten(self, start_dim=0, end_dim=-1):
    """Mirrors ``torch.flatten``; a 0-d input becomes 1-d."""
    n = self.ndim
    if n == 0:
        return reshape(self, (1,))
    s, e = _wrap_dim(start_dim, n), _wrap_dim(end_dim, n)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self
    shp = tuple(self.shape)
    return reshape(self, shp[:s] + (-1,) + shp[e + 1:])


def unflatten(self, dim, sizes):
    """Mirrors ``torch.unflatten(input, dim, sizes)``."""
    d = _wrap_dim(dim, self.ndim)
    shp = tuple(self.shape)
    inner = _infer(tuple(sizes), shp[d])
    return view(self, shp[:d] + inner + shp[d + 1:])


def squeeze(self, dim=None):
    """Mirrors ``torch.squeeze``: drops size-1 dims (all, one, or a tuple of dims)."""
    shp = tuple(self.shape)
    if dim is None:
        dims = tuple(i for i, s in enumerate(shp) if s == 1)
        return apply_op(OPS["squeeze"], (self,), (("dim", dims),))
    if isinstance(dim, (tuple, list)):
        dims = tuple(d for d in (_wrap_dim(x, self.ndim) for x in dim) if shp[d] == 1)
        return apply_op(OPS["squeeze_dims"], (self,), (("dim", dims),))
    d = _wrap_dim(dim, self.ndim) if self.ndim else 0
    dims = (d,) if self.ndim and shp[d] == 1 else ()
    return apply_op(OPS["squeeze_dim"], (self,), (("dim", dims),))


def unsqueeze(self, dim):
    """Mirrors ``torch.unsqueeze``: dim in ``[-ndim-1, ndim]``."""
    n = self.ndim + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return apply_op(OPS["unsqueeze"], (self,), (("dim", dim % n),))


def transpose(self, dim0, dim1):
    """Mirrors ``torch.transpose``: swaps two dims; a view."""
    n = self.ndim
    return apply_op(OPS["transpose"], (self,), (("dim0", _wrap_dim(dim0, n)), ("dim1", _wrap_dim(dim1, n))))


swapaxes = swapdims = transpose


def t(self):
    """Mirrors ``torch.t``: transpose of a <=2-D tensor. RuntimeError for more dims."""
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return apply_op(OPS["t"], (self,))


def permute(self, *dims):
    """Mirrors ``torch.permute``. RuntimeError when dims is not a permutation."""
    dims = _shape_arg(dims)
    n = self.ndim
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to len(dims) = {len(dims)}")
    d = tuple(_wrap_dim(x, n) for x in dims)
    if len(set(d)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return apply_op(OPS["permute"], (self,), (("dims", d),))


def movedim(self, source, destination):
    n = self.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [_wrap_dim(s, n) for s in src]
    dst = [_wrap_dim(s, n) for s in dst]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(self, order)


moveaxis = movedim


def expand(self, *sizes):
    """Mirrors ``torch.Tensor.expand``: broadcast to ``sizes`` (-1 keeps a dim) without copying;
    writing into the result in place raises RuntimeError, as torch."""
    sizes = _shape_arg(sizes)
    shp = tuple(self.shape)
    if len(sizes) < len(shp):
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(shp)}}}, size=[{', '.join(map(str, sizes))}]): the number of sizes provided ({len(sizes)}) must be greater or equal to the number of dimensions in the tensor ({len(shp)})")
    lead = len(sizes) - len(shp)
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s == -1:
                raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
            out.append(s)
        else:
            cur = shp[i - lead]
            if s == -1:
                s = cur
            if cur != s and cur != 1:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: {list(shp)}")
            out.append(s)
    return apply_op(OPS["expand"], (self,), (("size", tuple(out)),))


def expand_as(self, other):
    return expand(self, tuple(other.shape))


def broadcast_to(self, size):
    return expand(self, tuple(size))


def repeat(self, *repeats):
    """Mirrors ``torch.Tensor.repeat`` (tiles). RuntimeError when fewer repeats than dims."""
    r = _shape_arg(repeats)
    if len(r) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    return apply_op(OPS["repeat"], (self,), (("repeats", r),))


def repeat_interleave(self, repeats, dim=None):
    """Mirrors ``torch.repeat_interleave(input, repeats, dim=None)`` (int or 1-D tensor repeats;
    flattens when dim is None)."""
    op = OPS["repeat_interleave"]
    if isinstance(repeats, Tensor):
        if repeats.ndim:
            op = OPS["repeat_interleave_tensor"]
        repeats = tuple(repeats.tolist()) if repeats.ndim else int(repeats)
    x = self if dim is not None else flatten(self)
    return apply_op(op, (x,), (("repeats", repeats), ("dim", 0 if dim is None else _wrap_dim(dim, self.ndim))))


def narrow(self, dim, start, length):
    """Mirrors ``torch.narrow``: a view of ``length`` elements from ``start`` along ``dim``."""
    d = _wrap_dim(dim, self.ndim)
    size = self.shape[d]
    start = int(start)
    if start < 0:
        start += size
    if start + length > size or start < 0 or length < 0:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return apply_op(OPS["slice"], (self,), (("dim", d), ("start", start), ("end", start + length), ("step", 1)))


def select(self, dim, index):
    """Mirrors ``torch.select``: removes ``dim`` picking ``index``; IndexError when out of range."""
    d = _wrap_dim(dim, self.ndim)
    size = self.shape[d]
    index = int(index)
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} at dimension {d}")
    return apply_op(OPS["select"], (self,), (("dim", d), ("index", index % size)))


def unbind(self, dim=0):
    """Mirrors ``torch.unbind``: a tuple of views along ``dim``."""
    d = _wrap_dim(dim, self.ndim)
    return apply_op(OPS["unbind"], (self,), (("dim", d),))


def split(self, split_size_or_sections, dim=0):
    """Mirrors ``torch.split``: chunks of ``split_size`` (last may be smaller) or the given sizes."""
    d = _wrap_dim(dim, self.ndim)
    n = self.shape[d]
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        sizes = tuple(builtins.min(s, n - i) for i in range(0, n, s)) if n else (0,)
        return apply_op(OPS["split"], (self,), (("sizes", sizes), ("dim", d)))
    sizes = tuple(int(x) for x in split_size_or_sections)
    if builtins.sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at dimension {d}), but got split_sizes={list(sizes)}")
    return apply_op(OPS["split_with_sizes"], (self,), (("sizes", sizes), ("dim", d)))


def chunk(self, chunks, dim=0):
    """Mirrors ``torch.chunk``: up to ``chunks`` pieces of size ceil(n / chunks)."""
    d = _wrap_dim(dim, self.ndim)
    n = self.shape[d]
    size = -(-n // chunks) if n else 0
    return split(self, builtins.max(size, 1), d)


def tensor_split(self, sections, dim=0):
    d = _wrap_dim(dim, self.ndim)
    n = self.shape[d]
    base, extra = divmod(n, sections)
    sizes = [base + 1] * extra + [base] * (sections - extra)
    out, start = [], 0
    for s_ in sizes:     # torch slices each piece (SliceBackward0)
        out.append(apply_op(OPS["slice"], (self,), (("dim", d), ("start", start), ("end", start + s_), ("step", 1))))
        start += s_
    return tuple(out)


def flip(self, *dims):
    """Mirrors ``torch.flip(input, dims)``."""
    dims = _shape_arg(dims)
    return apply_op(OPS["flip"], (self,), (("dims", tuple(_wrap_dim(d, self.ndim) for d in dims)),))


def fliplr(self):
    return flip(self, 1)


def flipud(self):
    return flip(self, 0)


def roll(self, shifts, dims=None):
    """Mirrors ``torch.roll``."""
    if dims is None:
        return apply_op(OPS["roll_flat"], (self,), (("shifts", int(shifts if isinstance(shifts, int) else shifts[0])),))
    sh = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dm = (dims,) if isinstance(dims, int) else tuple(dims)
    return apply_op(OPS["roll"], (self,), (("shifts", sh), ("dims", tuple(_wrap_dim(d, self.ndim) for d in dm))))


def tril(self, diagonal=0):
    """Mirrors ``torch.tril``."""
    return apply_op(OPS["tril"], (self,), (("diagonal", diagonal),))


def triu(self, diagonal=0):
    """Mirrors ``torch.triu``."""
    return apply_op(OPS["triu"], (self,), (("diagonal", diagonal),))


def diag(self, diagonal=0):
    """Mirrors ``torch.diag``: 1-D -> diagonal matrix, 2-D -> its diagonal."""
    if self.ndim == 1:
        return apply_op(OPS["diag_embed"], (self,), (("diagonal", diagonal),))
    if self.ndim != 2:
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{self.ndim}D")
    return apply_op(OPS["diag"], (self,), (("diagonal", diagonal),))


def diagonal(self, offset=0, dim1=0, dim2=1):
    """Mirrors ``torch.diagonal``: a view."""
    return apply_op(OPS["diagonal"], (self,), (("offset", offset), ("dim1", _wrap_dim(dim1, self.ndim)), ("dim2", _wrap_dim(dim2, self.ndim))))


def trace(self):
    """Mirrors ``torch.trace``: sum of the diagonal of a 2-D tensor. Autograd: ``TraceBackward0``."""
    if self.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
    return apply_op(OPS["trace"], (self,))


def cat(tensors, dim=0, *, out=None):
    """Mirrors ``torch.cat(tensors, dim=0)`` with dtype promotion. RuntimeError for mismatched
    shapes or an empty list."""
    tensors = [t for t in tensors]
    if not tensors:
        raise ValueError("tracegrad.cat(): expected a non-empty list of Tensors")
    for t_ in tensors:
        if not isinstance(t_, Tensor):
            raise TypeError(f"expected Tensor as element {tensors.index(t_)} in argument 0, but got {type(t_).__name__}")
    # torch skips legacy empty 1-D tensors
    ref = next((t_ for t_ in tensors if t_.shape != (0,)), tensors[0])
    d = _wrap_dim(dim, ref.ndim)
    for i, t_ in enumerate(tensors):
        if t_.shape == (0,) and t_ is not ref:
            continue
        if t_.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {t_.ndim}")
        for k in range(ref.ndim):
            if k != d and t_.shape[k] != ref.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {ref.shape[k]} but got size {t_.shape[k]} for tensor number {i} in the list.")
    dt = result_dtype(*tensors)
    return apply_op(OPS["cat"], tuple(tensors), (("dim", d), ("dtype", dt.np)))


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    """Mirrors ``torch.stack``: RuntimeError unless all shapes are equal."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = tuple(tensors[0].shape)
    for i, t_ in enumerate(tensors):
        if tuple(t_.shape) != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(s0)} at entry 0 and {list(t_.shape)} at entry {i}")
    n = len(s0) + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    dt = result_dtype(*tensors)
    return apply_op(OPS["stack"], tuple(tensors), (("dim", dim % n), ("dtype", dt.np)))


def hstack(tensors):
    tensors = list(tensors)
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return cat([t_ if t_.ndim > 1 else t_.unsqueeze(0) for t_ in tensors], 0)


# ---- indexing ---------------------------------------------------------------------------
def _is_advanced(k):
    return isinstance(k, (Tensor, list, np.ndarray)) or (isinstance(k, bool))


def _parse_key(self, key):
    """Split a torch index into static markers and dynamic index arrays."""
    if not isinstance(key, tuple):
        key = (key,)
    shp = tuple(self.shape)
    n_real = builtins.sum(1 for k in key if k is not None and k is not Ellipsis and not (isinstance(k, Tensor) and k.dtype is _dt.bool_))
    n_real += builtins.sum(k.ndim for k in key if isinstance(k, Tensor) and k.dtype is _dt.bool_)
    if n_real > len(shp):
        raise IndexError(f"too many indices for tensor of dimension {len(shp)}")
    markers, arrays = [], []
    dim = 0
    ell = [i for i, k in enumerate(key) if k is Ellipsis]
    if len(ell) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    for k in key:
        if k is None:
            markers.append(("n",))
        elif k is Ellipsis:
            markers.append(("e",))
            dim += len(shp) - n_real
        elif isinstance(k, slice):
            step = k.step
            if step is not None and step <= 0:
                raise ValueError("step must be greater than zero")
            markers.append(("s", _idx(k.start), _idx(k.stop), _idx(step)))
            dim += 1
        elif isinstance(k, (bool, np.bool_)):
            raise IndexError("tracegrad: indexing with a Python bool is not supported")
        elif isinstance(k, (int, np.integer)) or (isinstance(k, Tensor) and k.ndim == 0 and not k.dtype.is_floating_point and k.dtype is not _dt.bool_):
            i = int(k)
            size = shp[dim]
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            markers.append(("i", i % size))
            dim += 1
        else:
            if not isinstance(k, Tensor):
                k = _as_index_tensor(k)
            if k.dtype is _dt.bool_:
                if tuple(k.shape) != shp[dim:dim + k.ndim]:
                    raise IndexError(f"The shape of the mask {list(k.shape)} at index {dim} does not match the shape of the indexed tensor {list(shp)} at index {dim}")
                for nz in nonzero(k, as_tuple=True):
                    markers.append(("t",))
                    arrays.append(nz)
                dim += k.ndim
            elif k.dtype.is_floating_point:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            else:
                v = k._value
                if not isinstance(v, _JaxTracer) and v.size:
                    size = shp[dim]
                    lo, hi = int(v.min()), int(v.max())
                    if hi >= size or lo < -size:
                        bad = hi if hi >= size else lo
                        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
                markers.append(("t",))
                arrays.append(k)
                dim += 1
    return tuple(markers), arrays


def _idx(v):
    if v is None:
        return None
    return int(v)


def _as_index_tensor(k):
    from ._factories import tensor
    t_ = tensor(k)
    if t_.numel() == 0:
        t_ = t_.long()
    return t_


def _basic_op(markers):
    for m in reversed(markers):
        if m[0] == "i":
            return OPS["index_int"]
        if m[0] == "s" and m[1:] != (None, None, None):
            return OPS["index_slice"]
        if m[0] == "n":
            return OPS["index_none"]
    return OPS["index_slice"] if builtins.any(m[0] == "s" for m in markers) else OPS["index_alias"]


def getitem(self, key):
    """Mirrors ``Tensor.__getitem__``: ints, slices, None, ..., integer tensors/lists and bool
    masks. Basic keys give views; advanced keys give copies (``IndexBackward0``).
    IndexError for out-of-range indices."""
    if self.ndim == 0 and not (key is None or key is Ellipsis or (isinstance(key, tuple) and builtins.all(k is None or k is Ellipsis for k in key))):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
    markers, arrays = _parse_key(self, key)
    if not arrays:
        return apply_op(_basic_op(markers), (self,), (("key", markers),))
    return apply_op(OPS["index"], (self, *arrays), (("key", markers),))


def setitem(self, key, value):
    """Mirrors ``Tensor.__setitem__``: writes through views (the base gets ``CopySlices``);
    advanced keys use ``index_put_`` (``IndexPutBackward0``)."""
    markers, arrays = _parse_key(self, key)
    full = builtins.all(m[0] == "e" or m == ("s", None, None, None) or m[0] == "t" for m in markers)
    if not arrays:
        if full:      # ``x[...] = v`` / ``x[:] = v`` write self itself (no view)
            if isinstance(value, Tensor):
                copy_(self, value)
            else:
                apply_inplace(OPS["fill_tensor"], self, (value,))
            return
        v = apply_op(_basic_op(markers), (self,), (("key", markers),))
        if isinstance(value, Tensor) and tuple(value.shape) != tuple(v.shape):
            _check_expand(tuple(value.shape), tuple(v.shape))   # torch expands the value first
        copy_(v, value)
        return
    if full:
        index_put_(self, arrays, value, markers=markers)
        return
    # torch applies the basic part first (a view) and index_puts into it: CopySlices on self
    basic = tuple(("s", None, None, None) if m[0] == "t" else m for m in markers)
    rest = tuple(m if m[0] in "te" else ("s", None, None, None) for m in markers if m[0] != "i")
    v = apply_op(_basic_op(basic), (self,), (("key", basic),))
    index_put_(v, arrays, value, markers=rest)


def index_put_(self, indices, values, accumulate=False, *, markers=None):
    """Mirrors ``torch.Tensor.index_put_``."""
    if markers is None:
        markers = tuple(("t",) for _ in indices)
    return apply_inplace(OPS["index_put"], self, (values, *indices), (("key", markers), ("accumulate", accumulate)))


def index_put(self, indices, values, accumulate=False):
    markers = tuple(("t",) for _ in indices)
    return apply_op(OPS["index_put"], (self, values, *indices), (("key", markers), ("accumulate", accumulate)))


def _index_arg(index, name):
    if not isinstance(index, Tensor) or index.dtype.is_floating_point or index.dtype is _dt.bool_:
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


def gather(self, dim, index, *, sparse_grad=False):
    """Mirrors ``torch.gather(input, dim, index)``. RuntimeError for non-int64 index."""
    _index_arg(index, "gather")
    if index.ndim != self.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    return apply_op(OPS["gather"], (self, index), (("dim", _wrap_dim(dim, self.ndim)),))


def take_along_dim(self, indices, dim=None):
    if dim is None:
        return gather(flatten(self), 0, flatten(indices))
    return gather(self, dim, indices)


def scatter(self, dim, index, src=None, *, value=None, reduce=None):
    """Mirrors ``torch.scatter(input, dim, index, src|value)``."""
    _index_arg(index, "scatter")
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() received an invalid combination of arguments: give src (a Tensor) or value (a number)")
    d = _wrap_dim(dim, self.ndim)
    if isinstance(src, Tensor):
        return apply_op(OPS["scatter"], (self, index, src), (("dim", d), ("reduce", reduce)))
    return apply_op(OPS["scatter_value"], (self, index, src), (("dim", d), ("reduce", reduce)))


def scatter_add(self, dim, index, src):
    """Mirrors ``torch.scatter_add``."""
    _index_arg(index, "scatter_add")
    return apply_op(OPS["scatter_add"], (self, index, src), (("dim", _wrap_dim(dim, self.ndim)),))


def index_select(self, dim, index):
    """Mirrors ``torch.index_select``: index must be a 1-D integer tensor."""
    _index_arg(index, "index_select")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    return apply_op(OPS["index_select"], (self, index), (("dim", _wrap_dim(dim, self.ndim)),))


def index_add(self, dim, index, source, *, alpha=1):
    return apply_op(OPS["index_add"], (self, index, source, alpha), (("dim", _wrap_dim(dim, self.ndim)),))


def masked_fill(self, mask, value):
    """Mirrors ``torch.masked_fill``: mask must be bool and broadcastable."""
    if not isinstance(mask, Tensor) or mask.dtype is not _dt.bool_:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype " + (_CPP_NAME[mask.dtype.name] if isinstance(mask, Tensor) else type(mask).__name__))
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.ndim} dimension(s).")
        return apply_op(OPS["masked_fill_tensor"], (self, mask, value))
    return apply_op(OPS["masked_fill"], (self, mask, value))


def masked_select(self, mask):
    """Mirrors ``torch.masked_select``: the 1-D tensor of elements where the bool ``mask``
    (broadcast with input) is True. Autograd: ``MaskedSelectBackward0``."""
    if not isinstance(mask, Tensor) or mask.dtype is not _dt.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = tuple(np.broadcast_shapes(tuple(self.shape), tuple(mask.shape)))
    x = expand(self, *shape) if tuple(self.shape) != shape else self
    m = expand(mask, *shape) if tuple(mask.shape) != shape else mask
    idx = nonzero(m, as_tuple=True)
    return apply_op(OPS["masked_select"], (x, *idx), (("key", tuple(("t",) for _ in idx)),))


def nonzero(self, *, as_tuple=False):
    """Mirrors ``torch.nonzero``: int64 ``(n, ndim)`` indices, or a tuple of 1-D index tensors
    with ``as_tuple=True``. Needs concrete values (the output shape depends on the data)."""
    from ._tensor import _concrete
    _concrete(self, "nonzero()")
    arr = np.asarray(self._value)
    nz = np.nonzero(arr) if arr.ndim else np.nonzero(arr.reshape(1))
    from ._factories import tensor
    if as_tuple:
        return tuple(tensor(a.astype(np.int64)) for a in nz)
    return tensor(np.stack(nz, axis=1).astype(np.int64) if nz else np.zeros((0, 0), np.int64))


def argwhere(self):
    return nonzero(self)


# ---- in-place ---------------------------------------------------------------------------
def _inplace_binary(opname):
    op = OPS[opname]

    def f(self, other, *, alpha=None):
        _check_operand(other, opname + "_")
        dt = self._value.dtype if (isinstance(other, Tensor) and other._value.dtype == self._value.dtype) else result_dtype(self, other).np
        args = (other, None if alpha == 1 else alpha) if opname in ("add", "sub") else (other,)
        return apply_inplace(op, self, args, (("dtype", dt),))
    f.__name__ = opname + "_"
    f.__doc__ = f"Mirrors ``torch.Tensor.{opname}_``: in place, bumps ``_version``; RuntimeError when " \
                "the result dtype cannot be cast to self's, or on a leaf that requires grad."
    return f


add_, sub_, mul_ = _inplace_binary("add"), _inplace_binary("sub"), _inplace_binary("mul")


def div_(self, other, *, rounding_mode=None):
    dt = result_dtype(self, other)
    if rounding_mode is None:
        dt = _float_dtype(dt)
    st = (("dtype", dt.np),) if rounding_mode is None else (("dtype", dt.np), ("rounding_mode", rounding_mode))
    return apply_inplace(OPS["div"], self, (other,), st)


def pow_(self, exponent):
    op = OPS["pow_tensor"] if isinstance(exponent, Tensor) else OPS["pow"]
    return apply_inplace(op, self, (exponent,), (("dtype", result_dtype(self, exponent).np),))


def clamp_(self, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("tracegrad.clamp: At least one of 'min' or 'max' must not be None")
    op = OPS["clamp_tensor"] if isinstance(min, Tensor) or isinstance(max, Tensor) else OPS["clamp"]
    return apply_inplace(op, self, (min, max), (("dtype", self._value.dtype),))


def copy_(self, src, non_blocking=False):
    """Mirrors ``torch.Tensor.copy_``: writes ``src`` (broadcast, cast) into self.
    Autograd: ``CopyBackwards`` (``CopySlices`` on the base when self is a view)."""
    if not isinstance(src, Tensor):
        from ._factories import tensor
        src = tensor(src, dtype=self.dtype)
    if tuple(src.shape) != tuple(self.shape):
        _check_broadcast(self, src)
        if np.broadcast_shapes(tuple(src.shape), tuple(self.shape)) != tuple(self.shape):
            _check_expand(tuple(src.shape), tuple(self.shape))
    return apply_inplace(OPS["copy"], self, (src,))


def _check_expand(shape, target):
    """torch's message when ``shape`` cannot be expanded to ``target`` (copy_, setitem)."""
    lead = len(target) - len(shape)
    if lead < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({len(target)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({len(shape)})")
    for i, s_ in enumerate(shape):
        if s_ != target[lead + i] and s_ != 1:
            raise RuntimeError(f"The expanded size of the tensor ({target[lead + i]}) must match the existing size "
                               f"({s_}) at non-singleton dimension {lead + i}.  Target sizes: {list(target)}.  "
                               f"Tensor sizes: {list(shape)}")


def fill_(self, value):
    """Mirrors ``torch.Tensor.fill_(value)``: a number (``FillBackward2``) or a 0-d tensor
    (``FillBackward3``, the gradient flows to it). RuntimeError for a tensor with dims."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
        return apply_inplace(OPS["fill_tensor"], self, (value,))
    return apply_inplace(OPS["fill"], self, (value,))


def zero_(self):
    """Mirrors ``torch.Tensor.zero_``."""
    return apply_inplace(OPS["zero"], self, ())


def masked_fill_(self, mask, value):
    """Mirrors ``torch.Tensor.masked_fill_``."""
    if not isinstance(mask, Tensor) or mask.dtype is not _dt.bool_:
        raise RuntimeError("masked_fill_ only supports boolean masks")
    op = OPS["masked_fill_tensor"] if isinstance(value, Tensor) else OPS["masked_fill"]
    return apply_inplace(op, self, (mask, value))


def _inplace_unary(name):
    op = OPS[name]

    def f(self):
        return apply_inplace(op, self, ())
    f.__name__ = name + "_"
    f.__doc__ = f"Mirrors ``torch.Tensor.{name}_`` (in place)."
    return f


def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    """Mirrors ``torch.Tensor.scatter_(dim, index, src|value)``. TypeError without src/value."""
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter_() received an invalid combination of arguments: give src (a Tensor) or value (a number)")
    d = _wrap_dim(dim, self.ndim)
    op = OPS["scatter"] if isinstance(src, Tensor) else OPS["scatter_value"]
    return apply_inplace(op, self, (index, src), (("dim", d), ("reduce", reduce)))


def scatter_add_(self, dim, index, src):
    return apply_inplace(OPS["scatter_add"], self, (index, src), (("dim", _wrap_dim(dim, self.ndim)),))


def index_add_(self, dim, index, source, *, alpha=1):
    return apply_inplace(OPS["index_add"], self, (index, source, alpha), (("dim", _wrap_dim(dim, self.ndim)),))


def addcmul_(self, tensor1, tensor2, *, value=1):
    return apply_inplace(OPS["addcmul"], self, (tensor1, tensor2, value), (("dtype", self._value.dtype),))


def addcdiv_(self, tensor1, tensor2, *, value=1):
    return apply_inplace(OPS["addcdiv"], self, (tensor1, tensor2, value), (("dtype", self._value.dtype),))


def lerp_(self, end, weight):
    op = OPS["lerp_tensor"] if isinstance(weight, Tensor) else OPS["lerp"]
    return apply_inplace(op, self, (end, weight), (("dtype", self._value.dtype),))


def maximum_(self, other):
    return apply_inplace(OPS["maximum"], self, (other,), (("dtype", self._value.dtype),))


def t_(self):
    """Mirrors ``torch.Tensor.t_``: transposes self in place (metadata change)."""
    return _restride_(self, t(self.detach()))


def transpose_(self, dim0, dim1):
    return _restride_(self, transpose(self.detach(), dim0, dim1))


def squeeze_(self, dim=None):
    return _restride_(self, squeeze(self.detach(), dim))


def unsqueeze_(self, dim):
    return _restride_(self, unsqueeze(self.detach(), dim))


def _restride_(self, new):
    if self.requires_grad and _grad_on():
        raise RuntimeError("tracegrad: shape-changing in-place ops (t_, transpose_, squeeze_, unsqueeze_) "
                           "are not supported on tensors that require grad; use the out-of-place form")
    self._st, self._chain, self._vcache = new._st, new._chain, None
    self._vgen = -1
    self._vc[0] += 1
    return self


def _random_inplace(fn):
    def f(self, *args, generator=None, **kwargs):
        from ._ops import random as _rnd
        k = _rnd.key_for(generator)
        with_grad = self.requires_grad and _grad_on()
        if with_grad and self._gf is None:
            from ._dispatch import check_inplace
            check_inplace(self)
        new = fn(k, tuple(self.shape), self._value.dtype, *args, **kwargs)
        from ._factories import Tensor as _T
        return copy_(self, _T._make(new))
    f.__name__ = fn.__name__ + "_"
    return f


def _normal(k, shape, dtype, mean=0.0, std=1.0):
    from ._ops import random as _rnd
    return _rnd.normal(k, shape, dtype, mean, std)


def _uniform(k, shape, dtype, a=0.0, b=1.0, *, from_=None, to=None):
    from ._ops import random as _rnd
    return _rnd.uniform(k, shape, dtype, a, b)


def _bernoulli(k, shape, dtype, p=0.5):
    from ._ops import random as _rnd
    return _rnd.bernoulli(k, p, shape).astype(dtype)


def _random(k, shape, dtype, low=0, high=None):
    from ._ops import random as _rnd
    if high is None:
        low, high = 0, low if low else 2 ** 24
    return _rnd.randint(k, shape, low, high, np.int64).astype(dtype)


def _exponential(k, shape, dtype, lambd=1.0):
    from ._ops import random as _rnd
    return _rnd.exponential(k, shape, dtype) / lambd


normal_, uniform_, bernoulli_, random_, exponential_ = (_random_inplace(f) for f in (_normal, _uniform, _bernoulli, _random, _exponential))


def register_all():
    """Attach methods and operators to ``Tensor``."""
    T = Tensor
    methods = dict(
        add=add, sub=sub, subtract=sub, mul=mul, multiply=mul, div=div, divide=div, true_divide=div,
        floor_divide=floor_divide, remainder=remainder, fmod=fmod, pow=pow, atan2=atan2,
        maximum=maximum, minimum=minimum, fmax=fmax, fmin=fmin, eq=eq, ne=ne, lt=lt, le=le, gt=gt, ge=ge,
        greater=gt, greater_equal=ge, less=lt, less_equal=le, not_equal=ne,
        logical_and=logical_and, logical_or=logical_or, logical_xor=logical_xor,
        bitwise_and=bitwise_and, bitwise_or=bitwise_or, bitwise_xor=bitwise_xor,
        round=round, clamp=clamp, clip=clamp, clamp_min=clamp_min, clamp_max=clamp_max, lerp=lerp,
        addcmul=addcmul, addcdiv=addcdiv, isclose=isclose, allclose=allclose, equal=equal,
        where=lambda self, condition, other: where(condition, self, other),
        to=to, type_as=type_as, cpu=cpu, cuda=cuda, clone=clone, contiguous=contiguous,
        is_contiguous=is_contiguous,
        float=_cast(_dt.float32), double=_cast(_dt.float64), half=_cast(_dt.float16),
        bfloat16=_cast(_dt.bfloat16), long=_cast(_dt.int64), int=_cast(_dt.int32), short=_cast(_dt.int16),
        char=_cast(_dt.int8), byte=_cast(_dt.uint8), bool=_cast(_dt.bool_),
        sum=sum, nansum=nansum, mean=mean, nanmean=nanmean, prod=prod, var=var, std=std, max=max, min=min,
        amax=amax, amin=amin, argmax=argmax, argmin=argmin, logsumexp=logsumexp, softmax=softmax,
        log_softmax=log_softmax, norm=norm, cumsum=cumsum, cumprod=cumprod, all=all, any=any,
        count_nonzero=count_nonzero, quantile=quantile, sort=sort, argsort=argsort, topk=topk, kthvalue=kthvalue, median=median,
        matmul=matmul, mm=mm, bmm=bmm, mv=mv, dot=dot, addmm=addmm, outer=outer, ger=outer,
        view=view, reshape=reshape, view_as=view_as, reshape_as=reshape_as, flatten=flatten,
        unflatten=unflatten, squeeze=squeeze, unsqueeze=unsqueeze, transpose=transpose,
        swapaxes=transpose, swapdims=transpose, t=t, permute=permute, movedim=movedim, moveaxis=movedim,
        expand=expand, expand_as=expand_as, broadcast_to=broadcast_to, repeat=repeat,
        repeat_interleave=repeat_interleave, narrow=narrow, select=select, unbind=unbind, split=split,
        chunk=chunk, tensor_split=tensor_split, flip=flip, fliplr=fliplr, flipud=flipud, roll=roll,
        tril=tril, triu=triu, diag=diag, diagonal=diagonal, trace=trace,
        gather=gather, take_along_dim=take_along_dim, scatter=scatter, scatter_add=scatter_add,
        index_select=index_select, index_add=index_add, index_put=index_put, index_put_=index_put_,
        masked_fill=masked_fill, masked_select=masked_select, nonzero=nonzero, argwhere=argwhere,
        add_=add_, sub_=sub_, mul_=mul_, div_=div_, pow_=pow_, clamp_=clamp_, clip_=clamp_, copy_=copy_,
        fill_=fill_, zero_=zero_, masked_fill_=masked_fill_, scatter_=scatter_, scatter_add_=scatter_add_,
        index_add_=index_add_, addcmul_=addcmul_, addcdiv_=addcdiv_, lerp_=lerp_, t_=t_,
        transpose_=transpose_, squeeze_=squeeze_, unsqueeze_=unsqueeze_,
        normal_=normal_, uniform_=uniform_, bernoulli_=bernoulli_, random_=random_, exponential_=exponential_,
        var_mean=var_mean, std_mean=std_mean,
    )
    for name, fn in _unaries.items():
        methods.setdefault(name, fn)
        if name not in ("isnan", "isinf", "isfinite", "signbit", "sgn"):
            methods[name + "_"] = _inplace_unary(name)
    methods.update(negative=_unaries["neg"], absolute=_unaries["abs"], arcsin=_unaries["asin"],
                   arccos=_unaries["acos"], arctan=_unaries["atan"], fix=_unaries["trunc"])
    for name, fn in methods.items():
        setattr(T, name, fn)

    T.T = property(lambda self: permute(self, tuple(reversed(range(self.ndim)))))
    T.mT = property(lambda self: transpose(self, -2, -1))
    T.H = property(lambda self: permute(self, (1, 0)))
    T.real = property(lambda self: self)
    T.__getitem__ = getitem
    T.__setitem__ = setitem
    T.__add__ = T.__radd__ = lambda s, o: add(s, o)
    T.__sub__ = lambda s, o: sub(s, o)
    T.__rsub__ = lambda s, o: rsub(s, o)
    T.__mul__ = T.__rmul__ = lambda s, o: mul(s, o)
    T.__truediv__ = lambda s, o: div(s, o)
    T.__rtruediv__ = _rdiv
    T.__floordiv__ = lambda s, o: div(s, o, rounding_mode="floor")
    T.__rfloordiv__ = lambda s, o: div(_full_like_scalar(s, o), s, rounding_mode="floor")
    T.__mod__ = lambda s, o: remainder(s, o)
    T.__rmod__ = lambda s, o: remainder(_full_like_scalar(s, o), s)
    T.__pow__ = lambda s, o: pow(s, o)
    T.__rpow__ = _rpow
    T.__matmul__ = lambda s, o: matmul(s, o)
    T.__rmatmul__ = lambda s, o: matmul(o, s)
    T.__neg__ = _unaries["neg"]
    T.__pos__ = lambda s: s
    T.__abs__ = _unaries["abs"]
    T.__invert__ = lambda s: _unaries["logical_not"](s) if s.dtype is _dt.bool_ else _unaries["bitwise_not"](s)
    T.__and__ = T.__rand__ = lambda s, o: bitwise_and(s, o) if s.dtype is not _dt.bool_ else logical_and(s, o)
    T.__or__ = T.__ror__ = lambda s, o: bitwise_or(s, o) if s.dtype is not _dt.bool_ else logical_or(s, o)
    T.__xor__ = T.__rxor__ = lambda s, o: bitwise_xor(s, o) if s.dtype is not _dt.bool_ else logical_xor(s, o)
    T.__eq__ = lambda s, o: eq(s, o) if isinstance(o, (Tensor,) + _Number) else NotImplemented
    T.__ne__ = lambda s, o: ne(s, o) if isinstance(o, (Tensor,) + _Number) else NotImplemented
    T.__lt__ = lambda s, o: lt(s, o)
    T.__le__ = lambda s, o: le(s, o)
    T.__gt__ = lambda s, o: gt(s, o)
    T.__ge__ = lambda s, o: ge(s, o)
    T.__iadd__ = lambda s, o: add_(s, o)
    T.__isub__ = lambda s, o: sub_(s, o)
    T.__imul__ = lambda s, o: mul_(s, o)
    T.__itruediv__ = lambda s, o: div_(s, o)
    T.__ipow__ = lambda s, o: pow_(s, o)
    T.__hash__ = lambda s: id(s)


def _full_like_scalar(s, o):
    from ._factories import tensor
    return tensor(o, dtype=result_dtype(s, o))


register_all()
