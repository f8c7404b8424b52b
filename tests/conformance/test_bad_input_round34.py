"""Bad-input parity, round 34: a probe of ~540 wrong (and a few right) calls in areas earlier
rounds covered lightly -- the nn.Module API (register_buffer/register_parameter/add_module with bad
names and types, load_state_dict strict and shape mismatches, state-dict and forward/backward
hooks, apply/to/train with bad arguments), layer constructors and forwards (Conv/ConvTranspose
groups and padding='same', Embedding padding_idx, RNN/LSTM/GRU arguments and ranks,
MultiheadAttention masks, TransformerEncoderLayer, Upsample/interpolate, the norms), optimizers'
and lr_schedulers' arguments and load_state_dict, torch.utils.data (DataLoader option combinations,
random_split, Subset/ConcatDataset/TensorDataset indexing, samplers, default_collate), autograd
(grad/backward misuse, hooks returning a wrong shape/dtype, autograd.functional), and tensor
creation (arange/linspace/full/randint/tensor/device/dtype arguments).

Fixed here: ``Module.to(memory_format=3)`` (an int or string for the memory format) ran and kept
it silently; torch's parser raises TypeError -- now TypeError naming ``memory_format``. Every other
case raised torch 2.13's exception class already; the table keeps that so. One difference is left, recorded as a strict xfail:
``nn.ModuleList().insert(0, 3)`` -- torch stores the non-Module without a check, tracegrad raises
TypeError (as its ``append``/``__setitem__`` and torch's own ``append`` do).

Each call runs under torch (the oracle) and tracegrad: the same exception class (or none), no text
of the layers below tracegrad; ``_ok`` calls are ones torch accepts, and those with a
deterministic value must give torch's value.
"""
import pytest

import tracegrad

from _bad_input_helpers import outcome, table_tests, value_test

torch = pytest.importorskip("torch")

