"""Bad-input parity, round 43: a probe of ~1,350 wrong (and some right) calls in the training
API -- optimizers (lr/betas/eps/momentum values, params given as a tensor, a set, a consumed
generator, non-leaf or repeated tensors, add_param_group and load_state_dict of the wrong shape),
lr_scheduler arguments, module construction (Linear/Conv/RNN/Embedding/BatchNorm/
MultiheadAttention sizes and strings), module API misuse (register_buffer/register_parameter/
add_module names and values, load_state_dict's missing/unexpected/size-mismatched keys,
get_submodule/get_parameter/set_submodule paths, container indices), autograd.Function misuse,
torch.utils.checkpoint, torch.utils.data and tracegrad.compile's fullgraph graph breaks. The calls
are written here for this table (no other repository's tests were copied); torch 2.13 is the
oracle. Nearly all of them already matched torch (class and, mostly, text); the table keeps the
ones earlier rounds had not tried, and every call that did not match.

Fixed in tracegrad (each case is in the table below):
- ``conv1d/conv2d/conv3d/conv_transpose1d/2d/3d`` read the convolution's rank from the weight
  alone: ``F.conv2d`` of a 5-d weight ran a silent 3-d convolution, ``F.conv3d`` of a 4-d input and
  weight a silent 2-d one, and ``nn.Conv3d(1, 1, (1, 1))`` (a 2-tuple kernel) complained of the
  input of a "conv2d". torch's functional takes stride/padding/dilation/output_padding as
  ``N``-lists and batches an unbatched input by its own ``N``, then refuses (RuntimeError) the
  first list whose length is neither 1 nor the weight's rank, else the input's rank;
- ``ctx.mark_dirty(3)`` (or ``None``) in forward: a RuntimeError saying that a dirty tensor was
  "not returned as output"; torch's names the argument that is no tensor.

Found and left alone (not tabled):
- ``nn.ModuleList.insert(0, 3)`` stores a non-Module silently in torch (and ``insert(-1, m)`` on a
  list of two is its KeyError); tracegrad raises the TypeError of ``append``;
- ``pack_padded_sequence`` with a length above the padded time dimension is accepted by torch
  (reading past the data); tracegrad's RuntimeError names the bad length;
- under ``tracegrad.compile(fullgraph=True)``, ``item()``/``int()``/``nonzero()``/``unique()``/
  a boolean-mask index are torch 2.13's captured data-dependent ops (no error), tracegrad's
  GraphBreak (one program cannot hold them); ``print()`` of no tensor and ``backward()``/
  ``autograd.grad`` inside the function are torch's Unsupported and run in tracegrad (the values
  are eager's); a Python exception raised inside is itself in tracegrad, wrapped in torch.

Each call runs under torch and tracegrad: the same exception class (or none), no text of the
layers below tracegrad; ``_ok`` calls are ones torch accepts and they give torch's value.
"""
import contextlib

import pytest

import tracegrad

from _bad_input_helpers import table_tests, value_test

torch = pytest.importorskip("torch")

C = {}
F = lambda T: T.nn.functional
nn = lambda T: T.nn
NAN = float("nan")


def _params(T, n=1):
    return [T.nn.Parameter(T.ones(2)) for _ in range(n)]


def _sgd(T):
    return T.optim.SGD(_params(T), lr=0.1)


# ---- convolution: a weight of another rank than the functional's (fixed) -----------------------
o = lambda T, *s: T.ones(*s)
C["conv2d_5d_weight"] = lambda T: F(T).conv2d(o(T, 1, 1, 2, 2), o(T, 1, 1, 1, 1, 1))
C["conv2d_5d_weight_dilation_short"] = lambda T: F(T).conv2d(o(T, 1, 1, 2, 2), o(T, 1, 1, 1, 1, 1), stride=(1, 1, 1),
                                                            padding=(0,), dilation=(1, 1))
C["conv2d_5d_weight_output_padding"] = lambda T: F(T).conv2d(o(T, 1, 1, 2), o(T, 1, 1, 1, 1, 1), stride=(1,),
                                                            padding=(0,), dilation=(1,))
