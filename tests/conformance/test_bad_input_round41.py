"""Bad-input parity, round 41: a probe of ~2,500 wrong (and some right) calls in the areas the
brief named -- the nn.Module API (register_buffer/register_parameter/add_module/register_module
with bad names and values, load_state_dict strict/shape/assign mismatches, get_submodule/
get_parameter/get_buffer/set_submodule paths, apply/train/state_dict arguments, the containers),
layer constructors (zero/negative/float/str sizes, padding modes and strings, stride/dilation,
groups, RNN dropout/proj_size, Transformer d_model % nhead, activations), forwards of ~33 layers
on inputs of every rank and on int/bool/float64/list inputs, MultiheadAttention masks and
shapes, RNN hidden states, optimizers' hyper-parameters and param groups, lr_schedulers'
arguments, DataLoader/samplers/datasets/random_split, and torch.compile's own arguments. The
calls are written here for this table (no other repository's tests were copied); torch 2.13 is
the oracle.

Fixed in tracegrad (each case is in the table below):
- the 2-D/3-D adaptive pools took a bool or a str ``output_size`` and sequences holding a str, a
  float or a leading bool (``int()`` made sizes of them) where torch's parser raises TypeError
  (``adaptive_*_out_str``/``_bool``/``_float_item``...);
- their integer/bool input check came before the rank, size and empty checks (NotImplementedError
  where torch raises the rank's RuntimeError, ``adaptive_avg2d_int_1d``), refused an empty integer
  input that torch takes, and an output size of 1 on a 1-D input was the rank's RuntimeError
  where torch takes the mean (IndexError); ``adaptive_avg_pool3d``'s (1, 1, 1) mean came after
  its rank check (torch: the mean first) and ``adaptive_max_pool3d``'s dtype check before the
  size checks;
- a bool input to a Conv layer (float bias) or to a convolution with the wrong channel count or
  bias size raised the kernel's NotImplementedError where torch raises its RuntimeError first
  (``conv2d_bool_bias``, ``conv_transpose2d_bool_channels``...);
- ``DataLoader(num_workers > 0, prefetch_factor=0)`` ran its pass (torch: AssertionError when the
  pass starts);
- ``compile(mode=[...])`` / ``mode={...}``: RuntimeError where torch's dict look-up raises
  TypeError (unhashable);
- ``threshold``/``threshold_``/``Threshold`` of a complex input compared it by its real part
  (torch: NotImplementedError, no complex kernel); so did the fractional max pools (a max over
  complex values), and they refused an unbatched input with no channels, which torch takes;
- ``dropout1d``/``dropout2d``/``dropout3d``/``alpha_dropout``/``feature_alpha_dropout`` of a complex
  input while training, ``rrelu_`` and ``prelu`` of complex inputs, and ``pdist`` of a complex
  input returned values (torch: NotImplementedError, or pdist's RuntimeError "only supports
  floating-point dtypes", which an integer input now gets too, before p's check);
- ``scaled_dot_product_attention`` of bool query/key/value: the matmul's NotImplementedError (torch:
  RuntimeError "expected scalar type Float but found Bool");
- ``cross_entropy`` with a non-floating target shaped like the input: nll_loss's error, or for an
  integer input log_softmax's NotImplementedError (torch: RuntimeError "Expected floating point
  type for target with class probabilities", checked first);
- ``LSTM`` on a PackedSequence of another dtype than its weights: RNNBase's ValueError (torch's
  LSTM skips those Python checks for packed input: its matmul's RuntimeError);
- ``MultiheadAttention`` (``need_weights=True``, its default) with a float16/bfloat16/float64
  ``attn_mask`` or ``key_padding_mask`` beside a float32 query promoted the scores (torch's
  baddbmm: RuntimeError "Input dtypes must be the same");
- ``EmbeddingBag``/``embedding_bag`` checked the ids' and the offsets' dtypes one by one (int16
  ids with int64 offsets refused, bool ids with bool offsets taken); torch promotes them to one
  dtype, which must be Long or Int; a 2-D complex input: NotImplementedError (its offsets'
  ``arange``), as for bool;
- ``group_norm``/``GroupNorm`` of a complex input beside a float weight, and ``group_norm``/
  ``layer_norm`` of a complex, integer or bool input with no weight but a bias of another dtype:
  the kernel's NotImplementedError where torch first compares the first parameter given (the
  weight, else the bias) with the input (RuntimeError "mixed dtype");
- ``Module.xpu()``/``mtia()``/``ipu()`` did not exist (AttributeError); torch raises for a module
  with tensors (AssertionError / RuntimeError: no such device) and returns one without;
- ``CrossMapLRN2d`` of an integer input gave a float result and of a bool input the average
  pool's NotImplementedError (torch: RuntimeError, its in-place steps cannot hold the result);
  of a complex input NotImplementedError (torch computes it; now summed part by part, value and
  gradient as torch's); with no channels, a reshape RuntimeError (torch: IndexError).

Found and left alone (not tabled):
- ``instance_norm(x, running_mean, running_var)`` with a ``running_mean`` of another dtype than
  the input (float64, float16, int64, bool) is taken by torch (it even writes the update back,
  cast), while its ``running_var`` and ``F.batch_norm``'s statistics must match; tracegrad
  refuses it (RuntimeError "mixed dtype"), as for batch_norm;
- ``LSTMCell(x, [[0., 0., 0.]])`` (a list for the state) is torch's AttributeError (``'list'
  object has no attribute 'dim'``), tracegrad's RuntimeError;
- ``compile(fn, backend=3)`` is refused at once by tracegrad (InvalidBackend) where torch fails
  only at the first call (BackendCompilerFailed; both RuntimeErrors);
- ``optim.Adafactor`` stepping an empty parameter: torch's ZeroDivisionError (its own division
  by the element count), tracegrad steps it (nothing to change);
- ``default_collate`` of objects/None repeats torch's text, whose "numpy arrays" the
  foreign-words check would flag.

Each call runs under torch and tracegrad: the same exception class (or none), no text of the
layers below tracegrad; ``_ok`` calls are ones torch accepts and they give torch's value.
"""
import numpy as np
import pytest

