"""Ported from PyTorch's test/autograd/test_functional.py (TestAutogradFunctional): the
argument checks, strict mode, grad-mode handling, result structure, create_graph and
vectorize/strategy agreement of ``autograd.functional`` (vjp, jvp, jacobian, hessian, vhp,
hvp). Each body runs under torch 2.13 (the oracle) and tracegrad through the ``T`` fixture.

Not ported: the LoggingTensor parametrisation (a torch tensor subclass), the device-type tests
(CUDA), ``_construct_standard_basis_for`` (a private torch helper) and the "vmap raises no
experimental warning" checks (torch-internal). gradcheck/gradgradcheck of the create_graph
results are replaced by a numerical check of one second derivative, which needs no finite
differences through the functional API.
"""
import warnings

import numpy as np
import pytest

def _np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


def _vec(T, *vals, rg=False):
    """A float64 tensor with fixed values (the originals use rand; fixed values keep both
    libraries on the same inputs)."""
    return T.tensor(list(vals), dtype=T.float64, requires_grad=rg)


def _mat(T, rows, cols, start=0.1, rg=False):
    vals = [[start + 0.07 * (r * cols + c) for c in range(cols)] for r in range(rows)]
    return T.tensor(vals, dtype=T.float64, requires_grad=rg)


def _sizes(res):
    """Nested tuple structure of ``res`` with each Tensor replaced by its shape."""
    if isinstance(res, tuple):
        return tuple(_sizes(r) for r in res)
    return tuple(res.shape)


def _narrow3(a):
    return 3 * a.narrow(0, 0, 3)


def _scalar_narrow(a):
    return 3 * a.narrow(0, 0, 3).exp().sum()


# ---- argument checks ---------------------------------------------------------------------
@pytest.mark.parametrize("api", ["vjp", "jvp"])
def test_vjp_jvp_err_check(T, api):
    # TestAutogradFunctional.test_vjp_err_check / test_jvp_err_check
    fn = getattr(T.autograd.functional, api)
    inp = _vec(T, 0.1, 0.2, 0.3, 0.4)
    v = _vec(T, 1, 1, 1) if api == "vjp" else _vec(T, 1, 2, 3, 4)
    with pytest.raises(TypeError, match=f"The inputs given to {api} must be either a Tensor"):
        fn(_narrow3, (inp, 2), v)
    with pytest.raises(TypeError, match=f"The outputs of the user-provided function given to {api} must"):
        fn(lambda a: (_narrow3(a), "bar"), inp, v)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the"):
        fn(_narrow3, inp)
    with pytest.raises(RuntimeError, match="The given v should contain a single Tensor."):
        fn(_narrow3, inp, (v, v))
    with pytest.raises(RuntimeError, match="v has invalid size: should be"):
        fn(_narrow3, inp, v[:2])
    out, res = fn(_narrow3, inp, v)
    assert _sizes(res) == ((4,) if api == "vjp" else (3,))


@pytest.mark.parametrize("api", ["vjp", "jvp", "jacobian"])
def test_first_order_err_check_strict(T, api):
    # TestAutogradFunctional.test_vjp_err_check_strict / test_jvp_err_check_strict /
    # test_jacobian_err_check_strict
    F = T.autograd.functional

    def call(f, inp, **kw):
        if api == "jacobian":
            return F.jacobian(f, inp, **kw)
        return getattr(F, api)(f, inp, _vec(T, 1, 2, 3, 4), **kw)[1]

    inp = _vec(T, 0.1, 0.2, 0.3, 0.4)
    detached = lambda a: a.detach()  # noqa: E731
    # a non-leaf that requires grad but is cut off from the input
    cut = lambda a: a.long().double().requires_grad_().clone()  # noqa: E731
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients."):
        call(detached, inp, strict=True)
    assert _np(call(detached, inp)).sum() == 0.0
    want = ("Output 0 of the user-provided function is independent of input 0." if api == "jacobian"
            else "The output of the user-provided function is independent of input 0")
    with pytest.raises(RuntimeError, match=want):
        call(cut, inp, strict=True)
    assert _np(call(cut, inp)).sum() == 0.0


