"""Warnings a trace keeps and every run of its program gives again (NOTE [warnings in a trace])."""
from __future__ import annotations

import os
import re
import sys
import threading
import warnings

from .._ops import warn as _warn

# NOTE [warnings in a trace]
# Eager gives a function's warnings on every call, through the filters as they stand then
# ("always" shows each, "default" once per place, "ignore" none). A trace runs the function
# once, so a warning shown while tracing would come once. Instead the trace keeps each warning
# the function gives, with the place and the warning registry ``warnings.warn`` used, and every
# run of the program (the first included) gives them again with ``warnings.warn_explicit`` after
# its checks pass: the filters decide again at each call, against the same registry, as eager
# does. torch.compile gives them once. Rules:
# 1. While tracing, an "always" filter (``_KEEP``) stands in front of the caller's filters, so a
#    warning the caller's filters ignore now is kept too (a filter turned from "ignore" to
#    "always" between calls shows it, as eagerly), and the trace adds nothing to the registries
#    ("default", "once" and "module" would otherwise count the trace's pass as the place's one
#    showing and swallow the first run's). A place the registry already holds (shown under
#    "default" since the filters last changed) would not reach the filters at all (Python
#    checks the registry first): the trace starts a new filters version, so every registry
#    looks stale to it, and afterwards puts back what the registries held, marked current
#    (``_Registries``), unless the function changed the filters itself.
# 2. Filters the function puts in front of those (``catch_warnings()`` + ``simplefilter`` inside
#    it) are the function's own: a warning they ignore is not kept, one they let through is given
#    with them in front of the caller's filters of that call (``TracedWarning.prefix``).
# 3. A warning the caller's filters make an error at a call would raise in the middle of the
#    function eagerly, after some of its state changes and before the rest: that call runs
#    eagerly (``TracedWarning.raises``, checked before the program runs and donates its inputs).
# 4. Warnings the trace does not keep go through the caller's filters at once: another thread's,
#    JAX's own (about tracing), a once-per-process one (torch's TORCH_WARN_ONCE, given once in
#    eager and traced runs alike), what tracegrad.compile says about itself (``say``) and one
#    the function catches itself (``catch_warnings(record=True)`` inside it: the list it reads
#    is part of the trace, as eagerly).
# 5. A warning whose ``stacklevel`` reaches past the compiled function (``stacklevel=2`` in its
#    body names the line that called it) is given at the frame eager names: the frames of the
#    compiled call itself (compiler.py; the trace's _lowering and JAX frames above the
#    function) do not count (``eager_place``), in the traced runs and in the eager ones alike
#    (``Relocated``, around the compiled function's eager calls).
# 6. A region whose results stay differentiable runs its backward as a program of its own
#    (``CompiledFunctionBackward``), traced at the region's first backward: the warnings that
#    trace gives (a custom Function's backward, a deprecated ``ctx.saved_variables``) are kept
#    the same way and given again by every run of it (``KeptBackward``).
# 7. A function that changes the filters itself (``catch_warnings()`` inside it: entering and
#    leaving it are filters changes) makes every registry stale on each eager call, so a place a
#    "default" filter showed shows again on the next call. Its runs do that too (``FiltersChanged``,
#    first among the kept warnings); without it a recorded-and-given-again warning came once.
# 8. A function that leaves the filters changed (``warnings.simplefilter`` outside a
#    ``catch_warnings`` block) is a graph break (region.py): eager sets them again on every call
#    (after the caller's ``resetwarnings``, say), a program would not.
# 9. Not kept: where a warning falls among the function's other Python effects. The runs give
#    the warnings after the program ran and before its state is written back and the Python
#    appends and counters are replayed, so a ``showwarning`` that reads that state sees it as
#    before the call (tests/compile/test_adversarial_round47.py, a strict xfail).

# its empty pattern matches every text and keeps the filter unequal to any a user adds (``simplefilter``
# removes a filter equal to its own before putting that in front)
_KEEP = ("always", re.compile(""), Warning, None, 0)
_DECIDING = threading.local()
SAYING = [0]    # > 0 while tracegrad.compile says something about itself: ``say``


def say(message: str, stacklevel: int) -> None:
    """A UserWarning of tracegrad.compile about itself (a function falling back to eager, said
    once per function): shown, and never kept by a trace it happens in (it is no warning of the
    user's code: rule 4)."""
    SAYING[0] += 1
    try:
        warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)
    finally:
        SAYING[0] -= 1


