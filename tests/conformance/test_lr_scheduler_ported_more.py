"""Ported from PyTorch's test/optim/test_lrscheduler.py (TestLRScheduler; each test names its
original), part 2: LambdaLR / MultiplicativeLR, CosineAnnealingWarmRestarts, SWALR, state_dict
round trips (save/load, resuming with last_epoch, Tensor lrs not aliased), constructor errors,
and schedulers stepping between ``tracegrad.compile``d training steps (no retrace, eager's and
torch's params). Bodies run under torch and tracegrad (the ``T`` fixture). Part 1:
test_lr_scheduler_ported.py."""
import copy
import gc
import importlib
import io
import math
import warnings

import pytest

from _lr_helpers import _assert_lrs, _cos, _f, _opt, _run, _S, _two

pytestmark = pytest.mark.filterwarnings("ignore")


# ---- LambdaLR / MultiplicativeLR -----------------------------------------------------------
class _LambdaObj:
    """TestLRScheduler.LambdaLRTestObject: a callable object lr_lambda, equal by ``__dict__``."""

    def __init__(self, value):
        self.value = value

    def __call__(self, epoch):
        return self.value * epoch

    def __eq__(self, other):
        return isinstance(other, self.__class__) and self.__dict__ == other.__dict__


def test_multiplicative_lr_with_lr_lambda(T):
    # TestLRScheduler.test_multiplicative_lr_with_lr_lambda: a number is not a function
    opt = _opt(T)
    with pytest.raises(TypeError, match="lr_lambda should be a function"):
        _S(T).MultiplicativeLR(opt, 0.95)
    with pytest.raises(TypeError, match="lr_lambda should be a function"):
        _S(T).MultiplicativeLR(opt, [0.95, 0.95])


def test_lambda_lr_wrong_number_of_lambdas(T):
    # LambdaLR / MultiplicativeLR with a list of the wrong length
    opt = _opt(T)
    for cls in (_S(T).LambdaLR, _S(T).MultiplicativeLR):
        with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
            cls(opt, [lambda e: 1.0])


def test_lambda_lr_state_dict_fn(T):
    # TestLRScheduler.test_lambda_lr_state_dict_fn: a plain function is stored as None
    opt = _opt(T)
    s = _S(T).LambdaLR(opt, lr_lambda=lambda x: x)
    state = s.state_dict()
    assert state["lr_lambdas"] == [None, None]
    c = _S(T).LambdaLR(opt, lr_lambda=lambda x: x)
    c.load_state_dict(state)
    for key in s.__dict__:
        if key not in {"optimizer", "lr_lambdas"}:
            assert s.__dict__[key] == c.__dict__[key], key


@pytest.mark.parametrize("cls", ["LambdaLR", "MultiplicativeLR"])
def test_lambda_lr_state_dict_obj(T, cls):
    # TestLRScheduler.test_lambda_lr_state_dict_obj: a callable object's __dict__ is stored and
    # loaded back into the new scheduler's object
    opt = _opt(T)
    s = getattr(_S(T), cls)(opt, lr_lambda=_LambdaObj(10))
    state = s.state_dict()
    assert state["lr_lambdas"] == [{"value": 10}, {"value": 10}]
    c = getattr(_S(T), cls)(opt, lr_lambda=_LambdaObj(-1))
    c.load_state_dict(state)
    for key in s.__dict__:
        if key != "optimizer":
            assert s.__dict__[key] == c.__dict__[key], key
    assert c.lr_lambdas[0].value == 10


# ---- CosineAnnealingWarmRestarts -----------------------------------------------------------
@pytest.mark.parametrize("T_mult", [1, 2, 4])
def test_CosineAnnealingWarmRestarts_lr1(T, T_mult):
    # TestLRScheduler.test_CosineAnnealingWarmRestarts_lr1 (30 of the original's 100 steps)
    opt = _opt(T)
    s = _S(T).CosineAnnealingWarmRestarts(opt, T_0=10, T_mult=T_mult, eta_min=1e-10)
    t_i, t_cur, targets = 10, 0, [[0.05], [0.5]]
    for _ in range(1, 30):
        t_cur += 1
        if t_cur >= t_i:
            t_cur, t_i = t_cur - t_i, t_i * T_mult
        targets[0].append(_cos(0.05, 1e-10, t_cur, t_i))
        targets[1].append(_cos(0.5, 1e-10, t_cur, t_i))
    _run(opt, s, targets, 30)


