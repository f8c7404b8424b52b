"""Round 6 of PyTorch's own tests, ported: test/nn/test_pooling.py (TestPoolingNN,
TestPoolingNNDeviceType), test/nn/test_convolution.py (TestConvolutionNN,
TestConvolutionNNDeviceType), test/nn/test_dropout.py (TestDropoutNN, TestDropoutNNDeviceType)
and test/nn/test_multihead_attention.py (TestMultiheadAttentionNN), device 'cpu', float32/float64.
Each case is one small program run with torch (the oracle) and with tracegrad
(``parity.same_outcome``): equal dtypes, shapes and values (input and parameter gradients where
the program returns them), or the same builtin exception class. Weights come from a fixed numpy
stream (``fill``), never from either library's random generator, and the random layers
(dropout, fractional pooling) are checked on what does not depend on the draw: p=0/p=1, eval
mode, the kept values' scaling, and fractional pooling's ``_random_samples``. Cases earlier rounds
have (test_nn_files_ported*.py, test_nn_ported*.py) are not repeated."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")

nan, inf = float("nan"), float("inf")


def arr(*shape, seed=0, dtype="float64"):
    return np.random.RandomState(seed).standard_normal(shape).round(4).astype(dtype)


def x_(T, *shape, seed=0, dtype="float64", grad=False):
    return T.tensor(arr(*shape, seed=seed, dtype=dtype), requires_grad=grad)


def fill(T, module, seed=1, dtype="float64"):
    """``module`` in ``dtype`` with every parameter overwritten from a fixed numpy stream."""
    module = module.to(getattr(T, dtype))
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for p in module.parameters():
            p.copy_(T.tensor(rs.uniform(-0.5, 0.5, tuple(p.shape)).round(4)))
    return module


def out_and_grads(T, fn, *xs):
    """fn(*xs), then the gradient of sum(out * w) for every input requiring grad."""
    out = fn(*xs)
    first = out[0] if isinstance(out, tuple) else out
    w = T.arange(first.numel(), dtype=first.dtype).reshape(first.shape) / 5 - 1
    (first * w).sum().backward()
    return [out] + [x.grad for x in xs if isinstance(x, T.Tensor) and x.requires_grad]


def module_grads(T, m, *xs):
    out = m(*xs)
    first = out[0] if isinstance(out, tuple) else out
    w = T.arange(first.numel(), dtype=first.dtype).reshape(first.shape) / 5 - 1
    (first * w).sum().backward()
    return [out] + [p.grad for p in m.parameters()] + [x.grad for x in xs if x.requires_grad]


# ---- test_pooling.py ----------------------------------------------------------------------------------
POOL = {
    # test_max_pool1d / test_max_pool2d with dilation, padding, ceil_mode and indices
    "max_pool1d_dilation_indices": lambda T: out_and_grads(T, lambda x: T.nn.functional.max_pool1d(
        x, 3, 2, 1, dilation=2, return_indices=True), x_(T, 2, 3, 9, grad=True)),
    "max_pool1d_ceil": lambda T: T.nn.functional.max_pool1d(x_(T, 1, 2, 8), 3, 2, ceil_mode=True),
    "max_pool2d_dilation_ceil": lambda T: out_and_grads(T, lambda x: T.nn.functional.max_pool2d(
        x, (2, 3), (2, 1), (1, 1), dilation=(2, 1), ceil_mode=True), x_(T, 1, 2, 6, 7, grad=True)),
    "max_pool2d_unbatched": lambda T: T.nn.functional.max_pool2d(x_(T, 2, 5, 5), 2, return_indices=True),
    "max_pool3d_indices": lambda T: T.nn.functional.max_pool3d(x_(T, 1, 1, 4, 4, 4), 2, 2, return_indices=True),
    "max_pool2d_nan_inf": lambda T: T.nn.functional.max_pool2d(T.tensor([[[[1., nan], [inf, -inf]]]]), 2),
    "max_pool2d_all_neg_inf": lambda T: T.nn.functional.max_pool2d(T.full((1, 1, 2, 2), -inf), 2, return_indices=True),
    # test_max_pool_nan_inf: with padding the padded positions never win
    "max_pool1d_pad_neg": lambda T: T.nn.functional.max_pool1d(T.full((1, 1, 3), -5.), 2, 2, 1, return_indices=True),
    # test_pooling_invalid_size / pad too large / zero stride / kernel larger than input
    "max_pool2d_pad_too_large": lambda T: T.nn.functional.max_pool2d(x_(T, 1, 1, 4, 4), 2, 2, 2),
    "avg_pool2d_pad_too_large": lambda T: T.nn.functional.avg_pool2d(x_(T, 1, 1, 4, 4), 2, 2, 2),
    "max_pool1d_zero_stride": lambda T: T.nn.functional.max_pool1d(x_(T, 1, 1, 4), 2, 0),
    "avg_pool1d_zero_stride": lambda T: T.nn.functional.avg_pool1d(x_(T, 1, 1, 4), 2, 0),
    "max_pool2d_output_too_small": lambda T: T.nn.functional.max_pool2d(x_(T, 1, 1, 2, 2), 3),
    "avg_pool2d_output_too_small": lambda T: T.nn.functional.avg_pool2d(x_(T, 1, 1, 2, 2), 3),
    "max_pool2d_wrong_rank": lambda T: T.nn.functional.max_pool2d(x_(T, 4, 4), 2),
    "max_pool1d_negative_dilation": lambda T: T.nn.functional.max_pool1d(x_(T, 1, 1, 6), 2, dilation=0),
    # test_avg_pool*: count_include_pad, divisor_override, ceil_mode without NaN
    "avg_pool2d_exclude_pad": lambda T: out_and_grads(T, lambda x: T.nn.functional.avg_pool2d(
        x, 3, 2, 1, count_include_pad=False), x_(T, 1, 2, 5, 5, grad=True)),
    "avg_pool2d_divisor_override": lambda T: out_and_grads(T, lambda x: T.nn.functional.avg_pool2d(
        x, 2, divisor_override=3), x_(T, 1, 1, 4, 4, grad=True)),
    "avg_pool2d_divisor_zero": lambda T: T.nn.functional.avg_pool2d(x_(T, 1, 1, 4, 4), 2, divisor_override=0),
    "avg_pool1d_ceil_pad": lambda T: T.nn.functional.avg_pool1d(x_(T, 1, 1, 6), 4, 3, 1, ceil_mode=True),
    "avg_pool3d_exclude_pad_ceil": lambda T: T.nn.functional.avg_pool3d(
        x_(T, 1, 1, 3, 3, 3), 2, 2, 1, ceil_mode=True, count_include_pad=False),
    "avg_pool1d_int_refused": lambda T: T.nn.functional.avg_pool1d(T.ones(1, 1, 4, dtype=T.int64), 2),
    # test_lp_pool: power average, norm_type 1 and 2, ceil_mode
    "lp_pool1d_p2": lambda T: out_and_grads(T, lambda x: T.nn.functional.lp_pool1d(x, 2, 3, 2),
                                            x_(T, 1, 2, 7, grad=True)),
    "lp_pool2d_p1": lambda T: T.nn.functional.lp_pool2d(x_(T, 1, 1, 4, 4), 1, 2),
    "lp_pool2d_p3_ceil": lambda T: T.nn.functional.lp_pool2d(x_(T, 1, 1, 5, 5).abs(), 3., (2, 2), ceil_mode=True),
    "lp_pool2d_module": lambda T: T.nn.LPPool2d(2, 2, stride=1)(x_(T, 1, 1, 3, 3)),
    # test_MaxUnpool*: indices from max_pool, output_size, bad output_size
    "max_unpool1d": lambda T: T.nn.functional.max_unpool1d(*T.nn.functional.max_pool1d(
        x_(T, 1, 1, 8), 2, return_indices=True), 2),
    "max_unpool2d_output_size": lambda T: T.nn.functional.max_unpool2d(*T.nn.functional.max_pool2d(
        x_(T, 1, 1, 5, 5), 2, return_indices=True), 2, output_size=(5, 5)),
    "max_unpool2d_bad_output_size": lambda T: T.nn.functional.max_unpool2d(*T.nn.functional.max_pool2d(
        x_(T, 1, 1, 4, 4), 2, return_indices=True), 2, output_size=(9, 9)),
    "max_unpool2d_module_grad": lambda T: out_and_grads(T, lambda v: T.nn.MaxUnpool2d(2)(
        v, T.tensor([[[[0, 3], [9, 14]]]])), x_(T, 1, 1, 2, 2, grad=True)),
    "max_unpool3d": lambda T: T.nn.functional.max_unpool3d(*T.nn.functional.max_pool3d(
        x_(T, 1, 1, 2, 4, 4), 2, return_indices=True), 2),
    # test_adaptive_pooling_*: non-divisible sizes, None entries, indices
    "adaptive_avg_pool1d_uneven": lambda T: out_and_grads(T, lambda x: T.nn.functional.adaptive_avg_pool1d(x, 3),
                                                          x_(T, 1, 2, 7, grad=True)),
    "adaptive_avg_pool2d_none": lambda T: T.nn.functional.adaptive_avg_pool2d(x_(T, 1, 1, 5, 6), (None, 4)),
    "adaptive_max_pool2d_indices": lambda T: T.nn.functional.adaptive_max_pool2d(x_(T, 1, 2, 5, 7), (2, 3), True),
    "adaptive_max_pool1d_grad": lambda T: out_and_grads(T, lambda x: T.nn.functional.adaptive_max_pool1d(x, 4),
                                                        x_(T, 1, 1, 9, grad=True)),
    "adaptive_avg_pool3d_bigger_output": lambda T: T.nn.functional.adaptive_avg_pool3d(x_(T, 1, 1, 2, 2, 2), 3),
    "adaptive_avg_pool2d_zero_output": lambda T: T.nn.functional.adaptive_avg_pool2d(x_(T, 1, 1, 4, 4), (0, 2)),
    "adaptive_max_pool2d_bad_rank": lambda T: T.nn.functional.adaptive_max_pool2d(x_(T, 4), 2),
    # test_FractionalMaxPool2d / 3d with fixed _random_samples (deterministic windows)
    "fractional_max_pool2d_samples": lambda T: T.nn.functional.fractional_max_pool2d(
        x_(T, 1, 2, 7, 7), 2, output_size=(3, 3), return_indices=True,
        _random_samples=T.tensor([[[0.1, 0.7], [0.5, 0.3]]], dtype=T.float64)),
    "fractional_max_pool2d_ratio": lambda T: T.nn.functional.fractional_max_pool2d(
        x_(T, 1, 1, 8, 8), 2, output_ratio=0.5, _random_samples=T.tensor([[[0.25, 0.75]]], dtype=T.float64)),
    "fractional_max_pool2d_grad": lambda T: out_and_grads(T, lambda x: T.nn.functional.fractional_max_pool2d(
        x, (2, 2), output_size=3, _random_samples=T.tensor([[[0.9, 0.2]]], dtype=T.float64)), x_(T, 1, 1, 6, 6, grad=True)),
    "fractional_max_pool3d_samples": lambda T: T.nn.functional.fractional_max_pool3d(
        x_(T, 1, 1, 5, 5, 5), 2, output_size=3, _random_samples=T.tensor([[[0.1, 0.5, 0.9]]], dtype=T.float64)),
    "fractional_max_pool2d_too_big_output": lambda T: T.nn.functional.fractional_max_pool2d(
        x_(T, 1, 1, 4, 4), 2, output_size=(4, 4)),
    "fractional_max_pool2d_no_size": lambda T: T.nn.functional.fractional_max_pool2d(x_(T, 1, 1, 4, 4), 2),
    # test_pooling_shape / MaxPool module properties and repr
    "maxpool2d_module_repr": lambda T: repr(T.nn.MaxPool2d(3, 2, 1, ceil_mode=True)),
    "avgpool1d_module_repr": lambda T: repr(T.nn.AvgPool1d(3, count_include_pad=False)),
    "adaptive_module_repr": lambda T: repr(T.nn.AdaptiveMaxPool2d((None, 3), return_indices=True)),
    "lppool_module_repr": lambda T: repr(T.nn.LPPool1d(2, 3)),
}


@pytest.mark.parametrize("fn", outcome_params(POOL))
def test_pooling(fn):
    same_outcome(fn)


# ---- test_convolution.py -----------------------------------------------------------------------------
CONV = {
    # test_conv_transpose with groups, dilation, output_padding (values and grads)
    "conv_transpose1d_groups_dilation": lambda T: module_grads(T, fill(T, T.nn.ConvTranspose1d(
        4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=2)), x_(T, 1, 4, 5, grad=True)),
    "conv_transpose2d_output_size": lambda T: fill(T, T.nn.ConvTranspose2d(2, 2, 3, stride=2))(
        x_(T, 1, 2, 3, 3), output_size=[8, 8]),
    "conv_transpose2d_bad_output_size": lambda T: fill(T, T.nn.ConvTranspose2d(2, 2, 3, stride=2))(
        x_(T, 1, 2, 3, 3), output_size=[10, 10]),
    "conv_transpose_output_padding_too_big": lambda T: T.nn.functional.conv_transpose1d(
        x_(T, 1, 1, 4), x_(T, 1, 1, 3, seed=2), stride=2, output_padding=2),
    "conv_transpose2d_unbatched": lambda T: fill(T, T.nn.ConvTranspose2d(2, 3, 2))(x_(T, 2, 3, 3)),
    # test_conv*_same_padding with dilation and even kernels; same with stride refused
    "conv1d_same_even_kernel_dilation": lambda T: out_and_grads(T, lambda x, w: T.nn.functional.conv1d(
        x, w, padding="same", dilation=3), x_(T, 1, 2, 9, grad=True), x_(T, 3, 2, 4, seed=3, grad=True)),
    "conv2d_same_asymmetric": lambda T: out_and_grads(T, lambda x, w: T.nn.functional.conv2d(
        x, w, padding="same", dilation=(1, 2)), x_(T, 1, 1, 5, 6, grad=True), x_(T, 2, 1, 2, 3, seed=3, grad=True)),
    "conv2d_same_stride_refused": lambda T: T.nn.functional.conv2d(x_(T, 1, 1, 5, 5), x_(T, 1, 1, 3, 3), stride=2, padding="same"),
    "conv2d_bad_padding_string": lambda T: T.nn.functional.conv2d(x_(T, 1, 1, 5, 5), x_(T, 1, 1, 3, 3), padding="full"),
    "conv3d_valid": lambda T: T.nn.functional.conv3d(x_(T, 1, 1, 3, 3, 3), x_(T, 1, 1, 2, 2, 2, seed=4), padding="valid"),
    # test_conv_modules_raise_error_on_incorrect_input_size / test_conv_shapecheck
    "conv2d_module_1d_input": lambda T: T.nn.Conv2d(1, 1, 2)(x_(T, 4, dtype="float32")),
    "conv1d_channels_mismatch": lambda T: T.nn.functional.conv1d(x_(T, 1, 3, 5), x_(T, 2, 2, 3)),
    "conv2d_kernel_too_big": lambda T: T.nn.functional.conv2d(x_(T, 1, 1, 2, 2), x_(T, 1, 1, 3, 3)),
    "conv2d_bias_wrong_size": lambda T: T.nn.functional.conv2d(x_(T, 1, 1, 4, 4), x_(T, 2, 1, 3, 3), x_(T, 3)),
    "conv2d_negative_padding": lambda T: T.nn.functional.conv2d(x_(T, 1, 1, 4, 4), x_(T, 1, 1, 2, 2), padding=-1),
    "conv2d_zero_stride": lambda T: T.nn.functional.conv2d(x_(T, 1, 1, 4, 4), x_(T, 1, 1, 2, 2), stride=0),
    "conv1d_groups_mismatch": lambda T: T.nn.functional.conv1d(x_(T, 1, 4, 5), x_(T, 3, 2, 3), groups=2),
    "conv_transpose2d_groups_mismatch": lambda T: T.nn.functional.conv_transpose2d(x_(T, 1, 3, 3, 3), x_(T, 3, 1, 2, 2), groups=2),
    "conv2d_dtype_mismatch": lambda T: T.nn.functional.conv2d(x_(T, 1, 1, 4, 4), x_(T, 1, 1, 2, 2, dtype="float32")),
    "conv2d_int_input": lambda T: T.nn.functional.conv2d(T.ones(1, 1, 3, 3, dtype=T.int64), T.ones(1, 1, 2, 2, dtype=T.int64)),
    "conv_module_bad_groups": lambda T: T.nn.Conv2d(4, 6, 3, groups=4),
    "conv_module_zero_groups": lambda T: T.nn.Conv1d(4, 4, 3, groups=0),
    "conv_module_bad_padding_mode": lambda T: T.nn.Conv1d(1, 1, 3, padding_mode="mirror"),
    "conv_module_same_stride": lambda T: T.nn.Conv1d(1, 1, 3, stride=2, padding="same"),
    # test_conv_padding_mode: reflect / replicate / circular modules (values, grads)
    **{f"conv2d_padding_mode_{m}": (lambda m: lambda T: module_grads(T, fill(T, T.nn.Conv2d(
        2, 2, 3, padding=(1, 2), padding_mode=m)), x_(T, 1, 2, 4, 5, grad=True)))(m)
       for m in ("reflect", "replicate", "circular")},
    "conv1d_circular_same": lambda T: module_grads(T, fill(T, T.nn.Conv1d(1, 2, 4, padding="same", padding_mode="circular")),
                                                   x_(T, 1, 1, 6, grad=True)),
    "conv_transpose_padding_mode_refused": lambda T: T.nn.ConvTranspose2d(1, 1, 3, padding_mode="reflect"),
    # test_Conv*_naive_groups / depthwise with multiplier / no bias
    "conv2d_depthwise_multiplier": lambda T: module_grads(T, fill(T, T.nn.Conv2d(2, 6, 3, groups=2, bias=False)),
                                                          x_(T, 1, 2, 4, 4, grad=True)),
    "conv1d_stride_dilation_grads": lambda T: module_grads(T, fill(T, T.nn.Conv1d(3, 2, 3, stride=2, dilation=2, padding=2)),
                                                           x_(T, 2, 3, 8, grad=True)),
    "conv3d_groups_bias": lambda T: module_grads(T, fill(T, T.nn.Conv3d(2, 2, 2, groups=2)), x_(T, 1, 2, 3, 3, 3, grad=True)),
    # test_conv_tbc (time, batch, channels) with padding
    "conv_tbc_pad": lambda T: out_and_grads(T, lambda x, w, b: T.conv_tbc(x, w, b, 1), x_(T, 5, 2, 3, grad=True),
                                            x_(T, 3, 3, 4, seed=5, grad=True), x_(T, 4, seed=6, grad=True)),
    # test_conv_empty_channel / zero batch
    "conv2d_zero_batch": lambda T: module_grads(T, fill(T, T.nn.Conv2d(2, 3, 2)), x_(T, 0, 2, 3, 3, grad=True)),
    "conv1d_empty_channel": lambda T: T.nn.functional.conv1d(x_(T, 1, 0, 4), x_(T, 2, 0, 2)),
    # test_conv_noncontig_weights
    "conv2d_noncontig_weight": lambda T: out_and_grads(T, lambda x, w: T.nn.functional.conv2d(x, w.transpose(2, 3)),
                                                       x_(T, 1, 2, 4, 4, grad=True), x_(T, 2, 2, 3, 2, seed=7, grad=True)),
    "conv_module_repr": lambda T: repr(T.nn.Conv2d(2, 4, (3, 1), stride=2, padding=(1, 0), dilation=2, groups=2, bias=False,
                                                   padding_mode="reflect")),
    "conv_transpose_module_repr": lambda T: repr(T.nn.ConvTranspose1d(2, 4, 3, stride=2, output_padding=1)),
}


@pytest.mark.parametrize("fn", outcome_params(CONV))
def test_convolution(fn):
    same_outcome(fn)


# ---- test_dropout.py ---------------------------------------------------------------------------------
def kept_scaled(T, out, x, p):
    """Every output element is 0 or its input over (1 - p): what dropout's draw cannot change."""
    ok = (out == 0) | ((out - x / (1 - p)).abs() < 1e-6)
    return out.shape, out.dtype, bool(ok.all())


