"""Helpers shared by test_lr_scheduler_ported.py and test_lr_scheduler_ported_more.py (ports of
PyTorch's test/optim/test_lrscheduler.py): the two-group optimizer of TestLRScheduler.setUp and
its ``_test`` / ``_test_get_last_lr`` / ``_test_with_epoch`` loops, written for either library
(``T`` is ``torch`` or ``tracegrad``)."""
import math
import warnings

import pytest

ATOL = 1e-5


def _opt(T, cls="SGD", lr2=0.5, **kw):
    """TestLRScheduler.setUp: two param groups, the first at the optimizer's lr 0.05, the second
    at ``lr2`` (torch's setUp uses a Tensor lr there: pass ``lr2=T.tensor(0.5)`` for that)."""
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


def _poly(lr, total, power, epochs):
    return [lr * (1.0 - x / total) ** power for x in range(total)] + [0.0] * (epochs - total)


def _linear(start, end, iters, epochs, lr=0.05):
    return [lr * (start + i * (end - start) / iters) for i in range(iters)] + [lr * end] * (epochs - iters)
