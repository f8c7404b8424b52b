"""torch's argument-parser TypeError for a call that failed because an argument had the wrong
kind: a non-Tensor where the Tensor goes, a tensor / float / str where an int, a dim, a bool, a
dtype or a size goes.

NOTE [argument kinds on the error path]
torch checks every argument's type in C++ before its kernel runs and raises TypeError
("argument 'dim' must be int, not Tensor"); tracegrad's functions are plain Python and fail
later, deep inside, with AttributeError (``None._value``), RuntimeError (``bool()`` of a
tensor used as an int) or ValueError. ``guard`` wraps a public function in one ``try``: nothing
runs on the success path (Python 3.11's try is free), and only after the call has already
failed does ``argument_error`` bind the arguments to the signature and look, by parameter name,
for one of the wrong kind; the TypeError it builds replaces the original. A failure with every
argument of the right kind keeps its own class (a dim out of range stays IndexError).
Kinds come from parameter names, the same names torch's signatures use (``KINDS``).

NOTE [argument kinds on the success path]
Some wrong kinds never fail: JAX takes a float where an int goes (``topk(x, 1.5)``), Python's
``if`` takes a string or None as a flag. For the kinds where that happens (``_STRICT_KINDS``) the
guard also looks before the call, at those parameters only, with one ``type(v) is ...`` each on
the common path; the hot families (unguarded) call ``require_int`` at the sites that take a count.
"""
from __future__ import annotations

import functools
import inspect
import numbers

from .._ops import dtypes as _dt
from .._ops.errors import PYTHON_LEVEL, not_a_tensor, out_of_memory
from .._tensor.convert import bool_size_error
from .._tensor.tensor import Size, Tensor


