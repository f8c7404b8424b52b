"""Errors at the dispatch boundary: an op whose JAX forward failed raises torch's class with a
message naming the tracegrad API, never JAX's or numpy's own exception or text.

NOTE [errors at the dispatch boundary]
The methods layer checks what torch checks before dispatching (dims in range, matmul shapes,
dtypes it refuses). What slips through reaches ``jax.jit`` and fails there with JAX's classes
(TypeError "add got incompatible shapes for broadcasting", ValueError "duplicate value in
'axis'", ...). ``Op.run`` (_ops/registry.py) catches those in one ``except`` -- nothing runs on the
success path -- and raises what this module builds instead: torch raises RuntimeError for
these (shape mismatches, bad dims, unsupported dtypes), with torch's broadcasting text where
that is the cause. The original is not chained (``from None``): its text is JAX's.
"""
from __future__ import annotations

import re

import numpy as np

from .limited import LimitedDtypeError


class OutOfMemoryError(RuntimeError):
    """Mirrors ``torch.OutOfMemoryError`` (also ``torch.cuda.OutOfMemoryError``): the class
    programs catch around a step that may not fit, to retry smaller. Raised when an accelerator
    cannot allocate a tensor (``out_of_memory``); on the CPU, as torch, a plain RuntimeError."""


# NOTE [out of memory]: XLA refuses an allocation with JAX's JaxRuntimeError
# "RESOURCE_EXHAUSTED: Out of memory ...": left as it was, an op's error became the misleading
# "cannot run on inputs of shapes ..." and a factory's or a compiled step's was JAX's class and
# text, so ``except torch.cuda.OutOfMemoryError`` (retry with a smaller batch) never caught it.
# torch raises OutOfMemoryError "CUDA out of memory. Tried to allocate ..." on a GPU and a plain
# RuntimeError "DefaultCPUAllocator: can't allocate memory ..." on the CPU: so does tracegrad.
_BYTES = re.compile(r"allocat\w* (\d+) bytes")


def _size_text(n):
    for unit, size in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} bytes"


def out_of_memory(err: BaseException, api: str, platform: str | None = None, nbytes: int | None = None):
    """torch's exception for ``err`` when it is XLA refusing an allocation, or the host's
    MemoryError (numpy drawing a factory's random values), else None (NOTE [out of memory]).
    ``platform``: where the allocation was ("cpu", "gpu"...; by default JAX's default backend);
    ``nbytes``: its size where XLA's text does not say."""
    if isinstance(err, MemoryError):
        platform = "cpu"
    elif not isinstance(err, RuntimeError) or "RESOURCE_EXHAUSTED" not in str(err):
        return None
    m = _BYTES.search(str(err))
    n = int(m.group(1)) if m else nbytes
    if platform is None:
        import jax
        platform = jax.default_backend()
    hint = "reduce the batch or tensor sizes, or free tensors you no longer need"
    if platform == "cpu":
        what = f"you tried to allocate {n} bytes" if n is not None else "an allocation failed"
        return RuntimeError(f"{api}: DefaultCPUAllocator: can't allocate memory: {what} ({hint})")
    what = f" Tried to allocate {_size_text(n)}." if n is not None else ""
    return OutOfMemoryError(f"CUDA out of memory.{what} ({api} on the {platform} device: {hint})")


def _platform(arrays):
    for a in arrays:
        devices = getattr(a, "devices", None)
        if devices is not None:
            try:
                return next(iter(devices())).platform
            except Exception:       # an abstract or deleted array: the default backend's
                return None
    return None


def _shape(a):
    return tuple(getattr(a, "shape", ()))


def _broadcast_message(shapes):
    """torch's text for the first pair of shapes that does not broadcast, or None."""
    acc = ()
    for s in shapes:
        n = max(len(acc), len(s))
        a, b = (1,) * (n - len(acc)) + acc, (1,) * (n - len(s)) + s
        for d in range(n - 1, -1, -1):
            if a[d] != b[d] and a[d] != 1 and b[d] != 1:
                return (f"The size of tensor a ({a[d]}) must match the size of tensor b ({b[d]}) "
                        f"at non-singleton dimension {d}")
        acc = tuple(max(x, y) for x, y in zip(a, b))
    return None


