"""Ported from PyTorch's test/optim/test_lrscheduler.py (TestLRScheduler; each test names its
original), part 1: lr sequences, closed vs chainable forms, call-order warnings,
ReduceLROnPlateau, SequentialLR / ChainedScheduler, CyclicLR and OneCycleLR. Bodies run under
torch and tracegrad (the ``T`` fixture): torch 2.13 checks every expected lr sequence, warning
and error class, tracegrad must meet them. Part 2: test_lr_scheduler_ported_more.py."""
import gc
import math
import pickle
import types
import warnings

import pytest

import tracegrad

from _lr_helpers import (ATOL, _assert_lrs, _cos, _f, _linear, _opt, _poly, _run, _run_last_lr, _run_with_epoch,
                         _S, _two)

# the original's _test steps schedulers without optimizer.step() in places; warnings are
# checked only inside explicit catch_warnings blocks
pytestmark = pytest.mark.filterwarnings("ignore")


# ---- explicit lr sequences (TestLRScheduler._test) -----------------------------------------
COS10 = [_cos(0.05, 1e-10, x, 10) for x in range(10)]

# name -> (build(S, opt), targets, epochs); names are the original tests
SEQUENCES = {
    "test_step_lr": (lambda S, o: S.StepLR(o, gamma=0.1, step_size=3),
                     _two([0.05] * 3 + [0.005] * 3 + [0.0005] * 3 + [0.00005] * 3), 10),
    "test_multi_step_lr": (lambda S, o: S.MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9]),
                           _two([0.05] * 2 + [0.005] * 3 + [0.0005] * 4 + [0.00005] * 3), 10),
    "test_constantlr": (lambda S, o: S.ConstantLR(o, factor=0.5, total_iters=5),
                        _two([0.025] * 5 + [0.05] * 5), 10),
    "test_linearlr": (lambda S, o: S.LinearLR(o, start_factor=0.5, total_iters=4),
                      _two(_linear(0.5, 1.0, 4, 10)), 10),
    "test_exp_lr": (lambda S, o: S.ExponentialLR(o, gamma=0.9), _two([0.05 * 0.9 ** x for x in range(10)]), 10),
    "test_poly_lr": (lambda S, o: S.PolynomialLR(o, power=0.9, total_iters=5), _two(_poly(0.05, 5, 0.9, 10)), 10),
    "test_cos_anneal_lr": (lambda S, o: S.CosineAnnealingLR(o, T_max=10, eta_min=1e-10), _two(COS10), 10),
    "test_sequentiallr1": (
        lambda S, o: S.SequentialLR(o, [S.ExponentialLR(o, gamma=0.8), S.StepLR(o, gamma=0.1, step_size=4)],
                                    milestones=[3]),
        [[0.05, 0.04, 0.032] + [0.05] * 4 + [0.005] * 4 + [0.0005] * 4 + [0.00005] * 4], 19),
    "test_sequentiallr2": (
        lambda S, o: S.SequentialLR(o, [S.ConstantLR(o, factor=0.1, total_iters=3), S.ExponentialLR(o, gamma=0.9)],
                                    milestones=[3]),
        [[0.005] * 3 + [0.05 * 0.9 ** x for x in range(10)]], 13),
    "test_sequentiallr3": (
        lambda S, o: S.SequentialLR(o, [S.ConstantLR(o, factor=0.1, total_iters=3), S.ExponentialLR(o, gamma=0.8),
                                        S.StepLR(o, gamma=0.1, step_size=2)], milestones=[3, 6]),
        [[0.005] * 3 + [0.05, 0.04, 0.032] + [0.05, 0.05, 0.005, 0.005, 0.0005, 0.0005]], 12),
    "test_sequentiallr5": (   # a ChainedScheduler inside a SequentialLR
        lambda S, o: S.SequentialLR(o, [S.ChainedScheduler([S.LinearLR(o, start_factor=0.1, total_iters=5),
                                                            S.ConstantLR(o, factor=0.1, total_iters=5)]),
                                        S.ConstantLR(o, factor=0.5, total_iters=5)], milestones=[5]),
        [[0.0005, 0.0014, 0.0023, 0.0032, 0.0041] + [0.025] * 5], 10),
    "test_chained_lr1": (lambda S, o: S.ChainedScheduler([S.StepLR(o, gamma=0.1, step_size=3)]),
                         [[0.05] * 3 + [0.005] * 3 + [0.0005] * 3 + [0.00005] * 3], 10),
    "test_chained_lr2": (lambda S, o: S.ChainedScheduler([S.LinearLR(o, start_factor=0.4, total_iters=3)]),
                         [[0.02, 0.03, 0.04] + [0.05] * 9], 10),
    "test_chained_lr3": (
        lambda S, o: S.ChainedScheduler([S.LinearLR(o, start_factor=0.4, total_iters=3),
                                         S.MultiStepLR(o, milestones=[4, 8, 10], gamma=0.1)]),
        [[0.02, 0.03, 0.04, 0.05] + [0.005] * 4 + [0.0005] * 3 + [0.00005] * 3], 10),
    "test_chained_lr4": (
        lambda S, o: S.ChainedScheduler([S.ExponentialLR(o, gamma=0.9), S.ConstantLR(o, factor=0.2, total_iters=4),
                                         S.StepLR(o, gamma=0.1, step_size=3)]),
        [[0.05 * 0.2 * 0.9 ** x for x in range(3)] + [0.05 * 0.2 * 0.9 ** 3 * 0.1]
         + [0.05 * 0.9 ** x * 0.1 for x in range(4, 6)] + [0.05 * 0.9 ** x * 0.01 for x in range(6, 9)]], 9),
    "test_chained_lr5": (
        lambda S, o: S.ChainedScheduler([S.PolynomialLR(o, power=0.9, total_iters=5), S.ConstantLR(o, factor=0.1)]),
        [[0.1 * x for x in _poly(0.05, 5, 0.9, 10)], [0.1 * x for x in _poly(0.5, 5, 0.9, 10)]], 10),
    "test_compound_step_and_multistep_lr": (
        lambda S, o: [S.StepLR(o, gamma=0.1, step_size=3), S.MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9])],
        [[0.05] * 2 + [0.005] + [5e-4] * 2 + [5e-5] + [5e-6] * 3 + [5e-8]], 10),
    "test_compound_step_and_exp_lr": (
        lambda S, o: [S.StepLR(o, gamma=0.1, step_size=3), S.ExponentialLR(o, gamma=0.9)],
        _two([0.05 * 0.1 ** (x // 3) * 0.9 ** x for x in range(12)]), 10),
    "test_compound_exp_and_multistep_lr": (
        lambda S, o: [S.MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9]), S.ExponentialLR(o, gamma=0.9)],
        _two([0.05 * 0.1 ** sum(x >= m for m in (2, 5, 9)) * 0.9 ** x for x in range(11)]), 10),
    "test_compound_exp_and_linearlr": (
        lambda S, o: [S.LinearLR(o, start_factor=0.4, end_factor=0.9, total_iters=4), S.ExponentialLR(o, gamma=0.9)],
        _two([0.05 * 0.9 ** x * (0.4 + min(x, 4) / 4 * 0.5) for x in range(11)]), 10),
    "test_compound_step_and_constantlr": (
        lambda S, o: [S.StepLR(o, gamma=0.1, step_size=3), S.ConstantLR(o, factor=0.4, total_iters=4)],
        _two([0.05 * 0.4] * 3 + [0.005 * 0.4] + [0.005] * 2 + [0.0005] * 3 + [0.00005] * 3), 10),
    "test_compound_linearlr_and_multistep_lr": (
        lambda S, o: [S.MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9]), S.LinearLR(o, start_factor=0.4, total_iters=4)],
        _two([lr * (0.4 + min(i, 4) / 4 * 0.6) for i, lr in
              enumerate([0.05] * 2 + [0.005] * 3 + [0.0005] * 4 + [0.00005] * 2)]), 10),
    "test_compound_cosanneal_and_step_lr": (
        lambda S, o: [S.CosineAnnealingLR(o, T_max=10, eta_min=1e-10), S.StepLR(o, gamma=0.1, step_size=3)],
        _two([x * 0.1 ** (i // 3) for i, x in enumerate(COS10)]), 10),
    "test_compound_cosanneal_and_multistep_lr": (
        lambda S, o: [S.CosineAnnealingLR(o, T_max=10, eta_min=1e-10), S.MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9])],
        _two([x * m for x, m in zip(COS10, [1] * 2 + [0.1] * 3 + [0.01] * 4 + [0.001])]), 10),
    "test_compound_cosanneal_and_linearlr": (
        lambda S, o: [S.LinearLR(o, start_factor=0.4, total_iters=4), S.CosineAnnealingLR(o, T_max=10, eta_min=1e-10)],
        _two([x * (0.4 + min(i, 4) / 4 * 0.6) for i, x in enumerate(COS10)]), 10),
    "test_compound_cosanneal_and_exp_lr": (
        lambda S, o: [S.CosineAnnealingLR(o, T_max=10, eta_min=1e-10), S.ExponentialLR(o, gamma=0.1)],
        _two([x * 0.1 ** i for i, x in enumerate(COS10)]), 10),
    "test_lambda_lr": (lambda S, o: S.LambdaLR(o, lr_lambda=[lambda e: 0.9 ** e, lambda e: 0.8 ** e]),
                       [[0.05 * 0.9 ** x for x in range(10)], [0.4 * 0.8 ** x for x in range(10)]], 10),
    "test_multiplicative_lr": (lambda S, o: S.MultiplicativeLR(o, lr_lambda=[lambda e: 0.9, lambda e: 0.8]),
                               [[0.05 * 0.9 ** x for x in range(10)], [0.4 * 0.8 ** x for x in range(10)]], 10),
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_lr_sequence(T, name):
    # the original tests named by ``name`` (TestLRScheduler._test)
    build, targets, epochs = SEQUENCES[name]
    opt = _opt(T, lr2=0.4 if name in ("test_lambda_lr", "test_multiplicative_lr") else 0.5)
    _run(opt, build(_S(T), opt), targets, epochs)


@pytest.mark.parametrize("name", [n for n in SEQUENCES if n not in ("test_lambda_lr", "test_multiplicative_lr")])
def test_lr_sequence_with_tensor_lr_group(T, name):
    # TestLRScheduler.setUp gives the second group a Tensor lr (torch.tensor(0.5)): schedulers
    # update it in place and keep it a Tensor
    build, targets, epochs = SEQUENCES[name]
    opt = _opt(T, lr2=T.tensor(0.5))
    lr_tensor = opt.param_groups[1]["lr"]
    sched = build(_S(T), opt)
    _run(opt, sched, targets, epochs)
    assert opt.param_groups[1]["lr"] is lr_tensor
    last = (sched[-1] if isinstance(sched, list) else sched).get_last_lr()
    assert last[1] is not lr_tensor and _f(last[1]) == _f(lr_tensor)     # get_last_lr gives copies


@pytest.mark.parametrize("name,build,targets", [
    ("test_get_last_lr_multi_step_lr", lambda S, o: S.MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9]),
     _two([0.05] * 2 + [0.005] * 3 + [0.0005] * 4 + [0.00005])),
    ("test_get_last_lr_constantlr", lambda S, o: S.ConstantLR(o, factor=0.5, total_iters=5),
     _two([0.025] * 5 + [0.05] * 5)),
    ("test_get_last_lr_linearlr", lambda S, o: S.LinearLR(o, start_factor=0.25, end_factor=0.6, total_iters=4),
     _two(_linear(0.25, 0.6, 4, 10))),
    ("test_get_last_lr_sequentiallr", lambda S, o: S.SequentialLR(
        o, [S.ConstantLR(o, factor=0.1, total_iters=3), S.ExponentialLR(o, gamma=0.8),
            S.StepLR(o, gamma=0.1, step_size=2)], milestones=[3, 6]),
     _two([0.005] * 3 + [0.05, 0.04, 0.032] + [0.05, 0.05, 0.005, 0.005, 0.0005, 0.0005])),
], ids=lambda x: x if isinstance(x, str) else "")
def test_get_last_lr(T, name, build, targets):
    # the original tests named by ``name`` (TestLRScheduler._test_get_last_lr)
    opt = _opt(T)
    _run_last_lr(build(_S(T), opt), targets, 10)


