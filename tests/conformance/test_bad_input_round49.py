"""Bad-input parity, round 49: tensor factories and creation (``full`` with fill values of the wrong
kind, ``arange``/``range`` with a zero, infinite, NaN or wrong-signed step, ``linspace``/``logspace``
steps, ``empty_strided`` strides, ``tensor()`` of ragged and mixed data, ``from_numpy`` of object,
string and non-array data, ``as_strided`` past the storage), tensor methods (``view``/``expand``/
``repeat`` shapes, ``gather``/``scatter``/``index_add_``/``index_copy_`` index dtypes, dims and
lengths, ``masked_fill`` with a non-bool mask, ``.to`` with bad arguments, ``item``/``tolist``/
``numpy`` misuse), torch.distributions (bad parameters with validate_args, sample shapes) and
nn.functional (interpolate size/scale_factor combinations, pad modes and lengths, conv groups and
padding strings, one_hot, grid_sample modes, embedding padding_idx, scaled_dot_product_attention's
dropout_p and is_causal). A probe of ~800 calls (written here for this table, no other
repository's tests copied; torch 2.13 the oracle) found these differences, fixed in tracegrad:

- ``tensor([[], [1]])`` (ragged data whose first elements end in an empty list) raised ValueError;
  torch reads the shape off the first elements, ``(2, 0)``, stores nothing and never reads the
  rest, and its dtype inference reads the empty list as the default dtype (float32)
  (``_tensor/convert.py``);
- ``linspace``/``logspace`` with ``steps=tensor([3])`` (a one-element tensor that is not 0-d) was
  read as 3; torch's parser takes only a 0-d integer tensor as the int (TypeError,
  ``_tensor/factories.py``);
- ``from_numpy(ndarray=a)`` was accepted; torch's takes no keyword arguments (TypeError);
- ``scaled_dot_product_attention`` refused a negative ``dropout_p`` always and took a NaN one; torch's
  math path takes both as no dropout (only ``p > 0`` drops), its fused CPU kernel (4-D inputs of one
  head size, ``sdpa_kernel`` allowing FLASH_ATTENTION) refuses both (RuntimeError); ``is_causal`` that
  is not a bool (``"x"``, ``1``, ``None``) was read for its truth; torch's parser refuses it
  (TypeError, ``nn/functional.py``).

Found and left alone (not tabled): ``Tensor.numpy()``/``np.asarray`` of bfloat16 (torch TypeError;
tracegrad gives an ml_dtypes array, kept by earlier rounds' strict xfails); ``tensor([[], [1j]],
dtype=int32)`` and ``tensor([[], ones(2)])`` (torch never reads the data after the empty list;
tracegrad still checks it: TypeError); ``from_numpy`` of a negative-stride array says "numpy array"
as torch's own message does (the foreign-words check would flag it).

Each call runs under torch and tracegrad: the same exception class (or none), no text of the layers
below tracegrad; ``_ok`` calls are ones torch accepts, and they give torch's value.
"""
import numpy as np
import pytest

import tracegrad

from _bad_input_helpers import outcome, table_tests, value_test

torch = pytest.importorskip("torch")

C = {}
F = lambda T: T.nn.functional        # noqa: E731
Dn = lambda T: T.distributions       # noqa: E731

