"""Round-14 ports (third file) of PyTorch's test/dynamo/test_autograd_function.py cases not
ported before, as compiled-vs-eager checks: a custom Function inside a compiled training step
(its backward runs in the program), with default arguments, several outputs, an intermediate
saved for backward, a closure over a module's parameter, grad mode seen inside forward and
backward, mark_dirty, custom_fwd/custom_bwd, a Python object argument. torch eager,
tracegrad eager and ``tracegrad.compile`` must agree after every call."""
import numpy as np
import pytest

import tracegrad
from ._dynamo_port import CALLS, compare, randn32 as _rand, same

torch = pytest.importorskip("torch")






def _step_run(T, wrap, fn):
    """``fn(x)`` -> a loss, inside a compiled step that also runs backward; returns the loss and
    x's gradient on every call."""
    def step(x):
        loss = fn(x)
        loss.backward()
        return loss
    f = wrap(step)

    def run(i):
        x = _rand(T, i, 3, 2).requires_grad_()
        return f(x), x.grad
    return run


# AutogradFunctionTests.test_autograd_function_equivalence / test_default_values
def test_function_with_default_argument_in_a_step():
    def build(T, wrap):
        class Scaled(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, alpha=2.0):
                ctx.alpha = alpha
                ctx.save_for_backward(x)
                return x * x * alpha

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * 2 * x * ctx.alpha, None
        return _step_run(T, wrap, lambda x: Scaled.apply(x).sum() + Scaled.apply(x, 0.5).sum())
    compare(build)


# AutogradFunctionTests.test_multiple_outputs / test_save_for_backward_intermediate: two outputs,
# one of them saved and used by backward
def test_function_with_two_outputs_and_a_saved_intermediate():
    def build(T, wrap):
        class SinCos(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                s, c = x.sin(), x.cos()
                ctx.save_for_backward(s, c)
                return s, c

            @staticmethod
            def backward(ctx, gs, gc):
                s, c = ctx.saved_tensors
                return gs * c - gc * s

        def fn(x):
            s, c = SinCos.apply(x)
            return (s * 3 + c.pow(2)).sum()
        return _step_run(T, wrap, fn)
    compare(build)


# AutogradFunctionTests.test_function_with_bound_free_variable: a Function whose forward and
# backward close over a module's parameter; the step updates the parameter every call
def test_function_closing_over_a_parameter_updated_every_call():
    def build(T, wrap):
        lin = T.nn.Linear(2, 2)
        with T.no_grad():
            lin.weight.copy_(T.tensor([[1.0, 0.5], [-0.5, 2.0]]))
            lin.bias.zero_()
        opt = T.optim.SGD(lin.parameters(), lr=0.1)

        class ByWeight(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x @ lin.weight.detach()

            @staticmethod
            def backward(ctx, g):
                return g @ lin.weight.detach().t()

        def step(x):
            opt.zero_grad()
            loss = (lin(ByWeight.apply(x)) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)

        def run(i):
            x = _rand(T, i, 3, 2).requires_grad_()
            return f(x), x.grad, lin.weight.detach().clone()
        return run
    compare(build)


# AutogradFunctionTests.test_is_grad_enabled: grad mode inside forward (off) and backward
# (on only with create_graph) seen by Python and kept as data
def test_grad_mode_seen_inside_forward_and_backward():
    def build(T, wrap):
        seen = []

        class Probe(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                seen.append(("f", T.is_grad_enabled()))
                return x * 2

            @staticmethod
            def backward(ctx, g):
                seen.append(("b", T.is_grad_enabled()))
                return g * 2
        inner = _step_run(T, wrap, lambda x: Probe.apply(x).sum())

        def run(i):
            out = inner(i)
            return out, list(seen)
        return run
    compare(build)


# AutogradFunctionTests.test_mark_dirty (an in-place forward on a non-leaf) inside a step
def test_mark_dirty_in_place_forward_inside_a_step():
    def build(T, wrap):
        class DoubleInplace(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        def fn(x):
            y = x + 1
            z = DoubleInplace.apply(y)
            return (z * y).sum()           # y is z (the same storage, updated)
        return _step_run(T, wrap, fn)
    compare(build)


# AutogradFunctionTests.test_amp_custom_fwd_bwd: custom_fwd/custom_bwd decorators, no autocast
def test_custom_fwd_bwd_decorated_function():
    def build(T, wrap):
        class MyMM(T.autograd.Function):
            @staticmethod
            @T.amp.custom_fwd(device_type="cpu")
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a.mm(b)

            @staticmethod
            @T.amp.custom_bwd(device_type="cpu")
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g.mm(b.t()), a.t().mm(g)

        w = T.tensor([[1.0, -1.0, 0.5], [0.25, 2.0, -0.5]], requires_grad=True)

        def fn(x):
            return MyMM.apply(x, w).tanh().sum()
        inner = _step_run(T, wrap, fn)

        def run(i):
            out = inner(i)
            g = w.grad.clone()
            w.grad = None
            return out, g
        return run
    compare(build)


# AutogradFunctionTests.test_user_defined_object_as_input / test_tensor_list_as_input: a
# Python object and a list passed next to the tensors; backward returns None for them
def test_python_object_and_list_arguments():
    def build(T, wrap):
        class Cfg:
            def __init__(self, k):
                self.k = k

        class Weighted(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, cfg, weights):
                ctx.k, ctx.weights = cfg.k, list(weights)
                return x * cfg.k * sum(weights)

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k * sum(ctx.weights), None, None
        f = wrap(lambda x, cfg, ws: Weighted.apply(x, cfg, ws).sum())

        def run(i):
            x = _rand(T, i, 3).requires_grad_()
            out = f(x, Cfg(i + 1), [0.5, 1.5 * i])
            out.backward()
            return out, x.grad
        return run
    compare(build)


# AutogradFunctionTests.test_function_inputs_not_requiring_grad: a Function applied to an
# input that does not require grad and one that does; needs_input_grad per call
def test_input_requiring_grad_flips_between_calls():
    def build(T, wrap):
        flags = []

        class Mul(T.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                flags.append(tuple(ctx.needs_input_grad))
                return (g * b if ctx.needs_input_grad[0] else None,
                        g * a if ctx.needs_input_grad[1] else None)
        f = wrap(lambda a, b: Mul.apply(a, b).sum())

        def run(i):
            a = _rand(T, i, 3).requires_grad_(i % 2 == 0)
            b = _rand(T, i + 1, 3).requires_grad_()
            out = f(a, b)
            out.backward()
            return out, a.grad, b.grad, list(flags)
        return run
    compare(build)