import tracegrad

from _bad_input_helpers import table_tests, value_test

torch = pytest.importorskip("torch")

C = {}
X = lambda T, *s, **k: T.ones(*s, **k)
F = lambda T: T.nn.functional

# ---- adaptive pools: output_size types (torch's parser) -------------------------------------
_POOLS = {
    "avg2d": lambda T, o: F(T).adaptive_avg_pool2d(X(T, 1, 1, 4, 4), o),
    "max2d": lambda T, o: F(T).adaptive_max_pool2d(X(T, 1, 1, 4, 4), o),
    "avg3d": lambda T, o: F(T).adaptive_avg_pool3d(X(T, 1, 1, 4, 4, 4), o),
    "max3d": lambda T, o: F(T).adaptive_max_pool3d(X(T, 1, 1, 4, 4, 4), o),
}
_SIZES = {"str": "3", "bool": True, "bool_item": (True, 2), "str_items": ("2", "2"), "float_item": (2.0, 2),
          "None_item_ok": (None, 2), "tensor_item_ok": (2, 2), "late_bool_ok": (2, True)}
for pn, pool in _POOLS.items():
    for sn, size in _SIZES.items():
        if pn.endswith("3d") and sn.endswith("_ok"):
            size = size + (2,)
        C[f"adaptive_{pn}_out_{sn}"] = lambda T, pool=pool, size=size: tuple(pool(T, size).shape)