def broadcast_shapes(*shapes):
    """numpy's ``broadcast_shapes`` (a tuple; ValueError when they do not broadcast) for any
    number of dims: numpy's own refuses more than 32, where a tensor may hold 64 and more (torch's
    own tests reduce a 65-d one)."""
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for k, size in enumerate(s, n - len(s)):
            if size != out[k]:
                if out[k] == 1:
                    out[k] = size
                elif size != 1:
                    raise ValueError(f"shape mismatch: objects cannot be broadcast to a single shape: {shapes}")
    return tuple(out)


def broadcast_shape(shapes, api):
    """The broadcast of ``shapes``; RuntimeError with torch's text (naming ``api``) when they do
    not broadcast (numpy's ValueError would leak its own text)."""
    shapes = [tuple(s) for s in shapes]
    msg = _broadcast_message(shapes)
    if msg is not None:
        raise RuntimeError(f"{api}(): {msg}")
    return broadcast_shapes(*shapes)


def int_past_64_bits(value, api):
    """OverflowError, as torch's argument parser, for a Python int scalar argument that fits
    neither int64 nor (from 2**63) uint64 -- c10 reads a Python int as one of those two; None when
    ``value`` is no such int. torch's texts: "int too big to convert" above 2**64 - 1, "can't
    convert negative int to unsigned" below -2**63."""
    if not isinstance(value, int) or -2 ** 63 <= value < 2 ** 64:
        return None
    gist = "int too big to convert" if value > 0 else "can't convert negative int to unsigned"
    return OverflowError(f"{api}(): {gist} (the Python int {value} fits neither int64 nor uint64)")


def _uint64_only(a):
    return type(a) is int and 2 ** 63 <= a < 2 ** 64


def uint64_scalars(arrays, static):
    """``arrays`` with each Python int in [2**63, 2**64) made a float, or None when there is none
    or the op computes in an integer type. torch reads such an int as a uint64 scalar, which a
    floating op takes as the nearest float (``x + 2**63``); JAX refuses the int outright, so
    ``Op.run`` retries with these after a failure (nothing on the success path). An integer op
    is not retried: ``op_error`` raises the checked conversion's RuntimeError."""
    if not any(_uint64_only(a) for a in arrays):
        return None
    dt = dict(static).get("dtype")
    kinds = [np.dtype(dt).kind] if dt is not None else [np.dtype(a.dtype).kind for a in arrays
                                                         if hasattr(a, "dtype")]
    if not any(k in "fcV" for k in kinds):   # V: bfloat16's numpy kind
        return None
    return [float(a) if _uint64_only(a) else a for a in arrays]


def _api_name(op):
    name = op.name
    for suffix in ("_dim", "_all", "_scalar", "_tensor"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def op_error(op, arrays, static, err: BaseException) -> Exception:
    """The exception to raise instead of ``err``, which ``op``'s jitted forward raised on
    ``arrays`` (arrays, Python scalars or None) with static arguments ``static``."""
    if isinstance(err, (KeyboardInterrupt, MemoryError, RecursionError, LimitedDtypeError)):
        return err
    if getattr(err, "static_kind", False) or getattr(err, "dtype_refusal", False):
        return err
    api = f"tracegrad.{_api_name(op)}"
    oom = out_of_memory(err, api + "()", _platform(arrays))
    if oom is not None:
        return oom
    for a in arrays:   # JAX's OverflowError text for a Python int past 64 bits
        big = int_past_64_bits(a, api)
        if big is not None and not isinstance(a, bool):
            return big
        if _uint64_only(a):
            # an integer op (a floating one took it as a float, ``uint64_scalars``): torch's checked
            # conversion of alpha, value and exponent scalars refuses it (its plain tensor-scalar
            # ops wrap it around instead; tracegrad refuses it there too rather than guess)
            return RuntimeError(f"{api}(): value cannot be converted to type int64 without overflow "
                                f"(the Python int {a} is past int64's largest)")
    wrong = _wrong_operand(arrays, static, err)
    if wrong is not None:
        return TypeError(f"{api}(): {wrong}; pass a Tensor or a Python number (an int for sizes and dims)")
    shapes = [_shape(a) for a in arrays if hasattr(a, "shape")]
    dtypes = [str(np.dtype(a.dtype)) for a in arrays if hasattr(a, "dtype")]
    text = str(err).lower()
    if "broadcast" in text or "incompatible shapes" in text:
        msg = _broadcast_message(shapes)
        if msg is not None:
            return RuntimeError(f"{api}(): {msg}")
    devices = _devices(arrays)
    if len(devices) > 1:     # JAX: "incompatible devices for jitted computation"
        a, b = devices[:2]
        return RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                            f"{a} and {b}! ({api}(): move them with .to(device))")
    if "duplicate" in text and "axis" in text:
        dims = dict(static).get("dim")
        return RuntimeError(f"{api}(): dim {_first_repeat(dims)} appears multiple times in the list of dims")
    statics = ", ".join(f"{k}={_static_text(v)}" for k, v in static)
    return RuntimeError(
        f"{api}() cannot run on inputs of shapes {[list(s) for s in shapes]} and dtypes {dtypes}"
        + (f" with {statics}" if statics else "")
        + ": check that the shapes match (or broadcast), the dims are in range and the dtypes are "
          "ones this op supports")


