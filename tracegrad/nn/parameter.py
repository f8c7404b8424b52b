"""``nn.Parameter``, ``nn.Buffer`` and the lazy modules' ``UninitializedParameter``/``UninitializedBuffer``:
mirror ``torch.nn.parameter``."""
from __future__ import annotations

import tracegrad
from tracegrad import Tensor
from tracegrad._C import _disabled_torch_function_impl
from tracegrad._tensor.overridable import activate as _activate_protocol


class _ParameterMeta(type):
    # torch's: ``isinstance(t, Parameter)`` also holds for an instance of a Tensor subclass made
    # a parameter (``Parameter(MyTensor(...))`` keeps the subclass and flags it ``_is_param``)
    def __instancecheck__(cls, instance) -> bool:
        if cls is Parameter and isinstance(instance, Tensor) and getattr(instance, "_is_param", False):
            return True
        return super().__instancecheck__(instance)


class Parameter(Tensor, metaclass=_ParameterMeta):
    """Mirrors ``torch.nn.Parameter``: a Tensor that a Module registers as a parameter when it is
    assigned as an attribute. ``Parameter(data)`` shares ``data``'s storage and version counter
    (as ``torch.Tensor._make_subclass``); ``requires_grad`` defaults to True. ``data=None`` gives
    an empty float tensor. Results of ops on a Parameter are plain Tensors. ``data`` may be a
    non-leaf (it is detached). ``data`` of a Tensor subclass (not Parameter) stays of its class,
    as torch's: ``data.detach()`` with ``requires_grad`` set and flagged ``_is_param``, which
    ``isinstance(x, Parameter)`` recognises. Raises AttributeError when ``data`` is not a Tensor
    (torch reads ``data.detach``), TypeError for a ``requires_grad`` that is not a bool, and
    RuntimeError, as torch, for ``requires_grad=True`` on an integer or bool tensor, or a
    subclass whose ``detach()`` changes its type."""

    # as torch's: a Parameter takes no part in __torch_function__ (ops on it give plain Tensors)
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = tracegrad.empty(0)
        if not isinstance(data, Tensor):   # torch's Python reads data.detach first: AttributeError
            raise AttributeError(f"'{type(data).__name__}' object has no attribute 'detach' (nn.Parameter(): "
                                 f"data must be a Tensor; make one with tracegrad.tensor(...))")
        if type(requires_grad) is not bool:   # torch's _make_subclass parser takes a bool only
            raise TypeError(f"_make_subclass(): argument 'require_grad' (position 3) must be bool, not "
                            f"{type(requires_grad).__name__} (nn.Parameter(): pass requires_grad=True or False)")
        if data.is_sparse:
            raise NotImplementedError("tracegrad: nn.Parameter of a sparse COO tensor is not supported; sparse "
                                      "gradients of dense parameters are (nn.Embedding(sparse=True))")
        if requires_grad and not (data.dtype.is_floating_point or data.dtype.is_complex):
            raise RuntimeError(f"Parameter(): Only Tensors of floating point and complex dtype can require gradients "
                               f"(got {data.dtype}); pass requires_grad=False or convert with .float()")
        if type(data) is not Tensor and not isinstance(data, (Parameter, Buffer)) and type(data) is not cls:
            t = data.detach()._set_requires_grad(requires_grad)
            if type(t) is not type(data):
                raise RuntimeError(f"Creating a Parameter from an instance of type {type(data).__name__} requires "
                                   f"that detach() returns an instance of the same type, but return type "
                                   f"{type(t).__name__} was found instead; fix the subclass's detach()")
            t._is_param = True
            return t
        inference = "_inference" in data.__dict__
        if inference and requires_grad and not tracegrad.is_inference_mode_enabled():
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed "
                               "(nn.Parameter() of a tensor made in inference_mode()); pass data.clone()")
        self = Tensor.__new__(cls)
        src = data.detach()
        self._st, self._chain, self._vc = src._st, src._chain, src._vc
        self._vcache, self._vgen = src._vcache, src._vgen
        self._rg = bool(requires_grad)
        if inference:   # as torch: a Parameter of an inference tensor is one too
            self._inference = True
        return self

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        """Mirrors ``torch.nn.Parameter.__deepcopy__``: a new Parameter over a copy of the data,
        with the same ``requires_grad`` and nothing else.

        NOTE [deepcopy of a parameter]: unlike a plain tensor's deepcopy, torch's Parameter copy
        takes neither ``.grad`` nor the Python attributes set on the parameter: a
        ``copy.deepcopy(model)`` made between ``backward()`` and ``zero_grad()`` (a teacher or
        EMA copy) has ``.grad`` None everywhere. Copying them here made such a copy carry the
        student's gradients (found by round-23's adversarial tests)."""
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result