# numpy's integer scalars (``__index__``) and torch's SymInt, by name: numpy is not imported here
_INDEX_TYPES = frozenset(("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "SymInt"))


def _is_index(v):
    if isinstance(v, Tensor):    # torch takes a one-element integer (or bool) tensor as an int (__index__)
        return v.numel() == 1 and v.dtype._cat <= 1
    if type(v).__name__ == "ndarray":   # a 0-d integer array has __index__ too (mask.sum().numpy())
        return v.ndim == 0 and v.dtype.kind in "iu"
    return isinstance(v, int) or type(v).__name__ in _INDEX_TYPES


def _is_int(v):
    # a bool is an int to Python, not to torch's parser ("must be int, not bool"); nor is a bool
    # tensor (``x.transpose(tensor(True), 0)``), though it has ``__index__`` (a size list takes it)
    return type(v) is not bool and _is_index(v) and not (isinstance(v, Tensor) and v.dtype._cat == 0)


def _is_plain_int(v):
    # a plain (not symbolic) int parameter takes a 0-d integer tensor (``__index__``), never one with
    # dims (``polygamma(tensor([1]), x)``, ``pixel_shuffle(x, tensor([2]))``: torch's TypeError)
    return _is_int(v) and not (isinstance(v, Tensor) and v.ndim != 0)


# int parameters torch reads as symbolic ints (by function): its parser takes any one-element
# integral tensor there, a bool one too, and then refuses the bool value with a RuntimeError
# (``bool_size_error``), where a plain int parameter (a dim, ``chunks``, ``diag``'s diagonal,
# ``rot90``'s k) refuses the tensor with its TypeError
_SYMINT_PARAMS = {"select": ("index",), "narrow": ("start", "length"), "narrow_copy": ("start", "length"),
                  "topk": ("k",), "kthvalue": ("k",), "eye": ("n", "m"), "randperm": ("n",),
                  "randint": ("low", "high"), "tril": ("diagonal",), "triu": ("diagonal",),
                  "multinomial": ("num_samples",), "bincount": ("minlength",)}


def _bool_symint(api, name, value):
    return (name in _SYMINT_PARAMS.get(api.rpartition(".")[2].rstrip("_"), ()) and isinstance(value, Tensor)
            and value.dtype._cat == 0 and value.numel() == 1)


def _is_ints(v):
    # torch's parser tells an int list by its first element, so only that one may not be a bool
    # (``x.view(2, True, 3)`` is a view to (2, 1, 3); ``x.view(True, 6)`` is its TypeError)
    return isinstance(v, (tuple, list, Size)) and (not v or type(v[0]) is not bool) and all(_is_index(x) for x in v)


def _is_dims(v):
    return v is None or _is_int(v) or _is_ints(v)


def _is_bool(v):
    return isinstance(v, (bool, int)) and not isinstance(v, Tensor) or (isinstance(v, Tensor) and v.numel() == 1)


def _is_opt_bool(v):
    return v is None or _is_bool(v)


def _is_dtype(v):
    # torch's parser takes a torch.dtype or one of Python's number types (float: float64...), not
    # a name ('float32') nor a numpy type
    return v is None or _dt.is_dtype_arg(v)


def _is_tensor_like(v):
    # Python numbers stay: many of torch's Tensor arguments also take a Scalar overload
    return isinstance(v, (Tensor, int, float, complex, bool))


def _is_number(v):
    # torch's Scalar: a Python or numpy number, or a 0-d tensor that needs no grad (its parser refuses
    # a one-element tensor with dims: ``elu(x, alpha=tensor([2.]))`` is its TypeError)
    if isinstance(v, Tensor):
        return v.ndim == 0 and not v.requires_grad
    return isinstance(v, (int, float, complex)) or type(v).__module__ == "numpy"


def _is_tensor(v):
    return isinstance(v, Tensor)


def _is_strict_bool(v):
    # torch's parser takes only a bool for a bool (not 1, not a tensor): checked before the call,
    # where a lenient check would let an int flag through unnoticed
    return type(v) is bool or type(v).__name__ == "bool_"


def _is_strict_opt_bool(v):
    return v is None or _is_strict_bool(v)


_DIMS_OR_KEEPDIM = "int or tuple of ints (or keepdim, a bool)"
_CHECKS = {_DIMS_OR_KEEPDIM: lambda v: type(v) is bool or _is_dims(v), "Number": _is_number, "Number or None": lambda v: v is None or _is_number(v),
           "Tensor (not a number)": _is_tensor, "int": _is_int, "tuple of ints": _is_ints, "int or tuple of ints": _is_dims,
           "Number, str or None": lambda v: v is None or isinstance(v, str) or _is_number(v),
           "bool": _is_bool, "bool or None": _is_opt_bool, "torch.dtype": _is_dtype, "Tensor": _is_tensor_like}
KINDS = {
    **dict.fromkeys(("dim", "dims", "shifts", "kernel_size", "stride", "dilation", "output_size", "normalized_shape"),
                    "int or tuple of ints"),
    **dict.fromkeys(("dim0", "dim1", "dim2", "start_dim", "end_dim", "diagonal", "offset", "chunks", "decimals",
                     "minlength", "upscale_factor", "downscale_factor", "groups", "num_classes", "window_length",
                     "n", "N", "r", "k", "num_groups"), "int"),
    **dict.fromkeys(("size", "shape", "sizes", "split_sizes"), "tuple of ints"),
    **dict.fromkeys(("keepdim", "descending", "stable", "sorted", "largest", "return_inverse", "return_counts",
                     "equal_nan", "accumulate", "as_tuple", "out_int32", "right", "include_self",
                     "with_replacement", "assume_unique", "invert", "sparse_grad",
                     "inplace", "align_corners", "ceil_mode", "count_include_pad", "return_indices", "some",
                     "compute_uv", "pivot", "full_matrices", "upper", "unitriangular",
                     "transpose", "left", "hermitian", "density", "check_errors", "adjoint", "unpack_data",
                     "unpack_pivots"), "bool"),
    "unbiased": "bool or None",
    # sparse_coo_tensor's flags: None is "not said", anything else but a bool torch's parser refuses
    **dict.fromkeys(("check_invariants", "is_coalesced"), "bool or None"),
    # torch's generated factories (zeros, full, arange, the *_like and new_* ones, the windows...)
    # take None for these TensorOptions flags (as False); its hand-written parsers take a bool only
    # (``_BOOL_ONLY_OPTIONS``)
    **dict.fromkeys(("requires_grad", "pin_memory"), "bool or None"),
    **dict.fromkeys(("alpha", "lambd", "negative_slope", "min_val", "max_val"), "Number"),
    **dict.fromkeys(("nan", "posinf", "neginf"), "Number or None"),
    "dtype": "torch.dtype",
    **dict.fromkeys(("self", "input", "tensor", "tensor1", "tensor2", "mat1", "mat2", "vec", "vec1", "vec2",
                     "batch1", "batch2", "index", "mask", "condition", "target", "weight_hh"), "Tensor"),
}


# parameter names that mean another kind in one API (mvlgamma's p is an int, dropout's a float),
# keyed by the function's own name: the same in every namespace
_TENSOR_ONLY = "Tensor (not a number)"
_API_KINDS = {"nuclear_norm": {"dim": _DIMS_OR_KEEPDIM},    # its (input, keepdim) overload
              "mvlgamma": {"p": "int"}, "mvlgamma_": {"p": "int"}, "multigammaln": {"p": "int"},
              "rrelu": {"upper": "Number", "lower": "Number"}, "rrelu_": {"upper": "Number", "lower": "Number"},
              # a string p is a matrix norm's name in torch's norm: RuntimeError there, not TypeError
              "normalize": {"p": "Number, str or None"},
              # no Scalar overload in torch: the second operand is a Tensor only
              **dict.fromkeys(("nextafter", "logaddexp2", "igamma", "igammac", "igamma_", "igammac_", "trapezoid", "trapz",
                               "cumulative_trapezoid"), {"other": _TENSOR_ONLY, "x": _TENSOR_ONLY}),
              "pairwise_distance": {"x2": _TENSOR_ONLY},
              "logit": {"eps": "Number or None"}, "logit_": {"eps": "Number or None"},
              # a Tensor only (no list, no number) where the kernel's own dtype check would come first
              "take_along_dim": {"indices": _TENSOR_ONLY}, "masked_select": {"mask": _TENSOR_ONLY},
              "bincount": {"weights": _TENSOR_ONLY}, "grid_sample": {"grid": _TENSOR_ONLY},
              "embedding": {"weight": _TENSOR_ONLY}, "orgqr": {"tau": _TENSOR_ONLY},
              # a size passed where torch's parser takes an int (randint's high may hold the size: not checked)
              **dict.fromkeys(("tril_indices", "triu_indices"), {"row": "int", "col": "int"}), "randint": {"low": "int"},
              "fill_diagonal_": {"fill_value": "Number", "wrap": "bool"},
              # a parser bool here (register_parametrization's unsafe is read for its truth, as torch's Python)
              "segment_reduce": {"unsafe": "bool"}, "vander": {"increasing": "bool"},
              "set_anomaly_enabled": {"enabled": "bool", "check_nan": "bool"},
              # Scalar/float parameters: a 0-d tensor at most (a one-element tensor with dims is the TypeError)
              **dict.fromkeys(("addmm", "addmm_", "addbmm", "addbmm_", "baddbmm", "baddbmm_", "addmv", "addmv_",
                               "addr", "addr_"), {"beta": "Number"}),
              "softplus": {"beta": "Number", "threshold": "Number"}, "histc": {"min": "Number", "max": "Number"},
              **dict.fromkeys(("cdist", "pdist"), {"p": "Number"}), "multi_margin_loss": {"p": "Number"},
              "scaled_dot_product_attention": {"scale": "Number or None"},
              # a row count and an index value, not a shape
              "nonzero_static": {"size": "int", "fill_value": "int"}, "pinverse": {"rcond": "Number"},
              # a Tensor or a number (checked after a failure, where None or a string is the cause)
              "isin": {"elements": "Tensor", "test_elements": "Tensor"}, "float_power_": {"exponent": "Tensor"},
              **dict.fromkeys(("tensor", "new_tensor", "range", "frombuffer", "sparse_coo_tensor", "sparse_csr_tensor",
                               "sparse_csc_tensor", "sparse_bsr_tensor", "sparse_bsc_tensor", "sparse_compressed_tensor"),
                              {"requires_grad": "bool", "pin_memory": "bool"})}


def kind_of(api, name):
    """The kind ``api``'s parameter ``name`` takes (``KINDS``, ``_API_KINDS``), or None."""
    own = _API_KINDS.get(api.rpartition(".")[2])
    return own[name] if own is not None and name in own else KINDS.get(name)


def _signature(fn, follow_wrapped=True):
    try:
        return inspect.signature(fn, follow_wrapped=follow_wrapped)
    except (TypeError, ValueError):
        return None


def _public_signature(fn):
    """``fn``'s parameters as users see them: the wrapped function's, plus ``out`` where ``fn`` is
    an ``out=`` wrapper (``accepts_out``) around one that takes none."""
    sig, own = _signature(fn), _signature(fn, follow_wrapped=False)
    if sig is None or own is None or "out" not in own.parameters or "out" in sig.parameters:
        return sig
    params = list(sig.parameters.values())
    at = len(params) - (params and params[-1].kind is params[-1].VAR_KEYWORD)
    params.insert(at, own.parameters["out"].replace(kind=inspect.Parameter.KEYWORD_ONLY))
    try:
        return sig.replace(parameters=params)
    except ValueError:
        return sig


# where torch's signatures take a string (a mode, a reduction, a device): a bad value there is the
# kernel's error (RuntimeError/ValueError), a string anywhere else the parser's TypeError
STR_PARAMS = frozenset({
    "rounding_mode", "reduce", "reduction", "mode", "padding", "padding_mode", "pad_mode", "interpolation", "side",
    "indexing", "p", "ord", "compute_mode", "approximate", "norm", "driver", "UPLO", "equation", "nonlinearity",
    "device", "layout", "memory_format", "name", "names", "dtype", "window", "pad", "value", "fill_value"})
# Tensor's conversions to a Python number: reached from inside a function, they mean a tensor
# arrived where a number goes (RuntimeError/ValueError there; the parser's TypeError in torch)
_CONVERSIONS = frozenset({"__bool__", "__int__", "__float__", "__index__", "item"})


def _wrong_kind(api, sig, args, kwargs, skip=()):
    """(position, parameter, kind wanted, value) of the first bound argument of the wrong kind
    (kinds in ``skip`` not checked)."""
    try:
        bound = sig.bind(*args, **kwargs).arguments
    except TypeError:
        return None
    for pos, (name, value) in enumerate(bound.items(), 1):
        param = sig.parameters[name]
        kind = kind_of(api, name)
        if value is param.default or param.kind is param.VAR_KEYWORD or name in _OVERLOADED.get(api, ()):
            continue
        if param.kind is param.VAR_POSITIONAL:
            if kind in ("tuple of ints", "int or tuple of ints"):
                one = len(value) == 1 and isinstance(value[0], (tuple, list, Size))
                if not _is_ints(value[0] if one else value):
                    return pos, name, kind, value
            continue
        if kind in skip:
            continue
        if kind is not None and not _CHECKS[kind](value):
            return pos, name, kind, value
        if kind is None and isinstance(value, str) and name not in STR_PARAMS:
            return pos, name, "a number or Tensor", value
    return None


def _converted_argument(api, err, sig, args, kwargs):
    """The position of the argument whose conversion to a Python number raised ``err`` (a tensor
    passed where a number goes), or None. Read from the innermost frame of ``err``'s traceback:
    the converted tensor itself, or, when it was computed from one (``size % groups``), the first
    multi-element tensor given for a parameter after the first that is not a Tensor one."""
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or tb.tb_frame.f_code.co_name not in _CONVERSIONS:
        return None
    pos = _position(tb.tb_frame.f_locals.get("self"), args, kwargs)
    if pos is not None or sig is None:
        return pos
    try:
        bound = list(sig.bind(*args, **kwargs).arguments.items())
    except TypeError:
        return None
    for pos, (name, value) in enumerate(bound[1:], 2):
        if (isinstance(value, Tensor) and value.numel() != 1 and KINDS.get(name) != "Tensor"
                and name not in _OVERLOADED.get(api, ())):
            return pos
    return None


def _position(obj, args, kwargs):
    """1-based position of ``obj`` among the call's arguments (also inside a list or tuple)."""
    for pos, value in enumerate(list(args) + list(kwargs.values()), 1):
        if value is obj or (isinstance(value, (list, tuple)) and any(v is obj for v in value)):
            return pos
    return None


# what torch's Python-level functions (most of nn.functional) test in Python before the C++
# parser sees an argument: the input (``input.dim()``: AttributeError) and flags (``if inplace:``)
_PYTHON_CHECKED = ("Tensor", "bool", "bool or None")


def argument_error(api, sig, args, kwargs, err, python_level=False):
    """torch's TypeError for the failed call ``api(*args, **kwargs)`` when one of its arguments
    has the wrong kind for its parameter (``KINDS``), is a tensor that was converted to a number,
    or is the non-Tensor object a failed attribute lookup (``err``) was made on; None when none
    of these explains the failure. ``python_level``: torch's function is Python that forwards its
    arguments to C++ ops; only the kinds that parser checks count."""
    skip = _PYTHON_CHECKED if python_level else ()
    wrong = _wrong_kind(api, sig, args, kwargs, skip) if sig is not None else None
    if wrong is not None:
        pos, name, kind, value = wrong
        name = "input" if name == "self" else name   # torch names a function form's tensor 'input'
        if kind == "int" and _bool_symint(api, name, value):
            return bool_size_error(f"{api}(): argument '{name}'", pos)
        return TypeError(f"{api}(): argument '{name}' (position {pos}) must be {kind}, not "
                         f"{type(value).__name__}; pass a value of that kind (see the docs of {api})")
    if python_level:
        if api in _INPUT_TO_CPP and isinstance(err, AttributeError):
            input = args[0] if args else kwargs.get("input", _MISSING)
            if not isinstance(input, Tensor) and getattr(err, "obj", _MISSING) is input:
                # torch's Python hands ``input`` straight to a C++ op: its parser's TypeError
                return TypeError(f"{api}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}; "
                                 "pass a tensor (tracegrad.tensor(...) makes one from data)")
        return None
    pos = _converted_argument(api, err, sig, args, kwargs)
    if pos is not None:
        return TypeError(f"{api}(): argument (position {pos}) must be a number, not a Tensor with "
                         f"more than one element; pass a Python number (or .item() of a one-element tensor)")
    obj = getattr(err, "obj", err) if isinstance(err, AttributeError) else err
    if obj is not err and not isinstance(obj, Tensor):
        pos = _position(obj, args, kwargs)
        if pos is not None:
            return TypeError(f"{api}(): argument (position {pos}) must be Tensor, not {type(obj).__name__} "
                             "(tracegrad.tensor(...) makes one from data)")
    return None


GUARDED = (AttributeError, RuntimeError, ValueError, IndexError, NotImplementedError)   # what may be replaced

# torch's Python-level functionals whose first use of ``input`` is a C++ op (max_pool2d, im2col...):
# a non-Tensor input is that op's parser TypeError, not the AttributeError of a Python lookup
_INPUT_TO_CPP = frozenset(("max_pool1d", "max_pool2d", "adaptive_max_pool1d", "layer_norm", "fold", "unfold",
                           "rms_norm"))


# kinds a wrong value of which would pass silently (a float dim or count, a dtype given by name, a
# string or an int for a flag, a number where only a Tensor goes): checked before the call too (NOTE
# [argument kinds on the success path]); _FAST: the type that needs no further look
_STRICT_KINDS = ("int", "int or tuple of ints", _DIMS_OR_KEEPDIM, "bool", "bool or None", "Number", "Number or None", _TENSOR_ONLY,
                 "torch.dtype")
_FAST = {"bool": bool, "bool or None": bool, "Number": float, "Number or None": float, _TENSOR_ONLY: Tensor,
         "torch.dtype": _dt.dtype}
_MISSING = object()


def _strict_params(api, sig, python_level):
    """(position, name, default, fast type, check, kind) of ``sig``'s parameters of a
    ``_STRICT_KINDS`` kind."""
    if sig is None:
        return ()
    out = []
    for pos, (name, param) in enumerate(sig.parameters.items()):
        kind = kind_of(api, name)
        if (kind not in _STRICT_KINDS or name in _OVERLOADED.get(api, ())
                or (python_level and kind in _PYTHON_CHECKED)
                or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD)):
            continue
        at = pos if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD) else 1 << 30
        ok = _is_strict_bool if kind == "bool" else _is_strict_opt_bool if kind == "bool or None" else _CHECKS[kind]
        if kind == "int" and name not in _SYMINT_PARAMS.get(api.rpartition(".")[2].rstrip("_"), ()):
            ok = _is_plain_int
        out.append((at, name, param.default, _FAST.get(kind, int), ok, kind))
    return tuple(out)