@pytest.mark.parametrize("T_mult", [1, 2, 4])
def test_CosineAnnealingWarmRestarts_lr2(T, T_mult):
    # TestLRScheduler.test_CosineAnnealingWarmRestarts_lr2: step(epoch) at 0.0, 0.1, ... 29.9
    opt = _opt(T)
    s = _S(T).CosineAnnealingWarmRestarts(opt, T_0=10, T_mult=T_mult, eta_min=1e-10)
    t_i, t_cur = 10, 0.0
    for k in range(300):
        epoch = round(k * 0.1, 1)
        if k:
            t_cur = round(t_cur + 0.1, 1)
            if t_cur >= t_i:
                t_cur, t_i = t_cur - t_i, t_i * T_mult
        s.step(epoch)
        _assert_lrs(opt, [[_cos(0.05, 1e-10, t_cur, t_i)], [_cos(0.5, 1e-10, t_cur, t_i)]], 0)


@pytest.mark.parametrize("T_mult,epochs,T_curs,T_is", [
    (1, [0, 1, 2, 3, 4, 5, 12, 27, 3, 4, 5, 6, 13], [1, 2, 3, 4, 5, 2, 7, 3, 4, 5, 6, 3],
     [10] * 12),
    (2, [0, 1, 2, 3, 4, 5, 25, 32, 33, 34, 80, 81, 3], [1, 2, 3, 4, 5, 15, 2, 3, 4, 10, 11, 3],
     [10, 10, 10, 10, 10, 20, 40, 40, 40, 80, 80, 10]),
    (3, [0, 0.1, 0.2, 0.3, 1.3, 2.3, 17.5, 18.5, 19.5, 29.5, 30.5, 31.5, 50],
     [0.1, 0.2, 0.3, 1.3, 2.3, 7.5, 8.5, 9.5, 19.5, 20.5, 21.5, 10],
     [10, 10, 10, 10, 10, 30, 30, 30, 30, 30, 30, 90]),
])
def test_CosineAnnealingWarmRestarts_lr3(T, T_mult, epochs, T_curs, T_is):
    # TestLRScheduler.test_CosineAnnealingWarmRestarts_lr3: epochs jump back and forth
    opt = _opt(T)
    s = _S(T).CosineAnnealingWarmRestarts(opt, T_0=10, T_mult=T_mult, eta_min=1e-10)
    targets = [[0.05] + [_cos(0.05, 1e-10, c, i) for c, i in zip(T_curs, T_is)],
               [0.5] + [_cos(0.5, 1e-10, c, i) for c, i in zip(T_curs, T_is)]]
    for k, e in enumerate(epochs):
        s.step(e)
        _assert_lrs(opt, targets, k)


def test_CosineAnnealingWarmRestarts_T_cur_reset(T):
    # TestLRScheduler.test_CosineAnnealingWarmRestarts_T_cur_reset
    s = _S(T).CosineAnnealingWarmRestarts(_opt(T), T_0=4)
    for epoch in [7, 8, 9]:
        s.T_cur = epoch
        s.step()
        assert s.T_cur == (epoch + 1) % s.T_0


@pytest.mark.parametrize("kw,match", [(dict(T_0=0), "T_0"), (dict(T_0=2.5), "T_0"), (dict(T_0=3, T_mult=0), "T_mult"),
                                      (dict(T_0=3, T_mult=1.5), "T_mult"), (dict(T_0=3, eta_min="0"), "eta_min")])
def test_CosineAnnealingWarmRestarts_bad_arguments(T, kw, match):
    # CosineAnnealingWarmRestarts' argument checks (ValueError)
    with pytest.raises(ValueError, match=match):
        _S(T).CosineAnnealingWarmRestarts(_opt(T), **kw)


def test_CosineAnnealingWarmRestarts_negative_epoch(T):
    # CosineAnnealingWarmRestarts.step(epoch) with a negative epoch
    s = _S(T).CosineAnnealingWarmRestarts(_opt(T), T_0=3)
    with pytest.raises(ValueError, match="non-negative"):
        s.step(-1)


# ---- SWALR ---------------------------------------------------------------------------------
def _swalr(mod):
    """``swa_utils.SWALR`` of the library ``mod`` (``T``, or its lr_scheduler module) belongs to."""
    return importlib.import_module(mod.__name__.split(".")[0] + ".optim.swa_utils").SWALR


def _run_swalr(opt, swa, sched, targets, swa_start, epochs):
    """TestLRScheduler._test_swalr: the plain scheduler until ``swa_start``, then SWALR."""
    for i in range(epochs):
        _assert_lrs(opt, targets, i)
        opt.step()
        if i >= swa_start:
            swa.step()
        elif sched is not None:
            sched.step()


