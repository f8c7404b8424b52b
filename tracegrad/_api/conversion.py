"""Tensor methods, conversion family: to/type_as/casts, cpu/cuda, clone/contiguous, strides."""
from __future__ import annotations


from .. import _state
from ..autograd._dispatch import apply_op
from ..autograd.function import Function
from ..autograd.grad_mode import STATE as _GRAD_MODE, no_grad
from .._ops import dtypes as _dt
from .._ops.errors import not_self
from .._ops.registry import OPS
from .._ops.warn import warn_once
from .._tensor import memory_format as _mf
from .._tensor.device import device as _device
from .._tensor.meta import abstract, check_not_meta
from .._x64 import x64_scope
from .._tensor.tensor import _JaxTracer as _Tracer
from .._tensor.memory_format import contiguous_format
from .._tensor.tensor import Tensor, _no_dims, _wrap_dim, chain_is_contiguous, strides_of
from ._registry import method
from .promotion import check_tensors


# ---- dtype and device -------------------------------------------------------------------
def warn_complex_to_real():
    """torch's once-per-process UserWarning when a copy casts complex values to a real dtype."""
    warn_once("Casting complex values to real discards the imaginary part")


@method()
def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False, memory_format=None):
    """Mirrors ``torch.Tensor.to``: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``,
    ``to(other)``. Returns ``self`` when nothing changes (unless ``copy=True``).
    Autograd: ``ToCopyBackward0``."""
    if type(self) is not Tensor and not isinstance(self, Tensor):   # NOTE [unbound self]
        raise not_self("to", self)
    if len(args) == 1 and type(args[0]) is _dt.dtype and dtype is None and device is None:
        dtype = args[0]   # the common to(dtype): nothing else to read
    elif args:
        dtype, device, non_blocking, copy = _to_overload(args, dtype, device, non_blocking, copy)
    elif dtype is not None and type(dtype) is not _dt.dtype and not _is_dtype_arg(dtype):
        raise _to_error(f"dtype={type(dtype).__name__}")
    if device is not None and type(device) is not str and (not isinstance(device, (str, _device, int))
                                                           or isinstance(device, bool)):
        raise _to_error(f"device={type(device).__name__}")
    if (non_blocking is not False or copy is not False) and (type(non_blocking) is not bool or type(copy) is not bool):
        bad = "non_blocking" if type(non_blocking) is not bool else "copy"
        raise _to_error(f"{bad}={type(non_blocking if bad == 'non_blocking' else copy).__name__}")
    _mf.check_format(memory_format, "to")
    out = self
    if dtype is not None:
        d = _dt.to_dtype(dtype)
        if d is not self.dtype or copy:
            if self.dtype.is_complex and not d.is_complex and d.name != "bool":
                warn_complex_to_real()
            if d.is_floating_point or d.is_complex or not self._rg:
                out = apply_op(OPS["to_copy"], (self,), (("dtype", d.np),))
            else:   # an integer/bool result is not differentiable: no history (as torch)
                with no_grad():
                    out = apply_op(OPS["to_copy"], (self,), (("dtype", d.np),))
    if device is not None:
        dev = _device(device)
        if dev != self.device:
            out = _move(out, dev)
    # torch's to_will_alias: a format that self's strides do not suggest needs a copy
    if out is self and memory_format not in (None, _mf.preserve_format) \
            and _mf.suggest_memory_format(self) is not memory_format:
        out = apply_op(OPS["to_copy"], (self,), (("dtype", self.dtype.np),))   # torch's _to_copy
    if out is not self:
        _mf.lay_out(out, _mf.requested_order(self, memory_format, "to"))
    return out


def _is_dtype_arg(d):
    # a dtype or one of Python's number types; not a name, not a NumPy dtype (torch's TypeError)
    return _dt.is_dtype_arg(d)