def strict_error(api, name, kind, value, pos=None):
    """torch's parser TypeError for ``value`` given to ``api``'s parameter ``name`` of ``kind``."""
    where = f" (position {pos})" if pos is not None else ""
    if kind == "int" and _bool_symint(api, name, value):
        return bool_size_error(f"{api}(): argument '{name}'", pos)
    return TypeError(f"{api}(): argument '{name}'{where} must be {kind}, not {type(value).__name__}; "
                     f"pass a value of that kind (see the docs of {api})")


def require_bool(api, name, value, pos=None):
    """Refuse a ``value`` for ``api``'s bool parameter ``name`` that is not a bool (1, None, a str, a
    tensor), as torch's parser does (TypeError) where a truth test would have read it."""
    if value is not True and value is not False and not _is_strict_bool(value):
        raise strict_error(api, name, "bool", value, pos)


def require_int(api, name, value, pos=None):
    """``value`` when it is an int for ``api``'s ``name`` (a dim, a count), else torch's TypeError.
    Callers test ``type(value) is int`` first, so the common case costs nothing here."""
    if _is_int(value) and not (isinstance(value, Tensor) and value.ndim != 0
                               and name not in _SYMINT_PARAMS.get(api.rpartition(".")[2].rstrip("_"), ())):
        return value   # torch's parser takes only a 0-d tensor for a plain int (symbolic ints: any one-element one)
    raise strict_error(api, name, "int", value, pos)


