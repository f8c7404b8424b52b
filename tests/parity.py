"""The one parity runner of tracegrad's tests (DESIGN 1, STYLE 11): run the same program with
torch (the oracle) and with tracegrad, and compare what each observes.

Import it as ``from parity import ...`` (tests/conftest.py's folder is on ``sys.path`` under
pytest's default import mode). One runner per shape of program, sharing the oracle loading and
the comparisons:

* ``check_parity(case, torch)``: one op-table line ``C(name, fn, inputs)``. ``fn(mod, *tensors)``
  runs once with ``mod=torch`` and once with ``mod=tracegrad`` on tensors built from the same
  numpy ``inputs`` (other objects pass through unchanged). For every tensor the program returns
  (tuples and namedtuples are flattened) it compares values (allclose with dtype-aware
  tolerances), dtype names, shapes, ``requires_grad`` and ``grad_fn`` class names; then it
  backpropagates ``sum((out * w).sum())`` with fixed random weights ``w`` and compares the
  gradient of every float input (``None`` included). When torch raises, tracegrad must raise
  the same builtin exception class. Inputs: ``F(*shape)`` float32 normals (``lo``/``hi`` give a
  uniform range instead), ``D`` float64, ``H`` float16, ``I(*shape, hi=)`` int64, ``B`` bool,
  ``A(array)`` a fixed array. ``record_ops`` collects the table ops a block dispatches.
* ``run_both(program)``: a whole program ``program(torch, log)`` that calls ``log(name, value)``;
  values are normalised (``_norm``) and compared with tolerances, and everything it prints is
  compared line by line (hook firing order and reprs are observations too; the module's name and
  object addresses aside).
* ``both(program)``: ``program(mod, log)`` appending plain Python values to the list ``log``;
  the two lists must be equal.
* ``check_module(build, inputs)``: an ``nn`` module built on both sides, tracegrad's given
  torch's initial parameters and buffers; compares output, ``grad_fn`` name, parameter and
  input gradients and buffers after one forward/backward.
* The optimizer problem (``make_params``, ``inputs``, ``loss_fn``, ``train``): one small
  regression run for a number of steps with ``mod.optim.<name>``.

Random streams differ between torch and tracegrad, so programs never compare values made by
``randn``/``rand``: use ``randn(torch, shape, seed)``/``np_randn`` (numpy RandomState) and
``init_params(torch, module, seed)``. ``TRACEGRAD_SEEDS_TORCH_ONLY=1`` runs only the torch side
of ``run_both`` (to validate programs).
"""
from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import warnings

import numpy as np
import pytest

import tracegrad
from tracegrad._ops import registry as _registry

# ---- the oracle and the common comparisons ------------------------------------------------------
RTOL, ATOL = 1e-5, 1e-5

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
    """The oracle (skips the test when torch is not installed), at one thread, with the
    submodules programs use already imported."""
    global _torch_ready
    torch = pytest.importorskip("torch")
    if not _torch_ready:
        torch.set_num_threads(1)
        _load("torch")
        _torch_ready = True
    return torch


def get_tracegrad():
    return _load("tracegrad")


def to_np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def close(a, b, rtol=RTOL, atol=ATOL):
    """allclose of two tensors (either module) or arrays."""
    np.testing.assert_allclose(to_np(a), to_np(b), rtol=rtol, atol=atol)


def _dtype_name(d):
    return str(d).rsplit(".", 1)[-1]


# ---- op-table cases: check_parity ---------------------------------------------------------------
_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2), "float32": (1e-4, 1e-5),
        "float64": (1e-7, 1e-9), "complex64": (1e-4, 1e-5), "complex128": (1e-7, 1e-9)}

_counter = [0]


def _rs():
    _counter[0] += 1
    return np.random.RandomState(_counter[0])


def F(*shape, lo=None, hi=None, dtype=np.float32):
    """A float array; normal values unless a uniform range [lo, hi) is given."""
    rs = _rs()
    if lo is None:
        return rs.standard_normal(shape).astype(dtype)
    return rs.uniform(lo, hi, shape).astype(dtype)


