"""Tensor methods, promotion family: torch's result dtype, operand and broadcast checks, binary-op helper."""
from __future__ import annotations

import builtins
import functools
import inspect

import numpy as np

from ..autograd._dispatch import apply_op
from .._ops import dtypes as _dt
from .._ops import warn as _warn
from .._ops.errors import not_a_tensor
from .._ops.registry import OPS
from .._tensor.convert import check_fits, check_float_fits
from .._tensor.tensor import Tensor


_Number = (int, float, bool, complex, np.number, np.bool_)


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
_SCALAR_NAME = _dt.SCALAR_NAMES


def refuse_complex(api, kernel, *xs):
    """NotImplementedError naming torch's CPU kernel ``kernel`` when one of ``xs`` is a complex
    tensor: for composites whose torch op has no complex kernel (JAX would compute one)."""
    for x in xs:
        if isinstance(x, Tensor) and x.is_complex():
            name = "ComplexDouble" if x.dtype == _dt.complex128 else "ComplexFloat"
            raise NotImplementedError(f"{api}: \"{kernel}\" not implemented for '{name}'; take .real, .imag or "
                                      ".abs() first")


def require_floating(api, *xs):
    """torch's NotImplementedError for a floating-only kernel (``hypot``, ``logaddexp``,
    ``igamma``, ``nextafter``...) whose operands' common dtype is integer or bool; the operands
    are checked together, as torch's TensorIterator does (an int64 tensor beside a float32 one
    computes in float32)."""
    try:
        common = result_dtype(*xs)
    except (TypeError, AttributeError, ValueError):
        check_operand_kinds(api, *xs)
        raise
    if not (common.is_floating_point or common.is_complex):
        raise NotImplementedError(f"\"{api}_cpu\" not implemented for '{_SCALAR_NAME.get(common.name, common.name)}'; "
                                  f"{api} takes floating tensors (convert with .float())")
_CPP_NAME = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
             "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
             "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
             "complex128": "c10::complex<double>"}


def check_same_dtype(api, first, *others):
    """RuntimeError, as torch's kernels that compute in one dtype and do not promote (lerp's
    ``end``, cdist, cross, a loss's weight): every Tensor among ``others`` has ``first``'s dtype."""
    for t in others:
        if isinstance(t, Tensor) and t.dtype is not first.dtype:
            raise RuntimeError(f"{api}: expected scalar type {_SCALAR_NAME[first.dtype.name]} but found "
                               f"{_SCALAR_NAME[t.dtype.name]}; convert the tensors to one dtype with .to()")


ADDCDIV_INT = ("Integer division with addcdiv is no longer supported, and in a future release addcdiv will "
                "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
                "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer "
                "inputs and as (input + value * tensor1 / tensor2) for float inputs.")


def _check_operand(x, name, arg="other", pos=2):
    """torch's parser TypeError when ``x``, given for ``name``'s Tensor-or-Number argument ``arg``,
    is neither (a list, a string: ``clamp(x, min=[1])``); None passes (an absent bound)."""
    if not isinstance(x, (Tensor,) + _Number) and x is not None:
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}")


def check_operand_kinds(api, *operands, names=("input", "other")):
    """What torch checks before a kernel's dtype check, called on that check's error path (before
    its NotImplementedError): the parser's TypeError for an operand that is neither a Tensor nor a
    number (None, a list, a string), then TensorIterator's RuntimeError for shapes that do not
    broadcast."""
    for pos, (name, v) in enumerate(zip(names, operands), 1):
        if not isinstance(v, (Tensor,) + _Number):
            raise TypeError(f"{api}(): argument '{name}' (position {pos}) must be Tensor, not {type(v).__name__}; "
                            "pass a Tensor or a Python number")
    _check_broadcast(*operands)


def check_tensors(api, *args, names=("input", "other")):
    """TypeError, as torch's argument parser, for ops with no Python-number overload
    (``maximum(x, 2)``, ``atan2(2, x)``): each of ``args`` must be a Tensor."""
    for pos, (name, v) in enumerate(zip(names, args), 1):
        if not isinstance(v, Tensor):
            raise not_a_tensor(api, v, name, pos)


def check_tensor_seq(api, tensors, name="tensors"):
    """``check_tensors`` for a function of ``*tensors`` (one list or tuple of them also taken)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    check_tensors(api, *tensors, names=(name,) * len(tensors))


def check_not_two_numbers(api, a, b):
    """TypeError, as torch, when neither operand of ``api(a, b)`` is a Tensor (``eq(2, 3)``)."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{api}() received an invalid combination of arguments - got ({type(a).__name__}, "
                        f"{type(b).__name__}): at least one argument must be a Tensor")


