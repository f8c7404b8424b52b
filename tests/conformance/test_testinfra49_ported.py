"""testinfra49: PyTorch's optimizer, lr-scheduler and swa tests (test/optim/test_lrscheduler.py,
test/optim/test_swa_utils.py, test/test_optim.py), compiled.

Earlier ports took these files' CPU tests by name and ran each eagerly on torch and tracegrad
(tests/conformance/test_lr_scheduler_ported*.py, test_lrscheduler_ported_round24.py,
test_optim_*_ported*.py, test_optim_db.py, test_testinfra43_ported.py, tests/optim/...). Five
tests no port took are ported here as written (eagerly, torch and tracegrad through the ``T``
fixture): ``TestLRScheduler``'s test_step_lr_is_constant_for_constant_epoch,
test_exponential_lr_is_constant_for_constant_epoch, test_constantlr_is_constant_for_constant_epoch,
test_linear_linearlr_is_constant_for_constant_epoch and
test_polynomial_lr_is_constant_for_constant_epoch (``step(2)`` ten times keeps one lr and warns
torch's EPOCH_DEPRECATION_WARNING each time); from test_optim.py, ``TestOptimRenewed``'s
test_can_load_from_to_named_state_dict (SGD, Adam, Adagrad; the second optimizer compiled) and
test_fused_does_not_step_if_foundinf (with the grad_scale half of the fused rules and GradScaler
on a fused optimizer, at the end of the file). Left out: the CUDA-only tests (fused / foreach
memory and large-tensor tests, mixed devices) and test_optim_infos_do_not_specify_global_cliquey_kwargs
(tracegrad has no ``common_optimizers.optim_db``).

What no port did is run the training-loop tests under ``tracegrad.compile``: each test below
rewrites one original (named in its comment) as a ``program(T, wrap)`` that builds a two-group
model and optimizer with library ``T`` (TestLRScheduler.setUp's shape: the second group at its
own lr), wraps the training step (zero_grad, forward, backward, ``optimizer.step``) with ``wrap``
and drives the original's schedulers between calls; it returns a log (loss, every group's lr,
momentum / beta1, parameters, optimizer state). The same program runs on torch 2.13 eagerly (the
oracle), on tracegrad eagerly and with the step compiled; the three logs must agree, and the
compiled step must trace once (its first call runs eagerly, the second traces, the rest replay):
a scheduler changing lr, momentum or betas between calls needs no new program (DESIGN 2.5). The
families: every scheduler of the file (closed-form ``step(epoch)`` against the chained form,
compound lists, SequentialLR, ChainedScheduler, ReduceLROnPlateau modes / cooldown / threshold,
CyclicLR with momentum cycling, OneCycleLR three-phase and with Adam's beta1, scheduler
state_dict round trips, resuming with ``last_epoch``, SWALR annealing); swa_utils
(AveragedModel with a custom ``avg_fn`` / ``multi_avg_fn``, ``get_ema_multi_avg_fn``,
``use_buffers``, update_bn after compiled training); optimizer behaviour (state_dict loaded across
param groups between compiled calls, groups with different options, maximize, foreach against the
for-loop, zero_grad(set_to_none=False), step with a closure, add_param_group between calls (one
more trace, as a new parameter is new state), a Tensor lr, complex parameters, sparse gradients
refused with torch's words).

Adapted: Linear(3, 2) -> Linear(2, 1) models filled from NumPy (the libraries' initialisations
differ), 4-8 calls per program instead of 10-100 epochs. float32 steps compare at rtol 2e-4 (XLA
and ATen round differently).

Fixes in tracegrad (``TestFixesTI49`` and the fused tests at the end): an optimizer with
``foreach=True`` and ``differentiable=True`` refuses to step with torch's AssertionError ("_foreach
ops don't support autograd") in every optimizer whose torch foreach rule refuses (all but SGD);
tracegrad ran the differentiable per-parameter rule instead (tracegrad/optim/optimizer.py, sgd.py).
test_fused_does_not_step_if_foundinf (test_optim.py, new here): fused Adam / AdamW / SGD / Adagrad
read ``optimizer.grad_scale`` and ``optimizer.found_inf`` (what GradScaler sets for a fused
optimizer): a nonzero found_inf skips the update (state stays at its zeros), a grad_scale unscales
each gradient into ``.grad`` first, and their for-loop / foreach rules refuse the two attributes
(AssertionError); tracegrad ignored both attributes (NOTE [amp scaling inputs] in
tracegrad/optim/optimizer.py; adam.py, sgd.py, adagrad.py, which also set torch's
``_step_supports_amp_scaling`` when fused). GradScaler.step on such an optimizer now takes torch's
branch (tracegrad/amp/grad_scaler.py): the gradients are checked but left scaled, the step unscales
them itself, so an overflow step leaves them scaled and a skipped first step still makes the state
(tracegrad unscaled them and made none); a compiled step keeps the masked path, unscaling only
without an overflow. Left as a difference: torch's fused SGD
with momentum leaves an uninitialised (torch.empty) momentum buffer after a skipped first step;
tracegrad makes none until the first real step.
"""
import copy
import warnings

import numpy as np
import pytest

import tracegrad
from _compile_check import _same

torch = pytest.importorskip("torch")

_TOL = dict(rtol=2e-4, atol=2e-5)    # float32 training steps: XLA and ATen round differently


# ==== harness ===================================================================================
def _eager(f):
    return f


def _three(program, traces=1, fallback=None):
    """The program's log on torch eager, tracegrad eager and tracegrad compiled must agree; the
    compiled step traces ``traces`` times and never falls back to eager (with ``fallback``, a
    reason fragment: it runs eagerly every call, warning that reason once)."""
    expected = program(torch, _eager)
    _same(expected, program(tracegrad, _eager), "tracegrad eager vs torch", **_TOL)
    made = []

    def wrap(f):
        made.append(tracegrad.compile(f))
        return made[-1]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = program(tracegrad, wrap)
    _same(expected, got, "tracegrad.compile vs torch", **_TOL)
    assert made, "the program never wrapped its step"
    compile_warnings = [str(w.message) for w in caught if "compile" in str(w.message)]
    for cf in made:
        if fallback is not None:
            assert cf.stats["traces"] == 0 and cf.stats["eager_calls"] == cf.stats["calls"], cf.stats
            assert any(fallback in reason for reason, _ in cf.stats["graph_breaks"]), cf.stats
            assert len(compile_warnings) == 1 and fallback in compile_warnings[0], compile_warnings
            continue
        assert cf.stats["graph_breaks"] == [], cf.stats
        assert cf.stats["traces"] == traces, cf.stats
        assert cf.stats["eager_calls"] == 1, cf.stats
    if fallback is None:
        assert not compile_warnings, compile_warnings


