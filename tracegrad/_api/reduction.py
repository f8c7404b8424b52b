"""Tensor methods, reduction family: sum..var/std, max/min, softmax, cumulative ops, sort/topk/quantile/median."""
from __future__ import annotations

import functools
import inspect

import numpy as np

from ..autograd._dispatch import apply_op, show_saved
from .._ops import dtypes as _dt
from .._ops.errors import not_a_tensor
from .._ops.registry import OPS
from .._tensor.layout import SparseOperand
from .._tensor.tensor import Size, Tensor, NO_HOST_VALUES, _wrap_dim
from .._ops.warn import warn as _warn
from ._registry import function, int_list_method, method
from .argcheck import require_int
from .elementwise import _unaries, maximum, minimum
from .promotion import _SCALAR_NAME
from .. import _state, return_types




# ---- reductions -------------------------------------------------------------------------
def _too_many_dims(ndim):
    raise RuntimeError(f"only tensors with up to 64 dims are supported (the input has {ndim}); "
                       "reduce with dim=None or reshape first")


def _dims(dim, ndim, limit=True):
    """``dim`` wrapped and checked, None for every dim. ``limit``: refuse named dims of a tensor of
    more than 64 dims, as torch's reductions (median's kernel does not)."""
    if dim is None:
        return None
    # torch's reductions mark the reduced dims in a 64-bit mask; dim=None and an empty dim list
    # (every dim: no mask) are fine
    if limit and ndim > 64 and not (isinstance(dim, (list, tuple, Size)) and len(dim) == 0):
        _too_many_dims(ndim)
    for i, d in enumerate(dim if isinstance(dim, (list, tuple, Size)) else (dim,)):
        # int() would take both; torch's parser takes a bool only after an int list's first element
        # a float tensor too: int() would truncate it, torch's parser refuses it (x.sum(tensor(1.)))
        if isinstance(d, float) or (type(d) is bool and i == 0) or (isinstance(d, Tensor) and d.dtype._cat >= 2):
            raise TypeError(f"reduction: argument 'dim' must be an int or a tuple of ints, not {type(d).__name__} ({d})")
    if isinstance(dim, (list, tuple, Size)):
        if len(dim) == 0:
            return None
        dims = [_wrap_dim(int(d), ndim) for d in dim]
        for i, d in enumerate(dims):
            if d in dims[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        return () if ndim == 0 else tuple(sorted(dims))
    d = _wrap_dim(int(dim), ndim)
    return () if ndim == 0 else (d,)   # a 0-d tensor's dim 0 / -1 is itself: reduce over no axis


def _check_floating(self, dtype, api):
    """torch's CPU kernels for softmax-like ops are not built for integer/bool inputs."""
    if dtype is None and self.dtype._cat <= 1:
        raise NotImplementedError(f'"{api}" not implemented for \'{_SCALAR_NAME[self.dtype.name]}\': pass '
                                  f"dtype=tracegrad.float32 or convert the input with .float() first")
    if dtype is not None and _dt.is_dtype_arg(dtype):   # a Python type too: dtype=int is int64, as torch
        dtype = _dt.to_dtype(dtype)
    if dtype is not None and isinstance(dtype, _dt.dtype) and dtype._cat <= 1:   # nor computed in one
        raise NotImplementedError(f'"{api}" not implemented for \'{_SCALAR_NAME[dtype.name]}\': pass a floating '
                                  f"dtype= (tracegrad.float32)")


def check_sortable(self, api, error=RuntimeError, bool_ok=True):
    """torch's CPU kernels of the sort family are not built for complex (``topk``, ``kthvalue``,
    ``median`` not for bool either): RuntimeError for sort/topk, NotImplementedError for the others."""
    try:
        plain = not (self.dtype.is_complex or (not bool_ok and self.dtype is _dt.bool_))
    except AttributeError:   # a number, a list, or a NumPy array (whose dtype has no is_complex)
        raise not_a_tensor(api, self) from None
    if plain:
        return
    kind = _SCALAR_NAME[self.dtype.name]
    if error is RuntimeError:
        raise RuntimeError(f"{api}(): {api} does not support {kind} dtypes on CPU; sort a real tensor "
                           "(.real, .abs() or .float())")
    raise NotImplementedError(f'"{api}_cpu" not implemented for \'{kind}\'')


def _dim1(dim, ndim):
    """One dim for softmax-like ops; a 0-d tensor's is no axis at all (torch accepts 0 and -1)."""
    d = _wrap_dim(dim, ndim)
    return () if ndim == 0 else d


def _to_dtype(self, dtype, api):
    """softmax-like ops with ``dtype=`` convert the input first (torch's graph: ToCopyBackward0
    below the op), so the gradient reaches the input in its own dtype."""
    return self if dtype is None else self.to(_dt.user_dtype(dtype, api))


def _sum_dtype(self, dtype, api):
    if dtype is not None:
        return _dt.user_dtype(dtype, api).np
    d = self.dtype
    return _dt.int64.np if (d._cat <= 1) else None


class _DimNotGiven:
    """``dim``'s default in sum/mean: torch picks the all-reduce overload (``SumBackward0``/
    ``MeanBackward0``) only when no ``dim`` is passed; an explicit ``dim=None`` (or ``()``) is
    the dim overload (``SumBackward1``/``MeanBackward1``), reducing everything."""
    __slots__ = ()

    def __repr__(self):
        return "None"


_NO_DIM = _DimNotGiven()


def check_keepdim_needs_dim(api, keepdim):
    """torch's overloads without ``dim`` take no ``keepdim``: ``x.sum(keepdim=True)`` matches none
    (TypeError), where ignoring it would silently drop the kept dims. (An explicit
    ``keepdim=False`` is indistinguishable from the default here, and changes nothing.)"""
    if keepdim is not False:
        raise TypeError(f"{api}() received an invalid combination of arguments - got keepdim= without dim; pass "
                        f"{api}(dim, keepdim=...) to keep the reduced dims")


@method(function=True)
def sum(self, dim=_NO_DIM, keepdim=False, *, dtype=None):
    """Mirrors ``torch.sum(input, dim=None, keepdim=False, dtype=None)``; integer and bool
    inputs sum to int64. Autograd: ``SumBackward0`` (no ``dim`` given) / ``SumBackward1`` (a
    ``dim`` given, ``None`` and ``()`` included)."""
    op = OPS["sum_dim"]
    if dim is _NO_DIM:
        check_keepdim_needs_dim("sum", keepdim)
        dim, op = None, OPS["sum"]
    dims = _dims(dim, self.ndim)
    try:
        return apply_op(op, (self,), (("dim", dims), ("keepdim", keepdim), ("dtype", _sum_dtype(self, dtype, "sum"))))
    except SparseOperand as e:   # torch.sum(sparse) (NOTE in _tensor/layout.py)
        return e.tensor._sparse_operand(e, "sum", self, dim, keepdim=keepdim, dtype=dtype)


@method(function=True)
def nansum(self, dim=None, keepdim=False, *, dtype=None):
    """Mirrors ``torch.nansum``: sum treating NaN as zero. Autograd: ``NansumBackward0``.
    RuntimeError for complex input (as torch on CPU)."""
    if self.dtype.is_complex:
        raise RuntimeError("nansum on CPU does not support complex inputs; sum the real and imaginary "
                           "parts separately")
    out_dtype = _sum_dtype(self, dtype, "nansum")
    # torch's floating kernel has no complex output either (an integer input is summed by ``sum``)
    if dtype is not None and self.dtype.is_floating_point and _dt.to_dtype(dtype).is_complex:
        raise NotImplementedError(f"\"nansum_cpu\" not implemented for '{_SCALAR_NAME[_dt.to_dtype(dtype).name]}'; "
                                  "pass a real dtype= and sum the real and imaginary parts separately")
    dims = _dims(dim, self.ndim)
    return apply_op(OPS["nansum"], (self,), (("dim", dims), ("keepdim", keepdim), ("dtype", out_dtype)))


@method(function=True)
def mean(self, dim=_NO_DIM, keepdim=False, *, dtype=None):
    """Mirrors ``torch.mean``: ``MeanBackward0`` when no ``dim`` is given, ``MeanBackward1`` for
    any ``dim`` (``None`` included). RuntimeError for integer inputs without ``dtype`` (as torch)."""
    given = dim is not _NO_DIM
    if not given:
        check_keepdim_needs_dim("mean", keepdim)
    dim = dim if given else None
    d = _dt.user_dtype(dtype, "mean") if dtype is not None else self.dtype
    if not (d.is_floating_point or d.is_complex):
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {_SCALAR_NAME[d.name]}")
    dims = _dims(dim, self.ndim)
    st = (("dim", dims), ("keepdim", keepdim), ("dtype", None if dtype is None else d.np))
    return apply_op(OPS["mean_dim" if given else "mean"], (self,), st)


@method(function=True)
def nanmean(self, dim=None, keepdim=False, *, dtype=None):
    """Mirrors ``torch.nanmean``: ``nansum / count of non-NaN`` (``DivBackward0``), in ``dtype``
    when given. RuntimeError for an integer or bool input."""
    if self.dtype._cat <= 1:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{_SCALAR_NAME[self.dtype.name]}")
    if dim is None and self.ndim > 64:   # torch's nanmean names every dim: the 64-bit dim mask
        _too_many_dims(self.ndim)
    if dtype is not None:    # torch checks the dtype asked for, and refuses complex input, before any cast
        d = _dt.user_dtype(dtype, "nanmean")
        if d._cat <= 1:
            raise RuntimeError(f"nanmean(): could not infer output dtype. Optional dtype must be either a floating "
                               f"point or complex dtype. Got: {_SCALAR_NAME[d.name]}")
        if self.dtype.is_complex:
            return nansum(self)
    self = _to_dtype(self, dtype, "nanmean")
    m = ~_unaries["isnan"](self)
    return nansum(self, dim, keepdim) / sum(m, dim, keepdim)

def _single_dim_tensor(api, dim):
    """torch's parser takes a tensor for ``api``'s one ``int dim`` only when it is a 0-d integer
    tensor (``__index__``); a bool tensor or a one-element 1-d tensor, which an ``int[1]`` dim
    (``sum``) would take, is its TypeError here."""
    if isinstance(dim, Tensor) and (dim.ndim != 0 or dim.dtype._cat != 1):
        raise TypeError(f"{api}(): argument 'dim' must be int, not Tensor (a {dim.dtype} tensor of shape "
                        f"{list(dim.shape)}); pass an int or a 0-d integer tensor")



@method(function=True)
def prod(self, dim=None, keepdim=False, *, dtype=None):
    """Mirrors ``torch.prod(input, dim=None, keepdim=False)``: one dim only (TypeError for a
    sequence of dims, as torch's parser)."""
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}; torch.prod reduces one dim "
                        "at a time (chain .prod(d) calls)")
    _single_dim_tensor("prod", dim)
    if dim is None:
        check_keepdim_needs_dim("prod", keepdim)
        return apply_op(OPS["prod"], (self,), (("dim", None), ("keepdim", False), ("dtype", _sum_dtype(self, dtype, "prod"))))
    out = apply_op(OPS["prod_dim"], (self,), (("dim", _dims(dim, self.ndim)), ("keepdim", keepdim), ("dtype", _sum_dtype(self, dtype, "prod"))))
    return show_saved(out, (("dim", dim),))


