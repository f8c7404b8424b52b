"""Ported from PyTorch's test/optim/test_lrscheduler.py (TestLRScheduler) and
test/nn/test_dropout.py (TestDropoutNN, TestDropoutNNDeviceType), round 12: scheduler values
over epochs for the combinations earlier rounds left (CyclicLR modes with momentum, OneCycleLR
with Adam's betas and three phases, CosineAnnealingWarmRestarts with fractional epochs,
ReduceLROnPlateau modes/thresholds/cooldown/min_lr lists, SequentialLR/ChainedScheduler mixes,
state_dict round trips, constructor errors) and dropout's properties (the fraction dropped,
the 1/(1-p) scale, eval mode, feature dropout's whole channels, argument errors).

Each case is a ``same_outcome`` program run by torch 2.13 (the oracle) and tracegrad: the
learning rates (and momenta) they log must be equal, or both must raise the same builtin
exception class. Dropout draws differ between the libraries, so its cases return properties
of the draw (booleans, counts within bounds, scales) rather than the draw itself.

Adapted: the originals compare against hand-written target lists; here torch computes them."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

pytest.importorskip("torch")


def _opt(T, cls="SGD", **kw):
    # TestLRScheduler.setUp: two param groups, the second at lr 0.5
    a, b = T.nn.Linear(1, 1), T.nn.Linear(1, 1)
    kw.setdefault("lr", 0.05)
    return getattr(T.optim, cls)([{"params": a.parameters()}, {"params": b.parameters(), "lr": 0.5}], **kw)


def _S(T):
    return T.optim.lr_scheduler


def _lrs(opt, key="lr"):
    return [float(g[key][0] if key == "betas" else g[key]) for g in opt.param_groups]


def _trace(opt, scheds, n, key="lr", metrics=None):
    """The groups' ``key`` before each of ``n`` epochs, stepping every scheduler after each."""
    out = []
    scheds = scheds if isinstance(scheds, list) else [scheds]
    for i in range(n):
        out.append(_lrs(opt, key))
        opt.step()
        for s in scheds:
            s.step(metrics[i]) if metrics is not None else s.step()
    return out


def _cyclic(T, n=12, cls="SGD", okw=None, **kw):
    opt = _opt(T, cls, **({"momentum": 0.9} if okw is None else okw))
    s = _S(T).CyclicLR(opt, base_lr=[0.1, 0.2], max_lr=[1.0, 2.0], **kw)
    key = "momentum" if "momentum" in opt.defaults and kw.get("cycle_momentum", True) else "lr"
    return _trace(opt, s, n), _trace(opt, s, 3, key) if key == "momentum" else None


def _onecycle(T, cls="SGD", n=10, okw=None, **kw):
    opt = _opt(T, cls, **({} if okw is None else okw))
    s = _S(T).OneCycleLR(opt, max_lr=[1.0, 2.0], total_steps=n, **kw)
    lrs, mom = [], []
    key = "betas" if "betas" in opt.defaults else ("momentum" if "momentum" in opt.defaults else None)
    for _ in range(n):
        lrs.append(_lrs(opt))
        if key:
            mom.append(_lrs(opt, key))
        opt.step()
        s.step()
    return lrs, mom


def _warm_restarts_fractional(T):
    # TestLRScheduler.test_CosineAnnealingWarmRestarts_lr3: step(epoch) with fractional epochs
    opt = _opt(T)
    s = _S(T).CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.01)
    out = []
    for e in np.arange(0, 12, 0.7):
        s.step(float(e))
        out.append(_lrs(opt))
    return out


def _warm_restarts(T, **kw):
    opt = _opt(T)
    return _trace(opt, _S(T).CosineAnnealingWarmRestarts(opt, **kw), 14)


def _plateau(T, metrics, **kw):
    opt = _opt(T)
    s = _S(T).ReduceLROnPlateau(opt, **kw)
    return _trace(opt, s, len(metrics), metrics=metrics), [float(x) for x in s.get_last_lr()]