DROPOUT = {
    # test_Dropout / test_dropout (p = 0, p = 1, eval, scaling of the kept elements)
    "dropout_p0": lambda T: out_and_grads(T, lambda x: T.nn.functional.dropout(x, 0.), x_(T, 3, 4, grad=True)),
    "dropout_p1": lambda T: out_and_grads(T, lambda x: T.nn.functional.dropout(x, 1.), x_(T, 3, 4, grad=True)),
    "dropout_eval": lambda T: T.nn.functional.dropout(x_(T, 3, 4), 0.5, training=False),
    "dropout_module_eval": lambda T: T.nn.Dropout(0.3).eval()(x_(T, 2, 5)),
    "dropout_scaling": lambda T: kept_scaled(T, T.nn.functional.dropout(x_(T, 4, 5) + 3, 0.4), x_(T, 4, 5) + 3, 0.4),
    "dropout_inplace_p1": lambda T: (lambda x: (T.nn.functional.dropout(x, 1., inplace=True), x)[1])(x_(T, 2, 3)),
    "dropout_p_negative": lambda T: T.nn.functional.dropout(x_(T, 2), -0.1),
    "dropout_p_above_one": lambda T: T.nn.Dropout(1.5),
    "dropout_int_input": lambda T: T.nn.functional.dropout(T.ones(3, dtype=T.int64), 0.5),
    "dropout_module_repr": lambda T: repr(T.nn.Dropout(0.25, inplace=True)),
    # test_Dropout1d / 2d / 3d: whole channels, p=1, eval, ranks and the no-batch form
    "dropout1d_p1": lambda T: T.nn.functional.dropout1d(x_(T, 2, 3, 4), 1.),
    "dropout1d_bad_rank": lambda T: T.nn.functional.dropout1d(x_(T, 2, 3, 4, 5), 0.5),
    "dropout2d_eval": lambda T: T.nn.Dropout2d(0.5).eval()(x_(T, 1, 2, 3, 3)),
    "dropout2d_whole_channels": lambda T: (lambda o: bool(((o == 0).all((-1, -2)) | (o != 0).all((-1, -2))).all()))(
        T.nn.functional.dropout2d(x_(T, 2, 6, 3, 3) + 10, 0.5)),
    "dropout3d_p1_grad": lambda T: out_and_grads(T, lambda x: T.nn.functional.dropout3d(x, 1.), x_(T, 1, 2, 2, 2, 2, grad=True)),
    "dropout3d_no_batch": lambda T: T.nn.functional.dropout3d(x_(T, 2, 2, 2, 2), 0.).shape,
    "dropout2d_p_invalid": lambda T: T.nn.functional.dropout2d(x_(T, 1, 2, 3, 3), 2.),
    # test_AlphaDropout / FeatureAlphaDropout: eval is the identity, p = 0 too
    "alpha_dropout_eval": lambda T: T.nn.AlphaDropout(0.2).eval()(x_(T, 3, 3)),
    "alpha_dropout_p0": lambda T: T.nn.functional.alpha_dropout(x_(T, 3, 3), 0., training=True),
    "feature_alpha_dropout_eval": lambda T: T.nn.FeatureAlphaDropout(0.5).eval()(x_(T, 1, 2, 3)),
    "alpha_dropout_p_invalid": lambda T: T.nn.functional.alpha_dropout(x_(T, 3), 1.5, training=True),
}


