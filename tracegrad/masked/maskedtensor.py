"""``MaskedTensor``: mirrors torch's prototype ``torch.masked.MaskedTensor`` (strided layout) as a
Tensor subclass on ``__torch_function__``.

A MaskedTensor is its data (the tensor values, so shape, dtype, device and autograd are the
data's) plus a boolean mask of the same shape; masked-out elements take no part in results.
Calls on it are handled by kind, as torch's op tables do:
- elementwise functions (torch's unary and binary lists): run on the data; the result keeps the
  mask. Binary ones need equal masks when both sides are MaskedTensors (ValueError otherwise);
- reductions (``sum``, ``mean``, ``amax``, ``amin``, ``argmax``, ``argmin``, ``prod``, ``all``,
  ``norm``, ``var``, ``std``): ``torch.masked``'s op with the mask; the result is masked in where
  any element of its slice was;
- ``softmax``/``log_softmax``/``softmin``: ``torch.masked``'s, mask kept;
- view and shape functions (torch's pass-through list): the same function on data and mask;
- reads of metadata (``shape``, ``dtype``, ``requires_grad``, ``backward``...): as a tensor.
Anything else raises TypeError, as torch's dispatcher does (no silently unmasked results).
Gradients reaching a MaskedTensor leaf (``mt.grad``) come back as a MaskedTensor of its mask.

Differs from torch: sparse layouts are not supported; ``get_data()`` is a differentiable alias of
the data (torch: a copy made at construction); the gradient ``as_masked_tensor(x, mask)`` sends to
``x`` is a plain tensor, 0 where masked out (torch's is a MaskedTensor of ``mask``).
"""
from __future__ import annotations

import tracegrad
from .._tensor.overridable import activate as _activate_protocol
from . import _ops
from .._ops.warn import warn as _warn

__all__ = ["MaskedTensor", "is_masked_tensor", "masked_tensor", "as_masked_tensor"]

_PROTOTYPE = ("The PyTorch API of MaskedTensors is in prototype stage and will change in the near future. Please "
              "open a Github issue for features requests and see our documentation on the torch.masked module for "
              "further information about the project.")

UNARY = {"abs", "absolute", "acos", "arccos", "acosh", "arccosh", "angle", "asin", "arcsin", "asinh", "arcsinh",
         "atan", "arctan", "atanh", "arctanh", "bitwise_not", "ceil", "clamp", "clip", "conj_physical", "cos", "cosh",
         "deg2rad", "digamma", "erf", "erfc", "erfinv", "exp", "exp2", "expm1", "fix", "floor", "frac", "lgamma",
         "log", "log10", "log1p", "log2", "logit", "i0", "isnan", "nan_to_num", "neg", "negative", "positive", "pow",
         "rad2deg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sgn", "signbit", "sin", "sinc", "sinh", "sqrt",
         "square", "tan", "tanh", "trunc", "__neg__", "__abs__", "__invert__", "__pow__", "relu"}
BINARY = {"add", "atan2", "arctan2", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
          "bitwise_right_shift", "div", "divide", "floor_divide", "fmod", "logaddexp", "logaddexp2", "mul", "multiply",
          "nextafter", "remainder", "sub", "subtract", "true_divide", "eq", "ne", "le", "ge", "greater",
          "greater_equal", "gt", "less_equal", "lt", "less", "maximum", "minimum", "fmax", "fmin", "not_equal"}
OPERATORS = {"__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
             "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
             "__ge__", "__and__", "__or__", "__xor__", "__rpow__"}
REDUCTIONS = {"sum", "mean", "amin", "amax", "argmin", "argmax", "prod", "all", "norm", "var", "std"}
NORMALIZATIONS = {"softmax", "log_softmax", "softmin"}
PASS_THROUGH = {"select", "transpose", "split", "t", "expand", "view", "reshape", "unsqueeze", "unfold", "cat",
                "stack", "__getitem__", "clone", "detach", "contiguous", "flatten", "squeeze", "permute", "T"}
METADATA = {"shape", "dtype", "device", "layout", "requires_grad", "is_leaf", "grad_fn", "ndim", "dim", "size",
            "numel", "nelement", "element_size", "backward", "requires_grad_", "retain_grad", "register_hook",
            "_version", "is_floating_point", "is_complex", "stride", "storage_offset", "data_ptr", "__len__",
            "is_sparse", "is_contiguous", "__repr__", "__format__", "__hash__", "__reduce_ex__", "__dir__",
            "_base", "is_cuda", "is_meta", "__setattr__", "__getattribute__", "__delattr__", "name", "retains_grad"}


def is_masked_tensor(obj) -> bool:
    """Mirrors ``torch.masked.is_masked_tensor``."""
    return isinstance(obj, MaskedTensor)


def _plain(t):
    """The data of a MaskedTensor as a plain tensor (an alias on the autograd graph)."""
    with tracegrad._C.DisableTorchFunctionSubclass():
        return t.as_subclass(tracegrad.Tensor) if isinstance(t, MaskedTensor) else t


