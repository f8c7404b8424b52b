"""Mirrors ``torch.utils.collect_env`` (``python -m torch.utils.collect_env``, pasted into bug
reports): ``get_env_info()``, ``get_pretty_env_info()`` and ``main()`` report tracegrad's own
environment -- tracegrad, the torch semantics it follows, JAX/jaxlib, XLA's backend and devices,
Python and the OS -- not a torch build's (no CUDA/cuDNN/MKL of its own).
Run it as ``python -m tracegrad.utils.collect_env``."""
from __future__ import annotations

import os
import platform
import sys
from collections import namedtuple

from ..__config__ import _version   # the installed version of a distribution, or None

__all__ = ["SystemEnv", "get_env_info", "get_pretty_env_info", "main"]

SystemEnv = namedtuple("SystemEnv", [
    "tracegrad_version", "torch_semantics_version", "jax_version", "jaxlib_version", "xla_backend",
    "xla_devices", "is_cuda_available", "python_version", "python_platform", "os", "cpu_count",
])




def get_env_info() -> SystemEnv:
    """Mirrors ``torch.utils.collect_env.get_env_info``: a ``SystemEnv`` namedtuple of this
    environment's facts (fields: tracegrad_version, torch_semantics_version, jax_version,
    jaxlib_version, xla_backend, xla_devices, is_cuda_available, python_version,
    python_platform, os, cpu_count)."""
    import jax
    from ..version import __version__ as torch_semantics
    from .. import cuda
    return SystemEnv(
        tracegrad_version=_version("tracegrad"), torch_semantics_version=str(torch_semantics),
        jax_version=jax.__version__, jaxlib_version=_version("jaxlib"), xla_backend=jax.default_backend(),
        xla_devices=[str(d) for d in jax.devices()], is_cuda_available=cuda.is_available(),
        python_version=f"{sys.version.replace(chr(10), ' ')} ({sys.maxsize.bit_length() + 1}-bit runtime)",
        python_platform=platform.platform(), os=f"{platform.system()} {platform.release()}",
        cpu_count=os.cpu_count())


def get_pretty_env_info() -> str:
    """Mirrors ``torch.utils.collect_env.get_pretty_env_info``: ``get_env_info()`` as
    ``Name: value`` lines, for pasting into a bug report."""
    env = get_env_info()
    rows = [("tracegrad version", env.tracegrad_version),
            ("torch semantics", env.torch_semantics_version),
            ("JAX version", env.jax_version), ("jaxlib version", env.jaxlib_version),
            ("XLA backend", env.xla_backend), ("XLA devices", ", ".join(env.xla_devices)),
            ("Is CUDA available", env.is_cuda_available),
            ("CUDA/cuDNN/MKL/oneDNN/OpenMP", "none of tracegrad's own (XLA compiles the kernels)"),
            ("Python version", env.python_version), ("Python platform", env.python_platform),
            ("OS", env.os), ("CPU count", env.cpu_count)]
    return "\n".join(f"{name}: {'Could not collect' if value is None else value}" for name, value in rows)


def main() -> None:
    """Mirrors ``torch.utils.collect_env.main``: prints ``Collecting environment
    information...`` and then ``get_pretty_env_info()``."""
    print("Collecting environment information...")
    print(get_pretty_env_info())


if __name__ == "__main__":
    main()