class _NotGiven:
    """``unbiased``'s default: torch's overloads take a bool there or nothing (an explicit
    None is a TypeError in torch, where ``correction=None`` is allowed)."""
    __slots__ = ()

    def __repr__(self):
        return "<not given>"


_NOT_GIVEN = _NotGiven()


def _correction(correction, unbiased, api="std"):
    if unbiased is _NOT_GIVEN:
        unbiased = None
    elif unbiased is None:
        raise TypeError(f"{api}(): argument 'unbiased' must be bool, not NoneType; pass True or False, "
                        "or correction=<int> (or leave both out for correction=1)")
    if unbiased is not None and type(unbiased) is not bool and type(unbiased).__name__ != "bool_":
        # torch's parser takes only a bool here (not 1, not a tensor)
        raise TypeError(f"{api}(): argument 'unbiased' must be bool, not {type(unbiased).__name__}; "
                        "pass True or False, or correction=<int>")
    if correction is not None:
        if unbiased is not None:   # no torch overload takes both
            raise TypeError(f"{api}() received an invalid combination of arguments - got both unbiased and "
                            "correction; pass only correction=<int> (unbiased=True is correction=1)")
        if isinstance(correction, Tensor):   # torch's parser reads a 0-d tensor as the Number it holds
            if correction.ndim != 0:
                raise TypeError(f"{api}(): argument 'correction' must be Number, not a Tensor of shape "
                                f"{list(correction.shape)}; pass a number or a 0-d tensor")
            correction = correction.item()
            correction = int(correction) if isinstance(correction, bool) else correction
        return correction
    return 1 if unbiased in (None, True) else 0