def _arr(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype("float32")


def _x(T, i):
    return T.tensor(_arr(4, 3, seed=100 + i))


def _filled(T, module, seed=0):
    """``module`` with every floating parameter and buffer overwritten by NumPy numbers / 2."""
    floating = [t for t in list(module.parameters()) + list(module.buffers()) if t.dtype.is_floating_point]
    with T.no_grad():
        for k, t in enumerate(floating):
            t.copy_(T.tensor(_arr(*t.shape, seed=seed + k) * 0.5))
    return module


def _net(T, seed=0):
    """Two Linear layers (3 -> 2 -> 1) filled from NumPy."""
    return _filled(T, T.nn.Linear(3, 2), seed), _filled(T, T.nn.Linear(2, 1), seed + 2)


def _model_step(model, opt, loss_fn=lambda out: (out ** 2).mean(), after=None):
    """A step on one module: zero_grad, ``loss_fn(model(x))``, backward, optimizer step, then
    ``after()``; returns the detached loss."""
    def body(x):
        opt.zero_grad()
        loss = loss_fn(model(x))
        loss.backward()
        opt.step()
        if after is not None:
            after()
        return loss.detach()
    return body


def _groups(a, b, lr2=0.02, **g2):
    return [{"params": a.parameters()}, dict({"params": b.parameters(), "lr": lr2}, **g2)]


def _step_fn(a, b, opt, closure=False, set_to_none=True):
    def step(x):
        def loss_fn():
            opt.zero_grad(set_to_none=set_to_none)
            loss = (b(a(x).tanh()) ** 2).sum()
            loss.backward()
            return loss
        if closure:
            return opt.step(loss_fn).detach()
        loss = loss_fn()
        opt.step()
        return loss.detach()
    return step


def _hyper(opt):
    """Every group's lr, momentum and beta1 as floats (None where the group has none)."""
    out = []
    for g in opt.param_groups:
        beta1 = g["betas"][0] if "betas" in g else None
        out.append([float(g["lr"]), None if g.get("momentum") is None else float(g["momentum"]),
                    None if beta1 is None else float(beta1)])
    return out


def _params(*modules):
    return [p.detach().clone() for m in modules for p in m.parameters()]


def _opt_state(opt):
    return [[opt.state[p][k] for k in sorted(opt.state[p])] for g in opt.param_groups
            for p in g["params"] if p in opt.state]


def _sched_program(make_sched, calls=6, opt_cls="SGD", okw=None, lr2=0.02, metric=False):
    """A training loop: the compiled step, then ``scheduler.step()`` (``step(loss)`` with
    ``metric``) for each scheduler ``make_sched(T, opt)`` returns (one or a list)."""
    okw = dict(momentum=0.9) if okw is None else okw

    def program(T, wrap):
        a, b = _net(T)
        opt = getattr(T.optim, opt_cls)(_groups(a, b, lr2=lr2), lr=0.05, **okw)
        scheds = make_sched(T, opt)
        scheds = scheds if isinstance(scheds, list) else [scheds]
        step = wrap(_step_fn(a, b, opt))
        log = []
        for i in range(calls):
            loss = step(_x(T, i))
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                for s in scheds:
                    s.step(loss.item()) if metric else s.step()
            log.append([loss, _hyper(opt), [float(v) for v in scheds[-1].get_last_lr()]
                        if hasattr(scheds[-1], "get_last_lr") else None, _params(a, b),
                        [str(x.message)[:40] for x in w]])
        return log
    return program


def _S(T):
    return T.optim.lr_scheduler


# ==== test_lrscheduler.py: the five tests no port took (eager) ==================================
_CONSTANT_EPOCH = {
    "test_step_lr_is_constant_for_constant_epoch": lambda T, o: _S(T).StepLR(o, 2),
    "test_exponential_lr_is_constant_for_constant_epoch": lambda T, o: _S(T).ExponentialLR(o, gamma=0.9),
    "test_constantlr_is_constant_for_constant_epoch": lambda T, o: _S(T).ConstantLR(o),
    "test_linear_linearlr_is_constant_for_constant_epoch": lambda T, o: _S(T).LinearLR(o),
    "test_polynomial_lr_is_constant_for_constant_epoch": lambda T, o: _S(T).PolynomialLR(o, power=0.9),
}


@pytest.mark.parametrize("name", sorted(_CONSTANT_EPOCH))
def test_lr_is_constant_for_constant_epoch(T, name):
    # TestLRScheduler.<name> through _test_lr_is_constant_for_constant_epoch: optimizer.step(),
    # then scheduler.step(2) ten times: each call warns EPOCH_DEPRECATION_WARNING (one warning,
    # one argument) and the first group's lr stays one value
    a, b = T.nn.Linear(1, 1), T.nn.Linear(1, 1)
    opt = T.optim.SGD(_groups(a, b, lr2=T.tensor(0.5)), lr=0.05)
    scheduler = _CONSTANT_EPOCH[name](T, opt)
    lrs = []
    for _ in range(10):
        scheduler.optimizer.step()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            scheduler.step(2)
        assert len(w) == 1, [str(x.message) for x in w]
        assert w[0].message.args == (_S(T).EPOCH_DEPRECATION_WARNING,)
        lrs.append(float(opt.param_groups[0]["lr"]))
    assert min(lrs) == max(lrs)
    # tracegrad's text is torch's without the closing link to torch's issue tracker
    assert _S(torch).EPOCH_DEPRECATION_WARNING.startswith(_S(T).EPOCH_DEPRECATION_WARNING)


# ==== test_lrscheduler.py, compiled: one scheduler per program ===================================
_ONE = {
    # test_step_lr: StepLR(gamma=0.1, step_size=3)
    "test_step_lr": lambda T, o: _S(T).StepLR(o, gamma=0.1, step_size=3),
    # test_multi_step_lr: milestones [2, 5, 9] (here [1, 3, 5], in 6 calls)
    "test_multi_step_lr": lambda T, o: _S(T).MultiStepLR(o, gamma=0.1, milestones=[1, 3, 5]),
    # test_constantlr: factor 1/2 for 5 iterations (here 3)
    "test_constantlr": lambda T, o: _S(T).ConstantLR(o, factor=0.5, total_iters=3),
    # test_linearlr: start_factor 1/2 over 4 iterations
    "test_linearlr": lambda T, o: _S(T).LinearLR(o, start_factor=0.5, total_iters=4),
    # test_get_last_lr_linearlr: start 1/4, end 3/5
    "test_get_last_lr_linearlr": lambda T, o: _S(T).LinearLR(o, start_factor=0.25, end_factor=0.6,
                                                             total_iters=4),
    # test_exp_lr: gamma 0.9
    "test_exp_lr": lambda T, o: _S(T).ExponentialLR(o, gamma=0.9),
    # test_poly_lr: power 0.9 over 5 iterations (reaches 0)
    "test_poly_lr": lambda T, o: _S(T).PolynomialLR(o, power=0.9, total_iters=5),
    # test_cos_anneal_lr: T_max = epochs, eta_min 1e-10
    "test_cos_anneal_lr": lambda T, o: _S(T).CosineAnnealingLR(o, T_max=6, eta_min=1e-10),
    # test_CosineAnnealingWarmRestarts_lr1 (T_mult 2, T_0 2 instead of 10)
    "test_CosineAnnealingWarmRestarts_lr1": lambda T, o: _S(T).CosineAnnealingWarmRestarts(
        o, T_0=2, T_mult=2, eta_min=1e-10),
    # test_lambda_lr: one lambda per group
    "test_lambda_lr": lambda T, o: _S(T).LambdaLR(o, lr_lambda=[lambda e: 0.9 ** e, lambda e: 0.8 ** e]),
    # test_multiplicative_lr: one factor per group
    "test_multiplicative_lr": lambda T, o: _S(T).MultiplicativeLR(o, lr_lambda=[lambda e: 0.9,
                                                                                lambda e: 0.8]),
    # test_cycle_lr_triangular_mode: per-group base / max lr and momentum, momentum cycling
    "test_cycle_lr_triangular_mode": lambda T, o: _S(T).CyclicLR(
        o, base_lr=[0.01, 0.02], max_lr=[0.05, 0.06], step_size_up=2, cycle_momentum=True,
        base_momentum=[0.8, 0.7], max_momentum=[0.9, 0.95], mode="triangular"),
    # test_cycle_lr_triangular2_mode_step_size_up_down
    "test_cycle_lr_triangular2_mode_step_size_up_down": lambda T, o: _S(T).CyclicLR(
        o, base_lr=0.01, max_lr=0.05, step_size_up=1, step_size_down=2, cycle_momentum=True,
        base_momentum=0.8, max_momentum=0.9, mode="triangular2"),
    # test_cycle_lr_exp_range_mode: gamma 0.9
    "test_cycle_lr_exp_range_mode": lambda T, o: _S(T).CyclicLR(
        o, base_lr=[0.01, 0.05], max_lr=[0.05, 0.12], step_size_up=2, cycle_momentum=True,
        base_momentum=0.8, max_momentum=0.9, mode="exp_range", gamma=0.9),
    # test_cycle_lr_triangular_mode_one_lr_no_momentum: momentum stays the optimizer's
    "test_cycle_lr_triangular_mode_one_lr_no_momentum": lambda T, o: _S(T).CyclicLR(
        o, base_lr=0.01, max_lr=0.05, step_size_up=2, cycle_momentum=False),
    # test_onecycle_lr_linear_annealing_three_phases
    "test_onecycle_lr_linear_annealing_three_phases": lambda T, o: _S(T).OneCycleLR(
        o, max_lr=0.25, div_factor=25, base_momentum=0.5, max_momentum=0.95, total_steps=8,
        anneal_strategy="linear", pct_start=0.4, final_div_factor=4, three_phase=True),
    # test_onecycle_lr_cosine_annealing
    "test_onecycle_lr_cosine_annealing": lambda T, o: _S(T).OneCycleLR(
        o, max_lr=0.25, final_div_factor=2, base_momentum=0.5, max_momentum=0.95, total_steps=8),
}


@pytest.mark.parametrize("name", sorted(_ONE))
def test_scheduler_compiled(name):
    _three(_sched_program(_ONE[name]))


def test_cycle_lr_with_adam_compiled():
    # test_cycle_lr_with_adam: OneCycleLR on Adam cycles beta1 (the "momentum" of an Adam group)
    make = lambda T, o: _S(T).OneCycleLR(o, max_lr=0.25, final_div_factor=2, base_momentum=0.5,  # noqa: E731
                                         max_momentum=0.95, total_steps=8, anneal_strategy="linear")
    _three(_sched_program(make, opt_cls="Adam", okw={}))


def test_cycle_lr_with_momentumless_optimizer_compiled():
    # test_cycle_lr_with_momentumless_optimizer: CyclicLR(cycle_momentum=False) on Adam
    make = lambda T, o: _S(T).CyclicLR(o, base_lr=0.01, max_lr=0.05, step_size_up=2,  # noqa: E731
                                       cycle_momentum=False)
    _three(_sched_program(make, opt_cls="Adam", okw={}))


def test_sequentiallr_does_not_alias_lr_and_initial_lr_compiled():
    # test_sequentiallr_does_not_alias_lr_and_initial_lr: a Tensor lr through two LinearLRs in a
    # SequentialLR (milestone 4 of 8); the Tensor lr is a traced input, so no retrace
    def program(T, wrap):
        a, b = _net(T)
        opt = T.optim.SGD(list(a.parameters()) + list(b.parameters()), lr=T.tensor(0.2))
        S = _S(T)
        sched = S.SequentialLR(opt, [S.LinearLR(opt, 0.1, 0.8, total_iters=4),
                                     S.LinearLR(opt, 0.8, 0.1, total_iters=4)], milestones=[4])
        step = wrap(_step_fn(a, b, opt))
        log = []
        for i in range(8):
            log.append([step(_x(T, i)), _hyper(opt), type(opt.param_groups[0]["lr"]).__name__])
            sched.step()
        return log + [_params(a, b), opt.param_groups[0]["initial_lr"] is opt.param_groups[0]["lr"]]
    _three(program)


# ==== the "lr_scheduler.step() before optimizer.step()" warning, compiled =======================
def _pattern_program(order, warm_first=False, override=False, resume=False):
    """StepLR(gamma 0.1, step size 3) around a compiled step; each call's warnings (first words).
    ``order`` "old": scheduler.step() before the step; "new": after. ``warm_first``: the step is
    compiled and has traced before the scheduler exists; ``override``: optimizer.step replaced
    by a wrapper after the scheduler was made; ``resume``: last_epoch=10 with initial_lr set."""
    def program(T, wrap):
        a, b = _net(T)
        opt = T.optim.SGD(_groups(a, b), lr=0.05, momentum=0.9)
        step = wrap(_step_fn(a, b, opt))
        log = []
        if warm_first:
            log += [step(_x(T, 0)), step(_x(T, 1))]
        if resume:
            for g in opt.param_groups:
                g["initial_lr"] = 0.01
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            sched = _S(T).StepLR(opt, gamma=0.1, step_size=3, last_epoch=10 if resume else -1)
        log.append([str(x.message)[:40] for x in w])
        if override:
            import types
            inner = opt.step
            opt.step = types.MethodType(lambda self, *args, **kwargs: inner(*args, **kwargs), opt)
        for i in range(5):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                if order == "old":
                    sched.step()
                    loss = step(_x(T, i))
                else:
                    loss = step(_x(T, i))
                    sched.step()
            log.append([loss, _hyper(opt), sorted({str(x.message)[:60] for x in w
                                                   if "compile" not in str(x.message)})])
        return log + [_params(a, b)]
    return program


def test_old_pattern_warning_compiled():
    # test_old_pattern_warning: scheduler.step() before optimizer.step() warns (once: torch's
    # warning filter), pointing to "how-to-adjust-learning-rate"; the compiled step counts as a call
    _three(_pattern_program("old"))


def test_old_pattern_warning_resuming_compiled():
    # test_old_pattern_warning_resuming: the same after resuming with last_epoch=10
    _three(_pattern_program("old", resume=True))


def test_new_pattern_no_warning_compiled():
    # test_new_pattern_no_warning: optimizer.step() then scheduler.step() warns nothing
    _three(_pattern_program("new"))


def test_new_pattern_no_warning_compiled_before_the_scheduler():
    # test_new_pattern_no_warning, with the step compiled and traced before the scheduler wrapped
    # optimizer.step: the replayed program still counts as an optimizer.step() call (no warning);
    # the scheduler's wrapper and initial_lr are new state: one more trace
    _three(_pattern_program("new", warm_first=True), traces=2)


def test_new_pattern_no_warning_with_overridden_optim_step_compiled():
    # test_new_pattern_no_warning_with_overridden_optim_step: optimizer.step replaced after the
    # scheduler was made warns "`optimizer.step()` has been overridden" at the first scheduler step
    _three(_pattern_program("new", override=True))


# ==== the scheduler stepped inside the compiled step ============================================
def _inside_program(make, tensor_lr=False, metric=False):
    """``scheduler.step()`` (``step(loss)`` with ``metric``) as the last line of the compiled
    step: the scheduler's Python arithmetic runs at trace time, so the program must take each
    call's lr / momentum from the groups, not bake the traced call's values in."""
    def program(T, wrap):
        a, b = _net(T)
        opt = T.optim.SGD(_groups(a, b, lr2=T.tensor(0.02) if tensor_lr else 0.02), lr=0.05, momentum=0.9)
        sched = make(T, opt)

        def body(x):
            opt.zero_grad()
            loss = (b(a(x).tanh()) ** 2).sum()
            loss.backward()
            opt.step()
            sched.step(loss.detach()) if metric else sched.step()
            return loss.detach()
        step = wrap(body)
        return [[step(_x(T, i)), _hyper(opt)] for i in range(6)] + [_params(a, b)]
    return program


_INSIDE = {
    "test_step_lr": (_ONE["test_step_lr"], False),
    "test_cycle_lr_triangular_mode": (_ONE["test_cycle_lr_triangular_mode"], False),
    "test_onecycle_lr_linear_annealing_three_phases": (_ONE["test_onecycle_lr_linear_annealing_three_phases"], False),
    "test_CosineAnnealingWarmRestarts_lr1": (_ONE["test_CosineAnnealingWarmRestarts_lr1"], False),
    "test_lambda_lr": (_ONE["test_lambda_lr"], False),
    # test_sequentiallr_does_not_alias_lr_and_initial_lr's Tensor lr (second group), exp / cyclic
    "test_exp_lr_tensor_lr": (_ONE["test_exp_lr"], True),
    "test_cycle_lr_exp_range_mode_tensor_lr": (_ONE["test_cycle_lr_exp_range_mode"], True),
}


@pytest.mark.parametrize("name", sorted(_INSIDE))
def test_scheduler_stepped_inside_the_compiled_step(name):
    make, tensor_lr = _INSIDE[name]
    _three(_inside_program(make, tensor_lr=tensor_lr))


def test_reduce_lr_on_plateau_inside_the_compiled_step_runs_eagerly():
    # test_reduce_lr_on_plateau2 with the plateau scheduler in the step: it reads the metric's
    # value in Python (float(metrics)), so the step runs eagerly, with tracegrad.compile's warning
    make = lambda T, o: _S(T).ReduceLROnPlateau(o, patience=0, factor=0.5, threshold=0.5,  # noqa: E731
                                                threshold_mode="abs")
    _three(_inside_program(make, metric=True), fallback="item() reads a tensor's value")


# ==== compound lists, SequentialLR, ChainedScheduler =============================================
_MANY = {
    # test_compound_step_and_multistep_lr
    "test_compound_step_and_multistep_lr": lambda T, o: [
        _S(T).StepLR(o, gamma=0.1, step_size=3), _S(T).MultiStepLR(o, gamma=0.1, milestones=[2, 5])],
    # test_compound_exp_and_linearlr
    "test_compound_exp_and_linearlr": lambda T, o: [
        _S(T).LinearLR(o, start_factor=0.4, end_factor=0.9, total_iters=4), _S(T).ExponentialLR(o, gamma=0.9)],
    # test_compound_cosanneal_and_step_lr
    "test_compound_cosanneal_and_step_lr": lambda T, o: [
        _S(T).CosineAnnealingLR(o, T_max=6, eta_min=1e-10), _S(T).StepLR(o, gamma=0.1, step_size=3)],
    # test_compound_step_and_constantlr
    "test_compound_step_and_constantlr": lambda T, o: [
        _S(T).StepLR(o, gamma=0.1, step_size=3), _S(T).ConstantLR(o, factor=0.4, total_iters=4)],
    # test_sequentiallr1: ExponentialLR then StepLR at milestone 3
    "test_sequentiallr1": lambda T, o: _S(T).SequentialLR(
        o, [_S(T).ExponentialLR(o, gamma=0.8), _S(T).StepLR(o, gamma=0.1, step_size=2)], milestones=[3]),
    # test_sequentiallr3: three schedulers, milestones [2, 4]
    "test_sequentiallr3": lambda T, o: _S(T).SequentialLR(
        o, [_S(T).ConstantLR(o, factor=0.1, total_iters=2), _S(T).ExponentialLR(o, gamma=0.8),
            _S(T).StepLR(o, gamma=0.1, step_size=2)], milestones=[2, 4]),
    # test_sequentiallr5: a ChainedScheduler inside a SequentialLR
    "test_sequentiallr5": lambda T, o: _S(T).SequentialLR(
        o, [_S(T).ChainedScheduler([_S(T).LinearLR(o, start_factor=0.1, total_iters=3),
                                    _S(T).ConstantLR(o, factor=0.1, total_iters=3)]),
            _S(T).ConstantLR(o, factor=0.5, total_iters=3)], milestones=[3]),
    # test_chained_lr3: LinearLR and MultiStepLR chained
    "test_chained_lr3": lambda T, o: _S(T).ChainedScheduler(
        [_S(T).LinearLR(o, start_factor=0.4, total_iters=3), _S(T).MultiStepLR(o, milestones=[2, 4], gamma=0.1)]),
    # test_chained_lr4: three chained
    "test_chained_lr4": lambda T, o: _S(T).ChainedScheduler(
        [_S(T).ExponentialLR(o, gamma=0.9), _S(T).ConstantLR(o, factor=0.2, total_iters=4),
         _S(T).StepLR(o, gamma=0.1, step_size=3)]),
}


@pytest.mark.parametrize("name", sorted(_MANY))
def test_compound_scheduler_compiled(name):
    _three(_sched_program(_MANY[name]))


# ==== ReduceLROnPlateau ==========================================================================
_PLATEAU = {
    # test_reduce_lr_on_plateau1: min, abs threshold, patience and cooldown
    "test_reduce_lr_on_plateau1": dict(mode="min", threshold_mode="abs", threshold=0.5, patience=1, cooldown=1),
    # test_reduce_lr_on_plateau5: max, rel threshold (the loss rises: every call "improves" max)
    "test_reduce_lr_on_plateau5": dict(mode="max", threshold_mode="rel", threshold=0.1, patience=1, cooldown=1),
    # test_reduce_lr_on_plateau8: per-group min_lr
    "test_reduce_lr_on_plateau8": dict(mode="min", threshold_mode="rel", threshold=0.5, patience=0,
                                       min_lr=[0.02, 0.015]),
}


@pytest.mark.parametrize("name", sorted(_PLATEAU))
def test_reduce_lr_on_plateau_compiled(name):
    kw = _PLATEAU[name]
    _three(_sched_program(lambda T, o: _S(T).ReduceLROnPlateau(o, factor=0.5, **kw), calls=7, metric=True))


def test_compound_reduce_lr_on_plateau2_compiled():
    # test_compound_reduce_lr_on_plateau2: ReduceLROnPlateau then MultiStepLR each call
    def program(T, wrap):
        a, b = _net(T)
        opt = T.optim.SGD(_groups(a, b), lr=0.05, momentum=0.9)
        plateau = _S(T).ReduceLROnPlateau(opt, patience=0, threshold_mode="abs", threshold=0.5, factor=0.5)
        multi = _S(T).MultiStepLR(opt, gamma=0.1, milestones=[2, 4])
        step = wrap(_step_fn(a, b, opt))
        log = []
        for i in range(6):
            loss = step(_x(T, 0))
            plateau.step(loss.item())
            multi.step()
            log.append([loss, _hyper(opt), plateau.num_bad_epochs, plateau.cooldown_counter])
        return log + [_params(a, b)]
    _three(program)


@pytest.mark.parametrize("min_lr", ["scalar", "list"])
def test_add_param_group_does_not_break_reduce_lr_on_plateau_compiled(min_lr):
    # test_add_param_group_does_not_break_reduce_lr_on_plateau: a group added mid-training (a new
    # parameter and its state: one more trace), min_lrs extended for the list form
    def program(T, wrap):
        a, b = _net(T)
        extra = T.nn.Parameter(T.tensor(_arr(3, seed=9)))
        opt = T.optim.SGD(_groups(a, b), lr=0.05, momentum=0.9)
        plateau = _S(T).ReduceLROnPlateau(opt, mode="min", threshold=0.5, patience=0, factor=0.5,
                                          min_lr=0 if min_lr == "scalar" else [1e-5, 1e-4])
        step = wrap(_model_step(lambda x: b(a(x).tanh()), opt,
                                loss_fn=lambda out: (out ** 2).sum() + (extra ** 2).sum()))
        log = []
        for i in range(6):
            if i == 3:
                opt.add_param_group({"params": [extra], "lr": 0.05})
                if min_lr == "list":
                    plateau.min_lrs.append(1e-6)
            loss = step(_x(T, 0))
            plateau.step(loss.item())
            log.append([loss, _hyper(opt)])
        return log + [_params(a, b), extra.detach().clone()]
    # one trace more for the new group, one for the momentum buffer its first step creates
    _three(program, traces=3)


# ==== closed form against the chained form, state_dict round trips, resuming =====================
_CLOSED = {
    # test_closed_form_step_lr / _multi_step_lr / _exp_lr / _poly_lr / _cos_anneal_lr / _linearlr
    "test_closed_form_step_lr": lambda T, o: _S(T).StepLR(o, gamma=0.1, step_size=3),
    "test_closed_form_multi_step_lr": lambda T, o: _S(T).MultiStepLR(o, gamma=0.1, milestones=[2, 5]),
    "test_closed_form_exp_lr": lambda T, o: _S(T).ExponentialLR(o, gamma=0.9),
    "test_closed_form_poly_lr": lambda T, o: _S(T).PolynomialLR(o, power=0.9, total_iters=4),
    "test_closed_form_cos_anneal_lr": lambda T, o: _S(T).CosineAnnealingLR(o, T_max=3, eta_min=1e-10),
    "test_closed_form_linearlr": lambda T, o: _S(T).LinearLR(o, start_factor=1 / 3, end_factor=0.7, total_iters=4),
}


@pytest.mark.parametrize("name", sorted(_CLOSED))
def test_closed_form_compiled(name):
    # _test_against_closed_form: ``step(epoch)`` (the closed form, which warns) and ``step()``
    # (the chained form) give the same lrs, in a compiled training loop each
    make = _CLOSED[name]

    def program(T, wrap):
        runs = []
        for closed in (True, False):
            a, b = _net(T)
            opt = T.optim.SGD(_groups(a, b), lr=0.05, momentum=0.9)
            sched = make(T, opt)
            step = wrap(_step_fn(a, b, opt))
            log = []
            for epoch in range(7):
                loss = step(_x(T, epoch))
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    sched.step(epoch + 1) if closed else sched.step()
                log.append([loss, _hyper(opt), [str(x.message)[:30] for x in w]])
            runs.append(log)
        closed_lrs = [entry[1] for entry in runs[0]]
        chained_lrs = [entry[1] for entry in runs[1]]
        np.testing.assert_allclose(np.array(closed_lrs, dtype=float), np.array(chained_lrs, dtype=float),
                                   atol=1e-7)
        return runs
    _three(program)


_STATE_DICT = {
    # test_step_lr_state_dict, test_multi_step_lr_state_dict, test_cosine_lr_state_dict,
    # test_CosineAnnealingWarmRestarts_lr_state_dict, test_swa_lr_state_dict: a second scheduler
    # of other options takes the first's state_dict mid-training; training goes on with it
    "test_step_lr_state_dict": (lambda T, o: _S(T).StepLR(o, gamma=0.1, step_size=3),
                                lambda T, o: _S(T).StepLR(o, gamma=0.005, step_size=1)),
    "test_multi_step_lr_state_dict": (lambda T, o: _S(T).MultiStepLR(o, gamma=0.1, milestones=[2, 5]),
                                      lambda T, o: _S(T).MultiStepLR(o, gamma=0.01, milestones=[1, 4])),
    "test_cosine_lr_state_dict": (lambda T, o: _S(T).CosineAnnealingLR(o, T_max=6, eta_min=1e-10),
                                  lambda T, o: _S(T).CosineAnnealingLR(o, T_max=3, eta_min=5e-11)),
    "test_CosineAnnealingWarmRestarts_lr_state_dict": (
        lambda T, o: _S(T).CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
        lambda T, o: _S(T).CosineAnnealingWarmRestarts(o, T_0=100)),
    "test_swa_lr_state_dict": (lambda T, o: T.optim.swa_utils.SWALR(o, anneal_epochs=3, swa_lr=0.5),
                               lambda T, o: T.optim.swa_utils.SWALR(o, anneal_epochs=10, anneal_strategy="linear",
                                                                    swa_lr=5.0)),
    # test_cycle_lr_scale_fn_restored_from_state_dict (built-in mode: triangular2 restored)
    "test_cycle_lr_scale_fn_restored_from_state_dict": (
        lambda T, o: _S(T).CyclicLR(o, base_lr=0.01, max_lr=0.05, step_size_up=1, mode="triangular2"),
        lambda T, o: _S(T).CyclicLR(o, base_lr=0.01, max_lr=0.05, step_size_up=1)),
    # test_onecycle (state_dict of a three-phase schedule loaded into a two-phase one)
    "test_onecycle_lr_state_dict": (
        lambda T, o: _S(T).OneCycleLR(o, max_lr=[0.1, 0.2], total_steps=10, three_phase=True),
        lambda T, o: _S(T).OneCycleLR(o, max_lr=[0.3, 0.3], total_steps=10)),
}


# the second scheduler's constructor writes other values into the groups (SWALR's "swa_lr",
# OneCycleLR's "max_lr" / "min_lr"): the compiled step, which reads its groups' options, traces again
_RETRACES = {"test_swa_lr_state_dict", "test_onecycle_lr_state_dict"}


@pytest.mark.parametrize("name", sorted(_STATE_DICT))
def test_scheduler_state_dict_compiled(name):
    # _check_scheduler_state_dict: the copy's public attributes and get_last_lr equal the
    # original's; here training then goes on under the copy
    first, second = _STATE_DICT[name]

    def program(T, wrap):
        a, b = _net(T)
        opt = T.optim.SGD(_groups(a, b), lr=0.05, momentum=0.9)
        sched = first(T, opt)
        step = wrap(_step_fn(a, b, opt))
        log = []
        for i in range(3):
            log.append(step(_x(T, i)))
            sched.step()
        copy_ = second(T, opt)
        copy_.load_state_dict(sched.state_dict())
        keys = sorted(k for k in vars(sched) if k != "optimizer" and not k.startswith("_"))
        assert all(_plain(getattr(sched, k)) == _plain(getattr(copy_, k)) for k in keys), keys
        log.append([float(v) for v in copy_.get_last_lr()])
        for i in range(3, 6):
            log.append([step(_x(T, i)), _hyper(opt)])
            copy_.step()
        return log + [_params(a, b), [float(v) for v in copy_.get_last_lr()]]
    _three(program, traces=2 if name in _RETRACES else 1)


def _plain(v):
    # attribute values compared across the two schedulers: numbers as floats, sequences as lists
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        return float(v)
    return v


@pytest.mark.parametrize("name", ["StepLR", "ExponentialLR", "CosineAnnealingLR", "OneCycleLR"])
def test_lr_scheduler_checkpoint_compiled(name):
    # test_lr_scheduler_checkpoint: AdamW stepped once, its state_dict loaded into a second AdamW
    # and a scheduler made with last_epoch=0 resumes at the saved lr; training goes on compiled
    kws = {"StepLR": dict(step_size=2), "ExponentialLR": dict(gamma=0.9),
           "CosineAnnealingLR": dict(T_max=5), "OneCycleLR": dict(max_lr=0.01, total_steps=10)}

    def program(T, wrap):
        a, b = _net(T)
        opt = T.optim.AdamW(_groups(a, b), lr=0.05)
        sch = getattr(_S(T), name)(opt, **kws[name])
        _step_fn(a, b, opt)(_x(T, 0))
        sch.step()
        opt2 = T.optim.AdamW(_groups(a, b), lr=0.05)
        opt2.load_state_dict(opt.state_dict())
        sch2 = getattr(_S(T), name)(opt2, last_epoch=0, **kws[name])
        log = [[float(v) for v in sch2.get_last_lr()], _hyper(opt)]
        step = wrap(_step_fn(a, b, opt2))
        for i in range(4):
            log.append([step(_x(T, i)), _hyper(opt2), _opt_state(opt2)])
            sch2.step()
        return log + [_params(a, b)]
    _three(program)


def test_cosine_then_cyclic_compiled():
    # test_cosine_then_cyclic: CosineAnnealingLR for its T_max, then CyclicLR; the lr never
    # passes CyclicLR's max_lr (here T_max 4 and 10 calls instead of 20 and 40)
    def program(T, wrap):
        a, b = _net(T)
        opt = T.optim.SGD(list(a.parameters()) + list(b.parameters()), lr=0.5)
        cos = _S(T).CosineAnnealingLR(opt, T_max=4, eta_min=0.1)
        cyc = _S(T).CyclicLR(opt, base_lr=0.1, max_lr=0.3, step_size_up=1, step_size_down=3)
        step = wrap(_step_fn(a, b, opt))
        log = []
        for i in range(10):
            log.append([step(_x(T, i)), _hyper(opt)])
            cos.step() if i <= cos.T_max else cyc.step()
        assert opt.param_groups[0]["lr"] <= 0.3
        return log + [_params(a, b)]
    _three(program)


# ==== SWALR and swa_utils ========================================================================
@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swalr_anneal_after_multiplicative_compiled(strategy):
    # test_swalr_cosine_anneal_after_multiplicative / test_swalr_linear_anneal_after_multiplicative:
    # MultiplicativeLR until swa_start, then SWALR anneals to swa_lr (per group for "linear")
    swa_lr = 0.01 if strategy == "cos" else [0.01, 0.02]

    def program(T, wrap):
        a, b = _net(T)
        opt = T.optim.SGD(_groups(a, b), lr=0.05, momentum=0.9)
        mult = _S(T).MultiplicativeLR(opt, lr_lambda=lambda e: 0.9)
        swa = T.optim.swa_utils.SWALR(opt, anneal_epochs=3, anneal_strategy=strategy, swa_lr=swa_lr)
        step = wrap(_step_fn(a, b, opt))
        log = []
        for i in range(8):
            log.append([step(_x(T, i)), _hyper(opt)])
            swa.step() if i >= 3 else mult.step()
        return log + [_params(a, b)]
    _three(program)


@pytest.mark.parametrize("use_buffers", [True, False])
@pytest.mark.parametrize("use_multi_avg_fn", [True, False])
def test_averaged_model_exponential_compiled(use_multi_avg_fn, use_buffers):
    # test_averaged_model_exponential: EMA through get_ema_multi_avg_fn or a custom avg_fn, with
    # and without use_buffers (BatchNorm's running stats averaged too), updated inside the step
    def program(T, wrap):
        model = _filled(T, T.nn.Sequential(T.nn.Linear(3, 4), T.nn.BatchNorm1d(4, momentum=0.3),
                                         T.nn.Linear(4, 1)))
        U = T.optim.swa_utils
        if use_multi_avg_fn:
            avg = U.AveragedModel(model, multi_avg_fn=U.get_ema_multi_avg_fn(0.9), use_buffers=use_buffers)
        else:
            avg = U.AveragedModel(model, avg_fn=lambda p_avg, p, n: 0.9 * p_avg + 0.1 * p,
                                  use_buffers=use_buffers)
        opt = T.optim.SGD(model.parameters(), lr=0.1)
        step = wrap(_model_step(model, opt, after=lambda: avg.update_parameters(model)))
        log = [step(_x(T, i)) for i in range(4)]
        return log + [list(avg.module.parameters()), list(avg.module.buffers()), avg.n_averaged]
    _three(program)


@pytest.mark.parametrize("ema", [True, False])
def test_averaged_model_all_devices_compiled(ema):
    # test_averaged_model_all_devices (CPU): get_ema_multi_avg_fn(0.999) or get_swa_multi_avg_fn(),
    # the averaged model updated after each compiled step
    def program(T, wrap):
        model = _filled(T, T.nn.Sequential(T.nn.Linear(3, 5), T.nn.ReLU(), T.nn.Linear(5, 2)))
        U = T.optim.swa_utils
        fn = U.get_ema_multi_avg_fn(0.999) if ema else U.get_swa_multi_avg_fn()
        avg = U.AveragedModel(model, multi_avg_fn=fn)
        opt = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
        step = wrap(_step_fn(model[0], T.nn.Sequential(model[1], model[2]), opt))
        log = []
        for i in range(4):
            log.append(step(_x(T, i)))
            avg.update_parameters(model)
        return log + [list(avg.parameters()), avg.n_averaged]
    _three(program)


def test_update_bn_after_compiled_training():
    # test_update_bn_dnn: update_bn over a loader recomputes BatchNorm's running mean / var (here
    # after a compiled training run changed the weights); the mode is kept
    def program(T, wrap):
        model = _filled(T, T.nn.Sequential(T.nn.Linear(3, 4), T.nn.BatchNorm1d(4)))
        opt = T.optim.SGD(model.parameters(), lr=0.1)
        step = wrap(_model_step(model, opt))
        log = [step(_x(T, i)) for i in range(3)]
        data = [(T.tensor(_arr(5, 3, seed=200 + i)), T.tensor(_arr(5, seed=300 + i))) for i in range(4)]
        T.optim.swa_utils.update_bn(data, model)
        return log + [model[1].running_mean, model[1].running_var, model.training]
    _three(program)


# ==== test_optim.py: optimizer behaviour, compiled ===============================================
def _optim_program(opt_cls, okw, calls=4, g2=None, closure=False, set_to_none=True, params_too=True):
    def program(T, wrap):
        a, b = _net(T)
        opt = getattr(T.optim, opt_cls)(_groups(a, b, **(g2 or {})), **okw)
        step = wrap(_step_fn(a, b, opt, closure=closure, set_to_none=set_to_none))
        log = []
        for i in range(calls):
            log.append([step(_x(T, i)), [p.grad for p in a.parameters()]])
        return log + [_params(a, b), _opt_state(opt)]
    return program


_MAXIMIZE = {
    # test_forloop_goes_right_direction (maximize=True inputs of common_optimizers.optim_db),
    # test_param_groups_weight_decay and test_param_groups_lr: the second group with other options
    "SGD": dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1),
    "Adam": dict(lr=0.05, amsgrad=True),
    "AdamW": dict(lr=0.05, weight_decay=0.1),
    "RMSprop": dict(lr=0.01, momentum=0.5, centered=True),
    "Adagrad": dict(lr=0.05, lr_decay=0.1),
    "Adamax": dict(lr=0.05, weight_decay=0.1),
    "NAdam": dict(lr=0.05, decoupled_weight_decay=True, weight_decay=0.1),
    "RAdam": dict(lr=0.05, decoupled_weight_decay=True, weight_decay=0.1),
}