C["conv2d_5d_weight_same"] = lambda T: F(T).conv2d(o(T, 1, 1, 2, 2), o(T, 1, 1, 1, 1, 1), padding="same")
C["conv2d_3d_weight"] = lambda T: F(T).conv2d(o(T, 1, 1, 2, 2), o(T, 1, 1, 1))
C["conv3d_4d_weight_stride_pair"] = lambda T: F(T).conv3d(o(T, 1, 1, 2, 2), o(T, 1, 1, 1, 1), stride=(1, 1))
C["conv3d_4d_weight_all_single"] = lambda T: F(T).conv3d(o(T, 1, 1, 2, 2), o(T, 1, 1, 1, 1), stride=(1,),
                                                        padding=(0,), dilation=(1,))
C["conv3d_4d_weight_2d_input"] = lambda T: F(T).conv3d(o(T, 2, 2), o(T, 1, 1, 1, 1))
C["conv1d_4d_weight"] = lambda T: F(T).conv1d(o(T, 1, 1, 2), o(T, 1, 1, 1, 1))
C["conv1d_4d_weight_unbatched"] = lambda T: F(T).conv1d(o(T, 1, 2), o(T, 1, 1, 1, 1))
C["conv_transpose2d_5d_both"] = lambda T: F(T).conv_transpose2d(o(T, 1, 1, 2, 2, 2), o(T, 1, 1, 1, 1, 1))
C["conv_transpose3d_4d_weight"] = lambda T: F(T).conv_transpose3d(o(T, 1, 1, 2, 2), o(T, 1, 1, 1, 1), stride=(1,),
                                                                 padding=(0,), dilation=(1,))
C["conv_transpose3d_4d_weight_all_single"] = lambda T: F(T).conv_transpose3d(
    o(T, 1, 1, 2, 2), o(T, 1, 1, 1, 1), stride=(1,), padding=(0,), dilation=(1,), output_padding=(0,))
C["conv_transpose1d_4d_weight"] = lambda T: T.conv_transpose1d(o(T, 1, 2), o(T, 1, 1, 1, 1))
C["torch_conv2d_5d_weight"] = lambda T: T.conv2d(o(T, 1, 1, 2, 2), o(T, 1, 1, 1, 1, 1))
C["Conv3d_kernel_pair"] = lambda T: nn(T).Conv3d(1, 1, (1, 1))(o(T, 1, 1, 2, 2, 2))
C["ConvTranspose3d_kernel_pair"] = lambda T: nn(T).ConvTranspose3d(1, 1, (1, 1))(o(T, 1, 1, 2, 2, 2))
C["Conv1d_kernel_pair"] = lambda T: nn(T).Conv1d(1, 1, (2, 2))(o(T, 1, 1, 3))
C["Conv2d_kernel_single"] = lambda T: nn(T).Conv2d(1, 1, (2,))(o(T, 1, 1, 3, 3))
C["conv2d_4d_weight_ok"] = lambda T: F(T).conv2d(o(T, 1, 1, 2, 2), o(T, 1, 1, 1, 1), stride=(1,), padding=[0])


# ---- autograd.Function: mark_dirty of what is no tensor (fixed), and other misuse --------------
def _function(T, forward, backward, **more):
    return type("Fx", (T.autograd.Function,), {"forward": staticmethod(forward),
                                               "backward": staticmethod(backward), **more})


def _mark_dirty_of(value):
    def call(T):
        def forward(ctx, a):
            ctx.mark_dirty(value)
            return a * 2
        return _function(T, forward, lambda ctx, g: g).apply(T.ones(2, requires_grad=True))
    return call


def _mark_dirty_not_modified(T):
    def forward(ctx, a):
        ctx.mark_dirty(a)
        return a * 2
    _function(T, forward, lambda ctx, g: g).apply(T.ones(2, requires_grad=True).clone())


def _mark_non_differentiable_int(T):
    def forward(ctx, a):
        ctx.mark_non_differentiable(a, 3)
        return a * 2
    _function(T, forward, lambda ctx, g: g).apply(T.ones(2, requires_grad=True))


def _grad_for_int_input(T):
    f = _function(T, lambda ctx, a, i: a * 2, lambda ctx, g: (g, T.ones(2)))
    f.apply(T.ones(2, requires_grad=True), T.ones(2, dtype=T.int64)).sum().backward()


