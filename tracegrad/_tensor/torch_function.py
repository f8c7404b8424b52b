"""The ``__torch_function__`` protocol (torch/overrides.py and torch/_tensor.py's semantics).

A call of a public function (``tracegrad.add``, ``Tensor.add``, ``a + b``, ``F.linear``, a
property such as ``t.shape``) whose arguments include an object of a type with its own
``__torch_function__`` -- a Tensor subclass that does not opt out, or any other class defining it
(a "duck" tensor) -- or that runs while a ``TorchFunctionMode`` is active, is handed to those
overrides instead of running (``handle_torch_function``):

1. the innermost mode first (popped while it runs, so calls it makes reach the next one),
2. then each overloaded argument's ``__torch_function__(func, types, args, kwargs)``, subclasses
   before their bases, otherwise left to right; the first result that is not ``NotImplemented``
   wins; TypeError when none answers.

``func`` is the public object torch would pass (``Tensor.add`` for ``a + b``, ``Tensor.shape.__get__``
for ``t.shape``: ``overridable.py`` holds which one). The state is per thread, as torch's:
``DisableTorchFunctionSubclass`` turns off step 2, ``DisableTorchFunction`` both steps.
``Tensor.__torch_function__`` (the default every subclass inherits) runs ``func`` with step 2 off
and converts Tensor results to the subclass (``convert``), except the field reads of
``get_default_nowrap_functions``.

How public functions reach ``dispatch`` without slowing plain tensors is ``overridable.py``'s job
(NOTE [trampolines]).
"""
from __future__ import annotations

import os
import sys
import threading

from .. import _state

ENABLED, SUBCLASSES_DISABLED, ALL_DISABLED = 0, 1, 2
# how a public object finds its overloaded arguments (overridable.py tags each one), plus a bit
# for the few that run user code (Tensor.backward runs hooks): calls made there dispatch again
C_KIND, PY_KIND, ATTR_KIND, RUNS_USER_CODE = 0, 1, 2, 4


class _State(threading.local):
    """torch's per-thread torch-function state: the level above, the mode stack (innermost last)
    and the one-shot skip of ``redispatch_function``; ``inside``: an implementation found no
    override and runs (NOTE [inside an implementation])."""

    def __init__(self):
        self.level = ENABLED
        self.modes = []
        self.skip = False
        self.inside = False
        self.plain = True     # level ENABLED, no mode, no skip: dispatch's one-read fast check

    def refresh(self):
        """Recompute ``plain`` after a change to the level, the modes or the skip."""
        self.plain = self.level == ENABLED and not self.modes and not self.skip


STATE = _State()


class _DisabledImpl:
    """Mirrors ``torch._C._disabled_torch_function_impl``: assign it as ``__torch_function__`` to
    opt a Tensor subclass out of the protocol (``nn.Parameter`` does): its instances then count
    as plain Tensors and results of ops on them are plain Tensors. Called directly it runs
    ``func`` with subclass dispatch off. (An object rather than a function: it must not bind as a
    method when read from an instance, like torch's builtin.)"""

    __slots__ = ()
    __name__ = __qualname__ = "_disabled_torch_function_impl"

    def __call__(self, func, types, args=(), kwargs=None):
        with DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))

    def __repr__(self):
        return "<built-in function _disabled_torch_function_impl>"


_disabled_torch_function_impl = _DisabledImpl()


class _LevelBlock:
    """A ``with`` block that sets this thread's level (``_level(old)``) and puts it back."""

    __slots__ = ("_prev",)

    def _level(self, old):
        raise NotImplementedError

    def __enter__(self):
        st = STATE
        self._prev = st.level
        st.level = self._level(st.level)
        st.refresh()
        return self

    def __exit__(self, *exc):
        STATE.level = self._prev
        STATE.refresh()
        return False


class DisableTorchFunctionSubclass(_LevelBlock):
    """Mirrors ``torch._C.DisableTorchFunctionSubclass``: within the block, arguments' own
    ``__torch_function__`` overrides are not called (modes still are); nests, per thread."""

    __slots__ = ()

    def _level(self, old):
        return SUBCLASSES_DISABLED if old == ENABLED else old


class DisableTorchFunction(_LevelBlock):
    """Mirrors ``torch._C.DisableTorchFunction``: within the block neither modes nor overrides
    are called; every public function runs its own implementation. Nests, per thread."""

    __slots__ = ()

    def _level(self, old):
        return ALL_DISABLED


