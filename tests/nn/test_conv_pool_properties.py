"""Property tests (hypothesis): conv2d / conv_transpose2d / max_pool2d / avg_pool2d against torch
over random strides, paddings, dilations, groups and ceil_mode (values and input/weight grads)."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tracegrad
from parity import close, get_torch


def _grads(mod, fn, arrays):
    ts = [mod.tensor(a, requires_grad=True) for a in arrays]
    out = fn(mod.nn.functional, *ts)
    w = np.random.RandomState(3).randn(*out.shape).astype(np.float32)
    out.backward(mod.tensor(w))
    return out, [t.grad for t in ts]


def _compare(fn, arrays, rtol=1e-4, atol=1e-4):
    torch = get_torch()
    to, tg = _grads(torch, fn, arrays)
    go, gg = _grads(tracegrad, fn, arrays)
    close(go, to, rtol, atol)
    for a, b in zip(gg, tg):
        close(a, b, rtol, atol)


@settings(max_examples=8, deadline=None)
@given(k=st.integers(1, 3), s=st.integers(1, 2), p=st.integers(0, 1), d=st.integers(1, 2), g=st.sampled_from([1, 2]),
       h=st.integers(5, 7), transposed=st.booleans())
def test_conv2d_property(k, s, p, d, g, h, transposed):
    assume(transposed or h - 1 + 2 * p >= d * (k - 1) + 1)    # torch rejects kernels larger than the input
    rs = np.random.RandomState(k * 100 + s * 10 + p)
    x = rs.randn(2, 4, h, h - 1).astype(np.float32)
    if transposed:
        w = rs.randn(4, 6 // g, k, k).astype(np.float32)
        op = min(s, d) - 1
        _compare(lambda F, x, w: F.conv_transpose2d(x, w, stride=s, padding=p, output_padding=op, groups=g, dilation=d),
                 [x, w])
    else:
        w = rs.randn(6, 4 // g, k, k).astype(np.float32)
        _compare(lambda F, x, w: F.conv2d(x, w, stride=s, padding=p, dilation=d, groups=g), [x, w])


@settings(max_examples=8, deadline=None)
@given(k=st.integers(2, 3), s=st.integers(1, 3), p=st.integers(0, 1), ceil=st.booleans(), h=st.integers(5, 8),
       include=st.booleans(), kind=st.sampled_from(["max", "avg"]))
def test_pool2d_property(k, s, p, ceil, h, include, kind):
    x = np.random.RandomState(h).randn(2, 2, h, h + 1).astype(np.float32)
    if kind == "max":
        _compare(lambda F, x: F.max_pool2d(x, k, s, p, ceil_mode=ceil), [x])
    else:
        _compare(lambda F, x: F.avg_pool2d(x, k, s, p, ceil_mode=ceil, count_include_pad=include), [x])
