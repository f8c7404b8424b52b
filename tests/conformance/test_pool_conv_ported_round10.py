"""Round 10: gaps left in PyTorch's test/nn/test_pooling.py and test/nn/test_convolution.py (CPU,
float32): ceil-mode average pooling, adaptive pooling argument errors, max pooling indices,
non-contiguous grads, odd strides, depthwise (grouped) convolution against per-group ones, 1x1
kernels against einsum, 'same'/'valid' padding modules and transposed output sizes. Each body runs
under the ``T`` fixture, once with torch 2.13 (the oracle: every expectation holds there too) and
once with tracegrad; inputs come from seeded NumPy generators. Each test names its original."""
import numpy as np
import pytest


def _np(t):
    return np.asarray(t.detach().numpy())


def _eq(got, want, rtol=1e-5, atol=1e-5):
    g = _np(got)
    w = _np(want) if hasattr(want, "detach") else np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


def _randn(T, *shape, seed=0, grad=False):
    return T.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32),
                    requires_grad=grad)


def _torch_ref(fn, *arrays):
    """``fn`` run by torch on the same arrays (the values an original compared across devices)."""
    import torch
    return fn(torch, *[torch.tensor(a) for a in arrays]).detach().numpy()


# ==== pooling ====================================================================================
def test_AvgPool2d_ceil_mode(T):
    # TestPoolingNN.test_AvgPool2d_ceil_mode (gh-36977): a window that starts in the padding past
    # the end gives no NaN
    x = 10 * _randn(T, 1, 4, 4, 4)
    kw = dict(ceil_mode=True, count_include_pad=True, kernel_size=(1, 2), padding=(0, 1), stride=2)
    y = T.nn.functional.avg_pool2d(x, **kw)
    assert not T.isnan(y).any()
    _eq(y, _torch_ref(lambda L, a: L.nn.functional.avg_pool2d(a, **kw), _np(x)))
    kw = dict(ceil_mode=True, count_include_pad=False, kernel_size=(1, 2), padding=(0, 1), stride=2)
    _eq(T.nn.functional.avg_pool2d(x, **kw),
        _torch_ref(lambda L, a: L.nn.functional.avg_pool2d(a, **kw), _np(x)))


def test_AvgPool1d_ceil_mode(T):
    # TestPoolingNN.test_AvgPool1d_ceil_mode
    x = 10 * _randn(T, 1, 4, 4)
    kw = dict(ceil_mode=True, count_include_pad=True, kernel_size=1, stride=2)
    y = T.nn.functional.avg_pool1d(x, **kw)
    assert not T.isnan(y).any()
    _eq(y, _torch_ref(lambda L, a: L.nn.functional.avg_pool1d(a, **kw), _np(x)))
    kw = dict(ceil_mode=True, count_include_pad=True, kernel_size=2, padding=1, stride=2)
    y = T.nn.functional.avg_pool1d(x, **kw)
    assert not T.isnan(y).any()
    _eq(y, _torch_ref(lambda L, a: L.nn.functional.avg_pool1d(a, **kw), _np(x)))


@pytest.mark.parametrize("mod,shape,size", [
    ("AdaptiveAvgPool1d", (1, 1, 1), (-1,)), ("AdaptiveAvgPool2d", (1, 1, 1, 1), (-1, 0)),
    ("AdaptiveAvgPool3d", (1, 1, 1, 1, 1), (-1, 0, 2)), ("AdaptiveMaxPool1d", (1, 1, 1), (-1,)),
    ("AdaptiveMaxPool2d", (1, 1, 1, 1), (-1, 0)), ("AdaptiveMaxPool3d", (1, 1, 1, 1, 1), (-1, 0, 2))])
def test_adaptive_pool_invalid(T, mod, shape, size):
    # TestPoolingNNDeviceType.test_adaptive_pool_invalid: a negative output size is a RuntimeError
    with pytest.raises(RuntimeError):
        getattr(T.nn, mod)(size)(_randn(T, *shape))


def test_max_pool1d_invalid_output_size(T):
    # TestPoolingNNDeviceType.test_max_pool1d_invalid_output_size
    with pytest.raises(RuntimeError, match="output size"):
        T.nn.functional.max_pool1d(_randn(T, 1, 1, 2), 20)


def test_MaxPool2d_indices(T):
    # TestPoolingNN.test_MaxPool2d_indices: indices are flat offsets into each (H, W) plane, int64,
    # and max_unpool2d puts the maxima back there
    x = _randn(T, 2, 3, 4, 6)
    v, i = T.nn.functional.max_pool2d(x, 2, return_indices=True)
    assert i.dtype == T.int64
    xn = _np(x).reshape(2, 3, 2, 2, 3, 2).transpose(0, 1, 2, 4, 3, 5).reshape(2, 3, 2, 3, 4)
    am = xn.argmax(-1)
    rows = np.arange(2)[:, None] * 2 + am // 2
    cols = np.arange(3)[None, :] * 2 + am % 2
    np.testing.assert_array_equal(_np(i), rows * 6 + cols)
    _eq(v, xn.max(-1))
    u = T.nn.functional.max_unpool2d(v, i, 2)
    _eq(u.sum(), v.sum())
    assert tuple(u.shape) == (2, 3, 4, 6)