def _check_scalar_value(value, api, sig, dtype=None):
    """TypeError, as torch's argument parser, when a fill value is neither a tensor nor a
    number (a str, None, a list, a numpy array). ``sig`` is the tensor signature torch lists.
    With ``dtype`` (the filled tensor's), RuntimeError when a number does not fit that dtype
    (c10's overflow check: ``check_fits`` for integers, ``check_float_fits`` for floats)."""
    if not isinstance(value, (Tensor,) + _Number):
        raise TypeError(f"{api}() received an invalid combination of arguments - got ({type(value).__name__}), but "
                        f"expected one of: ({sig}) or a Number value; pass a Python number or a 0-dim tensor")
    if dtype is not None:
        check_number_fits(value, dtype, api)
        check_float_fits(value, dtype, api)


def check_number_fits(value, dtype, api):
    """RuntimeError, as torch, when the Python int/float ``value`` (bools and complex numbers
    pass) does not fit the integer ``dtype`` it is converted to (c10's overflow check);
    OverflowError for an int past 64 bits, whatever the dtype."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if isinstance(value, float) or -2 ** 63 <= value < 2 ** 64:
        check_fits(np.asarray(value), dtype, api)
    else:   # an int past 64 bits: torch's argument parser refuses it
        raise OverflowError(f"{api}: int too big to convert ({value} needs more than 64 bits)")


def check_scalar_factor(value, dtype, api):
    """RuntimeError, as torch, when the number ``value`` (addcmul's ``value``) cannot be converted
    to the computation's ``dtype``: NaN/inf/300 into int8, 1e39 into float32 -- float16 and
    bfloat16 compute in float32 there, so their limit is float32's; OverflowError past 64 bits."""
    check_number_fits(value, dtype, api)
    check_float_fits(value, _dt.float32 if dtype.is_floating_point and dtype.itemsize == 2 else dtype, api)


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


def alpha_arg(alpha):
    """The op's alpha argument: None for none or 1. A tensor alpha (an optimizer's lr inside a
    compiled step is a traced 0-d tensor: ``p.add_(mu, alpha=-group['lr'])``) passes through
    without ``== 1``, whose truth value would read the traced value (a graph break)."""
    return None if alpha is None or (not isinstance(alpha, Tensor) and alpha == 1) else alpha


_DEPRECATED_KEY = "<torch's deprecated signatures>"


def warn_deprecated_overload(message):
    """torch warns about its deprecated signatures (``add_(Number alpha, Tensor other)``,
    ``addcmul(Number value, ...)``, ``addmm(Number beta, ...)``) from one ``TORCH_WARN_ONCE`` site:
    the first use of any of them in a process warns, at the user's line; later uses (of any op)
    are silent unless ``set_warn_always(True)``. A compiled step calling one then does not
    warn on every call either."""
    _warn.warn_once(message, UserWarning, key=_DEPRECATED_KEY)


class _DefaultOne(int):
    """The default ``alpha=1`` / ``value=1`` of add/sub/addcmul/addcdiv (and their in-place
    forms): an int 1 that tells the default from an explicit ``alpha=1``, because torch's
    deprecated scalar-first overloads (``add_(Number alpha, Tensor other)``) take no ``alpha=``
    keyword at all (``x.add_(2, other, alpha=1)`` is its TypeError). ``alpha_first`` and
    ``value_first`` turn it into a plain 1 before anything else sees it."""
    __slots__ = ()

    def __repr__(self):
        return "1"


DEFAULT_ONE = _DefaultOne(1)


def alpha_first(api, other, rest, alpha):
    """torch's deprecated overload ``add(Number alpha, Tensor other)`` (also ``add_``, ``sub``,
    ``sub_``), still accepted by torch (``warn_deprecated_overload``) and used by old tutorials
    (``p.data.add_(-lr, p.grad.data)``). Returns ``(other, alpha)``; TypeError, as torch, for any
    other extra positional argument, and for ``alpha=`` given with the deprecated form."""
    explicit = alpha is not DEFAULT_ONE
    if not explicit:
        alpha = 1
    if not rest:
        return other, alpha
    # a 0-dim tensor also binds as the Number alpha (torch.add(t, tensor(True), True))
    scalar = isinstance(other, _Number) or (isinstance(other, Tensor) and other._value.ndim == 0)
    if len(rest) == 1 and scalar and isinstance(rest[0], (Tensor,) + _Number) and explicit:
        raise TypeError(f"{api}(): the deprecated {api}(Number alpha, Tensor other) takes no alpha= keyword "
                        f"(got alpha={alpha!r}); call {api}(other, alpha=...)")
    if len(rest) == 1 and scalar and isinstance(rest[0], (Tensor,) + _Number):
        warn_deprecated_overload(f"This overload of {api} is deprecated:\n\t{api}(Number alpha, Tensor other)\n"
                                 f"Consider using one of the following signatures instead:\n"
                                 f"\t{api}(Tensor other, *, Number alpha = 1)")
        return rest[0], other.item() if isinstance(other, Tensor) else other
    raise TypeError(f"{api}() takes 1 positional argument but {1 + len(rest)} were given "
                    f"(pass alpha by keyword: {api}(other, alpha=...))")


def check_alpha(api, self, other, alpha):
    """torch's alpha rules for add/sub/rsub and their in-place forms: a Number (an explicit None
    is the parser's TypeError); a bool alpha only for bool results; no float alpha for integral
    ones; no complex alpha for real ones (the imaginary part would be dropped); no float alpha
    past float32's range for a float32 (or narrower) result."""
    if type(alpha) is int:   # the default (1) and ints: nothing to check
        return
    if isinstance(alpha, Tensor):
        check_scalar_tensor(api, "alpha", alpha)
        # a 0-d tensor alpha is a Scalar to torch, under the same kind rules as a number
        alpha = {0: True, 1: 1, 2: 1.0, 3: 1j}[alpha.dtype._cat] if alpha.ndim == 0 else 1   # (kind only: no .item())
    if type(alpha) is int:
        return
    if alpha is None or not isinstance(alpha, (float, complex, bool)) and type(alpha).__module__ != "numpy":
        raise TypeError(f"{api}(): argument 'alpha' must be Number, not {type(alpha).__name__}; leave it out for alpha=1")
    result = result_dtype(self, other)
    cat = result._cat
    if isinstance(alpha, (bool, np.bool_)):
        if cat != 0:
            raise RuntimeError(f"{api}: Boolean alpha only supported for Boolean results; pass alpha=1")
        return
    if cat <= 1 and isinstance(alpha, (float, complex, np.floating, np.complexfloating)):
        raise RuntimeError(f"{api}: For integral input tensors, argument alpha must not be a floating point "
                           "number; pass an int alpha or a float tensor")
    if cat <= 2 and isinstance(alpha, (complex, np.complexfloating)):
        raise RuntimeError(f"{api}: For non-complex input tensors, argument alpha must not be a complex number "
                           f"(got {alpha}); pass a real alpha, or complex tensors")
    check_past_f32(api, result, alpha, own_range=True)   # 1e39 for a float32 result: torch's checked conversion


# c10's names of the C++ types a Scalar argument is converted to, for its overflow message
_F16_MAX = float(np.finfo(np.float16).max)
# the dtype whose range a number given to an op on a half-precision input must fit: torch's
# kernels read it as float32 (the op's math type) before any rounding to the input's dtype
_F32_OF = {"float16": _dt.float32, "bfloat16": _dt.float32}
_CPP_TYPE = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
             "int64": "int64_t", "int32": "int", "int16": "int16_t", "int8": "int8_t", "uint8": "uint8_t",
             "bool": "bool"}


