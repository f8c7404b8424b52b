"""Tensor methods that make new tensors from a tensor's dtype and device (``new_zeros``,
``new_ones``, ``new_full``, ``new_empty``, ``new_tensor``), the legacy ``type()`` names, and
memory-layout queries (``pin_memory``, ``is_pinned``, ``nbytes``, ``itemsize``)."""
from __future__ import annotations

import builtins

from .._ops import dtypes as _dt
from .._ops.warn import warn as _warn
from .._tensor.convert import check_legacy_device, legacy_array_of
from .._tensor.device import cuda_devices
from .._tensor.factories import _dense_layout, check_pin_memory, empty, full, ones, tensor, zeros
from .._tensor.layout import sparse_coo
from .._tensor.storage import Storage, TypedStorage
from .._tensor.storage_types import tensor_on_storage
from .._tensor.tensor import Tensor
from ._registry import method, prop
from .shape import by_keyword

# torch's legacy tensor type names, e.g. 'torch.FloatTensor' / 'torch.cuda.FloatTensor'
_TYPE_NAMES = {d.name: _dt.SCALAR_NAMES[d.name] for d in _dt.ALL}   # torch.<ScalarType>Tensor type strings
_BY_TYPE_NAME = {v: k for k, v in _TYPE_NAMES.items()}