def test_max_pool2d_dilation_indices(T):
    # TestPoolingNNDeviceType.test_max_pool2d_indices / dilation cases against torch's values
    x = _randn(T, 1, 2, 7, 7, grad=True)
    v, i = T.nn.functional.max_pool2d(x, 3, stride=2, dilation=2, padding=1, return_indices=True)
    ref_v = _torch_ref(lambda L, a: L.nn.functional.max_pool2d(a, 3, 2, 1, 2), _np(x))
    ref_i = _torch_ref(lambda L, a: L.nn.functional.max_pool2d(a, 3, 2, 1, 2, return_indices=True)[1],
                       _np(x))
    _eq(v, ref_v)
    np.testing.assert_array_equal(_np(i), ref_i)
    v.sum().backward()
    want = np.zeros((2, 49), np.float32)
    for c in range(2):
        np.add.at(want[c], ref_i[0, c].ravel(), 1.0)
    _eq(x.grad, want.reshape(1, 2, 7, 7))


def test_AvgPool3d_backward_after_cat_dim1(T):
    # TestPoolingNN.test_AvgPool3d_backward_after_cat_dim1: a non-contiguous grad (a slice of a
    # cat along dim 1) back through avg_pool3d is the contiguous grad's result
    x = _randn(T, 1, 3, 4, 4, 4, grad=True)
    y = T.nn.functional.avg_pool3d(x, kernel_size=3, padding=1, stride=2)
    g = _randn(T, *y.shape, seed=1)
    gcat = T.cat([g, g], dim=1)[:, ::2]      # every other channel: a strided view of the cat
    (g1,) = T.autograd.grad(y, x, gcat, retain_graph=True)
    (g2,) = T.autograd.grad(y, x, gcat.contiguous())
    _eq(g1, g2)


def test_pool3d_size_one_feature_dim(T):
    # TestPoolingNNDeviceType.test_pool3d_size_one_feature_dim: odd strides on a size-1 dim
    x = _randn(T, 7, 1, 5, 3, 2)
    y = x.as_strided(x.size(), [30, 1234, 6, 2, 1])
    yc = y.contiguous()
    F = T.nn.functional
    for fn in (lambda t: F.max_pool3d(t, (5, 1, 1), stride=(5, 1, 1)),
               lambda t: F.avg_pool3d(t, (5, 1, 1), stride=(5, 1, 1))):
        _eq(fn(y), fn(yc))
    _eq(F.max_pool3d(y, (5, 1, 1), stride=(5, 1, 1)), _np(yc).max(2, keepdims=True))
    _eq(F.avg_pool3d(y, (5, 1, 1), stride=(5, 1, 1)), _np(yc).mean(2, keepdims=True))


# ==== convolution ================================================================================
def test_conv2d_valid_padding(T):
    # TestConvolutionNNDeviceType.test_conv2d_valid_padding
    x = _randn(T, 1, 1, 1, 10)
    y = _randn(T, 1, 1, 1, 4, seed=1)
    _eq(T.nn.functional.conv2d(x, y, padding="valid"), T.nn.functional.conv2d(x, y))


@pytest.mark.parametrize("depth_multiplier", [1, 2])
def test_Conv2d_depthwise_naive_groups(T, depth_multiplier):
    # TestConvolutionNNDeviceType.test_Conv2d_depthwise_naive_groups: a groups=2 conv equals two
    # one-group convs on each half, outputs and every grad
    T.manual_seed(0)
    m = T.nn.Conv2d(2, 2 * depth_multiplier, kernel_size=3, groups=2)
    i = (_randn(T, 2, 2, 6, 6) / 2).requires_grad_()
    output = m(i)
    grad_output = _randn(T, 2, 2 * depth_multiplier, 4, 4, seed=1) / 2
    output.backward(grad_output)
    off = depth_multiplier
    halves = []
    for sl, ch in ((slice(None, off), slice(None, 1)), (slice(off, None), slice(1, None))):
        mh = T.nn.Conv2d(1, depth_multiplier, kernel_size=3)
        with T.no_grad():
            mh.weight.copy_(m.weight[sl])
            mh.bias.copy_(m.bias[sl])
        ih = i.detach()[:, ch].clone().requires_grad_()
        oh = mh(ih)
        oh.backward(grad_output[:, sl].contiguous())
        halves.append((oh, ih, mh))
    _eq(output, T.cat([h[0] for h in halves], 1))
    _eq(i.grad, T.cat([h[1].grad for h in halves], 1))
    _eq(m.bias.grad, T.cat([h[2].bias.grad for h in halves], 0))
    _eq(m.weight.grad, T.cat([h[2].weight.grad for h in halves], 0))