class TracedWarning:
    """One warning a trace kept (NOTE [warnings in a trace]): ``give()`` issues it again."""
    __slots__ = ("message", "category", "filename", "lineno", "module", "registry", "globals", "prefix")

    def __init__(self, msg, frame, prefix=(), place=None):
        self.message, self.category = msg.message, msg.category
        self.filename, self.lineno = msg.filename, msg.lineno
        self.prefix = prefix        # the function's own filters in front of the caller's (rule 2)
        self.module = self.registry = self.globals = None
        if place is not None:          # rule 5: the frame eager names instead
            self.filename, self.lineno, frame = place.f_code.co_filename, place.f_lineno, place
        while frame is not None:       # the frame ``warnings.warn`` named (its stacklevel)
            if frame.f_code.co_filename == self.filename and frame.f_lineno == self.lineno:
                g = frame.f_globals
                self.module, self.globals = g.get("__name__"), g
                self.registry = g.setdefault("__warningregistry__", {})
                break
            frame = frame.f_back
        # not found: ``warn_explicit`` called with a place of its own (and, as here, no registry)

    def give(self):
        if not self.prefix:
            return self._give()
        with warnings.catch_warnings():       # as the function's own catch_warnings did
            warnings.filters[:0] = self.prefix
            self._give()

    def _give(self):
        # what is not known is left out, not None: Python's warn_explicit then shows nothing
        extra = {k: v for k, v in (("module", self.module), ("registry", self.registry),
                                   ("module_globals", self.globals)) if v is not None}
        warnings.warn_explicit(self.message, self.category, self.filename, self.lineno, **extra)

    def raises(self) -> bool:
        """Whether the filters of this moment make this warning an error (rule 3)."""
        text = str(self.message)
        module = os.path.splitext(os.path.basename(self.filename))[0] if self.module is None else self.module
        for action, text_re, category, module_re, lineno in (*self.prefix, *warnings.filters):
            if (text_re is None or text_re.match(text)) and issubclass(self.category, category) \
                    and (module_re is None or module_re.match(module)) and lineno in (0, self.lineno):
                return action == "error"
        return warnings.defaultaction == "error"


_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_COMPILER, _LOWERING = os.path.join(_PKG, "compiler.py"), os.path.join(_PKG, "_lowering") + os.sep
_JAX = (f"{os.sep}jax{os.sep}", f"{os.sep}jaxlib{os.sep}")


def eager_place(msg, origin, code):
    """The frame an eager call would name for ``msg``, given at ``origin`` (the frame that called
    ``warnings.warn``) inside the compiled function whose code is ``code``, where that differs
    from the frame ``msg`` names; else None (NOTE [warnings in a trace] rule 5). The compiled
    call's own frames do not count: compiler.py's anywhere, _lowering's and JAX's above the
    function (below it they are a checkpoint's or a region's, there eagerly too)."""
    f, above, target, k, kept = origin, False, None, 0, []
    while f is not None:
        name = f.f_code.co_filename
        if target is None and name == msg.filename and f.f_lineno == msg.lineno:
            target = f
        if not (name == _COMPILER or (above and (name.startswith(_LOWERING) or any(j in name for j in _JAX)))):
            kept.append(f)
        if target is None:
            k += 1
        elif len(kept) > k:
            break
        above = above or f.f_code is code
        f = f.f_back
    if target is None or len(kept) <= k or kept[k] is target:
        return None
    return kept[k]


def code_of(fn):
    """The code object a compiled function runs (a function, a bound method), or None."""
    fn = getattr(fn, "__func__", fn)
    return getattr(fn, "__code__", None)


class Relocated:
    """Around an eager call of a compiled function: a warning whose stacklevel names a frame of
    the compiled call is given again at the frame a plain call names (rule 5)."""

    __slots__ = ("code", "show")

    def __init__(self, code):
        self.code = code

    def __enter__(self):
        self.show = warnings._showwarnmsg
        warnings._showwarnmsg = self._show

    def __exit__(self, *exc):
        warnings._showwarnmsg = self.show

    def _show(self, msg):
        origin = sys._getframe(1)
        place = eager_place(msg, origin, self.code) if msg.filename == _COMPILER else None
        if place is None:
            return self.show(msg)
        TracedWarning(msg, origin, place=place).give()


_TRACING = [0]         # Catchers entered and not left
_IGNORE_ALL = [("ignore", None, Warning, None, 0)]


def _filters_version():
    """The interpreter's warning-filters version (what ``warnings._filters_mutated`` bumps), as
    a registry ``warn_explicit`` just checked records it."""
    saved, reg = warnings.filters, {}
    warnings.filters = _IGNORE_ALL
    try:
        warnings.warn_explicit("", Warning, "", 0, registry=reg)
    finally:
        warnings.filters = saved
    return reg.get("version")