class _EnableTorchFunction(_LevelBlock):
    """torch.overrides._enable_torch_function: the protocol on again inside a disabled block."""

    __slots__ = ()

    def _level(self, old):
        return ENABLED


def is_torch_function_enabled() -> bool:
    """Mirrors ``torch._C._is_torch_function_enabled``: whether overrides are called here."""
    return STATE.level == ENABLED


def is_torch_function_mode_enabled() -> bool:
    """Mirrors ``torch._C._is_torch_function_mode_enabled``: a mode is active in this thread."""
    return STATE.level != ALL_DISABLED and bool(STATE.modes)


# ---- overloaded arguments ------------------------------------------------------------------------
NOT_OVERLOADED, PLAIN, OVERLOADED = 0, 1, 2
_TYPE_KIND: dict = {}       # type -> one of the three above
PLAIN_TYPES: list = []      # [Tensor], set by tensor.py (this module sits below the class)
TRIVIAL: set = {int, float, bool, complex, str, type(None)}    # + Tensor (tensor.py): never overloaded


def type_kind(ty) -> int:
    """Whether objects of ``ty`` take part: PLAIN for exactly Tensor, OVERLOADED for any other
    type with a ``__torch_function__`` that is not the opt-out, else NOT_OVERLOADED."""
    k = _TYPE_KIND.get(ty)
    if k is None:
        tf = getattr(ty, "__torch_function__", None)
        if tf is None or tf is _disabled_torch_function_impl:
            k = NOT_OVERLOADED
        elif ty in PLAIN_TYPES:
            k = PLAIN
        else:
            k = OVERLOADED
        if len(_TYPE_KIND) > 4096:     # types made in a loop: start afresh rather than grow
            _TYPE_KIND.clear()
        _TYPE_KIND[ty] = k
    return k


def _add(out, arg):
    """Insert ``arg`` into the precedence-ordered ``out`` unless its type is there already:
    after the others, but before the first one whose type it subclasses (NEP 18's order)."""
    ty = type(arg)
    for i, old in enumerate(out):
        if type(old) is ty:
            return
    for i, old in enumerate(out):
        if issubclass(ty, type(old)):
            out.insert(i, arg)
            return
    out.append(arg)


def overloaded_args(values, with_plain=False) -> list:
    """The arguments among ``values`` (and into lists and tuples: one level, then tuples only) whose
    ``__torch_function__`` is to be called, in calling order; plain Tensors count only with
    ``with_plain`` (torch's Python-level functions count them, its C++ ones do not). Empty while
    subclass dispatch is off."""
    if STATE.level != ENABLED:
        return []
    out: list = []
    _collect(out, values, with_plain, True)
    return out


def _collect(out, values, with_plain, top):
    for v in values:
        ty = type(v)
        if ty is list or ty is tuple:
            if top or ty is tuple:    # (a tuple inside a tuple: an index ``x[0, (i, j)]``, where torch looks too)
                _collect(out, v, with_plain, False)
            continue
        k = type_kind(ty)
        if k == OVERLOADED or (k == PLAIN and with_plain):
            _add(out, v)


def has_torch_function(values) -> bool:
    """Mirrors ``torch.overrides.has_torch_function``: a mode is active or one of ``values`` has
    an override (exact Tensors and Parameters do not count). ``values`` must be iterable, as
    torch's (a TypeError "expected a sequence" otherwise)."""
    if type(values) is not tuple and type(values) is not list:
        try:
            values = tuple(values)
        except TypeError:
            raise TypeError("has_torch_function: expected a sequence of arguments (a tuple or "
                            f"list), got {type(values).__name__}") from None
    st = STATE
    if st.level == ALL_DISABLED:
        return False
    if st.skip:           # redispatch_function: the one check it skips
        st.skip = False
        st.refresh()
        return False
    if st.modes:
        return True
    if st.level != ENABLED:
        return False
    return any(type_kind(type(v)) == OVERLOADED for v in values)


def _is_dispatching(overloaded) -> bool:
    return any(type_kind(type(a)) == OVERLOADED for a in overloaded)


