"""Helpers the public-program tests share (tests/api/test_public_programs_round5*.py and
tests/compile/test_public_patterns_round5*.py): the same parameters for torch and tracegrad from
one numpy stream, values as numpy arrays, and value/error comparisons across the libraries."""
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