@pytest.mark.parametrize("name", sorted(_MAXIMIZE))
def test_forloop_goes_right_direction_maximize_compiled(name):
    _three(_optim_program(name, dict(_MAXIMIZE[name], maximize=True, foreach=False),
                          g2=dict(weight_decay=0.0, maximize=False)))


@pytest.mark.parametrize("name", ["Adam", "Adadelta", "ASGD", "Rprop"])
def test_foreach_matches_forloop_compiled(name):
    # test_foreach_matches_forloop: foreach=True and foreach=False give the same parameters and
    # state (here both compiled and both against torch's for-loop)
    okw = dict(Adam=dict(lr=0.05), Adadelta=dict(lr=0.5, weight_decay=0.1), ASGD=dict(lr=0.05, t0=2),
               Rprop=dict(lr=0.05))[name]

    def program(T, wrap):
        logs = []
        for foreach in (False, True):
            logs.append(_optim_program(name, dict(okw, foreach=foreach if T is tracegrad else False))(T, wrap))
        _same(logs[0], logs[1], f"{name} foreach vs for-loop", **_TOL)
        return logs[0]
    _three(program)


def test_zero_grad_set_to_none_false_compiled():
    # test_optim.py's zero_grad (set_to_none=False): the grads are zeroed in place, then filled by
    # backward; after each call .grad holds this call's gradient
    _three(_optim_program("SGD", dict(lr=0.05, momentum=0.9), set_to_none=False))


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_step_with_closure_compiled(name):
    # TestOptim's closure steps (_test_basic_cases_template's optimizer.step(fn)): the closure
    # zeroes, runs forward and backward, and its loss is step's return value
    _three(_optim_program(name, dict(lr=0.05), closure=True))