# ---- handling one call ---------------------------------------------------------------------------
def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Mirrors ``torch.overrides.handle_torch_function``: call the active mode, then each
    overloaded argument's ``__torch_function__`` with ``public_api``; the first answer that is
    not ``NotImplemented`` is returned. TypeError, as torch, when none answers."""
    return handle(public_api, overloaded_args(relevant_args, with_plain=True), args, kwargs)


def handle(public, overloaded, args, kwargs, python=True):
    """``handle_torch_function`` with the overloaded arguments already found (``python``: the
    function is one torch implements in Python, which words the final TypeError differently)."""
    types = tuple(type(a) for a in overloaded)
    st = STATE
    if _state.CAPTURE[0] is not None:
        # a Python override runs once while tracegrad.compile traces, not on every call
        # (and its results' types would not survive the program): run such calls eagerly
        what = (f"the TorchFunctionMode {type(st.modes[-1]).__name__}" if st.modes and st.level != ALL_DISABLED
                else f"__torch_function__ of {', '.join(t.__name__ for t in types)}")
        _state.note_effect(what)
    if st.modes and st.level != ALL_DISABLED:
        mode = pop_mode()
        try:
            override = mode.__torch_function__
            if getattr(override, "__self__", None) is type(mode):
                raise RuntimeError(f"{type(mode).__name__}.__torch_function__: classmethod is not supported, please "
                                   "make it a plain method")
            result = override(public, types, args, kwargs)
        finally:
            st.modes.append(mode)
            st.refresh()
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        result = arg.__torch_function__(public, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = RESOLVE_NAME[0](public)
    if name is None:
        module = getattr(public, "__module__", None) or "torch"
        name = f"{'torch' if module.startswith('tracegrad') else module}.{getattr(public, '__name__', public)}"
    if not python:     # torch's C++ functions word it so
        lines = "".join(f"  - {'tensor subclass' if issubclass(type(a), PLAIN_TYPES[0]) else 'object'} {type(a)}\n"
                        for a in overloaded)
        if st.modes and st.level != ALL_DISABLED:
            lines += f"  - mode object {st.modes[-1]}\n"
        raise TypeError(f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers returned "
                        f"NotImplemented:\n\n{lines}")
    msg = (f"no implementation found for '{name}' on types that implement __torch_function__: "
           f"{[type(a) for a in overloaded]}")
    if st.modes and st.level != ALL_DISABLED:
        msg += f" nor in mode {st.modes[-1]}"
    raise TypeError(msg)


# NOTE [inside an implementation]
# torch's functions call each other in C++, below the protocol: only the call the user made
# dispatches. tracegrad's implementations call public functions and properties (``t.dtype``,
# ``tracegrad.mul``) in Python, so once a call found no override and runs its implementation,
# the calls that implementation makes run theirs directly too (``STATE.inside``). Calls that
# overrides and modes make are not inside (their function has not started). The functions that
# run user code (hooks in ``backward``, ``apply_``'s callable) leave it off.
def dispatch(public, kind, impl, args, kwargs):
    """The body every public object runs once the protocol is active (NOTE [trampolines]):
    ``impl`` directly unless a mode or an overloaded argument asks for ``handle``."""
    st = STATE
    if st.inside:
        return impl(*args, **kwargs)
    if st.plain:
        # the common case (no mode, nothing disabled): plain tensors and numbers only
        if kind & 3 == ATTR_KIND:
            trivial = type(args[0]) in TRIVIAL
        else:
            trivial = True
            for v in args:
                if type(v) not in TRIVIAL:
                    trivial = False
                    break
            if trivial and kwargs:
                trivial = all(type(v) in TRIVIAL for v in kwargs.values())
        if trivial:
            return _run_implementation(st, kind, impl, args, kwargs)
    return _dispatch_slow(st, public, kind, impl, args, kwargs)


def _dispatch_slow(st, public, kind, impl, args, kwargs):
    level = st.level
    if level == ALL_DISABLED:
        return impl(*args, **kwargs)
    if st.skip:           # redispatch_function: this one call runs its implementation
        st.skip = False
        st.refresh()
        return impl(*args, **kwargs)
    base = kind & 3
    if base == ATTR_KIND:
        self = args[0]
        overloaded = [self] if level == ENABLED and type_kind(type(self)) != NOT_OVERLOADED else []
    else:
        overloaded = overloaded_args(args, base == PY_KIND) if level == ENABLED else []
        if kwargs:
            for a in overloaded_args(kwargs.values(), base == PY_KIND):
                _add(overloaded, a)
    if st.modes or _is_dispatching(overloaded):
        normalize = OVERRIDE_ARGS.get(public) if OVERRIDE_ARGS else None
        if normalize is not None:
            args, kwargs = normalize(args, kwargs)
        return handle(public, overloaded, args, kwargs, base == PY_KIND)
    return _run_implementation(st, kind, impl, args, kwargs)


# public function -> (args, kwargs) -> the (args, kwargs) its overrides receive, for the Python
# functions of torch that normalize their arguments before handle_torch_function
# (torch.autograd.grad hands over (outputs, inputs) as tuples and every option as a keyword);
# filled by the layers that define those functions
OVERRIDE_ARGS: dict = {}


def _run_implementation(st, kind, impl, args, kwargs):
    """No override applies: run ``impl``, the calls it makes undispatched (NOTE [inside an
    implementation])."""
    if kind & RUNS_USER_CODE:
        return impl(*args, **kwargs)
    st.inside = True
    try:
        return impl(*args, **kwargs)
    finally:
        st.inside = False


def redispatch(func, types, args=(), kwargs=None):
    """Mirrors ``torch.overrides.redispatch_function``: call ``func`` skipping one level of
    dispatch (its own check); calls it makes dispatch again."""
    STATE.skip = True
    STATE.plain = False
    try:
        return func(*args, **(kwargs or {}))
    finally:
        STATE.skip = False
        STATE.refresh()


# ---- the default override ------------------------------------------------------------------------
NOWRAP: set = set()     # get_default_nowrap_functions(), filled by tensor.py


def convert(ret, cls):
    """torch's ``_convert``: Tensor results (also inside tuples, lists and named tuples) as
    ``cls`` instances (``as_subclass``: an alias on the autograd graph); others unchanged."""
    if cls is PLAIN_TYPES[0]:
        return ret
    if isinstance(ret, PLAIN_TYPES[0]):
        return ret if isinstance(ret, cls) else ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [convert(r, cls) for r in ret]
        if hasattr(type(ret), "_fields"):
            return type(ret)(*items)
        return type(ret)(items)
    return ret


def _real_torch(func) -> bool:
    """Whether ``func`` belongs to the real PyTorch (``torch.ones(2) - tracegrad.ones(2)``): it
    offers a tracegrad Tensor to our protocol, and running it again would come straight back
    here. NotImplemented then lets torch raise its TypeError (no handler for these types)."""
    module = getattr(func, "__module__", None) or getattr(getattr(func, "__objclass__", None), "__module__", "")
    return (module == "torch" or module.startswith("torch.")) and sys.modules.get("torch") is not sys.modules.get("tracegrad")


def default_torch_function(cls, func, types, args=(), kwargs=None):
    """``Tensor.__torch_function__``: run ``func`` with subclass dispatch off and give Tensor
    results as ``cls`` (NotImplemented when some type in ``types`` is not a base of ``cls``)."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types) or _real_torch(func):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
        if func in NOWRAP:
            return ret
        return convert(ret, cls)