def test_conv_empty_input(T):
    # TestConvolutionNNDeviceType.test_conv_empty_input: an empty batch convolves to an empty
    # batch, with zero weight grads
    m = T.nn.Conv2d(3, 4, 3)
    x = T.zeros(0, 3, 5, 5, requires_grad=True)
    y = m(x)
    assert tuple(y.shape) == (0, 4, 3, 3)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 5, 5)
    _eq(m.weight.grad, np.zeros((4, 3, 3, 3), np.float32))
    mt = T.nn.ConvTranspose2d(3, 4, 3)
    assert tuple(mt(T.zeros(0, 3, 5, 5)).shape) == (0, 4, 7, 7)


@pytest.mark.parametrize("transposed", [False, True])
def test_Conv2d_size_1_kernel(T, transposed):
    # TestConvolutionNNDeviceType.test_Conv2d_size_1_kernel / test_ConvTranspose2d_size_1_kernel
    # (cudnn against the CPU kernel there; an einsum here)
    T.manual_seed(0)
    conv = (T.nn.ConvTranspose2d if transposed else T.nn.Conv2d)(3, 3, kernel_size=1)
    x = _randn(T, 2, 3, 5, 5, grad=True)
    y = conv(x)
    g = _randn(T, *y.shape, seed=1)
    y.backward(g)
    w = _np(conv.weight)[:, :, 0, 0]
    w = w.T if transposed else w          # ConvTranspose weights are (in, out)
    xn, gn = _np(x), _np(g)
    _eq(y, np.einsum("oc,nchw->nohw", w, xn) + _np(conv.bias)[None, :, None, None])
    _eq(x.grad, np.einsum("oc,nohw->nchw", w, gn))
    wg = np.einsum("nohw,nchw->oc", gn, xn)
    _eq(conv.weight.grad[:, :, 0, 0], wg.T if transposed else wg, rtol=1e-4, atol=1e-4)
    _eq(conv.bias.grad, gn.sum((0, 2, 3)), rtol=1e-4, atol=1e-4)


def test_ConvTranspose1d_output_size(T):
    # TestConvolutionNN.test_ConvTranspose2d_output_size (1-d): output_size picks among the
    # valid sizes; outside them ValueError
    m = T.nn.ConvTranspose1d(3, 4, 3, stride=2)
    x = _randn(T, 1, 3, 5)
    assert tuple(m(x).shape) == (1, 4, 11)
    assert tuple(m(x, output_size=[12]).shape) == (1, 4, 12)
    assert tuple(m(x, output_size=(1, 4, 12)).shape) == (1, 4, 12)
    with pytest.raises(ValueError, match="requested an output size"):
        m(x, output_size=[13])


def test_Conv2d_module_same_padding(T):
    # TestConvolutionNN.test_Conv2d_module_same_padding
    x = _randn(T, 1, 1, 9, 20)
    module = T.nn.Conv2d(1, 1, kernel_size=(5, 10), padding="same")
    _eq(module(x), T.nn.functional.conv2d(x, module.weight, module.bias, padding="same"))
    module = T.nn.Conv2d(1, 1, kernel_size=(3, 4), padding="same", dilation=(1, 2))
    _eq(module(x), T.nn.functional.conv2d(x, module.weight, module.bias, padding="same",
                                          dilation=(1, 2)))
    for mode in ("reflect", "replicate", "circular"):
        module = T.nn.Conv2d(1, 1, kernel_size=(3, 4), padding="same", padding_mode=mode)
        x_padded = T.nn.functional.pad(x, [1, 2, 1, 1], mode=mode)
        expect = T.nn.functional.conv2d(x_padded, module.weight, module.bias, padding="valid")
        _eq(module(x), expect)
        assert tuple(expect.shape) == tuple(x.shape)
    with pytest.raises(ValueError, match="Invalid padding string"):
        T.nn.Conv2d(3, 33, kernel_size=10, padding="foo")
    with pytest.raises(ValueError, match="padding='same'"):
        T.nn.Conv2d(3, 33, kernel_size=10, padding="same", stride=2)
    with pytest.raises(ValueError, match="padding='same'"):
        T.nn.Conv2d(3, 33, kernel_size=10, padding="same", stride=(1, 3))


def test_Conv3d_module_same_padding(T):
    # TestConvolutionNN.test_Conv3d_module_same_padding
    x = _randn(T, 1, 1, 4, 5, 6)
    module = T.nn.Conv3d(1, 1, kernel_size=(2, 3, 4), padding="same", dilation=(3, 2, 1))
    _eq(module(x), T.nn.functional.conv3d(x, module.weight, module.bias, padding="same",
                                          dilation=(3, 2, 1)))
    for mode in ("reflect", "replicate", "circular"):
        module = T.nn.Conv3d(1, 1, kernel_size=(2, 3, 4), padding="same", padding_mode=mode)
        x_padded = T.nn.functional.pad(x, [1, 2, 1, 1, 0, 1], mode=mode)
        expect = T.nn.functional.conv3d(x_padded, module.weight, module.bias, padding="valid")
        _eq(module(x), expect)
        assert tuple(expect.shape) == tuple(x.shape)
    with pytest.raises(ValueError, match="Invalid padding string"):
        T.nn.Conv3d(3, 33, kernel_size=10, padding="foo")
    with pytest.raises(ValueError, match="padding='same'"):
        T.nn.Conv3d(3, 33, kernel_size=10, padding="same", stride=2)
