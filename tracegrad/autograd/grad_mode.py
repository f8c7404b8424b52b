"""Grad-mode switches. Mirrors ``torch.no_grad``, ``enable_grad``, ``set_grad_enabled``,
``inference_mode`` and ``is_grad_enabled``: context managers that also work as decorators.

The state is ``tracegrad._state.GRAD_MODE``, indexed by the dispatcher with a single read.
"""
from __future__ import annotations

import functools
import inspect

# The state lives in tracegrad/_state.py (all mutable global state in one place); these are
# the same objects under the names engine and function import from here (dispatch reads _state).
# STATE: [grad enabled, inference mode], thread-local. INFERENCE_DEPTH[0]: how many
# inference_mode(True) blocks are open in any thread (a cheap pre-check before the
# thread-local read, so ops outside inference mode pay one list read).
from .. import _state as _state_mod
from .._state import GRAD_MODE as STATE
from .._state import INFERENCE_DEPTH as INFERENCE_DEPTH
from .._state import grad_enabled as _grad_flag
from .._state import in_inference_mode as in_inference_mode
from .._state import swap_grad_enabled as _swap_grad
from .._ops.warn import warn as _warn


def is_grad_enabled() -> bool:
    """Mirrors ``torch.is_grad_enabled`` (inside ``inference_mode()``: the flag that
    ``enable_grad`` / ``no_grad`` set there, while recording stays off)."""
    return _grad_flag()


def is_inference_mode_enabled() -> bool:
    """Mirrors ``torch.is_inference_mode_enabled``."""
    return STATE[1]


class _DecoratorContextManager:
    def __call__(self, func):
        if inspect.isclass(func):
            # torch (deprecated): the class's __init__ runs under the mode, nothing else does
            _warn("Decorating classes is deprecated and will be disabled in future versions. "
                  "Decorate functions or methods only; to keep this behaviour, decorate the "
                  "class's `__init__` method instead.", FutureWarning)
            func.__init__ = self(func.__init__)
            return func
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)
        @functools.wraps(func)
        def wrapper(*a, **k):
            with self.clone():
                return func(*a, **k)
        return wrapper

    def _wrap_generator(self, func):
        """The mode holds while the generator body runs (first step, ``send``, ``throw``,
        ``close``), and the caller's mode holds while it is suspended at a ``yield``, as torch's
        ``_contextlib._wrap_generator``. (Coroutines are not wrapped, as in torch: the mode
        covers only creating the coroutine object.)"""
        @functools.wraps(func)
        def gen(*a, **k):
            g = func(*a, **k)
            try:
                with self.clone():
                    resp = g.send(None)
                while True:
                    try:
                        req = yield resp
                    except GeneratorExit:
                        with self.clone():
                            g.close()
                        raise
                    except BaseException as exc:   # thrown in: rethrow into the body, in mode
                        with self.clone():
                            resp = g.throw(exc)
                    else:
                        with self.clone():
                            resp = g.send(req)
            except StopIteration as e:
                return e.value
        return gen

    def clone(self):
        return type(self)()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable as a bare decorator (``@no_grad`` without parentheses), as in torch."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Mirrors ``torch.no_grad``: ops inside record no graph; results have requires_grad=False."""

    # ``prev``, written by ``__enter__`` and read only by ``__exit__``, is no user state: the
    # manager entered inside a compiled function is no Python side effect (NOTE [transient
    # library state] in _lowering/pystate.py)
    _tracegrad_transient_state = True

    def __enter__(self):
        self.prev = _swap_grad(False)

    def __exit__(self, *exc):
        STATE[self.prev[0]] = self.prev[1]


class enable_grad(_NoParamDecoratorContextManager):
    """Mirrors ``torch.enable_grad``: turns recording back on inside ``no_grad``."""

    _tracegrad_transient_state = True     # (as no_grad's)

    def __enter__(self):
        self.prev = _swap_grad(True)

    def __exit__(self, *exc):
        STATE[self.prev[0]] = self.prev[1]


class set_grad_enabled(_DecoratorContextManager):
    """Mirrors ``torch.set_grad_enabled(mode)``: sets grad mode at once (as a function call)
    and restores the previous mode when used as a context manager."""

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            # torch's binding accepts only a bool (TestAutograd.test_set_grad_enabled-style
            # bad input); a truthy string would otherwise silently enable grad
            raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                            f"not {type(mode).__name__}")
        self.mode = mode
        self.prev = _swap_grad(mode)

    def __call__(self, func):
        # used as a decorator: the call above already switched the mode; switch it back
        STATE[self.prev[0]] = self.prev[1]
        return super().__call__(func)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        STATE[self.prev[0]] = self.prev[1]

    def clone(self):
        return type(self)(self.mode)