class _BufferMeta(type):
    # torch's Buffer(...) returns a plain Tensor marked ``_is_buffer``; isinstance(x, Buffer)
    # tests the mark
    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and bool(getattr(instance, "_is_buffer", False))
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """Mirrors ``torch.nn.Buffer``: ``Buffer(data, persistent=True)`` is a plain Tensor sharing
    ``data``'s storage (detached, same ``requires_grad``), marked so that assigning it to a module
    attribute registers it as a buffer -- the very object, as torch. ``isinstance(x, Buffer)``
    tests the mark."""

    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = tracegrad.empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


class UninitializedTensorMixin:
    """Shared by ``UninitializedParameter``/``UninitializedBuffer`` (torch's mixin of the same
    name): an empty placeholder whose shape is unknown until ``materialize``, which fills the
    object itself (same identity, so an optimizer built before a lazy module's first forward
    trains it) and turns it into ``cls_to_become``."""

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Give the placeholder ``shape`` (uninitialized values, as ``torch.empty``) and make it
        a ``cls_to_become`` in place."""
        dtype = self.dtype if dtype is None else dtype
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        with tracegrad.no_grad():
            self.data = tracegrad.empty(shape, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """As torch's: a placeholder takes part in no function but its attribute reads and
        writes and the few conversions in ``_allowed_functions`` (a ``ValueError`` names the
        function): an op on a lazy module's parameter before the first forward is a mistake, not
        an op on an empty tensor. The protocol is turned on by the first placeholder made."""
        if type(func).__name__ == "method-wrapper" or func in _allowed_functions():
            return super().__torch_function__(func, types, args, {} if kwargs is None else kwargs)
        raise ValueError(f"Attempted to use an uninitialized parameter in {func}. A lazy module's parameters and "
                         f"buffers ({cls.__name__}) have no shape or values until the module's first forward: "
                         "call the module on a dummy batch before using them")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        # a placeholder has no data: it pickles as a fresh placeholder, as torch's
        return (self.__class__, (self.requires_grad,))

    __str__ = __repr__


_ALLOWED: list = []


def _allowed_functions():
    """The functions a placeholder may meet (torch's list: hashing, size, copy_, dtype
    conversions and moves)."""
    if not _ALLOWED:
        T = tracegrad.Tensor
        _ALLOWED.extend([T.__hash__, T.size, T.copy_, T.is_complex, T.is_floating_point, T.half, T.float,
                         T.double, T.char, T.short, T.int, T.long, T.cuda, T.cpu, T.to, T.get_device])
    return _ALLOWED


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """Mirrors ``torch.nn.UninitializedParameter``: the weight of a lazy module before its first
    forward; ``materialize(shape)`` makes it a ``Parameter`` (same object)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        _activate_protocol()   # NOTE [trampolines]: the placeholder's __torch_function__ needs it
        return Parameter.__new__(cls, tracegrad.empty(0, dtype=dtype), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, None, self.dtype)
        return memo[id(self)]


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """Mirrors ``torch.nn.UninitializedBuffer``: a lazy module's running statistics before its
    first forward; ``materialize(shape)`` makes it a plain ``Tensor`` (same object)."""

    cls_to_become = Tensor
    _is_buffer = True   # assigning one to a module attribute registers a buffer, as a Buffer

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        _activate_protocol()
        self = Tensor.__new__(cls)
        src = tracegrad.empty(0, dtype=dtype)
        self._st, self._chain, self._vc = src._st, src._chain, src._vc
        self._vcache, self._vgen = src._vcache, src._vgen
        self._rg = bool(requires_grad)
        self.persistent = persistent
        return self

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, None, self.dtype, self.persistent)
        return memo[id(self)]


def is_lazy(param) -> bool:
    """Mirrors ``torch.nn.parameter.is_lazy``: True for an uninitialized parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)
