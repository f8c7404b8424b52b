"""Ported from PyTorch's test/test_autograd.py, round 11: TestAutograd methods not ported in
earlier rounds (expanded grad_outputs of views, in-place through views, saved-tensor hook
corners, deprecated attributes, gradcheck options). Each body runs under torch 2.13 (the
oracle) and tracegrad through the ``T`` fixture, or as a ``same_outcome`` program whose values
torch supplies; each test names its original.

Adapted: the originals draw inputs with ``rand``/``randn``; here they are fixed numpy draws so
both libraries see the same values, at smaller sizes (10 -> 4)."""
import gc
import warnings

import numpy as np
import pytest

from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")


def d(T, *shape, seed=0, grad=False):
    a = np.random.RandomState(seed).uniform(-1, 1, shape)
    return T.tensor(a, dtype=T.float64, requires_grad=grad)


CASES = {
    # TestAutograd.test_diagonal_expanded_v: grad_outputs an expanded 0-stride tensor
    "diagonal_expanded_v": lambda T: (lambda a: T.autograd.grad(a.diagonal(), a, T.tensor(0.7, dtype=T.float64).expand(4)))(
        d(T, 4, 4, grad=True)),
    # TestAutograd.test_select_expanded_v
    "select_expanded_v": lambda T: (lambda a: T.autograd.grad(a[0], a, d(T, 4, seed=1).expand(4, 4)))(d(T, 4, 4, 4, grad=True)),
    # TestAutograd.test_slice_expanded_v
    "slice_expanded_v": lambda T: (lambda a: T.autograd.grad(a[1:3], a, d(T, 4, seed=1).expand(2, 4, 4)))(d(T, 4, 4, 4, grad=True)),
    # TestAutograd.test_inplace_on_view_backward (its second half: threshold_ on a view_as of a
    # non-leaf, double backward through ThresholdBackwardBackward0)
    "inplace_on_view_backward_threshold": lambda T: (lambda x: (lambda g: (g.sum().backward(), g, x.grad)[1:])(
        T.autograd.grad(T.sigmoid(T.nn.functional.threshold((x + 1).view_as(x), 0., 0., True)), x,
                        grad_outputs=T.ones(2, 3, dtype=T.float64), create_graph=True)[0]))(d(T, 2, 3, grad=True)),
    # TestAutograd.test_inplace_on_view_backward (first half: InstanceNorm2d + ReLU(inplace))
    "inplace_on_view_backward_instancenorm": lambda T: (lambda x: (lambda g: (T.autograd.grad(g.sum(), [x]), g))(
        T.autograd.grad(T.nn.Sequential(T.nn.InstanceNorm2d(2), T.nn.ReLU(True))(x).pow(2), [x],
                        grad_outputs=T.ones(1, 2, 2, 2, dtype=T.float64), create_graph=True)[0]))(d(T, 1, 2, 2, 2, grad=True)),
    # TestAutograd.test_inplace_on_view_leaf_errors: in-place on a view of a leaf needing grad
    "inplace_on_view_leaf_errors": lambda T: (lambda x: x.view_as(x).add_(1))(T.zeros(1, requires_grad=True)),
    "inplace_on_view_leaf_no_grad_ok": lambda T: (lambda x: (T.no_grad()(lambda: x.view_as(x).add_(1))(), x)[1])(
        T.zeros(2, requires_grad=True)),
    "inplace_on_leaf_errors": lambda T: T.zeros(1, requires_grad=True).add_(1),
    # TestAutograd.test_mutate_view_of_leaf_requires_grad-like: in-place on a detached view is
    # allowed and visible in the leaf; its version counter is shared
    "mutate_detached_view_of_leaf": lambda T: (lambda x: (lambda v: (v.add_(1), x.detach().clone(), x._version)[1:])(x.detach()[1:]))(
        T.zeros(3, requires_grad=True)),
    # TestAutograd.test_wrapped_number_saved_variable_hooks: Python scalars saved by mul are not
    # given to the saved-tensor hooks (here: hooks that raise)
    "wrapped_number_saved_variable_hooks": lambda T: _wrapped_number(T),
    # TestAutograd.test_default_saved_variable_hooks_double_backward
    "default_saved_hooks_double_backward": lambda T: _double_backward_hooks(T, lambda x: x),
    "default_saved_hooks_double_backward_scaled": lambda T: _double_backward_hooks(T, lambda x: 2 * x),
    # TestAutograd.test_pack_hook_with_inplace_modification_should_throw
    "pack_hook_inplace_modification_throws": lambda T: _pack_inplace(T),
    # TestAutograd.test_inplace_on_view_weak_grad_fn: the view's grad_fn survives the view
    "inplace_on_view_weak_grad_fn": lambda T: _weak_grad_fn(T),
    # TestAutograd.test_backward_with_inputs (inputs= given as a tensor, not a sequence; a
    # non-leaf input accumulates into its .grad)
    "backward_with_inputs_single_tensor": lambda T: (lambda x, y: ((x * y).sum().backward(inputs=x), x.grad, y.grad)[1:])(
        d(T, 3, grad=True), d(T, 3, seed=1, grad=True)),
    "backward_with_nonleaf_input": lambda T: (lambda x: (lambda h: ((h * h).sum().backward(inputs=[h]), h.grad, x.grad)[1:])(x * 2))(
        d(T, 3, grad=True)),
    "backward_with_empty_inputs_raises": lambda T: (lambda x: (x * 2).sum().backward(inputs=[]))(d(T, 3, grad=True)),
    # TestAutograd.test_grad_to_node_set -- grad() on a tensor that does not require grad
    "grad_input_not_requiring_grad": lambda T: (lambda x: T.autograd.grad((x * 2).sum(), d(T, 3, seed=1)))(d(T, 3, grad=True)),
    "grad_unused_input_allow_unused": lambda T: (lambda x, y: T.autograd.grad((x * 2).sum(), [x, y], allow_unused=True))(
        d(T, 3, grad=True), d(T, 3, seed=1, grad=True)),
    "grad_unused_input_materialize": lambda T: (lambda x, y: T.autograd.grad((x * 2).sum(), [x, y], allow_unused=True,
                                                                             materialize_grads=True))(
        d(T, 3, grad=True), d(T, 3, seed=1, grad=True)),
    "grad_unused_input_raises": lambda T: (lambda x, y: T.autograd.grad((x * 2).sum(), [x, y]))(
        d(T, 3, grad=True), d(T, 3, seed=1, grad=True)),
    "grad_materialize_without_allow_unused_raises": lambda T: (lambda x: T.autograd.grad((x * 2).sum(), [x], allow_unused=False,
                                                                                         materialize_grads=True))(d(T, 3, grad=True)),
    # TestAutograd.test_sum_to_with_empty_dim_grad-like: broadcasting over a 0-size dim
    "broadcast_empty_dim_grad": lambda T: (lambda a, b: ((a + b).sum().backward(), a.grad, b.grad)[1:])(
        d(T, 3, 1, grad=True), T.zeros(3, 0, dtype=T.float64, requires_grad=True)),
    # TestAutograd.test_detect_anomaly: nan in backward is a RuntimeError under detect_anomaly
    "detect_anomaly_nan_backward": lambda T: _anomaly_nan(T),
}


