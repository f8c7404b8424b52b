"""Ported from PyTorch's test/optim/test_lrscheduler.py (TestLRScheduler; each test names its
original). Bodies run under torch and tracegrad (the ``T`` fixture): torch 2.13 checks every
expected lr sequence, warning and error class, tracegrad must meet them. The last section
steps schedulers between ``tracegrad.compile``d training steps (no retrace, eager's params)."""
import copy
import gc
import io
import math
import pickle
import types
import warnings

import pytest

import tracegrad

ATOL = 1e-5


# ---- helpers -------------------------------------------------------------------------------
def _opt(T, cls="SGD", lr2=0.5, **kw):
    """TestLRScheduler.setUp: two param groups, the first at the optimizer's lr 0.05, the second
    at ``lr2`` (torch's setUp uses a Tensor lr there; see ``_tensor_lr_opt`` for that case)."""
    a, b = T.nn.Linear(1, 1), T.nn.Linear(1, 1)
    return getattr(T.optim, cls)([{"params": a.parameters()}, {"params": b.parameters(), "lr": lr2}],
                                 lr=0.05, **kw)


def _S(T):
    return T.optim.lr_scheduler


def _f(x):
    return float(x)


def _assert_lrs(opt, targets, i, key="lr"):
    """Every group's ``key`` at step ``i`` equals its target (atol 1e-5, as the original)."""
    for g, t in zip(opt.param_groups, targets):
        got = g[key][0] if key == "betas" else g[key]
        assert _f(got) == pytest.approx(t[i], abs=ATOL), f"{key} at step {i}: {t[i]} vs {got}"


def _run(opt, schedulers, targets, epochs):
    """TestLRScheduler._test: check the lrs, then step every scheduler, ``epochs`` times."""
    if not isinstance(schedulers, list):
        schedulers = [schedulers]
    for i in range(epochs):
        _assert_lrs(opt, targets, i)
        opt.step()
        for s in schedulers:
            s.step()


def _run_last_lr(schedulers, targets, epochs):
    """TestLRScheduler._test_get_last_lr: ``get_last_lr()`` before each step."""
    if not isinstance(schedulers, list):
        schedulers = [schedulers]
    for i in range(epochs):
        for s in schedulers:
            got = [_f(x) for x in s.get_last_lr()]
            assert got == pytest.approx([t[i] for t in targets][:len(got)], abs=ATOL), i
        schedulers[0].optimizer.step()
        for s in schedulers:
            s.step()


def _run_with_epoch(T, opt, scheduler, targets, epochs):
    """TestLRScheduler._test_with_epoch: ``step(epoch)`` warns EPOCH_DEPRECATION_WARNING (once,
    its only argument) and jumps to the closed form."""
    for i in range(epochs):
        opt.step()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            scheduler.step(i)
        assert [x.message.args for x in w] == [(_S(T).EPOCH_DEPRECATION_WARNING,)]
        _assert_lrs(opt, targets, i)


def _cos(base, eta_min, t, t_max):
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * t / t_max)) / 2


def _two(single, scale=10):
    """Targets for the two groups: the second group's lr is ``scale`` times the first's."""
    return [single, [x * scale for x in single]]


@pytest.fixture(autouse=True)
def _quiet():
    # the original _test steps schedulers without optimizer.step() in places; nothing here
    # checks warnings outside explicit catch_warnings blocks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ---- explicit lr sequences (TestLRScheduler._test) -----------------------------------------
def _poly(lr, total, power, epochs):
    return [lr * (1.0 - x / total) ** power for x in range(total)] + [0.0] * (epochs - total)


def _linear(start, end, iters, epochs, lr=0.05):
    return [lr * (start + i * (end - start) / iters) for i in range(iters)] + [lr * end] * (epochs - iters)


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


@pytest.mark.parametrize("name", ["test_step_lr", "test_multi_step_lr", "test_constantlr", "test_linearlr",
                                  "test_exp_lr", "test_sequentiallr3", "test_chained_lr4"])
def test_lr_sequence_with_tensor_lr_group(T, name):
    # TestLRScheduler.setUp gives the second group a Tensor lr (torch.tensor(0.5)): schedulers
    # update it in place and keep it a Tensor
    build, targets, epochs = SEQUENCES[name]
    opt = _opt(T, lr2=T.tensor(0.5))
    lr_tensor = opt.param_groups[1]["lr"]
    _run(opt, build(_S(T), opt), targets, epochs)
    assert opt.param_groups[1]["lr"] is lr_tensor


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


@pytest.mark.parametrize("name", list(CYCLIC))
def test_cycle_lr(T, name):
    # the original tests named by ``name``: lr and momentum cycle in opposite directions
    kw, lrs, moms = CYCLIC[name]
    opt = _opt(T)
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


@pytest.mark.parametrize("name", list(ONECYCLE))
def test_onecycle_lr(T, name):
    # the original tests named by ``name``
    kw, lr, mom = ONECYCLE[name]
    opt = _opt(T)
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
    from importlib import import_module
    SWALR = import_module(T.__name__ + ".optim.swa_utils").SWALR
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
    from importlib import import_module
    SWALR = import_module(T.__name__ + ".optim.swa_utils").SWALR
    with pytest.raises(ValueError, match=match):
        SWALR(_opt(T), **kw)


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
}


@pytest.mark.parametrize("name", list(STATE_DICT))
def test_scheduler_state_dict(T, name):
    # TestLRScheduler._check_scheduler_state_dict (the originals named by ``name``; the last
    # three extend it to PolynomialLR, OneCycleLR and CyclicLR): after 10 steps, a differently
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
    # plateau metrics fall then stall: the lr is cut twice during the run
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