def _backward_one_grad_two_inputs(T):
    f = _function(T, lambda ctx, a, b: a * b, lambda ctx, g: g)
    f.apply(T.ones(2, requires_grad=True), T.ones(2, requires_grad=True)).sum().backward()


def _backward_grad_needs_expanding(T):
    a = T.ones(2, requires_grad=True)
    _function(T, lambda ctx, x: x * 2, lambda ctx, g: T.ones(1)).apply(a).sum().backward()
    return a.grad


def _func_grad_wrong_shape(T):
    f = type("Fx", (T.autograd.Function,), {"forward": staticmethod(lambda a: a * 2),
                                            "setup_context": staticmethod(lambda ctx, i, out: None),
                                            "backward": staticmethod(lambda ctx, g: T.ones(3))})
    return T.func.grad(lambda a: f.apply(a).sum())(T.ones(2))


C["function_mark_dirty_int"] = _mark_dirty_of(3)
C["function_mark_dirty_none"] = _mark_dirty_of(None)
C["function_mark_dirty_not_modified"] = _mark_dirty_not_modified
C["function_mark_non_differentiable_int"] = _mark_non_differentiable_int
C["function_grad_for_int_input"] = _grad_for_int_input
C["function_too_few_grads"] = _backward_one_grad_two_inputs
C["function_grad_needs_expanding"] = _backward_grad_needs_expanding
C["function_func_grad_wrong_shape"] = _func_grad_wrong_shape

# ---- optimizers -------------------------------------------------------------------------------
C["adam_beta2_negative"] = lambda T: T.optim.Adam(_params(T), betas=(0.9, -0.1))
C["nadam_beta1_one"] = lambda T: T.optim.NAdam(_params(T), betas=(1.0, 0.999))
C["radam_eps_nan"] = lambda T: T.optim.RAdam(_params(T), eps=NAN)
C["adamax_lr_nan"] = lambda T: T.optim.Adamax(_params(T), lr=NAN)
C["sgd_lr_nan_ok"] = lambda T: T.optim.SGD(_params(T), lr=NAN).defaults["lr"]
C["sgd_nesterov_with_dampening"] = lambda T: T.optim.SGD(_params(T), lr=0.1, momentum=0.9, dampening=0.1,
                                                        nesterov=True)
C["asgd_single_tensor_params"] = lambda T: T.optim.ASGD(T.nn.Parameter(T.ones(2)))
C["rprop_consumed_generator"] = lambda T: T.optim.Rprop(p for p in [])
C["adadelta_non_leaf_param"] = lambda T: T.optim.Adadelta([T.ones(2, requires_grad=True) * 2])
C["adagrad_int_param_ok"] = lambda T: len(T.optim.Adagrad([T.ones(2, dtype=T.int64)]).param_groups)
C["rmsprop_params_named_and_not"] = lambda T: T.optim.RMSprop([("a", T.nn.Parameter(T.ones(1))),
                                                               T.nn.Parameter(T.ones(1))])
C["adamw_add_param_group_nonleaf"] = lambda T: T.optim.AdamW(_params(T)).add_param_group(
    {"params": [T.ones(2, requires_grad=True) * 2]})
C["adam_add_param_group_lr_negative"] = lambda T: T.optim.Adam(_params(T)).add_param_group(
    {"params": _params(T), "lr": -1.})
C["sgd_load_state_dict_group_without_params"] = lambda T: _sgd(T).load_state_dict(
    {"state": {}, "param_groups": [{"lr": 0.1}]})
C["adam_load_state_dict_two_params_into_one"] = lambda T: T.optim.Adam(_params(T)).load_state_dict(
    T.optim.Adam(_params(T, 2)).state_dict())
C["rprop_step_sizes_reversed"] = lambda T: T.optim.Rprop(_params(T), step_sizes=(1., 0.1))
C["sparse_adam_dense_grad"] = lambda T: (lambda p: (setattr(p, "grad", T.ones(2)),
                                                    T.optim.SparseAdam([p]).step()))(T.nn.Parameter(T.ones(2)))