_OPERAND_TYPES = (int, float, complex, bool, np.ndarray, np.generic)

# static arguments that are a flag or a dim in every op that has them
_FLAG_STATICS = frozenset({"keepdim", "descending", "stable", "largest", "sorted"})
_DIM_STATICS = frozenset({"dim", "dims", "dim0", "dim1", "dim2", "source", "destination", "shifts", "k"})
# static arguments that are one int in every op that has them (None is no default there)
_INT_STATICS = frozenset({"diagonal", "offset"})


def _not_an_int(v, strict=False):
    # strict (on the error path): any float, 1.0 too
    if isinstance(v, (tuple, list)):
        return any(_not_an_int(x, strict) for x in v)
    return (isinstance(v, str) or (isinstance(v, float) and (strict or not v.is_integer()))
            or hasattr(v, "_value"))


def _kind_error(op, text):
    err = TypeError(f"tracegrad.{_api_name(op)}(): {text}")
    err.static_kind = True   # op_error passes it on unchanged
    return err


def static_kind_error(op, static):
    """The TypeError for a flag that is not a bool (a string, None) or a dim that is not an int (a
    float such as 1.5, a string) among ``op``'s static arguments, or None. Called where a static
    key is new (``Op.forward``), so a cached key costs nothing; only values that no valid key
    equals are refused (``1 == True`` and ``1.0 == 1`` share their valid twin's entry), so a
    call's outcome does not depend on the calls before it."""
    for k, v in static:
        if k in _FLAG_STATICS and not (isinstance(v, (bool, int, float)) and v in (0, 1)):
            return _kind_error(op, f"argument '{k}' must be bool, not {type(v).__name__}; pass True or False")
        if k in _DIM_STATICS and _not_an_int(v):
            return _kind_error(op, f"argument '{k}' must be int (or a tuple of ints), not "
                                   f"{type(v).__name__}; pass an integer dim")
    return None


def integral_dims(static):
    """``static`` with each integral float dim (``1.0``) as an int: the key ``(("dim", 1.0),)``
    equals ``(("dim", 1),)``, so the program cached under it serves both and must be the int's."""
    def conv(v):
        if type(v) is float:
            return int(v)
        if isinstance(v, (tuple, list)) and any(type(x) is float for x in v):
            return type(v)(int(x) if type(x) is float else x for x in v)
        return v
    if not any(k in _DIM_STATICS and (type(v) is float or isinstance(v, (tuple, list))) for k, v in static):
        return static
    return tuple((k, conv(v) if k in _DIM_STATICS else v) for k, v in static)


def index_dims(static):
    """``static`` with each dim given as a 0-d integer tensor or a NumPy integer (torch's parser
    takes anything with ``__index__`` where an int goes) as a plain int; None when there is none
    to convert or one is not an integer."""
    import operator

    def conv(v):
        if isinstance(v, (tuple, list)):
            return type(v)(conv(x) for x in v)
        if type(v) is int or isinstance(v, (bool, float, str)):
            return v
        return operator.index(v)
    try:
        out = tuple((k, conv(v) if k in _DIM_STATICS else v) for k, v in static)
    except (TypeError, ValueError, RuntimeError):
        return None
    return out if out != static or any(type(a[1]) is not type(b[1]) for a, b in zip(out, static)) else None


