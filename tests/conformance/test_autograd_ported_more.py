"""More of PyTorch's test/test_autograd.py (TestAutograd), ported for the ``T`` fixture: each
body runs under torch 2.13 (the oracle) and tracegrad; each test names its original."""
import gc
import weakref

import numpy as np
import pytest


def _np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


# ---- custom Function ----------------------------------------------------------------------
def test_needs_input_grad(T):
    # TestAutograd.test_function (ctx.needs_input_grad per input)
    seen = []

    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k):
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            seen.append(tuple(ctx.needs_input_grad))
            return g, g, None

    a = T.ones(2, requires_grad=True)
    F.apply(a, T.ones(2), 2.0).sum().backward()
    assert seen == [(True, False, False)]


def test_mark_non_differentiable(T):
    # TestAutograd.test_mark_non_differentiable
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x > 0
            ctx.mark_non_differentiable(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return g.new_zeros(g.shape)

    x = T.randn(5, 5, requires_grad=True)
    mask = F.apply(x)
    assert not mask.requires_grad
    y = x.masked_fill(mask, 0)
    y.sum().backward()


def test_mark_non_differentiable_mixed(T):
    # TestAutograd.test_mark_non_differentiable_mixed
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            a = x + 1
            b = x + 2
            ctx.mark_non_differentiable(a)
            return a, b

        @staticmethod
        def backward(ctx, ga, gb):
            assert (ga == 0).all().item()
            assert (gb == 1).all().item()
            return gb

    x = T.randn(5, 5, requires_grad=True)
    a, b = F.apply(x)
    assert not a.requires_grad and b.requires_grad
    b.sum().backward()
    assert _np(x.grad).tolist() == [[1.0] * 5] * 5


def test_materialize_grads(T):
    # TestAutograd.test_materialize_grads: an unused output's gradient arrives as zeros
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x, x.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            assert g2 is not None and _np(g2).tolist() == [0.0, 0.0]
            return g1

    x = T.ones(2, requires_grad=True)
    F.apply(x)[0].sum().backward()
    assert _np(x.grad).tolist() == [1.0, 1.0]


def test_dont_materialize_grads(T):
    # TestAutograd.test_dont_materialize_grads: set_materialize_grads(False) gives None
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x, x.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            assert g2 is None
            return g1

    x = T.ones(2, requires_grad=True)
    F.apply(x)[0].sum().backward()
    assert _np(x.grad).tolist() == [1.0, 1.0]


def test_once_differentiable(T):
    # TestAutograd.test_once_differentiable: a second derivative through it raises
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = T.tensor([1.0, 2.0], requires_grad=True)
    go = T.ones(2, requires_grad=True)
    (g,) = T.autograd.grad(F.apply(x), x, grad_outputs=go, create_graph=True)
    assert _np(g).tolist() == [2.0, 4.0] and g.requires_grad
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()


def test_saved_output_of_function_freed_by_refcount(T, request):
    # TestAutograd.test_free_deep_graph-style, for a custom Function that saves its output
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = T.tensor([0.0, 1.0], requires_grad=True)
    gc.collect()
    gc.disable()
    try:
        y = F.apply(x)
        r = weakref.ref(y)
        del y
        assert r() is None
    finally:
        gc.enable()
    F.apply(x).sum().backward()
    assert np.allclose(_np(x.grad), np.exp([0.0, 1.0]))


def test_saved_output_double_backward_through_function(T):
    # TestAutograd.test_save_output_nr / double backward through a saved output
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = T.tensor([0.5, 1.0], requires_grad=True)
    (g,) = T.autograd.grad(F.apply(x).sum(), x, create_graph=True)
    (gg,) = T.autograd.grad(g.sum(), x)
    assert np.allclose(_np(gg), np.exp([0.5, 1.0]))


# ---- hooks ---------------------------------------------------------------------------------
def test_tensor_hooks_inplace(T):
    # TestAutograd.test_tensor_hooks_inplace: a hook on a tensor before an in-place op sees
    # the gradient of the old value; one registered after sees the new value's
    log = []
    a = T.ones(2, requires_grad=True)
    b = a * 1
    b.register_hook(lambda g: log.append(("before", _np(g).tolist())))
    b.mul_(3)
    b.register_hook(lambda g: log.append(("after", _np(g).tolist())))
    (b * 2).sum().backward()
    assert log == [("after", [2.0, 2.0]), ("before", [6.0, 6.0])]


def test_tensor_hooks_inplace_multiple_outputs_order(T):
    # TestAutograd.test_hooks: several hooks on one tensor run in registration order, each
    # seeing the gradient the previous one returned
    log = []
    a = T.ones(2, requires_grad=True)
    b = a * 2
    b.register_hook(lambda g: log.append(1) or g * 2)
    b.register_hook(lambda g: log.append(2) or g + 1)
    b.sum().backward()
    assert log == [1, 2]
    assert _np(a.grad).tolist() == [6.0, 6.0]


def test_retain_grad_inplace(T):
    # TestAutograd.test_retain_grad_inplace
    a = T.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.sum().backward()
    assert _np(a.grad).tolist() == [1.0]
    a = T.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)          # inplace twice: the retained grad is that of the newest version
    a.mul_(2)
    a.sum().backward()
    assert _np(a.grad).tolist() == [1.0]