C = {}
L = lambda T: T.nn.Linear(2, 2)
C["regbuf_dot"] = lambda T: L(T).register_buffer("a.b", T.ones(1))
C["regbuf_empty"] = lambda T: L(T).register_buffer("", T.ones(1))
C["regbuf_int"] = lambda T: L(T).register_buffer(3, T.ones(1))
C["regbuf_list"] = lambda T: L(T).register_buffer("a", [1])
C["regbuf_existing"] = lambda T: L(T).register_buffer("weight", T.ones(1))
C["regparam_tensor"] = lambda T: L(T).register_parameter("a", T.ones(1))
C["regparam_dot"] = lambda T: L(T).register_parameter("a.b", None)
C["regparam_existing_attr"] = lambda T: (lambda m: (setattr(m, "q", 1), m.register_parameter("q", None)))(L(T))
C["addmod_notmod"] = lambda T: L(T).add_module("a", 3)
C["addmod_dot"] = lambda T: L(T).add_module("a.b", T.nn.ReLU())
C["addmod_empty"] = lambda T: L(T).add_module("", T.nn.ReLU())
C["addmod_int"] = lambda T: L(T).add_module(1, T.nn.ReLU())
C["addmod_existing_attr"] = lambda T: L(T).add_module("weight", T.nn.ReLU())
C["get_submodule_missing"] = lambda T: L(T).get_submodule("x")
C["get_parameter_missing"] = lambda T: L(T).get_parameter("x")
C["get_buffer_missing"] = lambda T: L(T).get_buffer("x")
C["get_parameter_notparam"] = lambda T: T.nn.BatchNorm1d(2).get_parameter("running_mean")
C["lsd_missing"] = lambda T: L(T).load_state_dict({"weight": T.ones(2, 2)})
C["lsd_missing_nostrict_ok"] = lambda T: L(T).load_state_dict({"weight": T.ones(2, 2)}, strict=False)
C["lsd_shape"] = lambda T: L(T).load_state_dict({"weight": T.ones(3, 2), "bias": T.ones(2)})
C["lsd_shape_nostrict"] = lambda T: L(T).load_state_dict({"weight": T.ones(3, 2), "bias": T.ones(2)}, strict=False)
C["lsd_notdict"] = lambda T: L(T).load_state_dict([1])
C["lsd_nontensor"] = lambda T: L(T).load_state_dict({"weight": [[1.,2.],[3.,4.]], "bias": T.ones(2)})
C["apply_notcallable"] = lambda T: L(T).apply(3)
C["to_badstr"] = lambda T: L(T).to("foo")
C["to_int"] = lambda T: L(T).to(3.5)
C["to_intdtype"] = lambda T: L(T).to(T.int32)
C["named_modules_prefix_ok"] = lambda T: list(L(T).named_modules(prefix="p"))
C["setattr_param_tensor"] = lambda T: setattr(L(T), "weight", T.ones(2, 2))
C["setattr_mod_int"] = lambda T: (lambda m: (m.add_module("s", T.nn.ReLU()), setattr(m, "s", 3)))(L(T))
C["setattr_buf_int"] = lambda T: (lambda m: (m.register_buffer("bb", T.ones(1)), setattr(m, "bb", 3)))(L(T))
C["requires_grad_int"] = lambda T: L(T).requires_grad_(3)
C["train_str"] = lambda T: L(T).train("x")
C["conv_groups"] = lambda T: T.nn.Conv2d(3, 4, 3, groups=2)
C["conv_groups_out"] = lambda T: T.nn.Conv2d(4, 3, 3, groups=2)
C["conv_groups0"] = lambda T: T.nn.Conv2d(4, 4, 3, groups=0)
C["conv_same_stride"] = lambda T: T.nn.Conv2d(4, 4, 3, stride=2, padding="same")
C["conv_bad_padstr"] = lambda T: T.nn.Conv2d(4, 4, 3, padding="foo")
C["conv_padmode"] = lambda T: T.nn.Conv2d(4, 4, 3, padding_mode="foo")
C["convT_same"] = lambda T: T.nn.ConvTranspose2d(4, 4, 3, padding="same")
C["convT_padmode"] = lambda T: T.nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect")
C["conv_neg_pad"] = lambda T: T.nn.Conv2d(4, 4, 3, padding=-1)
C["conv_ks0"] = lambda T: T.nn.Conv2d(4, 4, 0)
C["conv_out0_ok"] = lambda T: T.nn.Conv2d(4, 0, 3)
C["conv_in_chan"] = lambda T: T.nn.Conv2d(3, 4, 3)(T.ones(1, 4, 5, 5))
C["conv_small"] = lambda T: T.nn.Conv2d(3, 4, 3)(T.ones(1, 3, 2, 2))
C["conv_rank"] = lambda T: T.nn.Conv2d(3, 4, 3)(T.ones(5, 5))
C["emb_pad_oob"] = lambda T: T.nn.Embedding(3, 2, padding_idx=3)
C["emb_pad_neg_oob"] = lambda T: T.nn.Embedding(3, 2, padding_idx=-4)
C["emb_pad_neg_ok"] = lambda T: T.nn.Embedding(3, 2, padding_idx=-1).padding_idx
C["emb_float_idx"] = lambda T: T.nn.Embedding(3, 2)(T.ones(2))
C["emb_oob_idx"] = lambda T: T.nn.Embedding(3, 2)(T.tensor([3]))
C["emb_weight_shape"] = lambda T: T.nn.Embedding(3, 2, _weight=T.ones(2, 2))
C["emb_from_pretrained_1d"] = lambda T: T.nn.Embedding.from_pretrained(T.ones(3))
C["emb_maxnorm_ok"] = lambda T: T.nn.Embedding(3, 2, max_norm=1.0)(T.tensor([0, 1]))
C["rnn_nonlin"] = lambda T: T.nn.RNN(2, 3, nonlinearity="foo")
C["rnn_dropout"] = lambda T: T.nn.RNN(2, 3, dropout=2.0)
C["rnn_dropout_bool"] = lambda T: T.nn.RNN(2, 3, dropout=True)
C["rnn_layers0"] = lambda T: T.nn.RNN(2, 3, num_layers=0)
C["rnn_hidden0"] = lambda T: T.nn.RNN(2, 0)
C["rnn_hidden_float"] = lambda T: T.nn.RNN(2, 2.5)
C["lstm_proj_big"] = lambda T: T.nn.LSTM(2, 3, proj_size=3)
C["lstm_proj_neg"] = lambda T: T.nn.LSTM(2, 3, proj_size=-1)
C["gru_proj"] = lambda T: T.nn.GRU(2, 3, proj_size=1)
C["lstm_rank4"] = lambda T: T.nn.LSTM(2, 3)(T.ones(1, 1, 1, 2))
C["lstm_wrong_feat"] = lambda T: T.nn.LSTM(2, 3)(T.ones(1, 1, 4))
C["lstm_h_notuple"] = lambda T: T.nn.LSTM(2, 3)(T.ones(1, 1, 2), T.zeros(1, 1, 3))
C["lstm_h_shape"] = lambda T: T.nn.LSTM(2, 3)(T.ones(1, 1, 2), (T.zeros(1, 2, 3), T.zeros(1, 2, 3)))
C["gru_h_shape"] = lambda T: T.nn.GRU(2, 3)(T.ones(1, 1, 2), T.zeros(2, 1, 3))
C["gru_unbatched_h3d"] = lambda T: T.nn.GRU(2, 3)(T.ones(1, 2), T.zeros(1, 1, 3))
C["rnncell_rank3"] = lambda T: T.nn.RNNCell(2, 3)(T.ones(1, 1, 2))
C["lstmcell_feat"] = lambda T: T.nn.LSTMCell(2, 3)(T.ones(1, 4))
C["mha_embed_div"] = lambda T: T.nn.MultiheadAttention(5, 2)
C["mha_mask_shape"] = lambda T: (lambda m, x: m(x, x, x, attn_mask=T.ones(3, 3)))(T.nn.MultiheadAttention(4, 2), T.ones(2, 1, 4))
C["mha_mask_3d_shape"] = lambda T: (lambda m, x: m(x, x, x, attn_mask=T.ones(3, 2, 2)))(T.nn.MultiheadAttention(4, 2), T.ones(2, 1, 4))
C["mha_mask_int"] = lambda T: (lambda m, x: m(x, x, x, attn_mask=T.ones(2, 2, dtype=T.int64)))(T.nn.MultiheadAttention(4, 2), T.ones(2, 1, 4))
C["mha_kpm_shape"] = lambda T: (lambda m, x: m(x, x, x, key_padding_mask=T.zeros(1, 3, dtype=T.bool)))(T.nn.MultiheadAttention(4, 2), T.ones(2, 1, 4))
C["mha_kpm_int"] = lambda T: (lambda m, x: m(x, x, x, key_padding_mask=T.zeros(1, 2, dtype=T.int64)))(T.nn.MultiheadAttention(4, 2), T.ones(2, 1, 4))
C["mha_rank4"] = lambda T: (lambda m, x: m(x, x, x))(T.nn.MultiheadAttention(4, 2), T.ones(2, 1, 1, 4))
C["mha_kdim_ok"] = lambda T: T.nn.MultiheadAttention(4, 2, kdim=3, vdim=5)(T.ones(2, 1, 4), T.ones(3, 1, 3), T.ones(3, 1, 5))[0].shape
C["tel_nhead"] = lambda T: T.nn.TransformerEncoderLayer(5, 2)
C["tel_activation"] = lambda T: T.nn.TransformerEncoderLayer(4, 2, activation="foo")
C["tel_activation_int"] = lambda T: T.nn.TransformerEncoderLayer(4, 2, activation=3)
C["tel_ffn0_ok"] = lambda T: T.nn.TransformerEncoderLayer(4, 2, dim_feedforward=1)
C["up_mode"] = lambda T: T.nn.Upsample(scale_factor=2, mode="foo")(T.ones(1, 1, 2, 2))
C["up_align_nearest"] = lambda T: T.nn.Upsample(scale_factor=2, mode="nearest", align_corners=True)(T.ones(1, 1, 2, 2))
C["interp_both"] = lambda T: T.nn.functional.interpolate(T.ones(1, 1, 2, 2), size=4, scale_factor=2)
C["interp_none"] = lambda T: T.nn.functional.interpolate(T.ones(1, 1, 2, 2))
C["interp_bilinear_3d"] = lambda T: T.nn.functional.interpolate(T.ones(1, 1, 2), scale_factor=2, mode="bilinear")
C["interp_linear_4d"] = lambda T: T.nn.functional.interpolate(T.ones(1, 1, 2, 2), scale_factor=2, mode="linear")
C["interp_size_len"] = lambda T: T.nn.functional.interpolate(T.ones(1, 1, 2, 2), size=(2, 2, 2))
C["interp_sf_len"] = lambda T: T.nn.functional.interpolate(T.ones(1, 1, 2, 2), scale_factor=(2., 2., 2.))
C["interp_rank2"] = lambda T: T.nn.functional.interpolate(T.ones(2, 2), scale_factor=2)
C["interp_neg_size"] = lambda T: T.nn.functional.interpolate(T.ones(1, 1, 2, 2), size=-1)
C["interp_zero_sf"] = lambda T: T.nn.functional.interpolate(T.ones(1, 1, 2, 2), scale_factor=0.0)
C["interp_antialias_nearest"] = lambda T: T.nn.functional.interpolate(T.ones(1, 1, 2, 2), scale_factor=2, antialias=True)
C["interp_bicubic_ok"] = lambda T: T.nn.functional.interpolate(T.ones(1, 1, 2, 2), scale_factor=2, mode="bicubic", align_corners=True).sum().item()
C["bn_wrong_c"] = lambda T: T.nn.BatchNorm1d(3)(T.ones(2, 4))
C["bn_rank3_2d"] = lambda T: T.nn.BatchNorm2d(3)(T.ones(2, 3, 4))
C["bn_one_sample"] = lambda T: T.nn.BatchNorm1d(3)(T.ones(1, 3))
C["bn2d_one_ok"] = lambda T: T.nn.BatchNorm2d(3)(T.ones(1, 3, 2, 2)).shape
C["gn_div"] = lambda T: T.nn.GroupNorm(3, 4)
C["gn_wrong_c"] = lambda T: T.nn.GroupNorm(2, 4)(T.ones(2, 6))
C["gn_groups0"] = lambda T: T.nn.GroupNorm(0, 4)
C["ln_wrong"] = lambda T: T.nn.LayerNorm(3)(T.ones(2, 4))
C["ln_tuple_wrong"] = lambda T: T.nn.LayerNorm((2, 3))(T.ones(3, 2))
C["in_wrong_c"] = lambda T: T.nn.InstanceNorm1d(3, affine=True)(T.ones(2, 4, 5))
P = lambda T: [T.nn.Parameter(T.ones(2))]
C["sgd_neg_lr"] = lambda T: T.optim.SGD(P(T), lr=-1)
C["sgd_neg_mom"] = lambda T: T.optim.SGD(P(T), lr=0.1, momentum=-1)
C["sgd_nesterov"] = lambda T: T.optim.SGD(P(T), lr=0.1, nesterov=True)
C["sgd_neg_wd"] = lambda T: T.optim.SGD(P(T), lr=0.1, weight_decay=-1)
C["sgd_lr_tensor_ok"] = lambda T: T.optim.SGD(P(T), lr=T.tensor(0.1))
C["sgd_lr_str"] = lambda T: T.optim.SGD(P(T), lr="a")
C["adam_betas"] = lambda T: T.optim.Adam(P(T), betas=(1.0, 0.9))
C["adam_betas2"] = lambda T: T.optim.Adam(P(T), betas=(0.9, -0.1))
C["adam_eps"] = lambda T: T.optim.Adam(P(T), eps=-1)
C["adam_betas_len"] = lambda T: T.optim.Adam(P(T), betas=(0.9,))
C["adamw_wd"] = lambda T: T.optim.AdamW(P(T), weight_decay=-1)
C["rmsprop_alpha"] = lambda T: T.optim.RMSprop(P(T), alpha=-1)
C["adagrad_lrdecay"] = lambda T: T.optim.Adagrad(P(T), lr_decay=-1)
C["opt_empty"] = lambda T: T.optim.SGD([], lr=0.1)
C["opt_tensor_params"] = lambda T: T.optim.SGD(T.ones(2, requires_grad=True), lr=0.1)
C["opt_dup_groups"] = lambda T: (lambda p: T.optim.SGD([{"params": p}, {"params": p}], lr=0.1))(P(T))
C["opt_dup_in_group"] = lambda T: (lambda p: T.optim.SGD(p + p, lr=0.1))(P(T))
C["opt_nonleaf"] = lambda T: T.optim.SGD([T.ones(2, requires_grad=True) * 2], lr=0.1)
C["opt_int_param"] = lambda T: T.optim.SGD([3], lr=0.1)
C["opt_add_group_dup"] = lambda T: (lambda p: T.optim.SGD(p, lr=0.1).add_param_group({"params": p}))(P(T))
C["opt_add_group_noparams"] = lambda T: T.optim.SGD(P(T), lr=0.1).add_param_group({"lr": 0.1})
C["opt_lsd_groups"] = lambda T: T.optim.SGD(P(T), lr=0.1).load_state_dict({"state": {}, "param_groups": []})
C["opt_lsd_sizes"] = lambda T: T.optim.SGD(P(T), lr=0.1).load_state_dict({"state": {}, "param_groups": [{"params": [0, 1], "lr": 0.1}]})
C["opt_no_lr"] = lambda T: T.optim.SGD(P(T))
C["opt_zero_grad_int_ok"] = lambda T: T.optim.SGD(P(T), lr=0.1).zero_grad(set_to_none=0)
O = lambda T: T.optim.SGD(P(T), lr=0.1)
C["steplr_nostep"] = lambda T: T.optim.lr_scheduler.StepLR(O(T))
C["steplr_notopt"] = lambda T: T.optim.lr_scheduler.StepLR(3, 1)
C["multistep_unsorted_ok"] = lambda T: T.optim.lr_scheduler.MultiStepLR(O(T), [3, 1]).milestones
C["lambdalr_len"] = lambda T: T.optim.lr_scheduler.LambdaLR(O(T), [lambda e: 1, lambda e: 1])
C["onecycle_nototal"] = lambda T: T.optim.lr_scheduler.OneCycleLR(O(T), max_lr=0.1)
C["onecycle_pct"] = lambda T: T.optim.lr_scheduler.OneCycleLR(O(T), max_lr=0.1, total_steps=10, pct_start=2)
C["onecycle_anneal"] = lambda T: T.optim.lr_scheduler.OneCycleLR(O(T), max_lr=0.1, total_steps=10, anneal_strategy="foo")
C["onecycle_total0"] = lambda T: T.optim.lr_scheduler.OneCycleLR(O(T), max_lr=0.1, total_steps=0)
C["onecycle_overstep"] = lambda T: (lambda s: [s.step() for _ in range(3)])(T.optim.lr_scheduler.OneCycleLR(O(T), max_lr=0.1, total_steps=2))
C["cosine_warm_T0"] = lambda T: T.optim.lr_scheduler.CosineAnnealingWarmRestarts(O(T), T_0=0)
C["cosine_warm_Tmult"] = lambda T: T.optim.lr_scheduler.CosineAnnealingWarmRestarts(O(T), T_0=2, T_mult=0)
C["cosine_warm_Tfloat"] = lambda T: T.optim.lr_scheduler.CosineAnnealingWarmRestarts(O(T), T_0=2.5)
C["plateau_mode"] = lambda T: T.optim.lr_scheduler.ReduceLROnPlateau(O(T), mode="foo")
C["plateau_factor"] = lambda T: T.optim.lr_scheduler.ReduceLROnPlateau(O(T), factor=1.0)
C["plateau_thresh_mode"] = lambda T: T.optim.lr_scheduler.ReduceLROnPlateau(O(T), threshold_mode="foo")
C["plateau_minlr_len"] = lambda T: T.optim.lr_scheduler.ReduceLROnPlateau(O(T), min_lr=[0.1, 0.2])
C["cyclic_mode"] = lambda T: T.optim.lr_scheduler.CyclicLR(O(T), 0.01, 0.1, mode="foo")
C["cyclic_nomomentum"] = lambda T: T.optim.lr_scheduler.CyclicLR(T.optim.Adagrad(P(T)), 0.01, 0.1)
C["linear_start0"] = lambda T: T.optim.lr_scheduler.LinearLR(O(T), start_factor=0)
C["linear_end"] = lambda T: T.optim.lr_scheduler.LinearLR(O(T), end_factor=2)
C["constant_factor"] = lambda T: T.optim.lr_scheduler.ConstantLR(O(T), factor=2)
C["sequential_milestones"] = lambda T: (lambda o: T.optim.lr_scheduler.SequentialLR(o, [T.optim.lr_scheduler.StepLR(o, 1)], milestones=[1]))(O(T))
C["poly_ok"] = lambda T: T.optim.lr_scheduler.PolynomialLR(O(T), total_iters=2, power=2.0).get_last_lr()
D = lambda T: T.utils.data.TensorDataset(T.arange(6.))
C["dl_bs0"] = lambda T: T.utils.data.DataLoader(D(T), batch_size=0)
C["dl_bs_neg"] = lambda T: T.utils.data.DataLoader(D(T), batch_size=-1)
C["dl_bs_float"] = lambda T: T.utils.data.DataLoader(D(T), batch_size=2.5)
C["dl_sampler_shuffle"] = lambda T: T.utils.data.DataLoader(D(T), sampler=[0, 1], shuffle=True)
C["dl_batchsampler_bs"] = lambda T: T.utils.data.DataLoader(D(T), batch_sampler=[[0, 1]], batch_size=2)
C["dl_batchsampler_droplast"] = lambda T: T.utils.data.DataLoader(D(T), batch_sampler=[[0, 1]], drop_last=True)
C["dl_workers_neg"] = lambda T: T.utils.data.DataLoader(D(T), num_workers=-1)
C["dl_timeout_neg"] = lambda T: T.utils.data.DataLoader(D(T), timeout=-1)
C["dl_prefetch_noworkers"] = lambda T: T.utils.data.DataLoader(D(T), prefetch_factor=2)
C["dl_persistent_noworkers"] = lambda T: T.utils.data.DataLoader(D(T), persistent_workers=True)
C["dl_bsnone_ok"] = lambda T: [b[0].tolist() for b in T.utils.data.DataLoader(D(T), batch_size=None)][:2]
C["dl_len_ok"] = lambda T: len(T.utils.data.DataLoader(D(T), batch_size=4))
C["rs_sum"] = lambda T: T.utils.data.random_split(range(10), [3, 3])
C["rs_frac_sum"] = lambda T: T.utils.data.random_split(range(10), [0.5, 0.6])
C["rs_frac_neg"] = lambda T: T.utils.data.random_split(range(10), [1.5, -0.5])
C["rs_neg"] = lambda T: T.utils.data.random_split(range(10), [11, -1])
C["rs_frac_ok"] = lambda T: [len(s) for s in T.utils.data.random_split(range(10), [0.33, 0.33, 0.34])]
C["subset_oob"] = lambda T: T.utils.data.Subset(range(3), [5])[0]
C["concat_empty"] = lambda T: T.utils.data.ConcatDataset([])
C["concat_oob"] = lambda T: T.utils.data.ConcatDataset([range(2), range(2)])[4]
C["concat_neg_oob"] = lambda T: T.utils.data.ConcatDataset([range(2), range(2)])[-5]
C["concat_neg_ok"] = lambda T: T.utils.data.ConcatDataset([range(2), range(3)])[-1]
C["concat_iterable"] = lambda T: T.utils.data.ConcatDataset([T.utils.data.IterableDataset()])
C["tensords_sizes"] = lambda T: T.utils.data.TensorDataset(T.ones(2), T.ones(3))
C["tensords_oob"] = lambda T: D(T)[7]
C["randsampler_num"] = lambda T: T.utils.data.RandomSampler(range(3), num_samples=0)
C["randsampler_repl"] = lambda T: T.utils.data.RandomSampler(range(3), replacement=1)
C["batchsampler_bs"] = lambda T: T.utils.data.BatchSampler(range(3), 0, False)
C["batchsampler_dl"] = lambda T: T.utils.data.BatchSampler(range(3), 2, 1)
C["wrs_neg"] = lambda T: list(T.utils.data.WeightedRandomSampler([1., -1.], 2))
C["wrs_num"] = lambda T: T.utils.data.WeightedRandomSampler([1., 1.], 0)
C["wrs_2d"] = lambda T: T.utils.data.WeightedRandomSampler([[1., 1.]], 2)
C["default_collate_mixed"] = lambda T: T.utils.data.default_collate([T.ones(2), T.ones(3)])
C["default_collate_obj"] = lambda T: T.utils.data.default_collate([object(), object()])
def gr(T, **kw):
    x = T.ones(2, requires_grad=True); return T.autograd.grad(x * 2, x, **kw)
