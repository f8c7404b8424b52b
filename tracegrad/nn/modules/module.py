"""``nn.Module``: mirrors ``torch.nn.Module`` (attribute registration, traversal, state_dict,
hooks) and the global module hooks of ``torch.nn.modules.module``.

Hooks: one ordered dict per event. Forward and backward hook dicts hold the hook callables
themselves, as torch's (programs read ``module._forward_pre_hooks.values()``: pruning finds
its methods there), their flags in torch's side dicts ``_forward_pre_hooks_with_kwargs``,
``_forward_hooks_with_kwargs`` and ``_forward_hooks_always_called`` (ids -> True); state-dict
hooks hold a ``_Hook`` record (function, with_kwargs) -- STYLE 9/12. Call order as torch's
``_call_impl``: global forward pre-hooks, local forward pre-hooks, (backward-hook input
wrapping), ``forward``, global forward hooks, local forward hooks, (backward-hook output
wrapping). Backward: global then local pre-hooks when grad_output is known, global then local
full backward hooks when grad_input is known.
"""
from __future__ import annotations

import functools
import inspect
import weakref
from collections import OrderedDict, namedtuple

import tracegrad
from tracegrad import Tensor, _state
from tracegrad._tensor.tensor import is_tensor_container
from tracegrad.utils.hooks import RemovableHandle

from ..parameter import Buffer, Parameter, is_lazy
from ._backward_hook import BackwardHook
from ..._ops.warn import warn as _warn

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
           "register_module_backward_hook"]


class _Hook:
    """One registered module hook and its flags."""
    __slots__ = ("fn", "with_kwargs", "always_call")

    def __init__(self, fn, with_kwargs=False, always_call=False):
        self.fn, self.with_kwargs, self.always_call = fn, with_kwargs, always_call

    def __call__(self, *args):
        return self.fn(*args)

    def __repr__(self):
        return f"_Hook({self.fn!r}, with_kwargs={self.with_kwargs}, always_call={self.always_call})"


_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict = OrderedDict()   # OrderedDicts: a handle weak-refers to them
_global_forward_hooks_always_called: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
_global_is_full_backward_hook = [None]
_global_buffer_registration_hooks: OrderedDict = OrderedDict()
_global_parameter_registration_hooks: OrderedDict = OrderedDict()
_global_module_registration_hooks: OrderedDict = OrderedDict()


def _run_registration_hooks(hooks, module, name, value):
    """Each global registration hook sees ``(module, name, value)``; a non-None return replaces the value."""
    for hook in list(hooks.values()):
        out = hook(module, name, value)
        if out is not None:
            value = out
    return value


def register_module_buffer_registration_hook(hook):
    """Mirrors ``torch.nn.modules.module.register_module_buffer_registration_hook``:
    ``hook(module, name, buffer)`` runs whenever any module registers (or re-assigns) a buffer;
    a non-None return replaces the buffer. Returns a handle whose ``remove()`` unregisters it."""
    return _add(_global_buffer_registration_hooks, hook)


def register_module_parameter_registration_hook(hook):
    """Mirrors ``torch.nn.modules.module.register_module_parameter_registration_hook``:
    ``hook(module, name, param)`` runs whenever any module registers a (non-None) Parameter;
    a non-None return replaces it. Returns a removable handle."""
    return _add(_global_parameter_registration_hooks, hook)


def register_module_module_registration_hook(hook):
    """Mirrors ``torch.nn.modules.module.register_module_module_registration_hook``:
    ``hook(module, name, submodule)`` runs whenever any module registers a submodule;
    a non-None return replaces it. Returns a removable handle."""
    return _add(_global_module_registration_hooks, hook)


def _add(d, record, prepend=False, flags=()):
    """Register ``record`` in ``d``; ``flags``: ``(side dict, on)`` pairs, the hook's id entered
    in each side dict where ``on`` (and removed from all of them with the hook)."""
    h = RemovableHandle(d, extra_dict=[side for side, _ in flags])
    # OrderedDict's own methods: the handle told compiled programs of this hook already
    # (NOTE [hook sets come back] in _state.py); ``_HookDict``'s writes would bump the structure
    # and the programs for the set of hooks before it could never run again
    OrderedDict.__setitem__(d, h.id, record)
    for side, on in flags:
        if on:
            OrderedDict.__setitem__(side, h.id, True)
    if prepend:
        OrderedDict.move_to_end(d, h.id, last=False)
    return h


def register_module_forward_pre_hook(hook):
    """Mirrors ``torch.nn.modules.module.register_module_forward_pre_hook``: ``hook(module, args)``
    runs before every module's forward, before the module's own pre-hooks."""
    return _add(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """Mirrors ``torch.nn.modules.module.register_module_forward_hook``: ``hook(module, args, output)``
    (``hook(module, args, kwargs, output)`` with_kwargs) after every forward, before local hooks."""
    return _add(_global_forward_hooks, hook, flags=((_global_forward_hooks_with_kwargs, with_kwargs),
                                                    (_global_forward_hooks_always_called, always_call)))


def register_module_full_backward_pre_hook(hook):
    """Mirrors ``torch.nn.modules.module.register_module_full_backward_pre_hook``."""
    return _add(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """Mirrors ``torch.nn.modules.module.register_module_full_backward_hook``."""
    if _global_is_full_backward_hook[0] is False:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module "
                           "hook. Please use only one of them.")
    _global_is_full_backward_hook[0] = True
    return _add(_global_backward_hooks, hook)


def register_module_backward_hook(hook):
    """Mirrors the deprecated ``torch.nn.modules.module.register_module_backward_hook``: a legacy
    hook on the grad_fn of each module's output (see ``Module.register_backward_hook``)."""
    if _global_is_full_backward_hook[0] is True:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module "
                           "hook. Please use only one of them.")
    _global_is_full_backward_hook[0] = False
    return _add(_global_backward_hooks, hook)


def _warn_non_full_backward_hook(inputs, result, grad_fn):
    """torch's FutureWarnings for a legacy ``register_backward_hook`` whose grads cannot be the
    module's: containers that are not a Tensor or a tuple of Tensors, outputs from several
    Nodes, or a forward of more than one Node (the hook sees only the last one)."""
    def tensors(x):
        if isinstance(x, Tensor):
            return (x,)
        if isinstance(x, tuple) and all(isinstance(v, Tensor) for v in x):
            return x
        return None

    tail = " Please use register_full_backward_hook to get the documented behavior."
    out = tensors(result)
    if out is None:
        _warn("Using non-full backward hooks on a Module that does not return a single Tensor or a tuple "
              "of Tensors is deprecated and will be removed in future versions. This hook will be missing "
              "some of the grad_output." + tail, FutureWarning)
        return
    ins = tensors(inputs)
    if ins is None:
        _warn("Using non-full backward hooks on a Module that does not take as input a single Tensor or a "
              "tuple of Tensors is deprecated and will be removed in future versions. This hook will be "
              "missing some of the grad_input." + tail, FutureWarning)
        return
    out_fns = {id(r.grad_fn): r.grad_fn for r in out if r.grad_fn is not None}
    if not out_fns or (len(out_fns) == 1 and id(grad_fn) not in out_fns):
        _warn("Using a non-full backward hook when outputs are nested in python data structure is "
              "deprecated and will be removed in future versions. This hook will be missing some "
              "grad_output." + tail, FutureWarning)
    elif len(out_fns) > 1:
        _warn("Using a non-full backward hook when outputs are generated by different autograd Nodes is "
              "deprecated and will be removed in future versions. This hook will be missing some "
              "grad_output." + tail, FutureWarning)
    else:
        in_fns = {id(i.grad_fn) for i in ins if i.grad_fn is not None}
        nxt = {id(n) for n, _ in grad_fn.next_functions if n is not None}
        if in_fns != nxt:
            _warn("Using a non-full backward hook when the forward contains multiple autograd Nodes is "
                  "deprecated and will be removed in future versions. This hook will be missing some "
                  "grad_input." + tail, FutureWarning)