def _wrap(data, mask):
    # the protocol turns on when a subclass is defined; it may have been turned off since (tests
    # do, between modules): a MaskedTensor needs it (one flag check once on)
    _activate_protocol()
    out = data.as_subclass(MaskedTensor)
    out._masked_mask = mask
    return out


def _map(obj, fn):
    if isinstance(obj, MaskedTensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(o, fn) for o in obj)
    return obj


def _masked_args(args, kwargs):
    found = []
    _map(list(args) + list(kwargs.values()), lambda t: found.append(t) or t)
    return found


def _same_masks(mts):
    first = mts[0].get_mask()
    for other in mts[1:]:
        m = other.get_mask()
        if tuple(m.shape) != tuple(first.shape) or not bool(tracegrad.eq(_plain(m), _plain(first)).all()):
            raise ValueError("Input masks must match. If you need support for this, please open an issue on Github.")
    return first


def _reduce(name, self, *args, **kwargs):
    data, mask = _plain(self), self.get_mask()
    if not args and not kwargs:   # the whole tensor
        if name == "all":
            return _wrap(data.masked_fill(~mask, True).all(), mask.any())
        return _wrap(getattr(_ops, name)(data, mask=mask), mask.any())
    if name in ("var", "std"):
        dim = args[0] if args else kwargs.pop("dim", None)
        keepdim = kwargs.get("keepdim", False)
        result = getattr(_ops, name)(data, dim, unbiased=kwargs.get("unbiased"), correction=kwargs.get("correction"),
                                     keepdim=keepdim, mask=mask)
    else:
        dim = args[0] if args else kwargs.get("dim")
        keepdim = args[1] if len(args) > 1 else kwargs.get("keepdim", False)
        dtype = args[2] if len(args) > 2 else kwargs.get("dtype")
        if name == "all":
            result = data.masked_fill(~mask, True).all(dim=dim, keepdim=keepdim)
        elif name == "norm":
            result = _ops.norm(data, kwargs.get("p", 2.0), dim, keepdim=keepdim, dtype=dtype, mask=mask)
        else:
            result = getattr(_ops, name)(data, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return _wrap(result, _ops._any(mask, _ops._canonical_dim(dim, mask.ndim), bool(keepdim)))


class MaskedTensor(tracegrad.Tensor):
    """Mirrors ``torch.masked.MaskedTensor(data, mask, requires_grad=False)``: ``data`` a tensor
    (float16/32/64, bool or int8..int64), ``mask`` a bool tensor of the same shape. Warns
    UserWarning (prototype API) as torch, and again when ``data`` requires grad. TypeError for
    non-tensor arguments, a non-bool mask or an unsupported dtype; ValueError for differing
    shapes. ``get_data()``, ``get_mask()``, ``to_tensor(value)`` (masked-out elements become
    ``value``); see the module docstring for the operations it supports."""

    def __new__(cls, data, mask, requires_grad=False):
        if is_masked_tensor(data) or not isinstance(data, tracegrad.Tensor):
            raise TypeError("data must be a Tensor")
        if is_masked_tensor(mask) or not isinstance(mask, tracegrad.Tensor):
            raise TypeError("mask must be a Tensor")
        _warn(_PROTOTYPE, UserWarning)
        if data.requires_grad:
            _warn("It is not recommended to create a MaskedTensor with a tensor that requires_grad. To avoid "
                  "this, you can use data.detach().clone()", UserWarning)
        _check(data, mask)
        out = _wrap(data.detach().clone(), mask.detach().clone())
        if requires_grad:
            out._set_requires_grad(True)
        return out

    def __init__(self, data, mask, requires_grad=False):
        pass   # __new__ built it

    def get_data(self):
        """The data (masked-out elements included) as a plain tensor; differentiable."""
        return _plain(self)

    def get_mask(self):
        """The boolean mask."""
        return self.__dict__["_masked_mask"]

    def to_tensor(self, value):
        """A plain tensor: the data with masked-out elements set to ``value``."""
        return _plain(self).masked_fill(~self.get_mask(), value)

    def __str__(self):
        return self.__repr__()

    def __repr__(self):
        data, mask = _plain(self).detach(), self.get_mask()
        if data.dim() == 0:
            v = data.item()
            text = "--" if not mask.item() else ("{0:8.4f}".format(v) if isinstance(v, float) else str(v))
            return f"MaskedTensor({text}, {bool(mask.item())})"
        return "MaskedTensor(\n" + "\n".join("  " + line for line in _rows(data, mask).split("\n")) + "\n)"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _func_name(func)
        if name in METADATA or name in ("get_data", "get_mask", "to_tensor"):
            with tracegrad._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)
        if name == "grad":
            with tracegrad._C.DisableTorchFunctionSubclass():
                g = func(*args, **kwargs)
            return g if g is None else _wrap(g, args[0].get_mask())
        mts = _masked_args(args, kwargs)
        if name in REDUCTIONS and isinstance(args[0], MaskedTensor):
            return _reduce(name, *args, **kwargs)
        if name in NORMALIZATIONS and isinstance(args[0], MaskedTensor):
            dim = args[1] if len(args) > 1 else kwargs.get("dim")
            return _wrap(getattr(_ops, name)(_plain(args[0]), dim, dtype=kwargs.get("dtype"),
                                             mask=args[0].get_mask()), args[0].get_mask())
        if name in PASS_THROUGH:
            with tracegrad._C.DisableTorchFunctionSubclass():
                data = func(*_map(args, _plain), **{k: _map(v, _plain) for k, v in kwargs.items()})
                mask = func(*_map(args, lambda t: t.get_mask()), **{k: _map(v, lambda t: t.get_mask())
                                                                      for k, v in kwargs.items()})
            if isinstance(data, (list, tuple)):
                return type(data)(_wrap(d, m) for d, m in zip(data, mask))
            return _wrap(data, mask)
        if name in UNARY or name in BINARY or name in OPERATORS:
            mask = _same_masks(mts)
            with tracegrad._C.DisableTorchFunctionSubclass():
                data = func(*_map(args, _plain), **{k: _map(v, _plain) for k, v in kwargs.items()})
            return _wrap(data, mask.expand_as(data))
        raise TypeError(f"MaskedTensor does not support {name or func!r} (tracegrad supports torch's elementwise, "
                        f"reduction, softmax and view functions on it); call it on mt.get_data() or "
                        f"mt.to_tensor(value) instead")


