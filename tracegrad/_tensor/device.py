"""``tracegrad.device``: torch's device names mapped onto JAX devices ('cpu', 'cuda:N')."""
from __future__ import annotations

import builtins
import jax

from . import torch_function as _tf


# torch's device types: all may be named (``device('mps')`` in code that checks for Apple GPUs);
# only cpu, cuda (JAX's GPUs) and meta hold tensors here. JAX's platform name 'gpu' is not one
# (torch's RuntimeError): a JAX device maps to 'cuda' by its platform (runtime.py)
_TYPES = ("cpu", "cuda", "meta", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
          "fpga", "maia", "xla", "lazy", "vulkan", "mps", "hpu", "mtia", "privateuseone")


_UNSET = object()   # device()'s index default: an explicit None counts as passed, as torch's parser


class _DeviceType(type):
    """``device(...)`` first asks an active TorchFunctionMode, or an argument with
    ``__torch_function__``, as torch's constructor does (a mode can rewrite ``device(0)``)."""

    def __call__(cls, *args, **kwargs):
        st = _tf.STATE
        if (st.modes or (args and builtins.type(args[0]) not in (str, int, cls))) and not st.inside:
            overloaded = _tf.overloaded_args(args) + _tf.overloaded_args(kwargs.values())
            if (st.modes and st.level != _tf.ALL_DISABLED) or overloaded:
                return _tf.handle(cls, overloaded, args, kwargs, python=False)
        return super().__call__(*args, **kwargs)


class device(metaclass=_DeviceType):
    """Mirrors ``torch.device``: ``device('cpu')``, ``device('cuda', 0)``, ``device('cuda:1')``.
    ``type`` is one of torch's device types ('mps', 'xpu', ... can be named; tensors live on
    'cpu', 'cuda' or 'meta', the others raise torch's errors); ``index`` the ordinal or None. CUDA maps to JAX's GPU
    devices; 'meta' tensors hold no data (NOTE [meta tensors] in _tensor/meta.py). As a
    context manager (``with tracegrad.device('meta'):``) it is the default device of factories
    inside the block, as torch's (``__enter__``/``__exit__`` come from ``runtime.py``, which
    owns the default device). RuntimeError, as torch, for an ordinal that is not plain digits
    ('cuda:x', 'cuda:01') and for an index given both in the string and as ``index``."""

    __slots__ = ("type", "index")

    def __init__(self, type=_UNSET, index=_UNSET, **kwargs):
        if kwargs:     # torch's other signature: device(device=...)
            if list(kwargs) != ["device"] or type is not _UNSET or index is not _UNSET:
                raise TypeError(f"device() received an invalid combination of arguments (keywords {list(kwargs)}); "
                                "pass device(type, index) or device(device=...) alone")
            type = kwargs["device"]
        elif type is _UNSET:
            raise TypeError("device() missing required argument 'type' (pos 1); pass a string such as 'cpu'")
        explicit = index is not _UNSET    # torch refuses 'cuda:0' with any index argument, None too
        index = None if index is _UNSET else index
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, str) and ":" in type:
            if explicit:
                raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: "
                                   f"{type}; pass device('{type.split(':', 1)[0]}', {index}) or device('{type}')")
            type, idx = type.split(":", 1)
            # torch's ordinal: ASCII digits without a leading zero ('cuda:01' is refused)
            if not (idx.isascii() and idx.isdigit()) or (len(idx) > 1 and idx[0] == "0"):
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        elif isinstance(type, int) and not isinstance(type, bool):
            # a bare ordinal names the accelerator, as torch's: none here is RuntimeError at once
            if type < 0:
                raise RuntimeError(f"Device index must not be negative (got {type}); pass 'cpu' or 'cuda:N'")
            if not cuda_devices():
                raise RuntimeError(f"Cannot access accelerator device when none is available (device {type}); "
                                   f"use 'cpu'")
            type, index = "cuda", type
        elif not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({builtins.type(type).__name__}); pass a string such as 'cpu' or 'cuda:0', or an int")
        if index is not None and builtins.type(index) is not int:
            if isinstance(index, bool) or not hasattr(index, "__index__"):
                raise TypeError(f"device(): argument 'index' (position 2) must be int, not {builtins.type(index).__name__}")
            index = int(index)
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative (got {index}); pass 0 or more")
        if type not in _TYPES:
            raise RuntimeError(f"Expected one of cpu, cuda, meta, mps, xpu, hip, ... (torch's device types) device "
                               f"type at start of device string: {type}")
        self.type = type
        self.index = index

    def __repr__(self):
        return f"device(type='{self.type}'" + (f", index={self.index})" if self.index is not None else ")")

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        # as torch: equal only to a device of the same type and index (``device('cpu') == 'cpu'``
        # is False: compare ``.type`` or ``str(device)`` with a string)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def jax_device(self):
        """The JAX device; for 'cuda' where JAX has no GPU, torch's CPU-build AssertionError."""
        if self.type in ("cpu", "meta"):
            # torch has one CPU device whatever the index ('cpu:1' is the CPU); JAX's extra host
            # devices, where configured, answer their own index
            cpus = jax.devices("cpu")
            return cpus[self.index] if self.index and self.index < len(cpus) else cpus[0]
        if self.type != "cuda":   # a device type this build has no backend for, in torch's words
            if self.type == "xpu":
                raise AssertionError("Torch not compiled with XPU enabled (tracegrad: use 'cpu' or 'cuda')")
            raise RuntimeError(f"PyTorch is not linked with support for {self.type} devices (tracegrad: use 'cpu' "
                               "or 'cuda')")
        gpus = need_gpu()
        i = self.index or 0
        if i >= len(gpus):
            raise RuntimeError(f"CUDA error: invalid device ordinal {i}; {len(gpus)} GPU(s) found")
        return gpus[i]


# reported as the package's class, as torch.device (pickled as tracegrad.device)
device.__module__ = "tracegrad"

def cuda_devices():
    try:
        return jax.devices("gpu")
    except RuntimeError:
        return []


def need_gpu():
    """JAX's GPUs; where there is none, the AssertionError torch's CPU build raises for any
    CUDA use (``torch.cuda._lazy_init``), so code that catches it behaves the same."""
    gpus = cuda_devices()
    if not gpus:
        raise AssertionError("Torch not compiled with CUDA enabled (tracegrad found no GPU on "
                             "this machine; keep tensors on 'cpu')")
    return gpus


def device_of(array) -> device:
    try:
        d = next(iter(array.devices()))
    except Exception:  # a tracer: report the default device; a meta storage's abstract array: meta
        if type(array) is jax.ShapeDtypeStruct:
            return _make("meta")
        d = jax.devices()[0]
    if d.platform == "cpu":
        return _make("cpu")
    return _make("cuda", d.id)


def _make(*args) -> device:
    """A device built by tracegrad itself (``t.device``): no TorchFunctionMode sees it, as no
    mode sees the devices torch's C++ code makes."""
    return type.__call__(device, *args)