def require_float(api, name, value, pos=None, kind="float"):
    """``value`` when torch's parser takes it for ``api``'s ``float`` (or ``Number``, ``kind``)
    parameter ``name``: a Python or NumPy real number, a bool, or a 0-dim tensor that needs no
    grad; else its TypeError (a string, None, a list, a tensor with dims, a complex number for a
    float). Unchecked, such a value reached ``float()`` (ValueError) or was broadcast as data.
    A bool comes back as the float it stands for (``True - x`` is refused for tensors)."""
    t = type(value)
    if t is float or t is int:
        return value
    if t is bool or t.__name__ == "bool_":
        return float(value)
    if isinstance(value, Tensor):
        ok = value.ndim == 0 and not value.requires_grad
    else:
        ok = isinstance(value, numbers.Real if kind == "float" else numbers.Number) or type(value).__name__ == "bool_"
    if not ok:
        raise strict_error(api, name, kind, value, pos)
    return value


def check_kinds(api, read_first=(), **values):
    """torch's TypeError for the first of ``values`` (parameter name -> value) whose kind
    (``kind_of``) it does not have; for the Python-level functions (unique, lu) whose
    arguments torch's parser checks one call further down. ``read_first``: flags torch's Python
    tests with ``if`` before that (boolean_dispatch), so a tensor of several elements there is
    torch's RuntimeError (``bool()`` of it), before any other check."""
    for name in sorted(values, key=lambda n: n not in read_first):
        v = values[name]
        if name in read_first and isinstance(v, Tensor) and v.numel() != 1:
            bool(v)   # torch's ``if`` on the flag: RuntimeError, before any other check
        kind = kind_of(api, name)
        ok = _is_strict_bool if kind == "bool" else _is_strict_opt_bool if kind == "bool or None" else _CHECKS[kind]
        if not ok(v):
            raise strict_error(api, name, kind, v)


