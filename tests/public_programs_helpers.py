"""Helpers the public-program tests share (tests/api/test_public_programs_round5*.py and
tests/compile/test_public_patterns_round5*.py): the same parameters for torch and tracegrad from
one numpy stream, values as numpy arrays, and value/error comparisons across the libraries."""
import contextlib
import re

import numpy as np
import pytest


def init_uniform(T, module, seed, scale=0.3):
    """Fill ``module``'s parameters (``named_parameters`` order) with uniform draws from a
    seeded numpy stream, so modules of torch and tracegrad (``T``) start equal."""
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for _, p in module.named_parameters():
            p.copy_(T.tensor(rs.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
    return module


def arrays(*ts):
    """Copies of tensors (or other values) as numpy arrays."""
    return [np.array(t.detach().numpy() if hasattr(t, "detach") else t, copy=True) for t in ts]


def grads(net):
    """Each parameter's ``.grad`` by name order (``array(True)`` where it is None)."""
    return [np.array(p.grad is None) if p.grad is None else arrays(p.grad)[0]
            for _, p in sorted(net.named_parameters())]


def state(net):
    """The ``state_dict`` values by name order, as numpy arrays."""
    return arrays(*[t for _, t in sorted(net.state_dict().items())])


def close(a, b, tol):
    """Two lists of arrays equal within ``tol`` (relative and absolute), item by item."""
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        np.testing.assert_allclose(y, x, rtol=tol, atol=tol, err_msg=f"output {i}")


def compare(torch, tracegrad, run, tol=1e-5):
    """``run(torch)`` and ``run(tracegrad)`` give the same arrays: dtypes, shapes, values."""
    ref, got = run(torch), run(tracegrad)
    assert len(ref) == len(got)
    for i, (a, b) in enumerate(zip(ref, got)):
        assert a.dtype == b.dtype and a.shape == b.shape, f"output {i}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        np.testing.assert_allclose(b, a, rtol=tol, atol=tol, err_msg=f"output {i}")


def same_error(torch, tracegrad, run):
    """``run`` raises the same exception class with both libraries; returns both messages."""
    errs = []
    for T in (torch, tracegrad):
        with pytest.raises(Exception) as e:
            run(T)
        errs.append(e.value)
    assert type(errs[1]) is type(errs[0]), (errs[0], errs[1])
    return [str(e) for e in errs]


class numpy_draws:
    """A stand-in for the ``torch`` module ``T`` whose ``randn``/``rand``/``randn_like``/
    ``rand_like`` draw values (of the default dtype) from a seeded NumPy stream, every other
    name being ``T``'s: a program run with ``torch`` bound to it draws the same numbers with
    torch and tracegrad."""

    def __init__(self, T, seed):
        self._T, self._rs = T, np.random.RandomState(seed)

    def __getattr__(self, name):
        return getattr(self._T, name)

    def _draw(self, fn, size, kw):
        size = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        kw.pop("device", None)
        kw.setdefault("dtype", self._T.get_default_dtype())
        return self._T.tensor(fn(*size), **kw)

    def randn(self, *size, **kw):
        return self._draw(self._rs.randn, size, kw)

    def rand(self, *size, **kw):
        return self._draw(self._rs.rand, size, kw)

    def randn_like(self, t, **kw):
        return self._draw(self._rs.randn, t.shape, {"dtype": t.dtype, **kw})

    def rand_like(self, t, **kw):
        return self._draw(self._rs.rand, t.shape, {"dtype": t.dtype, **kw})


@contextlib.contextmanager
def default_dtype(T, dtype):
    """``T.set_default_dtype(dtype)`` for the ``with`` block, float32 again after it."""
    T.set_default_dtype(dtype)
    try:
        yield
    finally:
        T.set_default_dtype(T.float32)


def compiled_parity(torch, tracegrad, runner, ref_tol=2e-5, comp_tol=1e-5):
    """``runner(T, compiled) -> (arrays, fn)`` run by torch eagerly, tracegrad eagerly and
    tracegrad compiled: tracegrad's eager arrays equal torch's within ``ref_tol``, the compiled
    ones tracegrad's eager within ``comp_tol``; returns the compiled function's ``stats``."""
    eager, comp = runner(tracegrad, False), runner(tracegrad, True)
    close(runner(torch, False)[0], eager[0], ref_tol)
    close(eager[0], comp[0], comp_tol)
    return comp[1].stats


def _log_numbers(text):
    """The floats in a log, and the log with each replaced by ``#``."""
    pat = r"-?\d+\.\d+(?:e-?\d+)?"
    return [float(x) for x in re.findall(pat, text)], re.sub(pat, "#", text)


def same_logs(ref, got, tol):
    """Two printed logs equal but for their floats, which are equal within ``tol``."""
    (a, ta), (b, tb) = _log_numbers(ref), _log_numbers(got)
    assert ta == tb, (ref, got)
    np.testing.assert_allclose(b, a, rtol=tol, atol=tol)
