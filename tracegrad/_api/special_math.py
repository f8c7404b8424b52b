"""Tensor methods and ``tracegrad.<name>`` functions for the special-function and scan ops
(``_ops/special.py``): lgamma, digamma, polygamma, mvlgamma, erfc, i0, nextafter, frexp,
ldexp, polar, logcumsumexp, cummax, cummin. The ``_special_*`` helpers without a torch
top-level name (i0e, i1, i1e, ndtri, log_ndtr) are used by ``tracegrad.special``.

Dtypes as torch: integer and bool inputs of the unary functions compute in the default float
dtype; gradients are JAX's VJP of the op (DESIGN 2.1).
"""
from __future__ import annotations

import math

import numpy as np

from ..autograd._dispatch import apply_op
from .._ops import dtypes as _dt
from .._ops.registry import OPS
from .._tensor.factories import tensor as _tensor
from .._tensor.tensor import Tensor, _wrap_dim
from ._registry import function, method
from .complex_api import check_complex_parts
from .inplace import _inplace_binary
from .promotion import check_past_f32, check_tensors, refuse_complex, require_floating, result_dtype
from .reduction import check_sortable, return_types


# torch's CPU kernels of these ops have no complex version: its refusal names the kernel
_COMPLEX_KERNEL = {"lgamma": "lgamma_vml_cpu", "digamma": "digamma", "erfc": "erfc_vml_cpu", "i0": "i0_vml_cpu"}


def _float_unary(name, half_kernel=None):
    """The function form of the floating unary op ``name`` (integers compute in the default
    float dtype); ``half_kernel``: torch's CPU kernel has no float16/bfloat16 version
    (NotImplementedError naming it)."""
    op = OPS[name]

    def f(input):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        if half_kernel and input.dtype.name in ("float16", "bfloat16"):
            raise NotImplementedError(f"\"{half_kernel}\" not implemented for '{_dt.SCALAR_NAMES[input.dtype.name]}'; "
                                      f"compute {name} in float32 (.float())")
        if input.is_floating_point():
            return apply_op(op, (input,))
        if input.is_complex():
            kernel = _COMPLEX_KERNEL.get(name, f"{name}_cpu")
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dt.SCALAR_NAMES[input.dtype.name]}'; "
                                      f"tracegrad.{name} takes a real tensor")
        return apply_op(op, (input,), (("dtype", _dt.get_default_dtype().np),))
    f.__name__ = name
    return f


lgamma = method("lgamma", function=True)(_float_unary("lgamma"))
lgamma.__doc__ = ("Mirrors ``torch.lgamma``: ``log|Gamma(x)|`` elementwise (integers give the default float "
                  "dtype). Autograd: ``LgammaBackward0`` (digamma).")
digamma = method("digamma", function=True)(_float_unary("digamma"))
digamma.__doc__ = ("Mirrors ``torch.digamma``: the derivative of ``lgamma`` elementwise. Autograd: "
                   "``DigammaBackward0`` (polygamma(1, x)).")
erfc = method("erfc", function=True)(_float_unary("erfc"))
erfc.__doc__ = "Mirrors ``torch.erfc``: ``1 - erf(x)`` computed without cancellation. Autograd: ``ErfcBackward0``."
i0 = method("i0", function=True)(_float_unary("i0"))
i0.__doc__ = ("Mirrors ``torch.i0``: the modified Bessel function of the first kind, order 0, elementwise. "
              "Autograd: ``I0Backward0`` (i1).")
_special_i0e = _float_unary("i0e")
_special_i1 = _float_unary("i1")
_special_i1e = _float_unary("i1e")
_special_ndtri = _float_unary("ndtri", "ndtri_cpu")   # no half kernel in torch (JAX failed in float16)
_special_log_ndtr = _float_unary("log_ndtr", "log_ndtr_cpu")
_special_entr = _float_unary("entr")
_special_erfcx = _float_unary("erfcx", "erfcx_cpu")


@method("logit", function=True)
def logit(input, eps=None):
    """Mirrors ``torch.logit``: ``log(p / (1 - p))`` elementwise, with ``p`` clamped to
    ``[eps, 1 - eps]`` when ``eps`` is given (the gradient is 0 outside; without it the
    gradient is ``1 / (x (1 - x))``, inf at 0 and 1, NaN outside [0, 1]). Autograd:
    ``LogitBackward0``. Integers give the default float dtype; NotImplementedError for a complex tensor, as torch."""
    refuse_complex("logit", "logit_cpu", input)
    # torch converts eps to the computation's type, checked (1e39 for a float32 result)
    check_past_f32("logit", input.dtype if input.is_floating_point() else _dt.get_default_dtype(), eps,
                   own_range=True)
    statics = () if eps is None or eps < 0 else (("eps", float(eps)),)   # torch: a negative eps clamps nothing
    if not input.is_floating_point():
        statics += (("dtype", _dt.get_default_dtype().np),)
    return apply_op(OPS["logit"], (input,), statics)