def check_real_scalars(api, dtype, **scalars):
    """RuntimeError, as torch's checked Scalar conversion, for a complex number with a nonzero
    imaginary part passed as ``value=``/``alpha=``/``beta=``/``weight=`` of an op whose
    result ``dtype`` is not complex (the imaginary part would be dropped silently). A bool result
    takes any number (c10's conversion to bool is ``v != 0`` and never overflows). Also
    RuntimeError for a finite float past float32's range when ``dtype`` computes in float32 or
    narrower (``leaky_relu(x, 1e39)``: torch's checked conversion; half types' ops read their
    numbers as float32, so float32's limit is the one checked)."""
    for v in scalars.values():   # check_past_f32, inlined: this runs on every leaky_relu/lerp call
        if type(v) is float and not -_F16_MAX <= v <= _F16_MAX:
            check_past_f32(api, dtype, v)
    if dtype.is_complex or dtype.name == "bool":
        return
    for name, v in scalars.items():
        if isinstance(v, (complex, np.complexfloating)) and v.imag != 0:
            raise RuntimeError(f"{api}: value cannot be converted to type {_CPP_TYPE.get(dtype.name, dtype.name)} "
                               f"without overflow ({name}={v} has an imaginary part and the result is "
                               f"{dtype.name}); pass a real {name}, or complex tensors")