_NAMES = {}   # public object (Tensor.add, tracegrad.add, a Tensor property...) -> torch's name


def _func_name(func):
    """The torch name of ``func`` (a public object's own ``__name__`` may differ: ``Tensor.__getitem__``
    is a function named ``getitem``); a property read arrives as ``Tensor.<name>.__get__``."""
    if not _NAMES:
        for name in UNARY | BINARY | OPERATORS | REDUCTIONS | NORMALIZATIONS | PASS_THROUGH | METADATA | {"grad"}:
            for owner in (tracegrad.Tensor, tracegrad, tracegrad.nn.functional):
                obj = getattr(owner, name, None) if owner is not tracegrad.Tensor else _class_attr(name)
                if obj is not None:
                    _NAMES.setdefault(obj, name)
    owner = getattr(func, "__self__", None)
    key = owner if isinstance(owner, property) else func
    try:
        return _NAMES.get(key) or getattr(func, "__name__", "")
    except TypeError:   # an unhashable callable
        return getattr(func, "__name__", "")


def _class_attr(name):
    for klass in tracegrad.Tensor.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None


def _check(data, mask):
    if data.layout != mask.layout:
        raise TypeError("data and mask must have the same layout.")
    if data.layout != tracegrad.strided:
        raise TypeError(f"data layout of {data.layout} is not supported.")
    if mask.dtype != tracegrad.bool:
        raise TypeError("mask must have dtype bool.")
    if data.dtype not in (tracegrad.float16, tracegrad.float32, tracegrad.float64, tracegrad.bool, tracegrad.int8,
                          tracegrad.int16, tracegrad.int32, tracegrad.int64):
        raise TypeError(f"{data.dtype} is not supported in MaskedTensor.")
    if data.dim() != mask.dim():
        raise ValueError("data.dim() must equal mask.dim()")
    if tuple(data.shape) != tuple(mask.shape):
        raise ValueError("data.size() must equal mask.size()")


def _rows(data, mask):
    """torch's MaskedTensor text: each element in ``{:8.4f}`` (floats) or as is, ``--`` where
    masked out, rows nested in brackets."""
    if data.dim() == 1:
        items = ["{0:8.4f}".format(v) if isinstance(v, float) else str(v) for v in data.tolist()]
        keep = mask.tolist()
        width = max((8 if not m else len(e) for e, m in zip(items, keep)), default=0)
        return "[" + ", ".join(e if m else "--".rjust(width) for e, m in zip(items, keep)) + "]"
    return "[\n" + ",\n".join("  " + r.replace("\n", "\n  ") for r in (_rows(d, m) for d, m in zip(data, mask))) + "\n]"


def masked_tensor(data, mask, requires_grad=False):
    """Mirrors ``torch.masked.masked_tensor``: a MaskedTensor of copies of ``data`` and ``mask``
    (a leaf; ``requires_grad`` as given)."""
    return MaskedTensor(data, mask, requires_grad)


def as_masked_tensor(data, mask):
    """Mirrors ``torch.masked.as_masked_tensor``: a MaskedTensor of ``data`` that stays on its
    autograd graph (gradients flow back to ``data``)."""
    _check(data, mask)
    return _wrap(_plain(data), mask)