def test_lbfgs_closure_compiled():
    # test_forloop_goes_right_direction for LBFGS (step requires a closure; one group)
    def program(T, wrap):
        a, b = _net(T)
        opt = T.optim.LBFGS(list(a.parameters()) + list(b.parameters()), lr=0.5, max_iter=3)
        step = wrap(_step_fn(a, b, opt, closure=True))
        return [step(_x(T, i)) for i in range(3)] + [_params(a, b)]
    # LBFGS decides its line search in Python from loss values: the step runs eagerly
    _three(program, fallback="LBFGS.step decides its iterations")


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_state_dict_deterministic_compiled(name):
    # test_state_dict_deterministic: prime an optimizer, load its state_dict (deep-copied) into a
    # new optimizer over cloned parameters (two groups of other options), then step both in
    # parallel, compiled: same parameters and an equal state_dict
    okw = dict(SGD=dict(lr=0.05, momentum=0.9), Adam=dict(lr=0.05, amsgrad=True),
               RMSprop=dict(lr=0.01, centered=True))[name]

    def program(T, wrap):
        a, b = _net(T)
        opt = getattr(T.optim, name)(_groups(a, b, weight_decay=0.1), **okw)
        prime = _step_fn(a, b, opt)
        for i in range(3):
            prime(_x(T, i))
        a2, b2 = _net(T, seed=7)
        with T.no_grad():
            for p, q in zip(list(a.parameters()) + list(b.parameters()),
                            list(a2.parameters()) + list(b2.parameters())):
                q.copy_(p)
        opt2 = getattr(T.optim, name)(_groups(a2, b2, lr2=0.5), **dict(okw, lr=0.9))
        opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
        step, step2 = wrap(prime), wrap(_step_fn(a2, b2, opt2))
        log = []
        for i in range(3, 7):
            log.append([step(_x(T, i)), step2(_x(T, i)), _hyper(opt2)])
        _same(_params(a, b), _params(a2, b2), "parallel optimizers", rtol=1e-6, atol=1e-7)
        sd, sd2 = opt.state_dict(), opt2.state_dict()
        assert sd["param_groups"] == sd2["param_groups"]
        return log + [_params(a2, b2), _opt_state(opt2)]
    _three(program)