def guard(api, fn, python_level=False, hot=False):
    """``fn`` behind one ``try``: a failed call whose arguments have the wrong kind raises torch's
    TypeError (``argument_error``) instead of what ``fn`` raised; TypeErrors and successful
    calls pass through unchanged. Parameters of a ``_STRICT_KINDS`` kind are also checked before
    the call: one ``type(v) is ...`` each on the common path. ``hot``: a ``HOT`` family's
    function form, where nothing may run before the call; its failures are looked at after the
    call, as every guarded function's (``flatten(x, 1.5)``, ``flip(None, [0])``)."""
    sig = _public_signature(fn)
    strict = () if hot else _strict_params(api, sig, python_level)
    caught = GUARDED

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        for at, name, default, fast, ok, kind in strict:
            v = args[at] if at < len(args) else kwargs.get(name, _MISSING)
            if type(v) is not fast and v is not _MISSING and v is not default and not ok(v):
                raise strict_error(api, name, kind, v, at + 1 if at < len(args) else None)
        try:
            return fn(*args, **kwargs)
        except caught as e:
            replaced = argument_error(api, sig, args, kwargs, e, python_level)
            if replaced is None:
                raise
            raise replaced from None
        except MemoryError as e:
            # a host (NumPy) allocation the function makes: torch's CPU allocator RuntimeError,
            # not Python's MemoryError with NumPy's text (NOTE [out of memory])
            raise out_of_memory(e, api) from None
    checked._guarded = True
    if sig is not None:
        checked.__signature__ = sig   # inspect.signature(follow_wrapped=False) too sees out=
    return checked


