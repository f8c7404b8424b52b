"""``gradcheck(fast_mode=True)`` as torch's: one ``v^T J u`` per (output, input) pair instead of
whole Jacobians (NOTE [fast gradcheck] in tracegrad/autograd/gradcheck.py), so an input of
hundreds of thousands of elements is checked with a few calls; a wrong backward still fails
(with the element-wise message of the full check), and the outcomes match torch's."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _outcomes(L):
    rs = np.random.RandomState(3)
    x = L.tensor(rs.randn(4, 5), requires_grad=True)
    w = L.tensor(rs.randn(5, 3), requires_grad=True)

    class Wrong(L.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2.1

    class Nondet(L.autograd.Function):
        calls = [0]

        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            Nondet.calls[0] += 1
            return g * (2 + 1e-9 * Nondet.calls[0])

    out = {
        "matmul_tanh": L.autograd.gradcheck(lambda a, b: (a @ b).tanh(), (x, w), fast_mode=True),
        "wrong_backward": L.autograd.gradcheck(Wrong.apply, (x,), fast_mode=True, raise_exception=False),
        "wrong_forward_mode": L.autograd.gradcheck(lambda a: a.sin() * 3, (x,), fast_mode=True,
                                                   check_forward_ad=True),
        "gradgrad": L.autograd.gradgradcheck(lambda a: (a ** 3).sum(1), (x,), fast_mode=True),
        "two_outputs": L.autograd.gradcheck(lambda a, b: (a.exp(), (a @ b).sum(0)), (x, w), fast_mode=True),
        "nondeterministic": L.autograd.gradcheck(Nondet.apply, (x,), fast_mode=True, raise_exception=False),
        "nondet_tolerated": L.autograd.gradcheck(Nondet.apply, (x,), fast_mode=True, nondet_tol=1e-6),
    }
    try:
        L.autograd.gradcheck(Wrong.apply, (x,), fast_mode=True)
        out["raises"] = None
    except RuntimeError as e:
        out["raises"] = "Jacobian mismatch for output 0 with respect to input 0" in str(e)
    return out


def test_fast_mode_outcomes_match_torch():
    assert _outcomes(tracegrad) == _outcomes(torch)


def test_fast_mode_checks_a_large_input_with_few_calls():
    # 180,000 elements: the full check would need 360,000 calls and a 180,000^2 Jacobian
    calls = [0]
    x = tracegrad.tensor(np.random.RandomState(0).randn(2, 300, 300), requires_grad=True)

    def f(a):
        calls[0] += 1
        return tracegrad.nn.functional.layer_norm(a, (300, 300))

    assert tracegrad.autograd.gradcheck(f, (x,), fast_mode=True)
    assert calls[0] < 10


def test_fast_mode_catches_a_gradient_wrong_in_one_element():
    # v^T J u with positive random u, v sees an error confined to one Jacobian entry
    def f(a):
        return a * a

    class OneOff(tracegrad.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            d = 2 * a
            d = d + tracegrad.nn.functional.one_hot(tracegrad.tensor(7), 12).reshape(3, 4).double() * 0.5
            return g * d

    x = tracegrad.tensor(np.random.RandomState(1).randn(3, 4), requires_grad=True)
    assert tracegrad.autograd.gradcheck(f, (x,), fast_mode=True)
    assert not tracegrad.autograd.gradcheck(OneOff.apply, (x,), fast_mode=True, raise_exception=False)
