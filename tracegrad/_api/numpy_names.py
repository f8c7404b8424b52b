"""torch's NumPy-style keyword names: every torch function bound from C++ takes ``axis=`` for
``dim=`` and ``keepdims=`` for ``keepdim=`` (``counts.sum(1, keepdims=True)`` in karpathy's
nn-zero-to-hero lecture code, ``x.mean(axis=0)``). ``numpy_names(fn)`` gives a function
with a ``dim``/``keepdim`` parameter that form; functions without one come back unchanged, so
only those pay the one extra call.
"""
from __future__ import annotations

import functools
import inspect

from .argcheck import GUARDED, _is_strict_bool, argument_error, kind_of, strict_error

_ALIASES = {"axis": "dim", "keepdims": "keepdim"}
_KEYS = frozenset(_ALIASES)
# torch's Python-level methods: no NumPy names there (torch raises TypeError, so does tracegrad)
_PYTHON_LEVEL = frozenset({"norm", "split", "unique", "unique_consecutive", "stft", "istft", "lu"})
# where tracegrad's ``dim=None`` default means "every dim" but torch has no dim=None overload: a
# None given explicitly is torch's parser TypeError (``x.max(None)``, ``median(x, None)``)
_DIM_NOT_NONE = frozenset({"prod", "max", "min", "logsumexp", "median", "nanmedian", "squeeze"})
_UNSET = object()


def _position(params, name):
    """0-based position of parameter ``name`` when it can be passed positionally, else a position
    no call reaches (so only the keyword is read)."""
    for at, p in enumerate(params.values()):
        if p.name == name:
            return at if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else 1 << 30
    return None


def _static_kind_error(name, flags, dim_at, args, kwargs):
    """torch's TypeError for a flag (``keepdim``, gather's ``sparse_grad``, scatter_reduce's
    ``include_self``: ``flags``, (parameter, position) pairs) that is not a bool (``keepdim=1``:
    the static-key cache would take it for True; ``include_self="no"`` would be truthy) or an
    explicit ``dim=None`` where torch requires a dim; None when neither."""
    for flag, at in flags:
        v = args[at] if len(args) > at else kwargs.get(flag, _UNSET)
        if v is not _UNSET and not _is_strict_bool(v):
            return strict_error(name, flag, "bool", v, at + 1 if len(args) > at else None)
    if dim_at is not None:
        v = args[dim_at] if len(args) > dim_at else kwargs.get("dim", _UNSET)
        if v is None:
            return strict_error(name, "dim", "int", v, dim_at + 1 if len(args) > dim_at else None)
    return None


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
    # the bool flags torch's parser checks (this wrapper is the method's only argument-kind guard)
    flags = tuple((p, _position(params, p)) for p in params if kind_of(name, p) == "bool")
    dim_at = _position(params, "dim") if name in _DIM_NOT_NONE else None
    # the longest call that passes no flag/dim positionally: shorter calls skip the check
    # with one comparison, keyword calls are looked at whenever there are keywords
    short = min(a for a in (*(at for _, at in flags), dim_at, 1 << 30) if a is not None)
    checked = bool(flags) or dim_at is not None

    @functools.wraps(fn)
    def accepts_numpy_names(*args, **kwargs):
        if kwargs and not _KEYS.isdisjoint(kwargs):
            for alias, real in todo:
                if alias in kwargs:
                    if real in kwargs:
                        raise TypeError(f"{name}() received both '{real}' and its alias '{alias}'; pass one of them")
                    kwargs[real] = kwargs.pop(alias)
        if checked and (kwargs or len(args) > short):
            wrong = _static_kind_error(name, flags, dim_at, args, kwargs)
            if wrong is not None:
                raise wrong
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
