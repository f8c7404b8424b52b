"""Draws tracegrad gained: ``poisson``, ``binomial``, ``normal`` with tensor parameters,
``geometric_``/``log_normal_``/``cauchy_``, ``Tensor.bernoulli``/``multinomial`` and
``empty_strided``. Streams differ from torch's, so these compare distribution statistics,
shapes, dtypes, grad_fn names and (zero) gradients with torch, seeded repeatability within
tracegrad, and the error classes torch raises."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

N = 20000


def _draw_twice(fn):
    tracegrad.manual_seed(3)
    a = fn(tracegrad).numpy()
    tracegrad.manual_seed(3)
    b = fn(tracegrad).numpy()
    np.testing.assert_array_equal(a, b)
    return a


def test_poisson_statistics_dtype_and_zero_gradient():
    rate = np.array([0.5, 3.0, 40.0], np.float32)
    a = _draw_twice(lambda m: m.poisson(m.tensor(np.repeat(rate[None], N, 0))))
    assert a.dtype == np.float32 and np.all(a == np.round(a)) and np.all(a >= 0)
    np.testing.assert_allclose(a.mean(0), rate, rtol=0.05)
    np.testing.assert_allclose(a.var(0), rate, rtol=0.1)
    for mod in (torch, tracegrad):
        r = mod.tensor([1.0, 2.0], dtype=mod.float64, requires_grad=True)
        out = mod.poisson(r)
        assert type(out.grad_fn).__name__ == "PoissonBackward0" and out.dtype == mod.float64
        out.sum().backward()
        np.testing.assert_array_equal(r.grad.numpy(), [0.0, 0.0])


def test_binomial_statistics_and_broadcast():
    count = np.array([[5.0], [20.0]], np.float32)
    prob = np.array([0.1, 0.5, 0.9], np.float32)
    tracegrad.manual_seed(0)
    draws = np.stack([tracegrad.binomial(tracegrad.tensor(count), tracegrad.tensor(prob)).numpy()
                      for _ in range(2000)])
    assert draws.shape == (2000, 2, 3) and draws.dtype == np.float32
    assert np.all((draws >= 0) & (draws <= count))
    np.testing.assert_allclose(draws.mean(0), count * prob, rtol=0.06, atol=0.03)
    want = torch.binomial(torch.tensor(count), torch.tensor(prob))
    assert tuple(want.shape) == draws.shape[1:]
    _draw_twice(lambda m: m.binomial(m.tensor(count), m.tensor(prob)))


@pytest.mark.parametrize("kind", ["tensor_tensor", "tensor_float", "float_tensor"])
def test_normal_tensor_overloads_have_torch_nodes_and_zero_gradients(kind):
    def call(mod):
        mean = mod.tensor([0.0, 10.0], requires_grad=True)
        std = mod.tensor([1.0, 2.0], requires_grad=True)
        args = {"tensor_tensor": (mean, std), "tensor_float": (mean, 2.0), "float_tensor": (1.0, std)}[kind]
        out = mod.normal(*args)
        out.sum().backward()
        return out, mean.grad, std.grad
    want, got = call(torch), call(tracegrad)
    assert type(got[0].grad_fn).__name__ == type(want[0].grad_fn).__name__
    for w, g in zip(want[1:], got[1:]):
        assert (w is None) == (g is None)
        if w is not None:
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_normal_tensor_statistics():
    mean = tracegrad.tensor(np.array([[-3.0, 5.0]] * N))
    std = tracegrad.tensor(np.array([0.5, 2.0]))
    a = _draw_twice(lambda m: m.normal(mean, std))
    assert a.dtype == np.float64 and a.shape == (N, 2)
    np.testing.assert_allclose(a.mean(0), [-3.0, 5.0], atol=0.05)
    np.testing.assert_allclose(a.std(0), [0.5, 2.0], rtol=0.03)


def test_inplace_distributions():
    g = _draw_twice(lambda m: m.empty(N).geometric_(0.25))
    assert np.all(g >= 1) and np.all(g == np.round(g))
    np.testing.assert_allclose(g.mean(), 4.0, rtol=0.05)                  # 1 / p
    ints = tracegrad.empty(5, dtype=tracegrad.int64).geometric_(0.5)
    assert ints.dtype is tracegrad.int64 and bool((ints >= 1).all())
    ln = _draw_twice(lambda m: m.empty(N, dtype=m.float64).log_normal_(0.5, 0.3))
    np.testing.assert_allclose(np.log(ln).mean(), 0.5, atol=0.01)
    np.testing.assert_allclose(np.log(ln).std(), 0.3, rtol=0.03)
    c = _draw_twice(lambda m: m.empty(N).cauchy_(2.0, 0.5))
    np.testing.assert_allclose(np.median(c), 2.0, atol=0.03)
    np.testing.assert_allclose(np.percentile(c, 75) - np.percentile(c, 25), 1.0, rtol=0.06)   # 2 sigma


def test_inplace_keeps_identity_and_bumps_version():
    t = tracegrad.zeros(4)
    v = t._version
    assert t.cauchy_() is t and t._version == v + 1


@pytest.mark.parametrize("call", [
    lambda m: m.poisson(m.tensor([1, 2])),
    lambda m: m.poisson(m.tensor([-1.0])),
    lambda m: m.binomial(m.tensor([5]), m.tensor([0.5])),
    lambda m: m.binomial(m.tensor([5.0]), m.tensor([1])),
    lambda m: m.empty(3).geometric_(0),
    lambda m: m.empty(3).geometric_(1.5),
    lambda m: m.empty(3).log_normal_(1.0, 0.0),
    lambda m: m.empty(3, dtype=m.int64).log_normal_(),
    lambda m: m.empty(3).cauchy_(0.0, -1.0),
    lambda m: m.empty(3, dtype=m.int64).cauchy_(),
    lambda m: m.normal(m.tensor([0.0]), m.tensor([-1.0])),
    lambda m: m.normal(m.tensor([0, 1]), 1.0),
    lambda m: m.empty_strided((2, 3), (1,)),
], ids=["poisson_int", "poisson_negative", "binomial_int_count", "binomial_int_prob", "geometric_0", "geometric_big",
        "log_normal_std0", "log_normal_int", "cauchy_sigma", "cauchy_int", "normal_negative_std", "normal_int_mean",
        "empty_strided_lengths"])
def test_errors_match_torch(call):
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(Exception) as got:
        call(tracegrad)
    cls = next(k for k in type(want.value).__mro__ if k.__module__ == "builtins")
    assert isinstance(got.value, cls), (type(got.value), got.value, cls)


def test_tensor_bernoulli_multinomial_and_empty_strided():
    p = tracegrad.tensor([0.0, 1.0, 0.5])
    b = _draw_twice(lambda m: p.bernoulli())
    assert b.dtype == np.float32 and b[0] == 0 and b[1] == 1
    assert tracegrad.tensor([0.3, 0.7], dtype=tracegrad.float64).bernoulli(0.5).dtype is tracegrad.float64
    idx = _draw_twice(lambda m: m.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]).multinomial(4, True))
    np.testing.assert_array_equal(idx, [[1] * 4, [0] * 4])
    for mod in (torch, tracegrad):
        e = mod.empty_strided((2, 3), (1, 2), dtype=mod.float64)
        assert tuple(e.shape) == (2, 3) and e.dtype == mod.float64
        assert e.stride() == (1, 2) and e.is_leaf and not e._is_view() and not e.is_contiguous()
        n = mod.ones(2, dtype=mod.int32).new_empty_strided((2, 2), (2, 1))
        assert tuple(n.shape) == (2, 2) and n.dtype == mod.int32


def test_poisson_inside_compile_draws_fresh_values():
    f = tracegrad.compile(lambda r: tracegrad.poisson(r) + 0)
    r = tracegrad.full((64,), 50.0)
    a, b = f(r).numpy(), f(r).numpy()
    assert not np.array_equal(a, b) and abs(a.mean() - 50) < 5 and abs(b.mean() - 50) < 5


def _bernoulli_node(mod, how):
    p = mod.tensor([0.2, 0.7, 1.0], requires_grad=True)
    q = mod.sigmoid(p) if how != "detached" else mod.sigmoid(p).detach()
    if how == "method":
        out = q.bernoulli()
    elif how == "p=":
        out = mod.bernoulli(q, 0.5)
    elif how == "no_grad":
        with mod.no_grad():
            out = mod.bernoulli(q)
    else:
        out = mod.bernoulli(q)
    seen = [out.requires_grad, None if out.grad_fn is None else type(out.grad_fn).__name__, out.dtype]
    if how in ("function", "method"):
        (out * 3).sum().backward()
        seen.append(p.grad.tolist())
    return seen


@pytest.mark.parametrize("how", ["function", "method", "detached", "no_grad"])
def test_bernoulli_of_probabilities_that_require_grad_records_zero_gradient_node(how):
    """torch.bernoulli(p) of probabilities that require grad records BernoulliBackward0 (gradient
    zero), as PonderNet's halting draw ``torch.bernoulli(sigmoid(...))`` does in torch; tracegrad
    returned a tensor that did not require grad."""
    a, b = _bernoulli_node(torch, how), _bernoulli_node(tracegrad, how)
    assert a[:2] == b[:2] and str(a[2]).split(".")[-1] == str(b[2]).split(".")[-1] and a[3:] == b[3:]