# ---- the mode stack ------------------------------------------------------------------------------
def push_mode(mode) -> None:
    """Push ``mode`` (innermost) on this thread's stack; the protocol becomes active."""
    ACTIVATE[0]()
    STATE.modes.append(mode)
    STATE.plain = False
    STATE.inside = False     # a mode entered from user code an implementation runs (a hook)


def pop_mode():
    """Pop and return the innermost mode. RuntimeError when the stack is empty."""
    if not STATE.modes:
        raise RuntimeError("Trying to pop from an empty mode stack")
    mode = STATE.modes.pop()
    STATE.refresh()
    return mode


# torch's dotted name of a public function (overrides.resolve_name, stored by tracegrad/overrides.py)
RESOLVE_NAME: list = [lambda f: None]
# overridable.activate, stored here by overridable.py (it sits beside this module and imports it)
ACTIVATE: list = [lambda: None]


# the file name the trampolines' code carries (overridable.py compiles them under it): a name
# inside the package, so tracegrad's checks for user frames pass over them
TRAMPOLINE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "<__torch_function__ dispatch>")
# the code objects a call passes through between a public function's trampoline and its
# implementation (overridable.py adds its operator dispatcher)
DISPATCH_CODES = {dispatch.__code__, _dispatch_slow.__code__, _run_implementation.__code__}


def outside_dispatch(frame):
    """``frame``, or its first caller that is not the protocol's own machinery (a trampoline,
    ``dispatch``): where a public function's implementation was called from. Once the protocol
    is active (NOTE [trampolines] in overridable.py) these frames sit between a method such as
    ``Tensor.item`` and the code that called it; checks that ask "called by the user's code?"
    (``sys._getframe(n)``) look past them."""
    while frame is not None and (frame.f_code in DISPATCH_CODES or frame.f_code.co_filename == TRAMPOLINE_FILE):
        frame = frame.f_back
    return frame
