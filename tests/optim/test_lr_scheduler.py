"""lr_scheduler parity: each scheduler's lr (and momentum) sequence over 30 steps equals
torch's (same float arithmetic, chainable vs closed form used as torch does), state_dict
keys, resuming, and errors."""
import warnings

import pytest

import tracegrad
import tracegrad.optim  # noqa: F401

torch = pytest.importorskip("torch")


def _opt(mod, name="SGD", **kw):
    a, b = mod.ones(2, requires_grad=True), mod.ones(3, requires_grad=True)
    cls = getattr(mod.optim, name)
    base = dict(lr=0.1, momentum=0.9) if name == "SGD" else dict(lr=0.1)
    base.update(kw)
    return cls([{"params": [a]}, {"params": [b], "lr": 0.05}], **base)


def _sched(mod, opt, spec):
    S = mod.optim.lr_scheduler
    kind, kw = spec
    if kind == "SequentialLR":
        return S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.1, total_iters=4),
                                    S.CosineAnnealingLR(opt, T_max=10, eta_min=1e-3),
                                    S.ExponentialLR(opt, gamma=0.9)], milestones=[5, 15])
    if kind == "ChainedScheduler":
        return S.ChainedScheduler([S.ExponentialLR(opt, gamma=0.95), S.StepLR(opt, step_size=4, gamma=0.5)])
    if kind == "LambdaLR":
        return S.LambdaLR(opt, lr_lambda=[lambda e: 0.95 ** e, lambda e: 1.0 / (1 + e)])
    if kind == "MultiplicativeLR":
        return S.MultiplicativeLR(opt, lr_lambda=lambda e: 0.97)
    return getattr(S, kind)(opt, **kw)


SPECS = [
    ("StepLR", dict(step_size=7, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[3, 8, 8, 20], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.93)),
    ("CosineAnnealingLR", dict(T_max=10, eta_min=0.001)),
    ("CosineAnnealingLR", dict(T_max=7)),
    ("LambdaLR", {}),
    ("MultiplicativeLR", {}),
    ("LinearLR", dict(start_factor=0.25, end_factor=1.0, total_iters=8)),
    ("LinearLR", dict(start_factor=1.0, end_factor=0.1, total_iters=12)),
    ("ConstantLR", dict(factor=0.5, total_iters=4)),
    ("PolynomialLR", dict(total_iters=20, power=2.0)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=31)),
    ("OneCycleLR", dict(max_lr=[1.0, 0.5], total_steps=31, anneal_strategy="linear", three_phase=True)),
    ("OneCycleLR", dict(max_lr=0.3, epochs=5, steps_per_epoch=7, pct_start=0.25, div_factor=10.0,
                        final_div_factor=100.0, base_momentum=0.8, max_momentum=0.9)),
    ("SequentialLR", {}),
    ("ChainedScheduler", {}),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("CyclicLR", dict(base_lr=[0.01, 0.02], max_lr=0.2, step_size_up=3, step_size_down=5, mode="triangular2")),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range", gamma=0.97,
                      base_momentum=0.7, max_momentum=0.95)),
    ("CosineAnnealingWarmRestarts", dict(T_0=5, eta_min=0.001)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2)),
]


def _trace(mod, spec, opt_name="SGD", steps=30):
    opt = _opt(mod, opt_name)
    sched = _sched(mod, opt, spec)
    out = [(sched.get_last_lr(), [g["lr"] for g in opt.param_groups],
            [g.get("momentum") for g in opt.param_groups], [g.get("betas") for g in opt.param_groups])]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups],
                    [g.get("momentum") for g in opt.param_groups], [g.get("betas") for g in opt.param_groups]))
    return out, opt, sched


def _close(a, b):
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= 1e-12 * max(1.0, abs(a))
    return a == b