@pytest.mark.parametrize("fn", outcome_params(DROPOUT))
def test_dropout(fn):
    same_outcome(fn)


# ---- test_multihead_attention.py ---------------------------------------------------------------------
def mha(T, q_shape=(3, 2, 4), kv_shape=None, call=None, **kw):
    """A filled nn.MultiheadAttention(4, 2, **kw) on fixed q (k = v unless kv_shape) with grads."""
    m = fill(T, T.nn.MultiheadAttention(4, 2, **kw))
    q = x_(T, *q_shape, seed=11, grad=True)
    kv = x_(T, *(kv_shape or q_shape), seed=12, grad=True) if kv_shape else q
    out = (call or (lambda m, q, kv: m(q, kv, kv)))(m, q, kv)
    res = [o for o in out if o is not None]
    w = T.arange(res[0].numel(), dtype=res[0].dtype).reshape(res[0].shape) / 9 - 1
    (res[0] * w).sum().backward()
    return out, q.grad, [p.grad for p in m.parameters()]


MHA = {
    # test_multihead_attn_key_padding_mask / 2d and 3d attn_mask / bool and float masks
    "mha_key_padding_bool": lambda T: mha(T, call=lambda m, q, kv: m(q, kv, kv, key_padding_mask=T.tensor(
        [[False, False, True], [False, True, True]]))),
    "mha_key_padding_float": lambda T: mha(T, call=lambda m, q, kv: m(q, kv, kv, key_padding_mask=T.tensor(
        [[0., 0., -inf], [0., -1., -inf]], dtype=T.float64))),
    "mha_attn_mask_2d_bool": lambda T: mha(T, call=lambda m, q, kv: m(q, kv, kv, attn_mask=T.tensor(
        [[False, True, True], [False, False, True], [False, False, False]]))),
    "mha_attn_mask_3d_float": lambda T: mha(T, call=lambda m, q, kv: m(q, kv, kv, attn_mask=x_(T, 4, 3, 3, seed=13))),
    "mha_attn_mask_bad_shape": lambda T: mha(T, call=lambda m, q, kv: m(q, kv, kv, attn_mask=T.zeros(2, 3, 3, dtype=T.float64))),
    "mha_both_masks_bool": lambda T: mha(T, call=lambda m, q, kv: m(q, kv, kv, attn_mask=T.tensor(
        [[False, True, False]] * 3), key_padding_mask=T.tensor([[False, False, True], [True, False, False]]))),
    # test_multihead_attn_no_need_weights / average_attn_weights=False / is_causal
    "mha_need_weights_false": lambda T: mha(T, call=lambda m, q, kv: m(q, kv, kv, need_weights=False)),
    "mha_per_head_weights": lambda T: mha(T, call=lambda m, q, kv: m(q, kv, kv, average_attn_weights=False)),
    "mha_is_causal_with_mask": lambda T: mha(T, call=lambda m, q, kv: m(q, kv, kv, is_causal=True, attn_mask=T.ones(
        3, 3, dtype=T.bool).triu(1))),
    # test_multihead_attn_batch_first / unbatched / cross attention with another length
    "mha_batch_first": lambda T: mha(T, (2, 3, 4), batch_first=True),
    "mha_unbatched": lambda T: mha(T, (3, 4)),
    "mha_cross_length": lambda T: mha(T, (3, 2, 4), (5, 2, 4), call=lambda m, q, kv: m(q, kv, kv)),
    # test_multihead_attn_add_bias_kv / add_zero_attn / kdim and vdim / no bias
    "mha_add_bias_kv": lambda T: mha(T, add_bias_kv=True),
    "mha_add_zero_attn": lambda T: mha(T, add_zero_attn=True, call=lambda m, q, kv: m(q, kv, kv, key_padding_mask=T.tensor(
        [[False, False, True], [False, False, False]]))),
    "mha_kdim_vdim": lambda T: mha(T, (3, 2, 4), (5, 2, 3), kdim=3, vdim=3),
    "mha_no_bias": lambda T: mha(T, bias=False),
    # test_multihead_attn_embed_dim_not_divisible / shape errors
    "mha_embed_not_divisible": lambda T: T.nn.MultiheadAttention(5, 2),
    "mha_query_key_batch_mismatch": lambda T: mha(T, (3, 2, 4), (3, 1, 4)),
    "mha_key_value_length_mismatch": lambda T: mha(T, call=lambda m, q, kv: m(q, kv, kv[:2])),
    "mha_repr": lambda T: repr(T.nn.MultiheadAttention(4, 2, kdim=3, vdim=3)),
    # test_multihead_attention functional form with separate projection weights
    "mha_functional_separate_proj": lambda T: T.nn.functional.multi_head_attention_forward(
        x_(T, 3, 1, 4, seed=1), x_(T, 2, 1, 4, seed=2), x_(T, 2, 1, 4, seed=3), 4, 2, None, x_(T, 12, seed=4),
        None, None, False, 0., x_(T, 4, 4, seed=5), x_(T, 4, seed=6), training=False, use_separate_proj_weight=True,
        q_proj_weight=x_(T, 4, 4, seed=7), k_proj_weight=x_(T, 4, 4, seed=8), v_proj_weight=x_(T, 4, 4, seed=9)),
}


@pytest.mark.parametrize("fn", outcome_params(MHA))
def test_multihead_attention(fn):
    same_outcome(fn)
