"""torch's deprecated names that older programs and test suites still call:
``torch.testing.assert_allclose``, ``torch.nuclear_norm`` and ``torch.frobenius_norm``.
Each warns as torch does and computes what its modern replacement does."""
import warnings

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

X = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


@pytest.mark.parametrize("call", [
    lambda M, x: M.nuclear_norm(x[0]), lambda M, x: M.nuclear_norm(x[0], True),
    lambda M, x: M.nuclear_norm(x, (2, 1), True), lambda M, x: M.frobenius_norm(x, (0, 2)),
    lambda M, x: M.frobenius_norm(x, 1, True), lambda M, x: M.frobenius_norm(x, ()),
])
def test_deprecated_norms_values_and_grads(call):
    got = []
    for M in (torch, tracegrad):
        x = M.tensor(X, requires_grad=True)
        out = _quiet(lambda: call(M, x))
        out.sum().backward()
        got.append((out.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(got[1][0], got[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("call", [
    lambda M, x: M.nuclear_norm(x[0], 0), lambda M, x: M.nuclear_norm(x[0, 0]),
    lambda M, x: M.frobenius_norm(x, (0, 1, 2)), lambda M, x: M.frobenius_norm(x, (1, 1)),
    lambda M, x: M.frobenius_norm(x.int(), 0), lambda M, x: M.frobenius_norm(x, (0, 5)),
])
def test_deprecated_norms_errors(call):
    kinds = []
    for M in (torch, tracegrad):
        with pytest.raises(Exception) as e:
            _quiet(lambda: call(M, M.tensor(X)))
        kinds.append(type(e.value))
    assert kinds[1] is kinds[0]


def test_deprecated_norms_warn(fresh_warn_once):
    for name, args in (("nuclear_norm", ()), ("frobenius_norm", ((0, 1),))):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            getattr(tracegrad, name)(tracegrad.ones(2, 2), *args)
        assert any(name in str(m.message) and "deprecated" in str(m.message) for m in w), name


def test_assert_allclose():
    t = tracegrad.tensor
    with pytest.warns(FutureWarning, match="assert_close"):
        tracegrad.testing.assert_allclose(t([1.0, float("nan")]), [1.00005, float("nan")])   # float32 rtol 1e-4
    cases = [
        (lambda M: M.tensor([1.0, 2.0]), lambda M: [1.0, 2.001], {}),                 # beyond float32's 1e-4
        (lambda M: M.tensor([1, 2]), lambda M: M.tensor([1.0, 2.0]), {}),           # dtypes may differ
        (lambda M: M.tensor([1.0, float("nan")]), lambda M: [1.0, float("nan")], {"equal_nan": False}),
        (lambda M: M.tensor([1.0]), lambda M: [1.5], {"rtol": 0.5, "atol": 0.0}),
        (lambda M: M.tensor([1.0]), lambda M: [1.5], {"rtol": 0.5}),                # one tolerance alone
        (lambda M: M.tensor([1.0, 2.0]), lambda M: [1.0], {}),                      # shapes
        (lambda M: 3, lambda M: 3.0000001, {}),
        (lambda M: M.tensor([1.0], dtype=M.float16), lambda M: M.tensor([1.0009], dtype=M.float16), {}),
    ]
    for actual, expected, kw in cases:
        outcomes = []
        for M in (torch, tracegrad):
            try:
                _quiet(lambda: M.testing.assert_allclose(actual(M), expected(M), **kw))
                outcomes.append(None)
            except Exception as e:     # noqa: BLE001 -- the class is what is compared
                outcomes.append(type(e))
        assert outcomes[1] is outcomes[0], (kw, outcomes)
