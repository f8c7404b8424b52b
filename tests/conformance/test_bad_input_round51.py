"""Bad-input parity, round 51: the training API around the tensors -- tracegrad.optim constructors
(named parameters given as ``(name, tensor)`` pairs, mixed with unnamed ones or added to a group of
the other kind; sparse gradients; ``lr`` as a tensor with ``foreach``; ``fused`` with
``differentiable``), the optimizer's step pre-hooks returning something else than ``None`` or
``(args, kwargs)``, lr_scheduler edge cases (``eta_min`` kinds, ``cycle_momentum`` on an
optimizer without momentum, ChainedScheduler/SequentialLR of other optimizers or of
ReduceLROnPlateau, a two-element metric) and their lr sequences at the edges (``total_iters=0``,
``T_max=1``, repeated milestones, ``triangular2``/``exp_range``, three-phase OneCycleLR, plateau
cooldown/threshold modes), swa_utils (SWALR's anneal arguments, AveragedModel's two averaging
functions, an invalid EMA decay), nn.utils (clip_grad's ``error_if_nonfinite`` and string norms,
vector_to_parameters lengths, weight/spectral norm names, parametrize and prune arguments, the rnn
packing helpers' lengths), torch.utils.data (DataLoader options on an IterableDataset,
multiprocessing_context without workers, attributes set after construction, samplers' integer and
boolean arguments, DistributedSampler's rank and padding, StackDataset and ConcatDataset
indices), nn.Module (registration before ``__init__``, get_submodule/get_parameter of the wrong
kind, container indices and update sequences, a pre-hook
returning a non-tensor), nn.init (fan of 0-d/1-d tensors, invalid gains and bounds, dirac groups)
and autograd (inference-mode tensors given hooks or ``requires_grad_``, ``inputs=`` that are not
tensors, ``grad_outputs`` fewer than outputs, integer gradients assigned to ``.grad``,
autograd.functional's strategy and vector shapes), and the warnings torch gives on misuse
(scheduler before optimizer, an epoch to ``step``, duplicate parameters, zero-length splits,
positional ``state_dict`` arguments, non-full backward hooks).

A probe of ~550 calls (written here for this table, no other repository's tests copied; torch 2.13
the oracle) found every exception class equal to torch's; one message differed, fixed here:

- a step pre-hook returning something else than ``None`` or ``(new_args, new_kwargs)`` on an
  optimizer whose ``step`` is inherited (SGD, Adam, ...) named ``Optimizer.step`` in the message;
  torch names the optimizer's own step (``SGD.step``) (``optim/optimizer.py``).

Found and left alone (not tabled): ``tracegrad.nn.utils.prune`` is reachable without importing it
(torch needs ``import torch.nn.utils.prune``); the ``KeyError`` for an optimizer state_dict whose
group lacks defaults names another missing key than torch (``'dampening'`` for ``'weight_decay'``).
(``random_split(generator=3)`` said "random draw" where torch names ``randperm``: each draw now
names its op, ``test_generator_of_another_kind_names_the_op``.)

Each call runs under torch and tracegrad: the same exception class (or none), no text of the layers
below tracegrad; ``_ok`` calls are ones torch accepts, and they give torch's value.
"""
import warnings

import pytest

import tracegrad

from _bad_input_helpers import table_tests, value_test

torch = pytest.importorskip("torch")
import torch.nn.utils.prune  # noqa: E402,F401 -- torch's prune is not imported by torch.nn.utils

C = {}


def P(T):
    return [T.nn.Parameter(T.ones(2))]


def opt(T, name, *a, **k):
    return getattr(T.optim, name)(P(T), *a, **k)


def lin(T):
    T.manual_seed(0)
    return T.nn.Linear(2, 2)


def sched(T, name, *a, **k):
    return getattr(T.optim.lr_scheduler, name)(T.optim.SGD(P(T), lr=0.1), *a, **k)


def lrs(T, name, n, *a, **k):
    """The first lr and those after each of ``n`` (optimizer step, scheduler step) pairs."""
    s = sched(T, name, *a, **k)
    out = [s.get_last_lr()[0]]
    for _ in range(n):
        s.optimizer.step()
        s.step()
        out.append(round(s.get_last_lr()[0], 6))
    return out