C["grad_nonscalar"] = lambda T: gr(T)
C["grad_go_shape"] = lambda T: gr(T, grad_outputs=T.ones(3))
C["grad_go_dtype"] = lambda T: gr(T, grad_outputs=T.ones(2, dtype=T.float64))
C["grad_go_int"] = lambda T: gr(T, grad_outputs=T.ones(2, dtype=T.int64))
C["grad_go_len"] = lambda T: gr(T, grad_outputs=[T.ones(2), T.ones(2)])
C["grad_go_list"] = lambda T: gr(T, grad_outputs=[1.0, 1.0])
C["grad_unused"] = lambda T: (lambda x, y: T.autograd.grad((x * 2).sum(), [x, y]))(T.ones(2, requires_grad=True), T.ones(2, requires_grad=True))
C["grad_unused_ok"] = lambda T: (lambda x, y: T.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)[1])(T.ones(2, requires_grad=True), T.ones(2, requires_grad=True))
C["grad_materialize_noallow"] = lambda T: (lambda x, y: T.autograd.grad((x * 2).sum(), [x, y], materialize_grads=True, allow_unused=False))(T.ones(2, requires_grad=True), T.ones(2, requires_grad=True))
C["grad_noreq"] = lambda T: (lambda x: T.autograd.grad(x.sum(), x))(T.ones(2))
C["grad_inputs_empty"] = lambda T: (lambda x: T.autograd.grad((x*2).sum(), []))(T.ones(2, requires_grad=True))
C["grad_inputs_int"] = lambda T: (lambda x: T.autograd.grad((x*2).sum(), 3))(T.ones(2, requires_grad=True))
C["backward_twice"] = lambda T: (lambda x: (lambda y: (y.backward(), y.backward()))((x.exp()).sum()))(T.ones(2, requires_grad=True))
C["backward_nonscalar"] = lambda T: (T.ones(2, requires_grad=True) * 2).backward()
C["backward_gradient_shape"] = lambda T: (T.ones(2, requires_grad=True) * 2).backward(T.ones(3))
C["backward_gradient_int"] = lambda T: (T.ones(2, requires_grad=True) * 2).backward(T.ones(2, dtype=T.int64))
C["backward_inputs_empty"] = lambda T: (T.ones(2, requires_grad=True) * 2).sum().backward(inputs=[])
C["backward_noreq"] = lambda T: T.ones(2).sum().backward()
C["hook_wrong_shape"] = lambda T: (lambda x: (x.register_hook(lambda g: T.ones(3)), (x * 2).sum().backward()))(T.ones(2, requires_grad=True))
C["hook_wrong_dtype"] = lambda T: (lambda x: (x.register_hook(lambda g: g.double()), (x * 2).sum().backward(), x.grad.dtype))(T.ones(2, requires_grad=True))
C["hook_int_ret"] = lambda T: (lambda x: (x.register_hook(lambda g: 3), (x * 2).sum().backward()))(T.ones(2, requires_grad=True))
C["hook_noreq"] = lambda T: T.ones(2).register_hook(lambda g: g)
C["hook_nonleaf_wrong_shape"] = lambda T: (lambda x: (lambda y: (y.register_hook(lambda g: T.ones(3)), (y * 2).sum().backward()))(x * 3))(T.ones(2, requires_grad=True))
C["jac_notcallable"] = lambda T: T.autograd.functional.jacobian(3, T.ones(2))
C["jac_nontensor"] = lambda T: T.autograd.functional.jacobian(lambda x: x * 2, [1.0])
C["jac_returns_int"] = lambda T: T.autograd.functional.jacobian(lambda x: 3, T.ones(2))
C["jac_strategy"] = lambda T: T.autograd.functional.jacobian(lambda x: x * 2, T.ones(2), strategy="foo")
C["jac_fwd_novec"] = lambda T: T.autograd.functional.jacobian(lambda x: x * 2, T.ones(2), strategy="forward-mode")
C["jac_strict_indep"] = lambda T: T.autograd.functional.jacobian(lambda x: T.ones(2), T.ones(2), strict=True)
C["hess_nonscalar"] = lambda T: T.autograd.functional.hessian(lambda x: x * 2, T.ones(2))
C["hess_tuple_out"] = lambda T: T.autograd.functional.hessian(lambda x: (x.sum(), x.sum()), T.ones(2))
C["vjp_v_shape"] = lambda T: T.autograd.functional.vjp(lambda x: x * 2, T.ones(2), T.ones(3))
C["vjp_v_none_nonscalar"] = lambda T: T.autograd.functional.vjp(lambda x: x * 2, T.ones(2))
C["jvp_v_shape"] = lambda T: T.autograd.functional.jvp(lambda x: x * 2, T.ones(2), T.ones(3))
C["hvp_v_shape"] = lambda T: T.autograd.functional.hvp(lambda x: (x**2).sum(), T.ones(2), T.ones(3))
C["arange_step0"] = lambda T: T.arange(0, 5, 0)
C["arange_wrongdir"] = lambda T: T.arange(5, 0, 1)
C["arange_str"] = lambda T: T.arange("a")
C["arange_inf"] = lambda T: T.arange(0, float("inf"))
C["arange_nan"] = lambda T: T.arange(float("nan"))
C["arange_intdtype_float_step_truncates_to_0"] = lambda T: T.arange(0, 2.5, 0.5, dtype=T.int64).tolist()
C["arange_bool"] = lambda T: T.arange(3, dtype=T.bool)
C["linspace_neg"] = lambda T: T.linspace(0, 1, -1)
C["linspace_float_steps"] = lambda T: T.linspace(0, 1, 2.5)
C["linspace_tensor2d"] = lambda T: T.linspace(T.ones(2), 1, 3)
C["linspace_int_ok"] = lambda T: T.linspace(0, 10, 4, dtype=T.int64).tolist()
C["logspace_neg"] = lambda T: T.logspace(0, 1, -2)
C["full_nosize"] = lambda T: T.full(3, 1.0)
C["full_neg"] = lambda T: T.full((-1,), 1.0)
C["full_str"] = lambda T: T.full((2,), "a")
C["full_complex_int"] = lambda T: T.full((2,), 1j, dtype=T.int64)
C["full_bool_ok"] = lambda T: T.full((2,), True).dtype
C["randint_lowhigh"] = lambda T: T.randint(5, 3, (2,))
C["randint_eq"] = lambda T: T.randint(3, 3, (2,))
C["randint_nosize"] = lambda T: T.randint(5)
C["randint_float_dtype"] = lambda T: T.randint(5, (2,), dtype=T.float32).dtype
C["randint_bool_dtype"] = lambda T: T.randint(5, (2,), dtype=T.bool)
C["randint_uint8_over"] = lambda T: T.randint(300, (2,), dtype=T.uint8)
C["randint_size_int"] = lambda T: T.randint(5, 2)
C["zeros_baddevice"] = lambda T: T.zeros(2, device="foo")
C["zeros_baddevice_idx"] = lambda T: T.zeros(2, device="cpu:x")
C["zeros_dtype_str"] = lambda T: T.zeros(2, dtype="float32")
C["zeros_dtype_py"] = lambda T: T.zeros(2, dtype=float).dtype
C["device_str_bad"] = lambda T: T.device("foo")
C["device_neg"] = lambda T: T.device("cpu", -1)
C["device_dup_idx"] = lambda T: T.device("cpu:0", 0)
C["empty_neg"] = lambda T: T.empty(-2)
C["ones_float_size"] = lambda T: T.ones(2.5)
C["eye_neg"] = lambda T: T.eye(-1)
C["eye_m_neg"] = lambda T: T.eye(2, -1)
C["tensor_ragged"] = lambda T: T.tensor([[1, 2], [3]])
C["tensor_str"] = lambda T: T.tensor(["a"])
C["tensor_mixed_ok"] = lambda T: T.tensor([1, 2.5, True]).dtype
C["tensor_overflow"] = lambda T: T.tensor([2**70])
C["tensor_int8_overflow"] = lambda T: T.tensor([300], dtype=T.int8)
C["randn_gen_type"] = lambda T: T.randn(2, generator=3)
C["normal_std_neg"] = lambda T: T.normal(0.0, -1.0, (2,))
C["rand_int_dtype"] = lambda T: T.rand(2, dtype=T.int64)
C["randperm_neg"] = lambda T: T.randperm(-1)
C["multinomial_neg"] = lambda T: T.multinomial(T.tensor([1., -1.]), 1)
C["multinomial_norepl"] = lambda T: T.multinomial(T.tensor([1., 1.]), 3)
C["tril_indices_neg"] = lambda T: T.tril_indices(-1, 2)
C["complex_int"] = lambda T: T.complex(T.ones(2, dtype=T.int64), T.ones(2, dtype=T.int64))
C["polar_int"] = lambda T: T.polar(T.ones(2, dtype=T.int64), T.ones(2, dtype=T.int64))
C["empty_strided_neg"] = lambda T: T.empty_strided((2,), (-1,))
C["as_tensor_str"] = lambda T: T.as_tensor("abc")
C["from_numpy_list"] = lambda T: T.from_numpy([1, 2])
C["zeros_like_list"] = lambda T: T.zeros_like([1, 2])
C["full_like_str"] = lambda T: T.full_like(T.ones(2), "a")
C["clip_grad_norm_type"] = lambda T: T.nn.utils.clip_grad_norm_(P(T), 1.0, norm_type="foo")
C["clip_grad_nonfinite"] = lambda T: (lambda p: (setattr(p[0], "grad", T.tensor([float("inf"), 1.])), T.nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)))(P(T))
C["p2v_notensor"] = lambda T: T.nn.utils.parameters_to_vector([3])
C["v2p_len"] = lambda T: T.nn.utils.vector_to_parameters(T.ones(1), P(T))
C["v2p_nottensor"] = lambda T: T.nn.utils.vector_to_parameters([1., 1.], P(T))
C["seq_getitem_oob"] = lambda T: T.nn.Sequential(T.nn.ReLU())[3]
C["seq_getitem_str"] = lambda T: T.nn.Sequential(T.nn.ReLU())["a"]
C["ml_append_int"] = lambda T: T.nn.ModuleList().append(3)
C["ml_insert_int"] = lambda T: T.nn.ModuleList().insert(0, 3)
C["pl_append_tensor"] = lambda T: T.nn.ParameterList().append(T.ones(2))
C["pd_setitem_int"] = lambda T: T.nn.ParameterDict().__setitem__(3, T.nn.Parameter(T.ones(1)))
C["md_setitem_notmod"] = lambda T: T.nn.ModuleDict().__setitem__("a", 3)
C["md_update_list_bad"] = lambda T: T.nn.ModuleDict().update([("a",)])
C["param_int"] = lambda T: T.nn.Parameter(T.ones(2, dtype=T.int64))
C["param_list"] = lambda T: T.nn.Parameter([1.0])
C["sd_hook_ok"] = lambda T: (lambda m: (m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: None), list(m.state_dict())))(L(T))[1]
C["lsd_posthook_ok"] = lambda T: (lambda m: (m.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear()), m.load_state_dict({}, strict=True)))(L(T))[1]
C["lsd_posthook_ret"] = lambda T: (lambda m: (m.register_load_state_dict_post_hook(lambda mod, keys: 3), m.load_state_dict(m.state_dict())))(L(T))
C["fwd_hook_kwargs"] = lambda T: (lambda m: (m.register_forward_hook(lambda mod, a, k, o: o, with_kwargs=True), m(T.ones(2))))(L(T))
C["fwd_pre_hook_badret"] = lambda T: (lambda m: (m.register_forward_pre_hook(lambda mod, a: 3), m(T.ones(2))))(L(T))
C["full_bwd_hook_badlen"] = lambda T: (lambda m: (m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0])), m(T.ones(2, requires_grad=True)).sum().backward()))(L(T))
C["full_bwd_hook_shape"] = lambda T: (lambda m: (m.register_full_backward_hook(lambda mod, gi, go: (T.ones(3),)), m(T.ones(2, requires_grad=True)).sum().backward()))(L(T))