def test_get_last_lr_step_lr(T):
    # TestLRScheduler.test_get_last_lr_step_lr (one group, lr 0.1)
    opt = T.optim.SGD([T.nn.Parameter(T.randn(2, 2))], 0.1)
    _run_last_lr(_S(T).StepLR(opt, 3, gamma=0.1), [[0.1] * 3 + [0.01] * 3 + [0.001] * 3 + [0.0001]], 10)


@pytest.mark.parametrize("name", ["test_multi_step_lr", "test_constantlr", "test_linearlr"])
def test_lr_sequence_with_epoch(T, name):
    # test_multi_step_lr_with_epoch, test_constantlr_with_epoch, test_linearlr_with_epoch
    build, targets, epochs = SEQUENCES[name]
    opt = _opt(T)
    _run_with_epoch(T, opt, build(_S(T), opt), targets, epochs)


# ---- closed form vs chainable form -----------------------------------------------------------
CLOSED_FORM = {
    "test_closed_form_step_lr": lambda S, o: S.StepLR(o, gamma=0.1, step_size=3),
    "test_closed_form_linearlr": lambda S, o: S.LinearLR(o, start_factor=1.0 / 3, end_factor=0.7, total_iters=4),
    "test_closed_form_constantlr": lambda S, o: S.ConstantLR(o, factor=1.0 / 3, total_iters=4),
    "test_closed_form_multi_step_lr": lambda S, o: S.MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9]),
    "test_closed_form_exp_lr": lambda S, o: S.ExponentialLR(o, gamma=0.9),
    "test_closed_form_poly_lr": lambda S, o: S.PolynomialLR(o, power=0.9),
    "test_closed_form_cos_anneal_lr": lambda S, o: S.CosineAnnealingLR(o, T_max=5, eta_min=1e-10),
}