@pytest.mark.parametrize("named1", [True, False])
@pytest.mark.parametrize("named0", [True, False])
@pytest.mark.parametrize("name", ["SGD", "Adam", "Adagrad"])
def test_can_load_from_to_named_state_dict(name, named0, named1):
    # test_can_load_from_to_named_state_dict (test_optim.py; no earlier port): an optimizer built
    # from named_parameters() or parameters() primes 3 steps; a second one over a copy of the
    # model (named or not) loads its state_dict ("param_names" kept when both are named) and the
    # two step in parallel, compiled. Loading without a deepcopy shares the state tensors (torch's
    # load_state_dict keeps a tensor that needs no cast): both optimizers then update one buffer,
    # so the two models part ways; tracegrad must part them the same way
    okw = dict(SGD=dict(lr=0.05, momentum=0.9), Adam=dict(lr=0.05), Adagrad=dict(lr=0.05))[name]

    def program(T, wrap):
        model = _filled(T, T.nn.Sequential(T.nn.Conv2d(4, 2, 1, stride=2, bias=False), T.nn.BatchNorm2d(2)))
        x = T.tensor(np.random.RandomState(3).rand(1, 4, 6, 6).astype("float32"))
        # a weighted sum and a convolution without bias: through BatchNorm the file's out.sum()
        # has a zero gradient for the convolution (and any loss one for its bias), which Adam's
        # normalisation turns into rounding noise
        weights = T.tensor(_arr(1, 2, 3, 3, seed=4))

        def build(m, named):
            return m.named_parameters() if named else m.parameters()
        opt = getattr(T.optim, name)(build(model, named0), **okw)
        prime = _model_step(model, opt, loss_fn=lambda out: (out * weights).sum())
        for _ in range(3):
            prime(x)
        model2 = _filled(T, T.nn.Sequential(T.nn.Conv2d(4, 2, 1, stride=2, bias=False), T.nn.BatchNorm2d(2)), seed=40)
        model2.load_state_dict(model.state_dict())
        opt2 = getattr(T.optim, name)(build(model2, named1), **okw)
        opt2.load_state_dict(opt.state_dict())
        sd2 = opt2.state_dict()
        log = [sd2["param_groups"][0].get("param_names"), sorted(sd2["state"])]
        step, step2 = wrap(prime), wrap(_model_step(model2, opt2, loss_fn=lambda out: (out * weights).sum()))
        shared = [opt2.state[q][k] is opt.state[p][k] for p, q in zip(model.parameters(), model2.parameters())
                  for k in opt.state[p]]
        for _ in range(3):
            log.append([step(x), step2(x), _params(model), _params(model2)])
        return log + [shared, _opt_state(opt2)]
    _three(program)