def plateau(T, metrics, **k):
    s = sched(T, "ReduceLROnPlateau", **k)
    for m in metrics:
        s.step(m)
    return [round(x, 6) for x in s.get_last_lr()]


def with_grad(T, g=(1., 2.)):
    p = T.nn.Parameter(T.ones(2))
    p.grad = T.tensor(list(g))
    return [p]


def in_mode(T, mode, f):
    with getattr(T, mode)():
        return f()


def iterable(T):
    class It(T.utils.data.IterableDataset):
        def __iter__(self):
            return iter(T.arange(4.))
    return It()


def early_registration(T):
    class Early(T.nn.Module):
        def __init__(self):   # registers before Module.__init__ ran
            self.register_parameter("p", None)
    return Early()


def flattening(T):
    class Flat(T.nn.Module):
        def forward(self, w):
            return w.flatten()
    return Flat()


def set_grad(T, p, g):
    p.grad = g
    return p


D = lambda T: T.utils.data                       # noqa: E731
DS = lambda T: D(T).TensorDataset(T.arange(6.))  # noqa: E731
I = lambda T: T.nn.init                          # noqa: E731,E741
U = lambda T: T.nn.utils                         # noqa: E731
SW = lambda T: T.optim.swa_utils                 # noqa: E731
G = lambda T: T.ones(2, requires_grad=True)      # noqa: E731
NP = lambda T: list(lin(T).named_parameters())   # noqa: E731
LS = lambda T: T.optim.lr_scheduler              # noqa: E731

# optimizers: named parameters, sparse gradients, option combinations
C["named_params_sgd_ok"] = lambda T: T.optim.SGD(NP(T), lr=0.1).state_dict()["param_groups"][0]["param_names"]
C["named_params_group_ok"] = lambda T: T.optim.SGD([{"params": NP(T)}], lr=0.1).param_groups[0]["param_names"]
C["named_params_mixed"] = lambda T: T.optim.SGD([("w", T.nn.Parameter(T.ones(1))), T.nn.Parameter(T.ones(1))], lr=0.1)
C["named_params_add_unnamed_group"] = lambda T: T.optim.SGD(NP(T), lr=0.1).add_param_group(
    {"params": [T.nn.Parameter(T.ones(1))]})
C["unnamed_params_add_named_group"] = lambda T: T.optim.SGD(P(T), lr=0.1).add_param_group(
    {"params": [("w", T.nn.Parameter(T.ones(1)))]})
C["adam_sparse_grad"] = lambda T: (lambda o: (set_grad(T, o.param_groups[0]["params"][0], T.ones(2).to_sparse()),
                                              o.step()))(opt(T, "Adam"))
C["sparse_adam_dense_grad"] = lambda T: (lambda o: (set_grad(T, o.param_groups[0]["params"][0], T.ones(2)),
                                                    o.step()))(opt(T, "SparseAdam"))
C["sparse_adam_params_tensor"] = lambda T: T.optim.SparseAdam(T.nn.Parameter(T.ones(1)))
C["sgd_sparse_grad_ok"] = lambda T: (lambda o: (set_grad(T, o.param_groups[0]["params"][0], T.ones(2).to_sparse()),
                                                o.step(), o.param_groups[0]["params"][0].tolist())[2])(opt(T, "SGD", lr=0.5))
C["adam_lr_tensor_foreach"] = lambda T: opt(T, "Adam", lr=T.tensor(0.01), foreach=True)
C["sgd_fused_differentiable"] = lambda T: opt(T, "SGD", lr=0.1, differentiable=True, fused=True)
C["step_pre_hook_returns_int"] = lambda T: (lambda o: (o.register_step_pre_hook(lambda opt, a, k: 3), o.step()))(
    opt(T, "SGD", lr=0.1))
C["step_pre_hook_returns_1_tuple"] = lambda T: (lambda o: (o.register_step_pre_hook(lambda opt, a, k: (1,)),
                                                           o.step()))(opt(T, "Adam"))
