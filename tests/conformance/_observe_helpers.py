"""Run one check on torch and on tracegrad and compare what a program observes: the
normalised result (or the exception class raised) and the warning classes issued."""
import warnings

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