def test_load_state_dict_between_compiled_calls():
    # test_state_dict_deterministic / test_can_load_older_state_dict: a state_dict saved mid-run
    # (its second group's lr edited) and loaded later rewinds the state and takes the saved
    # options; the compiled step reads the loaded state, not the state it was traced with
    def program(T, wrap):
        a, b = _net(T)
        opt = T.optim.Adam(_groups(a, b), lr=0.05)
        step = wrap(_step_fn(a, b, opt))
        log = [step(_x(T, i)) for i in range(3)]
        saved = copy.deepcopy(opt.state_dict())
        saved["param_groups"][1]["lr"] = 0.2
        log += [step(_x(T, i)) for i in range(2)]
        opt.load_state_dict(saved)
        log += [[step(_x(T, i)), _hyper(opt)] for i in range(3)]
        return log + [_params(a, b), _opt_state(opt)]
    _three(program, traces=2)


def test_add_param_group_between_compiled_calls():
    # TestOptim's add_param_group: a group added mid-training takes its own options and defaults
    # for the rest; the compiled step traces again once (new parameters, new state)
    def program(T, wrap):
        a, b = _net(T)
        opt = T.optim.Adam(a.parameters(), lr=0.05)
        step = wrap(_step_fn(a, b, opt))
        log = []
        for i in range(6):
            if i == 2:
                opt.add_param_group({"params": b.parameters(), "lr": 0.1, "betas": (0.5, 0.9)})
            log.append([step(_x(T, i)), _hyper(opt)])
        return log + [_params(a, b), _opt_state(opt), opt.param_groups[1]["eps"]]
    # one trace more for the new group, one for the Adam state its first step creates
    _three(program, traces=3)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad"])
