"""Helpers for the autograd parity tests.

``run_both(program)`` runs ``program(torch_module, log)`` with real torch and with tracegrad
and compares the logs (see tests/parity.py). ``graph(t)`` renders the autograd graph
under ``t`` as a string, STYLE 11: ``'MulBackward0(AccumulateGrad, None)'``, walking
``grad_fn.next_functions`` the same way on both sides, so graphs are compared as text.
"""
import numpy as np

from parity import compare, get_torch, get_tracegrad, run_both, run_program  # noqa: F401


def node_str(node, depth=0, max_depth=12):
    """``Name(child, child, ...)`` for a Node; ``None`` for a missing edge."""
    if node is None:
        return "None"
    name = type(node).__name__
    nf = node.next_functions
    if not nf or depth >= max_depth:
        return name
    return name + "(" + ", ".join(node_str(n, depth + 1, max_depth) for n, _ in nf) + ")"


def graph(t):
    """The graph under tensor ``t`` as a string; ``'leaf'``/``'no-grad'`` for leaves."""
    if t.grad_fn is None:
        return "leaf" if t.requires_grad else "no-grad"
    return node_str(t.grad_fn)


def edges(t):
    """``[(name, output_nr), ...]`` of ``t.grad_fn.next_functions``."""
    return [(None if n is None else type(n).__name__, nr) for n, nr in t.grad_fn.next_functions]


def tensor(mod, arr, requires_grad=False, dtype=None):
    """``mod.tensor`` from a numpy array (float64 unless ``dtype`` given)."""
    arr = np.asarray(arr)
    if dtype is None:
        dtype = mod.float64 if arr.dtype == np.float64 else mod.float32
    return mod.tensor(arr, dtype=dtype, requires_grad=requires_grad)


def rnd(shape, seed=0):
    return np.random.RandomState(seed).standard_normal(shape)


def err(fn):
    """Run ``fn``; return the exception class name it raised, or ``'ok'``."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 -- the class is the observation
        return type(e).__name__
    return "ok"


def err_msg(fn):
    """(class name, message) of the exception ``fn`` raised, or ('ok', '')."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return "ok", ""


def _safe(mod, fn):
    from parity import _norm
    try:
        return _norm(mod, fn(mod))
    except Exception as e:  # noqa: BLE001 -- an exception class is an observation
        return ("raised", type(e).__name__)


def run_table(cases):
    """``cases``: {name: fn(module) -> observation}. Runs every case on torch and tracegrad
    (an exception becomes ``('raised', class name)``) and reports *all* differing cases."""
    from parity import _same
    torch, tg = get_torch(), get_tracegrad()
    bad = []
    for name, fn in cases.items():
        ref = _safe(torch, fn)
        got = _safe(tg, fn)
        if isinstance(ref, tuple) and ref and ref[0] == "raised" and not (
                isinstance(got, tuple) and got and got[0] == "raised"):
            bad.append(f"{name}: torch raised {ref[1]}, tracegrad returned {got!r}"[:400])
            continue
        msg = _same(ref, got, name)
        if msg:
            bad.append(msg[:400])
    assert not bad, f"{len(bad)}/{len(cases)} cases differ:\n" + "\n".join(bad)


def programs(progs, xfail=None):
    """``pytest.param`` per program, named after it; ``xfail`` maps a program name to the root
    cause of a known core bug (strict: the test fails loudly once the bug is fixed)."""
    import pytest
    xfail = xfail or {}
    return [pytest.param(p, id=p.__name__,
                         marks=[pytest.mark.xfail(reason=xfail[p.__name__], strict=True)]
                         if p.__name__ in xfail else [])
            for p in progs]


def table_cases(cases, xfail=None):
    """``pytest.param((name, fn))`` per table case, with a strict xfail for known core bugs
    (``xfail``: case name -> root cause); run each with ``run_table(dict([case]))``."""
    import pytest
    xfail = xfail or {}
    return [pytest.param((k, f), id=k,
                         marks=[pytest.mark.xfail(reason=xfail[k], strict=True)] if k in xfail else [])
            for k, f in cases.items()]
