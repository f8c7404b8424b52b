"""Round 27: more of PyTorch's test/nn/test_convolution.py and test/nn/test_pooling.py. Their named
tests are ported already (test_nn_files_ported_layers.py, test_nn_files_ported_more.py,
test_pool_conv_ported_round10.py); these cases carry the same checks into the corners those ports
skipped: groups with dilation and strides, transposed convolutions with groups/dilation/
output_padding/output_size, 'same' padding's asymmetric warning, non-zero padding modes, double
backward; pooling's ceil_mode windows over the padding, count_include_pad and divisor_override,
NaN/-inf windows, adaptive pooling with non-divisible and growing sizes, LPPool (also p=inf),
max_pool/max_unpool round trips and their errors. Value cases run the same program with torch 2.13
and tracegrad (``same_outcome``: values, dtypes, shapes, gradients; or the same exception class);
error cases run under the ``T`` fixture with torch's words. Each case names its original."""

import numpy as np
import pytest
from _nn_files_helpers import warning_texts
from parity import outcome_params, same_outcome


def _r(T, *shape, seed=0, dtype="float32", grad=False):
    """A fixed normal draw (both libraries see the same values)."""
    return T.tensor(np.random.RandomState(seed).standard_normal(shape).astype(dtype), requires_grad=grad)


def _with_grads(T, fn, *xs):
    """``fn(*xs)``'s outputs, then the gradients of a fixed weighted sum of its float outputs
    with respect to each ``xs`` that requires grad."""
    out = fn(*xs)
    outs = out if isinstance(out, tuple) else (out,)
    floats = [o for o in outs if o.dtype.is_floating_point or o.dtype.is_complex]
    loss = sum((o.abs() if o.dtype.is_complex else o * _r(T, *o.shape, seed=9, dtype=str(o.dtype).split(".")[-1]))
               .sum() for o in floats)
    return outs + T.autograd.grad(loss, [x for x in xs if x.requires_grad])


def _F(T):
    return T.nn.functional


# ==== test/nn/test_convolution.py: values and gradients ============================================
def _conv_groups():
    # TestConvolutionNNDeviceType.test_Conv2d_naive_groups / test_Conv3d_groups_wbias /
    # TestConvolutionNN.test_Conv2d_OneDNN (groups with dilation): groups, dilation, strides and
    # padding at once, per dim different; input, weight and bias gradients
    def fn(T):
        return _with_grads(T, lambda x, w, b: _F(T).conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(2, 1),
                                                           groups=2),
                           _r(T, 2, 4, 7, 6, grad=True), _r(T, 6, 2, 3, 2, seed=1, grad=True),
                           _r(T, 6, seed=2, grad=True))
    return fn


def _conv_transpose_groups():
    # TestConvolutionNNDeviceType.test_conv_backend (its transposed, dilated, grouped variants) /
    # test_group_convTranspose_empty's module with values: output_padding below max(stride, dilation)
    def fn(T):
        return _with_grads(T, lambda x, w, b: _F(T).conv_transpose2d(x, w, b, stride=(3, 2), padding=(1, 0),
                                                                     output_padding=(2, 1), groups=2, dilation=(1, 2)),
                           _r(T, 2, 4, 3, 4, grad=True), _r(T, 4, 3, 3, 2, seed=1, grad=True),
                           _r(T, 6, seed=2, grad=True))
    return fn


def _same_module_circular(T):
    # TestConvolutionNN.test_Conv2d_module_same_padding (padding_mode != 'zeros', even kernel and
    # dilation 3 in one dim: the odd padding element goes on the right)
    m = T.nn.Conv2d(2, 2, (2, 3), padding="same", dilation=(3, 1), padding_mode="circular")
    with T.no_grad():
        m.weight.copy_(_r(T, *m.weight.shape, seed=3))
        m.bias.copy_(_r(T, 2, seed=4))
    return _with_grads(T, m, _r(T, 1, 2, 5, 5, grad=True))