@pytest.mark.parametrize("strategy", ["none", "cos", "linear"])
def test_swalr(T, strategy):
    # test_swalr_no_anneal, test_swalr_cosine_anneal_after_multiplicative,
    # test_swalr_linear_anneal_after_multiplicative
    SWALR = _swalr(T)
    opt = _opt(T)
    lrs0 = [0.05, 0.5]
    if strategy == "none":
        swa = SWALR(opt, anneal_epochs=1, swa_lr=0.01)
        targets = [[lr] * 6 + [0.01] * 4 for lr in lrs0]
        _run_swalr(opt, swa, None, targets, 5, 10)
        return
    anneal, swa_lrs = (5, [0.01, 0.01]) if strategy == "cos" else (4, [0.01, 0.02])
    sched = _S(T).MultiplicativeLR(opt, lr_lambda=lambda e: 0.9)
    swa = SWALR(opt, anneal_epochs=anneal, anneal_strategy=strategy,
                swa_lr=swa_lrs[0] if strategy == "cos" else swa_lrs)

    def coef(t):
        if t + 1 >= anneal:
            return 0.0
        return (1 + math.cos(math.pi * (t + 1) / anneal)) / 2 if strategy == "cos" else 1 - (t + 1) / anneal
    targets = []
    for lr, swa_lr in zip(lrs0, swa_lrs):
        before = [lr * 0.9 ** i for i in range(6)]
        targets.append(before + [before[-1] * coef(t) + swa_lr * (1 - coef(t)) for t in range(9)])
    _run_swalr(opt, swa, sched, targets, 5, 15)


@pytest.mark.parametrize("kw,match", [(dict(anneal_strategy="exponential", swa_lr=1.0), "anneal_strategy must"),
                                      (dict(anneal_epochs=-1, swa_lr=1.0), "anneal_epochs must"),
                                      (dict(anneal_epochs=1.7, swa_lr=1.0), "anneal_epochs must"),
                                      (dict(swa_lr=[1.0, 0.1, 0.01]), "swa_lr must")])
def test_swalr_hypers(T, kw, match):
    # TestLRScheduler.test_swalr_hypers
    with pytest.raises(ValueError, match=match):
        _swalr(T)(_opt(T), **kw)


# ---- state_dict / load_state_dict ----------------------------------------------------------
STATE_DICT = {
    "test_step_lr_state_dict": (lambda S, o: S.StepLR(o, gamma=0.1, step_size=3),
                                lambda S, o: S.StepLR(o, gamma=0.005, step_size=1)),
    "test_multi_step_lr_state_dict": (lambda S, o: S.MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9]),
                                      lambda S, o: S.MultiStepLR(o, gamma=0.01, milestones=[1, 4, 6])),
    "test_exp_step_lr_state_dict": (lambda S, o: S.ExponentialLR(o, gamma=0.1),
                                    lambda S, o: S.ExponentialLR(o, gamma=0.01)),
    "test_cosine_lr_state_dict": (lambda S, o: S.CosineAnnealingLR(o, T_max=10, eta_min=1e-10),
                                  lambda S, o: S.CosineAnnealingLR(o, T_max=5, eta_min=5e-11)),
    "test_CosineAnnealingWarmRestarts_lr_state_dict": (lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=10, T_mult=2),
                                                       lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=100)),
    "polynomial": (lambda S, o: S.PolynomialLR(o, total_iters=7, power=2.0), lambda S, o: S.PolynomialLR(o)),
    "onecycle": (lambda S, o: S.OneCycleLR(o, max_lr=0.3, total_steps=20, three_phase=True),
                 lambda S, o: S.OneCycleLR(o, max_lr=1.0, total_steps=30, anneal_strategy="linear")),
    "cyclic": (lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="exp_range", gamma=0.9),
               lambda S, o: S.CyclicLR(o, 0.02, 0.2)),
    "test_swa_lr_state_dict": (lambda S, o: _swalr(S)(o, anneal_epochs=3, swa_lr=0.5),
                               lambda S, o: _swalr(S)(o, anneal_epochs=10, anneal_strategy="linear", swa_lr=5.0)),
}


@pytest.mark.parametrize("name", list(STATE_DICT))
def test_scheduler_state_dict(T, name):
    # TestLRScheduler._check_scheduler_state_dict (the originals named by ``name``; the last
    # three unnamed ones extend it to PolynomialLR, OneCycleLR and CyclicLR): after 10 steps, a differently
    # built scheduler loaded from the state dict has every attribute equal and continues the same
    build, build2 = STATE_DICT[name]
    S = _S(T)
    opt = _opt(T)
    s = build(S, opt)
    for _ in range(10):
        opt.step()
        s.step()
    c = build2(S, opt)
    c.load_state_dict(s.state_dict())
    for key in s.__dict__:
        if key not in {"optimizer", "_scale_fn_ref"}:
            assert s.__dict__[key] == c.__dict__[key], key
    assert c.get_last_lr() == s.get_last_lr()
    # the loaded copy continues as the original would (each from the same optimizer lrs)
    lrs, start = [], list(s.get_last_lr())
    for sched in (s, c):
        for g, lr in zip(opt.param_groups, start):
            g["lr"] = lr
        for _ in range(3):
            opt.step()
            sched.step()
        lrs.append(list(sched.get_last_lr()))
    assert lrs[0] == pytest.approx(lrs[1])