# ---- lr_scheduler -------------------------------------------------------------------------------
S = lambda T: T.optim.lr_scheduler
C["steplr_step_size_zero_step"] = lambda T: S(T).StepLR(_sgd(T), step_size=0).step()
C["onecycle_no_total_steps"] = lambda T: S(T).OneCycleLR(_sgd(T), max_lr=1.)
C["onecycle_epochs_float"] = lambda T: S(T).OneCycleLR(_sgd(T), max_lr=1., epochs=1.5, steps_per_epoch=2)
C["onecycle_stepped_past_total"] = lambda T: (lambda s: [s.step() for _ in range(4)])(
    S(T).OneCycleLR(_sgd(T), max_lr=1., total_steps=3))
C["cosine_last_epoch_without_initial_lr"] = lambda T: S(T).CosineAnnealingLR(_sgd(T), T_max=3, last_epoch=1)
C["cosine_warm_restarts_last_epoch_without_initial_lr"] = lambda T: S(T).CosineAnnealingWarmRestarts(
    _sgd(T), T_0=1, last_epoch=1)
C["lambdalr_tuple_wrong_length"] = lambda T: S(T).LambdaLR(_sgd(T), (lambda e: 1., lambda e: 1.))
C["multiplicativelr_list_wrong_length"] = lambda T: S(T).MultiplicativeLR(_sgd(T), [lambda e: 1.] * 3)
C["plateau_mode_none"] = lambda T: S(T).ReduceLROnPlateau(_sgd(T), mode=None)
C["plateau_threshold_mode_upper"] = lambda T: S(T).ReduceLROnPlateau(_sgd(T), threshold_mode="REL")
C["plateau_factor_one"] = lambda T: S(T).ReduceLROnPlateau(_sgd(T), factor=1.0)
C["plateau_metric_two_elements"] = lambda T: S(T).ReduceLROnPlateau(_sgd(T)).step(T.ones(2))
C["cyclic_step_size_up_zero"] = lambda T: S(T).CyclicLR(T.optim.SGD(_params(T), lr=0.1, momentum=0.9), 0.1, 1.,
                                                        step_size_up=0)

# ---- module construction -------------------------------------------------------------------------
C["conv2d_same_stride_pair"] = lambda T: nn(T).Conv2d(1, 1, 3, stride=(1, 2), padding="same")
C["conv2d_groups_float"] = lambda T: nn(T).Conv2d(2, 2, 1, groups=2.0)
C["conv_transpose2d_padding_valid"] = lambda T: nn(T).ConvTranspose2d(1, 1, 3, padding="valid")
C["rnn_dropout_bool"] = lambda T: nn(T).GRU(2, 2, dropout=True)
C["rnn_num_layers_negative"] = lambda T: nn(T).RNN(2, 2, num_layers=-1)
C["rnncell_nonlinearity_sigmoid"] = lambda T: nn(T).RNNCell(2, 2, nonlinearity="sigmoid")(T.ones(1, 2))
C["gru_proj_size"] = lambda T: nn(T).GRU(2, 2, proj_size=1)
C["embedding_from_pretrained_padding_idx_out_of_range"] = lambda T: nn(T).Embedding.from_pretrained(
    T.ones(3, 2), padding_idx=3)
C["batchnorm_zero_features_forward"] = lambda T: nn(T).BatchNorm1d(0)(T.ones(2, 0))
C["mha_heads_negative"] = lambda T: nn(T).MultiheadAttention(4, -2)
C["transformer_nhead_not_dividing"] = lambda T: nn(T).Transformer(d_model=6, nhead=4, num_encoder_layers=1,
                                                                  num_decoder_layers=1)

# ---- module API misuse ---------------------------------------------------------------------------
lin = lambda T: nn(T).Linear(2, 2)
C["register_buffer_on_parameter_name"] = lambda T: nn(T).BatchNorm1d(1).register_buffer("weight", T.ones(1))
C["register_parameter_on_buffer_name"] = lambda T: nn(T).BatchNorm1d(1).register_parameter(
    "running_mean", nn(T).Parameter(T.ones(1)))
