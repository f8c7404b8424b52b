"""Helpers shared by the bad-input parity tables (test_bad_input.py, test_bad_input_round7.py,
test_bad_input_compile.py): run one call under torch and tracegrad and compare what they raise,
and the pattern of other libraries' words that must not reach a tracegrad error message."""
import re
import warnings

# JAX's, XLA's and NumPy's own words (``numpy()`` the method is fine, and so is torch's own
# sentence "Unlike NumPy, torch.sign is not intended to support complex numbers"), a NumPy dtype repr
FOREIGN = re.compile(r"jax|xla|jnp\.|lax\.|(?<!Unlike )numpy(?!\(\))|\bnp\.|tracer|jaxpr|dtype\(|\|S\d", re.I)


def outcome(fn, T):
    """``(exception class or None, message)`` of ``fn(T)``, warnings silenced."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(T)
    except Exception as e:   # noqa: BLE001 -- the class is what is compared
        return type(e), str(e)
    return None, ""


def assert_same_class(name, fn, torch, tracegrad):
    """``fn`` raises the same exception class (or none) under both, and tracegrad's message
    holds no other library's words."""
    expected, tmsg = outcome(fn, torch)
    got, msg = outcome(fn, tracegrad)
    assert got is expected, f"{name}: torch raises {expected} ({tmsg[:200]}), tracegrad {got}: {msg[:300]}"
    assert not FOREIGN.search(msg), f"{name}: foreign text leaked: {msg[:300]}"


def assert_gist(name, fn, gist, torch, tracegrad):
    """Both messages of ``fn`` hold ``gist`` (case-insensitive): torch's, so that a changed torch
    message is seen as such, and tracegrad's."""
    _, want = outcome(fn, torch)
    _, got = outcome(fn, tracegrad)
    assert gist.lower() in want.lower(), f"torch's message changed: {want[:200]}"
    assert gist.lower() in got.lower(), f"{name}: {got[:300]}"


def plain_value(v):
    """An accepted call's result as plain Python (tensors as lists, names as torch's) for
    comparing tracegrad's value with torch's."""
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [plain_value(x) for x in v]
    return str(v).replace("tracegrad", "torch")


def table_tests(cases, gists, torch, tracegrad):
    """The two tests of a bad-input table, for a module to bind at its top level
    (``test_same_class_as_torch, test_message_gist = table_tests(CASES, GIST, torch, tracegrad)``):
    every case raises torch's class (or none; an ``_ok`` case none under tracegrad), and each
    ``gists`` entry's text is in both libraries' messages."""
    import pytest

    @pytest.mark.parametrize("name", list(cases))
    def test_same_class_as_torch(name):
        assert_same_class(name, cases[name], torch, tracegrad)
        if name.endswith("_ok"):
            assert outcome(cases[name], tracegrad)[0] is None

    @pytest.mark.parametrize("name", list(gists))
    def test_message_gist(name):
        assert_gist(name, cases[name], gists[name], torch, tracegrad)

    return test_same_class_as_torch, test_message_gist


def left_tests(cases, left, torch, tracegrad):
    """Split a table into the cases that match torch and the mismatches left for later: returns
    ``(matched, test_left_mismatch)``, the latter a test for a module to bind at its top level in
    which each ``left`` case (name -> what differs) is a strict xfail of ``assert_same_class``."""
    import pytest

    @pytest.mark.parametrize("name", [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=r))
                                      for k, r in left.items()])
    def test_left_mismatch(name):
        assert_same_class(name, cases[name], torch, tracegrad)

    return {k: v for k, v in cases.items() if k not in left}, test_left_mismatch


def close_values(got, want):
    """Equal plain values, numbers to float32 rounding (NaN matching NaN)."""
    if got == want:
        return True
    import numpy as np
    try:
        g, w = np.asarray(got, dtype=complex), np.asarray(want, dtype=complex)
    except (TypeError, ValueError):
        return False
    return g.shape == w.shape and np.allclose(g, w, rtol=1e-4, atol=1e-5, equal_nan=True)


def value_test(cases, names, torch, tracegrad, close=False):
    """The accepted-value test of a bad-input table, for a module to bind at its top level:
    each case in ``names`` (accepted calls with a deterministic value) gives torch's value
    (``close``: numbers to float32 rounding, ``close_values``)."""
    import pytest

    @pytest.mark.parametrize("name", list(names))
    def test_accepted_value_matches_torch(name):
        got, want = plain_value(cases[name](tracegrad)), plain_value(cases[name](torch))
        if close:
            assert close_values(got, want), f"{name}: {str(got)[:300]} != {str(want)[:300]}"
        else:
            assert got == want
    return test_accepted_value_matches_torch


def doubled_function(T, vmap_rule=False):
    """A functorch-style ``T.autograd.Function`` (forward without ctx, ``setup_context``) that
    doubles its input; ``generate_vmap_rule`` is ``vmap_rule``."""
    class Doubled(T.autograd.Function):
        generate_vmap_rule = vmap_rule

        @staticmethod
        def forward(a):
            return a * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2
    return Doubled
