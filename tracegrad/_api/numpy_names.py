"""torch's NumPy-style keyword names: every torch function bound from C++ takes ``axis=`` for
``dim=`` and ``keepdims=`` for ``keepdim=`` (``counts.sum(1, keepdims=True)`` in karpathy's
nn-zero-to-hero lecture code, ``x.mean(axis=0)``). ``numpy_names(fn)`` gives a function
with a ``dim``/``keepdim`` parameter that form; functions without one come back unchanged, so
only those pay the one extra call.
"""
from __future__ import annotations

import functools
import inspect

from .argcheck import GUARDED, argument_error

_ALIASES = {"axis": "dim", "keepdims": "keepdim"}
_KEYS = frozenset(_ALIASES)
# torch's Python-level methods: no NumPy names there (torch raises TypeError, so does tracegrad)
_PYTHON_LEVEL = frozenset({"norm", "split", "unique", "unique_consecutive", "stft", "istft", "lu"})


def numpy_names(fn, name):
    """``fn`` taking ``axis``/``keepdims`` as its ``dim``/``keepdim`` (TypeError when both
    spellings of one argument are given, as torch); ``fn`` itself when it has neither
    parameter, accepts the NumPy name itself, or is one of torch's Python-level methods."""
    if name in _PYTHON_LEVEL or not callable(fn) or isinstance(fn, type):
        return fn
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn
    todo = tuple((a, n) for a, n in _ALIASES.items() if n in params and a not in params)
    if not todo:
        return fn

    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def accepts_numpy_names(*args, **kwargs):
        if kwargs and not _KEYS.isdisjoint(kwargs):
            for alias, real in todo:
                if alias in kwargs:
                    if real in kwargs:
                        raise TypeError(f"{name}() received both '{real}' and its alias '{alias}'; pass one of them")
                    kwargs[real] = kwargs.pop(alias)
        try:
            return fn(*args, **kwargs)
        except GUARDED as e:   # the Tensor method's one layer doubles as its argument-kind guard
            replaced = argument_error(name, sig, args, kwargs, e)
            if replaced is None:
                raise
            raise replaced from None
    accepts_numpy_names._kinds_checked = True   # argcheck.guard_all adds no second AttributeError guard
    return accepts_numpy_names


def add_numpy_names(namespace: dict) -> None:
    """Replace each function of ``namespace`` that has a ``dim``/``keepdim`` parameter by its
    ``numpy_names`` form; one wrapper per function object, so names that shared an object
    (``Tensor.exp`` and ``tracegrad.exp``) still do."""
    for name, fn in list(namespace.items()):
        if id(fn) not in _DONE:
            _DONE[id(fn)] = (fn, numpy_names(fn, name))   # fn kept alive: its id stays its own
        namespace[name] = _DONE[id(fn)][1]


_DONE: dict = {}   # id(function) -> (function, its numpy_names form), shared by every namespace