C["register_parameter_buffer_class"] = lambda T: lin(T).register_parameter("p", nn(T).Buffer(T.ones(1)))
C["register_module_existing_parameter"] = lambda T: nn(T).Linear(1, 1).register_module("bias", nn(T).ReLU())
C["add_module_on_attribute"] = lambda T: nn(T).BatchNorm1d(1).add_module("eps", nn(T).ReLU())
C["load_state_dict_buffer_size_mismatch"] = lambda T: nn(T).BatchNorm1d(2).load_state_dict(
    {**nn(T).BatchNorm1d(2).state_dict(), "running_mean": T.ones(3)})
C["load_state_dict_into_absent_bias"] = lambda T: nn(T).Linear(1, 1, bias=False).load_state_dict(
    {"weight": T.ones(1, 1), "bias": T.ones(1)})
C["load_state_dict_post_hook_adds_key"] = lambda T: (lambda m: (
    m.register_load_state_dict_post_hook(lambda mod, keys: keys.unexpected_keys.append("zz")),
    m.load_state_dict(nn(T).Linear(1, 1).state_dict())))(nn(T).Linear(1, 1))
C["get_submodule_through_parameter"] = lambda T: nn(T).Linear(1, 1).get_submodule("weight.x")
C["set_submodule_over_parameter_strict"] = lambda T: nn(T).Linear(1, 1).set_submodule("weight", nn(T).ReLU(),
                                                                                     strict=True)
C["sequential_insert_negative_out_of_range"] = lambda T: nn(T).Sequential(nn(T).ReLU()).insert(-3, nn(T).ReLU())
C["sequential_imul_zero"] = lambda T: nn(T).Sequential(nn(T).ReLU()).__imul__(0)
C["parameter_dict_update_short_pair"] = lambda T: nn(T).ParameterDict().update([("a",)])

# ---- torch.utils.checkpoint ------------------------------------------------------------------------
CK = lambda T: T.utils.checkpoint


def _recompute_fewer(T):
    a, calls = T.ones(2, requires_grad=True), []

    def f(x):
        calls.append(1)
        return x.exp().sin() if len(calls) == 1 else x.exp()
    CK(T).checkpoint(f, a, use_reentrant=False).sum().backward()


def _early_stop_off_ok(T):
    a = T.ones(2, requires_grad=True)
    with CK(T).set_checkpoint_early_stop(False):
        CK(T).checkpoint(lambda x: x.sin().cos(), a, use_reentrant=False).sum().backward()
    return a.grad


C["checkpoint_early_stop_off_ok"] = _early_stop_off_ok
C["checkpoint_context_fn_one_context"] = lambda T: CK(T).checkpoint(
    lambda a: a * 2, T.ones(2, requires_grad=True), use_reentrant=False, context_fn=contextlib.nullcontext)
C["checkpoint_context_fn_with_reentrant"] = lambda T: CK(T).checkpoint(
    lambda a: a * 2, T.ones(2, requires_grad=True), use_reentrant=True, context_fn=lambda: (None, None))
C["checkpoint_determinism_check_unknown"] = lambda T: CK(T).checkpoint(
    lambda a: a * 2, T.ones(2, requires_grad=True), use_reentrant=False, determinism_check="all")
C["checkpoint_sequential_segments_zero"] = lambda T: CK(T).checkpoint_sequential(
    nn(T).Sequential(nn(T).ReLU()), 0, T.ones(2), use_reentrant=False)
C["checkpoint_sequential_bad_keyword"] = lambda T: CK(T).checkpoint_sequential(
    nn(T).Sequential(nn(T).ReLU()), 1, T.ones(2), use_reentrant=False, bogus=1)

# ---- torch.utils.data --------------------------------------------------------------------------------
D = lambda T: T.utils.data
ds = lambda T: D(T).TensorDataset(T.arange(6.).reshape(3, 2))
C["dataloader_batch_size_str"] = lambda T: D(T).DataLoader(ds(T), batch_size="2")
C["dataloader_batch_sampler_with_drop_last"] = lambda T: D(T).DataLoader(ds(T), batch_sampler=[[0]], drop_last=True)
C["dataloader_no_batch_with_drop_last"] = lambda T: D(T).DataLoader(ds(T), batch_size=None, drop_last=True)
C["dataloader_multiprocessing_context_without_workers"] = lambda T: D(T).DataLoader(
    ds(T), multiprocessing_context="spawn")
