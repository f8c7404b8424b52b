"""torch's ``out=`` keyword for the functions that take one: the result is written into the given
tensor (or tuple of tensors), which is returned.

torch's rules, kept here once for every such function:
- autograd does not flow through ``out=``: RuntimeError when grad mode is on and an input or
  ``out`` requires grad;
- the result is cast to ``out``'s dtype, but never to a lower category (float -> int, int ->
  bool): RuntimeError "result type Float can't be cast to the desired output type Long" (TypeError
  for ``cat``/``stack``, as torch); functions whose torch kernels insist on the result's own dtype
  (``linalg``, ``tensordot``, ``nan_to_num``) raise RuntimeError for any other dtype;
- an ``out`` of another shape is resized (a UserWarning unless it had no elements), an ``out`` of
  the right shape is written in place (its views and version counter see the write).
"""
from __future__ import annotations

import functools

import numpy as np

from .._ops import dtypes as _dt
from .._ops.errors import PYTHON_LEVEL, not_a_tensor
from .._ops.random import scalar_name
from .._ops.warn import warn
from .tensor import Tensor, _grad_enabled, check_no_internal_overlap, element_positions

_RESIZED = ("An output with one or more elements was resized since it had shape {old}, which does "
            "not match the required output shape {new}. This behavior is deprecated, and in a future "
            "PyTorch release outputs will not be resized unless they have zero elements. You can "
            "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).")


def write_out(name, result, out, exact_dtype=False, cast_error=RuntimeError, any_dtype=False, keep_shape=False):
    """Write ``result`` (a Tensor or a tuple of Tensors) into ``out`` (the same structure) the way
    torch's ``<name>(..., out=out)`` does, and return ``out``. ``exact_dtype``: ``out`` must have
    the result's dtype (``"tuples"``: only where the result is a tuple, as ``max(x, dim)`` against
    ``max(x, y)``); ``cast_error``: the class raised for a cast to a lower category;
    ``any_dtype``: any cast is allowed (functions written in Python over ``copy_``, as ``torch.lu``);
    ``keep_shape``: an ``out`` with as many elements keeps its shape and takes the values in
    row-major order (torch's ``arange``/``range``/``linspace`` resize only on a different count,
    silently; ``"warn"``: with arange's own warning); ``"resize"``: ``out`` takes the result's
    shape without the deprecation warning (torch's factories and random draws resize their
    ``out`` silently)."""
    if isinstance(result, Tensor):
        if not isinstance(out, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
        if keep_shape and tuple(out.shape) != tuple(result.shape):
            if out.numel() == result.numel() and keep_shape != "resize":
                result = result.reshape(out.shape)
            else:   # resized with arange's own warning (range's silently), not the generic one
                if keep_shape == "warn" and out.numel():
                    warn(f"The number of elements in the out tensor of shape {list(out.shape)} is {out.numel()} "
                         f"which does not match the computed number of elements {result.numel()}. Note that this "
                         f"may occur as a result of rounding error. The out tensor will be resized to a tensor of "
                         f"shape ({result.numel()},).")
                out.resize_(0)
        return _write_one(name, result, out, exact_dtype in (True, "linalg"), cast_error, any_dtype,
                          linalg=exact_dtype == "linalg")
    if not isinstance(out, (tuple, list)) or len(out) != len(result):
        raise TypeError(f"{name}(): argument 'out' must be a tuple of {len(result)} Tensors")
    for i, o in enumerate(out):   # torch's parser checks each element's kind before any is written
        if not isinstance(o, Tensor):
            raise TypeError(f"{name}(): expected Tensor as element {i} in argument 'out', but got "
                            f"{type(o).__name__}; pass a tuple of {len(result)} Tensors")
    fields = getattr(result, "_fields", None) or (None,) * len(result)   # values/indices name the culprit
    # the reductions' message names the field; torch's linalg kernels (exact_dtype="linalg", set
    # by ``accepts_out`` for tracegrad's linalg modules) word it as for one out tensor
    linalg = exact_dtype == "linalg"
    written = tuple(_write_one(name, r, o, bool(exact_dtype), cast_error, any_dtype,
                               None if linalg else f, linalg=linalg)
                    for r, o, f in zip(result, out, fields))
    return type(result)(*written) if hasattr(result, "_fields") else written


_CPP_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                   "complex64": "c10::complex<float>", "complex128": "c10::complex<double>", "int64": "long int",
                   "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
                   "bool": "bool"}