def D(*shape, lo=None, hi=None):
    return F(*shape, lo=lo, hi=hi, dtype=np.float64)


def H(*shape, lo=None, hi=None):
    return F(*shape, lo=lo, hi=hi, dtype=np.float16)


def I(*shape, lo=0, hi=5, dtype=np.int64):  # noqa: E743
    return _rs().randint(lo, hi, shape).astype(dtype)


def B(*shape):
    return _rs().rand(*shape) > 0.5


class A:
    """A fixed array (any dtype) used as a tensor input; ``grad=False`` keeps a float input
    from requiring grad."""

    def __init__(self, arr, grad=True):
        self.arr, self.grad = np.asarray(arr), grad


class C:
    """One parity case. ``grad=False`` skips gradients; ``tol=(rtol, atol)`` overrides;
    ``no_grad_fn`` skips the grad_fn name comparison; ``raises`` asserts torch raises."""

    __slots__ = ("name", "fn", "inputs", "grad", "tol", "check_grad_fn", "raises", "jax")

    def __init__(self, name, fn, inputs=(), *, grad=True, tol=None, no_grad_fn=False, raises=False):
        self.name, self.fn, self.inputs = name, fn, list(inputs)
        self.grad, self.tol, self.check_grad_fn, self.raises = grad, tol, not no_grad_fn, raises

    def __repr__(self):
        return self.name


def params(cases):
    """``pytest.mark.parametrize`` arguments for a table of cases, ids from the names."""
    return pytest.mark.parametrize("case", cases, ids=[c.name for c in cases])


def _make_inputs(mod, inputs, grad):
    out = []
    for x in inputs:
        want_grad = grad
        if isinstance(x, A):
            x, want_grad = x.arr, grad and x.grad
        if isinstance(x, np.ndarray):
            rg = want_grad and x.dtype.kind == "f"
            out.append(mod.tensor(x.copy(), requires_grad=rg))
        else:
            out.append(x)
    return out


def _flatten(out):
    if isinstance(out, (tuple, list)):
        res = []
        for o in out:
            res.extend(_flatten(o))
        return res
    return [out]


def _observe(mod, out):
    obs = []
    for o in _flatten(out):
        if isinstance(o, mod.Tensor):
            gf = o.grad_fn
            v = o.detach()
            v = (v.float() if _dtype_name(o.dtype) == "bfloat16" else v).numpy()
            obs.append(("tensor", _dtype_name(o.dtype), tuple(o.shape), v,
                        o.requires_grad, None if gf is None else type(gf).__name__))
        elif isinstance(o, (bool, int, float, complex, str, type(None))):
            obs.append(("py", type(o).__name__, o))
        elif isinstance(o, mod.dtype):
            obs.append(("dtype", _dtype_name(o)))
        elif isinstance(o, mod.Size):
            obs.append(("size", tuple(o)))
        else:
            obs.append(("other", type(o).__name__))
    return obs


def _weights(obs):
    ws = []
    for i, o in enumerate(obs):
        if o[0] == "tensor":
            ws.append(np.random.RandomState(1000 + i).standard_normal(o[2]))
        else:
            ws.append(None)
    return ws


def run(mod, case, backward=True):
    """Run a case on one module: (observations, input grads) or ('raise', exception).
    ``backward=False`` skips the gradient pass."""
    ts = _make_inputs(mod, case.inputs, case.grad)
    try:
        out = case.fn(mod, *ts)
    except Exception as e:  # noqa: BLE001 -- compared against torch's class
        return ("raise", e), None
    obs = _observe(mod, out)
    grads = None
    if case.grad and backward:
        terms = []
        for o, w, (kind, *rest) in zip(_flatten(out), _weights(obs), obs):
            if kind == "tensor" and o.requires_grad and o.dtype.is_floating_point:
                terms.append((o * mod.tensor(w, dtype=o.dtype)).sum())
        leaves = [t for t in ts if isinstance(t, mod.Tensor) and t.requires_grad]
        if terms and leaves:
            loss = terms[0]
            for t in terms[1:]:
                loss = loss + t
            loss.backward()
            grads = [None if t.grad is None else t.grad.numpy() for t in leaves]
    return obs, grads


