"""``tracegrad.special``: the commonly used part of ``torch.special``, same names and arguments.

Most names are tracegrad's own functions under torch.special's spelling (``expit`` is
``tracegrad.sigmoid``, ``gammaln`` is ``tracegrad.lgamma``, ``psi`` is ``tracegrad.digamma``,
``multigammaln`` is ``tracegrad.mvlgamma``...); the rest are ops of the op table
(``_ops/special.py``: i0e, i1, i1e, ndtri, log_ndtr, entr, with JAX's derivatives) or short
compositions (``ndtr``, ``xlog1py``). Integer inputs give the default float dtype, as torch.
Non-Tensor inputs raise TypeError, as torch's.
"""
from __future__ import annotations

import math

from ._api import special_math as _sm
from ._api import special_functions as _sf
from ._api.composite import xlog_op
from ._api.out_functions import add_out
from ._api.functions import (
    digamma, erf, erfc, erfinv, exp2, expm1, i0, igamma, igammac, lgamma, log1p, log_softmax, logit, logsumexp,
    mvlgamma, polygamma, sigmoid, sinc, softmax, xlogy
)
from ._api.functions import round as _round
from ._ops.dtypes import get_default_dtype
from ._tensor.tensor import Tensor

__all__ = ["expit", "logit", "erf", "erfc", "erfinv", "exp2", "expm1", "log1p", "gammaln", "digamma", "psi",
           "polygamma", "multigammaln", "xlogy", "xlog1py", "entr", "sinc", "logsumexp", "softmax", "log_softmax",
           "i0", "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr", "round", "gammainc", "gammaincc", "erfcx", "zeta"]

expit = sigmoid            # torch.special.expit: the logistic sigmoid
gammaln = lgamma           # torch.special.gammaln: log|Gamma(x)|
psi = digamma              # torch.special.psi: an alias of digamma
multigammaln = mvlgamma    # torch.special.multigammaln(input, p)
gammainc = igamma          # torch.special.gammainc: the regularized lower incomplete gamma function
gammaincc = igammac        # torch.special.gammaincc: the regularized upper incomplete gamma function
zeta = _sm.special_zeta

i0e = _sm._special_i0e
i0e.__doc__ = ("Mirrors ``torch.special.i0e``: ``exp(-|x|) * i0(x)`` elementwise, without overflow. "
               "Autograd: ``SpecialI0EBackward0``. TypeError for a non-Tensor.")
i1 = _sm._special_i1
i1.__doc__ = ("Mirrors ``torch.special.i1``: the modified Bessel function of the first kind, order 1. "
              "Autograd: ``SpecialI1Backward0``. TypeError for a non-Tensor.")
i1e = _sm._special_i1e
i1e.__doc__ = ("Mirrors ``torch.special.i1e``: ``exp(-|x|) * i1(x)`` elementwise. Autograd: "
               "``SpecialI1EBackward0``. TypeError for a non-Tensor.")
ndtri = _sm._special_ndtri
ndtri.__doc__ = ("Mirrors ``torch.special.ndtri``: the inverse of the standard normal CDF (``-inf``/``inf`` "
                 "at 0/1, NaN outside [0, 1]). Autograd: ``SpecialNdtriBackward0``. TypeError for a non-Tensor.")
log_ndtr = _sm._special_log_ndtr
log_ndtr.__doc__ = ("Mirrors ``torch.special.log_ndtr``: ``log`` of the standard normal CDF, accurate in the "
                    "far left tail. Autograd: ``SpecialLogNdtrBackward0``. TypeError for a non-Tensor.")
erfcx = _sm._special_erfcx
erfcx.__doc__ = ("Mirrors ``torch.special.erfcx``: the scaled complementary error function ``exp(x**2) * "
                 "erfc(x)``, without overflow. Autograd: ``SpecialErfcxBackward0``. TypeError for a non-Tensor.")