def _to_error(got):
    return TypeError(f"to() received an invalid combination of arguments - got ({got}); pass to(dtype), "
                     "to(device, dtype), to(other) (then non_blocking, copy: bools) or the keywords dtype=/device=")


def _to_overload(args, dtype, device, non_blocking, copy):
    """torch's three ``Tensor.to`` overloads, read from the positional ``args``:
    ``to(device=None, dtype=None, non_blocking, copy)``, ``to(dtype, non_blocking, copy)`` and
    ``to(other, non_blocking, copy)``. A string is always a device (``to('float32')`` is torch's
    invalid device RuntimeError). Returns ``(dtype, device, non_blocking, copy)``; TypeError,
    as torch's parser, for any other combination."""
    a, rest = args[0], list(args[1:])
    if type(a) is str and not rest and device is None:   # the common to('cpu')
        return dtype, a, non_blocking, copy
    if len(args) > 4:   # no overload takes more (to(device, dtype, non_blocking, copy))
        raise TypeError(f"to() takes from 0 to 4 positional arguments but {len(args)} were given")
    kinds = ", ".join(type(v).__name__ for v in args)
    if isinstance(a, Tensor):
        if dtype is not None or device is not None:
            raise _to_error(kinds + ", dtype=/device=")
        dtype, device = a.dtype, a.device
    elif _is_dtype_arg(a):
        if device is not None or dtype is not None:   # the to(dtype, ...) overload has neither keyword
            raise _to_error(kinds + (", device=" if device is not None else ", dtype="))
        dtype = a
    elif type(a) in (float, bool, complex):
        # torch's parser takes a Python number where ``other`` goes (a wrapped 0-d tensor):
        # to(1.5) is to(float64), to(True) to(bool); an int is a device ordinal (below)
        if dtype is not None or device is not None:
            raise _to_error(kinds + ", dtype=/device=")
        dtype = {float: _dt.float64, bool: _dt.bool_, complex: _dt.complex128}[type(a)]
    elif a is None or isinstance(a, (str, _device)) or (isinstance(a, int) and not isinstance(a, bool)):
        if device is not None:
            raise _to_error(kinds + ", device=")
        device = _device(a) if isinstance(a, int) else a   # a bare ordinal: the accelerator, as torch
        if rest and (rest[0] is None or _is_dtype_arg(rest[0])):
            if rest[0] is not None and dtype is not None:
                raise _to_error(kinds + ", dtype=")
            dtype = rest.pop(0) if rest[0] is not None else (rest.pop(0), dtype)[1]
    else:
        raise _to_error(kinds)
    if len(rest) > 2:
        raise _to_error(kinds)
    if rest:
        non_blocking = rest[0]
    if len(rest) == 2:
        copy = rest[1]
    return dtype, device, non_blocking, copy


def _move(t, dev):
    if t.device.type == "meta":      # NOTE [meta tensors]: there is no data to copy out
        check_not_meta(t, "to()")
    if dev.type == "meta":   # the shape and dtype only, never the data
        if t.requires_grad and _grad_on():    # differentiable, as torch's (ToCopyBackward0)
            return _ToCopy.apply(t, None)
        return Tensor._make(abstract(t._value.shape, t._value.dtype))
    return _copy_to(t, dev.jax_device())


def _copy_to(t, jdev):
    """``t`` on the JAX device ``jdev``; recorded as ToCopyBackward0 when differentiable."""
    if t.requires_grad and _grad_on():
        return _ToCopy.apply(t, jdev)
    return Tensor._make(_put(t._value, jdev))


def _put(array, jdev):
    import jax  # local: STYLE 6 keeps jax out of the API layer's imports; this device_put is the one use
    with x64_scope():   # outside x64 mode a transfer narrows int64/float64 buffers (_x64.py)
        return jax.device_put(array, jdev)