def _wrong_operand(arrays, static, err):
    """What torch's argument parser would have refused in a call that reached the op: a string,
    list or other object among the operands, None used as one, or a non-integer where JAX needed
    an int (a float dim); None when the operands all have a kind torch accepts."""
    text = str(err)
    for pos, a in enumerate(arrays, 1):
        if a is None:
            # None as an op's first operand (its input: triu(None)) or where JAX wanted a value
            if pos == 1 or "None is not a valid value" in text:
                return f"operand {pos} must be a Tensor or a number, not None"
        elif not isinstance(a, _OPERAND_TYPES) and not hasattr(a, "shape"):
            return f"operand {pos} must be a Tensor or a number, not {type(a).__name__}"
    for k, v in static:
        if hasattr(v, "_value"):   # a Tensor given for an int (diagonal, offset)
            return f"argument '{k}' must be int, not Tensor"
        if k in _DIM_STATICS and _not_an_int(v, strict=True):   # transpose(0, 1.0): JAX wants an int
            return f"argument '{k}' must be int, not {type(v).__name__}"
        if k in _INT_STATICS and not isinstance(v, (int, np.integer)):   # triu(x, None), diag(x, [1])
            return f"argument '{k}' must be int, not {type(v).__name__}"
    if isinstance(err, TypeError) and "cannot be interpreted as an integer" in text:
        floats = [k for k, v in static if isinstance(v, float) or
                  (isinstance(v, (tuple, list)) and any(isinstance(x, float) for x in v))]
        return f"argument '{floats[0] if floats else 'dim'}' must be int, not float"
    return None


def _devices(arrays):
    """torch's names ('cuda:0', 'cpu') of the devices the concrete arrays are on, in order."""
    out = []
    for a in arrays:
        try:
            d = next(iter(a.devices()))
        except Exception:  # noqa: BLE001 -- numbers, None, tracers: no device
            continue
        name = "cpu" if d.platform == "cpu" else f"cuda:{d.id}"
        if name not in out:
            out.append(name)
    return out


def _static_text(v):
    if isinstance(v, (np.dtype, type)):
        try:
            return f"tracegrad.{np.dtype(v).name}"
        except TypeError:
            pass
    return repr(v)


def _first_repeat(dims):
    seen = set()
    for d in dims if isinstance(dims, (tuple, list)) else ():
        if d in seen:
            return d
        seen.add(d)
    return dims


def not_a_tensor(api: str, value, arg: str = "input", position: int = 1) -> TypeError:
    """torch's TypeError for a non-Tensor (None, a list, a string...) passed where ``api`` takes
    the Tensor argument ``arg``; raised where tracegrad's code first touched it as a Tensor
    (an ``except AttributeError`` around that access: nothing runs on the success path)."""
    return TypeError(f"{api}(): argument '{arg}' (position {position}) must be Tensor, not {type(value).__name__} "
                     "(tracegrad.tensor(...) makes one from data)")


# NOTE [unbound self]
# ``Tensor.flatten(None)``: a method called on the class with a non-Tensor first argument. torch's
# method is a C descriptor and raises TypeError before anything runs; tracegrad's is a plain
# function, which would fail at its first ``self.<attr>`` with AttributeError. The hot methods catch
# that AttributeError around their first access to ``self`` (Python 3.11's try costs nothing on the
# success path); a method whose first access is not early enough checks ``isinstance`` where that
# is off the eager hot path. Instances never reach either.
def not_self(api: str, obj) -> TypeError:
    """torch's TypeError for ``Tensor.<api>(obj)`` called on the class with a non-Tensor ``obj``
    (``Tensor.flatten(None)``), where torch's method is a C descriptor that checks its ``self``
    before anything runs. Raised from an ``except AttributeError`` around the method's first
    access to ``self`` (nothing runs on the success path: the instance-call hot path is unchanged)."""
    return TypeError(f"descriptor '{api}' for 'Tensor' objects doesn't apply to a '{type(obj).__name__}' "
                     f"object; call {api} on a Tensor")


# torch's functions written in Python (torch/functional.py...): no argument parser runs before
# them, so torch's own failures there are AttributeError / RuntimeError, as tracegrad's are
PYTHON_LEVEL = frozenset({
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes", "broadcast_tensors",
    "cartesian_prod", "cdist", "chain_matmul", "einsum", "is_storage", "is_tensor", "meshgrid", "norm", "split",
    "tensordot", "unique", "unique_consecutive", "unravel_index", "lu", "stft", "istft", "from_dlpack", "cond",
    "while_loop", "set_default_tensor_type", "set_warn_always", "is_warn_always_enabled", "eig", "lstsq", "solve",
    "symeig", "matrix_rank", "resize", "resize_as", "unflatten", "rename", "refine_names", "align_to", "sym_float", "sym_int", "sym_ite", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum",
    # torch parses these itself: a type name string (ValueError when unknown), thread counts
    "type", "set_num_threads", "set_num_interop_threads"})