class LegacyTensorType(type):
    """The metaclass of torch's typed legacy constructors (``torch.FloatTensor``,
    ``torch.LongTensor``, ...; torch's ``tensortype``). Calling one gives a CPU tensor of its
    dtype: ``LongTensor([1.7, -2.5])`` (data converted, floats truncated), ``LongTensor(2, 3)``
    (zeros: JAX has no uninitialised memory), ``LongTensor()`` (empty), or ``LongTensor(t)``
    for a tensor ``t`` of that dtype (``t`` itself). ``isinstance(x, LongTensor)`` is True for
    a CPU int64 tensor. TypeError for a tensor of another dtype or an unknown keyword, as torch."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.device.type == "cpu"

    def __call__(cls, *args, device=None, **kwargs):
        if kwargs:
            raise TypeError(f"{cls.__name__}(): unexpected keyword argument(s) {sorted(kwargs)}; "
                            f"only device= is accepted (use tracegrad.tensor(data, dtype=...) for a dtype)")
        check_legacy_device(args, device)
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype != cls.dtype:
                raise TypeError(f"{cls.__name__}(): expected a tensor of dtype {cls.dtype} (got {args[0].dtype}); "
                                f"convert it with .to({cls.dtype}) instead")
            return args[0]
        if len(args) == 1 and isinstance(args[0], (Storage, TypedStorage)):   # a tensor sharing the storage
            return tensor_on_storage(args[0], cls.dtype)
        return Tensor._make(legacy_array_of(cls.dtype, *(args or ([],))))


@method()
def new(self, *args, device=None, size=None):
    """Mirrors the legacy ``Tensor.new``: a tensor of ``self``'s dtype from sizes
    (``x.new(2, 3)``, ``x.new(torch.Size)``: zero-filled, JAX has no uninitialised memory),
    from data (``x.new([1, 2])``), or empty (``x.new()``); a tensor argument of the same dtype
    is returned as is. TypeError for a tensor of another dtype, as the typed constructors;
    RuntimeError for a ``device`` other than the CPU or with a tensor argument, as torch."""
    check_legacy_device(args, device, "new")
    if size is not None:   # torch's sizes overload by keyword: x.new(size=(2, 3))
        if args:
            raise TypeError("new() received an invalid combination of arguments: sizes given both positionally "
                            "and as size=; pass one of them")
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"new() received an invalid combination of arguments - got (size={builtins.type(size).__name__}); "
                            "pass size=(n, ...) or the sizes positionally")
        args = tuple(size)   # the sizes, as new(2, 3) (a tuple alone would read as data)
    if len(args) == 1 and (args[0] is None or isinstance(args[0], (float, bool, complex, dict, set, frozenset))):
        # one Python scalar that is not an int is neither a size nor data (torch reads data from a sequence)
        raise TypeError(f"new(): data must be a sequence (got {builtins.type(args[0]).__name__}); pass sizes as ints "
                        f"or data as a list")
    if len(args) == 1 and isinstance(args[0], Tensor):
        if args[0].dtype != self.dtype:
            raise TypeError(f"new(): expected a tensor of dtype {self.dtype} (got {args[0].dtype}); convert it "
                            f"with .to({self.dtype}) instead")
        return args[0]
    # a Size is sizes, not data (legacy_array_of), so new(torch.Size([])) is 0-d, as torch
    return Tensor._make(legacy_array_of(self.dtype, *(args or ([],))))


def _legacy_type(kind):
    return LegacyTensorType(f"{kind}Tensor", (), {"dtype": _dt.to_dtype(_BY_TYPE_NAME[kind]),
                                                  "__module__": "tracegrad"})


FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor = (_legacy_type(k) for k in ("Float", "Double", "Half", "BFloat16"))
LongTensor, IntTensor, ShortTensor, CharTensor, ByteTensor, BoolTensor = (
    _legacy_type(k) for k in ("Long", "Int", "Short", "Char", "Byte", "Bool"))


class CudaLegacyTensorType(LegacyTensorType):
    """The metaclass of ``torch.cuda.FloatTensor``, ``torch.cuda.LongTensor``, ... (the
    ``tracegrad.cuda`` names): importable on any machine, as torch's are, so that a program's
    ``dtype = torch.cuda.FloatTensor if cuda else torch.FloatTensor`` runs. Calling one gives a
    tensor of its dtype on the GPU; without a GPU it is torch's TypeError ("type
    torch.cuda.FloatTensor not available"). ``isinstance(x, torch.cuda.FloatTensor)`` is True for
    a float32 tensor on the GPU only; ``x.type(torch.cuda.FloatTensor)`` moves ``x`` there."""
    is_cuda = True

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.device.type == "cuda"

    def __call__(cls, *args, device=None, **kwargs):
        if not cuda_devices():
            raise TypeError(f"type torch.cuda.{cls.__name__} not available: tracegrad found no GPU on this "
                            f"machine; use tracegrad.{cls.__name__} (the CPU type) instead")
        # the CPU type's reading of the arguments (sizes, data, a tensor of the dtype), then the GPU
        return LegacyTensorType.__call__(cls, *args, **kwargs).to("cuda")


def _cuda_legacy_type(kind):
    return CudaLegacyTensorType(f"{kind}Tensor", (), {"dtype": _dt.to_dtype(_BY_TYPE_NAME[kind]),
                                                      "__module__": "tracegrad.cuda"})


CUDA_LEGACY_TYPES = {k + "Tensor": _cuda_legacy_type(k) for k in
                     ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool")}


def _like(self, dtype, device):
    return (self.dtype if dtype is None else dtype), (self.device if device is None else device)


def _sizes(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (list, tuple)) else size


def _new_size(size, kwargs, api):
    """A ``new_*`` method's size as one tuple (``()`` for a 0-d tensor); TypeError, as torch,
    when none is given."""
    size = by_keyword(size, kwargs, "size", api)
    if not size:
        raise TypeError(f'{api}() missing 1 required positional arguments: "size"; pass the sizes, or () for a '
                        f"0-d tensor")
    return tuple(_sizes(size))


@method()
def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False,
              **kwargs):
    """Mirrors ``torch.Tensor.new_zeros``: zeros of ``size`` (arguments, a sequence, or
    ``size=``) with ``self``'s dtype and device unless given."""
    check_pin_memory(pin_memory, device)
    d, dev = _like(self, dtype, device)
    size = _new_size(size, kwargs, "new_zeros")
    if layout is sparse_coo:   # as torch: a sparse COO tensor with no stored entries
        return zeros(size, dtype=d, device=dev, requires_grad=requires_grad, layout=layout)
    _dense_layout(layout, "new_zeros", len(size))
    return zeros(size, dtype=d, device=dev, requires_grad=requires_grad)


@method()
def new_ones(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False,
             **kwargs):
    """Mirrors ``torch.Tensor.new_ones``."""
    check_pin_memory(pin_memory, device)
    d, dev = _like(self, dtype, device)
    size = _new_size(size, kwargs, "new_ones")
    _dense_layout(layout, "new_ones", len(size))   # (sparse COO: NotImplementedError, as torch's fill_)
    return ones(size, dtype=d, device=dev, requires_grad=requires_grad)