@pytest.mark.parametrize("api", ["vjp", "jvp", "jacobian"])
def test_first_order_strict_create_graph_constant_jacobian(T, api):
    # TestAutogradFunctional.test_vjp_err_check_strict / test_jvp_err_check_strict /
    # test_jacobian_err_check_strict (last part): the Jacobian of a clone does not depend on
    # the input, which only create_graph=True with strict=True notices
    F = T.autograd.functional

    def call(f, inp, **kw):
        if api == "jacobian":
            return F.jacobian(f, inp, **kw)
        return getattr(F, api)(f, inp, _vec(T, 1, 2, 3, 4), **kw)[1]

    inp = _vec(T, 0.1, 0.2, 0.3, 0.4, rg=True)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function is independent of input 0."):
        call(lambda a: a.clone(), inp, create_graph=True, strict=True)
    res = call(lambda a: a.clone(), inp, create_graph=True)
    want_val = np.eye(4) if api == "jacobian" else np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(_np(res), want_val)


@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_err_check(T, vectorize):
    # TestAutogradFunctional.test_jacobian_err_check
    F = T.autograd.functional
    inp = _vec(T, 0.1, 0.2, 0.3, 0.4)
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor"):
        F.jacobian(_narrow3, (inp, 2), vectorize=vectorize)
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to jacobian must"):
        F.jacobian(lambda a: (_narrow3(a), "bar"), inp, vectorize=vectorize)
    assert _sizes(F.jacobian(_narrow3, inp, vectorize=vectorize)) == (3, 4)
    two = (inp, _vec(T, 1, 2, 3, 4, 5))
    res = F.jacobian(lambda a, b: (b, _narrow3(a)), two, vectorize=vectorize)
    assert _sizes(res) == (((5, 4), (5, 5)), ((3, 4), (3, 5)))


@pytest.mark.parametrize("api", ["jacobian", "hessian"])
def test_err_check_strict_vectorize(T, api):
    # TestAutogradFunctional.test_jacobian_err_check_strict_vectorize / test_hessian_err_check_strict_vectorize
    fn = getattr(T.autograd.functional, api)
    with pytest.raises(RuntimeError, match="not supported together"):
        fn(lambda x: (x ** 3).sum(), _vec(T, 0.1, 0.2), strict=True, vectorize=True)


@pytest.mark.parametrize("api", ["hessian", "vhp", "hvp"])
def test_second_order_err_check(T, api):
    # TestAutogradFunctional.test_hessian_err_check / test_vhp_err_check / test_hvp_err_check
    F = T.autograd.functional
    inp = _vec(T, 0.1, 0.2, 0.3, 0.4)
    v = _vec(T, 0.5, 0.6, 0.7, 0.8)

    def call(f, x, vv=v):
        return F.hessian(f, x) if api == "hessian" else getattr(F, api)(f, x, vv)

    with pytest.raises(TypeError, match=f"The inputs given to {api} must be either a Tensor"):
        call(_scalar_narrow, (inp, 2))
    with pytest.raises(TypeError, match=f"The outputs of the user-provided function given to {api} must"):
        call(lambda a: (_narrow3(a), "bar"), inp)
    with pytest.raises(RuntimeError, match=f"The Tensor returned by the function given to {api} should "
                                           "contain a single element"):
        call(_narrow3, inp)
    if api == "hessian":
        with pytest.raises(RuntimeError, match="The function given to hessian should return a single Tensor"):
            call(lambda a: (_narrow3(a), _narrow3(a)), inp)
        assert _sizes(call(_scalar_narrow, inp)) == (4, 4)
    else:
        with pytest.raises(RuntimeError, match="v has invalid size:"):
            call(_scalar_narrow, inp, _vec(T, 1, 2, 3, 4, 5))
        with pytest.raises(TypeError, match=f"The v given to {api} must be either a Tensor or a tuple of Tensors"):
            call(_scalar_narrow, inp, (v, 2))
        assert _sizes(call(_scalar_narrow, inp)[1]) == (4,)
    two = (inp, _vec(T, 1, 2, 3, 4, 5))
    res = call(lambda a, b: (3 * b.narrow(0, 0, 3) * a.narrow(0, 0, 3)).sum(), two,
               (v, _vec(T, 1, 1, 1, 1, 1)))
    if api == "hessian":
        assert _sizes(res) == (((4, 4), (4, 5)), ((5, 4), (5, 5)))
    else:
        assert _sizes(res[1]) == ((4,), (5,))