def _state_dict_cases():
    return {
        "LambdaLR": lambda S, o, kw: S.LambdaLR(o, lr_lambda=lambda e: e // 10, **kw),
        "MultiplicativeLR": lambda S, o, kw: S.MultiplicativeLR(o, lr_lambda=lambda e: 0.95, **kw),
        "StepLR": lambda S, o, kw: S.StepLR(o, step_size=30, **kw),
        "MultiStepLR": lambda S, o, kw: S.MultiStepLR(o, milestones=[30, 80], **kw),
        "ConstantLR": lambda S, o, kw: S.ConstantLR(o, **kw),
        "LinearLR": lambda S, o, kw: S.LinearLR(o, **kw),
        "ExponentialLR": lambda S, o, kw: S.ExponentialLR(o, gamma=0.9, **kw),
        "PolynomialLR": lambda S, o, kw: S.PolynomialLR(o, **kw),
        "CosineAnnealingLR": lambda S, o, kw: S.CosineAnnealingLR(o, T_max=10, **kw),
        "ChainedScheduler": lambda S, o, kw: S.ChainedScheduler([S.ConstantLR(o), S.ConstantLR(o)], **kw),
        "SequentialLR": lambda S, o, kw: S.SequentialLR(o, [S.ConstantLR(o), S.ConstantLR(o)], milestones=[2], **kw),
        "ReduceLROnPlateau": lambda S, o, kw: S.ReduceLROnPlateau(o, **kw),
        "CyclicLR": lambda S, o, kw: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, **kw),
        "OneCycleLR": lambda S, o, kw: S.OneCycleLR(o, max_lr=0.01, total_steps=10, anneal_strategy="linear", **kw),
        "CosineAnnealingWarmRestarts": lambda S, o, kw: S.CosineAnnealingWarmRestarts(o, T_0=20, **kw),
        "SWALR": lambda S, o, kw: _swalr(S)(o, swa_lr=0.01, **kw),
    }


@pytest.mark.parametrize("weights_only", [True, False])
@pytest.mark.parametrize("name", list(_state_dict_cases()))
def test_lr_scheduler_state_dict_load(T, name, weights_only):
    # TestLRScheduler.test_lr_scheduler_state_dict_load: the state dict survives save/load
    # (weights_only too) and loads into a fresh scheduler
    build = _state_dict_cases()[name]
    opt = _opt(T)
    state = build(_S(T), opt, {}).state_dict()
    buf = io.BytesIO()
    T.save(state, buf)
    buf.seek(0)
    loaded = T.load(buf, weights_only=weights_only)
    assert loaded == state
    s2 = build(_S(T), opt, {})
    s2.load_state_dict(loaded)
    assert s2.state_dict() == state


@pytest.mark.parametrize("name", [n for n in _state_dict_cases()
                                  if n not in ("ChainedScheduler", "SequentialLR", "ReduceLROnPlateau")])
def test_lr_scheduler_checkpoint(T, name):
    # TestLRScheduler.test_lr_scheduler_checkpoint: an AdamW state dict (with initial_lr) lets a
    # scheduler resume with last_epoch=0 at the lr the first one reached
    build = _state_dict_cases()[name]
    model = T.nn.Linear(3, 3)
    opt = T.optim.AdamW(model.parameters())
    s = build(_S(T), opt, {})
    opt.step()
    s.step()
    opt2 = T.optim.AdamW(model.parameters())
    opt2.load_state_dict(opt.state_dict())
    s2 = build(_S(T), opt2, {"last_epoch": 0})
    assert _f(s2.get_last_lr()[0]) == _f(opt.param_groups[0]["lr"])


def test_lr_scheduler_checkpoint_on_plateau(T):
    # TestLRScheduler.test_lr_scheduler_checkpoint_on_plateau
    model = T.nn.Linear(3, 3)
    opt = T.optim.AdamW(model.parameters())
    s = _S(T).ReduceLROnPlateau(opt, mode="min")
    opt.step()
    s.step(1)
    opt2 = T.optim.AdamW(model.parameters())
    opt2.load_state_dict(opt.state_dict())
    assert _S(T).ReduceLROnPlateau(opt2, mode="min").get_last_lr()[0] == opt.param_groups[0]["lr"]


@pytest.mark.parametrize("name", ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
                                  "LinearLR", "ExponentialLR", "PolynomialLR", "CosineAnnealingLR",
                                  "CosineAnnealingWarmRestarts"])