C["full_str"] = lambda T: T.full((2,), "a")
C["full_list"] = lambda T: T.full((2,), [1, 2])
C["full_tensor2"] = lambda T: T.full((2,), T.ones(2))
C["full_nan_int"] = lambda T: T.full((2,), float("nan"), dtype=T.int32)
C["full_like_str"] = lambda T: T.full_like(T.ones(2), "x")
C["full_fill_obj"] = lambda T: T.full((2,), object())
C["full_fill_complex_ok"] = lambda T: T.full((2,), 1j).dtype
C["full_bool_int_ok"] = lambda T: T.full((2,), 2, dtype=T.bool)
C["arange_zero_step"] = lambda T: T.arange(0, 5, 0)
C["arange_nan"] = lambda T: T.arange(0, float("nan"))
C["arange_wrong_sign"] = lambda T: T.arange(0, 5, -1)
C["arange_tensor2"] = lambda T: T.arange(T.tensor([3, 4]))
C["arange_int8_big"] = lambda T: T.arange(0, 300, dtype=T.int8)
C["arange_int_dtype_float_step"] = lambda T: T.arange(0, 2.5, 0.5, dtype=T.int64)
C["arange_float_neg_step_ok"] = lambda T: T.arange(1., 0., -0.25)
C["range_wrong_sign"] = lambda T: T.range(0, 3, -1)
C["linspace_float_steps"] = lambda T: T.linspace(0, 1, 2.5)
C["linspace_tensor_steps"] = lambda T: T.linspace(0, 1, T.tensor(3))
C["linspace_tensor_steps_2"] = lambda T: T.linspace(0, 1, T.tensor([3]))
C["linspace_bool_dtype"] = lambda T: T.linspace(0, 1, 3, dtype=T.bool)
C["linspace_int_dtype_ok"] = lambda T: T.linspace(0, 10, 4, dtype=T.int64)
C["linspace_str"] = lambda T: T.linspace(0, 1, "3")
C["logspace_base_str"] = lambda T: T.logspace(0, 1, 3, base="2")
C["logspace_int_ok"] = lambda T: T.logspace(0, 2, 3, dtype=T.int64)
C["empty_strided_len"] = lambda T: T.empty_strided((2, 2), (1,))
C["empty_strided_float"] = lambda T: T.empty_strided((2,), (1.5,))
C["tensor_ragged"] = lambda T: T.tensor([[1, 2], [3]])
C["tensor_ragged_empty"] = lambda T: T.tensor([[], [1]])
C["tensor_list_none"] = lambda T: T.tensor([1, None])
C["tensor_set"] = lambda T: T.tensor({1, 2})
C["tensor_big_int"] = lambda T: T.tensor([2**64])
C["tensor_complex_int"] = lambda T: T.tensor([1j], dtype=T.int64)
C["tensor_nested_ragged_inner"] = lambda T: T.tensor([[[1, 2]], [[3]]])
C["tensor_list_and_scalar"] = lambda T: T.tensor([[2], 1])
C["tensor_mixed_ok"] = lambda T: T.tensor([1, 2.5, True])
C["from_numpy_str"] = lambda T: T.from_numpy(np.array(["a"]))
C["from_numpy_scalar"] = lambda T: T.from_numpy(np.float32(1))
C["from_numpy_structured"] = lambda T: T.from_numpy(np.zeros(2, dtype=[("a", "f4")]))
C["from_numpy_kw"] = lambda T: T.from_numpy(ndarray=np.ones(2))
C["from_numpy_0d_ok"] = lambda T: T.from_numpy(np.array(2.5))
C["as_strided_oob"] = lambda T: T.ones(4).as_strided((3,), (2,))
C["as_strided_offset_oob"] = lambda T: T.ones(4).as_strided((2,), (1,), 3)
C["as_strided_len"] = lambda T: T.ones(4).as_strided((2, 2), (1,))
C["as_strided_ok"] = lambda T: T.arange(4.).as_strided((2, 2), (1, 1))
C["view_two_neg"] = lambda T: T.ones(6).view(-1, -1)
C["view_dtype_size"] = lambda T: T.ones(3, dtype=T.float32).view(T.float64)
C["view_dtype_requires_grad"] = lambda T: T.ones(2, requires_grad=True).view(T.int32)
C["expand_fewer"] = lambda T: T.ones(2, 3).expand(3)
C["expand_neg_new"] = lambda T: T.ones(2).expand(-1, 2)
C["repeat_fewer"] = lambda T: T.ones(2, 3).repeat(2)
C["repeat_float"] = lambda T: T.ones(2).repeat(1.5)
C["gather_float_index"] = lambda T: T.ones(3).gather(0, T.tensor([0.]))
C["gather_dim_mismatch"] = lambda T: T.ones(3, 2).gather(0, T.tensor([0]))
C["scatter_float_index"] = lambda T: T.zeros(3).scatter(0, T.tensor([0.]), T.ones(1))
C["scatter_reduce_bad_name"] = lambda T: T.zeros(3).scatter_reduce(0, T.tensor([0]), T.ones(1), "foo")
C["index_add_bad_dim"] = lambda T: T.zeros(3).index_add_(1, T.tensor([0]), T.ones(1))
C["index_add_len"] = lambda T: T.zeros(3).index_add_(0, T.tensor([0, 1]), T.ones(1))
C["index_add_alpha_float_int"] = lambda T: T.zeros(3, dtype=T.long).index_add_(0, T.tensor([0]), T.ones(1, dtype=T.long), alpha=1.5)
C["index_copy_len"] = lambda T: T.zeros(3).index_copy_(0, T.tensor([0, 1]), T.ones(3))
C["index_fill_tensor_value"] = lambda T: T.zeros(3).index_fill_(0, T.tensor([0]), T.ones(2))
C["masked_fill_float_mask"] = lambda T: T.zeros(3).masked_fill(T.tensor([1., 0., 1.]), 1.)
C["masked_fill_value_tensor2"] = lambda T: T.zeros(3).masked_fill(T.tensor([True, False, True]), T.ones(2))
C["masked_fill_inplace_bcast"] = lambda T: T.zeros(3).masked_fill_(T.ones(2, 3, dtype=T.bool), 1.)
C["masked_fill_value_2d_tensor"] = lambda T: T.zeros(3).masked_fill(T.ones(3, dtype=T.bool), T.ones(1, 1))
C["masked_fill_float_int_ok"] = lambda T: T.zeros(3, dtype=T.long).masked_fill(T.ones(3, dtype=T.bool), 1.7)
C["to_str"] = lambda T: T.ones(2).to("foo")
C["to_two_dtypes"] = lambda T: T.ones(2).to(T.float32, T.float64)
C["to_memory_format_bad"] = lambda T: T.ones(2).to(memory_format=T.channels_last)
C["to_dtype_str"] = lambda T: T.ones(2).to(dtype="float32")
C["item_many"] = lambda T: T.ones(2).item()
C["item_one_ok"] = lambda T: T.ones(1, 1).item()
C["tolist_0d_ok"] = lambda T: T.tensor(3.).tolist()
C["numpy_requires_grad"] = lambda T: T.ones(2, requires_grad=True).numpy()
C["numpy_force_ok"] = lambda T: T.ones(2, requires_grad=True).numpy(force=True)
C["numpy_neg"] = lambda T: T.tensor([1.]).neg().numpy()
C["int_nan"] = lambda T: int(T.tensor(float("nan")))
C["normal_neg_scale"] = lambda T: Dn(T).Normal(0., -1., validate_args=True)
C["normal_sample_shape_neg"] = lambda T: Dn(T).Normal(0., 1.).sample((-1,))
C["normal_bcast_bad"] = lambda T: Dn(T).Normal(T.zeros(2), T.ones(3))
C["normal_icdf_out"] = lambda T: Dn(T).Normal(0., 1., validate_args=True).icdf(T.tensor(2.))
C["bernoulli_both"] = lambda T: Dn(T).Bernoulli(probs=0.5, logits=0.)
C["categorical_0d"] = lambda T: Dn(T).Categorical(probs=T.tensor(1.))
C["categorical_sample_float"] = lambda T: Dn(T).Categorical(T.ones(3)).sample((2.5,))
C["uniform_log_prob_out_validate"] = lambda T: Dn(T).Uniform(0., 1., validate_args=True).log_prob(T.tensor(2.))
C["binomial_count_float"] = lambda T: Dn(T).Binomial(total_count=1.5, probs=0.5, validate_args=True)
C["mvn_shape"] = lambda T: Dn(T).MultivariateNormal(T.zeros(3), T.eye(2))
C["mvn_rsample_float"] = lambda T: Dn(T).MultivariateNormal(T.zeros(2), T.eye(2)).rsample((1.5,))
C["independent_too_many"] = lambda T: Dn(T).Independent(Dn(T).Normal(T.zeros(2), 1.), 2)
C["mixture_mismatch"] = lambda T: Dn(T).MixtureSameFamily(Dn(T).Categorical(T.ones(3)), Dn(T).Normal(T.zeros(2), 1.))
C["normal_sample_n_neg"] = lambda T: Dn(T).Normal(0., 1.).sample_n(-1)
C["interp_both"] = lambda T: F(T).interpolate(T.ones(1, 1, 4), size=2, scale_factor=2.)
C["interp_size_len"] = lambda T: F(T).interpolate(T.ones(1, 1, 4), size=(2, 2))
C["interp_scale_neg"] = lambda T: F(T).interpolate(T.ones(1, 1, 4), scale_factor=-1.)
C["interp_bilinear_3d"] = lambda T: F(T).interpolate(T.ones(1, 1, 4), size=2, mode="bilinear")
C["interp_antialias_nearest"] = lambda T: F(T).interpolate(T.ones(1, 1, 4, 4), size=2, mode="nearest", antialias=True)
C["interp_trilinear_4d"] = lambda T: F(T).interpolate(T.ones(1, 1, 2, 2), size=2, mode="trilinear")
C["pad_bad_mode"] = lambda T: F(T).pad(T.ones(1, 1, 4), (1, 1), mode="foo")
C["pad_too_long"] = lambda T: F(T).pad(T.ones(4), (1, 1, 1, 1))
C["pad_replicate_value"] = lambda T: F(T).pad(T.ones(1, 1, 4), (1, 1), mode="replicate", value=1.)
C["pad_neg_too_much"] = lambda T: F(T).pad(T.ones(1, 1, 4), (-3, -3))
C["pad_reflect_neg_ok"] = lambda T: F(T).pad(T.arange(4.).view(1, 1, 4), (-1, 1), mode="reflect")
C["conv_groups_zero"] = lambda T: F(T).conv1d(T.ones(1, 2, 4), T.ones(2, 2, 1), groups=0)
C["conv_same_stride"] = lambda T: F(T).conv1d(T.ones(1, 2, 4), T.ones(2, 2, 1), padding="same", stride=2)
C["conv_same_dilation_ok"] = lambda T: F(T).conv1d(T.arange(8.).view(1, 2, 4), T.ones(2, 2, 2), padding="same", dilation=2)
C["Conv_groups_bad"] = lambda T: T.nn.Conv1d(3, 2, 1, groups=2)
C["ConvT_padding_mode_reflect"] = lambda T: T.nn.ConvTranspose1d(2, 2, 1, padding_mode="reflect")
C["one_hot_neg_classes"] = lambda T: F(T).one_hot(T.tensor([0, 1]), -2)
C["one_hot_float"] = lambda T: F(T).one_hot(T.tensor([0., 1.]))
C["one_hot_int32"] = lambda T: F(T).one_hot(T.tensor([0, 1], dtype=T.int32))
C["one_hot_neg1_classes_ok"] = lambda T: F(T).one_hot(T.tensor([0, 2]), -1)
C["grid_sample_bad_mode"] = lambda T: F(T).grid_sample(T.ones(1, 1, 2, 2), T.zeros(1, 1, 1, 2), mode="foo", align_corners=False)
C["grid_sample_bicubic_5d"] = lambda T: F(T).grid_sample(T.ones(1, 1, 2, 2, 2), T.zeros(1, 1, 1, 1, 3), mode="bicubic", align_corners=False)
C["grid_sample_mode_none"] = lambda T: F(T).grid_sample(T.ones(1, 1, 2, 2), T.zeros(1, 1, 1, 2), mode=None, align_corners=False)
C["emb_pad_neg_oob"] = lambda T: F(T).embedding(T.tensor([0]), T.ones(3, 2), padding_idx=-4)
C["Emb_pad_oob"] = lambda T: T.nn.Embedding(3, 2, padding_idx=3)
C["Emb_pretrained_pad_oob"] = lambda T: T.nn.Embedding.from_pretrained(T.ones(3, 2), padding_idx=5)
C["EmbBag_pad_oob"] = lambda T: T.nn.EmbeddingBag(3, 2, padding_idx=3)
C["sdpa_dropout_neg_small_ok"] = lambda T: F(T).scaled_dot_product_attention(T.arange(8.).view(1, 2, 4), T.ones(1, 2, 4), T.arange(8.).view(1, 2, 4), dropout_p=-0.5)
C["scaled_dot_dropout_neg"] = lambda T: F(T).scaled_dot_product_attention(T.ones(1, 2, 4), T.ones(1, 2, 4), T.ones(1, 2, 4), dropout_p=-1.)
C["sdpa_dropout_nan"] = lambda T: F(T).scaled_dot_product_attention(T.ones(1, 2, 4), T.ones(1, 2, 4), T.ones(1, 2, 4), dropout_p=float("nan"))
C["sdpa_causal_str"] = lambda T: F(T).scaled_dot_product_attention(T.ones(1, 2, 4), T.ones(1, 2, 4), T.ones(1, 2, 4), is_causal="x")
C["scaled_dot_causal_and_mask"] = lambda T: F(T).scaled_dot_product_attention(T.ones(1, 2, 4), T.ones(1, 2, 4), T.ones(1, 2, 4), attn_mask=T.ones(2, 2, dtype=T.bool), is_causal=True)
C["sdpa_dropout_0_ok"] = lambda T: F(T).scaled_dot_product_attention(T.ones(1, 2, 4), T.ones(1, 2, 4), T.ones(1, 2, 4), dropout_p=0.)