@pytest.mark.parametrize("spec", SPECS, ids=[s[0] + str(i) for i, s in enumerate(SPECS)])
def test_lr_sequence_matches_torch(spec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, _, _ = _trace(torch, spec)
        g, _, _ = _trace(tracegrad, spec)
    assert len(t) == len(g) == 31
    for i, (a, b) in enumerate(zip(t, g)):
        assert _close(a, b), f"step {i}: torch {a} vs tracegrad {b}"


def test_onecycle_cycles_adam_beta1():
    spec = ("OneCycleLR", dict(max_lr=0.5, total_steps=30))
    t, _, _ = _trace(torch, spec, opt_name="Adam", steps=29)
    g, _, _ = _trace(tracegrad, spec, opt_name="Adam", steps=29)
    assert _close(t, g)
    assert t[5][3][0][0] != t[0][3][0][0]   # beta1 really moved


def test_cosine_warm_restarts_fractional_epochs():
    def run(mod):
        opt = _opt(mod)
        s = mod.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2, eta_min=0.01)
        out = []
        for e in range(12):
            for i in range(3):
                opt.step()
                s.step(e + i / 3)
                out.append((s.get_last_lr(), s.T_cur, s.T_i, s.last_epoch))
        return out
    assert _close(run(torch), run(tracegrad))


def test_onecycle_past_total_steps_raises():
    for mod in (torch, tracegrad):
        opt = _opt(mod)
        s = mod.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=3)
        for _ in range(3):
            opt.step()
            s.step()
        with pytest.raises(ValueError, match="Tried to step 4 times"):
            opt.step()
            s.step()


@pytest.mark.parametrize("spec", [("StepLR", dict(step_size=3, gamma=0.5)), ("ExponentialLR", dict(gamma=0.9)),
                                  ("CosineAnnealingLR", dict(T_max=10)), ("MultiStepLR", dict(milestones=[2, 5])),
                                  ("LinearLR", dict(start_factor=0.5, total_iters=6))])
def test_step_with_epoch_uses_closed_form_like_torch(spec):
    def run(mod):
        opt = _opt(mod)
        s = _sched(mod, opt, spec)
        out = []
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for e in [1, 2, 5, 4, 9]:
                opt.step()
                s.step(e)
                out.append(s.get_last_lr())
        return out, any("epoch parameter" in str(x.message) for x in w)
    assert run(torch) == run(tracegrad)


def test_state_dict_keys_and_resume():
    def run(mod):
        opt = _opt(mod)
        S = mod.optim.lr_scheduler
        s = S.CosineAnnealingLR(opt, T_max=12, eta_min=0.01)
        for _ in range(5):
            opt.step()
            s.step()
        sd = s.state_dict()
        keys = sorted(sd)
        # resume: a new scheduler (last_epoch given) loaded from the state dict continues the same way
        s2 = S.CosineAnnealingLR(opt, T_max=12, eta_min=0.01, last_epoch=4)
        s2.load_state_dict(sd)
        lrs = []
        for _ in range(6):
            opt.step()
            s2.step()
            lrs.append(s2.get_last_lr())
        return keys, lrs, [sorted(g) for g in opt.param_groups]
    assert run(torch) == run(tracegrad)