def test_tensor_lr_compiled(name):
    # test_tensor_lr: a Tensor lr (here changed in place between calls, as a scheduler writing a
    # Tensor lr does) is an input of the compiled step: no retrace
    def program(T, wrap):
        a, b = _net(T)
        lr = T.tensor(0.05)
        opt = getattr(T.optim, name)(list(a.parameters()) + list(b.parameters()), lr=lr)
        step = wrap(_step_fn(a, b, opt))
        log = []
        for i in range(4):
            log.append(step(_x(T, i)))
            lr.mul_(0.5)
        return log + [_params(a, b), _opt_state(opt)]
    _three(program)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_complex_compiled(name):
    # test_complex: complex parameters step as their real views would (checked eagerly by the
    # earlier ports); here a complex and a real parameter in a compiled training step
    def program(T, wrap):
        w = T.tensor((_arr(3, seed=1) + 1j * _arr(3, seed=2)).astype(np.complex64), requires_grad=True)
        r = T.tensor(_arr(3, seed=3), requires_grad=True)
        opt = getattr(T.optim, name)([w, r], lr=0.05)
        step = wrap(_model_step(lambda x: (w * x).abs().pow(2).sum() + (r * x.real).pow(2).sum(), opt,
                                loss_fn=lambda out: out))
        log = []
        for i in range(4):
            x = T.tensor((_arr(3, seed=10 + i) + 1j * _arr(3, seed=20 + i)).astype(np.complex64))
            log.append([step(x), T.view_as_real(w.detach()).clone(), r.detach().clone()])
        return log
    _three(program)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop", "NAdam"])
def test_sparse_gradients_refused(name):
    # test_rosenbrock_sparse / TestOptim's sparse cases: a dense-only optimizer refuses a sparse
    # gradient (Embedding(sparse=True)) with torch's RuntimeError, eager and compiled alike
    # (compiled: the sparse gradient makes the step run eagerly, which raises the same way)
    msg = {"Adam": "Adam does not support sparse gradients, please consider SparseAdam instead",
           "AdamW": "Adam does not support sparse gradients",   # torch's AdamW runs Adam's check
           "RMSprop": "RMSprop does not support sparse gradients",
           "NAdam": "NAdam does not support sparse gradients"}[name]
    for T, wrap in ((torch, _eager), (tracegrad, _eager), (tracegrad, tracegrad.compile)):
        emb = T.nn.Embedding(5, 2, sparse=True)
        step = wrap(_model_step(emb, getattr(T.optim, name)(emb.parameters(), lr=0.1),
                                loss_fn=lambda out: out.sum()))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for _ in range(2):
                with pytest.raises(RuntimeError, match=msg):
                    step(T.tensor([1, 2]))


def test_sparse_sgd_compiled_falls_back():
    # SGD takes sparse gradients (TestOptim.test_sgd_sparse): the compiled step runs eagerly
    # with a warning and steps as torch
    def program(T, wrap):
        emb = T.nn.Embedding(5, 2, sparse=True)
        with T.no_grad():
            emb.weight.copy_(T.tensor(_arr(5, 2)))
        opt = T.optim.SGD(emb.parameters(), lr=0.1)
        step = wrap(_model_step(emb, opt, loss_fn=lambda out: (out ** 2).sum()))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return [step(T.tensor([1, 2, 1])) for _ in range(3)] + [emb.weight.detach().clone()]
    expected = program(torch, _eager)
    _same(expected, program(tracegrad, _eager), "eager", **_TOL)
    _same(expected, program(tracegrad, tracegrad.compile), "compiled", **_TOL)