def _wrapped_number(T):
    def err_hook(x):
        raise RuntimeError("this hook should not be called")
    with T.autograd.graph.saved_tensors_hooks(err_hook, err_hook):
        a = d(T, 3, grad=True)
        out = (a * 3).sum()
        return T.autograd.grad(out, (a,))


def _double_backward_hooks(T, pack):
    with T.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        a = d(T, 4, grad=True)
        y = a ** 3
        (g,) = T.autograd.grad(y.sum(), (a,), create_graph=True)
        g.sum().backward()
        return g, a.grad


def _pack_inplace(T):
    a = d(T, 4, grad=True)

    def inc(x):
        x += 1
        return x
    with T.autograd.graph.saved_tensors_hooks(inc, lambda x: x):
        try:
            T.exp(a)
        except RuntimeError:
            raised = True
        else:
            raised = False
    return raised, T.exp(a)


def _weak_grad_fn(T):
    a = T.arange(10., dtype=T.float64, requires_grad=True)
    b = a.narrow(0, 0, 2).clone().view(-1)
    b.relu_()
    c = b.clone()
    del b
    gc.collect()
    s = c.sum()
    s.backward()
    return s, a.grad


def _anomaly_nan(T):
    class Nan(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")
    x = d(T, 2, grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with T.autograd.detect_anomaly():
            Nan.apply(x).sum().backward()


@pytest.mark.parametrize("fn", outcome_params(CASES))
def test_autograd_round11(fn):
    same_outcome(fn)


def _threshold_double_backward_node(T):
    x = d(T, 2, 3, grad=True)
    tmp2 = T.nn.functional.threshold((x + 1).view_as(x), 0., 0., True)
    g = T.autograd.grad(T.sigmoid(tmp2), x, grad_outputs=T.ones(2, 3, dtype=T.float64), create_graph=True)[0]
    gp = g.sum()
    return gp.grad_fn.next_functions[0][0].next_functions[1][0].name()


@pytest.mark.xfail(strict=True, reason="tracegrad's double-backward graph is one node per first-order backward "
                   "(AddBackwardBackward0 here), not torch's CopySlices over ThresholdBackwardBackward0; "
                   "values and gradients agree (inplace_on_view_backward_threshold)")
def test_inplace_on_view_backward_node_names():
    # TestAutograd.test_inplace_on_view_backward (its grad_fn structure assertion)
    same_outcome(_threshold_double_backward_node)


def test_volatile_deprecated(T):
    # TestAutograd.test_volatile_deprecated: reading .volatile warns and gives False
    v = T.zeros(3, 3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert v.volatile is False
    assert any("volatile" in str(x.message) for x in w)


def test_saved_tensor_hooks_disable(T):
    # TestAutograd.test_disabling_saved_tensor_hooks: registering hooks while disabled raises
    # with the given message; nesting restores the previous state
    with T.autograd.graph.disable_saved_tensors_hooks("error message"):
        with pytest.raises(RuntimeError, match="error message"):
            with T.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
                pass
    with T.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        pass


def test_gradcheck_check_batched_grad(T):
    # TestAutograd.test_gradcheck_check_batched_grad: a well-behaved function passes with
    # check_batched_grad; a wrong backward fails (GradcheckError is a RuntimeError)
    x = d(T, 3, grad=True)
    assert T.autograd.gradcheck(lambda t: (t * t).sin(), (x,), check_batched_grad=True)

    class Wrong(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3
    with pytest.raises(RuntimeError):
        T.autograd.gradcheck(Wrong.apply, (x,))
    assert not T.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False)


def test_gradcheck_default_atol_rtol(T):
    # gradcheck's atol/rtol: a backward off by 1e-2 passes at atol=1e-1, fails at the defaults
    class Off(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2.01
    x = d(T, 3, grad=True)
    assert T.autograd.gradcheck(Off.apply, (x,), atol=1e-1, rtol=0.)
    assert not T.autograd.gradcheck(Off.apply, (x,), raise_exception=False)


def test_gradgradcheck_simple(T):
    # TestAutograd.test_gradgradcheck_* (the basic pass): second derivatives of a smooth function
    x = d(T, 3, grad=True)
    assert T.autograd.gradgradcheck(lambda t: (t ** 3).sum() + t.exp(), (x,))