def _check_var_dtype(self):
    if self.dtype._cat <= 1:
        raise RuntimeError("std and var only support floating point and complex dtypes: convert the "
                           "input with .float() first")


def _var_overload_error(api, what):
    return TypeError(f"{api}() received an invalid combination of arguments - got {what}; torch's overloads are "
                     f"{api}(dim, unbiased=True, keepdim=False), {api}(dim=None, *, correction=None, keepdim=False) "
                     f"and {api}(unbiased) with unbiased a positional bool")


def _no_bool_dim_keyword(f):
    """torch's legacy ``var(input, unbiased)`` overload takes the bool positionally only: a bool
    named ``dim=`` matches no overload (TypeError), where positionally it is ``unbiased``."""
    @functools.wraps(f)
    def checked(*args, **kwargs):   # input may come by keyword too (torch.std(input=x))
        if isinstance(kwargs.get("dim"), bool):
            raise _var_overload_error(f.__name__, "dim=bool")
        return f(*args, **kwargs)
    return checked


def _var_static(api, self, dim, unbiased, keepdim, correction):
    """Static arguments of the var/std family; ``var(x, True)`` is torch's legacy
    ``var(input, unbiased)`` overload, so a bool in the dim slot is ``unbiased``. Warns, as
    torch, when the correction leaves no degrees of freedom (the result is inf or nan)."""
    _check_var_dtype(self)
    if isinstance(dim, bool):
        if unbiased is not _NOT_GIVEN or keepdim is not False or correction is not None:
            raise _var_overload_error(api, "a positional bool (unbiased) with other arguments")
        unbiased, dim = dim, None
    dims, corr = _dims(dim, self.ndim), _correction(correction, unbiased, api)
    n = int(np.prod([self.shape[d] for d in (range(self.ndim) if dims is None else dims)], dtype=np.int64))
    if dims is not None and 0 in [self.shape[d] for d in range(self.ndim) if d not in dims]:
        n = 0    # torch's reduction factor (input numel / output numel) is 0 for an empty output
    if n - corr <= 0:
        _warn(f"{api}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
              "factor (input numel divided by output numel).")
    return (("dim", dims), ("correction", corr), ("keepdim", keepdim))


@method(function=True)
@_no_bool_dim_keyword
def var(self, dim=None, unbiased=_NOT_GIVEN, keepdim=False, *, correction=None):
    """Mirrors ``torch.var(input, dim=None, *, correction=1, keepdim=False)``. RuntimeError for
    integer inputs."""
    return apply_op(OPS["var"], (self,), _var_static("var", self, dim, unbiased, keepdim, correction))