def test_sequential_state_dict_round_trip():
    def run(mod):
        opt = _opt(mod)
        s = _sched(mod, opt, ("SequentialLR", {}))
        for _ in range(7):
            opt.step()
            s.step()
        sd = s.state_dict()
        return sorted(sd), [sorted(x) for x in sd["_schedulers"]], sd["last_epoch"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert run(torch) == run(tracegrad)


def test_lambda_state_dict_saves_callable_objects_only():
    class Fn:
        def __init__(self):
            self.k = 0.5

        def __call__(self, e):
            return self.k ** e

    def run(mod):
        opt = _opt(mod)
        s = mod.optim.lr_scheduler.LambdaLR(opt, [Fn(), lambda e: 1.0])
        return s.state_dict()["lr_lambdas"]
    assert run(torch) == run(tracegrad) == [{"k": 0.5}, None]


def test_reduce_lr_on_plateau_matches_torch():
    metrics = [1.0, 0.9, 0.95, 0.96, 0.97, 0.9, 0.91, 0.92, 0.93, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
               1.1, 1.2, 0.2, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3]
    configs = [dict(), dict(mode="min", factor=0.5, patience=2, cooldown=1, min_lr=0.004),
               dict(mode="max", factor=0.3, patience=1, threshold=0.05, threshold_mode="abs"),
               dict(mode="min", patience=0, threshold=0.1, threshold_mode="rel", min_lr=[0.01, 0.002], eps=1e-3)]

    def run(mod, cfg):
        opt = _opt(mod)
        s = mod.optim.lr_scheduler.ReduceLROnPlateau(opt, **cfg)
        out = []
        for m in metrics:
            opt.step()
            s.step(mod.tensor(m) if len(out) % 2 else m)
            out.append((s.get_last_lr(), s.num_bad_epochs, s.cooldown_counter, s.best, s.last_epoch))
        return out, sorted(s.state_dict())
    for cfg in configs:
        t, g = run(torch, cfg), run(tracegrad, cfg)
        assert _close(t[0], g[0]), cfg
        assert t[1] == g[1]


def test_scheduler_errors_match_torch():
    def run(mod):
        S = mod.optim.lr_scheduler
        out = []
        opt = _opt(mod)
        for bad in [lambda: S.StepLR("not an optimizer", 3),
                    lambda: S.LinearLR(opt, start_factor=0.0),
                    lambda: S.LinearLR(opt, end_factor=2.0),
                    lambda: S.ConstantLR(opt, factor=2.0),
                    lambda: S.LambdaLR(opt, [lambda e: 1.0]),
                    lambda: S.ReduceLROnPlateau(opt, factor=1.0),
                    lambda: S.ReduceLROnPlateau(opt, mode="up"),
                    lambda: S.ReduceLROnPlateau(opt, threshold_mode="x"),
                    lambda: S.ReduceLROnPlateau(opt, min_lr=[0.1]),
                    lambda: S.OneCycleLR(opt, max_lr=1.0),
                    lambda: S.OneCycleLR(opt, max_lr=1.0, total_steps=0),
                    lambda: S.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=1),
                    lambda: S.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="exp"),
                    lambda: S.OneCycleLR(opt, max_lr=[1.0], total_steps=10),
                    lambda: S.SequentialLR(opt, [], milestones=[]),
                    lambda: S.SequentialLR(opt, [S.StepLR(opt, 2)], milestones=[3]),
                    lambda: S.StepLR(mod.optim.SGD([mod.ones(1, requires_grad=True)], lr=0.1), 2, last_epoch=3)]:
            try:
                bad()
                out.append(None)
            except Exception as e:  # noqa: BLE001
                out.append((type(e).__name__, str(e)[:30]))
        return out
    t, g = run(torch), run(tracegrad)
    assert all(x is not None for x in g)
    assert [x[0] for x in t] == [x[0] for x in g]
    assert [x[1] for x in t[1:]] == [x[1] for x in g[1:]]


def test_order_warning_like_torch():
    def run(mod):
        opt = _opt(mod)
        s = mod.optim.lr_scheduler.StepLR(opt, 2)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.step()   # before opt.step(): torch warns
        return [type(x.message).__name__ for x in w if "optimizer.step()" in str(x.message)]
    assert run(torch) == run(tracegrad) == ["UserWarning"]


@pytest.mark.parametrize("spec", SPECS, ids=[s[0] + str(i) for i, s in enumerate(SPECS)])
def test_state_dict_keys_match_torch(spec):
    def run(mod):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, opt, s = _trace(mod, spec, steps=3)
        sd = s.state_dict()
        return sorted(sd), sorted(k for k in opt.param_groups[0])
    assert run(torch) == run(tracegrad)


def test_module_exports_torchs_names_from_one_module():
    """lr_scheduler is split into private modules; the public one still has every torch name,
    and each class names it as its module (reprs, pickles), as torch's classes do."""
    S, T = tracegrad.optim.lr_scheduler, torch.optim.lr_scheduler
    missing = [n for n in T.__all__ if not hasattr(S, n)]
    assert not missing
    assert S.__all__ == T.__all__
    for name in S.__all__:
        assert getattr(S, name).__module__ == "tracegrad.optim.lr_scheduler", name
    # torch's older name is a subclass, which the built-in schedulers do not derive from
    assert S._LRScheduler.__bases__ == (S.LRScheduler,) and T._LRScheduler.__bases__ == (T.LRScheduler,)
    assert S._LRScheduler.__module__ == "tracegrad.optim.lr_scheduler"