# -- second batch: functional/loss/pool arguments, more optimizer/scheduler/data/autograd misuse,
# tensor-creation size/dtype/device forms
C["conv1d_pad_tuple_len"] = lambda T: T.nn.Conv1d(2, 2, 3, padding=(1, 1))
C["conv2d_stride0"] = lambda T: T.nn.Conv2d(2, 2, 3, stride=0)(T.ones(1, 2, 5, 5))
C["conv2d_dil0"] = lambda T: T.nn.Conv2d(2, 2, 3, dilation=0)(T.ones(1, 2, 5, 5))
C["convT_outpad_big"] = lambda T: T.nn.ConvTranspose2d(2, 2, 3, stride=1, output_padding=1)(T.ones(1, 2, 3, 3))
C["convT_output_size_bad"] = lambda T: T.nn.ConvTranspose2d(2, 2, 3, stride=2)(T.ones(1, 2, 3, 3), output_size=(20, 20))
C["convT_output_size_ok"] = lambda T: T.nn.ConvTranspose2d(2, 2, 3, stride=2)(T.ones(1, 2, 3, 3), output_size=(8, 8)).shape
C["conv_same_even_ok"] = lambda T: T.nn.Conv2d(2, 2, 4, padding="same")(T.ones(1, 2, 5, 5)).shape
C["F_conv_bias_shape"] = lambda T: T.nn.functional.conv2d(T.ones(1, 2, 5, 5), T.ones(3, 2, 3, 3), T.ones(2))
C["F_conv_weight_rank"] = lambda T: T.nn.functional.conv2d(T.ones(1, 2, 5, 5), T.ones(3, 2, 3))
C["F_conv_dtype_mix"] = lambda T: T.nn.functional.conv2d(T.ones(1, 2, 5, 5), T.ones(3, 2, 3, 3, dtype=T.float64))
C["F_conv_int"] = lambda T: T.nn.functional.conv2d(T.ones(1, 2, 5, 5, dtype=T.int64), T.ones(3, 2, 3, 3, dtype=T.int64))
C["emb_bag_mode"] = lambda T: T.nn.EmbeddingBag(3, 2, mode="foo")
C["emb_bag_offsets_2d"] = lambda T: T.nn.EmbeddingBag(3, 2)(T.tensor([[0, 1]]), T.tensor([0]))
C["emb_bag_no_offsets"] = lambda T: T.nn.EmbeddingBag(3, 2)(T.tensor([0, 1]))
C["F_emb_weight_1d"] = lambda T: T.nn.functional.embedding(T.tensor([0]), T.ones(3))
C["F_one_hot_float"] = lambda T: T.nn.functional.one_hot(T.ones(2))
C["F_one_hot_small"] = lambda T: T.nn.functional.one_hot(T.tensor([3]), 2)
C["F_one_hot_neg"] = lambda T: T.nn.functional.one_hot(T.tensor([-1]))
C["F_ce_target_oob"] = lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.tensor([0, 3]))
C["F_ce_target_float_shape"] = lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.ones(2, 4))
C["F_ce_weight_len"] = lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.tensor([0, 1]), weight=T.ones(2))
C["F_ce_smoothing"] = lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.tensor([0, 1]), label_smoothing=1.5)
C["F_ce_reduction"] = lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.tensor([0, 1]), reduction="foo")
C["F_ce_batch"] = lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.tensor([0, 1, 1]))
C["F_nll_target_float"] = lambda T: T.nn.functional.nll_loss(T.ones(2, 3), T.ones(2))
C["F_mse_shape_ok"] = lambda T: T.nn.functional.mse_loss(T.ones(2, 3), T.ones(3)).item()
C["F_mse_noncast"] = lambda T: T.nn.functional.mse_loss(T.ones(2, 3), T.ones(4))
C["F_bce_range"] = lambda T: T.nn.functional.binary_cross_entropy(T.full((2,), 2.0), T.ones(2))
C["F_bce_shape"] = lambda T: T.nn.functional.binary_cross_entropy(T.full((2,), 0.5), T.ones(3))
C["F_bce_logits_pw"] = lambda T: T.nn.functional.binary_cross_entropy_with_logits(T.ones(2, 3), T.ones(2, 3), pos_weight=T.ones(4))
C["F_kl_reduction"] = lambda T: T.nn.functional.kl_div(T.ones(2), T.ones(2), reduction="foo")
C["F_ctc_blank"] = lambda T: T.nn.functional.ctc_loss(T.ones(5, 1, 3).log_softmax(2), T.tensor([[1, 2]]), [5], [2], blank=3)
C["F_dropout_p"] = lambda T: T.nn.functional.dropout(T.ones(2), p=1.5)
C["Dropout_p"] = lambda T: T.nn.Dropout(p=-0.1)
C["F_softmax_nodim_ok"] = lambda T: T.nn.functional.softmax(T.ones(2, 2), dim=1).tolist()
C["F_softmax_dim_oob"] = lambda T: T.nn.functional.softmax(T.ones(2, 2), dim=2)
C["F_linear_shape"] = lambda T: T.nn.functional.linear(T.ones(2, 3), T.ones(4, 2))
C["F_linear_bias_shape"] = lambda T: T.nn.functional.linear(T.ones(2, 3), T.ones(4, 3), T.ones(3))
C["F_pad_mode"] = lambda T: T.nn.functional.pad(T.ones(1, 2, 2), (1, 1), mode="foo")
C["F_pad_odd"] = lambda T: T.nn.functional.pad(T.ones(1, 2, 2), (1,))
C["F_pad_reflect_big"] = lambda T: T.nn.functional.pad(T.ones(1, 2, 2), (3, 3), mode="reflect")
C["F_pad_too_many"] = lambda T: T.nn.functional.pad(T.ones(2), (1, 1, 1, 1))
C["F_maxpool_ks_big"] = lambda T: T.nn.functional.max_pool2d(T.ones(1, 1, 2, 2), 3)
C["F_maxpool_pad_big"] = lambda T: T.nn.functional.max_pool2d(T.ones(1, 1, 4, 4), 2, padding=2)
C["F_avgpool_stride0"] = lambda T: T.nn.functional.avg_pool2d(T.ones(1, 1, 4, 4), 2, stride=0)
C["F_adaptive_neg"] = lambda T: T.nn.functional.adaptive_avg_pool2d(T.ones(1, 1, 4, 4), -1)
C["F_adaptive_rank"] = lambda T: T.nn.functional.adaptive_avg_pool2d(T.ones(4), 2)
C["F_grid_sample_mode"] = lambda T: T.nn.functional.grid_sample(T.ones(1, 1, 2, 2), T.zeros(1, 2, 2, 2), mode="foo")
C["F_grid_sample_grid_shape"] = lambda T: T.nn.functional.grid_sample(T.ones(1, 1, 2, 2), T.zeros(1, 2, 2, 3))
C["F_affine_grid_size"] = lambda T: T.nn.functional.affine_grid(T.zeros(1, 2, 3), (1, 1, 2))
C["F_pixel_shuffle_div"] = lambda T: T.nn.functional.pixel_shuffle(T.ones(1, 3, 2, 2), 2)
C["F_unfold_rank"] = lambda T: T.nn.functional.unfold(T.ones(2, 2), 2)
C["F_fold_bad"] = lambda T: T.nn.functional.fold(T.ones(1, 4, 3), (3, 3), 2)
C["F_normalize_p_str"] = lambda T: T.nn.functional.normalize(T.ones(2), p="fro")
C["F_layer_norm_shape"] = lambda T: T.nn.functional.layer_norm(T.ones(2, 3), (2,))
C["F_group_norm_div"] = lambda T: T.nn.functional.group_norm(T.ones(2, 4), 3)
C["F_batch_norm_rm"] = lambda T: T.nn.functional.batch_norm(T.ones(2, 3), T.zeros(2), T.ones(2))
C["F_cos_sim_shape"] = lambda T: T.nn.functional.cosine_similarity(T.ones(2, 3), T.ones(2, 4))
C["F_pdist_rank"] = lambda T: T.nn.functional.pdist(T.ones(2))
C["cdist_feat"] = lambda T: T.cdist(T.ones(2, 3), T.ones(2, 4))
C["cdist_p_neg"] = lambda T: T.cdist(T.ones(2, 3), T.ones(2, 3), p=-1)
C["F_gumbel_dim"] = lambda T: T.nn.functional.gumbel_softmax(T.ones(2), dim=3)
C["F_hardtanh_range"] = lambda T: T.nn.functional.hardtanh(T.ones(2), 1.0, -1.0)
C["F_elu_inplace_leaf"] = lambda T: T.nn.functional.elu(T.ones(2, requires_grad=True), inplace=True)
C["F_relu_inplace_leaf"] = lambda T: T.nn.functional.relu(T.ones(2, requires_grad=True), inplace=True)
C["F_glu_odd"] = lambda T: T.nn.functional.glu(T.ones(3))
C["F_prelu_weight"] = lambda T: T.nn.functional.prelu(T.ones(2, 3), T.ones(2))
C["F_softplus_ok"] = lambda T: T.nn.functional.softplus(T.ones(2), beta=2, threshold=1).tolist()
C["F_threshold_ok"] = lambda T: T.nn.functional.threshold(T.arange(3.), 1.0, -5.0).tolist()
C["F_embedding_maxnorm_noleaf_ok"] = lambda T: T.nn.functional.embedding(T.tensor([0]), T.ones(3, 2), max_norm=1.0).tolist()
C["F_sdpa_mask_shape"] = lambda T: T.nn.functional.scaled_dot_product_attention(T.ones(1, 2, 4), T.ones(1, 3, 4), T.ones(1, 3, 4), attn_mask=T.ones(2, 2))
C["F_sdpa_causal_mask"] = lambda T: T.nn.functional.scaled_dot_product_attention(T.ones(1, 2, 4), T.ones(1, 2, 4), T.ones(1, 2, 4), attn_mask=T.ones(2, 2), is_causal=True)
C["F_sdpa_dim_mismatch"] = lambda T: T.nn.functional.scaled_dot_product_attention(T.ones(1, 2, 4), T.ones(1, 2, 3), T.ones(1, 2, 4))
C["tfm_batch_first_mask"] = lambda T: T.nn.TransformerEncoder(T.nn.TransformerEncoderLayer(4, 2, dim_feedforward=4), 1)(T.ones(2, 1, 4), mask=T.ones(3, 3))
C["transformer_dmodel"] = lambda T: T.nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=4)(T.ones(2, 1, 4), T.ones(2, 2, 4))
C["flatten_bad"] = lambda T: T.nn.Flatten(2, 1)(T.ones(2, 3, 4))
C["unflatten_bad"] = lambda T: T.nn.Unflatten(1, (2, 2))(T.ones(2, 3))
C["identity_args_ok"] = lambda T: T.nn.Identity(3, foo=4)(T.ones(1)).tolist()
C["bilinear_shape"] = lambda T: T.nn.Bilinear(2, 3, 4)(T.ones(1, 3), T.ones(1, 3))
C["linear_wrong_in"] = lambda T: L(T)(T.ones(3))
C["linear_int_input"] = lambda T: L(T)(T.ones(2, dtype=T.int64))
C["linear_double_input"] = lambda T: L(T)(T.ones(2, dtype=T.float64))
C["softmax_mod_nodim_ok"] = lambda T: T.nn.Softmax()(T.ones(2, 2)).tolist()
C["ctcloss_red"] = lambda T: T.nn.CTCLoss(reduction="foo")
C["mseloss_red"] = lambda T: T.nn.MSELoss(reduction="foo")(T.ones(2), T.ones(2))
C["cel_ignore_oob_ok"] = lambda T: T.nn.CrossEntropyLoss(ignore_index=5)(T.ones(2, 3), T.tensor([0, 5])).item()
C["swa_bad"] = lambda T: T.optim.swa_utils.SWALR(O(T), swa_lr=0.1, anneal_strategy="foo")
C["swa_epochs"] = lambda T: T.optim.swa_utils.SWALR(O(T), swa_lr=0.1, anneal_epochs=-1)
C["lbfgs_groups"] = lambda T: T.optim.LBFGS([{"params": P(T)}, {"params": P(T)}])
C["lbfgs_noclosure"] = lambda T: T.optim.LBFGS(P(T)).step()
C["sgd_step_closure_int_ok"] = lambda T: T.optim.SGD(P(T), lr=0.1).step(lambda: 3)
C["adam_amsgrad_sparse"] = lambda T: (lambda p: (setattr(p[0], "grad", T.ones(2).to_sparse()), T.optim.Adam(p).step()))(P(T))
C["opt_lsd_state_keys"] = lambda T: (lambda o: o.load_state_dict({"param_groups": o.state_dict()["param_groups"]}))(O(T))
C["opt_complex_ok"] = lambda T: T.optim.SGD([T.nn.Parameter(T.ones(2, dtype=T.complex64))], lr=0.1) and None
C["opt_int_param_tensor"] = lambda T: T.optim.SGD([T.ones(2, dtype=T.int64)], lr=0.1)
C["sched_step_epoch_ok"] = lambda T: (lambda s: (s.step(3), s.get_last_lr()))(T.optim.lr_scheduler.StepLR(O(T), 2))[1]
C["exp_gamma_ok"] = lambda T: (lambda s: (s.step(), s.get_last_lr()))(T.optim.lr_scheduler.ExponentialLR(O(T), 0.5))[1]
C["sched_lsd_bad"] = lambda T: T.optim.lr_scheduler.StepLR(O(T), 2).load_state_dict([1])
C["chained_diff_opt"] = lambda T: T.optim.lr_scheduler.ChainedScheduler([T.optim.lr_scheduler.StepLR(O(T), 2), T.optim.lr_scheduler.StepLR(O(T), 2)])
C["seq_diff_opt"] = lambda T: T.optim.lr_scheduler.SequentialLR(O(T), [T.optim.lr_scheduler.StepLR(O(T), 2), T.optim.lr_scheduler.StepLR(O(T), 2)], [1])
C["seq_empty"] = lambda T: T.optim.lr_scheduler.SequentialLR(O(T), [], [])
C["plateau_step_none"] = lambda T: T.optim.lr_scheduler.ReduceLROnPlateau(O(T)).step(None)
C["plateau_step_str"] = lambda T: T.optim.lr_scheduler.ReduceLROnPlateau(O(T)).step("a")
C["dl_collate_notcallable"] = lambda T: next(iter(T.utils.data.DataLoader(range(4), batch_size=2, collate_fn=3)))
C["dl_sampler_int"] = lambda T: next(iter(T.utils.data.DataLoader(range(4), sampler=3)))
C["dl_iterable_shuffle"] = lambda T: T.utils.data.DataLoader(T.utils.data.IterableDataset(), shuffle=True)
C["dl_iterable_sampler"] = lambda T: T.utils.data.DataLoader(T.utils.data.IterableDataset(), sampler=[0])
C["dl_iterable_len"] = lambda T: len(T.utils.data.DataLoader(T.utils.data.IterableDataset()))
C["dl_generator_bad"] = lambda T: next(iter(T.utils.data.DataLoader(range(4), shuffle=True, generator=3)))
C["dl_mp_ctx_noworkers"] = lambda T: T.utils.data.DataLoader(range(4), multiprocessing_context="spawn")
C["subset_neg_ok"] = lambda T: T.utils.data.Subset(range(5), [1, 2])[-1]
C["subset_getitems_ok"] = lambda T: T.utils.data.Subset(range(5), [1, 2]).__getitems__([0, 1])
C["dataset_add_ok"] = lambda T: len(T.utils.data.TensorDataset(T.ones(2)) + T.utils.data.TensorDataset(T.ones(3)))
C["seq_sampler_ok"] = lambda T: list(T.utils.data.SequentialSampler(range(3)))
C["subset_rand_sampler_ok"] = lambda T: len(T.utils.data.SubsetRandomSampler([1, 2]))
C["dist_sampler_norank"] = lambda T: T.utils.data.DistributedSampler(range(4))
C["dist_sampler_rank_oob"] = lambda T: T.utils.data.DistributedSampler(range(4), num_replicas=2, rank=2)
C["tensor_backward_retain_ok"] = lambda T: (lambda x: ((x * x).sum().backward(retain_graph=True), x.grad.tolist()))(T.ones(2, requires_grad=True))[1]
C["grad_create_graph_ok"] = lambda T: (lambda x: T.autograd.grad((x ** 3).sum(), x, create_graph=True)[0].requires_grad)(T.ones(2, requires_grad=True))
C["grad_outputs_none_entry_ok"] = lambda T: (lambda x: T.autograd.grad([(x * 2).sum()], [x], grad_outputs=[None])[0].tolist())(T.ones(2, requires_grad=True))
C["grad_int_output"] = lambda T: T.autograd.grad(T.ones(2, dtype=T.int64).sum(), T.ones(2, requires_grad=True))
C["grad_nongrad_output"] = lambda T: T.autograd.grad(T.ones(2).sum(), T.ones(2, requires_grad=True))
C["grad_twice"] = lambda T: (lambda x: (lambda y: (T.autograd.grad(y, x), T.autograd.grad(y, x)))((x.exp()).sum()))(T.ones(2, requires_grad=True))
C["requires_grad_int_tensor"] = lambda T: T.ones(2, dtype=T.int64).requires_grad_()
C["requires_grad_nonleaf_false"] = lambda T: (T.ones(2, requires_grad=True) * 2).requires_grad_(False)
C["retain_grad_noreq"] = lambda T: T.ones(2).retain_grad()
C["detach_inplace_view"] = lambda T: (T.ones(2, requires_grad=True) * 2)[:1].detach_()
C["set_grad_shape"] = lambda T: setattr(T.ones(2, requires_grad=True), "grad", T.ones(3))
C["set_grad_dtype"] = lambda T: setattr(T.ones(2, requires_grad=True), "grad", T.ones(2, dtype=T.float64))
C["set_grad_int"] = lambda T: setattr(T.ones(2, requires_grad=True), "grad", 3)
C["set_requires_grad_nonleaf"] = lambda T: setattr(T.ones(2, requires_grad=True) * 2, "requires_grad", False)
C["fn_apply_noctx"] = lambda T: T.autograd.Function.apply(T.ones(2))
C["fn_call_direct"] = lambda T: T.autograd.Function()(T.ones(2))
C["gradcheck_noreq"] = lambda T: T.autograd.gradcheck(lambda x: x * 2, (T.ones(2, dtype=T.float64),))
C["anomaly_bad_ok"] = lambda T: T.autograd.set_detect_anomaly(False) and None
C["no_grad_args"] = lambda T: T.no_grad(3)
C["set_grad_enabled_str"] = lambda T: T.set_grad_enabled("a")
C["inference_mode_backward"] = lambda T: (lambda x: (lambda y: y.sum().backward())( T.inference_mode()(lambda: x * 2)()))(T.ones(2, requires_grad=True))
C["arange_size_huge"] = lambda T: T.arange(0, 1e20)
C["arange_tensor_ok"] = lambda T: T.arange(T.tensor(3)).tolist()
C["arange_tensor_2d"] = lambda T: T.arange(T.ones(2))
C["arange_complex"] = lambda T: T.arange(1j)
C["linspace_complex_ok"] = lambda T: T.linspace(0, 1j, 3).tolist()
C["full_size_float"] = lambda T: T.full((2.5,), 1.0)
C["zeros_size_tensor_ok"] = lambda T: T.zeros(T.tensor(2)).tolist()
C["zeros_size_tensor2"] = lambda T: T.zeros(T.tensor([2, 3]))
C["zeros_size_none"] = lambda T: T.zeros(None)
C["zeros_mixed_tuple"] = lambda T: T.zeros((2,), 3)
C["ones_size_kw"] = lambda T: T.ones(size=(2,)).tolist()
C["ones_size_and_pos"] = lambda T: T.ones(2, size=(2,))
C["empty_memory_format"] = lambda T: T.empty(2, memory_format=T.channels_last)
C["tensor_requires_grad_int"] = lambda T: T.tensor([1, 2], requires_grad=True)
C["tensor_dtype_str"] = lambda T: T.tensor([1], dtype="int")
C["tensor_device_int_ok"] = lambda T: T.tensor([1], device="cpu").tolist()
C["tensor_none"] = lambda T: T.tensor(None)
C["tensor_dict"] = lambda T: T.tensor({1: 2})
C["tensor_set"] = lambda T: T.tensor({1, 2})
C["tensor_empty_list_ok"] = lambda T: T.tensor([]).dtype
C["tensor_nested_tensor"] = lambda T: T.tensor([T.ones(2), T.ones(2)])
C["tensor_nested_tensor_multi"] = lambda T: T.tensor([T.ones(2), 1])
C["randint_high_float"] = lambda T: T.randint(3.5, (2,)).dtype
C["randint_neg_size"] = lambda T: T.randint(3, (-1,))
C["randint_like_bad"] = lambda T: T.randint_like(T.ones(2), 0)
C["rand_like_int"] = lambda T: T.rand_like(T.ones(2, dtype=T.int64))
C["randn_size_neg"] = lambda T: T.randn(-1)
C["bernoulli_p_range"] = lambda T: T.bernoulli(T.full((2,), 2.0))
C["normal_tensor_std_neg"] = lambda T: T.normal(T.zeros(2), T.full((2,), -1.0))
C["poisson_neg"] = lambda T: T.poisson(T.full((2,), -1.0))
C["manual_seed_str"] = lambda T: T.manual_seed("a")
C["manual_seed_neg_ok"] = lambda T: T.manual_seed(-1) and None
C["generator_seed_float"] = lambda T: T.Generator().manual_seed(1.5)
C["set_rng_state_bad"] = lambda T: T.set_rng_state(T.ones(2))
C["dtype_attr_bad"] = lambda T: T.ones(2).to("floaty")
C["to_two_dtypes"] = lambda T: T.ones(2).to(T.float32, T.float64)
C["to_device_and_kw"] = lambda T: T.ones(2).to("cpu", device="cpu")
C["type_str_bad"] = lambda T: T.ones(2).type("foo")
C["type_str_ok"] = lambda T: T.ones(2).type("torch.DoubleTensor").dtype
C["finfo_int"] = lambda T: T.finfo(T.int32)
C["iinfo_float"] = lambda T: T.iinfo(T.float32)
C["promote_types_bad"] = lambda T: T.promote_types(T.float32, 3)
C["can_cast_bad"] = lambda T: T.can_cast(T.float32, "a")
C["set_default_dtype_int"] = lambda T: T.set_default_dtype(T.int64)
C["get_default_dtype_ok"] = lambda T: T.get_default_dtype()