_EXTRA_STATE = "_extra_state"   # torch's state_dict key for get_extra_state()'s object


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns (torch's class of the same name)."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s_, n):
    """Indent every line of a child's repr after the first by ``n`` spaces, as torch's
    ``_addindent``: blank lines (an ``extra_repr`` ending in a newline) stay empty."""
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    return first + "\n" + "\n".join(n * " " + line if line.strip() else "" for line in s)


def _typename(v):
    if isinstance(v, Tensor):
        return "torch." + {"float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor",
                           "bool": "BoolTensor", "int32": "IntTensor", "float16": "HalfTensor"}.get(v.dtype.name if hasattr(v.dtype, "name") else "", "Tensor")
    t = type(v)
    mod = t.__module__
    return t.__qualname__ if mod in ("builtins", None) else f"{mod}.{t.__qualname__}"


def _owner_prefix(root, key):
    """The dotted name of the module under ``root`` whose entries ``key`` sits among: follow
    the key's components down through child modules while they name one."""
    parts = key.split(".")
    module, depth = root, 0
    while depth < len(parts) - 1:
        child = module._modules.get(parts[depth])
        if child is None:
            break
        module, depth = child, depth + 1
    return ".".join(parts[:depth])


def _legacy_wrapper(hook, module):
    """``hook`` as a Node hook on the module's output grad_fn. As torch's ``_WrappedHook`` it
    holds the module weakly (the graph does not keep the module alive): once the module is gone
    the hook raises RuntimeError."""
    ref = weakref.ref(module)

    @functools.wraps(hook)   # error messages name the user's hook, as torch's
    def wrapped(grad_input, grad_output):
        m = ref()
        if m is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return hook(m, grad_input, grad_output)
    return wrapped


def _forward_unimplemented(self, *input):
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


def _same_value(d, name, value):
    """Whether setting ``name`` to ``value`` changes nothing observable."""
    if name not in d:
        return False
    old = d[name]
    return old is value or (type(old) is type(value) and type(value) in (int, float, bool, str)
                            and old == value)


_NOT_GIVEN = object()


def _layout_changed(module, name, store, value=_NOT_GIVEN):
    """A parameter, buffer or submodule ``name`` is registered in ``store`` (as ``value``, when
    given). Outside a compiled call, compiled programs re-check the module layout
    (``self.buffers()`` now yields one more); inside one, a new name on a module from before the
    call is a Python side effect the program would not repeat (eager registers one more on every
    call): the call runs eagerly."""
    cap = _state.CAPTURE[0]
    if cap is None:
        if _state.fresh(module.__dict__.get("_parameters")):
            return        # NOTE [objects no trace has seen] in _state.py
        # the object already there registered again (``model.w -= lr * g`` under no_grad
        # assigns the same Parameter back) leaves the layout as it was: no retrace; another
        # one: the store's own write tells (NOTE [layouts come back] in _state.py)
        if value is _NOT_GIVEN or type(store) is not _Registry and store.get(name, _NOT_GIVEN) is not value:
            _state.bump_structure()
    elif name not in store and id(module) not in cap.made_modules:
        cap.python_effect(f"registering '{name}' on a {type(module).__name__} made before the call")


def _stays_in_its_store(d, name, value) -> bool:
    """``module.name = value`` writes only entries of the module's stores (a parameter, buffer
    or submodule set, replaced or set to None; no plain attribute of that name is replaced):
    those stores' writes tell compiled programs (NOTE [layouts come back] in _state.py)."""
    if name in d or any(type(d.get(k)) is not _Registry for k in ("_parameters", "_buffers", "_modules")):
        return False
    if isinstance(value, (Parameter, Module)) or value is None:
        return True
    return name in d["_buffers"]      # a plain tensor over a buffer (else: a plain attribute)


def _layout_removed(module, name):
    """A parameter, buffer or submodule ``name`` is about to leave ``module`` (``del m.lin``,
    ``del seq[1]``, ``ModuleDict.pop``). Outside a compiled call, compiled programs that called
    or read it trace again (eagerly the next call no longer sees it); inside one, removing a
    name from a module made before the call is a side effect a program would not repeat."""
    cap = _state.CAPTURE[0]
    if cap is None:
        d = module.__dict__
        # a store of ours tells when the name leaves it (NOTE [layouts come back] in _state.py)
        if not _state.fresh(d.get("_parameters")) and not any(
                type(d.get(k)) is _Registry and name in d[k] for k in ("_parameters", "_buffers", "_modules")):
            _state.bump_structure()
    elif id(module) not in cap.made_modules:
        cap.python_effect(f"deleting '{name}' from a {type(module).__name__} made before the call")


class _Registry(dict):
    """A module's ``_parameters``, ``_buffers`` or ``_modules``: a dict (torch's type for them)
    that tells compiled programs when code outside a compiled call writes it directly
    (``m._parameters["weight"] = p``, ``del m._buffers["b"]``, as reparametrizing code does
    without ``setattr``): they read the entries the trace found, so they trace again (a program
    would go on reading a replaced parameter still alive elsewhere). Inside a compiled call,
    ``Module.__setattr__`` decides what a write means; reads stay plain dict reads. ``born``:
    the trace epoch of its module's ``__init__`` (NOTE [objects no trace has seen] in _state.py),
    None for a registry made elsewhere."""

    __slots__ = ("born", "__weakref__")     # (NOTE [layouts come back] refers to it weakly)

    def __init__(self, *args, **kwargs):
        dict.__init__(self, *args, **kwargs)
        self.born = None

    def __setitem__(self, k, v):
        if _state.CAPTURE[0] is None:
            old = self.get(k, _ABSENT)
            if old is not v and not _state.fresh(self):
                _state.layout_entry_set(self, k, old, v)     # NOTE [layouts come back] in _state.py
        dict.__setitem__(self, k, v)

    def __delitem__(self, k):
        if _state.CAPTURE[0] is None and k in self and not _state.fresh(self):
            _state.layout_entry_set(self, k, self[k], _ABSENT)
        dict.__delitem__(self, k)

    def _changed(self):
        if _state.CAPTURE[0] is None and not _state.fresh(self):
            _state.bump_structure()

    def pop(self, *args):
        self._changed()
        return dict.pop(self, *args)

    def popitem(self):
        self._changed()
        return dict.popitem(self)

    def clear(self):
        self._changed()
        dict.clear(self)

    def update(self, *args, **kwargs):
        self._changed()
        dict.update(self, *args, **kwargs)

    def setdefault(self, k, default=None):
        if k not in self:
            self._changed()
        return dict.setdefault(self, k, default)

    def __ior__(self, other):
        self.update(other)
        return self


_ABSENT = _state.ABSENT


class _HookDict(OrderedDict):
    """A module's hook table (``_forward_hooks``, ``_backward_pre_hooks``, their flag dicts...):
    the ``OrderedDict`` torch keeps them in, which tells compiled programs when code outside a
    compiled call writes it directly rather than through ``register_*``/``handle.remove()``
    (``m._forward_hooks[h.id] = new_hook`` as torch's dynamo test_hooks_inner does, prune's and
    weight_norm's ``del m._forward_pre_hooks[k]``): a program traced the old hook's math in, so
    it must trace again (it went on running the replaced hook, silently). As ``_Registry``,
    ``born`` included."""

    __slots__ = ("born",)

    def __init__(self, *args, **kwargs):
        OrderedDict.__init__(self, *args, **kwargs)
        self.born = None

    def _changed(self):
        if _state.CAPTURE[0] is None and not _state.fresh(self):
            _state.bump_structure()

    def __setitem__(self, k, v):
        if self.get(k, _ABSENT) is not v:
            self._changed()
        OrderedDict.__setitem__(self, k, v)

    def __delitem__(self, k):
        self._changed()
        OrderedDict.__delitem__(self, k)

    def pop(self, *args):
        self._changed()
        return OrderedDict.pop(self, *args)

    def popitem(self, last=True):
        self._changed()
        return OrderedDict.popitem(self, last)

    def clear(self):
        self._changed()
        OrderedDict.clear(self)

    def update(self, *args, **kwargs):
        self._changed()
        OrderedDict.update(self, *args, **kwargs)

    def setdefault(self, k, default=None):
        if k not in self:
            self._changed()
        return OrderedDict.setdefault(self, k, default)

    def move_to_end(self, k, last=True):
        self._changed()
        OrderedDict.move_to_end(self, k, last)

    def __ior__(self, other):
        self.update(other)
        return self


# a module's hook tables (``_HookDict``s; an older pickle's plain OrderedDicts are converted on loading)
_HOOK_TABLES = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
                "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_backward_pre_hooks",
                "_backward_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
                "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")