def _cpp_type_name(dtype):
    """The C++ element type torch's messages name a dtype by (``float32`` -> ``float``)."""
    return _CPP_TYPE_NAMES.get(dtype.name, dtype.name)


def _write_one(name, result, out, exact_dtype, cast_error, any_dtype, field=None, linalg=False):
    if "_fw" in result.__dict__ or "_fw" in out.__dict__:   # a forward-AD tangent (autograd/forward_ad)
        raise RuntimeError(f"Trying to use forward AD with {name}_out that does not support it because it is "
                           "an out= function; call it without out= inside the dual level")
    if _grad_enabled() and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if exact_dtype and result.dtype != out.dtype and field is not None:
        raise RuntimeError(f"{name}: expected scalar type {scalar_name(result.dtype.np)} but got "
                           f"{scalar_name(out.dtype.np)} for {field}; pass an out tensor of the result's dtype")
    if exact_dtype and result.dtype != out.dtype:
        if linalg:     # torch's linalg kernels name the C++ element types ("but got int instead")
            raise RuntimeError(f"Expected out tensor to have dtype {_cpp_type_name(result.dtype)}, but got "
                               f"{_cpp_type_name(out.dtype)} instead")
        raise RuntimeError(f"{name}: Expected out tensor to have scalar type {scalar_name(result.dtype.np)} "
                           f"but got scalar type {scalar_name(out.dtype.np)}; pass an out tensor of the "
                           "result's dtype")
    if not any_dtype and not _dt.can_cast(result.dtype, out.dtype):
        what = "input types" if cast_error is TypeError else f"result type {scalar_name(result.dtype.np)}"
        raise cast_error(f"{name}(): {what} can't be cast to the desired output type {scalar_name(out.dtype.np)}")
    if tuple(out.shape) != tuple(result.shape):
        if out.numel() != 0:
            warn(_RESIZED.format(old=list(out.shape), new=list(result.shape)))   # the user's line
        # torch resizes ``out`` in place (``resize_``): over its storage from its offset while that
        # holds enough elements, so a view's base and the other views of that storage see the
        # write. A tensor that requires grad (only reached under no_grad) cannot take ``resize_``,
        # and a part of a complex storage has no real-valued layout: a new storage for those.
        try:
            if out.requires_grad:
                raise NotImplementedError
            version = out._vc[0]
            out.resize_(tuple(result.shape))
            out._vc[0] = version      # torch's internal resize is no in-place op of its own: one bump, the write's
        except NotImplementedError:
            out.data = result.detach().to(out.dtype)
            return out
    out.copy_(result)
    return out


def _same_dtype_as_input(label, args, kwargs, out):
    if isinstance(out, Tensor) and args and isinstance(args[0], Tensor) and out.dtype != args[0].dtype:
        return f"{label}() out tensor must be same dtype as the input tensor"


def _bool_result(label, args, kwargs, out):
    if isinstance(out, Tensor) and out.dtype not in (_dt.bool_, _dt.uint8):
        return f"{label} only supports bool tensor for result, got: {scalar_name(out.dtype.np)}"


def _index_result(label, args, kwargs, out):
    want = _dt.int32 if kwargs.get("out_int32") else _dt.int64
    if isinstance(out, Tensor) and out.dtype != want:
        return (f"torch.{label}(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) "
                f"depending on whether out_int32 flag is True, but we got output tensor's dtype "
                f"{scalar_name(out.dtype.np)} and out_int32 flag is {bool(kwargs.get('out_int32'))}")


def _no_tuple(label, args, kwargs, out):
    if kwargs.get("as_tuple"):
        return "nonzero does not support the out kwarg when as_tuple is True; call it with as_tuple=False"