def test_constant_initial_lr(T, name):
    # TestLRScheduler.test_constant_initial_lr: with a Tensor lr, initial_lr and base_lrs are
    # copies, not the lr tensor itself, so changing it in place leaves them alone
    build = _state_dict_cases()[name]
    lr = T.as_tensor(0.1)
    opt = T.optim.SGD([T.nn.Parameter(T.randn(1))], lr=lr)
    s = build(_S(T), opt, {})
    orig = copy.deepcopy(opt.param_groups)
    for i in range(2):
        opt.step()
        s.step(i)
        lr.mul_(0.1)
        for g, g0 in zip(opt.param_groups, orig):
            assert _f(g["initial_lr"]) == _f(g0["initial_lr"])
            assert [_f(x) for x in s.base_lrs] == pytest.approx([0.1])
            assert s.base_lrs[0] is not g["initial_lr"]


def test_constant_initial_params_cyclelr(T):
    # TestLRScheduler.test_constant_initial_params_cyclelr: Tensor base/max lr and momenta are
    # copied, not aliased
    lr, max_lr, bm, mm = T.as_tensor(0.1), T.as_tensor(0.2), T.as_tensor(0.8), T.as_tensor(0.9)
    opt = T.optim.SGD([T.nn.Parameter(T.randn(1))], lr=lr)
    s = _S(T).CyclicLR(opt, base_lr=lr, max_lr=max_lr, base_momentum=bm, max_momentum=mm)
    for i in range(2):
        for t in (lr, max_lr, bm, mm):
            t.mul_(0.5)
        opt.step()
        s.step(i)
        g = opt.param_groups[0]
        assert [_f(x) for x in s.base_lrs] == pytest.approx([0.1])
        assert [_f(x) for x in s.max_lrs] == pytest.approx([0.2])
        assert _f(g["max_momentum"]) == pytest.approx(0.9) and _f(g["base_momentum"]) == pytest.approx(0.8)


def test_constant_initial_params_onecyclelr(T):
    # TestLRScheduler.test_constant_initial_params_onecyclelr
    lr, bm, mm = T.as_tensor(0.1), T.as_tensor(0.85), T.as_tensor(0.95)
    opt = T.optim.SGD([T.nn.Parameter(T.randn(1))], lr=lr)
    s = _S(T).OneCycleLR(opt, max_lr=lr, total_steps=10, base_momentum=bm, max_momentum=mm)
    orig = {k: _f(v) for k, v in opt.param_groups[0].items() if k in ("initial_lr", "max_lr", "min_lr")}
    for i in range(2):
        for t in (lr, bm, mm):
            t.mul_(0.5)
        opt.step()
        s.step(i)
        g = opt.param_groups[0]
        assert {k: _f(g[k]) for k in orig} == pytest.approx(orig)
        assert _f(g["max_momentum"]) == pytest.approx(0.95) and _f(g["base_momentum"]) == pytest.approx(0.85)


# ---- construction errors -------------------------------------------------------------------
@pytest.mark.parametrize("case", [
    "not_optimizer", "linear_start0", "linear_start_gt1", "linear_end", "constant_factor", "plateau_factor",
    "plateau_mode", "plateau_threshold_mode", "plateau_min_lr_len", "cyclic_base_lr_len",
])
def test_constructor_errors(T, case):
    # test_linearlr_start_factor_limits1/2 and the constructor checks the other tests rely on
    S, opt = _S(T), _opt(T)
    cls, build, match = {
        "not_optimizer": (TypeError, lambda: S.StepLR("not an optimizer", 3), "is not an Optimizer"),
        "linear_start0": (ValueError, lambda: S.LinearLR(opt, start_factor=0.0, total_iters=4), "Starting"),
        "linear_start_gt1": (ValueError, lambda: S.LinearLR(opt, start_factor=1.1, total_iters=4), "Starting"),
        "linear_end": (ValueError, lambda: S.LinearLR(opt, end_factor=1.5), "Ending"),
        "constant_factor": (ValueError, lambda: S.ConstantLR(opt, factor=1.5), "between 0 and 1"),
        "plateau_factor": (ValueError, lambda: S.ReduceLROnPlateau(opt, factor=1.0), "Factor should be < 1.0"),
        "plateau_mode": (ValueError, lambda: S.ReduceLROnPlateau(opt, mode="up"), "mode up is unknown"),
        "plateau_threshold_mode": (ValueError, lambda: S.ReduceLROnPlateau(opt, threshold_mode="x"),
                                   "threshold mode x is unknown"),
        "plateau_min_lr_len": (ValueError, lambda: S.ReduceLROnPlateau(opt, min_lr=[0.1]), "expected 2 min_lrs"),
        "cyclic_base_lr_len": (ValueError, lambda: S.CyclicLR(opt, base_lr=[0.1], max_lr=1.0),
                               "base_lr must have the same length"),
    }[case]
    with pytest.raises(cls, match=match):
        build()