def _sequential(T):
    # TestLRScheduler.test_sequentiallr*: warm-up LinearLR then ExponentialLR then StepLR
    opt = _opt(T)
    S = _S(T)
    s1 = S.LinearLR(opt, start_factor=0.1, total_iters=3)
    s2 = S.ExponentialLR(opt, gamma=0.8)
    s3 = S.StepLR(opt, step_size=2, gamma=0.5)
    s = S.SequentialLR(opt, [s1, s2, s3], milestones=[3, 6])
    return _trace(opt, s, 11), [float(x) for x in s.get_last_lr()]


def _chained(T):
    # TestLRScheduler.test_chained_lr*: ChainedScheduler multiplies the factors together
    opt = _opt(T)
    S = _S(T)
    s = S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=4), S.ExponentialLR(opt, gamma=0.9),
                            S.MultiStepLR(opt, milestones=[2, 5], gamma=0.1)])
    return _trace(opt, s, 8), [float(x) for x in s.get_last_lr()]


def _chained_with_optimizer(T):
    opt = _opt(T)
    S = _S(T)
    s = S.ChainedScheduler([S.LinearLR(opt, start_factor=0.25, total_iters=3), S.StepLR(opt, 2, 0.5)], optimizer=opt)
    return _trace(opt, s, 6)


def _state_dict_round_trip(T, make, steps=5):
    # TestLRScheduler._check_scheduler_state_dict: a scheduler loaded from another's state_dict
    # continues with the same learning rates
    opt = _opt(T)
    s = make(T, opt)
    for _ in range(steps):
        opt.step()
        s.step()
    sd = s.state_dict()
    opt2 = _opt(T)
    for g, g2 in zip(opt.param_groups, opt2.param_groups):
        g2["lr"] = g["lr"]
        g2.setdefault("initial_lr", g.get("initial_lr"))
    s2 = make(T, opt2)
    s2.load_state_dict(sd)
    return _trace(opt, s, 4), _trace(opt2, s2, 4), [float(x) for x in s2.get_last_lr()]


def _dropout_stats(T, p, cls="Dropout", shape=(40, 50), train=True, inplace=False):
    # TestDropoutNN._test_dropout: the fraction dropped is near p, kept values scaled by 1/(1-p)
    x = T.ones(*shape)
    m = getattr(T.nn, cls)(p, inplace=inplace)
    m.train(train)
    y = m(x)
    kept = y[y != 0]
    frac = 1 - kept.numel() / y.numel()
    scale_ok = bool(((kept - 1 / (1 - p)).abs() < 1e-5).all()) if p < 1 and kept.numel() else None
    return abs(frac - p) < 0.08, scale_ok, y.shape, (x is y) if inplace else None


def _dropout_grad(T):
    # gradient is the same mask times the scale
    x = T.ones(30, 30, requires_grad=True)
    y = T.nn.functional.dropout(x, 0.4)
    y.sum().backward()
    return bool((x.grad == y.detach()).all())


def _feature_dropout_channels(T, cls, shape):
    # TestDropoutNN.test_Dropout2d/3d: whole channels are zeroed or kept
    x = T.ones(*shape)
    y = getattr(T.nn, cls)(0.5)(x)
    flat = y.reshape(shape[0] * shape[1], -1) if len(shape) > 2 else y
    per_channel = [sorted(set(r.tolist())) for r in flat]
    return all(len(v) == 1 and v[0] in (0.0, 2.0) for v in per_channel), y.shape


def _alpha_dropout(T, cls="AlphaDropout"):
    # TestDropoutNN.test_AlphaDropout: mean and std approximately preserved on a normal input
    rng = np.random.RandomState(0)
    x = T.tensor(rng.standard_normal((50, 40)).astype(np.float32))
    y = getattr(T.nn, cls)(0.2)(x)
    return abs(float(y.mean())) < 0.15, abs(float(y.std()) - 1) < 0.15, y.shape