class inference_mode(_DecoratorContextManager):
    """Mirrors ``torch.inference_mode(mode=True)``: recording is off, and tensors made inside
    are inference tensors (``is_inference()``; saving one for backward raises RuntimeError)."""

    _tracegrad_transient_state = True     # (as no_grad's)

    def __new__(cls, mode=True):
        # also a bare decorator (``@inference_mode`` without parentheses), as torch: whatever is
        # not a bool is the function to wrap, given by position or by name
        # (``inference_mode(mode=func)`` decorates func in torch too); None stays a mode flag
        if mode is None or isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def __enter__(self):
        self.prev = tuple(STATE)
        if self.mode:
            STATE[0], STATE[1], STATE[2] = False, True, False
            INFERENCE_DEPTH[0] += 1
        else:  # as torch: inference_mode(False) turns recording back on
            STATE[0], STATE[1] = True, False

    def __exit__(self, *exc):
        STATE[0], STATE[1], STATE[2] = self.prev
        if self.mode:
            INFERENCE_DEPTH[0] -= 1

    def clone(self):
        return type(self)(self.mode)


class _FlagContext(_DecoratorContextManager):
    """A process-wide autograd switch set at construction (as a call) and restored on exit,
    like ``set_grad_enabled``; ``FLAG`` is the subclass's one-element list."""
    FLAG: list
    C_NAME: str      # the torch._C setter, whose parser takes a bool only

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"{self.C_NAME}(): argument 'enabled' (position 1) must be bool, not "
                            f"{type(mode).__name__}; pass True or False")
        self.prev, self.mode = self.FLAG[0], bool(mode)
        self.FLAG[0] = self.mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        self.FLAG[0] = self.prev

    def clone(self):
        return type(self)(self.mode)


_MULTITHREADING = [True]
_VIEW_REPLAY = _state_mod.VIEW_REPLAY


class set_multithreading_enabled(_FlagContext):
    """Mirrors ``torch.autograd.set_multithreading_enabled(mode)``: whether backward may use a
    thread per device. tracegrad's engine runs backward on the calling thread either way (one
    device's work runs in order there, as torch's CPU queue does); the flag is kept for programs
    that read it (``is_multithreading_enabled``)."""
    FLAG = _MULTITHREADING
    C_NAME = "set_multithreading_enabled"


class _force_original_view_tracking(_FlagContext):
    """Mirrors ``torch.autograd.grad_mode._force_original_view_tracking(mode)``: whether views
    are replayed from their base (``torch.autograd.is_view_replay_enabled``). tracegrad views
    always keep their own view function, so values and gradients do not depend on it; a view
    made while it is on regenerates its grad_fn after an in-place write as the view op's node
    (``ViewBackward0``), not ``AsStridedBackward0``, as torch."""
    FLAG = _VIEW_REPLAY
    C_NAME = "set_view_replay_enabled"


def is_multithreading_enabled() -> bool:
    """Mirrors ``torch.autograd.is_multithreading_enabled``."""
    return _MULTITHREADING[0]


def is_view_replay_enabled() -> bool:
    """Mirrors ``torch.autograd.is_view_replay_enabled``."""
    return _VIEW_REPLAY[0]


class _unsafe_preserve_version_counter(_DecoratorContextManager):
    """Mirrors ``torch.autograd._unsafe_preserve_version_counter(tensors)``: the version
    counters of ``tensors`` (one tensor or a tuple) read at construction are put back on exit,
    so in-place writes inside the block are not seen by saved-tensor checks (unsafe: autograd
    may then use modified values). TypeError for anything but a Tensor or a tuple of them."""

    def __init__(self, tensors):
        self.tensors = (tensors,) if hasattr(tensors, "_vc") else tensors
        if not isinstance(self.tensors, tuple) or not all(hasattr(t, "_vc") for t in self.tensors):
            raise TypeError("_unsafe_preserve_version_counter expects a Tensor or a tuple of Tensors")
        self.prev_versions = tuple(t._vc[0] for t in self.tensors)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        for t, v in zip(self.tensors, self.prev_versions):
            t._vc[0] = v