C["adaptive_avg2d_module_str"] = lambda T: T.nn.AdaptiveAvgPool2d("3")(X(T, 1, 4, 4))
# integer inputs: torch's rank/size/empty checks come before its kernel's dtype check
C["adaptive_avg2d_int_1d"] = lambda T: F(T).adaptive_avg_pool2d(X(T, 2, dtype=T.int64), 2)
C["adaptive_avg2d_int_mean"] = lambda T: F(T).adaptive_avg_pool2d(X(T, 1, 2, 2, dtype=T.int64), 1)
C["adaptive_avg2d_int_empty_chan"] = lambda T: F(T).adaptive_avg_pool2d(X(T, 1, 0, 2, dtype=T.int64), 2)
C["adaptive_avg2d_int_neg"] = lambda T: F(T).adaptive_avg_pool2d(X(T, 1, 2, 2, dtype=T.int64), -1)
C["adaptive_avg2d_int_kernel"] = lambda T: F(T).adaptive_avg_pool2d(X(T, 1, 2, 2, dtype=T.int64), 2)
C["adaptive_avg2d_int_empty_batch_ok"] = lambda T: tuple(F(T).adaptive_avg_pool2d(X(T, 0, 2, 2, dtype=T.int64), 2).shape)
C["adaptive_avg2d_int_out0_ok"] = lambda T: tuple(F(T).adaptive_avg_pool2d(X(T, 1, 2, 2, dtype=T.uint8), 0).shape)
C["adaptive_avg2d_1d_size1"] = lambda T: F(T).adaptive_avg_pool2d(X(T, 2), 1)
C["adaptive_avg1d_int_size1"] = lambda T: F(T).adaptive_avg_pool1d(X(T, 1, 2, 2, dtype=T.int64), 1)
C["adaptive_max2d_long_1d"] = lambda T: T.nn.AdaptiveMaxPool2d(1)(T.tensor([0, 3]))
C["adaptive_max2d_int_size3"] = lambda T: F(T).adaptive_max_pool2d(X(T, 1, 1, 2, 2, dtype=T.int64), (1, 1, 1))
C["adaptive_avg3d_int_2d"] = lambda T: F(T).adaptive_avg_pool3d(X(T, 2, 2, dtype=T.int64), 2)
C["adaptive_avg3d_int_out0"] = lambda T: F(T).adaptive_avg_pool3d(X(T, 1, 1, 2, 2, dtype=T.int64), 0)
C["adaptive_avg3d_3d_mean_ok"] = lambda T: F(T).adaptive_avg_pool3d(T.arange(8.).reshape(2, 2, 2)[:1], 1)
C["adaptive_avg3d_2d_mean"] = lambda T: F(T).adaptive_avg_pool3d(X(T, 2, 2), 1)
C["adaptive_max3d_int_neg"] = lambda T: F(T).adaptive_max_pool3d(X(T, 1, 1, 2, 2, dtype=T.int64), -1)
C["adaptive_max3d_int_kernel"] = lambda T: F(T).adaptive_max_pool3d(X(T, 1, 1, 2, 2, dtype=T.int64), 1)

# ---- convolutions: bias, channel and bias-size checks before the bool/int kernel check --------
C["conv2d_bool_bias"] = lambda T: T.nn.Conv2d(2, 3, 2)(X(T, 2, 2, 2, dtype=T.bool))
C["conv1d_bool_bias"] = lambda T: T.nn.Conv1d(2, 3, 2)(X(T, 1, 2, 2, dtype=T.bool))
C["conv3d_bool_bias"] = lambda T: T.nn.Conv3d(2, 3, 1)(X(T, 1, 2, 1, 2, 2, dtype=T.bool))
C["conv2d_bool_channels"] = lambda T: T.nn.Conv2d(2, 3, 2, bias=False)(X(T, 1, 2, 2, dtype=T.bool))
C["conv2d_bool_nobias_kernel"] = lambda T: T.nn.Conv2d(2, 3, 2, bias=False)(X(T, 2, 2, 2, dtype=T.bool))
C["conv2d_bool_both_kernel"] = lambda T: F(T).conv2d(X(T, 1, 1, 2, 2, dtype=T.bool), X(T, 1, 1, 1, 1, dtype=T.bool))
C["conv2d_bool_groups_channels"] = lambda T: F(T).conv2d(X(T, 1, 2, 2, 2, dtype=T.bool), X(T, 2, 2, 1, 1), groups=2)
C["conv2d_bool_bias_size"] = lambda T: F(T).conv2d(X(T, 1, 2, 2, 2, dtype=T.bool), X(T, 2, 2, 1, 1, dtype=T.bool),
                                                   X(T, 3, dtype=T.bool))
C["conv2d_int_both_ok"] = lambda T: F(T).conv2d(X(T, 1, 1, 2, 2, dtype=T.int64), X(T, 1, 1, 1, 1, dtype=T.int64))
C["conv_transpose2d_bool_channels"] = lambda T: T.nn.ConvTranspose2d(2, 3, 2)(X(T, 1, 2, 2, dtype=T.bool))
C["conv_transpose2d_bool_kernel"] = lambda T: T.nn.ConvTranspose2d(2, 3, 2)(X(T, 2, 2, 2, dtype=T.bool))
C["conv_transpose2d_bool_bias_size"] = lambda T: F(T).conv_transpose2d(X(T, 1, 2, 2, 2, dtype=T.bool), X(T, 2, 2, 1, 1),
                                                                       X(T, 3))
C["conv_transpose2d_int32_kernel"] = lambda T: F(T).conv_transpose2d(X(T, 1, 2, 2, 2, dtype=T.int32), X(T, 2, 2, 1, 1))
C["conv_transpose1d_uint8_channels"] = lambda T: F(T).conv_transpose1d(X(T, 1, 1, 2, dtype=T.uint8), X(T, 2, 2, 1))