C["step_post_hook_ok"] = lambda T: (lambda o, seen: (o.register_step_post_hook(lambda opt, a, k: seen.append(1)),
                                                     o.step(), seen)[2])(opt(T, "SGD", lr=0.1), [])
# lr_scheduler
C["warm_restarts_eta_min_str"] = lambda T: sched(T, "CosineAnnealingWarmRestarts", 2, eta_min="x")
C["onecycle_without_momentum"] = lambda T: LS(T).OneCycleLR(opt(T, "Adagrad"), max_lr=0.1, total_steps=3)
C["cyclic_without_momentum"] = lambda T: LS(T).CyclicLR(opt(T, "Adagrad"), 0.01, 0.1)
C["onecycle_stepped_past_total"] = lambda T: (lambda s: [s.step() for _ in range(3)])(
    sched(T, "OneCycleLR", max_lr=0.1, total_steps=2))
C["plateau_two_element_metric"] = lambda T: sched(T, "ReduceLROnPlateau").step(T.tensor([1.0, 2.0]))
C["plateau_not_optimizer"] = lambda T: LS(T).ReduceLROnPlateau(lin(T))
C["sequential_other_optimizer"] = lambda T: LS(T).SequentialLR(T.optim.SGD(P(T), lr=0.1), [
    sched(T, "StepLR", 1), sched(T, "StepLR", 1)], milestones=[1])
C["sequential_not_scheduler"] = lambda T: (lambda o: LS(T).SequentialLR(o, [LS(T).StepLR(o, 1), 3], milestones=[1]))(
    T.optim.SGD(P(T), lr=0.1))
C["chained_empty"] = lambda T: LS(T).ChainedScheduler([])
C["chained_plateau"] = lambda T: (lambda o: LS(T).ChainedScheduler([LS(T).ReduceLROnPlateau(o)]))(
    T.optim.SGD(P(T), lr=0.1))
C["lambdalr_not_callable_step"] = lambda T: sched(T, "LambdaLR", 3).step()
C["warm_restarts_values_ok"] = lambda T: lrs(T, "CosineAnnealingWarmRestarts", 7, 2, T_mult=2, eta_min=0.01)
C["cyclic_triangular2_values_ok"] = lambda T: lrs(T, "CyclicLR", 8, 0.01, 0.1, step_size_up=2, mode="triangular2",
                                                  cycle_momentum=False)
C["cyclic_exp_range_values_ok"] = lambda T: lrs(T, "CyclicLR", 6, 0.01, 0.1, step_size_up=1, step_size_down=2,
                                                mode="exp_range", gamma=0.9, cycle_momentum=False)
C["onecycle_three_phase_values_ok"] = lambda T: lrs(T, "OneCycleLR", 5, max_lr=1.0, total_steps=6, three_phase=True,
                                                    cycle_momentum=False)
C["polynomial_total_zero_ok"] = lambda T: lrs(T, "PolynomialLR", 2, total_iters=0)
C["linear_total_zero_ok"] = lambda T: lrs(T, "LinearLR", 2, total_iters=0)
C["cosine_tmax_one_ok"] = lambda T: lrs(T, "CosineAnnealingLR", 4, T_max=1, eta_min=0.05)
C["multistep_repeated_milestone_ok"] = lambda T: lrs(T, "MultiStepLR", 4, [2, 2], gamma=0.5)
C["steplr_gamma_zero_ok"] = lambda T: lrs(T, "StepLR", 3, 1, gamma=0.0)
C["plateau_abs_threshold_ok"] = lambda T: plateau(T, [1.0, 0.95, 0.95, 0.95, 0.5, 0.5, 0.5], patience=1,
                                                  threshold=0.1, threshold_mode="abs", factor=0.5)
C["plateau_max_cooldown_min_lr_ok"] = lambda T: plateau(T, [1.0, 0.0, 0.0, 0.0, 0.0, 0.0], mode="max", patience=0,
                                                        cooldown=1, min_lr=0.02, factor=0.5)