def check_past_f32(api, dtype, *values, real_kernel=False, own_range=False):
    """RuntimeError, as torch's checked conversion, when a float among ``values`` is finite but
    past float32's range and the op computes in float32 or narrower (``dtype``, the input's:
    ``softplus(x, beta=1e39)``); unchecked, the op ran with inf. NaN, inf, tensors and numbers
    for a float64 input pass. ``own_range``: the number must fit ``dtype`` itself (torch's
    ``hardtanh``/``add`` convert it to float16, not float32: 1e5 is refused). ``real_kernel``:
    torch's kernel has no complex version and refuses a complex input first (its
    NotImplementedError), so a complex ``dtype`` is not checked here. Two comparisons per number
    when it lies within float16's range (every common slope, bound and alpha)."""
    for v in values:
        if type(v) is float and not -_F16_MAX <= v <= _F16_MAX:
            if not (real_kernel and dtype.is_complex):
                check_float_fits(v, dtype if own_range else _F32_OF.get(dtype.name, dtype), api)


def check_scalar_tensor(api, name, v):
    """torch's parser binds a Tensor to a Number argument (``value=``, ``alpha=``) only when it is
    0-dim and does not require grad (a gradient could not flow through a Number); otherwise the
    parser's TypeError."""
    if v.ndim != 0 or v.requires_grad:
        raise TypeError(f"{api}(): argument '{name}' must be Number, not Tensor; pass a number or a "
                        "0-dim tensor that does not require grad")


def value_first(api, tensor1, tensor2, rest, value):
    """torch's deprecated overload ``addcmul(Number value, Tensor tensor1, Tensor tensor2)`` (also
    ``addcmul_``, ``addcdiv``, ``addcdiv_``), still accepted (``warn_deprecated_overload``) and used by old
    optimizer code (``exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)``). Returns
    ``(tensor1, tensor2, value)``; TypeError, as torch, for a tensor1 or tensor2 that is not a
    Tensor, for any other extra positional argument, and for ``value=`` given with the deprecated
    form."""
    explicit = value is not DEFAULT_ONE
    if not explicit:
        value = 1
    if isinstance(value, Tensor):
        check_scalar_tensor(api, "value", value)
    if not rest:
        if not (isinstance(tensor1, Tensor) and isinstance(tensor2, Tensor)):
            # a number was broadcast as a tensor (a list failed with Python's words): torch's parser
            check_tensors(api, tensor1, tensor2, names=("tensor1", "tensor2"))
        return tensor1, tensor2, value
    if len(rest) == 1 and isinstance(tensor1, _Number) and isinstance(tensor2, Tensor) and isinstance(rest[0], Tensor):
        if explicit:
            raise TypeError(f"{api}(): the deprecated {api}(Number value, Tensor tensor1, Tensor tensor2) takes no "
                            f"value= keyword (got value={value!r}); call {api}(tensor1, tensor2, value=...)")
        warn_deprecated_overload(f"This overload of {api} is deprecated:\n\t{api}(Number value, Tensor tensor1, Tensor tensor2)\n"
                                 f"Consider using one of the following signatures instead:\n"
                                 f"\t{api}(Tensor tensor1, Tensor tensor2, *, Number value = 1)")
        return tensor2, rest[0], tensor1
    raise TypeError(f"{api}() takes 2 positional arguments but {2 + len(rest)} were given "
                    f"(pass value by keyword: {api}(tensor1, tensor2, value=...))")