@pytest.mark.parametrize("fn", ["function", "var_mean"])
def test_retains_grad_inplace_multiple_outputs(T, fn):
    # TestAutograd.test_retains_grad_inplace_multiple_outputs: retain_grad on both outputs of a
    # multi-output node, then one written in place; the retained grads are the newest versions'
    class DoubleMul(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    f = DoubleMul.apply if fn == "function" else (lambda x: T.var_mean(x, dim=0))
    b = T.rand(3, 3, requires_grad=True)
    var, mean = f(b)
    var.retain_grad()
    mean.retain_grad()
    var.mul_(2)
    (var + mean).sum().backward()
    a = b.detach().requires_grad_(True)
    v2, m2 = f(a)
    v2.mul_(2)
    gv, gm = T.autograd.grad((v2 + m2).sum(), inputs=(v2, m2))
    assert np.allclose(_np(var.grad), _np(gv)) and np.allclose(_np(mean.grad), _np(gm))


def test_grad_fn_prehooks_multiple_outputs(T):
    # TestAutograd.test_grad_fn_prehooks_multiple_outputs: a Node pre-hook may replace one
    # output's gradient (the others pass through)
    b = T.rand(3, 3, requires_grad=True)
    var, mean = T.var_mean(b, dim=0)

    def prehook(grad_output):
        return (grad_output[0] * 2, grad_output[1])

    var.grad_fn.register_prehook(prehook)
    (var + mean).sum().backward()
    b2 = b.detach().requires_grad_()
    v2, m2 = T.var_mean(b2, dim=0)
    (2 * v2 + m2).sum().backward()
    assert np.allclose(_np(b.grad), _np(b2.grad), atol=1e-6)


# ---- ops gradients -------------------------------------------------------------------------
def test_median_gradient_all_and_dim(T):
    # TestAutograd.test_median / test_median_backward-style: median() sends the gradient to one
    # element (the lower median); median(dim) to the index it returns
    x = T.tensor([[3.0, 1.0, 2.0, 2.0], [4.0, 4.0, 0.0, 5.0]], requires_grad=True)
    x.median().backward()
    assert _np(x.grad).sum() == 1.0
    x2 = x.detach().clone().requires_grad_()
    v, i = x2.median(1)
    v.sum().backward()
    g = _np(x2.grad)
    idx = [int(k) for k in i.tolist()]
    assert all(g[r, idx[r]] == 1.0 for r in range(2)) and g.sum() == 2.0


def test_max_min_all_values_ties_spread(T):
    # TestAutograd (test_max / test_min over all values): ties share the gradient evenly
    x = T.tensor([1.0, 3.0, 3.0, 0.0], requires_grad=True)
    x.max().backward()
    assert _np(x.grad).tolist() == [0.0, 0.5, 0.5, 0.0]
    y = T.tensor([1.0, 0.0, 0.0, 2.0], requires_grad=True)
    y.amin().backward()
    assert _np(y.grad).tolist() == [0.0, 0.5, 0.5, 0.0]


@pytest.mark.parametrize("exponent", [0.0, 1.0, 2.0, 0.5, -1.0])
def test_pow_scalar_base_and_exponent_at_zero(T, exponent):
    # TestAutograd.test_pow_scalar_base / test_pow_zero_tensor_gradient (scalar exponents)
    x = T.tensor([0.0, 1.0, 2.0], requires_grad=True)
    (x ** exponent).sum().backward()
    g = _np(x.grad)
    want = {0.0: [0.0, 0.0, 0.0], 1.0: [1.0, 1.0, 1.0], 2.0: [0.0, 2.0, 4.0]}
    if exponent in want:
        assert g.tolist() == want[exponent]
    else:
        assert np.isinf(g[0]) and np.allclose(g[1:], exponent * np.array([1.0, 2.0]) ** (exponent - 1))


def test_pow_scalar_base_at_zero(T):
    # TestAutograd.test_pow_scalar_base: 0 ** x gives gradient 0 for x > 0 (no NaN)
    x = T.tensor([0.5, 1.0, 2.0], requires_grad=True)
    (0.0 ** x).sum().backward()
    assert _np(x.grad).tolist() == [0.0, 0.0, 0.0]


def test_mv_expanded_vector(T):
    # TestAutograd.test_mv_grad_stride_0
    mat = T.randn(2, 2)
    vec = T.randn(1, requires_grad=True)
    (mat @ vec.expand(2)).sum().backward()
    assert np.allclose(_np(vec.grad), _np(mat.sum()).reshape(1), atol=1e-6)


def test_flip_dims_keyword(T):
    # test_ops flip sample: dims as a keyword argument, gradient flips back
    x = T.arange(6.0).reshape(2, 3).requires_grad_()
    y = T.flip(x, dims=(1,))
    assert _np(y).tolist() == [[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]]
    (y * T.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert _np(x.grad).tolist() == [[3.0, 2.0, 1.0]] * 2


def test_autograd_grad_allow_unused(T):
    # TestAutograd.test_grad_unreachable / allow_unused
    x = T.ones(2, requires_grad=True)
    y = T.ones(2, requires_grad=True)
    z = (x * 2).sum()
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        T.autograd.grad(z, [x, y], retain_graph=True)
    gx, gy = T.autograd.grad(z, [x, y], allow_unused=True, retain_graph=True)
    assert gy is None and _np(gx).tolist() == [2.0, 2.0]
    gx, gy = T.autograd.grad(z, [x, y], allow_unused=True, materialize_grads=True)
    assert _np(gy).tolist() == [0.0, 0.0]


def test_backward_twice_without_retain_graph(T):
    # TestAutograd.test_retain_graph-style: freed buffers raise on a second backward
    x = T.ones(2, requires_grad=True)
    y = (x.exp() * 2).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_saved_tensor_hooks_identity_sees_inplace(T):
    # TestAutograd.test_saved_tensors_hook_version_counter_not_shared-style: with saved-tensor
    # hooks there is no version check; an identity pack hook's unpack sees the new value
    a = T.ones(3, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        b = a * 1
        c = b.sin()
    with T.no_grad():
        b.add_(1)
    c.sum().backward()
    assert np.allclose(_np(a.grad), np.cos(2.0))


# ---- views made under no_grad (torch's NO_GRAD_MODE creation meta) -------------------------
@pytest.mark.parametrize("leaf", [True, False])
def test_no_grad_view_is_leaf_requiring_grad(T, leaf):
    # TestAutograd.test_inplace_not_requires_grad / test_no_grad_modifies_version-family: a
    # view made under no_grad of a tensor requiring grad requires grad, has no grad_fn, and an
    # op using it records an edge to nowhere
    a0 = T.ones(2, 3, requires_grad=True)
    a = a0 if leaf else a0 * 1
    with T.no_grad():
        v = a.view(-1)
    assert v.requires_grad and v.grad_fn is None and v.is_leaf and v._is_view()
    y = (v * 2).sum()
    assert y.grad_fn is not None
    y.backward()
    assert v.grad is None and a0.grad is None


def test_no_grad_view_inplace_errors(T):
    # TestAutograd.test_inplace_on_view_of_view_no_grad / torch's creation-meta errors: writing
    # a no_grad view in place with grad mode on, or reading its grad_fn after its base was
    # written in place with grad mode on, raise RuntimeError
    a = T.ones(2, 3, requires_grad=True).clone()
    with T.no_grad():
        v = a.view(-1)
    with pytest.raises(RuntimeError, match="created in no_grad mode and is being modified inplace"):
        v.add_(1)
    with T.no_grad():
        v.add_(1)          # allowed under no_grad: the base sees it
    assert a.tolist() == [[2.0] * 3] * 2
    a.mul_(2)
    with pytest.raises(RuntimeError, match="created in no_grad mode and its base"):
        v.grad_fn