def _complex_same(T):
    # TestConvolutionNNDeviceType.test_conv2d_same_padding (cfloat): values and gradients of |y|
    x = T.complex(_r(T, 1, 2, 4, 5), _r(T, 1, 2, 4, 5, seed=3)).requires_grad_()
    w = T.complex(_r(T, 3, 2, 2, 3, seed=1), _r(T, 3, 2, 2, 3, seed=4)).requires_grad_()
    return _with_grads(T, lambda x, w: _F(T).conv2d(x, w, padding="same"), x, w)


def _transpose_output_size(T):
    # TestConvolutionNN.test_ConvTranspose2d_output_size with dilation and groups: output_size picks
    # the output_padding (values and gradients), unbatched input too
    m = T.nn.ConvTranspose2d(4, 2, 3, stride=3, padding=1, dilation=2, groups=2)
    with T.no_grad():
        m.weight.copy_(_r(T, *m.weight.shape, seed=1))
        m.bias.copy_(_r(T, 2, seed=2))
    res = _with_grads(T, lambda x: m(x, output_size=[10, 11]), _r(T, 1, 4, 3, 3, grad=True))
    return res + (m(_r(T, 4, 3, 3), output_size=(1, 2, 9, 10)).shape,)


CONV_CASES = {
    "groups_dilation_2d": _conv_groups(),
    "transposed_groups_dilation_2d": _conv_transpose_groups(),
    "same_module_circular_dilated": _same_module_circular,
    "complex_same": _complex_same,
    "transposed_output_size": _transpose_output_size,
}


@pytest.mark.parametrize("fn", outcome_params(CONV_CASES))
def test_conv_values_match_torch(fn):
    same_outcome(fn)


# ==== test/nn/test_convolution.py: warnings, attributes and errors ==================================
def _same_warnings(T, fn):
    """The warnings ``fn()`` gives with warn_always on (TORCH_WARN_ONCE then warns every time),
    without torch's "(Triggered internally at ...)" suffix."""
    old = T.is_warn_always_enabled()
    T.set_warn_always(True)
    try:
        return [(c, m.split(" (Triggered internally")[0]) for c, m in warning_texts(fn)]
    finally:
        T.set_warn_always(old)


def test_conv_same_padding_asymmetric_warns(T):
    # TestConvolutionNNDeviceType.test_conv1d_same_padding ("Dilation with asymmetric padding"):
    # torch warns (once per process) when 'same' needs more padding on one side, i.e. a dim's
    # dilation * (kernel - 1) is odd; the module with padding_mode='zeros' goes through it too
    F = T.nn.functional
    warn = [("UserWarning", "Using padding='same' with even kernel lengths and odd dilation may require a "
                            "zero-padded copy of the input be created")]
    assert _same_warnings(T, lambda: F.conv1d(_r(T, 1, 2, 7), _r(T, 3, 2, 4), padding="same")) == warn
    assert _same_warnings(T, lambda: F.conv2d(_r(T, 1, 1, 5, 5), _r(T, 1, 1, 3, 2), padding="same",
                                              dilation=(2, 3))) == warn
    assert _same_warnings(T, lambda: T.nn.Conv2d(1, 1, (3, 4), padding="same")(_r(T, 1, 1, 5, 5))) == warn
    # symmetric: odd kernels, or an even kernel with an even dilation; an explicit pad (reflect)
    assert _same_warnings(T, lambda: F.conv1d(_r(T, 1, 2, 7), _r(T, 3, 2, 4), padding="same", dilation=2)) == []
    assert _same_warnings(T, lambda: F.conv2d(_r(T, 1, 1, 5, 5), _r(T, 1, 1, 3, 3), padding="same")) == []
    assert _same_warnings(T, lambda: T.nn.Conv2d(1, 1, (3, 4), padding="same", padding_mode="reflect")(
        _r(T, 1, 1, 5, 5))) == []