# ---- threshold, fractional max pools, CrossMapLRN2d: torch's kernels' dtype and size checks -----
C["threshold_complex"] = lambda T: F(T).threshold(X(T, 2, dtype=T.complex64), 0.5, 0.)
C["threshold_module_complex"] = lambda T: T.nn.Threshold(0.5, 0.)(X(T, 1, 2, dtype=T.complex64))
C["threshold_inplace_complex"] = lambda T: F(T).threshold_(X(T, 2, dtype=T.complex64), 0.5, 0.)
C["threshold_int_ok"] = lambda T: F(T).threshold(T.arange(4), 1, 9)
C["fractional_max_pool2d_complex"] = lambda T: T.nn.FractionalMaxPool2d(1, output_size=1)(X(T, 1, 2, 2, dtype=T.complex64))
C["fractional_max_pool3d_complex"] = lambda T: F(T).fractional_max_pool3d(X(T, 1, 2, 2, 2, dtype=T.complex64), 1,
                                                                           output_size=1)
C["fractional_max_pool2d_unbatched_no_channels_ok"] = lambda T: tuple(F(T).fractional_max_pool2d(
    X(T, 0, 2, 2), 1, output_size=1).shape)
C["fractional_max_pool3d_unbatched_no_channels_ok"] = lambda T: tuple(F(T).fractional_max_pool3d(
    X(T, 0, 2, 2, 2), 1, output_size=1).shape)
C["fractional_max_pool2d_batched_no_channels"] = lambda T: F(T).fractional_max_pool2d(X(T, 1, 0, 2, 2), 1, output_size=1)
_LRN_IN = lambda T, c, dt: (T.arange(c * 4.).reshape(1, c, 2, 2) / 7 + 0.3).to(dt)
C["cross_map_lrn_int64"] = lambda T: T.nn.CrossMapLRN2d(3)(_LRN_IN(T, 2, T.int64))
C["cross_map_lrn_uint8"] = lambda T: T.nn.CrossMapLRN2d(3)(_LRN_IN(T, 2, T.uint8))
C["cross_map_lrn_bool"] = lambda T: T.nn.CrossMapLRN2d(3)(_LRN_IN(T, 2, T.bool))
C["cross_map_lrn_bool_no_channels"] = lambda T: T.nn.CrossMapLRN2d(3)(_LRN_IN(T, 0, T.bool))
C["cross_map_lrn_no_channels"] = lambda T: T.nn.CrossMapLRN2d(3)(_LRN_IN(T, 0, T.float32))
C["cross_map_lrn_int_no_channels"] = lambda T: T.nn.CrossMapLRN2d(3)(_LRN_IN(T, 0, T.int32))
C["cross_map_lrn_complex_ok"] = lambda T: T.nn.CrossMapLRN2d(3, 0.5)(_LRN_IN(T, 3, T.complex64) * (1 + 0.5j))
C["cross_map_lrn_complex_grad_ok"] = lambda T: (lambda x: T.autograd.grad(T.nn.CrossMapLRN2d(2, 0.5)(x).abs().sum(), x)[0])(
    (_LRN_IN(T, 3, T.complex64) * (1 + 0.5j)).requires_grad_())

# ---- functionals with no complex/bool kernel; cross_entropy's probability target dtype ----------
_CPLX = lambda T, *s: X(T, *s, dtype=T.complex64)
C["dropout1d_complex"] = lambda T: F(T).dropout1d(_CPLX(T, 2, 2, 2), 0.5)
C["dropout3d_complex"] = lambda T: T.nn.Dropout3d(0.5)(_CPLX(T, 2, 2, 2, 2))
C["alpha_dropout_complex"] = lambda T: F(T).alpha_dropout(_CPLX(T, 2, 2), 0.5, True)
C["feature_alpha_dropout_complex"] = lambda T: F(T).feature_alpha_dropout(_CPLX(T, 2, 2, 2), 0.5, True)
C["dropout2d_complex_p1_ok"] = lambda T: F(T).dropout2d(_CPLX(T, 1, 2, 2, 2), 1.)
C["dropout2d_complex_eval_ok"] = lambda T: F(T).dropout2d(_CPLX(T, 1, 2, 2, 2), 0.5, training=False)
C["rrelu_inplace_complex"] = lambda T: F(T).rrelu_(_CPLX(T, 2))
C["rrelu_module_complex"] = lambda T: T.nn.RReLU()(_CPLX(T, 2))
C["prelu_complex"] = lambda T: F(T).prelu(_CPLX(T, 2, 2), _CPLX(T, 1))
C["pdist_complex"] = lambda T: F(T).pdist(_CPLX(T, 2, 2))
C["pdist_int_negative_p"] = lambda T: F(T).pdist(X(T, 2, 2, dtype=T.int64), -1)
C["pdist_complex_1d"] = lambda T: F(T).pdist(_CPLX(T, 2))
C["sdpa_bool"] = lambda T: F(T).scaled_dot_product_attention(*[X(T, 2, 2, 2, dtype=T.bool)] * 3)
C["sdpa_bool_causal"] = lambda T: F(T).scaled_dot_product_attention(*[X(T, 2, 2, 2, dtype=T.bool)] * 3, is_causal=True)
C["sdpa_int"] = lambda T: F(T).scaled_dot_product_attention(*[X(T, 2, 2, 2, dtype=T.int64)] * 3)
C["cross_entropy_int_input_int_probs"] = lambda T: F(T).cross_entropy(X(T, 2, 2, dtype=T.int64), X(T, 2, 2, dtype=T.int64))
C["cross_entropy_bool_probs"] = lambda T: F(T).cross_entropy(X(T, 2, 2), X(T, 2, 2, dtype=T.bool))
C["cross_entropy_complex_probs"] = lambda T: F(T).cross_entropy(X(T, 2, 2), _CPLX(T, 2, 2))
C["cross_entropy_f64_probs_ok"] = lambda T: F(T).cross_entropy(T.eye(2), T.eye(2, dtype=T.float64) * 0.5)