@method(function=True)
@_no_bool_dim_keyword
def std(self, dim=None, unbiased=_NOT_GIVEN, keepdim=False, *, correction=None):
    """Mirrors ``torch.std(input, dim=None, *, correction=1, keepdim=False)``. RuntimeError for
    integer inputs."""
    return apply_op(OPS["std"], (self,), _var_static("std", self, dim, unbiased, keepdim, correction))


@function()   # torch has no Tensor.var_mean
@_no_bool_dim_keyword
def var_mean(self, dim=None, unbiased=_NOT_GIVEN, keepdim=False, *, correction=None):
    """Mirrors ``torch.var_mean``: a tuple ``(var, mean)``."""
    return apply_op(OPS["var_mean"], (self,), _var_static("var_mean", self, dim, unbiased, keepdim, correction))


@function()   # torch has no Tensor.std_mean
@_no_bool_dim_keyword
def std_mean(self, dim=None, unbiased=_NOT_GIVEN, keepdim=False, *, correction=None):
    """Mirrors ``torch.std_mean``: a tuple ``(std, mean)``. Autograd: ``StdMeanBackward0``."""
    return apply_op(OPS["std_mean"], (self,), _var_static("std_mean", self, dim, unbiased, keepdim, correction))


def _index_dim(kind, dim):
    """A tensor given as ``max(dim=...)``: its int, as torch's parser reads a 0-d integer
    tensor; TypeError as torch's for any other tensor."""
    if dim.ndim == 0 and not dim.is_floating_point() and not dim.is_complex() and dim.dtype is not _dt.bool_:
        return int(dim.item())
    raise TypeError(f"{kind}(): argument 'dim' must be int, not Tensor; pass an int (or a 0-d integer "
                    "tensor)")