class _ToCopy(Function):
    """A differentiable device move: the gradient goes back to the source device (an op's
    VJP would leave it on the destination's, and the next node's kernel would then mix
    devices). Inside a trace there is one device and nothing to move."""

    @staticmethod
    def forward(ctx, t, jdev):
        ctx.src = None if isinstance(t._value, _Tracer) else next(iter(t._value.devices()))
        if jdev is None:   # to 'meta': the shape and dtype only (NOTE [meta tensors])
            return Tensor._make(abstract(t._value.shape, t._value.dtype))
        return Tensor._make(_put(t._value, jdev))

    @staticmethod
    def backward(ctx, grad):
        return (grad if ctx.src is None else _copy_to(grad, ctx.src)), None


_ToCopy._backward_cls.__name__ = _ToCopy._backward_cls.__qualname__ = "ToCopyBackward0"   # torch's node name


def _grad_on():
    return _GRAD_MODE[0]


@method()
def type_as(self, other):
    check_tensors("type_as", self, other)
    return to(self, other.dtype)


def _cast(d, name):
    def f(self, *, memory_format=None):   # keyword-only, as torch (x.float(None) is a TypeError)
        if type(self) is not Tensor and not isinstance(self, Tensor):   # NOTE [unbound self]
            raise not_self(name, self)
        return to(self, d, memory_format=memory_format)
    f.__doc__ = f"Mirrors ``torch.Tensor.{d.name}``-style casts: ``self.to({d!r}, memory_format=memory_format)``."
    return f


for _name, _d in (("float", _dt.float32), ("double", _dt.float64), ("half", _dt.float16), ("bfloat16", _dt.bfloat16),
                  ("long", _dt.int64), ("int", _dt.int32), ("short", _dt.int16), ("char", _dt.int8),
                  ("byte", _dt.uint8), ("bool", _dt.bool_), ("cfloat", _dt.complex64), ("cdouble", _dt.complex128),
                  ("chalf", _dt.complex32)):   # chalf raises NotImplementedError: XLA has no complex32 arrays
    method(_name)(_cast(_d, _name))


@method()
def cpu(self, *, memory_format=None):
    """Mirrors ``torch.Tensor.cpu`` (``memory_format`` by keyword only, as torch's)."""
    return to(self, "cpu", memory_format=memory_format)


@method()
def cuda(self, device=None, non_blocking=False, memory_format=None):
    """Mirrors ``torch.Tensor.cuda``: AssertionError where JAX sees no GPU (torch's CPU build)."""
    return to(self, _device("cuda", device if isinstance(device, int) else None) if not isinstance(device, (str, _device)) else device)


@method(function=True)
def get_device(self):
    """Mirrors ``torch.get_device`` / ``Tensor.get_device``: -1 for a CPU tensor, else the
    index of its accelerator."""
    try:
        d = self.device
    except AttributeError:   # NOTE [unbound self]
        raise not_self("get_device", self) from None
    return -1 if d.type == "cpu" else (d.index or 0)


@method(function=True)
def clone(self, *, memory_format=None):
    """Mirrors ``torch.clone``: a copy with its own storage, laid out as ``memory_format`` asks
    (default ``preserve_format``: self's strides when self is non-overlapping and dense, else
    dense in self's stride order; NOTE [storage layouts]). Autograd: ``CloneBackward0``.
    RuntimeError for ``channels_last`` on a tensor not 4-d (``channels_last_3d``: not 5-d)."""
    if not isinstance(self, Tensor):   # NOTE [unbound self]
        raise not_self("clone", self)
    order = _mf.requested_order(self, memory_format, "clone")
    return _mf.lay_out(apply_op(OPS["clone"], (self,)), order)


@method()
def contiguous(self, *, memory_format=contiguous_format):
    """Mirrors ``torch.Tensor.contiguous(memory_format=torch.contiguous_format)``: self when
    already contiguous in that format, else a clone laid out so. RuntimeError for
    ``preserve_format`` (as torch) or a channels-last format at the wrong rank."""
    if not isinstance(self, Tensor):   # NOTE [unbound self]
        raise not_self("contiguous", self)
    if is_contiguous(self, memory_format=memory_format):
        return self
    if memory_format is _mf.preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator; pass "
                           "torch.contiguous_format, torch.channels_last or torch.channels_last_3d")
    return clone(self, memory_format=memory_format)


