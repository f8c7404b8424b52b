"""torch's ``out=`` keyword on the ``tracegrad.<name>`` form of functions that are also Tensor
methods (``torch.add(a, b, out=c)``; ``Tensor.add`` takes no ``out``, in torch as here), and on
the ``torch.special`` / ``torch.nn.functional`` functions that take one.

The registry shares one object between ``Tensor.<name>`` and ``tracegrad.<name>``; for the names
below the namespace gets ``accepts_out``'s wrapper instead, so the method's hot path is untouched
and the function form costs one extra Python call. Which rule each name follows is torch's
(checked against torch on PyTorch's OpInfo samples by tests/conformance/test_out_functions.py):

* ``CAST`` (TensorIterator ops): the result is cast to ``out``'s dtype unless that lowers its
  category (float -> int: RuntimeError); ``STACKS`` raise TypeError there, as ``cat`` does;
* ``DTYPE_FROM_OUT``: reductions and scans with a ``dtype=`` argument compute in ``out``'s dtype;
* ``EXACT``: kernels that insist on ``out`` having the result's own dtype (matrix products,
  ``where``, index results, ``abs``/``floor``/``neg``, gathers and selections).
"""
from __future__ import annotations

import functools
import inspect

from .argcheck import guard

from .._tensor.out import accepts_out

CAST = (
    "acos", "acosh", "add", "addcdiv", "addcmul", "addr", "angle", "arccos", "arccosh", "arcsin",
    "arcsinh", "arctan", "arctan2", "arctanh", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "clamp", "clamp_max", "clamp_min", "clip", "copysign", "cos", "cosh", "deg2rad", "digamma", "div",
    "divide", "eq", "erf", "erfc", "erfinv", "exp", "exp2", "expm1", "floor_divide", "fmax", "fmin",
    "fmod", "gcd", "ge", "ger", "greater", "greater_equal", "gt", "hypot", "i0", "igamma", "igammac",
    "kron", "lcm", "ldexp", "le", "lerp", "less", "less_equal", "lgamma", "log", "log10",
    "log1p", "log2", "logaddexp", "logaddexp2", "logical_and", "logical_not", "logical_or",
    "logical_xor", "logit", "logsumexp", "lt", "maximum", "minimum", "mul", "multiply", "mvlgamma",
    "ne", "nextafter", "not_equal", "outer", "polygamma", "pow", "rad2deg", "reciprocal", "remainder",
    "rsqrt", "sigmoid", "sin", "sinc", "sinh", "sqrt", "square", "std", "std_mean", "sub", "subtract",
    "tan", "tanh", "true_divide", "var", "var_mean", "xlogy",
)
STACKS = ("column_stack", "dstack", "hstack", "row_stack", "vstack")
DTYPE_FROM_OUT = ("sum", "prod", "nansum", "mean", "nanmean", "cumsum", "cumprod")
EXACT = (
    "abs", "absolute", "addbmm", "addmm", "addmv", "all", "amax", "amin", "aminmax", "any", "argmax",
    "argmin", "baddbmm", "bitwise_not", "bmm", "ceil", "complex", "conj_physical", "cummax", "cummin", "diag",
    "diff", "dot", "fix", "float_power", "floor", "frac", "frexp", "gather", "heaviside", "histc", "histogram",
    "index_add", "index_copy", "index_reduce", "index_select", "inner", "isin", "isneginf", "isposinf",
    "kthvalue", "log_softmax", "logcumsumexp", "masked_select", "matmul", "median", "mm", "mode",
    "msort", "mv", "nan_to_num", "nanmedian", "narrow_copy", "nanquantile", "neg", "negative", "nonzero", "norm", "polar",
    "quantile", "renorm", "round", "scatter", "scatter_add", "scatter_reduce", "sgn", "sign", "signbit",
    "slice_scatter", "softmax", "sort", "take", "take_along_dim", "topk", "tril", "triu", "trunc",
    "vdot", "where",
)
# (values, indices) forms insist on exact dtypes; max(x) and max(x, y) cast
MINMAX = ("max", "min")
# CAST names that are not TensorIterator kernels (reductions, products): they resize an out=
# that is also an input, where the elementwise ones refuse (accepts_out's iter_alias)
_NOT_ITER = frozenset(("std", "std_mean", "var", "var_mean", "logsumexp", "kron", "outer", "ger", "addr"))
RULES = {**{n: ({} if n in _NOT_ITER else {"iter_alias": True}) for n in CAST}, **{n: {"cast_error": TypeError} for n in STACKS},
         **{n: {"dtype_from_out": True} for n in DTYPE_FROM_OUT}, **{n: {"exact_dtype": True} for n in EXACT}, "where": {"exact_dtype": True, "iter_alias": True},
         **{n: {"exact_dtype": "tuples"} for n in MINMAX}}


def add_out(namespace: dict, names=None, prefix="", **how) -> None:
    """Replace each ``namespace[name]`` (``names``: default every name in ``RULES``, with its
    rule; otherwise the given names with rule ``how``) by its ``out=``-taking form, unless it
    already takes ``out``. ``prefix`` starts the API name in error messages (``special_``)."""
    for name in (RULES if names is None else names):
        fn = namespace.get(name)
        if fn is not None and "out" not in inspect.signature(fn, follow_wrapped=False).parameters:
            namespace[name] = accepts_out(prefix + name, **(RULES[name] if names is None else how))(fn)


def method_form(fn, name=None):
    """``Tensor.<name>`` for a function ``fn`` whose ``tracegrad.<name>`` form takes ``out=``
    (written with it, as ``torch.bernoulli``): torch's Tensor methods take no ``out`` and raise
    TypeError for one, so this does too. For functions off the per-op hot path only (one extra
    Python call); the elementwise methods are written without ``out`` and get it from ``add_out``."""
    label = name or fn.__name__

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        if "out" in kwargs:
            raise TypeError(f"{label}() got an unexpected keyword argument 'out'; Tensor.{label} takes no "
                            f"out=, call tracegrad.{label}(..., out=...) instead")
        return fn(self, *args, **kwargs)
    return guard(f"Tensor.{label}", method)   # torch's TypeError for a wrong kind (argcheck.py)