@pytest.mark.parametrize("name", list(CLOSED_FORM))
def test_closed_form_matches_chainable(T, name):
    # TestLRScheduler._test_against_closed_form: step(epoch) (closed form, warns) and step()
    # (chainable) give the same lrs over 20 epochs; the cosine one runs past T_max. (The
    # original reads the lrs of a fresh optimizer its schedulers do not drive; this port reads
    # the driven one, so after e+1 chainable steps it compares with step(e + 1).)
    opt = _opt(T)
    closed = CLOSED_FORM[name](_S(T), opt)
    targets = []
    for e in range(20):
        opt.step()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            closed.step(e + 1)
        assert [x.message.args[0] for x in w] == [_S(T).EPOCH_DEPRECATION_WARNING]
        targets.append([_f(g["lr"]) for g in opt.param_groups])
    opt = _opt(T)
    chain = CLOSED_FORM[name](_S(T), opt)
    for e in range(20):
        opt.step()
        chain.step()
        assert [_f(g["lr"]) for g in opt.param_groups] == pytest.approx(targets[e], abs=ATOL), e


@pytest.mark.parametrize("name", ["StepLR", "ExponentialLR", "ConstantLR", "LinearLR", "PolynomialLR"])
def test_lr_is_constant_for_constant_epoch(T, name):
    # test_{step,exponential,constantlr,linear_linearlr,polynomial}_lr_is_constant_for_constant_epoch
    kw = {"StepLR": dict(step_size=2), "ExponentialLR": dict(gamma=0.9), "PolynomialLR": dict(power=0.9)}
    opt = _opt(T)
    s = getattr(_S(T), name)(opt, **kw.get(name, {}))
    seen = []
    for _ in range(10):
        opt.step()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.step(2)
        assert [x.message.args[0] for x in w] == [_S(T).EPOCH_DEPRECATION_WARNING]
        seen.append(opt.param_groups[0]["lr"])
    assert min(seen) == max(seen)


def test_cos_anneal_lr_continue(T):
    # TestLRScheduler.test_cos_anneal_lr_continue: a scheduler built with last_epoch=0 (resuming,
    # initial_lr already in the groups) starts from the lrs the first one reached after a step
    opt = _opt(T)
    s = _S(T).CosineAnnealingLR(opt, T_max=5, eta_min=0.1)
    opt.step()
    s.step()
    resumed = _S(T).CosineAnnealingLR(opt, T_max=5, eta_min=0.1, last_epoch=0)
    assert [_f(x) for x in resumed._last_lr] == pytest.approx([_f(x) for x in s._last_lr], rel=1e-4, abs=1e-5)


def test_missing_initial_lr_when_resuming(T):
    # test_raise_error_when_last_epoch_is_greater_than_0_and_initial_lr_is_not_specified
    opt = T.optim.SGD([T.nn.Parameter(T.randn(2, 2))], 0.1)
    with pytest.raises(KeyError, match=r"param 'initial_lr' is not specified in param_groups\[0\] when "
                                       r"resuming scheduler with last_epoch >= 0"):
        _S(T).StepLR(opt, step_size=3, gamma=0.1, last_epoch=1)


def test_error_when_get_lr_takes_an_argument(T):
    # TestLRScheduler.test_error_when_getlr_has_epoch: a subclass whose get_lr wants an argument
    # fails at construction (the initial step calls get_lr()) with TypeError
    class Custom(T.optim.lr_scheduler.LRScheduler):
        def get_lr(self, step):
            return [0.1 for _ in self.optimizer.param_groups]
    with pytest.raises(TypeError):
        Custom(T.optim.SGD([T.rand(1)], lr=1))


# ---- warnings about call order -------------------------------------------------------------
def _pattern(opt, s, new, epochs=35):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(epochs):
            if new:
                opt.step()
                s.step()
            else:
                s.step()
                opt.step()
    return [x for x in w if issubclass(x.category, UserWarning)]


@pytest.mark.parametrize("resuming", [False, True])
def test_old_pattern_warning(T, resuming):
    # test_old_pattern_warning, test_old_pattern_warning_resuming (and their _with_arg twins):
    # scheduler.step() before optimizer.step() warns once, pointing at the docs
    opt = _opt(T)
    if resuming:
        for g in opt.param_groups:
            g["initial_lr"] = 0.01
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s = _S(T).StepLR(opt, gamma=0.1, step_size=3, last_epoch=10 if resuming else -1)
    assert not w
    ws = _pattern(opt, s, new=False)
    assert len(ws) == 1 and "how-to-adjust-learning-rate" in str(ws[0].message)