def test_constant_initial_params_swalr(T):
    # TestLRScheduler.test_constant_initial_params_swalr: a Tensor swa_lr is copied into the group
    lr, swa_lr = T.as_tensor(0.1), T.as_tensor(0.05)
    opt = T.optim.SGD([T.nn.Parameter(T.randn(1))], lr=lr)
    s = _swalr(T)(opt, swa_lr=swa_lr)
    for _ in range(2):
        lr.mul_(0.5)
        swa_lr.mul_(0.5)
        opt.step()
        s.step()
        g = opt.param_groups[0]
        assert _f(g["swa_lr"]) == pytest.approx(0.05) and _f(g["initial_lr"]) == pytest.approx(0.1)
        assert [_f(x) for x in s.base_lrs] == pytest.approx([0.1])


def test_optimizer_has_no_reference_cycle_through_scheduler(T):
    # TestLRScheduler.test_no_cyclic_references: wrapping optimizer.step for the order warning
    # must not make the optimizer refer to itself; once the scheduler is gone, nothing else
    # refers to it and collecting finds no garbage.
    # Only the referrer search needs the whole heap (a long-lived registry that kept the optimizer
    # is frozen out of the collector: tests/conftest.py). The garbage is what this test made: with
    # automatic collection off it stays in the young generations (a collection of generation N
    # moves its survivors to N + 1), which gc.collect(1) scans whole. Four whole-heap collections,
    # as the whole_heap_gc fixture made them, took ~10 s late in the suite.
    gc.collect()                # this module's garbage (the heap is frozen): the young generations empty
    enabled = gc.isenabled()
    gc.disable()
    try:
        opt = T.optim.SGD([T.nn.Parameter(T.zeros(10))], lr=0.5)
        s = _S(T).LambdaLR(opt, lambda e: 1.0)
        del s
        gc.collect(0)           # the collection torch's scheduler needs (its cycles), as automatic gc ran it
        gc.unfreeze()           # the frozen objects join the oldest generation; opt's stay young
        try:
            assert gc.get_referrers(opt) == []
            gc.collect(0)
            del opt
            assert gc.collect(1) == 0
        finally:
            gc.freeze()
    finally:
        if enabled:
            gc.enable()


def test_no_cyclic_references(T):
    # TestLRScheduler.test_no_cyclic_references_in_step: a scheduler that stepped is freed by
    # reference counting alone
    import weakref

    def run():
        p = T.zeros(10, requires_grad=True)
        opt = T.optim.SGD([p], lr=0.5)
        s = _S(T).LambdaLR(opt, lambda e: 1.0)
        p.sum().backward()
        opt.step()
        s.step()
        return weakref.ref(s)
    gc.disable()
    try:
        assert run()() is None
    finally:
        gc.enable()


# ---- schedulers between compiled training steps --------------------------------------------
def _compiled_program(opt_name, opt_kw, sched):
    """A 3-4-2 MLP trained on MSE with ``opt_name``; ``sched(mod, opt)`` builds the scheduler
    kept in the state (stepped by the harness's ``between``)."""
    from tests.compile._harness import data, np_init

    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Tanh(), mod.nn.Linear(4, 2)), mod)
        opt = getattr(mod.optim, opt_name)(model.parameters(), **opt_kw)
        state = {"model": model, "opt": opt, "sched": sched(mod, opt)}

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return wrap(step), state, lambda i: (data(mod, i, 6, 3), data(mod, i, 6, 2, seed=300))
    return make


COMPILED = {
    # the metrics mostly fail to improve: the lr is cut five times during the run
    "ReduceLROnPlateau": ("SGD", dict(lr=0.1, momentum=0.9),
                          lambda mod, o: mod.optim.lr_scheduler.ReduceLROnPlateau(o, patience=0, factor=0.5)),
    "SequentialLR": ("Adam", dict(lr=0.05), lambda mod, o: mod.optim.lr_scheduler.SequentialLR(
        o, [mod.optim.lr_scheduler.LinearLR(o, start_factor=0.2, total_iters=3),
            mod.optim.lr_scheduler.ExponentialLR(o, gamma=0.8)], milestones=[3])),
    "CosineAnnealingWarmRestarts": ("AdamW", dict(lr=0.05),
                                    lambda mod, o: mod.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2)),
}
METRICS = [1.0, 0.9, 0.95, 0.97, 0.8, 0.85, 0.9, 0.9]