@method()
def is_contiguous(self, *, memory_format=contiguous_format) -> bool:
    """Mirrors ``torch.Tensor.is_contiguous(memory_format=torch.contiguous_format)``: elements sit
    at consecutive storage positions in the format's dim order (row-major for
    ``contiguous_format`` and ``preserve_format``; NHWC for ``channels_last`` on a 4-d tensor,
    NDHWC for ``channels_last_3d`` on a 5-d one, else False), worked out from the view chain."""
    if _state.CAPTURE[0] is not None:
        # a view argument's stand-in answers with the argument's layout (a guard of the program)
        real = _state.CAPTURE[0].argument_layout(self)
        if real is None:
            self = _state.CAPTURE[0].see_strides(self, "is_contiguous()")
        else:
            self = real
    _mf.check_format(memory_format, "is_contiguous")
    if memory_format is contiguous_format or memory_format is _mf.preserve_format:
        return chain_is_contiguous(self)
    return _mf.is_contiguous_as(self, memory_format)


@method()
def stride(self, dim=None):
    """Mirrors ``torch.Tensor.stride(dim=None)``: elements to step in storage per index of each
    dim (a tuple, or one int for ``dim``). JAX arrays have no strides: they are read off the
    storage positions the view chain gives each element. A size-1 dim gets the stride torch
    gives it in a fresh contiguous layout (size times stride of the dim after it)."""
    if _state.CAPTURE[0] is not None:
        real = _state.CAPTURE[0].argument_layout(self)   # as in is_contiguous
        if real is None:
            self = _state.CAPTURE[0].see_strides(self, "stride()")
        else:
            self = real
    out = strides_of(self)
    if dim is None:
        return out
    if not out and type(dim) is int:
        raise _no_dims(dim, "stride")
    return out[_wrap_dim(dim, len(out))]


# JAX and DLPack interop (tracegrad.func's from_jax/from_dlpack are the other direction)
@method("jax")
def _tensor_jax(self):
    """The ``jax.Array`` this Tensor holds (no copy; a view's value is computed once and cached).
    Carries no autograd history (like ``detach()``). Inside a JAX transform it is the tracer.
    No torch counterpart."""
    return self._value


@method("__dlpack__")
def _tensor_dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """The DLPack protocol (``torch.from_dlpack(t)``, ``np.from_dlpack(t)``): exports the
    JAX array without a copy where the device allows. BufferError on a tensor that requires
    grad or has its conjugate bit set, as torch's ``__dlpack__``; on the CPU ``stream`` must be
    None (torch's AssertionError) and an int or None anywhere (TypeError)."""
    if self.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if self.is_conj():
        raise BufferError("Can't export tensors with the conjugate bit set; call resolve_conj() first")
    if stream is not None:
        if type(stream) is not int:
            raise TypeError(f"__dlpack__: stream must be ``int`` or ``none`` (got {type(stream).__name__})")
        if self.device.type == "cpu":
            raise AssertionError(f"__dlpack__: stream should be None on cpu. (got stream={stream})")
    return export_dlpack(self, stream, max_version, dl_device, copy)


def export_dlpack(self, stream=None, max_version=None, dl_device=None, copy=None):
    """The DLPack capsule of ``self``'s array (no requires-grad check: ``to_dlpack``)."""
    kw = {k: v for k, v in (("stream", stream), ("max_version", max_version), ("dl_device", dl_device),
                            ("copy", copy)) if v is not None}
    return self._value.__dlpack__(**kw)


@method("__dlpack_device__")
def _tensor_dlpack_device(self):
    """The DLPack device tuple of the array (``(1, 0)`` on CPU)."""
    return self._value.__dlpack_device__()