def _complex_result(label, args, kwargs, out):
    # complex/polar check out= against the complex dtype of their (valid) float parts first
    parts = [a for a in args[:2] if isinstance(a, Tensor)]
    want = {"float16": "complex32", "float32": "complex64", "float64": "complex128"}
    if (len(parts) == 2 and parts[0].dtype is parts[1].dtype and parts[0].dtype.name in want
            and isinstance(out, Tensor) and out.dtype.name != want[parts[0].dtype.name]):
        return (f"Expected object of scalar type {_dt.SCALAR_NAMES[want[parts[0].dtype.name]]} but got "
                f"scalar type {scalar_name(out.dtype.np)} for argument 'out'")


def _clamp_by_numbers(label, args, kwargs, out):
    """torch's clamp family with number bounds (a kernel of its own) wants ``out`` of the result's
    dtype exactly, where tensor bounds take the usual cast (``clamp(float_t, 0., out=double_t)``
    is refused, ``clamp(float_t, float_t, out=double_t)`` is not)."""
    input, bounds = (args[0] if args else kwargs.get("input")), list(args[1:3]) + [kwargs.get("min"), kwargs.get("max")]
    bounds = [b for b in bounds if b is not None]
    if not isinstance(input, Tensor) or not isinstance(out, Tensor) or not bounds \
            or not all(type(b) in (bool, int, float) for b in bounds):
        return None
    try:
        rdt = _dt.result_type([input.dtype] if input.ndim else [], [] if input.ndim else [input.dtype], bounds)
    except Exception:   # noqa: BLE001 -- bounds that do not promote: the function's own error stands
        return None
    if out.dtype is not rdt:
        return (f"{label}(): Found dtype {scalar_name(out.dtype.np)} but expected {scalar_name(rdt.np)}; with number "
                "bounds out= must have the result's dtype")
    return None


def _cond_result(label, args, kwargs, out):
    """linalg.cond checks that its real result can be cast to ``out``'s dtype before computing,
    with its own wording."""
    A = args[0] if args else kwargs.get("A")
    if not isinstance(A, Tensor) or not isinstance(out, Tensor):
        return None
    rdt = A.real.dtype if A.dtype.is_complex else A.dtype
    if not _dt.can_cast(rdt, out.dtype):
        return (f"linalg.cond: Expected result to be safely castable from {scalar_name(rdt.np)} dtype, but got "
                f"result with dtype {scalar_name(out.dtype.np)}")
    return None


def _castable_from(prefix, result_dtype, names=("result",)):
    """The refusal of torch's linalg kernels that check ``out``'s dtype up front with their own
    words ("tensorinv: Expected result to be safely castable from Float dtype, but got result with
    dtype Int"); ``result_dtype(A)`` is the dtype they compute in, from the first argument. A tuple
    ``out`` is checked part by part, each under its name in ``names`` ("eigenvalues", ...)."""
    def refusal(label, args, kwargs, out):
        A = args[0] if args else kwargs.get("A")
        if not isinstance(A, Tensor):
            return None
        rdt = result_dtype(A)
        for name, part in zip(names, out if isinstance(out, (tuple, list)) else (out,)):
            if isinstance(part, Tensor) and not _dt.can_cast(rdt, part.dtype):
                return (f"{prefix}: Expected {name} to be safely castable from {scalar_name(rdt.np)} dtype, but got "
                        f"{name} with dtype {scalar_name(part.dtype.np)}")
        return None
    return refusal


def _eig_dtype(A):
    """The complex dtype linalg.eig / eigvals compute in."""
    return A.dtype if A.dtype.is_complex else _dt.to_complex(A.dtype)


def _multi_dot_result(label, args, kwargs, out):
    """linalg.multi_dot wants ``out`` of its inputs' dtype, in its own words, before computing."""
    tensors = args[0] if args else kwargs.get("tensors")
    if (isinstance(out, Tensor) and isinstance(tensors, (list, tuple)) and tensors
            and isinstance(tensors[0], Tensor) and out.dtype is not tensors[0].dtype):
        return (f"multi_dot(): expected out tensor to have dtype {_cpp_type_name(tensors[0].dtype)} but got "
                f"{_cpp_type_name(out.dtype)}")
    return None