@pytest.mark.parametrize("name", list(COMPILED))
def test_scheduler_between_compiled_steps(name):
    # test/inductor/test_compiled_optimizers.py's scheduler checks, for schedulers the compile
    # suite does not cover: compiled params equal eager (and torch), and the changing lr never
    # causes a new trace after warm-up
    from tests.compile._harness import check_compiled
    opt_name, opt_kw, sched = COMPILED[name]
    make = _compiled_program(opt_name, opt_kw, sched)
    current, traces, lrs = [None], [], []

    def make_and_remember(mod, wrap):
        step, state, batch = make(mod, wrap)
        current[0] = step
        return step, state, batch

    def between(state, i):
        s = state["sched"]
        s.step(METRICS[i]) if name == "ReduceLROnPlateau" else s.step()
        lrs.append(state["opt"].param_groups[0]["lr"])
        traces.append(getattr(current[0], "stats", {"traces": None})["traces"])

    run = check_compiled(make_and_remember, calls=8, between=between, torch_too=True)
    compiled = traces[8:16]
    assert len(set(lrs[8:16])) >= 3, lrs                           # the lr really changed
    assert compiled[1:] == [compiled[1]] * 7, compiled             # no trace after warm-up
    assert run.step.stats["traces"] == compiled[-1] <= 2 and not run.step.stats["graph_breaks"]


# ---- more behaviour the original's helpers rely on -----------------------------------------
def test_reduce_lr_on_plateau_eps(T):
    # ReduceLROnPlateau(eps=...): a cut smaller than eps is skipped (group 0 at 0.05 would
    # move by 0.025 < 0.03; group 1 at 0.5 is halved until its cut, 0.015625, is below eps too)
    opt = _opt(T)
    s = _S(T).ReduceLROnPlateau(opt, patience=0, factor=0.5, eps=0.03)
    seen = []
    for m in [1, 2, 3, 4, 5, 6]:
        opt.step()
        s.step(m)
        seen.append([_f(g["lr"]) for g in opt.param_groups])
    assert seen == [[0.05, 0.5], [0.05, 0.25], [0.05, 0.125], [0.05, 0.0625], [0.05, 0.03125], [0.05, 0.03125]]


def test_reduce_lr_on_plateau_epoch_argument(T):
    # ReduceLROnPlateau.step(metrics, epoch): deprecated, warns, sets last_epoch
    s = _S(T).ReduceLROnPlateau(_opt(T))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s.step(1.0, 3)
    assert [x.message.args[0] for x in w] == [_S(T).EPOCH_DEPRECATION_WARNING]
    assert s.last_epoch == 3