@method("polygamma")
def _polygamma_method(self, n):
    """Mirrors ``Tensor.polygamma(n)``: see ``tracegrad.polygamma``."""
    return polygamma(n, self)


@function()
def polygamma(n, input):
    """Mirrors ``torch.polygamma(n, input)``: the ``n``-th derivative of digamma, elementwise
    (``n`` a non-negative int). Integers give the default float dtype. Autograd:
    ``PolygammaBackward0``. RuntimeError for a negative ``n``, as torch."""
    if int(n) < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n, got n={n}; pass n >= 0")
    if n == 0:
        return digamma(input)
    st = () if input.is_floating_point() else (("dtype", _dt.get_default_dtype().np),)
    return apply_op(OPS["polygamma"], (input,), (("n", int(n)),) + st)


@method("mvlgamma", function=True)
def mvlgamma(input, p):
    """Mirrors ``torch.mvlgamma(input, p)``: the multivariate log-gamma of dimension ``p``,
    ``p(p-1)/4 log(pi) + sum_j lgamma(x - j/2)`` for ``j < p`` (inf where an argument hits a
    pole; torch 2.13 no longer checks ``x > (p-1)/2``). Integers give the default float dtype.
    RuntimeError for ``p < 1`` or a bool tensor, as torch; NotImplementedError for a complex tensor."""
    refuse_complex("mvlgamma", "arange_cpu", input)
    if input.dtype is _dt.bool_:
        raise RuntimeError("mvlgamma: The input tensor may not be a boolean tensor; convert it with .float()")
    if p < 1:
        raise RuntimeError(f"mvlgamma: p has to be greater than or equal to 1, got {p}")
    x = input if input.is_floating_point() else input.to(_dt.get_default_dtype())
    j = _tensor(np.arange(p, dtype=np.float64) / 2, dtype=x.dtype)
    return lgamma(x.unsqueeze(-1) - j).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


@method("nextafter", function=True)
def nextafter(input, other):
    """Mirrors ``torch.nextafter``: the next representable float after ``input`` towards
    ``other``, elementwise (broadcast; the promoted floating dtype). Autograd as torch
    (``NextafterBackward0``): gradient 1 for ``input``, 0 for ``other``. NotImplementedError for
    integer inputs."""
    if not isinstance(input, Tensor):   # (a number with a Tensor other was computed): torch's parser
        check_tensors("nextafter", input)
    other = other if isinstance(other, Tensor) else _tensor(other, dtype=input.dtype)
    require_floating("nextafter", input, other)
    return apply_op(OPS["nextafter"], (input, other), (("dtype", result_dtype(input, other).np),))


@method("frexp", function=True)
def frexp(input):
    """Mirrors ``torch.frexp``: ``(mantissa, exponent)`` with ``input = mantissa * 2**exponent``,
    ``|mantissa|`` in [0.5, 1); mantissa in the input's dtype, exponent int32 (0 for 0, inf,
    NaN). Autograd: ``FrexpBackward0``, the mantissa's gradient ``grad / 2**exponent``.
    RuntimeError for a non-floating input, as torch."""
    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes; convert the input with .float()")
    m, e = apply_op(OPS["frexp"], (input,))
    return return_types.frexp(m, e)


@method("ldexp", function=True)
def ldexp(input, other):
    """Mirrors ``torch.ldexp``: ``input * 2**other`` (``2**other`` in the default float dtype,
    then torch's promotion: integer inputs give float32). Gradient through the product.
    Differs from torch: torch 2.13's gradient for ``input`` is 0 where an integer ``other`` is
    negative (it computes ``2**other`` in integers); tracegrad's is ``2**other``. TypeError for a
    number operand, as torch."""
    check_tensors("ldexp", input, other)
    if other.dtype is _dt.bool_ and input.dtype.is_floating_point:
        # torch's kernel for a real floating input has no bool exponent ("ldexp_cpu_exp"); an
        # integer, bool or complex input takes one
        raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool': ldexp of a floating input takes an "
                                  "integer or floating exponent tensor; convert other with .int()")
    dt = result_dtype(input, other)
    real = {"complex64": _dt.float32, "complex128": _dt.float64}.get(dt.name, dt) \
        if dt.is_complex or dt.is_floating_point else None   # 2**other in the result's precision: float64 reaches 2**1023
    return input * (2.0 ** (other.to(real) if real is not None else other))


@function()
def polar(abs, angle):
    """Mirrors ``torch.polar``: the complex tensor ``abs * (cos(angle) + i sin(angle))``
    (complex64 for float32 inputs, complex128 for float64). RuntimeError unless both are
    float tensors of one dtype, as torch."""
    check_tensors("polar", abs, angle, names=("abs", "angle"))
    check_complex_parts(abs, angle)
    return abs * angle.cos() + (abs * angle.sin()) * 1j