CASES = {
    # ---- test_lrscheduler.py --------------------------------------------------------------------
    # TestLRScheduler.test_cycle_lr_triangular_mode / triangular2 / exp_range with momentum
    "cycle_lr_triangular_mode": lambda T: _cyclic(T, step_size_up=4),
    "cycle_lr_triangular2_mode": lambda T: _cyclic(T, n=20, step_size_up=3, mode="triangular2"),
    "cycle_lr_exp_range_mode": lambda T: _cyclic(T, step_size_up=4, mode="exp_range", gamma=0.9),
    "cycle_lr_triangular_mode_step_size_up_down": lambda T: _cyclic(T, step_size_up=2, step_size_down=5),
    "cycle_lr_exp_range_mode_step_size_up_down": lambda T: _cyclic(T, step_size_up=3, step_size_down=2,
                                                                   mode="exp_range", gamma=0.8),
    "cycle_lr_scale_fn_iterations": lambda T: _cyclic(T, step_size_up=2, scale_fn=lambda i: 1 / (1 + i),
                                                      scale_mode="iterations"),
    "cycle_lr_scale_fn_cycle": lambda T: _cyclic(T, n=14, step_size_up=2, scale_fn=lambda c: 0.5 ** (c - 1)),
    "cycle_lr_momentum_bounds": lambda T: _cyclic(T, step_size_up=3, base_momentum=0.7, max_momentum=0.95),
    "cycle_lr_no_cycle_momentum": lambda T: _cyclic(T, step_size_up=3, cycle_momentum=False),
    "cycle_lr_with_adam": lambda T: _cyclic(T, cls="Adam", okw={}, step_size_up=3),
    "cycle_lr_momentumless_optimizer_errors": lambda T: _cyclic(T, cls="Adagrad", okw={}, step_size_up=3,
                                                                cycle_momentum=True),
    "cycle_lr_invalid_mode": lambda T: _cyclic(T, mode="nope"),
    # TestLRScheduler.test_onecycle_lr_* (cos/linear, three phases, Adam betas, errors)
    "onecycle_lr_cosine_annealing": lambda T: _onecycle(T, okw={"momentum": 0.9}),
    "onecycle_lr_linear_annealing": lambda T: _onecycle(T, okw={"momentum": 0.9}, anneal_strategy="linear"),
    "onecycle_lr_three_phases": lambda T: _onecycle(T, n=12, okw={"momentum": 0.9}, three_phase=True,
                                                    anneal_strategy="linear"),
    "onecycle_lr_adam_betas": lambda T: _onecycle(T, cls="Adam", pct_start=0.4, div_factor=10, final_div_factor=100),
    "onecycle_lr_no_momentum_cycle": lambda T: _onecycle(T, okw={"momentum": 0.9}, cycle_momentum=False),
    "onecycle_lr_epochs_steps": lambda T: (lambda o: _trace(o, _S(T).OneCycleLR(o, 1.0, epochs=2, steps_per_epoch=4), 8))(
        _opt(T, momentum=0.9)),
    "onecycle_lr_invalid_anneal_strategy": lambda T: _onecycle(T, anneal_strategy="cubic"),
    "onecycle_lr_invalid_pct_start": lambda T: _onecycle(T, pct_start=1.2),
    "onecycle_lr_cannot_calculate_total_steps": lambda T: _S(T).OneCycleLR(_opt(T), max_lr=1.0),
    "onecycle_lr_step_past_total_errors": lambda T: (lambda s: [s.step() for _ in range(3)])(
        _S(T).OneCycleLR(_opt(T), 1.0, total_steps=2)),
    # TestLRScheduler.test_CosineAnnealingWarmRestarts_lr*
    "cosine_warm_restarts_T_mult_1": lambda T: _warm_restarts(T, T_0=4, eta_min=0.001),
    "cosine_warm_restarts_T_mult_2": lambda T: _warm_restarts(T, T_0=2, T_mult=2),
    "cosine_warm_restarts_fractional_epochs": _warm_restarts_fractional,
    "cosine_warm_restarts_invalid_T_0": lambda T: _S(T).CosineAnnealingWarmRestarts(_opt(T), T_0=0),
    "cosine_warm_restarts_invalid_T_mult": lambda T: _S(T).CosineAnnealingWarmRestarts(_opt(T), T_0=2, T_mult=0),
    "cosine_warm_restarts_float_T_mult_errors": lambda T: _S(T).CosineAnnealingWarmRestarts(_opt(T), T_0=2, T_mult=1.5),
    # TestLRScheduler.test_reduce_lr_on_plateau1..8
    "reduce_lr_on_plateau_min_rel": lambda T: _plateau(T, [10, 9, 9, 9, 9, 9, 8, 8, 8, 8], patience=2, factor=0.5),
    "reduce_lr_on_plateau_max_abs": lambda T: _plateau(T, [1, 2, 2.05, 2.1, 2.1, 2.1, 3, 3, 3], mode="max",
                                                       threshold_mode="abs", threshold=0.2, patience=1),
    "reduce_lr_on_plateau_cooldown": lambda T: _plateau(T, [5] * 12, patience=1, cooldown=2, factor=0.1),
    "reduce_lr_on_plateau_min_lr_list": lambda T: _plateau(T, [5] * 10, patience=0, factor=0.5, min_lr=[0.02, 0.3]),
    "reduce_lr_on_plateau_eps": lambda T: _plateau(T, [5] * 10, patience=0, factor=0.999, eps=1e-3),
    "reduce_lr_on_plateau_max_rel": lambda T: _plateau(T, [1, 1.05, 1.2, 1.21, 1.22, 1.23, 1.5], mode="max",
                                                       threshold=0.1, patience=1),
    "reduce_lr_on_plateau_invalid_factor": lambda T: _S(T).ReduceLROnPlateau(_opt(T), factor=1.0),
    "reduce_lr_on_plateau_invalid_mode": lambda T: _S(T).ReduceLROnPlateau(_opt(T), mode="up"),
    "reduce_lr_on_plateau_invalid_threshold_mode": lambda T: _S(T).ReduceLROnPlateau(_opt(T), threshold_mode="x"),
    "reduce_lr_on_plateau_min_lr_len_errors": lambda T: _S(T).ReduceLROnPlateau(_opt(T), min_lr=[0.1, 0.2, 0.3]),
    "reduce_lr_on_plateau_get_last_lr_before_step": lambda T: [float(x) for x in _S(T).ReduceLROnPlateau(_opt(T)).get_last_lr()],
    # TestLRScheduler.test_sequentiallr* / test_chained_lr*
    "sequentiallr_three": _sequential,
    "sequentiallr_bad_milestones_errors": lambda T: (lambda o: _S(T).SequentialLR(
        o, [_S(T).ConstantLR(o), _S(T).ExponentialLR(o, 0.9)], milestones=[1, 2]))(_opt(T)),
    "sequentiallr_other_optimizer_errors": lambda T: (lambda o, o2: _S(T).SequentialLR(
        o, [_S(T).ConstantLR(o), _S(T).ExponentialLR(o2, 0.9)], milestones=[2]))(_opt(T), _opt(T)),
    "chained_lr_mix": _chained,
    "chained_lr_with_optimizer": _chained_with_optimizer,
    # simple schedulers over epochs (test_lambda_lr with a list, test_multiplicative_lr, test_poly_lr)
    "lambda_lr_list": lambda T: (lambda o: _trace(o, _S(T).LambdaLR(o, [lambda e: 0.9 ** e, lambda e: 1 / (e + 1)]), 6))(_opt(T)),
    "lambda_lr_list_len_errors": lambda T: _S(T).LambdaLR(_opt(T), [lambda e: 1.0]),
    "multiplicative_lr": lambda T: (lambda o: _trace(o, _S(T).MultiplicativeLR(o, lambda e: 0.8), 6))(_opt(T)),
    "poly_lr_power2": lambda T: (lambda o: _trace(o, _S(T).PolynomialLR(o, total_iters=4, power=2.0), 7))(_opt(T)),
    "linearlr_invalid_start_factor": lambda T: _S(T).LinearLR(_opt(T), start_factor=0),
    "linearlr_invalid_end_factor": lambda T: _S(T).LinearLR(_opt(T), end_factor=1.5),
    "constantlr_invalid_factor": lambda T: _S(T).ConstantLR(_opt(T), factor=2.0),
    "cos_anneal_lr": lambda T: (lambda o: _trace(o, _S(T).CosineAnnealingLR(o, T_max=4, eta_min=0.01), 10))(_opt(T)),
    "last_epoch_without_initial_lr_errors": lambda T: _S(T).StepLR(_opt(T), 2, last_epoch=3),
    # state_dict round trips (TestLRScheduler.test_*_state_dict)
    "step_lr_state_dict": lambda T: _state_dict_round_trip(T, lambda T, o: _S(T).StepLR(o, 2, 0.5)),
    "cosine_warm_restarts_state_dict": lambda T: _state_dict_round_trip(
        T, lambda T, o: _S(T).CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2)),
    "cyclic_lr_state_dict": lambda T: _state_dict_round_trip(
        T, lambda T, o: _S(T).CyclicLR(o, 0.1, 1.0, step_size_up=3, cycle_momentum=False)),
    "onecycle_lr_state_dict": lambda T: _state_dict_round_trip(T, lambda T, o: _S(T).OneCycleLR(
        o, 1.0, total_steps=12, cycle_momentum=False), steps=4),
    "plateau_state_dict_keys": lambda T: sorted(_S(T).ReduceLROnPlateau(_opt(T)).state_dict()),
    "sequentiallr_state_dict": lambda T: _state_dict_round_trip(T, lambda T, o: _S(T).SequentialLR(
        o, [_S(T).ConstantLR(o, 0.5, 2), _S(T).ExponentialLR(o, 0.7)], milestones=[3])),
    # ---- test_dropout.py -----------------------------------------------------------------------
    "dropout_p02": lambda T: _dropout_stats(T, 0.2),
    "dropout_p05_inplace": lambda T: _dropout_stats(T, 0.5, inplace=True),
    "dropout_p0": lambda T: _dropout_stats(T, 0.0),
    "dropout_p1": lambda T: _dropout_stats(T, 1.0),
    "dropout_eval_identity": lambda T: _dropout_stats(T, 0.5, train=False)[2:] + (
        bool((T.nn.Dropout(0.5).eval()(T.ones(3)) == 1).all()),),
    "dropout_invalid_p": lambda T: T.nn.Dropout(1.5),
    "dropout_negative_p": lambda T: T.nn.Dropout(-0.1),
    "dropout_functional_invalid_p": lambda T: T.nn.functional.dropout(T.ones(3), p=2.0),
    "dropout_functional_not_training": lambda T: T.nn.functional.dropout(T.arange(4.0), 0.9, training=False),
    "dropout_grad_is_mask": _dropout_grad,
    "dropout_int_input_errors": lambda T: T.nn.functional.dropout(T.ones(3, dtype=T.int64), 0.5),
    "dropout_zero_numel": lambda T: T.nn.Dropout(0.3)(T.ones(0, 3)),
    "dropout1d_channels": lambda T: _feature_dropout_channels(T, "Dropout1d", (8, 6, 5)),
    "dropout2d_channels": lambda T: _feature_dropout_channels(T, "Dropout2d", (6, 8, 3, 3)),
    "dropout3d_channels": lambda T: _feature_dropout_channels(T, "Dropout3d", (4, 8, 2, 2, 2)),
    "dropout1d_bad_ndim_errors": lambda T: T.nn.Dropout1d(0.5)(T.ones(2, 3, 4, 5)),
    "dropout2d_eval": lambda T: T.nn.Dropout2d(0.5).eval()(T.arange(8.0).reshape(1, 2, 2, 2)),
    "alpha_dropout_stats": _alpha_dropout,
    "feature_alpha_dropout_stats": lambda T: _alpha_dropout(T, "FeatureAlphaDropout"),
    "alpha_dropout_eval": lambda T: T.nn.AlphaDropout(0.5).eval()(T.arange(4.0)),
    "alpha_dropout_p1": lambda T: T.nn.functional.alpha_dropout(T.arange(4.0), 1.0, training=True),
    "dropout_repr": lambda T: repr(T.nn.Dropout(0.25, inplace=True)),
    "dropout2d_repr": lambda T: repr(T.nn.Dropout2d(0.3)),
}