@pytest.mark.parametrize("api", ["hessian", "vhp", "hvp"])
def test_second_order_err_check_strict(T, api):
    # TestAutogradFunctional.test_hessian_err_check_strict / test_vhp_err_check_strict /
    # test_hvp_err_check_strict
    F = T.autograd.functional
    inp = _vec(T, 0.1, 0.2, 0.3, 0.4)

    def call(f, **kw):
        if api == "hessian":
            return F.hessian(f, inp, **kw)
        return getattr(F, api)(f, inp, _vec(T, 1, 2, 3, 4), **kw)[1]

    detached = lambda a: a.detach().sum()  # noqa: E731
    cut = lambda a: a.long().double().requires_grad_().clone().sum()  # noqa: E731
    linear = lambda a: (3 * a).sum()  # noqa: E731
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients."):
        call(detached, strict=True)
    cut_msg = ("jacobian of the user-provided function with respect to input 0" if api == "hessian"
               else "The output of the user-provided function is independent of input 0")
    with pytest.raises(RuntimeError, match=cut_msg):
        call(cut, strict=True)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0 is"):
        call(linear, strict=True)
    for f in (detached, cut, linear):
        res = call(f)
        assert _sizes(res) == ((4, 4) if api == "hessian" else (4,))
        assert _np(res).sum() == 0.0


# ---- grad mode and result structure --------------------------------------------------------
@pytest.mark.parametrize("api", ["vjp", "jvp", "vhp", "hvp"])
def test_no_grad(T, api):
    # TestAutogradFunctional.test_vjp_no_grad / test_jvp_no_grad / test_vhp_no_grad / test_hvp_no_grad
    fn = getattr(T.autograd.functional, api)
    f = (lambda x: x.sum(dim=1)) if api in ("vjp", "jvp") else (lambda x: x.exp().sum())
    inputs = _mat(T, 3, 3)
    v = T.ones(3, dtype=T.float64) if api == "vjp" else T.ones(3, 3, dtype=T.float64)
    with T.no_grad():
        out, res = fn(f, inputs, v)
    assert out.grad_fn is None and res.grad_fn is None
    assert np.abs(_np(res)).sum() > 0
    if api in ("vjp", "jvp"):   # the originals make these require grad before create_graph
        inputs.requires_grad_()
        v.requires_grad_()
    with T.no_grad():
        out, res = fn(f, inputs, v, create_graph=True)
        assert not T.is_grad_enabled()   # the caller's mode is restored
    assert out.grad_fn is not None and res.grad_fn is not None
    assert np.abs(_np(res)).sum() > 0


@pytest.mark.parametrize("api", ["jacobian", "hessian"])
def test_jacobian_hessian_no_grad(T, api):
    # TestAutogradFunctional.test_jacobian_no_grad / test_hessian_no_grad
    fn = getattr(T.autograd.functional, api)
    f = (lambda x: x.exp().sum(dim=1)) if api == "jacobian" else (lambda x: x.pow(3).sum())
    inputs = _mat(T, 2, 2)
    with T.no_grad():
        res = fn(f, inputs)
    assert res.grad_fn is None and np.abs(_np(res)).sum() > 0
    with T.no_grad():
        res = fn(f, inputs, create_graph=True)
    assert res.grad_fn is not None and np.abs(_np(res)).sum() > 0


