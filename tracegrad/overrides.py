"""Mirrors ``torch.overrides``: the ``__torch_function__`` protocol's public helpers and
``TorchFunctionMode``. The protocol itself is ``_tensor/torch_function.py``; which public
functions take part is ``_tensor/overridable.py`` (NOTE [trampolines]).

Differs from torch: ``get_testing_overrides`` gives, per overridable function, a stub with its
signature that returns -1 (torch writes them by hand); ``torch.exp`` and ``Tensor.exp`` are one
object in tracegrad (``_api/_registry.py``), so an override receives the same ``func`` for both
and ``resolve_name`` names it ``torch.Tensor.exp``.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import sys

from ._tensor import overridable as _table
from ._tensor import torch_function as _tf
from ._tensor.tensor import Tensor
from ._tensor.torch_function import handle_torch_function as handle_torch_function  # noqa: F401
from ._tensor.torch_function import has_torch_function as has_torch_function  # noqa: F401
from ._ops.warn import warn as _warn

__all__ = [
    "get_ignored_functions", "get_overridable_functions", "get_testing_overrides", "handle_torch_function",
    "has_torch_function", "resolve_name", "is_tensor_like", "is_tensor_method_or_property", "wrap_torch_function",
    "enable_reentrant_dispatch", "TorchFunctionMode", "BaseTorchFunctionMode", "get_default_nowrap_functions",
    "has_torch_function_unary", "has_torch_function_variadic", "redispatch_function",
]


def has_torch_function_unary(arg) -> bool:
    """Mirrors ``torch.overrides.has_torch_function_unary``: ``has_torch_function((arg,))``."""
    return _tf.has_torch_function((arg,))


def has_torch_function_variadic(*args) -> bool:
    """Mirrors ``torch.overrides.has_torch_function_variadic``: ``has_torch_function(args)``."""
    return _tf.has_torch_function(args)


def is_tensor_like(inp) -> bool:
    """Mirrors ``torch.overrides.is_tensor_like``: an exact Tensor or an object whose type has
    ``__torch_function__`` (a Tensor subclass, a duck tensor)."""
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def get_default_nowrap_functions() -> set:
    """Mirrors ``torch.overrides.get_default_nowrap_functions``: the public functions whose
    results ``Tensor.__torch_function__`` returns as they are (field reads: ``Tensor.grad.__get__``;
    ``_base`` and ``_grad`` are internal slots in tracegrad, not dispatched)."""
    return set(_tf.NOWRAP)


def _namespace(torch_name):
    if torch_name in ("torch", "torch.functional"):
        return sys.modules["tracegrad"]
    return sys.modules["tracegrad." + torch_name[len("torch."):]]


# torch names a function listed in several namespaces after the last of them, in this order
# (F.conv2d is torch.conv2d: 'torch.nn.functional.conv2d')
_NAME_ORDER = ("torch", "torch.functional", "torch.nn.functional", "torch.Tensor", "torch.linalg", "torch.fft",
               "torch.special")


@functools.lru_cache(maxsize=None)
def _overridable():
    """(namespace -> functions, function -> torch's name for it)."""
    by_ns, named = {}, []
    for name, attr, _ in _table.tensor_entries():
        fns = [attr.__get__] if isinstance(attr, property) else [attr]
        if isinstance(attr, property) and attr.fset is not None:
            fns.append(attr.__set__)
        for f in fns:
            by_ns.setdefault(Tensor, []).append(f)
            named.append(("torch.Tensor", f, f"torch.Tensor.{name}" + (("." + f.__name__) if isinstance(attr, property) else "")))
    for torch_name, name, fn, _ in _table.namespace_entries(with_autograd=False):
        by_ns.setdefault(_namespace(torch_name), []).append(fn)
        named.append((torch_name, fn, f"{torch_name}.{name}"))
    per_ns: dict = {}
    for ns, f, n in named:        # an alias (Tensor.multiply is Tensor.mul) keeps its first name
        per_ns.setdefault(ns, {}).setdefault(f, n)
    names: dict = {}
    for ns in _NAME_ORDER:        # across namespaces the last one wins, as torch's
        names.update(per_ns.get(ns, {}))
    return by_ns, names


def get_overridable_functions() -> dict:
    """Mirrors ``torch.overrides.get_overridable_functions``: namespace (``tracegrad``,
    ``tracegrad.Tensor``, ``nn.functional``, ``linalg``, ``special``, ``fft``) -> the functions in
    it that dispatch to ``__torch_function__`` (properties as their ``__get__``/``__set__``)."""
    return {k: list(v) for k, v in _overridable()[0].items()}


def resolve_name(f):
    """Mirrors ``torch.overrides.resolve_name``: torch's dotted name of a function passed to
    ``__torch_function__`` (``'torch.Tensor.add'``, ``'torch.nn.functional.linear'``), else None."""
    return _overridable()[1].get(f)


_tf.RESOLVE_NAME[0] = resolve_name


def get_ignored_functions() -> set:
    """Mirrors ``torch.overrides.get_ignored_functions``: public functions that never dispatch
    (global state, factories' siblings torch excludes, ``is_tensor``...)."""
    out = set()
    for torch_name, mod_name, none, _ in _table.NAMESPACES:
        mod = sys.modules.get(mod_name)
        for name in none:
            fn = getattr(mod, name, None) if mod is not None else None
            if callable(fn):
                out.add(fn)
    for name in _table.TENSOR_NONE:
        attr = vars(Tensor).get(name)
        if callable(attr) and not name.startswith("__"):
            out.add(attr)
    return out


def get_testing_overrides() -> dict:
    """Mirrors ``torch.overrides.get_testing_overrides``: overridable function -> a stub with
    the same signature that returns -1 (what a dummy ``__torch_function__`` can return)."""
    out = {}
    for fns in _overridable()[0].values():
        for f in fns:
            def stub(*args, **kwargs):
                return -1
            try:
                stub.__signature__ = inspect.signature(f)
            except (TypeError, ValueError):
                pass
            out[f] = stub
    return out


def is_tensor_method_or_property(func) -> bool:
    """Mirrors ``torch.overrides.is_tensor_method_or_property``: ``func`` is a Tensor method or
    a property's ``__get__`` as passed to ``__torch_function__``."""
    return func in set(_overridable()[0].get(Tensor, ())) or getattr(func, "__name__", None) == "__get__"


def wrap_torch_function(dispatcher):
    """Mirrors ``torch.overrides.wrap_torch_function``: decorate a function so that calls whose
    ``dispatcher(*args, **kwargs)`` values have overrides (or run under a mode) go to them."""
    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if _tf.has_torch_function(relevant):
                return _tf.handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner


def redispatch_function(func, types, args, kwargs):
    """Mirrors ``torch.overrides.redispatch_function``: call ``func`` skipping one level of
    ``__torch_function__`` dispatch (its own); the calls it makes dispatch as usual."""
    return _tf.redispatch(func, types, args, kwargs)


@contextlib.contextmanager
def enable_reentrant_dispatch():
    """Mirrors ``torch.overrides.enable_reentrant_dispatch``. tracegrad has no dispatcher below
    ``__torch_function__`` whose thread-local state would need restoring: a no-op block."""
    yield


class TorchFunctionMode:
    """Mirrors ``torch.overrides.TorchFunctionMode``: ``with Mode():`` sends every public
    function, method, operator and property call in the block (factories included) to
    ``mode.__torch_function__(func, types, args, kwargs)``; while it runs the mode is off the
    stack, so calls it makes reach the next mode (or the implementation). Modes nest per thread.
    Inside ``tracegrad.compile`` an active mode is a graph break (the call runs eagerly)."""

    inner: "TorchFunctionMode"

    def __init__(self) -> None:
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _tf.push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _tf.pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        _warn("`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`")
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """Mirrors ``torch.overrides.BaseTorchFunctionMode``: a mode that runs every call as is."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _get_current_function_mode():
    modes = _tf.STATE.modes
    return modes[-1] if modes else None


def _get_current_function_mode_stack():
    return list(_tf.STATE.modes)


def _push_mode(mode):
    _tf.push_mode(mode)


def _pop_mode():
    return _tf.pop_mode()


@contextlib.contextmanager
def _pop_mode_temporarily():
    old = _tf.pop_mode()
    try:
        yield old
    finally:
        _tf.STATE.modes.append(old)
        _tf.STATE.refresh()


def _enable_torch_function():
    """Mirrors ``torch.overrides._enable_torch_function``: the protocol on within the block."""
    return _tf._EnableTorchFunction()