C["plateau_negative_patience_ok"] = lambda T: plateau(T, [1.0, 2.0], patience=-1)
# swa_utils
C["swalr_anneal_strategy_bad"] = lambda T: SW(T).SWALR(opt(T, "SGD", lr=0.1), swa_lr=0.05, anneal_strategy="x")
C["swalr_anneal_epochs_float"] = lambda T: SW(T).SWALR(opt(T, "SGD", lr=0.1), swa_lr=0.05, anneal_epochs=1.5)
C["swalr_swa_lr_list_length"] = lambda T: SW(T).SWALR(opt(T, "SGD", lr=0.1), swa_lr=[0.05, 0.01])
C["swalr_linear_values_ok"] = lambda T: (lambda s: [(s.optimizer.step(), s.step(), round(s.get_last_lr()[0], 6))[2]
                                                    for _ in range(4)])(
    SW(T).SWALR(opt(T, "SGD", lr=1.0), swa_lr=0.1, anneal_epochs=3, anneal_strategy="linear"))
C["averaged_model_both_fns"] = lambda T: (lambda m: (lambda a: (a.update_parameters(m), a.update_parameters(m)))(
    SW(T).AveragedModel(m, avg_fn=lambda a, b, n: a + b, multi_avg_fn=SW(T).get_ema_multi_avg_fn(0.5))))(lin(T))
C["ema_decay_above_one"] = lambda T: SW(T).get_ema_multi_avg_fn(2.0)
# nn.utils
C["clip_norm_nonfinite"] = lambda T: U(T).clip_grad_norm_(with_grad(T, (float("inf"), 1.)), 1.0, error_if_nonfinite=True)
C["clip_norm_type_fro"] = lambda T: U(T).clip_grad_norm_(with_grad(T), 1.0, norm_type="fro")
C["clip_norm_type_inf_str_ok"] = lambda T: U(T).clip_grad_norm_(with_grad(T), 1.0, norm_type="inf").tolist()
C["clip_value_negative_ok"] = lambda T: (lambda ps: (U(T).clip_grad_value_(ps, -1.0), ps[0].grad.tolist())[1])(with_grad(T))
C["total_norm_nonfinite"] = lambda T: U(T).get_total_norm([T.tensor([float("nan")])], error_if_nonfinite=True)
C["vector_to_parameters_short"] = lambda T: U(T).vector_to_parameters(T.ones(1), [T.nn.Parameter(T.ones(2))])
C["vector_to_parameters_long_ok"] = lambda T: (lambda ps: (U(T).vector_to_parameters(T.arange(5.), ps),
                                                           ps[0].tolist())[1])([T.nn.Parameter(T.ones(2))])
C["spectral_norm_zero_iterations"] = lambda T: U(T).spectral_norm(lin(T), n_power_iterations=0)
C["parametrize_unknown_tensor"] = lambda T: U(T).parametrize.register_parametrization(lin(T), "x", T.nn.Identity())
C["parametrize_shape_change"] = lambda T: U(T).parametrize.register_parametrization(lin(T), "weight", flattening(T))
C["parametrize_remove_absent"] = lambda T: U(T).parametrize.remove_parametrizations(lin(T), "weight")
C["orthogonal_map_bad"] = lambda T: U(T).parametrizations.orthogonal(lin(T), orthogonal_map="x")
C["prune_amount_negative"] = lambda T: U(T).prune.l1_unstructured(lin(T), "weight", amount=-1)
C["prune_amount_above_count"] = lambda T: U(T).prune.l1_unstructured(lin(T), "weight", amount=10)
C["prune_ln_dim_out_of_range"] = lambda T: U(T).prune.ln_structured(lin(T), "weight", amount=1, n=2, dim=3)
C["prune_remove_unpruned"] = lambda T: U(T).prune.remove(lin(T), "weight")
C["pack_padded_zero_length"] = lambda T: U(T).rnn.pack_padded_sequence(T.ones(3, 2, 1), [3, 0], enforce_sorted=False)
C["pad_packed_total_length_short"] = lambda T: U(T).rnn.pad_packed_sequence(
    U(T).rnn.pack_padded_sequence(T.ones(3, 2, 1), [3, 2]), total_length=2)