_MINMAX_SIGNATURE = inspect.Signature([
    inspect.Parameter("input", inspect.Parameter.POSITIONAL_OR_KEYWORD),
    inspect.Parameter("dim", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
    inspect.Parameter("keepdim", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=False),
    inspect.Parameter("other", inspect.Parameter.KEYWORD_ONLY, default=None)])


def _minmax(kind):
    def f(self, positional=None, keepdim=False, *, dim=None, other=None):
        # a tensor given by position is torch's max(input, other) overload; given as ``dim=`` it
        # is the dim (a 0-d integer tensor read by its __index__, as torch's parser does)
        if dim is None:
            dim = positional
        elif positional is not None:
            raise TypeError(f"{kind}() got multiple values for argument 'dim'")
        elif isinstance(dim, Tensor):
            dim = _index_dim(kind, dim)
        if other is not None:   # torch's max(input, other) overload, named by keyword
            if dim is not None or keepdim is not False:
                raise TypeError(f"{kind}() received an invalid combination of arguments - got other= with dim/"
                                f"keepdim; pass {kind}(other) or {kind}(dim, keepdim)")
            dim = other
        if isinstance(dim, Tensor):
            return (maximum if kind == "max" else minimum)(self, dim)
        check_sortable(self, kind, NotImplementedError if dim is None else RuntimeError)
        if dim is None:
            check_keepdim_needs_dim(kind, keepdim)
            if self.numel() == 0:
                raise RuntimeError(f"{kind}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.")
            return apply_op(OPS[f"{kind}_all"], (self,))
        d = _wrap_dim(dim, self.ndim)
        if self.ndim > 64:    # torch's max/min.dim build the reductions' 64-bit dim mask
            _too_many_dims(self.ndim)
        if self.ndim and self.shape[d] == 0:
            raise IndexError(f"{kind}(): Expected reduction dim {d} to have non-zero size.")
        v, i = apply_op(OPS[f"{kind}_dim"], (self,), (("dim", d), ("keepdim", keepdim)))
        return getattr(return_types, kind)(v, i)
    f.__name__ = kind
    f.__signature__ = _MINMAX_SIGNATURE
    f.__doc__ = (f"Mirrors ``torch.{kind}``: the {kind}imum of all elements, or with ``dim`` a namedtuple "
                 f"``(values, indices)``, or with a tensor the elementwise {kind}imum.")
    return f


max, min = method("max", function=True)(_minmax("max")), method("min", function=True)(_minmax("min"))


def _extremum_dims(self, dim, api, whole=RuntimeError, limit=True):
    """Reduced dims of amax/amin/aminmax/argmax/argmin/median; torch has no identity to give an
    empty slice (``whole``: the class for an empty tensor reduced whole), and no order for
    complex numbers (argmax/argmin: nor for bools)."""
    if api in ("argmax", "argmin"):
        check_sortable(self, api, bool_ok=False)
    else:
        check_sortable(self, api, NotImplementedError)
    dims = _dims(dim, self.ndim, limit)
    if self.numel() == 0:
        if dims is None:
            raise whole(f"{api}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        for d in dims:
            if self.shape[d] == 0:
                raise IndexError(f"{api}(): Expected reduction dim {d} to have non-zero size.")
    return dims


@method(function=True)
def amax(self, dim=(), keepdim=False):
    """Mirrors ``torch.amax`` (gradient split evenly between ties, as torch). IndexError when a
    reduced dim is empty."""
    return apply_op(OPS["amax"], (self,), (("dim", _extremum_dims(self, dim, "amax")), ("keepdim", keepdim)))


@method(function=True)
def amin(self, dim=(), keepdim=False):
    """Mirrors ``torch.amin``. IndexError when a reduced dim is empty."""
    return apply_op(OPS["amin"], (self,), (("dim", _extremum_dims(self, dim, "amin")), ("keepdim", keepdim)))


def _one_dim(dim, api):
    """argmax/argmin take one int dim (or None): a list or tuple is torch's parser TypeError, where
    the reductions' dim-list check would look at it as several dims."""
    if isinstance(dim, (list, tuple, Size)):
        raise TypeError(f"{api}(): argument 'dim' (position 1) must be int, not {type(dim).__name__}; pass one dim "
                        "(or None for the flattened tensor)")


@method(function=True)
def argmax(self, dim=None, keepdim=False):
    """Mirrors ``torch.argmax``: int64 index of the first maximum (flattened when dim=None).
    IndexError for an empty tensor or an empty ``dim``."""
    _one_dim(dim, "argmax")
    _extremum_dims(self, dim, "argmax", IndexError)
    d = None if dim is None else _wrap_dim(dim, self.ndim)
    return apply_op(OPS["argmax"], (self,), (("dim", d), ("keepdim", keepdim)))


@method(function=True)
def argmin(self, dim=None, keepdim=False):
    """Mirrors ``torch.argmin``. IndexError for an empty tensor or an empty ``dim``."""
    _one_dim(dim, "argmin")
    _extremum_dims(self, dim, "argmin", IndexError)
    d = None if dim is None else _wrap_dim(dim, self.ndim)
    return apply_op(OPS["argmin"], (self,), (("dim", d), ("keepdim", keepdim)))


@method(function=True)
def logsumexp(self, dim, keepdim=False):
    """Mirrors ``torch.logsumexp(input, dim, keepdim=False)``, numerically stable; integer and
    bool inputs give the default float dtype."""
    if self.dtype._cat <= 1:
        self = self.to(_dt.get_default_dtype())
    if isinstance(dim, (list, tuple)) and not dim and not keepdim and self.ndim and self.numel():
        # torch's dim=[] reduces every dim and then fails writing its kept-dims sum into a 0-d output
        raise RuntimeError(f"logsumexp(): dim=[] without keepdim is refused, as torch (output with shape [] "
                           f"doesn't match the broadcast shape {[1] * self.ndim}); pass the dims to reduce, "
                           "tuple(range(input.dim())) for all of them, or keepdim=True")
    return apply_op(OPS["logsumexp"], (self,), (("dim", _dims(dim, self.ndim)), ("keepdim", keepdim)))


@method(function=True)
def softmax(self, dim, dtype=None):
    """Mirrors ``torch.softmax(input, dim, dtype=None)``. Autograd: ``SoftmaxBackward0`` (saves result)."""
    d = _dim1(dim, self.ndim)   # torch parses and wraps the dim before its kernel's dtype check
    _check_floating(self, dtype, "softmax")
    return apply_op(OPS["softmax"], (_to_dtype(self, dtype, "softmax"),), (("dim", d), ("dtype", None)))


@method(function=True)
def log_softmax(self, dim, dtype=None):
    """Mirrors ``torch.log_softmax(input, dim, dtype=None)``."""
    d = _dim1(dim, self.ndim)   # torch parses and wraps the dim before its kernel's dtype check
    _check_floating(self, dtype, "log_softmax")
    return apply_op(OPS["log_softmax"], (_to_dtype(self, dtype, "log_softmax"),), (("dim", d), ("dtype", None)))


# ``linalg.matrix_norm``, for ``norm(p="nuc")``: the linalg layer, above this one, stores it
# here when it loads (importing tracegrad loads it)
MATRIX_NORM: list = [None]


@method(function=True)
def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
    """Mirrors ``torch.norm(input, p='fro', dim=None, keepdim=False)``: vector norms (``p`` a
    number, inf, -inf or 'fro') and the nuclear norm (``p='nuc'``, over two dims: all of a 2-D
    input's when ``dim`` is None). Autograd: ``LinalgVectorNormBackward0``.
    RuntimeError for an integer or bool input or ``dtype`` (torch takes floating or complex only)."""
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{self.dtype}; convert it with .float()")
    # torch.norm (Python) hands keepdim and dtype to linalg's parsers: a bool and a dtype only
    if type(keepdim) is not bool:   # (a numpy bool too, as torch)
        raise TypeError(f"linalg_vector_norm(): argument 'keepdim' (position 4) must be bool, not "
                        f"{type(keepdim).__name__}; pass True or False")
    if dtype is not None and not isinstance(dtype, _dt.dtype):
        raise TypeError(f"linalg_vector_norm(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}; "
                        "pass one such as tracegrad.float64")
    if p == "fro" and isinstance(dim, (list, tuple)) and len(dim) > 2:   # torch: matrix_norm's refusal
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    if p == "fro" or p is None:
        p = 2
    if p == "nuc":   # torch: the matrix norm over two dims (all of them when dim is None)
        dims = tuple(range(self.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dims))}")
        if dims[0] % (self.ndim or 1) == dims[1] % (self.ndim or 1):
            raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got {dims}")
        return MATRIX_NORM[0](self, "nuc", dims, keepdim, dtype=dtype)
    if isinstance(p, str):
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported; pass a number, inf, -inf, 'fro' or 'nuc'")
    if not isinstance(p, (int, float)) and not (isinstance(p, Tensor) and p.ndim == 0) \
            and type(p).__module__ != "numpy":   # a list, a tensor with dims (even of one element): the parser's
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not {type(p).__name__}")
    if isinstance(dim, str) or (isinstance(dim, (list, tuple)) and str in map(type, dim)):   # (any is shadowed)
        raise TypeError(f"linalg_vector_norm(): argument 'dim' (position 3) must be tuple of ints, not "
                        f"{type(dim).__name__}; pass a dim index or indices")
    if self.ndim > 64:      # torch.norm is linalg.vector_norm's kernel: refused whatever dim
        _too_many_dims(self.ndim)
    x = self if dtype is None else self.to(norm_dtype("vector_norm", self, dtype))
    dims = _dims(dim, self.ndim)
    _check_empty_norm(self, float(p), dims)
    return apply_op(OPS["norm"], (x,), (("ord", float(p)), ("dim", dims), ("keepdim", keepdim)))


def norm_dtype(api, x, dtype):
    """torch's checks of a norm's ``dtype=`` (``linalg.vector_norm``/``matrix_norm``, and
    ``torch.norm`` that calls them): floating or complex, complex for complex input and real for
    real input, no narrowing of the input's precision (RuntimeError for each); the dtype."""
    dtype = _dt.to_dtype(dtype)
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"linalg.{api}: dtype should be floating point or complex, but got {dtype}; pass a "
                           "floating dtype=")
    if x.is_complex() != dtype.is_complex:
        kind = "complex" if x.is_complex() else "real"
        raise RuntimeError(f"linalg.{api}: dtype should be {kind} for {kind} inputs, but got {dtype}")
    if _dt.promote_types(x.dtype, dtype) is not dtype:
        raise RuntimeError(f"linalg.{api}: the dtype of the input ({x.dtype}) should be convertible without narrowing "
                           f"to the specified dtype ({dtype})")
    return dtype


