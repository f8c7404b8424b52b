"""Mirrors ``torch.__config__``: ``show()`` and ``parallel_info()`` describe how *tracegrad*
is built and runs (its version, the torch semantics it follows, JAX/jaxlib and XLA's backend
and devices), not a torch build: there is no compiler, MKL, oneDNN or OpenMP of its own."""
from __future__ import annotations

import os


def _version(dist):
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def show() -> str:
    """Mirrors ``torch.__config__.show``: a multi-line string (starting ``tracegrad built
    with:``) naming the tracegrad package version, the torch version whose semantics it follows,
    JAX, jaxlib and the XLA backend it runs on, and saying which torch build options (MKL,
    oneDNN, OpenMP, CUDA) it does not have."""
    import jax
    from .version import __version__ as torch_semantics
    lines = ["tracegrad built with:",
             f"  - tracegrad {_version('tracegrad') or 'unknown'} (torch {torch_semantics} semantics)",
             f"  - JAX {jax.__version__}, jaxlib {_version('jaxlib') or 'unknown'}",
             f"  - XLA backend: {jax.default_backend()}",
             "  - no MKL, oneDNN (MKL-DNN) or OpenMP: XLA compiles every kernel",
             "  - CUDA: through JAX's GPU backend when present (no CUDA build of its own)",
             ""]
    return "\n".join(lines)


def parallel_info() -> str:
    """Mirrors ``torch.__config__.parallel_info``: the thread settings as torch prints them
    (``get_num_threads()`` and ``get_num_interop_threads()``, which tracegrad records but XLA
    does not apply), the CPU count, and XLA's backend and devices."""
    import jax
    from . import get_num_interop_threads, get_num_threads
    devices = ", ".join(str(d) for d in jax.devices())
    return "\n".join(["ATen/Parallel:",
                      f"\tat::get_num_threads() : {get_num_threads()}",
                      f"\tat::get_num_interop_threads() : {get_num_interop_threads()}",
                      "OpenMP not found",
                      "MKL not found",
                      "MKLDNN not found",
                      f"os.cpu_count() : {os.cpu_count()}",
                      f"XLA backend : {jax.default_backend()} ({devices})",
                      "XLA sizes its own CPU thread pool when it starts (set_num_threads is recorded only)",
                      ""])


def _cxx_flags() -> str:
    """Mirrors ``torch.__config__._cxx_flags``: tracegrad compiles no C++ of its own: an empty string."""
    return ""
