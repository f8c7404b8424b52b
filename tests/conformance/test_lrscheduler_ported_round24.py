"""Round 24 of PyTorch's test/optim/test_lrscheduler.py (TestLRScheduler), ported: the cases and
variants not ported before -- test_old_pattern_warning_with_arg /
test_old_pattern_warning_resuming_with_arg, test_linearlr_start_factor_limits2, CyclicLR's three
modes cycling Adam's beta1 (the ``use_beta1`` branch of ``_test_cycle_lr``) and with
step_size_down, OneCycleLR's three-phase and cosine schedules on Adam betas, ReduceLROnPlateau's
cooldown / per-group min_lr / threshold modes / eps, PolynomialLR powers, ``get_last_lr`` of the
composite and cyclic schedulers, state_dict round trips in the middle of a run (the resumed
scheduler continues exactly as the original, ``_check_scheduler_state_dict``) and closed form
(``step(epoch)``) against the chainable form (``_test_against_closed_form``), edge arguments (tensor hyper-parameters and metrics, zero
lengths, unsorted milestones) and state_dicts through save/load(weights_only=True).

Each program runs under torch 2.13 (the oracle) and tracegrad (``parity.same_outcome``): the
logged lrs, momenta, betas, warnings' classes and messages, and error classes must agree.
TestLRScheduler.setUp's optimizer: two groups of one (1,) parameter each, lr 0.05 and 0.5."""
import warnings

import pytest

from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")


def _opt(T, cls="SGD", lr2=0.5, **kw):
    """setUp's two-group optimizer (tiny (1,) parameters, one shape for every case)."""
    a, b = T.nn.Parameter(T.ones(1)), T.nn.Parameter(T.ones(1))
    return getattr(T.optim, cls)([{"params": [a]}, {"params": [b], "lr": lr2}], lr=0.05, **kw)


def _g(opt, key):
    """Every group's ``key`` as floats (``betas`` -> beta1, the value CyclicLR/OneCycleLR cycle)."""
    return [float(g[key][0]) if key == "betas" else float(g[key]) for g in opt.param_groups]


def _trace(opt, sched, n, keys=("lr",), metrics=None):
    """Step ``n`` times (optimizer first, then the scheduler), logging the groups' ``keys`` and
    ``get_last_lr()`` before each step, and the warnings' (class, message) raised."""
    out = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(n):
            out.append([_g(opt, k) for k in keys] + [[float(x) for x in sched.get_last_lr()]])
            opt.step()
            sched.step() if metrics is None else sched.step(metrics[i])
    return out, [(x.category.__name__, str(x.message)) for x in w]


def _S(T):
    return T.optim.lr_scheduler