def _check_empty_norm(x, ord, dims):
    """torch's refusal of a max/min/negative-power norm over no elements: those norms have no
    identity, so an empty input (``dims`` None) or an empty reduced dim is a RuntimeError."""
    if not (ord < 0 or ord == float("inf")):
        return
    if dims is None:
        if x.numel() == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord:g} norm on an empty tensor because the "
                               "operation does not have an identity; reduce over a non-empty dim or use ord=2")
        return
    for d in (dims,) if isinstance(dims, int) else dims:
        if x.shape[d] == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord:g} norm on the dimension {d} because this "
                               "dimension is empty and the operation does not have an identity")


def _check_scan_dtype(dtype, api):
    if dtype is _dt.bool_ or dtype is bool:   # Python's bool is torch.bool to torch's parser
        raise NotImplementedError(f'"{api}_out_cpu" not implemented for \'Bool\'; pass an integer or floating dtype=')


@method(function=True)
def cumsum(self, dim, *, dtype=None):
    """Mirrors ``torch.cumsum(input, dim)``. NotImplementedError for dtype=bool (torch's kernel)."""
    if dtype is not None:
        _check_scan_dtype(dtype, "cumsum")
    return apply_op(OPS["cumsum"], (self,), (("dim", _wrap_dim(dim, self.ndim)), ("dtype", _sum_dtype(self, dtype, "cumsum"))))


@method(function=True)
def cumprod(self, dim, *, dtype=None):
    """Mirrors ``torch.cumprod(input, dim)``. NotImplementedError for dtype=bool (torch's kernel)."""
    if dtype is not None:
        _check_scan_dtype(dtype, "cumprod")
    return apply_op(OPS["cumprod"], (self,), (("dim", _wrap_dim(dim, self.ndim)), ("dtype", _sum_dtype(self, dtype, "cumprod"))))


def _logical_dims(dim, ndim):
    """all/any's dims: an empty list reduces over no dim (torch's all.dims/any.dims overloads give
    the elementwise truth test, same shape), where sum/mean read it as every dim."""
    if isinstance(dim, (list, tuple, Size)) and len(dim) == 0:
        if ndim > 64:       # torch's all.dims kernel still builds the 64-bit dim mask
            _too_many_dims(ndim)
        return ()
    return _dims(dim, ndim)


@method(function=True)
def all(self, dim=None, keepdim=False):
    """Mirrors ``torch.all``: a bool tensor (uint8 for a uint8 input); ``dim=()`` reduces nothing.
    RuntimeError past 64 dims, whatever ``dim`` (torch's kernel always builds its dim mask)."""
    _single_dim_tensor("all", dim)
    if dim is None and self.ndim > 64:
        _too_many_dims(self.ndim)
    return apply_op(OPS["all"], (self,), (("dim", _logical_dims(dim, self.ndim)), ("keepdim", keepdim)))


@method(function=True)
def any(self, dim=None, keepdim=False):
    """Mirrors ``torch.any``: a bool tensor (uint8 for a uint8 input); ``dim=()`` reduces nothing.
    RuntimeError past 64 dims, whatever ``dim`` (torch's kernel always builds its dim mask)."""
    _single_dim_tensor("any", dim)
    if dim is None and self.ndim > 64:
        _too_many_dims(self.ndim)
    return apply_op(OPS["any"], (self,), (("dim", _logical_dims(dim, self.ndim)), ("keepdim", keepdim)))