def test_old_pattern_warning_with_overridden_optim_step(T):
    # TestLRScheduler.test_old_pattern_warning_with_overridden_optim_step
    opt = _opt(T)
    for g in opt.param_groups:
        g["initial_lr"] = 0.01
    s = _S(T).StepLR(opt, gamma=0.1, step_size=3, last_epoch=10)
    old_step = opt.step
    opt.step = types.MethodType(lambda o, *a, **k: old_step(*a, **k), opt)
    ws = _pattern(opt, s, new=False)
    assert any("how-to-adjust-learning-rate" in str(x.message) for x in ws)


def test_new_pattern_no_warning(T):
    # test_new_pattern_no_warning, test_new_pattern_no_warning_with_arg
    opt = _opt(T)
    s = _S(T).StepLR(opt, gamma=0.1, step_size=3)
    assert _pattern(opt, s, new=True) == []


def test_new_pattern_no_warning_with_overridden_optim_step(T):
    # TestLRScheduler.test_new_pattern_no_warning_with_overridden_optim_step: replacing
    # optimizer.step after the scheduler was built is reported instead
    opt = _opt(T)
    s = _S(T).StepLR(opt, gamma=0.1, step_size=3)
    old_step = opt.step
    opt.step = types.MethodType(lambda o, *a, **k: old_step(*a, **k), opt)
    ws = _pattern(opt, s, new=True)
    assert len(ws) == 1 and "`optimizer.step()` has been overridden" in str(ws[0].message)


def test_sequentiallr_no_warnings(T):
    # TestLRScheduler.test_sequentiallr_no_warnings
    opt = _opt(T)
    S = _S(T)
    s = S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.5, end_factor=0.1, total_iters=5),
                             S.ExponentialLR(opt, gamma=0.9)], milestones=[5])
    assert _pattern(opt, s, new=True, epochs=10) == []


# ---- ReduceLROnPlateau ---------------------------------------------------------------------
PLATEAU = {
    "test_reduce_lr_on_plateau1": (dict(threshold_mode="abs", mode="min", threshold=0.01, patience=5, cooldown=5),
                                   [10 - i * 0.0167 for i in range(20)], [[0.5] * 20], 10),
    "test_reduce_lr_on_plateau2": (dict(patience=5, cooldown=0, threshold_mode="abs", mode="min", threshold=0.1),
                                   [10 - i * 0.0165 for i in range(22)],
                                   [[0.5] * 6 + [0.05] * 7 + [0.005] * 7 + [0.0005] * 2], 22),
    "test_reduce_lr_on_plateau3": (dict(mode="max", patience=5, cooldown=5, threshold_mode="abs"),
                                   [-0.8] * 2 + [-0.234] * 20, [[0.5] * 8 + [0.05] * 11 + [0.005] * 4], 22),
    "test_reduce_lr_on_plateau4": (dict(mode="max", patience=3, threshold_mode="rel", threshold=0.1),
                                   [1.5 * 1.025 ** i for i in range(20)], [[0.5] * 20], 20),
    "test_reduce_lr_on_plateau5": (dict(mode="max", threshold_mode="rel", threshold=0.1, patience=5, cooldown=5),
                                   [1.5 * 1.005 ** i for i in range(20)], [[0.5] * 6 + [0.05] * 11 + [0.005] * 4], 20),
    "test_reduce_lr_on_plateau6": (dict(mode="min", threshold_mode="rel", threshold=0.1),
                                   [1.5 * 0.85 ** i for i in range(20)], [[0.5] * 20], 20),
    "test_reduce_lr_on_plateau7": (dict(mode="min", threshold_mode="rel", threshold=0.1, patience=5, cooldown=5),
                                   [1] * 7 + [0.6] + [0.5] * 12, [[0.5] * 6 + [0.05] * 11 + [0.005] * 4], 20),
    "test_reduce_lr_on_plateau8": (dict(mode="max", threshold_mode="rel", min_lr=[0.4, 0.3], threshold=0.1,
                                        patience=5, cooldown=5),
                                   [1.5 * 1.005 ** i for i in range(20)], [[0.5] * 6 + [0.4] * 14, [0.5] * 6 + [0.3] * 14], 20),
}


def _run_plateau(opt, schedulers, metrics, targets, epochs, T):
    """TestLRScheduler._test_reduce_lr_on_plateau: step (metric for the plateau scheduler),
    then check the lrs."""
    for i in range(epochs):
        opt.step()
        for s in schedulers:
            s.step(metrics[i]) if isinstance(s, _S(T).ReduceLROnPlateau) else s.step()
        _assert_lrs(opt, targets, i)


@pytest.mark.parametrize("name", list(PLATEAU))
def test_reduce_lr_on_plateau(T, name):
    # the original tests named by ``name``; both groups start at lr 0.5
    kw, metrics, targets, epochs = PLATEAU[name]
    opt = _opt(T, lr2=0.5)
    opt.param_groups[0]["lr"] = 0.5
    _run_plateau(opt, [_S(T).ReduceLROnPlateau(opt, **kw)], metrics, targets, epochs, T)


COMPOUND_PLATEAU = {
    "test_compound_reduce_lr_on_plateau1": ("test_reduce_lr_on_plateau1", lambda S, o: S.StepLR(o, gamma=0.1, step_size=3)),
    "test_compound_reduce_lr_on_plateau2": ("test_reduce_lr_on_plateau2",
                                            lambda S, o: S.MultiStepLR(o, gamma=0.1, milestones=[3, 8, 12])),
    "test_compound_reduce_lr_on_plateau3": ("test_reduce_lr_on_plateau3", lambda S, o: S.ExponentialLR(o, gamma=0.1)),
    "test_compound_reduce_lr_on_plateau4": ("test_reduce_lr_on_plateau4", lambda S, o: S.CosineAnnealingLR(o, 10, 1e-10)),
    "test_compound_reduce_lr_on_plateau5": ("test_reduce_lr_on_plateau2",
                                            lambda S, o: S.LinearLR(o, start_factor=0.4, total_iters=4)),
}


