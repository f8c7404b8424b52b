"""Shared runner of the ported linear-algebra and spectral tests (test_linalg_ported.py,
test_spectral_ported.py): a program ``fn(T)`` runs once with torch (the oracle) and once with
tracegrad; both return equal values (dtype, shape, values within a tolerance scaled by the
largest magnitude) or both raise the same builtin exception class.

Unlike ``parity.same_outcome`` the tolerance is per call (float32 factorizations and transforms
of a few dozen points round differently in LAPACK/pocketfft and XLA), and torch tensors with a
lazy conjugate or negative bit (``fft.ifft``'s results, ``.mH``) are resolved before reading.
Inputs come from numpy RandomState streams (``rand``), never from either library's RNG."""
from __future__ import annotations

import numpy as np

import tracegrad
from parity import get_torch, outcome


def rand(T, *shape, dtype="float64", seed=0, lo=None, hi=None):
    """A fixed tensor of ``T``: standard normals (complex: independent real and imaginary
    parts) or a uniform ``[lo, hi)``."""
    rs = np.random.RandomState(seed)
    draw = (lambda: rs.standard_normal(shape)) if lo is None else (lambda: rs.uniform(lo, hi, shape))
    a = draw() + 1j * draw() if "complex" in dtype else draw()
    return T.tensor(a, dtype=getattr(T, dtype))


def _observe(T, v):
    if isinstance(v, T.Tensor):
        t = v.detach()
        if hasattr(t, "resolve_conj"):
            t = t.resolve_conj().resolve_neg()
        return ("tensor", str(t.dtype).rsplit(".", 1)[-1], tuple(t.shape), np.array(t.numpy(), copy=True))
    if isinstance(v, (tuple, list)):
        return [_observe(T, x) for x in v]
    if isinstance(v, T.dtype):
        return ("dtype", str(v).rsplit(".", 1)[-1])
    if isinstance(v, T.Size):
        return tuple(v)
    return v


def _diff(a, b, rtol, atol, path):
    if isinstance(a, tuple) and a and a[0] == "tensor":
        if not (isinstance(b, tuple) and b and b[0] == "tensor"):
            return f"{path}: torch gave a {a[1]} tensor {a[2]}, tracegrad {str(b)[:200]}"
        if a[1:3] != b[1:3]:
            return f"{path}: torch {a[1]} {a[2]}, tracegrad {b[1]} {b[2]}"
        x, y = a[3], b[3]
        if x.dtype.kind in "biu":
            return None if np.array_equal(x, y) else f"{path}: torch {x} tracegrad {y}"
        finite = np.abs(x[np.isfinite(x)])
        scale = max(1.0, float(finite.max()) if finite.size else 1.0)
        rtol, atol = max(rtol, TOL[a[1]][0]), max(atol, TOL[a[1]][1])
        if np.allclose(y, x, rtol=rtol, atol=atol * scale, equal_nan=True):
            return None
        return f"{path}: max diff {np.nanmax(np.abs(x - y)):.3g}\ntorch {x}\ntracegrad {y}"
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return f"{path}: torch {str(a)[:300]} tracegrad {str(b)[:300]}"
        for i, (p, q) in enumerate(zip(a, b)):
            msg = _diff(p, q, rtol, atol, f"{path}[{i}]")
            if msg:
                return msg
        return None
    if isinstance(a, float) and isinstance(b, float):
        return None if np.isclose(b, a, rtol=rtol, atol=atol, equal_nan=True) else f"{path}: torch {a} tracegrad {b}"
    return None if a == b else f"{path}: torch {a!r} tracegrad {b!r}"


def agree(fn, rtol=0.0, atol=0.0):
    """Run ``fn`` with torch and tracegrad: equal results or the same exception class. Values
    compare within the larger of ``rtol``/``atol`` and their dtype's ``TOL``, ``atol`` scaled by
    the largest finite |value| of torch's."""
    want = outcome(get_torch(), fn, _observe)
    got = outcome(tracegrad, fn, _observe)
    msg = _diff(want, got, rtol, atol, "result")
    assert msg is None, msg


TOL = {"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5), "float64": (1e-8, 1e-10), "complex128": (1e-8, 1e-10),
       "float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2)}