@method()
def new_empty(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False,
              **kwargs):
    """Mirrors ``torch.Tensor.new_empty`` (zero-filled, as ``tracegrad.empty``)."""
    check_pin_memory(pin_memory, device)
    d, dev = _like(self, dtype, device)
    size = _new_size(size, kwargs, "new_empty")
    if layout is sparse_coo:   # as torch: a sparse COO tensor with no stored entries
        return zeros(size, dtype=d, device=dev, requires_grad=requires_grad, layout=layout)
    _dense_layout(layout, "new_empty", len(size))
    return empty(size, dtype=d, device=dev, requires_grad=requires_grad)


@method()
def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    """Mirrors ``torch.Tensor.new_full``: ``fill_value`` cast to ``self``'s dtype (not inferred).
    TypeError when ``size`` is not a sequence of ints (torch's ``new_full`` has no ``*size`` form)."""
    check_pin_memory(pin_memory, device)
    if not isinstance(size, (tuple, list)) and not (isinstance(size, Tensor) and size.dim() == 1):
        raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, not {size.__class__.__name__}")
    _dense_layout(layout, "new_full", len(size))   # (sparse COO: NotImplementedError, as torch's fill_)
    d, dev = _like(self, dtype, device)
    return full(size, fill_value, dtype=d, device=dev, requires_grad=requires_grad)


@method()
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """Mirrors ``torch.Tensor.new_tensor``: copies ``data`` into a tensor of ``self``'s dtype and
    device (unless given); a Tensor ``data`` is detached first, with torch's warning. TypeError
    for ``data=None`` (torch reads it as a number of self's dtype) and, as torch's parser, for a
    ``layout`` keyword (new_tensor has none)."""
    if data is None:
        raise TypeError("new_tensor(): must be real number, not NoneType; pass a number, a sequence or a Tensor")
    if isinstance(data, Tensor):
        _warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
              "or sourceTensor.detach().clone().requires_grad_(True), rather than "
              "tensor.new_tensor(sourceTensor).", UserWarning)
        d, dev = _like(self, dtype, device)
        out = data.detach().to(device=dev, dtype=d).clone()    # (not ``tensor(data)``: it would warn again)
        return out._factory_requires_grad() if requires_grad else out
    d, dev = _like(self, dtype, device)
    return tensor(data, dtype=d, device=dev, requires_grad=requires_grad)


@method()
def type(self, dtype=None, non_blocking=False, **kwargs):
    """Mirrors ``torch.Tensor.type``: with no argument, the legacy name (``'torch.FloatTensor'``,
    ``'torch.cuda.LongTensor'``); with a dtype or such a name, a converted tensor (``self`` when
    nothing changes); ``torch.Tensor`` itself converts to the default dtype. ValueError for an
    unknown name or a class that is not a tensor type; TypeError for an argument of another kind
    (non_blocking not a bool, a keyword other than ``memory_format`` / the legacy ``async``)."""
    for k in kwargs:
        if k not in ("async", "memory_format"):
            raise TypeError(f"type() got an unexpected keyword argument '{k}'; pass dtype= and non_blocking= only")
    if builtins.type(non_blocking) is not bool:
        raise TypeError(f"type(): argument 'non_blocking' must be bool, not {builtins.type(non_blocking).__name__}")
    if dtype is None:
        prefix = "torch.cuda." if self.device.type == "cuda" else "torch."
        return f"{prefix}{_TYPE_NAMES[self.dtype.name]}Tensor"
    if isinstance(dtype, str):
        if not dtype.startswith("torch."):   # torch's names are full ones only ('FloatTensor' is none)
            raise ValueError(f"invalid type: '{dtype}' (pass a full name such as 'torch.FloatTensor', or a dtype)")
        name = dtype[len("torch."):]
        cuda = name.startswith("cuda.")
        base = name[len("cuda."):] if cuda else name
        if not base.endswith("Tensor") or base[:-len("Tensor")] not in _BY_TYPE_NAME:
            raise ValueError(f"invalid type: '{dtype}'")
        out = self.to(_dt.to_dtype(_BY_TYPE_NAME[base[:-len("Tensor")]]))
        if not cuda:
            return out.to("cpu")
        try:
            return out.to("cuda")
        except AssertionError:   # no GPU: torch's CPU build fails loading its CUDA types, RuntimeError
            raise RuntimeError(f"Cannot initialize CUDA without a GPU (type('{dtype}')): tracegrad found no GPU "
                               "on this machine; keep tensors on 'cpu'") from None
    if isinstance(dtype, CudaLegacyTensorType):   # x.type(torch.cuda.LongTensor): as its name
        return type(self, f"torch.cuda.{dtype.__name__}", non_blocking)
    if isinstance(dtype, LegacyTensorType):   # x.type(torch.LongTensor)
        return self.to(dtype.dtype)
    if isinstance(dtype, builtins.type):
        # x.type(torch.Tensor): torch's default tensor type, i.e. the default dtype
        if not issubclass(dtype, Tensor):
            raise ValueError(f"invalid type: '{dtype.__name__}'")
        return self.to(_dt.get_default_dtype())
    if not isinstance(dtype, _dt.dtype):
        raise TypeError("type(): dtype must be a type, str, or dtype object")
    return self.to(dtype)