@int_list_method
@function()
def count_nonzero(self, dim=None):
    """Mirrors ``torch.count_nonzero``: the nonzero entries, over ``dim`` (an int or a tuple; the
    method also takes several dims as separate arguments, ``x.count_nonzero(0, 1)``)."""
    return apply_op(OPS["count_nonzero"], (self,), (("dim", _dims(dim, self.ndim)),))


def _sort_args(args, kwargs, api="sort"):
    if len(args) > 2:
        raise TypeError(f"{api}() takes from 1 to 3 positional arguments but {len(args) + 1} were given")
    names = ("dim", "descending")
    for name in kwargs:
        if name not in names:
            raise TypeError(f"{api}() got an unexpected keyword argument '{name}'")
    for name in names[:len(args)]:
        if name in kwargs:
            raise TypeError(f"{api}() got multiple values for argument '{name}'")
    vals = dict(zip(names, args), **kwargs)
    descending = vals.get("descending", False)
    if type(descending) is not bool and type(descending).__name__ != "bool_":   # torch's parser: a bool only
        raise TypeError(f"{api}(): argument 'descending' must be bool, not {type(descending).__name__}; "
                        "pass True or False")
    return vals.get("dim", -1), descending


@method(function=True)
def sort(self, *args, stable=None, **kwargs):
    """Mirrors ``torch.sort(input, dim=-1, descending=False)`` and ``torch.sort(input, *,
    stable, dim=-1, descending=False)``: namedtuple ``(values, indices)``; stable always (equal
    values keep their order, NaN sorts as the largest). RuntimeError for a complex input;
    TypeError for ``stable=`` with a positional dim or descending (torch's second overload
    takes them by keyword only)."""
    if stable is not None and type(stable) is not bool:   # torch's parser: a bool only
        raise TypeError(f"sort(): argument 'stable' must be bool, not {type(stable).__name__}")
    if stable is not None and args:
        raise TypeError(f"sort() received an invalid combination of arguments: with stable=, pass dim and "
                        f"descending by keyword (got {len(args)} positional)")
    dim, descending = _sort_args(args, kwargs)
    check_sortable(self, "sort")
    v, i = apply_op(OPS["sort"], (self,), (("dim", _wrap_dim(dim, self.ndim)), ("descending", descending), ("stable", True)))
    return return_types.sort(v, i)


_NO_STABLE = object()   # argsort's stable not given: its first overload (positional dim, descending)


@method(function=True)
def argsort(self, *args, stable=_NO_STABLE, **kwargs):
    """Mirrors ``torch.argsort(input, dim=-1, descending=False)`` and ``torch.argsort(input, *,
    stable, dim=-1, descending=False)``: ``sort``'s indices (stable always). RuntimeError for
    complex; TypeError for a ``stable`` that is not a bool, or given with a positional dim or
    descending (torch's second overload takes them by keyword only; a fourth positional
    argument is no ``stable``)."""
    if stable is not _NO_STABLE:
        if type(stable) is not bool:
            raise TypeError(f"argsort(): argument 'stable' must be bool, not {type(stable).__name__}; pass True or "
                            "False")
        if args:
            raise TypeError(f"argsort() received an invalid combination of arguments: with stable=, pass dim and "
                            f"descending by keyword (got {len(args)} positional)")
    dim, descending = _sort_args(args, kwargs, "argsort")
    check_sortable(self, "sort")
    return apply_op(OPS["argsort"], (self,), (("dim", _wrap_dim(dim, self.ndim)), ("descending", descending), ("stable", True)))


@method(function=True)
def topk(self, k, dim=-1, largest=True, sorted=True):
    """Mirrors ``torch.topk``: namedtuple ``(values, indices)``. RuntimeError if k is too large,
    or for a complex or bool input. Which of equal values is picked is not specified (as torch).
    Differs from torch: among ties this takes the first occurrences (a stable order); torch's
    CPU kernel returns the order its introselect/partial sort leaves (deterministic per input,
    but no simple rule: checked on random integer rows, e.g. ``ones(4).topk(1)`` is index 2),
    so indices of tied values may differ; values always agree."""
    check_sortable(self, "topk", bool_ok=False)
    if type(k) is not int:
        if isinstance(k, bool):   # torch's parser refuses a bool k (it was taken as 0 or 1)
            raise TypeError("topk(): argument 'k' (position 1) must be int, not bool")
        require_int("topk", "k", k, 2)
    if isinstance(dim, bool):   # topk(k, True) is a mistaken ``largest``, not dim 1
        raise TypeError("topk(): argument 'dim' (position 2) must be int, not bool")
    d = _wrap_dim(dim, self.ndim)
    if not 0 <= k <= (self.shape[d] if self.ndim else 1):   # (a negative k reached the op unchecked)
        raise RuntimeError("selected index k out of range")   # torch's words (its op table test)
    if self.ndim == 0:   # a 0-d result holds one element even for k=0: torch's kernel gives the input's
        k = 1
    v, i = apply_op(OPS["topk"], (self,), (("k", int(k)), ("dim", d), ("largest", largest), ("sorted", sorted)))
    if isinstance(dim, int) and dim < 0:      # torch's node shows the dim as given
        show_saved(v, (("dim", dim),))
    return return_types.topk(v, i)


