"""Shared by the compile ports (test_compile_ported*.py): run one function under torch eager,
tracegrad eager and ``tracegrad.compile`` and compare every call (DESIGN 2.5)."""
import numpy as np

import tracegrad

try:
    import torch
except ImportError:      # the callers skip without torch
    torch = None

CALLS = 3


def _np(t):
    return None if t is None else np.asarray(t.detach().tolist(), dtype=np.float64)


def _flat(x):
    """Tensors (value, requires_grad) and plain values in ``x``, nested lists flattened."""
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in _flat(item)]
    if isinstance(x, dict):
        return [v for k in x for v in _flat(x[k])]
    if hasattr(x, "detach") and hasattr(x, "requires_grad"):
        return [("t", _np(x), x.requires_grad)]
    return [x]


def _same(a, b, what, rtol=1e-5, atol=1e-6):
    fa, fb = _flat(a), _flat(b)
    assert len(fa) == len(fb), f"{what}: {len(fa)} vs {len(fb)} items"
    for i, (u, v) in enumerate(zip(fa, fb)):
        if isinstance(u, tuple) and u and u[0] == "t":
            assert isinstance(v, tuple) and v[0] == "t", f"{what}[{i}]: tensor vs {v!r}"
            assert (u[1] is None) == (v[1] is None), f"{what}[{i}]"
            if u[1] is not None:
                np.testing.assert_allclose(v[1], u[1], rtol=rtol, atol=atol, err_msg=f"{what}[{i}]")
            assert u[2] == v[2], f"{what}[{i}] requires_grad {u[2]} vs {v[2]}"
        else:
            assert u == v, f"{what}[{i}]: {u!r} vs {v!r}"


def _leaf_grads(args):
    return [a.grad for a in _flat_tensors(args) if a.is_leaf]


def _flat_tensors(x):
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in _flat_tensors(item)]
    if isinstance(x, dict):
        return [t for k in x for t in _flat_tensors(x[k])]
    return [x] if hasattr(x, "requires_grad") and hasattr(x, "grad_fn") else []


def check(build, make_args, calls=CALLS, backward=None, torch_too=True, **compile_kw):
    """``build(T)`` -> a function over ``T`` tensors; ``make_args(T, i)`` -> call ``i``'s
    argument tuple. Runs torch eager, tracegrad eager and ``tracegrad.compile``d ``calls``
    times each (fresh arguments per call) and compares outputs, and, when ``backward(out)``
    is given (it runs a backward on the output), the leaf arguments' ``.grad``. Returns the
    compiled function.

    With ``fullgraph=True`` torch captures all of these; tracegrad may instead refuse with a
    ``GraphBreak`` naming this file's line (DESIGN 2.5: never a wrong result): then the same
    function compiled without ``fullgraph`` must give eager's results."""
    runs = {"tg": (tracegrad, build(tracegrad)), "cf": (tracegrad, None)}
    runs["cf"] = (tracegrad, tracegrad.compile(build(tracegrad), **compile_kw))
    if torch_too:
        runs["torch"] = (torch, build(torch))
    for i in range(calls):
        seen = {}
        for name, (T, fn) in runs.items():
            args = make_args(T, i)
            if name == "cf" and compile_kw.get("fullgraph"):
                try:
                    out = fn(*args)
                except tracegrad.compiler.GraphBreak as e:
                    assert "test_compile_ported" in str(e), f"GraphBreak names no line: {e}"
                    kw = dict(compile_kw, fullgraph=False)
                    return check(build, make_args, calls, backward, torch_too, **kw)
            else:
                out = fn(*args)
            grads = None
            if backward is not None:
                backward(out)
                grads = _leaf_grads(args)
            seen[name] = (out, grads)
        for name in seen:
            if name == "cf":
                continue
            _same(seen[name][0], seen["cf"][0], f"call{i} out cf vs {name}")
            if backward is not None:
                _same(seen[name][1], seen["cf"][1], f"call{i} grads cf vs {name}")
    return runs["cf"][1]


def _v(T, i=0):
    return T.tensor([0.0, 0.0, 0.0], requires_grad=True)


def _rand(T, i, *shape, rg=True, seed=0):
    t = T.tensor(np.random.RandomState(seed + i).randn(*shape).astype("float32"))
    return t.requires_grad_() if rg else t


def _bw_first(g):
    def bw(out):
        o = out[0] if isinstance(out, (tuple, list)) else out
        o.backward(_like(o, g))
    return bw


def _like(o, g):
    mod = torch if type(o).__module__.startswith("torch") else tracegrad
    return mod.tensor(g)


def _bw_sum(out):
    o = out[0] if isinstance(out, (tuple, list)) else out
    o.sum().backward()