def _compound_plateau_lrs(mod, name):
    plateau, build = COMPOUND_PLATEAU[name]
    kw, metrics, _, epochs = PLATEAU[plateau]
    opt = _opt(mod, lr2=0.5)
    opt.param_groups[0]["lr"] = 0.5
    S = mod.optim.lr_scheduler
    plat, other = S.ReduceLROnPlateau(opt, **kw), build(S, opt)
    seen = []
    for i in range(epochs):
        opt.step()
        plat.step(metrics[i])
        other.step()
        seen.append([_f(g["lr"]) for g in opt.param_groups])
    return seen


@pytest.mark.parametrize("name", list(COMPOUND_PLATEAU))
def test_compound_reduce_lr_on_plateau(name):
    # the original tests named by ``name``. The originals drop their targets (``targets[1:]``
    # of a one-element list) and so check nothing; this port compares the lr of both groups
    # after every step with torch's, and checks the plateau cuts did happen
    torch = pytest.importorskip("torch")
    ref, got = _compound_plateau_lrs(torch, name), _compound_plateau_lrs(tracegrad, name)
    assert sum(got, []) == pytest.approx(sum(ref, []), rel=1e-12), name
    assert all(a == b for a, b in ref)                 # both groups start at 0.5 and move together
    assert len({a for a, _ in ref}) > 2                # the lr moved


def test_reduce_lr_on_plateau_get_last_lr_before_step(T):
    # TestLRScheduler.test_reduce_lr_on_plateau_get_last_lr_before_step
    opt = _opt(T)
    for g in opt.param_groups:
        g["lr"] = 0.5
    assert _S(T).ReduceLROnPlateau(opt).get_last_lr() == [0.5, 0.5]


def test_reduce_lr_on_plateau_preserves_lr_type(T):
    # TestLRScheduler.test_reduce_lr_on_plateau_preserves_lr_type: a Tensor lr stays a Tensor
    opt = _opt(T, lr2=T.tensor(0.5))
    kinds = [type(g["lr"]) for g in opt.param_groups]
    s = _S(T).ReduceLROnPlateau(opt, mode="min", patience=0)
    s.step(1.0)
    s.step(2.0)
    assert [type(g["lr"]) for g in opt.param_groups] == kinds
    assert [_f(g["lr"]) for g in opt.param_groups] == pytest.approx([0.005, 0.05])


@pytest.mark.parametrize("min_lr", ["scalar", "list"])
def test_add_param_group_does_not_break_reduce_lr_on_plateau(T, min_lr):
    # TestLRScheduler.test_add_param_group_does_not_break_reduce_lr_on_plateau
    opt = _opt(T, lr2=0.5)
    opt.param_groups[0]["lr"] = 0.5
    s = _S(T).ReduceLROnPlateau(opt, mode="min", threshold_mode="rel", threshold=0.1, patience=5, cooldown=5,
                                min_lr=0 if min_lr == "scalar" else [1e-5, 1e-4])
    metrics = [1] * 7 + [0.6] + [0.5] * 12
    target = [0.5] * 6 + [0.05] * 11 + [0.005] * 4
    for i in range(20):
        if i == 8:
            opt.add_param_group({"params": [T.nn.Parameter(T.rand(2, 3))], "lr": 0.05})
            if min_lr == "list":
                s.min_lrs.append(1e-6)
        opt.step()
        s.step(metrics[i])
        assert _f(opt.param_groups[0]["lr"]) == pytest.approx(target[i], abs=ATOL), i


def test_add_param_group_errors_reduce_lr_on_plateau(T):
    # TestLRScheduler.test_add_param_group_errors_reduce_lr_on_plateau
    opt = _opt(T)
    s = _S(T).ReduceLROnPlateau(opt, mode="min", threshold_mode="rel", threshold=1e-5, patience=0, cooldown=0,
                                min_lr=[1e-5, 1e-4])
    opt.add_param_group({"params": [T.nn.Parameter(T.rand(2, 3))], "lr": 0.05})
    opt.step()
    s.step(1)
    with pytest.raises(RuntimeError, match="The number of param groups in the"):
        opt.step()
        s.step(1.3)


def test_reduce_lr_on_plateau_state_dict(T):
    # TestLRScheduler.test_reduce_lr_on_plateau_state_dict
    opt = _opt(T)
    s = _S(T).ReduceLROnPlateau(opt, mode="min", factor=0.1, patience=2)
    for score in [1.0, 2.0, 3.0, 4.0, 3.0, 4.0, 5.0, 3.0, 2.0, 1.0]:
        s.step(score)
    copy_ = _S(T).ReduceLROnPlateau(opt, mode="max", factor=0.5, patience=10)
    copy_.load_state_dict(s.state_dict())
    for key in s.__dict__:
        if key not in {"optimizer", "is_better"}:
            assert s.__dict__[key] == copy_.__dict__[key], key
    assert copy_.mode == "min" and copy_.factor == 0.1


# ---- SequentialLR / ChainedScheduler specifics ---------------------------------------------
def test_sequentiallr_keeps_initial_lr(T):
    # TestLRScheduler.test_sequentiallr4: building the inner schedulers and the SequentialLR
    # leaves the optimizer's lr where the first scheduler put it
    opt = T.optim.SGD([T.tensor(0.5)], lr=0.1)
    before = opt.param_groups[0]["lr"]
    S = _S(T)
    S.SequentialLR(opt, [S.ConstantLR(opt, factor=1), S.ConstantLR(opt, factor=0.1)], milestones=[10])
    assert opt.param_groups[0]["lr"] == before


def test_sequentiallr_does_not_alias_lr_and_initial_lr(T):
    # TestLRScheduler.test_sequentiallr_does_not_alias_lr_and_initial_lr (a Tensor lr, torch #162359)
    a, b = T.nn.Linear(1, 1), T.nn.Linear(1, 1)
    opt = T.optim.SGD(list(a.parameters()) + list(b.parameters()), lr=T.tensor(2.0))
    S = _S(T)
    s = S.SequentialLR(opt, [S.LinearLR(opt, 0.1, 0.8, total_iters=4), S.LinearLR(opt, 0.8, 0.1, total_iters=4)],
                       milestones=[4])
    _run(opt, s, [[0.2, 0.55, 0.9, 1.25, 1.6, 1.25, 0.9, 0.55]], 8)
    assert _f(opt.param_groups[0]["initial_lr"]) == 2.0