# ---- RNNs: torch's LSTM runs no Python checks on a packed input ----------------------------------
_PACK = lambda T, dt, n=2: T.nn.utils.rnn.pack_padded_sequence(X(T, 4, 2, n, dtype=dt), [4, 2])
C["lstm_packed_int"] = lambda T: T.nn.LSTM(2, 3)(_PACK(T, T.int64))
C["lstm_packed_f64"] = lambda T: T.nn.LSTM(2, 3)(_PACK(T, T.float64))
C["lstm_packed_f64_wrong_size"] = lambda T: T.nn.LSTM(2, 3)(_PACK(T, T.float64, 5))
C["lstm_proj_packed_half"] = lambda T: T.nn.LSTM(2, 3, proj_size=1)(_PACK(T, T.float16))
C["gru_packed_int"] = lambda T: T.nn.GRU(2, 3)(_PACK(T, T.int64))
C["rnn_unpacked_int"] = lambda T: T.nn.RNN(2, 3)(X(T, 4, 1, 2, dtype=T.int64))
C["lstm_unpacked_f64"] = lambda T: T.nn.LSTM(2, 3)(X(T, 4, 1, 2, dtype=T.float64))
C["lstm_packed_ok"] = lambda T: tuple(T.nn.LSTM(2, 3)(_PACK(T, T.float32))[0].data.shape)

# ---- MultiheadAttention masks of another float dtype; EmbeddingBag's ids/offsets promotion --------
_Q = lambda T: X(T, 3, 2, 4)
_MHA = lambda T, **k: (lambda m: m(_Q(T), _Q(T), _Q(T), **k))(T.nn.MultiheadAttention(4, 2))
C["mha_attn_mask_half"] = lambda T: _MHA(T, attn_mask=T.zeros(3, 3, dtype=T.float16))
C["mha_attn_mask_f64"] = lambda T: _MHA(T, attn_mask=T.zeros(3, 3, dtype=T.float64))
C["mha_key_padding_mask_bf16"] = lambda T: _MHA(T, key_padding_mask=T.zeros(2, 3, dtype=T.bfloat16))
C["mha_attn_mask_half_no_weights"] = lambda T: _MHA(T, attn_mask=T.zeros(3, 3, dtype=T.float16), need_weights=False)
C["mha_half_mask_f32_padding_ok"] = lambda T: _MHA(T, attn_mask=T.zeros(3, 3, dtype=T.float16),
                                                   key_padding_mask=T.zeros(2, 3))[1]
C["mha_bool_mask_half_padding_ok"] = lambda T: _MHA(T, attn_mask=T.zeros(3, 3, dtype=T.bool),
                                                    key_padding_mask=T.zeros(2, 3, dtype=T.float16))[1]
