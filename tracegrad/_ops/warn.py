"""Warnings that point at the user's line, as torch's do.

torch's Python-level warnings name the caller's file and line (``stacklevel``), and its C++ ones
the Python line that made the call. A fixed ``stacklevel`` here breaks whenever a wrapper sits
between the user and the function that warns (``accepts_out``'s ``out=`` layer, ``with_x64``,
``method_form``, a module's ``__call__``), so ``warn`` counts the frames instead: the warning is
attributed to the first frame outside the tracegrad package. Every warning a user's call can reach
goes through ``warn`` or ``warn_once`` (round 53 moved the last fixed-``stacklevel`` ones); the
exception is what tracegrad.compile says about itself (``_lowering.warned.say``), which names the
compiled call's frames on purpose.
"""
from __future__ import annotations

import contextlib
import os
import sys
import warnings

from .. import _state

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# a generator context manager of tracegrad's (``@contextlib.contextmanager``: sdp_kernel, ...) runs
# its body under contextlib's ``__enter__``/``__exit__`` (and ``ExitStack.enter_context``): those
# frames stand between it and the user's ``with`` line, so they are passed over as tracegrad's are
_CONTEXTLIB = os.path.abspath(contextlib.__file__)


def _user_level(frame) -> int:
    """The ``stacklevel`` that names the first frame above ``frame`` (the caller of ``warn``,
    level 2) outside tracegrad, contextlib's frames directly above tracegrad's passed over too."""
    level = 2
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE)
                                 or frame.f_code.co_filename == _CONTEXTLIB):
        frame, level = frame.f_back, level + 1
    return level


def warn(message, category=UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the innermost caller outside tracegrad
    (``warnings.catch_warnings(record=True)`` sees the user's filename and line, and the
    ``"default"`` filter shows it once per user line, as torch's)."""
    warnings.warn(message, category, stacklevel=_user_level(sys._getframe(1)))


_WARNED_ONCE: set = set()
# torch.set_warn_always(True): once-per-process warnings are given every time, as torch's
# TORCH_WARN_ONCE does under that flag (read by tracegrad.set_warn_always/is_warn_always_enabled)
WARN_ALWAYS = [False]
# > 0 while ``warn_once`` issues its warning: a compiled trace lets it through even under an
# "always" filter (eager gives it once per process too), unless WARN_ALWAYS is set
ISSUING_ONCE = [0]


def warn_once(message, category=UserWarning, key=None, follows_warn_always=True) -> None:
    """``warn`` the first time ``message`` (or another message under the same ``key``) is given
    in this process only, as torch's ``TORCH_WARN_ONCE`` deprecations (``torch.lu``,
    ``torch.cross`` without ``dim``, ``meshgrid`` without ``indexing``, ``TypedStorage``, the
    deprecated overloads of ``add_``/``addcmul``...). Every time under ``set_warn_always(True)``,
    a setting a compiled trace then holds to (``note_setting_read``: turned on between calls, the
    next call traces again and warns, as eagerly). ``follows_warn_always=False``: once even then,
    as torch's Python once-flags that have a switch of their own (TypedStorage's)."""
    if follows_warn_always:
        _state.note_setting_read()
    key = message if key is None else key
    if (follows_warn_always and WARN_ALWAYS[0]) or key not in _WARNED_ONCE:
        _WARNED_ONCE.add(key)
        level = _user_level(sys._getframe(1))
        ISSUING_ONCE[0] += 1
        try:
            warnings.warn(message, category, stacklevel=level)
        finally:
            ISSUING_ONCE[0] -= 1