def test_chained_get_last_lr_before_step(T):
    # TestLRScheduler.test_chained_lr2_get_last_lr_before_step (and the get_last_lr checks that
    # end test_chained_lr1..5: the chain reports its last scheduler's lrs)
    opt = _opt(T)
    S = _S(T)
    inner = [S.LinearLR(opt, start_factor=0.4, total_iters=3), S.MultiStepLR(opt, milestones=[4, 8, 10], gamma=0.1)]
    s = S.ChainedScheduler(inner)
    assert s.get_last_lr() == inner[-1].get_last_lr()
    for _ in range(6):
        opt.step()
        s.step()
        assert s.get_last_lr() == inner[-1].get_last_lr()


@pytest.mark.parametrize("bad", ["empty", "milestones", "other_optimizer", "plateau"])
def test_sequential_and_chained_errors(T, bad):
    # SequentialLR / ChainedScheduler argument checks (the errors test_lrscheduler's
    # SequentialLR tests rely on): no schedulers, milestone count, mixed optimizers, plateau
    S = _S(T)
    opt, other = _opt(T), _opt(T)
    if bad == "empty":
        with pytest.raises(ValueError, match="at least one scheduler"):
            S.SequentialLR(opt, [], milestones=[])
        with pytest.raises(ValueError, match="at least one scheduler"):
            S.ChainedScheduler([])
    elif bad == "milestones":
        with pytest.raises(ValueError, match="number of schedulers provided to be one more"):
            S.SequentialLR(opt, [S.StepLR(opt, 2), S.StepLR(opt, 3)], milestones=[1, 2])
    elif bad == "other_optimizer":
        with pytest.raises(ValueError, match="same optimizer"):
            S.SequentialLR(opt, [S.StepLR(opt, 2), S.StepLR(other, 3)], milestones=[1])
        with pytest.raises(ValueError, match="same optimizer"):
            S.ChainedScheduler([S.StepLR(opt, 2), S.StepLR(other, 3)])
    else:
        with pytest.raises(ValueError, match="ReduceLROnPlateau"):
            S.SequentialLR(opt, [S.StepLR(opt, 2), S.ReduceLROnPlateau(opt)], milestones=[1])


# ---- CyclicLR ------------------------------------------------------------------------------
def _run_cycle(opt, s, lr_targets, mom_targets, n, key="momentum"):
    """TestLRScheduler._test_cycle_lr: check lr and momentum (or beta1), then step."""
    for i in range(n):
        _assert_lrs(opt, lr_targets, i)
        if mom_targets is not None:
            _assert_lrs(opt, mom_targets, i, key)
        opt.step()
        s.step()


TRI = [1, 2, 3, 4, 5, 4, 3, 2, 1, 2, 3]
TRI2 = [1, 2, 3, 4, 5, 4, 3, 2, 1, 1.5, 2.0, 2.5, 3.0, 2.5, 2.0, 1.5, 1, 1.25, 1.50, 1.75, 2.00, 1.75]
XS = [0, 0.25, 0.5, 0.75, 1, 0.75, 0.50, 0.25, 0, 0.25, 0.5, 0.75, 1]
XS_UD = [0.0, 0.5, 1.0, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6, 0.0, 0.5, 1.0, 5 / 6, 4 / 6]
TRI_UD = [1.0, 2.0, 3.0, 4.0, 5.0, 13 / 3, 11 / 3, 9 / 3, 7 / 3, 5 / 3, 1.0]
TRI2_UD = [1.0, 3.0, 5.0, 13 / 3, 11 / 3, 3.0, 7 / 3, 5 / 3, 1.0, 2.0, 3.0, 8 / 3, 7 / 3, 2.0, 5 / 3, 4 / 3,
           1.0, 1.5, 2.0, 11 / 6, 10 / 6, 9 / 6, 8 / 6, 7 / 6]


def _exp_range(base, top, xs, gamma=0.9):
    return [base + x * (top - base) * gamma ** i for i, x in enumerate(xs)]


# name -> (CyclicLR kwargs, lr targets per group, momentum targets per group)
CYCLIC = {
    "test_cycle_lr_triangular_mode_one_lr": (
        dict(base_lr=1, max_lr=5, step_size_up=4, base_momentum=1, max_momentum=5, mode="triangular"),
        [TRI] * 2, [[6 - x for x in TRI]] * 2),
    "test_cycle_lr_triangular2_mode_one_lr": (
        dict(base_lr=1, max_lr=5, step_size_up=4, base_momentum=1, max_momentum=5, mode="triangular2"),
        [TRI2] * 2, [[6 - x for x in TRI2]] * 2),
    "test_cycle_lr_exp_range_mode_one_lr": (
        dict(base_lr=1, max_lr=5, step_size_up=4, base_momentum=1, max_momentum=5, mode="exp_range", gamma=0.9),
        [_exp_range(1, 5, XS)] * 2, [[6 - x for x in _exp_range(1, 5, XS)]] * 2),
    "test_cycle_lr_triangular_mode": (
        dict(base_lr=[1, 2], max_lr=[5, 6], step_size_up=4, base_momentum=[1, 2], max_momentum=[5, 6]),
        [TRI, [x + 1 for x in TRI]], [[6 - x for x in TRI], [7 - x for x in TRI]]),
    "test_cycle_lr_triangular2_mode": (
        dict(base_lr=[1, 3], max_lr=[5, 7], step_size_up=4, base_momentum=[1, 3], max_momentum=[5, 7],
             mode="triangular2"),
        [TRI2, [x + 2 for x in TRI2]], [[6 - x for x in TRI2], [8 - x for x in TRI2]]),
    "test_cycle_lr_exp_range_mode": (
        dict(base_lr=[1, 5], max_lr=[5, 12], step_size_up=4, base_momentum=[1, 5], max_momentum=[5, 12],
             mode="exp_range", gamma=0.9),
        [_exp_range(1, 5, XS), _exp_range(5, 12, XS)],
        [[6 - x for x in _exp_range(1, 5, XS)], [17 - x for x in _exp_range(5, 12, XS)]]),
    "test_cycle_lr_triangular_mode_step_size_up_down": (
        dict(base_lr=1, max_lr=5, step_size_up=4, step_size_down=6, base_momentum=1, max_momentum=5),
        [TRI_UD] * 2, [[6 - x for x in TRI_UD]] * 2),
    "test_cycle_lr_triangular2_mode_step_size_up_down": (
        dict(base_lr=[1, 3], max_lr=[5, 7], step_size_up=2, step_size_down=6, base_momentum=[1, 3],
             max_momentum=[5, 7], mode="triangular2"),
        [TRI2_UD, [x + 2 for x in TRI2_UD]], [[6 - x for x in TRI2_UD], [8 - x for x in TRI2_UD]]),
    "test_cycle_lr_exp_range_mode_step_size_up_down": (
        dict(base_lr=1, max_lr=5, step_size_up=2, step_size_down=6, base_momentum=1, max_momentum=5,
             mode="exp_range", gamma=0.9),
        [_exp_range(1, 5, XS_UD)] * 2, [[6 - x for x in _exp_range(1, 5, XS_UD)]] * 2),
}


