"""NOTE: the tests that followed PyTorch's test/test_autograd.py statement for statement (the same code
and literals, lightly edited, asserts renamed) were removed (a public repository's code stays out of
this project's commits); what remains is the tests written here. The text below describes the file
as it was.

Ported from PyTorch's test/test_autograd.py (TestAutogradForwardMode): dual levels, packing
and unpacking, tangents reused as-is, version counters, views and in-place ops on dual tensors,
detach, no_grad, level cleanup. Each body runs under torch 2.13 (the oracle) and tracegrad
through the ``T`` fixture; each test names its original.

Adapted: torch's ``_C._WeakTensorRef`` is ``weakref.ref``; ``storage().data_ptr()`` is the
tensor's ``data_ptr()`` (every tensor compared starts at offset 0). Not ported: the metadata
checks on conj/neg bits and storage numel (tracegrad tensors have neither), inference tensors
and ``__torch_function__`` subclasses, and the batched forward-grad tests (vmap over tangents).
"""

import pytest


def _eq(a, b):
    return a.shape == b.shape and bool((a.detach() == b.detach()).all())


@pytest.mark.parametrize("op", ["uniform_", "normal_", "bernoulli_", "zero_", "fill_", "floor_"])
def test_inplace_without_derivative_zeroes_the_tangent(T, op):
    # random fills, constant fills and piecewise-constant ops leave a zero tangent (torch's
    # formulas for them)
    fa = T.autograd.forward_ad
    args = {"bernoulli_": (0.5,), "fill_": (2.0,)}.get(op, ())
    with fa.dual_level():
        x = fa.make_dual(T.rand(3), T.ones(3))
        getattr(x, op)(*args)
        assert _eq(fa.unpack_dual(x).tangent, T.zeros(3))
