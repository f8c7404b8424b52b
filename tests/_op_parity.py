"""Table-driven parity harness for the op library (STYLE 11, like tinygrad's helper_test_op
and PyTorch's OpInfo).

A case is one line: ``C(name, fn, inputs)``. ``fn(mod, *tensors)`` runs once with
``mod=torch`` and once with ``mod=tracegrad`` on tensors built from the same numpy
``inputs`` (other objects pass through unchanged). ``check_parity`` compares, for every
tensor the program returns (tuples and namedtuples are flattened): values (allclose with
dtype-aware tolerances), dtype names, shapes, ``requires_grad`` and ``grad_fn`` class
names; then it backpropagates ``sum((out * w).sum())`` with fixed random weights ``w`` and
compares the gradient of every float input (``None`` included). When torch raises, tracegrad
must raise the same builtin exception class.

Input helpers: ``F(*shape)`` float32 normals (``lo``/``hi`` give a uniform range instead),
``D(*shape)`` float64, ``I(*shape, hi=)`` int64, ``B(*shape)`` bool, ``A(array)`` a fixed array.
"""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad
from tracegrad._ops import registry as _registry

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


def _dtype_name(d):
    return str(d).split(".")[-1]


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


def _close(a, b, dtype, tol, what):
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
            _close(g[3], w[3], w[1], case.tol, what)
            assert g[4] == w[4], f"{what}: requires_grad {g[4]} != torch {w[4]}"
            if case.check_grad_fn:
                assert g[5] == w[5], f"{what}: grad_fn {g[5]} != torch {w[5]}"
        elif w[0] == "py":
            assert g[1] == w[1], f"{what}: {g[1]} != torch {w[1]}"
            if isinstance(w[2], float):
                _close(g[2], w[2], "float64", case.tol, what)
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
                _close(g, w, str(w.dtype), tol, f"{case.name} grad of input {i}")


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
