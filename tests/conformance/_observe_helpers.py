"""Run one check on torch and on tracegrad and compare what a program observes: the
normalised result (or the exception class raised) and the warning classes issued."""
import warnings

import numpy as np
import pytest

import tracegrad


def observe(T, f, norm):
    """``(norm(f(T)) or ("raises", class name), sorted warning class names)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = norm(f(T))
        except Exception as e:   # noqa: BLE001  (the class is what we compare)
            r = ("raises", type(e).__name__)
    return r, sorted({c.category.__name__ for c in caught if c.category is not DeprecationWarning})


def make_check(norm):
    """``check(checks)``: every ``f(T)`` in ``checks`` observes the same on torch and tracegrad
    (the assertion lists the ones that differ, by position)."""
    def check(checks):
        torch = pytest.importorskip("torch")
        bad = {}
        for i, f in enumerate(checks):
            a, b = observe(torch, f, norm), observe(tracegrad, f, norm)
            if a != b:
                bad[i] = (a, b)
        assert not bad, bad
    return check


def _sig(a):
    """``a`` to 5 significant digits (float32 sums differ in their last bits between libraries)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = 10.0 ** (4 - np.floor(np.log10(np.abs(np.where((a == 0) | ~np.isfinite(a), 1.0, a)))))
    return np.where(np.isfinite(a), np.round(a * scale) / scale, a)


def norm(v):
    """What a check compares of a result: a tensor as (tag, dtype name, shape, values to 5
    significant digits, NaN as "nan"); lists, tuples and dicts elementwise; a Size as a tuple."""
    if hasattr(v, "detach") and hasattr(v, "shape"):
        vals = _sig(np.asarray(v.detach().double().tolist(), dtype=np.float64))
        return "T", str(v.dtype).split(".")[-1], tuple(v.shape), np.where(np.isnan(vals), "nan", vals).tolist()
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if type(v).__name__ == "Size":
        return tuple(v)
    return v


def attempt(f):
    """``f()``, or ``("raises", class name)`` when it raises (a step of a longer log)."""
    try:
        return f()
    except Exception as e:   # noqa: BLE001  (the class is what we compare)
        return ("raises", type(e).__name__)


def msg_has(f, *words):
    """The class of what ``f()`` raises and whether its message holds every one of ``words``."""
    try:
        f()
    except Exception as e:   # noqa: BLE001
        return type(e).__name__, all(w in str(e) for w in words)
    return None


def text(f):
    """``"Class: message"`` of what ``f()`` raises (None when it does not raise)."""
    try:
        f()
    except Exception as e:   # noqa: BLE001
        return f"{type(e).__name__}: {e}"