@pytest.mark.parametrize("api", ["vjp", "jvp"])
def test_vjp_jvp_output(T, api):
    # TestAutogradFunctional.test_vjp_output / test_jvp_output
    fn = getattr(T.autograd.functional, api)
    x = _mat(T, 3, 3)
    v = T.ones(3, dtype=T.float64) if api == "vjp" else T.ones(3, 3, dtype=T.float64)
    out, res = fn(lambda a: a.sum(dim=1), x, v)
    assert _sizes(res) == ((3, 3) if api == "vjp" else (3,))
    assert out.grad_fn is None and res.grad_fn is None
    pair = (_vec(T, 0.1, 0.2), _vec(T, 0.3, 0.4))
    ones = _vec(T, 1, 1)
    out, res = fn(lambda a, b: 2 * a + 3 * b, pair, ones if api == "vjp" else (ones, ones))
    assert _sizes(res) == (((2,), (2,)) if api == "vjp" else (2,))
    np.testing.assert_allclose(_np(res[0] if api == "vjp" else res), [2, 2] if api == "vjp" else [5, 5])
    both = (_vec(T, 1, 0), _vec(T, 1, 0))
    out, res = fn(lambda a, b: (2 * a + 3 * b, a + b), pair, both)
    assert _sizes(out) == ((2,), (2,)) and _sizes(res) == ((2,), (2,))
    assert all(t.grad_fn is None for t in out + res)
    # vjp: (2+1, 0) for a and (3+1, 0) for b; jvp: (2+3, 0) and (1+1, 0)
    want = [[3, 0], [4, 0]] if api == "vjp" else [[5, 0], [2, 0]]
    np.testing.assert_allclose([_np(r) for r in res], want)


@pytest.mark.parametrize("api", ["vjp", "jvp"])
def test_vjp_jvp_scalar(T, api):
    # TestAutogradFunctional.test_vjp_scalar / test_jvp_scalar
    fn = getattr(T.autograd.functional, api)
    x = _mat(T, 3, 3)
    out, res = fn(lambda a: a.sum(), x, T.ones(() if api == "vjp" else (3, 3), dtype=T.float64))
    assert _sizes((out, res)) == (((), (3, 3)) if api == "vjp" else ((), ()))
    expander = lambda a: a.unsqueeze(0).repeat(4)  # noqa: E731
    s = T.tensor(0.5, dtype=T.float64)
    out, res = fn(expander, s, T.ones(4 if api == "vjp" else (), dtype=T.float64))
    assert _sizes((out, res)) == (((4,), ()) if api == "vjp" else ((4,), (4,)))
    if api == "vjp":    # v may be left out for a scalar output
        out, res = fn(lambda a: a.sum(), x)
        np.testing.assert_allclose(_np(res), np.ones((3, 3)))
    else:               # and for a single-element input
        out, res = fn(expander, s)
        np.testing.assert_allclose(_np(res), np.ones(4))


@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_output_and_scalar(T, vectorize):
    # TestAutogradFunctional.test_jacobian_output / test_jacobian_scalar
    F = T.autograd.functional
    x = _mat(T, 3, 3)
    res = F.jacobian(lambda a: a.exp().sum(dim=1), x, vectorize=vectorize)
    assert _sizes(res) == (3, 3, 3) and res.grad_fn is None
    res = F.jacobian(lambda a: a.clone(), _vec(T, 1, 2, 3, 4), vectorize=vectorize)
    np.testing.assert_allclose(_np(res), np.eye(4))
    res = F.jacobian(lambda a, b: (a + b.exp()).sum(dim=1), (x, _mat(T, 3, 3, 0.5)), vectorize=vectorize)
    assert _sizes(res) == ((3, 3, 3), (3, 3, 3))
    assert res[0].grad_fn is None and res[1].grad_fn is None
    assert _sizes(F.jacobian(lambda a: a.sum(), x, vectorize=vectorize)) == (3, 3)
    res = F.jacobian(lambda a: a.unsqueeze(0).repeat(4), T.tensor(0.5, dtype=T.float64), vectorize=vectorize)
    assert _sizes(res) == (4,)