_STAMPED = ("_parameters", "_buffers", "_modules") + _HOOK_TABLES


def _method_shadowed(module, name, cap):
    """An instance attribute set or deleted outside a compiled call over one of the class's
    methods (``net.forward = f``, ``del net.forward``): compiled programs that called the
    method trace again (``module.forward`` is not a value the trace guards)."""
    if cap is None and callable(getattr(type(module), name, None)) \
            and not _state.fresh(module.__dict__.get("_parameters")):
        _state.bump_structure()


def _device_position(init):
    """The index among ``init``'s positional parameters (self included) of ``device``, -1 when
    it is keyword-only, None when ``init`` takes no ``device``."""
    code = init.__code__
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    if "device" not in names:
        return None
    k = names.index("device")
    return k if k < code.co_argcount else -1


def _made_on_device(init):
    """``init`` run with its ``device=`` argument as the factories' default device: torch's
    modules pass their factory kwargs to every parameter and buffer they create (``'meta'``
    makes a meta skeleton, ``'cpu'`` keeps a module off the GPU); here one block covers them."""
    k = _device_position(init)

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        dev = kwargs.get("device") if k == -1 or len(args) < k else args[k - 1]
        if dev is None or tracegrad.device(dev) == tracegrad.get_default_device():
            return init(self, *args, **kwargs)
        with tracegrad.device(dev):
            return init(self, *args, **kwargs)
    return __init__


def _overwrite_on_conversion(old, new):
    """Whether ``Module._apply`` makes a new object for a converted tensor instead of replacing the
    old one's ``.data``: under ``tracegrad.__future__.set_overwrite_module_params_on_conversion``,
    or when a 'meta' tensor is involved (torch cannot swap such data in place)."""
    return (_state.FUTURE["overwrite_module_params_on_conversion"]
            or (new.device.type == "meta") != (old.device.type == "meta"))


_TO_SIGNATURES = ("to(device=None, dtype=None, non_blocking=False), to(dtype, non_blocking=False) or "
                  "to(tensor, non_blocking=False)")


def _parse_to(args, kwargs):
    """``(device, dtype, memory_format)`` from ``Module.to``'s three signatures, as torch parses
    them: ``(device, dtype, non_blocking)``, ``(dtype, non_blocking)``, ``(tensor, non_blocking)``.
    TypeError for an argument in the wrong place or of the wrong type (a bool where a dtype
    belongs, a number for a device, a keyword given twice); RuntimeError for ``copy``."""
    kw = dict(kwargs)
    # torch's parser reads Python's number types as dtypes (float: float64, int: int64...)
    py_types = {float: tracegrad.float64, int: tracegrad.int64, bool: tracegrad.bool, complex: tracegrad.complex128}
    args = tuple(py_types[a] if type(a) is type and a in py_types else a for a in args)
    if type(kw.get("dtype")) is type and kw["dtype"] in py_types:
        kw["dtype"] = py_types[kw["dtype"]]
    first = args[0] if args else None
    if type(first) in (float, bool, complex):   # torch's parser reads a Python number as a wrapped 0-d
        first = tracegrad.tensor(first, dtype={float: tracegrad.float64, bool: tracegrad.bool,   # tensor
                                               complex: tracegrad.complex128}[type(first)])
    if isinstance(first, (Tensor, tracegrad.dtype)):
        if "device" in kw or "dtype" in kw:
            raise TypeError(f"to() received an invalid combination of arguments: a dtype or tensor first takes no "
                            f"device=/dtype= keyword; use {_TO_SIGNATURES}")
        device, dtype = (first.device, first.dtype) if isinstance(first, Tensor) else (None, first)
        names, rest = ("non_blocking", "copy"), args[1:]
    else:
        device = dtype = None
        names, rest = ("device", "dtype", "non_blocking", "copy"), args
    if len(rest) > len(names):
        raise TypeError(f"to() received an invalid combination of arguments: too many positional arguments; use "
                        f"{_TO_SIGNATURES}")
    for name, value in zip(names, rest):
        if name in kw:
            raise TypeError(f"to() got multiple values for argument '{name}'")
        kw[name] = value
    device, dtype = kw.pop("device", device), kw.pop("dtype", dtype)
    non_blocking, copy = kw.pop("non_blocking", False), kw.pop("copy", False)
    memory_format = kw.pop("memory_format", None)
    if kw:
        raise TypeError(f"to() received an invalid combination of arguments: unexpected {sorted(kw)}")
    bad = [(n, v) for n, v in (("non_blocking", non_blocking), ("copy", copy)) if not isinstance(v, bool)]
    if dtype is not None and not isinstance(dtype, tracegrad.dtype):
        bad.append(("dtype", dtype))
    if device is not None and (isinstance(device, (bool, float)) or not isinstance(device, (str, int, tracegrad.device))):
        bad.append(("device", device))
    # as torch's parser: memory_format must be a memory_format (an int or string was kept silently)
    if memory_format is not None and not isinstance(memory_format, tracegrad.memory_format):
        bad.append(("memory_format", memory_format))
    if bad:
        name, value = bad[0]
        # a class (np.float32) or another library's object by its name only, not its repr
        what = (f"class {value.__name__}" if isinstance(value, type) else type(value).__name__
                if type(value).__module__.split(".")[0] not in ("builtins", "tracegrad") else
                f"{type(value).__name__} {value!r}")
        raise TypeError(f"to() received an invalid combination of arguments: got {what} "
                        f"for {name}; use {_TO_SIGNATURES}")
    if copy:
        raise RuntimeError(".to() does not accept copy argument (nn.Module.to converts in place)")
    return device, dtype, memory_format


def _register_marked_buffer(module, name, value):
    """``module.name = Buffer(...)``: torch calls ``register_buffer(name, value, persistent)``, but
    a subclass overriding ``register_buffer`` without the ``persistent`` argument gets it called
    with two (persistent assumed; a non-persistent Buffer is then a RuntimeError), as torch."""
    persistent = value.persistent
    reg = module.register_buffer
    if getattr(reg, "__func__", None) is Module.register_buffer \
            or "persistent" in inspect.signature(reg).parameters:
        reg(name, value, persistent)
        return
    if not persistent:
        raise RuntimeError("Registering a non-persistent buffer on a Module subclass that implements "
                           "register_buffer() without the persistent argument is not allowed.")
    reg(name, value)



def _no_device(cls, message):
    """Raise ``cls(message)`` for a device tracegrad does not have (``Module.xpu``/``mtia``/``ipu``)."""
    raise cls(f"{message} (tracegrad has no such device: keep modules on 'cpu')")