C["random_split_mixed_lengths"] = lambda T: D(T).random_split(ds(T), [1, 0.5])
C["subset_float_index"] = lambda T: D(T).Subset(ds(T), [0.5])[0]
C["tensor_dataset_third_size_differs"] = lambda T: D(T).TensorDataset(T.ones(3), T.ones(3), T.ones(2))
C["distributed_sampler_rank_out_of_range"] = lambda T: D(T).DistributedSampler(ds(T), num_replicas=2, rank=2)
C["distributed_sampler_ok"] = lambda T: list(D(T).DistributedSampler(ds(T), num_replicas=2, rank=1, shuffle=False))
C["stack_dataset_length_mismatch"] = lambda T: D(T).StackDataset(ds(T), D(T).TensorDataset(T.ones(2)))

CASES = C
GIST = {
    "conv2d_5d_weight": "expected stride to be a single integer value or a list of 3 values to match the "
                        "convolution dimensions, but got stride=[1, 1]",
    "conv2d_5d_weight_dilation_short": "but got dilation=[1, 1]",
    "conv2d_5d_weight_output_padding": "but got output_padding=[0, 0]",
    "conv3d_4d_weight_stride_pair": "expected padding to be a single integer value or a list of 2 values",
    "conv3d_4d_weight_all_single": "output_padding=[0, 0, 0]",
    "conv3d_4d_weight_2d_input": "Expected 4D (unbatched) or 5D (batched) input to conv3d",
    "conv1d_4d_weight": "Expected 4-dimensional input for 4-dimensional weight [1, 1, 1, 1], but got "
                        "3-dimensional input of size [1, 1, 2] instead",
    "conv1d_4d_weight_unbatched": "3-dimensional input of size [1, 1, 2]",
    "conv_transpose2d_5d_both": "input to conv_transpose2d",
    "conv_transpose3d_4d_weight_all_single": "got 5-dimensional input of size [1, 1, 1, 2, 2]",
    "Conv3d_kernel_pair": "a list of 2 values to match the convolution dimensions, but got stride=[1, 1, 1]",
    "Conv2d_kernel_single": "a list of 1 values to match the convolution dimensions, but got stride=[1, 1]",
    "function_mark_dirty_int": "mark_dirty can only accept variables, but argument",
    "function_mark_dirty_none": "mark_dirty can only accept variables",
    "function_mark_non_differentiable_int": "mark_non_differentiable only accepts variable arguments",
    "adam_beta2_negative": "Invalid beta parameter at index 1",
    "sgd_nesterov_with_dampening": "Nesterov momentum requires a momentum and zero dampening",
    "asgd_single_tensor_params": "should be an iterable of Tensors or dicts",
    "rprop_consumed_generator": "optimizer got an empty parameter list",
    "adadelta_non_leaf_param": "can't optimize a non-leaf Tensor",
    "adam_load_state_dict_two_params_into_one": "doesn't match the size of optimizer's group",
    "function_grad_needs_expanding": "returned an invalid gradient at index 0 - got [1] but expected shape "
                                     "compatible with [2]",
    "radam_eps_nan": "Invalid epsilon value: nan",
    "onecycle_no_total_steps": "You must define either total_steps OR (epochs AND steps_per_epoch)",
    "cosine_last_epoch_without_initial_lr": "param 'initial_lr' is not specified in param_groups[0]",
    "lambdalr_tuple_wrong_length": "Expected 1 lr_lambdas, but got 2",
    "plateau_threshold_mode_upper": "threshold mode REL is unknown",
    "plateau_factor_one": "Factor should be < 1.0",
    "rnncell_nonlinearity_sigmoid": "Unknown nonlinearity: sigmoid",
    "embedding_from_pretrained_padding_idx_out_of_range": "Padding_idx must be within num_embeddings",
    "mha_heads_negative": "num_heads",
    "register_buffer_on_parameter_name": "attribute 'weight' already exists",
    "register_parameter_buffer_class": "cannot assign",
    "load_state_dict_buffer_size_mismatch": "size mismatch for running_mean",
    "load_state_dict_into_absent_bias": 'Unexpected key(s) in state_dict: "bias"',
    "get_submodule_through_parameter": "is not an nn.Module",
    "checkpoint_context_fn_with_reentrant": "context_fn",
    "checkpoint_determinism_check_unknown": "determinism_check should be one of",
    "dataloader_batch_sampler_with_drop_last": "batch_sampler option is mutually exclusive with batch_size, "
                                               "shuffle, sampler, and drop_last",
    "dataloader_multiprocessing_context_without_workers": "multiprocessing_context can only be used with "
                                                          "multi-process loading",
    "tensor_dataset_third_size_differs": "Size mismatch between tensors",
    "distributed_sampler_rank_out_of_range": "Invalid rank 2",
}
test_same_class_as_torch, test_message_gist = table_tests(CASES, GIST, torch, tracegrad)