# PYTHON_LEVEL (_ops/errors.py): torch's functions written in Python, no argument parser before them
# parameters whose name means another kind here: torch's overloads taking a Tensor (max(input,
# other)), Tensor.unfold's int size
# (frombuffer's buffer: any object, refused by the buffer protocol with torch's ValueError)
_OVERLOADED = {"max": ("dim",), "min": ("dim",), "randint_like": ("low", "high"), "randint": ("low",), "unfold": ("size",),
               "frombuffer": ("buffer",)}


# the per-op hot families: their Tensor methods stay unwrapped (the eager hot path; their errors are
# already torch's on the except path: ``op_error``, ``not_a_tensor``, numpy_names' guard), their
# function forms get ``guard(hot=True)``: nothing before the call, an AttributeError looked at after
HOT = ("tracegrad._api.elementwise", "tracegrad._api.inplace", "tracegrad._api.shape", "tracegrad._api.promotion",
       "tracegrad._api.reduction", "tracegrad._api.tensor_methods", "tracegrad._api.conversion",
       "tracegrad._api.autograd_methods")


# where the op families live (not compile, save, the Tensor class's own methods...)
OP_MODULES = ("tracegrad._api", "tracegrad._tensor.factories", "tracegrad._spectral", "tracegrad._linalg",
              "tracegrad.nn")