@pytest.mark.parametrize("vectorize", [False, True])
def test_hessian_output_and_scalar(T, vectorize):
    # TestAutogradFunctional.test_hessian_output / test_hessian_scalar
    F = T.autograd.functional
    x = _mat(T, 2, 2)
    res = F.hessian(lambda a: a.pow(3).sum(), x, vectorize=vectorize)
    assert _sizes(res) == (2, 2, 2, 2) and res.grad_fn is None
    res = F.hessian(lambda a, b: (a + b).pow(3).sum(), (x, _mat(T, 2, 2, 0.3)), vectorize=vectorize)
    assert _sizes(res) == (((2, 2, 2, 2),) * 2,) * 2
    assert all(r.grad_fn is None for row in res for r in row)
    assert _sizes(F.hessian(lambda a: a.sum(), T.tensor(0.5, dtype=T.float64), vectorize=vectorize)) == ()
    # a single-element output of any shape counts as a scalar
    res = F.hessian(lambda a: a.sum().view(1, 1, 1), x, vectorize=vectorize)
    assert _sizes(res) == (2, 2, 2, 2)


@pytest.mark.parametrize("api", ["vhp", "hvp"])
def test_vhp_hvp_output_and_scalar(T, api):
    # TestAutogradFunctional.test_vhp_output / test_hvp_output / test_vhp_scalar / test_hvp_scalar
    fn = getattr(T.autograd.functional, api)
    x = _mat(T, 4, 4)
    out, res = fn(_scalar_narrow, x, T.ones(4, 4, dtype=T.float64))
    assert _sizes((out, res)) == ((), (4, 4)) and out.grad_fn is None and res.grad_fn is None
    pair = (_vec(T, 0.1, 0.2, 0.3), _vec(T, 0.4, 0.5, 0.6, 0.7))
    out, res = fn(lambda a, b: (a + 3 * b.narrow(0, 0, 3)).exp().sum(), pair,
                  (T.ones(3, dtype=T.float64), T.ones(4, dtype=T.float64)))
    assert _sizes(res) == ((3,), (4,)) and all(r.grad_fn is None for r in res)
    s = T.tensor(0.5, dtype=T.float64)
    out, res = fn(lambda a: a.exp().sum(), s, T.tensor(2.0, dtype=T.float64))
    np.testing.assert_allclose(_np(res), 2 * np.exp(0.5))
    out, res = fn(lambda a: a.exp().sum(), s)   # v defaults for a single-element input
    np.testing.assert_allclose(_np(res), np.exp(0.5))
    out, res = fn(lambda a: a.exp().sum().view(1, 1, 1), x, T.ones(4, 4, dtype=T.float64))
    assert _sizes(res) == (4, 4)
    np.testing.assert_allclose(_np(res), np.exp(_np(x)))