def _builtin_class(e):
    for k in type(e).__mro__:
        if k.__module__ == "builtins":
            return k
    return Exception


def _close_dtype(a, b, dtype, tol, what):
    rtol, atol = tol or _TOL.get(dtype, (0, 0))
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch {b.shape}"
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        np.testing.assert_allclose(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64),
                                   b.astype(np.complex128 if b.dtype.kind == "c" else np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


def check_parity(case, torch):
    """Run ``case`` with torch and tracegrad and compare everything they observe."""
    want, want_g = run(torch, case)
    got, got_g = run(tracegrad, case)
    if case.raises:
        assert want[0] == "raise", f"{case.name}: torch did not raise"
    if want[0] == "raise":
        cls = _builtin_class(want[1])
        assert got[0] == "raise", f"{case.name}: torch raised {cls.__name__}({want[1]}), tracegrad did not"
        assert isinstance(got[1], cls), f"{case.name}: torch raised {cls.__name__}, tracegrad {type(got[1]).__name__}: {got[1]}"
        return
    if got[0] == "raise":
        raise AssertionError(f"{case.name}: tracegrad raised {type(got[1]).__name__}: {got[1]}") from got[1]
    assert len(got) == len(want), f"{case.name}: {len(got)} outputs, torch {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        what = f"{case.name} output {i}"
        assert g[0] == w[0], f"{what}: {g[0]} vs torch {w[0]}"
        if w[0] == "tensor":
            assert g[1] == w[1], f"{what}: dtype {g[1]} != torch {w[1]}"
            assert g[2] == w[2], f"{what}: shape {g[2]} != torch {w[2]}"
            _close_dtype(g[3], w[3], w[1], case.tol, what)
            assert g[4] == w[4], f"{what}: requires_grad {g[4]} != torch {w[4]}"
            if case.check_grad_fn:
                assert g[5] == w[5], f"{what}: grad_fn {g[5]} != torch {w[5]}"
        elif w[0] == "py":
            assert g[1] == w[1], f"{what}: {g[1]} != torch {w[1]}"
            if isinstance(w[2], float):
                _close_dtype(g[2], w[2], "float64", case.tol, what)
            else:
                assert g[2] == w[2], f"{what}: {g[2]!r} != torch {w[2]!r}"
        else:
            assert g == w, f"{what}: {g} != torch {w}"
    assert (got_g is None) == (want_g is None), f"{case.name}: grads {got_g is not None} vs torch {want_g is not None}"
    if want_g is not None:
        # a gradient is as precise as the least precise dtype it went through
        out_tols = [_TOL.get(w[1], (0, 0)) for w in want if w[0] == "tensor"]
        for i, (g, w) in enumerate(zip(got_g, want_g)):
            assert (g is None) == (w is None), f"{case.name}: grad {i} is None: {g is None} vs torch {w is None}"
            if w is not None:
                tol = case.tol or max(out_tols + [_TOL.get(str(w.dtype), (0, 0))])
                _close_dtype(g, w, str(w.dtype), tol, f"{case.name} grad of input {i}")


class record_ops:
    """Context manager collecting the names of table ops dispatched (forward) inside it."""

    def __enter__(self):
        self.names = set()
        self._orig = _registry.Op.forward
        names, orig = self.names, self._orig

        def forward(op, static):
            names.add(op.name)
            return orig(op, static)
        _registry.Op.forward = forward
        return self

    def __exit__(self, *exc):
        _registry.Op.forward = self._orig


# ---- whole programs: run_both (a named, normalised log) and both (a plain list) ------------------
# Normalised values: Tensor -> ("tensor", dtype name, shape, numpy values); autograd Node ->
# ("node", type name); Size/tuple/list -> list of normalised items; dict -> items; numbers and
# arrays allclose (LOG_RTOL, LOG_ATOL; NaN == NaN) where a tensor whose largest |value| m exceeds 1
# gets atol LOG_ATOL * m (float32 sums of O(m) terms carry rounding error of that order, and torch
# and XLA sum in different orders); integer and bool tensors exactly; str/bool/None with ==.
LOG_RTOL, LOG_ATOL = 1e-5, 2e-6   # 2e-6: XLA's AVX-512 and AVX2 CPU kernels round differently (a conv stack's features, 1.7e-6)


def np_randn(shape, seed, scale=1.0):
    """float32 standard-normal numpy array from a fixed RandomState."""
    rs = np.random.RandomState(seed)
    return (rs.standard_normal(shape) * scale).astype(np.float32)


@contextlib.contextmanager
def seeded(seed=0):
    """Seed Python's and numpy's global streams for one run (a program drawing with
    ``random.sample``/``np.random``), restoring them afterwards."""
    import random
    py, npst = random.getstate(), np.random.get_state()
    random.seed(seed)
    np.random.seed(seed)
    try:
        yield
    finally:
        random.setstate(py)
        np.random.set_state(npst)


def randn(torch, shape, seed, requires_grad=False, scale=1.0, dtype=None):
    """Deterministic stand-in for ``torch.randn(*shape)``."""
    arr = np_randn(shape, seed, scale)
    if dtype is not None:
        return torch.tensor(arr, dtype=dtype, requires_grad=requires_grad)
    return torch.tensor(arr, requires_grad=requires_grad)


class SeededTorch:
    """A program's ``torch`` (``mod``) with its random draws from one seeded numpy stream:
    ``rand``/``randn(*size)``, ``rand_like``/``randn_like(x)`` give float32 tensors; every other
    name is the module's own. For a public program whose classes call ``torch.randn`` inside
    (noise samples, reparameterisation), so its code stays as written."""

    def __init__(self, mod, seed):
        self._mod = mod
        self._rs = np.random.RandomState(seed)

    def __getattr__(self, name):
        return getattr(self._mod, name)

    def _make(self, arr):
        return self._mod.tensor(arr.astype(np.float32))

    def rand(self, *size):
        return self._make(self._rs.uniform(0, 1, size))

    def randn(self, *size):
        return self._make(self._rs.standard_normal(size))

    def rand_like(self, x):
        return self.rand(*x.shape)

    def randn_like(self, x):
        return self.randn(*x.shape)


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


def same_step_runs(a, b, rtol, atol):
    """Two runs of a program's training steps, ``(per-step arrays, params dict, grads dict)``
    (the public-program rounds' compiled halves), equal within ``rtol``/``atol``."""
    assert len(a[0]) == len(b[0])
    for i, (xa, xb) in enumerate(zip(a[0], b[0])):
        for u, v in zip(xa, xb):
            np.testing.assert_allclose(u, v, rtol=rtol, atol=atol, err_msg=f"step {i}")
    for d in (1, 2):
        assert sorted(a[d]) == sorted(b[d])
        for n in a[d]:
            np.testing.assert_allclose(a[d][n], b[d][n], rtol=rtol, atol=atol, err_msg=n)


def step_arrays(*ts):
    """Detached NumPy copies of tensors (torch's or tracegrad's)."""
    return tuple(np.array(t.detach().numpy(), copy=True) for t in ts)


def grad_fn_name(t):
    """type(t.grad_fn).__name__, or None."""
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _is_tensor(torch, v):
    return isinstance(v, torch.Tensor)


def _is_node(v):
    return hasattr(v, "next_functions") and hasattr(v, "name") and callable(v.name)


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
    # once-per-process warnings (torch's TORCH_WARN_ONCE, tracegrad's warn_once) are given every
    # time: whether one shows in a program would depend on which earlier test of the worker
    # process made it first, on either side (Glow --no_lu's torch.qr failed CI that way)
    always = mod.is_warn_always_enabled()
    mod.set_warn_always(True)
    try:
        with contextlib.redirect_stdout(buf):
            program(mod, log)
    finally:
        mod.set_warn_always(always)
    entries.append(("<stdout>", buf.getvalue()))
    return entries


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
        else:   # complex values compare as complex (a float cast would drop the imaginary part)
            kind = np.complex128 if "c" in (x.dtype.kind, y.dtype.kind) else np.float64
            xf = x.astype(kind)
            finite = np.abs(xf[np.isfinite(xf)])
            atol = LOG_ATOL * max(1.0, float(finite.max()) if finite.size else 1.0)
            ok = np.allclose(xf, y.astype(kind), rtol=LOG_RTOL, atol=atol, equal_nan=True)
        if ok:
            return None
        if x.size <= 8:
            return f"{path}: values torch={x!r} tracegrad={y!r}"
        xf, yf = x.astype(kind), y.astype(kind)
        bad = ~np.isclose(xf, yf, rtol=LOG_RTOL, atol=atol, equal_nan=True)
        idx = tuple(int(i[0]) for i in np.nonzero(bad))
        return (f"{path}: {int(bad.sum())}/{x.size} values differ, max abs diff "
                f"{np.nanmax(np.abs(xf - yf)):.3g}; first at {idx}: torch={xf[idx]!r} "
                f"tracegrad={yf[idx]!r}")
    if isinstance(a, (tuple, list)):
        if not isinstance(b, tuple if isinstance(a, tuple) else list) or len(a) != len(b):
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
        ok = np.allclose(float(a), float(b), rtol=LOG_RTOL, atol=LOG_ATOL, equal_nan=True)
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


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def _same_printed(a: str, b: str) -> bool:
    """The same printed text, with the numbers in it equal within the log tolerances (``atol``
    at least one unit of the last printed digit): a float32 result printed to four digits may
    round to the neighbouring digit on another CPU, where torch's kernels sum in another order.
    Integers (counts, indices, shapes) must print the same."""
    if _NUMBER.split(a) != _NUMBER.split(b):
        return False
    for x, y in zip(_NUMBER.findall(a), _NUMBER.findall(b)):
        if x == y:
            continue
        if "." not in x or "." not in y:
            return False
        mantissa, _, exponent = x.lower().partition("e")
        unit = 10.0 ** (int(exponent or 0) - len(mantissa.split(".")[1]))
        if not np.isclose(float(x), float(y), rtol=LOG_RTOL, atol=max(LOG_ATOL, unit)):
            return False
    return True


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _printed(text: str) -> str:
    """Printed text with what differs by nature between the two runs made equal: the module's
    name (``dtype=tracegrad.float32``, ``<class 'tracegrad.Tensor'>``) and object addresses
    (``<MulBackward0 object at 0x7f...>``)."""
    return _ADDRESS.sub(" at 0x...", text.replace("tracegrad", "torch"))


def _structure(v):
    """A normalised log value with each array's values dropped (kind, dtype and shape kept):
    what two runs whose float values have parted ways must still agree on."""
    if isinstance(v, tuple) and v and v[0] in ("tensor", "ndarray"):
        return (v[0] + " of", v[1], tuple(v[2]))
    if isinstance(v, list):
        return [_structure(x) for x in v]
    if isinstance(v, tuple) and v and v[0] == "dict":
        return ("dict", [(_structure(k), _structure(x)) for k, x in v[1]])
    if isinstance(v, (float, np.floating)) and not isinstance(v, bool):
        return "float"
    return v


def _printed_lines(text: str) -> set:
    """The distinct printed lines with every number replaced by ``#``."""
    return {_NUMBER.sub("#", line) for line in text.splitlines()}


def compare(ref, got, diverge_after=None):
    """Assert two ``run_program`` logs equal (see ``_same``). ``diverge_after``: the name of the
    log entry after whose first occurrence the two runs' float values may part ways (a chaotic
    run, such as Adam on bfloat16 gradients that differ by one rounding between CPUs' kernels):
    later entries compare by structure (names, dtypes, shapes, integers, words), and the printed
    text by its distinct lines with the numbers masked."""
    values = True
    for i in range(min(len(ref), len(got))):
        (ka, va), (kb, vb) = ref[i], got[i]
        if ka != kb:
            raise AssertionError(
                f"log entry {i}: torch logged {ka!r}, tracegrad logged {kb!r}\n"
                f"torch keys: {[k for k, _ in ref]}\ntracegrad keys: {[k for k, _ in got]}")
        if ka == "<stdout>":
            va, vb = _printed(va), _printed(vb)
            if not values:
                if _printed_lines(va) != _printed_lines(vb):
                    raise AssertionError(f"printed lines differ (numbers masked)\n--- torch stdout:"
                                         f"\n{va}\n--- tracegrad stdout:\n{vb}")
                continue
            if va != vb and not _same_printed(va, vb):
                raise AssertionError(_stdout_diff(va, vb) + f"\n--- torch stdout:\n{va}"
                                     f"\n--- tracegrad stdout:\n{vb}")
            continue
        msg = _same(va, vb, ka) if values else _same(_structure(va), _structure(vb), ka)
        if msg:
            raise AssertionError(f"log entry {i} ({ka!r}) differs: {msg}")
        if ka == diverge_after:
            values = False
    if len(ref) != len(got):
        raise AssertionError(
            f"torch logged {len(ref)} entries, tracegrad {len(got)}\n"
            f"torch keys: {[k for k, _ in ref]}\ntracegrad keys: {[k for k, _ in got]}")


def printer(log):
    """A ``print`` for programs (run by ``run_both``) that print full-precision floats: logs the
    printed words, numbers as floats (so they compare with tolerances instead of digit by
    digit)."""
    def print_(*args):
        words = re.split(r"[\s,:]+", " ".join(str(a) for a in args).strip())
        out = []
        for w in words:
            try:
                out.append(float(w))
            except ValueError:
                out.append(w)
        log("printed", out)
    return print_


def run_both(program, rtol=None, atol=None, diverge_after=None):
    """Run ``program`` with torch (the oracle) and tracegrad; assert equal logs. ``rtol``/``atol``:
    looser tolerances for a program that amplifies float32 rounding (LBFGS's many evaluations),
    instead of ``LOG_RTOL``/``LOG_ATOL``; ``diverge_after``: see ``compare``."""
    global LOG_RTOL, LOG_ATOL
    torch = get_torch()
    ref = run_program(torch, program)
    if os.environ.get("TRACEGRAD_SEEDS_TORCH_ONLY"):
        return ref
    tg = get_tracegrad()
    got = run_program(tg, program)
    saved = LOG_RTOL, LOG_ATOL
    LOG_RTOL = saved[0] if rtol is None else rtol
    LOG_ATOL = saved[1] if atol is None else atol
    try:
        compare(ref, got, diverge_after)
    finally:
        LOG_RTOL, LOG_ATOL = saved
    return ref


def both(program):
    """Run ``program(module, log)`` with torch and with tracegrad, ``log`` a list the program
    appends plain Python values to; the two lists must be equal (no normalisation)."""
    torch = get_torch()
    logs = []
    for mod in (torch, tracegrad):
        log = []
        program(mod, log)
        logs.append(log)
    assert logs[0] == logs[1]
    return logs[1]


def outcome(mod, fn, normalise=None):
    """``fn(mod)``'s result normalised as ``run_both`` logs it (or by ``normalise(mod, value)``),
    or ``("raised", name)`` with the builtin exception class it raised (torch's classes subclass
    the builtins)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return (normalise or _norm)(mod, fn(mod))
    except Exception as e:  # noqa: BLE001 -- the class is what is compared
        return ("raised", _builtin_class(e).__name__)


def same_outcome(fn):
    """Run ``fn(module)`` with torch and with tracegrad: both return equal values (dtypes,
    shapes, values with ``run_both``'s tolerances; tuples/lists elementwise) or both raise the
    same builtin exception class."""
    want, got = outcome(get_torch(), fn), outcome(tracegrad, fn)
    msg = _same(want, got, "result")
    assert msg is None, msg
    return got


def outcome_params(cases, xfail=()):
    """``pytest.param``s for a ``{name: fn}`` table of ``same_outcome`` programs; names in the
    ``xfail`` mapping get a strict xfail with the given reason."""
    return [pytest.param(fn, id=name, marks=[pytest.mark.xfail(strict=True, reason=xfail[name])] if name in xfail else [])
            for name, fn in cases.items()]


# ---- nn modules: check_module --------------------------------------------------------------------
def copy_state(tmod, gmod):
    """torch module -> tracegrad module (parameters and buffers, by name)."""
    tp = dict(tmod.named_parameters())
    gp = dict(gmod.named_parameters())
    assert list(tp) == list(gp)
    for n, p in gp.items():
        p.data = tracegrad.tensor(tp[n].detach().numpy())
    tb = dict(tmod.named_buffers())
    for n, b in gmod.named_buffers():
        with tracegrad.no_grad():
            b.copy_(tracegrad.tensor(tb[n].detach().numpy()))


def check_module(build, inputs, *, grad_inputs=None, loss=None, rtol=RTOL, atol=ATOL, train=True, call=None):
    """``build(nn) -> module``; ``inputs`` numpy arrays (float arrays get requires_grad unless
    ``grad_inputs`` says which). Compares output, grad_fn name, parameter grads, input grads and
    buffers after the step. Returns (torch module, tracegrad module)."""
    torch = get_torch()
    tm = build(torch.nn)
    gm = build(tracegrad.nn)
    copy_state(tm, gm)
    tm.train(train)
    gm.train(train)
    if grad_inputs is None:
        grad_inputs = [np.issubdtype(np.asarray(a).dtype, np.floating) for a in inputs]
    tin = [torch.tensor(a, requires_grad=g) for a, g in zip(inputs, grad_inputs)]
    gin = [tracegrad.tensor(a, requires_grad=g) for a, g in zip(inputs, grad_inputs)]
    call = call or (lambda m, *xs: m(*xs))
    tout = call(tm, *tin)
    gout = call(gm, *gin)
    close(gout, tout, rtol, atol)
    assert tuple(gout.shape) == tuple(tout.shape)
    if tout.grad_fn is not None:
        assert type(gout.grad_fn).__name__ == type(tout.grad_fn).__name__
        w = np.random.RandomState(1).randn(*tout.shape) if tout.ndim else np.array(1.0)
        tout.backward(torch.tensor(w, dtype=tout.dtype))
        gout.backward(tracegrad.tensor(w, dtype=gout.dtype))
        for (n, tp), (_, gp) in zip(tm.named_parameters(), gm.named_parameters()):
            if tp.grad is None:
                assert gp.grad is None, n
            else:
                close(gp.grad, tp.grad, rtol, atol)
        for a, b in zip(gin, tin):
            if b.requires_grad:
                close(a.grad, b.grad, rtol, atol)
    for (n, tb), (gn, gb) in zip(tm.named_buffers(), gm.named_buffers()):
        assert n == gn
        close(gb, tb, rtol, atol)
    return tm, gm


# ---- the optimizer problem ------------------------------------------------------------------------
def make_params(mod, seed=0, dtype="float32"):
    """Three parameters with fixed numpy init: w (4, 3), b (3,), and ``unused`` (2,), which
    never gets a gradient (optimizers must skip it)."""
    rng = np.random.RandomState(seed)
    arrs = [rng.randn(4, 3), rng.randn(3) * 0.1, rng.randn(2)]
    dt = getattr(mod, dtype)
    return [mod.tensor(a.astype(dtype), dtype=dt, requires_grad=True) for a in arrs]


def inputs(mod, seed=1, dtype="float32"):
    rng = np.random.RandomState(seed)
    return mod.tensor(rng.randn(6, 4).astype(dtype)), mod.tensor(rng.randn(6, 3).astype(dtype))


def loss_fn(mod, params, x, y):
    w, b = params[0], params[1]
    h = (x @ w + b).tanh()
    return ((h - y) ** 2).mean() + 0.05 * (w * w).sum()


def train(mod, opt_name, kw, steps=50, groups=False, dtype="float32", seed=0):
    """Run ``steps`` optimizer steps on the problem drawn with ``seed``; returns
    (params, optimizer)."""
    params = make_params(mod, seed=seed, dtype=dtype)
    x, y = inputs(mod, seed=seed + 1, dtype=dtype)
    cls = getattr(mod.optim, opt_name)
    if groups:
        opt = cls([{"params": [params[0]]}, {"params": params[1:], "lr": kw.get("lr", 1e-2) * 0.5}], **kw)
    else:
        opt = cls(params, **kw)
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(mod, params, x, y)
        loss.backward()
        opt.step()
    return params, opt


# ---- tables of small calls: run_cases -----------------------------------------------------------
def log_outcome(log, name, fn):
    """Log ``fn()``'s result, or the builtin exception class it raised (with whether it had a
    message): the class is what torch and tracegrad must agree on, not the text."""
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = fn()
    except Exception as e:  # noqa: BLE001 -- the class is what is compared
        cls = next(k for k in type(e).__mro__ if k.__module__ == "builtins")
        log(name, f"raised {cls.__name__}" + ("" if str(e) else " without a message"))
        return
    log(name, value)


def run_cases(cases):
    """``cases``: name -> ``fn(mod)``. Each call's result (tensors with dtype, shape and values;
    Python values; dtypes) or exception class must be the same under torch and tracegrad."""
    def program(mod, log):
        for name, fn in cases.items():
            log_outcome(log, name, lambda: fn(mod))
    run_both(program)


@contextlib.contextmanager
def torch_logger_restored(T):
    """torch's ``debug=True`` checkpoint adds a traceback filter to its logging-tensor logger
    (and turns propagation off) without undoing it; left there, a later debug run in this
    process fails inside logging. Put the logger back as it was (torch only)."""
    if getattr(T, "__name__", "") != "torch":
        yield
        return
    from torch.testing._internal.logging_tensor import logger
    filters, propagate, level = list(logger.filters), logger.propagate, logger.level
    try:
        yield
    finally:
        logger.filters[:] = filters
        logger.propagate = propagate
        logger.setLevel(level)


def error_gist(fn):
    """``'Class: gist'`` of what ``fn()`` raises (None when it does not raise), warnings silenced:
    the message up to its first ';' or line break (tracegrad may add what to do after that)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except (RuntimeError, TypeError, ValueError, KeyError, IndexError) as e:
        msg = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)   # (str() quotes a KeyError)
        return f"{type(e).__name__}: " + re.split(r";|\n", msg)[0].rstrip(". ")
    return None


# ---- custom autograd.Functions ------------------------------------------------------------------
def scaled_sin_function(T, vmap_rule=False):
    """torch's functorch tests' MySin for module ``T``: a functorch-style ``autograd.Function``
    (forward without ctx, ``setup_context``) computing sin, whose rules are deliberately not
    forward's derivative (backward ``2 * g * cos(x)``, jvp ``3 * tangent``), so a transform that
    differentiates forward instead of calling them shows. ``generate_vmap_rule`` is ``vmap_rule``."""
    class MySin(T.autograd.Function):
        generate_vmap_rule = vmap_rule

        @staticmethod
        def forward(x):
            return x.sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            return g * ctx.saved_tensors[0].cos() * 2

        @staticmethod
        def jvp(ctx, tangent):
            return tangent * 3
    return MySin
