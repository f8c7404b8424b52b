"""Run one seed program with real torch and with tracegrad; compare what each observes.

A seed program is ``program(torch, log)``: ``torch`` is the module under test (real
``torch`` or ``tracegrad``), ``log(name, value)`` records an observation.  Values are
normalised before comparison:

* Tensor -> ("tensor", dtype name, shape, numpy values)   (values allclose)
* autograd Node (``grad_fn``) -> ("node", type(node).__name__)
* torch.Size / tuple / list -> list of normalised items; dict -> sorted items
* numpy arrays / numbers -> compared with allclose (rtol=1e-5, atol=1e-6, NaN == NaN);
  for a tensor whose largest |value| m exceeds 1, atol is 1e-6 * m: float32 sums of
  O(m) terms (conv/matmul grads) carry absolute rounding error of that order, and
  torch and XLA sum in different orders
* integer and bool tensors -> exactly equal
* str / bool / None -> compared with ==

Everything a program prints to stdout is captured and compared as the last log
entry ("<stdout>"), line by line: hook firing order and reprs shown by the seeds
are observations too.

Random streams differ between torch and tracegrad, so programs never compare values
made by randn/rand: use ``randn(torch, shape, seed)`` (numpy RandomState) and
``init_params(torch, module, seed)`` for deterministic inputs and weights.

``TRACEGRAD_SEEDS_TORCH_ONLY=1`` runs only the torch side (to validate programs).
"""

import contextlib
import importlib
import io
import os

import numpy as np
import pytest

RTOL = 1e-5
ATOL = 1e-6

_SUBMODULES = (
    "nn", "nn.functional", "nn.init", "nn.modules.module", "autograd",
    "autograd.graph", "autograd.function", "optim", "optim.lr_scheduler",
    "utils", "utils.data", "utils.checkpoint",
)

_torch_ready = False


def _load(name):
    mod = importlib.import_module(name)
    for sub in _SUBMODULES:
        try:
            importlib.import_module(f"{name}.{sub}")
        except ImportError:
            pass  # a missing submodule shows up as an AttributeError in the program
    return mod


def get_torch():
    global _torch_ready
    torch = pytest.importorskip("torch")
    if not _torch_ready:
        torch.set_num_threads(1)
        _load("torch")
        _torch_ready = True
    return torch


def get_tracegrad():
    return _load("tracegrad")


# ----------------------------------------------------------------- helpers for programs

def np_randn(shape, seed, scale=1.0):
    """float32 standard-normal numpy array from a fixed RandomState."""
    rs = np.random.RandomState(seed)
    return (rs.standard_normal(shape) * scale).astype(np.float32)


def randn(torch, shape, seed, requires_grad=False, scale=1.0, dtype=None):
    """Deterministic stand-in for ``torch.randn(*shape)``."""
    arr = np_randn(shape, seed, scale)
    if dtype is not None:
        return torch.tensor(arr, dtype=dtype, requires_grad=requires_grad)
    return torch.tensor(arr, requires_grad=requires_grad)


def init_params(torch, module, seed, scale=0.3):
    """Overwrite every parameter of ``module`` (in named_parameters order) with
    deterministic uniform(-scale, scale) values; returns the module."""
    rs = np.random.RandomState(seed)
    with torch.no_grad():
        for _, p in module.named_parameters():
            shape = tuple(p.shape)
            arr = rs.uniform(-scale, scale, size=shape).astype(np.float32)
            p.copy_(torch.tensor(arr))
    return module


def grad_fn_name(t):
    """type(t.grad_fn).__name__, or None."""
    return None if t.grad_fn is None else type(t.grad_fn).__name__


# ----------------------------------------------------------------- normalisation

def _is_tensor(torch, v):
    return isinstance(v, torch.Tensor)


def _is_node(v):
    return hasattr(v, "next_functions") and hasattr(v, "name") and callable(v.name)


def _dtype_name(d):
    return str(d).rsplit(".", 1)[-1]


def _norm(torch, v):
    if v is None or isinstance(v, (bool, str, np.bool_)):
        return bool(v) if isinstance(v, np.bool_) else v
    if _is_tensor(torch, v):
        t = v.detach()
        arr = np.array(t.numpy(), copy=True)
        return ("tensor", _dtype_name(t.dtype), tuple(int(s) for s in t.shape), arr)
    if _is_node(v):
        return ("node", type(v).__name__)
    if isinstance(v, type) and issubclass(v, BaseException):
        return v.__name__
    if isinstance(v, (int, float, np.integer, np.floating)):
        return v
    if isinstance(v, np.ndarray):
        return ("ndarray", str(v.dtype), v.shape, v)
    if isinstance(v, dict):
        return ("dict", [(_norm(torch, k), _norm(torch, x)) for k, x in v.items()])
    if isinstance(v, (tuple, list)):  # includes torch.Size, named tuples
        return [_norm(torch, x) for x in v]
    if type(v).__module__.split(".")[0] in ("torch", "tracegrad") and "dtype" in type(v).__name__:
        return ("dtype", _dtype_name(v))
    raise TypeError(f"seed log: cannot normalise {type(v).__name__}: {v!r}")


