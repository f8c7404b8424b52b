"""A custom ``autograd.Function`` inside ``tracegrad.func`` transforms uses its own rules, as torch.func:
``backward`` at a reverse-mode level (grad, vjp, jacrev), ``jvp`` at a forward-mode level (jvp,
jacfwd, linearize), and what those rules compute is differentiated by the levels outside
(``func/_custom_function.py``). The Functions here have deliberately non-mathematical rules (a
backward scaled by 2, a jvp of 3 * tangent, a straight-through round), so tracing through forward
instead would give different numbers. Each program runs with torch (the oracle) and tracegrad
(``parity.same_outcome``): equal values or the same exception class."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome, scaled_sin_function

torch = pytest.importorskip("torch")

X = [0.1, 0.5, -0.3]
Y = [1.0, 2.0, 3.0]


def t(T, a):
    return T.tensor(np.asarray(a), dtype=T.float64)


my_sin = scaled_sin_function


def multi(T, vmap_rule=False):
    """Several inputs (one a Python number with a default), outputs with an integer one marked
    non-differentiable and a non-Tensor one; a Tensor kept as a ctx attribute and an output saved."""
    class Multi(T.autograd.Function):
        generate_vmap_rule = vmap_rule

        @staticmethod
        def forward(x, y, k, scale=2.0):
            return x * y * k, (x + y).argmax(), k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, y, k, scale = inputs
            ctx.mark_non_differentiable(output[1])
            ctx.save_for_backward(x, output[0])
            ctx.yy, ctx.scale = y, scale

        @staticmethod
        def backward(ctx, g, g_index, g_k):
            x, out = ctx.saved_tensors
            return g * ctx.yy * ctx.scale + out * 0.5, g * x * 7, None, None

        @staticmethod
        def jvp(ctx, tx, ty, tk, ts):
            return tx * 10 + ty, None, None
    return Multi


def straight_through(T):
    class Round(T.autograd.Function):
        @staticmethod
        def forward(x):
            return x.round()

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g
    return Round


def nested_attributes(T):
    """Tensors kept on ctx inside a list, a tuple and a dict (with unsortable keys), beside Python
    values: backward reads them all."""
    class Nested(T.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, y = inputs
            ctx.parts, ctx.scale, ctx.by_key = [x, 3, (y, None)], 5, {1: x, "y": y}

        @staticmethod
        def backward(ctx, g):
            return g * ctx.parts[2][0] * ctx.scale, g * ctx.by_key[1] * ctx.parts[1]
    return Nested


def sin_sum(T, vmap_rule=False):
    return lambda x: my_sin(T, vmap_rule).apply(x).sum()


def multi_loss(T, vmap_rule=False):
    return lambda x, y: (multi(T, vmap_rule).apply(x, y, 3)[0] ** 2).sum()


def outer_weight_gradient(T):
    # the transform's result stays connected to a weight read from outside it; the weight's
    # gradient passes through the Function's backward too
    w = t(T, Y).requires_grad_()
    T.func.grad(lambda x: my_sin(T).apply(x * w).sum())(t(T, X)).sum().backward()
    return w.grad


def backward_through_transform_result(T):
    # second order through the eager graph: d/dx of grad(f)(x), whose f's backward is the rule
    x = t(T, X).requires_grad_()
    g = T.func.grad(sin_sum(T))(x)
    g.sum().backward()
    return g, x.grad


CASES = {
    "grad": lambda T: T.func.grad(sin_sum(T))(t(T, X)),
    "grad_and_value": lambda T: T.func.grad_and_value(sin_sum(T))(t(T, X)),
    "vjp": lambda T: T.func.vjp(my_sin(T).apply, t(T, X))[1](t(T, Y)),
    "jvp": lambda T: T.func.jvp(my_sin(T).apply, (t(T, X),), (t(T, Y),)),
    "linearize": lambda T: T.func.linearize(my_sin(T).apply, t(T, X))[1](t(T, Y)),
    "jacrev": lambda T: T.func.jacrev(my_sin(T).apply)(t(T, X)),
    "jacfwd_needs_vmap_support": lambda T: T.func.jacfwd(my_sin(T).apply)(t(T, X)),
    "jacfwd_generated_vmap_rule": lambda T: T.func.jacfwd(my_sin(T, True).apply)(t(T, X)),
    "hessian_needs_vmap_support": lambda T: T.func.hessian(sin_sum(T))(t(T, X)),
    "hessian_generated_vmap_rule": lambda T: T.func.hessian(sin_sum(T, True))(t(T, X)),
    "jacrev_of_jacrev": lambda T: T.func.jacrev(T.func.jacrev(sin_sum(T)))(t(T, X)),
    "grad_of_grad": lambda T: T.func.grad(lambda x: T.func.grad(sin_sum(T))(x).sum())(t(T, X)),
    "jvp_of_grad": lambda T: T.func.jvp(T.func.grad(sin_sum(T)), (t(T, X),), (t(T, Y),)),
    "grad_of_jvp": lambda T: T.func.grad(lambda x: T.func.jvp(my_sin(T).apply, (x,), (t(T, Y),))[1].sum())(t(T, X)),
    "vmap_of_grad_needs_vmap_support": lambda T: T.func.vmap(T.func.grad(sin_sum(T)))(t(T, [X, Y])),
    "vmap_of_grad_generated_rule": lambda T: T.func.vmap(T.func.grad(sin_sum(T, True)))(t(T, [X, Y])),
    "multi_grad_both": lambda T: T.func.grad(multi_loss(T), argnums=(0, 1))(t(T, X), t(T, Y)),
    "multi_grad_second": lambda T: T.func.grad(multi_loss(T), argnums=1)(t(T, X), t(T, Y)),
    "multi_jvp": lambda T: T.func.jvp(lambda x, y: multi(T).apply(x, y, 3)[0], (t(T, X), t(T, Y)), (t(T, Y), t(T, X))),
    "multi_jacrev": lambda T: T.func.jacrev(lambda x, y: multi(T).apply(x, y, 3)[0])(t(T, X), t(T, Y)),
    "multi_vmap_grad": lambda T: T.func.vmap(T.func.grad(multi_loss(T, True)))(t(T, [X, Y]), t(T, [Y, X])),
    "straight_through_grad": lambda T: T.func.grad(lambda x: (straight_through(T).apply(x * 3) * x).sum())(t(T, X)),
    "straight_through_jvp_without_jvp": lambda T: T.func.jvp(straight_through(T).apply, (t(T, X),), (t(T, Y),)),
    "no_grad_inside_is_constant": lambda T: T.func.grad(
        lambda x: (x * T.no_grad()(lambda: straight_through(T).apply(x * 3))()).sum())(t(T, X)),
    "nested_ctx_attributes": lambda T: T.func.grad(lambda x, y: nested_attributes(T).apply(x, y).sum(),
                                                   argnums=(0, 1))(t(T, X), t(T, Y)),
    "nested_ctx_attributes_second_order": lambda T: T.func.jacrev(T.func.grad(
        lambda x, y: (nested_attributes(T).apply(x, y) * x).sum(), argnums=1))(t(T, X), t(T, Y)),
    "outer_weight_gradient": outer_weight_gradient,
    "backward_through_transform_result": backward_through_transform_result,
}


@pytest.mark.parametrize("fn", outcome_params(CASES))
def test_function_rules_inside_transforms(fn):
    same_outcome(fn)


def test_rules_differ_from_forwards_derivative():
    """The oracle-free check: the gradient is the rule's (2 cos x), not forward's (cos x)."""
    import tracegrad
    x = t(tracegrad, X)
    g = tracegrad.func.grad(sin_sum(tracegrad))(x)
    np.testing.assert_allclose(g.numpy(), 2 * np.cos(X), rtol=1e-12)
    _, tangent = tracegrad.func.jvp(my_sin(tracegrad).apply, (x,), (t(tracegrad, Y),))
    np.testing.assert_allclose(tangent.numpy(), 3 * np.asarray(Y), rtol=1e-12)


def test_forward_runs_once_per_call():
    """The Function's forward runs once for a grad call (the primal at the enclosing levels is
    the same run the rule's residuals come from), as torch's."""
    import tracegrad
    calls = []

    class Counted(tracegrad.autograd.Function):
        @staticmethod
        def forward(x):
            calls.append(1)
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 5

    g = tracegrad.func.grad(lambda x: Counted.apply(x).sum())(t(tracegrad, X))
    np.testing.assert_allclose(g.numpy(), [5.0, 5.0, 5.0])
    assert len(calls) == 1


_OPS = {}


def custom_sin(T):
    """A torch.library custom operator with a registered (scaled) backward, one per library."""
    name = "tt" if T is torch else "tg"
    if name not in _OPS:
        @T.library.custom_op(f"{name}_levels::mysin", mutates_args=())
        def mysin(x: T.Tensor) -> T.Tensor:
            return x.sin()

        def setup(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        def backward(ctx, g):
            return g * ctx.saved_tensors[0].cos() * 2
        mysin.register_autograd(backward, setup_context=setup)
        _OPS[name] = mysin
    return _OPS[name]


OP_CASES = {
    # torch 2.13 refuses a custom operator inside a reverse-mode transform ...
    "custom_op_grad_refused": lambda T: T.func.grad(lambda x: custom_sin(T)(x).sum())(t(T, X)),
    "custom_op_vmap_grad_refused": lambda T: T.func.vmap(T.func.grad(lambda x: custom_sin(T)(x).sum()))(t(T, [X])),
    # ... gives its outputs zero tangents under jvp, and runs it on the batch under vmap
    "custom_op_jvp_zero_tangent": lambda T: T.func.jvp(custom_sin(T), (t(T, X),), (t(T, Y),)),
    "custom_op_vmap": lambda T: T.func.vmap(custom_sin(T))(t(T, [X, Y])),
    "custom_op_eager_backward": lambda T: (lambda x: (custom_sin(T)(x).sum().backward(), x.grad)[1])(
        t(T, X).requires_grad_()),
}


@pytest.mark.parametrize("fn", outcome_params(OP_CASES))
def test_custom_ops_inside_transforms(fn):
    same_outcome(fn)