# ---- create_graph ------------------------------------------------------------------------
def _second_derivative_check(T, f, inputs):
    """f(inputs) is a scalar built from a create_graph functional result: its gradient must
    exist (the result is differentiable) and agree with central differences."""
    val = f(*inputs)
    grads = T.autograd.grad(val, inputs)
    eps = 1e-6
    for k, x in enumerate(inputs):
        flat = _np(x).ravel()
        for j in range(flat.size):
            num = []
            for s in (eps, -eps):
                pert = flat.copy()
                pert[j] += s
                args = list(inputs)
                args[k] = T.tensor(pert.reshape(tuple(x.shape)).tolist(), dtype=T.float64, requires_grad=True)
                num.append(float(f(*args).detach()))
            np.testing.assert_allclose(_np(grads[k]).ravel()[j], (num[0] - num[1]) / (2 * eps),
                                       rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("api", ["vjp", "jvp", "vhp", "hvp"])
def test_create_graph_products(T, api):
    # TestAutogradFunctional.test_vjp_create_graph / test_jvp_create_graph / test_vhp_create_graph /
    # test_hvp_create_graph (the composed `foo` case, checked by a second derivative)
    fn = getattr(T.autograd.functional, api)
    if api in ("vjp", "jvp"):
        inner = lambda a, b: (2 * a + 3 * b, a * b)  # noqa: E731
    else:
        inner = lambda a, b: (a + 3 * b.narrow(0, 0, 2)).exp().sum()  # noqa: E731
    x = _vec(T, 0.2, 0.7, rg=True)
    y = _vec(T, 0.4, -0.3, rg=True) if api in ("vjp", "jvp") else _vec(T, 0.4, -0.3, 0.1, rg=True)
    v0 = _vec(T, 1.0, 0.5, rg=True)
    v1 = _vec(T, -0.5, 2.0, rg=True) if api in ("vjp", "jvp") else _vec(T, -0.5, 2.0, 0.3, rg=True)
    out, res = fn(inner, (x, y), (v0, v1), create_graph=True)
    assert all(r.grad_fn is not None for r in res)

    def composed(a, b, w0, w1):
        a = a.cos()
        val, g = fn(inner, (a, b), (w0, w1), create_graph=True)
        vals = val if isinstance(val, tuple) else (val,)
        return sum(t.cos().sum() for t in vals + g) + a.cos().sum() + b.cos().sum()

    _second_derivative_check(T, composed, (x, y, v0, v1))


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("api", ["jacobian", "hessian"])
def test_jacobian_hessian_create_graph(T, api, vectorize):
    # TestAutogradFunctional.test_jacobian_create_graph / test_hessian_create_graph
    fn = getattr(T.autograd.functional, api)
    inner = ((lambda a, b: (a + b).exp().sum(dim=1)) if api == "jacobian"
             else (lambda a, b: (a + b).pow(3).sum()))
    x = _mat(T, 2, 2, 0.1, rg=True)
    y = _mat(T, 2, 2, 0.4, rg=True)
    res = fn(inner, (x, y), create_graph=True, vectorize=vectorize)
    flat = res if api == "jacobian" else tuple(r for row in res for r in row)
    assert all(r.grad_fn is not None for r in flat)

    def composed(a, b):
        a = a.cos()
        out = fn(inner, (a, b), create_graph=True, vectorize=vectorize)
        flat = out if api == "jacobian" else tuple(r for row in out for r in row)
        return sum(t.cos().sum() for t in flat) + a.cos().sum() + b.cos().sum()

    _second_derivative_check(T, composed, (x, y))


# ---- vectorize / strategy agreement --------------------------------------------------------
def _jac_cases(T):
    r = lambda *shape: _mat(T, *shape) if len(shape) == 2 else T.linspace(  # noqa: E731
        -1, 1, int(np.prod(shape)), dtype=T.float64).reshape(shape)
    return {
        # test_jacobian_vectorize_correctness_simple
        "simple": (lambda x: 3 * x ** 2, r(2, 3, 2)),
        # _multi_input
        "multi_input": (lambda x, y: (x.cos() * x) @ y.sin(), (r(2, 3), r(3, 4))),
        # _multi_input_multi_output
        "multi_output": (lambda x, y: ((x * x) @ y, x @ (x.sum(1) * y), y.sum()), (r(4, 3), r(3, 4))),
        # _unrelated_outputs
        "unrelated": (lambda x, y: (x, y, x, y), (r(2), r(3))),
        # _zero_dim (three cases)
        "zero_dim_out": (lambda x, y: (x.sum(), y.sum(), x * y), (r(3), r(3) + 2)),
        "zero_dim_in": (lambda x: T.stack([x, x, x]), T.tensor(0.3, dtype=T.float64)),
        "zero_dim_mixed": (lambda x, y: (y.sum(), x * y), (T.tensor(0.3, dtype=T.float64), r(1))),
    }


def _flat_np(res):
    if isinstance(res, (tuple, list)):
        return [a for r in res for a in _flat_np(r)]
    return [_np(res)]


def _assert_same(a, b):
    assert _sizes(tuple(a) if isinstance(a, list) else a) == _sizes(tuple(b) if isinstance(b, list) else b)
    for x, y in zip(_flat_np(a), _flat_np(b)):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", ["simple", "multi_input", "multi_output", "unrelated",
                                  "zero_dim_out", "zero_dim_in", "zero_dim_mixed"])
def test_jacobian_vectorize_correctness(T, case):
    # TestAutogradFunctional.test_jacobian_vectorize_correctness_*
    f, inputs = _jac_cases(T)[case]
    F = T.autograd.functional
    expected = F.jacobian(f, inputs)
    _assert_same(F.jacobian(f, inputs, vectorize=True), expected)
    fwd = F.jacobian(f, inputs, vectorize=True, strategy="forward-mode")
    _assert_same(_as_tuples(fwd), expected)


