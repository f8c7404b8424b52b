"""Ported from PyTorch's test/functorch/test_eager_transforms.py (TestAutogradFunction,
TestAutogradFunctionVmapAPI): a custom ``autograd.Function`` inside ``tracegrad.func``
transforms and eager, each program run with torch (the oracle) and tracegrad
(``parity.same_outcome``: equal values or the same exception class)."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")


def returns_input(T, save_for, save_tensors, mark_dirty=False):
    class A(T.autograd.Function):
        @staticmethod
        def forward(x):
            return x

        @staticmethod
        def setup_context(ctx, inputs, output):
            save = ctx.save_for_forward if save_for == "jvp" else ctx.save_for_backward
            if mark_dirty:
                ctx.mark_dirty(inputs[0])
            if save_tensors == "input":
                save(inputs[0])
            elif save_tensors == "output":
                save(output)

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def jvp(ctx, t):
            return t.add_(0) if mark_dirty else t.view_as(t)
    return A


def _returns_input_cases():
    # test_function_returns_input: saving an input that forward returned as-is is refused
    # (RuntimeError) when setup_context is overridden, in eager and inside grad/jvp, unless marked dirty
    cases = {}
    for sf in ("jvp", "vjp"):
        for st in ("input", "output", "neither"):
            for dirty in (False, True):
                key = f"{sf}_{st}_{'dirty' if dirty else 'clean'}"
                cases[f"returns_input_grad_{key}"] = (lambda sf, st, dirty: lambda T: T.func.grad(
                    lambda x: returns_input(T, sf, st, dirty).apply(x.clone()))(T.tensor(2.)))(sf, st, dirty)
                cases[f"returns_input_jvp_{key}"] = (lambda sf, st, dirty: lambda T: T.func.jvp(
                    lambda x: returns_input(T, sf, st, dirty).apply(x.clone()), (T.tensor(2.),), (T.tensor(3.),)))(sf, st, dirty)
                cases[f"returns_input_eager_{key}"] = (lambda sf, st, dirty: lambda T: returns_input(T, sf, st, dirty).apply(
                    T.tensor(2., requires_grad=True).clone()))(sf, st, dirty)
            cases[f"returns_input_no_grad_{sf}_{st}"] = (lambda sf, st: lambda T: T.no_grad()(
                returns_input(T, sf, st).apply)(T.tensor([2.])))(sf, st)
    return cases


def needs_input_grad(T, nest):
    # test_needs_input_grads: a Tensor argument the transform does not differentiate has
    # needs_input_grad False at every level (the rule returns None for it)
    seen = []

    class A(T.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            return

        @staticmethod
        def backward(ctx, g):
            seen.append(tuple(ctx.needs_input_grad))
            return g * 3, None

    f = A.apply
    for _ in range(nest):
        f = T.func.grad(f)
    out = f(T.tensor(2., dtype=T.float64), T.tensor(3., dtype=T.float64))
    return out, seen


def materialize(T, flag, use, nest):
    # test_set_materialize_grads: an output the loss does not use reaches backward as None with
    # set_materialize_grads(False), as zeros otherwise
    seen = []

    class A(T.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x * 1, y * 1

        @staticmethod
        def setup_context(ctx, inputs, output):
            if flag is not None:
                ctx.set_materialize_grads(flag)

        @staticmethod
        def backward(ctx, gx, gy):
            seen.append((gx is None, gy is None, None if gy is None else gy.tolist()))
            return (None if gx is None else gx * 2), (None if gy is None else gy * 5)

    def f(y, x):
        a, b = A.apply(x, y)
        return (a ** 2).sum() if use == "first" else (a ** 2 + b).sum()

    if nest == 2:
        inner = T.func.grad(f, argnums=1)
        out = T.func.grad(lambda y, x: inner(y, x).sum(), argnums=(0, 1))
    else:
        out = T.func.grad(f, argnums=(0, 1))
    return out(T.tensor([3.], dtype=T.float64), T.tensor([2.], dtype=T.float64)), seen


CASES = {
    **_returns_input_cases(),
    "needs_input_grad_grad": lambda T: needs_input_grad(T, 1),
    "needs_input_grad_grad_of_grad": lambda T: needs_input_grad(T, 2),
    **{f"materialize_{flag}_{use}_{nest}": (lambda flag, use, nest: lambda T: materialize(T, flag, use, nest))(flag, use, nest)
       for flag in (None, False, True) for use in ("first", "both") for nest in (1, 2)},
}


@pytest.mark.parametrize("fn", outcome_params(CASES))
def test_function_inside_transforms(fn):
    same_outcome(fn)