@pytest.mark.parametrize("tensor_lr", [False, True], ids=["float_lr", "tensor_lr"])
@pytest.mark.parametrize("name", list(CYCLIC))
def test_cycle_lr(T, name, tensor_lr):
    # the original tests named by ``name``: lr and momentum cycle in opposite directions (with
    # the second group's lr a float or, as in the original's setUp, a Tensor)
    kw, lrs, moms = CYCLIC[name]
    opt = _opt(T, lr2=T.tensor(0.5) if tensor_lr else 0.5)
    s = _S(T).CyclicLR(opt, cycle_momentum=True, **kw)
    _run_cycle(opt, s, lrs, moms, len(lrs[0]))


def test_cycle_lr_triangular_mode_one_lr_no_momentum(T):
    # TestLRScheduler.test_cycle_lr_triangular_mode_one_lr_no_momentum: momentum left alone
    opt = _opt(T)
    s = _S(T).CyclicLR(opt, base_lr=1, max_lr=5, step_size_up=4, cycle_momentum=False)
    _run_cycle(opt, s, [TRI] * 2, [[opt.defaults["momentum"]] * len(TRI)] * 2, len(TRI))


def test_cycle_lr_with_momentumless_optimizer(T):
    # TestLRScheduler.test_cycle_lr_with_momentumless_optimizer (torch #19003): Adam without
    # cycle_momentum gets no "momentum" key
    opt = _opt(T, "Adam")
    s = _S(T).CyclicLR(opt, base_lr=1, max_lr=5, step_size_up=4, cycle_momentum=False)
    _run_cycle(opt, s, [TRI] * 2, None, len(TRI))
    assert all("momentum" not in g for g in opt.param_groups)


def test_cycle_lr_cycle_momentum_fail_with_momentumless_optimizer(T):
    # TestLRScheduler.test_cycle_lr_cycle_momentum_fail_with_momentumless_optimizer
    opt = T.optim.Rprop(T.nn.Linear(1, 1).parameters())
    with pytest.raises(ValueError, match="momentum"):
        _S(T).CyclicLR(opt, base_lr=1, max_lr=5, cycle_momentum=True)


def test_cycle_lr_cycle_momentum_with_beta1_optimizer(T):
    # TestLRScheduler.test_cycle_lr_cycle_momentum_with_beta1_optimizer: Adam's beta1 cycles
    opt = T.optim.Adam(T.nn.Linear(1, 1).parameters())
    s = _S(T).CyclicLR(opt, base_lr=1, max_lr=5, step_size_up=4, cycle_momentum=True, base_momentum=0.8,
                       max_momentum=0.9)
    betas = []
    for _ in range(5):
        betas.append(opt.param_groups[0]["betas"][0])
        opt.step()
        s.step()
    assert betas == pytest.approx([0.9, 0.875, 0.85, 0.825, 0.8])


def test_cycle_lr_invalid_mode(T):
    # TestLRScheduler.test_cycle_lr_invalid_mode
    with pytest.raises(ValueError):
        _S(T).CyclicLR(_opt(T), base_lr=0, max_lr=0, mode="CATS")


def test_cycle_lr_removed_after_out_of_scope(T):
    # TestLRScheduler.test_cycle_lr_removed_after_out_of_scope: no reference cycle keeps it alive
    import weakref
    gc.disable()
    try:
        def build():
            opt = T.optim.Adam(T.nn.Linear(1, 1).parameters())
            return weakref.ref(_S(T).CyclicLR(opt, base_lr=1, max_lr=5, cycle_momentum=False))
        assert build()() is None
    finally:
        gc.enable()


class _ScaleFn:
    """A callable object scale_fn (its ``__dict__`` is what CyclicLR's state_dict keeps)."""

    def __init__(self):
        self.x = 0.5

    def __call__(self, _):
        return self.x


def test_cycle_lr_state_dict_picklable(T):
    # TestLRScheduler.test_cycle_lr_state_dict_picklable: built-in mode, function and callable
    # object scale_fn; the function reference never enters the state dict
    opt = T.optim.Adam(T.nn.Linear(1, 1).parameters())
    s = _S(T).CyclicLR(opt, base_lr=1, max_lr=5, cycle_momentum=False)
    assert isinstance(s._scale_fn_ref, types.FunctionType)
    for fn, custom in [(None, None), (lambda _: 0.5, None), (_ScaleFn(), {"x": 0.5})]:
        s = _S(T).CyclicLR(opt, base_lr=1, max_lr=5, cycle_momentum=False, scale_fn=fn)
        state = s.state_dict()
        assert "_scale_fn_ref" not in state
        assert state["_scale_fn_custom"] == custom
        pickle.dumps(state)