# torch.utils.data
C["dl_iterable_shuffle"] = lambda T: D(T).DataLoader(iterable(T), shuffle=True)
C["dl_iterable_sampler"] = lambda T: D(T).DataLoader(iterable(T), sampler=[0])
C["dl_iterable_batches_ok"] = lambda T: [b.tolist() for b in D(T).DataLoader(iterable(T), batch_size=3)]
C["dl_iterable_len"] = lambda T: len(D(T).DataLoader(iterable(T)))
C["dl_mp_context_without_workers"] = lambda T: D(T).DataLoader(DS(T), multiprocessing_context="spawn")
C["dl_batch_size_set_after_init"] = lambda T: setattr(D(T).DataLoader(DS(T)), "batch_size", 3)
C["dl_batch_size_true"] = lambda T: D(T).DataLoader(DS(T), batch_size=True)
C["dl_drop_last_str"] = lambda T: D(T).DataLoader(DS(T), batch_size=4, drop_last="x")
C["dl_prefetch_negative"] = lambda T: D(T).DataLoader(DS(T), num_workers=1, prefetch_factor=-1)
C["batch_sampler_size_float"] = lambda T: D(T).BatchSampler(range(3), 2.0, False)
C["random_sampler_num_samples_float"] = lambda T: D(T).RandomSampler(range(3), num_samples=1.0)
C["weighted_sampler_negative_weight"] = lambda T: list(D(T).WeightedRandomSampler([1., -1.], 2))
C["weighted_sampler_too_many_no_replacement"] = lambda T: list(D(T).WeightedRandomSampler([1., 1.], 3, replacement=False))
C["distributed_sampler_rank_out_of_range"] = lambda T: D(T).DistributedSampler(range(3), num_replicas=2, rank=2)
C["distributed_sampler_padding_ok"] = lambda T: list(D(T).DistributedSampler(range(5), num_replicas=2, rank=1,
                                                                             shuffle=False))
C["distributed_sampler_drop_last_ok"] = lambda T: list(D(T).DistributedSampler(range(5), num_replicas=2, rank=1,
                                                                               shuffle=False, drop_last=True))
C["stack_dataset_length_mismatch"] = lambda T: D(T).StackDataset(DS(T), D(T).TensorDataset(T.ones(2)))
C["stack_dataset_args_and_kwargs"] = lambda T: D(T).StackDataset(DS(T), a=DS(T))
C["concat_dataset_negative_out_of_range"] = lambda T: D(T).ConcatDataset([DS(T)])[-10]
C["concat_dataset_negative_ok"] = lambda T: D(T).ConcatDataset([DS(T), DS(T)])[-1][0].tolist()
C["subset_list_index_ok"] = lambda T: [x[0].tolist() for x in D(T).Subset(DS(T), [0, 2, 4])[[0, 2]]]
C["default_collate_ragged"] = lambda T: D(T).default_collate([T.ones(2), T.ones(3)])
C["default_collate_sequence_lengths"] = lambda T: D(T).default_collate([[1, 2], [1]])
# nn.Module
C["register_parameter_before_init"] = lambda T: early_registration(T)
C["get_submodule_of_parameter"] = lambda T: lin(T).get_submodule("weight")
C["get_parameter_of_module"] = lambda T: T.nn.Sequential(lin(T)).get_parameter("0")
C["sequential_insert_out_of_range"] = lambda T: T.nn.Sequential().insert(5, T.nn.ReLU())
C["modulelist_negative_out_of_range"] = lambda T: T.nn.ModuleList([T.nn.ReLU()])[-2]
C["moduledict_update_triples"] = lambda T: T.nn.ModuleDict().update([("a", T.nn.ReLU(), 3)])
C["parameterdict_update_singles"] = lambda T: T.nn.ParameterDict().update([("a",)])
C["forward_pre_hook_returns_int"] = lambda T: (lambda m: (m.register_forward_pre_hook(lambda mod, a: 3),
                                                          m(T.ones(2))))(lin(T))
C["shared_module_names_ok"] = lambda T: (lambda r: [n for n, _ in T.nn.Sequential(r, r).named_modules(
    remove_duplicate=False)])(T.nn.ReLU())
