"""Helpers shared by the ported PyTorch test files: values as float64 NumPy arrays, a tolerant
equality with shapes included, and fixed normal draws both libraries see alike."""
import numpy as np


def to_np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


def eq(a, b, tol=1e-5):
    """``a`` and ``b`` (tensors or numbers) are equal within ``tol``, shapes included."""
    a = to_np(a) if hasattr(a, "detach") else np.asarray(a, dtype=np.float64)
    b = to_np(b) if hasattr(b, "detach") else np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol)


def rn(T, *shape, seed=0, dtype="float32", grad=False):
    """A fixed numpy normal draw as a tensor (both libraries see the same values)."""
    a = np.random.RandomState(seed).standard_normal(shape).astype(dtype)
    return T.tensor(a, requires_grad=grad)


def ported_library(flag):
    """The library a harness port runs on: torch 2.13 when the environment variable ``flag`` is set
    (the oracle run), else tracegrad. Returns (oracle?, the library, its testing._internal
    common_utils, common_device_type and common_dtype modules)."""
    import importlib
    import os

    oracle = bool(os.environ.get(flag))
    lib = importlib.import_module("torch" if oracle else "tracegrad")
    internal = lib.__name__ + ".testing._internal."
    return (oracle, lib, *(importlib.import_module(internal + m)
                           for m in ("common_utils", "common_device_type", "common_dtype")))


def oracle_test(flag, path):
    """The ``test_oracle_torch_passes`` of a port that reads its library from the environment
    variable ``flag`` (``TI34_ORACLE``): the file at ``path``, run again in a subprocess on
    torch 2.13 itself (``flag=1``), must pass, so every expectation in it is torch's. Skipped
    inside that oracle run."""
    import os
    import subprocess
    import sys

    import pytest

    @pytest.mark.skipif(bool(os.environ.get(flag)), reason="already the oracle run")
    def test_oracle_torch_passes():
        pytest.importorskip("torch")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(path))))
        env[flag] = "1"
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", path],
                           env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    return test_oracle_torch_passes