# -- third batch: more nn.Module API (to/type/state_dict/get_submodule/set_submodule/containers)

C["m_to_memfmt_bad"] = lambda T: L(T).to(memory_format=3)
C["m_to_nonblocking_ok"] = lambda T: L(T).to("cpu", non_blocking=True) and None
C["m_half_ok"] = lambda T: L(T).half().weight.dtype
C["m_type_int"] = lambda T: L(T).type(T.int64).weight.dtype
C["m_zero_grad_ok"] = lambda T: L(T).zero_grad() 
C["m_buffers_recurse_ok"] = lambda T: len(list(T.nn.Sequential(T.nn.BatchNorm1d(2)).buffers(recurse=False)))
C["m_named_params_dup_ok"] = lambda T: (lambda l: len(list(T.nn.Sequential(l, l).named_parameters(remove_duplicate=False))))(L(T))
C["m_get_submodule_nested_missing"] = lambda T: T.nn.Sequential(L(T)).get_submodule("0.foo")
C["m_get_submodule_notmod"] = lambda T: T.nn.Sequential(L(T)).get_submodule("0.weight")
C["m_set_submodule_missing"] = lambda T: T.nn.Sequential(L(T)).set_submodule("1.x", T.nn.ReLU())
C["m_set_submodule_notmod"] = lambda T: T.nn.Sequential(L(T)).set_submodule("0", 3)
C["m_delattr_missing"] = lambda T: delattr(L(T), "nope")
C["m_getattr_missing"] = lambda T: L(T).nope
C["m_lsd_unexpected"] = lambda T: L(T).load_state_dict({"weight": T.ones(2, 2), "bias": T.ones(2), "x": T.ones(1)})
C["m_lsd_unexpected_ok"] = lambda T: L(T).load_state_dict({"weight": T.ones(2, 2), "bias": T.ones(2), "x": T.ones(1)}, strict=False).unexpected_keys
C["m_lsd_assign_ok"] = lambda T: (lambda m: (m.load_state_dict({"weight": T.zeros(2, 2), "bias": T.zeros(2)}, assign=True), m.weight.tolist()))(L(T))[1]
C["m_lsd_dtype_ok"] = lambda T: (lambda m: (m.load_state_dict({"weight": T.zeros(2, 2, dtype=T.float64), "bias": T.zeros(2)}), m.weight.dtype))(L(T))[1]
C["m_lsd_param_none"] = lambda T: L(T).load_state_dict({"weight": None, "bias": T.ones(2)})
C["m_lsd_bn_tracked"] = lambda T: (lambda m: m.load_state_dict({k: v for k, v in m.state_dict().items() if k != "num_batches_tracked"}))(T.nn.BatchNorm1d(2))
C["m_sd_destination_bad"] = lambda T: L(T).state_dict(3)
C["m_sd_prefix_ok"] = lambda T: list(L(T).state_dict(prefix="p."))
C["m_call_noforward"] = lambda T: T.nn.Module()(T.ones(1))
C["m_extra_state_not_overridden"] = lambda T: L(T).get_extra_state()
C["m_register_module_none_ok"] = lambda T: (lambda m: (m.register_module("n", None), list(m.named_children())))(L(T))[1]
C["m_reg_buf_persist_ok"] = lambda T: (lambda m: (m.register_buffer("b", T.ones(1), persistent=False), list(m.state_dict())))(L(T))[1]
C["m_register_buffer_param"] = lambda T: L(T).register_buffer("weight2", T.nn.Parameter(T.ones(1))) 
C["m_param_assign_none_ok"] = lambda T: (lambda m: (setattr(m, "bias", None), m.bias))(L(T))[1]
C["m_compile_args"] = lambda T: L(T).requires_grad_(False).weight.requires_grad
C["m_share_memory_ok"] = lambda T: L(T).share_memory() and None
C["m_ipu_bad"] = lambda T: L(T).cuda()
C["m_float_ok"] = lambda T: L(T).double().float().weight.dtype
C["m_bfloat16_ok"] = lambda T: L(T).bfloat16().weight.dtype
C["t_to_cuda"] = lambda T: T.ones(2).cuda()
C["t_to_dev_cuda"] = lambda T: T.ones(2).to("cuda")
C["zeros_cuda"] = lambda T: T.zeros(2, device="cuda")
C["zeros_meta_ok"] = lambda T: T.zeros(2, device="meta").shape
C["device_type_ok"] = lambda T: T.device("cpu").type
C["seq_slice_ok"] = lambda T: len(T.nn.Sequential(T.nn.ReLU(), T.nn.Tanh())[1:])
C["seq_insert_bad"] = lambda T: T.nn.Sequential().insert(0, 3)
C["seq_append_bad"] = lambda T: T.nn.Sequential().append(3)
C["seq_extend_bad"] = lambda T: T.nn.Sequential().extend([3])
C["seq_delitem_oob"] = lambda T: T.nn.Sequential(T.nn.ReLU()).__delitem__(3)
C["seq_setitem_oob"] = lambda T: T.nn.Sequential(T.nn.ReLU()).__setitem__(3, T.nn.ReLU())
C["seq_pop_oob"] = lambda T: T.nn.Sequential(T.nn.ReLU()).pop(3)
C["ml_getitem_oob"] = lambda T: T.nn.ModuleList([T.nn.ReLU()])[3]
C["ml_extend_notiter"] = lambda T: T.nn.ModuleList().extend(3)
C["ml_iadd_bad"] = lambda T: T.nn.ModuleList().__iadd__(3)
C["ml_add_bad"] = lambda T: T.nn.ModuleList() + 3
C["pl_getitem_oob"] = lambda T: T.nn.ParameterList([T.nn.Parameter(T.ones(1))])[3]
C["pd_getitem_missing"] = lambda T: T.nn.ParameterDict()["x"]
C["md_getitem_missing"] = lambda T: T.nn.ModuleDict()["x"]
C["md_update_bad"] = lambda T: T.nn.ModuleDict().update(3)
C["pd_update_bad"] = lambda T: T.nn.ParameterDict().update(3)
C["md_pop_missing"] = lambda T: T.nn.ModuleDict().pop("x")