C["shared_parameter_state_dict_ok"] = lambda T: (lambda m: list(T.nn.Sequential(m, m).state_dict()))(lin(T))
# nn.init
C["kaiming_0d"] = lambda T: I(T).kaiming_normal_(T.tensor(1.))
C["xavier_1d"] = lambda T: I(T).xavier_uniform_(T.ones(3))
C["kaiming_negative_slope_str"] = lambda T: I(T).kaiming_uniform_(T.ones(2, 2), a="x")
C["gain_leaky_relu_bool_slope"] = lambda T: I(T).calculate_gain("leaky_relu", True)
C["gains_ok"] = lambda T: [round(I(T).calculate_gain(n, 0.2), 6) for n in
                           ["linear", "sigmoid", "tanh", "relu", "leaky_relu", "selu", "conv_transpose2d"]]
C["dirac_groups_not_dividing"] = lambda T: I(T).dirac_(T.ones(3, 2, 2), groups=2)
C["uniform_bounds_swapped"] = lambda T: I(T).uniform_(T.ones(2), a=2, b=1)
# autograd
C["inference_tensor_retain_grad"] = lambda T: in_mode(T, "inference_mode", lambda: G(T) * 2).retain_grad()
C["inference_tensor_register_hook"] = lambda T: in_mode(T, "inference_mode", lambda: T.ones(2)).register_hook(lambda g: g)
C["inference_tensor_requires_grad_"] = lambda T: in_mode(T, "inference_mode", lambda: T.ones(2)).requires_grad_()
C["grad_under_inference_mode"] = lambda T: (lambda x: in_mode(T, "inference_mode",
                                                              lambda: T.autograd.grad((x * 2).sum(), x)))(G(T))
C["backward_under_no_grad_ok"] = lambda T: (lambda x: (in_mode(T, "no_grad", (x * 2).sum().backward), x.grad.tolist())[1])(G(T))
C["backward_inputs_not_tensor"] = lambda T: (G(T) * 2).sum().backward(inputs=[3])
C["grad_outputs_fewer_than_outputs"] = lambda T: (lambda x: T.autograd.grad([x * 2, x * 3], x, grad_outputs=[T.ones(2)]))(G(T))
C["grad_outputs_number"] = lambda T: (lambda x: T.autograd.grad([(x * 2).sum()], x, grad_outputs=[1.0]))(G(T))
C["assign_int_grad"] = lambda T: set_grad(T, G(T), T.ones(2, dtype=T.int64))
C["parameter_int_tensor"] = lambda T: T.nn.Parameter(T.ones(2, dtype=T.int64))
C["jacobian_strategy_bad"] = lambda T: T.autograd.functional.jacobian(lambda a: a * 2, T.ones(2), strategy="x")
C["jacobian_forward_without_vectorize"] = lambda T: T.autograd.functional.jacobian(lambda a: a * 2, T.ones(2),
                                                                                  strategy="forward-mode")
C["hessian_nonscalar"] = lambda T: T.autograd.functional.hessian(lambda a: a * 2, T.ones(2))
C["jvp_vector_shape"] = lambda T: T.autograd.functional.jvp(lambda a: a * 2, T.ones(2), T.ones(3))
C["hook_chain_values_ok"] = lambda T: (lambda x: (x.register_hook(lambda g: g * 2), x.register_hook(lambda g: g + 1),
                                                  (x * 3).sum().backward(), x.grad.tolist())[3])(G(T))
C["retain_grad_after_hook_ok"] = lambda T: (lambda x: (lambda y: (y.register_hook(lambda g: g * 10), y.retain_grad(),
                                                                  y.sum().backward(), y.grad.tolist(),
                                                                  x.grad.tolist())[3:])(x * 2))(G(T))

