"""More behaviour tests from PyTorch's test/nn/ files (test_convolution.py, test_pooling.py,
test_embedding.py, test_parametrization.py): the CPU tests the first ports
(test_nn_files_ported.py, test_nn_files_ported_layers.py, test_nn_ported.py) left out, restated for
the ``T`` fixture or as ``run_both`` programs, so every body runs under torch 2.13 (the oracle) and
under tracegrad. Each test names its original. CUDA/cuDNN/MKLDNN/quantized/TorchScript and
backend-selection tests are skipped; sizes are cut down to keep the file fast."""
import copy
import itertools
import math
import pickle

import numpy as np
import pytest
from _nn_files_helpers import xfail_tracegrad
from parity import randn, run_both
from test_nn_files_ported import _affine_params
from test_nn_files_ported import _pz as _parametrize


def _grad_of(T, fn, *tensors, grad_output=None):
    """The gradients of ``fn(*tensors)`` (weighted by ``grad_output``, default ones) w.r.t. each tensor."""
    out = fn(*tensors)
    go = T.ones_like(out) if grad_output is None else grad_output
    return T.autograd.grad(out, tensors, go)


# ==== test/nn/test_convolution.py ===============================================================
def test_Conv2d_inconsistent_types(T):
    # TestConvolutionNN.test_Conv2d_inconsistent_types: float input with a double weight raises
    x, w = T.randn(4, 1, 7, 7), T.randn(1, 1, 3, 3, dtype=T.double)
    with pytest.raises(RuntimeError):
        T.nn.functional.conv2d(x, w)
    assert T.nn.functional.conv2d(x, w.float()).shape == (4, 1, 5, 5)


def test_Conv2d_1x1_gradcheck(T):
    # TestConvolutionNN.test_Conv2d_1x1: gradcheck of a 1x1 convolution in float64
    w = T.nn.Conv2d(2, 2, 1, bias=False).double().weight
    x = T.randn(1, 2, 3, 3, dtype=T.double, requires_grad=True)
    assert T.autograd.gradcheck(T.nn.functional.conv2d, (x, w))


@pytest.mark.parametrize("groups", [4, 5])
def test_Conv2d_depthwise_weight_grad(groups):
    # TestConvolutionNN.test_Conv2d_OneDNN: a strided, padded, dilated depthwise conv's weight
    # gradient with an all-ones weight and input (the original compares two CPU backends; here torch)
    def program(T, log):
        for dilation in (1, 2):
            op = T.nn.Conv2d(groups, groups, [3, 3], stride=[2, 2], padding=[1, 1], dilation=[dilation] * 2,
                             groups=groups, bias=False)
            op.weight.data = T.ones(groups, 1, 3, 3)
            res = op(T.ones(1, groups, 6, 6))
            res.backward(T.ones(res.shape))
            log(f"grad_d{dilation}", op.weight.grad)
    run_both(program)


def test_Conv2d_missing_argument_and_backward_twice(T):
    # TestConvolutionNN.test_Conv2d_missing_argument / test_Conv2d_backward_twice
    c = T.nn.Conv2d(3, 3, 3)
    with pytest.raises(TypeError):
        c(None)
    o1 = c(T.randn(2, 3, 5, 5))
    o1.sum().backward()
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        o1.sum().backward()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv_shapecheck(T, dtype):
    # TestConvolutionNN.test_conv_shapecheck: a kernel larger than the (padded) input raises
    nn = T.nn
    cases = [(True, nn.Conv1d(1, 1, 3), (1, 2)), (True, nn.Conv1d(1, 1, 3, stride=2), (1, 2)),
             (False, nn.Conv1d(1, 1, 2), (1, 2)), (False, nn.Conv1d(1, 1, 2, stride=2), (1, 2)),
             (False, nn.Conv1d(1, 1, 3, stride=2, padding=1), (1, 2)),
             (True, nn.Conv2d(1, 1, (3, 3)), (1, 2, 2)), (False, nn.Conv2d(1, 1, (3, 3)), (1, 3, 3)),
             (False, nn.Conv2d(1, 1, (3, 3), padding=1), (1, 2, 2)),
             (True, nn.Conv3d(1, 1, (3, 3, 3)), (1, 2, 2, 2)), (False, nn.Conv3d(1, 1, (3, 3, 3)), (1, 3, 3, 3)),
             (False, nn.Conv3d(1, 1, (3, 3, 3), padding=1), (1, 2, 2, 2))]
    dt = getattr(T, dtype)
    for should_raise, mod, size in cases:
        mod = mod.to(dt)
        x = T.empty(3, *size).to(dt)
        if should_raise:
            with pytest.raises(RuntimeError):
                mod(x)
        else:
            mod(x)


def test_ConvTranspose2d_output_size_downsample_upsample(T):
    # TestConvolutionNN.test_ConvTranspose2d_output_size_downsample_upsample (a slice of its grid):
    # conv then transposed conv with output_size=input.shape gets the input's spatial size back
    for h, w, k, d, s, p in [(13, 14, 2, 1, 3, 0), (16, 13, 4, 3, 3, 2), (14, 13, 3, 2, 2, 1)]:
        conv = T.nn.Conv2d(3, 2, kernel_size=k, stride=s, padding=p, dilation=d)
        t_conv = T.nn.ConvTranspose2d(2, 3, kernel_size=k, stride=s, padding=p, dilation=d)
        i = T.randn(1, 3, h, w)
        assert t_conv(conv(i), output_size=i.shape).shape[2:] == i.shape[2:]


def test_ConvTranspose3d_correct_output_size(T):
    # TestConvolutionNN.test_ConvTranspose3d_correct_output_size: a 5-D output_size is accepted
    out = T.nn.ConvTranspose3d(2, 2, 2)(T.rand(1, 2, 1, 1, 1), output_size=(1, 2, 2, 2, 2))
    assert out.shape == (1, 2, 2, 2, 2)


@pytest.mark.parametrize("nd, cin, cout, bias", [(2, 4, 4, False), (2, 4, 16, False), (2, 4, 4, True),
                                                 (3, 4, 16, False), (3, 4, 16, True)])
def test_Conv_groups_match_split_convs(T, nd, cin, cout, bias):
    # TestConvolutionNN.test_Conv2d_groups_nobias / test_Conv2d_groups_nobias_v2 /
    # test_Conv3d_groups_nobias / test_Conv3d_groups_wbias / TestConvolutionNNDeviceType.
    # test_Conv2d_naive_groups: a groups=2 conv equals two half convs, outputs and gradients
    cls = getattr(T.nn, f"Conv{nd}d")
    m = cls(cin, cout, kernel_size=3, groups=2, bias=bias)
    i = T.randn(2, cin, *(5,) * nd, requires_grad=True)
    out = m(i)
    go = T.randn(out.shape)
    out.backward(go)
    h, ho = cin // 2, cout // 2
    outs, igrads, wgrads, bgrads = [], [], [], []
    for part in (slice(0, ho), slice(ho, cout)):
        mi = cls(h, ho, kernel_size=3, bias=bias)
        mi.weight.data.copy_(m.weight.data[part])
        if bias:
            mi.bias.data.copy_(m.bias.data[part])
        xi = i.data[:, :h].contiguous() if part.start == 0 else i.data[:, h:].contiguous()
        xi.requires_grad_(True)
        oi = mi(xi)
        oi.backward(go[:, part].contiguous())
        outs.append(oi)
        igrads.append(xi.grad)
        wgrads.append(mi.weight.grad)
        bgrads.append(mi.bias.grad if bias else None)
    assert T.allclose(out, T.cat(outs, 1), atol=1e-5)
    assert T.allclose(i.grad, T.cat(igrads, 1), atol=1e-5)
    assert T.allclose(m.weight.grad, T.cat(wgrads, 0), atol=1e-4)
    if bias:
        assert T.allclose(m.bias.grad, T.cat(bgrads, 0), atol=1e-4)


def test_conv_tbc(T):
    # TestConvolutionNN.test_conv_tbc: gradcheck of F.conv_tbc (time, batch, channel layout) in float64
    inp = T.randn(5, 2, 3, dtype=T.double, requires_grad=True)
    weight = T.randn(3, 3, 4, dtype=T.double, requires_grad=True)
    bias = T.randn(4, dtype=T.double, requires_grad=True)
    assert T.autograd.gradcheck(lambda i, w, b: T.nn.functional.conv_tbc(i, w, b, 2), (inp, weight, bias))


def test_conv_tbc_values():
    # TestConvolutionNN.test_conv_tbc: values and gradients against torch (top-level spelling)
    def program(T, log):
        x, w, b = (randn(T, s, i, requires_grad=True) for i, s in enumerate([(6, 2, 3), (3, 3, 4), (4,)]))
        out = T.conv_tbc(x, w, b, 1)
        out.backward(randn(T, tuple(out.shape), 5))
        log("out", out)
        log("grads", [x.grad, w.grad, b.grad])
    run_both(program)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_grad_conv_input_and_weight(T, nd):
    # TestConvolutionNN.test_grad_conv1d_input / _weight / test_grad_conv2d_* / test_grad_conv3d_*
    # (run_grad_conv_test, a slice of its grid): F.grad.convNd_input/_weight equal autograd's
    F = T.nn.functional
    conv, gi, gw = getattr(F, f"conv{nd}d"), getattr(F.grad, f"conv{nd}d_input"), getattr(F.grad, f"conv{nd}d_weight")
    for kern, size, batch, stride, padding, has_bias in [(3, 6, 1, 1, 0, True), (4, 7, 2, 2, 2, False)]:
        x = T.randn(batch, 2, *(size,) * nd, requires_grad=True)
        w = T.randn(3, 2, *(kern,) * nd, requires_grad=True)
        b = T.randn(3, requires_grad=True) if has_bias else None
        out = conv(x, w, b, stride=stride, padding=padding)
        go = T.randn(out.shape)
        dx, dw = T.autograd.grad(out, (x, w), go)
        assert T.allclose(dx, gi(x.shape, w, go, stride=stride, padding=padding), atol=1e-5)
        assert T.allclose(dw, gw(x, w.shape, go, stride=stride, padding=padding), atol=1e-4)