def test_conv_reversed_padding_repeated_twice(T):
    # TestConvolutionNN.test_Conv{1,2,3}d_module_same_padding: torch's modules pad a non-zero
    # padding_mode with F.pad(input, self._reversed_padding_repeated_twice); subclasses that
    # override _conv_forward read it the same way
    assert list(T.nn.Conv2d(1, 1, (3, 4), padding="same", dilation=(1, 3))._reversed_padding_repeated_twice) == \
        [4, 5, 1, 1]
    assert list(T.nn.Conv3d(1, 1, (2, 3, 1), padding=(1, 2, 0))._reversed_padding_repeated_twice) == \
        [0, 0, 2, 2, 1, 1]
    assert list(T.nn.Conv1d(1, 1, 3, padding="valid")._reversed_padding_repeated_twice) == [0, 0]

    class Padded(T.nn.Conv1d):
        def _conv_forward(self, input, weight, bias):
            padded = T.nn.functional.pad(input, self._reversed_padding_repeated_twice, mode="constant", value=1.0)
            return T.nn.functional.conv1d(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
    m = Padded(1, 1, 4, padding="same", bias=False)
    with T.no_grad():
        m.weight.fill_(1.0)
    assert m(T.zeros(1, 1, 5)).tolist() == [[[1.0, 0.0, 0.0, 1.0, 2.0]]]


def test_conv_transpose_errors(T):
    # TestConvolutionNN.test_ConvTranspose2d_output_size / test_ConvTranspose3d_correct_output_size /
    # test_conv_padding_mode: output_padding and output_size limits, padding that leaves no output
    F, nn = T.nn.functional, T.nn
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(_r(T, 1, 2, 3, 3), _r(T, 2, 2, 3, 3), stride=2, output_padding=2)
    assert F.conv_transpose1d(_r(T, 1, 2, 3), _r(T, 2, 2, 3), dilation=3, output_padding=2).shape == (1, 2, 11)
    with pytest.raises(RuntimeError, match=r"Given input size per channel: \(1 x 2\). Calculated output size per "
                                           r"channel: \(1 x -1\). Output size is too small"):
        F.conv_transpose1d(_r(T, 1, 1, 2), _r(T, 1, 1, 2), padding=2)
    with pytest.raises(RuntimeError, match=r"Calculated output size per channel: \(3 x 0\). Output size is too small"):
        F.conv_transpose2d(_r(T, 1, 1, 2, 3), _r(T, 1, 1, 2, 2), padding=(0, 2))
    with pytest.raises(ValueError, match="for 3D input, output_size must have 1 or 3 elements"):
        nn.ConvTranspose1d(2, 2, 3, stride=2)(_r(T, 1, 2, 4), output_size=(1, 9))
    with pytest.raises(ValueError, match=r"valid sizes range from \[4, 4, 4\] to \[5, 5, 5\]"):
        nn.ConvTranspose3d(1, 1, 2, stride=2)(_r(T, 1, 1, 2, 2, 2), output_size=(4, 4, 6))
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose1d'):
        nn.ConvTranspose1d(1, 1, 3, padding_mode="circular")
    with pytest.raises(TypeError):
        F.conv_transpose2d(_r(T, 1, 1, 3, 3), _r(T, 1, 1, 2, 2), padding="same")


def test_conv_padding_and_channel_errors(T):
    # TestConvolutionNN.test_Conv2d_module_same_padding / test_conv_padding_mode /
    # test_conv_invalid_groups / test_mismatch_shape_conv2d, for the functional forms and the
    # padding modes that cannot pad the input
    F, nn = T.nn.functional, T.nn
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided convolutions"):
        F.conv2d(_r(T, 1, 1, 5, 5), _r(T, 1, 1, 3, 3), stride=2, padding="same")
    with pytest.raises(RuntimeError, match="Invalid padding string: 'foo'"):
        F.conv1d(_r(T, 1, 1, 5), _r(T, 1, 1, 3), padding="foo")
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        nn.Conv1d(1, 1, 3, padding=3, padding_mode="reflect")(_r(T, 1, 1, 3))
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once"):
        nn.Conv1d(1, 1, 3, padding=4, padding_mode="circular")(_r(T, 1, 1, 3))
    with pytest.raises(RuntimeError, match=r"Given groups=2, weight of size \[4, 1, 3, 3\], expected input\[1, 3, 5, "
                                           r"5\] to have 2 channels, but got 3 channels instead"):
        F.conv2d(_r(T, 1, 3, 5, 5), _r(T, 4, 1, 3, 3), groups=2)
    with pytest.raises(RuntimeError, match=r"Given transposed=1, weight of size \[2, 2, 3, 3\], expected "
                                           r"input\[1, 3, 4, 4\] to have 2 channels"):
        F.conv_transpose2d(_r(T, 1, 3, 4, 4), _r(T, 2, 2, 3, 3))
    with pytest.raises(RuntimeError, match="expected weight to be divisible by 3 at dimension 0"):
        F.conv_transpose2d(_r(T, 1, 4, 3, 3), _r(T, 4, 1, 3, 3), groups=3)
    with pytest.raises(RuntimeError, match=r"expected bias to be 1-dimensional with 4 elements, but got bias of size "
                                           r"\[3\] instead"):
        F.conv2d(_r(T, 1, 2, 5, 5), _r(T, 4, 2, 3, 3), _r(T, 3))
    with pytest.raises(RuntimeError, match="bias type"):
        F.conv1d(_r(T, 1, 1, 5), _r(T, 1, 1, 3), _r(T, 1, dtype="float64"))
    with pytest.raises(RuntimeError, match=r"Kernel size: \(7\). Kernel size can't be greater than actual input size"):
        F.conv1d(_r(T, 1, 1, 5), _r(T, 1, 1, 3), dilation=3)
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.ConvTranspose2d(4, 3, 3, groups=2)


# ==== test/nn/test_pooling.py: values, indices and gradients =====================================
def _pool(fn_name, x_shape, dtype="float32", **kw):
    def fn(T):
        pool = getattr(_F(T), fn_name)
        return _with_grads(T, lambda x: pool(x, **kw), _r(T, *x_shape, dtype=dtype, grad=True))
    return fn


def _nan_inf_windows(T):
    # TestPoolingNNDeviceType.test_max_pool_nan_inf with partly NaN / -inf / +inf windows: a NaN is
    # the maximum (its index is returned and gets the gradient), an all -inf window gives -inf
    x1 = T.tensor([[[1.0, float("nan"), 3.0, 2.0, float("-inf"), float("-inf")]]], requires_grad=True)
    x2 = T.tensor([[[[float("-inf"), float("-inf"), 1.0], [float("inf"), float("nan"), 2.0],
                     [0.0, float("-inf"), float("nan")]]]], requires_grad=True)
    F = _F(T)
    return (_with_grads(T, lambda x: F.max_pool1d(x, 2, stride=2, return_indices=True), x1)
            + _with_grads(T, lambda x: F.max_pool2d(x, 2, stride=1, return_indices=True), x2))


def _ties(T):
    # TestPoolingNNDeviceType._test_maxpool_indices with equal values in overlapping windows: the
    # first maximum's index, and the gradient reaches only it
    x = T.tensor([[[[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0]]]], requires_grad=True)
    return _with_grads(T, lambda x: _F(T).max_pool2d(x, 2, stride=1, return_indices=True), x)


def _lp_pool(T):
    # TestPoolingNN / common_nn's LPPool1d cases (norm type 2 and torch's +-inf, the max (min) of
    # |x|; a ceil_mode window past the end), the module, and an all-zero window (torch's gradient there)
    F, res = _F(T), ()
    for p in (2, float("inf"), -float("inf")):
        res += _with_grads(T, lambda x: F.lp_pool1d(x, p, 2, stride=2, ceil_mode=True), _r(T, 1, 2, 5, grad=True))
    res += _with_grads(T, T.nn.LPPool1d(2, 2, stride=2, ceil_mode=True), _r(T, 1, 2, 5, seed=1, grad=True))
    return res + _with_grads(T, lambda x: F.lp_pool1d(x, 2, 2, stride=2, ceil_mode=True),
                             T.zeros(1, 2, 5, requires_grad=True))


def _unpool_overlapping(T):
    # TestPoolingNN.test_max_unpool / test_MaxUnpool2d_output_size with overlapping padded windows:
    # the unpooled values, and the gradient (torch's gather at every index, duplicates included)
    F = _F(T)
    x = _r(T, 1, 2, 5, 5)
    o, i = F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
    return _with_grads(T, lambda o: F.max_unpool2d(o, i, 3, stride=2, padding=1, output_size=x.shape[-2:]),
                       o.detach().requires_grad_()) + (i,)


def _unpool_3d_ceil(T):
    # TestPoolingNN.test_max_unpool (3-D) after a ceil_mode pool: output_size with the batch and
    # channel sizes in front, every maximum back in place
    x = _r(T, 1, 1, 3, 4, 5)
    o, i = _F(T).max_pool3d(x, 2, stride=2, ceil_mode=True, return_indices=True)
    u = T.nn.MaxUnpool3d(2, stride=2)(o, i, output_size=(1, 1, 3, 4, 5))
    return u, (u != 0).sum(), T.equal(u[u != 0], x[u != 0])


def _unpool_modules(T):
    # TestPoolingNNDeviceType.test_MaxUnpool_zero_batch_dim's modules with values: 1-D round trip
    # with output_size=input.size() and a gradient, an unbatched 2-D round trip
    pool, unpool = T.nn.MaxPool1d(2, stride=2, return_indices=True), T.nn.MaxUnpool1d(2, stride=2)
    x = T.tensor([[[1.0, 2, 3, 4, 5, 6, 7, 8]]], requires_grad=True)
    o, i = pool(x)
    u = unpool(o, i, output_size=x.size())
    u.backward(T.arange(8.0).reshape(1, 1, 8))
    o2, i2 = T.nn.MaxPool2d(2, return_indices=True)(_r(T, 2, 4, 4))
    return u, x.grad, i, T.nn.MaxUnpool2d(2)(o2, i2)


def _unpool_double_backward(T):
    # TestPoolingNN.test_max_unpool's gradcheck, one order up: the gradient of the gradient
    o, i = _F(T).max_pool2d(_r(T, 1, 1, 4, 4, dtype="float64"), 2, return_indices=True)
    o = o.detach().requires_grad_()
    u = _F(T).max_unpool2d(o, i, 2)
    g = _r(T, *u.shape, seed=4, dtype="float64").requires_grad_()
    (go,) = T.autograd.grad(u, o, g, create_graph=True)
    return go, T.autograd.grad((go ** 2).sum(), g)[0]


POOL_CASES = {
    # TestPoolingNNDeviceType.test_pooling_shape with values: ceil_mode windows that start in the
    # left padding or the input (kept) and in the right padding (dropped), indices and gradients
    "max_pool1d_ceil_dilated": _pool("max_pool1d", (2, 3, 10), kernel_size=3, stride=3, padding=1, dilation=2,
                                     ceil_mode=True, return_indices=True),
    "max_pool2d_ceil_padded": _pool("max_pool2d", (1, 2, 5, 5), kernel_size=2, stride=2, padding=1, ceil_mode=True,
                                    return_indices=True),
    # TestAvgPool.test_avg_pool{1,2,3}d_ceil_mode with padding: the divisor of windows that
    # overhang the input (count_include_pad counts the padding, not the overhang past it)
    "avg_pool1d_ceil_exclude_pad": _pool("avg_pool1d", (1, 1, 5), kernel_size=2, stride=2, padding=1, ceil_mode=True,
                                         count_include_pad=False),
    "avg_pool2d_ceil_include_pad": _pool("avg_pool2d", (1, 2, 5, 6), kernel_size=3, stride=2, padding=1,
                                         ceil_mode=True, count_include_pad=True),
    "avg_pool2d_ceil_exclude_pad": _pool("avg_pool2d", (1, 2, 5, 6), kernel_size=3, stride=2, padding=1,
                                         ceil_mode=True, count_include_pad=False),
    # TestAvgPool.test_doubletensor_avg_pool{2,3}d_with_divisor with padding and ceil_mode
    "avg_pool2d_divisor_padded": _pool("avg_pool2d", (1, 1, 4, 4), kernel_size=3, stride=1, padding=1,
                                       divisor_override=2, count_include_pad=False),
    "avg_pool3d_divisor_ceil": _pool("avg_pool3d", (1, 1, 3, 4, 5), kernel_size=2, stride=2, padding=1,
                                     ceil_mode=True, divisor_override=3),
    # TestPoolingNN.test_adaptive_pooling_* with sizes that do not divide the input (overlapping
    # windows) and sizes larger than the input
    "adaptive_avg_pool1d_7_to_4": _pool("adaptive_avg_pool1d", (2, 3, 7), output_size=4),
    "adaptive_avg_pool2d_grow": _pool("adaptive_avg_pool2d", (1, 2, 3, 5), output_size=(5, 3)),
    "adaptive_max_pool2d_uneven": _pool("adaptive_max_pool2d", (1, 2, 5, 7), output_size=(3, 4),
                                        return_indices=True),
    "max_pool_nan_inf_windows": _nan_inf_windows,
    "max_pool_ties": _ties,
    "lp_pool": _lp_pool,
    "max_unpool_overlapping": _unpool_overlapping,
    "max_unpool_3d_ceil": _unpool_3d_ceil,
    "max_unpool_modules": _unpool_modules,
    "max_unpool_double_backward": _unpool_double_backward,
}


@pytest.mark.parametrize("fn", outcome_params(POOL_CASES))
def test_pool_values_match_torch(fn):
    same_outcome(fn)


# ==== test/nn/test_pooling.py: graph facts and errors =============================================
def test_max_unpool_graph(T):
    # TestPoolingNN.test_max_unpool: torch's nodes (a 1-D unpool is a squeezed 2-D one) and its
    # saved indices, whose in-place edit before backward raises (as
    # TestPoolingNNDeviceType._test_maxpool_indices checks for the pool)
    F = T.nn.functional
    names = []
    for nd in (1, 2, 3):
        o, i = getattr(F, f"max_pool{nd}d")(_r(T, 1, 1, *([4] * nd), grad=True), 2, return_indices=True)
        names.append(type(getattr(F, f"max_unpool{nd}d")(o, i, 2).grad_fn).__name__)
    assert names == ["SqueezeBackward1", "MaxUnpool2DBackward0", "MaxUnpool3DBackward0"]
    o, i = F.max_pool2d(_r(T, 1, 1, 4, 4), 2, return_indices=True)
    u = F.max_unpool2d(o.requires_grad_(), i, 2)
    assert "_saved_indices" in dir(u.grad_fn) and T.equal(u.grad_fn._saved_indices, i)
    i.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        u.sum().backward()


def test_max_unpool_errors(T):
    # TestPoolingNN.test_MaxUnpool2d_output_size / test_max_unpool3d_input_check /
    # TestPoolingNNDeviceType.test_MaxUnpool_index_errors: indices dtype and shape, output_size
    # length and range, and an index past the output (a padded 1-D pool's unpool without output_size)
    F = T.nn.functional
    o, i = F.max_pool2d(_r(T, 1, 1, 4, 4), 2, return_indices=True)
    with pytest.raises(RuntimeError, match="elements in indices should be type int64|expected indices of dtype int64"):
        F.max_unpool2d(o, i.int(), 2)
    with pytest.raises(RuntimeError):
        F.max_unpool2d(o, i.float(), 2)
    with pytest.raises(RuntimeError):
        F.max_unpool2d(o, i[..., :1], 2)
    with pytest.raises(ValueError, match="output_size should be a sequence containing 2 or 4 elements"):
        F.max_unpool2d(o, i, 2, output_size=(4, 4, 4))
    with pytest.raises(ValueError, match=r"invalid output_size .* \(dim 0 must be between 2 and 6\)"):
        F.max_unpool2d(o, i, 2, output_size=(6, 4))
    o, i = F.max_pool1d(_r(T, 2, 1, 7), 2, stride=2, padding=1, return_indices=True)
    with pytest.raises(RuntimeError, match=r"Found an invalid max index: 6 \(output volumes are of size 6x1"):
        F.max_unpool1d(o, i, 2, stride=2, padding=1)
    assert F.max_unpool1d(o, i, 2, stride=2, padding=1, output_size=[7]).shape == (2, 1, 7)
    o, i = F.max_pool3d(_r(T, 1, 1, 2, 2, 2), 2, return_indices=True)
    with pytest.raises(RuntimeError, match="Found an invalid max index: -1"):
        F.max_unpool3d(o, T.full_like(i, -1), 2)


def test_pool_argument_errors(T):
    # TestPoolingNNDeviceType.test_pool_invalid_size / test_pooling_zero_stride / test_pooling_shape:
    # padding past half the (dilated) kernel, windows that do not fit, zero kernel and dilation,
    # argument lengths, divisor_override=0 (and none on avg_pool1d), dtypes without a kernel
    F = T.nn.functional
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool2d(_r(T, 1, 1, 5, 5), 2, padding=2)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.avg_pool1d(_r(T, 1, 1, 5), 3, padding=2)
    assert F.max_pool1d(_r(T, 1, 1, 7), 2, padding=1, dilation=2).shape == (1, 1, 4)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.max_pool2d(_r(T, 1, 1, 2, 2), 3)
    with pytest.raises(RuntimeError):
        F.avg_pool3d(_r(T, 1, 1, 2, 2, 2), 3)
    with pytest.raises(RuntimeError, match="stride should not be zero"):
        F.max_pool2d(_r(T, 1, 1, 4, 4), 0)
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        F.max_pool2d(_r(T, 1, 1, 4, 4), 2, dilation=0)
    with pytest.raises(RuntimeError, match="stride"):
        F.max_pool2d(_r(T, 1, 1, 4, 4), 2, stride=(1, 1, 1))
    with pytest.raises(RuntimeError, match="kernel_size"):
        F.avg_pool2d(_r(T, 1, 1, 4, 4), (2, 2, 2))
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(_r(T, 1, 1, 4, 4), 2, divisor_override=0)
    with pytest.raises(TypeError, match="divisor_override"):
        F.avg_pool1d(_r(T, 1, 1, 4), 2, divisor_override=3)
    with pytest.raises(NotImplementedError, match="\"max_pool1d_impl\" not implemented for 'Bool'"):
        F.max_pool1d(T.tensor([[[True, False, True, True]]]), 2)
    assert F.avg_pool2d(T.ones(1, 1, 4, 4, dtype=T.int64), 2).dtype == T.int64


def test_adaptive_pool_argument_errors(T):
    # TestPoolingNN.test_adaptive_pooling_size_none / TestPoolingNNDeviceType.
    # test_adaptive_pooling_zero_batch: output sizes of the wrong length or negative, an empty
    # pooled dim
    F = T.nn.functional
    with pytest.raises(RuntimeError, match="adaptive_avg_pool2d: output_size must be 2"):
        F.adaptive_avg_pool2d(_r(T, 1, 1, 4, 4), (2, 2, 2))
    with pytest.raises(RuntimeError):
        F.adaptive_max_pool2d(_r(T, 1, 1, 4, 4), (-1, 2))
    with pytest.raises(RuntimeError, match="should contain one int"):
        F.adaptive_avg_pool1d(_r(T, 1, 1, 4), (2, 2))
    with pytest.raises(RuntimeError, match="Expected 3D or 4D tensor"):
        F.adaptive_avg_pool2d(_r(T, 4, 4), 2)
    with pytest.raises(RuntimeError):
        F.adaptive_avg_pool2d(T.randn(1, 2, 0, 3), 2)
    with pytest.raises(RuntimeError, match="Expected input to have non-zero size for non-batch dimensions"):
        F.adaptive_max_pool1d(T.randn(1, 2, 0), 2)
    assert F.adaptive_max_pool2d(_r(T, 1, 1, 4, 5), (None, 2)).shape == (1, 1, 4, 2)