class Module:
    """Mirrors ``torch.nn.Module``: base class of all layers. Assigning a ``Parameter``, a
    ``Module`` or (for registered names) a Tensor as an attribute registers it; traversal
    (``named_parameters``...), ``state_dict``, ``train/eval``, ``to``, hooks and ``__call__`` as torch.
    """

    _tracegrad_state_is_captured = True   # its Python state is tracked by compile (_lowering/pystate.py)
    _tracegrad_base_module = True         # compile guards the names subclasses' code reads, not these

    training: bool
    _version = 1
    call_super_init = False
    dump_patches = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None and cls.__module__.startswith("tracegrad.nn") and _device_position(init) is not None:
            cls.__init__ = _made_on_device(init)

    def __init__(self, *args, **kwargs):
        # as torch: with ``call_super_init`` (a mixin after Module in the bases) the arguments go
        # on to the next class in the MRO at the end; without it, arguments are an error
        if not self.call_super_init and (args or kwargs):
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments {args} {kwargs}")
        d = self.__dict__
        if _state.CAPTURE[0] is not None:     # made while tracing: registering on it is no side effect
            _state.CAPTURE[0].made_modules.add(id(self))
        # NOTE [objects no trace has seen] in _state.py; a module initialised again (its
        # ``__init__`` called to reset it) may be in a program: never fresh
        born = None if "_parameters" in d else _state.TRACE_EPOCH[0]
        d["training"] = True
        d["_parameters"] = _Registry()
        d["_buffers"] = _Registry()
        d["_non_persistent_buffers_set"] = set()
        d["_backward_pre_hooks"] = _HookDict()
        d["_backward_hooks"] = _HookDict()
        d["_is_full_backward_hook"] = None
        d["_forward_hooks"] = _HookDict()
        d["_forward_hooks_with_kwargs"] = _HookDict()
        d["_forward_hooks_always_called"] = _HookDict()
        d["_forward_pre_hooks"] = _HookDict()
        d["_forward_pre_hooks_with_kwargs"] = _HookDict()
        d["_state_dict_hooks"] = _HookDict()
        d["_state_dict_pre_hooks"] = _HookDict()
        d["_load_state_dict_pre_hooks"] = _HookDict()
        d["_load_state_dict_post_hooks"] = _HookDict()
        d["_modules"] = _Registry()
        if born is not None:
            for name in _STAMPED:
                d[name].born = born
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward = _forward_unimplemented

    # ---- registration -------------------------------------------------------------------
    def register_buffer(self, name, tensor, persistent=True):
        """Mirrors ``torch.nn.Module.register_buffer``: a named tensor in state_dict (unless
        ``persistent=False``) that ``to()`` converts; not a parameter. KeyError on bad names;
        TypeError for a value that is neither a Tensor, a tensor-like (``__torch_function__``) nor None."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        # as torch, a tensor-like object (one taking part in __torch_function__ overrides) may
        # be a buffer too
        if tensor is not None and not isinstance(tensor, Tensor) and not hasattr(tensor, "__torch_function__"):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            f"(torch Tensor or None required)")
        # a Buffer (a marked plain tensor) is stored as it is, as torch: ``m.b = buf`` then
        # ``m.b is buf``, and ``self.b2 = self.b1`` registers a second buffer; ``persistent`` is
        # this call's argument (``module.b = Buffer(...)`` passes the Buffer's own)
        tensor = _run_registration_hooks(_global_buffer_registration_hooks, self, name, tensor)
        _layout_changed(self, name, self._buffers)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Mirrors ``torch.nn.Module.register_parameter``. TypeError if ``param`` is not a
        Parameter or None; ValueError for a non-leaf."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        _layout_changed(self, name, self._parameters, param)
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            f"(torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                             f"the value in the forward() method.")
        param = _run_registration_hooks(_global_parameter_registration_hooks, self, name, param)
        self._parameters[name] = param

    def add_module(self, name, module):
        """Mirrors ``torch.nn.Module.add_module``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        module = _run_registration_hooks(_global_module_registration_hooks, self, name, module)
        _layout_changed(self, name, self._modules)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        """Mirrors ``torch.nn.Module.get_submodule``: ``'a.b.c'`` -> that module. AttributeError if absent."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        """Mirrors ``torch.nn.Module.set_submodule``: ``'a.b.c'`` names the submodule to (re)bind;
        its parent must exist. ValueError for an empty target or a non-Module; AttributeError when
        the parent lacks the name (``strict=True``) or the name holds something else than a Module."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError("`" + name + "` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target):
        """Mirrors ``torch.nn.Module.get_parameter``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        p = getattr(mod, name)
        if not isinstance(p, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return p

    def get_buffer(self, target):
        """Mirrors ``torch.nn.Module.get_buffer``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(mod, name)

    # ---- attributes ---------------------------------------------------------------------
    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        cap = _state.CAPTURE[0]
        if cap is not None:
            tensors = isinstance(value, (Tensor, Module)) or is_tensor_container(value)
            if tensors or isinstance(d.get(name), (Tensor, Module)) or is_tensor_container(d.get(name)) \
                    or name in d.get("_parameters", ()) or name in d.get("_buffers", ()) or name in d.get("_modules", ()):
                cap.see_attribute([d] + [d[k] for k in ("_parameters", "_buffers", "_modules") if k in d])
            if isinstance(value, (Module, Parameter)):      # NOTE [a layout the trace changed]
                held = next((s[name] for s in (d.get("_modules") or {}, d.get("_parameters") or {})
                             if name in s), d.get(name))
                if held is None:
                    cap.see_layout_filled(self)
            if name == "training":
                if "training" in d:
                    cap.see_module(self)   # its flag before the compiled function changed it
            elif not tensors and not _same_value(d, name, value) and id(self) not in cap.made_modules \
                    and not cap.counter_store(d, name, value):
                # ``self.mode = "x"`` in a forward: eager does it every call, a program never (a
                # module made inside the call, ``nn.CrossEntropyLoss()(pred, y)``, is new on every
                # call: setting its attributes is no side effect; ``self.calls += 1`` is a counter
                # each run repeats: NOTE [Python counters] in _lowering/pystate.py)
                cap.python_effect(f"setting attribute '{name}' of {type(self).__name__}")
        if isinstance(value, (Tensor, Module)) or name in d.get("_parameters", ()) \
                or name in d.get("_modules", ()) or name in d.get("_buffers", ()):
            # compiled calls re-check the module layout; but a trace rebinding a plain tensor
            # attribute (``self.src_mask = mask``) leaves the other programs valid: they read
            # such attributes by place (NOTE [module tensor attributes], _lowering/carry.py)
            # Outside a trace the same holds when no live compiled program reads the old tensor
            # (its storage is not held): a program that read the attribute at all read it as
            # lifted state, so the rest only guard its shape and dtype. An eager model keeping
            # its batch statistics as attributes (``self.running_mean = m``) then does not send
            # every compiled step of another model back to tracing (e-hulten/real-nvp-2d).
            old = d.get(name)
            # (inside a trace, ``self.last = out.detach()`` over None is such a rebind too: a
            # program traced for the None reads it as a value, NOTE [places that held no
            # tensor] in _lowering/trace.py)
            rebind = type(value) is Tensor and (type(old) is Tensor or (cap is not None and old is None))
            # the object already registered under ``name`` put back (``model.w -= lr * g``
            # under no_grad is ``model.w = model.w.__isub__(...)``, the same Parameter): the
            # layout is unchanged, and bumping made every later compiled call trace again
            same = value is not None and any(value is s.get(name) for s in (
                d.get("_parameters") or {}, d.get("_buffers") or {}, d.get("_modules") or {}))
            if not same and not (rebind and (cap is not None or id(old._st) not in _state.HELD_STORAGES)) \
                    and not (cap is None and _stays_in_its_store(d, name, value)) \
                    and not _state.fresh(d.get("_parameters")):
                _state.bump_structure()

        def remove_from(*stores):
            for s in stores:
                if name in s:
                    if isinstance(s, dict):
                        del s[name]
                    else:
                        s.discard(name)

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                f"(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(d, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = _run_registration_hooks(_global_module_registration_hooks, self, name, value)
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                    f"(torch.nn.Module or None expected)")
                modules[name] = _run_registration_hooks(_global_module_registration_hooks, self, name, value)
            else:
                buffers = d.get("_buffers")
                marked = isinstance(value, Buffer) or getattr(value, "_is_buffer", False)   # UninitializedBuffer too
                if marked or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                        f"(torch.nn.Buffer, torch.Tensor or None expected)")
                    if marked:
                        if buffers is None:
                            raise AttributeError("cannot assign buffer before Module.__init__() call")
                        # as torch, an existing plain attribute of that name is a KeyError (from
                        # register_buffer), not silently replaced
                        _register_marked_buffer(self, name, value)
                    else:
                        buffers[name] = _run_registration_hooks(_global_buffer_registration_hooks, self, name,
                                                                value)
                else:
                    _method_shadowed(self, name, cap)
                    object.__setattr__(self, name, value)

    def __delattr__(self, name):
        d = self.__dict__
        if name in d.get("_parameters", ()) or name in d.get("_buffers", ()) or name in d.get("_modules", ()):
            _layout_removed(self, name)
        if name in d.get("_parameters", ()):
            del self._parameters[name]
        elif name in d.get("_buffers", ()):
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in d.get("_modules", ()):
            del self._modules[name]
        else:
            _method_shadowed(self, name, _state.CAPTURE[0])
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self))
        keys += list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __getstate__(self):
        """The module's ``__dict__`` with its registries as the plain dicts torch pickles (a
        whole-module checkpoint names no tracegrad-only class); ``__setstate__`` makes them
        registries again."""
        state = dict(self.__dict__)
        # as torch drops ``_compiled_call_impl``: ``Module.compile()``'s compiled call (programs,
        # caches) is no state; the loaded module runs eagerly until compiled again
        state.pop("_compiled_call", None)
        for name in ("_parameters", "_buffers", "_modules"):
            if type(state.get(name)) is _Registry:
                state[name] = dict(state[name])
        # the hook tables stay the ``_HookDict``s they are: a handle pickled with the module (a
        # lazy module's ``_initialize_hook``) must still refer to the module's own table after
        # loading (a copy here made ``handle.remove()`` miss it)
        return state

    def __setstate__(self, state):
        """Mirrors ``torch.nn.Module.__setstate__``: a module pickled before some hook table
        existed (an older save) gets that table empty, so hooks and state_dict loading work."""
        self.__dict__.update(state)
        d = self.__dict__
        for name in _HOOK_TABLES:
            if name not in d:
                d[name] = _HookDict()
            elif type(d[name]) is OrderedDict:
                d[name] = _HookDict(d[name])
        d.setdefault("_non_persistent_buffers_set", set())
        for name in ("_parameters", "_buffers", "_modules"):
            if name in d and type(d[name]) is not _Registry:
                d[name] = _Registry(d[name])
        d.setdefault("_is_full_backward_hook", None)

    # ---- traversal ----------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in mods:
            for k, v in get_members(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse=True):
        """Mirrors ``torch.nn.Module.parameters``: each Parameter once, registration order."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """Mirrors ``torch.nn.Module.named_parameters``: ``('fc.weight', Parameter)`` pairs."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        """Mirrors ``torch.nn.Module.buffers``."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """Mirrors ``torch.nn.Module.named_buffers`` (non-persistent buffers included)."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        """Mirrors ``torch.nn.Module.children``."""
        for _, m in self.named_children():
            yield m

    def named_children(self):
        """Mirrors ``torch.nn.Module.named_children``: direct submodules, each once."""
        memo = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def modules(self, remove_duplicate=True):
        """Mirrors ``torch.nn.Module.modules``: self first, then every submodule once (preorder);
        with ``remove_duplicate=False`` a module reachable by several paths comes once per path."""
        for _, m in self.named_modules(remove_duplicate=remove_duplicate):
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Mirrors ``torch.nn.Module.named_modules``: ``('', self)`` then ``('a.b', module)`` pairs."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    __hash__ = object.__hash__

    # ---- modes and conversion -----------------------------------------------------------
    def train(self, mode=True):
        """Mirrors ``torch.nn.Module.train``: sets ``training`` here and in every submodule."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        """Mirrors ``torch.nn.Module.eval``: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Mirrors ``torch.nn.Module.requires_grad_``."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Mirrors ``torch.nn.Module.zero_grad``: grads to None (default) or zeroed in place."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g._set_requires_grad(False)
                    g.zero_()

    def _apply(self, fn, recurse=True):
        if recurse:
            for m in self.children():
                m._apply(fn)
        for name, p in list(self._parameters.items()):
            if p is None:
                continue
            with tracegrad.no_grad():
                new = fn(p)
            grad = p.grad
            swap = _state.FUTURE["swap_module_params_on_conversion"]
            if swap:
                # as torch under set_swap_module_params_on_conversion(True): the converted tensor is
                # swapped into the Parameter object itself (torch.utils.swap_tensors), so references
                # held to it see the new dtype/device; a graph built before the swap is poisoned
                # (its AccumulateGrad raises when backward reaches it)
                from tracegrad.utils._swap import swap_tensors
                swap_tensors(p, Parameter(new, requires_grad=p.requires_grad))
            elif new is not p and _overwrite_on_conversion(p, new):
                p = self._parameters[name] = type(p)(new, p.requires_grad)
            elif new is not p:
                p.data = new
            if grad is not None:
                with tracegrad.no_grad():
                    g = fn(grad)
                if swap:
                    swap_tensors(grad, g.detach().requires_grad_(grad.requires_grad))
                    p._grad = grad
                elif g is not grad and _overwrite_on_conversion(grad, g):
                    p._grad = g._set_requires_grad(grad.requires_grad)
                elif g is not grad:
                    grad.data = g   # as torch: the .grad object is kept, its data replaced
                    p._grad = grad
        for k, b in self._buffers.items():
            if b is not None:
                self._buffers[k] = fn(b)
        return self

    def apply(self, fn):
        """Mirrors ``torch.nn.Module.apply``: ``fn(m)`` on every submodule (children first), then self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """Mirrors ``torch.nn.Module.to(device=None, dtype=None, non_blocking=False)`` / ``to(dtype,
        non_blocking)`` / ``to(tensor)``: converts floating parameters and buffers in place
        (parameters keep their identity); ``memory_format`` lays out the 4-d and 5-d ones
        (``Tensor.to(memory_format=...)``); ``non_blocking`` is accepted and has no effect.
        TypeError for a non-floating dtype, a number where a device belongs or an unknown
        keyword; UserWarning for a complex dtype (as torch)."""
        device, dtype, memory_format = _parse_to(args, kwargs)
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")
        if dtype is not None and dtype.is_complex:
            _warn("Complex modules are a new feature under active development whose design may change, "
                  "and some modules might not work as expected when using complex tensors as parameters "
                  "or buffers. Report a complex module that does not work as expected.")

        def convert(t):
            d = dtype if (dtype is not None and (t.is_floating_point() or t.is_complex())) else None
            out = t
            if d is not None and t.dtype is not d:
                out = t.to(d)
            if device is not None:
                try:
                    out = out.to(device)
                except NotImplementedError as e:
                    # as torch: a module built on the meta device has no data to move; name the
                    # API that materializes it instead
                    if str(e) != "Cannot copy out of meta tensor; no data!":
                        raise
                    raise NotImplementedError(
                        f"{e} Please use torch.nn.Module.to_empty() instead of torch.nn.Module.to() when moving "
                        f"module from meta to a different device.") from None
            if memory_format is not None and t.dim() in (4, 5):   # as torch: 4-d and 5-d tensors only
                out = out.to(memory_format=memory_format)
            return out
        return self._apply(convert)

    def float(self):
        """Mirrors ``torch.nn.Module.float``."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        """Mirrors ``torch.nn.Module.double``."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        """Mirrors ``torch.nn.Module.half``."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        """Mirrors ``torch.nn.Module.bfloat16``: floating parameters and buffers to bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def _replicate_for_data_parallel(self):
        """Mirrors torch's private ``Module._replicate_for_data_parallel`` (DataParallel's
        ``replicate`` and code copying it): a shallow copy, marked ``_is_replica``, whose own
        parameter dict is empty -- the replicating code sets each parameter as a plain tensor
        attribute (a view of the original, on the autograd graph); buffer and submodule dicts
        are copies."""
        replica = self.__new__(type(self))
        d = replica.__dict__
        d.update(self.__dict__)
        d["_parameters"] = _Registry()
        d["_buffers"] = _Registry(self._buffers)
        d["_modules"] = _Registry(self._modules)
        d["_is_replica"] = True
        return replica

    def share_memory(self):
        """Mirrors ``torch.nn.Module.share_memory``: ``share_memory_()`` on every parameter, its
        ``.grad`` and every buffer (in place; identities kept). Returns ``self``. The memory is not
        shared between processes in tracegrad (see ``Tensor.share_memory_``, which warns)."""
        return self._apply(lambda t: t.share_memory_())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def xpu(self, device=None):
        """Mirrors ``torch.nn.Module.xpu``: tracegrad has no XPU device, so a module with parameters
        or buffers raises torch's AssertionError (as a torch built without XPU); one without is
        returned as is. (Missing before: AttributeError.)"""
        return self._apply(lambda t: _no_device(AssertionError, "Torch not compiled with XPU enabled"))

    def mtia(self, device=None):
        """Mirrors ``torch.nn.Module.mtia`` (see ``xpu``): AssertionError, no MTIA device."""
        return self._apply(lambda t: _no_device(AssertionError, "Torch not compiled with MTIA enabled"))

    def ipu(self, device=None):
        """Mirrors ``torch.nn.Module.ipu`` (see ``xpu``): RuntimeError, as torch, no IPU device."""
        return self._apply(lambda t: _no_device(RuntimeError, "PyTorch is not linked with support for ipu devices"))

    def type(self, dst_type):
        """Mirrors ``torch.nn.Module.type``: every parameter and buffer (integer ones too) cast to
        ``dst_type``, a dtype or a type string such as ``'torch.DoubleTensor'``."""
        return self._apply(lambda t: t.type(dst_type))

    def to_empty(self, *, device, recurse=True):
        """Mirrors ``torch.nn.Module.to_empty``: parameters and buffers replaced by uninitialised
        tensors of the same shape and dtype on ``device`` (parameters keep their identity).
        ``device`` is a required keyword, as torch's (``to_empty()`` alone is a TypeError, and
        ``device=None`` keeps each tensor's device)."""
        return self._apply(lambda t: tracegrad.empty_like(t, device=device), recurse=recurse)

    def get_extra_state(self):
        """Mirrors ``torch.nn.Module.get_extra_state``: override it (with ``set_extra_state``) to
        save any picklable object under ``'<prefix>_extra_state'`` in ``state_dict``. The base
        method raises RuntimeError: it is only called when overridden."""
        raise RuntimeError("Module.get_extra_state() was called without being overridden; override it in the "
                           "module to store extra state in state_dict")

    def set_extra_state(self, state):
        """Mirrors ``torch.nn.Module.set_extra_state``: receives, on ``load_state_dict``, the object
        ``get_extra_state`` returned. The base method raises RuntimeError."""
        raise RuntimeError("Module.set_extra_state() was called without being overridden; override it together "
                           "with get_extra_state")

    def _overrides(self, name):
        return getattr(type(self), name, None) is not getattr(Module, name)

    # ---- state dict ---------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if self._overrides("get_extra_state"):
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """Mirrors ``torch.nn.Module.state_dict``: ordered ``{'fc.weight': tensor}`` of parameters
        and persistent buffers (detached unless ``keep_vars``)."""
        if args:
            # torch's first sentence (tests match on it), then which keywords to pass
            _warn("Positional args are being deprecated, use kwargs instead. Module.state_dict takes "
                  "destination=, prefix= and keep_vars= as keywords.", FutureWarning)
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()   # each module's version, read back by loads
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        d = self.__dict__
        for h in tuple(d.get("_state_dict_pre_hooks", {}).values()):
            _state.note_hook("state_dict", h.fn)   # in a compiled call: traced or a graph break
            h.fn(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for h in tuple(d.get("_state_dict_hooks", {}).values()):
            _state.note_hook("state_dict", h.fn)
            r = h.fn(self, destination, prefix, local_metadata)
            if r is not None:
                if not h.with_kwargs:   # the public post-hook must edit in place
                    raise RuntimeError("state_dict post-hook must return None; edit state_dict in place")
                destination = r
        return destination

    def _upgrade_state_dict(self, state_dict, prefix, local_metadata):
        """Bring this module's entries of a state dict saved by an older version of the module
        (``local_metadata['version']``, None when the dict carries no metadata) up to date, in
        place, before loading. The part of torch's ``_load_from_state_dict`` that classes with a
        ``_version`` above 1 override; nothing to do here."""

    def _local_state(self):
        local = dict(self._parameters)
        local.update({k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set})
        return {k: v for k, v in local.items() if v is not None}

    def _scan_local(self, state_dict, p, assign, missing, errors, todo, expected):
        """Check this module's own entries (not its children's) of ``state_dict`` under prefix
        ``p``: appends missing keys and error messages, ``(module, name, current, source)`` copies
        to make, and the keys it claims to ``expected``."""
        for name, t in self._local_state().items():
            key = p + name
            expected.add(key)
            if key not in state_dict:
                missing.append(key)
                continue
            src = state_dict[key]
            if not isinstance(src, Tensor):
                errors.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                              f"object from checkpoint but received {type(src)}")
                continue
            if is_lazy(t):
                if not is_lazy(src):   # a load pre-hook materializes a lazy module's placeholders first
                    errors.append(f"{key}: cannot load into an uninitialized parameter or buffer")
                continue   # placeholder onto placeholder: it stays uninitialized
            if t.dim() == 0 and tuple(src.shape) == (1,):
                # torch loads a one-element 1-d entry into a 0-d parameter or buffer (checkpoints
                # of torch 0.3 kept scalars, e.g. num_batches_tracked, as shape [1])
                src = src[0]
            if tuple(src.shape) != tuple(t.shape):   # (a placeholder's shape raises torch's error)
                errors.append(f"size mismatch for {key}: copying a param with shape {src.shape} from checkpoint, "
                              f"the shape in current model is {t.shape}.")
                continue
            if t.device.type == "meta" and src.device.type != "meta" and not assign:
                _warn(f"for {key}: copying from a non-meta parameter in the checkpoint to a meta parameter "
                      "in the current model, which is a no-op. (Did you mean to pass `assign=True` to "
                      "assign items in the state dictionary to their corresponding key in the module "
                      "instead of copying them in place?)", UserWarning)
            todo.append((self, name, t, src))
        if self._overrides("set_extra_state"):
            key = p + _EXTRA_STATE
            if key in state_dict:
                expected.add(key)
                todo.append((self, _EXTRA_STATE, None, state_dict[key]))
            else:
                missing.append(key)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """Mirrors ``torch.nn.Module._load_from_state_dict``: load this module's own parameters,
        persistent buffers and extra state (not its children's) from the entries of ``state_dict``
        under ``prefix``, appending to ``missing_keys``/``unexpected_keys`` (strict only) and
        ``error_msgs`` instead of raising. ``load_state_dict`` calls it only for modules that
        override it; an override may call it through ``super()``."""
        todo, claimed = [], set()
        self._scan_local(state_dict, prefix, False, missing_keys, error_msgs, todo, claimed)
        if strict:
            unexpected_keys.extend(k for k in state_dict if k.startswith(prefix) and k not in claimed
                                   and k[len(prefix):].split(".", 1)[0] not in self._modules)
        self._copy_loaded(todo, False, self._get_name())

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Mirrors ``torch.nn.Module.load_state_dict``: copies tensors into parameters and buffers
        (under no_grad). Returns ``_IncompatibleKeys(missing_keys, unexpected_keys)``.
        Raises RuntimeError naming missing/unexpected keys (strict) and size mismatches.
        Differs from torch: nothing is copied when an error is raised (torch copies what it can)."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        meta = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)   # hooks may edit the copy, never the caller's dict
        missing, unexpected, errors, todo = [], [], [], []
        expected = set()
        modules = list(self.named_modules(remove_duplicate=False))
        for mprefix, module in modules:
            p = mprefix + "." if mprefix else ""
            local_meta = meta.get(mprefix, {}) if meta is not None else {}
            module._upgrade_state_dict(state_dict, p, local_meta)
            pre_hooks = tuple(module.__dict__.get("_load_state_dict_pre_hooks", {}).values())
            override = module._overrides("_load_from_state_dict")
            # as torch, a submodule's pre-hooks and loader see only the entries under its prefix
            # (a copy); what they change there is written back for the modules after it
            local = (state_dict if not p or not (pre_hooks or override)
                     else OrderedDict((k, v) for k, v in state_dict.items() if k.startswith(p)))
            for h in pre_hooks:
                _state.note_hook("load_state_dict", h.fn)
                hook_args = (local, p, local_meta, True, missing, unexpected, errors)
                h.fn(module, *hook_args) if h.with_kwargs else h.fn(*hook_args)
            if override:
                # a module with its own loader reads (and checks) its entries itself, as torch
                # calls it: the keys under its prefix that are not its children's are its own
                module._load_from_state_dict(local, p, local_meta, strict, missing, unexpected, errors)
            if local is not state_dict:
                for k in [k for k in state_dict if k.startswith(p) and k not in local]:
                    del state_dict[k]
                state_dict.update((k, v) for k, v in local.items() if k.startswith(p))
            if override:
                expected.update(k for k in state_dict
                                if k.startswith(p) and k[len(p):].split(".", 1)[0] not in module._modules)
                continue
            module._scan_local(state_dict, p, assign, missing, errors, todo, expected)
            # keys under this module's prefix that no module claims are unexpected
        # torch reports them module by module (pre-order), each module's in the dict's order
        order = {}
        for i, (mprefix, _) in enumerate(modules):
            order.setdefault(mprefix, i)
        unexpected.extend(sorted((k for k in state_dict if k not in expected),
                                 key=lambda k: order[_owner_prefix(self, k)]))
        post = [m for _, m in reversed(modules) if m.__dict__.get("_load_state_dict_post_hooks")]
        if post:
            # torch runs post-hooks on the loaded module, before the strict check (they may edit
            # the incompatible keys): copy first, then hooks, then the strict errors
            if errors:
                raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                    self._get_name(), "\n\t".join(errors)))
            self._copy_loaded(todo, assign, self._get_name())
            keys = _IncompatibleKeys(missing, unexpected)
            for m in post:
                for h in tuple(m._load_state_dict_post_hooks.values()):
                    _state.note_hook("load_state_dict", h.fn)
                    if h.fn(m, keys) is not None:
                        # torch asserts: AssertionError, raised explicitly so ``python -O`` keeps it
                        raise AssertionError("load_state_dict post-hook must return None; edit the incompatible "
                                             "keys in place")
            todo = []
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(self._get_name(), "\n\t".join(errors)))
        self._copy_loaded(todo, assign, self._get_name())
        return _IncompatibleKeys(missing, unexpected)

    @staticmethod
    def _copy_loaded(todo, assign, owner):
        with tracegrad.no_grad():
            for module, name, t, src in todo:
                if t is None:
                    module.set_extra_state(src)
                elif _state.FUTURE["swap_module_params_on_conversion"]:
                    # torch then swaps what ``t.module_load(src, assign)`` returns (a Tensor subclass
                    # may override it) into the module's own object (torch.utils.swap_tensors): the
                    # Parameter/buffer objects stay, references held to them see the loaded values,
                    # and a Parameter keeps its requires_grad
                    from tracegrad.utils._swap import swap_tensors
                    try:
                        loaded = t.module_load(src, assign=assign)
                        if loaded is t or loaded is src:
                            raise RuntimeError("module_load returned one of self or other, please .detach() the "
                                               "result if returning one of the inputs in module_load")
                        if isinstance(t, Parameter):
                            if isinstance(loaded, Parameter):
                                loaded.requires_grad_(t.requires_grad)
                            else:
                                loaded = Parameter(loaded, requires_grad=t.requires_grad)
                        swap_tensors(t, loaded)
                    except Exception as e:
                        # torch reports it as a load_state_dict error naming the entry
                        raise RuntimeError(
                            f"Error(s) in loading state_dict for {owner}:\n\tWhile swapping the parameter named "
                            f'"{name}", whose dimensions in the model are {t.shape} and whose dimensions in the '
                            f"checkpoint are {src.shape}, an exception occurred : {e.args}.") from e
                elif assign:
                    # through ``setattr``, as torch: registration hooks run, and compiled programs
                    # that baked in the old tensor see the module's layout changed (they trace again)
                    if name in module._parameters:
                        if isinstance(src, Parameter):   # a Parameter is taken as it is (keep_vars dicts)
                            setattr(module, name, src._set_requires_grad(t.requires_grad))
                        else:
                            setattr(module, name, Parameter(src, requires_grad=t.requires_grad))
                    else:
                        setattr(module, name, src)
                else:
                    t.copy_(src)

    # ---- hooks --------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Mirrors ``torch.nn.Module.register_forward_pre_hook``: ``hook(module, args)`` may return a
        new args tuple (a non-tuple is wrapped); with_kwargs: ``hook(module, args, kwargs)`` returns
        ``(args, kwargs)`` or None."""
        return _add(self._forward_pre_hooks, hook, prepend,
                    ((self._hook_dict("_forward_pre_hooks_with_kwargs"), with_kwargs),))

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """Mirrors ``torch.nn.Module.register_forward_hook``: ``hook(module, args, output)`` (with_kwargs:
        ``hook(module, args, kwargs, output)``) may return a new output; always_call runs it even
        if forward raised."""
        return _add(self._forward_hooks, hook, prepend,
                    ((self._hook_dict("_forward_hooks_with_kwargs"), with_kwargs),
                     (self._hook_dict("_forward_hooks_always_called"), always_call)))

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """Mirrors ``torch.nn.Module.register_full_backward_pre_hook``: ``hook(module, grad_output)``
        runs when the gradients w.r.t. the module's outputs are known; may return a new grad_output."""
        return _add(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """Mirrors ``torch.nn.Module.register_full_backward_hook``: ``hook(module, grad_input,
        grad_output)`` runs when the gradients w.r.t. the module's inputs are known; may return a
        new grad_input tuple. RuntimeError if legacy backward hooks are registered too."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = True
        return _add(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook):
        """Mirrors the deprecated ``torch.nn.Module.register_backward_hook``: ``hook(module, grad_input,
        grad_output)`` hangs on the grad_fn of the module's (first) output, so ``grad_input`` are that
        node's input grads (Linear: bias, input, weight.t()). RuntimeError if full hooks are registered."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = False
        return _add(self._backward_hooks, hook)

    def register_state_dict_pre_hook(self, hook):
        """Mirrors ``torch.nn.Module.register_state_dict_pre_hook``: ``hook(module, prefix,
        keep_vars)`` runs before the module's entries are saved."""
        return _add(self._hook_dict("_state_dict_pre_hooks"), _Hook(hook))

    def register_state_dict_post_hook(self, hook):
        """Mirrors ``torch.nn.Module.register_state_dict_post_hook``: ``hook(module, state_dict,
        prefix, local_metadata)`` runs after the module (and its children) saved; edits in place.
        AttributeError for a hook that is not callable (torch marks the hook with an attribute
        first, which a number or string cannot take)."""
        if not callable(hook):
            raise AttributeError(f"register_state_dict_post_hook: '{type(hook).__name__}' object has no attribute "
                                 "'_from_public_api'; pass a callable hook(module, state_dict, prefix, local_metadata)")
        return _add(self._hook_dict("_state_dict_hooks"), _Hook(hook))

    def _register_state_dict_hook(self, hook):
        """Mirrors torch's private ``_register_state_dict_hook``: as the post-hook, but a returned
        dict replaces the state_dict."""
        return _add(self._hook_dict("_state_dict_hooks"), _Hook(hook, with_kwargs=True))

    def register_load_state_dict_pre_hook(self, hook):
        """Mirrors ``torch.nn.Module.register_load_state_dict_pre_hook``: ``hook(module, state_dict,
        prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)`` runs before
        the module's entries are checked; it may edit ``state_dict`` (a copy of the caller's)."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """Mirrors torch's ``_register_load_state_dict_pre_hook``: without ``with_module`` the hook
        gets no module argument. The module is passed at call time (no reference is kept)."""
        return _add(self._hook_dict("_load_state_dict_pre_hooks"), _Hook(hook, with_kwargs=bool(with_module)))

    def register_load_state_dict_post_hook(self, hook):
        """Mirrors ``torch.nn.Module.register_load_state_dict_post_hook``: ``hook(module,
        incompatible_keys)`` runs after the module loaded, before the strict check; it may edit
        ``incompatible_keys.missing_keys``/``unexpected_keys`` in place and must return None."""
        return _add(self._hook_dict("_load_state_dict_post_hooks"), _Hook(hook))

    def _hook_dict(self, name):
        d = self.__dict__.get(name)
        if d is None:   # a module pickled before the dict existed
            d = self.__dict__[name] = _HookDict()
        return d

    def _backward_hook_lists(self):
        pre = [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
        full, legacy = [], []
        if _global_is_full_backward_hook[0] is True:
            full += list(_global_backward_hooks.values())
        elif _global_is_full_backward_hook[0] is False:
            legacy += list(_global_backward_hooks.values())
        if self._is_full_backward_hook is True:
            full += list(self._backward_hooks.values())
        elif self._is_full_backward_hook is False:
            legacy += list(self._backward_hooks.values())
        return full, pre, legacy

    # ---- call ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        cc = self.__dict__.get("_compiled_call")
        if cc is not None:
            return cc(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        if _state.CAPTURE[0] is not None:
            _state.CAPTURE[0].see_module(self)   # its ``training`` flag is guarded
        forward = self.forward
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks or self._backward_pre_hooks
                or _global_forward_hooks or _global_forward_pre_hooks or _global_backward_hooks
                or _global_backward_pre_hooks):
            return forward(*args, **kwargs)
        if _state.CAPTURE[0] is not None:
            for d in (_global_forward_pre_hooks, self._forward_pre_hooks, _global_forward_hooks,
                      self._forward_hooks, _global_backward_pre_hooks, self._backward_pre_hooks,
                      _global_backward_hooks, self._backward_hooks):
                for h in d.values():
                    _state.note_hook("module", h, self)
        full, pre, legacy = [], [], []
        if self._backward_hooks or self._backward_pre_hooks or _global_backward_hooks or _global_backward_pre_hooks:
            full, pre, legacy = self._backward_hook_lists()
        called = set()
        result = None
        pre_kw = self._hook_dict("_forward_pre_hooks_with_kwargs")
        kw = (_global_forward_hooks_with_kwargs, self._hook_dict("_forward_hooks_with_kwargs"))
        always = (_global_forward_hooks_always_called, self._hook_dict("_forward_hooks_always_called"))
        try:
            for hid, h in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
                if hid in pre_kw:
                    r = h(self, args, kwargs)
                    if r is not None:
                        if isinstance(r, tuple) and len(r) == 2:
                            args, kwargs = r
                        else:
                            raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {r}.")
                else:
                    r = h(self, args)
                    if r is not None:
                        args = r if isinstance(r, tuple) else (r,)
            bw = None
            if full or pre:
                bw = BackwardHook(self, full, pre)
                args = bw.setup_input_hook(args)
            result = forward(*args, **kwargs)
            for hid, h in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
                if hid in always[0] or hid in always[1]:
                    called.add(hid)
                r = h(self, args, kwargs, result) if hid in kw[0] or hid in kw[1] else h(self, args, result)
                if r is not None:
                    result = r
            if bw is not None:
                if not isinstance(result, (Tensor, tuple)):
                    _warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                          f"Tensors but received {type(result)}")
                result = bw.setup_output_hook(result)
            if legacy:
                var = result
                while not isinstance(var, Tensor):
                    var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) else var[0]
                grad_fn = var.grad_fn
                if grad_fn is not None:
                    for h in legacy:
                        grad_fn.register_hook(_legacy_wrapper(h, self))
                    _warn_non_full_backward_hook(args, result, grad_fn)
            return result
        except Exception:
            for hid, h in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
                if (hid in always[0] or hid in always[1]) and hid not in called:
                    try:
                        r = h(self, args, kwargs, result) if hid in kw[0] or hid in kw[1] else h(self, args, result)
                        if r is not None:
                            result = r
                    except Exception as e:  # noqa: BLE001 -- torch silences these too
                        _warn("module forward hook with ``always_call=True`` raised an exception that was "
                              f"silenced as another error was raised in forward: {e}")
            raise

    def compile(self, *args, **kwargs):
        """Mirrors ``torch.nn.Module.compile``: from now on this module's calls (hooks
        included) run through ``tracegrad.compile(..., *args, **kwargs)``; the module itself
        is unchanged (same parameters, same ``state_dict`` keys)."""
        self.__dict__["_compiled_call"] = tracegrad.compile(_BoundCall(self), *args, **kwargs)

    def _tracegrad_compiled_wrapper(self, compiled_cls, options):
        # tracegrad.compile(module) lands here: compile sits below nn and cannot import it
        # torch compiles the module's own ``__call__`` when its class overrides it
        return OptimizedModule(self, compiled_cls(_BoundCall(self, type(self).__call__ is not Module.__call__),
                                                  **options), (compiled_cls, options))

    # ---- repr ---------------------------------------------------------------------------
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self) -> str:
        """Mirrors ``torch.nn.Module.extra_repr``: the text inside ``Name(...)``; '' by default."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = ["(" + k + "): " + _addindent(repr(m), 2) for k, m in self._modules.items()]
        lines = extra_lines + child_lines
        s = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                s += extra_lines[0]
            else:
                s += "\n  " + "\n  ".join(lines) + "\n"
        return s + ")"