# out= dtypes (and forms) some torch kernels refuse before computing, with their own messages
_OUT_REFUSALS = {"cond": _cond_result, "multi_dot": _multi_dot_result,
                 "tensorinv": _castable_from("tensorinv", lambda A: A.dtype),
                 "tensorsolve": _castable_from("tensorsolve", lambda A: A.dtype),
                 "pinv": _castable_from("linalg.pinv", lambda A: A.dtype),
                 "cholesky_inverse": _castable_from("cholesky_inverse", lambda A: A.dtype),
                 "geqrf": _castable_from("torch.geqrf", lambda A: A.dtype, ("a", "tau")),
                 "householder_product": _castable_from("torch.linalg.householder_product", lambda A: A.dtype),
                 "matrix_rank": _castable_from("torch.linalg.matrix_rank", lambda A: _dt.int64),
                 "eig": _castable_from("torch.linalg.eig", _eig_dtype, ("eigenvalues", "eigenvectors")),
                 "eigvals": _castable_from("torch.linalg.eigvals", _eig_dtype, ("eigenvalues",)), "clamp": _clamp_by_numbers, "clip": _clamp_by_numbers, "clamp_min": _clamp_by_numbers,
                 "clamp_max": _clamp_by_numbers, "quantile": _same_dtype_as_input, "nanquantile": _same_dtype_as_input,
                 "all": _bool_result, "any": _bool_result, "searchsorted": _index_result,
                 "bucketize": _index_result, "nonzero": _no_tuple,
                 "complex": _complex_result, "polar": _complex_result}