GIST = {
    "linspace_tensor_steps_2": "linspace",
    "sdpa_causal_str": "is_causal",
    "tensor_ragged": "expected sequence of length",
    "emb_pad_neg_oob": "padding_idx must be within num_embeddings",
    "interp_both": "only one of size or scale_factor",
    "conv_same_stride": "padding='same' is not supported for strided",
    "masked_fill_float_mask": "only supports boolean masks",
    "grid_sample_bad_mode": "expected mode to be",
    "as_strided_oob": "out of bounds",
    "item_many": "cannot be converted to Scalar",
    "numpy_requires_grad": "detach().numpy()",
}

test_same_class_as_torch, test_message_gist = table_tests(C, GIST, torch, tracegrad)
test_accepted_value_matches_torch = value_test(C, [k for k in C if k.endswith("_ok")], torch, tracegrad,
                                               close=True)


def _sdpa(T, shape, p, mask_grad=False, math=False):
    """scaled_dot_product_attention of ``shape`` inputs with ``dropout_p=p``; the outcome's class."""
    q = T.arange(float(np.prod(shape))).reshape(shape) / 10
    mask = T.zeros(shape[-2], shape[-2], requires_grad=mask_grad) if mask_grad else None
    def call(T):
        if math:
            with T.nn.attention.sdpa_kernel(T.nn.attention.SDPBackend.MATH):
                return F(T).scaled_dot_product_attention(q, q, q, attn_mask=mask, dropout_p=p)
        return F(T).scaled_dot_product_attention(q, q, q, attn_mask=mask, dropout_p=p)
    return call(T)