class _BoundCall:
    """``module._call_impl`` as a plain callable (what a compiled module runs), or the module's
    own ``__call__`` (``whole``: its class overrides it)."""

    def __init__(self, module, whole=False):
        self.module, self.whole = module, whole
        self.__qualname__ = f"{type(module).__name__}.__call__"

    def __call__(self, *args, **kwargs):
        if self.whole:
            return self.module(*args, **kwargs)
        return self.module._call_impl(*args, **kwargs)


def _rebuild_optimized(mod, how):
    """Unpickles an ``OptimizedModule``: ``mod`` compiled again as it was (``how``)."""
    return mod._tracegrad_compiled_wrapper(*how)


class OptimizedModule(Module):
    """What ``tracegrad.compile(module)`` returns, as torch's ``OptimizedModule``: calls go
    through the compiled program; the original module is ``_orig_mod`` (so ``state_dict`` keys
    gain the ``_orig_mod.`` prefix, as in torch) and its attributes are reachable directly.
    As torch's, it is a view of the original: setting or deleting an attribute (``cm.k = 3``,
    ``cm.training = False``) does it on the original module, which the compiled calls run,
    except for the wrapper's own names and names its class defines."""

    _OWN = frozenset({"_orig_mod", "forward", "_compiled_call", "__dict__"})

    def __init__(self, mod, compiled_call, how=None):
        super().__init__()
        self._orig_mod = mod
        self.__dict__["_compiled_call"] = compiled_call
        self.__dict__["_how"] = how

    def __reduce__(self):
        # torch pickles (the original module, how it was compiled) and compiles again on load:
        # the compiled call (programs, caches) is no state. ``how`` is (compiled class, options)
        # as ``tracegrad.compile`` gave them; a user backend must itself pickle.
        how = self.__dict__.get("_how")
        if how is None:
            raise TypeError("cannot pickle an OptimizedModule built without its compile options: "
                            "pickle its _orig_mod and compile it again after loading")
        return (_rebuild_optimized, (self._orig_mod, how))

    def forward(self, *args, **kwargs):
        return self.__dict__["_compiled_call"](*args, **kwargs)

    def _wrapped(self):
        """The original module once the wrapper is built, else None (``Module.__init__``'s own
        attributes are the wrapper's)."""
        return self.__dict__["_modules"]["_orig_mod"] if "_compiled_call" in self.__dict__ else None

    @property
    def training(self):
        m = self._wrapped()
        return self.__dict__.get("training", True) if m is None else m.training

    @training.setter
    def training(self, value):
        self.__dict__["training"] = value
        m = self._wrapped()
        if m is not None:
            m.training = value

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)

    def __setattr__(self, name, value):
        m = self._wrapped()
        if m is None or name in self._OWN or hasattr(type(self), name):
            return super().__setattr__(name, value)
        setattr(m, name, value)

    def __delattr__(self, name):
        m = self._wrapped()
        if m is None or name in self._OWN or hasattr(type(self), name):
            return super().__delattr__(name)
        delattr(m, name)

    def __dir__(self):
        # as torch's: the original module's names too, since ``__getattr__`` reaches them
        # (``dir(compiled)`` listed only the wrapper's own, so tab completion and attribute
        # discovery missed ``linear``, ``buf0`` ...)
        m = self._wrapped()
        own = super().__dir__()
        return own if m is None else sorted(set(own) | set(dir(m)))

    def __len__(self):
        m = self.__dict__["_modules"]["_orig_mod"]
        if hasattr(type(m), "__len__"):
            return len(m)
        raise TypeError(f"{type(m).__name__} does not support len()")
