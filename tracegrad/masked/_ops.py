"""The masked reductions and normalizations of ``torch.masked`` (strided tensors).

Every function takes ``mask=``: a boolean tensor broadcastable to ``input`` (no more dims than
it; other dtypes are cast to bool) whose False elements are left out. The recipe is torch's:
masked-out elements are replaced by the operation's identity (0 for sum, 1 for prod, -inf for
amax/logsumexp/softmax, +inf for amin/softmin...) and the plain operation runs on the result, so
values, dtypes and autograd come from the plain ops. Operations without an identity (mean, var,
std) count the masked-in elements instead; a slice with none gives nan, as torch.

Differs from torch: sparse COO/CSR inputs and masks are not supported (ValueError).
"""
from __future__ import annotations

import builtins
import math

import tracegrad as torch

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp", "logsumexp",
           "mean", "median", "norm", "normalize", "prod", "softmax", "softmin", "std", "sum", "var"]

def _canonical_dim(dim, ndim):
    """``dim`` (None, ``()``, an int or a sequence) as a sorted tuple of non-negative dims; None
    and ``()`` mean every dim. RuntimeError for a repeated dim, IndexError for one out of range."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    n = builtins.max(ndim, 1)
    seen = []
    for d in ((dim,) if isinstance(dim, int) else dim):
        if d in seen:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= n or d < -n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
        seen.append(d % n)
    return tuple(sorted(seen))


def _check_strided(name, t):
    if t.layout != torch.strided:
        raise ValueError(f"torch.masked.{name}: tracegrad supports strided tensors only (got {t.layout} tensor); "
                         f"convert with .to_dense() first")


def _input_mask(input, *args, mask=None, **kwargs):
    """The canonical mask: ``mask`` broadcast to ``input``'s shape, as bool. ValueError without a
    mask; IndexError when the mask has more dims than ``input``."""
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    _check_strided("_input_mask", mask)
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality higher than of "
                             "the input)")
        mask = torch.broadcast_to(mask, input.shape)
    return mask.to(dtype=torch.bool)


def _reduction_identity(op_name, input, *args):
    """The value that leaves ``op_name``'s result unchanged, as a 0-d tensor of input's dtype,
    or None where there is none (mean, var, std). NotImplementedError for other names."""
    dtype, op_name = input.dtype, op_name.rsplit(".", 1)[-1]
    floating = dtype.is_floating_point

    def full(v):
        return torch.tensor(v, dtype=dtype, device=input.device)

    def bound(which):   # an integer dtype's min or max, for signed and uint8 dtypes only
        if dtype.is_signed or dtype == torch.uint8:
            return full(getattr(torch.iinfo(dtype), which))
        return None

    if op_name in ("sum", "cumsum"):
        return full(0)
    if op_name in ("prod", "cumprod"):
        return full(1)
    if op_name in ("amax", "argmax", "logaddexp", "logsumexp"):
        if floating:
            return full(-math.inf)
        if op_name == "logsumexp" and dtype.is_complex:
            return full(complex(-math.inf, 0))
        if not dtype.is_complex and dtype != torch.bool:
            return bound("min")
    elif op_name in ("amin", "argmin"):
        if floating:
            return full(math.inf)
        if not dtype.is_complex and dtype != torch.bool:
            return bound("max")
    elif op_name in ("mean", "var", "std"):
        return None
    elif op_name == "norm":
        ord = args[0] if args else 2
        if ord == -math.inf:
            if not floating:
                raise AssertionError(f"input must be floating point, got {dtype}")
            return full(math.inf)
        return full(0)
    elif op_name == "median":
        return torch.tensor(math.nan, dtype=dtype if floating else torch.float, device=input.device)
    raise NotImplementedError(f"identity of {op_name} on {dtype} input")


def _where(mask, input, fill_value):
    """``torch.where(mask, input, fill_value)`` (strided only here)."""
    _check_strided("_where", mask)
    return torch.where(mask, input, fill_value)


def _combine_input_and_mask(op, input, mask, *args):
    """``input`` with its masked-out elements replaced by ``op``'s identity (``input`` itself when
    there is no mask)."""
    if mask is None:
        return input
    _check_strided(op.__name__, input)
    return _where(_input_mask(input, mask=mask), input, _reduction_identity(op.__name__, input, *args))


def _any(input, dim, keepdim):
    for d in reversed(dim):
        input = input.any(dim=d, keepdim=keepdim)
    return input


_REDUCTIONS = {"sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "norm", "var", "std", "logsumexp"}
_NORMALIZATIONS = {"softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod"}


def _output_mask(op, input, *args, **kwargs):
    """Which elements of ``op(input, *args, **kwargs)`` are masked in: for a reduction, those
    whose slice holds at least one masked-in element; for a normalization, the input mask.
    ValueError for anything but a masked operation."""
    name = getattr(op, "__name__", None)
    if not callable(op) or name not in _REDUCTIONS | _NORMALIZATIONS:
        what = f"callable {op.__module__}.{name}" if callable(op) else f"{type(op).__name__} object"
        raise ValueError(f"_output_mask expected masked operation (got {what})")
    if name in _NORMALIZATIONS:
        return _input_mask(input, *args, **kwargs)
    if name == "norm" and args:
        args = args[1:]   # ord comes before dim
    dim = args[0] if args else kwargs.get("dim")
    outmask = _input_mask(input, *args, **kwargs)
    return _any(outmask, _canonical_dim(dim, input.ndim), bool(kwargs.get("keepdim", False)))


def _accumulating_dtype(input, dtype):
    if dtype is not None:
        return dtype
    # integer inputs accumulate in int64 unless dtype= says otherwise (as torch.sum)
    narrow = (torch.uint8, torch.bool, torch.int8, torch.int16, torch.int32)
    return torch.int64 if input.dtype in narrow else input.dtype


# ---- reductions ----------------------------------------------------------------------------------
def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Mirrors ``torch.masked.sum``: the sum of the masked-in elements over ``dim`` (None or
    ``()``: every dim); identity 0. Integer and bool inputs accumulate in int64 unless ``dtype``
    is given."""
    dtype = _accumulating_dtype(input, dtype)
    dim_ = _canonical_dim(dim, input.ndim)
    return torch.sum(_combine_input_and_mask(sum, input, mask), dim_, bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Mirrors ``torch.masked.prod``: the product of the masked-in elements over ``dim``;
    identity 1; integer dtypes accumulate in int64 as ``sum``."""
    dtype = _accumulating_dtype(input, dtype)
    dim_ = _canonical_dim(dim, input.ndim)
    result = _combine_input_and_mask(prod, input, mask).to(dtype=dtype)
    for d in reversed(dim_):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def _extremum(op, plain):
    def f(input, dim=None, *, keepdim=False, dtype=None, mask=None):
        dtype = input.dtype if dtype is None else dtype
        masked_input = _combine_input_and_mask(f, input, mask)
        return plain(masked_input, _canonical_dim(dim, masked_input.ndim), bool(keepdim)).to(dtype=dtype)
    f.__name__ = f.__qualname__ = op
    f.__doc__ = (f"Mirrors ``torch.masked.{op}``: the {op[1:]}imum of the masked-in elements over ``dim`` "
                 f"(None: every dim), in ``dtype`` (default input's); a slice with none masked in gives the "
                 f"identity ({'-' if op == 'amax' else '+'}inf for floats, the integer dtype's "
                 f"{op[1:]} otherwise). Autograd as ``torch.{op}``.")
    return f


amax = _extremum("amax", lambda x, dim, keepdim: torch.amax(x, dim, keepdim))
amin = _extremum("amin", lambda x, dim, keepdim: torch.amin(x, dim, keepdim))


def _arg_extremum(op, plain):
    def f(input, dim=None, *, keepdim=False, dtype=None, mask=None):
        dtype = input.dtype if dtype is None else dtype
        return plain(_combine_input_and_mask(f, input, mask), dim, bool(keepdim)).to(dtype=dtype)
    f.__name__ = f.__qualname__ = op
    f.__doc__ = (f"Mirrors ``torch.masked.{op}``: the index of the {op[3:]}imum among the masked-in elements "
                 f"along ``dim`` (None: of the flattened input). As torch, the result has ``dtype`` "
                 f"(default: input's dtype, not int64).")
    return f


argmax = _arg_extremum("argmax", lambda x, dim, keepdim: torch.argmax(x, dim, keepdim))
argmin = _arg_extremum("argmin", lambda x, dim, keepdim: torch.argmin(x, dim, keepdim))


def _count_and_total(input, dim, keepdim, dtype, mask):
    """Masked-in element count and masked sum over ``dim`` (the shared start of mean, var, std)."""
    if mask is None:
        count = sum(torch.ones(input.shape, dtype=torch.int64, device=input.device), dim, keepdim=keepdim)
        return count, sum(input, dim, keepdim=keepdim, dtype=dtype), None
    inmask = _input_mask(input, mask=mask)
    count = inmask.sum(dim=dim, keepdim=bool(keepdim))
    return count, sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask), inmask


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Mirrors ``torch.masked.mean``: masked sum over the masked-in count; nan where a slice has
    no masked-in element. ValueError unless ``dtype`` (default input's) is floating or complex."""
    source = "Input" if dtype is None else "Optional"
    dtype = input.dtype if dtype is None else dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either a floating point "
                         f"or complex dtype. Got: {dtype}")
    _check_strided("mean", input)
    count, total, _ = _count_and_total(input, dim, keepdim, dtype, mask)
    return total / count


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """Mirrors ``torch.masked.median``: the median of the masked-in elements along one ``dim``
    (default -1), the lower of the two middle values as ``torch.median``; nan for a slice with
    none. Integer inputs are computed in float32 and cast back; ValueError when such a slice has
    no masked-in element."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    floating = input.dtype.is_floating_point
    if not floating:
        input = input.to(dtype=torch.float)
    output = torch.nanmedian(_combine_input_and_mask(median, input, mask), dim_, keepdim).values
    if floating:
        return output
    if torch.isnan(output).any():
        raise ValueError("masked median expects no fully masked out rows if dtype is not floating point")
    return output.to(dtype=dtype)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Mirrors ``torch.masked.logsumexp``: ``log(sum(exp(x)))`` over the masked-in elements
    (-inf for a slice with none), cast to ``dtype``."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)
    return torch.logsumexp(_combine_input_and_mask(logsumexp, input, mask), dim_, keepdim=keepdim).to(dtype=dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """Mirrors ``torch.masked.logaddexp``: ``torch.logaddexp`` with ``input``'s masked-out
    elements taken as -inf (``input_mask``) and ``other``'s likewise (``other_mask``)."""
    dtype = input.dtype if dtype is None else dtype
    _check_strided("logaddexp", input)
    _check_strided("logaddexp", other)
    return torch.logaddexp(_combine_input_and_mask(logaddexp, input, input_mask),
                           _combine_input_and_mask(logaddexp, other, other_mask)).to(dtype=dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Mirrors ``torch.masked.norm``: ``torch.linalg.vector_norm(x, ord, dim)`` of the masked-in
    elements (masked-out ones count as 0, or +inf for ``ord=-inf``), in ``dtype``."""
    dtype = input.dtype if dtype is None else dtype
    masked_input = _combine_input_and_mask(norm, input, mask, ord)
    return torch.linalg.vector_norm(masked_input, ord, _canonical_dim(dim, input.ndim), bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, correction_opt, keepdim, dtype, mask, take_sqrt):
    if unbiased is not None and correction_opt is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    correction = 1.0 if unbiased is None else float(bool(unbiased))
    if correction_opt is not None:
        correction = float(correction_opt)
    if dtype is None:
        dtype = input.dtype if (input.dtype.is_floating_point or input.dtype.is_complex) else torch.float32
    compute_dtype = dtype if (dtype.is_floating_point or dtype.is_complex) else torch.float32
    _check_strided("std/var", input)
    count, sample_total, inmask = _count_and_total(input, dim, True, dtype, mask)
    x = torch.subtract(input, torch.divide(sample_total, count))
    total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=inmask)
    if not keepdim:
        count = count.reshape(total.shape)
    if correction != 0:
        real = compute_dtype.to_real() if compute_dtype.is_complex else compute_dtype
        count = torch.subtract(count.to(real), correction)
        count = torch.maximum(count, count.new_zeros([]))
    output = torch.divide(total, count).to(dtype=dtype)
    return torch.sqrt(output) if take_sqrt else output


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """Mirrors ``torch.masked.var``: the variance of the masked-in elements over ``dim`` with
    ``correction`` (default 1; ``unbiased=False`` means 0); the divisor is clamped at 0, so a
    slice with too few elements gives inf or nan, as torch. Integer inputs give float32."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """Mirrors ``torch.masked.std``: ``sqrt`` of ``torch.masked.var`` with the same arguments."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=True)


# ---- normalizations ------------------------------------------------------------------------------
def _normalization(op, identity_of, plain):
    def f(input, dim, *, dtype=None, mask=None):
        dtype = input.dtype if dtype is None else dtype
        dim_ = _canonical_dim(dim, input.ndim)[0]
        return plain(_combine_input_and_mask(identity_of, input, mask), dim_, dtype)
    f.__name__ = f.__qualname__ = op
    f.__doc__ = (f"Mirrors ``torch.masked.{op}``: ``{op}`` along ``dim`` with the masked-out elements "
                 f"taken as ``{identity_of.__name__}``'s identity; the result has input's shape and ``dtype`` "
                 f"(default input's).")
    return f


softmax = _normalization("softmax", amax, lambda x, d, dt: torch.nn.functional.softmax(x, d, dtype=dt))
log_softmax = _normalization("log_softmax", amax, lambda x, d, dt: torch.nn.functional.log_softmax(x, d, dtype=dt))
softmin = _normalization("softmin", amin, lambda x, d, dt: torch.nn.functional.softmin(x, d, dtype=dt))
cumsum = _normalization("cumsum", sum, lambda x, d, dt: torch.cumsum(x, d, dtype=dt).to(dtype=dt))
cumprod = _normalization("cumprod", prod, lambda x, d, dt: torch.cumprod(x, d, dtype=dt).to(dtype=dt))


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """Mirrors ``torch.masked.normalize``: ``input`` divided by its masked ``ord``-norm along
    ``dim`` (at least ``eps``); masked-out elements come out 0."""
    dtype = input.dtype if dtype is None else dtype
    masked_input = _combine_input_and_mask(sum, input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return torch.divide(masked_input, torch.maximum(nrm, nrm.new_full([], eps)))
