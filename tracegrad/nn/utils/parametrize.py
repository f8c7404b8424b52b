"""``tracegrad.nn.utils.parametrize``: mirrors ``torch.nn.utils.parametrize``.

A parametrized tensor ``module.<name>`` becomes a property computed from the unconstrained
tensor(s) stored at ``module.parametrizations.<name>.original`` (or ``original0``,
``original1``... when a ``right_inverse`` returns a tuple), so the state_dict keys are torch's
(``parametrizations.weight.original``). The module's class is swapped for a subclass
``Parametrized<Class>`` holding the properties, as torch does.
"""
import contextlib
import weakref
from collections.abc import Sequence

from tracegrad import Tensor, _state
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached",
           "ParametrizationList", "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache = {}
# NOTE [parametrize cache in a trace]: a ``cached()`` block around a compiled call (or a call
# that traces) met the parametrized tensor first inside the trace; kept in ``_cache`` it was a
# traced value outliving its program (JAX's "unexpected tracer" on the next read), and an eager
# value cached before the call was a graph from outside the program. While a region is traced
# the cache is its own, dropped with it: the same reuse inside the call as eagerly (one
# parametrized tensor per block of the step), nothing traced left behind.
_trace_caches = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def cached():
    """Mirrors ``torch.nn.utils.parametrize.cached``: inside the block each parametrized tensor is
    computed once and reused; the cache is dropped on exit."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _no_grad():
    import tracegrad
    return tracegrad.no_grad()


def _check_unchanged(before, after, what_before, what_after):
    """ValueError (torch's texts) when a safe parametrization changes the dtype, then the shape."""
    for attr in ("dtype", "shape"):
        b, a = getattr(before, attr), getattr(after, attr)
        if (b != a) if attr == "dtype" else (tuple(b) != tuple(a)):
            raise ValueError(f"Registering a parametrization may not change the {attr} of the tensor, unless "
                             f"`unsafe` flag is enabled.\n{what_before} {attr}: {b}\n{what_after} {attr}: {a}")


class ParametrizationList(ModuleList):
    """Mirrors ``torch.nn.utils.parametrize.ParametrizationList``: the chain of parametrizations of
    one tensor and its unconstrained original(s)."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        new = original
        with _no_grad():
            for m in reversed(self):
                if hasattr(m, "right_inverse"):
                    try:
                        new = m.right_inverse(new)
                    except NotImplementedError:   # as torch: at registration, taken as the identity
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the device.\n"
                                 f"original.device: {original.device}\nright_inverse(original).device: {new.device}")
            self._set_original("original", original, new)
        else:
            for i, o in enumerate(new):
                if not isinstance(o, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                                     f"(list, tuple...). Got element {i} of the sequence with type "
                                     f"{type(o).__name__}.")
                p = Parameter(o.detach().clone(), requires_grad=original.requires_grad) \
                    if isinstance(original, Parameter) else o.detach().clone()
                self._register(f"original{i}", p)
        if not unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            _check_unchanged(original, z, "unparametrized", "parametrized")

    def _register(self, name, t):
        if isinstance(t, Parameter):
            self.register_parameter(name, t)
        else:
            self.register_buffer(name, t)

    def _set_original(self, name, original, new):
        with _no_grad():
            if new is not original:
                if tuple(new.shape) == tuple(original.shape):
                    original.set_(new)     # takes right_inverse's storage, as torch's set_
                elif isinstance(original, Parameter):
                    original = Parameter(new.detach().clone(), requires_grad=original.requires_grad)
                else:
                    original = new.detach().clone()
        self._register(name, original)

    def right_inverse(self, value):
        """Sets the original(s) so that the parametrized tensor equals ``value``."""
        with _no_grad():
            for m in reversed(self):
                if hasattr(m, "right_inverse"):
                    value = m.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                self.original.set_(value)      # shares value's storage, as torch's set_
            else:
                if len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of length "
                                     f"{self.ntensors}. Got a sequence of length {len(value)}")
                for i, t in enumerate(value):
                    original = getattr(self, f"original{i}")
                    if t.dtype != original.dtype:
                        raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {t.dtype} while "
                                         f"`original{i}` has dtype {original.dtype}")
                    original.set_(t)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        # by index names, as torch: a nested parametrization of ``original`` adds a
        # ``parametrizations`` ModuleDict to this list's children, which is no step of the chain
        k = 1
        while str(k) in self._modules:
            x = self._modules[str(k)](x)
            k += 1
        return x


def _make_property(name):
    def get_parametrized(self):
        parametrization = self.parametrizations[name]
        if _cache_enabled:
            cap = _state.CAPTURE[0]
            cache = _cache if cap is None else _trace_caches.setdefault(cap, {})
            key = (id(self), name)
            if key not in cache:
                cache[key] = parametrization()
            return cache[key]
        return parametrization()

    def set_original(self, value):
        self.parametrizations[name].right_inverse(value)

    return property(get_parametrized, set_original)


def _no_pickle(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(): "
                       "save module.state_dict() and load it into a module parametrized the same way.")


def _deepcopy(self, memo):
    import copy
    obj = object.__new__(type(self))
    memo[id(self)] = obj
    for k, v in self.__dict__.items():
        obj.__dict__[k] = copy.deepcopy(v, memo)
    return obj


def _inject_new_class(module):
    cls = module.__class__
    param_cls = type(f"Parametrized{cls.__name__}", (cls,),
                     {"_tg_unparametrized_class": cls, "__getstate__": _no_pickle,
                      "__deepcopy__": _deepcopy})
    module.__class__ = param_cls


def type_before_parametrizations(module):
    """Mirrors ``torch.nn.utils.parametrize.type_before_parametrizations``: the module's class
    before any parametrization swapped it."""
    if is_parametrized(module):
        return module.__class__._tg_unparametrized_class
    return type(module)


def is_parametrized(module, tensor_name=None):
    """Mirrors ``torch.nn.utils.parametrize.is_parametrized``: whether ``module`` has any
    parametrization (or one on ``tensor_name``)."""
    # getattr: torch answers False for what is no module (type_before_parametrizations(3) is int)
    parametrizations = getattr(module, "__dict__", {}).get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def _check_right_inverse(parametrization, X, Y, tensor_name):
    """A parametrization chained onto another must map ``X`` back to one tensor shaped and
    typed as ``Y`` (when it has a right_inverse): ValueError with torch's texts otherwise."""
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        Z = parametrization.right_inverse(X)
    except NotImplementedError:
        return
    if not isinstance(Z, Tensor):
        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(Z).__name__}")
    for attr in ("dtype", "shape"):
        if getattr(Z, attr) != getattr(Y, attr):
            raise ValueError(f"The tensor returned by parametrization.right_inverse must have the same {attr} as "
                             f"module.{tensor_name}, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}."
                             f"{attr}: {getattr(Y, attr)}\nreturned {attr}: {getattr(Z, attr)}")


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Mirrors ``torch.nn.utils.parametrize.transfer_parametrizations_and_params``: registers on
    ``to_module`` the parametrizations of ``tensor_name`` (every parametrized tensor when None)
    of ``from_module``, the same parametrization objects in the same order, and makes its
    originals the very tensors of ``from_module`` (so both compute the same value). A tensor
    ``to_module`` lacks is first created as a Parameter of ``from_module``'s current value.
    Returns ``to_module``."""
    if not is_parametrized(from_module, tensor_name):
        return to_module
    for name in (list(from_module.parametrizations) if tensor_name is None else [tensor_name]):
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for p in source:
            register_parametrization(to_module, name, p)
        target = to_module.parametrizations[name]
        originals = ["original"] if hasattr(source, "original") else [
            f"original{i}" for i in range(source.ntensors)]
        for o in originals:
            setattr(target, o, getattr(source, o))
    return to_module


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Mirrors ``torch.nn.utils.parametrize.register_parametrization``: ``module.<tensor_name>``
    becomes ``parametrization(original)``; the original moves to
    ``module.parametrizations.<tensor_name>.original``. A second call on the same name chains.

    Raises ValueError when ``module`` has no parameter/buffer ``tensor_name``, or (unless
    ``unsafe``) when the parametrization changes the tensor's shape or dtype.
    """
    if not isinstance(parametrization, Module):
        # torch calls parametrization.train() first: AttributeError for a plain function
        raise AttributeError("register_parametrization: the parametrization must be an nn.Module; "
                        f"got {type(parametrization).__name__}")
    parametrization.train(module.training)   # it follows the module's mode from now on, as torch
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
            _check_unchanged(Y, X, f"module.{tensor_name}", f"parametrization(module.{tensor_name})")
            _check_right_inverse(parametrization, X, Y, tensor_name)
        plist.append(parametrization)
        plist.unsafe = plist.unsafe or unsafe
        return module
    if tensor_name not in module._buffers and tensor_name not in module._parameters:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized "
                         f"element with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    if original is None:
        # a slot registered as None (Linear(bias=False).bias): torch fails reading its shape
        # (AttributeError); say what is missing instead of "'NoneType' has no attribute"
        raise AttributeError(f"register_parametrization: {type(module).__name__}.{tensor_name} is None, so there "
                             "is no tensor to parametrize; register a parameter or buffer there first")
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _inject_new_class(module)
        module.parametrizations = ModuleDict()
    setattr(module.__class__, tensor_name, _make_property(tensor_name))
    module.parametrizations[tensor_name] = plist
    return module


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Mirrors ``torch.nn.utils.parametrize.remove_parametrizations``: puts a plain tensor back at
    ``module.<tensor_name>``: the current parametrized value (``leave_parametrized=True``) or the
    original. Raises ValueError when the tensor is not parametrized, or when
    ``leave_parametrized=False`` and the parametrization has several originals."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with _no_grad():
                t = getattr(module, tensor_name)
                if t is not original:
                    # as torch: set_ the value into the original, so that it stays the same object
                    # (an optimizer holding it keeps working) but takes the value's storage: a
                    # tensor that aliased the original's old storage (an earlier detach(), .data)
                    # keeps the old values, as in torch (a copy_ wrote them over); set_ also
                    # follows an unsafe parametrization's new shape, and refuses another dtype
                    # (RuntimeError), where a new tensor of that dtype was made quietly
                    try:
                        original.set_(t)
                    except RuntimeError as e:
                        if not isinstance(original, Parameter):
                            raise
                        raise RuntimeError(f"remove_parametrizations() with leave_parametrized=True cannot put the "
                                           f"parametrized value of '{tensor_name}' into its original parameter "
                                           f"({e}); set leave_parametrized=False, or keep the parametrization's "
                                           "dtype") from e
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        with _no_grad():
            t = getattr(module, tensor_name)
        if isinstance(plist.original0, Parameter):
            original = Parameter(t.detach().clone(), requires_grad=plist.original0.requires_grad)
        else:
            original = t.detach().clone()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__._tg_unparametrized_class
    return module