# torch accepts a non-Module in ModuleList.insert (no check there); tracegrad refuses it
_XFAIL = {"ml_insert_int"}
# default_collate's message names "numpy arrays" as torch's does (a legitimate word the helper's
# foreign-text pattern flags): its class is compared in its own test below
_OWN = {"default_collate_obj"}
CASES = {k: v for k, v in C.items() if k not in _XFAIL | _OWN}

GIST = {
    "opt_dup_groups": "some parameters appear in more than one parameter group",
    "grad_go_shape": "Mismatch in shape",
    "backward_nonscalar": "grad can be implicitly created only for scalar outputs",
    "dl_sampler_shuffle": "sampler option is mutually exclusive with shuffle",
    "rs_sum": "Sum of input lengths does not equal the length of the input dataset",
    "m_to_memfmt_bad": "memory_format",
}

test_same_class_as_torch, test_message_gist = table_tests(CASES, GIST, torch, tracegrad)

# accepted calls with a value that does not depend on random init: tracegrad gives torch's value
_VALUE = [k for k in CASES if k.endswith("_ok") and k not in ("emb_maxnorm_ok", "conv_out0_ok",
                                                               "tel_ffn0_ok", "sgd_lr_tensor_ok",
                                                               "opt_zero_grad_int_ok",
                                                               # renorm scale rounds 1 ulp apart
                                                               "F_embedding_maxnorm_noleaf_ok")]


test_accepted_value_matches_torch = value_test(CASES, _VALUE, torch, tracegrad)


def test_default_collate_unknown_element_type():
    got, msg = outcome(C["default_collate_obj"], tracegrad)
    assert got is outcome(C["default_collate_obj"], torch)[0]
    assert "default_collate" in msg and "jax" not in msg.lower()


@pytest.mark.xfail(strict=True, reason="torch's ModuleList.insert stores a non-Module unchecked; "
                                       "tracegrad raises TypeError as append does")
def test_modulelist_insert_non_module():
    assert outcome(C["ml_insert_int"], tracegrad)[0] is outcome(C["ml_insert_int"], torch)[0]