def _warns(fn):
    """The (class, message) of every warning ``fn()`` raises (all shown)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [(x.category.__name__, str(x.message)) for x in w]


# ---- call-order warnings -----------------------------------------------------------------------------
def _old_pattern(T, resume):
    # test_old_pattern_warning_with_arg / _resuming_with_arg: scheduler.step() before
    # optimizer.step() warns once ("how-to-adjust-learning-rate"), construction does not
    opt = _opt(T)
    if resume:
        for g in opt.param_groups:
            g["initial_lr"] = 0.01
    made = _warns(lambda: setattr(opt, "_s", _S(T).StepLR(opt, gamma=0.1, step_size=3, last_epoch=10 if resume else -1)))

    def loop():
        for _ in range(5):
            opt._s.step()
            opt.step()
    return made, [(c, "how-to-adjust-learning-rate" in m) for c, m in _warns(loop)], _g(opt, "lr")


def _overridden_step(T):
    # test_new_pattern_no_warning_with_overridden_optim_step: an optimizer.step replaced by a bound
    # method makes the scheduler warn that it was overridden (once), even in the right order
    import types
    opt = _opt(T)
    s = _S(T).StepLR(opt, gamma=0.1, step_size=3)
    old = opt.step
    opt.step = types.MethodType(lambda o, *a, **k: old(*a, **k), opt)

    def loop():
        for _ in range(3):
            opt.step()
            s.step()
    return [(c, "has been overridden" in m) for c, m in _warns(loop)]


# ---- CyclicLR / OneCycleLR on Adam's beta1 (``_test_cycle_lr(..., use_beta1=True)``) ------------------
def _cyclic_adam(T, mode, down=None, **kw):
    opt = _opt(T, "Adam")
    s = _S(T).CyclicLR(opt, base_lr=[1, 2], max_lr=[5, 6], step_size_up=2, step_size_down=down,
                       cycle_momentum=True, base_momentum=0.8, max_momentum=0.9, mode=mode, **kw)
    return _trace(opt, s, 13, keys=("lr", "betas"))


def _onecycle_adam(T, **kw):
    opt = _opt(T, "Adam")
    s = _S(T).OneCycleLR(opt, max_lr=25, base_momentum=0.85, max_momentum=0.95, total_steps=10, **kw)
    return _trace(opt, s, 10, keys=("lr", "betas"))


def _onecycle_epochs(T):
    # total_steps from epochs * steps_per_epoch; one step past the end raises ValueError
    opt = _opt(T)
    s = _S(T).OneCycleLR(opt, max_lr=[1.0, 2.0], epochs=2, steps_per_epoch=3, pct_start=0.5,
                         anneal_strategy="linear", div_factor=4, final_div_factor=2)
    tr = _trace(opt, s, 6, keys=("lr", "momentum"))
    return tr, s.total_steps, s.last_epoch


def _onecycle_past_end(T):
    # test_onecycle_lr_stepping_past_total_steps-like: total_steps steps are fine, one more raises
    opt = _opt(T)
    s = _S(T).OneCycleLR(opt, max_lr=1.0, total_steps=3)
    lrs = []
    for _ in range(3):
        opt.step()
        s.step()
        lrs.append(_g(opt, "lr"))
    try:
        s.step()
    except ValueError:
        lrs.append("ValueError")
    return lrs


def _cyclic_momentum_no_momentum_optimizer(T):
    # test_cycle_lr_cycle_momentum_fail_with_momentumless_optimizer (Adagrad: no momentum/betas)
    return _S(T).CyclicLR(T.optim.Adagrad([T.nn.Parameter(T.ones(1))]), base_lr=1, max_lr=5, cycle_momentum=True)


def _cyclic_custom_scale(T, mode):
    opt = _opt(T)
    s = _S(T).CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=2, scale_fn=lambda x: 1.0 / (x + 1),
                       scale_mode=mode, cycle_momentum=False)
    return _trace(opt, s, 9)


# ---- ReduceLROnPlateau --------------------------------------------------------------------------------
def _plateau(T, metrics, **kw):
    opt = _opt(T)
    s = _S(T).ReduceLROnPlateau(opt, **kw)
    tr = _trace(opt, s, len(metrics), metrics=metrics)
    return tr, float(s.best), s.num_bad_epochs, s.cooldown_counter, s.last_epoch


def _plateau_resume(T):
    # a state_dict taken mid-run and loaded into a differently built scheduler continues the run
    metrics = [1.0, 0.9, 0.95, 0.96, 0.97, 0.98, 0.99, 1.0, 0.5, 0.6, 0.7, 0.8]
    opt = _opt(T)
    s = _S(T).ReduceLROnPlateau(opt, patience=1, cooldown=2, factor=0.5, min_lr=[0.01, 0.2])
    for m in metrics[:5]:
        opt.step()
        s.step(m)
    s2 = _S(T).ReduceLROnPlateau(opt, mode="max", patience=7)
    s2.load_state_dict(s.state_dict())
    return _trace(opt, s2, 7, metrics=metrics[5:]), s2.mode, s2.patience, s2.cooldown


def _plateau_bad(T, **kw):
    return _S(T).ReduceLROnPlateau(_opt(T), **kw)


# ---- PolynomialLR / closed form vs chainable ----------------------------------------------------------
def _poly(T, **kw):
    opt = _opt(T)
    return _trace(opt, _S(T).PolynomialLR(opt, **kw), 8)


def _closed_vs_chainable(T, build, epochs=9):
    """_test_against_closed_form: ``step(epoch)`` (the closed form, one EPOCH_DEPRECATION_WARNING
    each) and plain ``step()`` give the same lrs."""
    o1, o2 = _opt(T), _opt(T)
    s1, s2 = build(_S(T), o1), build(_S(T), o2)
    closed, chain = [], []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for e in range(epochs):
            o1.step()
            s1.step(e)
            closed.append(_g(o1, "lr"))
    n_warn = sum(1 for x in w if str(x.message) == _S(T).EPOCH_DEPRECATION_WARNING)
    for _ in range(epochs):
        o2.step()
        s2.step()
        chain.append(_g(o2, "lr"))
    return closed, chain, n_warn


# ---- composite schedulers: get_last_lr, state_dict round trips ---------------------------------------
def _sequential(S, o):
    return S.SequentialLR(o, [S.ChainedScheduler([S.LinearLR(o, start_factor=0.25, total_iters=3),
                                                  S.ExponentialLR(o, gamma=0.9)]),
                              S.StepLR(o, step_size=2, gamma=0.5)], milestones=[3])


def _sequential_chained_second(T):
    # a ChainedScheduler after a milestone: SequentialLR steps it with an epoch (step(0)), which
    # the chained scheduler's closed form cannot take (torch raises NotImplementedError there)
    o = _opt(T)
    S = _S(T)
    s = S.SequentialLR(o, [S.LinearLR(o, start_factor=0.25, total_iters=3),
                           S.ChainedScheduler([S.ExponentialLR(o, gamma=0.9), S.StepLR(o, step_size=2, gamma=0.5)])],
                       milestones=[3])
    return _trace(o, s, 5)


def _chained(S, o):
    return S.ChainedScheduler([S.PolynomialLR(o, total_iters=6, power=2.0), S.ConstantLR(o, factor=0.5, total_iters=3)])


def _resume(T, build, first=4, then=5):
    """_check_scheduler_state_dict mid-run: run ``first`` steps, save the state_dict, load it into a
    fresh scheduler on a fresh optimizer (with the optimizer's state_dict), run ``then`` more on
    both and log both traces. A plain scheduler resumes exactly; a composite one does not in torch
    (building its inner schedulers on the fresh optimizer rescales the lrs before the load), and
    tracegrad must log the same."""
    opt = _opt(T)
    s = build(_S(T), opt)
    for _ in range(first):
        opt.step()
        s.step()
    opt2 = _opt(T)
    opt2.load_state_dict(opt.state_dict())
    s2 = build(_S(T), opt2)
    s2.load_state_dict(s.state_dict())
    a, b = _trace(opt, s, then), _trace(opt2, s2, then)
    return a, b, getattr(s2, "last_epoch", None)


def _sd_keys(T, build):
    s = build(_S(T), _opt(T))
    sd = s.state_dict()
    return sorted(k for k in sd if k != "_schedulers"), [sorted(x) for x in sd.get("_schedulers", [])]


def _cyclic_resume(T):
    def build(S, o):
        return S.CyclicLR(o, base_lr=0.1, max_lr=1.0, step_size_up=2, step_size_down=3, mode="triangular2")
    return _resume(T, build, first=5, then=7)


def _swalr_cos(T):
    # test_swalr_cosine_anneal_after_multiplicative-like: SWALR on Adam, cosine then constant
    opt = _opt(T, "Adam")
    s = T.optim.swa_utils.SWALR(opt, swa_lr=[0.01, 0.02], anneal_epochs=3, anneal_strategy="cos")
    return _trace(opt, s, 6)


def _lrs(T, build, n=4, metrics=None):
    """The groups' lrs after each of ``n`` steps of ``build(S, opt)`` (metrics for a plateau)."""
    opt = _opt(T)
    s = build(_S(T), opt)
    out = []
    for i in range(n):
        opt.step()
        s.step() if metrics is None else s.step(metrics[i])
        out.append(_g(opt, "lr"))
    return out


def _saved_state_dict(T, build):
    """test_lr_scheduler_state_dict_load after 3 steps: the state_dict survives save/load with
    weights_only=True and loads into a fresh scheduler, whose state_dict is then the same."""
    import io
    opt = _opt(T)
    s = build(_S(T), opt)
    for _ in range(3):
        opt.step()
        s.step()
    buf = io.BytesIO()
    T.save(s.state_dict(), buf)
    buf.seek(0)
    sd = T.load(buf, weights_only=True)
    s2 = build(_S(T), _opt(T))
    s2.load_state_dict(sd)
    return sd, s2.state_dict() == sd


CASES = {
    "old_pattern_warning_with_arg": lambda T: _old_pattern(T, False),
    "old_pattern_warning_resuming_with_arg": lambda T: _old_pattern(T, True),
    "new_pattern_overridden_optim_step_warns": _overridden_step,
    # test_linearlr_start_factor_limits2 (and 1): start_factor must lie in (0, 1]
    "linearlr_start_factor_limits2": lambda T: _S(T).LinearLR(_opt(T), start_factor=1.1, total_iters=4),
    "linearlr_start_factor_limits1": lambda T: _S(T).LinearLR(_opt(T), start_factor=0.0, total_iters=4),
    "linearlr_end_factor_limit": lambda T: _S(T).LinearLR(_opt(T), end_factor=1.5, total_iters=4),
    "cycle_lr_triangular_adam_beta1": lambda T: _cyclic_adam(T, "triangular"),
    "cycle_lr_triangular2_adam_beta1_step_size_down": lambda T: _cyclic_adam(T, "triangular2", down=3),
    "cycle_lr_exp_range_adam_beta1": lambda T: _cyclic_adam(T, "exp_range", gamma=0.9),
    "cycle_lr_custom_scale_fn_cycle_mode": lambda T: _cyclic_custom_scale(T, "cycle"),
    "cycle_lr_custom_scale_fn_iterations_mode": lambda T: _cyclic_custom_scale(T, "iterations"),
    "cycle_lr_momentumless_optimizer_raises": _cyclic_momentum_no_momentum_optimizer,
    "cycle_lr_state_dict_resume_triangular2": _cyclic_resume,
    "onecycle_cos_adam_beta1": lambda T: _onecycle_adam(T),
    "onecycle_three_phase_linear_adam_beta1": lambda T: _onecycle_adam(T, three_phase=True, anneal_strategy="linear",
                                                                         pct_start=0.4, final_div_factor=4),
    "onecycle_epochs_steps_per_epoch": _onecycle_epochs,
    "onecycle_stepping_past_total_steps_raises": _onecycle_past_end,
    "onecycle_zero_total_steps_raises": lambda T: _S(T).OneCycleLR(_opt(T), max_lr=1.0, total_steps=0),
    "onecycle_max_lr_list_wrong_length_raises": lambda T: _S(T).OneCycleLR(_opt(T), max_lr=[1.0, 2.0, 3.0], total_steps=4),
    "plateau_min_rel_cooldown_min_lr_list": lambda T: _plateau(
        T, [1.0, 0.95, 0.99, 0.98, 0.97, 0.96, 0.96, 0.96, 0.96, 0.96, 0.96, 0.96], mode="min", factor=0.5, patience=1,
        cooldown=2, threshold=0.05, threshold_mode="rel", min_lr=[0.02, 0.3]),
    "plateau_max_abs_eps": lambda T: _plateau(
        T, [1.0, 1.05, 1.0, 1.0, 1.0, 1.0, 1.2, 1.2, 1.2], mode="max", factor=0.999, patience=0, threshold=0.1,
        threshold_mode="abs", eps=1e-3),
    "plateau_state_dict_resume": _plateau_resume,
    "plateau_bad_mode_raises": lambda T: _plateau_bad(T, mode="median"),
    "plateau_bad_threshold_mode_raises": lambda T: _plateau_bad(T, threshold_mode="ratio"),
    "plateau_factor_one_raises": lambda T: _plateau_bad(T, factor=1.0),
    "plateau_min_lr_wrong_length_raises": lambda T: _plateau_bad(T, min_lr=[0.1, 0.2, 0.3]),
    "polynomial_lr_power2": lambda T: _poly(T, total_iters=4, power=2.0),
    "polynomial_lr_power_half_defaults": lambda T: _poly(T, power=0.5),
    "closed_form_poly_power2": lambda T: _closed_vs_chainable(T, lambda S, o: S.PolynomialLR(o, total_iters=6, power=2.0)),
    "closed_form_linearlr_end_factor": lambda T: _closed_vs_chainable(
        T, lambda S, o: S.LinearLR(o, start_factor=0.2, end_factor=0.8, total_iters=5)),
    "closed_form_cosine_t_max3": lambda T: _closed_vs_chainable(T, lambda S, o: S.CosineAnnealingLR(o, T_max=3, eta_min=0.01)),
    "sequential_get_last_lr_with_chained": lambda T: (lambda o: _trace(o, _sequential(_S(T), o), 8))(_opt(T)),
    "sequential_chained_after_milestone_raises": _sequential_chained_second,
    "sequential_state_dict_resume": lambda T: _resume(T, _sequential),
    "sequential_state_dict_keys": lambda T: _sd_keys(T, _sequential),
    "chained_poly_constant_get_last_lr": lambda T: (lambda o: _trace(o, _chained(_S(T), o), 8))(_opt(T)),
    "chained_state_dict_resume": lambda T: _resume(T, _chained, first=3, then=5),
    "chained_with_plateau_step_raises": lambda T: (lambda o: _S(T).ChainedScheduler(
        [_S(T).ReduceLROnPlateau(o), _S(T).StepLR(o, 2)]).step())(_opt(T)),
    "sequential_milestones_length_raises": lambda T: (lambda o: _S(T).SequentialLR(
        o, [_S(T).ConstantLR(o), _S(T).ConstantLR(o)], milestones=[2, 4]))(_opt(T)),
    "swalr_cos_adam_two_swa_lrs": _swalr_cos,
    # edge arguments: tensor hyper-parameters and metrics, zero lengths, unsorted milestones
    "plateau_tensor_metrics": lambda T: _lrs(T, lambda S, o: S.ReduceLROnPlateau(o, patience=0),
                                             metrics=[T.tensor(1.0), T.tensor(2.0), T.tensor(3.0), T.tensor(0.5)]),
    "plateau_nan_metric": lambda T: _lrs(T, lambda S, o: S.ReduceLROnPlateau(o, patience=0), metrics=[1.0, float("nan"), 2.0, 0.5]),
    "cyclic_tensor_base_and_max_lr": lambda T: _lrs(T, lambda S, o: S.CyclicLR(o, base_lr=T.tensor(0.1), max_lr=T.tensor(1.0),
                                                                             step_size_up=2)),
    "onecycle_tensor_max_lr": lambda T: _lrs(T, lambda S, o: S.OneCycleLR(o, max_lr=T.tensor(1.0), total_steps=5)),
    "exponential_tensor_gamma": lambda T: _lrs(T, lambda S, o: S.ExponentialLR(o, gamma=T.tensor(0.5))),
    "multistep_unsorted_milestones": lambda T: _lrs(T, lambda S, o: S.MultiStepLR(o, milestones=[3, 1, 3])),
    "linearlr_zero_total_iters": lambda T: _lrs(T, lambda S, o: S.LinearLR(o, start_factor=0.5, total_iters=0)),
    "polynomial_zero_total_iters": lambda T: _lrs(T, lambda S, o: S.PolynomialLR(o, total_iters=0)),
    "cosine_zero_t_max": lambda T: _lrs(T, lambda S, o: S.CosineAnnealingLR(o, T_max=0)),
    "constantlr_factor_above_one_raises": lambda T: _S(T).ConstantLR(_opt(T), factor=1.5),
    "cawr_float_t0_raises": lambda T: _S(T).CosineAnnealingWarmRestarts(_opt(T), T_0=2.5),
    "cawr_float_t_mult_raises": lambda T: _S(T).CosineAnnealingWarmRestarts(_opt(T), T_0=2, T_mult=1.5),
    "lambda_lr_load_other_lambda_count": lambda T: _S(T).LambdaLR(_opt(T), [lambda e: 1.0, lambda e: 0.5]).load_state_dict(
        _S(T).LambdaLR(_opt(T), lambda e: 1.0).state_dict()),
    "state_dict_saved_cyclic": lambda T: _saved_state_dict(T, lambda S, o: S.CyclicLR(o, 0.1, 1.0, step_size_up=2)),
    "state_dict_saved_onecycle": lambda T: _saved_state_dict(T, lambda S, o: S.OneCycleLR(o, 1.0, total_steps=10)),
    "state_dict_saved_warm_restarts": lambda T: _saved_state_dict(T, lambda S, o: S.CosineAnnealingWarmRestarts(o, 2, 2)),
}


@pytest.mark.parametrize("fn", outcome_params(CASES))
def test_lrscheduler_round24(fn):
    same_outcome(fn)