def run_program(mod, program):
    entries = []

    def log(name, value):
        entries.append((name, _norm(mod, value)))

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        program(mod, log)
    entries.append(("<stdout>", buf.getvalue()))
    return entries


# ----------------------------------------------------------------- comparison

def _same(a, b, path):
    """Return None when equal, else a message."""
    if isinstance(a, tuple) and a and a[0] in ("tensor", "ndarray"):
        if not (isinstance(b, tuple) and b and b[0] == a[0]):
            return f"{path}: torch={_short(a)} tracegrad={_short(b)}"
        if a[1] != b[1]:
            return f"{path}: dtype torch={a[1]} tracegrad={b[1]}"
        if tuple(a[2]) != tuple(b[2]):
            return f"{path}: shape torch={a[2]} tracegrad={b[2]}"
        x, y = np.asarray(a[3]), np.asarray(b[3])
        if x.dtype == bool or y.dtype == bool or x.dtype.kind in "iu":
            if np.array_equal(x, y):
                return None
            return f"{path}: values torch={x!r} tracegrad={y!r}"
        else:
            xf = x.astype(np.float64)
            finite = np.abs(xf[np.isfinite(xf)])
            atol = ATOL * max(1.0, float(finite.max()) if finite.size else 1.0)
            ok = np.allclose(xf, y.astype(np.float64), rtol=RTOL, atol=atol, equal_nan=True)
        if ok:
            return None
        if x.size <= 8:
            return f"{path}: values torch={x!r} tracegrad={y!r}"
        xf, yf = x.astype(np.float64), y.astype(np.float64)
        bad = ~np.isclose(xf, yf, rtol=RTOL, atol=atol, equal_nan=True)
        idx = tuple(int(i[0]) for i in np.nonzero(bad))
        return (f"{path}: {int(bad.sum())}/{x.size} values differ, max abs diff "
                f"{np.nanmax(np.abs(xf - yf)):.3g}; first at {idx}: torch={xf[idx]!r} "
                f"tracegrad={yf[idx]!r}")
    if isinstance(a, tuple):
        if not isinstance(b, tuple) or len(a) != len(b):
            return f"{path}: torch={_short(a)} tracegrad={_short(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            m = _same(x, y, f"{path}[{i}]")
            if m:
                return m
        return None
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return f"{path}: torch={_short(a)} tracegrad={_short(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            m = _same(x, y, f"{path}[{i}]")
            if m:
                return m
        return None
    if isinstance(a, (bool, str)) or a is None or isinstance(b, (bool, str)) or b is None:
        return None if (type(a) is type(b) and a == b) else f"{path}: torch={a!r} tracegrad={b!r}"
    if isinstance(a, (int, float, np.integer, np.floating)):
        if not isinstance(b, (int, float, np.integer, np.floating)) or isinstance(b, bool):
            return f"{path}: torch={a!r} tracegrad={b!r}"
        ok = np.allclose(float(a), float(b), rtol=RTOL, atol=ATOL, equal_nan=True)
        return None if ok else f"{path}: torch={a!r} tracegrad={b!r}"
    return None if a == b else f"{path}: torch={a!r} tracegrad={b!r}"


def _short(v, n=300):
    s = repr(v)
    return s if len(s) <= n else s[:n] + "..."


def _stdout_diff(a, b):
    la, lb = a.splitlines(), b.splitlines()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "<missing>"
        y = lb[i] if i < len(lb) else "<missing>"
        if x != y:
            return f"stdout line {i + 1}:\n  torch    : {x!r}\n  tracegrad: {y!r}"
    return "stdout differs"


def compare(ref, got):
    for i in range(min(len(ref), len(got))):
        (ka, va), (kb, vb) = ref[i], got[i]
        if ka != kb:
            raise AssertionError(
                f"log entry {i}: torch logged {ka!r}, tracegrad logged {kb!r}\n"
                f"torch keys: {[k for k, _ in ref]}\ntracegrad keys: {[k for k, _ in got]}")
        if ka == "<stdout>":
            if va != vb:
                raise AssertionError(_stdout_diff(va, vb) + f"\n--- torch stdout:\n{va}"
                                     f"\n--- tracegrad stdout:\n{vb}")
            continue
        msg = _same(va, vb, ka)
        if msg:
            raise AssertionError(f"log entry {i} ({ka!r}) differs: {msg}")
    if len(ref) != len(got):
        raise AssertionError(
            f"torch logged {len(ref)} entries, tracegrad {len(got)}\n"
            f"torch keys: {[k for k, _ in ref]}\ntracegrad keys: {[k for k, _ in got]}")


def run_both(program):
    """Run ``program`` with torch (the oracle) and tracegrad; assert equal logs."""
    torch = get_torch()
    ref = run_program(torch, program)
    if os.environ.get("TRACEGRAD_SEEDS_TORCH_ONLY"):
        return ref
    tg = get_tracegrad()
    got = run_program(tg, program)
    compare(ref, got)
    return ref