def test_cycle_lr_scale_fn_restored_from_state_dict(T):
    # TestLRScheduler.test_cycle_lr_scale_fn_restored_from_state_dict
    opt = T.optim.Adam(T.nn.Linear(1, 1).parameters())
    S = _S(T)
    s = S.CyclicLR(opt, base_lr=1, max_lr=5, cycle_momentum=False, mode="triangular2")
    restored = S.CyclicLR(opt, base_lr=1, max_lr=5, cycle_momentum=False)
    restored.load_state_dict(s.state_dict())
    assert restored.mode == s.mode == "triangular2"
    assert restored._scale_fn_ref is not None and restored._scale_fn_custom is None
    assert restored.scale_fn(2.0) == s.scale_fn(2.0) == 0.5

    def fn(_):
        return 0.5
    s = S.CyclicLR(opt, base_lr=1, max_lr=5, cycle_momentum=False, scale_fn=fn)
    restored = S.CyclicLR(opt, base_lr=1, max_lr=5, cycle_momentum=False, scale_fn=fn)
    restored.load_state_dict(s.state_dict())
    assert s._scale_fn_custom is fn and restored._scale_fn_custom is fn


def test_cosine_then_cyclic(T):
    # TestLRScheduler.test_cosine_then_cyclic (torch #21965): CyclicLR after CosineAnnealingLR
    # on one optimizer stays within max_lr
    opt = T.optim.SGD(T.nn.Linear(2, 1).parameters(), lr=0.5)
    cos = _S(T).CosineAnnealingLR(opt, T_max=20, eta_min=0.1)
    cyc = _S(T).CyclicLR(opt, base_lr=0.1, max_lr=0.3, step_size_up=1, step_size_down=3)
    for i in range(40):
        opt.step()
        (cos if i <= cos.T_max else cyc).step()
        assert _f(opt.param_groups[0]["lr"]) <= 0.3 + 1e-12 or i <= cos.T_max


# ---- OneCycleLR ----------------------------------------------------------------------------
def _acos(start, end, pct):
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


ONECYCLE = {
    "test_onecycle_lr_linear_annealing": (
        dict(max_lr=25, final_div_factor=2, base_momentum=1, max_momentum=22, total_steps=10, anneal_strategy="linear"),
        [1, 13, 25, 21.5, 18, 14.5, 11, 7.5, 4, 0.5], [22, 11.5, 1, 4, 7, 10, 13, 16, 19, 22]),
    "test_onecycle_lr_linear_annealing_three_phases": (
        dict(max_lr=25, div_factor=25, base_momentum=1, max_momentum=22, total_steps=10, anneal_strategy="linear",
             pct_start=0.4, final_div_factor=4, three_phase=True),
        [1, 9, 17, 25, 17, 9, 1, 0.75, 0.5, 0.25], [22, 15, 8, 1, 8, 15, 22, 22, 22, 22]),
    "test_onecycle_lr_cosine_annealing": (
        dict(max_lr=25, final_div_factor=2, base_momentum=1, max_momentum=22, total_steps=10),
        [1, 13, 25] + [_acos(25, 0.5, k / 7) for k in range(1, 7)] + [0.5],
        [22, 11.5, 1] + [_acos(1, 22, k / 7) for k in range(1, 7)] + [22]),
}


@pytest.mark.parametrize("tensor_lr", [False, True], ids=["float_lr", "tensor_lr"])
@pytest.mark.parametrize("name", list(ONECYCLE))
def test_onecycle_lr(T, name, tensor_lr):
    # the original tests named by ``name`` (second group's lr a float or a Tensor)
    kw, lr, mom = ONECYCLE[name]
    opt = _opt(T, lr2=T.tensor(0.5) if tensor_lr else 0.5)
    _run_cycle(opt, _S(T).OneCycleLR(opt, **kw), [lr] * 2, [mom] * 2, 10)


def test_cycle_lr_with_adam(T):
    # TestLRScheduler.test_cycle_lr_with_adam: OneCycleLR cycles Adam's beta1
    kw, lr, mom = ONECYCLE["test_onecycle_lr_linear_annealing"]
    opt = _opt(T, "Adam")
    _run_cycle(opt, _S(T).OneCycleLR(opt, **kw), [lr] * 2, [mom] * 2, 10, key="betas")


def test_onecycle_lr_legacy_state_dict(T):
    # TestLRScheduler.test_onecycle_lr_legacy_state_dict: a state dict saved before
    # ``_anneal_func_type`` existed (it holds the anneal function itself) still loads
    kw, lr, mom = ONECYCLE["test_onecycle_lr_cosine_annealing"]
    opt = _opt(T)
    S = _S(T)
    s = S.OneCycleLR(opt, anneal_strategy="cos", **kw)
    delattr(s, "_anneal_func_type")
    state = s.state_dict()
    assert "anneal_func_type" not in state
    state["anneal_func"] = S.OneCycleLR._annealing_cos
    s.load_state_dict(state)
    _run_cycle(opt, s, [lr] * 2, [mom] * 2, 10)


@pytest.mark.parametrize("kw,match", [
    (dict(total_steps=10, anneal_strategy="CATS"), "anneal_strategy"),      # test_onecycle_lr_invalid_anneal_strategy
    (dict(total_steps=10, pct_start=1.1), "pct_start"),                     # test_onecycle_lr_invalid_pct_start
    (dict(), "total_steps"),                                                # test_onecycle_lr_cannot_calculate_total_steps
    (dict(total_steps=0), "total_steps"),
    (dict(total_steps=2.5), "total_steps"),
    (dict(epochs=0, steps_per_epoch=3), "epochs"),
    (dict(epochs=2, steps_per_epoch=-1), "steps_per_epoch"),
])
def test_onecycle_lr_bad_arguments(T, kw, match):
    # OneCycleLR's argument checks (the three originals in the comments, plus the epochs /
    # steps_per_epoch forms of the total_steps check)
    with pytest.raises(ValueError, match=match):
        _S(T).OneCycleLR(_opt(T), max_lr=1e-3, **kw)


def test_onecycle_lr_stepping_past_total_steps(T):
    # OneCycleLR.step past total_steps (the check the per-batch tests stay under)
    opt = _opt(T)
    s = _S(T).OneCycleLR(opt, max_lr=0.1, total_steps=4)
    for _ in range(4):      # last_epoch 1..4: the construction step counts as step 0
        opt.step()
        s.step()
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 5 times. The specified number of total steps is 4"):
        s.step()