@method("logcumsumexp", function=True)
def logcumsumexp(input, dim):
    """Mirrors ``torch.logcumsumexp``: ``log(cumsum(exp(input), dim))`` without overflow; same
    shape and dtype. Autograd: ``LogcumsumexpBackward0``. NotImplementedError for integer
    inputs, IndexError for a bad ``dim``, as torch."""
    require_floating("logcumsumexp_out", input)
    d = _wrap_dim(dim, input.ndim)   # checked for a 0-d input too (its range is [-1, 0]), as torch
    return apply_op(OPS["logcumsumexp"], (input,), (("dim", d if input.ndim else 0),))


def _cum_extreme(kind):
    op = OPS[kind]

    def f(input, dim):
        if input.numel() == 0:   # torch's kernel returns at once for an empty input: any dim, any dtype
            try:
                d = _wrap_dim(dim, input.ndim)
            except IndexError:
                d = 0
            return getattr(return_types, kind)(*apply_op(op, (input,), (("dim", d),)))
        check_sortable(input, kind, NotImplementedError)
        d = _wrap_dim(dim, input.ndim)
        if input.ndim == 0:
            v, i = apply_op(op, (input.reshape(1),), (("dim", 0),))
            return getattr(return_types, kind)(v.reshape(()), i.reshape(()))
        return getattr(return_types, kind)(*apply_op(op, (input,), (("dim", d),)))
    f.__name__ = kind
    f.__doc__ = (f"Mirrors ``torch.{kind}(input, dim)``: the running {kind[3:]}imum along ``dim`` and the "
                 f"index (int64) where it was found (the later one on ties; a NaN sticks), a named tuple "
                 f"``(values, indices)``. Autograd: ``{kind.capitalize()}Backward0`` (to the chosen elements). "
                 "IndexError for a bad ``dim``; NotImplementedError for a complex input.")
    return f


cummax = method("cummax", function=True)(_cum_extreme("cummax"))
cummin = method("cummin", function=True)(_cum_extreme("cummin"))

__all__ = ["logit", "lgamma", "digamma", "polygamma", "mvlgamma", "erfc", "i0", "nextafter", "frexp", "ldexp", "polar",
           "logcumsumexp", "cummax", "cummin"]


def _igamma(name):
    op = OPS[name]

    def f(input, other):
        # torch's parser: no Number overload on either side (igamma(2, x) is refused as igamma(x, 2))
        for pos, (arg, v) in enumerate((("input", input), ("other", other)), 1):
            if not isinstance(v, Tensor):
                raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(v).__name__}")
        require_floating(name, input, other)
        return apply_op(op, (input, other), (("dtype", result_dtype(input, other).np),))
    f.__name__ = name
    return method(name, function=True)(f)


igamma = _igamma("igamma")
igamma.__doc__ = ("Mirrors ``torch.igamma`` (``special.gammainc``): the regularized lower incomplete gamma "
                  "function ``P(input, other)``, broadcasting, floating inputs. Autograd: ``IgammaBackward0``, "
                  "a gradient for ``other`` only (torch has none for ``input``). NotImplementedError for "
                  "integer inputs.")
igammac = _igamma("igammac")
igammac.__doc__ = ("Mirrors ``torch.igammac`` (``special.gammaincc``): ``1 - igamma(input, other)``, the "
                   "regularized upper incomplete gamma function. Autograd: ``IgammacBackward0`` (``other`` only).")
igamma_ = method("igamma_")(_inplace_binary("igamma"))
igammac_ = method("igammac_")(_inplace_binary("igammac"))


def special_zeta(input, other):
    """``torch.special.zeta(input, other)``: the Hurwitz zeta function ``sum_k (k + other) ** -input``,
    broadcasting (numbers allowed on either side), promoted to floating. No gradient, as torch.
    NotImplementedError for float16/bfloat16 (torch has no such kernel)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("special_zeta(): expected at least one Tensor argument")
    ref = input if isinstance(input, Tensor) else other
    input = input if isinstance(input, Tensor) else _tensor(input, dtype=ref.dtype)
    other = other if isinstance(other, Tensor) else _tensor(other, dtype=ref.dtype)
    dt = result_dtype(input, other)
    if not dt.is_floating_point:
        dt = _dt.get_default_dtype()
    if dt.name in ("float16", "bfloat16"):
        raise NotImplementedError(f"\"zeta_cpu\" not implemented for '{_dt.SCALAR_NAMES[dt.name]}'; compute zeta in "
                                  f"float32 (.float())")
    return apply_op(OPS["zeta"], (input, other), (("dtype", dt.np),))