@pytest.mark.parametrize("p", [-1., -0.25, float("nan")])
@pytest.mark.parametrize("shape,mask_grad,math", [((1, 2, 4), False, False), ((2, 4), False, False),
                                                  ((1, 1, 2, 4), False, False), ((1, 1, 2, 4), True, False),
                                                  ((1, 1, 2, 4), False, True)])
def test_sdpa_dropout_not_positive(p, shape, mask_grad, math):
    """A negative or NaN dropout_p: refused where torch takes its fused CPU kernel (4-D, one head
    size, a mask without grad, FLASH_ATTENTION allowed), else no dropout, the value torch gives."""
    want_cls, _ = outcome(lambda T: _sdpa(T, shape, p, mask_grad, math), torch)
    got_cls, msg = outcome(lambda T: _sdpa(T, shape, p, mask_grad, math), tracegrad)
    assert got_cls is want_cls, msg
    if want_cls is None:
        got, want = _sdpa(tracegrad, shape, p, mask_grad, math), _sdpa(torch, shape, p, mask_grad, math)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    else:
        assert "dropout" in msg and "dropout_p=0.0" in msg


@pytest.mark.parametrize("value", [1, 0, None, 1.0, "x"])
def test_sdpa_is_causal_must_be_bool(value):
    """torch's parser takes only a bool as is_causal: an int or None is no bool either."""
    call = lambda T: F(T).scaled_dot_product_attention(T.ones(1, 2, 4), T.ones(1, 2, 4), T.ones(1, 2, 4),  # noqa
                                                      is_causal=value)
    assert outcome(call, torch)[0] is TypeError
    cls, msg = outcome(call, tracegrad)
    assert cls is TypeError and "is_causal" in msg and "must be bool" in msg


@pytest.mark.parametrize("data", [[[], [1]], [[], 3], [[[]], [1]], [[], [[1]]], [[], [True]], [[], [1.5]],
                                  [[[], []], [[1]]], [[], [2 ** 70]], [(), (1,)]])
@pytest.mark.parametrize("dtype", [None, "int32", "float64"])
def test_ragged_after_empty_list_is_empty(data, dtype):
    """Ragged data whose first elements end in an empty list: torch's shape (read off the first
    elements) and dtype (the empty list counts as the default dtype), no error."""
    got = tracegrad.tensor(data, dtype=getattr(tracegrad, dtype) if dtype else None)
    want = torch.tensor(data, dtype=getattr(torch, dtype) if dtype else None)
    assert tuple(got.shape) == tuple(want.shape) and str(got.dtype)[10:] == str(want.dtype)[6:]


def test_ragged_before_empty_list_still_raises():
    """Data whose empty list is not first is still ragged to torch (ValueError naming the length)."""
    for T in (torch, tracegrad):
        with pytest.raises(ValueError, match="expected sequence of length 1 at dim 1"):
            T.tensor([[1], []])