_BAG = lambda T: (lambda m: (m.weight.data.copy_(T.arange(8.).reshape(4, 2)), m)[1])(T.nn.EmbeddingBag(4, 2, mode="sum"))
_IDS = lambda T, dt: T.tensor([1, 0, 3]).to(dt)
C["embedding_bag_int16_ids_long_offsets_ok"] = lambda T: _BAG(T)(_IDS(T, T.int16), T.tensor([0, 1]))
C["embedding_bag_uint8_ids_int_offsets_ok"] = lambda T: _BAG(T)(_IDS(T, T.uint8), T.tensor([0, 1], dtype=T.int32))
C["embedding_bag_long_ids_uint8_offsets_ok"] = lambda T: _BAG(T)(_IDS(T, T.int64), T.tensor([0, 1], dtype=T.uint8))
C["embedding_bag_uint8_ids_int16_offsets"] = lambda T: _BAG(T)(_IDS(T, T.uint8), T.tensor([0, 1], dtype=T.int16))
C["embedding_bag_bool_ids_bool_offsets"] = lambda T: _BAG(T)(_IDS(T, T.bool), T.tensor([0, 1], dtype=T.bool))
C["embedding_bag_long_ids_float_offsets"] = lambda T: _BAG(T)(_IDS(T, T.int64), T.tensor([0., 1.]))
C["embedding_bag_int16_2d"] = lambda T: _BAG(T)(T.tensor([[1, 0]], dtype=T.int16))
C["embedding_bag_complex_2d"] = lambda T: _BAG(T)(T.tensor([[1, 0]], dtype=T.complex64))

# ---- group_norm / layer_norm: the first parameter's dtype against the input's, before the kernel --
_NX = lambda T, dt: X(T, 2, 4, dtype=dt)
_NP = lambda T, dt: None if dt is None else X(T, 4, dtype=dt)
for _fn, _call in (("group_norm", lambda T, x, w, b: F(T).group_norm(x, 2, w, b)),
                   ("layer_norm", lambda T, x, w, b: F(T).layer_norm(x, (4,), w, b))):
    for _case, (_x, _w, _b) in {"complex_float_weight": ("complex64", "float32", None),
                                "complex_float_bias": ("complex64", None, "float32"),
                                "complex_complex_weight_float_bias": ("complex64", "complex64", "float32"),
                                "int_float_bias": ("int64", None, "float32"),
                                "bool_complex_bias": ("bool", None, "complex64"),
                                "int_alone": ("int64", None, None)}.items():
        C[f"{_fn}_{_case}"] = lambda T, _call=_call, _x=_x, _w=_w, _b=_b: _call(
            T, _NX(T, getattr(T, _x)), _NP(T, _w and getattr(T, _w)), _NP(T, _b and getattr(T, _b)))
C["group_norm_module_complex"] = lambda T: T.nn.GroupNorm(2, 4)(_NX(T, T.complex64))

# ---- Module.xpu/mtia/ipu: torch's errors for a device it was built without -------------------------
C["module_xpu"] = lambda T: T.nn.Linear(2, 3).xpu()
C["module_mtia"] = lambda T: T.nn.Linear(2, 3).mtia()
C["module_ipu"] = lambda T: T.nn.Linear(2, 3).ipu()
C["module_ipu_no_params_ok"] = lambda T: type(T.nn.ReLU().ipu()).__name__
C["module_xpu_no_params_ok"] = lambda T: type(T.nn.Sequential(T.nn.ReLU()).xpu()).__name__

# ---- utils.data / compile ---------------------------------------------------------------------
C["dataloader_prefetch0_workers"] = lambda T: list(T.utils.data.DataLoader(range(3), num_workers=1, prefetch_factor=0))
C["dataloader_prefetch_neg_workers"] = lambda T: T.utils.data.DataLoader(range(3), num_workers=1, prefetch_factor=-1)
C["dataloader_prefetch1_workers_ok"] = lambda T: [b.tolist() for b in T.utils.data.DataLoader(range(3), num_workers=1,
                                                                                                prefetch_factor=1)]
C["compile_mode_list"] = lambda T: T.compile(lambda x: x, mode=["default"])
C["compile_mode_dict"] = lambda T: T.compile(lambda x: x, mode={"a": 1})
C["compile_mode_int"] = lambda T: T.compile(lambda x: x, mode=3)
C["compile_mode_bytes"] = lambda T: T.compile(lambda x: x, mode=b"default")

# ---- areas probed that already matched torch (kept as regression checks) ----------------------
L = lambda T: T.nn.Linear(2, 3)
M = lambda T: T.nn.Sequential(T.nn.Linear(2, 3), T.nn.ReLU(), T.nn.Linear(3, 1))
C["register_buffer_dotted"] = lambda T: L(T).register_buffer("a.b", None)
C["register_parameter_int_name"] = lambda T: L(T).register_parameter(3, None)
C["register_parameter_plain_tensor"] = lambda T: L(T).register_parameter("p", T.ones(2))
C["add_module_existing_attr"] = lambda T: (lambda m: (setattr(m, "foo", 1), m.add_module("foo", None)))(L(T))
C["register_buffer_before_init"] = lambda T: type("X", (T.nn.Module,), {
    "__init__": lambda self: self.register_buffer("b", None)})()