def test_functional_grad_conv(T):
    # TestConvolutionNN.test_functional_grad_conv (dilation 2, 1-D/2-D/3-D) /
    # test_functional_grad_conv2d (a slice of its stride/kernel/groups/dilation grid)
    F = T.nn.functional
    cases = [(nd, dict(dilation=2), 1, 1, 5, 3) for nd in (1, 2, 3)]
    cases += [(2, dict(stride=s, padding=k // 2, dilation=d, groups=g), 4, 4, 7, k)
              for s, k, g, d in [(2, 3, 2, 2), (1, 1, 4, 1)]]
    for nd, kw, cin, cout, size, k in cases:
        conv = getattr(F, f"conv{nd}d")
        x = T.empty(2, cin, *(size,) * nd).uniform_(-8.0, 8.0).requires_grad_(True)
        w = T.empty(cout, cin // kw.get("groups", 1), *(k,) * nd).uniform_(-4.0, 4.0).requires_grad_(True)
        out = conv(x, w, **kw)
        go = T.randn(out.shape)
        dx, dw = T.autograd.grad(out, (x, w), go)
        assert T.allclose(getattr(T.nn.grad, f"conv{nd}d_input")(x.shape, w, go, **kw), dx, atol=1e-4)
        assert T.allclose(getattr(T.nn.grad, f"conv{nd}d_weight")(x, w.shape, go, **kw), dw, rtol=1e-4, atol=1e-3)


def test_conv_padding_mode(T):
    # TestConvolutionNN.test_conv_padding_mode
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        T.nn.Conv2d(3, 3, 3, padding_mode="xyz")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        T.nn.Conv2d(3, 3, 3, padding_mode=3)
    with pytest.raises(ValueError, match='Only "zeros" '):
        T.nn.ConvTranspose2d(3, 3, 3, padding_mode="reflect")


def test_conv_strided_input_regressions():
    # TestConvolutionNN.test_permute_conv2d_issue_120211 (a permuted NHWC image, depthwise, a few
    # radii, smaller image) / test_conv3d_issue_120406 / test_conv1d_issue_120547 (transposed
    # input, padding larger than the input): values against torch
    def program(T, log):
        F = T.nn.functional
        image = randn(T, (1, 16, 12, 3), 0).permute(0, 3, 1, 2)
        for radius in (0, 5):
            kernel = T.full([3, 1, 1, radius * 2 + 1], 0.5)
            log(f"r{radius}", F.conv2d(image, kernel, groups=image.shape[-3]))
        log("3d", F.conv3d(T.ones(2, 3, 2, 3, 20), T.ones(3, 1, 1, 1, 17), groups=3))
        x = randn(T, (1, 1, 16), 1).transpose(1, 2)
        log("1d", F.conv1d(x, T.ones([16, 1, 32]), T.ones([16]), 1, 16, 1, 16))
    run_both(program)


def _gradgradcheck_conv(T, kern, stride, padding, chan_in, chan_out, batch, size, dilation, groups=1,
                        no_weight=False, use_bias=True):
    """TestConvolutionNNDeviceType.run_conv_double_back_test: gradgradcheck of conv2d in float64."""
    x = T.randn(batch, chan_in, size, size, dtype=T.double, requires_grad=True)
    w = T.randn(chan_out, chan_in // groups, kern, kern, dtype=T.double, requires_grad=not no_weight)
    inputs = (x, w) + ((T.randn(chan_out, dtype=T.double, requires_grad=True),) if use_bias else ())

    def func(*args):
        return T.nn.functional.conv2d(args[0], args[1], args[2] if use_bias else None, stride, padding, dilation,
                                      groups)
    grad_y = T.randn(func(*inputs).shape, dtype=T.double, requires_grad=True)
    return T.autograd.gradgradcheck(func, inputs, (grad_y,))


def test_conv_double_backward(T):
    # TestConvolutionNNDeviceType.test_conv_double_backward_no_bias (it keeps the bias) /
    # test_conv_double_backward_groups / test_conv_double_backward_stride (a slice)
    assert _gradgradcheck_conv(T, 3, 2, 1, 2, 2, 1, 4, 1)
    assert _gradgradcheck_conv(T, 2, 1, 2, 2, 4, 1, 3, 1, groups=2)


def test_conv_float_double_backward_graph(T):
    # TestConvolutionNNDeviceType.run_conv_double_back_test's float32 branch: the input
    # gradient taken with create_graph requires grad
    x = T.randn(1, 2, 5, 5, requires_grad=True)
    out = T.nn.functional.conv2d(x, T.randn(3, 2, 3, 3, requires_grad=True), stride=2, padding=1)
    g, = T.autograd.grad(out.sum(), x, create_graph=True)
    assert g.requires_grad


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_conv_same_padding_values(T, dtype):
    # TestConvolutionNNDeviceType.test_conv1d_same_padding / test_conv2d_same_padding /
    # test_conv3d_same_padding (float and cfloat): 'same' keeps the size and matches explicit
    # (possibly asymmetric) padding, with and without dilation
    F = T.nn.functional
    dt = getattr(T, dtype)
    for in_size, k, dilation in [(50, 1, 1), (53, 8, 3), (51, 2, 2), (52, 3, 3)]:
        z = F.conv1d(T.rand(1, 1, in_size, dtype=dt), T.rand(1, 1, k, dtype=dt), padding="same", dilation=dilation)
        assert z.size(2) == in_size
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == "complex64" else dict(rtol=1.3e-6, atol=1e-5)
    x, y = T.rand(1, 1, 12, dtype=dt), T.rand(1, 1, 3, dtype=dt)
    assert T.allclose(F.conv1d(x, y, padding=1), F.conv1d(x, y, padding="same"), **tol)
    y = T.rand(1, 1, 4, dtype=dt)
    assert T.allclose(F.conv1d(x, y, padding=3, dilation=2), F.conv1d(x, y, padding="same", dilation=2), **tol)
    assert T.allclose(F.conv1d(x, y, padding=5, dilation=3)[..., 1:], F.conv1d(x, y, padding="same", dilation=3),
                      **tol)
    x = T.rand(1, 1, 10, 11, dtype=dt)
    y = T.rand(1, 1, 4, 5, dtype=dt)
    assert T.allclose(F.conv2d(x, y, padding=(2, 2))[..., 1:, :], F.conv2d(x, y, padding="same"), **tol)
    y = T.rand(1, 1, 3, 4, dtype=dt)
    assert T.allclose(F.conv2d(x, y, padding=(2, 3), dilation=2), F.conv2d(x, y, padding="same", dilation=2), **tol)
    y = T.rand(1, 1, 4, 4, dtype=dt)
    assert T.allclose(F.conv2d(x, y, padding=5, dilation=3)[..., 1:, 1:],
                      F.conv2d(x, y, padding="same", dilation=3), **tol)
    x = T.rand(1, 1, 6, 7, 8, dtype=dt)
    y = T.rand(1, 1, 1, 2, 5, dtype=dt)
    assert T.allclose(F.conv3d(x, y, padding=(0, 1, 2))[..., :, 1:, :], F.conv3d(x, y, padding="same"), **tol)
    assert T.allclose(F.conv3d(x, y, padding=(0, 1, 4), dilation=2), F.conv3d(x, y, padding="same", dilation=2),
                      **tol)
    y = T.rand(1, 1, 4, 4, 4, dtype=dt)
    assert T.allclose(F.conv3d(x, y, padding=5, dilation=3)[..., 1:, 1:, 1:],
                      F.conv3d(x, y, padding="same", dilation=3), **tol)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_valid_padding(T, nd):
    # TestConvolutionNNDeviceType.test_conv1d_valid_padding / test_conv2d_... / test_conv3d_... and
    # the *_valid_padding_backward tests: 'valid' is no padding, values and gradients
    conv = getattr(T.nn.functional, f"conv{nd}d")
    x = T.rand(*(1,) * (nd + 1), 10, requires_grad=True)
    y = T.rand(*(1,) * (nd + 1), 4, requires_grad=True)
    assert T.equal(conv(x, y), conv(x, y, padding="valid"))
    expect = _grad_of(T, lambda a, b: conv(a, b, padding=0).sum().abs(), x, y)
    actual = _grad_of(T, lambda a, b: conv(a, b, padding="valid").sum().abs(), x, y)
    for e, a in zip(expect, actual):
        assert T.allclose(e, a)


@pytest.mark.parametrize("nd", [1, 2])
def test_conv_same_padding_backward(T, nd):
    # TestConvolutionNNDeviceType.test_conv1d_same_padding_backward / test_conv2d_same_padding_backward:
    # 'same' gradients equal explicit (symmetric, dilated) and asymmetric (sliced) padding's
    conv = getattr(T.nn.functional, f"conv{nd}d")
    x = T.rand(1, 1, *(10, 11)[-nd:] if nd == 2 else (12,), requires_grad=True)
    y = T.rand(1, 1, *((4, 5) if nd == 2 else (4,)), requires_grad=True)
    sym = (3, 4) if nd == 2 else 3
    expect = _grad_of(T, lambda a, b: conv(a, b, padding=sym, dilation=2).sum().abs(), x, y)
    actual = _grad_of(T, lambda a, b: conv(a, b, padding="same", dilation=2).sum().abs(), x, y)
    for e, a in zip(expect, actual):
        assert T.allclose(e, a, atol=1e-5)
    y = T.rand(1, 1, *(4,) * nd, requires_grad=True)
    cut = (Ellipsis,) + (slice(1, None),) * nd
    expect = _grad_of(T, lambda a, b: conv(a, b, padding=2)[cut].sum().abs(), x, y)
    actual = _grad_of(T, lambda a, b: conv(a, b, padding="same").sum().abs(), x, y)
    for e, a in zip(expect, actual):
        assert T.allclose(e, a, atol=1e-5)


def test_conv3d_same_padding_backward_gradcheck(T):
    # TestConvolutionNNDeviceType.test_conv3d_same_padding_backward (float64): gradients equal
    # explicit padding's; gradcheck and gradgradcheck of 'same' (dilated and asymmetric)
    F = T.nn.functional
    x = T.rand(1, 1, 1, 4, 5, dtype=T.double, requires_grad=True)
    y = T.rand(1, 1, 1, 2, 3, dtype=T.double, requires_grad=True)
    expect = _grad_of(T, lambda a, b: F.conv3d(a, b, padding=(0, 1, 2), dilation=2).sum().abs(), x, y)
    actual = _grad_of(T, lambda a, b: F.conv3d(a, b, padding="same", dilation=2).sum().abs(), x, y)
    for e, a in zip(expect, actual):
        assert T.allclose(e, a)
    for kw in ({"dilation": 2}, {}):
        assert T.autograd.gradcheck(lambda a, b: F.conv3d(a, b, padding="same", **kw), (x, y))
        assert T.autograd.gradgradcheck(lambda a, b: F.conv3d(a, b, padding="same", **kw), (x, y))
    y = T.rand(1, 1, 1, 4, 4, dtype=T.double, requires_grad=True)
    expect = _grad_of(T, lambda a, b: F.conv3d(a, b, padding=2)[..., 1:, 1:].sum().abs(), x, y)
    actual = _grad_of(T, lambda a, b: F.conv3d(a, b, padding="same").sum().abs(), x, y)
    for e, a in zip(expect, actual):
        assert T.allclose(e, a)


def test_conv3d_valid_padding_gradcheck(T):
    # TestConvolutionNNDeviceType.test_conv3d_valid_padding_backward: gradcheck / gradgradcheck (float64)
    x = T.rand(1, 1, 1, 1, 6, dtype=T.double, requires_grad=True)
    y = T.rand(1, 1, 1, 1, 3, dtype=T.double, requires_grad=True)
    fn = lambda a, b: T.nn.functional.conv3d(a, b, padding="valid")  # noqa: E731
    assert T.autograd.gradcheck(fn, (x, y))
    assert T.autograd.gradgradcheck(fn, (x, y))


@pytest.mark.parametrize("mode", ["valid", "same"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_vs_scipy(T, nd, mode):
    # TestConvolutionNNDeviceType.test_conv1d_vs_scipy / test_conv2d_vs_scipy / test_conv3d_vs_scipy
    # (float): a flipped-weight conv is scipy.signal.convolve (with symmetric padding for 'same')
    signal = pytest.importorskip("scipy.signal")
    shape = {1: (1, 10), 2: (1, 5, 10), 3: (1, 5, 5, 10)}[nd]
    kernels = {1: [(4,), (5,)], 2: [(2, 4), (3, 5)], 3: [(2, 2, 4), (2, 3, 5)]}[nd]
    conv = getattr(T.nn.functional, f"conv{nd}d")
    rs = np.random.RandomState(nd)
    t = rs.uniform(-9, 9, shape).astype(np.float32)
    for k in kernels:
        w = rs.uniform(-9, 9, (1, 1) + k).astype(np.float32)
        expected = signal.convolve(t.reshape(shape[1:]) if nd > 1 else t.reshape(-1), w.reshape(k), mode=mode)
        x = T.tensor(t)
        kwargs = {"padding": mode}
        if mode == "same":
            pads = []
            for size in reversed(k):
                pads += [size // 2, size // 2]
            x = T.nn.functional.pad(x, pads)
            kwargs = {}
        actual = conv(x, T.flip(T.tensor(w), tuple(range(2, 2 + nd))), **kwargs).squeeze(0)
        if mode == "same":
            actual = actual[tuple(slice(0, s) for s in shape[1:])] if nd > 1 else actual[:shape[1]]
        np.testing.assert_allclose(actual.numpy(), expected, rtol=2e-5, atol=5e-5)


@pytest.mark.parametrize("nd", [2, 3])
def test_conv_transpose_with_output_size_and_no_batch_dim(T, nd):
    # TestConvolutionNNDeviceType.test_conv_transpose_with_output_size_and_no_batch_dim (smaller sizes)
    inp = T.randn((1, 3, 2) if nd == 2 else (1, 3, 2, 2))
    output_size = (1, 48, 30) if nd == 2 else (1, 48, 30, 30)
    m = getattr(T.nn, f"ConvTranspose{nd}d")(1, 1, kernel_size=16, stride=16, padding=7, bias=False)
    assert m(inp, output_size=output_size).shape == output_size


@pytest.mark.parametrize("shape, transposed, dilated, has_bias, strided, contiguous", [
    ((1, 6, 5), False, True, True, True, False), ((1, 6, 3, 4), True, True, False, True, False)])
def test_conv_backend_gradcheck(T, shape, transposed, dilated, has_bias, strided, contiguous):
    # TestConvolutionNNDeviceType.test_conv_backend (the strided/non-strided, non-contiguous inputs
    # and the slow/empty cases; which backend runs is internal): torch.convolution's backward
    # runs in float32, gradcheck and gradgradcheck pass in float64
    dim, c_in, c_out, groups = len(shape) - 2, shape[1], 6, 3
    if True:
        x = T.randn(*shape, dtype=T.double, requires_grad=True)
        w = T.randn(c_in if transposed else c_out, (c_out if transposed else c_in) // groups, *(2,) * dim,
                    dtype=T.double, requires_grad=True)
        b = T.randn(c_out, dtype=T.double, requires_grad=True) if has_bias else None
        if not contiguous:  # every other element of a repeated tensor: same values, strided
            x, w = (T.repeat_interleave(v, 2, dim=-1)[..., ::2].detach().requires_grad_() for v in (x, w))
            assert not x.is_contiguous()
        args = [(2,) * dim if strided else (1,) * dim, (0,) * dim, (2,) * dim if dilated else (1,) * dim,
                transposed, (0,) * dim, groups]
        out = T.convolution(x.float(), w.float(), None if b is None else b.float(), *args)
        out.backward(T.randn(out.shape))
        fn = lambda *t: T.convolution(t[0], t[1], t[2] if has_bias else None, *args)  # noqa: E731
        inputs = (x, w, b) if has_bias else (x, w)
        assert T.autograd.gradcheck(fn, inputs)
        assert T.autograd.gradgradcheck(fn, inputs)


def _check_empty_input(T, mod, inp):
    """torch.testing._internal.common_nn._test_module_empty_input: an empty batch runs forward
    and backward, the input gradient is zeros, parameter gradients are zeros."""
    inp.requires_grad_(True)
    out = mod(inp)
    out.backward(T.rand_like(out))
    assert T.equal(inp.grad, T.zeros_like(inp))
    for p in mod.parameters():
        if p.requires_grad:
            assert T.equal(p.grad, T.zeros_like(p))
    return out


def test_conv_empty_channel(T):
    # TestConvolutionNNDeviceType.test_conv_empty_channel (float): zero input channels run (all
    # zeros, bias only), and an input with one channel is rejected naming the weight
    for nd, cout, shape, bad in [(1, 8, (2, 0, 15), (2, 1, 0)), (2, 5, (2, 0, 10, 12), (2, 1, 4, 0)),
                                 (3, 5, (2, 0, 6, 4, 8), (2, 1, 6, 0, 8))]:
        mod = getattr(T.nn, f"Conv{nd}d")(0, cout, 3 if nd > 1 else 2, stride=2)
        _check_empty_input(T, mod, T.randn(*shape))
        with pytest.raises(RuntimeError, match="Given groups=1, weight"):
            mod(T.randn(*bad))


@pytest.mark.parametrize("cls, groups", [("Conv2d", 4), ("ConvTranspose2d", 4), ("ConvTranspose2d", 1)])
def test_conv_empty_batch(T, cls, groups):
    # TestConvolutionNNDeviceType.test_group_conv_empty / test_group_convTranspose_empty /
    # test_convTranspose_empty
    mod = getattr(T.nn, cls)(4, 4, stride=2, kernel_size=3, padding=1, groups=groups)
    out = _check_empty_input(T, mod, T.randn(0, 4, 4, 4))
    assert out.shape == ((0, 4, 2, 2) if cls == "Conv2d" else (0, 4, 7, 7))


def test_conv_noncontig_weights(T):
    # TestConvolutionNNDeviceType.test_conv_noncontig_weights: an expanded (stride-0) weight works
    # forward and backward for conv and conv_transpose, grouped or not, in 1/2/3-D
    F = T.nn.functional
    for dim, groups in ((1, 1), (2, 3), (3, 1)):
        w = T.randn([3] * dim).expand([3, 3 // groups] + [3] * dim).detach().requires_grad_()
        x = T.randn([1, 3] + [4] * dim, requires_grad=True)
        getattr(F, f"conv{dim}d")(x, w, groups=groups).sum().backward()
        getattr(F, f"conv_transpose{dim}d")(x, w, groups=groups).sum().backward()
        assert x.grad.shape == x.shape and w.grad.shape == w.shape


def test_conv_noncontig_weights_and_bias(T):
    # TestConvolutionNNDeviceType.test_conv_noncontig_weights_and_bias (smaller image): strided
    # input, weight and bias give the same output as their contiguous copies
    for bias in (True, False):
        conv = T.nn.Conv2d(3, 8, kernel_size=7, stride=2, padding=3, bias=bias)
        x_nc = T.randn(1, 3, 20, 20, 2)[..., 1]
        conv.weight = T.nn.Parameter(T.randn(8, 3, 7, 7, 2)[..., 1])
        w_c = conv.weight.contiguous()
        if bias:
            conv.bias = T.nn.Parameter(T.randn(8, 2)[:, 1])
            b_c = conv.bias.contiguous()
        out1 = conv(x_nc)
        conv.weight = T.nn.Parameter(w_c)
        if bias:
            conv.bias = T.nn.Parameter(b_c)
        assert T.allclose(out1, conv(x_nc.contiguous()), atol=1e-6)


def test_Conv2d_backward_depthwise(T):
    # TestConvolutionNNDeviceType.test_Conv2d_backward_depthwise (float64): gradcheck of a
    # depthwise conv with stride (1, 10)
    x = T.randn(2, 2, 4, 12, dtype=T.double, requires_grad=True)
    w = T.randn(2, 1, 3, 5, dtype=T.double, requires_grad=True)
    assert T.autograd.gradcheck(lambda a, b: T.nn.functional.conv2d(a, b, None, stride=(1, 10), groups=2), (x, w))


@pytest.mark.parametrize("cls, c, hw, cout, k, dilation, groups", [
    ("Conv2d", 4, (4, 4), 4, 3, 1, 1), ("Conv2d", 4, (5, 6), 8, 3, 2, 4), ("ConvTranspose2d", 4, (4, 4), 4, 3, 1, 4)])
def test_conv_thnn_nhwc(T, cls, c, hw, cout, k, dilation, groups):
    # TestConvolutionNNDeviceType.test_conv_thnn_nhwc (float64, smaller): a channels_last input
    # and/or weight gives a channels_last output with the contiguous module's values and grads
    for in_fmt, w_fmt in ((T.channels_last, T.channels_last), (T.channels_last, T.contiguous_format),
                          (T.contiguous_format, T.channels_last)):
        x = T.randint(-3, 3, (2, c) + hw, dtype=T.double).to(memory_format=in_fmt).requires_grad_()
        conv = getattr(T.nn, cls)(c, cout, k, dilation=dilation, groups=groups).to(dtype=T.double,
                                                                                  memory_format=w_fmt)
        for p in conv.parameters():
            p.data = T.randint_like(p, -3, 3)
        ref_x = x.detach().clone().contiguous().requires_grad_()
        ref = getattr(T.nn, cls)(c, cout, k, dilation=dilation, groups=groups).double()
        ref.load_state_dict(conv.state_dict())
        ref = ref.to(memory_format=T.contiguous_format)
        out, ref_out = conv(x), ref(ref_x)
        grad = T.randint_like(out, -3, 3)
        out.backward(grad)
        ref_out.backward(grad.contiguous())
        assert out.is_contiguous(memory_format=T.channels_last)
        assert ref_out.is_contiguous()
        assert T.equal(out, ref_out)
        assert T.equal(conv.weight.grad, ref.weight.grad) and T.equal(conv.bias.grad, ref.bias.grad)
        assert T.equal(x.grad, ref_x.grad)


def test_conv2d_no_grad(T):
    # TestConvolutionNNDeviceType.test_conv2d_no_grad (pytorch issue 60176): no_grad gives the same values
    for batch, groups in ((1, 1), (3, 4)):
        x = T.rand(batch, groups, 8, 8)
        m = T.nn.Conv2d(groups, 8, kernel_size=(3, 3), groups=groups)
        with T.no_grad():
            output_ng = m(x)
        assert T.allclose(m(x), output_ng, rtol=1e-2, atol=1e-5)


def test_conv_double_backward_strided_with_3D_input_and_weight(T):
    # TestConvolutionNNDeviceType.test_conv_double_backward_strided_with_3D_input_and_weight: the
    # double backward of a strided 1-D conv gives gradients of the input/weight/grad_output shapes
    # (the original calls the internal aten op; here through autograd with create_graph)
    x = T.randn(2, 3, 6, requires_grad=True)
    w = T.randn(3, 3, 3, requires_grad=True)
    b = T.randn(3, requires_grad=True)
    out = T.convolution(x, w, b, (2,), (1,), (1,), False, (0,), 1)
    g_o = T.randn(out.shape, requires_grad=True)
    gi, gw, gb = T.autograd.grad(out, (x, w, b), g_o, create_graph=True)
    ggo, ggi, ggw = T.autograd.grad((gi, gw, gb), (g_o, x, w), (T.randn(x.shape), T.randn(w.shape), T.randn(b.shape)))
    assert ggo.shape == g_o.shape and ggi.shape == x.shape and ggw.shape == w.shape


# ==== test/nn/test_pooling.py ===================================================================
def test_max_unpool2d_nhwc(T):
    # TestPoolingNN.test_max_unpool2d_nhwc_cpu (smaller): pool/unpool of a channels_last input give
    # the contiguous input's values and gradients, the unpooled output stays channels_last
    x = T.randn(2, 4, 7, 7).contiguous(memory_format=T.channels_last)
    ref_x = x.clone().contiguous()
    out, ind = T.nn.MaxPool2d(3, stride=2, return_indices=True)(x)
    ref_out, ref_ind = T.nn.MaxPool2d(3, stride=2, return_indices=True)(ref_x)
    out.requires_grad_()
    ref_out.requires_grad_()
    up = T.nn.MaxUnpool2d(3, stride=2)(out, ind)
    ref_up = T.nn.MaxUnpool2d(3, stride=2)(ref_out, ref_ind)
    grad = T.randn(up.size()).contiguous(memory_format=T.channels_last)
    up.backward(grad)
    ref_up.backward(grad.clone().contiguous())
    assert ref_up.is_contiguous()
    assert T.allclose(up, ref_up) and T.allclose(out.grad, ref_out.grad)


def test_max_unpool2d_nhwc_layout(T):
    # TestPoolingNN.test_max_unpool2d_nhwc_cpu: the unpooled output of a channels_last pool is channels_last
    out, ind = T.nn.MaxPool2d(3, stride=2, return_indices=True)(T.randn(2, 4, 7, 7).contiguous(
        memory_format=T.channels_last))
    assert T.nn.MaxUnpool2d(3, stride=2)(out, ind).is_contiguous(memory_format=T.channels_last)


def test_AvgPool2d_empty(T):
    # TestPoolingNNDeviceType.test_AvgPool2d_empty: an empty batch (also channels_last) gives zero
    # gradients; an empty non-batch dim is rejected
    pool = T.nn.AvgPool2d(3, stride=2)
    for x in (T.randn(0, 4, 6, 8), T.randn(0, 4, 6, 8).contiguous(memory_format=T.channels_last)):
        _check_empty_input(T, pool, x)
    with pytest.raises(RuntimeError, match="3D or 4D"):
        pool(T.randn(4, 0, 6, 8))


def test_pooling_shape(T):
    # TestPoolingNNDeviceType.test_pooling_shape: max/avg pool output sizes with ceil_mode and
    # padding (issue 45357: the last window must start inside the input)
    F = T.nn.functional
    for expected, sizes, kw in [((1, 1, 3, 3, 4), (1, 1, 5, 6, 7), dict(kernel_size=1, stride=2, padding=0, ceil_mode=True)),
                                ((1, 1, 2, 3, 3), (1, 1, 3, 4, 5), dict(kernel_size=2, stride=2, padding=1, ceil_mode=False)),
                                ((1, 1, 2, 3, 3), (1, 1, 3, 4, 5), dict(kernel_size=2, stride=2, padding=1, ceil_mode=True))]:
        for kind, i in itertools.product(("max", "avg"), (1, 2, 3)):
            assert getattr(F, f"{kind}_pool{i}d")(T.randn(sizes[:i + 2]), **kw).shape == expected[:i + 2]
    assert F.max_pool2d(T.randn(1, 1, 6, 7), 1, stride=(2, 2), padding=0, ceil_mode=True).size() == (1, 1, 3, 4)


def test_adaptive_avg_pool_output_size_one(T):
    # TestPoolingNNDeviceType.test_adaptive_avg_pool2d_output_size_one / test_adaptive_avg_pool3d_output_size_one:
    # the mean over the spatial dims, with torch's strides for contiguous / channels_last / strided inputs
    for fmt in (T.contiguous_format, T.channels_last, "non_contiguous"):
        x = T.randint(1, 10, (2, 3, 6, 6), dtype=T.float, requires_grad=True)
        x = x[::2, ::2, ::2, ::2] if fmt == "non_contiguous" else x.to(memory_format=fmt)
        out = T.nn.AdaptiveAvgPool2d((1, 1))(x)
        out.sum().backward()
        assert T.allclose(out, x.contiguous().mean((-1, -2)).view(x.size(0), x.size(1), 1, 1))
        c = out.size(1)
        if fmt is T.channels_last:
            assert out.is_contiguous(memory_format=T.channels_last)
        else:
            assert out.is_contiguous() and out.stride() == (c, 1, 1, 1)
    x = T.randn(2, 3, 4, 4, 4, requires_grad=True)
    out = T.nn.AdaptiveAvgPool3d(1)(x)
    out.sum().backward()
    assert T.allclose(out, x.mean((-1, -2, -3)).view(out.shape), atol=1e-6)
    assert out.is_contiguous() and out.stride() == (3, 1, 1, 1, 1)


def test_adaptive_avg_pool2d_output_size_one_channels_last_strides(T, request):
    # TestPoolingNNDeviceType.test_adaptive_avg_pool2d_output_size_one: a channels_last input's
    # (N, C, 1, 1) mean has torch's channels_last strides (C, 1, C, C)
    out = T.nn.AdaptiveAvgPool2d((1, 1))(T.rand(2, 3, 6, 6).to(memory_format=T.channels_last))
    assert out.stride() == (3, 1, 3, 3)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_adaptive_pooling_no_support_input(T, dtype):
    # TestPoolingNNDeviceType.test_adaptive_pooling_no_suppot_input: integer inputs are not implemented
    for numel, kind in itertools.product((2, 3), ("Max", "Avg")):
        module = getattr(T.nn, f"Adaptive{kind}Pool{numel}d")((2,) * numel)
        with pytest.raises(RuntimeError, match="not implemented"):
            module(T.randn((4,) * (numel + 1)).to(getattr(T, dtype)))


@pytest.mark.parametrize("kernel, stride, count_include_pad, divisor, padding", [
    (3, None, True, None, 0), (3, None, False, None, 1), (3, 2, False, None, 2), (3, None, True, 42, 0),
    (7, None, True, None, 0), (3, 1, True, None, 2)])
def test_avg_pool2d_nhwc(T, kernel, stride, count_include_pad, divisor, padding):
    # TestPoolingNNDeviceType.test_avg_pool2d_nhwc (float, small shapes; like the original the
    # padding only sizes nothing: the pools use none): channels_last values/grads match contiguous
    stride = stride or kernel
    x = T.randn(2, 4, 8, 8).contiguous(memory_format=T.channels_last).requires_grad_()
    grad = T.randn(2, 4, (8 - kernel) // stride + 1, (8 - kernel) // stride + 1)
    kw = dict(stride=stride, count_include_pad=count_include_pad, divisor_override=divisor)
    ref_x = x.detach().clone().contiguous().requires_grad_()
    out, ref_out = T.nn.AvgPool2d(kernel, **kw)(x), T.nn.AvgPool2d(kernel, **kw)(ref_x)
    out.backward(grad)
    ref_out.backward(grad.contiguous())
    assert out.is_contiguous(memory_format=T.channels_last) and ref_out.is_contiguous()
    assert T.allclose(out, ref_out) and T.allclose(x.grad, ref_x.grad)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool1d_corner_cases(T, dtype):
    # TestPoolingNNDeviceType.test_max_pool1d_corner_cases: windows over padding only are -inf
    dt = getattr(T, dtype)
    for x, args, expected in [([[1]], (1, None, 0, 1, False, False), [[1]]),
                              ([[1]], (2, None, 1, 2, False, False), [[float("-inf")]]),
                              ([[1], [1]], (2, None, 1, 2, False, False), [[float("-inf")], [float("-inf")]]),
                              ([[1, 2]], (2, 1, 1, 2, False, False), [[2, 1]]),
                              ([[1, 2]], (2, 2, 1, 2, False, True), [[2, 2]])]:
        assert T.equal(T.nn.MaxPool1d(*args)(T.tensor(x, dtype=dt)), T.tensor(expected, dtype=dt))


def test_max_pool1d_matches_with_indices(T):
    # TestPoolingNNDeviceType.test_max_pool1d (fixed draws of its random grid, and the strided
    # inputs): max_pool1d equals the return_indices variant's values
    def check(x, *args, **kwargs):
        assert T.equal(T.nn.MaxPool1d(*args, **kwargs)(x), T.nn.MaxPool1d(*args, **kwargs, return_indices=True)(x)[0])
    for size, k, stride, dilation, ceil_mode, padding in [((9, 12, 20), 3, 2, 1, True, 1), ((8, 10, 17), 4, 3, 2, False, 2),
                                                          ((10, 9, 30), 1, 4, 3, True, 0), ((8, 8, 16), 2, 1, 4, False, 1)]:
        check(T.randn(size), k, stride, padding, dilation, ceil_mode=ceil_mode)
    x = T.randn(5, 31, 33)[::2, ::3, ::2]
    check(x, 3, 2, 1, 2, ceil_mode=True)
    check(x.transpose(1, 2), 3, 2, 1, 2, ceil_mode=True)


@pytest.mark.parametrize("nd, shape, kernel, stride", [(2, (2, 4, 8, 8), 7, None), (2, (2, 4, 7, 7), 3, 1),
                                                       (2, (1, 5, 8, 8), 3, 2), (3, (2, 4, 5, 5, 5), 3, 1),
                                                       (3, (1, 4, 6, 7, 8), (3, 2, 4), 2), (3, (4, 5, 5, 5), 3, 2)])
def test_max_pool_channels_last(T, nd, shape, kernel, stride):
    # TestPoolingNNDeviceType.test_max_pool2d_nhwc / test_max_pool3d_ndhwc (float, small shapes,
    # an unbatched 3-D case): channels_last outputs/indices equal the contiguous ones, grads too
    fmt = T.channels_last if nd == 2 else T.channels_last_3d
    unbatched = len(shape) == nd + 1
    x = T.randn(shape if not unbatched else (1,) + shape).contiguous(memory_format=fmt)
    x = (x.squeeze(0) if unbatched else x).detach().clone().requires_grad_()
    pool = getattr(T.nn, f"MaxPool{nd}d")(kernel, stride, return_indices=True)
    ref_x = x.detach().clone().contiguous().requires_grad_()
    out, ind = pool(x)
    ref_out, ref_ind = pool(ref_x)
    grad = T.randn(out.shape)
    out.backward(grad)
    ref_out.backward(grad)
    if not unbatched:
        assert out.is_contiguous(memory_format=fmt) and ind.is_contiguous(memory_format=fmt)
    assert ref_out.is_contiguous() and ref_ind.is_contiguous()
    assert T.equal(out, ref_out) and T.equal(ind, ref_ind) and T.equal(x.grad, ref_x.grad)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_max_pool2d_corner_cases(T, dtype):
    # TestPoolingNNDeviceType.test_max_pool2d_corner_cases: integer input, padded dilated windows
    for fmt in (T.contiguous_format, T.channels_last):
        x = T.tensor([[[[-1, -2], [-3, -4]]]], dtype=getattr(T, dtype)).to(memory_format=fmt)
        assert T.equal(T.nn.MaxPool2d(2, 2, 1, 2, False, True)(x), T.full((1, 1, 2, 2), -4, dtype=x.dtype))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_pool_reduced_floating(T, dtype):
    # TestPoolingNNDeviceType.test_max_pool_bfloat16_half / test_avg_pool2d_reduced_floating (a
    # few shapes): half/bfloat16 max and avg pooling match float32 rounded, dtypes kept
    dt = getattr(T, dtype)
    for shape, k, s, fmt in [((1, 3, 10, 6), 4, 2, T.channels_last)]:
        x = T.randn(shape).to(dt).to(memory_format=fmt).requires_grad_()
        x2 = x.detach().clone().float().requires_grad_(True)
        pools = [getattr(T.nn, f"MaxPool{len(shape) - 2}d")(k, s, return_indices=True)]
        if len(shape) == 4:
            pools.append(T.nn.AvgPool2d(k, s))
        for pool in pools:
            out, out2 = pool(x), pool(x2)
            if isinstance(out, tuple):
                assert T.equal(out[1], out2[1])
                out, out2 = out[0], out2[0]
            out.sum().backward()
            out2.sum().backward()
            assert out.dtype == dt and x.grad.dtype == dt and out.is_contiguous(memory_format=fmt)
            assert T.allclose(out.float(), out2.to(dt).float(), atol=1e-2)
            assert T.allclose(x.grad.float(), x2.grad.to(dt).float(), atol=1e-2)
            x.grad = x2.grad = None


@pytest.mark.parametrize("contig", [False])
def test_max_pool_nhwc_indices(T, contig):
    # TestPoolingNNDeviceType.test_adaptive_pooling_max_nhwc / test_pooling_max_nhwc (float, small):
    # channels_last (and channel-strided) inputs give the contiguous outputs, indices and grads
    cases = [(T.nn.AdaptiveMaxPool2d((5, 4), return_indices=True), (2, 4, 7, 9)),
             (T.nn.AdaptiveMaxPool2d((1, 1), return_indices=True), (2, 1, 3, 3)),
             (T.nn.AdaptiveMaxPool3d((3, 2, 3), return_indices=True), (2, 4, 5, 5, 6)),
             # (the original's (2, 4, 6, 7) and (2, 4, 9, 9) inputs: the first case's shape, so the
             # input's layout programs are compiled once for the three 2-d pools)
             (T.nn.MaxPool2d((2, 2), (1, 1), (1, 1), (2, 2), return_indices=True), (2, 4, 7, 9)),
             (T.nn.MaxPool2d((4, 4), (2, 2), (2, 2), (2, 2), return_indices=True), (2, 4, 7, 9))]
    for pool, shape in cases:
        fmt = T.channels_last if len(shape) == 4 else T.channels_last_3d
        x = T.randint(1, 10, shape, dtype=T.float).contiguous(memory_format=fmt)
        if not contig:
            x = x[:, ::2]
        x.requires_grad_(True)
        ref_x = x.detach().clone().contiguous().requires_grad_(True)
        out, ind = pool(x)
        ref_out, ref_ind = pool(ref_x)
        grad = T.randint(1, 10, out.shape, dtype=T.float)
        out.backward(grad)
        ref_out.backward(grad)
        if len(shape) == 4 and x.shape[1] > 1:
            assert out.is_contiguous(memory_format=fmt)
        assert T.equal(out, ref_out) and T.equal(ind, ref_ind) and T.equal(x.grad, ref_x.grad)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("adaptive", [False, True])
def test_maxpool_indices(T, nd, adaptive):
    # TestPoolingNNDeviceType.test_MaxPool1d_indices / 2d / 3d / test_AdaptiveMaxPool1d_indices /
    # 2d / 3d (_test_maxpool_indices): known indices/values on an arange input, the gradient
    # routes to the maxima, backward after editing the indices in place raises, -inf is a max
    mod = getattr(T.nn, f"{'Adaptive' if adaptive else ''}MaxPool{nd}d")(2, return_indices=True)
    x = T.arange(1, 4 ** (nd + 1) + 1, dtype=T.float).view(2, 2, *(4,) * nd).requires_grad_()
    out, idx = mod(x)
    if nd == 1:
        assert T.equal(idx.squeeze(), T.tensor([1, 3]).repeat(2, 2, 1))
        assert T.equal(out.squeeze(), T.arange(2, 17, 2, dtype=T.float).view(2, 2, 2))
    elif nd == 2:
        assert T.equal(idx.squeeze(), T.tensor([[5, 7], [13, 15]]).repeat(2, 2, 1, 1))
        col = T.arange(6, 63, 8, dtype=T.float)
        assert T.equal(out.squeeze(), T.stack([col, col + 2], 1).view(2, 2, 2, 2))
    assert idx.dim() == x.dim() and out.requires_grad and not idx.requires_grad
    go = T.ones(out.size())
    out.backward(go, retain_graph=True)
    expected = T.tensor([0.0, 1.0, 0.0, 1.0]).repeat(2, 2, 1)
    for _ in range(nd - 1):
        zero = T.zeros(expected.size())
        expected = T.stack((zero, expected, zero, expected), 2)
    assert T.equal(x.grad, expected.view_as(x))
    for k in (1, 2, 3):
        o, i = getattr(T.nn, f"MaxPool{k}d")(kernel_size=1, return_indices=True)(T.full((1,) * (k + 2), float("-inf")))
        assert o.flatten()[0].item() == float("-inf") and i.flatten()[0].item() == 0


@pytest.mark.parametrize("adaptive", [False, True])
def test_maxpool_indices_edited_in_place(T, request, adaptive):
    # TestPoolingNNDeviceType._test_maxpool_indices: backward after editing the returned indices in
    # place raises (torch saves the indices for its backward, so their version counter is checked)
    mod = getattr(T.nn, f"{'Adaptive' if adaptive else ''}MaxPool2d")(2, return_indices=True)
    out, idx = mod(T.arange(1.0, 33.0).view(2, 1, 4, 4).requires_grad_())
    idx.add_(1)
    with pytest.raises(RuntimeError):
        out.sum().backward()


def test_adaptive_max_pool_indices_channels_last(T):
    # TestPoolingNNDeviceType.test_adaptive_pooling_max_nhwc: a channels_last input's indices are
    # channels_last for the 2-D pool; the 3-D pool's stay contiguous for a channels_last_3d input
    _, ind = T.nn.AdaptiveMaxPool2d((5, 4), return_indices=True)(T.rand(2, 4, 7, 9).contiguous(
        memory_format=T.channels_last))
    assert ind.is_contiguous(memory_format=T.channels_last)
    _, ind = T.nn.AdaptiveMaxPool3d((2, 3, 2), return_indices=True)(T.rand(2, 4, 3, 5, 4).contiguous(
        memory_format=T.channels_last_3d))
    assert ind.is_contiguous() and not ind.is_contiguous(memory_format=T.channels_last_3d)


def test_maxpool_indices_no_batch_dim(T):
    # TestPoolingNNDeviceType.test_maxpool_indices_no_batch_dim
    for nd in (1, 2, 3):
        x = T.randn(3, *(5, 6, 7)[:nd])
        for module in (getattr(T.nn, f"MaxPool{nd}d")(3, return_indices=True),
                       getattr(T.nn, f"AdaptiveMaxPool{nd}d")(3, return_indices=True)):
            assert T.equal(module(x)[1], module(x.unsqueeze(0))[1].squeeze(0))


def test_max_pool_nan_inf(T):
    # TestPoolingNNDeviceType.test_max_pool_nan_inf / test_fractional_max_pool_nan_inf: an all-nan
    # window pools to nan, an all -inf window to -inf, with and without grad
    F = T.nn.functional
    fns = [(getattr(F, f"{a}max_pool{n}d"), n, 1 if a else 3) for a, n in (("", 1), ("", 3), ("adaptive_", 2))]
    fns += [(getattr(T.nn, f"FractionalMaxPool{n}d")(kernel_size=2, output_size=1), n, None) for n in (2, 3)]
    for fn, nd, arg in fns:
        call = fn if arg is None else (lambda t, fn=fn, arg=arg: fn(t, arg))
        for fill, check in ((float("nan"), math.isnan), (float("-inf"), math.isinf)):
            x = T.full([1, 1] + nd * [3], fill, requires_grad=True)
            res = call(x)
            res.backward(T.randn(res.shape))
            assert check(res.item())
            x.requires_grad_(False)
            assert check(call(x).item())


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool(T, nd):
    # TestPoolingNNDeviceType.test_fractional_max_pool2d / test_fractional_max_pool3d (float64,
    # smaller): fixed samples give a deterministic pool; gradcheck/gradgradcheck batched and
    # unbatched; bad kernel_size / output_size raise with torch's messages
    F = T.nn.functional
    fn = getattr(F, f"fractional_max_pool{nd}d")
    samples = T.tensor(np.random.RandomState(0).uniform(size=(1, 2, nd)))
    kernel, out_size = (2,) * nd, (3,) * nd

    def func(x):
        return fn(x, kernel, output_size=out_size, _random_samples=samples)
    for shape in ((1, 2) + (5,) * nd, (2,) + (5,) * nd):
        x = T.randn(shape, dtype=T.double, requires_grad=True)
        assert func(x).shape == shape[:-nd] + out_size
        if nd == 2 or len(shape) == nd + 1:
            assert T.autograd.gradcheck(func, [x])
        if nd == 2:
            assert T.autograd.gradgradcheck(func, [x])
    for ks in [(), (1,)] + ([(1, 1)] if nd == 3 else []):
        with pytest.raises(RuntimeError, match="kernel_size must either"):
            fn(x, kernel_size=ks, output_size=out_size, _random_samples=samples)
    names = ("time", "height", "width")[-nd:]
    bad = [(tuple(9 if j == i else 3 for j in range(nd)), "too large relative to input " + names[i]) for i in range(nd)]
    bad += [((3,) * n, "output_size must either") for n in range(nd)]
    for output_size, msg in bad:
        with pytest.raises(RuntimeError, match=msg):
            fn(x, kernel, output_size=output_size, _random_samples=samples)


def test_FractionalMaxPool3d_zero_sizes(T):
    # TestPoolingNNDeviceType.test_FractionalMaxPool3d_zero_batch / _zero_out_size / _zero_samples
    mod = T.nn.FractionalMaxPool3d(3, output_ratio=(0.5, 0.5, 0.5))
    _check_empty_input(T, mod, T.ones(0, 2, 6, 6, 6))
    with pytest.raises(RuntimeError, match="Expected input"):
        mod(T.randn(1, 0, 6, 6, 6))
    out = T.nn.FractionalMaxPool3d([3, 2, 2], output_size=[0, 1, 1])(T.rand([2, 6, 6, 6]))
    assert out.shape == (2, 0, 1, 1)
    mod = T.nn.FractionalMaxPool3d([3, 2, 2], output_size=[1, 1, 1], _random_samples=T.rand([0, 2, 3]))
    assert mod(T.randn([0, 2, 6, 6, 6])).shape == (0, 2, 1, 1, 1)
    with pytest.raises(RuntimeError, match="Expect _random_samples"):
        mod(T.randn([1, 2, 6, 6, 6]))


def test_pooling_zero_stride(T):
    # TestPoolingNNDeviceType.test_pooling_zero_stride: functional and module forms
    for op, nd in itertools.product(("max", "avg"), (1, 2, 3)):
        x = T.ones([1, 2] + nd * [4])
        with pytest.raises(RuntimeError, match=r"stride should not be zero|stride must be greater than zero"):
            getattr(T.nn.functional, f"{op}_pool{nd}d")(x, kernel_size=2, stride=0)
        with pytest.raises(RuntimeError, match=r"stride should not be zero|stride must be greater than zero"):
            getattr(T.nn, f"{op.title()}Pool{nd}d")(kernel_size=2, stride=0)(x)


def test_pool_large_size(T):
    # TestPoolingNNDeviceType.test_pool_large_size (1-D): a length not representable in float32
    # (16777217) keeps its exact output length
    x = T.ones([1, 1, 16777217])
    for op in ("max", "avg"):
        assert getattr(T.nn.functional, f"{op}_pool1d")(x, 1, stride=1, padding=0).shape[2] == 16777217


def test_pool_invalid_size(T):
    # TestPoolingNNDeviceType.test_pool_invalid_size: a kernel whose windows do not fit raises
    F = T.nn.functional
    for op, nd in itertools.product(("max", "avg"), (1, 2, 3)):
        x = T.ones([1, 1] + nd * [4])
        with pytest.raises(RuntimeError, match=r"too small|smaller than"):
            if op == "max":
                getattr(F, f"max_pool{nd}d_with_indices")(x, 3, stride=2, padding=0, dilation=2)
            else:
                getattr(F, f"avg_pool{nd}d")(x, 6, stride=2, padding=0)


def test_maxpool3d_non_square_backward(T):
    # TestPoolingNNDeviceType.test_maxpool3d_non_square_backward (smaller): every position gets a gradient
    for dim in (2, 3, 4):
        x = T.randn(tuple(4 if i != dim else 24 for i in range(5))[1:], requires_grad=True)
        T.nn.functional.max_pool3d(x, kernel_size=(1, 1, 1)).sum().backward()
        assert T.equal(x.grad, T.ones_like(x.grad))


# ==== test/nn/test_embedding.py =================================================================
def _embedding_bag_vs_embedding(T, N, D, B, L, mode="mean", wdtype="float32", dtype="int64", max_norm=None,
                                per_sample=False, trainable=False, sparse=False, backward=True):
    """TestEmbeddingNNDeviceType._test_EmbeddingBag_vs_Embedding: an EmbeddingBag over equal-length
    bags equals Embedding followed by the bag's reduction, values and weight gradients."""
    wdt, dt = getattr(T, wdtype), getattr(T, dtype)
    es = T.nn.EmbeddingBag(N, D, mode=mode, sparse=sparse, max_norm=max_norm).to(wdt)
    e = T.nn.Embedding(N, D, max_norm=max_norm).to(wdt)
    e.weight.data.copy_(es.weight)
    ids = T.randint(N, (B, L), dtype=dt)
    offsets = T.arange(0, B, dtype=dt).mul_(L)
    go = T.rand(B, D, dtype=wdt)
    psw = psw_ref = None
    if per_sample:
        psw = T.randn(B, L, dtype=wdt).softmax(dim=-1)
        psw_ref = psw.clone().requires_grad_(trainable)
        psw.requires_grad_(trainable)
        out = es(ids.view(-1), offsets, psw.view(-1))
        ref = (e(ids) * psw_ref.unsqueeze(-1)).sum(1)
    else:
        out = es(ids.view(-1), offsets)
        ref = {"sum": lambda v: v.sum(1), "mean": lambda v: v.mean(1), "max": lambda v: v.max(1)[0]}[mode](e(ids))
    tol = 1e-5 if wdtype == "float32" else 1e-7
    assert T.allclose(out, ref, atol=tol, rtol=0)
    if backward:
        out.backward(go)
        ref.backward(go)
        grad = es.weight.grad.to_dense() if sparse else es.weight.grad
        assert T.allclose(grad, e.weight.grad, atol=5 * tol, rtol=0)
        if per_sample and trainable:
            assert T.allclose(psw.grad, psw_ref.grad, atol=tol, rtol=0)


@pytest.mark.parametrize("dtype, wdtype", [("int32", "float64")])
def test_EmbeddingBag_per_sample_weights_and_no_offsets(T, dtype, wdtype):
    # TestEmbeddingNNDeviceType.test_EmbeddingBag_per_sample_weights_and_no_offsets (two of its
    # four sizes): 'sum' with per-sample weights against Embedding, sparse or dense, trainable or not
    for sparse, trainable in itertools.product((True, False), (True, False)):
        for size in ((11, 5, 3, 7),):
            _embedding_bag_vs_embedding(T, *size, mode="sum", wdtype=wdtype, dtype=dtype, per_sample=True,
                                        trainable=trainable, sparse=sparse)


def _check_embedding_bag(T, mode, sparse, wdtype="float64", dtype="int64", odtype="int64", backward=True):
    """TestEmbeddingNNDeviceType._test_EmbeddingBag: a known example (1-D with empty bags, 2-D),
    all-empty bags, EmbeddingBag vs Embedding (with max_norm), and the bad input combinations."""
    wdt, dt, odt = getattr(T, wdtype), getattr(T, dtype), getattr(T, odtype)
    es = T.nn.EmbeddingBag(5, 2, mode=mode, sparse=sparse).to(wdt)
    es.weight.data.copy_(T.arange(1, 11).view_as(es.weight).to(wdt))
    ids = T.tensor([3, 1, 1, 1, 4, 0], dtype=dt)
    offsets = T.tensor([0, 0, 3, 3, 6], dtype=odt)
    if mode in ("sum", "mean"):
        den = 1 if mode == "sum" else 3
        expected = T.tensor([[13, 16], [13, 16]], dtype=wdt) / den
        expected_empty = T.tensor([[0, 0], [13, 16], [0, 0], [13, 16], [0, 0]], dtype=wdt) / den
        expected_grad = T.tensor([[3, 4], [5, 8], [0, 0], [1, 2], [3, 4]], dtype=wdt) / den
    else:
        expected = T.tensor([[7, 8], [9, 10]], dtype=wdt)
        expected_empty = T.tensor([[0, 0], [7, 8], [0, 0], [9, 10], [0, 0]], dtype=wdt)
        expected_grad = T.tensor([[0, 0], [0, 0], [0, 0], [1, 2], [3, 4]], dtype=wdt)
    tol = {"float64": 1e-7, "float32": 1e-5, "float16": 1e-2, "bfloat16": 1e-1}[wdtype]
    out = es(ids, offsets)
    out.backward(T.tensor([99, 99, 1, 2, 99, 99, 3, 4, 99, 99], dtype=wdt).view(5, 2))
    grad = es.weight.grad.to_dense() if sparse else es.weight.grad
    assert T.equal(out, expected_empty) and T.allclose(grad, expected_grad, atol=tol, rtol=0)
    es.zero_grad()
    out = es(ids.view(2, -1))
    out.backward(T.tensor([1, 2, 3, 4], dtype=wdt).view(2, 2))
    grad = es.weight.grad.to_dense() if sparse else es.weight.grad
    assert T.equal(out, expected) and T.allclose(grad, expected_grad, atol=tol, rtol=0)
    es.zero_grad()
    es(T.tensor([], dtype=dt), T.tensor([0, 0, 0, 0], dtype=odt)).sum().backward()
    grad = es.weight.grad.to_dense() if es.weight.grad.is_sparse else es.weight.grad
    assert T.equal(grad, T.zeros_like(es.weight))
    if wdtype in ("float32", "float64"):
        kw = dict(mode=mode, sparse=sparse, wdtype=wdtype, dtype=dtype, backward=backward)
        _embedding_bag_vs_embedding(T, 17, 5, 4, 6, max_norm=3 if mode == "max" else None, **kw)
    es = T.nn.EmbeddingBag(10, 20, mode=mode, sparse=sparse)
    x = T.ones(3, 4, dtype=dt)
    offset = T.arange(0, 3, dtype=odt)
    with pytest.raises(ValueError):
        es(x, offset)
    with pytest.raises(ValueError):
        es(x.view(-1))
    offset[0] = 1
    with pytest.raises(RuntimeError):
        es(x.view(-1), offset)
    offset[0], offset[-1] = 0, 100
    with pytest.raises(RuntimeError):
        es(x.view(-1), offset)


@pytest.mark.parametrize("dtype, odtype, wdtype", [("int32", "int64", "float64")])
def test_embedding_bag_device(T, dtype, odtype, wdtype):
    # TestEmbeddingNNDeviceType.test_embedding_bag_device (float/double weights; the CPU
    # sparse-backward comparison runs for double only, as the original)
    kw = dict(wdtype=wdtype, dtype=dtype, odtype=odtype)
    for mode, sparse in (("sum", False), ("max", False), ("mean", True)):
        _check_embedding_bag(T, mode, sparse, backward=not sparse or wdtype == "float64", **kw)


@pytest.mark.parametrize("wdtype, modes", [("bfloat16", ("sum", "mean")), ("float16", ("sum",))])
def test_embedding_bag_reduced_floating(T, wdtype, modes):
    # TestEmbeddingNNDeviceType.test_embedding_bag_bfloat16 / test_embedding_bag_half (sparse)
    for mode in modes:
        _check_embedding_bag(T, mode, True, wdtype=wdtype, dtype="int32", odtype="int64")


def test_embedding_bag_non_contiguous_weight(T):
    # TestEmbeddingNNDeviceType.test_embedding_bag_non_contiguous_weight: a strided weight gives the
    # contiguous weight's bags, in every mode
    w = T.randn(3, 4)[:, :3]
    assert not w.is_contiguous()
    index, offsets = T.tensor([0, 1, 2]), T.tensor([0, 2], dtype=T.int32)
    for mode in ("sum", "mean", "max"):
        assert T.equal(T.nn.functional.embedding_bag(input=index, weight=w, offsets=offsets, mode=mode),
                       T.nn.functional.embedding_bag(input=index, weight=w.clone().contiguous(), offsets=offsets,
                                                     mode=mode))


@pytest.mark.parametrize("bag_grad, psw_grad", [(True, True), (True, False), (False, True), (False, False)])
def test_embedding_bag_per_sample_weights_grad(T, bag_grad, psw_grad):
    # TestEmbeddingNNDeviceType.test_embedding_bag_per_sample_weights_grad (smaller table): frozen
    # or trainable table and per-sample weights both run, and the output requires grad when either does
    bag = T.nn.EmbeddingBag(16, 8, mode="sum")
    bag.requires_grad_(bag_grad)
    w = T.rand(3, 4, requires_grad=psw_grad)
    out = bag(T.arange(1, 5).expand(3, -1), per_sample_weights=T.nn.functional.softmax(w, dim=-1))
    assert out.shape == (3, 8) and out.requires_grad == (bag_grad or psw_grad)


# ==== test/nn/test_parametrization.py ===========================================================
def _rank_one(T):
    """RankOne: a rank-one matrix from two vectors; its right_inverse projects onto rank one (by SVD)."""
    class RankOne(T.nn.Module):
        def forward(self, x, y):
            return x.unsqueeze(-1) @ y.unsqueeze(-2)

        def right_inverse(self, Y):
            U, S, Vh = T.linalg.svd(Y, full_matrices=False)
            s0_sqrt = S[0].sqrt().unsqueeze(-1)
            return U[..., :, 0] * s0_sqrt, Vh[..., 0, :] * s0_sqrt
    return RankOne


def test_transfer_parametrizations_and_params_variants(T):
    # TestNNParametrization.test_transfer_parametrizations_and_params_right_inverse /
    # _single_param / _many_to_one (to a plain Linear instead of a QAT one): values and originals
    # transferred, only the named tensor when one is given, the source left unchanged
    P = _parametrize(T)
    AddOne, Double, MinusOne = _affine_params(T)
    RankOne = _rank_one(T)
    model = T.nn.Linear(5, 5)
    P.register_parametrization(model, "weight", Double())
    hold = model.weight
    to_model = T.nn.Linear(5, 5)
    P.transfer_parametrizations_and_params(model, to_model)
    assert T.equal(model.weight, to_model.weight) and T.equal(hold, model.weight)
    assert T.equal(model.parametrizations.weight.original, to_model.parametrizations.weight.original)

    model = T.nn.Linear(5, 5)
    for name in ("weight", "bias"):
        for p in (AddOne(), Double(), MinusOne()):
            P.register_parametrization(model, name, p)
    to_model = T.nn.Linear(5, 5)
    P.transfer_parametrizations_and_params(model, to_model, "weight")
    assert T.equal(model.weight, to_model.weight) and "bias" not in to_model.parametrizations
    assert T.equal(model.parametrizations.weight.original, to_model.parametrizations.weight.original)

    model = T.nn.Linear(3, 3)
    P.register_parametrization(model, "weight", RankOne())
    P.register_parametrization(model, "weight", Double())
    hold = model.weight
    to_model = T.nn.Linear(3, 3)
    P.transfer_parametrizations_and_params(model, to_model)
    assert P.is_parametrized(to_model, "weight") and T.allclose(model.weight, to_model.weight)
    for k in ("original0", "original1"):
        assert T.equal(getattr(model.parametrizations.weight, k), getattr(to_model.parametrizations.weight, k))
    assert T.equal(hold, model.weight)
    model.test_param = T.nn.Parameter(T.randn(3, 3))
    assert not hasattr(to_model, "test_param")
    P.register_parametrization(model, "test_param", RankOne())
    hold = model.test_param
    P.transfer_parametrizations_and_params(model, to_model, "test_param")
    assert T.allclose(model.test_param, to_model.test_param) and T.equal(hold, model.test_param)
    for k in ("original0", "original1"):
        assert T.equal(getattr(model.parametrizations.test_param, k), getattr(to_model.parametrizations.test_param, k))


def test_register_parametrization_no_grad(T):
    # TestNNParametrization.test_register_parametrization_no_grad: a frozen tensor's originals stay frozen
    class SplitAndCat(T.nn.Module):
        def right_inverse(self, x):
            return T.split(x, x.shape[1] // 2)

        def forward(self, x0, x1):
            return T.cat([x0, x1])
    model = T.nn.Linear(8, 8)
    model.weight.requires_grad = False
    _parametrize(T).register_parametrization(model, "weight", SplitAndCat())
    assert not model.weight.requires_grad
    assert not model.parametrizations.weight.original0.requires_grad
    assert not model.parametrizations.weight.original1.requires_grad


def test_new_spectral_norm_structure(T):
    # TestNNParametrization.test_new_spectral_norm (structure part): _u/_v buffers, a trainable
    # original, weight neither a buffer nor a parameter; registering it twice and on the bias;
    # removing restores plain parameters
    P, SN = _parametrize(T), T.nn.utils.parametrizations.spectral_norm
    m = SN(T.nn.Linear(5, 7).double())
    snm = m.parametrizations.weight[0]
    assert snm._u.size() == (7,) and "_u" in snm._buffers and "_v" in snm._buffers
    assert "original" in m.parametrizations.weight._parameters
    assert "weight" not in m._buffers and "weight" not in m._parameters
    orig = m.parametrizations.weight.original
    assert orig.size() == m.weight.size() and orig.stride() == m.weight.stride()
    m = P.remove_parametrizations(m, "weight")
    assert not hasattr(m, "parametrizations") and "weight" in m._parameters
    m = SN(SN(SN(m, "weight"), "weight"), "bias")
    m = P.remove_parametrizations(m, "bias")
    assert "bias" in m._parameters and hasattr(m, "parametrizations") and "weight" not in m._parameters
    m = P.remove_parametrizations(m, "weight")
    assert not hasattr(m, "parametrizations") and "weight" in m._parameters and not P.is_parametrized(m)


@pytest.mark.parametrize("requires_grad", [True, False])
def test_new_spectral_norm_train_eval(T, requires_grad):
    # TestNNParametrization.test_new_spectral_norm (CPU, no DataParallel; float64): training
    # updates u/v and reaches the original; gradcheck through two forwards and through mixed
    # train/eval forwards with u/v reset; removing in eval keeps the output; eval repeats the
    # last training output without touching u/v
    P, SN = _parametrize(T), T.nn.utils.parametrizations.spectral_norm

    def get_modules():
        m = T.nn.Linear(3, 4).double()
        m.weight.requires_grad_(requires_grad)
        m = SN(m)
        return m, m.parametrizations.weight[0]
    x = T.randn(2, 3, dtype=T.double)
    m, snm = get_modules()
    u0, v0 = snm._u.clone(), snm._v.clone()
    opt = T.optim.SGD(m.parameters(), lr=0.1)
    opt.zero_grad()
    m(x).sum().backward()
    opt.step()
    out = m(x)
    if requires_grad:
        assert not T.equal(u0, snm._u) and not T.equal(v0, snm._v)
        T.autograd.grad(out.sum(), m.parametrizations.weight.original)
    saved_u, saved_v = snm._u.clone(), snm._v.clone()

    def twice(inp):
        snm._u.data.copy_(saved_u)
        snm._v.data.copy_(saved_v)
        return m(inp) + m(inp)
    twice(x.clone().requires_grad_()).sum().backward()
    assert T.autograd.gradcheck(twice, (x.clone().requires_grad_(),), check_batched_grad=False)
    for runs in (1, 3):
        m, _ = get_modules()
        for _ in range(runs):
            pre = m(x).detach()
        m.eval()
        m = P.remove_parametrizations(m, "weight")
        assert T.allclose(m(x), pre)
    m, snm = get_modules()
    m(x)
    last = m(x)
    last_u, last_v = snm._u.clone(), snm._v.clone()
    m.zero_grad()
    m.eval()
    eval_out = m(x)
    assert T.allclose(eval_out, last) and T.allclose(eval_out, m(x))
    assert T.equal(last_u, snm._u) and T.equal(last_v, snm._v)
    saved_u, saved_v = snm._u.clone(), snm._v.clone()

    def mixed(inp):
        snm._u.data.copy_(saved_u)
        snm._v.data.copy_(saved_v)
        outs = []
        for train in (True, False, True, False):
            m.train(train)
            outs.append(m(inp))
        return sum(outs)
    assert T.autograd.gradcheck(mixed, (x.clone().requires_grad_(),))
    if requires_grad:
        assert T.autograd.gradcheck(lambda w: m(x), (m.parametrizations.weight.original,))


@pytest.mark.parametrize("activate_times", [0, 3])
def test_new_spectral_norm_load_state_dict(T, activate_times):
    # TestNNParametrization.test_new_spectral_norm_load_state_dict: the state_dict keys, strict and
    # non-strict loading with missing/extra keys, and outputs after reloading into a re-wrapped module
    P, SN = _parametrize(T), T.nn.utils.parametrizations.spectral_norm
    inp = T.randn(2, 3)
    snm = SN(T.nn.Linear(3, 5))
    snm.train()
    for _ in range(activate_times):
        snm(inp)
    state_dict = copy.deepcopy(snm.state_dict())
    assert set(state_dict) == {"parametrizations.weight.original", "bias", "parametrizations.weight.0._v",
                               "parametrizations.weight.0._u"}
    loose = copy.deepcopy(state_dict)
    loose["nonsense"] = "nonsense"
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "nonsense"'):
        snm.load_state_dict(loose, strict=True)
    snm.load_state_dict(loose, strict=False)
    for key in ("parametrizations.weight.original", "parametrizations.weight.0._u", "parametrizations.weight.0._v"):
        del loose[key]
        snm.load_state_dict(loose, strict=False)
    loose["weight"] = snm.weight.detach().clone()
    snm.load_state_dict(loose, strict=False)
    del loose._metadata["parametrizations.weight.0"]
    snm.load_state_dict(loose, strict=False)
    del loose["weight"]
    snm.load_state_dict(loose, strict=False)
    del loose["bias"]
    snm.load_state_dict(loose, strict=False)

    def outputs(module):
        with T.no_grad():
            res = []
            for train in (False, True, True, False):
                module.train(train)
                res.append(module(inp))
        return res
    snm = SN(P.remove_parametrizations(snm, "weight"))
    snm.load_state_dict(state_dict)
    first = outputs(snm)
    snm = SN(P.remove_parametrizations(snm, "weight"))
    snm.load_state_dict(state_dict)
    for a, b in zip(first, outputs(snm)):
        assert T.allclose(a, b)


def test_new_spectral_norm_dim_forward_value(T):
    # TestNNParametrization.test_new_spectral_norm_dim / test_new_spectral_norm_forward /
    # test_new_spectral_norm_value (float): u follows dim 1 of a transposed conv's weight; one
    # power-iteration step by hand gives the module's output; a diagonal weight is divided by
    # its largest entry
    SN, F = T.nn.utils.parametrizations.spectral_norm, T.nn.functional
    m = SN(T.nn.ConvTranspose2d(3, 4, (2, 3)))
    m(T.randn(2, 3, 4, 5))
    assert m.parametrizations.weight[0]._u.shape == m.parametrizations.weight.original[0, :, 0, 0].shape
    x = T.randn(3, 5)
    m = SN(T.nn.Linear(5, 7))
    snm = m.parametrizations.weight[0]
    w = m.parametrizations.weight.original
    w_mat = w.view(w.size(0), -1)
    u = F.normalize(T.mv(w_mat, snm._v), dim=0, eps=1e-12)
    v = F.normalize(T.mv(w_mat.t(), u), dim=0, eps=1e-12)
    w.data /= T.dot(u, T.matmul(w_mat, v))
    assert T.allclose(m(x), F.linear(x, w, m.bias), atol=1e-6)
    m = T.nn.Linear(2, 2)
    with T.no_grad():
        d = T.diagonal(m.weight)
        m.weight = T.nn.Parameter(T.diag(d))
        SN(m)
        assert T.allclose(m.weight.data, T.diag(d / d.abs().max()), atol=1e-6)


@pytest.mark.parametrize("map_name, triv, shape", [("matrix_exp", True, (4, 4)), ("cayley", False, (5, 3)),
                                                    ("householder", False, (3, 5))])
def test_orthogonal_parametrization(T, map_name, triv, shape):
    # TestNNParametrization.test_orthogonal_parametrization (float32, Linear; four of its six
    # map/trivialization pairs): orthogonal weights, initialised to the Q of the QR of the weight
    # when the map can be initialised, assignment of orthogonal / arbitrary matrices (or
    # NotImplementedError), and gradients zero on the diagonal and the unused triangle
    orth = T.nn.utils.parametrizations.orthogonal

    def assert_orthogonal(X):
        if X.size(-2) < X.size(-1):
            X = X.mT
        eye = T.eye(X.size(-1))
        assert T.allclose(X.mH @ X, eye, atol=10 * X.size(-2) * 1.2e-7, rtol=0)

    def assert_is_Q_of(weight, W):
        wide = W.size(-2) < W.size(-1)
        Q, R = T.linalg.qr(W.mT if wide else W)
        Q = Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)
        assert T.allclose(Q.mT if wide else Q, weight, atol=1e-5, rtol=0)
    can_init = triv or map_name == "householder"
    m = T.nn.Linear(*shape)
    w_init = m.weight.detach().clone()
    orth(m, "weight", map_name, use_trivialization=triv)
    assert m.weight.shape == w_init.shape
    assert_orthogonal(m.weight)
    if can_init:
        assert_is_Q_of(m.weight, w_init)
    wide = w_init.size(-2) < w_init.size(-1)
    X = T.randn_like(m.weight)
    w_new = T.linalg.qr(X.mT if wide else X).Q
    w_new = w_new.mT if wide else w_new
    for new, check in ((w_new, lambda: T.allclose(w_new, m.weight, atol=1e-5, rtol=0)),
                       (T.randn_like(m.weight), None)):
        if can_init:
            m.weight = new
            assert check() if check else (assert_is_Q_of(m.weight, new) or True)
        else:
            with pytest.raises(NotImplementedError, match="assign to the matrix exponential or the Cayley"):
                m.weight = new
    opt = T.optim.SGD(m.parameters(), lr=0.1)
    x = T.randn(3, shape[0])
    for _ in range(2):
        opt.zero_grad()
        m(x).norm().backward()
        grad = m.parametrizations.weight.original.grad
        zeros = grad.triu(1) if grad.size(-2) >= grad.size(-1) else grad.tril(-1)
        assert T.equal(zeros, T.zeros_like(zeros))
        diag = grad.diagonal(dim1=-2, dim2=-1)
        assert T.equal(diag, T.zeros_like(diag))
        opt.step()
        assert_orthogonal(m.weight)


def test_orthogonal_householder_complex_and_errors(T):
    # TestNNParametrization.test_orthogonal_parametrization (complex householder) / test_orthogonal_errors
    orth = T.nn.utils.parametrizations.orthogonal
    with pytest.raises(ValueError, match="householder parametrization does not support complex tensors"):
        orth(T.nn.Linear(3, 3, dtype=T.complex64), "weight", "householder")
    m = T.nn.Linear(3, 4)
    with pytest.raises(ValueError, match="has to be one of"):
        orth(m, "weight", "foo")
    with pytest.raises(ValueError, match="Expected a matrix"):
        orth(m, "bias")
    orth(m, "weight")
    with pytest.raises(ValueError, match="matrices of shape"):
        m.weight = T.randn(5, 5)
    _parametrize(T).remove_parametrizations(m, "weight")


def test_weight_norm_compat_pickle_deepcopy(T):
    # TestNNParametrization.test_weight_norm_state_dict_compat / test_weight_norm_pickle /
    # test_weight_norm_deepcopy: the old weight_norm's state_dict loads into the parametrization;
    # pickling raises pointing to state_dict; a deepcopy computes the same output
    with pytest.warns(FutureWarning, match="deprecated"):
        m = T.nn.utils.weight_norm(T.nn.Linear(4, 5))
    m2 = T.nn.utils.parametrizations.weight_norm(T.nn.Linear(4, 5))
    m2.load_state_dict(m.state_dict())
    x = T.randn(3, 4)
    assert T.allclose(m(x), m2(x))
    with pytest.raises(RuntimeError, match="state_dict"):
        pickle.dumps(m2)
    assert T.allclose(m2(x), copy.deepcopy(m2)(x))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_weight_norm_parametrization_dtypes(T, dtype):
    # TestNNParametrizationDevice.test_weight_norm_parametrization (float and bfloat16): g/v
    # shapes for dim 0, 1 and None, outputs unchanged by adding or removing the parametrization
    dt = getattr(T, dtype)
    P, WN = _parametrize(T), T.nn.utils.parametrizations.weight_norm
    tol = dict(atol=1e-5, rtol=1e-5) if dtype == "float32" else dict(atol=2e-2, rtol=2e-2)
    x = T.randn(3, 4, dtype=dt)
    m = T.nn.Linear(4, 5, dtype=dt)
    expected = m(x)
    m = WN(m)
    assert m.parametrizations.weight.original1.size() == m.weight.size()
    assert m.parametrizations.weight.original0.size() == (5, 1)
    assert T.allclose(m(x), expected, **tol)
    P.remove_parametrizations(m, "weight")
    assert not hasattr(m, "parametrizations") and T.allclose(m(x), expected, **tol)
    m = WN(m, dim=1)
    assert m.parametrizations.weight.original0.size() == (1, 4) and T.allclose(m(x), expected, **tol)
    m = T.nn.Linear(4, 5, dtype=dt)
    expected = m(x)
    assert T.allclose(WN(m, dim=None)(x), expected, **tol)