entr = _sm._special_entr
entr.__doc__ = ("Mirrors ``torch.special.entr``: ``-x * log(x)`` for ``x > 0``, 0 at 0, ``-inf`` below. "
                "Autograd: ``SpecialEntrBackward0`` with torch's ``-(1 + log x)`` everywhere (inf at 0, NaN "
                "below). TypeError for a non-Tensor.")


def _float(x, api):
    if not isinstance(x, Tensor):
        raise TypeError(f"special_{api}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    return x if x.is_floating_point() else x.to(get_default_dtype())


def round(input, *, decimals=0, out=None):
    """Mirrors ``torch.special.round``: ``tracegrad.round`` for floating (and complex) tensors.
    NotImplementedError for integer and bool tensors: torch.special.round goes to the rounding
    kernel, built for floating types only (where ``tracegrad.round``, as ``torch.round``, returns
    an integer tensor unchanged)."""
    if isinstance(input, Tensor) and not (input.is_floating_point() or input.is_complex()):
        raise NotImplementedError(f"special.round: \"round_vml_cpu\" not implemented for '{input.dtype}'; convert "
                                  "the input with .float() first")
    return _round(input, decimals=decimals, out=out)


def ndtr(input):
    """Mirrors ``torch.special.ndtr``: the standard normal CDF ``(1 + erf(x / sqrt 2)) / 2``
    elementwise (computed as ``erfc(-x / sqrt 2) / 2``, accurate in the left tail). Gradient
    through ``erfc``. TypeError for a non-Tensor; NotImplementedError for a complex tensor (torch's
    erf kernel has none), where casting it would drop the imaginary part."""
    if isinstance(input, Tensor) and input.is_complex():
        raise NotImplementedError(f"special.ndtr: \"erf_vml_cpu\" not implemented for "
                                  f"'{'ComplexDouble' if input.dtype.itemsize == 16 else 'ComplexFloat'}'; "
                                  "take .real or .abs() first")
    return erfc(_float(input, "ndtr") * (-1 / math.sqrt(2))) * 0.5


def xlog1py(input, other):
    """Mirrors ``torch.special.xlog1py``: ``input * log1p(other)``, 0 where ``input`` is 0
    (unless ``other`` is NaN); either may be a Python number; broadcast, promoted to floating.
    Autograd: torch's formulas (``SpecialXlog1PyBackward0/1/2``): d/dinput is ``log1p(other)``,
    0 where ``input`` is 0 and ``other <= -1``; d/dother is ``input / (1 + other)``."""
    return xlog_op("xlog1py", input, other)


# every torch.special function takes ``out=`` (the names bound to tracegrad's functions above
# already do: ``tracegrad.<name>`` has it)
# (TensorIterator kernels, as the elementwise ones: iter_alias, and out= checked before the kernel's dtype)
add_out(globals(), ("zeta", "i0e", "i1", "i1e", "ndtri", "log_ndtr", "erfcx", "entr", "ndtr", "xlog1py"),
        prefix="special_", iter_alias=True)


# ---- Bessel, Airy and orthogonal polynomials: no gradient in torch (outputs never require grad) --
_BESSEL_NOTE = (" Computed in float64 from Chebyshev fits of the function's smooth parts (``_ops/bessel.py``) "
                "and rounded once to the input's dtype. No gradient, as torch. TypeError for a non-Tensor; "
                "NotImplementedError for half precision or complex inputs.")
_TORCH_LESS_ACCURATE = (" torch's own kernel is off by up to {} (absolute) for {}; this one is within a few ulps of "
                        "the true value there, so the two differ by that much.")
_UNARY_DOCS = {
    "airy_ai": "the Airy function Ai(x) (NaN at +-inf, 0 beyond x = 103.892, as torch)."
               + _TORCH_LESS_ACCURATE.format("3e-6", "-3.7 < x < -2.09"),
    "bessel_j0": "the Bessel function of the first kind of order 0." + _TORCH_LESS_ACCURATE.format("4e-7", "3.5 < |x| < 10"),
    "bessel_j1": "the Bessel function of the first kind of order 1." + _TORCH_LESS_ACCURATE.format("5e-7", "4 < |x| < 11"),
    "bessel_y0": "the Bessel function of the second kind of order 0 (-inf at 0, NaN below)."
                 + _TORCH_LESS_ACCURATE.format("2e-7", "3.7 < x < 10.5"),
    "bessel_y1": "the Bessel function of the second kind of order 1 (-inf at 0, NaN below)."
                 + _TORCH_LESS_ACCURATE.format("9e-7", "3.6 < x < 10"),
    "modified_bessel_i0": "the modified Bessel function of the first kind of order 0 (``jax.scipy.special.i0``).",
    "modified_bessel_i1": "the modified Bessel function of the first kind of order 1 (``jax.scipy.special.i1``).",
    "modified_bessel_k0": "the modified Bessel function of the second kind of order 0 (inf at 0, NaN below).",
    "modified_bessel_k1": "the modified Bessel function of the second kind of order 1 (inf at 0, NaN below).",
    "scaled_modified_bessel_k0": "``exp(x) * modified_bessel_k0(x)`` without underflow (inf at 0, NaN below).",
    "scaled_modified_bessel_k1": "``exp(x) * modified_bessel_k1(x)`` without underflow (inf at 0, NaN below).",
    "spherical_bessel_j0": "the spherical Bessel function of the first kind of order 0, ``sin(x) / x`` (1 at 0, "
                           "0 at +-inf).",
}
for _api, _what in _UNARY_DOCS.items():
    globals()[_api] = _sf.unary(_api, f"Mirrors ``torch.special.{_api}(input)``: {_what}" + _BESSEL_NOTE)

_POLY_DOCS = {
    "chebyshev_polynomial_t": "Chebyshev polynomial of the first kind T_n",
    "chebyshev_polynomial_u": "Chebyshev polynomial of the second kind U_n",
    "chebyshev_polynomial_v": "Chebyshev polynomial of the third kind V_n",
    "chebyshev_polynomial_w": "Chebyshev polynomial of the fourth kind W_n",
    "shifted_chebyshev_polynomial_t": "shifted Chebyshev polynomial of the first kind T*_n(x) = T_n(2x - 1)",
    "shifted_chebyshev_polynomial_u": "shifted Chebyshev polynomial of the second kind U*_n(x) = U_n(2x - 1)",
    "shifted_chebyshev_polynomial_v": "shifted Chebyshev polynomial of the third kind V*_n(x) = V_n(2x - 1)",
    "shifted_chebyshev_polynomial_w": "shifted Chebyshev polynomial of the fourth kind W*_n(x) = W_n(2x - 1)",
    "hermite_polynomial_h": "physicists' Hermite polynomial H_n (NaN beyond degree 128 in float32, 512 in float64)",
    "hermite_polynomial_he": "probabilists' Hermite polynomial He_n (NaN beyond degree 128 in float32, 512 in float64)",
    "laguerre_polynomial_l": "Laguerre polynomial L_n",
    "legendre_polynomial_p": "Legendre polynomial P_n",
}
for _api, _what in _POLY_DOCS.items():
    globals()[_api] = _sf.polynomial(_api, (
        f"Mirrors ``torch.special.{_api}(x, n)``: the {_what} at ``x``, elementwise. ``x`` and ``n`` broadcast; "
        "either (not both) may be a Python number; the result has their promoted dtype (the default float dtype for "
        "integers). ``n`` is truncated to an integer; negative, NaN or infinite ``n`` give 0. Large degrees recur "
        "``n - 1`` times as torch does (NaN once the recurrence overflows, for |x| > 1); inside (-1, 1) the "
        "Chebyshev kinds use their trigonometric closed forms. Edge cases per ``_ops/orthopoly.py`` (NaN ``x`` with "
        "``n >= 2`` gives NaN where torch returns an uninitialised value). No gradient, as torch. TypeError when "
        "neither is a Tensor; NotImplementedError for half precision or complex."))
__all__ += [*_UNARY_DOCS, *_POLY_DOCS]
add_out(globals(), (*_UNARY_DOCS, *_POLY_DOCS), prefix="special_", iter_alias=True)