# ==== fixes ======================================================================================
class TestFixesTI49:
    # torch's foreach rules refuse differentiable=True when they step (AssertionError "_foreach ops
    # don't support autograd"), all but SGD's, which steps with a graph; tracegrad ran the
    # differentiable per-parameter rule for all
    REFUSING = ["Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"]

    @staticmethod
    def _param(T):
        p = T.ones(3, requires_grad=True).clone()   # a non-leaf: what a differentiable step updates
        p.grad = T.full((3,), 0.5)
        return p

    def test_foreach_differentiable_step_refused(self, T):
        for name in self.REFUSING:
            opt = getattr(T.optim, name)([self._param(T)], lr=0.1, differentiable=True, foreach=True)
            with pytest.raises(AssertionError, match="_foreach ops don't support autograd"):
                opt.step()
            # foreach=False differentiates the step in both libraries
            q = self._param(T)
            getattr(T.optim, name)([q], lr=0.1, differentiable=True, foreach=False).step()
            assert q.grad_fn is not None, name

    def test_foreach_differentiable_sgd_steps(self, T):
        p = self._param(T)
        T.optim.SGD([p], lr=0.1, momentum=0.9, differentiable=True, foreach=True).step()
        assert p.grad_fn is not None
        assert p.tolist() == pytest.approx([0.95] * 3)

    def test_foreach_differentiable_without_grads_is_a_noop(self, T):
        # torch's foreach rule returns before its check when no parameter has a gradient
        p = T.ones(3, requires_grad=True).clone()
        T.optim.Adam([p], lr=0.1, differentiable=True, foreach=True).step()
        assert p.tolist() == [1.0, 1.0, 1.0]


# test_optim.py's fused optimizers take GradScaler's inputs from optimizer.grad_scale and
# optimizer.found_inf (NOTE [amp scaling inputs] in tracegrad/optim/optimizer.py): tracegrad
# ignored both attributes, stepping a found_inf step and leaving the gradients scaled
_FUSED = ["Adam", "AdamW", "SGD", "Adagrad"]


def _fused_run(T, name, found_inf, grad_scale, fused=True, steps=2):
    p = T.nn.Parameter(T.tensor([1.0, 2.0, -0.5]))
    p.grad = T.tensor([0.5, -1.0, 0.25])
    opt = getattr(T.optim, name)([p], lr=0.1, fused=fused)
    opt.grad_scale = None if grad_scale is None else T.tensor(grad_scale)
    opt.found_inf = None if found_inf is None else T.tensor(found_inf)
    log = []
    for _ in range(steps):
        opt.step()
        log.append([p.detach().clone(), p.grad.clone(), {k: opt.state[p][k].clone() for k in sorted(opt.state[p])}])
    del opt.grad_scale, opt.found_inf
    opt.step()       # a plain step afterwards starts from the state the skipped steps left
    return log + [p.detach().clone(), {k: opt.state[p][k] for k in sorted(opt.state[p])}]


@pytest.mark.parametrize("name", _FUSED)
def test_fused_does_not_step_if_foundinf(name):
    # test_fused_does_not_step_if_foundinf: found_inf nonzero: no parameter, gradient or state
    # change ("step" stays 0), with or without a grad_scale
    for grad_scale in (None, 1.0):
        p0 = tracegrad.tensor([1.0, 2.0, -0.5])
        log = _fused_run(tracegrad, name, 1.0, grad_scale)
        for entry in log[:2]:
            assert entry[0].tolist() == p0.tolist() and entry[1].tolist() == [0.5, -1.0, 0.25]
            if "step" in entry[2]:
                assert entry[2]["step"].item() == 0.0
        _same(_fused_run(torch, name, 1.0, grad_scale), log, f"{name} found_inf", rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", _FUSED)
def test_fused_grad_scale_unscales_the_gradients(name):
    # the fused rules divide each gradient by grad_scale and write it back into .grad (twice over
    # two steps), then step on the unscaled gradient
    expected = _fused_run(torch, name, 0.0, 2.0)
    _same(expected, _fused_run(tracegrad, name, 0.0, 2.0), f"{name} grad_scale", rtol=1e-6, atol=1e-7)
    _same(_fused_run(torch, name, None, 4.0), _fused_run(tracegrad, name, None, 4.0), name,
          rtol=1e-6, atol=1e-7)


def test_fused_sets_step_supports_amp_scaling(T):
    # torch marks a fused optimizer for GradScaler (``_step_supports_amp_scaling``: its step takes
    # grad_scale / found_inf); tracegrad had no such attribute
    for name in _FUSED:
        fused = getattr(T.optim, name)([T.nn.Parameter(T.ones(2))], lr=0.1, fused=True)
        assert fused._step_supports_amp_scaling is True
        plain = getattr(T.optim, name)([T.nn.Parameter(T.ones(2))], lr=0.1)
        assert not getattr(plain, "_step_supports_amp_scaling", False)


@pytest.mark.parametrize("foreach", [False, True])
def test_grad_scale_refused_without_fused(T, foreach):
    # the for-loop and foreach rules of the same four refuse the attributes (AssertionError);
    # an optimizer without a fused rule (RMSprop, NAdam) never reads them
    for name in _FUSED:
        p = T.nn.Parameter(T.tensor([1.0, 2.0]))
        p.grad = T.tensor([0.5, -1.0])
        opt = getattr(T.optim, name)([p], lr=0.1, foreach=foreach)
        opt.grad_scale, opt.found_inf = T.tensor(2.0), None
        with pytest.raises(AssertionError, match="Expected grad_scale and found_inf to be None"):
            opt.step()
    for name in ("RMSprop", "NAdam"):
        p = T.nn.Parameter(T.tensor([1.0, 2.0]))
        p.grad = T.tensor([0.5, -1.0])
        opt = getattr(T.optim, name)([p], lr=0.1, foreach=foreach)
        opt.grad_scale, opt.found_inf = T.tensor(2.0), T.tensor(1.0)
        opt.step()
        assert p.tolist() != [1.0, 2.0]


def test_fused_grad_scale_in_a_compiled_step():
    # found_inf is read on the host: a compiled step with the attributes set runs eagerly, with
    # tracegrad.compile's warning, and steps as torch's fused Adam
    def program(T, wrap):
        a, b = _net(T)
        opt = T.optim.Adam(list(a.parameters()) + list(b.parameters()), lr=0.05, fused=True)
        step = wrap(_step_fn(a, b, opt))
        log = []
        for i, inf in enumerate([0.0, 1.0, 0.0, 0.0]):
            opt.grad_scale, opt.found_inf = T.tensor(2.0), T.tensor(inf)
            log.append([step(_x(T, i)), [p.grad for p in a.parameters()]])
        return log + [_params(a, b), _opt_state(opt)]
    _three(program, fallback="item() reads a tensor's value")


@pytest.mark.parametrize("unscale", [False, True])
@pytest.mark.parametrize("name", ["Adam", "SGD", "Adagrad"])
def test_grad_scaler_with_a_fused_optimizer_compiled(name, unscale):
    # GradScaler.step on a fused optimizer (test_grad_scaling_autocast_fused_optimizers, on the
    # CPU): torch leaves the unscaling to the fused step (optimizer.grad_scale / found_inf), so an
    # overflow step keeps the gradients scaled and a first skipped step still makes the state;
    # tracegrad unscaled them itself and made no state. Overflows at calls 2 and 5
    def program(T, wrap):
        w = T.nn.Parameter(T.tensor([1.0, 2.0]))
        opt = getattr(T.optim, name)([w], lr=0.1, fused=True)
        scaler = T.amp.GradScaler("cpu", init_scale=2.0 ** 10)

        def body(v):
            opt.zero_grad()
            loss = (w * v).sum()
            scaler.scale(loss).backward()
            if unscale:
                scaler.unscale_(opt)
            scaler.step(opt)
            scaler.update()
            return loss.detach()
        step = wrap(body)
        log = []
        for i, inf in enumerate([True, False, True, False, False, True]):
            v = T.tensor([float("inf") if inf else 3.0 + i, 1.0])
            log.append([step(v), w.detach().clone(), w.grad.clone(), scaler.get_scale(),
                        {k: opt.state[w][k].clone() for k in sorted(opt.state[w])}, hasattr(opt, "found_inf")])
        return log
    _three(program)