def beta_first(api, input, a, b, rest, beta, alpha, names=("mat1", "mat2")):
    """torch's deprecated overloads with the scalars first: ``x.addmm(Number beta, [Number alpha,]
    Tensor mat1, Tensor mat2)`` (method and in-place) and ``torch.addmm(Number beta, Tensor input,
    [Number alpha,] Tensor mat1, Tensor mat2)`` (also ``addbmm``, ``baddbmm``, ``addmv``,
    ``addr``), still accepted by torch (``warn_deprecated_overload``) and used by old metric-learning code
    (``dist.addmm_(1, -2, x, x.t())``). ``input, a, b, rest`` are the positional arguments as
    the keyword-scalar signature binds them; a 0-dim tensor binds as a Number. Returns
    ``(input, a, b, beta, alpha)``; TypeError, as torch, for any other extra positional argument."""
    if not rest:
        return input, a, b, beta, alpha

    def scalar(v):
        return isinstance(v, _Number) or (isinstance(v, Tensor) and v.ndim == 0)

    def num(v):
        return v.item() if isinstance(v, Tensor) else v

    defaults = type(beta) is int and beta == 1 and type(alpha) is int and alpha == 1
    m1, m2 = names
    new = None
    if defaults and len(rest) in (1, 2) and all(isinstance(t, Tensor) and t.ndim > 0 for t in rest):
        if scalar(input) and isinstance(a, Tensor):           # the function form: beta, input first
            if len(rest) == 1 and isinstance(b, Tensor):
                new = (a, b, rest[0], num(input), 1)
            elif len(rest) == 2 and scalar(b):
                new = (a, rest[0], rest[1], num(input), num(b))
        elif isinstance(input, Tensor) and scalar(a):         # the method form: self, beta first
            if len(rest) == 1 and isinstance(b, Tensor):
                new = (input, b, rest[0], num(a), 1)
            elif len(rest) == 2 and scalar(b):
                new = (input, rest[0], rest[1], num(a), num(b))
    if new is None:
        raise TypeError(f"{api}() takes 3 positional arguments but {3 + len(rest)} were given "
                        f"(pass beta and alpha by keyword: {api}(input, {m1}, {m2}, beta=..., alpha=...))")
    sig = "Number beta, Number alpha" if len(rest) == 2 else "Number beta"
    warn_deprecated_overload(f"This overload of {api} is deprecated:\n\t{api}({sig}, Tensor {m1}, Tensor {m2})\n"
                             f"Consider using one of the following signatures instead:\n"
                             f"\t{api}(Tensor {m1}, Tensor {m2}, *, Number beta = 1, Number alpha = 1)")
    return new


def function_form_of(api, fn):
    """``tracegrad.<api>`` for a ``beta_first`` op: torch's function form has its deprecated
    scalars-first overloads with beta before ``input`` only (``torch.addmm(0.5, x, a, b)``);
    ``torch.addmm(x, 0.5, a, b)``, the method form's order, is a TypeError there, as in torch."""
    @functools.wraps(fn)
    def function_form(*args, **kwargs):
        if len(args) > 3 and isinstance(args[0], Tensor) and args[0].ndim > 0:
            raise TypeError(f"{api}() received an invalid combination of arguments: {len(args)} positional "
                            f"arguments with a tensor first; pass beta and alpha by keyword "
                            f"({api}(input, a, b, beta=..., alpha=...))")
        return fn(*args, **kwargs)
    function_form.__signature__ = inspect.signature(fn)
    return function_form


def check_lerp_end(api, end, weight=0.0):
    """torch's lerp overloads take a Tensor ``end`` and a Tensor or number ``weight``: TypeError
    otherwise (a list or tuple weight would else be taken as data and broadcast)."""
    if not isinstance(end, Tensor):
        raise TypeError(f"{api}() received an invalid combination of arguments - got end of type "
                        f"{type(end).__name__}; end must be a Tensor (weight a Tensor or a number)")
    if isinstance(weight, (list, tuple, dict, set)):
        raise TypeError(f"{api}() received an invalid combination of arguments - got weight of type "
                        f"{type(weight).__name__}; weight must be a Tensor or a number (tracegrad.tensor(...) "
                        "makes one from a list)")


def check_lerp_dtype(self):
    """lerp and lerp_ take floating or complex tensors only (torch has no integer kernel)."""
    if self.dtype._cat < 2:
        raise NotImplementedError(f"\"lerp_kernel_scalar\" not implemented for '{_SCALAR_NAME[self.dtype.name]}'; "
                                  "lerp takes floating or complex tensors")


def check_rounding_mode(rounding_mode):
    """torch's parser takes a str or None as ``rounding_mode`` (TypeError otherwise); its kernel
    then takes 'trunc', 'floor' or None (RuntimeError)."""
    if rounding_mode is not None and not isinstance(rounding_mode, str):
        raise TypeError(f"div(): argument 'rounding_mode' must be str or None, not {type(rounding_mode).__name__}")
    if rounding_mode not in (None, "trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


def check_sub_bool(a, b):
    """torch refuses a subtraction with any bool operand (a bool tensor or a Python bool)."""
    def is_bool(v):
        return isinstance(v, (bool, np.bool_)) or (isinstance(v, Tensor) and v.dtype is _dt.bool_)
    if is_bool(a) and is_bool(b):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if is_bool(a) or is_bool(b):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")