# More TestLRScheduler corners (tensor lr, resuming with initial_lr, step(epoch) closed forms,
# PolynomialLR power < 1, SWALR, repeated milestones, scheduler attributes and errors) and
# test_dropout argument/attribute checks: same_outcome programs as above.
def O(T, **kw):
    # TestLRScheduler.setUp's two groups, as _opt, the scheduler helpers below in one line each
    a, b = T.nn.Linear(1, 1), T.nn.Linear(1, 1)
    return T.optim.SGD([{"params": a.parameters()}, {"params": b.parameters(), "lr": 0.5}], lr=kw.pop("lr", 0.05), **kw)
S = lambda T: T.optim.lr_scheduler
def tr(o, s, n, m=None):
    out = []
    for i in range(n):
        out.append([float(g["lr"]) for g in o.param_groups]); o.step(); s.step() if m is None else s.step(m[i])
    return out
CASES.update({
 "tensor_lr_steplr": lambda T: (lambda o: tr(o, S(T).StepLR(o, 2, 0.5), 5))(T.optim.SGD([T.nn.Parameter(T.ones(1))], lr=T.tensor(0.1))),
 "get_last_lr_types": lambda T: (lambda o: [type(x).__name__ for x in S(T).ExponentialLR(o, 0.9).get_last_lr()])(O(T)),
 "resume_initial_lr": lambda T: (lambda o: ([g.__setitem__("initial_lr", 1.0) for g in o.param_groups], tr(o, S(T).StepLR(o, 2, 0.5, last_epoch=3), 4))[1])(O(T)),
 "poly_power_half": lambda T: (lambda o: tr(o, S(T).PolynomialLR(o, total_iters=5, power=0.5), 7))(O(T)),
 "plateau_tensor_metric": lambda T: (lambda o: tr(o, S(T).ReduceLROnPlateau(o, patience=0), 4, [T.tensor(1.0)] * 4))(O(T)),
 "sequential_with_plateau_err": lambda T: (lambda o: S(T).SequentialLR(o, [S(T).ConstantLR(o), S(T).ReduceLROnPlateau(o)], [2]))(O(T)),
 "cyclic_base_lr_len_err": lambda T: S(T).CyclicLR(O(T), base_lr=[0.1, 0.2, 0.3], max_lr=1.0),
 "chained_state_dict": lambda T: sorted(S(T).ChainedScheduler([S(T).StepLR(O(T), 2)]).state_dict()),
 "linearlr_values": lambda T: (lambda o: tr(o, S(T).LinearLR(o, start_factor=0.5, end_factor=0.9, total_iters=3), 6))(O(T)),
 "multistep_repeated_milestones": lambda T: (lambda o: tr(o, S(T).MultiStepLR(o, [2, 2, 4], 0.5), 6))(O(T)),
 "steplr_state_dict_keys": lambda T: sorted(S(T).StepLR(O(T), 2).state_dict()),
 "exp_lr_step_epoch": lambda T: (lambda o, s: [(s.step(e), [g["lr"] for g in o.param_groups])[1] for e in (3, 1, 5)])(*(lambda o: (o, S(T).ExponentialLR(o, 0.5)))(O(T))),
 "cosine_step_epoch": lambda T: (lambda o, s: [(s.step(e), [g["lr"] for g in o.param_groups])[1] for e in (3, 7, 2)])(*(lambda o: (o, S(T).CosineAnnealingLR(o, 5, 0.01)))(O(T))),
 "swalr_values": lambda T: (lambda o: tr(o, T.optim.swa_utils.SWALR(o, swa_lr=0.2, anneal_epochs=3, anneal_strategy="linear"), 6))(O(T)),
 "swalr_bad_strategy": lambda T: T.optim.swa_utils.SWALR(O(T), swa_lr=0.2, anneal_strategy="x"),
 "lambda_state_dict_callable_obj": lambda T: sorted(S(T).LambdaLR(O(T), lambda e: 0.9).state_dict()),
 "onecycle_total_steps_value": lambda T: S(T).OneCycleLR(O(T), 1.0, total_steps=7).total_steps,
 "onecycle_bad_total_steps": lambda T: S(T).OneCycleLR(O(T), 1.0, total_steps=0),
 "onecycle_max_lr_list": lambda T: (lambda o: tr(o, S(T).OneCycleLR(o, [1.0, 2.0], total_steps=5, cycle_momentum=False), 5))(O(T)),
 "cyclic_last_epoch_resume": lambda T: (lambda o: tr(o, S(T).CyclicLR(o, 0.1, 1.0, step_size_up=2, cycle_momentum=False), 5))(O(T)),
 "scheduler_not_optimizer_err": lambda T: S(T).StepLR("opt", 2),
 "plateau_repr_params": lambda T: (lambda s: (s.patience, s.factor, s.mode, s.threshold, s.cooldown, s.min_lrs, s.eps))(S(T).ReduceLROnPlateau(O(T))),
 "warm_restarts_T_cur": lambda T: (lambda o, s: [(s.step(), s.T_cur, s.T_i)[1:] for _ in range(6)])(*(lambda o: (o, S(T).CosineAnnealingWarmRestarts(o, 2, 2)))(O(T))),
 "constantlr_values": lambda T: (lambda o: tr(o, S(T).ConstantLR(o, factor=0.25, total_iters=2), 4))(O(T)),
 "dropout_F_alpha_bad_p": lambda T: T.nn.functional.alpha_dropout(T.ones(2), 1.5),
 "dropout_F_dropout2d_bad_p": lambda T: T.nn.functional.dropout2d(T.ones(1, 2, 2, 2), -0.5),
 "dropout_module_p_attr": lambda T: (T.nn.Dropout().p, T.nn.Dropout2d().inplace, T.nn.AlphaDropout(0.2).p),
 "dropout_returns_new_tensor": lambda T: (lambda x: T.nn.Dropout(0.0)(x) is x)(T.ones(2)),
 "dropout_p0_grad": lambda T: (lambda x: (T.nn.functional.dropout(x, 0.0).sum().backward(), x.grad)[1])(T.ones(3, requires_grad=True)),
 "dropout3d_4d_input": lambda T: T.nn.Dropout3d(0.0)(T.ones(2, 2, 2, 2)),
 "dropout2d_3d_input_warn": lambda T: T.nn.Dropout2d(0.0)(T.ones(2, 2, 2)).shape,
})

XFAIL = {}


@pytest.mark.parametrize("fn", outcome_params(CASES, XFAIL))
def test_lrscheduler_dropout_round12(fn):
    same_outcome(fn)
