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


CASES = {**_returns_input_cases()}


@pytest.mark.parametrize("fn", outcome_params(CASES))
def test_function_inside_transforms(fn):
    same_outcome(fn)
