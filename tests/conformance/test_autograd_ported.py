"""NOTE: the tests that followed PyTorch's test/test_autograd.py statement for statement (the same code
and literals, lightly edited, asserts renamed) were removed (a public repository's code stays out of
this project's commits); what remains is the tests written here. The text below describes the file
as it was.

Ported from PyTorch's test/test_autograd.py and test/autograd/ (each test names its
original). Bodies run under torch and tracegrad (the ``T`` fixture): torch 2.13 checks the
expectations, tracegrad must meet them."""

import numpy as np


def _np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


def test_inplace_on_multi_output_view_without_grad_writes_base(T):
    # same test, the no-grad half: writing a multi-output view of a plain tensor is allowed
    base = T.ones(2, 3)
    x, _ = base.unbind()
    x.mul_(2)
    assert _np(base).tolist() == [[2.0] * 3, [1.0] * 3]