GIST = {
    "step_pre_hook_returns_int": "SGD.step",
    "step_pre_hook_returns_1_tuple": "Adam.step",
    "named_params_mixed": "with/without names",
    "onecycle_without_momentum": "cycle_momentum",
    "chained_plateau": "ReduceLROnPlateau",
    "dl_iterable_shuffle": "IterableDataset",
    "distributed_sampler_rank_out_of_range": "Invalid rank 2",
    "prune_amount_above_count": "smaller than the number of parameters",
    "parametrize_shape_change": "may not change the shape",
    "inference_tensor_requires_grad_": "inference tensor",
    "grad_outputs_fewer_than_outputs": "got 2 tensors and 1 gradients",
    "clip_norm_nonfinite": "error_if_nonfinite",
}

test_same_class_as_torch, test_message_gist = table_tests(C, GIST, torch, tracegrad)
test_accepted_value_matches_torch = value_test(C, [k for k in C if k.endswith("_ok")], torch, tracegrad)


def _warnings_of(fn, T):
    """(category name, message start) of each warning ``fn(T)`` emits, every one recorded."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fn(T)
    return sorted({(w.category.__name__, str(w.message)[:40]) for w in seen})


def _sequential_after_step(T):
    o = T.optim.SGD(P(T), lr=0.1)
    o.step()
    LS(T).SequentialLR(o, [LS(T).StepLR(o, 1), LS(T).StepLR(o, 1)], milestones=[1]).step()


WARN = {
    "scheduler_before_optimizer": lambda T: sched(T, "StepLR", 1).step(),
    "scheduler_epoch_argument": lambda T: (lambda s: (s.optimizer.step(), s.step(2)))(sched(T, "StepLR", 1)),
    "get_lr_outside_step": lambda T: sched(T, "StepLR", 1).get_lr(),
    "duplicate_parameters": lambda T: (lambda p: T.optim.SGD([p, p], lr=0.1))(T.nn.Parameter(T.ones(1))),
    "zero_length_split": lambda T: D(T).random_split(range(3), [0.0, 1.0]),
    "init_zero_elements": lambda T: I(T).kaiming_uniform_(T.ones(0, 2)),
    "trunc_normal_far_mean": lambda T: I(T).trunc_normal_(T.ones(2), mean=5., a=-2., b=2.),
    "state_dict_positional": lambda T: lin(T).state_dict(None, "p"),
    "non_full_backward_hook": lambda T: (lambda m: (m.register_backward_hook(lambda *a: None),
                                                    m(G(T)).sum().backward()))(lin(T)),
    "sequential_after_step_silent": _sequential_after_step,
    "non_leaf_grad_access": lambda T: (G(T) * 2).grad,
}


@pytest.mark.parametrize("name", list(WARN))
def test_warnings_match_torch(name, fresh_warn_once):
    assert _warnings_of(WARN[name], tracegrad) == _warnings_of(WARN[name], torch)


def test_step_pre_hook_message_names_the_optimizer():
    """The message names the optimizer's step a hook was registered on, not the base class's."""
    o = tracegrad.optim.RMSprop(P(tracegrad))
    o.register_step_pre_hook(lambda opt, a, k: "x")
    with pytest.raises(RuntimeError, match=r"RMSprop\.step.*must return None or a tuple") as e:
        o.step()
    assert "Optimizer.step" not in str(e.value)


GENERATOR_CALLS = {
    "randperm": lambda T: T.utils.data.random_split(range(10), [5, 5], generator=3),
    "uniform_": lambda T: T.zeros(3).uniform_(generator=2),
    "multinomial": lambda T: T.multinomial(T.ones(3), 2, generator=1),
    "poisson": lambda T: T.poisson(T.ones(3), generator=1),
    "randn": lambda T: T.randn(3, generator="a"),
    "bernoulli": lambda T: T.bernoulli(T.full((3,), 0.5), generator=1.5),
}


@pytest.mark.parametrize("name", list(GENERATOR_CALLS))
def test_generator_of_another_kind_names_the_op(name):
    """A ``generator=`` that is no Generator: torch's parser TypeError, naming the op that draws."""
    with pytest.raises(TypeError, match=name) as want:
        GENERATOR_CALLS[name](torch)
    with pytest.raises(TypeError, match=rf"^{name}\(\).*generator=") as got:
        GENERATOR_CALLS[name](tracegrad)
    assert "random draw" not in str(got.value) and str(want.value).startswith(name)