@method()
def pin_memory(self, device=None):
    """Mirrors ``torch.Tensor.pin_memory``. Page-locked host memory is a CUDA staging buffer;
    JAX manages its own transfers, so this returns ``self`` where a GPU exists. RuntimeError
    without one, as torch."""
    if not cuda_devices():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return self


@method()
def is_pinned(self, device=None):
    """Mirrors ``torch.Tensor.is_pinned``: always False (JAX has no pinned host tensors)."""
    return False


@method()
def share_memory_(self):
    """Mirrors ``torch.Tensor.share_memory_``: marks the tensor's storage shared (its views see
    ``is_shared()`` True too) and returns ``self``. Differs from torch: JAX owns the buffer, which
    lives in this process, so a child process (``tracegrad.multiprocessing``) gets a copy and its
    writes do not reach this process. Warns so (Hogwild training relies on sharing)."""
    if not self.untyped_storage().is_shared():
        _warn("Tensor.share_memory_: tracegrad cannot share a tensor's memory between processes "
              "(JAX arrays live in one process). A child process receives a copy, and its in-place "
              "updates do not reach this process; train in this process, or send results back "
              "through a Queue.", UserWarning)
    self.untyped_storage().share_memory_()
    return self


@method()
def is_shared(self):
    """Mirrors ``torch.Tensor.is_shared``: True after ``share_memory_()`` on the tensor or a view
    of its storage; a CUDA tensor counts as shared, as torch."""
    return self.untyped_storage().is_shared() or self.device.type == "cuda"


prop("itemsize")(lambda self: self.dtype.itemsize)
prop("name")(lambda self: None)   # torch's read-only ``Tensor.name``: None for every eager tensor
prop("nbytes")(lambda self: self.numel() * self.dtype.itemsize)

# torch's backend and layout queries: tracegrad tensors are dense, strided, unquantized and
# live on CPU or CUDA (XLA) (or are meta tensors, above), so each of these is False
prop("is_meta")(lambda self: self.device.type == "meta")   # NOTE [meta tensors] (_tensor/meta.py)
for _name in ("is_xpu", "is_mps", "is_quantized", "is_sparse", "is_sparse_csr", "is_mkldnn",
              "is_nested", "is_vulkan", "is_ipu", "is_maia", "is_mtia", "is_xla"):
    prop(_name)(lambda self: False)
del _name


@method()
def const_data_ptr(self) -> int:
    """Mirrors ``torch.Tensor.const_data_ptr``: ``data_ptr()`` (reading through it is the
    caller's promise; tracegrad's addresses are synthetic either way)."""
    return self.data_ptr()


@method()
def xpu(self, device=None, non_blocking=False, memory_format=None):
    """Mirrors ``torch.Tensor.xpu``: tracegrad has no XPU backend, so torch's CPU-build
    AssertionError."""
    return self.to("xpu")