def test_get_lr_outside_step_warns(T):
    # calling get_lr() directly (not from step) points to get_last_lr()
    s = _S(T).StepLR(_opt(T), 2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        lrs = s.get_lr()
    assert len(w) == 1 and "get_last_lr()" in str(w[0].message)
    assert lrs == [0.05, 0.5]


def test_multi_step_lr_repeated_milestone(T):
    # MultiStepLR counts a repeated milestone twice (gamma ** 2 there)
    opt = _opt(T)
    s = _S(T).MultiStepLR(opt, [2, 2, 4], gamma=0.5)
    _run(opt, s, _two([0.05, 0.05, 0.0125, 0.0125, 0.00625, 0.00625]), 6)


@pytest.mark.parametrize("scale_mode", ["cycle", "iterations"])
def test_cycle_lr_custom_scale_fn(T, scale_mode):
    # CyclicLR(scale_fn=..., scale_mode=...): the amplitude scales by cycle number or by
    # iteration count
    opt = _opt(T)
    s = _S(T).CyclicLR(opt, 0.1, 1.0, step_size_up=2, scale_fn=lambda x: 1 / (x + 1), scale_mode=scale_mode)
    if scale_mode == "cycle":
        amp = [0, 0.45 / 2, 0.45, 0.45 / 2, 0, 0.3 / 2, 0.3, 0.3 / 2, 0]
    else:
        amp = [0, 0.9 / 2 / 2, 0.9 / 3, 0.9 / 2 / 4, 0, 0.9 / 2 / 6, 0.9 / 7, 0.9 / 2 / 8, 0]
    _run(opt, s, [[0.1 + a for a in amp]], 9)


@pytest.mark.parametrize("kind", ["SequentialLR", "ChainedScheduler"])
def test_composite_state_dict_round_trip(T, kind):
    # SequentialLR / ChainedScheduler.state_dict keeps each inner scheduler's state; loading it
    # into a fresh composite continues the same schedule
    S = _S(T)

    def build(opt):
        inner = [S.LinearLR(opt, 0.1, total_iters=3), S.ExponentialLR(opt, 0.9)]
        return S.SequentialLR(opt, inner, milestones=[3]) if kind == "SequentialLR" else S.ChainedScheduler(inner)
    opt = _opt(T)
    s = build(opt)
    for _ in range(5):
        opt.step()
        s.step()
    state = s.state_dict()
    assert [sorted(x) for x in state["_schedulers"]][1][:3] == ["_get_lr_called_within_step", "_is_initial",
                                                               "_last_lr"]
    opt2 = _opt(T)
    s2 = build(opt2)
    s2.load_state_dict(state)
    for g, lr in zip(opt2.param_groups, s.get_last_lr()):
        g["lr"] = lr
    for _ in range(4):
        opt.step()
        s.step()
        opt2.step()
        s2.step()
        assert s2.get_last_lr() == s.get_last_lr()
        assert [g["lr"] for g in opt2.param_groups] == [g["lr"] for g in opt.param_groups]


def test_polynomial_lr_defaults_and_cosine_past_T_max(T):
    # PolynomialLR's defaults (total_iters=5, power=1) and CosineAnnealingLR's chainable form
    # past T_max (it climbs back up)
    opt = _opt(T)
    _run(opt, _S(T).PolynomialLR(opt), _two([0.05 * (1 - i / 5) for i in range(5)] + [0.0, 0.0]), 7)
    opt = _opt(T)
    _run(opt, _S(T).CosineAnnealingLR(opt, T_max=3), _two([_cos(0.05, 0, e, 3) for e in range(9)]), 9)


@pytest.mark.parametrize("case", ["lambda_not_callable", "sequential_not_scheduler", "onecycle_max_lr_len",
                                  "constant_negative", "exponential_not_optimizer"])
def test_more_constructor_errors(T, case):
    # the error class torch raises for each bad argument
    S, opt = _S(T), _opt(T)
    cls, build = {
        "lambda_not_callable": (TypeError, lambda: S.LambdaLR(opt, [1, 2]).step()),
        "sequential_not_scheduler": (TypeError, lambda: S.SequentialLR(opt, [1], milestones=[])),
        "onecycle_max_lr_len": (ValueError, lambda: S.OneCycleLR(opt, max_lr=[1, 2, 3], total_steps=3)),
        "constant_negative": (ValueError, lambda: S.ConstantLR(opt, factor=-0.1)),
        "exponential_not_optimizer": (TypeError, lambda: S.ExponentialLR("x", 0.5)),
    }[case]
    with pytest.raises(cls):
        build()


def test_chained_scheduler_optimizer_argument(T):
    # ChainedScheduler(schedulers, optimizer=...): must be the schedulers' optimizer
    S, opt, other = _S(T), _opt(T), _opt(T)
    assert S.ChainedScheduler([S.StepLR(opt, 2)], optimizer=opt).optimizer is opt
    with pytest.raises(ValueError, match="same optimizer"):
        S.ChainedScheduler([S.StepLR(opt, 2)], optimizer=other)


def test_removed_and_unsupported_arguments(T):
    # torch 2.13 schedulers no longer take ``verbose``; SequentialLR.step takes no epoch
    S, opt = _S(T), _opt(T)
    with pytest.raises(TypeError, match="verbose"):
        S.StepLR(opt, 2, verbose=True)
    s = S.SequentialLR(opt, [S.StepLR(opt, 2), S.StepLR(opt, 3)], milestones=[2])
    with pytest.raises(TypeError):
        s.step(3)


def test_onecycle_lr_with_momentumless_optimizer(T):
    # OneCycleLR on Rprop (no momentum, no betas): cycle_momentum=True is a ValueError, off it
    # schedules the lr alone from max_lr / div_factor
    S = _S(T)
    rprop = T.optim.Rprop(T.nn.Linear(1, 1).parameters())
    with pytest.raises(ValueError, match="momentum or beta1"):
        S.OneCycleLR(rprop, max_lr=1.0, total_steps=4)
    s = S.OneCycleLR(rprop, max_lr=1.0, total_steps=4, cycle_momentum=False)
    assert s.get_last_lr() == pytest.approx([0.04])
    assert "momentum" not in rprop.param_groups[0]


def test_reduce_lr_on_plateau_max_abs_bookkeeping(T):
    # ReduceLROnPlateau(mode="max", threshold_mode="abs"): best, num_bad_epochs and the lr after
    # each metric (an improvement must beat best by more than the threshold 0.5)
    opt = _opt(T)
    s = _S(T).ReduceLROnPlateau(opt, mode="max", threshold_mode="abs", threshold=0.5, patience=1)
    seen = []
    for m in [1, 1.4, 1.6, 1.7, 1.8, 3.0, 3.2, 3.3]:
        s.step(m)
        seen += [s.best, s.num_bad_epochs, _f(opt.param_groups[0]["lr"])]
    assert seen == pytest.approx([1.0, 0, 0.05, 1.0, 1, 0.05, 1.6, 0, 0.05, 1.6, 1, 0.05, 1.6, 0, 0.005,
                                  3.0, 0, 0.005, 3.0, 1, 0.005, 3.0, 0, 0.0005])