# functions whose inputs torch's out= refuses to overlap the output at all, even fully
# (``cat([x, y], out=x)``): the inputs are read while the output is being written
_STACKING = frozenset(("cat", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack"))
# (and these, whose inputs are plain arguments: all of them, or only those at the positions
# given -- gather and take_along_dim may write into their own index, as torch)
_NO_OVERLAP = {"outer": None, "ger": None, "index_select": None, "take": None, "masked_select": None,
               "cross": None, "scatter": None, "gather": (0,), "take_along_dim": (0,)}
# TensorIterator kernels (the iter_alias ones, and these with an exact out dtype) refuse an out=
# whose elements alias each other (an expanded tensor) before resizing it: torch builds the
# iterator, whose overlap check comes first; unchecked, a wrong-shaped expanded out was resized
# into fresh memory and written silently. (Reductions, products and gathers resize first.)
_ITER_EXACT = frozenset(("index_select", "masked_select", "outer", "ger", "round", "sign", "sgn", "neg", "negative",
                         "floor", "ceil", "trunc", "fix", "frac", "bitwise_not", "signbit", "nan_to_num",
                         "heaviside", "isneginf", "isposinf", "float_power", "abs", "absolute"))


_LINALG_MODULES = ("tracegrad.linalg", "tracegrad._linalg")


def accepts_out(name=None, dtype_from_out=False, iter_alias=False, **how):
    """Decorator for a function with torch's ``out=`` keyword: the function computes its result
    as usual and this writes it into ``out`` (``write_out(..., **how)``) when one is given.
    ``dtype_from_out``: the function takes ``dtype=`` and, as torch's reductions and scans do,
    computes in ``out``'s dtype when no dtype is given (``sum(x_float, out=long_t)`` sums the
    truncated values). ``iter_alias``: torch's TensorIterator kernels (elementwise ops), which
    never resize an ``out`` that is itself one of the inputs: RuntimeError when the broadcast
    shape differs from its shape (``add(x, y, out=x)`` with ``x`` of shape [3], ``y`` [2, 3])."""
    def wrap(fn):
        label = name or fn.__name__
        if how.get("exact_dtype") is True and fn.__module__.startswith(_LINALG_MODULES):
            how["exact_dtype"] = "linalg"      # their own wording of the dtype check (``write_out``)
        # torch's Python-level functions (tensordot, norm, nn.functional's) fail on a non-Tensor
        # with their own AttributeError: only the C++-parsed ones get the parser's TypeError
        python_level = label in PYTHON_LEVEL or fn.__module__.startswith("tracegrad.nn")

        @functools.wraps(fn)
        def with_out(*args, out=None, **kwargs):
            if out is None:
                try:     # free when nothing is raised: the function forms' one layer is their guard
                    return fn(*args, **kwargs)
                except AttributeError as e:
                    if python_level:
                        raise
                    raise _not_a_tensor_argument(label, e, args) or e
            if label in _OUT_TENSOR_ARGS:
                _check_out_tensor_args(label, args, kwargs)
            if label in _OUT_REFUSALS:
                refusal = _OUT_REFUSALS[label](label, args, kwargs, out)
                if refusal:
                    raise RuntimeError(refusal)
            if isinstance(out, Tensor):
                if iter_alias or label in _ITER_EXACT:
                    check_no_internal_overlap(out)
                _check_out_overlap(label, args, out)
                if label in _STACKING and args and isinstance(args[0], (list, tuple)):
                    _check_out_overlap(label, args[0], out, fully=True)
                elif label in _NO_OVERLAP:
                    where = _NO_OVERLAP[label]
                    _check_out_overlap(label, args if where is None else [args[k] for k in where if k < len(args)],
                                       out, fully=True)
            if dtype_from_out and isinstance(out, Tensor):
                dtype = kwargs.get("dtype")
                if dtype is not None and dtype != out.dtype:
                    raise RuntimeError(f"{label}(): dtype {scalar_name(dtype.np)} does not match the dtype of "
                                       f"the out parameter ({scalar_name(out.dtype.np)}); pass one or the other")
                kwargs["dtype"] = out.dtype
            try:
                result = fn(*args, **kwargs)
            except (NotImplementedError, RuntimeError) as e:
                if python_level or not (iter_alias or how.get("exact_dtype") in (True, "linalg")):
                    raise
                _out_checks_first(label, args, out, how.get("exact_dtype") in (True, "linalg"), e)
                raise
            if iter_alias and isinstance(out, Tensor) and isinstance(result, Tensor) \
                    and tuple(result.shape) != tuple(out.shape) \
                    and any(a is out for a in (*args, *kwargs.values())):
                raise RuntimeError(f"{label}(): output with shape {list(out.shape)} doesn't match the broadcast "
                                   f"shape {list(result.shape)}; an out= tensor that is also an input is not "
                                   "resized: pass a separate out tensor")
            if label in _COMPLEX_TO_REAL and isinstance(out, Tensor) and args and isinstance(args[0], Tensor) \
                    and args[0].dtype.is_complex:
                return _write_complex_to_real(label, args[0], result, out)
            return write_out(label, result, out, **how)
        with_out._kinds_checked = True   # _api.argcheck.guard_all adds no second AttributeError guard
        return with_out
    return wrap


# torch refuses a complex input of these before it looks at out='s dtype (special_ndtr: a
# composite whose erf refuses it)
_COMPLEX_REFUSED_FIRST = frozenset(("ceil", "floor", "sign", "signbit", "trunc", "fix", "special_ndtr"))


def _out_checks_first(label, args, out, exact, error):
    """torch's elementwise kernels check ``out`` (the parser: a Tensor; the meta function: its
    dtype against the result's) before looking for a kernel of the inputs' dtype: when the
    function refused its inputs (``error``), raise what torch raises for ``out`` first --
    ``bitwise_not(float_t, out=long_t)`` is the dtype's RuntimeError, not the missing kernel's
    NotImplementedError. Returns when ``out`` passes, for ``error`` to be raised."""
    if label == "floor_divide" and isinstance(out, (bool, int, float, complex)):
        return   # torch's floor_divide reads a number out= as a tensor (no parser error)
    if not isinstance(out, Tensor):
        if not (isinstance(out, (tuple, list)) and out and all(isinstance(o, Tensor) for o in out)):
            raise TypeError(f"{label}(): argument 'out' must be Tensor, not {type(out).__name__}; pass a "
                            "tensor to write the result into") from None
        return
    dim, zero, scalars = [], [], []
    for a in args[:2]:
        if isinstance(a, Tensor):
            (dim if a.ndim else zero).append(a.dtype)
        elif isinstance(a, (bool, int, float, complex)):
            scalars.append(a)
    if not dim and not zero:
        return
    if label in _COMPLEX_REFUSED_FIRST and any(d.is_complex for d in dim + zero):
        return
    try:
        rdt = _dt.result_type(dim, zero, scalars)
    except Exception:   # noqa: BLE001 -- types that do not promote: the function's error stands
        return
    if exact and out.dtype is not rdt:
        raise RuntimeError(f"{label}(): Found dtype {scalar_name(out.dtype.np)} but expected "
                           f"{scalar_name(rdt.np)}; out= must have the result's dtype") from None
    if not exact and not _dt.can_cast(rdt, out.dtype):
        raise RuntimeError(f"{label}(): result type {scalar_name(rdt.np)} can't be cast to the desired "
                           f"output type {scalar_name(out.dtype.np)}; pass an out= tensor of a dtype the "
                           "result can be cast to") from None


# torch's abs of a complex tensor (unary_op_impl_with_complex_to_float_out): its real result is
# cast into a real ``out`` (the usual rule) or written into a complex ``out`` of the input's dtype
_COMPLEX_TO_REAL = frozenset(("abs", "absolute"))


def _write_complex_to_real(label, input, result, out):
    if out.dtype.is_complex and out.dtype != input.dtype:
        raise RuntimeError(f"{label}: Found dtype {scalar_name(out.dtype.np)} but expected "
                           f"{scalar_name(input.dtype.np)}; a complex out= must have the input's dtype")
    return write_out(label, result, out)


# functions whose out= overload takes tensors only where the plain one also takes numbers:
# argument names by position (torch's parser: TypeError, ``where(c, x, 0., out=t)``)
_OUT_TENSOR_ARGS = {"where": ("condition", "input", "other")}


def _check_out_tensor_args(label, args, kwargs):
    """TypeError, as torch's parser, for a number where the out= overload of ``label`` needs a
    Tensor (given by position or by keyword)."""
    for pos, name in enumerate(_OUT_TENSOR_ARGS[label]):
        given = pos < len(args)
        value = args[pos] if given else kwargs.get(name)
        if value is not None and not isinstance(value, Tensor):
            where = f" (position {pos + 1})" if given else ""
            raise TypeError(f"{label}(): argument '{name}'{where} must be Tensor, not {type(value).__name__}; "
                            f"with out=, pass tensors (tracegrad.tensor(value)) or leave out= out")


def _check_out_overlap(label, args, out, fully=False):
    """torch refuses an ``out`` that shares some, but not all, of an input's elements
    (``torch.abs(x[:-1], out=x[1:])``): the result would depend on the order of the writes.
    ``fully``: any shared element is refused, ``out`` itself among the inputs too (``cat``)."""
    for a in args:
        if isinstance(a, Tensor) and (fully or a is not out) and a._st is out._st:
            # torch's overlap test calls an input that IS out a full overlap before it looks at
            # the elements, so ``cat([x, y], out=x)`` is refused even for an empty ``x``
            if fully and a is out:
                raise RuntimeError(f"{label}(): unsupported operation: some elements of the input tensor and the "
                                   "written-to tensor refer to a single memory location. Please clone() the "
                                   "tensor before performing the operation.")
            mine, theirs = element_positions(out), element_positions(a)
            if not fully and mine.shape == theirs.shape and (mine == theirs).all():
                continue
            if np.intersect1d(mine, theirs).size:
                raise RuntimeError(f"{label}(): unsupported operation: some elements of the input tensor and the "
                                   "written-to tensor refer to a single memory location. Please clone() the "
                                   "tensor before performing the operation.")


def _not_a_tensor_argument(label, err, args):
    """torch's TypeError when ``err`` is an attribute lookup on one of ``args`` that is not a
    Tensor (``round(None)``, ``where([1])``); None for any other AttributeError (user code's)."""
    obj = getattr(err, "obj", err)
    for pos, value in enumerate(args, 1):
        # a string where the tensors go fails on one of its characters (hstack('abc'))
        if (value is obj or isinstance(value, str) and isinstance(obj, str) and obj in value
                or isinstance(value, (list, tuple)) and any(v is obj for v in value)) and not isinstance(value, Tensor):
            return not_a_tensor(label, value, "input" if pos == 1 else "other", pos)
    return None
