"""torch's thread-count settings (``set_num_threads`` and friends): recorded, not applied (XLA
sizes its CPU thread pool once, when it starts)."""
from __future__ import annotations

import os

from .. import _state

_num_threads = {"intra": os.cpu_count() or 1, "interop": os.cpu_count() or 1}


def _check_num_threads(api, n):
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"{api} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{api} expects a positive integer")


def set_num_threads(n):
    """Mirrors ``torch.set_num_threads``: records ``n`` for ``get_num_threads``. XLA sizes its CPU
    thread pool when it starts, so this does not change how many threads tracegrad's kernels use.
    RuntimeError, as torch, unless ``n`` is a positive int."""
    _check_num_threads("set_num_threads", n)
    _num_threads["intra"] = n


def get_num_threads():
    """Mirrors ``torch.get_num_threads``: the value last set (default: the number of CPUs)."""
    _state.note_setting_read()
    return _num_threads["intra"]


def set_num_interop_threads(n):
    """Mirrors ``torch.set_num_interop_threads``: recorded only (see ``set_num_threads``).
    RuntimeError, as torch, unless ``n`` is a positive int."""
    _check_num_threads("set_num_interop_threads", n)
    _num_threads["interop"] = n


def get_num_interop_threads():
    """Mirrors ``torch.get_num_interop_threads``: the value last set (default: the number of CPUs)."""
    _state.note_setting_read()
    return _num_threads["interop"]