C["load_state_dict_shape"] = lambda T: L(T).load_state_dict({"weight": T.ones(2, 3), "bias": T.ones(3)}, strict=False)
C["load_state_dict_assign_shape"] = lambda T: L(T).load_state_dict({"weight": T.ones(2, 3), "bias": T.ones(3)},
                                                                    assign=True)
C["load_state_dict_not_mapping"] = lambda T: L(T).load_state_dict([("weight", T.ones(3, 2))])
C["load_state_dict_missing_ok"] = lambda T: sorted(L(T).load_state_dict({"weight": T.ones(3, 2)}, strict=False)
                                                   .missing_keys)
C["get_submodule_through_param"] = lambda T: M(T).get_submodule("0.weight")
C["get_parameter_of_buffer"] = lambda T: T.nn.BatchNorm1d(3).get_parameter("running_mean")
C["set_submodule_missing_strict"] = lambda T: M(T).set_submodule("5", T.nn.Tanh(), strict=True)
C["set_submodule_not_module"] = lambda T: M(T).set_submodule("1", 3)
C["apply_not_callable"] = lambda T: M(T).apply(3)
C["sequential_insert_not_module"] = lambda T: M(T).insert(0, 3)
C["conv2d_padding_mode_bad"] = lambda T: T.nn.Conv2d(2, 2, 3, padding_mode="constant")
C["conv2d_padding_same_stride2"] = lambda T: T.nn.Conv2d(2, 2, 3, padding="same", stride=2)
C["conv2d_groups_not_dividing"] = lambda T: T.nn.Conv2d(3, 4, 3, groups=2)
C["conv2d_dilation0"] = lambda T: T.nn.Conv2d(2, 2, 3, dilation=0)
C["lstm_proj_ge_hidden"] = lambda T: T.nn.LSTM(2, 3, proj_size=3)
C["rnn_dropout_big"] = lambda T: T.nn.GRU(2, 3, dropout=1.5)
C["transformer_dmodel_nhead"] = lambda T: T.nn.TransformerEncoderLayer(6, 4)
C["embedding_padding_idx_oor"] = lambda T: T.nn.Embedding(3, 2, padding_idx=3)
C["mha_kv_len_mismatch"] = lambda T: T.nn.MultiheadAttention(4, 2)(X(T, 3, 1, 4), X(T, 2, 1, 4), X(T, 3, 1, 4))
C["mha_mask_int"] = lambda T: T.nn.MultiheadAttention(4, 2)(X(T, 3, 1, 4), X(T, 3, 1, 4), X(T, 3, 1, 4),
                                                            attn_mask=X(T, 3, 3, dtype=T.int64))
C["lstm_hx_not_tuple"] = lambda T: T.nn.LSTM(2, 3)(X(T, 4, 1, 2), X(T, 1, 1, 3))
C["embedding_float_index"] = lambda T: T.nn.Embedding(4, 2)(T.tensor([0., 1.]))
C["group_norm_channels"] = lambda T: T.nn.GroupNorm(2, 4)(X(T, 1, 6, 2))
C["sgd_nesterov_dampening"] = lambda T: T.optim.SGD([T.nn.Parameter(X(T, 2))], lr=0.1, momentum=0.9, dampening=0.1,
                                                    nesterov=True)
C["adam_params_set"] = lambda T: T.optim.Adam({T.nn.Parameter(X(T, 2))})
C["adamw_beta1_one"] = lambda T: T.optim.AdamW([T.nn.Parameter(X(T, 2))], betas=(1.0, 0.9))
C["sgd_duplicate_groups"] = lambda T: (lambda p: T.optim.SGD([{"params": p}, {"params": p}], lr=0.1))(
    [T.nn.Parameter(X(T, 2))])
C["cosine_warm_restarts_T0_0"] = lambda T: T.optim.lr_scheduler.CosineAnnealingWarmRestarts(
    T.optim.SGD([T.nn.Parameter(X(T, 2))], lr=0.1), T_0=0)
C["onecycle_no_total_steps"] = lambda T: T.optim.lr_scheduler.OneCycleLR(T.optim.SGD([T.nn.Parameter(X(T, 2))], lr=0.1),
                                                                         0.1)