test_accepted_value_matches_torch = value_test(CASES, [k for k in CASES if k.endswith("_ok")], torch, tracegrad,
                                               close=True)


def test_conv_rank_check_names_the_functional():
    """tracegrad's rank error (no torch text to match beyond the sizes) also says which rank the
    functional takes, where torch's message leaves the reader to work it out."""
    with pytest.raises(RuntimeError, match="conv1d takes a 3-d weight"):
        F(tracegrad).conv1d(tracegrad.ones(1, 1, 2), tracegrad.ones(1, 1, 1, 1))


def test_checkpoint_recompute_saving_fewer_is_checkpoint_error():
    """A checkpointed function whose recomputation saves fewer tensors than its forward did:
    torch's CheckpointError (a RuntimeError, its class in torch.utils.checkpoint), with the
    counts."""
    def run(T):
        _recompute_fewer(T)
    with pytest.raises(Exception) as want:
        run(torch)
    with pytest.raises(tracegrad.utils.checkpoint.CheckpointError) as got:
        run(tracegrad)
    assert _class_names(got.type) == _class_names(want.type) == ["CheckpointError", "RuntimeError"]
    for e in (want.value, got.value):
        assert "Number of tensors saved during forward: 2" in str(e)


# ---- tracegrad.compile(fullgraph=True) on a graph break: torch's exception class -------------------
def _graph_break(T):
    T._dynamo.graph_break()


GRAPH_BREAKS = {
    "data_dependent_branch": lambda T, a: a * 2 if a.sum() > 0 else a,
    "graph_break_call": lambda T, a: (_graph_break(T), a * 2)[1],
    "float_tolist": lambda T, a: T.tensor(a.tolist()) * 2,
    "repr_of_tensor": lambda T, a: repr(a) and a,
    "compiler_disable_inside": lambda T, a: T.compiler.disable(lambda b: b * 2)(a),
}


def _class_names(cls):
    """The names of ``cls`` and its bases up to the builtin one (``Unsupported``,
    ``TorchDynamoException``, ``RuntimeError``): torch's own exception classes have namesakes in
    tracegrad, so the chain of names is what two libraries' classes can share."""
    names = []
    for c in cls.__mro__:
        names.append(c.__name__)
        if c.__module__ == "builtins":
            break
    return names


@pytest.mark.parametrize("name", list(GRAPH_BREAKS))
def test_fullgraph_graph_break_raises_torchs_class(name):
    """A function that cannot be one program raises torch's Unsupported (a TorchDynamoException,
    a RuntimeError) from ``compile(fullgraph=True)`` -- tracegrad's GraphBreak is its subclass --
    with a message that names tracegrad.compile and says to move the Python-side read out."""
    def run(T):
        kw = {"backend": "eager"} if T is torch else {}
        return T.compile(lambda a: GRAPH_BREAKS[name](T, a), fullgraph=True, **kw)(T.ones(2))
    with pytest.raises(Exception) as want:
        run(torch)
    with pytest.raises(tracegrad._dynamo.exc.Unsupported) as got:
        run(tracegrad)
    assert _class_names(want.type) == ["Unsupported", "TorchDynamoException", "RuntimeError"]
    assert _class_names(got.type)[-3:] == _class_names(want.type)
    assert "tracegrad.compile cannot capture this function as one program" in str(got.value)