def _as_tuples(res):
    """torch's forward-mode jacobian nests lists where reverse mode nests tuples; compare
    values only."""
    if isinstance(res, (tuple, list)):
        return tuple(_as_tuples(r) for r in res)
    return res


def test_jacobian_vectorize_correctness_different_dtype(T):
    # TestAutogradFunctional.test_jacobian_vectorize_correctness_different_dtype: reverse mode
    # gives each block the input's dtype
    F = T.autograd.functional
    x = T.tensor([0.5, -1.0, 2.0], dtype=T.float32)
    y = T.tensor([1.5, 0.25, -0.5], dtype=T.float32)
    f = lambda a, b: ((a * b).float(), (a * b).double())  # noqa: E731
    expected = F.jacobian(f, (x, y))
    res = F.jacobian(f, (x, y), vectorize=True)
    assert [[str(r.dtype).split(".")[-1] for r in row] for row in res] == [["float32"] * 2] * 2
    for a, b in zip(_flat_np(res), _flat_np(expected)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("case", ["simple", "multi_input", "unrelated_one", "unrelated_all"])
def test_hessian_vectorize_correctness(T, case):
    # TestAutogradFunctional.test_hessian_vectorize_correctness_simple / _multi_input /
    # _unrelated_outputs
    r = lambda *shape: T.linspace(-1, 1, int(np.prod(shape)), dtype=T.float64).reshape(shape)  # noqa: E731
    f, inputs = {
        "simple": (lambda x: (3 * x ** 2).sum(), r(2, 3, 2)),
        "multi_input": (lambda x, y, z: ((x.relu() * x) @ y.sin() @ z).sum(), (r(2, 2) + 0.05, r(2, 3), r(3, 2))),
        "unrelated_one": (lambda x, y: (x ** 2).sum(), (r(2), r(3))),
        "unrelated_all": (lambda x, y: T.ones([], dtype=T.float64), (r(2), r(3))),
    }[case]
    F = T.autograd.functional
    expected = F.hessian(f, inputs)
    _assert_same(F.hessian(f, inputs, vectorize=True), expected)
    fwd = F.hessian(f, inputs, vectorize=True, outer_jacobian_strategy="forward-mode")
    _assert_same(_as_tuples(fwd), expected)


@pytest.mark.parametrize("api", ["jacobian", "hessian"])
def test_vectorize_raises_no_warnings(T, api):
    # TestAutogradFunctional.test_jacobian_vectorize_raises_no_warnings / test_hessian_...
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        getattr(T.autograd.functional, api)(lambda a: (a ** 2).sum(), _vec(T, 1, 2, 3), vectorize=True)
    assert seen == []


def test_jacobian_match_vjp_jvp(T):
    # TestAutogradFunctional.test_jacobian_match_vjp_jvp
    F = T.autograd.functional
    f = lambda x: x ** 3 + x.sum()  # noqa: E731
    x, v = _vec(T, 0.1, 0.5, -0.3, 0.9), _vec(T, 0.2, -1.0, 0.4, 0.7)
    jac = _np(F.jacobian(f, x))
    np.testing.assert_allclose(_np(F.jvp(f, x, v)[1]), jac @ _np(v), rtol=1e-12)
    np.testing.assert_allclose(_np(F.vjp(f, x, v)[1]), _np(v) @ jac, rtol=1e-12)


def test_hessian_match_vhp_hvp(T):
    # TestAutogradFunctional.test_hessian_match_vhp_hvp
    F = T.autograd.functional
    x, v = _vec(T, 0.1, 0.5, -0.3, 0.9), _vec(T, 0.2, -1.0, 0.4, 0.7)
    hes = _np(F.hessian(_scalar_narrow, x))
    np.testing.assert_allclose(_np(F.hvp(_scalar_narrow, x, v)[1]), hes @ _np(v), rtol=1e-12)
    np.testing.assert_allclose(_np(F.vhp(_scalar_narrow, x, v)[1]), _np(v) @ hes, rtol=1e-12)