def guard_all(namespace: dict, prefix="", modules=OP_MODULES, names=None, python_level=False,
              methods=False) -> None:
    """``guard`` the functions of ``namespace`` (``names``: only those) defined in ``modules``
    (module names starting with one of them), but torch's Python-level ones, the ``HOT``
    families and, for Tensor's ``methods``, wrappers made elsewhere (``method_form``, numpy_names;
    not accepts_out's, which look at AttributeError only).
    One wrapper per function, shared by every namespace (``tracegrad.diag is Tensor.diag`` still
    holds); the defining module keeps the function itself, so calls between tracegrad's own
    functions are not checked again."""
    for name, fn in list(namespace.items() if names is None else ((n, namespace[n]) for n in names)):
        if (name.startswith("_") or name in PYTHON_LEVEL or not inspect.isfunction(fn)
                or getattr(fn, "_guarded", False) or (methods and fn.__module__.startswith(HOT))
                or (methods and hasattr(fn, "__wrapped__") and fn.__code__.co_name != "with_out")
                or not fn.__module__.startswith(modules)):
            continue
        # a hot family's function form (tracegrad.flip) gets the AttributeError-only guard: its
        # first argument may be anything there, while Tensor's method always has a Tensor self
        # not for the ones that already turn a non-Tensor into torch's TypeError on their own
        # except path: numpy_names' and accepts_out's wrappers (``_kinds_checked``) and the
        # factory-made op functions (``_unary.<locals>.f``), whose operands go straight to
        # apply_op: the eager chain's function forms (tracegrad.relu) keep their one frame
        hot = fn.__module__.startswith(HOT)
        if hot and (getattr(fn, "_kinds_checked", False) or "<locals>" in fn.__code__.co_qualname):
            continue
        key = (id(fn), python_level)
        if key not in _DONE:
            _DONE[key] = (fn, guard(prefix + name, fn, python_level, hot))   # fn kept alive: its id stays its own
        namespace[name] = _DONE[key][1]


def unguarded(fn):
    """The function behind ``guard``'s wrapper (``fn`` itself when it has none)."""
    return fn.__wrapped__ if getattr(fn, "_guarded", False) else fn


_DONE: dict = {}   # (id(function), python_level) -> (function, its guard): one wrapper in every namespace


def floating_input(fn, kernel):
    """``fn`` refusing an integer or bool input tensor with torch's NotImplementedError (``kernel``:
    the name torch's message gives), for the functions whose torch kernel is defined for floating
    dtypes only where JAX computes any dtype (elu, gelu, softplus...), and a non-Tensor input (a
    number, a list, None: the ops below would compute a number, or fail in other words) with torch's
    parser TypeError. One attribute read and a compare before the call on the success path."""
    @functools.wraps(fn)
    def checked(input, *args, **kwargs):
        dt = getattr(input, "dtype", None)
        if not isinstance(dt, _dt.dtype):
            if not isinstance(input, Tensor):
                raise not_a_tensor(fn.__name__, input)
        elif dt._cat <= 1:
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dt.SCALAR_NAMES.get(dt.name, dt.name)}'; "
                                      f"{fn.__name__} takes a floating tensor (convert it with .float())")
        return fn(input, *args, **kwargs)
    return checked