class FiltersChanged:
    """First among a trace's kept warnings when the function changed the warning filters:
    each run makes the registries stale, as the eager call's filter changes do (rule 7)."""

    __slots__ = ()

    def give(self):
        warnings._filters_mutated()

    def raises(self) -> bool:
        return False


class _Registries:
    """NOTE [warnings in a trace] rule 1: while tracing, every warning registry is stale (a new
    filters version), so a place shown before reaches the filters; afterwards the registries
    that were current hold what they held again, current."""

    def __init__(self):
        self.before = _filters_version()
        self.saved = []
        regs = [warnings.onceregistry]
        for m in list(sys.modules.values()):
            d = getattr(m, "__dict__", None)
            r = d.get("__warningregistry__") if type(d) is dict else None
            if type(r) is dict and r:
                regs.append(r)
        self.saved = [(r, dict(r)) for r in regs if r.get("version") == self.before]
        warnings._filters_mutated()
        self.during = _filters_version()

    def restore(self) -> bool:
        """Put the registries back; False where the function changed the filters (eager's
        registries are stale then too: nothing to put back)."""
        if self.before is None:
            return True
        if _filters_version() != self.during:
            return False
        for r, held in self.saved:
            r.update(held)
            r["version"] = self.during
        return True


def _redecide(msg, frame):
    """Show ``msg`` (which came through ``_KEEP``) as the filters without ``_KEEP`` decide."""
    saved = warnings.filters
    w = TracedWarning(msg, frame)
    _DECIDING.on = True
    try:
        warnings.filters = [f for f in saved if f is not _KEEP]
        w.give()
    finally:
        warnings.filters = saved
        _DECIDING.on = False


class Catcher:
    """Installed by ``capture.guard_output`` while the function is traced: keeps in ``warned``
    the warnings its runs must give again, and lets the others through (NOTE [warnings in a
    trace])."""

    def __init__(self, warned, code=None):
        self.warned, self.thread, self.code = warned, threading.get_ident(), code
        self.show = warnings._showwarnmsg
        self.handlers = (warnings.showwarning, warnings._showwarnmsg_impl)

    def __enter__(self):
        # a trace inside a trace (a region the function traces) finds the registries stale already
        self.registries = _Registries() if not _TRACING[0] else None
        _TRACING[0] += 1
        warnings.filters.insert(0, _KEEP)     # not a filters change (that would reset registries)
        warnings._showwarnmsg = self._show
        return self

    def __exit__(self, *exc):
        warnings._showwarnmsg = self.show
        _TRACING[0] -= 1
        if self.registries is not None and not self.registries.restore():
            self.warned.insert(0, FiltersChanged())      # rule 7
        flt = warnings.filters
        for i, f in enumerate(flt):
            if f is _KEEP:
                del flt[i]
                break

    def _show(self, msg):
        if getattr(_DECIDING, "on", False):
            return self.show(msg)
        frame = sys._getframe(1)
        flt = warnings.filters
        at = next((i for i, f in enumerate(flt) if f is _KEEP), None)
        once = (_warn.ISSUING_ONCE[0] and not _warn.WARN_ALWAYS[0]) or SAYING[0]
        name = msg.filename
        place = eager_place(msg, frame, self.code) \
            if name == _COMPILER or name.startswith(_LOWERING) or any(j in name for j in _JAX) else None
        if threading.get_ident() != self.thread or once or (place is None and f"{os.sep}jax" in name) \
                or (warnings.showwarning, warnings._showwarnmsg_impl) != self.handlers:
            if at is None:
                return self.show(msg)
            return _redecide(msg, frame)      # rule 4
        self.warned.append(TracedWarning(msg, frame, tuple(flt[:at]) if at else (), place))
        return None


class KeptBackward:
    """A region's backward program (``fn(pullback, cts)``) whose first run, the one that traces
    it, keeps the warnings the trace gives, and whose every run gives them (NOTE [warnings in a
    trace] rule 6). One per region: its pullback's structure is the region's own, so that first
    run always traces."""

    __slots__ = ("program", "kept")

    def __init__(self, program):
        self.program, self.kept = program, None

    def __call__(self, pullback, cts):
        if self.kept is None:
            kept = []
            with Catcher(kept):
                out = self.program(pullback, cts)
            self.kept = tuple(kept)
        else:
            out = self.program(pullback, cts)
        for w in self.kept:
            w.give()
        return out