C["random_split_fractions_ok"] = lambda T: [len(s) for s in T.utils.data.random_split(
    range(6), [0.5, 0.5], generator=T.Generator().manual_seed(0))]
C["random_split_bad_sum"] = lambda T: T.utils.data.random_split(range(6), [3, 4])
C["random_split_bad_fractions"] = lambda T: T.utils.data.random_split(range(6), [0.5, 0.6])
C["batch_sampler_size0"] = lambda T: T.utils.data.BatchSampler(range(3), 0, False)
C["weighted_sampler_no_replacement_too_many"] = lambda T: list(T.utils.data.WeightedRandomSampler([1., 1.], 3,
                                                                                                  replacement=False))
C["dataloader_sampler_and_shuffle"] = lambda T: T.utils.data.DataLoader(range(3), sampler=[0, 1], shuffle=True)

CASES = C
GIST = {
    "adaptive_avg2d_out_str": "must be tuple of ints",
    "adaptive_max2d_out_bool": "must be tuple of ints, not bool",
    "adaptive_avg3d_out_float_item": "must be tuple of ints",
    "adaptive_max3d_out_str_items": "must be tuple of ints",
    "adaptive_avg2d_int_1d": "Expected 3D or 4D tensor",
    "adaptive_avg2d_int_mean": "could not infer output dtype",
    "adaptive_max3d_int_neg": "negative dimension",
    "conv2d_bool_both_kernel": "not implemented for 'Bool'",
    "dataloader_prefetch0_workers": "prefetch_factor must be greater than 0",
    "compile_mode_list": "unhashable type: 'list'",
    "threshold_complex": "not implemented for 'ComplexFloat'",
    "fractional_max_pool2d_complex": "not implemented for 'ComplexFloat'",
    "cross_map_lrn_int64": "can't be cast to the desired output type Long",
    "cross_map_lrn_bool": "can't be cast to the desired output type Bool",
    "cross_map_lrn_no_channels": "index 0 out of range",
    "dropout1d_complex": "not implemented for 'ComplexFloat'",
    "rrelu_inplace_complex": "not implemented for 'ComplexFloat'",
    "pdist_complex": "pdist only supports floating-point dtypes",
    "sdpa_bool": "expected scalar type Float but found Bool",
    "cross_entropy_bool_probs": "Expected floating point type for target with class probabilities",
    "lstm_packed_int": "mat1 and mat2 must have the same dtype",
    "mha_attn_mask_half": "Input dtypes must be the same",
    "group_norm_complex_float_weight": "mixed dtype (CPU): all inputs must share same datatype",
    "layer_norm_int_float_bias": "mixed dtype (CPU): all inputs must share same datatype",
    "module_ipu": "not linked with support for ipu devices",
    "module_xpu": "not compiled with XPU enabled",
    "embedding_bag_complex_2d": "\"arange_cpu\" not implemented for 'ComplexFloat'",
}
test_same_class_as_torch, test_message_gist = table_tests(CASES, GIST, torch, tracegrad)

test_accepted_value_matches_torch = value_test(CASES, [k for k in CASES if k.endswith("_ok")], torch, tracegrad,
                                               close=True)


def test_mha_float_mask_under_autocast_is_cast_as_torch():
    """The mask dtype check of MultiheadAttention's weights path (above) must not refuse a float
    mask under autocast: torch's baddbmm there casts it to the lower precision too."""
    torch = pytest.importorskip("torch")
    out = {}
    for mod in (torch, tracegrad):
        m = mod.nn.MultiheadAttention(8, 2, batch_first=True)
        with mod.no_grad():
            for p in m.parameters():
                p.copy_(mod.linspace(-0.5, 0.5, p.numel()).reshape(p.shape))
        x = mod.linspace(-1, 1, 80).reshape(2, 5, 8)
        mask = mod.nn.Transformer.generate_square_subsequent_mask(5)
        with mod.autocast("cpu", dtype=mod.bfloat16):
            y, w = m(x, x, x, attn_mask=mask)
        out[mod.__name__] = (str(y.dtype).split(".")[-1], str(w.dtype).split(".")[-1],
                             y.detach().float().numpy(), w.detach().float().numpy())
    assert out["tracegrad"][:2] == out["torch"][:2] == ("bfloat16", "bfloat16")
    np.testing.assert_allclose(out["tracegrad"][2], out["torch"][2], atol=0.05)
    np.testing.assert_allclose(out["tracegrad"][3], out["torch"][3], atol=0.02)