@method(function=True)
def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    """Mirrors ``torch.quantile``: ``q`` a float or 1-D tensor in [0, 1] (its dim comes first
    in the result); ``interpolation`` one of linear, lower, higher, midpoint, nearest.
    RuntimeError for q outside [0, 1] or an input that is not float32/float64."""
    return quantile_op("quantile", self, q, dim, keepdim, interpolation)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def quantile_op(api, self, q, dim, keepdim, interpolation):
    """``quantile``/``nanquantile`` (op ``api``) after torch's argument checks."""
    if not isinstance(q, (Tensor, int, float)) and type(q).__module__ != "numpy":   # a list, a string: the parser's
        raise TypeError(f"{api}(): argument 'q' must be a Tensor or a float, not {type(q).__name__}; "
                        f"pass a float or a 1-D tensor of them")
    # torch's order of checks (its quantile_checks), and its messages
    if self.numel() == 0:
        raise RuntimeError(f"{api}() input tensor must be non-empty")
    if isinstance(q, Tensor) and q.ndim > 1:
        raise RuntimeError(f"{api}() q must be a scalar or 1D tensor")
    if not self.dtype.is_floating_point or self.dtype.name in ("float16", "bfloat16"):
        raise RuntimeError(f"{api}() input tensor must be either float or double dtype")
    if isinstance(q, Tensor) and q.dtype != self.dtype:
        raise RuntimeError(f"{api}() q tensor must be same dtype as the input tensor")
    if isinstance(q, (int, float)) and not 0 <= q <= 1:
        raise RuntimeError(f"{api}() q must be in the range [0, 1] but got {q:g}")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{api}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    qv = q._value if isinstance(q, Tensor) else q
    if isinstance(qv, NO_HOST_VALUES):     # traced: checked when the program runs
        _state.check_values(qv, lambda v: (v < 0) | (v > 1))     # NOTE [value checks at run time]
    elif not bool(np.all((np.asarray(qv) >= 0) & (np.asarray(qv) <= 1))):
        raise RuntimeError(f"{api}() q values must be in the range [0, 1]")
    d = None if dim is None else _wrap_dim(dim, self.ndim)
    if self.ndim == 0:   # torch: one element, and no dim to keep
        self, d, keepdim = self.reshape(1), None if d is None else 0, False
    return apply_op(OPS[api], (self, q), (("dim", d), ("keepdim", keepdim), ("interpolation", interpolation)))


@method(function=True)
def kthvalue(self, k, dim=-1, keepdim=False):
    """Mirrors ``torch.kthvalue``: the k-th smallest (1-based) along ``dim``; RuntimeError for k
    outside [1, size], IndexError for an empty ``dim``; NotImplementedError for a complex or bool
    input.
    Differs from torch: among ties the index is the k-th of a stable sort; torch's CPU kernel
    returns where its introselect leaves it (deterministic per input, no simple rule:
    ``ones(4).kthvalue(1)`` is index 1 there), so the index of a tied value may differ.
    ``median``/``mode``/``sort`` pick torch's indices (checked on random integer rows)."""
    check_sortable(self, "kthvalue", NotImplementedError, bool_ok=False)
    if type(k) is not int:
        require_int("kthvalue", "k", k, 2)
    n = self.shape[_wrap_dim(dim, self.ndim)] if self.ndim else 1
    if n == 0:   # torch checks the empty reduction dim before k
        raise IndexError(f"kthvalue(): Expected reduction dim {_wrap_dim(dim, self.ndim)} to have non-zero size.")
    if not 1 <= int(k) <= n:
        raise RuntimeError(f"kthvalue(): selected number k={k} out of range for dimension {dim} of size {n}")
    v, i = apply_op(OPS["kthvalue"], (self,), (("k", int(k)), ("dim", _wrap_dim(dim, self.ndim)), ("keepdim", keepdim)))
    return return_types.kthvalue(v, i)


def check_median(self, dim, api):
    if isinstance(dim, (tuple, list)):   # torch's parser: one int dim (before any check of the dims)
        raise TypeError(f"{api}(): argument 'dim' must be int, not {type(dim).__name__}; pass an integer dim")
    check_sortable(self, "median", NotImplementedError, bool_ok=False)
    if dim is not None:   # torch's median/nanmedian along a dim take more than 64 dims
        _extremum_dims(self, dim, api, limit=False)


@method(function=True)
def median(self, dim=None, keepdim=False):
    """Mirrors ``torch.median``: lower median (NaN when a NaN is present, and for an empty
    tensor); with dim a namedtuple ``(values, indices)``. IndexError for an empty ``dim``;
    NotImplementedError for a complex or bool input."""
    check_median(self, dim, "median")
    if dim is None:
        check_keepdim_needs_dim("median", keepdim)
        return apply_op(OPS["median_all"], (self,))
    v, i = apply_op(OPS["median_dim"], (self,), (("dim", _wrap_dim(dim, self.ndim)), ("keepdim", keepdim)))
    return return_types.median(v, i)
